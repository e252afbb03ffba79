//! Staged shards (`httplab load --stages ... --client I/N`): per-stage
//! histograms and counters merged exactly, different stage lists refused,
//! probes added.

use crate::common;

use common::{hist_of, named, shard};
use httplab_merge::{merge_runs, MergeError, Options};
use httplab_model::{Latency, ProbeResult, RunResult, StageResult};

fn stage(start_s: f64, from: f64, to: f64, samples_us: &[u64]) -> StageResult {
    let n = samples_us.len() as u64;
    StageResult {
        start_s,
        duration_s: 2.0,
        rate_from: from,
        rate_to: to,
        arrivals: n,
        sent: n + 1,
        replies: n,
        errors: 1,
        achieved_rps: n as f64 / 2.0,
        response: Latency::from_histogram(&hist_of(samples_us)),
        response_uncorrected: Latency::from_histogram(&hist_of(samples_us)),
    }
}

fn staged(i: u32, a: &[u64], b: &[u64]) -> RunResult {
    let mut r = shard(i, 2, "run-s", &[1000, 2000], 0);
    r.stages = vec![stage(0.0, 10.0, 10.0, a), stage(2.0, 10.0, 50.0, b)];
    r
}

#[test]
fn stages_merge_exactly() {
    let (a0, b0) = ([100, 200, 300], [5000, 9000]);
    let (a1, b1) = ([400, 500], [7000, 1_000_000]);
    let m = merge_runs(
        &named(vec![staged(0, &a0, &b0), staged(1, &a1, &b1)]),
        &Options::default(),
    )
    .unwrap()
    .result;
    assert_eq!(m.stages.len(), 2);
    let s1 = &m.stages[1];
    assert_eq!((s1.arrivals, s1.sent, s1.replies, s1.errors), (4, 6, 4, 2));
    assert_eq!(s1.achieved_rps, 2.0);
    assert_eq!((s1.rate_from, s1.rate_to, s1.start_s), (10.0, 50.0, 2.0));
    // The sum of the shards' histograms is the histogram of all samples.
    let all: Vec<u64> = b0.iter().chain(&b1).copied().collect();
    let want = Latency::from_histogram(&hist_of(&all));
    assert_eq!(s1.response.count, 4);
    assert_eq!(s1.response.max_ms, want.max_ms);
    assert_eq!(s1.response.percentiles, want.percentiles);
    assert_eq!(m.stages[0].response.count, 5);
}

#[test]
fn different_stage_lists_are_refused() {
    let mut other = staged(1, &[1], &[2]);
    other.stages[1].rate_to = 60.0;
    let Err(e) = merge_runs(
        &named(vec![staged(0, &[1], &[2]), other]),
        &Options::default(),
    ) else {
        panic!("different stage lists should be refused");
    };
    assert!(matches!(e, MergeError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("rate stages"), "{e}");
    let mut plain = shard(1, 2, "run-s", &[1000], 0);
    plain.stages.clear();
    assert!(merge_runs(
        &named(vec![staged(0, &[1], &[2]), plain]),
        &Options::default()
    )
    .is_err());
}

#[test]
fn probes_add_up() {
    let probe = |samples: &[u64]| ProbeResult {
        rate: 100.0,
        connections: 1,
        sent: samples.len() as u64,
        replies: samples.len() as u64,
        response: Latency::from_histogram(&hist_of(samples)),
        ..ProbeResult::default()
    };
    let mut a = shard(0, 2, "run-p", &[1000], 0);
    let mut b = shard(1, 2, "run-p", &[1000], 0);
    a.probe = Some(probe(&[100, 200]));
    b.probe = Some(probe(&[300]));
    let m = merge_runs(&named(vec![a, b]), &Options::default())
        .unwrap()
        .result;
    let p = m.probe.expect("merged probe");
    assert_eq!((p.rate, p.connections, p.replies), (200.0, 2, 3));
    assert_eq!(p.response.count, 3);
}
