//! The HTTP/3 driver's connections: a UDP socket per connection (socket2:
//! its buffers and source address), a quinn endpoint on it, the QUIC
//! handshake (TLS 1.3 with ALPN h3; 0-RTT offered when a resumption ticket
//! allows it) within `--timeout` and the setup cap, the HTTP/3 connection
//! over it (`h3` through `h3-quinn`), closing, and what quinn counted
//! (bytes, datagrams, lost packets, how the connection ended). Statistics
//! go to the worker's [`Tally`]; the streams themselves are `http3.rs`'s.

use std::cell::{Cell, RefCell, RefMut};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use bytes::Bytes;
use socket2::{Domain, Protocol, Socket, Type};

use crate::clock::us;
use crate::stats::{h3_code_name, rec, transport_code_name, ErrClass, PeerClose, WorkerStats};
use crate::streams::with_deadline;
use crate::worker::{LocalAddrs, Tally, WorkerCtx};

/// The request side of an HTTP/3 connection.
pub(crate) type SendReq = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// UDP socket buffers (SO_SNDBUF, SO_RCVBUF) unless `--send-buffer` /
/// `--recv-buffer` say otherwise; the kernel caps them at wmem_max/rmem_max.
pub(crate) const UDP_BUFFER: usize = 2 << 20;

/// QUIC idle timeout without `--timeout` (quinn's default).
const DEFAULT_IDLE: Duration = Duration::from_secs(30);

/// HTTP/3 error code H3_NO_ERROR: a graceful close.
const H3_NO_ERROR: u32 = 0x100;

/// One HTTP/3 connection in use by a session (shared with its streams).
pub(crate) struct Conn {
    pub send: SendReq,
    pub quic: quinn::Connection,
    /// Polls the HTTP/3 connection (control streams, GOAWAY) until it
    /// closes; says whether this client's HTTP/3 layer closed it for a
    /// protocol error of the server's.
    driver: tokio::task::JoinHandle<bool>,
    start: Instant,
    pub measured: bool,
    in_setup: Cell<bool>,
    /// Bytes already counted from quinn's statistics (sent, received).
    counted: Cell<(u64, u64)>,
    pub replies: Cell<u64>,
}

impl Conn {
    /// The connection is gone (closed by either side, or its driver ended).
    pub fn gone(&self) -> bool {
        self.driver.is_finished() || self.quic.close_reason().is_some()
    }
}

/// The worker's connections and the statistics they share with its streams.
pub(crate) struct Conns<'a> {
    ctx: &'a WorkerCtx<'a>,
    config: quinn::ClientConfig,
    server_name: String,
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

/// The QUIC client configuration of one worker: the run's TLS settings
/// (verification, roots, resumption) with ALPN h3, and the transport's
/// idle timeout (`--timeout`, else 30 s) with keep-alives at a third of it.
pub(crate) fn client_config(ctx: &WorkerCtx<'_>) -> Result<quinn::ClientConfig> {
    let tls = ctx
        .tls
        .ok_or_else(|| anyhow!("--http3 runs over QUIC, which needs its TLS settings"))?;
    let mut cfg = (*tls.for_worker()).clone();
    cfg.alpn_protocols = vec![b"h3".to_vec()];
    cfg.enable_early_data = tls.reuse;
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(cfg)).map_err(|e| {
        anyhow!("--http3: the TLS settings leave QUIC without its initial cipher suite TLS_AES_128_GCM_SHA256 ({e})")
    })?;
    let mut qc = quinn::ClientConfig::new(Arc::new(quic));
    let idle = ctx.timeout().unwrap_or(DEFAULT_IDLE);
    let mut tr = quinn::TransportConfig::default();
    tr.max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok())
        .keep_alive_interval(Some(idle / 3));
    qc.transport_config(Arc::new(tr));
    Ok(qc)
}

impl<'a> Conns<'a> {
    pub fn new(ctx: &'a WorkerCtx<'a>, tally: Tally, win: Instant) -> Result<Conns<'a>> {
        let config = client_config(ctx)?;
        let server_name = match ctx.tls {
            Some(t) if !t.sni.is_empty() => t.sni.clone(),
            _ => ctx.spec.server.clone(),
        };
        Ok(Conns {
            ctx,
            config,
            server_name,
            timeout: ctx.timeout(),
            win,
            tally: RefCell::new(tally),
            open_conns: Cell::new(0),
            setup_now: Cell::new(0),
            setup_freed: tokio::sync::Notify::new(),
            local: RefCell::new(LocalAddrs::new(ctx.thread)),
        })
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

    /// Opens a connection: UDP socket, QUIC handshake, HTTP/3 SETTINGS. On
    /// failure the error is counted here and its class returned.
    pub async fn connect(&self, measured: bool) -> std::result::Result<Conn, ErrClass> {
        let now = Instant::now();
        self.tally().connection(measured, now, self.ctx.t0);
        self.setup_now.set(self.setup_now.get() + 1);
        let guard = SetupGuard(self);
        match self.open(measured, now).await {
            Ok((send, quic, driver)) => {
                std::mem::forget(guard);
                let open = self.open_conns.get() + 1;
                self.open_conns.set(open);
                if now >= self.win {
                    let mut t = self.tally();
                    t.st.max_open = t.st.max_open.max(open);
                }
                Ok(Conn {
                    send,
                    quic,
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

    async fn open(
        &self,
        measured: bool,
        start: Instant,
    ) -> std::result::Result<(SendReq, quinn::Connection, tokio::task::JoinHandle<bool>), ErrClass>
    {
        let spec = self.ctx.spec;
        let addr = self.ctx.addr;
        let deadline = self.timeout.map(|t| start + t);
        let local = self.local.borrow_mut().next(self.ctx.local_addrs);
        let sock = udp_socket(addr, local, spec.send_buffer, spec.recv_buffer)
            .map_err(|e| ErrClass::from_io(&e))?;
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            None,
            sock,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(|e| ErrClass::from_io(&e))?;
        let connecting = match endpoint.connect_with(self.config.clone(), addr, &self.server_name) {
            Ok(c) => c,
            Err(e) => {
                let mut a = self.tally();
                let st = a.of(measured);
                st.h3.handshake_failed += 1;
                st.h3.failed(|| format!("QUIC connection not started: {e}"));
                return Err(ErrClass::Other);
            }
        };
        let hs = async {
            match connecting.into_0rtt() {
                // A resumption ticket allows 0-RTT: the handshake's end
                // says whether the server took it.
                Ok((conn, accepted)) => {
                    let zero = accepted.await;
                    match conn.close_reason() {
                        Some(e) => Err(e),
                        None => Ok((conn, zero)),
                    }
                }
                Err(connecting) => connecting.await.map(|c| (c, false)),
            }
        };
        let quic = match with_deadline(deadline, hs).await {
            None => {
                let mut a = self.tally();
                let st = a.of(measured);
                st.h3.handshake_failed += 1;
                st.h3
                    .failed(|| "the QUIC handshake did not complete within --timeout".into());
                st.tls
                    .failed(|| "the QUIC handshake did not complete within --timeout".into());
                return Err(ErrClass::ClientTimo);
            }
            Some(Err(e)) => return Err(handshake_failed(self.tally().of(measured), &e)),
            Some(Ok((conn, zero))) => {
                self.handshaken(&conn, zero, measured, start)?;
                conn
            }
        };
        let h3c = h3_quinn::Connection::new(quic.clone());
        let built = with_deadline(deadline, h3::client::new(h3c)).await;
        let (mut driver, send) = match built {
            None => {
                quic.close(0u32.into(), b"");
                self.tally()
                    .of(measured)
                    .h3
                    .failed(|| "the HTTP/3 connection did not start within --timeout".into());
                return Err(ErrClass::ClientTimo);
            }
            Some(Err(e)) => {
                let class = quic
                    .close_reason()
                    .map_or(ErrClass::Other, |r| conn_class(&r));
                self.tally()
                    .of(measured)
                    .h3
                    .failed(|| format!("the HTTP/3 connection did not start: {e}"));
                return Err(class);
            }
            Some(Ok(x)) => x,
        };
        let driver = tokio::spawn(async move {
            let end = futures_util::future::poll_fn(|cx| driver.poll_close(cx)).await;
            h3_protocol_error(&end)
        });
        Ok((send, quic, driver))
    }

    /// Records a completed handshake; refuses a connection without ALPN h3.
    fn handshaken(
        &self,
        conn: &quinn::Connection,
        zero_rtt: bool,
        measured: bool,
        start: Instant,
    ) -> std::result::Result<(), ErrClass> {
        let took = us(Instant::now().saturating_duration_since(start));
        let alpn = conn
            .handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol)
            .map(|p| String::from_utf8_lossy(&p).into_owned());
        let mut a = self.tally();
        let st = a.of(measured);
        rec(&mut st.connect, took);
        rec(&mut st.h3.handshake, took);
        if zero_rtt {
            st.h3.handshakes_0rtt += 1;
        } else {
            st.h3.handshakes_1rtt += 1;
        }
        // The TLS block counts QUIC's TLS 1.3 handshakes (its time is the
        // QUIC handshake row).
        let t = &mut st.tls;
        if zero_rtt {
            t.resumed += 1;
        } else {
            t.full += 1;
        }
        *t.versions.entry("TLSv1_3").or_default() += 1;
        *t.alpn
            .entry(alpn.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        if alpn.as_deref() != Some("h3") {
            st.h3.failed(|| match &alpn {
                Some(p) => format!("server refused h3: ALPN chose {p}"),
                None => "server refused h3: it chose no ALPN protocol".into(),
            });
            conn.close(0u32.into(), b"");
            return Err(ErrClass::Tls);
        }
        Ok(())
    }

    /// Closes a connection (CONNECTION_CLOSE with H3_NO_ERROR) and counts
    /// what it carried and how it ended. Its streams are gone.
    pub async fn close(&self, conn: Rc<Conn>) {
        self.setup_done(&conn);
        // How it ended when it ended before we closed it.
        let ended = conn.quic.close_reason();
        // Whether our HTTP/3 layer ended it: its driver's verdict, when the
        // driver has finished (and no stream holds the connection any more).
        let mut broken = false;
        let conn = match Rc::try_unwrap(conn) {
            Ok(mut c) => {
                if c.driver.is_finished() {
                    broken = (&mut c.driver).await.unwrap_or(false);
                }
                Rc::new(c)
            }
            Err(c) => c,
        };
        self.closed(&conn, ended, broken);
    }

    /// Closes `conn` (CONNECTION_CLOSE with H3_NO_ERROR) and counts it;
    /// `ended`: how it had ended before; `broken`: the server broke HTTP/3.
    fn closed(&self, conn: &Conn, ended: Option<quinn::ConnectionError>, broken: bool) {
        conn.quic.close(H3_NO_ERROR.into(), b"");
        conn.driver.abort();
        let stats = conn.quic.stats();
        let (s0, r0) = conn.counted.get();
        let open = self.open_conns.get().saturating_sub(1);
        self.open_conns.set(open);
        let mut a = self.tally();
        if conn.measured {
            a.part.bytes_in += stats.udp_rx.bytes.saturating_sub(r0);
        }
        let st = a.of(conn.measured);
        st.bytes_sent += stats.udp_tx.bytes.saturating_sub(s0);
        st.bytes_recv += stats.udp_rx.bytes.saturating_sub(r0);
        let h = &mut st.h3;
        h.connections += 1;
        h.lost_packets += stats.path.lost_packets;
        h.datagrams_sent += stats.udp_tx.datagrams;
        h.datagrams_received += stats.udp_rx.datagrams;
        match ended {
            // Our HTTP/3 layer closed it: the server broke the protocol.
            Some(quinn::ConnectionError::LocallyClosed) if broken => h.protocol_error += 1,
            Some(e) => count_end(st, &e),
            None => {}
        }
        if conn.replies.get() > 0 {
            rec(
                &mut st.lifetime,
                us(Instant::now().saturating_duration_since(conn.start)),
            );
            st.conns_ok += 1;
        }
    }

    /// Moves quinn's byte counts into the statistics (called as streams
    /// end; `measured`: the stream's).
    pub fn count_bytes(&self, conn: &Conn, measured: bool) {
        let s = conn.quic.stats();
        let (sent, recv) = (s.udp_tx.bytes, s.udp_rx.bytes);
        let (s0, r0) = conn.counted.replace((sent, recv));
        let mut a = self.tally();
        if measured {
            a.part.bytes_in += recv.saturating_sub(r0);
        }
        let st = a.of(conn.measured);
        st.bytes_sent += sent.saturating_sub(s0);
        st.bytes_recv += recv.saturating_sub(r0);
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

/// A UDP socket for one connection: buffers, source address, non-blocking.
/// quinn uses GSO and GRO on it where the kernel has them.
fn udp_socket(
    to: SocketAddr,
    local: Option<IpAddr>,
    send: Option<usize>,
    recv: Option<usize>,
) -> io::Result<std::net::UdpSocket> {
    let domain = if to.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_send_buffer_size(send.unwrap_or(UDP_BUFFER));
    let _ = s.set_recv_buffer_size(recv.unwrap_or(UDP_BUFFER));
    let ip = local.unwrap_or(if to.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    });
    s.bind(&SocketAddr::new(ip, 0).into())?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// A handshake that failed: counted by class, with its words; its error class.
fn handshake_failed(st: &mut WorkerStats, e: &quinn::ConnectionError) -> ErrClass {
    let why = handshake_words(e);
    match e {
        quinn::ConnectionError::VersionMismatch => {
            st.h3.version_negotiation += 1;
            st.h3.failed(|| why);
            ErrClass::Other
        }
        quinn::ConnectionError::TimedOut => {
            st.h3.handshake_failed += 1;
            st.h3.failed(|| why.clone());
            st.tls.failed(|| why);
            ErrClass::ClientTimo
        }
        _ => {
            st.h3.handshake_failed += 1;
            st.h3.failed(|| why.clone());
            st.tls.failed(|| why);
            ErrClass::Tls
        }
    }
}

/// A failed handshake in words.
fn handshake_words(e: &quinn::ConnectionError) -> String {
    match e {
        quinn::ConnectionError::VersionMismatch => {
            "QUIC version negotiation: the server supports no version this client speaks".into()
        }
        quinn::ConnectionError::TimedOut => {
            "the QUIC handshake timed out (no valid answer from the server)".into()
        }
        quinn::ConnectionError::ConnectionClosed(c) => {
            let code: u64 = c.error_code.into();
            // TLS refused: a common cause is a URL with an IP address, to
            // which no SNI is sent (RFC 6066); some servers need one.
            let hint = if (0x100..0x200).contains(&code) {
                " (if the URL names an IP address, no SNI was sent, and some servers \
                 refuse a QUIC handshake without one: use the host name)"
            } else {
                ""
            };
            format!(
                "the server closed the connection during the QUIC handshake: {}{hint}",
                transport_code_name(code)
            )
        }
        quinn::ConnectionError::ApplicationClosed(c) => format!(
            "the server closed the connection during the QUIC handshake: {}",
            h3_code_name(c.error_code.into_inner())
        ),
        other => format!("the QUIC handshake failed: {other}"),
    }
}

/// Counts how a connection ended when it ended before this client closed it.
pub(crate) fn count_end(st: &mut WorkerStats, e: &quinn::ConnectionError) {
    let h = &mut st.h3;
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => {
            *h.closed_by_peer
                .entry(PeerClose::Application(c.error_code.into_inner()))
                .or_default() += 1;
        }
        quinn::ConnectionError::ConnectionClosed(c) => {
            *h.closed_by_peer
                .entry(PeerClose::Transport(c.error_code.into()))
                .or_default() += 1;
        }
        quinn::ConnectionError::Reset => {
            *h.closed_by_peer
                .entry(PeerClose::StatelessReset)
                .or_default() += 1;
        }
        quinn::ConnectionError::TimedOut => h.idle_timeout += 1,
        quinn::ConnectionError::TransportError(_) => h.protocol_error += 1,
        quinn::ConnectionError::VersionMismatch => h.version_negotiation += 1,
        quinn::ConnectionError::LocallyClosed | quinn::ConnectionError::CidsExhausted => {}
    }
}

/// Whether this client's HTTP/3 layer ended the connection with an error
/// code (the server broke HTTP/3: bad frames, a closed control stream ...).
fn h3_protocol_error(end: &h3::error::ConnectionError) -> bool {
    match end {
        h3::error::ConnectionError::Local {
            error: h3::error::LocalError::Application { code, .. },
            ..
        } => *code != h3::error::Code::H3_NO_ERROR,
        _ => false,
    }
}

/// The error class of a stream lost with its connection.
pub(crate) fn conn_class(e: &quinn::ConnectionError) -> ErrClass {
    match e {
        quinn::ConnectionError::TimedOut => ErrClass::ClientTimo,
        quinn::ConnectionError::ApplicationClosed(_)
        | quinn::ConnectionError::ConnectionClosed(_)
        | quinn::ConnectionError::Reset => ErrClass::ConnReset,
        _ => ErrClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names() {
        assert_eq!(h3_code_name(0x100), "H3_NO_ERROR");
        assert_eq!(h3_code_name(0x102), "H3_INTERNAL_ERROR");
        assert_eq!(
            transport_code_name(quinn::TransportErrorCode::PROTOCOL_VIOLATION.into()),
            "PROTOCOL_VIOLATION"
        );
        assert_eq!(
            transport_code_name(quinn::TransportErrorCode::crypto(0x2a).into()),
            "CRYPTO_ERROR(0x2a, TLS alert BadCertificate)"
        );
        assert_eq!(PeerClose::StatelessReset.name(), "STATELESS_RESET");
        assert_eq!(PeerClose::Application(0x1234_5678).name(), "0x12345678");
        assert_eq!(PeerClose::Transport(0x11).name(), "0x11");
        assert_eq!(PeerClose::Transport(0x10).name(), "NO_VIABLE_PATH");
        // The table agrees with quinn's names.
        assert_eq!(
            transport_code_name(quinn::TransportErrorCode::AEAD_LIMIT_REACHED.into()),
            format!("{:?}", quinn::TransportErrorCode::AEAD_LIMIT_REACHED)
        );
    }

    #[test]
    fn ends_are_counted_by_class() {
        let mut st = WorkerStats::new();
        count_end(&mut st, &quinn::ConnectionError::TimedOut);
        count_end(&mut st, &quinn::ConnectionError::Reset);
        count_end(&mut st, &quinn::ConnectionError::LocallyClosed);
        assert_eq!(st.h3.idle_timeout, 1);
        assert_eq!(
            st.h3.closed_by_peer.get(&PeerClose::StatelessReset),
            Some(&1)
        );
        assert_eq!(
            conn_class(&quinn::ConnectionError::TimedOut),
            ErrClass::ClientTimo
        );
        assert_eq!(
            conn_class(&quinn::ConnectionError::Reset),
            ErrClass::ConnReset
        );
    }

    #[test]
    fn udp_sockets_get_their_buffers() {
        let s = udp_socket("127.0.0.1:9".parse().unwrap(), None, None, Some(1 << 16)).unwrap();
        let s = Socket::from(s);
        // The kernel doubles what it is asked for (bookkeeping), within its caps.
        assert!(s.recv_buffer_size().unwrap() >= 1 << 16);
        assert!(s.local_addr().unwrap().as_socket().unwrap().port() != 0);
    }
}
