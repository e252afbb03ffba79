//! One client session's rules, without I/O: what to send when, what a reply,
//! a failure or a server close means for the session, when it is over.
//!
//! A *session* is what the workload starts: one connection's calls
//! (request-oriented), an httperf session (bursts, the first call alone, the
//! rest pipelined, think times), or a closed-loop user (paced or not). Both
//! drivers — the epoll/io_uring engine and the HTTP/2 driver — feed it events
//! with the current time ([`Session::start`], [`Session::connected`],
//! [`Session::reply`], [`Session::conn_failed`], [`Session::call_failed`],
//! [`Session::refused`], [`Session::server_closed`], [`Session::timer`],
//! [`Session::resume`], [`Session::abandon`]) and then call
//! [`Session::poll`] until it answers [`Action::Idle`], [`Action::Wait`],
//! [`Action::Yield`] or [`Action::Done`], doing what each [`Action`] says.
//!
//! The machine has no clock, no socket and no per-request allocation (the
//! plan's templates and the pacing schedule are all it reads); statistics
//! stay with the driver, which records what the actions report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::arrivals::schedule::Schedule;
use crate::clock::dur;
use crate::plan::Plan;

/// What the rules read besides the session itself: the plan, the run's
/// window and how the driver's protocol carries calls. One per worker.
pub(crate) struct Rules<'a> {
    pub plan: &'a Plan,
    /// The schedule's origin (pacing times are seconds from it).
    pub t0: Instant,
    /// Start of the measurement window: what is scheduled before is warm-up.
    pub win: Instant,
    /// End of a `--duration` run.
    pub end_at: Option<Instant>,
    /// `--failure-status` (sessions only, as httperf).
    pub failure_status: Option<u16>,
    /// `--retry-on-failure`: make a call answered with the failure status again.
    pub retry_on_failure: bool,
    /// Calls outstanding on one connection at most: `--max-piped-calls`
    /// (HTTP/1.1), the concurrent streams of a connection (HTTP/2).
    pub depth: u32,
    /// Calls flow (HTTP/2 streams): a call may start while earlier calls are
    /// still answered, up to `depth`, with the think time after each reply;
    /// otherwise a burst starts when the previous one is answered.
    pub streams: bool,
    /// `--seed` (pacing schedules).
    pub seed: u64,
    /// The run is being stopped (Ctrl-C): no new burst starts.
    pub stop: &'a AtomicBool,
}

impl Rules<'_> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn over_at(&self, t: Instant) -> bool {
        self.end_at.is_some_and(|e| t >= e)
    }

    /// Calls a connection carries at most (users with `--num-calls` close after them).
    fn per_conn(&self) -> u64 {
        match self.plan.user_group {
            Some(g) if self.plan.kind.is_users() && self.plan.close_after_group => g,
            _ => u64::MAX,
        }
    }
}

/// One call to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Call {
    /// Index into `Plan::requests`.
    pub req: u32,
    /// When it should have been sent (corrected latency counts from here).
    pub intended: Instant,
    /// It belongs to the measurement window.
    pub measured: bool,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub failed: bool,
    /// Replies the session received.
    pub replies: u64,
    /// Its scheduled start.
    pub start: Instant,
    /// When its last reply arrived (its start when none did).
    pub last_reply: Instant,
    /// Scheduled in the window.
    pub measured: bool,
    /// It made all its calls: its session time counts (not for users, whose
    /// sessions are their groups of calls, see [`Action::GroupDone`]).
    pub complete: bool,
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Open a connection (for something in the window when `measured`);
    /// report [`Session::connected`] or [`Session::conn_failed`].
    Open { measured: bool },
    /// Send this call on the connection.
    Send(Call),
    /// Close the connection gracefully; calls still on it are dropped (the
    /// session has taken them back or written them off).
    Close,
    /// Nothing to do before `t`: call [`Session::timer`] then (or earlier
    /// on another event).
    Wait(Instant),
    /// Continue from the driver's main loop ([`Session::resume`]), not from
    /// here: a peer failing at once must not make the driver recurse.
    Yield,
    /// A closed-loop user's session (group of calls) ended: its session
    /// time counts from `start`.
    GroupDone { start: Instant, measured: bool },
    /// The server closed a connection that had served nothing while calls
    /// waited: count a connection reset.
    Reset { measured: bool },
    /// Calls the server's close left unmade (httperf's request-oriented
    /// connections end at the server's close).
    Unsent { calls: u64, measured: bool },
    /// The session is over; the machine is free for another start.
    Done(Outcome),
    /// Waiting for the connection or for replies.
    Idle,
}

/// A lateness to record: a think time or paced send that fired late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    pub at: Instant,
    pub measured: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    None,
    Opening,
    Open,
    /// Streams: the connection is ending (refused or lost a stream); no new
    /// calls go on it, it closes when its calls are answered.
    Closing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not started, or over and reported.
    Free,
    /// Sending the current burst (or, with streams, the session's calls).
    Burst,
    /// Thinking, or waiting for the next paced send.
    Think(Instant),
    /// Continue from the main loop.
    Yield,
    /// Over: report what is pending, then [`Action::Done`].
    Ending,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    open: bool,
    start: Instant,
    replies: u64,
    measured: bool,
}

/// A session's state (see the module documentation).
#[derive(Debug, Clone)]
pub(crate) struct Session {
    tmpl: usize,
    arrival: u64,
    start: Instant,
    measured: bool,
    phase: Phase,
    conn: Conn,
    /// Current burst (streams: index of the next call).
    burst: u64,
    burst_len: u32,
    sent: u32,
    done: u32,
    /// When the next call should go out.
    intended: Instant,
    replies: u64,
    last_reply: Instant,
    failed: bool,
    group: Group,
    pace: Option<Schedule>,
    // Streams.
    outstanding: u32,
    /// Calls not yet answered or failed.
    left: u64,
    on_conn: u64,
    conn_replies: u64,
    conn_lost: bool,
    wait: Option<Instant>,
    // Reports pending for `poll`, in this order.
    group_done: Option<(Instant, bool)>,
    reset: Option<bool>,
    unsent: u64,
    close: bool,
}

impl Session {
    /// A free session.
    pub fn new(now: Instant) -> Session {
        Session {
            tmpl: 0,
            arrival: 0,
            start: now,
            measured: true,
            phase: Phase::Free,
            conn: Conn::None,
            burst: 0,
            burst_len: 0,
            sent: 0,
            done: 0,
            intended: now,
            replies: 0,
            last_reply: now,
            failed: false,
            group: Group {
                open: false,
                start: now,
                replies: 0,
                measured: true,
            },
            pace: None,
            outstanding: 0,
            left: 0,
            on_conn: 0,
            conn_replies: 0,
            conn_lost: false,
            wait: None,
            group_done: None,
            reset: None,
            unsent: 0,
            close: false,
        }
    }

    /// Starts the session of global arrival (or user) `arrival`, scheduled
    /// at `sched`.
    pub fn start(&mut self, r: &Rules<'_>, arrival: u64, sched: Instant, now: Instant) {
        let plan = r.plan;
        *self = Session::new(sched);
        self.arrival = arrival;
        self.tmpl = (arrival % plan.templates().max(1) as u64) as usize;
        self.measured = sched >= r.win;
        self.left = match plan.shape {
            crate::plan::Shape::Calls { total, .. } => total,
            crate::plan::Shape::Log { .. } => 1,
        };
        self.pace = plan.pace.map(|(d, users)| {
            Schedule::new(
                d,
                arrival.min(u64::from(u32::MAX)) as u32,
                users.clamp(1, u64::from(u32::MAX)) as u32,
                r.seed,
            )
        });
        self.phase = Phase::Burst;
        if r.streams {
            return;
        }
        if self.pace.is_some() {
            self.paced_next(r, now);
        } else {
            self.next_burst(r, now);
        }
    }

    /// The session is running (started, not yet reported done).
    pub fn active(&self) -> bool {
        self.phase != Phase::Free
    }

    /// Whether what the session does next belongs to the measurement window:
    /// for sessions (connections, httperf sessions) the scheduled start
    /// decides for all their calls; a closed-loop user's calls are each
    /// scheduled on their own.
    pub fn in_window(&self, r: &Rules<'_>) -> bool {
        if r.plan.kind.is_users() {
            self.intended >= r.win
        } else {
            self.measured
        }
    }

    /// Until when the session thinks (or waits for a paced send), if it does.
    pub fn thinking(&self) -> Option<Instant> {
        match self.phase {
            Phase::Think(t) => Some(t),
            _ => self.wait,
        }
    }

    /// The connection is open and ready for calls (after TLS).
    pub fn connected(&mut self) {
        if self.conn == Conn::Opening {
            self.conn = Conn::Open;
        }
    }

    /// What to do next (see [`Action`]).
    pub fn poll(&mut self, r: &Rules<'_>, now: Instant) -> Action {
        if let Some((start, measured)) = self.group_done.take() {
            return Action::GroupDone { start, measured };
        }
        if let Some(measured) = self.reset.take() {
            return Action::Reset { measured };
        }
        if self.unsent > 0 {
            let calls = std::mem::take(&mut self.unsent);
            return Action::Unsent {
                calls,
                measured: self.measured,
            };
        }
        if self.close {
            self.close = false;
            return Action::Close;
        }
        match self.phase {
            Phase::Free => Action::Idle,
            Phase::Ending => {
                self.phase = Phase::Free;
                Action::Done(self.outcome(r))
            }
            Phase::Think(t) => Action::Wait(t),
            Phase::Yield => Action::Yield,
            Phase::Burst if r.streams => self.poll_streams(r, now),
            Phase::Burst => self.poll_burst(r, now),
        }
    }

    fn outcome(&self, r: &Rules<'_>) -> Outcome {
        let plan = r.plan;
        Outcome {
            failed: self.failed,
            replies: self.replies,
            start: self.start,
            last_reply: self.last_reply,
            measured: self.measured,
            complete: !self.failed
                && !plan.kind.is_users()
                && plan.calls_per_session.map_or(true, |n| self.replies >= n),
        }
    }

    /// Bursts: open a connection when there is none, then send what the
    /// burst allows (the first call of a session alone, at most `depth`
    /// outstanding, no more than a user's connection carries).
    fn poll_burst(&mut self, r: &Rules<'_>, now: Instant) -> Action {
        let plan = r.plan;
        match self.conn {
            Conn::None if self.sent < self.burst_len => {
                self.conn = Conn::Opening;
                return Action::Open {
                    measured: self.in_window(r),
                };
            }
            Conn::Open => {}
            _ => return Action::Idle,
        }
        let allowed = if plan.kind.first_alone() && self.done == 0 {
            1
        } else {
            self.burst_len
        };
        let outstanding = self.sent - self.done;
        if self.sent >= allowed || outstanding >= r.depth {
            return Action::Idle;
        }
        // Pipelining users with --num-calls: no more requests on this
        // connection than it will carry; the rest go on the next one.
        if plan.close_after_group
            && plan
                .user_group
                .is_some_and(|g| self.group.replies + u64::from(outstanding) >= g)
        {
            return Action::Idle;
        }
        let sel = plan.call(self.tmpl, self.burst, self.sent);
        let req = plan.req_for(sel, self.arrival, self.burst, self.sent);
        let intended = self.intended.min(now);
        let measured = self.in_window(r);
        self.open_group(r, intended, measured);
        self.sent += 1;
        Action::Send(Call {
            req,
            intended,
            measured,
        })
    }

    /// Streams: up to `depth` calls in flight, the next one not before the
    /// previous reply's think time (or its paced time).
    fn poll_streams(&mut self, r: &Rules<'_>, now: Instant) -> Action {
        let plan = r.plan;
        match self.conn {
            Conn::Opening | Conn::Closing => return Action::Idle,
            Conn::None => {
                if self.left == 0
                    || r.stopping()
                    || (self.burst > 0 && r.over_at(now) && self.outstanding == 0)
                {
                    self.finish();
                    return self.poll(r, now);
                }
                self.conn = Conn::Opening;
                self.on_conn = 0;
                self.conn_replies = 0;
                self.conn_lost = false;
                return Action::Open {
                    measured: self.in_window(r),
                };
            }
            Conn::Open => {}
        }
        if self.left == 0 && self.outstanding == 0 {
            self.finish();
            return self.poll(r, now);
        }
        if self.on_conn >= r.per_conn() {
            if self.outstanding == 0 {
                // The user's connection carried its calls: a new one.
                self.conn = Conn::None;
                return Action::Close;
            }
            return Action::Idle;
        }
        if r.stopping() && self.outstanding == 0 {
            self.finish();
            return self.poll(r, now);
        }
        if self.outstanding >= r.depth || self.left <= u64::from(self.outstanding) || r.stopping() {
            return Action::Idle;
        }
        let intended = self.next_intended(r);
        if self.burst > 0 && (r.over_at(intended) || r.over_at(now)) {
            // The run is over: no more calls; end when the last is answered.
            self.left = u64::from(self.outstanding);
            if self.outstanding == 0 {
                self.finish();
                return self.poll(r, now);
            }
            return Action::Idle;
        }
        if intended > now {
            self.wait = Some(intended);
            return Action::Wait(intended);
        }
        self.wait = None;
        if let Some(p) = self.pace.as_mut() {
            p.advance();
        }
        self.intended = intended;
        let measured = self.in_window(r);
        self.open_group(r, intended, measured);
        let req = plan.req_for(
            plan.call(self.tmpl, self.burst, 0),
            self.arrival,
            self.burst,
            0,
        );
        self.burst += 1;
        self.on_conn += 1;
        self.outstanding += 1;
        Action::Send(Call {
            req,
            intended,
            measured,
        })
    }

    /// Streams: when the next call is due.
    fn next_intended(&self, r: &Rules<'_>) -> Instant {
        match &self.pace {
            Some(p) => r.t0 + dur(p.peek()),
            None => self.intended,
        }
    }

    fn open_group(&mut self, r: &Rules<'_>, intended: Instant, measured: bool) {
        if r.plan.user_group.is_some() && !self.group.open {
            self.group = Group {
                open: true,
                start: intended,
                replies: 0,
                measured,
            };
        }
    }

    /// Ends the session: close its connection, then report it done.
    fn finish(&mut self) {
        if self.conn != Conn::None {
            self.close = true;
            self.conn = Conn::None;
        }
        self.wait = None;
        self.phase = Phase::Ending;
    }

    /// Paced users: wait for the user's next scheduled time, or send at
    /// once when that time has passed (the server held the user up).
    fn paced_next(&mut self, r: &Rules<'_>, now: Instant) {
        let Some(p) = self.pace.as_mut() else {
            self.next_burst(r, now);
            return;
        };
        let at = r.t0 + dur(p.peek());
        p.advance();
        self.intended = at;
        if r.over_at(at) {
            // The user's next turn falls after the end of the run.
            self.finish();
        } else if at > now {
            self.phase = Phase::Think(at);
        } else {
            self.next_burst(r, now);
        }
    }

    /// Starts burst `self.burst`, or ends the session when there is none.
    fn next_burst(&mut self, r: &Rules<'_>, now: Instant) {
        let over = r.over_at(now) && self.burst > 0;
        match r.plan.burst_len(self.tmpl, self.burst) {
            Some(len) if !over && !r.stopping() => {
                self.burst_len = len;
                self.sent = 0;
                self.done = 0;
                self.phase = Phase::Burst;
            }
            _ => self.finish(),
        }
    }

    /// A think time or paced wait ended: returns the instant it was due (to
    /// record how late the driver fired it) when it was due by `now`.
    pub fn timer(&mut self, r: &Rules<'_>, now: Instant) -> Option<Due> {
        if let Phase::Think(t) = self.phase {
            if t > now {
                return None;
            }
            let due = Due {
                at: t,
                measured: self.in_window(r),
            };
            if r.streams {
                self.phase = Phase::Burst;
            } else {
                self.next_burst(r, now);
            }
            return Some(due);
        }
        let t = self.wait.filter(|t| *t <= now)?;
        self.wait = None;
        let measured = if r.plan.kind.is_users() {
            t >= r.win
        } else {
            self.measured
        };
        Some(Due { at: t, measured })
    }

    /// Continue after [`Action::Yield`].
    pub fn resume(&mut self, r: &Rules<'_>, now: Instant) {
        if self.phase != Phase::Yield {
            return;
        }
        if r.streams {
            self.phase = Phase::Burst;
        } else if self.pace.is_some() && r.plan.burst_len(self.tmpl, self.burst).is_some() {
            self.paced_next(r, now);
        } else {
            self.next_burst(r, now);
        }
    }

    /// A reply arrived with `status`; `keep_alive`: the connection carries
    /// on after it (HTTP/1.1 `Connection: close` says no).
    pub fn reply(&mut self, r: &Rules<'_>, now: Instant, status: u16, keep_alive: bool) {
        let plan = r.plan;
        self.replies += 1;
        self.conn_replies += 1;
        self.last_reply = now;
        // Closed-loop users: a session is `user_group` calls; with
        // --num-calls the user then closes its connection and opens a new one.
        let mut close_after = false;
        if let Some(g) = plan.user_group {
            self.group.replies += 1;
            if self.group.replies >= g {
                if self.group.open {
                    self.group_done = Some((self.group.start, self.group.measured));
                }
                self.group.open = false;
                self.group.replies = 0;
                close_after = plan.close_after_group;
            }
        }
        let failed_status = plan.kind.is_session() && r.failure_status == Some(status);
        let retry = failed_status && r.retry_on_failure;
        if r.streams {
            self.outstanding = self.outstanding.saturating_sub(1);
            if !retry {
                self.left = self.left.saturating_sub(1);
            }
            let think = plan.think_after(self.tmpl, self.burst);
            self.intended = if think > 0.0 { now + dur(think) } else { now };
        } else {
            self.done += 1;
            if retry {
                // Send the same call again.
                self.done -= 1;
                self.sent -= 1;
            }
        }
        if failed_status && !retry {
            self.failed = true;
            self.finish();
            return;
        }
        if r.streams {
            self.stream_ended(r);
            return;
        }
        if !keep_alive && plan.end_on_close {
            // httperf: the server closed the connection, so the session ends
            // here; the calls it did not carry are not made (see `--reconnect`).
            let total = plan.calls_per_session.unwrap_or(0);
            let unsent = total.saturating_sub(self.replies);
            if unsent > 0 {
                self.unsent = unsent;
                self.finish();
                return;
            }
        }
        if !keep_alive || close_after {
            // The server closes after this reply (or the user's session is
            // over); unsent or unanswered calls go on a new connection.
            self.sent = self.done;
            self.close = true;
            self.conn = Conn::None;
        }
        if self.done >= self.burst_len {
            self.burst_answered(r, now);
        } else {
            self.intended = now;
        }
    }

    /// The current burst is answered: think, pace, or go on.
    fn burst_answered(&mut self, r: &Rules<'_>, now: Instant) {
        let plan = r.plan;
        let think = plan.think_after(self.tmpl, self.burst);
        self.burst += 1;
        let has_more = plan.burst_len(self.tmpl, self.burst).is_some() && !r.over_at(now);
        if has_more && self.pace.is_some() {
            self.paced_next(r, now);
        } else if has_more && think > 0.0 {
            let until = now + dur(think);
            if r.over_at(until) {
                self.finish();
            } else {
                self.phase = Phase::Think(until);
                self.intended = until;
            }
        } else {
            self.intended = now;
            self.next_burst(r, now);
        }
    }

    /// Streams: a stream failed (reset by the server, timed out); the call
    /// is made (and failed). `conn_lost`: its connection is gone too.
    pub fn call_failed(&mut self, r: &Rules<'_>, now: Instant, conn_lost: bool) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.left = self.left.saturating_sub(1);
        self.group.open = false;
        self.group.replies = 0;
        self.intended = now;
        if conn_lost && self.conn != Conn::None {
            self.conn = Conn::Closing;
            self.conn_lost = true;
        }
        self.stream_ended(r);
    }

    /// Streams: the server did not process a call (a graceful GOAWAY, a
    /// refused stream): the connection is ending; the call is made again
    /// on the next one, if the session goes on.
    pub fn refused(&mut self, r: &Rules<'_>, now: Instant) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.intended = now;
        if self.conn != Conn::None {
            self.conn = Conn::Closing;
        }
        self.stream_ended(r);
    }

    /// Streams: after a stream ended, a closing connection closes when its
    /// last stream is done, and the session decides how to go on.
    fn stream_ended(&mut self, r: &Rules<'_>) {
        if self.conn != Conn::Closing || self.outstanding > 0 || self.phase != Phase::Burst {
            return;
        }
        let plan = r.plan;
        self.close = true;
        self.conn = Conn::None;
        if self.conn_lost {
            // A lost connection fails a session; a user goes on with its
            // next call on a new connection.
            if !plan.kind.is_users() {
                self.failed = true;
                self.finish();
            }
        } else if self.conn_replies == 0 && self.left > 0 {
            // Refused without serving anything: a failure, not a reason to
            // reconnect at once (no busy loop against such a server).
            self.reset = Some(self.in_window(r));
            if plan.kind.is_users() {
                self.left -= 1;
                self.phase = Phase::Yield;
            } else {
                self.failed = true;
                self.finish();
            }
        } else if self.left > 0 && plan.end_on_close {
            // httperf: the server ended the connection; its calls are not made.
            self.unsent = self.left;
            self.finish();
        }
    }

    /// The server closed an idle connection (nothing outstanding): the next
    /// call opens a new one.
    pub fn server_closed(&mut self) {
        self.conn = Conn::None;
    }

    /// Bursts: the server closed the connection without answering the calls
    /// outstanding on it, which it did not process (its idle close crossed
    /// them): they go again on a new connection, as the calls behind a
    /// `Connection: close` reply do. (The driver decides when that is safe.)
    pub fn closed_unanswered(&mut self) {
        self.sent = self.done;
        self.conn = Conn::None;
    }

    /// The session is over (its end not yet reported by [`Session::poll`]).
    pub fn ending(&self) -> bool {
        self.phase == Phase::Ending
    }

    /// The connection failed (it could not be opened, or broke with calls
    /// outstanding); the driver has counted the error and closed it. A
    /// session fails; a closed-loop user moves on to its next call on a new
    /// connection.
    pub fn conn_failed(&mut self, r: &Rules<'_>, now: Instant) {
        let plan = r.plan;
        self.conn = Conn::None;
        self.group.open = false;
        self.group.replies = 0;
        if !plan.kind.is_users() {
            self.failed = true;
            self.finish();
            return;
        }
        if r.streams {
            self.left = self.left.saturating_sub(1 + u64::from(self.outstanding));
            self.outstanding = 0;
            self.burst += 1;
            self.intended = now;
            let think = plan.think_after(self.tmpl, self.burst);
            self.phase = if think > 0.0 {
                Phase::Think(now + dur(think))
            } else {
                Phase::Yield
            };
            return;
        }
        self.burst += 1;
        self.done = 0;
        self.sent = 0;
        self.intended = now;
        let think = plan.think_after(self.tmpl, self.burst);
        self.phase = if think > 0.0 && self.pace.is_none() {
            Phase::Think(now + dur(think))
        } else {
            Phase::Yield
        };
    }

    /// The run gives up on the session (Ctrl-C, the drain after
    /// `--duration`); `waiting`: calls or a connection were pending (it failed).
    pub fn abandon(&mut self, waiting: bool) {
        if !self.active() {
            return;
        }
        self.failed = waiting;
        self.conn = Conn::None;
        self.close = false;
        self.group_done = None;
        self.reset = None;
        self.unsent = 0;
        self.phase = Phase::Ending;
    }
}

#[cfg(test)]
mod tests;
