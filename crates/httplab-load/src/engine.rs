//! The event loop of one worker thread: mio (epoll, edge-triggered),
//! non-blocking connects, a slab of pre-allocated connection slots, a timer
//! heap with lazy re-arming, and a timerfd for sub-millisecond wake-ups.
//!
//! A *session* is what the workload starts: one connection's calls
//! (request-oriented), an httperf session, or a closed-loop user. Each
//! session owns one slot and at most one connection at a time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use httplab_wire::response::Framing;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use socket2::{Domain, Protocol, Socket, Type};

use crate::h1::{Eof, FeedError, H1Conn, Pending, Reply};
use crate::plan::{share_lane, Plan, Schedule};
use crate::spec::{Arrival, LoadSpec};
use crate::stats::{interval_hist, rec, Collector, ErrClass, IntervalPart, WorkerStats};
use crate::sys;
use crate::uring::{Done, Ring};

const TIMER_TOKEN: Token = Token(usize::MAX - 1);
const READ_BUF: usize = 64 * 1024;
/// Longest the loop sleeps without checking the stop flag.
const MAX_SLEEP: Duration = Duration::from_millis(50);
/// Grace for in-flight calls after a --duration run ends, when no --timeout is set.
const DEFAULT_DRAIN: f64 = 10.0;

/// Everything a worker needs; shared read-only between threads.
pub(crate) struct WorkerCtx<'a> {
    pub thread: u32,
    pub threads: u32,
    pub t0: Instant,
    pub spec: &'a LoadSpec,
    pub plan: &'a Plan,
    pub addr: SocketAddr,
    pub stop: &'a AtomicBool,
    pub collector: &'a Collector,
    /// HTTPS: the run's TLS client configuration.
    pub tls: Option<&'a crate::tls::Client>,
    /// Source addresses to spread connections over (`--local-addr`, or
    /// automatic for loopback targets); empty: the kernel chooses.
    pub local_addrs: &'a [IpAddr],
    /// This thread's cap on connections in setup (see `Worker::setup_now`).
    pub setup_cap: u64,
    /// Socket I/O through io_uring (`--io`; cleartext HTTP/1.1 only): the
    /// caller checked that this kernel has it.
    pub uring: bool,
}

#[derive(Debug)]
struct Slot {
    gen: u32,
    in_use: bool,
    // connection
    sock: Option<TcpStream>,
    /// io_uring: the connection's entry in the worker's ring (instead of `sock`).
    uc: Option<u32>,
    connecting: bool,
    conn_start: Instant,
    conn_replies: u64,
    conn_failed: bool,
    /// The connection was opened for something scheduled in the window.
    conn_measured: bool,
    /// The HTTP/1.1 state of the connection (requests out, replies in).
    h1: H1Conn,
    /// HTTPS: the TLS state of the connection (between socket and `h1`).
    tls: Option<Box<ClientConnection>>,
    /// The TLS handshake is under way (requests wait for its end).
    handshaking: bool,
    hs_start: Instant,
    /// The connection is in setup: connecting, in its TLS handshake, or
    /// waiting for its first reply byte (not yet served by the server).
    in_setup: bool,
    verify_off: u64,
    verify_bad: bool,
    verify_on: bool,
    // timers
    deadline: Option<Instant>,
    think_until: Option<Instant>,
    armed: Option<Instant>,
    // session
    tmpl: usize,
    sess_start: Instant,
    burst: u64,
    burst_len: u32,
    burst_sent: u32,
    burst_done: u32,
    intended: Instant,
    sess_replies: u64,
    sess_conns: u64,
    sess_failed: bool,
    sess_measured: bool,
    /// Closed-loop users: the current session (group of calls) of the user.
    grp_open: bool,
    grp_start: Instant,
    grp_replies: u64,
    grp_measured: bool,
    /// Paced users: this user's share of the request schedule.
    pace: Option<Schedule>,
    /// Global index of the session's arrival (or user) in the whole run's schedule.
    arrival: u64,
}

impl Slot {
    fn new(now: Instant, capture: bool) -> Slot {
        Slot {
            gen: 0,
            in_use: false,
            sock: None,
            uc: None,
            connecting: false,
            conn_start: now,
            conn_replies: 0,
            conn_failed: false,
            conn_measured: true,
            h1: H1Conn::new(capture),
            tls: None,
            handshaking: false,
            hs_start: now,
            in_setup: false,
            verify_off: 0,
            verify_bad: false,
            verify_on: false,
            deadline: None,
            think_until: None,
            armed: None,
            tmpl: 0,
            sess_start: now,
            burst: 0,
            burst_len: 0,
            burst_sent: 0,
            burst_done: 0,
            intended: now,
            sess_replies: 0,
            sess_conns: 0,
            sess_failed: false,
            sess_measured: true,
            grp_open: false,
            grp_start: now,
            grp_replies: 0,
            grp_measured: true,
            pace: None,
            arrival: 0,
        }
    }

    /// When the oldest outstanding reply reaches `--max-response-time`.
    fn limit(&self, max_resp: Option<Duration>) -> Option<Instant> {
        Some(self.h1.oldest()?.sent + max_resp?)
    }

    /// A connection is open (or opening), on either I/O engine.
    fn has_conn(&self) -> bool {
        self.sock.is_some() || self.uc.is_some()
    }

    fn wake(&self, max_resp: Option<Duration>) -> Option<Instant> {
        [self.deadline, self.think_until, self.limit(max_resp)]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Files for --verify-root, loaded lazily per request index.
struct Verifier {
    root: PathBuf,
    files: Vec<Option<Option<Vec<u8>>>>,
}

impl Verifier {
    fn file(&mut self, req: u32, path: &str) -> Option<&[u8]> {
        let i = req as usize;
        if self.files.len() <= i {
            self.files.resize(i + 1, None);
        }
        if self.files[i].is_none() {
            let p = path.split(['?', '#']).next().unwrap_or("/");
            let mut rel = p.trim_start_matches('/').to_string();
            if rel.is_empty() || rel.ends_with('/') {
                rel.push_str("index.html");
            }
            let full = self.root.join(rel);
            self.files[i] = Some(std::fs::read(full).ok());
        }
        self.files[i].as_ref().and_then(|o| o.as_deref())
    }
}

pub(crate) struct Worker<'a> {
    ctx: &'a WorkerCtx<'a>,
    poll: Poll,
    /// `--io uring`: socket I/O as io_uring completions (`uring.rs`); `poll`
    /// and `timer` then stay idle: the ring's wait has its own timeout.
    ring: Option<Ring>,
    timer: sys::TimerFd,
    timer_target: Option<Instant>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    heap: BinaryHeap<Reverse<(Instant, usize, u32)>>,
    rbuf: Vec<u8>,
    /// What the measurement window saw.
    st: WorkerStats,
    /// What was scheduled in the warm-up: counted here and discarded.
    warm: WorkerStats,
    /// Start of the measurement window (t0 + warm-up).
    win: Instant,
    /// Thread CPU at the start of the window: (precise total, rusage user, rusage system).
    cpu0: Option<(f64, f64, f64)>,
    // schedule
    schedule: Option<Schedule>,
    sessions_left: Option<u64>,
    concurrency: u64,
    active: u64,
    open_conns: u64,
    end_at: Option<Instant>,
    drain_until: Option<Instant>,
    // local addresses
    local_next: usize,
    serial: u64,
    // intervals
    interval: Duration,
    interval_k: u64,
    next_tick: Instant,
    part: IntervalPart,
    ihist: Histogram<u64>,
    verifier: Option<Verifier>,
    /// Users to continue after a failure, from the main loop.
    deferred: Vec<(usize, u32)>,
    /// Sequential sessions to start from the main loop.
    restarts: u64,
    /// Sessions this worker started (warm-up included).
    started_here: u64,
    timeout: Option<Duration>,
    reply_timeout: Option<Duration>,
    /// `--max-response-time`.
    max_resp: Option<Duration>,
    lag_threshold_us: u64,
    /// (lane, lanes): this worker runs the arrivals k ≡ lane (mod lanes) of
    /// the whole run's schedule (`plan::lane`: shards, then threads).
    lane: (u64, u64),
    /// HTTPS: this worker's TLS configuration (its own session cache).
    tls_cfg: Option<Arc<ClientConfig>>,
    /// Connections in setup now. Open-loop arrivals wait while it is at
    /// `ctx.setup_cap`: under overload the server's accept queue then never
    /// overflows (no dropped SYNs, no 1 s / 3 s retransmission stalls, no
    /// descriptors piling up), and the generator runs at the server's pace.
    setup_now: u64,
    /// The schedule is behind because of the setup cap: arrivals started
    /// now waited for the server, not for the generator.
    backlogged: bool,
}

fn dur(s: f64) -> Duration {
    if s.is_finite() {
        Duration::from_secs_f64(s.clamp(0.0, 1e9))
    } else {
        Duration::ZERO
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

impl<'a> Worker<'a> {
    pub fn new(ctx: &'a WorkerCtx<'a>) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let timer = sys::TimerFd::new()?;
        poll.registry().register(
            &mut SourceFd(&timer.as_raw_fd()),
            TIMER_TOKEN,
            Interest::READABLE,
        )?;
        let spec = ctx.spec;
        let plan = ctx.plan;
        let lane = plan.lane(ctx.thread, ctx.threads);
        let (schedule, concurrency) = match plan.arrival {
            Arrival::Open(d) => (Some(Schedule::lane(d, lane.0, lane.1, spec.seed)), 0),
            Arrival::Concurrent(k) => (None, share_lane(k, lane)),
        };
        let sessions_left = if plan.is_users {
            Some(concurrency)
        } else {
            plan.sessions_total.map(|n| share_lane(n, lane))
        };
        let mut st = WorkerStats::new();
        st.planned_sessions = sessions_left.unwrap_or(0);
        st.keep_raw(spec.raw_latencies.is_some());
        let win = ctx.t0 + dur(spec.warmup);
        let interval = dur(spec.sample_interval);
        let timeout = spec.timeout.map(dur);
        let reply_timeout = spec.timeout.map(|t| dur(t + spec.think_timeout));
        let ring = if ctx.uring && ctx.tls.is_none() {
            Some(Ring::new()?)
        } else {
            None
        };
        Ok(Worker {
            ctx,
            poll,
            ring,
            timer,
            timer_target: None,
            slots: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            rbuf: vec![0u8; READ_BUF],
            st,
            warm: WorkerStats::new(),
            win,
            cpu0: None,
            schedule,
            sessions_left,
            concurrency,
            active: 0,
            open_conns: 0,
            end_at: spec.duration.map(|d| win + dur(d)),
            drain_until: None,
            local_next: ctx.thread as usize,
            serial: 0,
            interval,
            interval_k: 0,
            next_tick: win + interval,
            part: IntervalPart::default(),
            ihist: interval_hist(),
            verifier: spec.verify_root.clone().map(|root| Verifier {
                root,
                files: Vec::new(),
            }),
            deferred: Vec::new(),
            restarts: 0,
            started_here: 0,
            timeout,
            reply_timeout,
            max_resp: spec.max_response_time.map(dur),
            lag_threshold_us: (spec.lag_threshold * 1e6) as u64,
            lane,
            tls_cfg: ctx.tls.map(|t| t.for_worker()),
            setup_now: 0,
            backlogged: false,
        })
    }

    fn more_sessions(&self, now: Instant) -> bool {
        if self.sessions_left == Some(0) {
            return false;
        }
        match self.end_at {
            Some(e) => now < e,
            None => true,
        }
    }

    /// Runs the thread's share of the load; returns its statistics.
    pub fn run(mut self) -> io::Result<WorkerStats> {
        let mut events = Events::with_capacity(1024);
        let t0 = self.ctx.t0;
        let now = Instant::now();
        if t0 > now {
            std::thread::sleep(t0 - now);
        }
        if self.win <= t0 {
            self.cpu0 = Some(sys::thread_cpu());
        }
        // Closed loop / sequential: start the concurrent sessions.
        if self.schedule.is_none() {
            let now = Instant::now();
            let n = self.concurrency;
            let mut started = 0u64;
            while started < n && self.more_sessions(now) {
                self.start_session(t0, now);
                started += 1;
            }
            self.st.max_burst = self.st.max_burst.max(started);
        }
        loop {
            let now = Instant::now();
            if self.ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.cpu0.is_none() && now >= self.win {
                self.cpu0 = Some(sys::thread_cpu());
            }
            // Interval ticks.
            while now >= self.next_tick {
                self.flush_interval(self.interval.as_secs_f64());
            }
            // Open-loop arrivals due now.
            self.start_due_arrivals(now);
            // Timers.
            self.fire_timers(now);
            self.run_deferred(now);
            // Drain after --duration.
            if let Some(e) = self.end_at {
                if now >= e && self.drain_until.is_none() {
                    let grace = self
                        .reply_timeout
                        .unwrap_or(Duration::from_secs_f64(DEFAULT_DRAIN));
                    self.drain_until = Some(e + grace);
                    self.schedule = None;
                }
            }
            if let Some(d) = self.drain_until {
                if now >= d {
                    self.abandon_all(now);
                    break;
                }
            }
            if self.active == 0
                && self.schedule.is_none()
                && self.restarts == 0
                && self.deferred.is_empty()
            {
                break;
            }
            // Sleep until the next thing to do.
            let mut next = self.next_tick;
            if let Some(s) = &self.schedule {
                if self.setup_now < self.ctx.setup_cap {
                    next = next.min(t0 + dur(s.peek()));
                }
                // At the cap, a connection leaving setup (a socket event) wakes us.
            }
            if let Some(Reverse((t, _, _))) = self.heap.peek() {
                next = next.min(*t);
            }
            if let Some(d) = self.drain_until {
                next = next.min(d);
            }
            if self.cpu0.is_none() {
                // Wake at the window's start to read the CPU clock there.
                next = next.min(self.win);
            }
            let now2 = Instant::now();
            let busy = self.restarts > 0 || !self.deferred.is_empty() || self.ctx.spec.busy_poll;
            if self.ring.is_some() {
                // One io_uring_enter: submit the turn's sends and receives,
                // wait for completions until the next timer (nanoseconds).
                let wait = if next <= now2 || busy {
                    None
                } else {
                    Some((next - now2).min(MAX_SLEEP))
                };
                self.uring_turn(wait)?;
                continue;
            }
            let timeout = if next <= now2 || busy {
                Some(Duration::ZERO)
            } else {
                if self.timer_target != Some(next) {
                    self.timer.arm(next - now2)?;
                    self.timer_target = Some(next);
                }
                Some(MAX_SLEEP)
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                let tok = ev.token();
                if tok == TIMER_TOKEN {
                    self.timer.drain();
                    self.timer_target = None;
                    continue;
                }
                let idx = tok.0;
                let now = Instant::now();
                if idx >= self.slots.len() || !self.slots[idx].in_use {
                    continue;
                }
                let rw = (
                    ev.is_readable() || ev.is_read_closed(),
                    ev.is_writable() || ev.is_error() || ev.is_write_closed(),
                );
                self.on_event(idx, rw, ev.is_read_closed() || ev.is_error(), now);
            }
        }
        let end = Instant::now();
        let interrupted = self.ctx.stop.load(Ordering::Relaxed);
        if interrupted {
            self.abandon_all(end);
        }
        // Final partial interval (none when the run ended in the warm-up).
        let k_start = self.win + self.interval * (self.interval_k as u32);
        let part_len = end.saturating_duration_since(k_start).as_secs_f64();
        if end > self.win && (part_len > 0.0 || self.part.replies > 0) {
            self.flush_interval(part_len.max(1e-9));
        }
        self.ctx.collector.thread_finished();
        if let Some((c0, u0, s0)) = self.cpu0 {
            // The total is the kernel's precise (nanosecond) run time of the
            // thread; rusage's tick-sampled user/system split only divides it.
            let (c1, u1, s1) = sys::thread_cpu();
            let total = (c1 - c0).max(0.0);
            let (du, ds) = ((u1 - u0).max(0.0), (s1 - s0).max(0.0));
            let user = if du + ds > 0.0 {
                total * du / (du + ds)
            } else {
                total
            };
            self.st.cpu_user = user;
            self.st.cpu_sys = total - user;
        }
        // The loop ends right after the last event (or when a drain or Ctrl-C gave up).
        self.st.end_s = end.saturating_duration_since(t0).as_secs_f64();
        Ok(self.st)
    }

    fn start_due_arrivals(&mut self, now: Instant) {
        let t0 = self.ctx.t0;
        let mut burst = 0u64;
        while let Some(sched) = self.schedule.as_mut() {
            let at = t0 + dur(sched.peek());
            if at > now {
                break;
            }
            if self.sessions_left == Some(0) || self.end_at.is_some_and(|e| at >= e) {
                self.schedule = None;
                break;
            }
            if self.setup_now >= self.ctx.setup_cap {
                // The server has not taken the connections already on their
                // way: this arrival waits (its lateness is recorded when it starts).
                if !self.backlogged {
                    self.backlogged = true;
                    let st = if at >= self.win {
                        &mut self.st
                    } else {
                        &mut self.warm
                    };
                    st.setup_capped += 1;
                }
                break;
            }
            sched.advance();
            let lag = us(now.saturating_duration_since(at));
            let st = if at >= self.win {
                &mut self.st
            } else {
                &mut self.warm
            };
            if self.backlogged {
                // Late because the server did not keep up: not the
                // generator's lag, but recorded as its own figure.
                rec(&mut st.setup_wait, lag);
                if self
                    .timeout
                    .is_some_and(|t| now.saturating_duration_since(at) > t)
                {
                    // It would only start to time out: count it as a
                    // client timeout without opening a socket.
                    self.skip_session(at);
                    continue;
                }
            } else {
                rec(&mut st.lag, lag);
                if lag > self.lag_threshold_us {
                    st.late_starts += 1;
                }
            }
            burst += 1;
            self.start_session(at, now);
        }
        if self
            .schedule
            .as_ref()
            .is_some_and(|s| t0 + dur(s.peek()) > now)
        {
            // Caught up with the schedule.
            self.backlogged = false;
        }
        self.st.max_burst = self.st.max_burst.max(burst);
    }

    /// An open-loop arrival dropped because it waited longer than --timeout
    /// for a connection slot: a session that failed with a client timeout,
    /// without a connection.
    fn skip_session(&mut self, sched: Instant) {
        if let Some(n) = self.sessions_left.as_mut() {
            *n = n.saturating_sub(1);
        }
        self.started_here += 1;
        let measured = sched >= self.win;
        let st = if measured {
            &mut self.st
        } else {
            &mut self.warm
        };
        st.sessions.started += 1;
        st.sessions.failed += 1;
        st.not_attempted += 1;
        st.error(ErrClass::ClientTimo);
        if measured {
            self.part.errors += 1;
        }
    }

    /// The connection of slot `idx` left setup (served, or gone).
    fn setup_done(&mut self, idx: usize) {
        let s = &mut self.slots[idx];
        if s.in_setup {
            s.in_setup = false;
            self.setup_now = self.setup_now.saturating_sub(1);
        }
    }

    /// Work queued by `fail` and `end_session`; only what was queued before
    /// this call runs now, so a peer failing instantly cannot spin here.
    fn run_deferred(&mut self, now: Instant) {
        let n = std::mem::take(&mut self.restarts);
        for _ in 0..n {
            if self.more_sessions(now) && !self.ctx.stop.load(Ordering::Relaxed) {
                self.start_session(now, now);
            }
        }
        if self.deferred.is_empty() {
            return;
        }
        let list = std::mem::take(&mut self.deferred);
        for (idx, gen) in list {
            let s = &self.slots[idx];
            if !s.in_use || s.gen != gen {
                continue;
            }
            if s.pace.is_some() && self.ctx.plan.burst_len(s.tmpl, s.burst).is_some() {
                self.paced_next(idx, now);
            } else {
                self.next_burst(idx, now);
            }
        }
    }

    fn flush_interval(&mut self, len_s: f64) {
        let mut part = std::mem::take(&mut self.part);
        part.len_s = len_s;
        part.open = self.open_conns;
        self.ctx
            .collector
            .report(self.interval_k, part, &self.ihist);
        self.ihist.reset();
        self.interval_k += 1;
        self.next_tick = self.win + self.interval * ((self.interval_k + 1) as u32);
    }

    fn arm(&mut self, idx: usize) {
        let s = &mut self.slots[idx];
        if let Some(w) = s.wake(self.max_resp) {
            if s.armed.map_or(true, |a| w < a) {
                s.armed = Some(w);
                self.heap.push(Reverse((w, idx, s.gen)));
            }
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((t, idx, gen))) = self.heap.peek().copied() {
            if t > now {
                break;
            }
            self.heap.pop();
            let s = &mut self.slots[idx];
            if !s.in_use || s.gen != gen || s.armed != Some(t) {
                continue;
            }
            s.armed = None;
            let Some(w) = s.wake(self.max_resp) else {
                continue;
            };
            if w > now {
                s.armed = Some(w);
                self.heap.push(Reverse((w, idx, gen)));
                continue;
            }
            if s.limit(self.max_resp).is_some_and(|d| d <= now) {
                self.fail(idx, ErrClass::ResponseTimo, now);
            } else if s.deadline.is_some_and(|d| d <= now) {
                self.fail(idx, ErrClass::ClientTimo, now);
            } else if let Some(until) = s.think_until.filter(|d| *d <= now) {
                s.think_until = None;
                // A paced send, or the end of a think time, that the
                // generator itself made late: it fell behind its plan.
                let lag = us(now.saturating_duration_since(until));
                let st = if self.in_window(idx) {
                    &mut self.st
                } else {
                    &mut self.warm
                };
                rec(&mut st.lag, lag);
                if lag > self.lag_threshold_us {
                    st.late_starts += 1;
                }
                self.next_burst(idx, now);
            }
        }
    }

    fn alloc_slot(&mut self, now: Instant) -> usize {
        match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots
                    .push(Slot::new(now, self.ctx.spec.print_reply.any()));
                self.slots.len() - 1
            }
        }
    }

    fn start_session(&mut self, sched: Instant, now: Instant) {
        if let Some(n) = self.sessions_left.as_mut() {
            *n = n.saturating_sub(1);
        }
        let arrival = self
            .lane
            .0
            .saturating_add(self.lane.1.saturating_mul(self.started_here));
        let tmpl = (arrival % self.ctx.plan.templates() as u64) as usize;
        let measured = sched >= self.win;
        if measured {
            self.st.sessions.started += 1;
        } else {
            self.warm.sessions.started += 1;
        }
        self.started_here += 1;
        self.active += 1;
        let idx = self.alloc_slot(now);
        let s = &mut self.slots[idx];
        s.in_use = true;
        s.tmpl = tmpl;
        s.arrival = arrival;
        s.sess_start = sched;
        s.sess_measured = measured;
        s.grp_open = false;
        s.grp_replies = 0;
        s.burst = 0;
        s.burst_len = 0;
        s.intended = sched;
        s.sess_replies = 0;
        s.sess_conns = 0;
        s.sess_failed = false;
        s.deadline = None;
        s.think_until = None;
        s.armed = None;
        if let Some((d, users)) = self.ctx.plan.pace {
            s.pace = Some(Schedule::new(
                d,
                arrival.min(u64::from(u32::MAX)) as u32,
                users.clamp(1, u64::from(u32::MAX)) as u32,
                self.ctx.spec.seed,
            ));
            self.paced_next(idx, now);
            return;
        }
        self.next_burst(idx, now);
    }

    /// Paced users: waits for the user's next scheduled time, or sends at
    /// once when that time has passed (the server held the user up).
    fn paced_next(&mut self, idx: usize, now: Instant) {
        let t0 = self.ctx.t0;
        let s = &mut self.slots[idx];
        let Some(p) = s.pace.as_mut() else {
            self.next_burst(idx, now);
            return;
        };
        let at = t0 + dur(p.peek());
        p.advance();
        s.intended = at;
        if self.end_at.is_some_and(|e| at >= e) {
            // The user's next turn falls after the end of the run.
            self.end_session(idx, now);
        } else if at > now {
            s.think_until = Some(at);
            self.arm(idx);
        } else {
            self.next_burst(idx, now);
        }
    }

    /// Starts burst `slot.burst`, or ends the session when there is none.
    fn next_burst(&mut self, idx: usize, now: Instant) {
        let plan = self.ctx.plan;
        let s = &mut self.slots[idx];
        let over = self.end_at.is_some_and(|e| now >= e) && s.burst > 0;
        match plan.burst_len(s.tmpl, s.burst) {
            Some(len) if !over && !self.ctx.stop.load(Ordering::Relaxed) => {
                s.burst_len = len;
                s.burst_sent = 0;
                s.burst_done = 0;
                self.pump(idx, now);
            }
            _ => self.end_session(idx, now),
        }
    }

    fn local_addr(&mut self) -> Option<IpAddr> {
        let la = self.ctx.local_addrs;
        if la.is_empty() {
            return None;
        }
        let a = la[self.local_next % la.len()];
        self.local_next = self.local_next.wrapping_add(1);
        Some(a)
    }

    fn open_conn(&mut self, idx: usize, now: Instant) -> Result<(), ErrClass> {
        let spec = self.ctx.spec;
        let addr = self.ctx.addr;
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
        let tries = self.ctx.local_addrs.len().max(1);
        let mut result = Err(ErrClass::Other);
        for _ in 0..tries {
            if let Some(ip) = self.local_addr() {
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
        // The connection belongs to the window when what it was opened for
        // (its session, or a user's call) was scheduled there.
        let measured = self.in_window(idx);
        self.slots[idx].conn_measured = measured;
        let st = if measured {
            &mut self.st
        } else {
            &mut self.warm
        };
        st.connections += 1;
        st.sessions.connections += 1;
        if measured {
            self.part.connections += 1;
            if self.st.first_s.is_none() {
                self.st.first_s = Some(now.saturating_duration_since(self.ctx.t0).as_secs_f64());
            }
        }
        let connecting = result?;
        let (stream, uc) = match self.ring.as_mut() {
            Some(ring) => {
                let id = ring
                    .open(idx, sock.into(), connecting)
                    .map_err(|e| ErrClass::from_io(&e))?;
                (None, Some(id))
            }
            None => {
                let std_stream: std::net::TcpStream = sock.into();
                let mut stream = TcpStream::from_std(std_stream);
                self.poll
                    .registry()
                    .register(
                        &mut stream,
                        Token(idx),
                        Interest::READABLE | Interest::WRITABLE,
                    )
                    .map_err(|e| ErrClass::from_io(&e))?;
                (Some(stream), None)
            }
        };
        self.open_conns += 1;
        if now >= self.win {
            self.st.max_open = self.st.max_open.max(self.open_conns);
        }
        let s = &mut self.slots[idx];
        s.sock = stream;
        s.uc = uc;
        if !s.in_setup {
            s.in_setup = true;
            self.setup_now += 1;
        }
        s.connecting = connecting;
        s.conn_start = now;
        s.conn_replies = 0;
        s.conn_failed = false;
        s.h1.reset();
        s.sess_conns += 1;
        s.deadline = self.timeout.map(|t| now + t);
        if !connecting {
            let st = if measured {
                &mut self.st
            } else {
                &mut self.warm
            };
            rec(&mut st.connect, 1);
        }
        self.arm(idx);
        Ok(())
    }

    /// Makes sure the session has a connection and sends what the burst allows.
    fn pump(&mut self, idx: usize, now: Instant) {
        if !self.slots[idx].has_conn() {
            if let Err(c) = self.open_conn(idx, now) {
                self.fail(idx, c, now);
                return;
            }
        }
        if self.slots[idx].connecting || self.slots[idx].handshaking {
            return;
        }
        if self.tls_cfg.is_some() && self.slots[idx].tls.is_none() {
            self.start_tls(idx, now);
            return;
        }
        let plan = self.ctx.plan;
        let spec = self.ctx.spec;
        let max_piped = spec.max_piped_calls.unwrap_or(u32::MAX);
        loop {
            let s = &self.slots[idx];
            let allowed = if plan.first_alone && s.burst_done == 0 {
                1
            } else {
                s.burst_len
            };
            let outstanding = s.burst_sent - s.burst_done;
            if s.burst_sent >= allowed || outstanding >= max_piped {
                break;
            }
            // Pipelining users with --num-calls: no more requests on this
            // connection than it will carry; the rest of the burst goes on
            // the next one.
            if plan.close_after_group
                && plan
                    .user_group
                    .is_some_and(|g| s.grp_replies + u64::from(outstanding) >= g)
            {
                break;
            }
            let sel = plan.call(s.tmpl, s.burst, s.burst_sent);
            let req = plan.req_for(sel, s.arrival, s.burst, s.burst_sent);
            let serial = self.serial;
            self.serial += 1;
            let r = &plan.requests[req as usize];
            let s = &mut self.slots[idx];
            let intended = s.intended.min(now);
            let measured = if plan.is_users {
                s.intended >= self.win
            } else {
                s.sess_measured
            };
            if plan.user_group.is_some() && !s.grp_open {
                s.grp_open = true;
                s.grp_start = intended;
                s.grp_measured = measured;
            }
            s.h1.queue(
                &r.bytes,
                Pending {
                    req,
                    is_head: r.is_head,
                    sent: now,
                    intended,
                    serial,
                    measured,
                },
            );
            s.burst_sent += 1;
            if measured {
                self.st.requests += 1;
                self.part.requests += 1;
            } else {
                self.warm.requests += 1;
            }
            if spec.print_request.any() {
                print_request(spec.print_request, serial, &r.bytes, r.head_len);
            }
        }
        let s = &mut self.slots[idx];
        if s.h1.outstanding() > 0 && s.deadline.is_none() {
            s.deadline = self.reply_timeout.map(|t| now + t);
        }
        self.arm(idx);
        self.flush(idx, now);
    }

    fn flush(&mut self, idx: usize, now: Instant) {
        if self.slots[idx].tls.is_some() {
            self.flush_tls(idx, now);
            return;
        }
        let s = &mut self.slots[idx];
        if let (Some(id), Some(ring)) = (s.uc, self.ring.as_mut()) {
            // io_uring: the bytes move into the connection's send buffer and
            // go out with the turn's submission; while an earlier send is in
            // flight they wait in `h1` (Done::Sent flushes again).
            let out = s.h1.output();
            match ring.send(id, out) {
                Ok(true) => {
                    let n = out.len();
                    s.h1.wrote(n);
                    if s.h1.output_measured() {
                        self.st.bytes_sent += n as u64;
                    } else {
                        self.warm.bytes_sent += n as u64;
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    let c = ErrClass::from_io(&e);
                    self.fail(idx, c, now);
                }
            }
            return;
        }
        let Some(sock) = s.sock.as_mut() else { return };
        while !s.h1.output().is_empty() {
            match sock.write(s.h1.output()) {
                Ok(0) => break,
                Ok(n) => {
                    s.h1.wrote(n);
                    if s.h1.output_measured() {
                        self.st.bytes_sent += n as u64;
                    } else {
                        self.warm.bytes_sent += n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let c = ErrClass::from_io(&e);
                    self.fail(idx, c, now);
                    return;
                }
            }
        }
    }

    /// HTTPS: requests into rustls (after the handshake), records out to the socket.
    fn flush_tls(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        let (Some(sock), Some(tls)) = (s.sock.as_mut(), s.tls.as_mut()) else {
            return;
        };
        let mut err = None;
        loop {
            if !s.handshaking && !s.h1.output().is_empty() {
                // rustls encrypts into its own send buffer (it allocates per
                // record: the one allocation per request over TLS).
                match tls.writer().write(s.h1.output()) {
                    Ok(n) => {
                        let st = if s.h1.output_measured() {
                            &mut self.st
                        } else {
                            &mut self.warm
                        };
                        st.bytes_sent += n as u64;
                        s.h1.wrote(n);
                    }
                    Err(e) => {
                        err = Some(ErrClass::from_io(&e));
                        break;
                    }
                }
            }
            if !tls.wants_write() {
                break;
            }
            match tls.write_tls(sock) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    err = Some(ErrClass::from_io(&e));
                    break;
                }
            }
        }
        if let Some(c) = err {
            self.fail(idx, c, now);
        }
    }

    fn on_event(&mut self, idx: usize, rw: (bool, bool), closed: bool, now: Instant) {
        let (readable, writable) = rw;
        if self.slots[idx].connecting {
            let s = &mut self.slots[idx];
            let Some(sock) = s.sock.as_ref() else { return };
            match sock.take_error() {
                Ok(Some(e)) | Err(e) => {
                    let c = ErrClass::from_io(&e);
                    self.fail(idx, c, now);
                    return;
                }
                Ok(None) => {}
            }
            // Writable with no pending error means connected; otherwise ask.
            if !writable {
                match sock.peer_addr() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                    Err(e) => {
                        let c = ErrClass::from_io(&e);
                        self.fail(idx, c, now);
                        return;
                    }
                }
            }
            self.connected(idx, now);
            if !self.slots[idx].in_use {
                return;
            }
        } else if writable {
            self.flush(idx, now);
        }
        if readable && self.slots[idx].in_use && self.slots[idx].sock.is_some() {
            self.read(idx, closed, now);
        }
    }

    /// The non-blocking connect of slot `idx` completed: record it, send.
    fn connected(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        s.connecting = false;
        let ct = us(now.saturating_duration_since(s.conn_start));
        let st = if s.conn_measured {
            &mut self.st
        } else {
            &mut self.warm
        };
        rec(&mut st.connect, ct);
        s.deadline = None;
        self.pump(idx, now);
    }

    /// io_uring: one turn's submission and wait, then its completions.
    fn uring_turn(&mut self, wait: Option<Duration>) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        let mut done = ring.turn(wait)?;
        for c in done.drain(..) {
            let Some(ring) = self.ring.as_mut() else {
                break;
            };
            let Some(ev) = ring.complete(c) else {
                continue;
            };
            let now = Instant::now();
            match ev {
                Done::Connected { slot, res } => {
                    if !self.slots[slot].in_use || !self.slots[slot].connecting {
                        continue;
                    }
                    match res {
                        Ok(()) => self.connected(slot, now),
                        Err(e) => self.fail(slot, ErrClass::from_io(&e), now),
                    }
                }
                Done::Sent { slot, id, res } => {
                    let s = &self.slots[slot];
                    if !s.in_use || s.uc != Some(id) {
                        continue;
                    }
                    match res {
                        Ok(()) => self.flush(slot, now),
                        Err(e) => self.fail(slot, ErrClass::from_io(&e), now),
                    }
                }
                Done::Recv { slot, id, res } => {
                    let s = &self.slots[slot];
                    if !s.in_use || s.uc != Some(id) {
                        continue;
                    }
                    self.uring_recv(slot, id, res, now);
                }
            }
        }
        if let Some(ring) = self.ring.as_mut() {
            ring.give_back(done);
        }
        Ok(())
    }

    /// io_uring: a RECV of slot `idx`'s connection `id` completed.
    fn uring_recv(&mut self, idx: usize, id: u32, res: io::Result<usize>, now: Instant) {
        match res {
            Ok(0) => self.on_eof(idx, now),
            Ok(n) => {
                let s = &self.slots[idx];
                let measured = s.h1.oldest().map_or(s.conn_measured, |p| p.measured);
                if measured {
                    self.st.bytes_recv += n as u64;
                    self.part.bytes_in += n as u64;
                } else {
                    self.warm.bytes_recv += n as u64;
                }
                let Some(ring) = self.ring.as_mut() else {
                    return;
                };
                let buf = std::mem::take(ring.spare());
                let alive = self.process(idx, &buf[..n.min(buf.len())], now);
                let Some(ring) = self.ring.as_mut() else {
                    return;
                };
                *ring.spare() = buf;
                let s = &self.slots[idx];
                if alive && s.in_use && s.uc == Some(id) {
                    if let Err(e) = ring.arm_recv(id) {
                        self.fail(idx, ErrClass::from_io(&e), now);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                if let Some(ring) = self.ring.as_mut() {
                    let _ = ring.arm_recv(id);
                }
            }
            Err(e) => self.fail(idx, ErrClass::from_io(&e), now),
        }
    }

    /// Reads until the socket is drained. `closed`: the peer's FIN (or an
    /// error) came with this event, so read on to see it even after a short read.
    fn read(&mut self, idx: usize, closed: bool, now: Instant) {
        let mut buf = std::mem::take(&mut self.rbuf);
        let gen = self.slots[idx].gen;
        loop {
            let s = &mut self.slots[idx];
            if !s.in_use || s.gen != gen {
                break;
            }
            let Some(sock) = s.sock.as_mut() else { break };
            let is_tls = s.tls.is_some();
            let got = match s.tls.as_mut() {
                None => match sock.read(&mut buf) {
                    Ok(0) => Got::Eof,
                    Ok(n) => Got::Data(n),
                    Err(e) => Got::Io(e),
                },
                Some(tls) => tls_read(tls, sock, &mut buf, s.handshaking),
            };
            match got {
                Got::Eof if s.handshaking => {
                    self.tls_failed(idx, || {
                        "the server closed the connection during the TLS handshake (refused?)"
                            .into()
                    });
                    self.fail(idx, ErrClass::ConnReset, now);
                    break;
                }
                Got::Eof => {
                    self.on_eof(idx, now);
                    break;
                }
                Got::HandshakeDone => {
                    self.on_handshake(idx, now);
                    continue;
                }
                Got::Tls(e) => {
                    // Send the alert rustls queued, then give up.
                    if let (Some(sock), Some(tls)) = (s.sock.as_mut(), s.tls.as_mut()) {
                        let _ = tls.write_tls(sock);
                    }
                    if s.handshaking {
                        self.tls_failed(idx, || crate::tls::describe_error(&e));
                    } else if s.conn_measured {
                        self.st.framing_errors += 1;
                    } else {
                        self.warm.framing_errors += 1;
                    }
                    self.fail(idx, ErrClass::Tls, now);
                    break;
                }
                Got::Data(n) => {
                    let measured = s.h1.oldest().map_or(s.conn_measured, |p| p.measured);
                    if measured {
                        self.st.bytes_recv += n as u64;
                        self.part.bytes_in += n as u64;
                    } else {
                        self.warm.bytes_recv += n as u64;
                    }
                    if !self.process(idx, &buf[..n], now) {
                        break;
                    }
                    if n < buf.len() && !closed && !is_tls {
                        // A short read drained the socket (epoll(7)): no need
                        // for one more read to see EAGAIN. (Not over TLS: a
                        // short plaintext read says nothing about the socket.)
                        break;
                    }
                }
                Got::Io(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Got::Io(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Got::Io(e) => {
                    let c = ErrClass::from_io(&e);
                    self.fail(idx, c, now);
                    break;
                }
            }
        }
        self.rbuf = buf;
        // TLS: records the handshake (or a key update) wants sent.
        let s = &self.slots[idx];
        if s.in_use && s.gen == gen && s.tls.as_ref().is_some_and(|t| t.wants_write()) {
            self.flush(idx, now);
        }
    }

    /// Starts the TLS handshake on a fresh connection; requests wait for its end.
    fn start_tls(&mut self, idx: usize, now: Instant) {
        let (Some(cfg), Some(client)) = (self.tls_cfg.as_ref(), self.ctx.tls) else {
            return;
        };
        match ClientConnection::new(cfg.clone(), client.name.clone()) {
            Ok(c) => {
                let s = &mut self.slots[idx];
                s.tls = Some(Box::new(c));
                s.handshaking = true;
                s.hs_start = now;
                s.deadline = self.timeout.map(|t| now + t);
                self.arm(idx);
                self.flush(idx, now);
            }
            Err(e) => {
                self.tls_failed(idx, || crate::tls::describe_error(&e));
                self.fail(idx, ErrClass::Tls, now);
            }
        }
    }

    /// The handshake completed: record it, then send what waits.
    fn on_handshake(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        s.handshaking = false;
        s.deadline = None;
        let Some(tls) = s.tls.as_ref() else { return };
        let st = if s.conn_measured {
            &mut self.st.tls
        } else {
            &mut self.warm.tls
        };
        rec(
            &mut st.handshake,
            us(now.saturating_duration_since(s.hs_start)),
        );
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
        self.pump(idx, now);
    }

    /// Counts a failed handshake of slot `idx` (once) and ends its handshake state.
    fn tls_failed(&mut self, idx: usize, why: impl FnOnce() -> String) {
        let s = &mut self.slots[idx];
        if !s.handshaking && s.tls.is_some() {
            return;
        }
        s.handshaking = false;
        let st = if s.conn_measured {
            &mut self.st.tls
        } else {
            &mut self.warm.tls
        };
        st.failed(why);
    }

    /// Feeds received bytes to the connection's HTTP/1.1 machine. Returns
    /// false when the connection is gone (closed, failed) and reading must stop.
    fn process(&mut self, idx: usize, data: &[u8], now: Instant) -> bool {
        // The server is serving this connection: it has left setup.
        self.setup_done(idx);
        let mut pos = 0;
        while pos < data.len() {
            let s = &mut self.slots[idx];
            let fed = match s.h1.feed(&data[pos..], now) {
                Ok(f) => f,
                Err(e) => {
                    let (measured, class) = match e {
                        FeedError::Unsolicited => (s.conn_measured, ErrClass::BodyOverrun),
                        FeedError::Malformed { measured, error } => {
                            (measured, ErrClass::from_response(error))
                        }
                    };
                    if measured {
                        self.st.framing_errors += 1;
                    } else {
                        self.warm.framing_errors += 1;
                    }
                    self.fail(idx, class, now);
                    return false;
                }
            };
            if fed.head_done {
                let status = fed
                    .reply
                    .map_or_else(|| s.h1.head_status(), |r| r.info.status);
                s.verify_on = self.verifier.is_some() && status == 200;
                s.verify_off = 0;
                s.verify_bad = false;
            }
            if let Some((off, len)) = fed.body {
                if s.verify_on {
                    let front = fed
                        .reply
                        .map(|r| r.call.req)
                        .or_else(|| s.h1.oldest().map(|p| p.req))
                        .unwrap_or(0);
                    let body = &data[pos + off..pos + off + len];
                    let path = &self.ctx.plan.requests[front as usize].path;
                    let vo = s.verify_off as usize;
                    let ok = match self.verifier.as_mut().and_then(|v| v.file(front, path)) {
                        Some(f) => f.get(vo..vo + len) == Some(body),
                        None => false,
                    };
                    let s = &mut self.slots[idx];
                    if !ok {
                        s.verify_bad = true;
                    }
                    s.verify_off += len as u64;
                }
            }
            pos += fed.consumed;
            // Progress: push the deadline out.
            let s = &mut self.slots[idx];
            s.deadline = self.timeout.map(|t| now + t);
            if let Some(r) = fed.reply {
                let measured = r.call.measured;
                let more_expected = self.slots[idx].h1.outstanding() > 0;
                if !self.on_reply(idx, r, now) {
                    if pos < data.len() && !more_expected {
                        // The connection ended after this reply, yet more
                        // bytes followed it: the server sent beyond its framing.
                        let st = if measured {
                            &mut self.st
                        } else {
                            &mut self.warm
                        };
                        st.framing_errors += 1;
                        st.error(ErrClass::BodyOverrun);
                        if measured {
                            self.part.errors += 1;
                        }
                    }
                    return false;
                }
            } else if fed.consumed == 0 {
                break;
            }
        }
        true
    }

    fn on_eof(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        match s.h1.eof(now) {
            Eof::Idle => {
                // Idle keep-alive connection closed by the server: reconnect on demand.
                self.close_conn(idx, true);
                let s = &self.slots[idx];
                if s.think_until.is_none() && s.burst_sent < s.burst_len {
                    self.pump(idx, now);
                }
            }
            // A close-delimited body ended; its reply has keep_alive
            // false, so on_reply closes and carries on.
            Eof::Reply(r) => {
                self.on_reply(idx, r, now);
            }
            Eof::Truncated => self.fail(idx, ErrClass::ConnReset, now),
            Eof::Malformed {
                measured,
                info,
                error,
            } => {
                let st = if measured {
                    &mut self.st
                } else {
                    &mut self.warm
                };
                if let Some((expected, got)) = H1Conn::expected_received(&info) {
                    st.bytes_expected += expected;
                    st.body_received += got;
                }
                st.framing_errors += 1;
                self.fail(idx, ErrClass::from_response(error), now);
            }
        }
    }

    /// A reply completed. Returns false when the connection is gone.
    fn on_reply(&mut self, idx: usize, reply: Reply, now: Instant) -> bool {
        let spec = self.ctx.spec;
        let plan = self.ctx.plan;
        let s = &mut self.slots[idx];
        let Reply {
            call: p,
            info,
            first,
        } = reply;
        let m = p.measured;
        let st = if m { &mut self.st } else { &mut self.warm };
        st.replies += 1;
        if m {
            self.part.replies += 1;
        }
        let class = (info.status / 100) as usize;
        if (1..=5).contains(&class) {
            st.status[class - 1] += 1;
        }
        st.header_bytes += info.header_bytes;
        st.body_bytes += info.body_bytes;
        st.footer_bytes += info.footer_bytes;
        st.body_received += info.body_bytes;
        st.bytes_expected += match info.framing {
            Framing::Length => info.content_length.unwrap_or(0),
            _ => info.body_bytes,
        };
        let resp_us = us(first.saturating_duration_since(p.sent));
        let xfer_us = us(now.saturating_duration_since(first));
        st.response_sum_us += resp_us as f64;
        st.transfer_sum_us += xfer_us as f64;
        rec(&mut st.first_byte, resp_us);
        let total_unc = us(now.saturating_duration_since(p.sent));
        rec(&mut st.response_unc, total_unc);
        st.record_response(us(now.saturating_duration_since(p.intended)));
        if m {
            rec(&mut self.ihist, total_unc);
        }
        if s.verify_on {
            st.verified += 1;
            let len = self
                .verifier
                .as_mut()
                .and_then(|v| v.file(p.req, &plan.requests[p.req as usize].path))
                .map(|f| f.len() as u64);
            if s.verify_bad || len != Some(s.verify_off) {
                st.mismatches += 1;
            }
            s.verify_on = false;
        }
        if spec.print_reply.any() {
            let raw = s.h1.captured();
            print_reply(spec.print_reply, p.serial, raw, &info);
            raw.clear();
        }
        s.conn_replies += 1;
        s.sess_replies += 1;
        // Closed-loop users: a session is `user_group` calls; with
        // --num-calls the user then closes its connection and opens a new one.
        let mut close_after = false;
        if let Some(g) = plan.user_group {
            s.grp_replies += 1;
            if s.grp_replies >= g {
                if s.grp_open {
                    let st = if s.grp_measured {
                        &mut self.st
                    } else {
                        &mut self.warm
                    };
                    rec(
                        &mut st.session,
                        us(now.saturating_duration_since(s.grp_start)),
                    );
                }
                s.grp_open = false;
                s.grp_replies = 0;
                close_after = plan.close_after_group;
            }
        }
        let failed_status = plan.is_session && spec.failure_status == Some(info.status);
        s.burst_done += 1;
        if failed_status && spec.retry_on_failure {
            // Send the same call again.
            s.burst_done -= 1;
            s.burst_sent -= 1;
        }
        if s.h1.outstanding() > 0 {
            s.deadline = self.reply_timeout.map(|t| now + t);
        } else {
            s.deadline = None;
        }
        if failed_status && !spec.retry_on_failure {
            s.sess_failed = true;
            self.end_session(idx, now);
            return false;
        }
        let keep = info.keep_alive && !close_after;
        if !info.keep_alive && plan.end_on_close {
            // httperf: the server closed the connection, so it ends here; the
            // calls it did not carry are not made (see `reconnect`).
            let s = &self.slots[idx];
            let total = plan.calls_per_session.unwrap_or(0);
            let unsent = total.saturating_sub(s.sess_replies);
            if unsent > 0 {
                let st = if s.sess_measured {
                    &mut self.st
                } else {
                    &mut self.warm
                };
                st.unsent_calls += unsent;
                self.end_session(idx, now);
                return false;
            }
        }
        if !keep {
            // The server closes after this reply (or the user's session is
            // over); unsent or unanswered calls go on a new connection.
            let s = &mut self.slots[idx];
            let lost = s.h1.outstanding() as u32;
            s.burst_sent -= lost;
            s.h1.reset();
            self.close_conn(idx, true);
        }
        let s = &mut self.slots[idx];
        if s.burst_done >= s.burst_len {
            let think = plan.think_after(s.tmpl, s.burst);
            s.burst += 1;
            let has_more =
                plan.burst_len(s.tmpl, s.burst).is_some() && !self.end_at.is_some_and(|e| now >= e);
            if has_more && s.pace.is_some() {
                self.paced_next(idx, now);
            } else if has_more && think > 0.0 {
                let until = now + dur(think);
                if self.end_at.is_some_and(|e| until >= e) {
                    self.end_session(idx, now);
                } else {
                    s.think_until = Some(until);
                    s.intended = until;
                    self.arm(idx);
                }
            } else {
                s.intended = now;
                self.next_burst(idx, now);
            }
        } else {
            s.intended = now;
            self.pump(idx, now);
        }
        keep && self.slots[idx].in_use && self.slots[idx].has_conn()
    }

    fn close_conn(&mut self, idx: usize, ok: bool) {
        self.setup_done(idx);
        let s = &mut self.slots[idx];
        let had = match (s.sock.take(), s.uc.take()) {
            (Some(sock), _) => {
                drop(sock);
                true
            }
            (None, Some(id)) => {
                if let Some(ring) = self.ring.as_mut() {
                    ring.close(id);
                }
                true
            }
            (None, None) => false,
        };
        if had {
            self.open_conns = self.open_conns.saturating_sub(1);
            if ok && !s.connecting && s.conn_replies > 0 {
                let life = us(Instant::now().saturating_duration_since(s.conn_start));
                let st = if s.conn_measured {
                    &mut self.st
                } else {
                    &mut self.warm
                };
                rec(&mut st.lifetime, life);
                st.conns_ok += 1;
            }
        }
        s.connecting = false;
        s.h1.reset();
        s.tls = None;
        s.handshaking = false;
        s.deadline = None;
    }

    /// A connection failed with `class`: count it, close, and end or continue the session.
    fn fail(&mut self, idx: usize, class: ErrClass, now: Instant) {
        if self.slots[idx].handshaking {
            self.tls_failed(idx, || {
                format!("the TLS handshake did not complete: {}", class.words())
            });
        }
        // The error belongs to what was waiting: the oldest call, else the connection.
        let measured = self.waiting_measured(idx);
        if measured {
            self.st.error(class);
            self.part.errors += 1;
        } else {
            self.warm.error(class);
        }
        self.close_conn(idx, false);
        let plan = self.ctx.plan;
        let s = &mut self.slots[idx];
        s.grp_open = false;
        s.grp_replies = 0;
        if plan.is_users {
            // A closed-loop user moves on to its next request on a new connection.
            s.burst += 1;
            s.burst_done = 0;
            s.burst_sent = 0;
            s.intended = now;
            let think = plan.think_after(s.tmpl, s.burst);
            if think > 0.0 && s.pace.is_none() {
                s.think_until = Some(now + dur(think));
                self.arm(idx);
            } else {
                // Continue from the main loop, not recursively: a peer that
                // fails at once (EMFILE, refused) must not grow the stack.
                self.deferred.push((idx, s.gen));
            }
            return;
        }
        s.sess_failed = true;
        self.end_session(idx, now);
    }

    /// Whether what slot `idx` does next belongs to the measurement window:
    /// for sessions (connections, httperf sessions) the session's scheduled
    /// start decides for all its calls; a closed-loop user's calls are each
    /// scheduled on their own.
    fn in_window(&self, idx: usize) -> bool {
        let s = &self.slots[idx];
        if self.ctx.plan.is_users {
            s.intended >= self.win
        } else {
            s.sess_measured
        }
    }

    /// Whether the oldest outstanding call (else the connection, else the
    /// session's next call) of slot `idx` was scheduled in the window.
    fn waiting_measured(&self, idx: usize) -> bool {
        let s = &self.slots[idx];
        match s.h1.oldest() {
            Some(p) => p.measured,
            None if s.has_conn() => s.conn_measured,
            None => self.in_window(idx),
        }
    }

    fn end_session(&mut self, idx: usize, now: Instant) {
        if !self.slots[idx].in_use {
            return;
        }
        self.close_conn(idx, true);
        let plan = self.ctx.plan;
        let s = &mut self.slots[idx];
        let life = now.saturating_duration_since(s.sess_start).as_secs_f64();
        let st = if s.sess_measured {
            &mut self.st
        } else {
            &mut self.warm
        };
        // Session time: all of a request-oriented connection's calls, or a
        // whole httperf session (users record theirs per group in on_reply).
        let complete = !s.sess_failed
            && !plan.is_users
            && plan.calls_per_session.map_or(true, |n| s.sess_replies >= n);
        if complete {
            rec(
                &mut st.session,
                us(now.saturating_duration_since(s.sess_start)),
            );
        }
        let ss = &mut st.sessions;
        if s.sess_failed {
            ss.failed += 1;
            ss.failtime_sum_s += life;
        } else {
            ss.completed += 1;
            ss.lifetime_sum_s += life;
            if s.sess_measured {
                self.part.sessions_done += 1;
            }
        }
        let n = s.sess_replies as usize;
        if ss.length_histogram.len() <= n {
            ss.length_histogram.resize(n + 1, 0);
        }
        ss.length_histogram[n] += 1;
        s.in_use = false;
        s.gen = s.gen.wrapping_add(1);
        s.think_until = None;
        s.armed = None;
        self.free.push(idx);
        self.active -= 1;
        if self.schedule.is_none()
            && matches!(self.ctx.plan.arrival, Arrival::Concurrent(_))
            && !self.ctx.plan.is_users
            && self.more_sessions(now)
            && !self.ctx.stop.load(Ordering::Relaxed)
        {
            // Started from the main loop (see `deferred`).
            self.restarts += 1;
        }
    }

    /// Ends everything still running (Ctrl-C, or the drain after --duration).
    fn abandon_all(&mut self, now: Instant) {
        let interrupted = self.ctx.stop.load(Ordering::Relaxed);
        for idx in 0..self.slots.len() {
            if !self.slots[idx].in_use {
                continue;
            }
            let waiting = self.slots[idx].h1.outstanding() > 0
                || self.slots[idx].connecting
                || self.slots[idx].handshaking;
            if waiting {
                let measured = self.waiting_measured(idx);
                if interrupted {
                    self.st.abandoned += 1;
                } else if measured {
                    self.st.error(ErrClass::ClientTimo);
                    self.part.errors += 1;
                } else {
                    self.warm.error(ErrClass::ClientTimo);
                }
            }
            self.close_conn(idx, !waiting);
            self.slots[idx].sess_failed = waiting;
            self.sessions_left = Some(0);
            self.end_session(idx, now);
        }
        self.schedule = None;
    }
}

/// What one read from a connection gave (plain or TLS).
enum Got {
    Data(usize),
    Eof,
    HandshakeDone,
    Io(io::Error),
    Tls(rustls::Error),
}

/// Reads plaintext from a TLS connection: what rustls has decrypted, else
/// ciphertext from the socket, processed. Reports the handshake's end.
fn tls_read(
    tls: &mut ClientConnection,
    sock: &mut TcpStream,
    buf: &mut [u8],
    handshaking: bool,
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
        match tls.read_tls(sock) {
            Ok(0) => return Got::Eof,
            Ok(_) => {}
            Err(e) => return Got::Io(e),
        }
        if let Err(e) = tls.process_new_packets() {
            return Got::Tls(e);
        }
        if handshaking && !tls.is_handshaking() {
            return Got::HandshakeDone;
        }
    }
}

fn print_request(what: crate::spec::PrintWhat, serial: u64, bytes: &[u8], head_len: usize) {
    let mut out = String::new();
    let head = String::from_utf8_lossy(&bytes[..head_len.min(bytes.len())]);
    let body = &bytes[head_len.min(bytes.len())..];
    if what.header() {
        for line in head.split("\r\n").take_while(|l| !l.is_empty()) {
            out.push_str(&format!("SH{serial}:{line}\n"));
        }
        out.push_str(&format!("SH{serial}:\n"));
    }
    if what.body() && !body.is_empty() {
        for line in String::from_utf8_lossy(body).lines() {
            out.push_str(&format!("SB{serial}:{line}\n"));
        }
    }
    out.push_str(&format!(
        "SS{serial}: header {} content {}\n",
        head_len,
        body.len()
    ));
    let mut so = io::stdout().lock();
    let _ = so.write_all(out.as_bytes());
}

fn print_reply(
    what: crate::spec::PrintWhat,
    serial: u64,
    raw: &[u8],
    info: &httplab_wire::response::ResponseInfo,
) {
    let mut out = String::new();
    let hl = (info.header_bytes as usize).min(raw.len());
    if what.header() {
        for line in String::from_utf8_lossy(&raw[..hl])
            .split("\r\n")
            .take_while(|l| !l.is_empty())
        {
            out.push_str(&format!("RH{serial}:{line}\n"));
        }
        out.push_str(&format!("RH{serial}:\n"));
    }
    if what.body() && raw.len() > hl {
        for line in String::from_utf8_lossy(&raw[hl..]).lines() {
            out.push_str(&format!("RB{serial}:{line}\n"));
        }
    }
    out.push_str(&format!(
        "RS{serial}: header {} content {} footer {}\n",
        info.header_bytes, info.body_bytes, info.footer_bytes
    ));
    let mut so = io::stdout().lock();
    let _ = so.write_all(out.as_bytes());
}
