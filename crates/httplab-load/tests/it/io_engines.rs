//! The two socket I/O engines of the HTTP/1.1 driver (`--io epoll`, `--io
//! uring`) run the same scenarios and must count the same: requests, replies,
//! connections, bytes and every error class. Counts only; no timing.
//! Where io_uring is unavailable the uring run must say so and run on epoll.

use crate::common;

use common::{Mode, TestServer};
use httplab_model::RunResult;

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

fn run(args: &str, io: &str) -> RunResult {
    let full = format!("{args} --io {io}");
    let spec = httplab_load::parse_args(full.split_whitespace()).expect("parse args");
    httplab_load::run(&spec, false).expect("run")
}

fn engine(r: &RunResult) -> &str {
    r.config.facts.io_engine.as_ref().map_or("", |e| e.as_str())
}

/// What must not depend on the engine.
fn counts(r: &RunResult) -> Vec<(&'static str, u64)> {
    vec![
        ("connections", r.totals.connections),
        ("requests", r.totals.requests),
        ("replies", r.totals.replies),
        ("bytes_expected", r.accuracy.bytes_expected),
        ("bytes_received", r.accuracy.bytes_received),
        ("framing_errors", r.accuracy.framing_errors),
        ("errors", r.errors.total),
        ("client_timo", r.errors.client_timo),
        ("connrefused", r.errors.connrefused),
        ("connreset", r.errors.connreset),
        ("other", r.errors.other),
        ("response_timo", r.errors.response_timo),
    ]
}

/// Runs `args` on both engines against a fresh server each; returns both results.
fn both(mode: Mode, args: &str) -> (RunResult, RunResult, u64, u64) {
    let s = TestServer::start(mode.clone());
    let a = run(&args.replace("PORT", &s.port().to_string()), "epoll");
    let seen_a = s.requests();
    drop(s);
    let s = TestServer::start(mode);
    let b = run(&args.replace("PORT", &s.port().to_string()), "uring");
    let seen_b = s.requests();
    assert_eq!(engine(&a), "epoll");
    let uring = httplab_load::io_uring_available();
    if uring {
        assert_eq!(engine(&b), "io_uring");
    } else {
        assert_eq!(engine(&b), "epoll");
        assert!(
            b.self_check
                .warnings
                .iter()
                .any(|w| w.starts_with("--io uring")),
            "{:?}",
            b.self_check.warnings
        );
    }
    assert_eq!(counts(&a), counts(&b), "{args}");
    (a, b, seen_a, seen_b)
}

#[test]
fn closed_loop_keep_alive() {
    let (a, _, sa, sb) = both(
        Mode::Ok(body(300)),
        "http://127.0.0.1:PORT/k --users 8 --requests-per-user 25 --timeout 5",
    );
    assert_eq!((a.totals.replies, a.totals.connections), (200, 8));
    assert_eq!((sa, sb), (200, 200));
}

#[test]
fn open_loop_connections() {
    let (a, _, _, _) = both(
        Mode::Ok(body(50)),
        "--server 127.0.0.1 --port PORT --uri /o --rate 2000 --num-conns 40 --num-calls 3 --timeout 5",
    );
    assert_eq!(a.totals.replies, 120);
    assert_eq!(a.errors.total, 0);
}

#[test]
fn pipelined_bursts() {
    let (a, _, _, _) = both(
        Mode::Ok(body(20)),
        "--server 127.0.0.1 --port PORT --num-conns 4 --num-calls 16 --burst-length 8 --timeout 5",
    );
    assert_eq!(a.totals.replies, 64);
}

#[test]
fn sessions_with_think_time() {
    let (a, _, _, _) = both(
        Mode::Ok(body(10)),
        "--server 127.0.0.1 --port PORT --wsess 3,4,0.01 --rate 100 --burst-length 2 --timeout 5",
    );
    assert_eq!(a.totals.replies, 12);
}

#[test]
fn large_bodies_chunked_and_close_delimited() {
    // Bodies larger than one receive buffer, in pieces.
    let (a, _, _, _) = both(
        Mode::Chunked(body(100_000), 7_000),
        "--server 127.0.0.1 --port PORT --num-conns 3 --num-calls 2 --timeout 5",
    );
    assert_eq!(a.accuracy.bytes_received, 600_000);
    let (a, _, _, _) = both(
        Mode::CloseDelimited(body(50_000)),
        "--server 127.0.0.1 --port PORT --num-conns 3 --num-calls 2 --timeout 5 --reconnect",
    );
    assert_eq!((a.totals.replies, a.totals.connections), (6, 6));
}

#[test]
fn server_closes_each_connection() {
    let (a, _, _, _) = both(
        Mode::OkClose(body(30)),
        "http://127.0.0.1:PORT/c --users 4 --requests-per-user 10 --threads 2 --timeout 5",
    );
    assert_eq!((a.totals.replies, a.totals.connections), (40, 40));
}

#[test]
fn errors_are_counted_alike() {
    let (a, _, _, _) = both(
        Mode::Reset,
        "--server 127.0.0.1 --port PORT --rate 1000 --num-conns 5 --timeout 2",
    );
    assert_eq!(a.errors.connreset, 5);
    let (a, _, _, _) = both(
        Mode::Garbage,
        "--server 127.0.0.1 --port PORT --num-conns 3 --timeout 2",
    );
    assert_eq!(a.errors.other, 3);
    let (a, _, _, _) = both(
        Mode::ShortBody,
        "--server 127.0.0.1 --port PORT --num-conns 3 --timeout 2",
    );
    assert_eq!(a.errors.total, 3);
    let (a, _, _, _) = both(
        Mode::Overrun,
        "--server 127.0.0.1 --port PORT --num-conns 2 --timeout 2",
    );
    assert!(a.errors.total >= 2);
    let (a, _, _, _) = both(
        Mode::CloseAtOnce,
        "--server 127.0.0.1 --port PORT --num-conns 4 --timeout 2",
    );
    assert_eq!(a.errors.connreset, 4);
}

#[test]
fn timeouts_cancel_in_flight_receives() {
    // Every connection ends with its RECV in flight (the server never answers):
    // the uring engine must cancel them and still end.
    let (a, _, _, _) = both(
        Mode::Stall,
        "--server 127.0.0.1 --port PORT --rate 1000 --num-conns 4 --timeout 0.2",
    );
    assert_eq!(a.errors.client_timo, 4);
    let (a, _, _, _) = both(
        Mode::EndlessChunked,
        "--server 127.0.0.1 --port PORT --num-conns 2 --timeout 5 --max-response-time 0.2",
    );
    assert_eq!(a.errors.response_timo, 2);
}

#[test]
fn refused_connects() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for io in ["epoll", "uring"] {
        let r = run(
            &format!("--server 127.0.0.1 --port {port} --rate 1000 --num-conns 5 --timeout 2"),
            io,
        );
        assert_eq!((r.errors.connrefused, r.errors.total), (5, 5), "{io}");
    }
}

#[test]
fn the_report_names_the_engine() {
    let s = TestServer::start(Mode::Ok(body(5)));
    let r = run(
        &format!(
            "http://127.0.0.1:{}/n --users 1 --requests-per-user 2",
            s.port()
        ),
        "uring",
    );
    let text = httplab_load::render_httperf_report(&r);
    assert!(
        text.contains(&format!("httplab I/O engine: {}", engine(&r))),
        "{text}"
    );
}
