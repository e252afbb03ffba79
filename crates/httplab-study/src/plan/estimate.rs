//! How much a study will run: load runs at the fewest and the most
//! repetitions, and the time at the fewest.

use crate::plan::rounds;
use crate::plan::steps::{steps, steps_with};
use crate::spec::{expand_servers, ServerInstance, StudyFile, Workload, WorkloadKind};

/// Runs one capacity search is expected to take (for planning).
pub const SEARCH_RUNS: u64 = 7;

/// The servers a workload runs on (all of the study's when it names none).
pub fn servers_of<'a>(w: &Workload, all: &'a [ServerInstance]) -> Vec<&'a ServerInstance> {
    all.iter()
        .filter(|s| {
            w.servers.is_empty()
                || w.servers
                    .iter()
                    .any(|n| *n == s.name || s.spec.name.as_deref() == Some(n.as_str()))
        })
        .collect()
}

/// Load runs the study makes at least (every cell at its fewest repetitions)
/// and at most (every cell at its cap); a capacity search counts as
/// [`SEARCH_RUNS`] runs.
pub fn count_runs_range(s: &StudyFile) -> (u64, u64) {
    let all = expand_servers(s);
    let p = rounds::protocol(s, false);
    let mut lo = 0;
    let mut hi = 0;
    for w in &s.workloads {
        let (min, max) = rounds::reps_of(&p, w);
        let per = servers_of(w, &all).len() as u64
            * steps(w).len() as u64
            * if w.kind == WorkloadKind::Sweep {
                SEARCH_RUNS
            } else {
                u64::from(w.slice_count())
            };
        lo += per * u64::from(min);
        hi += per * u64::from(max);
    }
    (lo, hi)
}

/// Load runs the study makes at least (see [`count_runs_range`]).
pub fn count_runs(s: &StudyFile) -> u64 {
    count_runs_range(s).0
}

/// Estimated seconds of the study at its fewest repetitions.
pub fn estimate_seconds(s: &StudyFile) -> f64 {
    let all = expand_servers(s);
    let p = rounds::protocol(s, false);
    s.workloads
        .iter()
        .map(|w| {
            let (min, _) = rounds::reps_of(&p, w);
            let n = servers_of(w, &all).len() as f64 * f64::from(min);
            steps_with(w, &s.protocol)
                .iter()
                .map(|st| {
                    let k = w.slice_count();
                    let per = f64::from(k) * (st.sliced(k).run_seconds() + 0.1);
                    if w.kind == WorkloadKind::Sweep {
                        per * SEARCH_RUNS as f64
                    } else {
                        per
                    }
                })
                .sum::<f64>()
                * n
        })
        .sum()
}
