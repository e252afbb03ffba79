//! Live metrics, series files and the client check as a user meets them:
//! `httplab serve --prometheus`, `httplab load --prometheus --series
//! --check-client`, `httplab report --series`, against a real `httplab serve`.
//! No timing assertions: every wait polls a condition with a bounded deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use httplab_model::{Document, RunResult};

const DEADLINE: Duration = Duration::from_secs(60);

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_httplab"))
}

/// Every line of a child's pipe, as it comes.
fn lines(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// The first line with `marker`, the text after it up to the next space.
fn wait_for(rx: &Receiver<String>, marker: &str) -> String {
    let end = Instant::now() + DEADLINE;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => {
                if let Some(i) = l.find(marker) {
                    let rest = &l[i + marker.len()..];
                    return rest.split_whitespace().next().unwrap_or("").to_string();
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with {marker:?} within {DEADLINE:?}");
}

/// A child killed (by its own pid) and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `httplab serve` of a small root; returns it, its address and, with
/// `metrics`, the metrics endpoint's address.
fn serve(root: &Path, metrics: bool) -> (Proc, SocketAddr, Option<SocketAddr>) {
    std::fs::write(root.join("index.html"), "hello, live metrics\n").unwrap();
    let mut cmd = exe();
    cmd.arg("serve")
        .arg("--root")
        .arg(root)
        .args(["--listen", "127.0.0.1:0", "--workers", "2"]);
    if metrics {
        cmd.args(["--prometheus", "127.0.0.1:0"]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start httplab serve");
    let out = lines(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    let p = Proc(child);
    let url = wait_for(&out, " at http://");
    let addr = url.trim_end_matches('/').parse().unwrap();
    let m = metrics.then(|| metrics_addr(&err));
    (p, addr, m)
}

/// The address in `metrics: http://ADDR/metrics`.
fn metrics_addr(err: &Receiver<String>) -> SocketAddr {
    let url = wait_for(err, "metrics: http://");
    url.trim_end_matches("/metrics").parse().unwrap()
}

/// One raw exchange; the whole answer (the endpoint closes after it).
fn exchange(addr: SocketAddr, req: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let _ = s.write_all(req);
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn scrape(addr: SocketAddr) -> Option<String> {
    exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .filter(|a| a.starts_with("HTTP/1.1 200 "))
}

/// A sample's value in an exposition (`name value`, no labels).
fn value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Polls `f` until it gives Some, within the deadline.
fn poll<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "condition not met within {DEADLINE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child's exit within the deadline.
fn finish(p: &mut Proc) -> std::process::ExitStatus {
    poll(|| p.0.try_wait().ok().flatten())
}

fn read_run(path: &Path) -> RunResult {
    match Document::from_json(&std::fs::read_to_string(path).unwrap()).unwrap() {
        Document::Run(r) => *r,
        _ => panic!("not a run"),
    }
}

#[test]
fn serve_metrics_count_exactly_the_requests_served() {
    let _turn = httplab_skip::serial::shared("live");
    let d = tempfile::tempdir().unwrap();
    let (_p, addr, m) = serve(d.path(), true);
    let m = m.unwrap();
    const N: u64 = 30;
    for _ in 0..N {
        let a = exchange(
            addr,
            b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        assert!(a.starts_with("HTTP/1.1 200 "), "{a}");
    }
    // Workers flush their counts once per loop turn: poll until they show.
    let text = poll(|| {
        let t = scrape(m)?;
        (value(&t, "httplab_serve_requests_served_total")? >= N as f64).then_some(t)
    });
    assert_eq!(
        value(&text, "httplab_serve_requests_served_total"),
        Some(N as f64),
        "{text}"
    );
    assert_eq!(
        value(&text, "httplab_serve_connections_accepted_total"),
        Some(N as f64),
        "{text}"
    );
    assert!(value(&text, "httplab_serve_bytes_sent_total").unwrap() > 0.0);
    assert!(
        text.contains("# TYPE httplab_serve_open_connections gauge"),
        "{text}"
    );
    // Anything but GET /metrics is 404; garbage is 400; the server goes on.
    assert!(exchange(m, b"GET / HTTP/1.1\r\n\r\n")
        .unwrap()
        .starts_with("HTTP/1.1 404 "));
    assert!(exchange(m, b"\x16\x03\x01garbage\r\n\r\n")
        .unwrap()
        .starts_with("HTTP/1.1 400 "));
    let a = exchange(
        addr,
        b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(a.unwrap().starts_with("HTTP/1.1 200 "));
}

#[test]
fn load_metrics_can_be_scraped_while_it_runs_and_series_have_a_line_per_interval() {
    let _turn = httplab_skip::serial::shared("live");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("www");
    std::fs::create_dir(&root).unwrap();
    let (_srv, addr, _) = serve(&root, false);
    let csv = d.path().join("s.csv");
    let json = d.path().join("r.json");
    let mut child = exe()
        .args([
            "load",
            "--server",
            "127.0.0.1",
            "--port",
            &addr.port().to_string(),
        ])
        .args([
            "--uri",
            "/index.html",
            "--rate",
            "20",
            "--num-conns",
            "60",
            "--quiet",
        ])
        .args(["--prometheus", "127.0.0.1:0", "--series"])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines(child.stderr.take().unwrap());
    let mut load = Proc(child);
    let m = metrics_addr(&err);
    // The endpoint answers while the run goes on (it starts before the run).
    let text = poll(|| scrape(m));
    assert!(
        text.contains("# TYPE httplab_load_replies counter"),
        "{text}"
    );
    // Bad scrapes get 400/404 and do not hurt the run.
    let big = [b"GET /metrics HTTP/1.1\r\nX: ".as_slice(), &[b'a'; 20_000]].concat();
    for (req, want) in [
        (&b"GET /other HTTP/1.1\r\n\r\n"[..], "HTTP/1.1 404 "),
        (b"\x00\x01\x02\r\n\r\n", "HTTP/1.1 400 "),
        (&big, "HTTP/1.1 400 "),
    ] {
        let a = exchange(m, req).unwrap_or_default();
        assert!(a.starts_with(want), "{a:?}");
    }
    assert!(finish(&mut load).success());
    let r = read_run(&json);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(r.errors.total, 0);
    // One line per interval, with the columns.
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), r.series.len() + 1, "{text}");
    assert_eq!(
        rows[0],
        "t_s,len_s,rate,replies,errors,p50_ms,p99_ms,open_connections,server_cpu_s"
    );
    assert!(
        rows[1..].iter().all(|l| l.split(',').count() == 9),
        "{text}"
    );
    let replies: u64 = rows[1..]
        .iter()
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(replies, r.totals.replies);
    // `httplab report --series` writes the same from the saved result.
    let jl = d.path().join("s.jsonl");
    let o = exe()
        .arg("report")
        .arg(&json)
        .arg("--series")
        .arg(&jl)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&jl).unwrap();
    assert_eq!(text.lines().count(), r.series.len());
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for k in [
            "t_s", "len_s", "rate", "replies", "errors", "p50_ms", "p99_ms",
        ] {
            assert!(v[k].is_number(), "{k} in {l}");
        }
        assert!(
            v["open_connections"].is_u64() && v["server_cpu_s"].is_null(),
            "{l}"
        );
    }
    assert!(
        !d.path().join("report").exists(),
        "--series alone writes no report"
    );
}

#[test]
fn check_client_records_one_client_against_two() {
    let _turn = httplab_skip::serial::shared("live");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("www");
    std::fs::create_dir(&root).unwrap();
    let (_srv, addr, _) = serve(&root, false);
    let json = d.path().join("r.json");
    let o = exe()
        .args([
            "load",
            "--server",
            "127.0.0.1",
            "--port",
            &addr.port().to_string(),
        ])
        .args([
            "--uri",
            "/index.html",
            "--rate",
            "40",
            "--num-conns",
            "80",
            "--quiet",
        ])
        .arg("--check-client")
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let r = read_run(&json);
    assert_eq!(r.totals.replies, 80);
    let c = r.client_check.expect("the check is recorded");
    assert_eq!(c.method, "processes");
    assert_eq!((c.one.clients, c.two.clients), (1, 2));
    assert!(c.one.intervals > 0 && c.two.intervals > 0, "{c:?}");
    assert!(c.one.reply_rate > 0.0 && c.two.reply_rate > 0.0, "{c:?}");
    // A verdict of "distorts" comes with its warning, on stderr and in the result.
    let warned = r
        .self_check
        .warnings
        .iter()
        .any(|w| w.starts_with("the client distorts the measurement: "));
    assert_eq!(c.distorts, warned, "{c:?}");
    assert_eq!(
        c.distorts,
        err.contains("the client distorts the measurement")
    );
    assert_eq!(c.distorts, !c.differences.is_empty());
}
