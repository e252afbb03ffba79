//! The worker lifecycle both event-loop engines share: `event` (epoll
//! through mio) and `uring` (io_uring) differ in how they wait and move
//! bytes, not in how a worker lives. This module holds what they have in
//! common:
//!
//! - the turn's clock (one reading per loop turn) and the sweep interval
//!   derived from the configured timeouts;
//! - the buffer pool that lends read and output buffers to connections
//!   while they have work;
//! - the accept gate (pausing accepts at the connection cap or when out of
//!   descriptors, resuming when one closes or the retry interval passes);
//! - the shutdown clock (graceful drain until every connection is gone or
//!   the shutdown timeout passes);
//! - the sweep decision (lingering close over, or a deadline passed) and
//!   the loop itself, [`run`], which calls an [`Engine`] for the rest.
//!
//! Everything is static dispatch on the engine type: the loop costs what
//! the engines' own loops cost (no allocation, no extra call per request).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::handler::Handler;
use crate::sendpath::SendPath;
use crate::session::{CloseReason, Session};

/// Spare buffers of each kind kept per worker.
const SPARE_BUFFERS: usize = 64;
/// How long a paused accept waits before retrying on its own.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Read buffers (all of the full size) and output buffers kept between
/// connections, so an idle keep-alive connection holds none.
pub(crate) struct BufferPool {
    rbufs: Vec<Vec<u8>>,
    wbufs: Vec<Vec<u8>>,
    rbuf_size: usize,
}

impl BufferPool {
    fn new(rbuf_size: usize) -> BufferPool {
        BufferPool {
            rbufs: Vec::new(),
            wbufs: Vec::new(),
            rbuf_size,
        }
    }

    /// The size of a full read buffer.
    pub fn rbuf_size(&self) -> usize {
        self.rbuf_size
    }

    fn take_rbuf(&mut self) -> Vec<u8> {
        self.rbufs.pop().unwrap_or_else(|| vec![0; self.rbuf_size])
    }

    /// Gives `s` a full-size read buffer if it has none.
    pub fn attach_rbuf(&mut self, s: &mut Session) {
        if !s.has_rbuf() {
            let b = self.take_rbuf();
            if let Some(b) = s.attach_rbuf(b) {
                self.rbufs.push(b);
            }
        }
    }

    /// When `give_back` parked leftover bytes in a small buffer: moves them
    /// back into a full-size one (before `process` consumes them and before
    /// the next read is sized; a small buffer left in the session would
    /// otherwise be pooled once empty and later handed out as full size).
    pub fn restore_rbuf(&mut self, s: &mut Session) {
        if s.has_rbuf() && s.rbuf_smaller_than(self.rbuf_size) {
            let b = self.take_rbuf();
            drop(s.grow_rbuf(b));
        }
    }

    /// A full-size read buffer for `s`, whether it has none or a small one.
    pub fn full_rbuf(&mut self, s: &mut Session) {
        if !s.has_rbuf() {
            self.attach_rbuf(s);
        } else {
            self.restore_rbuf(s);
        }
    }

    /// Offers `s` a spare output buffer (taken when its queue is empty and
    /// its own buffer smaller).
    pub fn lend_wbuf(&mut self, s: &mut Session) {
        if let Some(b) = self.wbufs.pop() {
            if let Some(b) = s.attach_wbuf(b) {
                // Keep only real buffers in the pool (a fresh session hands
                // back an unallocated one).
                if b.capacity() > 0 {
                    self.wbufs.push(b);
                }
            }
        }
    }

    /// Takes back what `s` does not need between turns.
    pub fn give_back(&mut self, s: &mut Session) {
        s.return_buffers(
            &mut self.rbufs,
            &mut self.wbufs,
            self.rbuf_size,
            SPARE_BUFFERS,
        );
    }
}

/// Whether accepting is paused, and until when.
#[derive(Default)]
pub(crate) struct AcceptGate {
    paused_until: Option<Instant>,
}

impl AcceptGate {
    /// Whether accepting may go on at `now`; an expired pause is lifted.
    pub fn open(&mut self, now: Instant) -> bool {
        if let Some(t) = self.paused_until {
            if now < t {
                return false;
            }
            self.paused_until = None;
        }
        true
    }

    /// Stops accepting (no busy loop) for the retry interval.
    pub fn pause(&mut self, now: Instant) {
        self.paused_until = Some(now + ACCEPT_RETRY);
    }

    /// A paused accept whose time has come.
    pub fn due(&self, now: Instant) -> bool {
        self.paused_until.is_some_and(|t| now >= t)
    }

    /// A descriptor was freed: a paused accept retries from `at()` (read
    /// only when accepting is paused).
    pub fn on_close(&mut self, at: impl FnOnce() -> Instant) {
        if self.paused_until.is_some() {
            self.paused_until = Some(at());
        }
    }

    /// When the wait must end for the gate's sake (a paused accept only
    /// counts while the worker still listens).
    fn wake_at(&self, next_sweep: Instant, listening: bool) -> Instant {
        match self.paused_until {
            Some(t) if listening => t.min(next_sweep),
            _ => next_sweep,
        }
    }
}

/// Whether an accept error means the process or system is out of
/// descriptors or memory (then accepting pauses instead of spinning).
pub(crate) fn out_of_descriptors(errno: i32) -> bool {
    matches!(
        errno,
        libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM
    )
}

/// The shutdown request (shared with the server handle) and, once the
/// worker began draining, the instant it gives up.
pub(crate) struct ShutdownClock {
    requested: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl ShutdownClock {
    /// Shutdown was requested and the drain has not begun yet.
    fn newly_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire) && self.deadline.is_none()
    }

    /// Shutdown was requested or is under way.
    pub fn requested_or_begun(&self) -> bool {
        self.deadline.is_some() || self.requested.load(Ordering::Acquire)
    }

    /// The worker is draining.
    pub fn begun(&self) -> bool {
        self.deadline.is_some()
    }

    /// The drain is over: every connection closed, or the time is up.
    fn over(&self, open: usize, now: Instant) -> bool {
        self.deadline.is_some_and(|d| open == 0 || now >= d)
    }
}

/// The engine-independent state of a worker.
pub(crate) struct Core {
    pub handler: Handler,
    pub pool: BufferPool,
    pub gate: AcceptGate,
    pub shutdown: ShutdownClock,
    /// Connections to drive again this turn (they yielded).
    pub ready: VecDeque<usize>,
    /// Free connection slots.
    pub free: Vec<usize>,
    /// Slots in use.
    pub open: usize,
    pub max_conns: usize,
    /// Longest lingering close.
    pub linger: Duration,
    sweep_every: Duration,
    /// File chunks on their way into TLS, or read with pread (one per worker).
    pub scratch: Vec<u8>,
    /// The clock reading of this loop turn.
    pub now: Instant,
    /// The path of each write of file bytes, chosen by measurement.
    pub send_path: SendPath,
    /// Whether accepted sockets inherit the listener's TCP_NODELAY (None:
    /// not known before the first accept).
    nodelay_inherited: Option<bool>,
}

impl Core {
    /// `tls`: handshakes have their own timeout, which the sweep must see.
    pub fn new(handler: Handler, max_conns: usize, shutdown: Arc<AtomicBool>, tls: bool) -> Core {
        let cfg = handler.config();
        let mut shortest = cfg
            .idle_timeout
            .min(cfg.header_timeout)
            .min(cfg.send_timeout)
            .min(Duration::from_secs(1));
        if tls {
            shortest = shortest.min(cfg.tls_handshake_timeout);
        }
        let sweep_every =
            (shortest / 4).clamp(Duration::from_millis(5), Duration::from_millis(250));
        let linger = cfg.idle_timeout.min(Duration::from_secs(2));
        let rbuf_size = cfg.pipeline_buffer.max(1024);
        let send_path = SendPath::from_config(cfg, true);
        Core {
            handler,
            pool: BufferPool::new(rbuf_size),
            gate: AcceptGate::default(),
            shutdown: ShutdownClock {
                requested: shutdown,
                deadline: None,
            },
            ready: VecDeque::new(),
            free: Vec::new(),
            open: 0,
            max_conns: max_conns.max(1),
            linger,
            sweep_every,
            scratch: Vec::new(),
            now: Instant::now(),
            send_path,
            nodelay_inherited: None,
        }
    }

    /// Moves the turn's counters into the shared statistics.
    #[inline]
    pub fn flush(&mut self) {
        self.send_path.flush_into(self.handler.stats());
        self.handler.flush();
    }

    /// Whether an accepted socket needs TCP_NODELAY set: the listener's
    /// options (TCP_NODELAY, SO_SNDBUF, TCP_NOTSENT_LOWAT) are inherited,
    /// which `probe` checks on the first accepted socket only.
    pub fn needs_nodelay(&mut self, probe: impl FnOnce() -> bool) -> bool {
        if self.nodelay_inherited.is_none() {
            self.nodelay_inherited = Some(probe());
        }
        self.nodelay_inherited == Some(false)
    }

    /// The bookkeeping of a closed connection: its buffers back, its slot
    /// free, the accept gate told (`at`: when a paused accept may retry).
    /// The caller flushes the counters before the peer can see the close.
    pub fn release(&mut self, idx: usize, s: &mut Session, at: impl FnOnce() -> Instant) {
        self.pool.give_back(s);
        self.free.push(idx);
        self.open -= 1;
        self.handler.stats().closed();
        self.gate.on_close(at);
    }
}

/// A connection as the sweep and the shutdown see it.
pub(crate) trait Swept {
    /// Lingering close: draining input until EOF or this instant.
    fn linger_until(&self) -> Option<Instant>;
    /// When the connection's current timeout expires.
    fn deadline(&self, h: &Handler) -> Instant;
    /// Applies an expired timeout: Some when the connection must close.
    fn on_timeout(&mut self, h: &mut Handler, now: Instant) -> Option<CloseReason>;
    /// Graceful shutdown began: stop after what is in flight.
    fn begin_shutdown(&mut self);
}

/// What the sweep does with one connection.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Keep,
    Close,
    /// A timeout queued a response (e.g. 408): drive it out.
    Drive,
}

fn sweep_verdict(c: &mut impl Swept, h: &mut Handler, now: Instant) -> Verdict {
    if let Some(t) = c.linger_until() {
        return if now >= t {
            Verdict::Close
        } else {
            Verdict::Keep
        };
    }
    if now < c.deadline(h) {
        return Verdict::Keep;
    }
    match c.on_timeout(h, now) {
        Some(_) => Verdict::Close,
        None => Verdict::Drive,
    }
}

/// What an I/O engine supplies to [`run`].
pub(crate) trait Engine {
    type Conn: Swept;

    fn core(&mut self) -> &mut Core;
    /// Whether the listener still takes connections.
    fn listening(&self) -> bool;
    /// Waits for I/O for at most `timeout`; false when the worker cannot
    /// go on (the engine reported why).
    fn wait(&mut self, timeout: Duration) -> bool;
    /// Handles what the wait brought; the turn's clock is already read.
    fn dispatch(&mut self);
    /// Called before the first turn and in each turn after the ready
    /// queue was driven (an engine that keeps accepts queued refills them).
    fn queue_accepts(&mut self) {}
    /// Advances connection `idx` as far as it goes without waiting.
    fn drive(&mut self, idx: usize);
    /// Closes connection `idx` (or starts closing it).
    fn close(&mut self, idx: usize);
    /// Stops taking connections (shutdown began).
    fn stop_listening(&mut self);
    /// The number of connection slots.
    fn slots(&self) -> usize;
    /// The live connection in slot `idx` (None: empty, or already closing)
    /// with the core.
    fn conn(&mut self, idx: usize) -> (Option<&mut Self::Conn>, &mut Core);
}

/// Runs the worker's loop until shutdown completes (or the wait fails);
/// the engine closes what is left afterwards.
pub(crate) fn run<E: Engine>(e: &mut E) {
    // One monotonic clock reading per loop turn, taken after the wait
    // returns and used for every connection driven in that turn (timers
    // have millisecond granularity; a turn takes microseconds).
    e.core().now = Instant::now();
    let mut next_sweep = e.core().now + e.core().sweep_every;
    e.queue_accepts();
    loop {
        let listening = e.listening();
        let core = e.core();
        let timeout = if core.ready.is_empty() {
            core.gate
                .wake_at(next_sweep, listening)
                .saturating_duration_since(core.now)
        } else {
            Duration::ZERO
        };
        if core.send_path.measuring() {
            core.send_path.before_wait(Instant::now());
        }
        if !e.wait(timeout) {
            break;
        }
        let core = e.core();
        core.now = Instant::now();
        core.send_path.after_wait(core.now);
        core.handler.tick_at(core.now);
        e.dispatch();
        let n = e.core().ready.len();
        for _ in 0..n {
            if let Some(i) = e.core().ready.pop_front() {
                e.drive(i);
            }
        }
        e.queue_accepts();
        let now = e.core().now;
        if now >= next_sweep {
            sweep(e, now);
            next_sweep = now + e.core().sweep_every;
        }
        if e.core().shutdown.newly_requested() {
            begin_shutdown(e, now);
        }
        let core = e.core();
        core.flush();
        if core.shutdown.over(core.open, now) {
            break;
        }
    }
}

fn sweep<E: Engine>(e: &mut E, now: Instant) {
    for i in 0..e.slots() {
        let (Some(c), core) = e.conn(i) else {
            continue;
        };
        match sweep_verdict(c, &mut core.handler, now) {
            Verdict::Keep => {}
            Verdict::Close => e.close(i),
            Verdict::Drive => e.drive(i),
        }
    }
}

fn begin_shutdown<E: Engine>(e: &mut E, now: Instant) {
    let core = e.core();
    let timeout = core.handler.config().shutdown_timeout;
    core.shutdown.deadline = Some(now + timeout);
    e.stop_listening();
    for i in 0..e.slots() {
        let (Some(c), _) = e.conn(i) else {
            continue;
        };
        if c.linger_until().is_some() {
            // Its response is complete; nothing is in flight.
            e.close(i);
            continue;
        }
        c.begin_shutdown();
        e.drive(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_pauses_resumes_and_retries_after_a_close() {
        let t0 = Instant::now();
        let mut g = AcceptGate::default();
        assert!(g.open(t0));
        g.pause(t0);
        assert!(!g.open(t0));
        assert!(!g.due(t0));
        assert!(g.due(t0 + ACCEPT_RETRY));
        assert_eq!(
            g.wake_at(t0 + Duration::from_secs(1), true),
            t0 + ACCEPT_RETRY
        );
        // Not listening any more: only the sweep bounds the wait.
        let sweep = t0 + Duration::from_secs(1);
        assert_eq!(g.wake_at(sweep, false), sweep);
        g.on_close(|| t0);
        assert!(g.due(t0));
        assert!(g.open(t0));
        // Lifted: a close no longer schedules a retry.
        g.on_close(|| t0);
        assert!(!g.due(t0 + ACCEPT_RETRY));
    }

    #[test]
    fn descriptor_exhaustion_pauses_other_errors_do_not() {
        for e in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(out_of_descriptors(e));
        }
        for e in [libc::ECONNABORTED, libc::EAGAIN, libc::EINTR] {
            assert!(!out_of_descriptors(e));
        }
    }

    struct Fake {
        linger_until: Option<Instant>,
        deadline: Instant,
        /// What a timeout does: close (true) or queue a response.
        closes: bool,
        timeouts: usize,
        session: Session,
    }

    impl Swept for Fake {
        fn linger_until(&self) -> Option<Instant> {
            self.linger_until
        }
        fn deadline(&self, _: &Handler) -> Instant {
            self.deadline
        }
        fn on_timeout(&mut self, _: &mut Handler, _: Instant) -> Option<CloseReason> {
            self.timeouts += 1;
            self.closes.then_some(CloseReason::Timeout)
        }
        fn begin_shutdown(&mut self) {
            self.session.begin_shutdown();
        }
    }

    #[test]
    fn sweep_closes_finished_lingers_and_applies_expired_timeouts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = crate::ServerConfig::for_root(dir.path());
        let stats = crate::stats::shared().expect("stats");
        let mut h = Handler::new(Arc::new(cfg), dir.path().to_path_buf(), None, stats);
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(1);
        let fake = |linger_until, closes| Fake {
            linger_until,
            deadline: later,
            closes,
            timeouts: 0,
            session: Session::new(None, t0),
        };
        // Lingering: closed once its time is up; its deadline is not asked.
        let mut c = fake(Some(later), true);
        assert_eq!(sweep_verdict(&mut c, &mut h, t0), Verdict::Keep);
        assert_eq!(sweep_verdict(&mut c, &mut h, later), Verdict::Close);
        assert_eq!(c.timeouts, 0);
        // Before its deadline nothing happens.
        let mut c = fake(None, true);
        assert_eq!(sweep_verdict(&mut c, &mut h, t0), Verdict::Keep);
        assert_eq!(c.timeouts, 0);
        // Past it: closed, or driven to send what the timeout queued.
        assert_eq!(sweep_verdict(&mut c, &mut h, later), Verdict::Close);
        let mut c = fake(None, false);
        assert_eq!(sweep_verdict(&mut c, &mut h, later), Verdict::Drive);
        assert_eq!(c.timeouts, 1);
    }

    #[test]
    fn shutdown_clock_drains_until_empty_or_deadline() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut c = ShutdownClock {
            requested: flag.clone(),
            deadline: None,
        };
        let t0 = Instant::now();
        assert!(!c.newly_requested() && !c.requested_or_begun() && !c.over(0, t0));
        flag.store(true, Ordering::Release);
        assert!(c.newly_requested() && c.requested_or_begun() && !c.begun());
        c.deadline = Some(t0 + Duration::from_secs(1));
        assert!(!c.newly_requested() && c.begun());
        assert!(!c.over(3, t0));
        assert!(c.over(0, t0));
        assert!(c.over(3, t0 + Duration::from_secs(1)));
    }
}
