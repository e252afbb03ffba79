//! The HTTP/1.1 driver of one worker thread: mio (epoll, edge-triggered) or
//! io_uring completions, non-blocking connects, a slab of pre-allocated
//! slots (`slot.rs`), a timer heap with lazy re-arming, and a timerfd for
//! sub-millisecond wake-ups.
//!
//! Each slot holds one session (`session.rs`: the rules — bursts,
//! pipelining, think times, users, failures, server closes) and at most one
//! connection. The driver feeds the session events and does what it asks
//! (open, send, close, wait); it moves bytes through TLS and `H1Conn` and
//! records the statistics. Arrivals (the one arrival loop: what is due,
//! when to wake, when the run is over), the window and intervals are
//! `arrivals.rs` and `worker.rs`, shared with the HTTP/3 stream driver.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rustls::{ClientConfig, ClientConnection};

use crate::arrivals::{Arrivals, Turn};
use crate::clock::{us, MAX_SLEEP};
use crate::h1::Pending;
use crate::record::{self, Verifier};
use crate::session::{Action, Outcome, Rules};
use crate::slot::{self, Link, Slot};
use crate::stats::{rec, ErrClass};
use crate::sys;
use crate::uring::Ring;
use crate::worker::{LocalAddrs, Tally, Window, WorkerCtx};

mod h2;
mod h2_plan;
mod receive;

const TIMER_TOKEN: Token = Token(usize::MAX - 1);
const READ_BUF: usize = 64 * 1024;

pub(crate) struct Worker<'a> {
    ctx: &'a WorkerCtx<'a>,
    rules: Rules<'a>,
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
    tally: Tally,
    window: Window,
    arrivals: Arrivals,
    /// Sessions running.
    active: u64,
    open_conns: u64,
    local: LocalAddrs,
    serial: u64,
    verifier: Option<Verifier>,
    /// Sessions to continue from the main loop ([`Action::Yield`]).
    deferred: Vec<(usize, u32)>,
    timeout: Option<Duration>,
    reply_timeout: Option<Duration>,
    /// `--max-response-time`.
    max_resp: Option<Duration>,
    lag_threshold_us: u64,
    /// HTTPS: this worker's TLS configuration (its own session cache).
    tls_cfg: Option<Arc<ClientConfig>>,
    /// `--http2`: the request header blocks and windows of the run.
    h2: Option<h2_plan::H2Plan>,
    /// Connections in setup now. Open-loop arrivals wait while it is at
    /// `ctx.setup_cap`: under overload the server's accept queue then never
    /// overflows (no dropped SYNs, no 1 s / 3 s retransmission stalls, no
    /// descriptors piling up), and the generator runs at the server's pace.
    setup_now: u64,
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
        let window = Window::new(ctx);
        let mut tally = Tally::new(spec, ctx.t0);
        let arrivals = Arrivals::new(ctx, &mut tally);
        let ring = if ctx.uring && ctx.tls.is_none() {
            Some(Ring::new()?)
        } else {
            None
        };
        Ok(Worker {
            ctx,
            rules: match &spec.http2 {
                // HTTP/2: the session's calls are concurrent streams.
                Some(h) => Rules::for_worker(ctx, &window, h.max_concurrent_streams, true),
                None => Rules::for_worker(
                    ctx,
                    &window,
                    spec.max_piped_calls.unwrap_or(u32::MAX),
                    false,
                ),
            },
            poll,
            ring,
            timer,
            timer_target: None,
            slots: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            rbuf: vec![0u8; READ_BUF],
            tally,
            window,
            arrivals,
            active: 0,
            open_conns: 0,
            local: LocalAddrs::new(ctx.thread),
            serial: 0,
            verifier: spec.verify_root.clone().map(|root| Verifier {
                root,
                files: Vec::new(),
            }),
            deferred: Vec::new(),
            timeout: ctx.timeout(),
            reply_timeout: ctx.reply_timeout(),
            max_resp: ctx.max_resp(),
            lag_threshold_us: ctx.lag_threshold_us(),
            tls_cfg: ctx.tls.map(|t| {
                let cfg = t.for_worker();
                if spec.http2.is_none() {
                    return cfg;
                }
                // h2 first; http/1.1 too, so a server without h2 says what it chose.
                let mut c = (*cfg).clone();
                c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                Arc::new(c)
            }),
            h2: match &spec.http2 {
                Some(h) => {
                    Some(h2_plan::H2Plan::new(spec, ctx.plan, h).map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidInput, format!("{e:#}"))
                    })?)
                }
                None => None,
            },
            setup_now: 0,
        })
    }

    fn stopping(&self) -> bool {
        self.ctx.stop.load(Ordering::Relaxed)
    }

    /// Runs the thread's share of the load; returns its statistics.
    pub fn run(mut self) -> io::Result<crate::stats::WorkerStats> {
        let mut events = Events::with_capacity(1024);
        let t0 = self.ctx.t0;
        let now = Instant::now();
        if t0 > now {
            std::thread::sleep(t0 - now);
        }
        while !self.stopping() {
            let now = Instant::now();
            self.window
                .turn(now, &mut self.tally, self.open_conns, self.ctx.collector);
            self.start_due(now);
            self.fire_timers(now);
            self.run_deferred(now);
            let running = self.active > 0 || !self.deferred.is_empty();
            match self
                .arrivals
                .after_turn(now, &self.window, self.reply_timeout, running)
            {
                Turn::Wait => {}
                Turn::Drained => {
                    self.abandon_all(now);
                    break;
                }
                Turn::Done => break,
            }
            self.wait(&mut events)?;
        }
        let end = Instant::now();
        if self.stopping() {
            self.abandon_all(end);
        }
        let Worker {
            ctx,
            window,
            tally,
            open_conns,
            ..
        } = self;
        Ok(window.finish(end, tally, open_conns, ctx.collector))
    }

    /// Sleeps until the next thing to do (a timer, an arrival, a socket
    /// event), then handles the socket events.
    fn wait(&mut self, events: &mut Events) -> io::Result<()> {
        let now = Instant::now();
        // At the setup cap, a connection leaving setup (a socket event) wakes us.
        let mut next = self.arrivals.wake(now, self.setup_now, &self.window);
        if let Some(Reverse((t, _, _))) = self.heap.peek() {
            next = next.min(*t);
        }
        let busy = !self.deferred.is_empty() || self.ctx.spec.busy_poll;
        if self.ring.is_some() {
            // One io_uring_enter: submit the turn's sends and receives,
            // wait for completions until the next timer (nanoseconds).
            let wait = (next > now && !busy).then(|| (next - now).min(MAX_SLEEP));
            return self.uring_turn(wait);
        }
        let timeout = if next <= now || busy {
            Duration::ZERO
        } else {
            if self.timer_target != Some(next) {
                self.timer.arm(next - now)?;
                self.timer_target = Some(next);
            }
            MAX_SLEEP
        };
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
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
        Ok(())
    }

    /// Starts every session due now (`arrivals.rs`); each one's connect
    /// counts in `setup_now` at once, so the setup cap holds within the turn.
    fn start_due(&mut self, now: Instant) {
        while let Some(a) = self
            .arrivals
            .due(now, self.setup_now, &self.window, &mut self.tally)
        {
            self.start_session(a.arrival, a.sched, now);
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

    /// Work queued by sessions that yielded; only what was queued before
    /// this call runs now, so a peer failing instantly cannot spin here.
    fn run_deferred(&mut self, now: Instant) {
        if self.deferred.is_empty() {
            return;
        }
        let list = std::mem::take(&mut self.deferred);
        for &(idx, gen) in &list {
            let s = &mut self.slots[idx];
            if !s.in_use || s.gen != gen {
                continue;
            }
            s.sess.resume(&self.rules, now);
            self.drive(idx, now);
        }
        // Keep the list's memory for the next time.
        if self.deferred.is_empty() {
            self.deferred = list;
            self.deferred.clear();
        }
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
            let streams = s.wire.h2.is_some() && !s.connecting && !s.handshaking;
            if s.limit(self.max_resp).is_some_and(|d| d <= now) {
                if streams {
                    self.h2_stream_timeout(idx, ErrClass::ResponseTimo, now);
                } else {
                    self.fail(idx, ErrClass::ResponseTimo, now);
                }
            } else if s.deadline.is_some_and(|d| d <= now) {
                if streams && s.wire.outstanding() > 0 {
                    self.h2_stream_timeout(idx, ErrClass::ClientTimo, now);
                } else {
                    self.fail(idx, ErrClass::ClientTimo, now);
                }
            } else if let Some(due) = s.sess.timer(&self.rules, now) {
                // A paced send, or the end of a think time, that the
                // generator itself made late: it fell behind its plan.
                let lag = us(now.saturating_duration_since(due.at));
                self.tally.lag(due.measured, lag, self.lag_threshold_us);
                self.drive(idx, now);
            }
        }
    }

    fn alloc_slot(&mut self, now: Instant) -> usize {
        match self.free.pop() {
            Some(i) => i,
            None => {
                let link = match self.tls_cfg {
                    Some(_) => Link::Tls,
                    None => Link::Plain,
                };
                self.slots.push(Slot::new(
                    now,
                    self.ctx.spec.print_reply.any(),
                    link,
                    self.h2.as_ref().map(|h| h.conn()),
                ));
                self.slots.len() - 1
            }
        }
    }

    /// Starts the session of global arrival `arrival`, intended at `sched`.
    fn start_session(&mut self, arrival: u64, sched: Instant, now: Instant) {
        self.tally.of(sched >= self.window.win).sessions.started += 1;
        self.active += 1;
        let idx = self.alloc_slot(now);
        let s = &mut self.slots[idx];
        s.in_use = true;
        s.deadline = None;
        s.armed = None;
        s.sess.start(&self.rules, arrival, sched, now);
        self.drive(idx, now);
    }

    /// Asks slot `idx`'s session what to do and does it, until it waits.
    fn drive(&mut self, idx: usize, now: Instant) {
        let mut sent = false;
        loop {
            let s = &mut self.slots[idx];
            if !s.in_use {
                return;
            }
            match s.sess.poll(&self.rules, now) {
                Action::Open { measured } => self.open(idx, measured, now),
                Action::Send(call) => {
                    self.send(idx, call.req, call.intended, call.measured, now);
                    sent = true;
                }
                Action::Close => self.close_conn(idx, true),
                Action::GroupDone { start, measured } => rec(
                    &mut self.tally.of(measured).session,
                    us(now.saturating_duration_since(start)),
                ),
                Action::Reset { measured } => self.tally.error(measured, ErrClass::ConnReset),
                Action::Unsent { calls, measured } => {
                    self.tally.of(measured).unsent_calls += calls;
                }
                Action::Done(o) => {
                    self.session_done(idx, o, now);
                    return;
                }
                Action::Yield => {
                    let gen = s.gen;
                    self.deferred.push((idx, gen));
                    break;
                }
                Action::Wait(_) | Action::Idle => break,
            }
        }
        let s = &mut self.slots[idx];
        if s.wire.h2.is_some() {
            self.h2_deadline(idx);
        } else if s.wire.outstanding() > 0 && s.deadline.is_none() {
            s.deadline = self.reply_timeout.map(|t| now + t);
        }
        self.arm(idx);
        if sent {
            self.flush(idx, now);
        }
    }

    /// Opens slot `idx`'s connection; a failure is the session's (counted here).
    fn open(&mut self, idx: usize, measured: bool, now: Instant) {
        match self.open_conn(idx, measured, now) {
            Ok(false) => {}
            Ok(true) => self.ready(idx, now),
            Err(c) => self.lose(idx, c, now),
        }
    }

    /// Returns Ok(true) when the connection is established at once.
    fn open_conn(&mut self, idx: usize, measured: bool, now: Instant) -> Result<bool, ErrClass> {
        let ctx = self.ctx;
        let (sock, result) = slot::connect(ctx.spec, ctx.addr, &mut self.local, ctx.local_addrs)?;
        // The connection belongs to the window when what it was opened for
        // (its session, or a user's call) was scheduled there.
        self.slots[idx].conn_measured = measured;
        self.tally.connection(measured, now, ctx.t0);
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
        if now >= self.window.win {
            self.tally.st.max_open = self.tally.st.max_open.max(self.open_conns);
        }
        let s = &mut self.slots[idx];
        s.sock = stream;
        s.uc = uc;
        s.conn_id += 1;
        if !s.in_setup {
            s.in_setup = true;
            self.setup_now += 1;
        }
        s.connecting = connecting;
        s.conn_start = now;
        s.conn_replies = 0;
        s.wire.reset();
        s.deadline = self.timeout.map(|t| now + t);
        if !connecting {
            rec(&mut self.tally.of(measured).connect, 1);
        }
        self.arm(idx);
        Ok(!connecting)
    }

    /// The TCP connection is up: start TLS, or tell the session.
    fn ready(&mut self, idx: usize, now: Instant) {
        if self.tls_cfg.is_some() && self.slots[idx].tls.is_none() {
            self.start_tls(idx, now);
        } else {
            self.slots[idx].sess.connected();
        }
    }

    /// Queues call `req` on slot `idx`'s connection.
    fn send(&mut self, idx: usize, req: u32, intended: Instant, measured: bool, now: Instant) {
        let spec = self.ctx.spec;
        let r = &self.ctx.plan.requests[req as usize];
        let serial = self.serial;
        self.serial += 1;
        let pending = Pending {
            req,
            is_head: r.is_head,
            sent: now,
            intended,
            serial,
            measured,
        };
        self.tally.of(measured).requests += 1;
        self.tally.stage_sent(intended);
        if measured {
            self.tally.part.requests += 1;
        }
        if self.h2.is_some() {
            self.h2_send(idx, pending, now);
            return;
        }
        self.slots[idx].wire.h1.queue(&r.bytes, pending);
        if spec.print_request.any() {
            record::print_request(spec.print_request, serial, &r.bytes, r.head_len);
        }
    }

    fn flush(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        let r = match (s.uc, self.ring.as_mut()) {
            // The ring exists for cleartext runs only (`Worker::new`).
            (Some(id), Some(ring)) if s.link() == Link::Plain => {
                // io_uring: the bytes move into the connection's send buffer and
                // go out with the turn's submission; while an earlier send is in
                // flight they wait in `h1` (Done::Sent flushes again).
                let out = s.wire.output();
                match ring.send(id, out) {
                    Ok(true) => {
                        let n = out.len();
                        s.wire.wrote(n);
                        let m = s.wire.output_measured(s.conn_measured);
                        self.tally.of(m).bytes_sent += n as u64;
                        Ok(())
                    }
                    Ok(false) => Ok(()),
                    Err(e) => Err(ErrClass::from_io(&e)),
                }
            }
            _ => s.write_out(&mut self.tally),
        };
        if let Err(c) = r {
            self.fail(idx, c, now);
        }
    }

    fn on_event(&mut self, idx: usize, rw: (bool, bool), closed: bool, now: Instant) {
        let (readable, writable) = rw;
        if self.slots[idx].connecting {
            match self.slots[idx].connect_result(writable) {
                Err(c) => return self.fail(idx, c, now),
                Ok(false) => return,
                Ok(true) => {}
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
        rec(&mut self.tally.of(s.conn_measured).connect, ct);
        s.deadline = None;
        self.ready(idx, now);
        self.drive(idx, now);
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
                s.tls_in = Vec::new();
                s.handshaking = true;
                s.hs_start = now;
                s.deadline = self.timeout.map(|t| now + t);
                self.arm(idx);
                self.flush(idx, now);
            }
            Err(e) => {
                self.tls_failed(idx, || crate::tls::describe_error(&e));
                self.lose(idx, ErrClass::Tls, now);
            }
        }
    }

    /// The handshake completed: record it, then send what waits.
    fn on_handshake(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        s.handshaking = false;
        s.deadline = None;
        let Some(tls) = s.tls.as_ref() else { return };
        let took = us(now.saturating_duration_since(s.hs_start));
        slot::record_handshake(tls, &mut self.tally.of(s.conn_measured).tls, took);
        if self.h2.is_some() && !self.h2_alpn_ok(idx, now) {
            return;
        }
        self.slots[idx].sess.connected();
        self.drive(idx, now);
        // What was queued before the handshake (an HTTP/2 preface, calls
        // sent while connecting) goes out now, inside the TLS session.
        let s = &self.slots[idx];
        if s.in_use && s.has_conn() && !s.wire.output().is_empty() {
            self.flush(idx, now);
        }
    }

    /// Counts a failed handshake of slot `idx` (once) and ends its handshake state.
    fn tls_failed(&mut self, idx: usize, why: impl FnOnce() -> String) {
        let s = &mut self.slots[idx];
        if !s.handshaking && s.tls.is_some() {
            return;
        }
        s.handshaking = false;
        self.tally.of(s.conn_measured).tls.failed(why);
    }

    fn close_conn(&mut self, idx: usize, ok: bool) {
        self.setup_done(idx);
        if self.slots[idx].has_conn() {
            self.h2_closing(idx);
        }
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
                let st = self.tally.of(s.conn_measured);
                rec(&mut st.lifetime, life);
                st.conns_ok += 1;
            }
        }
        s.connecting = false;
        s.wire.reset();
        s.tls = None;
        s.tls_in = Vec::new();
        s.handshaking = false;
        s.deadline = None;
    }

    /// A connection failed with `class`: count it, close, let the session
    /// decide, and do what it says.
    fn fail(&mut self, idx: usize, class: ErrClass, now: Instant) {
        if !self.slots[idx].in_use {
            return;
        }
        self.lose(idx, class, now);
        self.drive(idx, now);
    }

    /// [`Worker::fail`] without driving the session on (inside `drive`).
    fn lose(&mut self, idx: usize, class: ErrClass, now: Instant) {
        if class == ErrClass::ConnReset && self.retry_unanswered(idx) {
            return;
        }
        let s = &self.slots[idx];
        if s.wire.h2.is_some() && s.wire.outstanding() > 0 {
            // HTTP/2: every stream in flight fails, as its own call.
            self.h2_lose_streams(idx, class, now);
            return;
        }
        if self.slots[idx].handshaking {
            self.tls_failed(idx, || {
                format!("the TLS handshake did not complete: {}", class.words())
            });
        }
        // The error belongs to what was waiting: the oldest call, else the connection.
        let s = &self.slots[idx];
        let measured = s.waiting_measured(s.sess.in_window(&self.rules));
        self.tally.error(measured, class);
        self.close_conn(idx, false);
        self.slots[idx].sess.conn_failed(&self.rules, now);
    }

    /// The session of slot `idx` is over: record it, free the slot.
    fn session_done(&mut self, idx: usize, o: Outcome, now: Instant) {
        self.close_conn(idx, true);
        self.tally.session_done(&o, now);
        let s = &mut self.slots[idx];
        s.in_use = false;
        s.gen = s.gen.wrapping_add(1);
        s.armed = None;
        self.free.push(idx);
        self.active -= 1;
        // A sequential run's next connection starts from the main loop.
        self.arrivals.ended(now, &self.window);
    }

    /// Ends everything still running (Ctrl-C, or the drain after --duration).
    fn abandon_all(&mut self, now: Instant) {
        let interrupted = self.stopping();
        self.arrivals.stop();
        for idx in 0..self.slots.len() {
            let s = &self.slots[idx];
            if !s.in_use {
                continue;
            }
            let waiting = s.wire.outstanding() > 0 || s.connecting || s.handshaking;
            if waiting && s.wire.h2.is_some() && s.wire.outstanding() > 0 {
                self.h2_abandon(idx, interrupted);
            } else if waiting {
                let measured = s.waiting_measured(s.sess.in_window(&self.rules));
                if interrupted {
                    self.tally.st.abandoned += 1;
                } else {
                    self.tally.error(measured, ErrClass::ClientTimo);
                }
            }
            self.close_conn(idx, !waiting);
            self.slots[idx].sess.abandon(waiting);
            self.drive(idx, now);
        }
    }
}
