//! A minimal static-file HTTP/1.1 server run as a *separate process* by the
//! study (kind = "command"): the test binary re-executes itself with
//! `--exact helper_http_server` (the test at the binary's root, main.rs) and
//! these environment variables set.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Root directory to serve.
pub const ENV_ROOT: &str = "HTTPLAB_STUDY_HELPER_ROOT";
/// Port to listen on (127.0.0.1).
pub const ENV_PORT: &str = "HTTPLAB_STUDY_HELPER_PORT";
/// Exit the whole process after answering this many requests.
pub const ENV_DIE_AFTER: &str = "HTTPLAB_STUDY_HELPER_DIE_AFTER";
/// Hold every response this many milliseconds (a deliberately slow server).
pub const ENV_DELAY_MS: &str = "HTTPLAB_STUDY_HELPER_DELAY_MS";

/// TOML lines of a helper server that holds every response `delay_ms`.
pub fn slow_helper_server_toml(name: &str, delay_ms: u64) -> String {
    let mut t = helper_server_toml(name, None);
    t.push_str(&format!("{ENV_DELAY_MS} = \"{delay_ms}\"\n"));
    t
}

/// TOML lines of a `command` server running the helper in this test binary.
pub fn helper_server_toml(name: &str, die_after: Option<u64>) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut t = format!(
        "[[servers]]\nname = \"{name}\"\nkind = \"command\"\ncommand = [\"{}\", \"--exact\", \"helper_http_server\", \"--nocapture\", \"--test-threads=1\"]\n\
         version_command = [\"echo\", \"helper 1.0\"]\nready_timeout_s = 30\n[servers.env]\n{ENV_ROOT} = \"{{root}}\"\n{ENV_PORT} = \"{{port}}\"\n",
        exe.display()
    );
    if let Some(n) = die_after {
        t.push_str(&format!("{ENV_DIE_AFTER} = \"{n}\"\n"));
    }
    t
}

/// Serves forever when the environment says so; returns at once otherwise.
pub fn maybe_serve() {
    let (Ok(root), Ok(port)) = (std::env::var(ENV_ROOT), std::env::var(ENV_PORT)) else {
        return;
    };
    let die_after: Option<u64> = std::env::var(ENV_DIE_AFTER)
        .ok()
        .and_then(|v| v.parse().ok());
    let delay = std::time::Duration::from_millis(
        std::env::var(ENV_DELAY_MS)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    let l = TcpListener::bind(format!("127.0.0.1:{port}")).expect("bind");
    let served = Arc::new(AtomicU64::new(0));
    for s in l.incoming().flatten() {
        let root = PathBuf::from(&root);
        let served = Arc::clone(&served);
        std::thread::spawn(move || {
            let _ = conn(s, &root, &served, die_after, delay);
        });
    }
}

fn conn(
    s: TcpStream,
    root: &Path,
    served: &AtomicU64,
    die_after: Option<u64>,
    delay: std::time::Duration,
) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut r = BufReader::new(s.try_clone()?);
    let mut w = s;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut close = false;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h)? == 0 {
                return Ok(());
            }
            if h.to_ascii_lowercase().starts_with("connection: close") {
                close = true;
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
        }
        let n = served.fetch_add(1, Ordering::SeqCst) + 1;
        if die_after.is_some_and(|d| n > d) {
            std::process::exit(3);
        }
        if !delay.is_zero() {
            // The server under test is slow on purpose (the A/B study's "B").
            std::thread::sleep(delay);
        }
        let file = root.join(path.trim_start_matches('/'));
        match std::fs::read(&file) {
            Ok(body) if file.is_file() && !path.contains("..") => {
                write!(
                    w,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n",
                    body.len(),
                    if close { "Connection: close\r\n" } else { "" }
                )?;
                w.write_all(&body)?;
            }
            _ => write!(w, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")?,
        }
        if close {
            return Ok(());
        }
    }
}

/// True under CI (interop peers and the httplab binary must then exist).
pub fn ci() -> bool {
    httplab_skip::under_ci()
}

/// The httplab binary next to the test executable whose `serve --help`
/// mentions `flag`, or None (skip with a printed reason; a failure under CI).
pub fn httplab_serving(flag: &str) -> Option<PathBuf> {
    let Some(exe) = httplab_study::runner::find_httplab_exe() else {
        assert!(
            !ci(),
            "no httplab binary next to the test executable under CI"
        );
        httplab_skip::skipped(
            "no httplab binary next to the test executable (build the workspace)",
        );
        return None;
    };
    let serves = std::process::Command::new(&exe)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(flag));
    if !serves {
        assert!(!ci(), "{} has no `serve {flag}` under CI", exe.display());
        httplab_skip::skipped(&format!(
            "{} has no `serve {flag}` (stale build?)",
            exe.display()
        ));
        return None;
    }
    Some(exe)
}

/// Set in a child process of this test binary that runs one test with an
/// environment of its own (see [`run_in_child`]).
pub const ENV_CHILD: &str = "HTTPLAB_STUDY_TEST_CHILD";

/// True in a child process started by [`run_in_child`].
pub fn in_child() -> bool {
    std::env::var_os(ENV_CHILD).is_some()
}

/// Runs the test `name` (its path in this binary, `module::test`) in a child
/// process of this binary with `env` added to its environment, and asserts
/// that it ran and passed. For tests that set process-wide state (an
/// environment variable every study reads) that the binary's other tests,
/// running meanwhile, must not see. The test calls this unless
/// [`in_child`], and otherwise runs its body.
pub fn run_in_child(name: &str, env: &[(&str, &OsStr)]) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--test-threads=1"])
        .env(ENV_CHILD, "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("test result: ok. 1 passed"),
        "{name} in a child process:\n{text}"
    );
}
