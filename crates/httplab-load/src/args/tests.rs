//! The round trip `parse_args(spec.to_args()) == spec` for every kind of
//! run the study and the sweep build, and for command lines.
//!
//! Compared: the whole spec but `command_line`, which is the arguments
//! themselves (the parsed spec records `to_args()`, the typed one what it
//! was given, or nothing). Every other field, TLS's `sni` and `alpn`
//! included (a typed spec keeps the defaults the command line sets), must
//! come back equal.

use std::path::{Path, PathBuf};

use crate::build::{Length, Load, Offer, Protocol};
use crate::spec::{LoadSpec, ProbeSpec};
use crate::tls::TlsSpec;

/// Asserts the round trip and that the spec is valid.
fn round_trip(spec: &LoadSpec) {
    let checked = spec.clone().checked().expect("a valid spec");
    let args = spec.to_args();
    assert_eq!(checked.command_line, args);
    let mut back = crate::parse_args(&args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
    assert_eq!(back.command_line, args);
    back.command_line = spec.command_line.clone();
    assert_eq!(&back, spec, "{args:?}");
}

/// A study's run: the settings every run of a study has.
fn study(offer: Offer, length: Length) -> LoadSpec {
    let mut s = LoadSpec::target("127.0.0.1", 8080, "/a.html").with_load(Load::new(offer, length));
    s.timeout = Some(5.0);
    s.label = "nginx · static [c=4]".into();
    s.threads = 2;
    s.no_progress = true;
    s.verify_root = Some(PathBuf::from("/srv/corpus"));
    s
}

fn uri_list(dir: &Path) -> PathBuf {
    let f = dir.join("paths.txt");
    std::fs::write(&f, "/a.html\n/b.png\n/c.css\n").expect("write the list");
    f
}

#[test]
fn open_loop_at_a_rate_with_a_window() {
    for rate in [100.0, 3.0, 7.0, 1234.5, 0.3] {
        let mut s = study(Offer::Rate(rate), Length::Window(2.5));
        s.warmup = 1.0;
        s.lag_threshold = 0.01;
        round_trip(&s);
    }
}

#[test]
fn count_measured_runs() {
    let mut s = study(Offer::Rate(100.0), Length::Count(150));
    s.warmup = 0.5;
    round_trip(&s);
    round_trip(&study(Offer::BackToBack, Length::Count(50)));
    round_trip(&study(Offer::BackToBack, Length::Window(3.0)));
    let users = Offer::Users {
        users: 4,
        think: 0.0,
    };
    round_trip(&study(users, Length::Count(200)));
}

#[test]
fn closed_loop_users() {
    let think = Offer::Users {
        users: 16,
        think: 0.002,
    };
    let mut s = study(think, Length::Window(3.0));
    s.warmup = 1.0;
    round_trip(&s);
    // A connection per request, and several requests per connection.
    for calls in [1, 5] {
        let s = LoadSpec::target("::1", 8080, "/")
            .with_load(Load::new(think, Length::Count(10)).calls(calls));
        round_trip(&s);
    }
}

#[test]
fn sessions_of_several_calls_that_reconnect() {
    let mut s = study(Offer::Rate(50.0), Length::Window(2.0))
        .with_load(Load::new(Offer::Rate(50.0), Length::Window(2.0)).calls(8));
    s.reconnect = true;
    round_trip(&s);
}

#[test]
fn pipelined_bursts() {
    let load = Load::new(Offer::Rate(20.0), Length::Count(40))
        .calls(10)
        .burst(5);
    round_trip(&study(Offer::BackToBack, Length::Count(1)).with_load(load));
    let users = Offer::Users {
        users: 2,
        think: 0.0,
    };
    let load = Load::new(users, Length::Window(1.0)).burst(8);
    round_trip(&study(users, Length::Count(1)).with_load(load));
}

#[test]
fn probes() {
    let mut s = study(Offer::Rate(100.0), Length::Window(2.0));
    s.probe = Some(ProbeSpec::at(50.0));
    round_trip(&s);
    s.probe = Some(ProbeSpec {
        rate: 200.0,
        conns: 2,
    });
    round_trip(&s);
}

#[test]
fn uri_lists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = study(Offer::Rate(10.0), Length::Window(1.0))
        .with_uri_list(&uri_list(dir.path()))
        .expect("list");
    assert_eq!(s.uris.len(), 3);
    round_trip(&s);
}

#[test]
fn tls_with_and_without_session_reuse() {
    for resume in [true, false] {
        let tls = TlsSpec::verified_by("/tmp/study/ca.pem").resume(resume);
        let s = study(Offer::Rate(10.0), Length::Window(1.0)).with_tls(Some(tls));
        assert!(s.to_args().contains(&"--ssl".to_string()));
        round_trip(&s);
    }
    // httperf's unverified --ssl, and https:// against the system's roots.
    let s = study(Offer::BackToBack, Length::Count(3)).with_tls(Some(TlsSpec::unverified()));
    round_trip(&s);
    let mut tls = TlsSpec::default();
    tls.ciphers = vec!["TLS13_AES_128_GCM_SHA256".into()];
    tls.version = Some(crate::tls::TlsVersion::V1_3);
    for server in ["example.org", "::1"] {
        let mut s = study(Offer::BackToBack, Length::Count(3)).with_tls(Some(tls.clone()));
        s.server = server.into();
        assert!(s.to_args()[0].starts_with("https://"));
        round_trip(&s);
    }
}

#[test]
fn http2_and_http3_with_streams() {
    let users = Offer::Users {
        users: 4,
        think: 0.0,
    };
    for streams in [1, 16] {
        let mut h2 = study(users, Length::Window(2.0)).with_protocol(Protocol::Http2 { streams });
        h2.verify_root = None;
        round_trip(&h2);
        let tls = TlsSpec::verified_by("/tmp/ca.pem");
        round_trip(&h2.clone().with_tls(Some(tls.clone())));
        let h3 = h2
            .with_protocol(Protocol::Http3 { streams })
            .with_tls(Some(tls));
        round_trip(&h3);
    }
    let mut h2 = LoadSpec::target("h", 80, "/").with_protocol(Protocol::Http2 { streams: 2 });
    if let Some(h) = h2.http2.as_mut() {
        h.stream_window = 65_535;
        h.conn_window = 1 << 20;
    }
    round_trip(&h2);
}

#[test]
fn client_shards() {
    let s = study(Offer::Rate(300.0), Length::Window(2.0)).with_shard(1, 3, Some("r-1".into()));
    round_trip(&s);
    let users = Offer::Users {
        users: 6,
        think: 0.0,
    };
    let mut s = study(users, Length::Count(5)).with_shard(2, 3, None);
    s.start_at = Some(1_772_366_400.123_456);
    round_trip(&s);
}

/// A sweep's step: a rate and a connection count, calls, timeout, warm-up,
/// shards.
#[test]
fn sweep_steps() {
    let load = Load::new(Offer::Rate(20.0), Length::Count(220)).calls(1);
    let mut s = LoadSpec::target("www.example.com", 80, "/").with_load(load);
    s.timeout = Some(60.0);
    s.warmup = 1.0;
    round_trip(&s);
    let mut s = s.with_shard(1, 3, Some("r1".into()));
    s.start_at = Some(1006.25);
    round_trip(&s);
    // A staged sweep: the rates as stages of one run.
    let stages = [(1.0, 10.0), (2.0 / 3.0, 10.0), (2.0, 20.0), (1.0, 0.0)]
        .map(|(d, r)| crate::stages::Stage {
            duration_s: d,
            from: r,
            to: r,
        })
        .to_vec();
    let load = Load::new(Offer::Rate(1.0), Length::Window(1.0)).calls(3);
    let mut s = LoadSpec::target("127.0.0.1", 8080, "/x").with_load(load);
    s.set_stages(stages, false);
    round_trip(&s);
}

/// Command lines: parsed, written and parsed again, the same spec.
#[test]
fn command_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = uri_list(dir.path());
    let log = dir.path().join("sessions.txt");
    std::fs::write(&log, "/a think=1\n  /b\n\n/c method=POST\n").expect("log");
    let lines = [
        "--server h --rate 10 --num-conns 5 --period e0.25".to_string(),
        "--server h --period u0.1,0.3 --duration 2 --sample-interval 250ms".into(),
        "http://h:81/x --users 3 --rate 5 --duration 2s --think 10ms".into(),
        "--server h --wsess 10,4,0.5 --rate 2 --burst-length 2 --max-piped-calls 3".into(),
        format!("--server h --wsesslog 3,0.2,{} --rate 1", log.display()),
        "--server h --wsess 0,2,1 --stages 1s:10,2s:10-40 --period e".into(),
        format!("--server h --uri-list {} --num-conns 3 --method HEAD", list.display()),
        "--server h --add-header X-A:1 --add-header=X-B:-2 --body abc --no-host-hdr --num-conns 1".into(),
        "--server h --http-version 1.0 --server-name v --wset 100,0.25 --num-conns 2".into(),
        "--ssl --server h --ssl-ciphers ECDHE-RSA-AES128-GCM-SHA256 --tls-version 1.2 --num-conns 1".into(),
        "https://h/ --insecure --num-conns 1".into(),
        "--server h --timeout 2 --think-timeout 1 --max-response-time 3 --send-buffer 4096 --recv-buffer 8192 --close-with-reset --retry-on-failure --failure-status 503 --max-connections 2 --max-connecting 9 --num-conns 1".into(),
        "--server h --print-reply=header --print-request -v --seed 7 --threads 3 --local-addr 127.0.0.2,127.0.0.3 --lag-threshold 5ms --busy-poll --io epoll --num-conns 1".into(),
        "--server h --calibrate --calibrate-size 4096 --calibrate-conns 8 --client-ceiling 2500 --num-conns 1 --quiet --label=-x".into(),
        "--server h --json r.json --csv r.csv --latency-dump l.txt --series s.jsonl --prometheus 127.0.0.1:0 --check-client --num-conns 1".into(),
        "--server h --client 0/2 --run-id r --start-at 2026-03-01T12:00:00Z --rate 10 --duration 1".into(),
    ];
    for line in lines {
        let spec =
            crate::parse_args(line.split_whitespace()).unwrap_or_else(|e| panic!("{line}: {e:#}"));
        round_trip(&spec);
    }
}

#[test]
fn the_typed_spec_is_the_parsed_one() {
    let typed = study(Offer::Rate(100.0), Length::Window(2.0));
    let parsed = crate::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        "8080",
        "--uri",
        "/a.html",
        "--timeout",
        "5",
        "--label",
        "nginx · static [c=4]",
        "--threads",
        "2",
        "--no-progress",
        "--verify-root",
        "/srv/corpus",
        "--rate",
        "100",
        "--duration",
        "2",
    ])
    .expect("parse");
    assert_eq!(
        typed,
        LoadSpec {
            command_line: Vec::new(),
            ..parsed
        }
    );
    // One check for both: a typed spec the command line would refuse is refused.
    assert!(study(Offer::Rate(0.0), Length::Window(1.0))
        .checked()
        .is_err());
    let mut s = study(Offer::Rate(1.0), Length::Count(1));
    s.http_version = "2".into();
    assert!(s.checked().is_err());
}
