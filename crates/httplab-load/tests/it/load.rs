//! Integration tests against purpose-built in-process servers on 127.0.0.1.
//! Each test is small (at most a few hundred requests) and bounded by
//! --timeout; none asserts on timing.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{load, Mode, TestServer};
use httplab_model::{Document, LoadMode};

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

#[test]
fn open_loop_counts_match() {
    let s = TestServer::start(Mode::Ok(body(500)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --uri /x --rate 2000 --num-conns 50 --num-calls 4 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.connections, 50);
    assert_eq!(r.totals.requests, 200);
    assert_eq!(r.totals.replies, 200);
    assert_eq!(r.reply.status.success, 200);
    assert_eq!(r.errors.total, 0);
    assert_eq!(s.requests(), 200);
    assert_eq!(r.reply.content_bytes, 500.0);
    assert_eq!(r.accuracy.bytes_expected, 100_000);
    assert_eq!(r.accuracy.bytes_received, 100_000);
    assert_eq!(r.connection.replies_per_conn, 4.0);
    assert_eq!(r.config.mode, LoadMode::OpenLoop);
    assert_eq!(r.latency.response.count, 200);
    assert_eq!(r.latency.response_uncorrected.count, 200);
    assert_eq!(r.latency.connect.count, 50);
    // Corrected latency is never below the uncorrected one.
    assert!(r.latency.response.max_ms >= r.latency.response_uncorrected.max_ms);
    let series_replies: u64 = r.series.iter().map(|i| i.replies).sum();
    assert_eq!(series_replies, 200);
    // "GET /x HTTP/1.1", User-Agent, Host, blank line.
    assert_eq!(r.request.size_bytes, 63.0);
}

#[test]
fn sequential_without_rate() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server=127.0.0.1 --port={} --num-conns=20 --num-calls=3 --timeout=5",
        s.port()
    ));
    assert_eq!(r.totals.connections, 20);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(r.totals.max_concurrent_connections, 1);
    assert_eq!(r.config.mode, LoadMode::Sequential);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 20);
}

#[test]
fn burst_pipelining() {
    let s = TestServer::start(Mode::Ok(body(100)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 500 --num-conns 10 --num-calls 6 --burst-length 3 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.requests, 60);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(r.errors.total, 0);
    // Three requests written at once arrive in one read on loopback.
    assert!(s.seen.max_batch.load(Ordering::SeqCst) >= 2);
}

/// Closed-loop users pipeline their bursts too (`--users` with
/// `--burst-length` used to send one request at a time), and a user's
/// connection carries no more than its --num-calls: the rest of a burst goes
/// on the next connection.
#[test]
fn users_pipeline_their_bursts() {
    let s = TestServer::start(Mode::Ok(body(100)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --users 2 --requests-per-user 12 --burst-length 4 --num-calls 6 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.requests, 24);
    assert_eq!(r.totals.replies, 24);
    assert_eq!(r.errors.total, 0);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 4);
    assert_eq!(s.requests(), 24);
    assert!(s.seen.max_batch.load(Ordering::SeqCst) >= 2);
    let paced = httplab_load::parse_args(
        "--server 127.0.0.1 --port 1 --users 2 --rate 10 --burst-length 4 --duration 1s"
            .split_whitespace(),
    );
    let err = format!(
        "{:#}",
        paced.expect_err("paced users with bursts are refused")
    );
    assert!(err.contains("--burst-length"), "{err}");
}

#[test]
fn uneven_burst_does_not_hang() {
    // httperf#20: num-calls not divisible by burst-length.
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 5 --num-calls 5 --burst-length 2 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.replies, 25);
}

#[test]
fn sessions_with_think_times() {
    let s = TestServer::start(Mode::Ok(body(50)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --wsess 6,4,0.01 --burst-length 2 --rate 200 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.requests, 24);
    assert_eq!(r.totals.replies, 24);
    assert_eq!(r.totals.connections, 6);
    let ss: &httplab_load::SessionStats = r
        .config
        .facts
        .session_stats
        .as_ref()
        .expect("session stats");
    assert_eq!((ss.started, ss.completed, ss.failed), (6, 6, 0));
    assert_eq!(ss.length_histogram.get(4), Some(&6));
    // 1 think of >= 10 ms per session: the session lifetime shows it.
    assert!(ss.lifetime_sum_s >= 6.0 * 0.01);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("Session rate [sess/s]:"));
    assert!(text.contains("Session length histogram: 0 0 0 0 6"));
}

#[test]
fn session_log_with_post_and_bursts() {
    let s = TestServer::start(Mode::Ok(body(20)));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sess.log");
    std::fs::write(
        &f,
        "# two sessions\n/a think=0.005\n  /b\n  /c\n/d method=POST contents='data here'\n\n/e\n",
    )
    .unwrap();
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --wsesslog 4,0.001,{} --rate 100 --timeout 5",
        s.port(),
        f.display()
    ));
    // Sessions alternate: 4 calls, 1 call, 4, 1.
    assert_eq!(r.totals.requests, 10);
    assert_eq!(r.totals.replies, 10);
    let bodies = s.seen.bodies.lock().unwrap().clone();
    assert_eq!(bodies, vec![b"data here".to_vec(), b"data here".to_vec()]);
    let mut paths = s.seen.paths.lock().unwrap().clone();
    paths.sort();
    assert_eq!(paths.iter().filter(|p| *p == "/a").count(), 2);
    assert_eq!(paths.iter().filter(|p| *p == "/e").count(), 2);
}

#[test]
fn closed_loop_users() {
    let s = TestServer::start(Mode::Ok(body(30)));
    let r = load(&format!(
        "http://127.0.0.1:{}/u --users 5 --requests-per-user 20 --think 1ms --timeout 5",
        s.port()
    ));
    assert_eq!(r.config.mode, LoadMode::ClosedLoop);
    assert_eq!(r.totals.requests, 100);
    assert_eq!(r.totals.replies, 100);
    // Keep-alive: one connection per user.
    assert_eq!(r.totals.connections, 5);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 5);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("httplab closed loop: 5 users"));
}

#[test]
fn closed_loop_with_threads_and_server_closing() {
    let s = TestServer::start(Mode::OkClose(body(30)));
    let r = load(&format!(
        "http://127.0.0.1:{}/u --users 4 --requests-per-user 10 --threads 2 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.replies, 40);
    // The server closes after each reply: a new connection per request.
    assert_eq!(r.totals.connections, 40);
    assert_eq!(r.errors.total, 0);
}

#[test]
fn chunked_replies_are_counted_exactly() {
    let s = TestServer::start(Mode::Chunked(body(1000), 300));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 5 --num-calls 3 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.replies, 15);
    assert_eq!(r.reply.content_bytes, 1000.0);
    assert_eq!(r.reply.footer_bytes, 2.0);
    assert_eq!(r.accuracy.bytes_received, 15_000);
    assert_eq!(r.accuracy.framing_errors, 0);
}

#[test]
fn close_delimited_replies_reconnect() {
    let s = TestServer::start(Mode::CloseDelimited(body(777)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 4 --num-calls 2 --timeout 5 --reconnect",
        s.port()
    ));
    assert_eq!(r.totals.replies, 8);
    assert_eq!(r.reply.content_bytes, 777.0);
    assert_eq!(r.errors.total, 0);
    // Each call needed its own connection.
    assert_eq!(r.totals.connections, 8);
    // Without --reconnect (httperf): each connection ends with the server's close.
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 4 --num-calls 2 --timeout 5",
        s.port()
    ));
    assert_eq!((r.totals.connections, r.totals.replies), (4, 4));
    assert_eq!(r.errors.total, 0);
    assert_eq!(r.config.facts.unsent_calls, Some(4));
}

#[test]
fn refused_connections() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = load(&format!(
        "--server 127.0.0.1 --port {port} --rate 1000 --num-conns 5 --timeout 2"
    ));
    assert_eq!(r.errors.connrefused, 5);
    assert_eq!(r.errors.total, 5);
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn reset_connections() {
    let s = TestServer::start(Mode::Reset);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 1000 --num-conns 5 --timeout 2",
        s.port()
    ));
    assert_eq!(r.errors.connreset, 5, "{:?}", r.errors);
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn close_before_reply_is_connreset() {
    let s = TestServer::start(Mode::CloseAtOnce);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 4 --timeout 2",
        s.port()
    ));
    assert_eq!(r.errors.connreset, 4, "{:?}", r.errors);
}

#[test]
fn stalled_server_times_out() {
    let s = TestServer::start(Mode::Stall);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 1000 --num-conns 4 --timeout 0.2",
        s.port()
    ));
    assert_eq!(r.errors.client_timo, 4, "{:?}", r.errors);
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn garbage_is_other() {
    let s = TestServer::start(Mode::Garbage);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 3 --timeout 2",
        s.port()
    ));
    assert_eq!(r.errors.other, 3, "{:?}", r.errors);
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn short_body_is_other_and_inaccurate() {
    let s = TestServer::start(Mode::ShortBody);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 3 --timeout 2",
        s.port()
    ));
    assert_eq!(r.errors.other, 3, "{:?}", r.errors);
    assert_eq!(r.accuracy.bytes_expected, 300);
    assert_eq!(r.accuracy.bytes_received, 30);
    assert_eq!(r.accuracy.framing_errors, 3);
}

#[test]
fn duration_runs_the_schedule() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "http://127.0.0.1:{}/ --rate 200 --duration 0.3s --timeout 5",
        s.port()
    ));
    // Deterministic arrivals at 0, 5 ms, ..., 295 ms.
    assert_eq!(r.totals.connections, 60);
    assert_eq!(r.totals.replies, 60);
}

#[test]
fn threads_split_the_schedule() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 1000 --num-conns 90 --num-calls 2 --threads 3 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.connections, 90);
    assert_eq!(r.totals.replies, 180);
    assert_eq!(r.config.threads, 3);
}

#[test]
fn wset_walks_files() {
    let s = TestServer::start(Mode::Ok(body(10)));
    load(&format!(
        "--server 127.0.0.1 --port {} --uri /f --wset 500,0.5 --num-conns 6",
        s.port()
    ));
    let paths = s.seen.paths.lock().unwrap().clone();
    assert_eq!(
        paths,
        vec![
            "/f/0/0/0.html",
            "/f/0/0/1.html",
            "/f/0/0/1.html",
            "/f/0/0/2.html",
            "/f/0/0/2.html",
            "/f/0/0/3.html"
        ]
    );
}

#[test]
fn verify_root_finds_mismatches() {
    let s = TestServer::start(Mode::Ok(b"hello".to_vec()));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good"), b"hello").unwrap();
    std::fs::write(dir.path().join("bad"), b"HELLO").unwrap();
    let good = load(&format!(
        "--server 127.0.0.1 --port {} --uri /good --num-conns 3 --verify-root {}",
        s.port(),
        dir.path().display()
    ));
    assert_eq!((good.accuracy.verified, good.accuracy.mismatches), (3, 0));
    let bad = load(&format!(
        "--server 127.0.0.1 --port {} --uri /bad --num-conns 3 --verify-root {}",
        s.port(),
        dir.path().display()
    ));
    assert_eq!((bad.accuracy.verified, bad.accuracy.mismatches), (3, 3));
}

#[test]
fn json_round_trip_and_csv() {
    let s = TestServer::start(Mode::Ok(body(64)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 1000 --num-conns 30 --timeout 5 --label t1",
        s.port()
    ));
    let text = serde_json::to_string(&r).unwrap();
    let Document::Run(back) = Document::from_json(&text).unwrap() else {
        panic!("not a run document")
    };
    assert_eq!(back.totals, r.totals);
    assert_eq!(back.label, "t1");
    let h = back.latency.response.histogram().unwrap().unwrap();
    assert_eq!(h.len(), 30);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("s.csv");
    httplab_load::write_csv(&r, &csv).unwrap();
    let content = std::fs::read_to_string(&csv).unwrap();
    assert!(content.starts_with("t_s,len_s,connections,requests,replies"));
    assert_eq!(content.lines().count(), 1 + r.series.len());
}

#[test]
fn stop_flag_reports_what_ran() {
    let stop = Arc::new(AtomicBool::new(false));
    let s = TestServer::start_with_trigger(Mode::Ok(body(10)), Some((50, stop.clone())));
    let spec = httplab_load::parse_args(
        format!(
            "--server 127.0.0.1 --port {} --rate 500 --duration 60s --timeout 5",
            s.port()
        )
        .split_whitespace(),
    )
    .unwrap();
    let r = httplab_load::run_with_stop(&spec, false, &stop).unwrap();
    assert!(r.interrupted);
    assert!(r.totals.replies >= 49 && r.totals.replies < 30_000);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("interrupted"));
}

#[test]
fn head_requests_have_no_body() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --method HEAD --num-conns 2 --num-calls 3 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.replies, 6);
    assert_eq!(r.reply.content_bytes, 0.0);
}

#[test]
fn instant_failures_do_not_recurse() {
    // 192.0.2.1 (TEST-NET-1) is not a local address: every bind fails at once.
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 20000 --local-addr 192.0.2.1 --timeout 2",
        s.port()
    ));
    assert_eq!(r.errors.addrunavail, 20000);
    assert!(r.self_check.client_bound);
    let u = load(&format!(
        "http://127.0.0.1:{}/ --users 2 --requests-per-user 5000 --local-addr 192.0.2.1 --timeout 2",
        s.port()
    ));
    assert_eq!(u.errors.addrunavail, 10000);
    assert_eq!(s.requests(), 0);
}

#[test]
fn paced_users_follow_the_request_schedule() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "http://127.0.0.1:{}/ --users 4 --rate 400 --requests-per-user 10 --timeout 5",
        s.port()
    ));
    assert_eq!(r.config.mode, LoadMode::OpenLoop);
    assert_eq!(r.config.rate, Some(400.0));
    assert_eq!(r.totals.replies, 40);
    assert_eq!(r.totals.connections, 4);
}

#[test]
fn random_periods_threads_and_http10() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let e = load(&format!(
        "--server 127.0.0.1 --port {} --period e0.002 --num-conns 40 --threads 2 --timeout 5",
        s.port()
    ));
    assert_eq!(e.totals.replies, 40);
    assert_eq!(e.config.distribution.as_deref(), Some("exponential"));
    let u = load(&format!(
        "--server 127.0.0.1 --port {} --period u0.001,0.003 --num-conns 20 --timeout 5 --close-with-reset",
        s.port()
    ));
    assert_eq!(u.totals.replies, 20);
    assert_eq!(u.errors.total, 0);
    // HTTP/1.0 requests to a server that keeps the connection: still one connection each.
    let h = load(&format!(
        "--server 127.0.0.1 --port {} --http-version 1.0 --no-host-hdr --add-header X-A:1\\nX-B:2 --num-conns 3 --num-calls 2 --timeout 5",
        s.port()
    ));
    assert_eq!(h.totals.replies, 6);
    let expect = format!(
        "GET / HTTP/1.0\r\nUser-Agent: httplab/{}\r\nX-A:1\r\nX-B:2\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(h.request.size_bytes, expect.len() as f64);
}

#[test]
fn cli_main_writes_json_and_csv() {
    let s = TestServer::start(Mode::Ok(body(10)));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let args: Vec<std::ffi::OsString> = vec![
        "httplab load".into(),
        format!("http://127.0.0.1:{}/", s.port()).into(),
        "--num-conns=5".into(),
        "--num-call".into(),
        "2".into(),
        "-q".into(),
        "--json".into(),
        json.clone().into(),
        "--csv".into(),
        csv.clone().into(),
    ];
    let code = httplab_load::cli_main(args).unwrap();
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let text = std::fs::read_to_string(&json).unwrap();
    let Document::Run(r) = Document::from_json(&text).unwrap() else {
        panic!("not a run")
    };
    assert_eq!(r.totals.replies, 10);
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("t_s,"));
    let bad: Vec<std::ffi::OsString> = vec!["httplab load".into(), "--num-conns=x".into()];
    assert!(httplab_load::cli_main(bad).is_err());
}
