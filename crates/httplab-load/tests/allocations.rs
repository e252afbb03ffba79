//! The HTTP/1.1 keep-alive path and the HTTP/2 stream path allocate nothing
//! per request in steady state: two closed-loop runs that differ only in
//! their number of requests make (nearly) the same number of allocations,
//! on both I/O engines.
//!
//! This binary counts every allocation of the process (a counting global
//! allocator); the server is an in-process loopback responder that itself
//! allocates nothing per request (fixed buffers, one static reply), so the
//! difference between the runs is the generator's per-request allocation.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[global_allocator]
static COUNT: httplab_sys::alloc::Counting = httplab_sys::alloc::Counting::new();

/// The count is the process's: the tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// Answers every request head on every connection with [`REPLY`], from a
/// thread per connection, until dropped.
struct Responder {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Responder {
    fn start() -> Responder {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(c) = c else { continue };
                std::thread::spawn(move || serve(c));
            }
        });
        Responder { port, stop }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut c: std::net::TcpStream) {
    let _ = c.set_nodelay(true);
    let mut buf = [0u8; 16 * 1024];
    // Position in "\r\n\r\n" matched so far (heads may span reads).
    let mut state = 0u8;
    loop {
        let n = match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            state = match (state, b) {
                (0 | 2, b'\r') => state + 1,
                (1, b'\n') => 2,
                (3, b'\n') => 4,
                (_, b'\r') => 1,
                _ => 0,
            };
            if state == 4 {
                state = 0;
                if c.write_all(REPLY).is_err() {
                    return;
                }
            }
        }
    }
}

/// An HTTP/2 (h2c) responder that allocates nothing per request: after
/// the client's preface it answers every HEADERS frame with a fixed response
/// head (`:status 200`, a literal `content-length: 5`, no dynamic table) and
/// a DATA frame "hello", and acknowledges the client's SETTINGS.
struct H2Responder {
    port: u16,
}

impl H2Responder {
    fn start() -> H2Responder {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(c) = c else { continue };
                std::thread::spawn(move || serve_h2(c));
            }
        });
        H2Responder { port }
    }
}

fn frame_head(out: &mut [u8], len: usize, kind: u8, flags: u8, id: u32) {
    out[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
    out[3] = kind;
    out[4] = flags;
    out[5..9].copy_from_slice(&id.to_be_bytes());
}

fn serve_h2(mut c: std::net::TcpStream) {
    let _ = c.set_nodelay(true);
    let mut buf = [0u8; 64 * 1024];
    let mut have = 0usize;
    // The preface, then our (empty) SETTINGS.
    let mut preface = [0u8; 24];
    if c.read_exact(&mut preface).is_err() {
        return;
    }
    let mut settings = [0u8; 9];
    frame_head(&mut settings, 0, 0x4, 0, 0);
    if c.write_all(&settings).is_err() {
        return;
    }
    let head = [0x88u8, 0x0f, 0x0d, 0x01, b'5'];
    let mut out = [0u8; 64 * 1024];
    loop {
        let n = match c.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        have += n;
        let mut pos = 0;
        let mut w = 0;
        while have - pos >= 9 {
            let f = &buf[pos..have];
            let len = (usize::from(f[0]) << 16) | (usize::from(f[1]) << 8) | usize::from(f[2]);
            if have - pos < 9 + len {
                break;
            }
            let (kind, flags) = (f[3], f[4]);
            let id = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) & 0x7fff_ffff;
            if out.len() - w < 64 {
                if c.write_all(&out[..w]).is_err() {
                    return;
                }
                w = 0;
            }
            match kind {
                // SETTINGS (not an ACK): acknowledge.
                0x4 if flags & 1 == 0 => {
                    frame_head(&mut out[w..], 0, 0x4, 1, 0);
                    w += 9;
                }
                // HEADERS: the response.
                0x1 => {
                    frame_head(&mut out[w..], head.len(), 0x1, 0x4, id);
                    out[w + 9..w + 9 + head.len()].copy_from_slice(&head);
                    w += 9 + head.len();
                    frame_head(&mut out[w..], 5, 0x0, 0x1, id);
                    out[w + 9..w + 14].copy_from_slice(b"hello");
                    w += 14;
                }
                _ => {}
            }
            pos += 9 + len;
        }
        buf.copy_within(pos..have, 0);
        have -= pos;
        if w > 0 && c.write_all(&out[..w]).is_err() {
            return;
        }
    }
}

/// Allocations of one closed-loop run of `users` users making `requests`
/// each (`extra`: more options, such as `--http2`).
fn allocations(port: u16, io: &str, users: u64, requests: u64) -> u64 {
    allocations_with(port, io, users, requests, "")
}

fn allocations_with(port: u16, io: &str, users: u64, requests: u64, extra: &str) -> u64 {
    let spec = httplab_load::parse_args(
        format!(
            "--server 127.0.0.1 --port {port} --uri /x --users {users} --requests-per-user {requests} \
             --io {io} --timeout 10 --sample-interval 3600 --no-progress {extra}"
        )
        .split_whitespace(),
    )
    .expect("valid arguments");
    let before = COUNT.count();
    let r = httplab_load::run(&spec, false).expect("the run completes");
    let after = COUNT.count();
    assert_eq!(r.totals.replies, users * requests, "{:?}", r.errors);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    after - before
}

#[test]
fn keep_alive_requests_allocate_nothing_in_steady_state() {
    let _turn = one_at_a_time();
    let server = Responder::start();
    let mut engines = vec!["epoll"];
    if httplab_load::io_uring_available() {
        engines.push("uring");
    }
    for io in engines {
        // Warm the process (lazy statics, thread-locals) once.
        allocations(server.port, io, 2, 10);
        let short = allocations(server.port, io, 2, 500);
        let long = allocations(server.port, io, 2, 2500);
        let extra = long.saturating_sub(short);
        // 4000 more requests: anything per request would be thousands.
        assert!(
            extra <= 40,
            "--io {io}: {extra} more allocations for 4000 more requests ({short} vs {long})"
        );
    }
}

#[test]
fn http2_streams_allocate_nothing_in_steady_state() {
    let _turn = one_at_a_time();
    let server = H2Responder::start();
    let mut engines = vec!["epoll"];
    if httplab_load::io_uring_available() {
        engines.push("uring");
    }
    for io in engines {
        for streams in [1, 8] {
            let extra = format!("--http2 --max-concurrent-streams {streams}");
            allocations_with(server.port, io, 2, 10, &extra);
            let short = allocations_with(server.port, io, 2, 500, &extra);
            let long = allocations_with(server.port, io, 2, 2500, &extra);
            let more = long.saturating_sub(short);
            assert!(
                more <= 40,
                "--io {io}, {streams} streams: {more} more allocations for 4000 more requests ({short} vs {long})"
            );
        }
    }
}

/// Allocations and replies of an open-loop staged run: two connections
/// (`--stages 1s:2,2s:0`, arrivals at 0 and 0.5 s, the run ending at 3 s) of
/// `calls` keep-alive calls each; every call looks its stage up by its
/// scheduled instant.
fn staged_allocations(port: u16, calls: u64) -> (u64, u64) {
    let spec = httplab_load::parse_args(
        format!(
            "--server 127.0.0.1 --port {port} --uri /x --stages 1s:2,2s:0 --num-calls {calls} \
             --io epoll --timeout 10 --sample-interval 3600 --no-progress"
        )
        .split_whitespace(),
    )
    .expect("valid arguments");
    let before = COUNT.count();
    let r = httplab_load::run(&spec, false).expect("the run completes");
    let after = COUNT.count();
    assert_eq!(r.stages.len(), 2);
    assert_eq!(r.stages[0].replies, r.totals.replies);
    (after - before, r.totals.replies)
}

#[test]
fn staged_requests_allocate_nothing_in_steady_state() {
    let _turn = one_at_a_time();
    let server = Responder::start();
    staged_allocations(server.port, 10);
    let (short, short_replies) = staged_allocations(server.port, 200);
    let (long, long_replies) = staged_allocations(server.port, 1200);
    let more = long_replies.saturating_sub(short_replies);
    // A run cut short by its end would only shrink the difference.
    assert!(more >= 500, "{short_replies} vs {long_replies} replies");
    let extra = long.saturating_sub(short);
    assert!(
        extra <= 40,
        "{extra} more allocations for {more} more staged requests ({short} vs {long})"
    );
}
