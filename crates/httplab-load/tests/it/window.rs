//! Path lists, sessions across server closes, warm-up windows, calibration
//! and the client-bound criteria, against in-process servers on 127.0.0.1.
//! Every run is bounded in count (or a sub-second duration) and by --timeout;
//! no assertion depends on how fast the machine is.

use crate::common;

use std::sync::atomic::Ordering;

use common::{load, Mode, TestServer};
use httplab_model::LoadMode;

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// A site with three distinct files and a uri list naming them.
fn site() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"<p>aaaa</p>".repeat(10)).unwrap();
    std::fs::write(dir.path().join("b.html"), b"bb".repeat(300)).unwrap();
    std::fs::create_dir(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c/d.txt"), body(5000)).unwrap();
    let list = dir.path().join("uris.txt");
    std::fs::write(&list, "# the set\n/a.html\n/b.html\n\n/c/d.txt\n").unwrap();
    (dir, list)
}

fn httplab_server(root: &std::path::Path, keep_alive: bool) -> httplab_server::ServerHandle {
    let mut cfg = httplab_server::ServerConfig::for_root(root);
    cfg.keep_alive = keep_alive;
    cfg.quiet = true;
    httplab_server::Server::start(cfg).expect("httplab serve starts")
}

#[test]
fn uri_list_rotates_in_order() {
    let (dir, list) = site();
    let s = TestServer::start(Mode::Ok(body(10)));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 2 --num-calls 3 --timeout 5 --uri-list {}",
        s.port(),
        list.display()
    ));
    assert_eq!(r.totals.replies, 6);
    let paths = s.seen.paths.lock().unwrap().clone();
    assert_eq!(
        paths,
        ["/a.html", "/b.html", "/c/d.txt", "/a.html", "/b.html", "/c/d.txt"]
    );
    assert_eq!(r.config.targets.len(), 3);
    drop(dir);
}

#[test]
fn uri_list_verified_in_every_mode() {
    let (dir, list) = site();
    let h = httplab_server(dir.path(), true);
    let port = h.local_addr().port();
    let common = format!(
        "--server 127.0.0.1 --port {port} --timeout 5 --uri-list {} --verify-root {}",
        list.display(),
        dir.path().display()
    );
    for (args, n) in [
        ("--rate 1000 --num-conns 6 --num-calls 3", 18),
        ("--num-conns 4 --num-calls 6 --burst-length 3", 24),
        ("--users 3 --requests-per-user 4", 12),
        (
            "--users 2 --requests-per-user 5 --num-calls 2 --think 1ms",
            10,
        ),
        ("--rate 500 --num-conns 4 --num-calls 3 --threads 2", 12),
    ] {
        let r = load(&format!("{common} {args}"));
        assert_eq!(r.totals.replies, n, "{args}");
        assert_eq!(r.reply.status.success, n, "{args}");
        assert_eq!(r.errors.total, 0, "{args}");
        assert_eq!(
            (r.accuracy.verified, r.accuracy.mismatches),
            (n, 0),
            "{args}"
        );
    }
    h.shutdown();
}

#[test]
fn sessions_survive_a_closing_server_with_reconnect() {
    let s = TestServer::start(Mode::OkClose(body(40)));
    // httperf's behaviour: a connection ends with the server's close.
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 1000 --num-conns 4 --num-calls 3 --timeout 5",
        s.port()
    ));
    assert_eq!((r.totals.connections, r.totals.replies), (4, 4));
    assert_eq!(r.config.facts.unsent_calls, Some(8));
    assert_eq!(r.latency.session.count, 0, "no session made all its calls");
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("8 calls not made"), "{text}");
    // --reconnect: the remaining calls go on new connections; each session
    // (3 calls) has a session time.
    for extra in ["", "--burst-length 3"] {
        let r = load(&format!(
            "--server 127.0.0.1 --port {} --rate 1000 --num-conns 4 --num-calls 3 --timeout 5 --reconnect {extra}",
            s.port()
        ));
        assert_eq!(r.totals.replies, 12, "{extra}");
        assert_eq!(r.totals.connections, 12, "{extra}");
        assert_eq!(r.errors.total, 0, "{extra}");
        assert_eq!(r.latency.session.count, 4, "{extra}");
        assert!(r.latency.session.mean_ms >= r.latency.response_uncorrected.mean_ms);
        assert_eq!(r.config.facts.unsent_calls, None);
        let text = httplab_load::render_httperf_report(&r);
        assert!(text.contains("httplab session time: 4 sessions"), "{text}");
    }
}

#[test]
fn closed_loop_users_with_num_calls_reconnect_per_session() {
    let s = TestServer::start(Mode::Ok(body(30)));
    let r = load(&format!(
        "http://127.0.0.1:{}/u --users 3 --requests-per-user 6 --num-calls 2 --timeout 5",
        s.port()
    ));
    assert_eq!(r.config.mode, LoadMode::ClosedLoop);
    assert_eq!(r.totals.replies, 18);
    // Each user: 3 sessions of 2 calls, one connection each.
    assert_eq!(r.totals.connections, 9);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 9);
    assert_eq!(r.latency.session.count, 9);
    assert_eq!(r.connection.replies_per_conn, 2.0);
    // Without --num-calls a user keeps its connection; its session is all its requests.
    let r = load(&format!(
        "http://127.0.0.1:{}/u --users 3 --requests-per-user 6 --timeout 5",
        s.port()
    ));
    assert_eq!((r.totals.connections, r.latency.session.count), (3, 3));
    // A closing server: users reconnect, sessions still complete.
    let c = TestServer::start(Mode::OkClose(body(30)));
    let r = load(&format!(
        "http://127.0.0.1:{}/u --users 2 --requests-per-user 4 --num-calls 2 --timeout 5",
        c.port()
    ));
    assert_eq!(r.totals.replies, 8);
    assert_eq!(r.totals.connections, 8);
    assert_eq!(r.latency.session.count, 4);
    assert_eq!(r.errors.total, 0);
}

#[test]
fn warmup_leaves_out_what_was_scheduled_before_the_window() {
    let s = TestServer::start(Mode::Ok(body(100)));
    // Deterministic schedule: connections at 0, 10, ..., 290 ms. The first
    // 11 (0..=100 ms) fall in a 105 ms warm-up.
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 100 --num-conns 30 --num-calls 2 --timeout 5 --warmup 105ms",
        s.port()
    ));
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 30);
    assert_eq!(s.requests(), 60);
    assert_eq!(r.config.warmup_s, 0.105);
    assert_eq!(r.totals.connections, 19);
    assert_eq!(r.totals.requests, 38);
    assert_eq!(r.totals.replies, 38);
    assert_eq!(r.latency.response.count, 38);
    assert_eq!(r.latency.connect.count, 19);
    assert_eq!(r.latency.session.count, 19);
    assert_eq!(r.accuracy.bytes_received, 3800);
    let series: u64 = r.series.iter().map(|i| i.replies).sum();
    assert_eq!(series, 38);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("httplab warm-up: 0.105 s"), "{text}");
    let command = r.config.facts.normalized_command.as_deref();
    assert!(command.is_some_and(|c| c.contains("--warmup=0.105")));
}

#[test]
fn warmup_then_duration_in_closed_loop_and_paced_users() {
    let s = TestServer::start(Mode::Ok(body(10)));
    for mode in ["--users 2", "--users 2 --rate 200", "--users 2 --think 2ms"] {
        let before = s.requests();
        let r = load(&format!(
            "http://127.0.0.1:{}/ {mode} --warmup 150ms --duration 250ms --timeout 5",
            s.port()
        ));
        let seen = s.requests() - before;
        assert_eq!(r.config.warmup_s, 0.15, "{mode}");
        assert_eq!(r.errors.total, 0, "{mode}");
        assert!(r.totals.replies > 0, "{mode}");
        assert_eq!(r.totals.requests, r.totals.replies, "{mode}");
        // The warm-up's requests reached the server but not the statistics.
        assert!(seen > r.totals.requests, "{mode}: seen {seen}");
        // The window is the duration after the warm-up (plus any drain).
        assert!(r.totals.test_duration_s >= 0.25, "{mode}");
        let series: u64 = r.series.iter().map(|i| i.replies).sum();
        assert_eq!(series, r.totals.replies, "{mode}");
    }
}

#[test]
fn closed_loop_saturating_the_client_is_client_bound() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.html"), b"hello").unwrap();
    let h = httplab_server(dir.path(), true);
    let port = h.local_addr().port();
    // A ceiling far below what any run reaches makes the criterion deterministic.
    let r = load(&format!(
        "http://127.0.0.1:{port}/x.html --users 16 --requests-per-user 50 --timeout 5 --client-ceiling 1"
    ));
    assert_eq!(r.totals.replies, 800);
    let sc = &r.self_check;
    assert!(sc.client_bound);
    assert!(
        sc.reasons.iter().any(|k| k == "client_utilization"),
        "{:?}",
        sc.reasons
    );
    assert_eq!(sc.client_ceiling, Some(1.0));
    assert!(sc.client_utilization.unwrap() >= 0.85);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("CLIENT-BOUND (client_utilization"), "{text}");
    assert!(
        text.contains("httplab client ceiling: 1 requests/s"),
        "{text}"
    );
    // A ceiling far above: that criterion stays quiet.
    let r = load(&format!(
        "http://127.0.0.1:{port}/x.html --users 4 --requests-per-user 10 --timeout 5 --client-ceiling 1e12"
    ));
    assert!(!r
        .self_check
        .reasons
        .iter()
        .any(|k| k == "client_utilization"));
    assert!(r.self_check.client_utilization.unwrap() < 0.85);
    // Busy polling keeps the generator's CPU at 100 %; the CPU criterion ignores it.
    let r = load(&format!(
        "http://127.0.0.1:{port}/x.html --users 4 --requests-per-user 10 --timeout 5 --busy-poll"
    ));
    assert!(!r.self_check.reasons.iter().any(|k| k == "client_cpu"));
    h.shutdown();
}

#[test]
fn calibration_measures_the_shape() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.bin"), body(2345)).unwrap();
    let spec = httplab_load::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        "1",
        "--uri",
        "/f.bin",
        "--rate",
        "50",
        "--num-conns",
        "100",
        "--num-calls",
        "4",
        "--burst-length",
        "2",
        "--calibrate-conns",
        "4",
        "--verify-root",
        dir.path().to_str().unwrap(),
    ])
    .unwrap();
    let c = httplab_load::calibrate(&spec).expect("calibration");
    assert!(c.ceiling_rps > 0.0);
    assert!(c.replies > 0);
    assert_eq!(c.response_bytes, 2345);
    assert_eq!(
        (c.connections, c.calls_per_conn, c.pipeline),
        (4, Some(4), 2)
    );
    assert!(
        c.shape
            .contains("4 connections, 4 calls/connection, pipeline 2"),
        "{}",
        c.shape
    );
    assert!(c
        .describe()
        .starts_with("httplab calibration: client ceiling"));
    let mut users = httplab_load::parse_args([
        "--server",
        "127.0.0.1",
        "--port",
        "1",
        "--users",
        "3",
        "--requests-per-user",
        "5",
        "--think",
        "50ms",
        "--calibrate-size",
        "10",
    ])
    .unwrap();
    let c = httplab_load::calibrate(&users).expect("calibration");
    assert_eq!((c.connections, c.response_bytes), (3, 10));
    // The ceiling goes into the spec; the run reports utilization against it.
    users.client_ceiling = Some(c.ceiling_rps);
    assert!(c.ceiling_rps > 0.0);
}

#[test]
fn cli_calibrate_only_and_calibrate_then_run() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let args = |extra: &str| -> Vec<std::ffi::OsString> {
        std::iter::once("httplab load".to_string())
            .chain(extra.split_whitespace().map(String::from))
            .map(Into::into)
            .collect()
    };
    let code = httplab_load::cli_main(args(&format!(
        "--server 127.0.0.1 --port 1 --users 2 --requests-per-user 3 --calibrate-only --json {}",
        cal.display()
    )))
    .expect("calibrate-only");
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let c: httplab_load::Calibration =
        serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert!(c.ceiling_rps > 0.0);
    assert_eq!(c.connections, 2);
    let s = TestServer::start(Mode::Ok(body(10)));
    let run = dir.path().join("run.json");
    httplab_load::cli_main(args(&format!(
        "http://127.0.0.1:{}/ --users 2 --requests-per-user 5 --timeout 5 --calibrate --quiet --json {}",
        s.port(),
        run.display()
    )))
    .expect("calibrate then run");
    let r = match httplab_model::Document::from_json(&std::fs::read_to_string(&run).unwrap()) {
        Ok(httplab_model::Document::Run(r)) => r,
        _ => panic!("not a run document"),
    };
    assert_eq!(r.totals.replies, 10);
    assert!(r.self_check.client_ceiling.is_some());
    assert!(r.self_check.client_utilization.is_some());
    assert!(r.config.facts.calibration.is_some());
    let text = httplab_load::render_httperf_report(&r);
    assert!(
        text.contains("httplab calibration: client ceiling"),
        "{text}"
    );
}
