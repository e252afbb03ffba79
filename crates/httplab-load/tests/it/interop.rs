//! Interop: `httplab load` against `httplab serve` (in process) and against
//! nginx, and a cross-check with httperf on the same nginx. When nginx or
//! httperf is missing these tests print why and pass, except under CI=true,
//! where they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use common::{ci, is_root, load, which};

fn need(bin: &str) -> Option<PathBuf> {
    match which(bin) {
        Some(p) => Some(p),
        None if ci() => panic!("{bin} is required under CI=true but was not found"),
        None => {
            httplab_skip::skipped(&format!("{bin} not installed"));
            None
        }
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn write_site(root: &Path) {
    std::fs::create_dir_all(root.join("f")).unwrap();
    let page: Vec<u8> = (0..4148).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("index.html"), &page).unwrap();
    for i in 0..10 {
        std::fs::write(
            root.join("f").join(format!("{i}.html")),
            vec![b'x'; 100 + i],
        )
        .unwrap();
    }
}

struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Nginx {
    fn start() -> Option<Nginx> {
        let bin = need("nginx")?;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        write_site(&root);
        let port = free_port();
        let d = dir.path().display();
        // SAFETY-free check of the effective user: nginx run by root must be told to stay root.
        let user = if std::env::var("USER").as_deref() == Ok("root") || is_root() {
            "user root root;\n"
        } else {
            ""
        };
        let conf = format!(
            "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             keepalive_requests 100000;\n\
             server {{ listen 127.0.0.1:{port}; root {}; }}\n}}\n",
            root.display()
        );
        let child = common::spawn_nginx(&bin, dir.path(), &conf);
        let n = Nginx {
            child,
            port,
            _dir: dir,
            root,
        };
        common::wait_listening(port, "nginx");
        Some(n)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        common::stop_peer(&mut self.child);
    }
}

/// (connections, requests, replies, status classes) from an httperf report.
fn parse_httperf(out: &str) -> (u64, u64, u64, httplab_model::StatusClasses) {
    let nums = |line: &str| -> Vec<u64> {
        line.split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    let total = out
        .lines()
        .find(|l| l.starts_with("Total: connections"))
        .expect("Total line");
    let t = nums(total);
    let status = out
        .lines()
        .find(|l| l.starts_with("Reply status:"))
        .expect("status line");
    // "1xx=0 2xx=90 ..." -> digits include the class digits; take every second.
    let s = nums(status);
    let st = httplab_model::StatusClasses {
        informational: s[1],
        success: s[3],
        redirect: s[5],
        client_error: s[7],
        server_error: s[9],
    };
    (t[0], t[1], t[2], st)
}

/// The label of every report line, from "Maximum connect burst" to the
/// last "Errors:" line: the text before the first digit.
fn labels(report: &str) -> Vec<String> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("Maximum connect burst length"))
        .filter(|l| !l.trim().is_empty())
        .take_while(|l| !l.starts_with("httplab"))
        .map(|l| {
            l.split(|c: char| c.is_ascii_digit())
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn cross_check_with_httperf_on_nginx() {
    let Some(httperf) = need("httperf") else {
        return;
    };
    let Some(ng) = Nginx::start() else { return };
    for uri in ["/index.html", "/missing.html"] {
        let args = format!(
            "--server 127.0.0.1 --port {} --uri {uri} --rate 500 --num-conn 60 --num-call 3 --timeout 5",
            ng.port
        );
        let out = Command::new(&httperf)
            .args(args.split_whitespace())
            .output()
            .expect("run httperf");
        let text = String::from_utf8_lossy(&out.stdout);
        let (c, q, r, st) = parse_httperf(&text);
        let ours = load(&args);
        assert_eq!(
            (
                ours.totals.connections,
                ours.totals.requests,
                ours.totals.replies,
                ours.reply.status
            ),
            (c, q, r, st),
            "httperf said:\n{text}"
        );
        // Our own report parses the same way as httperf's, and has httperf's
        // lines in httperf's order (labels compared up to the first number).
        let mine = httplab_load::render_httperf_report(&ours);
        assert_eq!(parse_httperf(&mine), (c, q, r, st));
        let theirs = labels(&text);
        assert!(theirs.len() >= 16, "short httperf report: {theirs:?}");
        assert_eq!(theirs, labels(&mine)[..theirs.len()]);
    }
}

#[test]
fn nginx_counts_pipelining_and_verify() {
    let Some(ng) = Nginx::start() else { return };
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --uri /index.html --rate 1000 --num-conns 40 --num-calls 6 --burst-length 3 --timeout 5 --verify-root {}",
        ng.port,
        ng.root.display()
    ));
    assert_eq!(r.totals.connections, 40);
    assert_eq!(r.totals.replies, 240);
    assert_eq!(r.reply.status.success, 240);
    assert_eq!(r.accuracy.verified, 240);
    assert_eq!(r.accuracy.mismatches, 0);
    assert_eq!(r.reply.content_bytes, 4148.0);
    let users = load(&format!(
        "http://127.0.0.1:{}/index.html --users 8 --requests-per-user 25 --timeout 5",
        ng.port
    ));
    assert_eq!(users.totals.replies, 200);
    assert_eq!(users.totals.connections, 8);
}

#[test]
fn against_httplab_serve() {
    let dir = tempfile::tempdir().unwrap();
    write_site(dir.path());
    let handle =
        match httplab_server::Server::start(httplab_server::ServerConfig::for_root(dir.path())) {
            Ok(h) => h,
            Err(e) => panic!("httplab serve did not start: {e:#}"),
        };
    let port = handle.local_addr().port();
    let r = load(&format!(
        "--server 127.0.0.1 --port {port} --uri /index.html --rate 1000 --num-conns 50 --num-calls 4 --burst-length 2 --timeout 5 --verify-root {}",
        dir.path().display()
    ));
    assert_eq!(r.totals.connections, 50);
    assert_eq!(r.totals.requests, 200);
    assert_eq!(r.totals.replies, 200);
    assert_eq!(r.reply.status.success, 200);
    assert_eq!(r.errors.total, 0);
    assert_eq!((r.accuracy.verified, r.accuracy.mismatches), (200, 0));
    let w = load(&format!(
        "--server 127.0.0.1 --port {port} --uri /f --wset 10,1.0 --num-conns 20 --timeout 5 --verify-root {}",
        dir.path().display()
    ));
    // /f/N.html exists for N in 0..10.
    assert_eq!(w.reply.status.success, 20);
    assert_eq!(w.accuracy.mismatches, 0);
    let dir2 = tempfile::tempdir().unwrap();
    let f = dir2.path().join("s.log");
    std::fs::write(
        &f,
        "/index.html think=0.002\n  /f/1.html\n  /f/2.html\n/f/3.html\n",
    )
    .unwrap();
    let s = load(&format!(
        "--server 127.0.0.1 --port {port} --wsesslog 10,0.001,{} --rate 200 --timeout 5",
        f.display()
    ));
    assert_eq!(s.totals.replies, 40);
    assert_eq!(s.reply.status.success, 40);
    handle.shutdown();
}
