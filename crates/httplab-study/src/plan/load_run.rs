//! One load run of a study as a typed description ([`LoadRun`]): the step,
//! the server's address, the paths, TLS and client shard. It becomes the
//! `httplab_load::LoadSpec` of the run, built with the load crate's typed
//! constructors (no command line is written here); the spec's own
//! `to_args()` is the `httplab load` command line (httperf spellings) the
//! run's result records; the client's calibration is keyed by the spec's
//! shape (`httplab_load::calibration_cache`), not by that text. An `h2`
//! workload's run speaks HTTP/2 (h2 over TLS by ALPN, h2c by prior
//! knowledge in a cleartext study); an `h3` workload's run HTTP/3 (QUIC,
//! so TLS studies only, verified against the study's certificate as every
//! TLS run is).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use httplab_load::{Length, Load, LoadSpec, Offer as LoadOffer, ProbeSpec, TlsSpec};

use crate::plan::steps::{Offer, StepParams};
use crate::spec::Protocol;

/// Streams an HTTP/2 or HTTP/3 run keeps open per connection: one, so that a
/// connection (or a user) has one request in flight as over HTTP/1.1
/// without pipelining, and the servers are compared on the same offered
/// load whatever the protocol (h2load's default too).
pub const H2_STREAMS: u32 = 1;

/// How a study run speaks TLS.
#[derive(Debug, Clone)]
pub struct RunTls {
    /// The study's certificate, the only trust anchor.
    pub ca: PathBuf,
    /// Resume sessions on new connections (else a full handshake on each).
    pub resume: bool,
}

/// A run's client shard: shard I of N and the run's own id.
#[derive(Debug, Clone)]
pub struct RunShard {
    /// This shard, 0 <= index < count.
    pub index: u32,
    /// Shards.
    pub count: u32,
    /// The run id every shard of this run shares.
    pub run_id: String,
}

/// What one load run of a study needs.
#[derive(Debug, Clone)]
pub struct LoadRun {
    /// Server address.
    pub addr: SocketAddr,
    /// The single path (or the first of the list).
    pub uri: String,
    /// A file listing the paths to request in turn (sets, pages).
    pub uri_list: Option<PathBuf>,
    /// The step.
    pub params: StepParams,
    /// Corpus root (bodies are verified against it).
    pub root: PathBuf,
    /// Result label.
    pub label: String,
    /// Generator threads (one per client core).
    pub threads: usize,
    /// Over TLS: the CA file and whether sessions resume (None: cleartext).
    pub tls: Option<RunTls>,
    /// The run's client shard (None: the whole run).
    pub shard: Option<RunShard>,
    /// The HTTP version the client speaks.
    pub protocol: Protocol,
    /// HTTP/2 and HTTP/3: streams per connection at once (the workload's
    /// `streams`, else [`H2_STREAMS`]).
    pub streams: u32,
}

impl LoadRun {
    /// The load spec of this run, built as a typed value and checked
    /// ([`LoadSpec::checked`]: its `command_line` is the `httplab load`
    /// command line that reruns it, which its result records).
    ///
    /// - Window-measured runs: a warm-up then a window (open loop at `rate`;
    ///   back-to-back connections become one closed-loop user, which is what
    ///   httperf's sequential mode is; closed loop with users).
    /// - Count-measured runs keep the workload's counts and add the warm-up's
    ///   share in front (`rate × warm-up` connections; users run their counts
    ///   after a timed warm-up).
    /// - Sessions of several calls reconnect when a server closes
    ///   (`reconnect`) and bodies are verified against the corpus
    ///   (`verify_root`; not over HTTP/2 or HTTP/3, whose drivers do not
    ///   verify bodies).
    /// - HTTP/2 and HTTP/3 (TLS below, as always in a study that can hold
    ///   an h3 workload) keep the workload's `streams` open per connection,
    ///   by default [`H2_STREAMS`].
    pub fn spec(&self) -> Result<LoadSpec> {
        let p = &self.params;
        let mut s = LoadSpec::target(&self.addr.ip().to_string(), self.addr.port(), &self.uri)
            .with_load(self.load())
            .with_protocol(self.protocol())
            .with_tls(self.tls.as_ref().map(|t| {
                // The study's certificate is the only trust anchor.
                TlsSpec::verified_by(t.ca.clone()).resume(t.resume)
            }));
        if let Some(sh) = &self.shard {
            s = s.with_shard(sh.index, sh.count, Some(sh.run_id.clone()));
        }
        if let Some(l) = &self.uri_list {
            s = s.with_uri_list(l)?;
        }
        s.timeout = Some(p.timeout.as_secs_f64());
        s.label = self.label.clone();
        s.threads = u32::try_from(self.threads).context("client threads")?;
        s.no_progress = true;
        if self.protocol == Protocol::H1 {
            s.verify_root = Some(self.root.clone());
        }
        s.probe = p.probe.map(ProbeSpec::at);
        s.warmup = p.warmup.as_secs_f64();
        s.reconnect = p.num_calls > 1;
        if let Some(r) = self.open_rate() {
            s.lag_threshold = lag_threshold(r);
        }
        s.checked().context("httplab load spec")
    }

    /// The open-loop rate of this run, None for back-to-back connections
    /// and closed loop.
    fn open_rate(&self) -> Option<f64> {
        match self.params.offer {
            Offer::Open { rate, .. } => rate,
            Offer::Closed { .. } => None,
        }
    }

    /// The HTTP version and its streams.
    fn protocol(&self) -> httplab_load::Protocol {
        match self.protocol {
            Protocol::H1 => httplab_load::Protocol::Http1,
            Protocol::H2 => httplab_load::Protocol::Http2 {
                streams: self.streams,
            },
            Protocol::H3 => httplab_load::Protocol::Http3 {
                streams: self.streams,
            },
        }
    }

    /// The offered load: rate or users, and the window or the counts, with
    /// the calls per connection and the pipeline.
    fn load(&self) -> Load {
        let p = &self.params;
        let warm = p.warmup.as_secs_f64();
        let window = p.window.map(|d| Length::Window(d.as_secs_f64()));
        let mut load = match p.offer {
            Offer::Open {
                rate: Some(r),
                num_conns,
            } => {
                let extra = (r * warm).ceil() as u64;
                Load::new(
                    LoadOffer::Rate(r),
                    window.unwrap_or(Length::Count(num_conns + extra)),
                )
            }
            Offer::Open {
                rate: None,
                num_conns,
            } => match window {
                Some(w) => Load::new(
                    LoadOffer::Users {
                        users: 1,
                        think: 0.0,
                    },
                    w,
                ),
                None => Load::new(LoadOffer::BackToBack, Length::Count(num_conns)),
            },
            Offer::Closed {
                users,
                requests,
                think_ms,
            } => Load::new(
                LoadOffer::Users {
                    users,
                    think: think_ms.max(0.0) * 1e-3,
                },
                window.unwrap_or(Length::Count(requests)),
            ),
        };
        let closed = matches!(p.offer, Offer::Closed { .. });
        if p.num_calls > 1 || (p.num_calls_given && closed) {
            // Users keep one connection for all their requests unless told
            // otherwise; `num_calls = 1` written out means a connection per request.
            load = load.calls(p.num_calls);
        }
        if p.pipeline > 1 {
            load = load.burst(p.pipeline);
        }
        load
    }
}

/// The lag threshold of an open-loop run at `rate`: half a gap between
/// arrivals, at least 10 ms, in whole microseconds.
fn lag_threshold(rate: f64) -> f64 {
    let ms = (500.0 / rate.max(1e-9)).max(10.0);
    (ms * 1000.0).round() / 1000.0 * 1e-3
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The command line the study wrote for a run before it built the spec
    /// as a typed value: the reference the typed spec must equal.
    fn legacy_args(r: &LoadRun) -> Vec<String> {
        r.legacy()
    }

    impl LoadRun {
        fn legacy(&self) -> Vec<String> {
            let p = &self.params;
            let mut v: Vec<String> = vec![
                "--server".into(),
                self.addr.ip().to_string(),
                "--port".into(),
                self.addr.port().to_string(),
                "--uri".into(),
                self.uri.clone(),
                "--timeout".into(),
                format!("{}", p.timeout.as_secs_f64()),
                "--label".into(),
                self.label.clone(),
                "--threads".into(),
                self.threads.to_string(),
                "--no-progress".into(),
            ];
            match self.protocol {
                Protocol::H1 => {
                    v.push("--verify-root".into());
                    v.push(self.root.to_string_lossy().into_owned());
                }
                Protocol::H2 => {
                    v.push("--http2".into());
                    v.push("--max-concurrent-streams".into());
                    v.push(self.streams.to_string());
                }
                Protocol::H3 => {
                    v.push("--http3".into());
                    v.push("--max-concurrent-streams".into());
                    v.push(self.streams.to_string());
                }
            }
            let mut push = |k: &str, val: String| {
                v.push(k.to_string());
                v.push(val);
            };
            if let Some(l) = &self.uri_list {
                push("--uri-list", l.to_string_lossy().into_owned());
            }
            if let Some(r) = p.probe {
                push("--probe", format!("{r}"));
            }
            let warm = p.warmup.as_secs_f64();
            if warm > 0.0 {
                push("--warmup", format!("{warm}"));
            }
            if p.num_calls > 1 || (p.num_calls_given && matches!(p.offer, Offer::Closed { .. })) {
                // Users keep one connection for all their requests unless told
                // otherwise; `num_calls = 1` written out means a connection per request.
                push("--num-calls", p.num_calls.to_string());
            }
            if p.pipeline > 1 {
                push("--burst-length", p.pipeline.to_string());
            }
            offer_args(p, warm, &mut push);
            if p.num_calls > 1 {
                v.push("--reconnect".into());
            }
            if let Some(t) = &self.tls {
                // `--ssl` keeps the study's host/port spelling; `--cacert` turns
                // verification on against the study's certificate only.
                v.push("--ssl".into());
                v.push("--cacert".into());
                v.push(t.ca.to_string_lossy().into_owned());
                if !t.resume {
                    v.push("--ssl-no-reuse".into());
                }
            }
            if let Some(sh) = &self.shard {
                v.extend([
                    "--client".to_string(),
                    format!("{}/{}", sh.index, sh.count),
                    "--run-id".into(),
                    sh.run_id.clone(),
                ]);
            }
            v
        }
    }

    /// The arguments of the offered load: rate or users, and the window or the counts.
    fn offer_args(p: &StepParams, warm: f64, push: &mut impl FnMut(&str, String)) {
        let lag = |r: f64| format!("{:.3}ms", (500.0 / r.max(1e-9)).max(10.0));
        match (p.offer, p.window.map(|d| d.as_secs_f64())) {
            (Offer::Open { rate: Some(r), .. }, Some(t)) => {
                push("--rate", format!("{r}"));
                push("--duration", format!("{t}"));
                push("--lag-threshold", lag(r));
            }
            (
                Offer::Open {
                    rate: Some(r),
                    num_conns,
                },
                None,
            ) => {
                push("--rate", format!("{r}"));
                let extra = (r * warm).ceil() as u64;
                push("--num-conns", (num_conns + extra).to_string());
                push("--lag-threshold", lag(r));
            }
            (Offer::Open { rate: None, .. }, Some(t)) => {
                push("--users", "1".into());
                push("--duration", format!("{t}"));
            }
            (
                Offer::Open {
                    rate: None,
                    num_conns,
                },
                None,
            ) => push("--num-conns", num_conns.to_string()),
            (
                Offer::Closed {
                    users,
                    requests,
                    think_ms,
                },
                window,
            ) => {
                push("--users", users.to_string());
                match window {
                    Some(t) => push("--duration", format!("{t}")),
                    None => push("--requests-per-user", requests.to_string()),
                }
                if think_ms > 0.0 {
                    push("--think", format!("{think_ms}ms"));
                }
            }
        }
    }

    fn run(offer: Offer, window: Option<f64>) -> LoadRun {
        LoadRun {
            addr: "127.0.0.1:8080".parse().unwrap(),
            uri: "/a".into(),
            uri_list: None,
            params: StepParams {
                step: String::new(),
                offer,
                target: "/a".into(),
                num_calls: 1,
                num_calls_given: false,
                pipeline: 1,
                timeout: Duration::from_secs(5),
                max_duration: Duration::from_secs(60),
                warmup: Duration::from_secs(1),
                window: window.map(Duration::from_secs_f64),
                probe: None,
            },
            root: PathBuf::from("/srv"),
            label: "x".into(),
            threads: 1,
            tls: None,
            shard: None,
            protocol: Protocol::H1,
            streams: H2_STREAMS,
        }
    }

    /// `parse_args` of the legacy command line, its recorded arguments
    /// left out (they are the arguments themselves) and the lag threshold
    /// taken as equal when it differs only in the last bits (the legacy
    /// line wrote it as milliseconds with three decimals).
    fn legacy_spec(r: &LoadRun) -> LoadSpec {
        let mut s = httplab_load::parse_args(legacy_args(r)).expect("the legacy line parses");
        s.command_line = Vec::new();
        s
    }

    fn same_run(r: &LoadRun) {
        let typed = r.spec().expect("a valid spec");
        let mut old = legacy_spec(r);
        assert!((old.lag_threshold - typed.lag_threshold).abs() < 1e-12);
        old.lag_threshold = typed.lag_threshold;
        let back = httplab_load::parse_args(&typed.command_line).expect("to_args parses");
        let strip = |s: &LoadSpec| LoadSpec {
            command_line: Vec::new(),
            ..s.clone()
        };
        assert_eq!(strip(&typed), old, "{:?}", legacy_args(r));
        assert_eq!(strip(&back), strip(&typed), "{:?}", typed.command_line);
    }

    /// Every kind of run the study makes is the run it made when it wrote
    /// a command line: the same `LoadSpec`.
    #[test]
    fn the_typed_spec_is_the_one_the_command_line_gave() {
        let dir = tempfile::tempdir().expect("tempdir");
        let list = dir.path().join("set.txt");
        std::fs::write(&list, "/a\n/b\n").expect("list");
        let offers = [
            (
                Offer::Open {
                    rate: Some(100.0),
                    num_conns: 50,
                },
                Some(2.0),
            ),
            (
                Offer::Open {
                    rate: Some(3.0),
                    num_conns: 50,
                },
                None,
            ),
            (
                Offer::Open {
                    rate: None,
                    num_conns: 20,
                },
                Some(1.5),
            ),
            (
                Offer::Open {
                    rate: None,
                    num_conns: 20,
                },
                None,
            ),
            (
                Offer::Closed {
                    users: 4,
                    requests: 10,
                    think_ms: 2.5,
                },
                Some(3.0),
            ),
            (
                Offer::Closed {
                    users: 4,
                    requests: 10,
                    think_ms: 0.0,
                },
                None,
            ),
        ];
        for (offer, window) in offers {
            for (calls, given, pipeline) in
                [(1, false, 1), (1, true, 1), (6, true, 1), (8, true, 4)]
            {
                let mut r = run(offer, window);
                r.params.num_calls = calls;
                r.params.num_calls_given = given;
                r.params.pipeline = pipeline;
                same_run(&r);
                r.params.probe = Some(40.0);
                r.uri_list = Some(list.clone());
                r.threads = 3;
                let scheduled = !matches!(r.params.offer, Offer::Open { rate: None, .. });
                // A back-to-back run has no schedule to split into shards.
                r.shard = scheduled.then(|| RunShard {
                    index: 1,
                    count: 2,
                    run_id: "run-1".into(),
                });
                r.params.warmup = Duration::ZERO;
                same_run(&r);
                for resume in [true, false] {
                    r.tls = Some(RunTls {
                        ca: PathBuf::from("/nonexistent/ca.pem"),
                        resume,
                    });
                    same_run(&r);
                }
                if pipeline == 1 {
                    for protocol in [Protocol::H2, Protocol::H3] {
                        r.protocol = protocol;
                        r.streams = 4;
                        same_run(&r);
                    }
                }
            }
        }
    }

    #[test]
    fn a_probe_key_becomes_the_load_runs_probe() {
        let mut r = run(
            Offer::Open {
                rate: Some(100.0),
                num_conns: 100,
            },
            Some(2.0),
        );
        r.params.probe = Some(50.0);
        let spec = r.spec().expect("valid");
        assert_eq!(spec.probe.map(|p| (p.rate, p.conns)), Some((50.0, 1)));
        let a = &spec.command_line;
        assert!(a.windows(2).any(|w| w == ["--probe", "50"]), "{a:?}");
    }

    #[test]
    fn open_and_closed_runs_are_load_specs() {
        let open = run(
            Offer::Open {
                rate: Some(100.0),
                num_conns: 50,
            },
            None,
        );
        let spec = open.spec().expect("valid");
        let a = &spec.command_line;
        assert!(a.windows(2).any(|w| w == ["--num-conns", "150"]), "{a:?}");
        let closed = run(
            Offer::Closed {
                users: 4,
                requests: 10,
                think_ms: 2.0,
            },
            Some(3.0),
        );
        let spec = closed.spec().expect("valid");
        let a = &spec.command_line;
        assert!(a.windows(2).any(|w| w == ["--users", "4"]), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--think", "0.002"]), "{a:?}");
        assert!(!a.contains(&"--requests-per-user".to_string()));
    }

    #[test]
    fn an_h2_run_is_load_with_http2_and_one_stream() {
        let mut r = run(
            Offer::Closed {
                users: 4,
                requests: 10,
                think_ms: 0.0,
            },
            Some(3.0),
        );
        let h1 = r.spec().unwrap();
        assert!(h1.http2.is_none());
        assert!(h1.verify_root.is_some());
        r.protocol = Protocol::H2;
        let spec = r.spec().unwrap();
        let a = &spec.command_line;
        assert!(a.contains(&"--http2".to_string()), "{a:?}");
        assert!(!a.contains(&"--verify-root".to_string()), "{a:?}");
        let h = spec.http2.as_ref().expect("an h2 run carries HTTP/2");
        assert_eq!(h.max_concurrent_streams, H2_STREAMS);
        assert!(spec.tls.is_none(), "cleartext: h2c by prior knowledge");
        // Over TLS: h2 by ALPN, the study's certificate the only anchor.
        r.tls = Some(RunTls {
            ca: PathBuf::from("/nonexistent/ca.pem"),
            resume: true,
        });
        let spec = r.spec().unwrap();
        assert!(spec.http2.is_some() && spec.tls.is_some());
        // The calibration cache sees a different shape than HTTP/1.1.
        r.protocol = Protocol::H1;
        let h1_tls = r.spec().unwrap();
        assert_ne!(
            httplab_load::calibration_cache::Shape::of(&spec),
            httplab_load::calibration_cache::Shape::of(&h1_tls)
        );
    }

    #[test]
    fn an_h3_run_is_load_with_http3_over_verified_tls() {
        let mut r = run(
            Offer::Open {
                rate: Some(10.0),
                num_conns: 5,
            },
            Some(1.0),
        );
        r.protocol = Protocol::H3;
        r.tls = Some(RunTls {
            ca: PathBuf::from("/nonexistent/ca.pem"),
            resume: true,
        });
        let spec = r.spec().unwrap();
        let a = &spec.command_line;
        assert!(a.contains(&"--http3".to_string()), "{a:?}");
        assert!(!a.contains(&"--http2".to_string()), "{a:?}");
        assert!(!a.contains(&"--verify-root".to_string()), "{a:?}");
        let h = spec.http3.as_ref().expect("an h3 run carries HTTP/3");
        assert_eq!(h.max_concurrent_streams, H2_STREAMS);
        assert!(spec.http2.is_none());
        let tls = spec.tls.as_ref().expect("QUIC is TLS");
        assert!(tls.verify, "verified against the study's certificate");
        // A different shape for the calibration cache than HTTP/1.1 over TLS.
        r.protocol = Protocol::H1;
        let h1_tls = r.spec().unwrap();
        assert_ne!(
            httplab_load::calibration_cache::Shape::of(&spec),
            httplab_load::calibration_cache::Shape::of(&h1_tls)
        );
    }
}
