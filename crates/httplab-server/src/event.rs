//! The event model: one reactor thread per worker, each with its own mio
//! `Poll`, its own SO_REUSEPORT listener, its own file cache and Date cache.
//! Nothing is shared on the request path except relaxed counters flushed
//! once per loop iteration.
//!
//! Connections live in a slab; their read and write buffers are borrowed
//! from the worker's pool while there is work and returned when the
//! connection goes idle, so an idle keep-alive connection costs its socket,
//! a `Session` and a slab slot, not 64 KiB of buffers.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::handler::Handler;
use crate::out::Flush;
use crate::session::Session;
use crate::tls::{Fill, Transport};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
/// Reads per connection per turn before yielding to others.
const READS_PER_TURN: usize = 16;
/// Spare buffers kept per worker.
const SPARE_BUFFERS: usize = 64;
/// How long a paused accept waits before retrying on its own.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

struct Conn {
    stream: TcpStream,
    session: Session,
    /// Plain or TLS: moves the session's bytes.
    tp: Transport,
    /// Lingering close: output done, write side shut, draining input until
    /// EOF or this instant.
    linger_until: Option<Instant>,
    /// Registered for writability too (only after a write would block:
    /// most responses fit the socket buffer, and a writable-at-once
    /// registration costs a wake-up per new connection).
    want_write: bool,
}

/// A worker ready to run on its own thread.
pub struct Worker {
    poll: Poll,
    listener: Option<TcpListener>,
    handler: Handler,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    max_conns: usize,
    rbufs: Vec<Vec<u8>>,
    wbufs: Vec<Vec<u8>>,
    rbuf_size: usize,
    ready: VecDeque<usize>,
    accept_paused_until: Option<Instant>,
    shutdown: Arc<AtomicBool>,
    shutting_down: Option<Instant>,
    sweep_every: Duration,
    linger: Duration,
    read_on_accept: bool,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// File chunks on their way into TLS, or read with pread (one per worker).
    scratch: Vec<u8>,
    /// The clock reading of this loop turn.
    now: Instant,
    /// Whether accepted sockets inherit the listener's TCP_NODELAY (None:
    /// not known before the first accept).
    nodelay_inherited: Option<bool>,
}

impl Worker {
    /// Builds a worker around `listener` (already bound and listening,
    /// non-blocking). Returns the worker and a waker for shutdown.
    pub fn new(
        listener: std::net::TcpListener,
        handler: Handler,
        max_conns: usize,
        shutdown: Arc<AtomicBool>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> io::Result<(Worker, Arc<Waker>)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut listener = TcpListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let cfg = handler.config();
        let mut shortest = cfg
            .idle_timeout
            .min(cfg.header_timeout)
            .min(cfg.send_timeout)
            .min(Duration::from_secs(1));
        if tls.is_some() {
            shortest = shortest.min(cfg.tls_handshake_timeout);
        }
        let sweep_every =
            (shortest / 4).clamp(Duration::from_millis(5), Duration::from_millis(250));
        let linger = cfg.idle_timeout.min(Duration::from_secs(2));
        let rbuf_size = cfg.pipeline_buffer.max(1024);
        let read_on_accept = cfg.defer_accept;
        Ok((
            Worker {
                poll,
                listener: Some(listener),
                handler,
                conns: Vec::new(),
                free: Vec::new(),
                open: 0,
                max_conns: max_conns.max(1),
                rbufs: Vec::new(),
                wbufs: Vec::new(),
                rbuf_size,
                ready: VecDeque::new(),
                accept_paused_until: None,
                shutdown,
                shutting_down: None,
                sweep_every,
                linger,
                read_on_accept,
                tls,
                scratch: Vec::new(),
                now: Instant::now(),
                nodelay_inherited: None,
            },
            waker,
        ))
    }

    /// Runs until shutdown completes.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        // One monotonic clock reading per loop turn, taken after the poll
        // returns and used for every connection driven in that turn (timers
        // have millisecond granularity; a turn takes microseconds).
        self.now = Instant::now();
        let mut next_sweep = self.now + self.sweep_every;
        loop {
            let now = self.now;
            let timeout = if self.ready.is_empty() {
                let until = match self.accept_paused_until {
                    Some(t) if self.listener.is_some() => t.min(next_sweep),
                    _ => next_sweep,
                };
                until.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    eprintln!("httplab serve: poll failed: {e}");
                    break;
                }
            }
            self.now = Instant::now();
            self.handler.tick_at(self.now);
            let mut accept = false;
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => accept = true,
                    WAKER => {}
                    Token(i) => self.drive(i),
                }
            }
            if accept || self.accept_paused_until.is_some_and(|t| self.now >= t) {
                self.accept_loop();
            }
            let n = self.ready.len();
            for _ in 0..n {
                if let Some(i) = self.ready.pop_front() {
                    self.drive(i);
                }
            }
            let now = self.now;
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + self.sweep_every;
            }
            if self.shutdown.load(Ordering::Acquire) && self.shutting_down.is_none() {
                self.begin_shutdown(now);
            }
            self.handler.flush();
            if let Some(deadline) = self.shutting_down {
                if self.open == 0 || now >= deadline {
                    break;
                }
            }
        }
        for i in 0..self.conns.len() {
            self.close(i);
        }
        self.handler.flush();
    }

    fn begin_shutdown(&mut self, now: Instant) {
        let timeout = self.handler.config().shutdown_timeout;
        self.shutting_down = Some(now + timeout);
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut l);
        }
        for i in 0..self.conns.len() {
            if let Some(c) = self.conns[i].as_mut() {
                if c.linger_until.is_some() {
                    // Its response is complete; nothing is in flight.
                    self.close(i);
                    continue;
                }
                c.session.begin_shutdown();
                self.drive(i);
            }
        }
    }

    fn accept_loop(&mut self) {
        if self.listener.is_none() {
            return;
        }
        let now = self.now;
        if let Some(t) = self.accept_paused_until {
            if now < t {
                return;
            }
            self.accept_paused_until = None;
        }
        loop {
            if self.open >= self.max_conns {
                // At the cap: leave connections in the backlog; resumed when
                // one closes (or by the sweep).
                self.accept_paused_until = Some(now + ACCEPT_RETRY);
                return;
            }
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((stream, addr)) => {
                    // TCP_NODELAY, SO_SNDBUF and TCP_NOTSENT_LOWAT were set on
                    // the listener and are inherited; checked once.
                    if self.nodelay_inherited.is_none() {
                        self.nodelay_inherited = Some(stream.nodelay().unwrap_or(false));
                    }
                    if self.nodelay_inherited == Some(false) {
                        let _ = stream.set_nodelay(true);
                    }
                    self.handler.stats().accepted();
                    self.insert(stream, Some(addr.ip()), now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE)
                            | Some(libc::ENFILE)
                            | Some(libc::ENOBUFS)
                            | Some(libc::ENOMEM)
                    ) =>
                {
                    // Out of descriptors: stop accepting (no busy loop) until
                    // a connection closes or the retry interval passes.
                    self.accept_paused_until = Some(now + ACCEPT_RETRY);
                    return;
                }
                Err(_) => continue,
            }
        }
    }

    fn insert(&mut self, mut stream: TcpStream, peer: Option<std::net::IpAddr>, now: Instant) {
        let tp = match Transport::new(
            self.tls.as_ref(),
            self.handler.config().tls_handshake_timeout,
            now,
        ) {
            Ok(tp) => tp,
            Err(_) => {
                self.handler.stats().closed();
                return;
            }
        };
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        if self
            .poll
            .registry()
            .register(&mut stream, Token(idx), Interest::READABLE)
            .is_err()
        {
            self.free.push(idx);
            self.handler.stats().closed();
            return;
        }
        self.conns[idx] = Some(Conn {
            stream,
            session: Session::new(peer, now),
            tp,
            linger_until: None,
            want_write: false,
        });
        self.open += 1;
        if self.read_on_accept {
            // With TCP_DEFER_ACCEPT the request is (almost always) already
            // here: answer it now instead of after another poll round.
            self.drive(idx);
        }
        // Otherwise no read attempt: the edge-triggered registration
        // reports data that is already waiting.
    }

    fn close(&mut self, idx: usize) {
        if let Some(mut c) = self.conns.get_mut(idx).and_then(Option::take) {
            // Counters first, so they are current once the peer sees EOF.
            self.handler.flush_stats();
            // Closing the socket removes it from the epoll set; no
            // deregister call needed.
            self.give_back(&mut c.session);
            self.free.push(idx);
            self.open -= 1;
            self.handler.stats().closed();
            if self.accept_paused_until.is_some() {
                // A descriptor was freed: retry accepting on the next turn.
                self.accept_paused_until = Some(Instant::now());
            }
        }
    }

    fn give_back(&mut self, s: &mut Session) {
        s.return_buffers(
            &mut self.rbufs,
            &mut self.wbufs,
            self.rbuf_size,
            SPARE_BUFFERS,
        );
    }

    fn sweep(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let Some(c) = self.conns[i].as_mut() else {
                continue;
            };
            if let Some(t) = c.linger_until {
                if now >= t {
                    self.close(i);
                }
                continue;
            }
            if now >= c.tp.deadline(&c.session, &self.handler) {
                match c.tp.on_timeout(&mut c.session, &mut self.handler, now) {
                    Some(_) => self.close(i),
                    None => self.drive(i),
                }
            }
        }
    }

    /// Advances one connection as far as it can go without blocking.
    fn drive(&mut self, idx: usize) {
        let Some(Some(mut c)) = self.conns.get_mut(idx).map(Option::take) else {
            return;
        };
        let keep = self.step(&mut c, idx);
        self.give_back(&mut c.session);
        self.conns[idx] = Some(c);
        if !keep {
            self.close(idx);
        }
    }

    /// Returns false when the connection must be closed.
    fn step(&mut self, c: &mut Conn, idx: usize) -> bool {
        let now = self.now;
        let fd = c.stream.as_raw_fd();
        let shutting = self.shutting_down.is_some();
        let mut reads = 0;
        // A short read drained the socket: edge-triggered epoll reports the
        // next arrival, so another read now would only return EAGAIN.
        let mut drained = false;
        if let Some(b) = self.wbufs.pop() {
            if let Some(b) = c.session.attach_wbuf(b) {
                // Keep only real buffers in the pool (a fresh session hands
                // back an unallocated one).
                if b.capacity() > 0 {
                    self.wbufs.push(b);
                }
            }
        }
        if c.session.has_rbuf() && c.session.rbuf_smaller_than(self.rbuf_size) {
            // Leftover bytes were parked in a small buffer: back to full size.
            let b = self.rbufs.pop().unwrap_or_else(|| vec![0; self.rbuf_size]);
            drop(c.session.grow_rbuf(b));
        }
        loop {
            if c.linger_until.is_some() {
                return self.linger_drain(c, idx);
            }
            if c.tp.has_output(&c.session) {
                let mut written = 0;
                let r = c.tp.write(
                    &mut c.session,
                    fd,
                    self.handler.config().sendfile_chunk,
                    self.handler.file_opts(),
                    &mut self.scratch,
                    &mut written,
                );
                let writes = std::mem::take(&mut c.session.out.writes);
                self.handler.count_io(written, writes);
                if written > 0 {
                    c.session.wrote(now);
                }
                match r {
                    Ok(Flush::Done) => {}
                    Ok(Flush::Blocked) => {
                        if !c.want_write {
                            c.want_write = true;
                            if self
                                .poll
                                .registry()
                                .reregister(
                                    &mut c.stream,
                                    Token(idx),
                                    Interest::READABLE | Interest::WRITABLE,
                                )
                                .is_err()
                            {
                                return false;
                            }
                        }
                        return true;
                    }
                    Ok(Flush::Yield) => {
                        self.ready.push_back(idx);
                        return true;
                    }
                    Err(_) => return false,
                }
            }
            c.session.process(&mut self.handler, now, shutting);
            if c.tp.has_output(&c.session) {
                continue;
            }
            if c.session.finished() {
                if c.tp.close_notify() {
                    continue;
                }
                if !c.tp.needs_linger(&c.session) {
                    return false;
                }
                let _ = c.stream.shutdown(std::net::Shutdown::Write);
                c.linger_until = Some(now + self.linger);
                continue;
            }
            if drained {
                return true;
            }
            if reads >= READS_PER_TURN {
                self.ready.push_back(idx);
                return true;
            }
            if !c.session.has_rbuf() {
                let b = self.rbufs.pop().unwrap_or_else(|| vec![0; self.rbuf_size]);
                if let Some(b) = c.session.attach_rbuf(b) {
                    self.rbufs.push(b);
                }
            }
            reads += 1;
            match c.tp.fill(&mut c.session, fd, now) {
                Ok(Fill::Read { drained: d, .. }) => drained = d,
                Ok(Fill::Eof) => {}
                Ok(Fill::WouldBlock) | Ok(Fill::NoRoom) => return true,
                // Includes a failed TLS handshake or garbage instead of a
                // ClientHello: closed quietly.
                Err(_) => return false,
            }
        }
    }

    fn linger_drain(&mut self, c: &mut Conn, idx: usize) -> bool {
        let mut scratch = [0u8; 4096];
        for _ in 0..64 {
            match c.stream.read(&mut scratch) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        // Still more to drain: come back after the others had a turn.
        self.ready.push_back(idx);
        true
    }
}
