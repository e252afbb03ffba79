//! What the rounds gather for every cell (one server on one workload
//! step): its values by round, and why it stopped being measured.

use std::collections::BTreeMap;

use httplab_model as m;

use crate::execute::slots::Down;
use crate::spec::Metric;

/// Why a cell stopped being measured (`Cell.stop` in the results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The cell ran the rounds the design gave it.
    Design,
    /// The repetition cap was reached.
    MaxRepetitions,
    /// The server failed.
    Failed,
    /// Ctrl-C.
    Interrupted,
    /// Every run of the cell measured nothing (no replies and no errors in its window).
    NothingMeasured,
}

impl From<Stop> for m::CellStop {
    /// The reason written in results.
    fn from(s: Stop) -> m::CellStop {
        match s {
            Stop::Design => m::CellStop::Design,
            Stop::MaxRepetitions => m::CellStop::MaxRepetitions,
            Stop::Failed => m::CellStop::Failed,
            Stop::Interrupted => m::CellStop::Interrupted,
            Stop::NothingMeasured => m::CellStop::NothingMeasured,
        }
    }
}

/// Reason recorded with a run that measured nothing (status "empty", see
/// [`measured_nothing`]).
pub const REASON_EMPTY: &str =
    "no replies in the window: nothing measured, not counted as a repetition";

/// True when a run got neither a reply nor an error in its measurement
/// window (seen with very short windows): no attempted call
/// ([`httplab_model::metric::attempted_calls`]). Such a run measured nothing: its
/// reply rate of 0 is not a measurement, so it must not enter the estimates.
pub fn measured_nothing(r: &m::RunResult) -> bool {
    !r.interrupted && m::metric::attempted_calls(r) == 0
}

/// Metric values of one run: every metric of the registry read from a run
/// ([`Metric::of_run`]), where the run has it.
pub fn metrics_of(r: &m::RunResult) -> BTreeMap<Metric, f64> {
    Metric::ALL
        .into_iter()
        .filter_map(|k| Some((k, k.of_run(r)?)))
        .collect()
}

/// One server's results on one workload step, gathered over rounds.
#[derive(Debug, Clone, Default)]
pub struct CellData {
    /// Server.
    pub server: String,
    /// Primary metric per successful repetition, in round order.
    pub values: Vec<f64>,
    /// Every metric per successful repetition.
    pub metrics: BTreeMap<Metric, Vec<f64>>,
    /// Every metric by round index (None: no value in that round), so that
    /// two servers are paired round by round, never shifted.
    pub by_round: BTreeMap<Metric, Vec<Option<f64>>>,
    /// Runs the client limited.
    pub client_bound_runs: u32,
    /// Why it stopped (set when it does).
    pub stop: Option<Stop>,
    /// Runs excluded because they measured nothing ([`measured_nothing`]).
    pub empty_runs: u32,
    /// Why the server was left out of this step without running (it never
    /// started, cannot speak the workload's protocol, or the workload's
    /// packet loss cannot be injected); the verdicts repeat it.
    pub left_out: Option<String>,
    /// The status and reason of the cell's rows in the rounds it is not
    /// measured in, once it has stopped (its server down or left out, a
    /// failed run, Ctrl-C): every round of a step has a row per server.
    pub not_measured: Option<Down>,
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
            self.metrics.entry(*k).or_default().push(*v);
            let slots = self.by_round.entry(*k).or_default();
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
    pub fn rounds_of(&self, metric: Metric) -> &[Option<f64>] {
        self.by_round.get(&metric).map_or(&[], Vec::as_slice)
    }

    /// Why the cell stopped, as its results say: a cell that ran its rounds
    /// and measured nothing in any of them is "nothing measured".
    pub fn final_stop(&self) -> Stop {
        match self.stop.unwrap_or(Stop::Design) {
            Stop::Design | Stop::MaxRepetitions
                if self.values.is_empty() && self.empty_runs > 0 =>
            {
                Stop::NothingMeasured
            }
            x => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_gives_its_median_and_with_enough_replies_its_p99() {
        let mut r = m::RunResult::default();
        assert!(!metrics_of(&r).contains_key(&Metric::ProbeP50Ms));
        let mut p = m::ProbeResult::default();
        p.response.count = m::PROBE_MIN_REPLIES - 1;
        for (pct, ms) in [(50.0, 0.2), (99.0, 3.0)] {
            p.response.percentiles.push(m::Percentile { pct, ms });
        }
        r.probe = Some(p);
        let v = metrics_of(&r);
        assert_eq!(v.get(&Metric::ProbeP50Ms), Some(&0.2));
        assert_eq!(
            v.get(&Metric::ProbeP99Ms),
            None,
            "too few replies for a p99"
        );
        r.probe.as_mut().unwrap().response.count = m::PROBE_MIN_REPLIES;
        assert_eq!(metrics_of(&r).get(&Metric::ProbeP99Ms), Some(&3.0));
    }

    #[test]
    fn a_run_without_replies_or_errors_measured_nothing() {
        let mut r = m::RunResult::default();
        assert!(measured_nothing(&r));
        r.errors.total = 1;
        assert!(!measured_nothing(&r), "errors are a measurement");
        assert_eq!(metrics_of(&r).get(&Metric::ErrorPct), Some(&100.0));
        r.errors.total = 0;
        r.totals.replies = 1;
        assert!(!measured_nothing(&r));
        // A 5xx reply is a failed call (the model's one definition).
        r.reply.status.server_error = 1;
        assert_eq!(metrics_of(&r).get(&Metric::ErrorPct), Some(&100.0));
        r.reply.status.server_error = 0;
        r.totals.replies = 0;
        r.interrupted = true;
        assert!(
            !measured_nothing(&r),
            "interrupted runs are reported as such"
        );
    }
}
