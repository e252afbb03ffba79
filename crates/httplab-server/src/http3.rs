//! HTTP/3 (`--http3`): QUIC on UDP at the TLS listener's address and port,
//! served by quinn's async engine (with `h3` and `h3-quinn`) on a
//! current-thread tokio runtime in a thread of its own, **whatever
//! `--model`** serves TCP.
//!
//! **One handler.** A request's decoded field list (QPACK is `h3`'s) is
//! checked by `httplab-wire`'s `h2::request` rules — HTTP/3's are the same
//! (RFC 9114 §4.3) — into the typed `Request` every protocol shares, and
//! answered by [`Handler::respond`] into an [`OutQueue`] in the HTTP/1.1
//! layout, as `h2session` does: the head becomes the HTTP/3 response
//! fields (connection-specific fields dropped), the body pieces become DATA
//! — memory bytes copied once into `Bytes`, file ranges read in
//! [`FILE_CHUNK`] chunks. Statuses, ranges, conditionals, precompressed
//! variants, `Cache-Control`, listings and confinement are the handler's,
//! so they answer as over HTTP/1.1. The engine's handler counts requests in
//! the server's statistics and writes access-log lines with the protocol
//! `HTTP/3`; each QUIC connection counts as one accepted connection.
//!
//! **Settings.** ALPN `h3`, TLS 1.3 (QUIC's); at most [`MAX_STREAMS`]
//! concurrent request streams per connection; a request's field section is
//! bounded by `--max-header-bytes`' limit (`h3` answers a larger one with
//! 431 itself); the QUIC idle timeout is the server's `--idle-timeout`;
//! UDP socket buffers of [`UDP_BUFFER`] each way (the kernel may clamp
//! them to `wmem_max`/`rmem_max`: [`UdpFacts`] says what it granted).
//! GSO and GRO are quinn-udp's, used whenever the kernel offers them
//! ([`UdpFacts`] reports the segment counts it found). Connection
//! migration is allowed (quinn's default).
//!
//! **Address validation.** quinn never sends more than three times what an
//! unvalidated address sent (the amplification limit of RFC 9000 §8.1).
//! Beyond that, a Retry costs every client a round trip, so it is asked
//! only under pressure: when more than [`RETRY_ABOVE`] handshakes are in
//! progress, a new connection from an address not yet validated is sent a
//! Retry (its token proves the address); at most [`MAX_INCOMING`]
//! connection attempts wait at once and their buffered data is bounded
//! ([`INCOMING_BUFFER`]).
//!
//! **0-RTT** is accepted: this server has no method with an effect (GET,
//! HEAD and OPTIONS are safe; any other is answered 405 and does nothing),
//! so a replayed early request changes nothing. Requests are answered once
//! the handshake is complete (no 0.5-RTT data).
//!
//! **Shutdown.** [`H3Server::stop`] starts a graceful shutdown: no new
//! connection is admitted, every connection sends an HTTP/3 GOAWAY, its
//! requests in flight are answered, and it is closed with `H3_NO_ERROR`;
//! what is left at the server's shutdown timeout is closed then.

use std::cell::{Cell, RefCell};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::{Bytes, BytesMut};
use h3::error::Code;
use httplab_wire::h2::request::RequestFields;
use httplab_wire::request::{RequestError, Version};
use quinn::VarInt;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::handler::{Answer, ConnHeader, Handler};
use crate::out::{OutQueue, Piece};

/// Requested UDP socket buffer size, each way.
pub const UDP_BUFFER: usize = 4 << 20;
/// Concurrent request streams a client may open on one connection.
pub const MAX_STREAMS: u32 = 100;
/// Concurrent unidirectional streams a client may open (HTTP/3 needs three:
/// control, QPACK encoder and decoder; a few more for extensions it may
/// send, which are read and dropped).
const MAX_UNI_STREAMS: u32 = 8;
/// Handshakes in progress beyond which a new connection from an address
/// not yet validated gets a Retry.
pub const RETRY_ABOVE: usize = 256;
/// Connection attempts waiting to be accepted at once (quinn's limit;
/// beyond it new ones are refused).
pub const MAX_INCOMING: usize = 4096;
/// Data buffered for connection attempts not yet accepted, in total.
pub const INCOMING_BUFFER: u64 = 8 << 20;
/// Bytes of a file read and sent at a time.
pub const FILE_CHUNK: usize = 128 << 10;
/// The HTTP/3 error code of a graceful close.
const H3_NO_ERROR: u32 = 0x100;

/// What the kernel and quinn-udp granted the UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFacts {
    /// SO_SNDBUF as read back (Linux reports twice what was granted: 8 MiB
    /// for the 4 MiB asked).
    pub send_buffer: usize,
    /// SO_RCVBUF as read back.
    pub recv_buffer: usize,
    /// Datagrams quinn-udp sends in one system call (GSO; 1 = none).
    pub gso_segments: usize,
    /// Datagrams the kernel may coalesce into one receive (GRO; 1 = none).
    pub gro_segments: usize,
}

impl UdpFacts {
    /// One line for the start-up message.
    pub fn line(&self) -> String {
        // Linux reads back twice the size it granted.
        let clamped = if self.send_buffer < 2 * UDP_BUFFER || self.recv_buffer < 2 * UDP_BUFFER {
            " (clamped by the kernel: raise net.core.wmem_max/rmem_max)"
        } else {
            ""
        };
        format!(
            "UDP buffers {} KiB send, {} KiB receive{clamped}, GSO {} segments, GRO {} segments",
            self.send_buffer >> 10,
            self.recv_buffer >> 10,
            self.gso_segments,
            self.gro_segments
        )
    }
}

/// The `Alt-Svc` field line announcing HTTP/3 on `port`.
pub fn alt_svc(port: u16) -> Arc<[u8]> {
    format!("Alt-Svc: h3=\":{port}\"; ma=86400\r\n")
        .into_bytes()
        .into()
}

/// Binds the UDP socket of `listen` with its buffers. With port 0 the
/// kernel picks a UDP port that is also free for TCP (a few tries), so the
/// TCP listener can take the same number. Returns the address bound.
pub fn bind(listen: SocketAddr) -> anyhow::Result<(std::net::UdpSocket, SocketAddr)> {
    if listen.port() != 0 {
        let s = udp_socket(listen).with_context(|| format!("--http3: cannot bind udp/{listen}"))?;
        return Ok((s, listen));
    }
    for _ in 0..16 {
        let s = udp_socket(listen).with_context(|| format!("--http3: cannot bind udp/{listen}"))?;
        let at = s.local_addr()?;
        let probe = Socket::new(Domain::for_address(at), Type::STREAM, Some(Protocol::TCP))?;
        probe.set_reuse_address(true)?;
        if probe.bind(&at.into()).is_ok() {
            return Ok((s, at));
        }
    }
    anyhow::bail!("--http3: found no port free for both UDP and TCP on {listen}")
}

fn udp_socket(at: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::for_address(at), Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: the kernel clamps to its maxima ([`UdpFacts`] tells).
    let _ = s.set_send_buffer_size(UDP_BUFFER);
    let _ = s.set_recv_buffer_size(UDP_BUFFER);
    s.bind(&at.into())?;
    Ok(s.into())
}

fn facts(s: &std::net::UdpSocket) -> UdpFacts {
    let sock = socket2::SockRef::from(s);
    let state = quinn::udp::UdpSocketState::new(s.into()).ok();
    UdpFacts {
        send_buffer: sock.send_buffer_size().unwrap_or(0),
        recv_buffer: sock.recv_buffer_size().unwrap_or(0),
        gso_segments: state.as_ref().map_or(1, |s| s.max_gso_segments()),
        gro_segments: state.as_ref().map_or(1, |s| s.gro_segments()),
    }
}

/// quinn's endpoint configuration (connection IDs, reset keys, supported
/// versions, the largest UDP payload): quinn's defaults.
pub(crate) fn endpoint_config() -> quinn::EndpointConfig {
    quinn::EndpointConfig::default()
}

/// quinn's server configuration: the crypto of `tls::load_quic`, the
/// stream and idle limits and the admission bounds of the module docs.
pub(crate) fn server_config(
    cfg: &ServerConfig,
    crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
) -> quinn::ServerConfig {
    let mut tr = quinn::TransportConfig::default();
    tr.max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS))
        .max_idle_timeout(quinn::IdleTimeout::try_from(cfg.idle_timeout).ok());
    let mut sc = quinn::ServerConfig::with_crypto(crypto);
    sc.transport_config(Arc::new(tr))
        .migration(true)
        .max_incoming(MAX_INCOMING)
        .incoming_buffer_size_total(INCOMING_BUFFER);
    sc
}

/// The running HTTP/3 engine.
pub struct H3Server {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    /// What the UDP socket was granted.
    pub facts: UdpFacts,
}

impl H3Server {
    /// Starts the engine's thread on `socket` (from [`bind`]), answering
    /// with `handler` (no `Alt-Svc` of its own).
    pub fn start(
        cfg: Arc<ServerConfig>,
        socket: std::net::UdpSocket,
        crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
        handler: Handler,
    ) -> anyhow::Result<H3Server> {
        let facts = facts(&socket);
        let (stop, stop_rx) = watch::channel(false);
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("httplab-h3".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let local = tokio::task::LocalSet::new();
                let sc = server_config(&cfg, crypto);
                let ep = rt.block_on(async {
                    quinn::Endpoint::new(
                        endpoint_config(),
                        Some(sc),
                        socket,
                        Arc::new(quinn::TokioRuntime),
                    )
                });
                match ep {
                    Ok(ep) => {
                        let _ = tx.send(Ok(()));
                        local.block_on(&rt, serve(ep, handler, cfg, stop_rx));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
            .context("cannot spawn the HTTP/3 thread")?;
        match rx.recv() {
            Ok(Ok(())) => Ok(H3Server {
                stop,
                thread: Some(thread),
                facts,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(anyhow::Error::new(e).context("--http3: cannot start the QUIC endpoint"))
            }
            Err(_) => {
                let _ = thread.join();
                anyhow::bail!("--http3: the QUIC thread ended at start")
            }
        }
    }

    /// Begins the graceful shutdown (see the module docs); returns at once.
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }

    /// Waits for the engine's thread (after [`H3Server::stop`]).
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What every task of the engine shares (one thread: no locks).
struct Shared {
    handler: RefCell<Handler>,
    cfg: Arc<ServerConfig>,
    /// Handshakes in progress.
    handshaking: Cell<usize>,
    stop: watch::Receiver<bool>,
    /// Output queues of finished requests, kept for the next ones (their
    /// buffers keep their capacity).
    outs: RefCell<Vec<OutQueue>>,
    /// The request fields being checked (reused: requests are answered one
    /// at a time, without an await in between).
    fields: RefCell<RequestFields>,
}

/// Queues kept in [`Shared::outs`] at most.
const OUTS_KEPT: usize = 256;

/// A connection's requests in flight (tasks of their own), and the wake-up
/// of the wait for the last of them at shutdown.
#[derive(Default)]
struct InFlight {
    count: Cell<usize>,
    done: tokio::sync::Notify,
}

impl InFlight {
    async fn drained(&self) {
        while self.count.get() > 0 {
            self.done.notified().await;
        }
    }
}

/// Counts one request in flight while it lives.
struct Flying(Rc<InFlight>);

impl Flying {
    fn new(f: &Rc<InFlight>) -> Flying {
        f.count.set(f.count.get() + 1);
        Flying(Rc::clone(f))
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        self.0.count.set(self.0.count.get().saturating_sub(1));
        self.0.done.notify_one();
    }
}

async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The accept loop, then the graceful shutdown within the server's
/// shutdown timeout.
async fn serve(
    ep: quinn::Endpoint,
    handler: Handler,
    cfg: Arc<ServerConfig>,
    stop: watch::Receiver<bool>,
) {
    let shared = Rc::new(Shared {
        handler: RefCell::new(handler),
        cfg: Arc::clone(&cfg),
        handshaking: Cell::new(0),
        stop: stop.clone(),
        outs: RefCell::new(Vec::new()),
        fields: RefCell::new(RequestFields::default()),
    });
    let mut conns = JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let stopping = stopped(stop.clone());
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            () = &mut stopping => break,
            inc = ep.accept() => match inc {
                Some(i) => admit(i, &shared, &mut conns),
                None => break,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = tick.tick() => shared.handler.borrow_mut().flush(),
        }
    }
    let deadline = tokio::time::Instant::now() + cfg.shutdown_timeout;
    ep.set_server_config(None);
    let drained = tokio::time::timeout_at(deadline, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
    ep.close(VarInt::from_u32(H3_NO_ERROR), b"shutdown");
    let _ = tokio::time::timeout_at(deadline, ep.wait_idle()).await;
    shared.handler.borrow_mut().flush();
}

/// What is done with a connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Its handshake begins.
    Accept,
    /// It is sent a Retry (its token will prove the address).
    Retry,
}

/// The admission policy: a Retry when at least [`RETRY_ABOVE`] handshakes
/// are in progress and the attempt's address is not yet validated (and it
/// may still be retried), else accept.
pub(crate) fn admission(handshaking: usize, validated: bool, may_retry: bool) -> Admission {
    if handshaking >= RETRY_ABOVE && !validated && may_retry {
        Admission::Retry
    } else {
        Admission::Accept
    }
}

/// A connection attempt: a Retry under handshake pressure from an address
/// not yet validated, else its connection task.
fn admit(i: quinn::Incoming, shared: &Rc<Shared>, conns: &mut JoinSet<()>) {
    let how = admission(
        shared.handshaking.get(),
        i.remote_address_validated(),
        i.may_retry(),
    );
    if how == Admission::Retry {
        let _ = i.retry();
        return;
    }
    if let Ok(connecting) = i.accept() {
        conns.spawn_local(connection(connecting, Rc::clone(shared)));
    }
}

/// Counts a handshake in progress while it lives.
struct Handshaking<'a>(&'a Cell<usize>);

impl<'a> Handshaking<'a> {
    fn new(c: &'a Cell<usize>) -> Self {
        c.set(c.get() + 1);
        Handshaking(c)
    }
}

impl Drop for Handshaking<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// One QUIC connection: the handshake (within the TLS handshake timeout),
/// then its requests, each a task, until the peer ends it, it idles out or
/// the server stops (GOAWAY, requests in flight answered, then a close).
///
/// This future is the task an idle connection keeps, so it is kept small:
/// the steps with large state of their own are boxed while they run and
/// freed after (the handshake, `h3`'s connection set-up of about 4 KiB, the
/// GOAWAY), and the HTTP/3 connection lives in one binding only (a binding
/// moved from still keeps its room in a future). Inline, they made each
/// connection's task about 8.5 KiB, 3.3 KiB now (bench/h3-idle: 4.7 KiB less
/// resident per idle connection).
async fn connection(connecting: quinn::Connecting, shared: Rc<Shared>) {
    let Some(quic) = Box::pin(handshake(connecting, &shared)).await else {
        return;
    };
    let _counted = Counted::new(shared.handler.borrow().stats());
    requests(quic.clone(), &shared).await;
    quic.close(VarInt::from_u32(H3_NO_ERROR), b"");
}

/// The QUIC handshake, counted in progress while it runs.
async fn handshake(connecting: quinn::Connecting, shared: &Shared) -> Option<quinn::Connection> {
    let _h = Handshaking::new(&shared.handshaking);
    match tokio::time::timeout(shared.cfg.tls_handshake_timeout, connecting).await {
        Ok(Ok(c)) => Some(c),
        _ => None,
    }
}

/// The HTTP/3 connection over `quic`: its requests, each a task, until the
/// peer ends it or the server stops; returns when the requests in flight
/// are answered.
async fn requests(quic: quinn::Connection, shared: &Rc<Shared>) {
    let peer = quic.remote_address().ip();
    let max_fields = shared.cfg.limits.max_header_bytes as u64;
    let mut builder = h3::server::builder();
    builder.max_field_section_size(max_fields);
    let Ok(mut conn) = Box::pin(builder.build::<_, Bytes>(h3_quinn::Connection::new(quic))).await
    else {
        return;
    };
    let flying = Rc::new(InFlight::default());
    let stopping = stopped(shared.stop.clone());
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            () = &mut stopping => {
                // GOAWAY naming the stream after the last one accepted:
                // those before it are answered, later ones refused.
                let _ = Box::pin(conn.shutdown(1)).await;
                break;
            }
            r = conn.accept() => match r {
                Ok(Some(resolver)) => {
                    let f = Flying::new(&flying);
                    tokio::task::spawn_local(request(resolver, Rc::clone(shared), peer, f));
                }
                Ok(None) | Err(_) => break,
            },
        }
    }
    flying.drained().await;
}

/// An accepted connection in the server's statistics, counted closed when
/// its task ends (or is aborted at the shutdown deadline).
struct Counted(crate::stats::SharedStats);

impl Counted {
    fn new(stats: &crate::stats::SharedStats) -> Counted {
        stats.accepted();
        Counted(Arc::clone(stats))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.closed();
    }
}

type Resolver = h3::server::RequestResolver<h3_quinn::Connection, Bytes>;
type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// One request stream: the request answered by the handler, sent back.
async fn request(resolver: Resolver, shared: Rc<Shared>, peer: IpAddr, _flying: Flying) {
    let Ok((req, mut stream)) = resolver.resolve_request().await else {
        return;
    };
    let mut out = shared.outs.borrow_mut().pop().unwrap_or_default();
    let sent = respond(&req, &mut stream, &shared, peer, &mut out).await;
    out.clear();
    let mut outs = shared.outs.borrow_mut();
    if outs.len() < OUTS_KEPT {
        outs.push(out);
    }
    drop(outs);
    let mut h = shared.handler.borrow_mut();
    h.count_io(sent.0, sent.1);
    h.flush_stats();
}

/// Answers `req` into `out` and sends the answer on `stream`; the body
/// bytes and DATA frames sent.
async fn respond(
    req: &http::Request<()>,
    stream: &mut Stream,
    shared: &Shared,
    peer: IpAddr,
    out: &mut OutQueue,
) -> (u64, u64) {
    let mut sent = (0u64, 0u64);
    if answer(req, shared, peer, out).is_none() {
        // Malformed (RFC 9114 §4.1.2): a stream error.
        stream.stop_stream(Code::H3_MESSAGE_ERROR);
        return sent;
    }
    let Some((resp, first, pieces)) = split_answer(out) else {
        stream.stop_stream(Code::H3_INTERNAL_ERROR);
        return sent;
    };
    if stream.send_response(resp).await.is_err() {
        return sent;
    }
    if !first.is_empty() && send(stream, first, &mut sent).await {
        return sent;
    }
    for p in pieces {
        let failed = match p {
            Piece::Mem(m) => send(stream, Bytes::copy_from_slice(m), &mut sent).await,
            Piece::File(f, a, e) => send_file(stream, f, a, e, &mut sent).await,
        };
        if failed {
            return sent;
        }
    }
    let _ = stream.finish().await;
    sent
}

/// The answer in `out` as it is sent: the HTTP/3 response, the body bytes
/// that follow the head in its piece, and the body pieces after those;
/// None when `out` does not start with a whole head.
pub(crate) fn split_answer(
    out: &OutQueue,
) -> Option<(http::Response<()>, Bytes, impl Iterator<Item = Piece<'_>>)> {
    let mut pieces = out.pieces();
    // The head and what follows it in memory, copied once: the response
    // fields' values and the first body bytes are slices of it.
    let first = match pieces.next() {
        Some(Piece::Mem(first)) => Bytes::copy_from_slice(first),
        _ => Bytes::new(),
    };
    let (resp, end) = response_head(&first)?;
    Some((resp, first.slice(end..), pieces))
}

/// Sends `b` as DATA; true when the stream failed.
async fn send(stream: &mut Stream, b: Bytes, sent: &mut (u64, u64)) -> bool {
    let n = b.len() as u64;
    if stream.send_data(b).await.is_err() {
        return true;
    }
    sent.0 += n;
    sent.1 += 1;
    false
}

/// Sends `f[a..e]`, read in [`FILE_CHUNK`] chunks; true when the stream
/// failed or the file could not be read.
async fn send_file(
    stream: &mut Stream,
    f: &std::fs::File,
    mut a: u64,
    e: u64,
    sent: &mut (u64, u64),
) -> bool {
    while a < e {
        let n = ((e - a) as usize).min(FILE_CHUNK);
        let mut buf = BytesMut::zeroed(n);
        if f.read_exact_at(&mut buf, a).is_err() {
            stream.stop_stream(Code::H3_INTERNAL_ERROR);
            return true;
        }
        if send(stream, buf.freeze(), sent).await {
            return true;
        }
        a += n as u64;
    }
    false
}

/// The handler's answer to `req` in `out`; None when the request is
/// malformed (the stream is to be reset).
fn answer(
    req: &http::Request<()>,
    shared: &Shared,
    peer: IpAddr,
    out: &mut OutQueue,
) -> Option<Answer> {
    let mut f = shared.fields.borrow_mut();
    let mut h = shared.handler.borrow_mut();
    answer_with(req, &mut f, &mut h, peer, out, Instant::now())
}

/// [`answer`] with its state given: `req`'s fields checked in `f` by the
/// HTTP/2 field rules, answered by `h` at `now`.
pub(crate) fn answer_with(
    req: &http::Request<()>,
    f: &mut RequestFields,
    h: &mut Handler,
    peer: IpAddr,
    out: &mut OutQueue,
    now: Instant,
) -> Option<Answer> {
    f.clear();
    f.field(b":method", req.method().as_str().as_bytes());
    let uri = req.uri();
    f.field(b":scheme", uri.scheme_str().unwrap_or("https").as_bytes());
    if let Some(a) = uri.authority() {
        f.field(b":authority", a.as_str().as_bytes());
    }
    let path = uri.path_and_query().map_or("", |p| p.as_str());
    f.field(b":path", path.as_bytes());
    for (n, v) in req.headers() {
        f.field(n.as_str().as_bytes(), v.as_bytes());
    }
    h.tick_at(now);
    let limits = h.config().limits;
    Some(match f.request(&limits) {
        Ok(mut r) => {
            r.version = Version::Http3;
            h.respond(&r, f.head(), ConnHeader::None, Some(peer), out, now)
        }
        Err(RequestError::BadRequest(_)) => return None,
        Err(e) => h.respond_error(e.status(), f.is_head(), Some(peer), out),
    })
}

/// The HTTP/1.1 head at the start of `answer` as an HTTP/3 response (the
/// connection-specific fields left out, RFC 9114 §4.2) and the head's
/// length; None when `answer` holds no whole head.
fn response_head(answer: &Bytes) -> Option<(http::Response<()>, usize)> {
    let (status, at) = crate::head::status(answer)?;
    let mut resp = http::Response::new(());
    *resp.status_mut() = http::StatusCode::from_u16(status).ok()?;
    let out = resp.headers_mut();
    // Room for a file response's fields at once (the map would otherwise
    // grow, and rehash, twice on the way).
    out.reserve(12);
    let end = crate::head::each_field(answer, at, |name, value| {
        // The value a slice of `answer`, not a copy.
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(name),
            http::HeaderValue::from_maybe_shared(answer.slice(value)),
        ) {
            out.append(n, v);
        }
    })?;
    Some((resp, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_becomes_response_fields_without_connection_ones() {
        let a = &Bytes::from_static(b"HTTP/1.1 206 Partial Content\r\nServer: x\r\nContent-Range: bytes 0-1/9\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab");
        let (r, end) = response_head(a).unwrap();
        assert_eq!(r.status(), 206);
        assert_eq!(&a[end..], b"ab");
        assert_eq!(r.headers()["content-range"], "bytes 0-1/9");
        assert!(r.headers().get("connection").is_none());
        assert_eq!(r.headers().len(), 3);
        assert_eq!(r.headers()["server"], "x");
        let cut = Bytes::from_static(b"HTTP/1.1 200 OK\r\nServer: x\r\n");
        assert!(response_head(&cut).is_none());
    }

    #[test]
    fn the_alt_svc_line_names_the_port() {
        assert_eq!(&*alt_svc(8443), b"Alt-Svc: h3=\":8443\"; ma=86400\r\n");
    }
}
