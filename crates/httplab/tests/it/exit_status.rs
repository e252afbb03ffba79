//! The exit statuses of every subcommand, as a script sees them (the table
//! in httplab-usage and docs/cli.md, "Exit status"): 0 done, 1 the run
//! failed, 2 a usage error with the message prefixed `httplab SUB: error:`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

fn httplab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args(args)
        .output()
        .expect("run httplab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `args` and checks the status and, for errors, the prefix.
fn expect(args: &[&str], status: i32) -> Output {
    let o = httplab(args);
    assert_eq!(
        o.status.code(),
        Some(status),
        "httplab {}: stderr: {}",
        args.join(" "),
        stderr(&o)
    );
    if status != 0 {
        let sub = args[0];
        assert!(
            stderr(&o).starts_with(&format!("httplab {sub}: error: ")),
            "httplab {}: {}",
            args.join(" "),
            stderr(&o)
        );
    }
    o
}

#[test]
fn usage_errors_exit_2_in_every_subcommand() {
    for sub in [
        "serve", "load", "sweep", "report", "study", "merge", "compare",
    ] {
        expect(&[sub, "--no-such-option"], 2);
        expect(&[sub, "--help"], 0);
    }
    let o = expect(&["serve", "--port", "99999"], 2);
    assert!(stderr(&o).contains("--listen ADDR:PORT"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("--prometheus"), "{}", stderr(&o));
    expect(&["load", "--rate", "fast", "http://127.0.0.1:1/"], 2);
    expect(&["report", "/nonexistent/result.json"], 2);
    expect(&["study", "no-such-study", "--dry-run"], 2);
    expect(
        &["merge", "/nonexistent/a.json", "-o", "/nonexistent/m.json"],
        2,
    );
    expect(
        &["compare", "/nonexistent/a.json", "/nonexistent/b.json"],
        2,
    );
    let o = httplab(&["no-such-command"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_load_that_no_server_answered_exits_1() {
    let _turn = httplab_skip::serial::shared("exit_status");
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = expect(&["load", &url, "--num-conns", "3", "--timeout", "2"], 1);
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "no server answered at 127.0.0.1:{port}: connection refused ×3"
        )),
        "{e}"
    );
    // Every run of a --repeat counts: still 1.
    expect(
        &["load", &url, "--num-conns", "1", "--repeat", "2", "--quiet"],
        1,
    );
}

#[test]
fn a_load_that_was_answered_exits_0_even_with_errors() {
    let _turn = httplab_skip::serial::shared("exit_status");
    // Answers the first request of each connection, then closes: every
    // second call on a connection fails, the first is answered.
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        for s in l.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let o = expect(
        &[
            "load",
            &url,
            "--num-conns",
            "4",
            "--num-calls",
            "2",
            "--timeout",
            "5",
        ],
        0,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("replies 4"), "{out}");
    let _ = server.join();
}
