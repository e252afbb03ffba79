//! The `GET /metrics` endpoint: one std `TcpListener` on its own thread.
//!
//! Hand-written on std rather than an HTTP framework: it answers one kind
//! of request, one at a time, closing each connection, and a framework
//! would bring an async runtime (or a thread pool) into the load generator
//! and the server for that. The request head is parsed by httparse; a
//! request is bounded in size ([`MAX_REQUEST_BYTES`]) and in time
//! ([`IO_TIMEOUT`]), so a slow or hostile scraper delays only other scrapes,
//! never the load or the server, which do not wait for this thread.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::registry::Registry;

/// Largest request head read; a longer one is answered 400.
pub const MAX_REQUEST_BYTES: usize = 8192;

/// Longest wait for a request's bytes, and for the answer to be taken.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// The answer's media type (the OpenMetrics text format, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A running endpoint; dropping it stops and joins its thread.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `addr` and serves `registry` on a new thread.
    pub fn start(addr: SocketAddr, registry: Registry) -> std::io::Result<Endpoint> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            std::io::Error::new(e.kind(), format!("--prometheus {addr}: cannot bind: {e}"))
        })?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("httplab-metrics".into())
            .spawn(move || accept_loop(&listener, &registry, &flag))?;
        Ok(Endpoint {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address (the chosen port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let woke = TcpStream::connect_timeout(&wake, IO_TIMEOUT).is_ok();
        if let Some(t) = self.thread.take() {
            if woke {
                let _ = t.join();
            }
        }
    }
}

fn accept_loop(listener: &TcpListener, registry: &Registry, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        if let Ok(s) = conn {
            let _ = answer(s, registry);
        }
    }
}

/// What a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Metrics,
    NotFound,
    Bad,
}

/// Reads one request head (bounded) and classifies it.
fn read_request(s: &mut TcpStream) -> std::io::Result<Option<Ask>> {
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut len = 0;
    loop {
        let n = match s.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(e) if len > 0 && is_timeout(&e) => return Ok(Some(Ask::Bad)),
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok((len > 0).then_some(Ask::Bad));
        }
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..len]) {
            Ok(httparse::Status::Complete(_)) => return Ok(Some(classify(&req))),
            Ok(httparse::Status::Partial) if len < buf.len() => continue,
            Ok(httparse::Status::Partial) | Err(_) => return Ok(Some(Ask::Bad)),
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn classify(req: &httparse::Request<'_, '_>) -> Ask {
    let path = req.path.unwrap_or("");
    let target = path.split('?').next().unwrap_or("");
    if req.method == Some("GET") && target == "/metrics" {
        Ask::Metrics
    } else {
        Ask::NotFound
    }
}

fn answer(mut s: TcpStream, registry: &Registry) -> std::io::Result<()> {
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let Some(ask) = read_request(&mut s)? else {
        return Ok(());
    };
    let (status, ctype, body) = match ask {
        Ask::Metrics => {
            let mut text = String::new();
            match prometheus_client::encoding::text::encode(&mut text, registry) {
                Ok(()) => ("200 OK", CONTENT_TYPE, text),
                Err(_) => (
                    "500 Internal Server Error",
                    "text/plain",
                    "cannot encode metrics\n".into(),
                ),
            }
        }
        Ask::NotFound => ("404 Not Found", "text/plain", "only GET /metrics\n".into()),
        Ask::Bad => ("400 Bad Request", "text/plain", "bad request\n".into()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body.as_bytes())?;
    s.flush()?;
    linger(&mut s)
}

/// Lingering close: bytes the request left unread (an oversized head) would
/// make the kernel reset the connection and lose the answer, so read and
/// drop a bounded amount, for a bounded time, after the answer.
fn linger(s: &mut TcpStream) -> std::io::Result<()> {
    s.shutdown(std::net::Shutdown::Write)?;
    s.set_read_timeout(Some(LINGER))?;
    let mut sink = [0u8; 4096];
    let mut left = 16 * MAX_REQUEST_BYTES;
    while left > 0 {
        match s.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

/// Longest lingering close.
const LINGER: Duration = Duration::from_millis(200);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LoadLive;

    fn exchange(addr: SocketAddr, req: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // An oversized request may be cut short by the answer: keep what came.
        let _ = s.write_all(req);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn endpoint() -> Endpoint {
        let mut r = Registry::default();
        LoadLive::new().register(&mut r);
        Endpoint::start("127.0.0.1:0".parse().unwrap(), r).unwrap()
    }

    #[test]
    fn answers_metrics_and_nothing_else() {
        let e = endpoint();
        let a = e.local_addr();
        let ok = exchange(a, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("httplab_load_replies_total 0\n"), "{ok}");
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        let q = exchange(a, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(q.starts_with("HTTP/1.1 200 OK\r\n"), "{q}");
        for req in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            b"GET /metricsx HTTP/1.1\r\n\r\n",
        ] {
            let r = exchange(a, req);
            assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
        }
    }

    #[test]
    fn malformed_and_oversized_requests_get_400_and_the_endpoint_goes_on() {
        let e = endpoint();
        let a = e.local_addr();
        let r = exchange(a, b"\x00\x01garbage\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400 "), "{r}");
        let r = exchange(a, b"GET /metrics HTTP/1.1\r\nX: y");
        assert!(r.starts_with("HTTP/1.1 400 "), "{r}");
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_REQUEST_BYTES * 2));
        let r = exchange(a, &big);
        assert!(r.starts_with("HTTP/1.1 400 "), "{r}");
        let ok = exchange(a, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
    }

    #[test]
    fn port_zero_binds_a_port_and_drop_stops_the_thread() {
        let e = endpoint();
        assert_ne!(e.local_addr().port(), 0);
        assert!(e.url().ends_with("/metrics"));
        drop(e);
    }
}
