//! HTTP/3 (`--http3`): QUIC on UDP at the TLS listener's address and port,
//! served by quinn's async engine on a current-thread tokio runtime in a
//! thread of its own, **whatever `--model`** serves TCP. HTTP/3 framing and
//! QPACK are `httplab-wire`'s `h3` codec (why by hand, with the measurement:
//! its module docs); this module moves its bytes over quinn's streams.
//!
//! **Streams.** Per connection the server opens its control stream (type
//! and SETTINGS: QPACK table capacity 0, no blocked streams, the field
//! section bound) and accepts the client's streams, each a task:
//! - its control stream: SETTINGS first, then GOAWAY, MAX_PUSH_ID and
//!   unknown frames (the order rules are the codec's); frames of at most
//!   [`CONTROL_FRAME_MAX`] octets; its end, or a second control stream, is a
//!   connection error (H3_CLOSED_CRITICAL_STREAM, H3_STREAM_CREATION_ERROR);
//! - its QPACK encoder stream (with capacity 0 it may only say "capacity
//!   0", else QPACK_ENCODER_STREAM_ERROR) and decoder stream (read and
//!   dropped), each within [`QPACK_STREAM_MAX`] octets; a second one is
//!   H3_STREAM_CREATION_ERROR, its end H3_CLOSED_CRITICAL_STREAM;
//! - a push stream is H3_STREAM_CREATION_ERROR; a stream of an unknown type
//!   is stopped (STOP_SENDING H3_STREAM_CREATION_ERROR), the connection
//!   goes on;
//! - a request stream: frames up to its HEADERS (unknown ones skipped), the
//!   field section decoded into the fields every protocol's request is
//!   checked by, answered, then the rest (DATA, trailers) read and dropped
//!   with the frame order checked. A connection error of the codec (frame
//!   order, QPACK) closes the connection with its code; a malformed request
//!   (RFC 9114 §4.1.2) is the stream error H3_MESSAGE_ERROR; a stream
//!   ending before its HEADERS, H3_REQUEST_INCOMPLETE.
//!
//! **One handler.** A request's decoded fields go to `httplab-wire`'s
//! `h2::request` rules — HTTP/3's are the same (RFC 9114 §4.3) — as they
//! are decoded, into the typed `Request` every protocol shares, answered by
//! [`Handler::respond`] into an [`OutQueue`] in the HTTP/1.1 layout, as
//! `h2session` does. The head becomes the HEADERS frame (the codec's
//! encoder) and the memory bytes after it one DATA frame, both written at
//! once from a buffer reused across requests; file ranges follow in
//! [`FILE_CHUNK`] DATA frames, each read into a buffer quinn keeps until it
//! is acknowledged. Statuses, ranges, conditionals, precompressed variants,
//! `Cache-Control`, listings and confinement are the handler's, so they
//! answer as over HTTP/1.1. The engine's handler counts requests in the
//! server's statistics and writes access-log lines with the protocol
//! `HTTP/3`; each QUIC connection counts as one accepted connection.
//!
//! **Settings.** ALPN `h3`, TLS 1.3 (QUIC's); at most [`MAX_STREAMS`]
//! concurrent request streams per connection; a request's field section is
//! bounded by `--max-header-bytes`' limit (announced as
//! SETTINGS_MAX_FIELD_SECTION_SIZE; a larger decoded section, or a HEADERS
//! frame longer than the limit, which is skipped unread, is answered 431);
//! the QUIC idle timeout is the server's `--idle-timeout`;
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
use httplab_wire::h2::request::RequestFields;
use httplab_wire::h3::frame::{self, Control, ControlFrames, Frame, FrameReader, RequestFrames};
use httplab_wire::h3::qpack::{self, DecodeError};
use httplab_wire::h3::{self};
use httplab_wire::request::{RequestError, Version};
use quinn::VarInt;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::handler::{ConnHeader, Handler};
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
    /// Buffers of finished request streams, kept for the next ones (they
    /// keep their capacity).
    scratch: RefCell<Vec<Scratch>>,
    /// The request fields being checked and the QPACK decoder's scratch
    /// (reused: requests are answered one at a time, without an await in
    /// between).
    fields: RefCell<RequestFields>,
    qpack: RefCell<qpack::Decoder>,
    /// The server's control stream opening (type and SETTINGS).
    control_preface: Vec<u8>,
}

/// Request-stream buffers kept in [`Shared::scratch`] at most.
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

/// Counts one request of a connection in flight while it lives.
struct Flying(Rc<Conn>);

impl Flying {
    fn new(c: &Rc<Conn>) -> Flying {
        let f = &c.flying;
        f.count.set(f.count.get() + 1);
        Flying(Rc::clone(c))
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        let f = &self.0.flying;
        f.count.set(f.count.get().saturating_sub(1));
        f.done.notify_one();
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
        scratch: RefCell::new(Vec::new()),
        fields: RefCell::new(RequestFields::default()),
        qpack: RefCell::new(qpack::Decoder::default()),
        control_preface: frame::control_preface(cfg.limits.max_header_bytes as u64),
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
/// freed after (the handshake, opening the control stream, the GOAWAY), and
/// the connection lives in one binding only (a binding moved from still
/// keeps its room in a future). Inline, such steps made each connection's
/// task about 8.5 KiB, 3.3 KiB once boxed (bench/h3-idle: 4.7 KiB less
/// resident per idle connection); 600 octets since `h3`'s connection state
/// left it, beside the client's control and QPACK streams, read by tasks
/// of their own of 336 octets each (`an_idle_connection_task_stays_small`).
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

/// The HTTP/3 connection over `quic`: the server's control stream opened,
/// the client's streams accepted (requests and unidirectional ones, each
/// a task) until the peer ends it, a connection error closes it or the
/// server stops (GOAWAY); returns when the requests in flight are
/// answered.
async fn requests(quic: quinn::Connection, shared: &Rc<Shared>) {
    let peer = quic.remote_address().ip();
    let Some(mut control) = Box::pin(open_control(&quic, shared)).await else {
        return;
    };
    let conn = Rc::new(Conn {
        quic,
        flying: InFlight::default(),
        seen: Cell::new(0),
    });
    // The first request stream not accepted (what a GOAWAY names).
    let mut next_id = 0u64;
    let stopping = stopped(shared.stop.clone());
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            () = &mut stopping => {
                // GOAWAY naming the stream after the last one accepted:
                // those before it are answered, later ones refused.
                Box::pin(goaway(&mut control, next_id)).await;
                break;
            }
            r = conn.quic.accept_bi() => match r {
                Ok((send, recv)) => {
                    next_id = u64::from(recv.id()) + 4;
                    let f = Flying::new(&conn);
                    tokio::task::spawn_local(request(send, recv, Rc::clone(shared), peer, f));
                }
                Err(_) => break,
            },
            r = conn.quic.accept_uni() => match r {
                Ok(recv) => {
                    tokio::task::spawn_local(unidirectional(recv, Rc::clone(&conn)));
                }
                Err(_) => break,
            },
        }
    }
    conn.flying.drained().await;
}

/// Opens the server's control stream with its SETTINGS; None when the
/// connection is gone.
async fn open_control(quic: &quinn::Connection, shared: &Shared) -> Option<quinn::SendStream> {
    let mut control = quic.open_uni().await.ok()?;
    control.write_all(&shared.control_preface).await.ok()?;
    Some(control)
}

/// Sends a GOAWAY naming `id` on the control stream.
async fn goaway(control: &mut quinn::SendStream, id: u64) {
    let mut b = Vec::with_capacity(10);
    frame::goaway_frame(&mut b, id);
    let _ = control.write_all(&b).await;
}

/// A connection's state its stream tasks share.
struct Conn {
    quic: quinn::Connection,
    /// Its requests in flight.
    flying: InFlight,
    /// The client's critical unidirectional streams opened so far (bit
    /// `1 << type`: control, QPACK encoder, QPACK decoder).
    seen: Cell<u8>,
}

impl Conn {
    /// Closes the connection with the error's code.
    fn fail(&self, e: h3::Error) {
        let code = VarInt::from_u64(e.code()).unwrap_or(VarInt::from_u32(H3_NO_ERROR));
        self.quic.close(code, b"");
    }

    /// Records the client's stream of critical `kind`; false when it had
    /// one already (H3_STREAM_CREATION_ERROR).
    fn first_of(&self, kind: u64) -> bool {
        let bit = 1u8 << kind;
        let first = self.seen.get() & bit == 0;
        self.seen.set(self.seen.get() | bit);
        first
    }
}

/// Bytes a client's control stream frame may hold (SETTINGS, GOAWAY,
/// MAX_PUSH_ID, CANCEL_PUSH; longer: H3_EXCESSIVE_LOAD).
pub const CONTROL_FRAME_MAX: u64 = 4096;
/// Bytes a client's QPACK encoder or decoder stream may carry over the
/// connection's life (longer: H3_EXCESSIVE_LOAD). With a table of capacity
/// 0 its encoder has one thing to say (capacity 0), its decoder at most a
/// Stream Cancellation per request.
pub const QPACK_STREAM_MAX: u64 = 1 << 20;

/// One of the client's unidirectional streams, by its type (RFC 9114
/// §6.2): a connection error closes the connection.
async fn unidirectional(mut recv: quinn::RecvStream, conn: Rc<Conn>) {
    let mut first = Vec::new();
    let kind = loop {
        if let Some((kind, n)) = h3::varint(&first) {
            first.drain(..n);
            break kind;
        }
        match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => first.extend_from_slice(&c.bytes),
            _ => return,
        }
    };
    let r = match kind {
        h3::stream::CONTROL if conn.first_of(kind) => control_stream(recv, &first).await,
        h3::stream::QPACK_ENCODER | h3::stream::QPACK_DECODER if conn.first_of(kind) => {
            qpack_stream(recv, &first, kind == h3::stream::QPACK_ENCODER).await
        }
        h3::stream::CONTROL
        | h3::stream::QPACK_ENCODER
        | h3::stream::QPACK_DECODER
        | h3::stream::PUSH => Err(h3::Error::StreamCreation),
        _ => {
            // An unknown type (or a reserved one): not read.
            let _ = recv.stop(VarInt::from_u32(h3::code::STREAM_CREATION_ERROR as u32));
            Ok(())
        }
    };
    if let Err(e) = r {
        conn.fail(e);
    }
}

/// The next chunk of a critical stream; its end or reset is
/// H3_CLOSED_CRITICAL_STREAM, None when the connection is gone.
async fn critical_chunk(recv: &mut quinn::RecvStream) -> Result<Option<Bytes>, h3::Error> {
    match recv.read_chunk(usize::MAX, true).await {
        Ok(Some(c)) => Ok(Some(c.bytes)),
        Ok(None) | Err(quinn::ReadError::Reset(_)) => Err(h3::Error::ClosedCriticalStream),
        Err(_) => Ok(None),
    }
}

/// The client's control stream: SETTINGS first, then GOAWAY, MAX_PUSH_ID
/// and unknown frames, read until the connection ends.
async fn control_stream(mut recv: quinn::RecvStream, first: &[u8]) -> Result<(), h3::Error> {
    let mut r = FrameReader::default();
    r.push(first);
    let mut order = ControlFrames::default();
    loop {
        while let Some(f) = r.next(ControlFrames::keeps, CONTROL_FRAME_MAX) {
            let (kind, payload) = match f {
                Frame::Whole { kind, payload } => (kind, payload),
                Frame::Skipped { kind, .. } => (kind, &[][..]),
                Frame::TooLong { .. } => return Err(h3::Error::ExcessiveLoad),
            };
            match order.frame(kind)? {
                // The client's limits concern what it is sent: this
                // server's response sections are small and never use
                // the client's table.
                Control::Settings => {
                    h3::Settings::decode(payload)?;
                }
                // It never pushes: push IDs only need to be well-formed.
                Control::Goaway | Control::MaxPushId => {
                    frame::single_varint(payload)?;
                }
                Control::Ignored => {}
            }
        }
        match critical_chunk(&mut recv).await? {
            Some(b) => r.push(&b),
            None => return Ok(()),
        }
    }
}

/// The client's QPACK encoder stream (only Set Dynamic Table Capacity 0,
/// the octet 0x20, fits a table of capacity 0: anything else is
/// QPACK_ENCODER_STREAM_ERROR) or decoder stream (read and dropped: this
/// server's sections never use a table), each within
/// [`QPACK_STREAM_MAX`].
async fn qpack_stream(
    mut recv: quinn::RecvStream,
    first: &[u8],
    encoder: bool,
) -> Result<(), h3::Error> {
    let mut total = 0u64;
    let mut chunk = Bytes::copy_from_slice(first);
    loop {
        total += chunk.len() as u64;
        if total > QPACK_STREAM_MAX {
            return Err(h3::Error::ExcessiveLoad);
        }
        if encoder && chunk.iter().any(|&b| b != 0x20) {
            return Err(h3::Error::EncoderStream);
        }
        match critical_chunk(&mut recv).await? {
            Some(b) => chunk = b,
            None => return Ok(()),
        }
    }
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

/// Buffers a request stream uses, kept in [`Shared::scratch`] for the next
/// one (they keep their capacity).
struct Scratch {
    reader: FrameReader,
    out: OutQueue,
    /// The response's field section.
    section: Vec<u8>,
    /// The HEADERS frame and the first DATA frame, written at once.
    wire: Vec<u8>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            reader: FrameReader::default(),
            // Read only by `pieces`: a cached body by reference.
            out: OutQueue::scratch(),
            section: Vec::new(),
            wire: Vec::new(),
        }
    }
}

/// How a request stream went.
pub(crate) enum Outcome {
    /// Answered into the scratch queue.
    Answered,
    /// Malformed (RFC 9114 §4.1.2): the stream error H3_MESSAGE_ERROR.
    Malformed,
    /// Ended before its HEADERS: H3_REQUEST_INCOMPLETE.
    Incomplete,
    /// A connection error.
    Failed(h3::Error),
    /// Reset by the client, or the connection is gone.
    Gone,
}

/// One request stream: read up to its HEADERS, answered by the handler,
/// the answer sent, the rest of the request (body, trailers) drained.
async fn request(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    shared: Rc<Shared>,
    peer: IpAddr,
    flying: Flying,
) {
    let conn = Rc::clone(&flying.0);
    let mut s = shared.scratch.borrow_mut().pop().unwrap_or_default();
    s.reader.reset();
    let mut order = RequestFrames::default();
    let outcome = read_request(&mut recv, &mut s, &mut order, &shared, peer).await;
    let mut sent = (0, 0);
    let outcome = match outcome {
        Outcome::Answered => match respond(&mut send, &mut s).await {
            Some(n) => {
                sent = n;
                // Answered: no longer in flight for a graceful shutdown,
                // whatever the rest of the request does.
                drop(flying);
                drain(&mut recv, &mut s.reader, &mut order).await
            }
            None => Outcome::Gone,
        },
        o => o,
    };
    match outcome {
        Outcome::Answered | Outcome::Gone => {}
        Outcome::Malformed => reset(&mut send, &mut recv, h3::code::MESSAGE_ERROR),
        Outcome::Incomplete => reset(&mut send, &mut recv, h3::code::REQUEST_INCOMPLETE),
        Outcome::Failed(e) => conn.fail(e),
    }
    s.out.clear();
    let mut kept = shared.scratch.borrow_mut();
    if kept.len() < OUTS_KEPT {
        kept.push(s);
    }
    drop(kept);
    let mut h = shared.handler.borrow_mut();
    h.count_io(sent.0, sent.1);
    h.flush_stats();
}

/// A stream error: both directions reset with `code`.
fn reset(send: &mut quinn::SendStream, recv: &mut quinn::RecvStream, code: u64) {
    let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(H3_NO_ERROR));
    let _ = send.reset(code);
    let _ = recv.stop(code);
}

/// Reads the request stream up to its HEADERS (frames of unknown types
/// skipped) and answers it into `s.out`.
async fn read_request(
    recv: &mut quinn::RecvStream,
    s: &mut Scratch,
    order: &mut RequestFrames,
    shared: &Shared,
    peer: IpAddr,
) -> Outcome {
    let max = shared.cfg.limits.max_header_bytes as u64;
    loop {
        while let Some(f) = s.reader.next(|k| k == frame::kind::HEADERS, max) {
            let (kind, block) = match f {
                Frame::Whole { kind, payload } => (kind, Some(payload)),
                Frame::Skipped { kind, .. } => (kind, None),
                // Encoded beyond the decoded bound: only Huffman codes
                // longer than their octets could still fit, and no
                // client sends those; not read, answered 431.
                Frame::TooLong { kind, .. } => (kind, None),
            };
            match order.frame(kind) {
                Ok(frame::Request::Headers) => {
                    return answer(block, shared, peer, &mut s.out);
                }
                Ok(_) => {}
                Err(e) => return Outcome::Failed(e),
            }
        }
        match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => s.reader.push(&c.bytes),
            Ok(None) => return Outcome::Incomplete,
            Err(_) => return Outcome::Gone,
        }
    }
}

/// Reads the rest of the request (DATA, trailers, unknown frames) and
/// drops it, the frame order checked.
async fn drain(
    recv: &mut quinn::RecvStream,
    reader: &mut FrameReader,
    order: &mut RequestFrames,
) -> Outcome {
    loop {
        while let Some(f) = reader.next(|_| false, 0) {
            let kind = match f {
                Frame::Whole { kind, .. }
                | Frame::Skipped { kind, .. }
                | Frame::TooLong { kind, .. } => kind,
            };
            if let Err(e) = order.frame(kind) {
                return Outcome::Failed(e);
            }
        }
        match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => reader.push(&c.bytes),
            Ok(None) if reader.at_boundary() => return Outcome::Answered,
            Ok(None) => return Outcome::Failed(h3::Error::FrameError),
            Err(_) => return Outcome::Gone,
        }
    }
}

/// The handler's answer to the request whose field section is `block`
/// (None: over the size bound) in `out`.
fn answer(block: Option<&[u8]>, shared: &Shared, peer: IpAddr, out: &mut OutQueue) -> Outcome {
    let mut f = shared.fields.borrow_mut();
    let mut d = shared.qpack.borrow_mut();
    let mut h = shared.handler.borrow_mut();
    answer_with(block, (&mut d, &mut f), &mut h, peer, out, Instant::now())
}

/// [`answer`] with its state given: `block` decoded by `d` into the HTTP/2
/// field rules of `f` (the decoded size bounded by the handler's
/// `--max-header-bytes`), answered by `h` at `now`.
pub(crate) fn answer_with(
    block: Option<&[u8]>,
    (d, f): (&mut qpack::Decoder, &mut RequestFields),
    h: &mut Handler,
    peer: IpAddr,
    out: &mut OutQueue,
    now: Instant,
) -> Outcome {
    f.clear();
    h.tick_at(now);
    let limits = h.config().limits;
    let decoded = match block {
        Some(b) => d.decode(b, limits.max_header_bytes as u64, |n, v| f.field(n, v)),
        None => Err(DecodeError::TooLarge),
    };
    match decoded {
        Err(DecodeError::Failed) => return Outcome::Failed(h3::Error::DecompressionFailed),
        Err(DecodeError::TooLarge) => {
            h.respond_error(431, f.is_head(), Some(peer), out);
            return Outcome::Answered;
        }
        Ok(()) => {}
    }
    match f.request(&limits) {
        Ok(mut r) => {
            r.version = Version::Http3;
            h.respond(&r, f.head(), ConnHeader::None, Some(peer), out, now);
        }
        Err(RequestError::BadRequest(_)) => return Outcome::Malformed,
        Err(e) => {
            h.respond_error(e.status(), f.is_head(), Some(peer), out);
        }
    }
    Outcome::Answered
}

/// Sends the answer in `s.out`: its head as a HEADERS frame and the memory
/// bytes after it as one DATA frame, written at once, then file ranges in
/// [`FILE_CHUNK`] DATA frames; the stream finished. The body bytes and
/// DATA frames sent; None when the stream failed.
async fn respond(send: &mut quinn::SendStream, s: &mut Scratch) -> Option<(u64, u64)> {
    let mut sent = (0u64, 0u64);
    let mut pieces = s.out.pieces();
    let first = match pieces.next() {
        Some(Piece::Mem(first)) => first,
        _ => &[],
    };
    let Some(end) = head_frame(first, &mut s.section, &mut s.wire) else {
        let _ = send.reset(VarInt::from_u32(h3::code::INTERNAL_ERROR as u32));
        return None;
    };
    // The body's memory bytes up to its first file range (the queue's
    // memory between two files is one piece): one DATA frame.
    let body = &first[end..];
    if !body.is_empty() {
        frame::put_head(&mut s.wire, frame::kind::DATA, body.len() as u64);
        s.wire.extend_from_slice(body);
        sent = (body.len() as u64, 1);
    }
    send.write_all(&s.wire).await.ok()?;
    for p in pieces {
        match p {
            Piece::Mem(m) => {
                s.wire.clear();
                frame::put_head(&mut s.wire, frame::kind::DATA, m.len() as u64);
                s.wire.extend_from_slice(m);
                send.write_all(&s.wire).await.ok()?;
                sent = (sent.0 + m.len() as u64, sent.1 + 1);
            }
            Piece::File(f, a, e) => send_file(send, f, a, e, &mut sent).await?,
        }
    }
    let _ = send.finish();
    Some(sent)
}

/// The HTTP/1.1 head at the start of `answer` as a HEADERS frame in
/// `wire` (its field section encoded in `section` first); the head's
/// length, None when `answer` holds no whole head.
pub(crate) fn head_frame(
    answer: &[u8],
    section: &mut Vec<u8>,
    wire: &mut Vec<u8>,
) -> Option<usize> {
    section.clear();
    wire.clear();
    let (status, at) = crate::head::status(answer)?;
    qpack::status(section, status);
    let end = crate::head::each_field(answer, at, |name, value| {
        qpack::field(section, name, &answer[value]);
    })?;
    frame::put_head(wire, frame::kind::HEADERS, section.len() as u64);
    wire.extend_from_slice(section);
    Some(end)
}

/// Sends `f[a..e]` in DATA frames of [`FILE_CHUNK`] octets, each read into
/// a buffer quinn keeps until it is acknowledged; None when the stream
/// failed or the file could not be read.
async fn send_file(
    send: &mut quinn::SendStream,
    f: &std::fs::File,
    mut a: u64,
    e: u64,
    sent: &mut (u64, u64),
) -> Option<()> {
    while a < e {
        let n = ((e - a) as usize).min(FILE_CHUNK);
        let mut head = Vec::with_capacity(16);
        frame::put_head(&mut head, frame::kind::DATA, n as u64);
        let mut buf = BytesMut::with_capacity(head.len() + n);
        buf.extend_from_slice(&head);
        buf.resize(head.len() + n, 0);
        if f.read_exact_at(&mut buf[head.len()..], a).is_err() {
            let _ = send.reset(VarInt::from_u32(h3::code::INTERNAL_ERROR as u32));
            return None;
        }
        send.write_chunk(buf.freeze()).await.ok()?;
        *sent = (sent.0 + n as u64, sent.1 + 1);
        a += n as u64;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_becomes_a_headers_frame_without_connection_fields() {
        let a = b"HTTP/1.1 206 Partial Content\r\nServer: x\r\nContent-Range: bytes 0-1/9\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab";
        let (mut section, mut wire) = (Vec::new(), Vec::new());
        let end = head_frame(a, &mut section, &mut wire).unwrap();
        assert_eq!(&a[end..], b"ab");
        let mut r = FrameReader::default();
        r.push(&wire);
        let Some(Frame::Whole { kind, payload }) = r.next(|_| true, 1000) else {
            panic!("a HEADERS frame");
        };
        assert_eq!(kind, frame::kind::HEADERS);
        let mut got = Vec::new();
        qpack::Decoder::default()
            .decode(payload, 1000, |n, v| {
                got.push(format!(
                    "{}={}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                ))
            })
            .unwrap();
        assert_eq!(
            got,
            [
                ":status=206",
                "server=x",
                "content-range=bytes 0-1/9",
                "content-length=2"
            ]
        );
        assert!(r.at_boundary());
        assert!(head_frame(b"HTTP/1.1 200 OK\r\nServer: x\r\n", &mut section, &mut wire).is_none());
    }

    /// The size of the future an async fn of two arguments returns.
    fn future_size<A, B, F>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn an_idle_connection_task_stays_small() {
        // What each idle connection keeps (see `connection`); its client's
        // control and QPACK streams are tasks of their own, small too.
        let conn = future_size(connection);
        let uni = future_size(unidirectional);
        eprintln!("connection task {conn} B, unidirectional stream task {uni} B");
        assert!(conn < 1024, "{conn} B");
        assert!(uni < 512, "{uni} B");
    }

    #[test]
    fn the_alt_svc_line_names_the_port() {
        assert_eq!(&*alt_svc(8443), b"Alt-Svc: h3=\":8443\"; ma=86400\r\n");
    }
}
