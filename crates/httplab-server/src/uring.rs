//! The event model's io_uring engine (`--io uring`): one ring per worker,
//! each with its own SO_REUSEPORT listener, file cache and Date cache, like
//! `event.rs`, but instead of a readiness wait plus one system call per
//! read and per write, each loop turn makes one `io_uring_enter` that
//! submits every accept, receive, send and close queued during the turn and
//! reaps the completions. The session, handler, file cache and output queue
//! are shared with the epoll engine: this module only moves bytes.
//!
//! With TCP_DEFER_ACCEPT (the default) an accepted connection's request
//! is already there: its first turn reads it with one `recv`, answers with
//! a direct send and, if the connection is done (`Connection: close`),
//! closes it with no receive ever armed; only a connection that lives on
//! joins the ring's receives (as the epoll engine answers before it
//! registers). That made a new connection about as cheap as on epoll:
//! arming a multishot receive and cancelling it at the close had cost
//! about 1.3 us of kernel time more (BENCHMARKS.md, "io_uring by default").
//!
//! Per connection one multishot receive stays armed (re-armed only after
//! it ends: end of input, no free buffer, cancelled), and at most one send
//! (or a writability poll) is in flight. Receives use the ring's provided
//! buffers and are copied into the session (so an idle connection holds no
//! buffer); what arrives while the session cannot take it (output backed
//! up, read buffer full) is parked in the connection's overflow and the
//! receive is cancelled until the session has room again. A send lends
//! the session's output buffer to the ring (`httplab_sys::uring`, which owns
//! all memory the kernel uses) until its completion brings it back; until
//! then the session is not processed. Output with file
//! segments (large files) goes out through the epoll engine's synchronous
//! `write_to` (sendfile or pread + sendmsg on the non-blocking socket), with
//! a one-shot POLLOUT when the socket is full: those responses are
//! dominated by copying, not by system calls. A closing connection cancels
//! its operations and keeps its slot until their completions are reaped;
//! user data carries a generation, so a completion never reaches a reused
//! slot. Cleartext only: TLS stays on epoll.
//!
//! With `--http2 on` a connection's first bytes decide its protocol (the
//! HTTP/2 client preface: h2c by prior knowledge, as on epoll); an HTTP/2
//! connection's receives still land in the session's read buffer, which
//! the `H2Session` consumes at once, and its frames leave through the same
//! lent send (or the synchronous file path) from the machine's own output
//! queue.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use crate::h2session::{sniff, H2Session, Proto, Sniffed};
use crate::handler::Handler;
use crate::lifecycle::{self, out_of_descriptors, Core, Engine, Swept};
use crate::out::{Flush, OutQueue};
use crate::session::{CloseReason, Session};
use crate::tls::{Fill, Transport};
use httplab_sys::net;
use httplab_sys::uring::{self as ur, Completion, Lent, Ring, Setup};

/// Submission queue entries (the completion queue is 4 times larger; the
/// kernel keeps overflowing completions rather than dropping them).
const SQ_ENTRIES: u32 = 1024;
/// Provided receive buffers per worker (a power of two) and their size.
const RECV_BUFS: u16 = 256;
const RECV_BUF_SIZE: usize = 16 * 1024;
/// Accepts kept in flight.
const ACCEPTS: usize = 8;
/// Most bytes parked per connection while its multishot receive is being
/// cancelled. A cancel takes effect on the next `io_uring_enter`; until
/// then the kernel may deliver what one wake-up reads (at most 32
/// receives of `RECV_BUF_SIZE`, 512 KiB). A peer that gets past this has
/// pipelined over a megabyte without reading its responses: closed.
const MAX_OVERFLOW: usize = 1 << 20;
/// Longest wait for cancelled operations at exit (then their memory is
/// leaked instead of freed).
const EXIT_DRAIN: Duration = Duration::from_secs(2);

const OP_ACCEPT: u8 = 1;
const OP_RECV: u8 = 2;
const OP_SEND: u8 = 3;
const OP_POLLOUT: u8 = 4;
const OP_WAKE: u8 = 5;
/// Cancels and closes: nothing to do on completion.
const OP_IGNORE: u8 = 6;

fn ud(op: u8, slot: usize, gen: u32) -> u64 {
    ur::user_data(op, slot as u32, gen)
}

fn split(ud: u64) -> (u8, usize, u32) {
    let (op, slot, gen) = ur::split(ud);
    (op, slot as usize, gen)
}

pub(crate) struct Conn {
    fd: OwnedFd,
    session: Session,
    /// The protocol it speaks.
    proto: Proto,
    /// A (multishot) receive is armed.
    recv: bool,
    /// Its cancellation was requested (input is parked in `overflow`).
    recv_cancelled: bool,
    /// Input that arrived while the session could not take it, oldest
    /// first; fed to the session before anything newer (empty and
    /// unallocated unless a peer outruns its responses).
    overflow: Vec<u8>,
    /// The peer's end of input arrived behind `overflow`.
    eof_pending: bool,
    /// Bytes of the send in flight (0: none).
    send: usize,
    /// A writability poll is in flight (synchronous file output blocked).
    pollout: bool,
    /// Lingering close: output done, write side shut, draining input until
    /// EOF or this instant.
    linger_until: Option<Instant>,
    /// Closing: operations were cancelled; the descriptor is closed and the
    /// slot freed once none is in flight.
    dead: bool,
}

impl Conn {
    fn busy(&self) -> bool {
        self.recv || self.send > 0 || self.pollout
    }

    /// The output queue a send takes from and gives back to.
    fn out(&mut self) -> &mut OutQueue {
        match &mut self.proto {
            Proto::Http2(h2) => &mut h2.out,
            _ => &mut self.session.out,
        }
    }

    /// Bytes went out: the machine may go on (the next response, more
    /// body frames into the room made).
    fn wrote(&mut self, now: Instant) {
        match &mut self.proto {
            Proto::Http2(h2) => h2.wrote(now),
            _ => self.session.wrote(now),
        }
    }

    /// The peer's end of input.
    fn on_eof(&mut self) {
        match &mut self.proto {
            Proto::Http2(h2) => h2.on_eof(),
            _ => self.session.on_eof(),
        }
    }
}

impl Swept for Conn {
    fn linger_until(&self) -> Option<Instant> {
        self.linger_until
    }

    fn deadline(&self, h: &Handler) -> Instant {
        match &self.proto {
            Proto::Http2(s) => s.deadline(h),
            _ => self.session.deadline(h),
        }
    }

    fn on_timeout(&mut self, h: &mut Handler, now: Instant) -> Option<CloseReason> {
        match &mut self.proto {
            Proto::Http2(s) => s.on_timeout(h, now),
            _ => self.session.on_timeout(h, now),
        }
    }

    fn begin_shutdown(&mut self) {
        match &mut self.proto {
            Proto::Http2(s) => s.begin_shutdown(),
            _ => self.session.begin_shutdown(),
        }
    }
}

/// What pushing a connection's output did ([`Worker::push`]).
enum Push {
    /// Written at once: go on.
    Again,
    /// A send or a writability poll is in flight, or the connection yields
    /// its turn: nothing more until then.
    Wait,
    /// The peer is gone or the ring refused: close.
    Close,
}

#[derive(Default)]
struct Slot {
    gen: u32,
    conn: Option<Conn>,
}

/// A worker ready to run on its own thread.
pub struct Worker {
    ring: Ring,
    listener: Option<std::net::TcpListener>,
    accepting: bool,
    accept_busy: [bool; ACCEPTS],
    accepts_in_flight: usize,
    /// mio's epoll instance, only for the shutdown waker: the ring polls
    /// its descriptor.
    wake_poll: Poll,
    wake_events: Events,
    /// Its `open` counts slots in use (live and closing connections).
    core: Core,
    slots: Vec<Slot>,
    cqes: Vec<Completion>,
    /// `--http2 on`: new connections start in [`Proto::Sniff`].
    http2: bool,
    /// TCP_DEFER_ACCEPT is on: an accepted connection's request is (almost
    /// always) already there, so its first turn is synchronous
    /// ([`Turn::first`]).
    read_on_accept: bool,
}

impl Worker {
    /// Builds a worker around `listener` (bound, listening), on the thread
    /// that will run it. Fails when the ring cannot be set up (the caller
    /// may fall back to epoll).
    pub fn new(
        listener: std::net::TcpListener,
        handler: Handler,
        max_conns: usize,
        shutdown: Arc<AtomicBool>,
    ) -> io::Result<(Worker, Arc<Waker>)> {
        // Created disabled (single issuer): enabled in `run`, on the
        // worker's thread, which lets the kernel defer completion work to
        // that thread's waits.
        let ring = Ring::new(Setup {
            sq_entries: SQ_ENTRIES,
            cq_entries: SQ_ENTRIES * 4,
            start_disabled: true,
            recv_buffers: Some((RECV_BUFS, RECV_BUF_SIZE)),
            accept_slots: ACCEPTS,
        })?;
        let wake_poll = Poll::new()?;
        let waker = Arc::new(Waker::new(wake_poll.registry(), Token(0))?);
        let http2 = handler.config().http2;
        let read_on_accept = handler.config().defer_accept;
        Ok((
            Worker {
                ring,
                listener: Some(listener),
                accepting: true,
                accept_busy: [false; ACCEPTS],
                accepts_in_flight: 0,
                wake_poll,
                wake_events: Events::with_capacity(4),
                core: Core::new(handler, max_conns, shutdown, false),
                slots: Vec::new(),
                cqes: Vec::with_capacity(SQ_ENTRIES as usize * 4),
                http2,
                read_on_accept,
            },
            waker,
        ))
    }

    /// Runs until shutdown completes.
    pub fn run(mut self) {
        if let Err(e) = self.ring.enable() {
            eprintln!("httplab serve: cannot enable io_uring: {e}");
            return;
        }
        let wake_fd = self.wake_poll.as_raw_fd();
        if self
            .ring
            .poll(wake_fd, libc::POLLIN, ud(OP_WAKE, 0, 0))
            .is_err()
        {
            eprintln!("httplab serve: io_uring submission failed");
            return;
        }
        lifecycle::run(&mut self);
        self.finish();
    }

    /// Cuts every remaining connection and waits (bounded) until the kernel
    /// owns no operation of ours; what it may still own is leaked.
    fn finish(&mut self) {
        self.accepting = false;
        for i in 0..self.slots.len() {
            self.close(i);
        }
        let _ = self.ring.cancel_all(ud(OP_IGNORE, 0, 0));
        let until = Instant::now() + EXIT_DRAIN;
        while self.ring.in_flight() > 0 && Instant::now() < until {
            if self
                .ring
                .submit_and_wait(Duration::from_millis(10))
                .is_err()
            {
                break;
            }
            self.core.now = Instant::now();
            self.reap();
        }
        if self.ring.in_flight() > 0 {
            // Operations may still refer to these descriptors: leave them
            // open (the ring keeps, and then leaks, the memory they use).
            std::mem::forget(std::mem::take(&mut self.slots));
        } else {
            for s in &mut self.slots {
                // Closes the descriptor.
                drop(s.conn.take());
            }
        }
        self.core.flush();
    }

    fn reap(&mut self) {
        let mut cqes = std::mem::take(&mut self.cqes);
        self.ring.reap(&mut cqes);
        for c in cqes.drain(..) {
            self.complete(c);
        }
        self.cqes = cqes;
    }

    fn complete(&mut self, c: Completion) {
        let (op, idx, gen) = split(c.user_data);
        match op {
            OP_ACCEPT => self.accepted(idx, c.result, c.lent),
            OP_RECV => self.received(idx, gen, c.result, c.buffer(), c.more()),
            OP_SEND => self.sent(idx, gen, c.result, c.lent),
            OP_POLLOUT => {
                if let Some(c) = self.conn_mut(idx, gen) {
                    c.pollout = false;
                    self.drive_slot(idx);
                }
            }
            OP_WAKE => {
                let _ = self
                    .wake_poll
                    .poll(&mut self.wake_events, Some(Duration::ZERO));
                if !self.core.shutdown.requested_or_begun() {
                    let fd = self.wake_poll.as_raw_fd();
                    let _ = self.ring.poll(fd, libc::POLLIN, ud(OP_WAKE, 0, 0));
                }
            }
            _ => {}
        }
    }

    fn conn_mut(&mut self, idx: usize, gen: u32) -> Option<&mut Conn> {
        let s = self.slots.get_mut(idx)?;
        if s.gen & 0xff_ffff != gen {
            return None;
        }
        s.conn.as_mut()
    }

    fn fill_accepts(&mut self) {
        if !self.accepting {
            return;
        }
        let Some(lfd) = self.listener.as_ref().map(|l| l.as_raw_fd()) else {
            return;
        };
        if !self.core.gate.open(self.core.now) {
            return;
        }
        while self.accepts_in_flight < ACCEPTS
            && self.core.open + self.accepts_in_flight < self.core.max_conns
        {
            let Some(s) = self.accept_busy.iter().position(|b| !b) else {
                return;
            };
            if self.ring.accept(lfd, ud(OP_ACCEPT, s, 0)).is_err() {
                self.core.gate.pause(self.core.now);
                return;
            }
            self.accept_busy[s] = true;
            self.accepts_in_flight += 1;
        }
    }

    fn accepted(&mut self, slot: usize, res: i32, lent: Lent) {
        if let Some(b) = self.accept_busy.get_mut(slot) {
            *b = false;
        }
        self.accepts_in_flight = self.accepts_in_flight.saturating_sub(1);
        if res < 0 {
            if out_of_descriptors(-res) {
                // Out of descriptors: stop accepting (no busy loop) until a
                // connection closes or the retry interval passes.
                self.core.gate.pause(self.core.now);
            }
            return;
        }
        let Lent::Accepted { fd, peer } = lent else {
            return;
        };
        if !self.accepting {
            // Dropping it closes it.
            return;
        }
        if self.core.needs_nodelay(|| net::nodelay(fd.as_raw_fd())) {
            let _ = net::set_int_opt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
        }
        self.core.handler.stats().accepted();
        self.insert(fd, peer);
    }

    fn insert(&mut self, fd: OwnedFd, peer: Option<IpAddr>) {
        let idx = match self.core.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
        };
        self.slots[idx].conn = Some(Conn {
            fd,
            session: Session::new(peer, self.core.now),
            proto: if self.http2 {
                Proto::Sniff
            } else {
                Proto::Http1
            },
            recv: false,
            recv_cancelled: false,
            overflow: Vec::new(),
            eof_pending: false,
            send: 0,
            pollout: false,
            linger_until: None,
            dead: false,
        });
        self.core.open += 1;
        // With TCP_DEFER_ACCEPT the request is (almost always) here.
        self.turn(idx, self.read_on_accept);
    }

    fn received(&mut self, idx: usize, gen: u32, res: i32, bid: Option<u16>, more: bool) {
        let now = self.core.now;
        let Some(c) = self
            .slots
            .get_mut(idx)
            .filter(|s| s.gen & 0xff_ffff == gen)
            .and_then(|s| s.conn.as_mut())
        else {
            if let Some(b) = bid {
                self.ring.recycle(b);
            }
            return;
        };
        if !more {
            c.recv = false;
            c.recv_cancelled = false;
        }
        if c.dead {
            if let Some(b) = bid {
                self.ring.recycle(b);
            }
            self.finalize_if_idle(idx);
            return;
        }
        match res {
            n if n > 0 => {
                let Some(b) = bid else {
                    self.close(idx);
                    return;
                };
                let mut park = false;
                let mut too_much = false;
                if c.linger_until.is_none() && !c.session.closing() {
                    let data = self.ring.buffer(b, n as usize);
                    let mut taken = 0;
                    if c.overflow.is_empty() {
                        self.core.pool.full_rbuf(&mut c.session);
                        if let Some(room) = c.session.room(self.core.pool.rbuf_size()) {
                            let k = room.min(data.len());
                            if k > 0 && c.session.take_input(&data[..k], now) {
                                taken = k;
                            }
                        }
                    }
                    if taken < data.len() {
                        if c.overflow.len() + (data.len() - taken) > MAX_OVERFLOW {
                            too_much = true;
                        } else {
                            c.overflow.extend_from_slice(&data[taken..]);
                            park = more && !c.recv_cancelled;
                        }
                    }
                }
                // Otherwise input after the last response: discarded.
                self.ring.recycle(b);
                if too_much {
                    self.close(idx);
                    return;
                }
                if park {
                    // Stop receiving until the session has room again (TCP
                    // flow control then holds the peer back).
                    c.recv_cancelled = true;
                    if self.ring.cancel(ud(OP_RECV, idx, gen), None).is_err() {
                        self.close(idx);
                        return;
                    }
                }
            }
            0 => {
                if c.linger_until.is_some() {
                    self.close(idx);
                    return;
                }
                if c.overflow.is_empty() {
                    c.on_eof();
                } else {
                    c.eof_pending = true;
                }
            }
            e if -e == libc::ENOBUFS => {
                // Every receive buffer is in use this turn: re-armed on the
                // next turn.
                self.core.ready.push_back(idx);
                return;
            }
            e if -e == libc::ECANCELED || -e == libc::EINTR || -e == libc::EAGAIN => {}
            _ => {
                self.close(idx);
                return;
            }
        }
        self.drive_slot(idx);
    }

    fn sent(&mut self, idx: usize, gen: u32, res: i32, lent: Lent) {
        let now = self.core.now;
        let Some(c) = self.conn_mut(idx, gen) else {
            return;
        };
        if let Lent::Sent(buf) = lent {
            // The output buffer is back from the kernel, unchanged.
            c.out().restore(buf);
        }
        let len = std::mem::take(&mut c.send);
        if c.dead {
            self.finalize_if_idle(idx);
            return;
        }
        if res > 0 {
            let n = (res as usize).min(len);
            c.out().mem_sent(n);
            let writes = std::mem::take(&mut c.out().writes);
            c.wrote(now);
            self.core.handler.count_io(n as u64, writes);
        } else if res != -libc::EINTR && res != -libc::EAGAIN {
            // EPIPE, ECONNRESET, or a zero-length write: the peer is gone.
            self.close(idx);
            return;
        }
        self.drive_slot(idx);
    }

    /// Advances connection `idx` as far as it goes without waiting.
    fn drive_slot(&mut self, idx: usize) {
        self.turn(idx, false);
    }

    /// One turn of connection `idx`: [`Turn::first`] for a connection just
    /// accepted with its request already there, else [`Turn::step`]; then
    /// closed if it is done.
    fn turn(&mut self, idx: usize, first: bool) {
        let Some(s) = self.slots.get_mut(idx) else {
            return;
        };
        let gen = s.gen;
        let Some(c) = s.conn.as_mut() else {
            return;
        };
        if c.dead {
            self.finalize_if_idle(idx);
            return;
        }
        let mut turn = Turn {
            core: &mut self.core,
            ring: &mut self.ring,
        };
        let keep = if first {
            turn.first(c, idx, gen)
        } else {
            turn.step(c, idx, gen)
        };
        self.core.pool.give_back(&mut c.session);
        if !keep {
            self.close(idx);
        }
    }

    /// Starts closing connection `idx`: cancels its operations; the
    /// descriptor is closed once none is in flight.
    fn close(&mut self, idx: usize) {
        let Some(c) = self.slots.get_mut(idx).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if c.dead {
            return;
        }
        c.dead = true;
        if c.busy() {
            let fd = c.fd.as_raw_fd();
            if self.ring.cancel_fd(fd).is_err() {
                // Cannot cancel: shutting the socket down ends its
                // operations too.
                net::shutdown_write(fd);
            }
        }
        self.finalize_if_idle(idx);
    }

    fn finalize_if_idle(&mut self, idx: usize) {
        let Some(s) = self.slots.get_mut(idx) else {
            return;
        };
        if !s.conn.as_ref().is_some_and(|c| c.dead && !c.busy()) {
            return;
        }
        let Some(mut c) = s.conn.take() else {
            return;
        };
        s.gen = s.gen.wrapping_add(1);
        // Counters first, so they are current once the peer sees EOF.
        self.core.handler.flush_stats();
        // Through the ring (closed at once if it cannot take the request).
        self.ring.close(c.fd);
        // A descriptor was freed: a paused accept retries on this turn.
        let now = self.core.now;
        self.core.release(idx, &mut c.session, || now);
    }
}

/// What driving one connection needs of its worker: everything but the
/// slots, so that the connection is driven where it lies (as in the epoll
/// engine's `Turn`).
struct Turn<'a> {
    core: &'a mut Core,
    ring: &'a mut Ring,
}

impl Turn<'_> {
    /// Returns false when the connection must be closed.
    fn step(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        self.core.pool.restore_rbuf(&mut c.session);
        if c.send == 0 {
            self.core.pool.lend_wbuf(&mut c.session);
        }
        if matches!(c.proto, Proto::Sniff) && !self.decide(c) {
            // The first bytes do not say yet: wait for more.
            return self.arm_recv(c, idx, gen);
        }
        match c.proto {
            Proto::Http2(_) => self.step_h2(c, idx, gen),
            _ => self.step_h1(c, idx, gen),
        }
    }

    /// The first turn of a connection whose request is (almost always)
    /// already there: one direct `recv`, the response written at once with
    /// a direct send, as the epoll engine answers before it registers. A
    /// connection answered and done (`Connection: close`) then closes with
    /// no ring operation of its own: no multishot receive armed, no
    /// cancellation to wait for. Anything else (no request yet, HTTP/2, a
    /// response that did not fit the socket) goes on through the ring as
    /// usual ([`Turn::step`]). Returns false when the connection must be
    /// closed.
    fn first(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        let now = self.core.now;
        let fd = c.fd.as_raw_fd();
        self.core.pool.full_rbuf(&mut c.session);
        match Transport::Plain.fill(&mut c.session, fd, now) {
            Ok(Fill::Read { .. }) | Ok(Fill::Eof) => {}
            Ok(Fill::WouldBlock) | Ok(Fill::NoRoom) => return self.step(c, idx, gen),
            Err(_) => return false,
        }
        if matches!(c.proto, Proto::Sniff) && !self.decide(c) {
            return self.step(c, idx, gen);
        }
        if !matches!(c.proto, Proto::Http1) {
            return self.step(c, idx, gen);
        }
        self.core.pool.lend_wbuf(&mut c.session);
        let shutting = self.core.shutdown.begun();
        c.session.process(&mut self.core.handler, now, shutting);
        if !c.session.out.is_empty() {
            match self.write_now(c) {
                Ok(Flush::Done) => {}
                // The rest goes through the ring.
                Ok(Flush::Blocked) | Ok(Flush::Yield) => return self.step(c, idx, gen),
                Err(_) => return false,
            }
        }
        if c.session.finished() && !c.session.needs_linger() {
            return false;
        }
        self.step(c, idx, gen)
    }

    /// Decides a [`Proto::Sniff`] connection's protocol from its first
    /// bytes (as the epoll engine does); false while they do not say yet.
    fn decide(&mut self, c: &mut Conn) -> bool {
        self.feed(c);
        // Closing before a byte came (a graceful shutdown of an idle
        // connection): HTTP/1.1 closes it.
        let ended = c.session.input_ended() || c.session.closing();
        match sniff(c.session.unread(), ended) {
            Sniffed::Http1 => {
                c.proto = Proto::Http1;
                true
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
                true
            }
            Sniffed::Wait => false,
        }
    }

    /// [`Turn::step`] of an HTTP/1.1 connection.
    fn step_h1(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        let now = self.core.now;
        let shutting = self.core.shutdown.begun();
        loop {
            if c.linger_until.is_some() {
                return self.arm_linger(c, idx, gen);
            }
            if c.send > 0 || c.pollout {
                // Output in progress: the output buffer must not move.
                break;
            }
            if !c.session.out.is_empty() {
                match self.push(c, idx, gen) {
                    Push::Again => continue,
                    Push::Wait => break,
                    Push::Close => return false,
                }
            }
            let fed = self.feed(c);
            c.session.process(&mut self.core.handler, now, shutting);
            if !c.session.out.is_empty() {
                continue;
            }
            if c.session.finished() {
                if !c.session.needs_linger() {
                    return false;
                }
                net::shutdown_write(c.fd.as_raw_fd());
                c.linger_until = Some(now + self.core.linger);
                continue;
            }
            if fed && !c.overflow.is_empty() {
                continue;
            }
            break;
        }
        self.arm_recv(c, idx, gen)
    }

    /// [`Turn::step`] of an HTTP/2 connection: sends the machine's
    /// output, then feeds it what arrived in the session's read buffer.
    fn step_h2(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        let now = self.core.now;
        loop {
            if c.linger_until.is_some() {
                return self.arm_linger(c, idx, gen);
            }
            if c.send > 0 || c.pollout {
                // Output in progress: the machine must not write.
                break;
            }
            if !c.out().is_empty() {
                match self.push(c, idx, gen) {
                    Push::Again => continue,
                    Push::Wait => break,
                    Push::Close => return false,
                }
            }
            let fed = self.feed(c);
            let Proto::Http2(h2) = &mut c.proto else {
                return false;
            };
            if !c.session.unread().is_empty() {
                // The output is empty, so the machine takes input unless
                // it is closing (then the input is dropped).
                h2.feed(c.session.unread(), &mut self.core.handler, now);
                c.session.consume_unread();
                continue;
            }
            if h2.finished() {
                // Drain what the peer still sends, so the close does not
                // turn into a reset that destroys the GOAWAY.
                net::shutdown_write(c.fd.as_raw_fd());
                c.linger_until = Some(now + self.core.linger);
                continue;
            }
            if fed && !c.overflow.is_empty() {
                continue;
            }
            if !h2.wants_input() {
                return true;
            }
            break;
        }
        self.arm_recv(c, idx, gen)
    }

    /// Sends a connection's pending output: memory bytes are lent to the
    /// ring until the send's completion brings them back ([`Worker::sent`];
    /// meanwhile the connection reads as having that output pending and is
    /// not processed), file segments go out through the epoll engine's
    /// synchronous `write_to` with a one-shot POLLOUT when the socket is full.
    fn push(&mut self, c: &mut Conn, idx: usize, gen: u32) -> Push {
        let fd = c.fd.as_raw_fd();
        if let Some((buf, start)) = c.out().lend_mem_only() {
            let len = buf.len() - start;
            if let Err((_, buf)) = self.ring.send(fd, buf, start, ud(OP_SEND, idx, gen)) {
                c.out().restore(buf);
                return Push::Close;
            }
            c.send = len;
            return Push::Wait;
        }
        match self.write_now(c) {
            Ok(Flush::Done) => Push::Again,
            Ok(Flush::Blocked) => {
                if self
                    .ring
                    .poll(fd, libc::POLLOUT, ud(OP_POLLOUT, idx, gen))
                    .is_err()
                {
                    return Push::Close;
                }
                c.pollout = true;
                Push::Wait
            }
            Ok(Flush::Yield) => {
                self.core.ready.push_back(idx);
                Push::Wait
            }
            Err(_) => Push::Close,
        }
    }

    /// Writes the connection's pending output at once with direct system
    /// calls (the epoll engine's `write_to`: memory bytes, sendfile, or
    /// pread + sendmsg), counted as sent.
    fn write_now(&mut self, c: &mut Conn) -> io::Result<Flush> {
        let now = self.core.now;
        let fd = c.fd.as_raw_fd();
        let loopback = c.session.peer_is_loopback();
        let mut written = 0;
        let core = &mut *self.core;
        let out = c.out();
        let opts = core.send_path.for_out(out, loopback, true);
        let r = out.write_to(
            fd,
            core.handler.config().sendfile_chunk,
            opts,
            &mut core.scratch,
            &mut written,
        );
        core.send_path.count_sent(opts, out);
        let writes = std::mem::take(&mut out.writes);
        core.handler.count_io(written, writes);
        if written > 0 {
            c.wrote(now);
        }
        r
    }

    /// Arms the connection's receive when none is armed, nothing is parked
    /// and the session has room; false when the ring refuses.
    fn arm_recv(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        if c.recv || !c.overflow.is_empty() || c.eof_pending {
            return true;
        }
        if !c
            .session
            .room(self.core.pool.rbuf_size())
            .is_some_and(|room| room > 0)
        {
            return true;
        }
        self.arm_linger(c, idx, gen)
    }

    /// Arms the connection's receive unless one is armed (a lingering
    /// connection keeps one until EOF or the sweep's deadline); false when
    /// the ring refuses.
    fn arm_linger(&mut self, c: &mut Conn, idx: usize, gen: u32) -> bool {
        if !c.recv {
            if self
                .ring
                .recv_multi(c.fd.as_raw_fd(), ud(OP_RECV, idx, gen))
                .is_err()
            {
                return false;
            }
            c.recv = true;
        }
        true
    }

    /// Moves parked input into the session as far as it has room; true
    /// when something moved.
    fn feed(&mut self, c: &mut Conn) -> bool {
        if c.overflow.is_empty() {
            return false;
        }
        let Some(room) = c.session.room(self.core.pool.rbuf_size()) else {
            return false;
        };
        self.core.pool.attach_rbuf(&mut c.session);
        let k = room.min(c.overflow.len());
        if k == 0 || !c.session.take_input(&c.overflow[..k], self.core.now) {
            return false;
        }
        c.overflow.drain(..k);
        if c.overflow.is_empty() {
            // Rare path: release the memory rather than keep it per
            // connection.
            c.overflow = Vec::new();
            if std::mem::take(&mut c.eof_pending) {
                c.on_eof();
            }
        }
        true
    }
}

impl Engine for Worker {
    type Conn = Conn;

    fn core(&mut self) -> &mut Core {
        &mut self.core
    }

    fn listening(&self) -> bool {
        self.accepting
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        if let Err(e) = self.ring.submit_and_wait(timeout) {
            eprintln!("httplab serve: io_uring_enter failed: {e}");
            return false;
        }
        true
    }

    fn dispatch(&mut self) {
        self.reap();
    }

    fn queue_accepts(&mut self) {
        self.fill_accepts();
    }

    fn drive(&mut self, idx: usize) {
        self.drive_slot(idx);
    }

    fn close(&mut self, idx: usize) {
        Worker::close(self, idx);
    }

    fn stop_listening(&mut self) {
        self.accepting = false;
        if let Some(l) = self.listener.as_ref() {
            // The listener itself stays open until the worker ends, so no
            // cancelled accept can refer to a closed descriptor.
            let _ = self.ring.cancel_fd(l.as_raw_fd());
        }
    }

    fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Closing connections (operations cancelled, waiting for their
    /// completions) are left alone.
    fn conn(&mut self, idx: usize) -> (Option<&mut Conn>, &mut Core) {
        let c = self
            .slots
            .get_mut(idx)
            .and_then(|s| s.conn.as_mut())
            .filter(|c| !c.dead);
        (c, &mut self.core)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(l) = self.listener.take() {
            if self.ring.in_flight() > 0 {
                // A cancelled accept may still hold it: leave it open.
                let _ = l.into_raw_fd();
            }
        }
    }
}
