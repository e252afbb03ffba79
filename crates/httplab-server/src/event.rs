//! The event model: one reactor thread per worker, each with its own mio
//! `Poll`, its own SO_REUSEPORT listener, its own file cache and Date cache.
//! Nothing is shared on the request path except relaxed counters flushed
//! once per loop iteration.
//!
//! Connections live in a slab; their read and write buffers are borrowed
//! from the worker's pool while there is work and returned when the
//! connection goes idle, so an idle keep-alive connection costs its socket,
//! a `Session` and a slab slot, not 64 KiB of buffers. The loop, the
//! buffer pool, the accept gate, the shutdown and the sweep are the
//! worker lifecycle in `lifecycle.rs`, shared with the io_uring engine;
//! this module waits on epoll and moves bytes.
//!
//! A connection speaks HTTP/1.1 (its `Session`) or, with `--http2 on`,
//! what its TLS handshake chose by ALPN or, in cleartext, what its first
//! bytes say: a `Proto` per connection, decided once (`h2` or the HTTP/2
//! client preface selects the `H2Session`, which then reads through the
//! session's pooled read buffer). With `--http2 off` every
//! connection starts as HTTP/1.1 and its step is the HTTP/1.1 one alone.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::h2session::{decide, H2Session, Proto, Sniffed};
use crate::handler::Handler;
use crate::lifecycle::{self, out_of_descriptors, Core, Engine, Swept};
use crate::out::Flush;
use crate::session::{CloseReason, Session};
use crate::tls::{Fill, Transport};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
/// Reads per connection per turn before yielding to others.
const READS_PER_TURN: usize = 16;

pub(crate) struct Conn {
    stream: TcpStream,
    session: Session,
    proto: Proto,
    /// Plain or TLS: moves the session's bytes.
    tp: Transport,
    /// Lingering close: output done, write side shut, draining input until
    /// EOF or this instant.
    linger_until: Option<Instant>,
    /// Registered for writability too (only after a write would block:
    /// most responses fit the socket buffer, and a writable-at-once
    /// registration costs a wake-up per new connection).
    want_write: bool,
    /// Registered with epoll. A connection accepted with its request
    /// already there is answered first and registered only if it lives on
    /// ([`Worker::insert`]).
    registered: bool,
}

impl Swept for Conn {
    fn linger_until(&self) -> Option<Instant> {
        self.linger_until
    }

    fn deadline(&self, h: &Handler) -> Instant {
        match &self.proto {
            Proto::Http2(s) => s.deadline(h),
            _ => self.tp.deadline(&self.session, h),
        }
    }

    fn on_timeout(&mut self, h: &mut Handler, now: Instant) -> Option<CloseReason> {
        match &mut self.proto {
            Proto::Http2(s) => s.on_timeout(h, now),
            _ => self.tp.on_timeout(&mut self.session, h, now),
        }
    }

    fn begin_shutdown(&mut self) {
        match &mut self.proto {
            Proto::Http2(s) => s.begin_shutdown(),
            _ => self.session.begin_shutdown(),
        }
    }
}

/// A worker ready to run on its own thread.
pub struct Worker {
    poll: Poll,
    events: Events,
    listener: Option<TcpListener>,
    core: Core,
    conns: Vec<Option<Conn>>,
    read_on_accept: bool,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// `--http2 on`: new connections start in [`Proto::Sniff`].
    http2: bool,
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
        let read_on_accept = handler.config().defer_accept;
        let http2 = handler.config().http2;
        let core = Core::new(handler, max_conns, shutdown, tls.is_some());
        Ok((
            Worker {
                poll,
                events: Events::with_capacity(1024),
                listener: Some(listener),
                core,
                conns: Vec::new(),
                read_on_accept,
                tls,
                http2,
            },
            waker,
        ))
    }

    /// Runs until shutdown completes.
    pub fn run(mut self) {
        lifecycle::run(&mut self);
        for i in 0..self.conns.len() {
            self.close(i);
        }
        self.core.flush();
    }

    fn accept_loop(&mut self) {
        if self.listener.is_none() {
            return;
        }
        let now = self.core.now;
        if !self.core.gate.open(now) {
            return;
        }
        loop {
            if self.core.open >= self.core.max_conns {
                // At the cap: leave connections in the backlog; resumed when
                // one closes (or by the sweep).
                self.core.gate.pause(now);
                return;
            }
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((stream, addr)) => {
                    if self
                        .core
                        .needs_nodelay(|| stream.nodelay().unwrap_or(false))
                    {
                        let _ = stream.set_nodelay(true);
                    }
                    self.core.handler.stats().accepted();
                    self.insert(stream, Some(addr.ip()), now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.raw_os_error().is_some_and(out_of_descriptors) => {
                    // Out of descriptors: stop accepting (no busy loop) until
                    // a connection closes or the retry interval passes.
                    self.core.gate.pause(now);
                    return;
                }
                Err(_) => continue,
            }
        }
    }

    fn insert(&mut self, mut stream: TcpStream, peer: Option<std::net::IpAddr>, now: Instant) {
        let tp = match Transport::new(
            self.tls.as_ref(),
            self.core.handler.config().tls_handshake_timeout,
            now,
        ) {
            Ok(tp) => tp,
            Err(_) => {
                self.core.handler.stats().closed();
                return;
            }
        };
        let idx = match self.core.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        let registered = !self.read_on_accept;
        if registered
            && self
                .poll
                .registry()
                .register(&mut stream, Token(idx), Interest::READABLE)
                .is_err()
        {
            self.core.free.push(idx);
            self.core.handler.stats().closed();
            return;
        }
        self.conns[idx] = Some(Conn {
            stream,
            session: Session::new(peer, now),
            proto: if self.http2 {
                Proto::Sniff
            } else {
                Proto::Http1
            },
            tp,
            linger_until: None,
            want_write: false,
            registered,
        });
        self.core.open += 1;
        if self.read_on_accept {
            // With TCP_DEFER_ACCEPT the request is (almost always) already
            // here: answer it now instead of after another poll round, and
            // register the connection only if it is still open then, so one
            // answered and closed at once costs no epoll_ctl (measured in
            // BENCHMARKS.md, "A new connection answered before it is
            // registered with epoll").
            // Registering late loses no event: adding a descriptor to an
            // epoll set reports what is already readable or writable, edge
            // triggering included.
            self.drive(idx);
            self.register_late(idx);
        }
        // Otherwise no read attempt: the edge-triggered registration
        // reports data that is already waiting.
    }

    /// Registers a connection [`Worker::insert`] answered before
    /// registering it, if it is still open; closes it if that fails.
    fn register_late(&mut self, idx: usize) {
        let Some(Some(c)) = self.conns.get_mut(idx) else {
            return;
        };
        let interest = if c.want_write {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        let ok = self
            .poll
            .registry()
            .register(&mut c.stream, Token(idx), interest)
            .is_ok();
        c.registered = ok;
        if !ok {
            self.close(idx);
        }
    }

    fn close(&mut self, idx: usize) {
        if let Some(mut c) = self.conns.get_mut(idx).and_then(Option::take) {
            // Counters first, so they are current once the peer sees EOF.
            self.core.handler.flush_stats();
            // A descriptor was freed: a paused accept retries on the next
            // turn. Closing the socket (dropping `c`) removes it from the
            // epoll set; no deregister call needed.
            self.core.release(idx, &mut c.session, Instant::now);
        }
    }

    /// Advances one connection as far as it can go without blocking.
    fn drive(&mut self, idx: usize) {
        let Some(Some(c)) = self.conns.get_mut(idx) else {
            return;
        };
        let mut turn = Turn {
            core: &mut self.core,
            registry: self.poll.registry(),
        };
        let keep = turn.step(c, idx);
        self.core.pool.give_back(&mut c.session);
        if !keep {
            self.close(idx);
        }
    }
}

/// What driving one connection needs of its worker: everything but the
/// slab, so that the connection is driven where it lies. (Taking it out of
/// the slab for the turn and putting it back copied the whole `Conn` twice
/// per turn.)
struct Turn<'a> {
    core: &'a mut Core,
    registry: &'a Registry,
}

impl Turn<'_> {
    /// Returns false when the connection must be closed.
    #[inline]
    fn step(&mut self, c: &mut Conn, idx: usize) -> bool {
        match c.proto {
            Proto::Http1 => self.step_h1(c, idx, false),
            Proto::Sniff => self.step_sniff(c, idx),
            Proto::Http2(_) => self.step_h2(c, idx, false),
        }
    }

    /// [`Turn::step`] of an HTTP/1.1 connection. `drained`: a short read
    /// drained the socket: edge-triggered epoll reports the next arrival,
    /// so another read now would only return EAGAIN.
    fn step_h1(&mut self, c: &mut Conn, idx: usize, mut drained: bool) -> bool {
        let now = self.core.now;
        let fd = c.stream.as_raw_fd();
        let shutting = self.core.shutdown.begun();
        let mut reads = 0;
        self.core.pool.lend_wbuf(&mut c.session);
        self.core.pool.restore_rbuf(&mut c.session);
        loop {
            if c.linger_until.is_some() {
                return self.linger_drain(c, idx);
            }
            if c.tp.has_output(&c.session) {
                let mut written = 0;
                let core = &mut *self.core;
                let opts = core.send_path.for_write(&c.session, c.tp.is_plain());
                let r = c.tp.write(
                    &mut c.session,
                    fd,
                    core.handler.config().sendfile_chunk,
                    opts,
                    &mut core.scratch,
                    &mut written,
                );
                core.send_path.count_sent(opts, &mut c.session.out);
                let writes = std::mem::take(&mut c.session.out.writes);
                core.handler.count_io(written, writes);
                if written > 0 {
                    c.session.wrote(now);
                }
                match r {
                    Ok(Flush::Done) => {}
                    Ok(Flush::Blocked) => {
                        if !c.want_write {
                            c.want_write = true;
                            // Not yet registered: `register_late` asks for
                            // writability.
                            if c.registered
                                && self
                                    .registry
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
                        self.core.ready.push_back(idx);
                        return true;
                    }
                    Err(_) => return false,
                }
            }
            c.session.process(&mut self.core.handler, now, shutting);
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
                c.linger_until = Some(now + self.core.linger);
                continue;
            }
            if drained {
                return true;
            }
            if reads >= READS_PER_TURN {
                self.core.ready.push_back(idx);
                return true;
            }
            self.core.pool.attach_rbuf(&mut c.session);
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

    /// [`Turn::step`] of a connection whose protocol is not known yet:
    /// completes a TLS handshake (writing its records) or reads until the
    /// first bytes decide, then goes on as that protocol.
    fn step_sniff(&mut self, c: &mut Conn, idx: usize) -> bool {
        let fd = c.stream.as_raw_fd();
        let mut drained = false;
        loop {
            if c.tp.has_output(&c.session) {
                // Handshake records (the session has written nothing yet).
                let core = &mut *self.core;
                let mut written = 0;
                let opts = core.send_path.for_write(&c.session, c.tp.is_plain());
                let r = c.tp.write(
                    &mut c.session,
                    fd,
                    core.handler.config().sendfile_chunk,
                    opts,
                    &mut core.scratch,
                    &mut written,
                );
                let writes = std::mem::take(&mut c.session.out.writes);
                core.handler.count_io(written, writes);
                match r {
                    Ok(Flush::Done) => {}
                    Ok(Flush::Blocked) => return self.want_writable(c, idx),
                    Ok(Flush::Yield) => {
                        self.core.ready.push_back(idx);
                        return true;
                    }
                    Err(_) => return false,
                }
            }
            // Closing before a byte came (a graceful shutdown of an idle
            // connection): HTTP/1.1 closes it.
            let ended = c.session.input_ended() || c.session.closing();
            match decide(c.tp.alpn(), c.session.unread(), ended) {
                Sniffed::Http1 => {
                    c.proto = Proto::Http1;
                    return self.step_h1(c, idx, drained);
                }
                Sniffed::Http2 => {
                    let core = &*self.core;
                    let s = H2Session::accepted(
                        c.session.peer(),
                        core.now,
                        &core.handler,
                        core.shutdown.begun(),
                    );
                    c.proto = Proto::Http2(Box::new(s));
                    return self.step_h2(c, idx, drained);
                }
                Sniffed::Wait if drained => return true,
                Sniffed::Wait => {}
            }
            self.core.pool.full_rbuf(&mut c.session);
            match c.tp.fill(&mut c.session, fd, self.core.now) {
                Ok(Fill::Read { drained: d, .. }) => drained = d,
                Ok(Fill::Eof) => {}
                Ok(Fill::WouldBlock) | Ok(Fill::NoRoom) => return true,
                Err(_) => return false,
            }
        }
    }

    /// [`Turn::step`] of an HTTP/2 connection: writes the machine's
    /// output, reads into the session's read buffer and feeds what arrived
    /// to the machine at once. `drained` as in [`Turn::step_h1`].
    fn step_h2(&mut self, c: &mut Conn, idx: usize, mut drained: bool) -> bool {
        let now = self.core.now;
        let fd = c.stream.as_raw_fd();
        let budget = self.core.handler.config().sendfile_chunk;
        let mut reads = 0;
        // Bytes written this turn: a large response yields to the others
        // after `budget`, as over HTTP/1.1.
        let mut sent = 0u64;
        self.core.pool.restore_rbuf(&mut c.session);
        loop {
            if c.linger_until.is_some() {
                return self.linger_drain(c, idx);
            }
            let Proto::Http2(h2) = &mut c.proto else {
                return false;
            };
            if c.tp.has_output_of(&h2.out) {
                if sent >= budget as u64 {
                    self.core.ready.push_back(idx);
                    return true;
                }
                let core = &mut *self.core;
                let loopback = c.session.peer_is_loopback();
                let opts = core.send_path.for_out(&h2.out, loopback, c.tp.is_plain());
                let mut written = 0;
                let r = c.tp.write_out(
                    &mut h2.out,
                    fd,
                    budget,
                    opts,
                    &mut core.scratch,
                    &mut written,
                );
                core.send_path.count_sent(opts, &mut h2.out);
                let writes = std::mem::take(&mut h2.out.writes);
                core.handler.count_io(written, writes);
                sent += written;
                if written > 0 {
                    // Frames more waiting body data into the room made.
                    h2.wrote(now);
                }
                match r {
                    Ok(Flush::Done) => continue,
                    Ok(Flush::Blocked) => return self.want_writable(c, idx),
                    Ok(Flush::Yield) => {
                        self.core.ready.push_back(idx);
                        return true;
                    }
                    Err(_) => return false,
                }
            }
            if !c.session.unread().is_empty() {
                // The output is empty, so the machine takes input unless
                // it is closing (then the input is dropped).
                h2.feed(c.session.unread(), &mut self.core.handler, now);
                c.session.consume_unread();
                continue;
            }
            if h2.finished() {
                if c.tp.close_notify() {
                    continue;
                }
                if c.session.input_ended() {
                    return false;
                }
                // Drain what the peer still sends, so the close does not
                // turn into a reset that destroys the GOAWAY.
                let _ = c.stream.shutdown(std::net::Shutdown::Write);
                c.linger_until = Some(now + self.core.linger);
                continue;
            }
            if drained || !h2.wants_input() {
                return true;
            }
            if reads >= READS_PER_TURN {
                self.core.ready.push_back(idx);
                return true;
            }
            self.core.pool.attach_rbuf(&mut c.session);
            reads += 1;
            match c.tp.fill(&mut c.session, fd, now) {
                Ok(Fill::Read { drained: d, .. }) => drained = d,
                Ok(Fill::Eof) => h2.on_eof(),
                Ok(Fill::WouldBlock) | Ok(Fill::NoRoom) => return true,
                Err(_) => return false,
            }
        }
    }

    /// A write would block: asks for writability (once). False when the
    /// connection must be closed.
    fn want_writable(&mut self, c: &mut Conn, idx: usize) -> bool {
        if c.want_write {
            return true;
        }
        c.want_write = true;
        // Not yet registered: `register_late` asks for writability.
        !c.registered
            || self
                .registry
                .reregister(
                    &mut c.stream,
                    Token(idx),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .is_ok()
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
        self.core.ready.push_back(idx);
        true
    }
}

impl Engine for Worker {
    type Conn = Conn;

    fn core(&mut self) -> &mut Core {
        &mut self.core
    }

    fn listening(&self) -> bool {
        self.listener.is_some()
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                eprintln!("httplab serve: poll failed: {e}");
                false
            }
            _ => true,
        }
    }

    fn dispatch(&mut self) {
        let mut accept = false;
        // Taken out for the loop: driving a connection needs `self`.
        let events = std::mem::replace(&mut self.events, Events::with_capacity(0));
        for ev in events.iter() {
            match ev.token() {
                LISTENER => accept = true,
                WAKER => {}
                Token(i) => self.drive(i),
            }
        }
        self.events = events;
        if accept || self.core.gate.due(self.core.now) {
            self.accept_loop();
        }
    }

    fn drive(&mut self, idx: usize) {
        Worker::drive(self, idx);
    }

    fn close(&mut self, idx: usize) {
        Worker::close(self, idx);
    }

    fn stop_listening(&mut self) {
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut l);
        }
    }

    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn conn(&mut self, idx: usize) -> (Option<&mut Conn>, &mut Core) {
        (
            self.conns.get_mut(idx).and_then(Option::as_mut),
            &mut self.core,
        )
    }
}
