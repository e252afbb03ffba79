//! Which sessions a worker starts, and when: the open-loop arrivals of its
//! lane (with the cap on connections in setup, the schedule lag and the
//! skip of arrivals that waited past `--timeout`), the closed-loop users or
//! sequential connections, and the drain after `--duration`.

use std::time::{Duration, Instant};

use crate::clock::{dur, us, DRAIN};
use crate::plan::{share_lane, Schedule};
use crate::spec::{Arrival, Dist};
use crate::stats::ErrClass;
use crate::worker::{Tally, Window, WorkerCtx};

/// A session to start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// Global index of the arrival (or user) in the whole run's schedule.
    pub arrival: u64,
    /// Its scheduled instant.
    pub sched: Instant,
}

/// One worker's share of the run's sessions.
pub(crate) struct Arrivals {
    t0: Instant,
    /// Open loop: this lane's schedule, None once it is over (or closed loop).
    schedule: Option<Schedule>,
    /// Sessions still to start, None: unbounded (`--duration`).
    left: Option<u64>,
    /// Closed loop: sessions at a time.
    concurrency: u64,
    /// (lane, lanes): this worker runs the arrivals k ≡ lane (mod lanes) of
    /// the whole run's schedule (`plan::lane`: shards, then threads).
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
    pub fn new(ctx: &WorkerCtx<'_>) -> Arrivals {
        let plan = ctx.plan;
        let lane = plan.lane(ctx.thread, ctx.threads);
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
        let left = if plan.is_users {
            Some(concurrency)
        } else {
            plan.sessions_total.map(|n| share_lane(n, lane))
        };
        Arrivals {
            t0: ctx.t0,
            schedule,
            left,
            concurrency,
            lane,
            started: 0,
            setup_cap: ctx.setup_cap,
            backlogged: false,
            drain_until: None,
            timeout: ctx.timeout(),
            lag_threshold_us: ctx.lag_threshold_us(),
        }
    }

    /// Sessions this worker plans to run (0: unbounded).
    pub fn planned(&self) -> u64 {
        self.left.unwrap_or(0)
    }

    /// Closed loop or sequential: sessions to start at once.
    pub fn concurrency(&self) -> u64 {
        if self.schedule.is_some() {
            0
        } else {
            self.concurrency
        }
    }

    /// Another session may start at `now`.
    pub fn more(&self, now: Instant, w: &Window) -> bool {
        self.left != Some(0) && w.end_at.map_or(true, |e| now < e)
    }

    /// The open-loop schedule is still running.
    pub fn scheduling(&self) -> bool {
        self.schedule.is_some()
    }

    /// Takes the next session: its global arrival index.
    pub fn take(&mut self) -> u64 {
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

    /// The next open-loop arrival due by `now`, if any (`in_setup`:
    /// connections in setup now). Records its lateness; an arrival that
    /// waited longer than `--timeout` for the setup cap is counted as a
    /// failed session with a client timeout, without a connection.
    pub fn due(
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

    /// When the next arrival is due, if the driver should wake for it (at
    /// the setup cap a connection leaving setup wakes the driver instead).
    pub fn next_due(&self, in_setup: u64) -> Option<Instant> {
        let s = self.schedule.as_ref()?;
        (in_setup < self.setup_cap).then(|| self.t0 + dur(s.peek()))
    }

    /// After `--duration`: the schedule stops and in-flight calls get
    /// `--timeout` (plus think timeout), else [`DRAIN`], to finish. True
    /// once that grace is over.
    pub fn drained(&mut self, now: Instant, w: &Window, reply_timeout: Option<Duration>) -> bool {
        if let Some(e) = w.end_at {
            if now >= e && self.drain_until.is_none() {
                self.drain_until = Some(e + reply_timeout.unwrap_or(DRAIN));
                self.schedule = None;
            }
        }
        self.drain_until.is_some_and(|d| now >= d)
    }

    /// When the drain gives up, if it runs.
    pub fn drain_until(&self) -> Option<Instant> {
        self.drain_until
    }

    /// No more sessions start.
    pub fn stop(&mut self) {
        self.schedule = None;
        self.left = Some(0);
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::*;
    use crate::plan::Plan;
    use crate::spec::LoadSpec;
    use crate::stats::Collector;

    fn spec(args: &str) -> LoadSpec {
        crate::cli::parse_args(format!("--server 127.0.0.1 --port 80 {args}").split_whitespace())
            .expect("valid test arguments")
    }

    /// Runs `f` with a worker context for `spec` (one thread, setup cap `cap`).
    fn with_ctx(spec: &LoadSpec, cap: u64, f: impl FnOnce(&WorkerCtx<'_>)) {
        let plan = Plan::build(spec);
        let stop = AtomicBool::new(false);
        let collector = Collector::new(1, 1.0);
        let addr: SocketAddr = "127.0.0.1:80".parse().expect("address");
        let ctx = WorkerCtx {
            thread: 0,
            threads: 1,
            t0: Instant::now(),
            spec,
            plan: &plan,
            addr,
            stop: &stop,
            collector: &collector,
            tls: None,
            local_addrs: &[],
            setup_cap: cap,
            uring: false,
        };
        f(&ctx);
    }

    #[test]
    fn open_loop_arrivals_start_on_schedule_and_record_their_lag() {
        let s = spec("--rate 100 --num-conns 3");
        with_ctx(&s, 10, |ctx| {
            let w = Window::new(ctx);
            let mut a = Arrivals::new(ctx);
            let mut t = Tally::new(&s, ctx.t0);
            assert_eq!(a.planned(), 3);
            assert_eq!(a.concurrency(), 0);
            let at = |ms| ctx.t0 + Duration::from_millis(ms);
            // At 15 ms: arrivals 0 (0 ms) and 1 (10 ms) are due, 2 (20 ms) is not.
            let first = a.due(at(15), 0, &w, &mut t).expect("due");
            assert_eq!((first.arrival, first.sched), (0, at(0)));
            assert_eq!(a.due(at(15), 0, &w, &mut t).map(|s| s.arrival), Some(1));
            assert_eq!(a.due(at(15), 0, &w, &mut t), None);
            assert_eq!(a.next_due(0), Some(at(20)));
            assert_eq!(t.st.lag.len(), 2);
            assert_eq!(t.st.late_starts, 2, "15 ms and 5 ms late, over 2 ms");
            assert_eq!(a.due(at(20), 0, &w, &mut t).map(|s| s.arrival), Some(2));
            // The count is done: the schedule ends.
            assert_eq!(a.due(at(100), 0, &w, &mut t), None);
            assert!(!a.scheduling());
        });
    }

    #[test]
    fn the_setup_cap_holds_arrivals_back_and_skips_what_waited_too_long() {
        let s = spec("--rate 100 --num-conns 4 --timeout 0.05");
        with_ctx(&s, 1, |ctx| {
            let w = Window::new(ctx);
            let mut a = Arrivals::new(ctx);
            let mut t = Tally::new(&s, ctx.t0);
            let at = |ms| ctx.t0 + Duration::from_millis(ms);
            assert!(a.due(at(0), 0, &w, &mut t).is_some());
            // One connection in setup: the cap holds the next arrivals back.
            assert_eq!(a.due(at(30), 1, &w, &mut t), None);
            assert_eq!(a.due(at(31), 1, &w, &mut t), None);
            assert_eq!(t.st.setup_capped, 1, "counted once per backlog");
            assert_eq!(
                a.next_due(1),
                None,
                "a connection leaving setup wakes the driver"
            );
            // Freed at 65 ms: arrival 1 (10 ms) waited 55 ms > --timeout: skipped as a
            // client timeout; arrival 2 (20 ms) waited 45 ms: it starts.
            let next = a.due(at(65), 0, &w, &mut t).expect("due");
            assert_eq!(next.arrival, 2);
            assert_eq!(t.st.not_attempted, 1);
            assert_eq!(t.st.sessions.failed, 1);
            assert_eq!(t.part.errors, 1);
            assert_eq!(t.st.setup_wait.len(), 2);
            assert_eq!(
                t.st.lag.len(),
                1,
                "waits for the server are not generator lag"
            );
        });
    }

    #[test]
    fn closed_loop_users_and_the_drain_after_a_duration() {
        let s = spec("--users 3 --duration 1 --timeout 2");
        with_ctx(&s, 1, |ctx| {
            let w = Window::new(ctx);
            let mut a = Arrivals::new(ctx);
            assert_eq!(a.concurrency(), 3);
            assert_eq!(a.planned(), 3);
            assert!(a.more(ctx.t0, &w));
            assert_eq!((a.take(), a.take(), a.take()), (0, 1, 2));
            assert!(!a.more(ctx.t0, &w));
            let end = ctx.t0 + Duration::from_secs(1);
            assert!(!a.drained(end, &w, ctx.reply_timeout()));
            assert_eq!(a.drain_until(), Some(end + Duration::from_secs(2)));
            assert!(a.drained(end + Duration::from_secs(2), &w, ctx.reply_timeout()));
        });
    }
}
