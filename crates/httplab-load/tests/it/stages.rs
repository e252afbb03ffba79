//! Rate stages and the unqueued probe against servers on 127.0.0.1. Runs
//! are bounded in time (a few seconds) and by --timeout; assertions are on
//! counts and on latencies the test's own server makes (a stall it holds
//! for a fixed time), never on how fast the machine is. Each staged run
//! ends with a stage at rate 0 (`1s:0`), so that arrivals a slow machine
//! starts late still start before the run's end.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{load, Mode, TestServer};

#[test]
fn a_staged_run_has_one_row_per_stage_with_its_own_calls() {
    let s = TestServer::start(Mode::Ok(b"hello".to_vec()));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --stages 500ms:40,500ms:40-120,500ms:20,1s:0 --timeout 5",
        s.port()
    ));
    assert_eq!(r.stages.len(), 4);
    // Deterministic arrivals: each stage's integral of the rate (20, 40, 10).
    let arrivals: Vec<u64> = r.stages.iter().map(|x| x.arrivals).collect();
    assert_eq!(
        arrivals,
        httplab_load::arrivals_per_stage(
            &httplab_load::parse_stages("500ms:40,500ms:40-120,500ms:20,1s:0").unwrap(),
            false,
            1,
            u64::MAX
        )
    );
    assert_eq!(arrivals, vec![20, 40, 10, 0]);
    for (i, st) in r.stages.iter().enumerate() {
        assert_eq!(st.sent, st.arrivals, "stage {i}: one call per connection");
        assert_eq!(st.replies, st.sent, "stage {i}: every call answered");
        assert_eq!(st.errors, 0);
        assert_eq!(st.response.count, st.replies);
        assert_eq!(st.response_uncorrected.count, st.replies);
    }
    assert_eq!(r.stages[1].rate_from, 40.0);
    assert_eq!(r.stages[1].rate_to, 120.0);
    assert_eq!(r.stages[2].start_s, 1.0);
    let sum: u64 = r.stages.iter().map(|x| x.replies).sum();
    assert_eq!(sum, r.totals.replies);
    // The document keeps them, and the report shows a row each.
    let json = serde_json::to_string(&r).unwrap();
    let back: httplab_model::RunResult = serde_json::from_str(&json).unwrap();
    assert_eq!(back.stages, r.stages);
    let text = httplab_load::render_httperf_report(&r);
    eprintln!("{text}");
    assert!(
        text.contains("Stages (calls by scheduled instant"),
        "{text}"
    );
}

#[test]
fn sessions_follow_the_stages_too() {
    let s = TestServer::start(Mode::Ok(b"x".to_vec()));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --stages 300ms:20,300ms:40,1s:0 --wsess 0,2,0 --timeout 5",
        s.port()
    ));
    let arrivals: Vec<u64> = r.stages.iter().map(|x| x.arrivals).collect();
    assert_eq!(arrivals, vec![6, 12, 0]);
    assert_eq!(r.stages.iter().map(|x| x.replies).sum::<u64>(), 36);
}

/// A keep-alive HTTP/1.1 server, one thread per connection, that holds every
/// answer for `stall` once its `at`-th request has arrived (that request
/// included), then answers at once again.
struct StallServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl StallServer {
    fn start(at: u64, stall: Duration) -> StallServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let until: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (count, until) = (count.clone(), until.clone());
                std::thread::spawn(move || serve(conn, at, stall, &count, &until));
            }
        });
        StallServer { port, stop }
    }
}

impl Drop for StallServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(
    mut c: TcpStream,
    at: u64,
    stall: Duration,
    count: &AtomicU64,
    until: &Mutex<Option<Instant>>,
) {
    let _ = c.set_nodelay(true);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let hold = {
                let mut u = until.lock().unwrap();
                if n == at {
                    *u = Some(Instant::now() + stall);
                }
                u.map(|e| e.saturating_duration_since(Instant::now()))
            };
            if let Some(d) = hold.filter(|d| !d.is_zero()) {
                // The stall itself (what the test measures), not a synchronisation.
                std::thread::sleep(d);
            }
            if c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match c.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

#[test]
fn a_stall_in_stage_two_lands_in_stage_two() {
    // 20 connections per stage; the 30th request (scheduled in the middle
    // of stage 2, whatever the lag: requests reach the server in schedule
    // order within a few) starts a 1.5 s stall.
    let stall = Duration::from_millis(1500);
    let s = StallServer::start(30, stall);
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --stages 1s:20,1s:20,1s:20,1s:0 --timeout 10",
        s.port
    ));
    assert_eq!(r.stages.len(), 4);
    let stall_ms = stall.as_secs_f64() * 1000.0;
    // The request that started the stall was scheduled in stage 2 and was
    // held for the whole stall: stage 2's corrected maximum is at least it.
    assert!(
        r.stages[1].response.max_ms >= stall_ms,
        "stage 2 max {} ms",
        r.stages[1].response.max_ms
    );
    // Stage 1's requests were all answered before the stall began (the
    // server answered them as they came, and they came before the 30th).
    assert_eq!(r.stages[0].replies, 20);
    assert!(
        r.stages[0].response.max_ms < stall_ms,
        "stage 1 max {} ms",
        r.stages[0].response.max_ms
    );
    // Every call was answered and counted in the stage it was scheduled in.
    assert_eq!(r.stages.iter().map(|x| x.replies).sum::<u64>(), 60);
    assert_eq!(r.stages.iter().map(|x| x.errors).sum::<u64>(), 0);
}

#[test]
fn the_probe_shows_the_loaded_clients_own_queueing() {
    let s = TestServer::start(Mode::Ok(b"ok".to_vec()));
    // One paced user asked for far more requests per second than one
    // connection with one request at a time can carry: its schedule falls
    // further behind every request, and its corrected latency is that wait.
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --users 1 --rate 1000000 --duration 1 --timeout 5 --probe 200",
        s.port()
    ));
    let p = r.probe.as_ref().expect("the probe's result");
    assert_eq!(p.rate, 200.0);
    assert!(p.replies >= httplab_model::PROBE_MIN_REPLIES, "{p:?}");
    let (load50, probe99) = (
        r.latency.response.at(50.0).unwrap(),
        p.response.at(99.0).unwrap(),
    );
    assert!(
        load50 > probe99,
        "load p50 {load50} ms, probe p99 {probe99} ms"
    );
    assert!(p.client_queueing);
    assert!(r
        .self_check
        .warnings
        .iter()
        .any(|w| w.contains("client's own queueing")));
    let text = httplab_load::render_httperf_report(&r);
    eprintln!("{text}");
    assert!(text.contains("Probe vs load"), "{text}");
    assert!(
        text.contains("WARNING: the loaded client's median"),
        "{text}"
    );
    let back: httplab_model::RunResult =
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.probe, r.probe);
}

#[test]
fn a_light_load_with_a_probe_does_not_warn() {
    let s = TestServer::start(Mode::Ok(b"ok".to_vec()));
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 20 --num-conns 10 --timeout 5 --probe 50,2",
        s.port()
    ));
    let p = r.probe.as_ref().expect("probe");
    assert_eq!(p.connections, 2);
    // Too few replies on both sides to compare: never a warning.
    assert!(!p.client_queueing);
}
