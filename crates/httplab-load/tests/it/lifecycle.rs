//! How real servers end connections, and what `httplab load` counts for it.
//!
//! Every case runs a counted load against a real peer (nginx, Apache's
//! event MPM, lighttpd, h2o, Caddy) configured to end connections by a rule
//! of its own — a request limit per connection (`Connection: close` on
//! HTTP/1.1, GOAWAY on HTTP/2), a stream limit in SETTINGS, an idle timeout —
//! and asserts exact counts: every planned request answered once with the
//! whole page, no error, no failed TLS handshake, and as many connections as
//! the server's rule implies. A missing peer fails the test under CI=true and
//! skips it visibly otherwise. Every peer is stopped with its children when
//! its test ends, also when an assertion fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{is_root, load, which};
use httplab_model::RunResult;

/// Bytes of the one page every peer serves.
const PAGE_LEN: u64 = 4148;

/// The peer's binary, or a visible skip (a failure under CI).
fn need(bin: &str) -> Option<PathBuf> {
    let found = which(bin);
    if found.is_none() {
        httplab_skip::skip(&format!("{bin} not installed"));
    }
    found
}

/// A work directory readable by a server that drops privileges: a
/// self-signed certificate for 127.0.0.1 and the page under `www/`.
struct Work {
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

impl Work {
    fn new() -> Work {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod work dir");
        let ck = rcgen::generate_simple_self_signed(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ])
        .expect("rcgen");
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, ck.cert.pem()).expect("write cert");
        std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
        let www = dir.path().join("www");
        std::fs::create_dir_all(&www).expect("www");
        let page: Vec<u8> = (0..PAGE_LEN).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(www.join("index.html"), page).expect("page");
        Work { dir, cert, key }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn www(&self) -> PathBuf {
        self.dir.path().join("www")
    }
}

/// A port free for both TCP and UDP on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    for _ in 0..50 {
        let t = std::net::TcpListener::bind("127.0.0.1:0").expect("bind tcp");
        let port = t.local_addr().expect("addr").port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both TCP and UDP");
}

/// A peer server in its own process group, stopped when dropped (also while
/// a failed assertion unwinds): SIGTERM to its master, which stops its
/// workers or children (nginx, Apache) before it exits; a bounded wait, then
/// SIGKILL; then any process still in its group, by PID. Its work directory
/// goes after it.
struct Peer {
    child: Child,
    name: &'static str,
    /// The peer's error log, shown when it does not start.
    log: Option<PathBuf>,
    _work: Work,
}

impl Peer {
    fn spawn(name: &'static str, cmd: &mut Command, work: Work, log: Option<PathBuf>) -> Peer {
        use std::os::unix::process::CommandExt;
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Peer {
            child,
            name,
            log,
            _work: work,
        }
    }

    /// Waits (bounded: 10 s) until `ready` holds; fails at once, with the
    /// peer's error log, if the peer exits first.
    fn wait(&mut self, what: &str, ready: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ready() {
            if let Ok(Some(st)) = self.child.try_wait() {
                let log = self
                    .log
                    .as_ref()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default();
                panic!("{} exited ({st}) before {what}:\n{log}", self.name);
            }
            assert!(
                Instant::now() < deadline,
                "{} did not start: {what}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until something accepts TCP connections on 127.0.0.1:`port`.
    fn wait_tcp(&mut self, port: u16) {
        self.wait(&format!("listening on TCP port {port}"), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }

    /// Waits until a UDP socket is bound to `port`.
    fn wait_udp(&mut self, port: u16) {
        self.wait(&format!("binding UDP port {port}"), || udp_bound(port));
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        common::stop_peer(&mut self.child);
        // A child the master did not wait for stays in the master's group
        // (a process group's id is not reused while it has members).
        for pid in group_members(pgid) {
            let _ = httplab_sys::process::signal(pid, libc::SIGKILL);
        }
    }
}

/// Processes whose process group is `pgid` (from /proc/PID/stat).
fn group_members(pgid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid pgrp ...: the fields after the last ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            rest.split_whitespace().nth(2) == Some(pgid.to_string().as_str())
        })
        .collect()
}

/// Whether a UDP socket is bound to `port` in this network namespace.
fn udp_bound(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| a.ends_with(&want))
            })
    })
}

/// The calls the server's close left unmade (httperf's request-oriented
/// connections end at the server's close).
fn unsent(r: &RunResult) -> u64 {
    r.config.facts.unsent_calls.unwrap_or(0)
}

/// HTTP/1.1 calls the server closed their connection on unanswered, made
/// again on a new connection.
fn retried(r: &RunResult) -> u64 {
    r.config.facts.retried_calls.unwrap_or(0)
}

/// The exact counts of a load in which the server ended connections by its
/// rule: `replies` requests each answered once with the whole page (2xx),
/// over exactly `connections` connections, with no error and, over TLS, no
/// failed handshake (a close_notify after `Connection: close` is no failure).
fn exact(r: &RunResult, what: &str, replies: u64, connections: u64) {
    exact_retried(r, what, replies, connections, 0);
}

/// [`exact`], with `again` HTTP/1.1 calls the server did not answer before
/// closing their connection, made again on a new one (counted once as
/// requests).
fn exact_retried(r: &RunResult, what: &str, replies: u64, connections: u64, again: u64) {
    let report = httplab_load::render_httperf_report(r);
    assert_eq!(retried(r), again, "{what}: calls made again\n{report}");
    if again > 0 {
        let line = format!("httplab: {again} calls made again on a new connection");
        assert!(report.contains(&line), "{what}: no '{line}':\n{report}");
    }
    assert_eq!(r.errors.total, 0, "{what}: errors {:?}\n{report}", r.errors);
    assert_eq!(r.totals.requests, replies, "{what}: requests\n{report}");
    assert_eq!(r.totals.replies, replies, "{what}: replies\n{report}");
    assert_eq!(r.reply.status.success, replies, "{what}: 2xx\n{report}");
    assert_eq!(
        r.accuracy.bytes_received,
        replies * PAGE_LEN,
        "{what}: body bytes\n{report}"
    );
    assert_eq!(r.accuracy.framing_errors, 0, "{what}: framing\n{report}");
    assert_eq!(unsent(r), 0, "{what}: unsent calls\n{report}");
    assert_eq!(
        r.totals.connections, connections,
        "{what}: connections\n{report}"
    );
    if let Some(t) = &r.tls {
        assert_eq!(t.failures, 0, "{what}: TLS failures {t:?}");
        assert_eq!(t.handshakes, connections, "{what}: TLS handshakes {t:?}");
    }
    if let Some(h) = &r.http2 {
        assert_eq!(h.streams_started, replies, "{what}: {h:?}");
        assert_eq!(h.streams_completed, replies, "{what}: {h:?}");
        assert_eq!(h.streams_failed, 0, "{what}: {h:?}");
        assert_eq!(h.connections, connections, "{what}: {h:?}");
        assert_eq!(h.failed_connections, 0, "{what}: {h:?}");
        assert!(h.rst_stream_received.is_empty(), "{what}: {h:?}");
    }
    if let Some(h) = &r.http3 {
        assert_eq!(h.streams_started, replies, "{what}: {h:?}");
        assert_eq!(h.streams_completed, replies, "{what}: {h:?}");
        assert_eq!(h.streams_failed, 0, "{what}: {h:?}");
        assert_eq!(h.connections, connections, "{what}: {h:?}");
        assert_eq!(h.failed_connections, 0, "{what}: {h:?}");
    }
}

/// HTTP/2 connections that ended by the server's GOAWAY(NO_ERROR), checked
/// against what the report says of them.
fn goaways(r: &RunResult, what: &str, want: u64) {
    let h = r.http2.as_ref().expect("an HTTP/2 run has an http2 block");
    assert_eq!(h.goaway_received, want, "{what}: {h:?}");
    if want == 0 {
        assert!(h.goaway_reasons.is_empty(), "{what}: {h:?}");
        return;
    }
    assert_eq!(h.goaway_reasons.len(), 1, "{what}: {h:?}");
    assert_eq!(
        h.goaway_reasons.get("NO_ERROR"),
        Some(&want),
        "{what}: {h:?}"
    );
    let text = httplab_load::render_httperf_report(r);
    let line = format!("GOAWAY {want} connections (NO_ERROR {want})");
    assert!(
        text.contains(&line),
        "{what}: the report lacks '{line}':\n{text}"
    );
}

// ---------------------------------------------------------------- nginx

/// nginx's version as (major, minor, patch).
fn nginx_version(bin: &Path) -> (u32, u32, u32) {
    let out = Command::new(bin).arg("-v").output().expect("nginx -v");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    let v = text.split("nginx/").nth(1).unwrap_or("0.0.0");
    let mut it = v
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok());
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}

/// One `server` block of an nginx configuration.
enum Listen {
    H1,
    Tls,
    /// HTTP/2 over TLS (ALPN h2).
    H2Tls,
    /// HTTP/2 by prior knowledge, cleartext.
    H2c,
}

/// nginx with one server per (port, kind, directives), each serving the
/// page. `listen … http2` before nginx 1.25.1 (Debian bookworm has 1.22),
/// `http2 on;` since.
fn nginx(servers: &[(u16, Listen, &str)]) -> Option<Peer> {
    let bin = need("nginx")?;
    let new = nginx_version(&bin) >= (1, 25, 1);
    let work = Work::new();
    let d = work.path().display().to_string();
    let tls = format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3;",
        work.cert.display(),
        work.key.display()
    );
    let mut blocks = String::new();
    for (port, kind, directives) in servers {
        let a = format!("127.0.0.1:{port}");
        let listen = match (kind, new) {
            (Listen::H1, _) => format!("listen {a};"),
            (Listen::Tls, _) => format!("listen {a} ssl; {tls}"),
            (Listen::H2Tls, false) => format!("listen {a} ssl http2; {tls}"),
            (Listen::H2Tls, true) => format!("listen {a} ssl; http2 on; {tls}"),
            (Listen::H2c, false) => format!("listen {a} http2;"),
            (Listen::H2c, true) => format!("listen {a}; http2 on;"),
        };
        blocks.push_str(&format!(
            "  server {{ {listen} root {d}/www; {directives} }}\n"
        ));
    }
    let user = if is_root() { "user root root;\n" } else { "" };
    let conf = format!(
        "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         \x20 fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         {blocks}}}\n"
    );
    let conf_path = work.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).expect("write nginx.conf");
    let log = work.path().join("error.log");
    let mut peer = Peer::spawn(
        "nginx",
        Command::new(bin)
            .arg("-c")
            .arg(&conf_path)
            .arg("-p")
            .arg(work.path())
            .arg("-g")
            .arg("daemon off;"),
        work,
        Some(log),
    );
    for (port, _, _) in servers {
        peer.wait_tcp(*port);
    }
    Some(peer)
}

/// `keepalive_requests 10`, HTTP/1.1 in cleartext and over TLS: nginx says
/// `Connection: close` on a connection's 10th response (and, over TLS,
/// sends close_notify), so a user's 25 requests take 3 connections.
#[test]
fn nginx_keepalive_requests_end_http1_connections_after_ten() {
    let (h1, tls) = (free_port(), free_port());
    let Some(_nginx) = nginx(&[
        (h1, Listen::H1, "keepalive_requests 10;"),
        (tls, Listen::Tls, "keepalive_requests 10;"),
    ]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{h1}/index.html");
    let r = load(&format!(
        "{url} --users 2 --requests-per-user 25 --timeout 5"
    ));
    exact(&r, "h1 users", 50, 6);
    // Pipelined bursts of 4: the 2 calls behind each connection's 10th
    // reply are not processed (nginx closes after it) and go again on the
    // next connection: sent once as far as the counts go.
    let r = load(&format!(
        "{url} --users 2 --requests-per-user 25 --burst-length 4 --timeout 5"
    ));
    exact_retried(&r, "h1 users, bursts of 4", 50, 6, 4);
    // httperf's request-oriented connections: 10 calls fit.
    let r = load(&format!("{url} --num-conns 3 --num-calls 10 --timeout 5"));
    exact(&r, "h1 --num-calls 10", 30, 3);
    // 12 calls do not: each connection's last 2 are not made (httperf),
    // or made on a new connection with --reconnect.
    let r = load(&format!("{url} --num-conns 2 --num-calls 12 --timeout 5"));
    assert_eq!(
        (r.totals.replies, unsent(&r), r.totals.connections),
        (20, 4, 2),
        "h1 --num-calls 12: {:?}",
        r.errors
    );
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    let r = load(&format!(
        "{url} --num-conns 2 --num-calls 12 --reconnect --timeout 5"
    ));
    exact(&r, "h1 --num-calls 12 --reconnect", 24, 4);
    // The same 12 calls pipelined: the 2 behind the 10th reply were sent
    // but not processed; not made again (httperf) they are unsent calls,
    // not requests; with --reconnect they are made again.
    let r = load(&format!(
        "{url} --num-conns 2 --num-calls 12 --burst-length 12 --timeout 5"
    ));
    assert_eq!(
        (r.totals.requests, r.totals.replies, unsent(&r), retried(&r)),
        (20, 20, 4, 0),
        "h1 --num-calls 12 pipelined: {:?}",
        r.errors
    );
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    let r = load(&format!(
        "{url} --num-conns 2 --num-calls 12 --burst-length 12 --reconnect --timeout 5"
    ));
    exact_retried(&r, "h1 --num-calls 12 pipelined --reconnect", 24, 4, 4);

    let url = format!("https://127.0.0.1:{tls}/index.html --insecure");
    let r = load(&format!(
        "{url} --users 2 --requests-per-user 25 --timeout 5"
    ));
    exact(&r, "TLS users", 50, 6);
    let r = load(&format!("{url} --num-conns 3 --num-calls 10 --timeout 5"));
    exact(&r, "TLS --num-calls 10", 30, 3);
}

/// `keepalive_requests 10` over HTTP/2 (TLS and h2c): nginx sends
/// GOAWAY(NO_ERROR) with the 10th stream as the last one processed. One
/// stream at a time: a user's 25 requests take 10 + 10 + 5, connections =
/// GOAWAYs + users. 16 streams at once: those sent beyond the 10th, above
/// the GOAWAY's last id, are not processed and go again on the next
/// connection (retried, not errors), and the counts are the same.
#[test]
fn nginx_keepalive_requests_end_http2_connections_with_goaway() {
    let (tls, h2c) = (free_port(), free_port());
    let Some(_nginx) = nginx(&[
        (tls, Listen::H2Tls, "keepalive_requests 10;"),
        (h2c, Listen::H2c, "keepalive_requests 10;"),
    ]) else {
        return;
    };
    for url in [
        format!("https://127.0.0.1:{tls}/index.html --insecure"),
        format!("http://127.0.0.1:{h2c}/index.html"),
    ] {
        let r = load(&format!(
            "{url} --http2 --users 2 --requests-per-user 25 --max-concurrent-streams 1 --timeout 5"
        ));
        let what = format!("{url}, 1 stream");
        exact(&r, &what, 50, 6);
        goaways(&r, &what, 4);
        assert_eq!(r.totals.connections, 4 + 2, "{what}: GOAWAYs + users");

        let r = load(&format!(
            "{url} --http2 --users 2 --requests-per-user 25 --max-concurrent-streams 16 --timeout 5"
        ));
        let what = format!("{url}, 16 streams");
        exact(&r, &what, 50, 6);
        goaways(&r, &what, 4);
        let h = r.http2.as_ref().expect("http2 block");
        assert!(h.streams_retried > 0, "{what}: {h:?}");
        let text = httplab_load::render_httperf_report(&r);
        let line = format!(
            "not processed by the server and retried {}",
            h.streams_retried
        );
        assert!(text.contains(&line), "{what}: no '{line}':\n{text}");

        // Request-oriented: 10 streams fit a connection.
        let r = load(&format!(
            "{url} --http2 --num-conns 3 --num-calls 10 --max-concurrent-streams 4 --timeout 5"
        ));
        let what = format!("{url}, --num-calls 10");
        exact(&r, &what, 30, 3);
        goaways(&r, &what, 3);
    }
}

/// `http2_max_concurrent_streams 2` against `--max-concurrent-streams 16`:
/// the client keeps to the server's SETTINGS, so nothing is refused and one
/// connection per user carries all its requests.
#[test]
fn nginx_http2_stream_limit_is_obeyed() {
    let port = free_port();
    let Some(_nginx) = nginx(&[(
        port,
        Listen::H2Tls,
        "http2_max_concurrent_streams 2; keepalive_requests 1000;",
    )]) else {
        return;
    };
    let r = load(&format!(
        "https://127.0.0.1:{port}/index.html --insecure --http2 --users 2 --requests-per-user 25 --max-concurrent-streams 16 --timeout 5"
    ));
    exact(&r, "h2 streams 16 against 2", 50, 2);
    goaways(&r, "h2 streams 16 against 2", 0);
    let h = r.http2.as_ref().expect("http2 block");
    assert_eq!(h.streams_retried, 0, "{h:?}");
}

/// `keepalive_timeout 1s`: a user thinking 1.5 s finds its idle connection
/// closed by the server (FIN, over TLS with close_notify) and makes its next
/// call on a new connection, without an error.
#[test]
fn nginx_keepalive_timeout_closes_idle_connections() {
    let (h1, tls) = (free_port(), free_port());
    let Some(_nginx) = nginx(&[
        (h1, Listen::H1, "keepalive_timeout 1s;"),
        (tls, Listen::Tls, "keepalive_timeout 1s;"),
    ]) else {
        return;
    };
    for url in [
        format!("http://127.0.0.1:{h1}/index.html"),
        format!("https://127.0.0.1:{tls}/index.html --insecure"),
    ] {
        let r = load(&format!(
            "{url} --users 2 --requests-per-user 2 --think 1500ms --timeout 5"
        ));
        exact(&r, &format!("{url}, idle close"), 4, 4);
    }
}

// ------------------------------------------ an idle close crossing a request

/// How the crossing server ends a connection at its request past `answered`.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Reads the request, then closes (FIN): an idle close that crossed it.
    Fin,
    /// Closes with SO_LINGER 0 (RST) as the request arrives.
    Reset,
}

/// A server (std, a thread per connection) that answers the first
/// `answered` requests of each connection with the page, keep-alive, and
/// ends the connection on the next one without a byte of reply: what a
/// client sees when a server's keep-alive timeout fires just as its next
/// request arrives. Stopped when dropped.
struct Crossing {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Crossing {
    fn start(answered: usize, cut: Cut) -> Crossing {
        use std::sync::atomic::{AtomicBool, Ordering};
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(c) = conn {
                    std::thread::spawn(move || cross(c, answered, cut));
                }
            }
        });
        Crossing { port, stop }
    }
}

impl Drop for Crossing {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One connection of [`Crossing`].
fn cross(mut c: std::net::TcpStream, answered: usize, cut: Cut) {
    use std::io::{Read, Write};
    let page: Vec<u8> = (0..PAGE_LEN).map(|i| b'a' + (i % 26) as u8).collect();
    let mut reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {PAGE_LEN}\r\n\r\n").into_bytes();
    reply.extend_from_slice(&page);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let mut served = 0;
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let n = match c.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&tmp[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            if served == answered {
                if let Cut::Reset = cut {
                    let _ = socket2::SockRef::from(&c).set_linger(Some(Duration::ZERO));
                }
                return;
            }
            served += 1;
            if c.write_all(&reply).is_err() {
                return;
            }
        }
    }
}

/// A server that closes a connection it has served as the next request
/// arrives did not process that request (RFC 9112 §9.3.1): the client makes
/// an idempotent one again on a new connection, without an error, whether
/// the close is a FIN or a reset. A request that is not idempotent, or the
/// first request of a connection, is not made again: the close is an error.
#[test]
fn an_idle_close_crossing_a_request_makes_it_again() {
    for cut in [Cut::Fin, Cut::Reset] {
        let s = Crossing::start(1, cut);
        let url = format!("http://127.0.0.1:{}/index.html", s.port);
        // Each connection answers one request: 4 connections for 4, and
        // the 2nd, 3rd and 4th went twice.
        let r = load(&format!(
            "{url} --users 1 --requests-per-user 4 --timeout 5"
        ));
        exact_retried(&r, &format!("{cut:?}"), 4, 4, 3);
        let r = load(&format!(
            "{url} --users 1 --requests-per-user 2 --method POST --body x --timeout 5"
        ));
        assert_eq!(
            (
                r.totals.replies,
                r.errors.total,
                r.errors.connreset,
                retried(&r)
            ),
            (1, 1, 1, 0),
            "{cut:?}, POST: {:?}",
            r.errors
        );
        let text = httplab_load::render_httperf_report(&r);
        assert!(text.contains("connreset 1"), "{text}");
        assert!(!text.contains("made again"), "{text}");
    }
    // A connection closed at its first request served nothing: an error
    // each time, not a loop.
    let s = Crossing::start(0, Cut::Fin);
    let r = load(&format!(
        "http://127.0.0.1:{}/index.html --users 1 --requests-per-user 2 --timeout 5",
        s.port
    ));
    assert_eq!(
        (
            r.totals.replies,
            r.errors.connreset,
            r.totals.connections,
            retried(&r)
        ),
        (0, 2, 2, 0),
        "{:?}",
        r.errors
    );
}

// --------------------------------------------------------------- Apache

/// Apache's event MPM with `MaxKeepAliveRequests 10` (and `KeepAliveTimeout
/// 5`), cleartext on `h1` and TLS (mod_ssl) on `tls`.
fn apache(h1: u16, tls: u16) -> Option<Peer> {
    let bin = need("apache2")?;
    let m = "/usr/lib/apache2/modules";
    for module in ["mod_mpm_event.so", "mod_ssl.so", "mod_socache_shmcb.so"] {
        if !Path::new(m).join(module).is_file() {
            httplab_skip::skip(&format!("Apache's {module} not installed"));
            return None;
        }
    }
    let work = Work::new();
    let d = work.path().display().to_string();
    // Apache refuses to serve as root; it drops to nobody, for whom the
    // work directory is readable.
    let user = if is_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    let conf = format!(
        "ServerRoot \"{d}\"\nServerName 127.0.0.1\n\
         LoadModule mpm_event_module {m}/mod_mpm_event.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule mime_module {m}/mod_mime.so\n\
         LoadModule socache_shmcb_module {m}/mod_socache_shmcb.so\n\
         LoadModule ssl_module {m}/mod_ssl.so\n\
         {user}Listen 127.0.0.1:{h1}\nListen 127.0.0.1:{tls}\n\
         PidFile \"{d}/apache.pid\"\nDefaultRuntimeDir \"{d}\"\nMutex file:{d} default\n\
         ErrorLog \"{d}/error.log\"\nLogLevel warn\nTypesConfig \"{d}/mime.types\"\n\
         DocumentRoot \"{d}/www\"\n<Directory \"{d}/www\">\n  Require all granted\n</Directory>\n\
         StartServers 1\nServerLimit 1\nThreadsPerChild 25\nMaxRequestWorkers 25\n\
         KeepAlive On\nMaxKeepAliveRequests 10\nKeepAliveTimeout 5\n\
         <VirtualHost 127.0.0.1:{tls}>\n  SSLEngine on\n  SSLCertificateFile \"{}\"\n\
           SSLCertificateKeyFile \"{}\"\n</VirtualHost>\n",
        work.cert.display(),
        work.key.display()
    );
    std::fs::write(work.path().join("apache.conf"), conf).expect("apache.conf");
    std::fs::write(work.path().join("mime.types"), "text/html html\n").expect("mime.types");
    let log = work.path().join("error.log");
    let mut peer = Peer::spawn(
        "apache2",
        Command::new(bin)
            .arg("-d")
            .arg(work.path())
            .arg("-f")
            .arg(work.path().join("apache.conf"))
            .arg("-DFOREGROUND"),
        work,
        Some(log),
    );
    peer.wait_tcp(h1);
    peer.wait_tcp(tls);
    Some(peer)
}

/// Apache counts `MaxKeepAliveRequests` as the requests after a connection's
/// first: 10 lets a connection carry 11, the 11th with `Connection: close`.
/// A user's 22 requests take exactly 2 connections (3 under a rule of 10).
#[test]
fn apache_max_keep_alive_requests_end_http1_connections() {
    let (h1, tls) = (free_port(), free_port());
    let Some(_apache) = apache(h1, tls) else {
        return;
    };
    for url in [
        format!("http://127.0.0.1:{h1}/index.html"),
        format!("https://127.0.0.1:{tls}/index.html --insecure"),
    ] {
        let r = load(&format!(
            "{url} --users 2 --requests-per-user 22 --timeout 5"
        ));
        exact(&r, &format!("{url}, users"), 44, 4);
        let r = load(&format!("{url} --num-conns 2 --num-calls 11 --timeout 5"));
        exact(&r, &format!("{url}, --num-calls 11"), 22, 2);
    }
}

// ------------------------------------------------------------- lighttpd

/// lighttpd with `server.max-keep-alive-requests = 10`: cleartext HTTP/1.1
/// (and h2c) on `clear`, TLS (HTTP/1.1 and h2 by ALPN) on `tls` when
/// mod_openssl is installed.
fn lighttpd(clear: u16, tls: u16) -> Option<Peer> {
    let bin = need("lighttpd")?;
    if !["/usr/lib/lighttpd", "/usr/lib64/lighttpd"]
        .iter()
        .any(|d| Path::new(d).join("mod_openssl.so").is_file())
    {
        httplab_skip::skip("lighttpd's mod_openssl (lighttpd-mod-openssl) not installed");
        return None;
    }
    let work = Work::new();
    let d = work.path().display().to_string();
    let conf = format!(
        "server.document-root = \"{d}/www\"\nserver.bind = \"127.0.0.1\"\nserver.port = {clear}\n\
         server.pid-file = \"{d}/lighttpd.pid\"\nserver.errorlog = \"{d}/error.log\"\n\
         server.max-keep-alive-requests = 10\n\
         server.feature-flags = ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )\n\
         mimetype.assign = ( \".html\" => \"text/html\" )\n\
         server.modules = ( \"mod_openssl\" )\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls}\" {{\n  ssl.engine = \"enable\"\n\
           ssl.pemfile = \"{}\"\n  ssl.privkey = \"{}\"\n}}\n",
        work.cert.display(),
        work.key.display()
    );
    let conf_path = work.path().join("lighttpd.conf");
    std::fs::write(&conf_path, conf).expect("lighttpd.conf");
    let log = work.path().join("error.log");
    let mut peer = Peer::spawn(
        "lighttpd",
        Command::new(bin).arg("-D").arg("-f").arg(&conf_path),
        work,
        Some(log),
    );
    peer.wait_tcp(clear);
    peer.wait_tcp(tls);
    Some(peer)
}

/// lighttpd counts `server.max-keep-alive-requests` as Apache does (the
/// requests after the first): 10 lets an HTTP/1.1 connection carry 11.
#[test]
fn lighttpd_max_keep_alive_requests_end_http1_connections() {
    let (clear, tls) = (free_port(), free_port());
    let Some(_lighttpd) = lighttpd(clear, tls) else {
        return;
    };
    for url in [
        format!("http://127.0.0.1:{clear}/index.html"),
        format!("https://127.0.0.1:{tls}/index.html --insecure"),
    ] {
        let r = load(&format!(
            "{url} --users 2 --requests-per-user 22 --timeout 5"
        ));
        exact(&r, &format!("{url}, users"), 44, 4);
        let r = load(&format!("{url} --num-conns 2 --num-calls 11 --timeout 5"));
        exact(&r, &format!("{url}, --num-calls 11"), 22, 2);
    }
    // Its HTTP/2 has no such limit (the setting is HTTP/1.x's): one
    // connection per user, no GOAWAY.
    for url in [
        format!("http://127.0.0.1:{clear}/index.html"),
        format!("https://127.0.0.1:{tls}/index.html --insecure"),
    ] {
        let r = load(&format!(
            "{url} --http2 --users 2 --requests-per-user 22 --max-concurrent-streams 4 --timeout 5"
        ));
        exact(&r, &format!("{url}, h2"), 44, 2);
        goaways(&r, &format!("{url}, h2"), 0);
    }
}

// ------------------------------------------------------------------ h2o

/// h2o (no request limit per connection) with 1 s idle timeouts: HTTP/1.1
/// (`http1-request-timeout`) on `clear`, HTTP/2 over TLS
/// (`http2-idle-timeout`) on `tls`.
fn h2o(clear: u16, tls: u16) -> Option<Peer> {
    let bin = need("h2o")?;
    let work = Work::new();
    let d = work.path().display().to_string();
    let user = if is_root() { "user: root\n" } else { "" };
    let conf = format!(
        "{user}pid-file: {d}/h2o.pid\nerror-log: {d}/error.log\nnum-threads: 1\n\
         http1-request-timeout: 1\nhttp2-idle-timeout: 1\n\
         listen:\n  host: 127.0.0.1\n  port: {clear}\n\
         listen:\n  host: 127.0.0.1\n  port: {tls}\n  ssl:\n    certificate-file: {}\n    key-file: {}\n\
         hosts:\n  default:\n    paths:\n      /:\n        file.dir: {d}/www\n",
        work.cert.display(),
        work.key.display()
    );
    let conf_path = work.path().join("h2o.conf");
    std::fs::write(&conf_path, conf).expect("h2o.conf");
    let log = work.path().join("error.log");
    let mut peer = Peer::spawn(
        "h2o",
        Command::new(bin).arg("-c").arg(&conf_path),
        work,
        Some(log),
    );
    peer.wait_tcp(clear);
    peer.wait_tcp(tls);
    Some(peer)
}

/// h2o keeps a busy connection (one per user, every request on it) and
/// closes an idle one after 1 s: over HTTP/1.1 with a FIN, over HTTP/2 with
/// GOAWAY(NO_ERROR) first. A user thinking 1.5 s makes its next call on a
/// new connection without an error.
#[test]
fn h2o_keeps_busy_connections_and_closes_idle_ones() {
    let (clear, tls) = (free_port(), free_port());
    let Some(_h2o) = h2o(clear, tls) else {
        return;
    };
    let h1 = format!("http://127.0.0.1:{clear}/index.html");
    let h2 = format!("https://127.0.0.1:{tls}/index.html --insecure --http2");
    let r = load(&format!(
        "{h1} --users 2 --requests-per-user 25 --timeout 5"
    ));
    exact(&r, "h2o h1", 50, 2);
    let r = load(&format!(
        "{h2} --users 2 --requests-per-user 25 --max-concurrent-streams 8 --timeout 5"
    ));
    exact(&r, "h2o h2", 50, 2);
    goaways(&r, "h2o h2", 0);

    let r = load(&format!(
        "{h1} --users 2 --requests-per-user 2 --think 1500ms --timeout 5"
    ));
    exact(&r, "h2o h1 idle close", 4, 4);
    let r = load(&format!(
        "{h2} --users 2 --requests-per-user 2 --think 1500ms --timeout 5"
    ));
    exact(&r, "h2o h2 idle close", 4, 4);
    goaways(&r, "h2o h2 idle close", 2);
}

// ---------------------------------------------------------------- Caddy

/// Caddy with a 1 s idle timeout: HTTPS on `tls` (HTTP/1.1, h2 by ALPN and
/// HTTP/3 on the same port number over UDP) and cleartext on `clear`
/// (HTTP/1.1 and h2c by prior knowledge).
fn caddy(tls: u16, clear: u16) -> Option<Peer> {
    let bin = need("caddy")?;
    let work = Work::new();
    let d = work.path().display().to_string();
    let www = work.www().display().to_string();
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tservers {{\n\t\tprotocols h1 h2 h2c h3\n\
         \t\ttimeouts {{\n\t\t\tidle 1s\n\t\t}}\n\t}}\n}}\n\
         https://127.0.0.1:{tls} {{\n\tbind 127.0.0.1\n\ttls {} {}\n\troot * {www}\n\tfile_server\n}}\n\
         http://127.0.0.1:{clear} {{\n\tbind 127.0.0.1\n\troot * {www}\n\tfile_server\n}}\n",
        work.cert.display(),
        work.key.display()
    );
    let file = work.path().join("Caddyfile");
    std::fs::write(&file, conf).expect("Caddyfile");
    let mut peer = Peer::spawn(
        "caddy",
        Command::new(bin)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&file)
            .env("HOME", &d)
            .env("XDG_DATA_HOME", format!("{d}/data"))
            .env("XDG_CONFIG_HOME", format!("{d}/config")),
        work,
        None,
    );
    peer.wait_tcp(tls);
    peer.wait_tcp(clear);
    peer.wait_udp(tls);
    Some(peer)
}

/// Caddy (Go's HTTP/1.1 and HTTP/2 servers, quic-go for HTTP/3) has no
/// request limit per connection: one connection per user carries all its
/// requests over HTTP/1.1, h2, h2c and HTTP/3. Idle connections close after
/// 1 s: over h2 with GOAWAY(NO_ERROR), and a user thinking 1.5 s goes on
/// without an error.
#[test]
fn caddy_keeps_connections_over_h1_h2_h3_and_closes_idle_ones() {
    let (tls, clear) = (free_port(), free_port());
    let Some(_caddy) = caddy(tls, clear) else {
        return;
    };
    let https = format!("https://127.0.0.1:{tls}/index.html --insecure");
    let http = format!("http://127.0.0.1:{clear}/index.html");
    let users = "--users 2 --requests-per-user 25 --timeout 5";
    for (what, args) in [
        ("caddy h1 TLS", format!("{https} {users}")),
        ("caddy h1", format!("{http} {users}")),
        (
            "caddy h2",
            format!("{https} --http2 --max-concurrent-streams 8 {users}"),
        ),
        (
            "caddy h2c",
            format!("{http} --http2 --max-concurrent-streams 8 {users}"),
        ),
        (
            "caddy h3",
            format!("{https} --http3 --max-concurrent-streams 8 {users}"),
        ),
    ] {
        let r = load(&args);
        exact(&r, what, 50, 2);
        if r.http2.is_some() {
            goaways(&r, what, 0);
        }
    }
    let think = "--users 2 --requests-per-user 2 --think 1500ms --timeout 5";
    let r = load(&format!("{https} --http2 {think}"));
    exact(&r, "caddy h2 idle close", 4, 4);
    goaways(&r, "caddy h2 idle close", 2);
    let r = load(&format!("{http} {think}"));
    exact(&r, "caddy h1 idle close", 4, 4);
    // Caddy's idle timeout is its TCP servers': HTTP/3 keeps the QUIC
    // connection (quic-go's and quinn's idle timeouts are 30 s), and the
    // client counts no idle timeout.
    let r = load(&format!("{https} --http3 {think}"));
    exact(&r, "caddy h3 after 1.5 s idle", 4, 2);
    let h = r.http3.as_ref().expect("http3 block");
    assert_eq!(h.errors.idle_timeout, 0, "{h:?}");
    assert!(h.errors.closed_by_peer.is_empty(), "{h:?}");
}
