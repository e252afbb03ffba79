//! The arrival loop of every driver, written once: which sessions a worker
//! starts, at which intended instant, and when its loop is over. The
//! engine (HTTP/1.1, HTTP/2) and the stream driver (HTTP/3) each turn of
//! their loop ask [`Arrivals::due`] for every session due now, tell
//! [`Arrivals::ended`] when a session ends, ask [`Arrivals::after_turn`]
//! whether to go on, and sleep until [`Arrivals::wake`]; they start
//! sessions and move bytes, nothing else. The rules here:
//!
//! - open loop: this worker's lane of the one global schedule
//!   ([`schedule`]), each arrival at its scheduled instant (the intended
//!   instant corrected latency counts from), every arrival a stall left
//!   behind started at once on the next turn (none lost, none twice), its
//!   lateness recorded as schedule lag; the cap on connections in setup
//!   (`--max-connecting`), the wait it causes recorded apart from the
//!   generator's lag, and the skip of an arrival that waited past
//!   `--timeout` (a failed session, a client timeout, no connection);
//! - closed loop: the users, or the connections at a time, all started on
//!   the first turn at t0; sequential connections (httperf without a rate):
//!   each that ends is followed by the next, from the next turn;
//! - limits: `--num-conns`/`--num-sessions` (this lane's share), the end
//!   of a `--duration` run (no session starts at or after it), then the
//!   drain: in-flight calls get `--timeout` (plus think timeout), else
//!   [`DRAIN`], to finish;
//! - `max_connect_burst`: the most sessions one turn started.
//!
//! No clock and no I/O: the driver hands in "now" and the connections in
//! setup; nothing is allocated per arrival.

pub(crate) mod schedule;

use std::time::{Duration, Instant};

use crate::clock::{dur, us, DRAIN};
use crate::spec::{Arrival, Dist};
use crate::stats::ErrClass;
use crate::worker::{Tally, Window, WorkerCtx};
use schedule::{lane, share_lane, Schedule};

/// A session to start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// Global index of the arrival (or user) in the whole run's schedule.
    pub arrival: u64,
    /// Its intended instant: the scheduled one (open loop), t0 (closed
    /// loop), or the turn that started it (a sequential connection).
    pub sched: Instant,
}

/// What a driver's loop does after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Go on: sleep until [`Arrivals::wake`] (or an event), then turn again.
    Wait,
    /// The drain after `--duration` is over: give up on what still runs, end.
    Drained,
    /// Nothing runs and nothing more will start: this worker's share is done.
    Done,
}

/// One worker's share of the run's sessions.
pub(crate) struct Arrivals {
    t0: Instant,
    /// Open loop: this lane's schedule, None once it is over (or closed loop).
    schedule: Option<Schedule>,
    /// Sessions still to start, None: unbounded (`--duration`).
    left: Option<u64>,
    /// Closed loop or sequential: sessions to start on the first turn.
    initial: u64,
    /// Sequential connections (httperf without a rate): a session that ends
    /// is followed by the next.
    sequential: bool,
    /// Sequential: sessions that ended, whose successors start next turn.
    restarts: u64,
    /// Sessions the current turn started (scheduled or initial).
    burst: u64,
    /// (lane, lanes): this worker runs the arrivals k ≡ lane (mod lanes) of
    /// the whole run's schedule ([`schedule::lane`]: shards, then threads).
    lane: (u64, u64),
    /// Sessions started here (warm-up included).
    started: u64,
    /// Connections in setup now may not exceed this (`WorkerCtx::setup_cap`).
    setup_cap: u64,
    /// The schedule is behind because of the setup cap: arrivals started
    /// now waited for the server, not for the generator.
    backlogged: bool,
    drain_until: Option<Instant>,
    timeout: Option<Duration>,
    lag_threshold_us: u64,
}

impl Arrivals {
    /// This worker's share; its planned sessions go into `tally`.
    pub fn new(ctx: &WorkerCtx<'_>, tally: &mut Tally) -> Arrivals {
        let plan = ctx.plan;
        let lane = lane(plan.shard, ctx.thread, ctx.threads);
        let (schedule, concurrency) = match plan.arrival {
            Arrival::Open(d) => match &plan.stages {
                // The stages' time change of a unit-rate sequence of the same kind.
                Some(curve) => {
                    let unit = match d {
                        Dist::Exponential(_) => Dist::Exponential(1.0),
                        _ => Dist::Deterministic(1.0),
                    };
                    let s = Schedule::lane(unit, lane.0, lane.1, ctx.spec.seed);
                    (Some(s.with_curve(curve.clone())), 0)
                }
                None => (Some(Schedule::lane(d, lane.0, lane.1, ctx.spec.seed)), 0),
            },
            Arrival::Concurrent(k) => (None, share_lane(k, lane)),
        };
        let left = if plan.kind.is_users() {
            Some(concurrency)
        } else {
            plan.sessions_total.map(|n| share_lane(n, lane))
        };
        let a = Arrivals {
            t0: ctx.t0,
            schedule,
            left,
            initial: concurrency,
            sequential: matches!(plan.arrival, Arrival::Concurrent(_)) && !plan.kind.is_users(),
            restarts: 0,
            burst: 0,
            lane,
            started: 0,
            setup_cap: ctx.setup_cap,
            backlogged: false,
            drain_until: None,
            timeout: ctx.timeout(),
            lag_threshold_us: ctx.lag_threshold_us(),
        };
        tally.st.planned_sessions = a.planned();
        a
    }

    /// Sessions this worker plans to run (0: unbounded).
    pub fn planned(&self) -> u64 {
        self.left.unwrap_or(0)
    }

    /// Another session may start at `now`.
    fn more(&self, now: Instant, w: &Window) -> bool {
        self.left != Some(0) && w.end_at.map_or(true, |e| now < e)
    }

    /// Takes the next session: its global arrival index.
    fn take(&mut self) -> u64 {
        if let Some(n) = self.left.as_mut() {
            *n = n.saturating_sub(1);
        }
        let a = self
            .lane
            .0
            .saturating_add(self.lane.1.saturating_mul(self.started));
        self.started += 1;
        a
    }

    /// The next session due by `now`, if any: the driver starts it and
    /// asks again, until None (`in_setup`: connections in setup now,
    /// counting sessions started and not yet connecting). The one place
    /// where due sessions are computed. On None the turn's burst is
    /// recorded (`max_burst`).
    pub fn due(
        &mut self,
        now: Instant,
        in_setup: u64,
        w: &Window,
        tally: &mut Tally,
    ) -> Option<Start> {
        if self.initial > 0 {
            if self.more(now, w) {
                self.initial -= 1;
                self.burst += 1;
                return Some(Start {
                    arrival: self.take(),
                    sched: self.t0,
                });
            }
            self.initial = 0;
        }
        if self.restarts > 0 {
            // Not a burst: one successor per session that ended.
            if self.more(now, w) {
                self.restarts -= 1;
                return Some(Start {
                    arrival: self.take(),
                    sched: now,
                });
            }
            self.restarts = 0;
        }
        match self.scheduled(now, in_setup, w, tally) {
            Some(s) => {
                self.burst += 1;
                Some(s)
            }
            None => {
                tally.st.max_burst = tally.st.max_burst.max(self.burst);
                self.burst = 0;
                None
            }
        }
    }

    /// The next open-loop arrival due by `now`, if any. Records its
    /// lateness; an arrival that waited longer than `--timeout` for the
    /// setup cap is counted as a failed session with a client timeout,
    /// without a connection.
    fn scheduled(
        &mut self,
        now: Instant,
        in_setup: u64,
        w: &Window,
        tally: &mut Tally,
    ) -> Option<Start> {
        loop {
            let sched = self.schedule.as_mut()?;
            let at = self.t0 + dur(sched.peek());
            if at > now {
                // Caught up with the schedule.
                self.backlogged = false;
                return None;
            }
            if self.left == Some(0) || w.end_at.is_some_and(|e| at >= e) {
                self.schedule = None;
                return None;
            }
            let measured = at >= w.win;
            if in_setup >= self.setup_cap {
                // The server has not taken the connections already on their
                // way: this arrival waits (its lateness is recorded when it starts).
                if !self.backlogged {
                    self.backlogged = true;
                    tally.of(measured).setup_capped += 1;
                }
                return None;
            }
            sched.advance();
            tally.stage_arrival(at);
            let late = now.saturating_duration_since(at);
            if !self.backlogged {
                tally.lag(measured, us(late), self.lag_threshold_us);
                return Some(Start {
                    arrival: self.take(),
                    sched: at,
                });
            }
            // Late because the server did not keep up: not the generator's
            // lag, but recorded as its own figure.
            crate::stats::rec(&mut tally.of(measured).setup_wait, us(late));
            if self.timeout.is_some_and(|t| late > t) {
                // It would only start to time out.
                self.take();
                let st = tally.of(measured);
                st.sessions.started += 1;
                st.sessions.failed += 1;
                st.not_attempted += 1;
                tally.error(measured, ErrClass::ClientTimo);
                tally.stage_skipped(at);
                continue;
            }
            return Some(Start {
                arrival: self.take(),
                sched: at,
            });
        }
    }

    /// A session ended at `now`: in a sequential run its successor starts
    /// on the next turn (if the run still has one to start).
    pub fn ended(&mut self, now: Instant, w: &Window) {
        if self.sequential && self.more(now, w) {
            self.restarts += 1;
        }
    }

    /// After a turn at `now` (`running`: sessions still run): whether the
    /// loop goes on. At the end of a `--duration` run the schedule stops
    /// and in-flight calls get `reply_timeout` (`--timeout` plus think
    /// timeout), else [`DRAIN`], to finish.
    pub fn after_turn(
        &mut self,
        now: Instant,
        w: &Window,
        reply_timeout: Option<Duration>,
        running: bool,
    ) -> Turn {
        if let Some(e) = w.end_at {
            if now >= e && self.drain_until.is_none() {
                self.drain_until = Some(e + reply_timeout.unwrap_or(DRAIN));
                self.schedule = None;
            }
        }
        if self.drain_until.is_some_and(|d| now >= d) {
            return Turn::Drained;
        }
        if running || self.schedule.is_some() || self.restarts > 0 || self.initial > 0 {
            return Turn::Wait;
        }
        Turn::Done
    }

    /// When the loop should turn again at the latest (`now`: at once), for
    /// the arrivals, the window's ticks and the drain. At the setup cap the
    /// next arrival is not a reason: a connection leaving setup wakes the
    /// driver instead.
    pub fn wake(&self, now: Instant, in_setup: u64, w: &Window) -> Instant {
        if self.restarts > 0 || self.initial > 0 {
            return now;
        }
        let mut next = w.next_wake();
        if let Some(s) = &self.schedule {
            if in_setup < self.setup_cap {
                next = next.min(self.t0 + dur(s.peek()));
            }
        }
        if let Some(d) = self.drain_until {
            next = next.min(d);
        }
        next
    }

    /// No more sessions start (Ctrl-C, or the drain gave up).
    pub fn stop(&mut self) {
        self.schedule = None;
        self.left = Some(0);
        self.initial = 0;
        self.restarts = 0;
    }
}

#[cfg(test)]
mod tests;
