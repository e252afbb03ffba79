//! `--prometheus` from the library side: a run publishes once per interval
//! to its `LoadLive`, and after the run the served counters are the
//! result's. No timing assertions.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{Mode, TestServer};

fn scrape(addr: std::net::SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 "), "{out}");
    out
}

fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[test]
fn final_counters_match_the_result() {
    let s = TestServer::start(Mode::Ok(b"0123456789".to_vec()));
    let mut spec = httplab_load::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        &s.addr.port().to_string(),
        "--rate",
        "200",
        "--num-conns",
        "300",
        "--num-calls",
        "2",
        "--threads",
        "2",
        "--sample-interval",
        "0.25",
    ])
    .unwrap();
    let (live, endpoint) = httplab_live::serve_load("127.0.0.1:0".parse().unwrap()).unwrap();
    spec.live.metrics = Some(live.clone());
    let r = httplab_load::run(&spec, false).unwrap();
    let text = scrape(endpoint.local_addr());
    assert_eq!(r.totals.replies, 600);
    assert_eq!(
        value(&text, "httplab_load_replies_total"),
        r.totals.replies as f64
    );
    assert_eq!(
        value(&text, "httplab_load_requests_sent_total"),
        r.totals.requests as f64
    );
    assert_eq!(
        value(&text, "httplab_load_intervals_total"),
        r.series.len() as f64
    );
    assert_eq!(value(&text, "httplab_load_runs_total"), 1.0);
    assert_eq!(value(&text, "httplab_load_running"), 0.0);
    let snap = live.snapshot();
    assert_eq!(snap.errors_total(), r.errors.total);
}

#[test]
fn errors_are_published_by_class() {
    // Every connection is reset after its request: connreset errors.
    let s = TestServer::start(Mode::Reset);
    let mut spec = httplab_load::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        &s.addr.port().to_string(),
        "--rate",
        "100",
        "--num-conns",
        "20",
        "--timeout",
        "5",
    ])
    .unwrap();
    let (live, endpoint) = httplab_live::serve_load("127.0.0.1:0".parse().unwrap()).unwrap();
    spec.live.metrics = Some(live);
    let r = httplab_load::run(&spec, false).unwrap();
    assert_eq!(r.errors.total, 20, "{:?}", r.errors);
    let text = scrape(endpoint.local_addr());
    let by_class: f64 = text
        .lines()
        .filter(|l| l.starts_with("httplab_load_errors_total{class="))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(by_class, 20.0, "{text}");
    assert_eq!(
        value(&text, "httplab_load_errors_total{class=\"connreset\"}"),
        r.errors.connreset as f64
    );
}

#[test]
fn check_client_in_a_program_that_embeds_the_library_runs_on_threads() {
    let s = TestServer::start(Mode::Ok(b"0123456789".to_vec()));
    let spec = httplab_load::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        &s.addr.port().to_string(),
        "--rate",
        "50",
        "--num-conns",
        "100",
    ])
    .unwrap();
    // This test binary is not `httplab`: the steps run in-process.
    let c = httplab_load::check_client(&spec).unwrap();
    assert_eq!(c.method, "threads");
    assert_eq!((c.one.clients, c.two.clients), (1, 2));
    assert!(c.one.intervals > 0 && c.two.intervals > 0, "{c:?}");
    assert_eq!(c.distorts, !c.differences.is_empty());
    assert_eq!(c.distorts, httplab_load::client_check_warning(&c).is_some());
    // A shard cannot check itself.
    let mut shard = spec.clone();
    shard.client = (0, 2);
    let e = httplab_load::check_client(&shard).unwrap_err().to_string();
    assert!(e.contains("leave out --client"), "{e}");
}
