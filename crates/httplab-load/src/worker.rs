//! What every load worker thread has, whichever driver runs it: its
//! context, its statistics split into window and warm-up ([`Tally`]), the
//! measurement window with its interval ticks and CPU reading ([`Window`]),
//! and the rotation over source addresses.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::clock::{dur, us};
use crate::plan::Plan;
use crate::session::{Outcome, Rules};
use crate::spec::LoadSpec;
use crate::stages::{StageClock, StageStats};
use crate::stats::{interval_hist, rec, Collector, ErrClass, IntervalPart, WorkerStats};
use crate::sys;

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
    /// This thread's cap on connections in setup (see `Arrivals`).
    pub setup_cap: u64,
    /// Socket I/O through io_uring (`--io`; cleartext HTTP/1.1 only): the
    /// caller checked that this kernel has it.
    pub uring: bool,
}

impl WorkerCtx<'_> {
    /// `--timeout`: connect, handshake and idle limit.
    pub fn timeout(&self) -> Option<Duration> {
        self.spec.timeout.map(dur)
    }

    /// `--timeout` plus `--think-timeout`: how long a reply may take.
    pub fn reply_timeout(&self) -> Option<Duration> {
        self.spec.timeout.map(|t| dur(t + self.spec.think_timeout))
    }

    /// `--max-response-time`.
    pub fn max_resp(&self) -> Option<Duration> {
        self.spec.max_response_time.map(dur)
    }

    /// `--lag-threshold` in microseconds.
    pub fn lag_threshold_us(&self) -> u64 {
        (self.spec.lag_threshold * 1e6) as u64
    }
}

/// One worker's statistics: what the measurement window saw, what was
/// scheduled in the warm-up (counted and discarded), and the current
/// interval's part of the time series.
pub(crate) struct Tally {
    pub st: WorkerStats,
    pub warm: WorkerStats,
    pub part: IntervalPart,
    /// Uncorrected response times of the current interval.
    pub ihist: Histogram<u64>,
    /// `--stages`: which stage a scheduled instant falls in.
    stage_clock: Option<StageClock>,
}

impl Tally {
    /// A worker's statistics for a schedule whose origin is `t0`.
    pub fn new(spec: &LoadSpec, t0: Instant) -> Tally {
        let mut st = WorkerStats::new();
        st.keep_raw(spec.raw_latencies.is_some());
        let stage_clock = (!spec.stages.is_empty()).then(|| {
            st.stages = spec.stages.iter().map(|_| StageStats::new()).collect();
            StageClock::new(&spec.stages, t0)
        });
        Tally {
            st,
            warm: WorkerStats::new(),
            part: IntervalPart::default(),
            ihist: interval_hist(),
            stage_clock,
        }
    }

    /// The statistics of the stage a call or arrival scheduled at `at` belongs to.
    #[inline]
    fn stage(&mut self, at: Instant) -> Option<&mut StageStats> {
        let i = self.stage_clock.as_ref()?.stage_of(at)?;
        self.st.stages.get_mut(i)
    }

    /// An open-loop arrival scheduled at `at` started.
    #[inline]
    pub fn stage_arrival(&mut self, at: Instant) {
        if let Some(s) = self.stage(at) {
            s.arrivals += 1;
        }
    }

    /// An arrival scheduled at `at` was skipped (it waited past `--timeout`).
    pub fn stage_skipped(&mut self, at: Instant) {
        if let Some(s) = self.stage(at) {
            s.skipped += 1;
        }
    }

    /// A call scheduled at `intended` was sent.
    #[inline]
    pub fn stage_sent(&mut self, intended: Instant) {
        if let Some(s) = self.stage(intended) {
            s.sent += 1;
        }
    }

    /// Call `p`, counted as sent, was not processed by the server and is
    /// not answered on its connection: no longer a request sent (made
    /// again, it is counted again).
    pub fn take_back(&mut self, p: &crate::h1::Pending) {
        let st = self.of(p.measured);
        st.requests = st.requests.saturating_sub(1);
        if p.measured {
            self.part.requests = self.part.requests.saturating_sub(1);
        }
        if let Some(s) = self.stage(p.intended) {
            s.sent = s.sent.saturating_sub(1);
        }
    }

    /// A reply to a call scheduled at `intended` (response times in µs).
    #[inline]
    pub fn stage_reply(&mut self, intended: Instant, corrected_us: u64, uncorrected_us: u64) {
        if let Some(s) = self.stage(intended) {
            s.reply(corrected_us, uncorrected_us);
        }
    }

    /// The window's statistics when `measured`, else the warm-up's.
    pub fn of(&mut self, measured: bool) -> &mut WorkerStats {
        if measured {
            &mut self.st
        } else {
            &mut self.warm
        }
    }

    /// An error of `class`, in the interval too when measured.
    pub fn error(&mut self, measured: bool, class: ErrClass) {
        self.of(measured).error(class);
        if measured {
            self.part.errors += 1;
            self.part.errors_by[class as usize] += 1;
        }
    }

    /// A send `lag_us` later than planned (schedule lag, late starts).
    pub fn lag(&mut self, measured: bool, lag_us: u64, threshold_us: u64) {
        let st = self.of(measured);
        rec(&mut st.lag, lag_us);
        if lag_us > threshold_us {
            st.late_starts += 1;
        }
    }

    /// A connection attempt (made at `now`, `t0` the schedule's origin).
    pub fn connection(&mut self, measured: bool, now: Instant, t0: Instant) {
        let st = self.of(measured);
        st.connections += 1;
        st.sessions.connections += 1;
        if measured {
            self.part.connections += 1;
            if self.st.first_s.is_none() {
                self.st.first_s = Some(now.saturating_duration_since(t0).as_secs_f64());
            }
        }
    }

    /// A session ended at `now` (see [`Outcome`]).
    pub fn session_done(&mut self, o: &Outcome, now: Instant) {
        let st = self.of(o.measured);
        // Session time: all of a request-oriented connection's calls, or a
        // whole httperf session (users record theirs per group of calls).
        if o.complete {
            rec(
                &mut st.session,
                us(o.last_reply.saturating_duration_since(o.start)),
            );
        }
        let life = now.saturating_duration_since(o.start).as_secs_f64();
        let ss = &mut st.sessions;
        if o.failed {
            ss.failed += 1;
            ss.failtime_sum_s += life;
        } else {
            ss.completed += 1;
            ss.lifetime_sum_s += life;
        }
        let n = o.replies as usize;
        if ss.length_histogram.len() <= n {
            ss.length_histogram.resize(n + 1, 0);
        }
        ss.length_histogram[n] += 1;
        if o.measured && !o.failed {
            self.part.sessions_done += 1;
        }
    }

    /// Received bytes, attributed to the window or the warm-up.
    pub fn received(&mut self, measured: bool, n: u64) {
        self.of(measured).bytes_recv += n;
        if measured {
            self.part.bytes_in += n;
        }
    }
}

/// The measurement window of one worker: when it starts and ends, its
/// interval ticks, and the thread's CPU time over it.
pub(crate) struct Window {
    pub t0: Instant,
    /// Start of the window (t0 + warm-up).
    pub win: Instant,
    /// End of a `--duration` run.
    pub end_at: Option<Instant>,
    interval: Duration,
    k: u64,
    next_tick: Instant,
    /// Thread CPU at the window's start: (precise total, rusage user, rusage system).
    cpu0: Option<(f64, f64, f64)>,
}

impl Window {
    pub fn new(ctx: &WorkerCtx<'_>) -> Window {
        let spec = ctx.spec;
        let win = ctx.t0 + dur(spec.warmup);
        let interval = dur(spec.sample_interval);
        Window {
            t0: ctx.t0,
            win,
            end_at: spec.duration.map(|d| win + dur(d)),
            interval,
            k: 0,
            next_tick: win + interval,
            cpu0: None,
        }
    }

    /// Each turn of the driver's loop: reads the CPU clock at the window's
    /// start and reports the intervals that ended (`open`: connections open now).
    pub fn turn(&mut self, now: Instant, tally: &mut Tally, open: u64, c: &Collector) {
        if self.cpu0.is_none() && now >= self.win {
            self.cpu0 = Some(sys::thread_cpu());
        }
        while now >= self.next_tick {
            self.flush(self.interval.as_secs_f64(), tally, open, c);
        }
    }

    fn flush(&mut self, len_s: f64, tally: &mut Tally, open: u64, c: &Collector) {
        let mut part = std::mem::take(&mut tally.part);
        part.len_s = len_s;
        part.open = open;
        c.report(self.k, part, &tally.ihist);
        tally.ihist.reset();
        self.k += 1;
        self.next_tick = self.win + self.interval * ((self.k + 1) as u32);
    }

    /// The earliest instant the window needs the driver awake: the next
    /// tick, and the window's start (to read the CPU clock there).
    pub fn next_wake(&self) -> Instant {
        if self.cpu0.is_none() {
            self.next_tick.min(self.win)
        } else {
            self.next_tick
        }
    }

    /// The run ended at `end`: the last, partial interval (none when the
    /// run ended in the warm-up), the thread's CPU over the window, the
    /// end time. Returns the window's statistics.
    pub fn finish(
        mut self,
        end: Instant,
        mut tally: Tally,
        open: u64,
        c: &Collector,
    ) -> WorkerStats {
        let k_start = self.win + self.interval * (self.k as u32);
        let part_len = end.saturating_duration_since(k_start).as_secs_f64();
        if end > self.win && (part_len > 0.0 || tally.part.replies > 0) {
            self.flush(part_len.max(1e-9), &mut tally, open, c);
        }
        c.thread_finished();
        let st = &mut tally.st;
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
            st.cpu_user = user;
            st.cpu_sys = total - user;
        }
        // The loop ends right after the last event (or when a drain or Ctrl-C gave up).
        st.end_s = end.saturating_duration_since(self.t0).as_secs_f64();
        tally.st
    }
}

/// Round-robin over the source addresses, each thread from its own place.
pub(crate) struct LocalAddrs {
    next: usize,
}

impl LocalAddrs {
    pub fn new(thread: u32) -> LocalAddrs {
        LocalAddrs {
            next: thread as usize,
        }
    }

    /// The next source address to bind, None: the kernel chooses.
    pub fn next(&mut self, list: &[IpAddr]) -> Option<IpAddr> {
        if list.is_empty() {
            return None;
        }
        let a = list[self.next % list.len()];
        self.next = self.next.wrapping_add(1);
        Some(a)
    }
}

impl<'a> Rules<'a> {
    /// The session rules of one worker's driver: its run's options and
    /// window, with the driver's own depth (`--max-piped-calls` for HTTP/1.1,
    /// the concurrent streams for HTTP/2) and whether calls flow as streams.
    pub(crate) fn for_worker(
        ctx: &WorkerCtx<'a>,
        window: &Window,
        depth: u32,
        streams: bool,
    ) -> Self {
        Rules {
            plan: ctx.plan,
            t0: ctx.t0,
            win: window.win,
            end_at: window.end_at,
            failure_status: ctx.spec.failure_status,
            retry_on_failure: ctx.spec.retry_on_failure,
            depth,
            streams,
            seed: ctx.spec.seed,
            stop: ctx.stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_splits_window_and_warm_up() {
        let spec = LoadSpec::new("h", 80);
        let mut t = Tally::new(&spec, Instant::now());
        t.of(true).requests += 2;
        t.of(false).requests += 1;
        t.error(true, ErrClass::ConnReset);
        t.error(false, ErrClass::ConnReset);
        t.received(true, 10);
        t.received(false, 5);
        assert_eq!((t.st.requests, t.warm.requests), (2, 1));
        assert_eq!((t.st.errors_total(), t.warm.errors_total()), (1, 1));
        assert_eq!(
            t.part.errors, 1,
            "only the window's errors are in the series"
        );
        assert_eq!(
            (t.st.bytes_recv, t.part.bytes_in, t.warm.bytes_recv),
            (10, 10, 5)
        );
    }

    #[test]
    fn session_outcomes_count_as_completed_or_failed() {
        let spec = LoadSpec::new("h", 80);
        let mut t = Tally::new(&spec, Instant::now());
        let t0 = Instant::now();
        let ok = Outcome {
            failed: false,
            replies: 2,
            start: t0,
            last_reply: t0 + Duration::from_millis(3),
            measured: true,
            complete: true,
        };
        t.session_done(&ok, t0 + Duration::from_millis(4));
        t.session_done(
            &Outcome {
                failed: true,
                complete: false,
                ..ok
            },
            t0 + Duration::from_millis(4),
        );
        let ss = &t.st.sessions;
        assert_eq!((ss.completed, ss.failed), (1, 1));
        assert_eq!(ss.length_histogram, vec![0, 0, 2]);
        assert_eq!(t.st.session.len(), 1, "session time of the complete one");
        assert_eq!(t.part.sessions_done, 1);
    }

    #[test]
    fn local_addresses_rotate_from_the_thread_s_place() {
        let list: Vec<IpAddr> = ["127.0.0.1", "127.0.0.2"]
            .iter()
            .map(|a| a.parse().expect("address"))
            .collect();
        let mut l = LocalAddrs::new(1);
        assert_eq!(l.next(&list), Some(list[1]));
        assert_eq!(l.next(&list), Some(list[0]));
        assert_eq!(LocalAddrs::new(0).next(&[]), None);
    }
}
