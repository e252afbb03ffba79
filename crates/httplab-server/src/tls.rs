//! HTTPS: rustls as a byte transformer between the socket and the session.
//!
//! The [`Session`] never knows whether it speaks over TLS. A connection's
//! [`Transport`] is either plain (bytes go straight between the socket and
//! the session) or TLS: ciphertext read from the socket is decrypted into
//! the session's read slot, and the session's output queue is encrypted on
//! its way out (see [`OutQueue::write_tls`]). Each concurrency model calls
//! the same four operations: [`Transport::fill`], [`Transport::write`],
//! [`Transport::deadline`] / [`Transport::on_timeout`] and
//! [`Transport::close_notify`].
//!
//! The crypto provider is *ring*. It builds from the crate registry with
//! nothing but a C compiler (its assembly is pre-generated for x86-64 and
//! AArch64). aws-lc-rs (rustls' default) also builds with only a C/C++
//! compiler on x86-64 and AArch64 Linux since 1.7 (cmake and Go only for
//! FIPS or other targets), but it compiles the whole AWS-LC library, several
//! times ring's build time on a two-core machine, and rcgen (the tests'
//! certificates) uses ring too. The cost: no post-quantum key exchange,
//! which rustls offers only with aws-lc-rs. ring's random numbers come from
//! the kernel (getrandom), so forked children share no RNG state.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::{ServerConfig as RustlsConfig, ServerConnection};

use crate::config::TlsFiles;
use crate::handler::Handler;
use crate::out::{FileOpts, Flush, OutQueue};
use crate::session::{CloseReason, Session};
use crate::sys;

/// ALPN protocols offered with `--http2 off`: HTTP/1.1 only. A client that
/// offers ALPN but not `http/1.1` (e.g. only `h2`) gets a fatal
/// `no_application_protocol` alert (RFC 7301, section 3.2); a client
/// offering no ALPN is served HTTP/1.1.
pub const ALPN: &[&[u8]] = &[b"http/1.1"];

/// ALPN protocols offered with `--http2 on`, in the server's preference
/// (rustls picks the first of these the client offers): `h2`, else
/// `http/1.1`. A client offering no ALPN speaks HTTP/1.1 (RFC 9113,
/// section 3.3: HTTP/2 over TLS is chosen by ALPN only).
pub const ALPN_H2: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Stateful session-ID cache entries (TLS 1.2 clients without tickets).
const SESSION_CACHE: usize = 4096;

/// Loads the certificate chain and key and builds the rustls server
/// configuration: TLS 1.2 and 1.3, ALPN http/1.1, session resumption by
/// stateless tickets (see `tickets`: every worker and forked child can
/// decrypt them) and by a session-ID cache. `http2`: ALPN offers `h2`
/// first ([`ALPN_H2`]). Errors are one line naming the file and the
/// problem.
pub fn load(files: &TlsFiles, http2: bool) -> anyhow::Result<Arc<RustlsConfig>> {
    let versions: &[&rustls::SupportedProtocolVersion] =
        &[&rustls::version::TLS13, &rustls::version::TLS12];
    let mut cfg = with_cert(files, versions)?;
    let alpn = if http2 { ALPN_H2 } else { ALPN };
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(cfg))
}

/// The TLS side of `--http3`: TLS 1.3 only (QUIC's), ALPN `h3`, session
/// resumption with the same tickets, and 0-RTT accepted (every method this
/// server serves is safe, the others are answered 405 without effect, so a
/// replayed early request changes nothing: see the `http3` module).
pub fn load_quic(files: &TlsFiles) -> anyhow::Result<Arc<quinn::crypto::rustls::QuicServerConfig>> {
    let mut cfg = with_cert(files, &[&rustls::version::TLS13])?;
    cfg.alpn_protocols = vec![b"h3".to_vec()];
    // quinn takes 0 (no 0-RTT) or u32::MAX (0-RTT, bounded by its own
    // stream windows).
    cfg.max_early_data_size = u32::MAX;
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(cfg)
        .map_err(|e| anyhow!("--http3: the TLS settings do not suit QUIC: {e}"))?;
    Ok(Arc::new(quic))
}

/// A rustls server configuration with the certificate chain and key of
/// `files`, the given protocol versions, a session cache and fork-safe
/// session tickets; no ALPN yet.
fn with_cert(
    files: &TlsFiles,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> anyhow::Result<RustlsConfig> {
    let cert_path = files.cert.display();
    let key_path = files.key.display();
    let cert_pem = std::fs::read(&files.cert)
        .map_err(|e| anyhow!("cannot read TLS certificate file {cert_path}: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("TLS certificate file {cert_path} is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err(anyhow!(
            "TLS certificate file {cert_path} holds no certificate (expected a PEM \"BEGIN CERTIFICATE\" block)"
        ));
    }
    let key_pem = std::fs::read(&files.key)
        .map_err(|e| anyhow!("cannot read TLS key file {key_path}: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
        pem::Error::NoItemsFound => {
            anyhow!("TLS key file {key_path} holds no private key (expected PEM PKCS#8, RSA or EC)")
        }
        e => anyhow!("TLS key file {key_path} is not valid PEM: {e}"),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = RustlsConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| anyhow!("TLS setup failed: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                anyhow!("TLS key file {key_path} does not match the certificate in {cert_path}")
            }
            e => anyhow!("cannot use TLS certificate {cert_path} with key {key_path}: {e}"),
        })?;
    cfg.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    cfg.ticketer = Arc::new(
        crate::tickets::Tickets::new().map_err(|_| anyhow!("cannot create TLS ticket keys"))?,
    );
    Ok(cfg)
}

/// The socket seen as `Read`/`Write` for rustls: `recv`, and `sendmsg`
/// with MSG_NOSIGNAL so rustls' queued records leave in one call. Records
/// whether the last read filled the buffer it was given.
struct FdIo {
    fd: RawFd,
    short: bool,
}

impl Read for FdIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = sys::recv(self.fd, buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl Write for FdIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sys::send(self.fd, buf, false)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sys::send_vectored(self.fd, bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One TLS connection's state besides rustls' own.
pub struct TlsConn {
    conn: ServerConnection,
    /// The handshake must be over by then.
    handshake_deadline: Instant,
    /// Decrypted bytes not yet handed to the session.
    plain: usize,
    /// The peer sent close_notify.
    peer_closed: bool,
    /// The last socket read returned less than asked (the socket is
    /// drained; edge-triggered readiness reports the next arrival).
    short: bool,
    /// close_notify was queued.
    notified: bool,
}

/// How a connection's bytes travel.
pub enum Transport {
    /// Cleartext HTTP: socket ↔ session directly.
    Plain,
    /// HTTPS.
    Tls(Box<TlsConn>),
}

/// What a TLS connection's handshake chose ([`Transport::alpn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// The handshake is not over yet.
    Handshaking,
    /// ALPN chose `h2`: the client's next bytes are the HTTP/2 preface.
    H2,
    /// `http/1.1`, or no ALPN at all: HTTP/1.1.
    Http1,
}

/// Result of [`Transport::fill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// `n` bytes reached the session (0: only TLS records that carried no
    /// data yet, e.g. handshake messages; call again or wait).
    /// `drained`: the socket had no more.
    Read { n: usize, drained: bool },
    /// The peer closed its sending side (the session was told).
    Eof,
    /// The socket has nothing now.
    WouldBlock,
    /// The session takes no input now (closing, backed up or full).
    NoRoom,
}

impl Transport {
    /// The transport of a connection accepted at `now`: TLS when `tls` is
    /// given.
    pub fn new(
        tls: Option<&Arc<RustlsConfig>>,
        handshake_timeout: Duration,
        now: Instant,
    ) -> io::Result<Transport> {
        let Some(cfg) = tls else {
            return Ok(Transport::Plain);
        };
        let mut conn = ServerConnection::new(Arc::clone(cfg)).map_err(io::Error::other)?;
        // Output is bounded by the caller (it feeds plaintext only once
        // everything before it was sent), so rustls need not refuse bytes.
        conn.set_buffer_limit(None);
        Ok(Transport::Tls(Box::new(TlsConn {
            conn,
            handshake_deadline: now + handshake_timeout,
            plain: 0,
            peer_closed: false,
            short: false,
            notified: false,
        })))
    }

    /// Moves input from the socket into the session's read slot
    /// (decrypting for TLS). One socket read at most.
    pub fn fill(&mut self, s: &mut Session, fd: RawFd, now: Instant) -> io::Result<Fill> {
        let t = match self {
            Transport::Plain => loop {
                let Some(slot) = s.read_slot() else {
                    return Ok(Fill::NoRoom);
                };
                let want = slot.len();
                match sys::recv(fd, slot) {
                    Ok(0) => {
                        s.on_eof();
                        return Ok(Fill::Eof);
                    }
                    Ok(n) => {
                        s.filled(n, now);
                        return Ok(Fill::Read {
                            n,
                            drained: n < want,
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Fill::WouldBlock),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            },
            Transport::Tls(t) => t,
        };
        loop {
            if t.plain > 0 {
                let Some(slot) = s.read_slot() else {
                    return Ok(Fill::NoRoom);
                };
                let n = match t.conn.reader().read(slot) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                    Err(e) => return Err(e),
                };
                t.plain = if n == 0 { 0 } else { t.plain.saturating_sub(n) };
                if n > 0 {
                    s.filled(n, now);
                    return Ok(Fill::Read {
                        n,
                        drained: t.plain == 0 && t.short,
                    });
                }
            }
            if t.peer_closed {
                s.on_eof();
                return Ok(Fill::Eof);
            }
            if s.read_slot().is_none() {
                return Ok(Fill::NoRoom);
            }
            let mut io = FdIo { fd, short: false };
            match t.conn.read_tls(&mut io) {
                Ok(0) => {
                    s.on_eof();
                    return Ok(Fill::Eof);
                }
                Ok(_) => t.short = io.short,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Fill::WouldBlock),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let was_handshaking = t.conn.is_handshaking();
            match t.conn.process_new_packets() {
                Ok(st) => {
                    t.plain = st.plaintext_bytes_to_read();
                    t.peer_closed = st.peer_has_closed();
                }
                Err(e) => {
                    // Garbage, a failed handshake or a bad record: send the
                    // alert rustls queued (best effort) and close quietly.
                    let _ = t.conn.write_tls(&mut FdIo { fd, short: false });
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
            if was_handshaking && !t.conn.is_handshaking() {
                // The idle clock starts when the handshake is over.
                s.filled(0, now);
            }
            if t.plain == 0 && !t.peer_closed {
                return Ok(Fill::Read {
                    n: 0,
                    drained: t.short,
                });
            }
        }
    }

    /// Whether anything waits to be written (session output, or TLS
    /// records such as handshake messages, tickets and alerts).
    #[inline]
    pub fn has_output(&self, s: &Session) -> bool {
        self.has_output_of(&s.out)
    }

    /// [`Transport::has_output`] for any output queue (an HTTP/2
    /// connection's).
    #[inline]
    pub fn has_output_of(&self, out: &OutQueue) -> bool {
        !out.is_empty()
            || match self {
                Transport::Plain => false,
                Transport::Tls(t) => t.conn.wants_write(),
            }
    }

    /// The protocol ALPN chose; `None` in cleartext (no handshake: the
    /// first bytes tell).
    pub fn alpn(&self) -> Option<Alpn> {
        match self {
            Transport::Plain => None,
            Transport::Tls(t) if t.conn.is_handshaking() => Some(Alpn::Handshaking),
            Transport::Tls(t) => Some(match t.conn.alpn_protocol() {
                Some(b"h2") => Alpn::H2,
                _ => Alpn::Http1,
            }),
        }
    }

    /// Cleartext: file bytes leave by the path the caller picks (TLS
    /// always reads with pread).
    pub fn is_plain(&self) -> bool {
        matches!(self, Transport::Plain)
    }

    /// Writes the session's output (encrypting for TLS) until done,
    /// blocked, or about `budget` bytes were sent. `written` grows by the
    /// bytes put on the wire; `scratch` is the caller's reusable buffer for
    /// file chunks on their way into TLS. Inlined: on the cleartext path it
    /// is one call of the output queue's write (measured by callgrind).
    #[inline]
    pub fn write(
        &mut self,
        s: &mut Session,
        fd: RawFd,
        budget: usize,
        opts: FileOpts,
        scratch: &mut Vec<u8>,
        written: &mut u64,
    ) -> io::Result<Flush> {
        self.write_out(&mut s.out, fd, budget, opts, scratch, written)
    }

    /// [`Transport::write`] of any output queue (an HTTP/2 connection's).
    #[inline]
    pub fn write_out(
        &mut self,
        out: &mut OutQueue,
        fd: RawFd,
        budget: usize,
        opts: FileOpts,
        scratch: &mut Vec<u8>,
        written: &mut u64,
    ) -> io::Result<Flush> {
        match self {
            Transport::Plain => out.write_to(fd, budget, opts, scratch, written),
            Transport::Tls(t) => out.write_tls(
                &mut t.conn,
                &mut |conn: &mut ServerConnection| conn.write_tls(&mut FdIo { fd, short: false }),
                scratch,
                budget,
                written,
            ),
        }
    }

    /// When the driver must call [`Transport::on_timeout`]: the handshake
    /// deadline while handshaking, else the session's.
    pub fn deadline(&self, s: &Session, h: &Handler) -> Instant {
        match self {
            Transport::Tls(t) if t.conn.is_handshaking() => t.handshake_deadline,
            _ => s.deadline(h),
        }
    }

    /// A deadline may have passed: `Some` means close at once (an
    /// unfinished handshake is closed without a response).
    pub fn on_timeout(
        &mut self,
        s: &mut Session,
        h: &mut Handler,
        now: Instant,
    ) -> Option<CloseReason> {
        match self {
            Transport::Tls(t) if t.conn.is_handshaking() => {
                (now >= t.handshake_deadline).then_some(CloseReason::Timeout)
            }
            _ => s.on_timeout(h, now),
        }
    }

    /// The session is finished: for an established TLS connection, queues
    /// close_notify once and returns true (write it, then close).
    pub fn close_notify(&mut self) -> bool {
        match self {
            Transport::Tls(t) if !t.notified && !t.conn.is_handshaking() => {
                t.notified = true;
                t.conn.send_close_notify();
                true
            }
            _ => false,
        }
    }

    /// Whether closing should drain the peer's input first: the session's
    /// rule, plus decrypted input the session never took.
    pub fn needs_linger(&self, s: &Session) -> bool {
        s.needs_linger()
            || match self {
                Transport::Plain => false,
                Transport::Tls(t) => t.plain > 0,
            }
    }

    /// Decrypted input waits for the session (a blocking driver must not
    /// wait for the socket then).
    pub fn has_buffered_input(&self) -> bool {
        match self {
            Transport::Plain => false,
            Transport::Tls(t) => t.plain > 0 || t.peer_closed,
        }
    }
}
