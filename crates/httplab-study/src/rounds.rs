//! The measurement protocol of a study: repetitions in rounds of random order
//! (a randomized block design) and the statistics of every cell.
//!
//! Every round visits every server once, in an order drawn afresh from the
//! study's seed, so slow drift of a shared machine spreads over all servers
//! instead of landing on whichever ran during it. Each step first runs its
//! fewest rounds; the sequential design ([`crate::decisions`]) then hands the
//! budget's extra rounds to the steps nearest a decision.

use std::collections::BTreeMap;

use httplab_model as m;
use httplab_stats as st;

use crate::spec::{Metric, ProtocolSpec, StudyFile, Workload, WorkloadKind};

/// The cell ran the rounds the design gave it.
pub const STOP_DONE: &str = "design";
/// The repetition cap was reached.
pub const STOP_MAX: &str = "max-repetitions";
/// The server failed.
pub const STOP_FAILED: &str = "failed";
/// Ctrl-C.
pub const STOP_INTERRUPTED: &str = "interrupted";
/// Every run of the cell measured nothing (no replies and no errors in its window).
pub const STOP_NOTHING: &str = "nothing-measured";

/// Status of a run that measured nothing (see [`measured_nothing`]).
pub const STATUS_EMPTY: &str = "empty";
/// Reason recorded with [`STATUS_EMPTY`].
pub const REASON_EMPTY: &str =
    "no replies in the window: nothing measured, not counted as a repetition";

/// True when a run got neither a reply nor an error in its measurement
/// window (seen with very short windows). Such a run measured nothing: its
/// reply rate of 0 is not a measurement, so it must not enter the estimates.
pub fn measured_nothing(r: &m::RunResult) -> bool {
    !r.interrupted && r.totals.replies == 0 && r.errors.total == 0
}

/// The protocol in force: the study's `[protocol]` resolved (seed drawn when absent).
pub fn protocol(s: &StudyFile, quick: bool) -> m::Protocol {
    let p: &ProtocolSpec = &s.protocol;
    let min = p.min_repetitions.max(s.repetitions.unwrap_or(0));
    m::Protocol {
        seed: p.seed.unwrap_or_else(random_seed),
        warmup_s: p.warmup_s,
        window_s: p.window_s,
        min_repetitions: min,
        max_repetitions: p.max_repetitions.max(min),
        precision: 0.0,
        alpha: p.alpha,
        min_effect: p.min_effect,
        interim_rounds: None,
        budget_s: None,
        budget_used_s: None,
        quick,
    }
}

fn random_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    splitmix(t ^ u64::from(std::process::id()).rotate_left(32))
}

/// `--quick`: fewer repetitions and shorter windows (certainty traded for time).
pub fn make_quick(s: &mut StudyFile) {
    let p = &mut s.protocol;
    p.warmup_s = p.warmup_s.min(0.3);
    p.window_s = p.window_s.min(1.0);
    p.min_repetitions = 2;
    p.max_repetitions = p.max_repetitions.min(3);
    s.repetitions = None;
    for w in &mut s.workloads {
        w.repetitions = None;
        w.max_repetitions = w.max_repetitions.map(|x| x.min(3));
        w.warmup_s = w.warmup_s.map(|x| x.min(0.3));
        w.window_s = w.window_s.map(|x| x.min(1.0));
    }
}

/// Repetition bounds of one workload: (fewest, most).
pub fn reps_of(p: &m::Protocol, w: &Workload) -> (u32, u32) {
    let min = w
        .repetitions
        .unwrap_or(p.min_repetitions)
        .max(p.min_repetitions.min(2))
        .max(2);
    let max = w.max_repetitions.unwrap_or(p.max_repetitions).max(min);
    (min, max)
}

/// The metric a workload is judged by.
pub fn primary_metric(s: &StudyFile, w: &Workload) -> Metric {
    w.metric.or(s.compare.metric).unwrap_or(match w.kind {
        WorkloadKind::Users => Metric::ThroughputMbS,
        WorkloadKind::Sweep if w.cpu_quota.is_some() => Metric::ReqPerServerCpuS,
        WorkloadKind::Sweep => Metric::MaxRate,
        WorkloadKind::Load | WorkloadKind::Idle => Metric::ReplyRate,
    })
}

/// SplitMix64: a fixed, documented mixing function, so round orders are
/// reproducible from the recorded seed on any platform and crate version.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The order of `items` in round `round` of step `step` of workload
/// `workload`: a Fisher–Yates shuffle driven by the seed, so the same seed
/// gives the same orders.
pub fn round_order<T: Clone>(
    items: &[T],
    seed: u64,
    workload: usize,
    step: usize,
    round: u32,
) -> Vec<T> {
    let mut v = items.to_vec();
    let mut state = splitmix(
        seed ^ splitmix(workload as u64 + 1)
            ^ splitmix((step as u64 + 1) << 20)
            ^ splitmix((u64::from(round) + 1) << 40),
    );
    for i in (1..v.len()).rev() {
        state = splitmix(state);
        let j = (state % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// One server's results on one workload step, gathered over rounds.
#[derive(Debug, Clone, Default)]
pub struct CellData {
    /// Server.
    pub server: String,
    /// Primary metric per successful repetition, in round order.
    pub values: Vec<f64>,
    /// Every metric per successful repetition.
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// Every metric by round index (None: no value in that round), so that
    /// two servers are paired round by round, never shifted.
    pub by_round: BTreeMap<String, Vec<Option<f64>>>,
    /// Runs the client limited.
    pub client_bound_runs: u32,
    /// Why it stopped (set when it does).
    pub stop: Option<&'static str>,
    /// Runs excluded because they measured nothing ([`measured_nothing`]).
    pub empty_runs: u32,
}

impl CellData {
    /// Records one successful repetition of round `round`. `valid` holds
    /// metrics measured but not valid for comparison in this run (server CPU
    /// when the achieved rate missed the offered one): kept in the estimates,
    /// left out of the pairs.
    pub fn push(
        &mut self,
        round: u32,
        primary: f64,
        all: &BTreeMap<Metric, f64>,
        client_bound: bool,
        invalid: &[Metric],
    ) {
        self.values.push(primary);
        for (k, v) in all {
            self.metrics
                .entry(k.key().to_string())
                .or_default()
                .push(*v);
            let slots = self.by_round.entry(k.key().to_string()).or_default();
            let i = round as usize;
            if slots.len() <= i {
                slots.resize(i + 1, None);
            }
            slots[i] = (!invalid.contains(k)).then_some(*v);
        }
        if client_bound {
            self.client_bound_runs += 1;
        }
    }

    /// One slot per round of `metric` (empty when never measured).
    pub fn rounds_of(&self, metric: &str) -> &[Option<f64>] {
        self.by_round.get(metric).map_or(&[], Vec::as_slice)
    }
}

/// Converts the statistics crate's estimate into the result model's.
pub fn estimate(xs: &[f64]) -> Option<m::Estimate> {
    let e = st::Estimate::of(xs)?;
    let finite = |x: f64| x.is_finite().then_some(x);
    Some(m::Estimate {
        n: e.n as u32,
        mean: e.mean,
        median: e.median,
        stddev: if e.stddev.is_finite() { e.stddev } else { 0.0 },
        ci_low: finite(e.ci_low),
        ci_high: finite(e.ci_high),
    })
}

/// The cell record of one server on one step.
pub fn cell(workload: &str, step: Option<&str>, metric: Metric, d: &CellData) -> m::Cell {
    m::Cell {
        workload: workload.to_string(),
        step: step.map(str::to_string),
        server: d.server.clone(),
        n: d.values.len() as u32,
        metric: metric.key().to_string(),
        values: d.metrics.clone(),
        stop: match d.stop.unwrap_or(STOP_DONE) {
            STOP_DONE | STOP_MAX if d.values.is_empty() && d.empty_runs > 0 => STOP_NOTHING,
            x => x,
        }
        .to_string(),
        precision: st::Estimate::of(&d.values)
            .map(|e| e.relative_half_width())
            .filter(|x| x.is_finite()),
        client_bound_runs: d.client_bound_runs,
        client_bound: d.client_bound_runs > 0,
        metrics: d
            .metrics
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), estimate(v)?)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_orders_are_reproducible_and_vary() {
        let names = ["a", "b", "c", "d", "e"];
        let o1 = round_order(&names, 42, 0, 0, 0);
        assert_eq!(o1, round_order(&names, 42, 0, 0, 0));
        let mut sorted = o1.clone();
        sorted.sort();
        assert_eq!(sorted, names);
        let distinct: std::collections::BTreeSet<Vec<&str>> =
            (0..20).map(|r| round_order(&names, 42, 0, 0, r)).collect();
        assert!(distinct.len() > 10, "orders should differ between rounds");
        assert_ne!(
            (0..5)
                .map(|r| round_order(&names, 1, 0, 0, r))
                .collect::<Vec<_>>(),
            (0..5)
                .map(|r| round_order(&names, 2, 0, 0, r))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_run_without_replies_or_errors_measured_nothing() {
        let mut r = m::RunResult::default();
        assert!(measured_nothing(&r));
        r.errors.total = 1;
        assert!(!measured_nothing(&r), "errors are a measurement");
        r.errors.total = 0;
        r.totals.replies = 1;
        assert!(!measured_nothing(&r));
        r.totals.replies = 0;
        r.interrupted = true;
        assert!(
            !measured_nothing(&r),
            "interrupted runs are reported as such"
        );
    }

    #[test]
    fn empty_runs_are_not_repetitions() {
        let mut d = CellData {
            server: "s".into(),
            empty_runs: 2,
            ..Default::default()
        };
        let c = cell("w", None, Metric::ReplyRate, &d);
        assert_eq!((c.n, c.stop.as_str()), (0, STOP_NOTHING));
        d.push(
            1,
            100.0,
            &BTreeMap::from([(Metric::ReplyRate, 100.0)]),
            false,
            &[],
        );
        let c = cell("w", None, Metric::ReplyRate, &d);
        assert_eq!((c.n, c.stop.as_str()), (1, STOP_DONE));
        assert_eq!(c.values["reply_rate"], vec![100.0]);
        assert_eq!(d.rounds_of("reply_rate"), &[None, Some(100.0)]);
    }

    #[test]
    fn every_server_leads_some_round() {
        let names = ["a", "b", "c"];
        let firsts: std::collections::BTreeSet<&str> = (0..30)
            .map(|r| round_order(&names, 7, 1, 2, r)[0])
            .collect();
        assert_eq!(firsts.len(), 3);
    }
}
