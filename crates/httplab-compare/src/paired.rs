//! `httplab compare --base-cmd CMD --new-cmd CMD`: the paired regression gate.
//!
//! Comparing saved results compares runs made at different times: whatever changed on the
//! machine between them (another job, a warmer cache, a frequency step) lands on one side
//! only, and an unpaired interval either hides a real change or invents one. The paired mode
//! instead runs BASE and NEW itself, both started at once and measured in alternation in one
//! session — the study's rounds of random order, each visit split into short slices in
//! A B | B A order — with the same fixed request rate for both, judged on the server's own CPU
//! per request by the study's rules (`docs/statistics.md`). This module holds what the mode
//! asks for ([`Request`]), the function type that runs it ([`Runner`]: the study crate's,
//! handed in by the binary, so this crate still runs no load itself) and the gate's reading of
//! the outcome ([`decide`]).

use std::path::PathBuf;

use httplab_model::{StudyResult, StudyVerdict, VerdictOutcome};

use crate::judge::pct;

/// The work both servers are given: each at a fixed request rate (open loop), so their CPU per
/// request compares directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Work {
    /// An 87 B file over keep-alive connections, ten requests each.
    #[default]
    Small,
    /// An 87 B file, a new connection per request.
    SmallNewConnection,
    /// A 2.9 MB file, a new connection per request.
    Large,
}

impl Work {
    /// Every kind of work with its command-line word.
    pub const ALL: [(Work, &'static str); 3] = [
        (Work::Small, "small"),
        (Work::SmallNewConnection, "small-new-connection"),
        (Work::Large, "large"),
    ];

    /// The command-line word.
    pub fn word(self) -> &'static str {
        Work::ALL
            .iter()
            .find(|(w, _)| *w == self)
            .map_or("small", |(_, s)| s)
    }

    /// From the command-line word.
    pub fn parse(s: &str) -> Option<Work> {
        Work::ALL.iter().find(|(_, w)| *w == s).map(|(w, _)| *w)
    }
}

/// What the paired mode runs: two server command lines (one word per argument, `{port}` and
/// `{root}` not yet substituted) and how to load them.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// BASE's command line.
    pub base: Vec<String>,
    /// NEW's command line.
    pub new: Vec<String>,
    /// The work both get.
    pub work: Work,
    /// New connections per second (None: the work's default).
    pub rate: Option<f64>,
    /// Seconds of extra rounds after the first ones (None: the mode's default).
    pub budget_s: Option<f64>,
    /// δ, the smallest change of interest (the equivalence margin).
    pub delta: f64,
    /// Where the study's report goes (None: a temporary directory, removed).
    pub out: Option<PathBuf>,
    /// Show the progress bar.
    pub progress: bool,
}

/// Runs a [`Request`]: the study crate's paired study (see the binary).
pub type Runner = fn(&Request) -> anyhow::Result<StudyResult>;

/// The report names of the two servers in the paired study.
pub const BASE: &str = "base";
/// See [`BASE`].
pub const NEW: &str = "new";

/// The study metric the gate reads: the server's CPU per request.
pub const METRIC: httplab_model::Metric = httplab_model::Metric::ServerCpuUsPerReq;

/// What the gate concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No regression beyond the threshold (exit status 0).
    Pass,
    /// NEW is significantly costlier than BASE beyond the threshold (exit status 1).
    Regression,
    /// The study could not compare the two (a server did not start, no run measured): the
    /// gate cannot say there is no regression (exit status 1).
    NotMeasured,
}

/// The gate's conclusion and what it prints.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The conclusion.
    pub outcome: Outcome,
    /// The lines to print, one per compared step.
    pub lines: Vec<String>,
}

/// NEW's cost relative to BASE's from a verdict between the two: (ratio NEW/BASE, its 95 %
/// interval). The verdict's ratio is oriented towards its first server being better.
fn new_over_base(v: &StudyVerdict) -> Option<(f64, Option<[f64; 2]>)> {
    let r = v.ratio?;
    let lower_better = v.better == httplab_model::Direction::Lower;
    // ratio > 1: `leader` better. For a lower-is-better metric the ratio is
    // runner_up / leader; its CI is in the same orientation.
    let leader_is_new = v.leader.as_deref() == Some(NEW);
    // x: leader's value relative to the runner-up's, in "better" units.
    let flip = |x: f64| if leader_is_new { 1.0 / x } else { x };
    // Cost of NEW / cost of BASE: for lower-is-better that is the ratio of
    // the better-oriented figure when BASE leads.
    let to_cost = |x: f64| if lower_better { flip(x) } else { 1.0 / flip(x) };
    let ci = v.ratio_ci.map(|[lo, hi]| {
        let (a, b) = (to_cost(lo), to_cost(hi));
        [a.min(b), a.max(b)]
    });
    Some((to_cost(r), ci))
}

/// "×1.07 (97.5 % CI 1.03–1.11)": the decision's interval at its level.
fn ratio_text(x: f64, ci: Option<[f64; 2]>, level: f64) -> String {
    match ci {
        Some([lo, hi]) => format!(
            "×{x:.3} ({} CI {lo:.3}–{hi:.3})",
            httplab_stats::level_text(level)
        ),
        None => format!("×{x:.3}"),
    }
}

/// The gate's reading of the paired study: a regression is the study naming BASE the winner
/// on server CPU per request (NEW costlier: the decision's interval, at the level of the
/// study's family, leaves 1 out) with that whole interval of NEW/BASE above 1 + `threshold`
/// (with `threshold` 0: any regression the interval shows).
pub fn decide(res: &StudyResult, threshold: f64) -> Gate {
    let verdicts: Vec<&StudyVerdict> = res
        .verdicts
        .iter()
        .filter(|v| v.metric == METRIC)
        .filter(|v| {
            let names = [v.leader.as_deref(), v.runner_up.as_deref()];
            names.contains(&Some(BASE)) && names.contains(&Some(NEW))
        })
        .collect();
    let mut lines = Vec::new();
    let mut outcome = Outcome::Pass;
    if verdicts.is_empty() {
        lines.push(
            "NOT MEASURED: no verdict on server CPU per request between base and new: the study \
             could not compare them (see the rows' reasons in its report)"
                .to_string(),
        );
        return Gate {
            outcome: Outcome::NotMeasured,
            lines,
        };
    }
    for v in verdicts {
        let at = match &v.step {
            Some(s) => format!("{} ({s})", v.workload),
            None => v.workload.clone(),
        };
        let Some((x, ci)) = new_over_base(v) else {
            outcome = Outcome::NotMeasured;
            lines.push(format!("{at}: NOT MEASURED: {}", v.note));
            continue;
        };
        let figure = ratio_text(x, ci, v.ratio_ci_level.unwrap_or(0.95));
        let line = match (v.outcome(), v.winner.as_deref()) {
            (VerdictOutcome::Winner, Some(BASE)) => {
                let lo = ci.map_or(x, |c| c[0]);
                if lo > 1.0 + threshold {
                    outcome = Outcome::Regression;
                    format!(
                        "REGRESSION: new costs more server CPU per request than base: {figure}; \
                         the whole interval is above +{} (--threshold)",
                        pct(threshold)
                    )
                } else {
                    format!(
                        "new costs more server CPU per request than base: {figure}, but the \
                         interval reaches +{} (--threshold) or below: not failed",
                        pct(threshold)
                    )
                }
            }
            (VerdictOutcome::Winner, _) => {
                format!("improvement: new costs less server CPU per request than base: {figure}")
            }
            (VerdictOutcome::Equivalent, _) => format!(
                "no regression: new and base are equivalent within ±{} on server CPU per \
                 request: {figure}",
                pct(v.delta.unwrap_or(0.05))
            ),
            (VerdictOutcome::Inconclusive, _) => {
                let could = v
                    .detectable
                    .map(|d| format!("; this run could see a change of {} or more", pct(d)))
                    .unwrap_or_default();
                format!("inconclusive: new/base server CPU per request {figure}{could}")
            }
        };
        lines.push(format!("{at}: {line}"));
    }
    Gate { outcome, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(outcome: VerdictOutcome, leader: &str, ratio: f64, ci: [f64; 2]) -> StudyVerdict {
        let other = if leader == NEW { BASE } else { NEW };
        StudyVerdict {
            workload: "small".into(),
            metric: METRIC.into(),
            better: httplab_model::Direction::Lower,
            outcome: Some(outcome),
            winner: (outcome == VerdictOutcome::Winner).then(|| leader.to_string()),
            leader: Some(leader.into()),
            runner_up: Some(other.into()),
            ratio: Some(ratio),
            ratio_ci: Some(ci),
            ratio_ci_level: Some(0.95),
            significant: outcome == VerdictOutcome::Winner,
            delta: Some(0.05),
            detectable: Some(0.04),
            ..StudyVerdict::default()
        }
    }

    fn result(v: StudyVerdict) -> StudyResult {
        StudyResult {
            verdicts: vec![v],
            ..StudyResult::default()
        }
    }

    #[test]
    fn base_cheaper_beyond_the_threshold_is_a_regression() {
        // base leads: base's cost is 1/1.08 of new's → new/base = 1.08.
        let g = decide(
            &result(verdict(VerdictOutcome::Winner, BASE, 1.08, [1.04, 1.12])),
            0.0,
        );
        assert_eq!(g.outcome, Outcome::Regression, "{:?}", g.lines);
        assert!(
            g.lines[0].contains("×1.080 (95 % CI 1.040–1.120)"),
            "{:?}",
            g.lines
        );
        // The same with a threshold the interval reaches: reported, not failed.
        let g = decide(
            &result(verdict(VerdictOutcome::Winner, BASE, 1.08, [1.04, 1.12])),
            0.05,
        );
        assert_eq!(g.outcome, Outcome::Pass);
        assert!(g.lines[0].contains("not failed"), "{:?}", g.lines);
    }

    #[test]
    fn new_cheaper_equivalent_and_inconclusive_pass() {
        for v in [
            verdict(VerdictOutcome::Winner, NEW, 1.08, [1.04, 1.12]),
            verdict(VerdictOutcome::Equivalent, NEW, 1.01, [0.99, 1.03]),
            verdict(VerdictOutcome::Inconclusive, BASE, 1.03, [0.98, 1.08]),
        ] {
            let g = decide(&result(v), 0.0);
            assert_eq!(g.outcome, Outcome::Pass, "{:?}", g.lines);
        }
        let g = decide(
            &result(verdict(VerdictOutcome::Winner, NEW, 1.08, [1.04, 1.12])),
            0.0,
        );
        // new leads: new/base = 1/1.08.
        assert!(g.lines[0].contains("×0.926"), "{:?}", g.lines);
        assert!(g.lines[0].contains("improvement"), "{:?}", g.lines);
    }

    #[test]
    fn no_verdict_is_not_a_pass() {
        let g = decide(&StudyResult::default(), 0.0);
        assert_eq!(g.outcome, Outcome::NotMeasured);
        assert!(g.lines[0].contains("could not compare"), "{:?}", g.lines);
    }

    #[test]
    fn work_words_round_trip() {
        for (w, s) in Work::ALL {
            assert_eq!(Work::parse(s), Some(w));
            assert_eq!(w.word(), s);
        }
        assert_eq!(Work::parse("huge"), None);
    }
}
