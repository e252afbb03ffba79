//! The verdicts: every (cell, metric) present on both sides is one comparison of NEW against
//! BASE, and the whole set is decided as one family by the study's own rules
//! (`httplab_stats::decide`: Holm over the family for a difference, two one-sided tests for
//! equivalence), on the unpaired Welch interval of the log values
//! (`httplab_stats::LogRatios::unpaired`): runs of two builds share no rounds.

use std::collections::BTreeSet;

use anyhow::{bail, Result};
use httplab_stats::{
    decide, Better, Comparison, Decision, DesignOptions, LogRatios, Looks, Measured, Outcome,
    Side as Which,
};
use serde::Serialize;

use crate::input::{CellValues, Kind, Side};
use crate::metric::Metric;

/// How to judge.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// A regression counts for the exit code only when NEW is worse by more than this
    /// (0.05 = 5 %).
    pub threshold: f64,
    /// δ: the smallest change of interest (winner rule) and the equivalence margin.
    pub delta: f64,
    /// The family's false-verdict rate.
    pub alpha: f64,
    /// Metrics to judge (empty: all).
    pub metrics: Vec<Metric>,
}

impl Default for Options {
    fn default() -> Self {
        let d = DesignOptions::default();
        Options {
            threshold: 0.05,
            delta: d.delta,
            alpha: d.alpha,
            metrics: Vec::new(),
        }
    }
}

/// What one comparison found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// NEW is worse by at least δ, significantly after the correction over every comparison.
    Regression,
    /// NEW is better by at least δ, likewise.
    Improvement,
    /// The 90 % interval of NEW/BASE lies inside ±δ.
    Equivalent,
    /// Neither; the row says what the runs could have seen, or why there is no spread.
    Inconclusive,
    /// The metric has values on one side only.
    Missing,
}

impl Verdict {
    /// The word printed.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Missing => "not compared",
        }
    }
}

/// One side's values of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideFigures {
    /// Runs with a value.
    pub n: usize,
    /// Geometric mean of the values.
    pub geomean: Option<f64>,
    /// Runs the load generator limited.
    pub client_bound_runs: usize,
    /// For the errors row: errors and calls over every run (the figures compared carry a
    /// continuity correction; these are the plain counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_of_calls: Option<[u64; 2]>,
}

/// One compared (cell, metric).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The cell ("" for a load result).
    pub cell: String,
    /// The metric.
    pub metric: Metric,
    /// Which direction is better.
    pub better: Better,
    /// BASE's figures.
    pub base: SideFigures,
    /// NEW's figures.
    pub new: SideFigures,
    /// NEW/BASE ratio of the geometric means of the metric itself (> 1: NEW's value is
    /// larger, whichever way is better).
    pub ratio: Option<f64>,
    /// 95 % Welch interval of `ratio`.
    pub ci95: Option<[f64; 2]>,
    /// 90 % interval (the one the equivalence rule reads).
    pub ci90: Option<[f64; 2]>,
    /// The verdict.
    pub verdict: Verdict,
    /// A regression worse than `--threshold`: it sets the exit code.
    pub beyond_threshold: bool,
    /// p value of a difference after Holm over every comparison.
    pub p_value: Option<f64>,
    /// p value of equivalence (two one-sided tests).
    pub p_equivalent: Option<f64>,
    /// Smallest change (ratio − 1) these runs would have found with 80 % power.
    pub detectable: Option<f64>,
    /// Runs per side that would settle ±δ if the data stay as they are.
    pub runs_to_settle: Option<u32>,
    /// One sentence on the verdict.
    pub note: String,
}

/// Every comparison and what to tell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judgement {
    /// Kind of both sides.
    pub kind: Kind,
    /// The rows, cells in name order, metrics in table order.
    pub rows: Vec<Row>,
    /// Comparisons decided together (the family of the Holm correction).
    pub family: usize,
    /// Things the reader should know (different loads, cells on one side only, …).
    pub notes: Vec<String>,
    /// The threshold in force.
    pub threshold: f64,
    /// δ in force.
    pub delta: f64,
}

impl Judgement {
    /// Regressions that set the exit code.
    pub fn regressions(&self) -> Vec<&Row> {
        let mut v: Vec<&Row> = self.rows.iter().filter(|r| r.beyond_threshold).collect();
        v.sort_by(|a, b| worsening(b).total_cmp(&worsening(a)));
        v
    }
}

/// How much worse NEW is (0.18 = 18 % worse; negative: better).
pub fn worsening(r: &Row) -> f64 {
    match (r.ratio, r.better) {
        (Some(x), Better::Higher) => 1.0 / x - 1.0,
        (Some(x), Better::Lower) => x - 1.0,
        (None, _) => f64::NEG_INFINITY,
    }
}

fn figures(c: &CellValues, m: &Metric) -> SideFigures {
    let v = c.values.get(m).map_or(&[][..], Vec::as_slice);
    let usable: Vec<f64> = v
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    SideFigures {
        n: usable.len(),
        geomean: httplab_stats::geometric_mean(&usable),
        client_bound_runs: c.client_bound_runs,
        errors_of_calls: (*m == Metric::ErrorRate).then_some(c.errors_of_calls),
    }
}

/// The comparison of NEW (side A) against BASE (side B), with client bounds holding back what
/// they could change (the study's rule: a bound on the loser holds a win back, a bound on
/// either side holds equivalence back).
fn comparison(base: &CellValues, new: &CellValues, m: &Metric) -> Comparison {
    let get = |c: &CellValues| c.values.get(m).cloned().unwrap_or_default();
    let l = LogRatios::unpaired(&get(new), &get(base), m.better());
    let mut c = Comparison::new(Looks::single(l));
    // Values on a grid (a sweep's highest sustained rate) get the spread the grid allows.
    if let Some(step) = base
        .resolution
        .into_iter()
        .chain(new.resolution)
        .reduce(f64::max)
    {
        c = c.with_resolution(step);
    }
    if m.measured() == Measured::ByClient {
        let what = match m.better() {
            Better::Higher => "at least",
            Better::Lower => "at most",
        };
        let bound = |name: &str, c: &CellValues| {
            (c.client_bound_runs > 0).then(|| {
                format!(
                    "{} of {name}'s runs were client-bound (their figures are only bounds: the true value is {what} the figure)",
                    c.client_bound_runs
                )
            })
        };
        let (b, n) = (bound("BASE", base), bound("NEW", new));
        c.no_winner = if l.mean >= 0.0 { b.clone() } else { n.clone() };
        c.no_equivalence = b.or(n);
    }
    c
}

/// Judges NEW against BASE.
pub fn judge(base: &Side, new: &Side, opts: &Options) -> Result<Judgement> {
    if base.kind != new.kind {
        bail!(
            "BASE is a {} but NEW is a {}: compare results of one kind (load with load, sweep with sweep, study with study)",
            base.kind.name(),
            new.kind.name()
        );
    }
    let mut notes = Vec::new();
    let only = |a: &Side, b: &Side| -> Vec<String> {
        a.cells
            .keys()
            .filter(|k| !b.cells.contains_key(*k))
            .cloned()
            .collect()
    };
    for (who, cells) in [("BASE", only(base, new)), ("NEW", only(new, base))] {
        if !cells.is_empty() {
            notes.push(format!("only in {who}, not compared: {}", cells.join(", ")));
        }
    }
    if base.kind == Kind::Run && base.shapes != new.shapes {
        notes.push(format!(
            "the sides ran different loads (BASE: {}; NEW: {}): their figures may differ for that reason alone",
            base.shapes.join(" / "),
            new.shapes.join(" / ")
        ));
    }
    let mut pairs: Vec<(String, Metric, Option<Comparison>)> = Vec::new();
    for cell in &base.order {
        let (Some(b), Some(n)) = (base.cells.get(cell), new.cells.get(cell)) else {
            continue;
        };
        let metrics: BTreeSet<&Metric> = b.values.keys().chain(n.values.keys()).collect();
        for m in metrics {
            if !opts.metrics.is_empty() && !opts.metrics.contains(m) {
                continue;
            }
            let both = b.values.contains_key(m) && n.values.contains_key(m);
            pairs.push((cell.clone(), m.clone(), both.then(|| comparison(b, n, m))));
        }
    }
    if pairs.is_empty() {
        bail!(
            "nothing to compare: no cell and metric has values on both sides{}",
            if opts.metrics.is_empty() {
                String::new()
            } else {
                " (check --metric)".to_string()
            }
        );
    }
    let family: Vec<Comparison> = pairs.iter().filter_map(|p| p.2.clone()).collect();
    let design = DesignOptions {
        alpha: opts.alpha,
        delta: opts.delta,
        ..DesignOptions::default()
    };
    let mut decisions = decide(&family, &design).into_iter();
    let rows = pairs
        .iter()
        .map(|(cell, m, c)| {
            let d = c.as_ref().and_then(|_| decisions.next());
            row(
                cell,
                m,
                &base.cells[cell],
                &new.cells[cell],
                d.as_ref(),
                opts,
            )
        })
        .collect();
    Ok(Judgement {
        kind: base.kind,
        rows,
        family: family.len(),
        notes,
        threshold: opts.threshold,
        delta: opts.delta,
    })
}

/// From the better-oriented ratio (> 1: NEW better) to NEW/BASE of the metric itself.
fn raw(better: Better, x: f64) -> f64 {
    match better {
        Better::Higher => x,
        Better::Lower => 1.0 / x,
    }
}

fn raw_ci(better: Better, ci: Option<[f64; 2]>) -> Option<[f64; 2]> {
    ci.map(|[lo, hi]| {
        let (a, b) = (raw(better, lo), raw(better, hi));
        [a.min(b), a.max(b)]
    })
}

fn row(
    cell: &str,
    m: &Metric,
    b: &CellValues,
    n: &CellValues,
    d: Option<&Decision>,
    opts: &Options,
) -> Row {
    let better = m.better();
    let mut r = Row {
        cell: cell.to_string(),
        metric: m.clone(),
        better,
        base: figures(b, m),
        new: figures(n, m),
        ratio: None,
        ci95: None,
        ci90: None,
        verdict: Verdict::Missing,
        beyond_threshold: false,
        p_value: None,
        p_equivalent: None,
        detectable: None,
        runs_to_settle: None,
        note: String::new(),
    };
    let Some(d) = d else {
        let side = if r.base.n == 0 { "NEW" } else { "BASE" };
        r.note = format!("only {side} has this metric");
        return r;
    };
    r.ratio = d.ratio.map(|x| raw(better, x));
    r.ci95 = raw_ci(better, d.ci);
    r.ci90 = raw_ci(better, d.ci90);
    r.p_value = d.p;
    r.p_equivalent = d.p_equivalent;
    r.detectable = d.detectable;
    r.runs_to_settle = d.rounds_to_settle;
    r.verdict = match (d.outcome, d.winner) {
        (Outcome::Winner, Some(Which::A)) => Verdict::Improvement,
        (Outcome::Winner, _) => Verdict::Regression,
        (Outcome::Equivalent, _) => Verdict::Equivalent,
        (Outcome::Inconclusive, _) => Verdict::Inconclusive,
    };
    r.beyond_threshold = r.verdict == Verdict::Regression && worsening(&r) > opts.threshold;
    r.note = note(&r, d, opts);
    r
}

/// "5 %", "2.5 %".
pub fn pct(x: f64) -> String {
    let v = x * 100.0;
    if v.abs() >= 10.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} %")
    } else {
        format!("{v:.1} %")
    }
}

fn note(r: &Row, d: &Decision, opts: &Options) -> String {
    let delta = pct(opts.delta);
    if let (Verdict::Inconclusive, Some(why)) = (r.verdict, &d.held_back) {
        return format!("held back: {why}");
    }
    match r.verdict {
        Verdict::Regression if !r.beyond_threshold => format!(
            "worse by at least δ = {delta} but not beyond the threshold of {}",
            pct(opts.threshold)
        ),
        Verdict::Regression | Verdict::Improvement => match d.p {
            Some(p) => format!("p = {} (Holm over the comparisons)", httplab_stats::format_p(p)),
            None => String::new(),
        },
        Verdict::Equivalent => format!("90 % CI inside ±{delta}"),
        Verdict::Missing => String::new(),
        Verdict::Inconclusive if r.base.n < 2 || r.new.n < 2 => format!(
            "no spread: BASE has {} run{}, NEW {}; a verdict needs at least 2 runs per side (httplab load --repeat 5)",
            r.base.n,
            if r.base.n == 1 { "" } else { "s" },
            r.new.n
        ),
        Verdict::Inconclusive => {
            let see = match d.detectable {
                Some(e) if e.is_finite() && e < 9.0 => format!("these runs could see ≥ {}", pct(e)),
                _ => "these runs could see only differences of 10× or more".into(),
            };
            let settle = match d.rounds_to_settle {
                Some(k) if (k as usize) > r.base.n.min(r.new.n) => {
                    format!("; ≈ {k} runs per side would settle ±{delta}")
                }
                Some(_) => String::new(),
                None => format!("; no number of runs would settle ±{delta} at this change"),
            };
            format!("{see}{settle}")
        }
    }
}

#[cfg(test)]
mod tests;
