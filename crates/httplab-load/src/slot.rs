//! One session's slot in the HTTP/1.1 engine: its session machine, its
//! connection (socket or io_uring entry, TLS, `H1Conn` or `H2Conn`) and its timers, with
//! the byte moves that need no engine state (socket set-up, plain and TLS
//! writes and reads, the handshake's figures). Errors come back as values;
//! the engine decides what they mean.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use rustls::{ClientConnection, HandshakeKind};
use socket2::{Domain, Protocol, Socket, Type};

use std::collections::VecDeque;

use crate::h1::{H1Conn, Pending};
use crate::h2proto::H2Conn;
use crate::session::Session;
use crate::spec::LoadSpec;
use crate::stats::{rec, ErrClass, TlsStats};
use crate::sys;
use crate::worker::{LocalAddrs, Tally};

/// What `--verify-root` has checked of the reply being received.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Verify {
    pub on: bool,
    pub off: u64,
    pub bad: bool,
}

#[derive(Debug)]
pub(crate) struct Slot {
    pub gen: u32,
    pub in_use: bool,
    /// The session's rules and state.
    pub sess: Session,
    pub sock: Option<TcpStream>,
    /// io_uring: the connection's entry in the worker's ring (instead of `sock`).
    pub uc: Option<u32>,
    /// Counts the connections the slot opened (a reply handler compares it
    /// to know whether its connection is still the one it read from).
    pub conn_id: u64,
    pub connecting: bool,
    pub conn_start: Instant,
    pub conn_replies: u64,
    /// The connection was opened for something scheduled in the window.
    pub conn_measured: bool,
    /// The protocol state of the connection (requests out, replies in).
    pub wire: Wire,
    /// Whether the run's connections speak TLS: fixed for the slot's life,
    /// so no reconnect path can write a connection's bytes in the clear.
    link: Link,
    /// HTTPS: the TLS state of the connection (between socket and `h1`);
    /// `None` on a TLS link until the handshake starts.
    pub tls: Option<Box<ClientConnection>>,
    /// HTTPS: ciphertext read from the socket that rustls has not taken
    /// yet (see `tls_read`); empty, without an allocation, most of the time.
    pub tls_in: Vec<u8>,
    /// The TLS handshake is under way (requests wait for its end).
    pub handshaking: bool,
    pub hs_start: Instant,
    /// The connection is in setup: connecting, in its TLS handshake, or
    /// waiting for its first reply byte (not yet served by the server).
    pub in_setup: bool,
    pub verify: Verify,
    /// Connect, handshake or reply deadline (`--timeout`).
    pub deadline: Option<Instant>,
    /// The wake-up in the timer heap.
    pub armed: Option<Instant>,
}

impl Slot {
    /// A slot; `link`: plain or TLS, for every connection it opens;
    /// `http2`: its connections speak HTTP/2 (`--http2`), starting from this
    /// machine.
    pub fn new(now: Instant, capture: bool, link: Link, http2: Option<H2Conn>) -> Slot {
        Slot {
            gen: 0,
            in_use: false,
            sess: Session::new(now),
            sock: None,
            uc: None,
            conn_id: 0,
            connecting: false,
            conn_start: now,
            conn_replies: 0,
            conn_measured: true,
            wire: Wire::new(capture, http2),
            link,
            tls: None,
            tls_in: Vec::new(),
            handshaking: false,
            hs_start: now,
            in_setup: false,
            verify: Verify::default(),
            deadline: None,
            armed: None,
        }
    }

    /// When the oldest outstanding reply reaches `--max-response-time`.
    pub fn limit(&self, max_resp: Option<Duration>) -> Option<Instant> {
        Some(self.wire.oldest()?.sent + max_resp?)
    }

    /// A connection is open (or opening), on either I/O engine.
    pub fn has_conn(&self) -> bool {
        self.sock.is_some() || self.uc.is_some()
    }

    /// The slot's next timer: deadline, think time, response limit.
    pub fn wake(&self, max_resp: Option<Duration>) -> Option<Instant> {
        [self.deadline, self.sess.thinking(), self.limit(max_resp)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the oldest outstanding call (else the connection, else the
    /// session's next call) was scheduled in the window.
    pub fn waiting_measured(&self, in_window: bool) -> bool {
        match self.wire.oldest() {
            Some(p) => p.measured,
            None if self.has_conn() => self.conn_measured,
            None => in_window,
        }
    }

    /// Writes the connection's output until the socket would block: on a
    /// plain link to the socket; on a TLS link only into the TLS session,
    /// and before that session exists not at all (an HTTP/2 preface or a
    /// request queued while connecting waits for the handshake).
    pub fn write_out(&mut self, tally: &mut Tally) -> Result<(), ErrClass> {
        match (self.link, self.tls.is_some()) {
            (Link::Plain, _) => self.write_plain(tally),
            (Link::Tls, true) => self.write_tls(tally),
            (Link::Tls, false) => Ok(()),
        }
    }

    /// Whether the connection's bytes go through TLS.
    pub fn link(&self) -> Link {
        self.link
    }

    /// Writes the output to the plain socket until it would block.
    fn write_plain(&mut self, tally: &mut Tally) -> Result<(), ErrClass> {
        let Some(sock) = self.sock.as_mut() else {
            return Ok(());
        };
        while !self.wire.output().is_empty() {
            match sock.write(self.wire.output()) {
                Ok(0) => break,
                Ok(n) => {
                    tally
                        .of(self.wire.output_measured(self.conn_measured))
                        .bytes_sent += n as u64;
                    self.wire.wrote(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ErrClass::from_io(&e)),
            }
        }
        Ok(())
    }

    /// HTTPS: requests into rustls (after the handshake), records out to the socket.
    fn write_tls(&mut self, tally: &mut Tally) -> Result<(), ErrClass> {
        let (Some(sock), Some(tls)) = (self.sock.as_mut(), self.tls.as_mut()) else {
            return Ok(());
        };
        loop {
            if !self.handshaking && !self.wire.output().is_empty() {
                // rustls encrypts into its own send buffer (it allocates per
                // record: the one allocation per request over TLS).
                let n = tls
                    .writer()
                    .write(self.wire.output())
                    .map_err(|e| ErrClass::from_io(&e))?;
                tally
                    .of(self.wire.output_measured(self.conn_measured))
                    .bytes_sent += n as u64;
                self.wire.wrote(n);
            }
            if !tls.wants_write() {
                return Ok(());
            }
            match tls.write_tls(sock) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ErrClass::from_io(&e)),
            }
        }
    }

    /// One read from the connection into `buf` (plain, or TLS plaintext).
    pub fn read(&mut self, buf: &mut [u8]) -> Got {
        let Some(sock) = self.sock.as_mut() else {
            return Got::Eof;
        };
        match self.tls.as_mut() {
            None => match sock.read(buf) {
                Ok(0) => Got::Eof,
                Ok(n) => Got::Data(n),
                Err(e) => Got::Io(e),
            },
            Some(tls) => tls_read(tls, sock, buf, self.handshaking, &mut self.tls_in),
        }
    }

    /// A non-blocking connect reported progress: Ok(true) connected,
    /// Ok(false) still connecting.
    pub fn connect_result(&self, writable: bool) -> Result<bool, ErrClass> {
        let Some(sock) = self.sock.as_ref() else {
            return Ok(false);
        };
        match sock.take_error() {
            Ok(Some(e)) | Err(e) => return Err(ErrClass::from_io(&e)),
            Ok(None) => {}
        }
        // Writable with no pending error means connected; otherwise ask.
        if !writable {
            match sock.peer_addr() {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return Ok(false),
                Err(e) => return Err(ErrClass::from_io(&e)),
            }
        }
        Ok(true)
    }

    /// Sends the alert rustls queued (before giving up on the connection).
    pub fn send_alert(&mut self) {
        if let (Some(sock), Some(tls)) = (self.sock.as_mut(), self.tls.as_mut()) {
            let _ = tls.write_tls(sock);
        }
    }
}

/// How a slot's connections carry their bytes: decided once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    /// Cleartext TCP.
    Plain,
    /// TLS: every byte of the protocol's output goes through rustls.
    Tls,
}

/// The protocol side of a slot's connection: HTTP/1.1, or with `--http2`
/// HTTP/2 (whose calls beyond the server's stream limit wait here).
#[derive(Debug)]
pub(crate) struct Wire {
    pub h1: H1Conn,
    pub h2: Option<Box<H2Conn>>,
    /// HTTP/2: calls the session sent while the server's stream limit was
    /// reached; they get a stream as others end.
    pub h2_wait: VecDeque<Pending>,
}

impl Wire {
    fn new(capture: bool, http2: Option<H2Conn>) -> Wire {
        Wire {
            h1: H1Conn::new(capture),
            h2: http2.map(Box::new),
            h2_wait: VecDeque::new(),
        }
    }

    /// Bytes waiting to be written.
    pub fn output(&self) -> &[u8] {
        match &self.h2 {
            Some(h) => h.output(),
            None => self.h1.output(),
        }
    }

    /// `n` bytes of [`Self::output`] were written.
    pub fn wrote(&mut self, n: usize) {
        match &mut self.h2 {
            Some(h) => h.wrote(n),
            None => self.h1.wrote(n),
        }
    }

    /// Whether the output belongs to measured calls (HTTP/2 frames are the
    /// connection's: `conn_measured`).
    pub fn output_measured(&self, conn_measured: bool) -> bool {
        match &self.h2 {
            Some(_) => conn_measured,
            None => self.h1.output_measured(),
        }
    }

    /// Calls sent and not answered (HTTP/2: streams, and calls waiting for one).
    pub fn outstanding(&self) -> usize {
        match &self.h2 {
            Some(h) => h.outstanding() + self.h2_wait.len(),
            None => self.h1.outstanding(),
        }
    }

    /// The call waiting longest.
    pub fn oldest(&self) -> Option<&Pending> {
        match &self.h2 {
            Some(h) => [h.oldest(), self.h2_wait.front()]
                .into_iter()
                .flatten()
                .min_by_key(|p| p.sent),
            None => self.h1.oldest(),
        }
    }

    /// A new connection (or none): everything outstanding forgotten.
    pub fn reset(&mut self) {
        self.h1.reset();
        if let Some(h) = &mut self.h2 {
            h.reset();
        }
        self.h2_wait.clear();
    }
}

/// A new non-blocking TCP socket towards `addr`, its connect started (from
/// the next source address; on EADDRNOTAVAIL from the following ones).
/// Returns the socket, whether the connect is still in progress, and the
/// connect's error when it failed (the socket is then still returned, to be
/// dropped: the attempt counts).
pub(crate) fn connect(
    spec: &LoadSpec,
    addr: SocketAddr,
    local: &mut LocalAddrs,
    sources: &[IpAddr],
) -> Result<(Socket, Result<bool, ErrClass>), ErrClass> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(|e| ErrClass::from_io(&e))?;
    let _ = sock.set_nodelay(true);
    if let Some(n) = spec.send_buffer {
        let _ = sock.set_send_buffer_size(n);
    }
    if let Some(n) = spec.recv_buffer {
        let _ = sock.set_recv_buffer_size(n);
    }
    if spec.close_with_reset {
        let _ = sock.set_linger(Some(Duration::ZERO));
    }
    let mut result = Err(ErrClass::Other);
    for _ in 0..sources.len().max(1) {
        if let Some(ip) = local.next(sources) {
            let _ = sys::set_bind_no_port(sock.as_raw_fd());
            if let Err(e) = sock.bind(&SocketAddr::new(ip, 0).into()) {
                result = Err(ErrClass::from_io(&e));
                continue;
            }
        }
        result = match sock.connect(&addr.into()) {
            Ok(()) => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(true),
            Err(e) => Err(ErrClass::from_io(&e)),
        };
        if result != Err(ErrClass::AddrUnavail) {
            break;
        }
    }
    Ok((sock, result))
}

/// Records a completed handshake that took `took_us`.
pub(crate) fn record_handshake(tls: &ClientConnection, st: &mut TlsStats, took_us: u64) {
    rec(&mut st.handshake, took_us);
    if tls.handshake_kind() == Some(HandshakeKind::Resumed) {
        st.resumed += 1;
    } else {
        st.full += 1;
    }
    if let Some(v) = tls.protocol_version().and_then(|v| v.as_str()) {
        *st.versions.entry(v).or_default() += 1;
    }
    if let Some(c) = tls
        .negotiated_cipher_suite()
        .and_then(|c| c.suite().as_str())
    {
        *st.suites.entry(c).or_default() += 1;
    }
    let alpn = tls
        .alpn_protocol()
        .map_or(std::borrow::Cow::Borrowed("none"), String::from_utf8_lossy);
    match st.alpn.get_mut(alpn.as_ref()) {
        Some(n) => *n += 1,
        None => {
            st.alpn.insert(alpn.into_owned(), 1);
        }
    }
}

/// What one read from a connection gave (plain or TLS).
pub(crate) enum Got {
    Data(usize),
    Eof,
    HandshakeDone,
    Io(io::Error),
    Tls(rustls::Error),
}

/// Reads plaintext from a TLS connection: what rustls has decrypted, else
/// more ciphertext, processed. Reports the handshake's end.
///
/// rustls reads a socket at most 4 KiB beyond what it holds per `read_tls`,
/// so reading through it costs a system call per 4 KiB: over TLS the client
/// spent more kernel time than the servers it measured, and the servers'
/// replies left in small segments while it lagged behind (server kernel time
/// per request up to twice that of cleartext; measured with nstat). Here the
/// socket is read into `buf` (as much as it holds, before it carries any
/// plaintext), and rustls takes the ciphertext from memory; what it cannot
/// take yet (its plaintext buffer full) waits in `pending` for the next
/// call, before the socket is read again.
fn tls_read(
    tls: &mut ClientConnection,
    sock: &mut TcpStream,
    buf: &mut [u8],
    handshaking: bool,
    pending: &mut Vec<u8>,
) -> Got {
    loop {
        if !handshaking {
            match tls.reader().read(buf) {
                Ok(0) => return Got::Eof,
                Ok(n) => return Got::Data(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The peer closed without close_notify: an ordinary end of
                // stream for HTTP/1.1, whose framing says whether it was complete.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Got::Eof,
                Err(e) => return Got::Io(e),
            }
        }
        let fed = if pending.is_empty() {
            let n = match sock.read(buf) {
                Ok(0) => return Got::Eof,
                Ok(n) => n,
                Err(e) => return Got::Io(e),
            };
            let mut rest = &buf[..n];
            let fed = feed(tls, &mut rest);
            pending.extend_from_slice(rest);
            fed
        } else {
            let mut rest = &pending[..];
            let fed = feed(tls, &mut rest);
            let took = pending.len() - rest.len();
            if took == pending.len() {
                // Give the memory back: most connections never need it.
                *pending = Vec::new();
            } else {
                pending.drain(..took);
            }
            match fed {
                // rustls took nothing and holds no plaintext to hand on
                // (it would want input then): the loop would spin.
                Ok(()) if took == 0 && (handshaking || tls.wants_read()) => {
                    return Got::Io(io::Error::other("TLS input not taken"))
                }
                fed => fed,
            }
        };
        if let Err(e) = fed {
            return e;
        }
        if handshaking && !tls.is_handshaking() {
            return Got::HandshakeDone;
        }
    }
}

/// Hands `rest` to rustls, processing each piece it takes, until it is all
/// taken or rustls takes no more for now (its plaintext buffer is full: the
/// only error reading from memory can give). `rest` keeps what was not taken.
fn feed(tls: &mut ClientConnection, rest: &mut &[u8]) -> Result<(), Got> {
    while !rest.is_empty() {
        match tls.read_tls(rest) {
            // close_notify came: rustls reads nothing more, ever.
            Ok(0) => {
                *rest = &[];
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
        if let Err(e) = tls.process_new_packets() {
            return Err(Got::Tls(e));
        }
    }
    Ok(())
}
