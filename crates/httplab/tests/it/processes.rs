//! `httplab serve --processes N`: N serving processes behind one port, each
//! answering; the parent passes SIGTERM on and every process ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
        }
    }
    out
}

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).expect("reply");
    r
}

#[test]
fn several_processes_serve_one_port_and_stop_together() {
    let _turn = httplab_skip::serial::shared("processes");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let mut parent = Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--processes",
            "3",
            "--root",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start httplab serve");
    let mut guard = StopOnDrop(Some(parent.id()));
    let mut line = String::new();
    BufReader::new(parent.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("serving line");
    assert!(
        line.contains("(3 processes, each: event model, 1 workers"),
        "{line}"
    );
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("address in the serving line")
        .to_string();
    let kids = children_of(parent.id());
    assert_eq!(kids.len(), 3, "{kids:?}");
    for _ in 0..30 {
        let r = get(&addr);
        assert!(
            r.starts_with("HTTP/1.1 200") && r.ends_with("hello\n"),
            "{r}"
        );
    }
    guard.0 = None;
    httplab_sys_signal(parent.id());
    let status = parent.wait().expect("parent ends");
    assert!(status.success(), "{status}");
    let mut err = String::new();
    parent
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("3 processes stopped"), "{err}");
    // Every serving process has ended (they were the parent's children and
    // it waited for them): none is left in /proc.
    let until = Instant::now() + Duration::from_secs(10);
    for k in kids {
        while std::path::Path::new(&format!("/proc/{k}/status")).exists()
            && std::fs::read_to_string(format!("/proc/{k}/status"))
                .is_ok_and(|s| !s.contains("State:\tZ"))
        {
            assert!(Instant::now() < until, "process {k} still runs");
            std::thread::yield_now();
        }
    }
}

#[test]
fn processes_apply_to_the_event_model_only() {
    let _turn = httplab_skip::serial::shared("processes");
    let out = Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args([
            "serve",
            "--processes",
            "2",
            "--model",
            "threads",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--processes runs the event model"), "{err}");
}

/// Sends SIGTERM to the server if the test ends before it stops it (a
/// failed assertion), so a failure leaves no serving processes behind (the
/// parent passes the signal on to its children).
struct StopOnDrop(Option<u32>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            sigterm(pid);
        }
    }
}

/// Sends SIGTERM to `pid`; whether `kill` succeeded.
fn sigterm(pid: u32) -> bool {
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

fn httplab_sys_signal(pid: u32) {
    assert!(sigterm(pid), "kill -TERM {pid}");
}
