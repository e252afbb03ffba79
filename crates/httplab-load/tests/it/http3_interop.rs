//! `httplab load --http3` against real HTTP/3 servers: Caddy (quic-go) and
//! ngtcp2's example server (`gtlsserver`, nghttp3 over ngtcp2 with GnuTLS),
//! with reply counts equal to those of ngtcp2's reference client
//! (`gtlsclient`) on the same server. A missing peer makes a test fail under
//! CI=true and skip (with the reason printed) otherwise.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{ci, which};
use httplab_model::RunResult;

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

/// A work directory with a self-signed certificate (for 127.0.0.1) and a page.
struct Work {
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    www: PathBuf,
}

const PAGE_LEN: usize = 4148;

fn workdir() -> Work {
    let dir = tempfile::tempdir().expect("tempdir");
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).expect("www");
    let page: Vec<u8> = (0..PAGE_LEN).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(www.join("index.html"), page).expect("page");
    Work {
        dir,
        cert,
        key,
        www,
    }
}

/// A port free for both TCP and UDP on 127.0.0.1 (bound, then released).
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

/// Whether a UDP socket is bound to 127.0.0.1:`port` (or any address) in
/// this network namespace.
fn udp_bound(port: u16) -> bool {
    let want = format!(":{port:04X} ");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").ends_with(&want))
            })
    })
}

/// A peer process in its own process group, stopped with its children
/// (SIGTERM to the group, then SIGKILL) when dropped.
struct Peer {
    child: Child,
    name: &'static str,
}

impl Peer {
    fn spawn(name: &'static str, cmd: &mut Command) -> Peer {
        use std::os::unix::process::CommandExt;
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Peer { child, name }
    }

    /// Waits (bounded: 10 s) until the peer has bound UDP `port`.
    fn wait_udp(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !udp_bound(port) {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("{} exited before listening: {st}", self.name);
            }
            assert!(Instant::now() < deadline, "{} did not start", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        let _ = httplab_sys::process::signal_group(pgid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = httplab_sys::process::signal_group(pgid, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Replies ngtcp2's reference client got for `n` requests of `url` (its
/// `:status: 200` header lines).
fn reference_replies(client: &Path, port: u16, url: &str, n: u32) -> u64 {
    let out = Command::new("timeout")
        .arg("20")
        .arg(client)
        .args([
            "--no-quic-dump",
            "--no-http-dump",
            "--exit-on-all-streams-close",
        ])
        .arg("-n")
        .arg(n.to_string())
        .arg("127.0.0.1")
        .arg(port.to_string())
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("run gtlsclient");
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines()
        .filter(|l| l.contains("[:status: 200]"))
        .count() as u64
}

fn load(args: &str) -> RunResult {
    let spec = httplab_load::parse_args(args.split_whitespace()).expect("parse args");
    httplab_load::run(&spec, false).expect("run")
}

fn check(r: &RunResult, replies: u64) {
    assert_eq!(r.totals.replies, replies, "{:?}", r.errors);
    assert_eq!(r.reply.status.success, replies);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    assert_eq!(r.accuracy.bytes_received, replies * PAGE_LEN as u64);
    let h = r.http3.as_ref().expect("http3 block");
    assert_eq!(h.streams_completed, replies);
    assert_eq!(h.failed_connections, 0, "{h:?}");
}

#[test]
fn caddy_serves_http3_with_the_reference_clients_count() {
    let Some(caddy) = need("caddy") else { return };
    let Some(client) = need("gtlsclient") else {
        return;
    };
    let w = workdir();
    let port = free_port();
    let http_port = free_port();
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\thttp_port {http_port}\n\thttps_port {port}\n}}\nhttps://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\ttls {} {}\n\troot * {}\n\tfile_server\n}}\n",
        w.cert.display(),
        w.key.display(),
        w.www.display()
    );
    let file = w.dir.path().join("Caddyfile");
    std::fs::write(&file, conf).expect("Caddyfile");
    let mut peer = Peer::spawn(
        "caddy",
        Command::new(caddy)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&file)
            .env("HOME", w.dir.path())
            .env("XDG_DATA_HOME", w.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", w.dir.path().join("config")),
    );
    peer.wait_udp(port);
    let url = format!("https://127.0.0.1:{port}/index.html");
    let reference = reference_replies(&client, port, &url, 10);
    assert_eq!(reference, 10, "the reference client against caddy");
    let r = load(&format!(
        "{url} --http3 --cacert {} --num-conns 2 --num-calls 5 --timeout 10",
        w.cert.display()
    ));
    check(&r, reference);
    let r = load(&format!(
        "{url} --http3 --insecure --users 2 --requests-per-user 5 --max-concurrent-streams 4 --timeout 10"
    ));
    check(&r, reference);
    drop(peer);
}

#[test]
fn ngtcp2_server_serves_http3_with_the_reference_clients_count() {
    let Some(server) = need("gtlsserver") else {
        return;
    };
    let Some(client) = need("gtlsclient") else {
        return;
    };
    let w = workdir();
    let port = free_port();
    let mut peer = Peer::spawn(
        "gtlsserver",
        Command::new(server)
            .arg("-q")
            .arg("-d")
            .arg(&w.www)
            .arg("127.0.0.1")
            .arg(port.to_string())
            .arg(&w.key)
            .arg(&w.cert),
    );
    peer.wait_udp(port);
    let url = format!("https://127.0.0.1:{port}/index.html");
    let reference = reference_replies(&client, port, &url, 10);
    assert_eq!(reference, 10, "the reference client against gtlsserver");
    let r = load(&format!(
        "{url} --http3 --cacert {} --rate 20 --num-conns 2 --num-calls 5 --timeout 10",
        w.cert.display()
    ));
    check(&r, reference);
    let r = load(&format!(
        "{url} --http3 --insecure --num-conns 1 --num-calls 10 --max-concurrent-streams 5 --timeout 10"
    ));
    check(&r, reference);
    drop(peer);
}
