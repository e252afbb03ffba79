//! Purpose-built test servers (std::net, one thread per connection) that
//! behave well or badly on demand, and count what they saw.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server answers each request.
#[derive(Debug, Clone)]
pub enum Mode {
    /// 200 with Content-Length and keep-alive.
    Ok(Vec<u8>),
    /// 200 chunked in pieces of the given size.
    Chunked(Vec<u8>, usize),
    /// HTTP/1.0 200 without Content-Length; body ends at close.
    CloseDelimited(Vec<u8>),
    /// Read the request, then reset the connection (RST).
    Reset,
    /// Read the request, never answer.
    Stall,
    /// Answer with bytes that are not HTTP.
    Garbage,
    /// Announce Content-Length 100, send 10 bytes, close.
    ShortBody,
    /// Close right after accepting, before any request.
    CloseAtOnce,
    /// 200 with `Connection: close`, then close.
    OkClose(Vec<u8>),
    /// 200 chunked, a small chunk every 20 ms for at most 60 s: a reply
    /// that keeps streaming (never idle long enough for --timeout).
    EndlessChunked,
    /// `Content-Length: 10` followed by 100 body bytes, then close.
    Overrun,
    /// A status line, then header lines without end (at most 64 MiB).
    EndlessHeaders,
    /// Chunked framing with a chunk size that is not hex.
    BadChunk,
    /// A chunked reply cut inside a chunk, then close.
    CutChunk,
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    /// Most complete requests found in one read (pipelining depth seen).
    pub max_batch: AtomicU64,
    pub paths: Mutex<Vec<String>>,
    pub bodies: Mutex<Vec<Vec<u8>>>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    /// When requests reach this count, set `trigger`.
    _holder: Arc<Mutex<Vec<TcpStream>>>,
}

impl TestServer {
    pub fn start(mode: Mode) -> TestServer {
        Self::start_with_trigger(mode, None)
    }

    /// Like `start`; sets `flag` once `n` requests have been seen.
    pub fn start_with_trigger(mode: Mode, trigger: Option<(u64, Arc<AtomicBool>)>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind test server");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let holder = Arc::new(Mutex::new(Vec::new()));
        {
            let seen = seen.clone();
            let stop = stop.clone();
            let holder = holder.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    seen.connections.fetch_add(1, Ordering::SeqCst);
                    let mode = mode.clone();
                    let seen = seen.clone();
                    let holder = holder.clone();
                    let trigger = trigger.clone();
                    std::thread::spawn(move || serve(conn, mode, seen, holder, trigger));
                }
            });
        }
        TestServer {
            addr,
            seen,
            stop,
            _holder: holder,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn requests(&self) -> u64 {
        self.seen.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Ok(mut h) = self._holder.lock() {
            h.clear();
        }
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> usize {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    text.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn serve(
    mut conn: TcpStream,
    mode: Mode,
    seen: Arc<Seen>,
    holder: Arc<Mutex<Vec<TcpStream>>>,
    trigger: Option<(u64, Arc<AtomicBool>)>,
) {
    if matches!(mode, Mode::CloseAtOnce) {
        return;
    }
    let _ = conn.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = [0u8; 65536];
    loop {
        let n = match conn.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&tmp[..n]);
        let mut batch = 0u64;
        let mut out: Vec<u8> = Vec::new();
        while let Some(end) = find_head_end(&buf) {
            let cl = content_length(&buf[..end]);
            if buf.len() < end + cl {
                break;
            }
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let body = buf[end..end + cl].to_vec();
            buf.drain(..end + cl);
            batch += 1;
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let is_head = head.starts_with("HEAD ");
            if let Ok(mut p) = seen.paths.lock() {
                p.push(path);
            }
            if !body.is_empty() {
                if let Ok(mut b) = seen.bodies.lock() {
                    b.push(body);
                }
            }
            let total = seen.requests.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some((n, flag)) = &trigger {
                if total >= *n {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            match &mode {
                Mode::Ok(b) => {
                    out.extend_from_slice(
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", b.len())
                            .as_bytes(),
                    );
                    if !is_head {
                        out.extend_from_slice(b);
                    }
                }
                Mode::OkClose(b) => {
                    out.extend_from_slice(
                        format!(
                            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                            b.len()
                        )
                        .as_bytes(),
                    );
                    out.extend_from_slice(b);
                    let _ = conn.write_all(&out);
                    return;
                }
                Mode::Chunked(b, piece) => {
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                    for c in b.chunks((*piece).max(1)) {
                        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                        out.extend_from_slice(c);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                Mode::CloseDelimited(b) => {
                    out.extend_from_slice(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n");
                    out.extend_from_slice(b);
                    let _ = conn.write_all(&out);
                    return;
                }
                Mode::Reset => {
                    let s = socket2::SockRef::from(&conn);
                    let _ = s.set_linger(Some(Duration::ZERO));
                    return;
                }
                Mode::Stall => {
                    // Keep the socket open until the server is dropped.
                    if let Ok(c) = conn.try_clone() {
                        if let Ok(mut h) = holder.lock() {
                            h.push(c);
                        }
                    }
                    return;
                }
                Mode::Garbage => {
                    let _ = conn.write_all(b"THIS IS NOT HTTP AT ALL\r\n\r\n");
                    return;
                }
                Mode::ShortBody => {
                    let _ =
                        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
                    return;
                }
                Mode::CloseAtOnce => return,
                Mode::EndlessChunked => {
                    let _ =
                        conn.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                    // Bounded: 3 000 chunks of 20 ms; ends when the client goes.
                    for _ in 0..3000 {
                        if conn.write_all(b"5\r\nhello\r\n").is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return;
                }
                Mode::Overrun => {
                    let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".to_vec();
                    r.extend_from_slice(&[b'x'; 100]);
                    let _ = conn.write_all(&r);
                    return;
                }
                Mode::EndlessHeaders => {
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n");
                    let line = [b"X-Endless: ".as_slice(), &[b'a'; 1000], b"\r\n"].concat();
                    for _ in 0..64 * 1024 {
                        if conn.write_all(&line).is_err() {
                            return;
                        }
                    }
                    return;
                }
                Mode::BadChunk => {
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                    );
                    return;
                }
                Mode::CutChunk => {
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly-part",
                    );
                    return;
                }
            }
        }
        seen.max_batch.fetch_max(batch, Ordering::SeqCst);
        if !out.is_empty() && conn.write_all(&out).is_err() {
            return;
        }
    }
}

/// Runs `httplab load` arguments in process against `addr` and returns the result.
/// `HTTPLAB_LOAD_IO=epoll|uring|auto` adds `--io` to every run (the suite runs
/// on each I/O engine: `auto`, the default, is io_uring where the kernel has it).
pub fn load(args: &str) -> httplab_model::RunResult {
    let io = std::env::var("HTTPLAB_LOAD_IO").ok();
    let io_args = io.iter().flat_map(|v| ["--io", v.as_str()]);
    let spec =
        httplab_load::parse_args(args.split_whitespace().chain(io_args)).expect("parse args");
    httplab_load::run(&spec, false).expect("run")
}

/// True under CI (interop peers must then exist).
pub fn ci() -> bool {
    httplab_skip::under_ci()
}

/// Finds `name` on PATH (and in /usr/sbin, /usr/bin).
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .map(std::path::PathBuf::from)
        .chain(["/usr/sbin".into(), "/usr/bin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Stops a peer server the test started (nginx, h2o ...) and its children:
/// SIGTERM to the master (nginx's master then stops its workers), a bounded
/// wait for its exit, then SIGKILL. A SIGKILL alone would orphan nginx's workers.
pub fn stop_peer(child: &mut std::process::Child) {
    // A child this process spawned and has not reaped.
    let _ = httplab_sys::process::signal(child.id() as libc::pid_t, libc::SIGTERM);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether the tests run as root (peers then need `user root` to read the test's files).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        .unwrap_or(false)
}

/// Waits (bounded: 10 s) until something accepts connections on 127.0.0.1:`port`.
pub fn wait_listening(port: u16, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `conf` to `dir`/nginx.conf and starts nginx on it in the foreground
/// (stop it with [`stop_peer`]).
pub fn spawn_nginx(
    bin: &std::path::Path,
    dir: &std::path::Path,
    conf: &str,
) -> std::process::Child {
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).expect("write nginx.conf");
    std::process::Command::new(bin)
        .arg("-c")
        .arg(&conf_path)
        .arg("-p")
        .arg(dir)
        .arg("-g")
        .arg("daemon off;")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start nginx")
}
