//! The HTTP/1.1 keep-alive path allocates nothing per request in steady
//! state: two closed-loop runs that differ only in their number of requests
//! make (nearly) the same number of allocations, on both I/O engines.
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

/// Allocations of one closed-loop run of `users` users making `requests` each.
fn allocations(port: u16, io: &str, users: u64, requests: u64) -> u64 {
    let spec = httplab_load::parse_args(
        format!(
            "--server 127.0.0.1 --port {port} --uri /x --users {users} --requests-per-user {requests} \
             --io {io} --timeout 10 --sample-interval 3600 --no-progress"
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
