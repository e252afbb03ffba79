//! The measurement protocol of a study: repetitions in rounds of random order
//! (a randomized block design), the metric each workload is judged by.
//!
//! Every round visits every server once, in an order drawn afresh from the
//! study's seed, so slow drift of a shared machine spreads over all servers
//! instead of landing on whichever ran during it. Each step first runs its
//! fewest rounds; the sequential design (`analyse::decisions`) then hands the
//! budget's extra rounds to the steps nearest a decision.

use httplab_model as m;

use crate::spec::{Metric, ProtocolSpec, StudyFile, Workload, WorkloadKind};

/// Relative step of the grid a capacity search's values sit on (its
/// bisection precision, `httplab_sweep::FindMax`).
pub const CAPACITY_GRID: f64 = 0.05;

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
    fn every_server_leads_some_round() {
        let names = ["a", "b", "c"];
        let firsts: std::collections::BTreeSet<&str> = (0..30)
            .map(|r| round_order(&names, 7, 1, 2, r)[0])
            .collect();
        assert_eq!(firsts.len(), 3);
    }
}
