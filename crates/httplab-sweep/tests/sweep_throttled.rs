//! `httplab sweep` against a purpose-built server of known capacity, and the
//! same command lines against a synthetic server of the same capacity.
//!
//! The real server (std::net, loopback) answers every request at the next
//! free slot of a fixed schedule: at most CAPACITY replies per second, with
//! requests queueing beyond that — a single-queue server with deterministic
//! service. On a busy machine it can fall behind its schedule, so the tests
//! against it assert only what it cannot break: the sweep runs every step,
//! finds no sustained rate above the capacity, caps the reply rate, writes
//! its outputs. How close the answer comes to the capacity is checked with
//! the synthetic runner (`httplab_report::synth`), which does not depend on
//! the machine's speed: the stepped sweep within one step, `--find-max`
//! within 5 %.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CAPACITY: f64 = 200.0;

struct Throttled {
    port: u16,
}

fn serve_conn(mut s: TcpStream, next: Arc<Mutex<Instant>>) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        // One request head (GET, no body) per reply.
        let end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            if buf.len() > 64 * 1024 {
                return;
            }
        };
        let close = String::from_utf8_lossy(&buf[..end])
            .to_ascii_lowercase()
            .contains("connection: close");
        buf.drain(..end);
        let slot = {
            let mut n = match next.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            let now = Instant::now();
            let slot = if *n > now { *n } else { now };
            *n = slot + Duration::from_secs_f64(1.0 / CAPACITY);
            slot
        };
        let now = Instant::now();
        if slot > now {
            std::thread::sleep(slot - now);
        }
        let body = "throttled\n";
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n{body}",
            body.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        if s.write_all(resp.as_bytes()).is_err() || close {
            return;
        }
    }
}

fn start() -> Throttled {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = l.local_addr().expect("addr").port();
    let next = Arc::new(Mutex::new(Instant::now()));
    std::thread::spawn(move || {
        for c in l.incoming() {
            match c {
                Ok(s) => {
                    let n = next.clone();
                    std::thread::spawn(move || serve_conn(s, n));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    Throttled { port }
}

/// One line per step: what the judge saw.
fn describe(t: &httplab_model::SweepTarget) -> String {
    t.steps
        .iter()
        .map(|s| {
            let m = httplab_report::analysis::metrics(s.demanded_rate, &s.run, 1000.0);
            format!(
                "  rate {:>6.1}: judged {:.1}/s (throughput {:.1}, samples {:.1} x{}), p50 {:?} p99 {:?}, errors {:.3}%, duration {:.3}s, client-bound {}, sustained {}",
                s.demanded_rate, m.judged_rate, m.reply_rate, m.rep_avg, m.rep_samples, m.p50_ms, m.p99_ms, m.error_pct, s.run.totals.test_duration_s, m.client_bound, m.sustained
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(v: &[String]) -> Vec<std::ffi::OsString> {
    v.iter().map(std::ffi::OsString::from).collect()
}

#[test]
fn stepped_sweep_against_a_throttled_server() {
    let srv = start();
    let dir = tempfile::tempdir().expect("tmp");
    let csv = dir.path().join("throttled.csv");
    let report = dir.path().join("report");
    let a: Vec<String> = [
        "httplab sweep",
        "--no-config",
        "--single_host",
        "--host1=127.0.0.1",
        &format!("--port1={}", srv.port),
        "--uri1=/t",
        "--low_rate=100",
        "--high_rate=300",
        "--rate_step=50",
        "--num_call=1",
        "--const_test_time=2",
        "--timeout=5",
        "--quiet",
        &format!("--file={}", csv.display()),
        "--report",
        &report.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let plan = httplab_sweep::parse_plan(&args(&a))
        .expect("plan")
        .expect("no help");
    let result =
        httplab_sweep::execute(&plan, httplab_sweep::load_runner(&plan)).expect("sweep runs");
    let t = &result.targets[0];
    assert_eq!(t.steps.len(), 5);
    let max = t
        .saturation
        .max_sustainable_rate
        .expect("some step sustained");
    eprintln!(
        "stepped sweep: max sustainable {max}, knee {:?}",
        t.saturation.knee_rate
    );
    // Capacity 200/s: no rate above it can be sustained (a slow machine can
    // only lower the answer; its accuracy is `stepped_sweep_accuracy_…`).
    assert!(
        max <= CAPACITY,
        "max sustainable {max}, capacity {CAPACITY}\n{}",
        describe(t)
    );
    // Above capacity the reply rate is capped at the capacity.
    let top = httplab_report::analysis::metrics(300.0, &t.steps[4].run, 1000.0);
    assert!(!top.sustained);
    assert!(
        top.reply_rate < CAPACITY * 1.1,
        "reply rate {}",
        top.reply_rate
    );

    // Outputs: autobench CSV (header + 5 rows), JSON, report.
    let text = std::fs::read_to_string(&csv).expect("csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6);
    assert!(lines[0].starts_with("dem_req_rate,req_rate_127.0.0.1,con_rate_127.0.0.1,"));
    assert!(lines[1].starts_with("100,"));
    assert!(lines[5].starts_with("300,"));
    let json = dir.path().join("throttled.json");
    let doc = httplab_report::read_document(&json).expect("sweep JSON");
    assert!(matches!(doc, httplab_model::Document::Sweep(_)));
    assert!(report.join("index.html").is_file());
    assert!(report.join("reply-rate.svg").is_file());
}

#[test]
fn find_max_against_a_throttled_server() {
    let srv = start();
    let dir = tempfile::tempdir().expect("tmp");
    let a: Vec<String> = [
        "httplab sweep",
        "--no-config",
        &format!("http://127.0.0.1:{}/t", srv.port),
        "--find-max",
        "--low-rate",
        "100",
        "--high-rate",
        "1000",
        "--const-test-time",
        "2",
        "--quiet",
        "--json",
        &dir.path().join("fm.json").display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let plan = httplab_sweep::parse_plan(&args(&a))
        .expect("plan")
        .expect("no help");
    let result = httplab_sweep::run_sweep(&plan, httplab_sweep::load_runner(&plan), |_, _, _| {})
        .expect("find-max runs");
    let sat = &result.targets[0].saturation;
    let max = sat.max_sustainable_rate.expect("found a rate");
    assert_eq!(sat.method, "find-max");
    eprintln!("find-max: {max} in {} runs", sat.runs);
    // Within 5 % above at most (a slow machine can only lower the answer;
    // its accuracy is `find_max_accuracy_with_a_synthetic_server`).
    assert!(
        max > 0.0 && max <= CAPACITY * 1.05,
        "find-max says {max}, capacity {CAPACITY} ({} runs):\n{}",
        sat.runs,
        describe(&result.targets[0])
    );
    assert!(sat.runs as usize >= result.targets[0].steps.len() && sat.runs <= 20);
}

/// The command lines of the tests above, with a runner that answers like a
/// server of exactly CAPACITY replies per second whatever the machine does.
fn synthetic_runner(
) -> impl FnMut(&httplab_sweep::Target, f64) -> anyhow::Result<httplab_model::RunResult> {
    let server = httplab_report::synth::SynthServer::new("throttled", CAPACITY, 1.0);
    move |_target, rate| Ok(httplab_report::synth::run(&server, rate, 1, 2.0))
}

#[test]
fn stepped_sweep_accuracy_with_a_synthetic_server() {
    let dir = tempfile::tempdir().expect("tmp");
    let a: Vec<String> = [
        "httplab sweep",
        "--no-config",
        "--single_host",
        "--host1=127.0.0.1",
        "--port1=9",
        "--uri1=/t",
        "--low_rate=100",
        "--high_rate=300",
        "--rate_step=50",
        "--num_call=1",
        "--const_test_time=2",
        "--quiet",
        &format!("--file={}", dir.path().join("s.csv").display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let plan = httplab_sweep::parse_plan(&args(&a))
        .expect("plan")
        .expect("no help");
    let result = httplab_sweep::execute(&plan, synthetic_runner()).expect("sweep runs");
    let t = &result.targets[0];
    let max = t.saturation.max_sustainable_rate.expect("sustained");
    // Capacity 200/s, steps of 50: the answer is 200 or the step below it.
    assert!(
        (150.0..=200.0).contains(&max),
        "max sustainable {max}\n{}",
        describe(t)
    );
}

#[test]
fn find_max_accuracy_with_a_synthetic_server() {
    let dir = tempfile::tempdir().expect("tmp");
    let a: Vec<String> = [
        "httplab sweep",
        "--no-config",
        "http://127.0.0.1:9/t",
        "--find-max",
        "--low-rate",
        "100",
        "--high-rate",
        "1000",
        "--const-test-time",
        "2",
        "--quiet",
        "--json",
        &dir.path().join("fm.json").display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let plan = httplab_sweep::parse_plan(&args(&a))
        .expect("plan")
        .expect("no help");
    let result =
        httplab_sweep::run_sweep(&plan, synthetic_runner(), |_, _, _| {}).expect("find-max runs");
    let sat = &result.targets[0].saturation;
    let max = sat.max_sustainable_rate.expect("found a rate");
    assert!(
        (max - CAPACITY).abs() / CAPACITY <= 0.05,
        "find-max says {max}, capacity {CAPACITY} ({} runs):\n{}",
        sat.runs,
        describe(&result.targets[0])
    );
    assert!(sat.runs <= 20);
}

#[test]
fn staged_sweep_with_a_probe_against_a_throttled_server() {
    let srv = start();
    let dir = tempfile::tempdir().expect("tmp");
    let a: Vec<String> = [
        "httplab sweep",
        "--no-config",
        "--single_host",
        "--host1=127.0.0.1",
        &format!("--port1={}", srv.port),
        "--uri1=/t",
        "--low_rate=50",
        "--high_rate=150",
        "--rate_step=50",
        "--num_call=1",
        "--const_test_time=1",
        "--warmup=0.5",
        "--timeout=5",
        "--quiet",
        "--staged",
        &format!("--file={}", dir.path().join("staged.csv").display()),
        "--probe",
        "20",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let plan = httplab_sweep::parse_plan(&args(&a))
        .expect("plan")
        .expect("no help");
    assert!(plan.staged);
    let mut runs = 0;
    let result = httplab_sweep::execute(
        &plan,
        httplab_sweep::staged::runner(&plan, |s| {
            runs += 1;
            httplab_sweep::run_load(s)
        }),
    )
    .expect("sweep runs");
    let t = &result.targets[0];
    // One load run; three steps, one per stage after the warm-up stage, each
    // with the arrivals its rate held for 1 s schedules.
    assert_eq!(runs, 1);
    assert_eq!(t.steps.len(), 3);
    let conns: Vec<u64> = t.steps.iter().map(|s| s.run.totals.connections).collect();
    assert_eq!(conns, vec![50, 100, 150], "{}", describe(t));
    for s in &t.steps {
        assert_eq!(s.run.config.rate, Some(s.demanded_rate));
        assert!(s.run.probe.is_some(), "--probe reaches the load run");
    }
}
