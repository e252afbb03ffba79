//! The HTTP/2 driver's connections: opening (TCP, TLS with ALPN h2, the
//! HTTP/2 preface) within `--timeout` and the setup cap, closing, and the
//! byte and frame counts of their transport. Statistics go to the worker's
//! [`Tally`]; the streams themselves are `http2.rs`'s.

use std::cell::{Cell, RefCell, RefMut};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};

use crate::clock::us;
use crate::frametap::{reason_index, FrameTap};
use crate::spec::Http2Spec;
use crate::stats::{rec, ErrClass, WorkerStats};
use crate::streams::with_deadline;
use crate::sys;
use crate::worker::{LocalAddrs, Tally, WorkerCtx};

/// One HTTP/2 connection in use by a session (shared with its streams).
pub(crate) struct Conn {
    pub send: h2::client::SendRequest<Bytes>,
    tap: Tap,
    pub driver: tokio::task::JoinHandle<std::result::Result<(), h2::Error>>,
    start: Instant,
    pub measured: bool,
    in_setup: Cell<bool>,
    /// Bytes already counted from the tap.
    counted: Cell<(u64, u64)>,
    pub replies: Cell<u64>,
}

type Opened = (
    h2::client::SendRequest<Bytes>,
    Tap,
    tokio::task::JoinHandle<std::result::Result<(), h2::Error>>,
);

/// The worker's connections and the statistics they share with its streams.
pub(crate) struct Conns<'a> {
    ctx: &'a WorkerCtx<'a>,
    h2: &'a Http2Spec,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    timeout: Option<Duration>,
    win: Instant,
    tally: RefCell<Tally>,
    pub open_conns: Cell<u64>,
    /// Connections in setup (the open-loop arrivals' cap).
    pub setup_now: Cell<u64>,
    /// Woken when a connection leaves setup.
    pub setup_freed: tokio::sync::Notify,
    local: RefCell<LocalAddrs>,
}

impl<'a> Conns<'a> {
    pub fn new(ctx: &'a WorkerCtx<'a>, h2: &'a Http2Spec, tally: Tally, win: Instant) -> Conns<'a> {
        let tls = ctx.tls.map(|c| {
            let mut cfg = (*c.for_worker()).clone();
            // h2 first; http/1.1 too, so a server without h2 says what it chose.
            cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            (
                tokio_rustls::TlsConnector::from(Arc::new(cfg)),
                c.name.clone(),
            )
        });
        Conns {
            ctx,
            h2,
            tls,
            timeout: ctx.timeout(),
            win,
            tally: RefCell::new(tally),
            open_conns: Cell::new(0),
            setup_now: Cell::new(0),
            setup_freed: tokio::sync::Notify::new(),
            local: RefCell::new(LocalAddrs::new(ctx.thread)),
        }
    }

    /// The worker's statistics (never held across an await).
    pub fn tally(&self) -> RefMut<'_, Tally> {
        self.tally.borrow_mut()
    }

    /// The statistics, at the end of the run.
    pub fn into_tally(self) -> Tally {
        self.tally.into_inner()
    }

    /// The connection has left setup (served, or gone).
    pub fn setup_done(&self, c: &Conn) {
        if c.in_setup.replace(false) {
            self.setup_now.set(self.setup_now.get().saturating_sub(1));
            self.setup_freed.notify_one();
        }
    }

    /// Opens a connection: TCP, TLS (ALPN h2), the HTTP/2 preface. On
    /// failure the error is counted here and its class returned.
    pub async fn connect(&self, measured: bool) -> std::result::Result<Conn, ErrClass> {
        let now = Instant::now();
        self.tally().connection(measured, now, self.ctx.t0);
        self.setup_now.set(self.setup_now.get() + 1);
        let guard = SetupGuard(self);
        let r = self.open(measured, now).await;
        match r {
            Ok((send, tap, driver)) => {
                std::mem::forget(guard);
                let open = self.open_conns.get() + 1;
                self.open_conns.set(open);
                if now >= self.win {
                    let mut t = self.tally();
                    t.st.max_open = t.st.max_open.max(open);
                }
                Ok(Conn {
                    send,
                    tap,
                    driver,
                    start: now,
                    measured,
                    in_setup: Cell::new(true),
                    counted: Cell::new((0, 0)),
                    replies: Cell::new(0),
                })
            }
            Err(class) => {
                drop(guard);
                self.tally().error(measured, class);
                Err(class)
            }
        }
    }

    async fn open(&self, measured: bool, start: Instant) -> std::result::Result<Opened, ErrClass> {
        let spec = self.ctx.spec;
        let addr: SocketAddr = self.ctx.addr;
        let deadline = self.timeout.map(|t| start + t);
        let sock = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| ErrClass::from_io(&e))?;
        if let Some(n) = spec.send_buffer {
            let _ = sock.set_send_buffer_size(n.min(u32::MAX as usize) as u32);
        }
        if let Some(n) = spec.recv_buffer {
            let _ = sock.set_recv_buffer_size(n.min(u32::MAX as usize) as u32);
        }
        let local = self.local.borrow_mut().next(self.ctx.local_addrs);
        if let Some(ip) = local {
            let _ = sys::set_bind_no_port(sock.as_raw_fd());
            sock.bind(SocketAddr::new(ip, 0))
                .map_err(|e| ErrClass::from_io(&e))?;
        }
        let stream = with_deadline(deadline, sock.connect(addr))
            .await
            .ok_or(ErrClass::ClientTimo)?
            .map_err(|e| ErrClass::from_io(&e))?;
        let _ = stream.set_nodelay(true);
        let connected = Instant::now();
        rec(
            &mut self.tally().of(measured).connect,
            us(connected.saturating_duration_since(start)),
        );
        let io = match &self.tls {
            None => Io::Plain(stream),
            Some((connector, name)) => {
                let hs = connector.connect(name.clone(), stream);
                let r = with_deadline(deadline, hs).await;
                let tls = self.handshaken(r, measured, connected)?;
                Io::Tls(Box::new(tls))
            }
        };
        let tap: Tap = Arc::new(Mutex::new(TapState {
            sent: 0,
            recv: 0,
            tap: FrameTap::new(),
        }));
        let io = Tapped {
            io,
            tap: tap.clone(),
        };
        let mut b = h2::client::Builder::new();
        b.initial_window_size(self.h2.stream_window)
            .initial_connection_window_size(self.h2.conn_window)
            .max_concurrent_streams(100)
            .enable_push(false);
        let hs = with_deadline(deadline, b.handshake::<_, Bytes>(io)).await;
        let (send, conn) = match hs {
            None => return Err(ErrClass::ClientTimo),
            Some(Err(e)) => return Err(h2_class(&e)),
            Some(Ok(x)) => x,
        };
        let driver = tokio::spawn(conn);
        Ok((send, tap, driver))
    }

    /// The TLS handshake's outcome (None: timed out): recorded, and the
    /// stream when it negotiated h2.
    fn handshaken(
        &self,
        r: Option<io::Result<tokio_rustls::client::TlsStream<TcpStream>>>,
        measured: bool,
        connected: Instant,
    ) -> std::result::Result<tokio_rustls::client::TlsStream<TcpStream>, ErrClass> {
        let mut a = self.tally();
        let st = a.of(measured);
        let tls = match r {
            None => {
                st.tls
                    .failed(|| "the TLS handshake did not complete within --timeout".into());
                return Err(ErrClass::ClientTimo);
            }
            Some(Err(e)) => return Err(tls_failed(st, &e)),
            Some(Ok(t)) => t,
        };
        let now = Instant::now();
        let c = tls.get_ref().1;
        let t = &mut st.tls;
        rec(
            &mut t.handshake,
            us(now.saturating_duration_since(connected)),
        );
        if c.handshake_kind() == Some(HandshakeKind::Resumed) {
            t.resumed += 1;
        } else {
            t.full += 1;
        }
        if let Some(v) = c.protocol_version().and_then(|v| v.as_str()) {
            *t.versions.entry(v).or_default() += 1;
        }
        if let Some(s) = c.negotiated_cipher_suite().and_then(|c| c.suite().as_str()) {
            *t.suites.entry(s).or_default() += 1;
        }
        let alpn = c
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        *t.alpn
            .entry(alpn.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        if alpn.as_deref() != Some("h2") {
            st.h2.failed(|| match &alpn {
                Some(p) => format!("server refused h2: ALPN chose {p}"),
                None => "server refused h2: it chose no ALPN protocol (no HTTP/2 over TLS)".into(),
            });
            return Err(ErrClass::Other);
        }
        Ok(tls)
    }

    /// Closes a connection (gracefully: dropping the last handle ends the
    /// h2 connection) and counts what its tap saw. Its streams are gone.
    pub async fn close(&self, conn: Rc<Conn>) {
        self.setup_done(&conn);
        match Rc::try_unwrap(conn) {
            Ok(c) => {
                let Conn {
                    send,
                    tap,
                    mut driver,
                    start,
                    measured,
                    counted,
                    replies,
                    ..
                } = c;
                drop(send);
                if tokio::time::timeout(Duration::from_millis(100), &mut driver)
                    .await
                    .is_err()
                {
                    driver.abort();
                }
                self.closed(&tap, start, measured, counted.get(), replies.get());
            }
            Err(c) => {
                c.driver.abort();
                self.closed(
                    &c.tap,
                    c.start,
                    c.measured,
                    c.counted.get(),
                    c.replies.get(),
                );
            }
        }
    }

    fn closed(&self, tap: &Tap, start: Instant, measured: bool, counted: (u64, u64), replies: u64) {
        let t = lock(tap);
        let (s0, r0) = counted;
        let open = self.open_conns.get().saturating_sub(1);
        self.open_conns.set(open);
        let mut a = self.tally();
        if measured {
            a.part.bytes_in += t.recv - r0;
        }
        let st = a.of(measured);
        st.bytes_sent += t.sent - s0;
        st.bytes_recv += t.recv - r0;
        let c = &t.tap.counts;
        for i in 0..c.rst.len() {
            st.h2.rst[i] += c.rst[i];
        }
        if c.goaway > 0 {
            st.h2.goaway_conns += 1;
            st.h2.goaway_reasons[reason_index(c.goaway_reason)] += 1;
        }
        if c.spoke_h2 {
            st.h2.connections += 1;
        } else if let Some(line) = c.http1_line() {
            st.h2.failed(|| format!("not an HTTP/2 server: got '{line}' (an HTTP/1.x answer to the h2c preface; use TLS with ALPN, or drop --http2)"));
        } else if replies == 0 {
            st.h2
                .failed(|| "the server did not speak HTTP/2 (no SETTINGS frame)".into());
        }
        if replies > 0 {
            rec(
                &mut st.lifetime,
                us(Instant::now().saturating_duration_since(start)),
            );
            st.conns_ok += 1;
        }
    }

    /// Moves the tap's byte counts into the statistics (called as streams
    /// end; `measured`: the stream's).
    pub fn count_bytes(&self, conn: &Conn, measured: bool) {
        let (sent, recv) = {
            let t = lock(&conn.tap);
            (t.sent, t.recv)
        };
        let (s0, r0) = conn.counted.replace((sent, recv));
        let mut a = self.tally();
        if measured {
            a.part.bytes_in += recv - r0;
        }
        let st = a.of(conn.measured);
        st.bytes_sent += sent - s0;
        st.bytes_recv += recv - r0;
    }
}

/// Releases a setup slot when a connection attempt is abandoned or fails.
struct SetupGuard<'w, 'a>(&'w Conns<'a>);

impl Drop for SetupGuard<'_, '_> {
    fn drop(&mut self) {
        let w = self.0;
        w.setup_now.set(w.setup_now.get().saturating_sub(1));
        w.setup_freed.notify_one();
    }
}

/// A failed TLS handshake: recorded (with h2's refusal when the server
/// had no protocol in common), and its error class.
fn tls_failed(st: &mut WorkerStats, e: &io::Error) -> ErrClass {
    let why = tls_error_words(e);
    let rustls_err = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    let class = if rustls_err.is_some() {
        ErrClass::Other
    } else {
        ErrClass::from_io(e)
    };
    if matches!(
        rustls_err,
        Some(rustls::Error::AlertReceived(
            rustls::AlertDescription::NoApplicationProtocol
        ))
    ) {
        st.h2.failed(|| {
            "server refused h2: no ALPN protocol in common (alert no_application_protocol)".into()
        });
    }
    st.tls.failed(|| why);
    class
}

// ---------------------------------------------------------------- transport

/// Byte counts and the frame tap of one connection, shared between the
/// connection's I/O (polled by h2's connection task) and its streams.
#[derive(Debug)]
struct TapState {
    sent: u64,
    recv: u64,
    tap: FrameTap,
}

type Tap = Arc<Mutex<TapState>>;

fn lock(t: &Tap) -> std::sync::MutexGuard<'_, TapState> {
    match t.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Cleartext or TLS under h2, counting HTTP/2 bytes (before encryption, as
/// the HTTP/1.1 path counts HTTP bytes) and tapping frame headers.
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

struct Tapped {
    io: Io,
    tap: Tap,
}

impl AsyncRead for Tapped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = r {
            let got = &buf.filled()[before..];
            if !got.is_empty() {
                let mut t = lock(&self.tap);
                t.recv += got.len() as u64;
                t.tap.feed(got);
            }
        }
        r
    }
}

impl AsyncWrite for Tapped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        if let Poll::Ready(Ok(n)) = r {
            lock(&self.tap).sent += n as u64;
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Error class of a connection-level h2 failure.
fn h2_class(e: &h2::Error) -> ErrClass {
    match e.get_io() {
        Some(io) => ErrClass::from_io(io),
        None => ErrClass::Other,
    }
}

fn tls_error_words(e: &io::Error) -> String {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(r) => crate::tls::describe_error(r),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                "the server closed the connection during the TLS handshake".into()
            }
            _ => format!("TLS handshake failed: {e}"),
        },
    }
}
