//! When the run's arrivals are due: the one global schedule of a run (fixed
//! rate, uniform or Poisson gaps, or the `--stages` time change of a
//! unit-rate sequence), split into lanes (client shards, then threads:
//! [`lane`], [`share_lane`]), and the independent streams of paced users.
//! Pure functions of the spec and the seed; no clock, no I/O.

use crate::spec::Dist;

/// The lane of worker `thread` of `threads` on shard `(i, n)` (`--client I/N`):
/// shard i runs the arrivals k with `k mod n == i`; its m-th arrival
/// (`k = i + n m`) goes to its thread `m mod threads`. So the worker runs
/// exactly the arrivals `k ≡ i + n·thread (mod n·threads)`, and every shard
/// may use its own number of threads.
pub(crate) fn lane(shard: (u32, u32), thread: u32, threads: u32) -> (u64, u64) {
    let (i, n) = (u64::from(shard.0), u64::from(shard.1.max(1)));
    let (t, tn) = (u64::from(thread), u64::from(threads.max(1)));
    (i + n * t, n * tn)
}

/// Share of `total` items (k = 0, 1, ...) for a lane: the k with
/// `k mod lanes == lane`.
pub(crate) fn share_lane(total: u64, (lane, lanes): (u64, u64)) -> u64 {
    if total <= lane {
        0
    } else {
        (total - lane).div_ceil(lanes.max(1))
    }
}

/// splitmix64: small, fast, seedable; good enough for arrival times.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Arrival times (seconds from t0) of one lane of a schedule.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    dist: Dist,
    rng: Rng,
    next: f64,
    mode: Mode,
    /// `--stages`: the time change of a unit-rate sequence (`stages.rs`);
    /// `next` is then a cumulative count and `at` its instant.
    curve: Option<std::sync::Arc<crate::stages::Curve>>,
    at: f64,
}

#[derive(Debug, Clone)]
enum Mode {
    /// An independent stream (a paced user): gaps of `n` mean gaps.
    Stream { n: u32 },
    /// Every `lanes`-th arrival of the one global sequence, from arrival
    /// `k`: the sequence is generated in full and filtered, so that all
    /// lanes on all machines see bit-identical times.
    Lane {
        lanes: u64,
        k: u64,
        /// Time of global arrival `gen_k` (the generator's position).
        gen_t: f64,
        gen_k: u64,
    },
}

impl Schedule {
    /// Stream `i` of `n` independent streams that together have the mean
    /// gap of `dist` (each stream's gaps are n times longer; deterministic
    /// streams interleave exactly). Paced users use one stream each, so a
    /// user's schedule depends only on its index, the user count and the seed.
    pub fn new(dist: Dist, i: u32, n: u32, seed: u64) -> Schedule {
        let mut rng = Rng::new(seed.wrapping_add(u64::from(i).wrapping_mul(0xA24B_AED4_963E_E407)));
        let first = match dist {
            Dist::Deterministic(p) => p * f64::from(i),
            Dist::Uniform(a, b) => {
                (a + (b - a) * rng.next_f64()) * f64::from(i) / f64::from(n.max(1))
            }
            Dist::Exponential(m) => -(1.0 - rng.next_f64()).ln() * m * f64::from(n),
        };
        Schedule {
            dist,
            rng,
            next: first,
            mode: Mode::Stream { n },
            curve: None,
            at: first,
        }
    }

    /// Lane `lane` of `lanes` of the whole run's schedule (see [`lane`]):
    /// the global arrivals k with `k mod lanes == lane`, at the times the
    /// one-machine schedule gives them. The global sequence is: arrival 0 at
    /// 0 (deterministic, uniform) or after one gap (exponential), then one
    /// gap per arrival, all drawn from one generator seeded with `seed`.
    /// A lane draws every gap of the sequence and keeps its own arrivals
    /// (`lanes` draws per arrival; for deterministic schedules `k · p`).
    pub fn lane(dist: Dist, lane: u64, lanes: u64, seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let gen_t = match dist {
            Dist::Deterministic(_) => 0.0,
            Dist::Uniform(..) => {
                // Drawn and discarded: the sequence starts at 0 (kept so that
                // a one-lane schedule is unchanged from earlier versions).
                let _ = rng.next_f64();
                0.0
            }
            Dist::Exponential(m) => -(1.0 - rng.next_f64()).ln() * m,
        };
        let mut s = Schedule {
            dist,
            rng,
            next: 0.0,
            mode: Mode::Lane {
                lanes: lanes.max(1),
                k: lane,
                gen_t,
                gen_k: 0,
            },
            curve: None,
            at: 0.0,
        };
        s.next = s.lane_time(lane);
        s.at = s.next;
        s
    }

    /// The same sequence through the stages' time change: built on a
    /// unit-mean `dist` (gaps of 1 in cumulative count), each arrival's
    /// instant is the inverse of the stages' cumulative rate at its count.
    pub fn with_curve(mut self, curve: std::sync::Arc<crate::stages::Curve>) -> Schedule {
        self.at = curve.time_at(self.next);
        self.curve = Some(curve);
        self
    }

    /// Lane mode: moves the generator to global arrival `k` and returns its time.
    fn lane_time(&mut self, k: u64) -> f64 {
        let Mode::Lane {
            ref mut gen_t,
            ref mut gen_k,
            ..
        } = self.mode
        else {
            return self.next;
        };
        if let Dist::Deterministic(p) = self.dist {
            *gen_k = k;
            *gen_t = k as f64 * p;
            return *gen_t;
        }
        while *gen_k < k {
            let gap = match self.dist {
                Dist::Uniform(a, b) => a + (b - a) * self.rng.next_f64(),
                Dist::Exponential(m) => -(1.0 - self.rng.next_f64()).ln() * m,
                Dist::Deterministic(p) => p,
            };
            *gen_t += gap;
            *gen_k += 1;
        }
        *gen_t
    }

    /// The next arrival, seconds from t0.
    pub fn peek(&self) -> f64 {
        self.at
    }

    /// Moves to the following arrival.
    pub fn advance(&mut self) {
        match self.mode {
            Mode::Stream { n } => {
                let t = f64::from(n);
                let gap = match self.dist {
                    Dist::Deterministic(p) => p * t,
                    Dist::Uniform(a, b) => (a + (b - a) * self.rng.next_f64()) * t,
                    Dist::Exponential(m) => -(1.0 - self.rng.next_f64()).ln() * m * t,
                };
                self.next += gap;
            }
            Mode::Lane { lanes, k, .. } => {
                let k = k.saturating_add(lanes);
                if let Mode::Lane { k: ref mut kk, .. } = self.mode {
                    *kk = k;
                }
                self.next = self.lane_time(k);
            }
        }
        self.at = match &self.curve {
            Some(c) => c.time_at(self.next),
            None => self.next,
        };
    }
}

/// The arrivals of the one global schedule that fall in each stage, for the
/// first `limit` arrivals at most: a pure function of the stages, the
/// arrival kind (`exponential` or deterministic) and the seed, the same
/// sequence the run's lanes share.
pub fn arrivals_per_stage(
    stages: &[crate::stages::Stage],
    exponential: bool,
    seed: u64,
    limit: u64,
) -> Vec<u64> {
    let curve = std::sync::Arc::new(crate::stages::Curve::new(stages));
    let d = if exponential {
        Dist::Exponential(1.0)
    } else {
        Dist::Deterministic(1.0)
    };
    let mut s = Schedule::lane(d, 0, 1, seed).with_curve(curve.clone());
    let mut out = vec![0u64; stages.len()];
    for _ in 0..limit {
        let t = s.peek();
        if t >= curve.end() {
            break;
        }
        if let Some(i) = curve.stage_at(t) {
            out[i] += 1;
        }
        s.advance();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, ReqSel};
    use crate::spec::{Arrival, LoadSpec, Workload};

    #[test]
    fn shares_sum_to_total() {
        for total in [0u64, 1, 7, 100, 6001] {
            for n in 1..=5 {
                let s: u64 = (0..n).map(|i| share_lane(total, (i, n))).sum();
                assert_eq!(s, total);
            }
        }
    }

    #[test]
    fn deterministic_threads_interleave_exactly() {
        let p = 0.001;
        let mut all = Vec::new();
        for i in 0..3 {
            let mut s = Schedule::new(Dist::Deterministic(p), i, 3, 1);
            for _ in 0..100 {
                all.push(s.peek());
                s.advance();
            }
        }
        all.sort_by(f64::total_cmp);
        for (k, t) in all.iter().enumerate() {
            assert!((t - k as f64 * p).abs() < 1e-9, "{k}: {t}");
        }
    }

    #[test]
    fn exponential_mean_and_reproducible() {
        let mut a = Schedule::new(Dist::Exponential(0.01), 0, 1, 42);
        let mut b = Schedule::new(Dist::Exponential(0.01), 0, 1, 42);
        for _ in 0..20_000 {
            assert_eq!(a.peek(), b.peek());
            a.advance();
            b.advance();
        }
        let mean = a.peek() / 20_000.0;
        assert!((mean - 0.01).abs() < 0.0005, "mean {mean}");
        let mut u = Schedule::new(Dist::Uniform(1.0, 3.0), 0, 1, 7);
        let mut last = u.peek();
        for _ in 0..1000 {
            u.advance();
            let gap = u.peek() - last;
            assert!((1.0..3.0).contains(&gap));
            last = u.peek();
        }
    }

    /// Every call a lane demands: (arrival k, call j, request, time of arrival).
    type Demand = Vec<(u64, u64, u32, u64)>;

    /// The calls the lanes of one machine demand: each lane's arrivals
    /// (counted, or before `until` seconds), their times, and the request
    /// of each of their calls, as the engine computes them.
    fn demand(
        plan: &Plan,
        shard: (u32, u32),
        threads: u32,
        total: u64,
        until: Option<f64>,
        seed: u64,
    ) -> Demand {
        let mut out = Vec::new();
        let calls = plan.calls_per_session.unwrap_or(1);
        for t in 0..threads {
            let ln = lane(shard, t, threads);
            match plan.arrival {
                Arrival::Open(d) => {
                    let mut s = Schedule::lane(d, ln.0, ln.1, seed);
                    let count = share_lane(total, ln);
                    let mut m = 0;
                    loop {
                        let done = match until {
                            Some(u) => s.peek() >= u,
                            None => m >= count,
                        };
                        if done {
                            break;
                        }
                        let k = ln.0 + ln.1 * m;
                        for j in 0..calls {
                            let r = plan.req_for(ReqSel::Wset, k, j, 0);
                            out.push((k, j, r, s.peek().to_bits()));
                        }
                        s.advance();
                        m += 1;
                    }
                }
                Arrival::Concurrent(users) => {
                    for m in 0..share_lane(users, ln) {
                        let u = ln.0 + ln.1 * m;
                        for j in 0..total {
                            out.push((u, j, plan.req_for(ReqSel::List, u, j, 0), 0));
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    fn dist_of(kind: u8, mean: f64) -> Dist {
        match kind % 3 {
            0 => Dist::Deterministic(mean),
            1 => Dist::Uniform(mean * 0.5, mean * 1.5),
            _ => Dist::Exponential(mean),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

        /// The union of N shards' schedules (each with its own thread
        /// count) is exactly the one-machine schedule: the same arrivals,
        /// each once, at bit-identical times, with the same requests, for
        /// every arrival kind, counted or timed.
        #[test]
        fn shards_union_is_the_schedule(
            kind in 0u8..3,
            mean in 0.0001f64..0.05,
            total in 0u64..400,
            n in 1u32..7,
            threads in proptest::collection::vec(1u32..5, 6),
            seed in proptest::prelude::any::<u64>(),
            timed in proptest::prelude::any::<bool>(),
            calls in 1u64..4,
            wset_x in 0.0f64..=1.0,
        ) {
            let mut spec = LoadSpec::new("h", 80);
            spec.arrival = Arrival::Open(dist_of(kind, mean));
            spec.workload = Workload::Requests { num_conns: Some(total), num_calls: calls, burst: 1 };
            spec.wset = Some((13, wset_x));
            spec.seed = seed;
            let until = timed.then_some(mean * total as f64 / 2.0);
            let one = demand(&Plan::build(&spec), (0, 1), 1, total, until, seed);
            let mut union = Vec::new();
            for i in 0..n {
                spec.client = (i, n);
                union.extend(demand(&Plan::build(&spec), (i, n), threads[i as usize], total, until, seed));
            }
            union.sort_unstable();
            if !timed {
                proptest::prop_assert_eq!(one.len() as u64, total * calls);
            }
            proptest::prop_assert_eq!(union, one);
        }

        /// Closed-loop users: user u runs on shard u mod N with all its
        /// calls and their paths; the shards' users are the run's users.
        #[test]
        fn shards_split_users(users in 1u64..60, n in 1u32..7, t in 1u32..4, per in 1u64..5) {
            let mut spec = LoadSpec::new("h", 80);
            spec.arrival = Arrival::Concurrent(users);
            spec.workload = Workload::Users { users, requests_per_user: Some(per), think: 0.0, burst: 1, pace: None };
            spec.uris = vec!["/a".into(), "/b".into(), "/c".into()];
            let one = demand(&Plan::build(&spec), (0, 1), 1, per, None, 1);
            let mut union = Vec::new();
            for i in 0..n {
                spec.client = (i, n);
                let plan = Plan::build(&spec);
                let part = demand(&plan, (i, n), t, per, None, 1);
                proptest::prop_assert!(part.iter().all(|c| c.0 % u64::from(n) == u64::from(i)));
                union.extend(part);
            }
            union.sort_unstable();
            proptest::prop_assert_eq!(one.len() as u64, users * per);
            proptest::prop_assert_eq!(union, one);
        }
    }

    #[test]
    fn staged_lanes_take_every_nth_arrival_of_one_schedule() {
        let stages = crate::stages::parse_stages("1s:50,2s:50-400,1s:0,1s:30").expect("valid");
        let curve = std::sync::Arc::new(crate::stages::Curve::new(&stages));
        for d in [Dist::Deterministic(1.0), Dist::Exponential(1.0)] {
            let times = |lane: u64, lanes: u64| {
                let mut s = Schedule::lane(d, lane, lanes, 5).with_curve(curve.clone());
                let mut v = Vec::new();
                let mut k = lane;
                while s.peek() < curve.end() {
                    v.push((k, s.peek().to_bits()));
                    s.advance();
                    k += lanes;
                }
                v
            };
            let one = times(0, 1);
            assert!(one.len() > 400);
            for n in [2u64, 3, 7] {
                let mut union: Vec<(u64, u64)> = (0..n).flat_map(|i| times(i, n)).collect();
                union.sort_unstable();
                assert_eq!(union, one, "{d:?}, {n} lanes");
            }
        }
    }

    #[test]
    fn one_lane_schedule_is_unchanged() {
        // A one-machine, one-thread schedule is what earlier versions drew.
        for d in [
            Dist::Uniform(0.001, 0.003),
            Dist::Exponential(0.002),
            Dist::Deterministic(0.001),
        ] {
            let mut old = Schedule::new(d, 0, 1, 9);
            let mut new = Schedule::lane(d, 0, 1, 9);
            for _ in 0..1000 {
                assert!((old.peek() - new.peek()).abs() < 1e-9);
                old.advance();
                new.advance();
            }
        }
    }
}
