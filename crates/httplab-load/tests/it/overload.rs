//! Overload without collapse: an open-loop demand of three times what one
//! server core accepts runs out of no resource (descriptors, ports), makes
//! no protocol error, and accounts for every arrival as a reply or a named
//! error. How much of the uncongested maximum it still achieves is a
//! speed, measured by `bench/overload-curve` (BENCHMARKS.md, "HTTPS, HTTP/2
//! and overload"), not asserted here: timing assertions fail on a busy machine.

use crate::common;

use common::load;

#[test]
fn three_times_capacity_degrades_instead_of_collapsing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), vec![b's'; 1024]).unwrap();
    let mut cfg = httplab_server::ServerConfig::for_root(dir.path());
    cfg.workers = 1;
    let h = httplab_server::Server::start(cfg).expect("serve");
    let port = h.local_addr().port();

    // The uncongested maximum of new connections (one request each): a few
    // users, each reconnecting after every reply, as fast as they can.
    let base = load(&format!(
        "http://127.0.0.1:{port}/small.txt --users 8 --num-calls 1 --duration 1s --timeout 5"
    ));
    assert_eq!(base.errors.total, 0);
    let max = base.totals.replies as f64 / base.totals.test_duration_s;
    assert!(max > 50.0, "uncongested maximum {max:.0}/s");

    // Three times that, open loop, for 1.5 s of schedule.
    let rate = (3.0 * max).ceil();
    let conns = (rate * 1.5).ceil() as u64;
    let timeout = 2.0;
    let r = load(&format!(
        "--server 127.0.0.1 --port {port} --uri /small.txt --rate {rate} --num-conns {conns} --num-calls 1 --timeout {timeout}"
    ));
    let text = httplab_load::render_httperf_report(&r);
    assert!(r.totals.replies > 0, "{text}");
    assert_eq!(r.totals.replies + r.errors.total, conns, "{text}");
    assert_eq!(r.errors.other, 0, "{text}");
    assert_eq!(r.errors.connrefused, 0, "{text}");
    // Nothing ran out, and the report says what held the demand back.
    assert_eq!(r.errors.fd_unavail, 0);
    assert_eq!(r.errors.addrunavail, 0);
    let auto = r
        .config
        .facts
        .local_addrs_auto
        .expect("source addresses chosen");
    assert_eq!(
        (auto.first.to_string(), auto.last.to_string()),
        ("127.0.0.1".to_string(), "127.0.0.16".to_string())
    );
    if r.config.facts.setup_capped.is_some() {
        assert!(
            text.contains("demand exceeded what the server took"),
            "{text}"
        );
    }
    h.shutdown();
}

#[test]
fn setup_cap_of_one_is_still_correct() {
    // The cap at its smallest: arrivals wait for each other, every one is
    // made, and the waits are reported as the server's, not as schedule lag.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x"), b"hello").unwrap();
    let h = httplab_server::Server::start(httplab_server::ServerConfig::for_root(dir.path()))
        .expect("serve");
    let port = h.local_addr().port();
    let r = load(&format!(
        "--server 127.0.0.1 --port {port} --uri /x --rate 5000 --num-conns 200 --num-calls 2 --timeout 5 --max-connecting 1"
    ));
    assert_eq!(r.totals.connections, 200);
    assert_eq!(r.totals.replies, 400);
    assert_eq!(r.errors.total, 0);
    assert_eq!(r.config.facts.max_connecting, Some(1));
    h.shutdown();
}
