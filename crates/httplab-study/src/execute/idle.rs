//! The idle-connections workload (`kind = "idle"`): K connections are held
//! open against the server (connected and silent, or with an unfinished
//! request line as slowloris sends) while a normal client — one `httplab
//! load` run, closed-loop `users` or open loop at `rate` — measures latency
//! and errors. Afterwards the holder counts how many of its connections the
//! server still keeps open, closed, or answered, and the server's descriptor
//! and memory samples show how many it actually accepted and what one costs.
//!
//! The holder is its own small non-blocking connector (mio) rather than the
//! load engine: the engine's connections exist to carry requests, these must
//! carry none, and they must outlive the whole load run.

use std::collections::BTreeMap;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use httplab_model as m;
use socket2::{Domain, Protocol, Socket, Type};

use crate::plan::idle::HoldSpec;
use crate::spec::{IdleSend, MAX_IDLE_CONNS};

/// Connections the holder has in setup at once.
pub const MAX_CONNECTING: usize = 256;
/// What a `partial` connection sends: a request line without its CRLF.
pub const PARTIAL_REQUEST: &[u8] = b"GET / HTTP/1.1";
/// Held connections per source address at most (of ~28 000 ephemeral ports).
const PER_SOURCE: u64 = 20_000;
/// Source addresses used (127.0.0.33 …), apart from the load generator's 127.0.0.1–16.
const FIRST_SOURCE: u8 = 33;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum State {
    Connecting,
    Connected,
    Failed,
}

/// Connections held open; dropping it closes them all with a reset (no
/// TIME_WAIT left behind on either side).
pub struct Holder {
    socks: Vec<Option<mio::net::TcpStream>>,
    state: Vec<State>,
    requested: u64,
    not_attempted: u64,
    failed: BTreeMap<String, u64>,
    open_s: f64,
    send: IdleSend,
}

/// The holder's count at the end of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Census {
    /// Connections asked for.
    pub requested: u64,
    /// Connected by the end of the opening phase.
    pub connected: u64,
    /// Still in setup at the end of the opening phase (SYNs unanswered).
    pub pending: u64,
    /// Refused, reset or otherwise failed while connecting.
    pub failed: u64,
    /// Never attempted (the opening phase ended first).
    pub not_attempted: u64,
    /// Still open at the end of the run (as seen from the client).
    pub open_at_end: u64,
    /// Closed by the server (FIN) by the end of the run.
    pub closed_by_server: u64,
    /// Reset by the server by the end of the run.
    pub reset_by_server: u64,
    /// The server sent bytes on them (e.g. a 408 or 400 response).
    pub answered: u64,
    /// Seconds the opening phase took.
    pub open_s: f64,
    /// Failure classes while connecting, with counts ("refused 3, EMFILE 1").
    pub errors: String,
}

/// Source addresses to spread `conns` over: 127.0.0.33 … for an IPv4
/// loopback server (each source has its own ephemeral ports), else none.
fn sources(addr: SocketAddr, conns: u64) -> Vec<IpAddr> {
    let IpAddr::V4(ip) = addr.ip() else {
        return Vec::new();
    };
    if !ip.is_loopback() {
        return Vec::new();
    }
    // Where 127.0.0.0/8 is not all local (some sandboxes), keep the kernel's choice.
    if std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 0, FIRST_SOURCE), 0)).is_err() {
        return Vec::new();
    }
    let n = conns.div_ceil(PER_SOURCE).clamp(1, 64) as u8;
    (0..n)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, FIRST_SOURCE + i)))
        .collect()
}

fn err_class(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "refused".into(),
        io::ErrorKind::ConnectionReset => "reset".into(),
        io::ErrorKind::TimedOut => "timed out".into(),
        io::ErrorKind::AddrNotAvailable => "no local port".into(),
        _ if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => {
            "too many open files".into()
        }
        _ => e.to_string(),
    }
}

impl Holder {
    /// Opens `spec.conns` connections, at most [`MAX_CONNECTING`] in setup at
    /// once, for at most `spec.connect_within` (or until `stop`); those not
    /// connected by then are counted pending or not attempted.
    pub fn open(spec: &HoldSpec, stop: &AtomicBool) -> Result<Holder> {
        if spec.conns > MAX_IDLE_CONNS {
            bail!("{} idle connections: at most {MAX_IDLE_CONNS}", spec.conns);
        }
        let _ = httplab_sys::limits::raise_nofile_limit();
        let t0 = Instant::now();
        let deadline = t0 + spec.connect_within;
        let srcs = sources(spec.addr, spec.conns);
        let mut poll = mio::Poll::new()?;
        let mut events = mio::Events::with_capacity(1024);
        let k = spec.conns as usize;
        let mut h = Holder {
            socks: Vec::with_capacity(k),
            state: Vec::with_capacity(k),
            requested: spec.conns,
            not_attempted: 0,
            failed: BTreeMap::new(),
            open_s: 0.0,
            send: spec.send,
        };
        let mut connecting = 0usize;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            while h.socks.len() < k && connecting < MAX_CONNECTING && Instant::now() < deadline {
                let i = h.socks.len();
                let src = (!srcs.is_empty()).then(|| srcs[i % srcs.len()]);
                match start_connect(spec.addr, src) {
                    Ok((mut s, done)) => {
                        let reg = poll.registry().register(
                            &mut s,
                            mio::Token(i),
                            mio::Interest::WRITABLE | mio::Interest::READABLE,
                        );
                        if let Err(e) = reg {
                            *h.failed.entry(err_class(&e)).or_default() += 1;
                            h.socks.push(None);
                            h.state.push(State::Failed);
                            continue;
                        }
                        h.socks.push(Some(s));
                        if done {
                            h.state.push(State::Connected);
                            h.on_connected(i);
                        } else {
                            h.state.push(State::Connecting);
                            connecting += 1;
                        }
                    }
                    Err(e) => {
                        *h.failed.entry(err_class(&e)).or_default() += 1;
                        h.socks.push(None);
                        h.state.push(State::Failed);
                    }
                }
            }
            let now = Instant::now();
            if (h.socks.len() == k && connecting == 0) || now >= deadline {
                break;
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            match poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if h.state.get(i) != Some(&State::Connecting) {
                    continue;
                }
                match h.resolve(i) {
                    Some(State::Connected) => {
                        connecting -= 1;
                        h.state[i] = State::Connected;
                        h.on_connected(i);
                    }
                    Some(State::Failed) => {
                        connecting -= 1;
                        h.state[i] = State::Failed;
                        h.socks[i] = None;
                    }
                    _ => {}
                }
            }
        }
        h.not_attempted = spec.conns - h.socks.len() as u64;
        h.open_s = t0.elapsed().as_secs_f64();
        Ok(h)
    }

    /// Where a connection in setup stands now (None: still in setup).
    fn resolve(&mut self, i: usize) -> Option<State> {
        let s = self.socks.get(i)?.as_ref()?;
        match s.take_error() {
            Ok(Some(e)) | Err(e) => {
                *self.failed.entry(err_class(&e)).or_default() += 1;
                return Some(State::Failed);
            }
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => Some(State::Connected),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => None,
            Err(e) => {
                *self.failed.entry(err_class(&e)).or_default() += 1;
                Some(State::Failed)
            }
        }
    }

    fn on_connected(&mut self, i: usize) {
        if self.send == IdleSend::Partial {
            if let Some(s) = self.socks.get_mut(i).and_then(Option::as_mut) {
                // A few bytes into an empty send buffer: written whole or not at all.
                let _ = s.write(PARTIAL_REQUEST);
            }
        }
    }

    /// Counts where every connection stands now, without reading anything
    /// (a peek): open, closed or reset by the server, or answered.
    pub fn census(&mut self) -> Census {
        let mut c = Census {
            requested: self.requested,
            not_attempted: self.not_attempted,
            open_s: self.open_s,
            ..Default::default()
        };
        let mut buf = [0u8; 1];
        for i in 0..self.socks.len() {
            match self.state[i] {
                State::Failed => {
                    c.failed += 1;
                    continue;
                }
                State::Connecting => {
                    c.pending += 1;
                    match self.resolve(i) {
                        Some(State::Connected) => {}
                        _ => continue,
                    }
                }
                State::Connected => c.connected += 1,
            }
            let Some(s) = self.socks[i].as_ref() else {
                continue;
            };
            match s.peek(&mut buf) {
                Ok(0) => c.closed_by_server += 1,
                Ok(_) => c.answered += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.open_at_end += 1,
                Err(_) => c.reset_by_server += 1,
            }
        }
        // Failures found at census time (pending ones that failed since).
        c.errors = self
            .failed
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        c
    }
}

/// Starts a non-blocking connect; `true` when it completed at once.
fn start_connect(addr: SocketAddr, src: Option<IpAddr>) -> io::Result<(mio::net::TcpStream, bool)> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    // Closed with a reset: thousands of held connections leave no TIME_WAIT.
    sock.set_linger(Some(Duration::ZERO))?;
    if let Some(ip) = src {
        sock.bind(&SocketAddr::new(ip, 0).into())?;
    }
    let done = match sock.connect(&addr.into()) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
        Err(e) => return Err(e),
    };
    let s: std::net::TcpStream = sock.into();
    Ok((mio::net::TcpStream::from_std(s), done))
}

/// Records the census, the server's descriptors and memory before and
/// during the hold, and a note when the client was hurt, in the run's facts
/// (`config.facts.study.idle`).
pub fn annotate(run: &mut m::RunResult, c: &Census, send: IdleSend, before: &m::ServerSample) {
    // Peaks over the run's samples: the server may accept held connections
    // while the client already runs.
    let samples = run.server.as_ref().map_or(&[][..], |s| &s.samples[..]);
    let fds_during = samples.iter().map(|s| s.fds).max().unwrap_or(0);
    let rss_during = samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
    let held = c.connected + c.pending;
    // Whole bytes per connection, milliseconds of the opening phase: the
    // precision the census has always been recorded with.
    let rss_per_conn = (held > 0 && rss_during > 0).then(|| {
        let per = (rss_during as f64 - before.rss_bytes as f64) / held as f64;
        per.max(0.0).round()
    });
    let note = note(run, c, before.fds, fds_during);
    run.config.facts.study.idle = Some(m::IdleFacts {
        conns: c.requested,
        send,
        connected: c.connected,
        pending: c.pending,
        failed: c.failed,
        not_attempted: c.not_attempted,
        open_at_end: c.open_at_end,
        closed_by_server: c.closed_by_server,
        reset_by_server: c.reset_by_server,
        answered_by_server: c.answered,
        open_s: (c.open_s * 1e3).round() / 1e3,
        errors: (!c.errors.is_empty()).then(|| c.errors.clone()),
        server_fds_before: before.fds,
        server_fds_during: fds_during,
        server_rss_before_bytes: before.rss_bytes,
        server_rss_during_bytes: rss_during,
        server_rss_per_conn_bytes: rss_per_conn,
        note: (!note.is_empty()).then_some(note),
    });
}

/// What the reader must know about this run, in words (empty: nothing).
fn note(run: &m::RunResult, c: &Census, fds_before: u64, fds_during: u64) -> String {
    let mut parts = Vec::new();
    let e = &run.errors;
    if run.totals.replies == 0 {
        parts.push(format!(
            "the server stopped serving new clients: no replies, {} error(s) (client-timo {}, connrefused {}, connreset {}, other {})",
            e.total, e.client_timo, e.connrefused, e.connreset, e.other
        ));
    } else if e.total > 0 {
        parts.push(format!(
            "the client got {} error(s) beside {} replies (client-timo {}, connrefused {}, connreset {}, other {})",
            e.total, run.totals.replies, e.client_timo, e.connrefused, e.connreset, e.other
        ));
    }
    if c.pending + c.not_attempted + c.failed > 0 {
        parts.push(format!(
            "only {} of {} idle connections connected ({} still in setup, {} failed{}, {} not attempted)",
            c.connected,
            c.requested,
            c.pending,
            c.failed,
            if c.errors.is_empty() {
                String::new()
            } else {
                format!(": {}", c.errors)
            },
            c.not_attempted
        ));
    }
    let gone = c.closed_by_server + c.reset_by_server + c.answered;
    if gone > 0 {
        parts.push(format!(
            "the server ended {gone} of them during the run ({} closed, {} reset, {} answered)",
            c.closed_by_server, c.reset_by_server, c.answered
        ));
    }
    let added = fds_during.saturating_sub(fds_before);
    if c.connected >= 10 && added < c.connected / 2 && fds_during > 0 {
        parts.push(format!(
            "the server holds about {added} more descriptors: most held connections wait in the kernel (listen backlog or deferred accept), not in the server"
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_spread_only_for_loopback() {
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let s = sources(lo, 45_000);
        // Either spread (3 addresses for 45 000) or the kernel's choice
        // where 127.0.0.0/8 is not all local.
        assert!(s.is_empty() || s.len() == 3, "{s:?}");
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert!(sources(v6, 10).is_empty());
    }

    #[test]
    fn partial_request_is_unfinished() {
        assert!(!PARTIAL_REQUEST.ends_with(b"\n"));
    }

    #[test]
    fn census_of_a_refused_port_counts_failures() {
        // A port with no listener: every connect is refused (or, rarely,
        // still pending at the deadline); nothing is connected.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let spec = HoldSpec {
            addr,
            conns: 5,
            send: IdleSend::Silent,
            connect_within: Duration::from_secs(5),
        };
        let mut h = Holder::open(&spec, &AtomicBool::new(false)).unwrap();
        let c = h.census();
        assert_eq!(c.requested, 5);
        assert_eq!(c.connected, 0);
        assert_eq!(c.failed + c.pending + c.not_attempted, 5);
    }

    #[test]
    fn holds_connections_to_a_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let spec = HoldSpec {
            addr,
            conns: 20,
            send: IdleSend::Partial,
            connect_within: Duration::from_secs(10),
        };
        let mut h = Holder::open(&spec, &AtomicBool::new(false)).unwrap();
        // The backlog (not accept) completes the handshakes.
        let c = h.census();
        assert_eq!(c.connected, 20, "{c:?}");
        assert_eq!(c.open_at_end, 20, "{c:?}");
        // Accept one, read the partial request line, close it: the census sees it.
        let (mut s, _) = l.accept().unwrap();
        let mut got = vec![0u8; PARTIAL_REQUEST.len()];
        std::io::Read::read_exact(&mut s, &mut got).unwrap();
        assert_eq!(got, PARTIAL_REQUEST);
        drop(s);
        // Closing is asynchronous only in the peer's view of it; the FIN is
        // queued before drop returns on loopback, but poll until seen (bounded).
        let mut seen = h.census();
        for _ in 0..1000 {
            if seen.closed_by_server == 1 {
                break;
            }
            std::thread::yield_now();
            seen = h.census();
        }
        assert_eq!(seen.closed_by_server, 1, "{seen:?}");
        assert_eq!(seen.open_at_end, 19);
    }
}
