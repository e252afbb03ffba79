//! `httplab load --repeat` and `httplab compare` as a user runs them, against real servers on
//! loopback: the same server twice is equivalent on its (fixed-rate) reply rate, a server
//! that does far more work per request is a regression with exit status 1. No timing
//! assertions: the slow server is ~50 times slower per request (20 ms against well under a
//! millisecond), and the rate is set by the open-loop schedule.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn httplab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args(args)
        .output()
        .expect("run httplab")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `httplab load --repeat 5` at a fixed rate into `out`.
fn repeated_load(port: u16, path: &str, out: &Path) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let o = httplab(&[
        "load",
        &url,
        "--rate",
        "100",
        "--duration",
        "0.5s",
        "--timeout",
        "5",
        "--repeat",
        "5",
        // A shared, busy test machine sends late now and then; a late send would mark the
        // run client-bound, and the study's rules rightly hold a verdict back on a bound.
        // These tests are about the verdicts, so lateness up to 1 s is not flagged.
        "--lag-threshold",
        "1s",
        "--json",
        &out.display().to_string(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("run 5/5:"), "{stdout}");
    assert!(stdout.contains("Geometric means over 5 runs"), "{stdout}");
}

/// A thread-per-connection HTTP/1.1 server that waits `delay` before every reply (the work
/// it does per request). Stops when dropped.
struct SlowServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn serve_conn(mut s: TcpStream, delay: Duration) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            std::thread::sleep(delay);
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if s.write_all(reply).is_err() {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

impl SlowServer {
    fn start(delay: Duration) -> SlowServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            for s in l.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(s) = s {
                    std::thread::spawn(move || serve_conn(s, delay));
                }
            }
        });
        SlowServer {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SlowServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `httplab compare BASE NEW --metric reply_rate --delta 25`, which must exit with 0: its
/// output and the first line of its standard output.
fn compare_rates(base: &Path, new: &Path) -> (std::process::Output, String) {
    let o = httplab(&[
        "compare",
        &s(base),
        &s(new),
        "--metric",
        "reply_rate",
        "--delta",
        "25",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    (o, first)
}

#[test]
fn the_same_server_twice_is_no_regression_and_a_saved_baseline_gates() {
    let _turn = httplab_skip::serial::shared("compare");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), vec![b'x'; 512]).unwrap();
    let h = httplab_server::Server::start(httplab_server::ServerConfig::for_root(dir.path()))
        .expect("serve");
    let port = h.local_addr().port();
    let base = dir.path().join("base.json");
    let new = dir.path().join("new.json");
    repeated_load(port, "/f.txt", &base);
    repeated_load(port, "/f.txt", &new);
    drop(h);

    // Two sessions of the same server pass the gate. Their verdict is not asserted: at a
    // fixed rate of 100/s a session's runs agree to about 0.01 %, so two sessions apart by
    // 0.1 % (one of them on a busier machine) differ significantly, and compare calls that
    // difference, as its note about one session a side says.
    let (o, first) = compare_rates(&base, &new);
    assert!(
        first.starts_with("no regression beyond 5 %: "),
        "{}",
        text(&o)
    );

    // The same runs on both sides: the interval is centred on 1 and, with δ = 25 %, inside
    // ±δ, whatever the machine did.
    let same = dir.path().join("same.json");
    std::fs::copy(&base, &same).unwrap();
    let (o, first) = compare_rates(&base, &same);
    assert!(
        first.starts_with("no regression beyond 5 %: 1 equivalent (reply_rate)"),
        "{}",
        text(&o)
    );

    // A named baseline, then the same comparison against it; JSON for machines.
    let bdir = dir.path().join("baselines");
    let o = httplab(&[
        "compare",
        "--baseline-dir",
        &s(&bdir),
        "--save-baseline",
        "main",
        &s(&base),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = httplab(&[
        "compare",
        "--baseline-dir",
        &s(&bdir),
        "--baseline",
        "main",
        &s(&same),
        "--metric",
        "reply_rate",
        "--delta",
        "25",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["rows"][0]["verdict"], "equivalent", "{v}");
    assert_eq!(v["rows"][0]["base"]["n"], 5, "{v}");

    // The repeated document still renders and is refused by merge with a pointer.
    let o = httplab(&["report", &s(&base), "-o", &s(&dir.path().join("r"))]);
    assert!(o.status.success(), "{}", text(&o));
    let o = httplab(&[
        "merge",
        &s(&base),
        &s(&new),
        "--force",
        "-o",
        &s(&dir.path().join("m.json")),
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("httplab compare"), "{}", text(&o));
}

#[test]
fn a_server_doing_much_more_work_per_request_is_a_regression() {
    let _turn = httplab_skip::serial::shared("compare");
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("fast.json");
    let new = dir.path().join("slow.json");
    {
        let fast = SlowServer::start(Duration::ZERO);
        repeated_load(fast.port, "/", &base);
    }
    {
        let slow = SlowServer::start(Duration::from_millis(20));
        repeated_load(slow.port, "/", &new);
    }
    let html = dir.path().join("c.html");
    let o = httplab(&[
        "compare",
        &s(&base),
        &s(&new),
        "--metric",
        "p50",
        "--html",
        &s(&html),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("regression: p50 +"), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("regression: p50"), "{page}");
}

#[test]
fn usage_and_input_errors_exit_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing: PathBuf = dir.path().join("missing.json");
    for args in [
        vec!["compare"],
        vec!["compare", "only-one.json"],
        vec!["compare", &s(&missing), &s(&missing)],
        vec!["compare", "--save-baseline", "../escape", "x.json"],
        vec!["compare", "a.json", "b.json", "--threshold", "abc"],
    ] {
        let o = httplab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(!o.stderr.is_empty(), "{args:?}");
    }
    let o = httplab(&["compare", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1  a regression beyond --threshold"));
}

/// The paired mode runs both servers itself: httplab's event server against Python's
/// http.server, which spends far more CPU per request (an interpreter against a few system
/// calls; tens of times more), at the same low rate of new connections. NEW = Python is a
/// regression (exit status 1); swapped, an improvement (exit status 0). The verdict line
/// names the server CPU per request and its interval; the report is written to --out.
#[test]
fn the_paired_mode_runs_both_servers_and_gates_on_server_cpu() {
    if Command::new("python3").arg("--version").output().is_err() {
        httplab_skip::skip("python3 is not installed (the paired-mode test's slow server)");
        return;
    }
    let _turn = httplab_skip::serial::alone();
    let exe = env!("CARGO_BIN_EXE_httplab");
    let fast = format!("{exe} serve --workers 1 --listen 127.0.0.1:{{port}} --root {{root}}");
    let slow = "python3 -m http.server {port} --bind 127.0.0.1 --directory {root}";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let paired = |base: &str, new: &str, out: Option<&Path>| {
        let mut args = vec![
            "compare",
            "--base-cmd",
            base,
            "--new-cmd",
            new,
            "--work",
            "small-new-connection",
            "--rate",
            "50",
            "--budget",
            "0",
            "--no-progress",
        ];
        let o = out.map(s);
        if let Some(o) = &o {
            args.extend(["--out", o]);
        }
        httplab(&args)
    };
    let o = paired(&fast, slow, Some(&out));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout.starts_with(
            "small-new-connection: REGRESSION: new costs more server CPU per request than base: ×"
        ),
        "{}",
        text(&o)
    );
    assert!(stdout.contains("95 % CI"), "{}", text(&o));
    let results = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    assert!(results.contains("\"server_cpu_us_per_req\""));

    let o = paired(slow, &fast, None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("improvement: new costs less server CPU per request than base: ×0."),
        "{}",
        text(&o)
    );
}

#[test]
fn paired_mode_usage_errors_exit_with_2() {
    let good = "srv --port {port} --root {root}";
    for (args, says) in [
        (
            vec![
                "compare",
                "--base-cmd",
                "srv --root {root}",
                "--new-cmd",
                good,
            ],
            "no {port}",
        ),
        (
            vec![
                "compare",
                "--base-cmd",
                good,
                "--new-cmd",
                "srv '{port} {root}",
            ],
            "unbalanced quotes",
        ),
        (vec!["compare", "--base-cmd", good], "--new-cmd"),
        (
            vec!["compare", "--base-cmd", good, "--new-cmd", good, "--json"],
            "--json",
        ),
        (
            vec![
                "compare",
                "--base-cmd",
                good,
                "--new-cmd",
                good,
                "--work",
                "huge",
            ],
            "small, small-new-connection, large",
        ),
        (
            vec![
                "compare",
                "--base-cmd",
                good,
                "--new-cmd",
                good,
                "--budget",
                "soon",
            ],
            "--budget",
        ),
        (
            vec!["compare", "a.json", "b.json", "--rate", "5"],
            "--base-cmd",
        ),
    ] {
        let o = httplab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {}", text(&o));
    }
}
