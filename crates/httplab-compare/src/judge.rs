//! The verdicts: every (cell, metric) present on both sides is one comparison of NEW against
//! BASE, and the whole set is decided as one family by the study's own rules
//! (`httplab_stats::decide_family`: every claim read off one interval per comparison at the
//! family's level, 1 − α/m, so that all of them hold together), on the unpaired Welch interval
//! of the log values
//! (`httplab_stats::LogRatios::unpaired`): runs of two builds share no rounds. Count metrics
//! (the errors) are compared as counts instead, by the exact test of the two sides' rates
//! (`httplab_stats::RateRatio`: errors summed over the runs, calls as the exposure), in the same
//! family; no errors on either side is not a comparison at all.

use std::collections::BTreeSet;

use anyhow::{bail, Result};
use httplab_stats::{
    by_sessions, decide_family, Better, Comparison, CountComparison, Decision, DesignOptions,
    Looks, Measured, Outcome, RateRatio, SessionRatios, SessionUnit, Side as Which,
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
    /// NEW is worse: the decision's interval (at the family's level) is clear of 1.
    Regression,
    /// NEW is better, likewise.
    Improvement,
    /// The decision's interval of NEW/BASE lies inside ±δ.
    Equivalent,
    /// Neither; the row says what the runs could have seen, or why there is no spread.
    Inconclusive,
    /// The metric has values on one side only.
    Missing,
    /// A count metric without a single event on either side (no errors at all): nothing to
    /// judge, never a regression or an improvement.
    #[serde(rename = "no_errors")]
    NoErrors,
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
            Verdict::NoErrors => "no errors",
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
    /// For the errors row (a count metric): errors and calls over every run, the counts
    /// compared (`geomean` is then absent).
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
    /// larger, whichever way is better); for the errors, the ratio of the two error rates,
    /// absent when a side has no error (the ratio would be 0 or infinite).
    pub ratio: Option<f64>,
    /// 95 % Welch interval of `ratio` (errors: the exact interval of the rate ratio, absent
    /// when it is open on one side); descriptive.
    pub ci95: Option<[f64; 2]>,
    /// 90 % interval; descriptive.
    pub ci90: Option<[f64; 2]>,
    /// The interval the verdict reads, at level `ci_level` (1 − α/m over the m comparisons).
    pub ci: Option<[f64; 2]>,
    /// Confidence level of `ci`.
    pub ci_level: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// A regression worse than `--threshold`: it sets the exit code.
    pub beyond_threshold: bool,
    /// p value of a difference, adjusted over every comparison (≤ α exactly when `ci` is clear
    /// of 1).
    pub p_value: Option<f64>,
    /// p value of equivalence (two one-sided tests), adjusted likewise.
    pub p_equivalent: Option<f64>,
    /// Smallest change (ratio − 1) the rule finds with 80 % power with these runs.
    pub detectable: Option<f64>,
    /// Runs per side that would settle ±δ with 80 % power if the data stay as they are
    /// (sessions per side where sessions are the unit).
    pub runs_to_settle: Option<u32>,
    /// Sessions (result files) with a value, BASE's and NEW's; a comparison with two or more
    /// on a side compares session means.
    pub sessions: [usize; 2],
    /// The spread between sessions (relative, one standard deviation of a session's level),
    /// estimated where a side has two sessions or more: no change smaller is called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_spread: Option<f64>,
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
    /// Comparisons decided together (the family the level of every interval is set by).
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

/// How much worse NEW is (0.18 = 18 % worse; negative: better). Errors on NEW's side only are
/// infinitely worse, on BASE's side only 100 % better.
pub fn worsening(r: &Row) -> f64 {
    match (r.ratio, r.better) {
        (Some(x), Better::Higher) => 1.0 / x - 1.0,
        (Some(x), Better::Lower) => x - 1.0,
        (None, _) => match (r.base.errors_of_calls, r.new.errors_of_calls) {
            (Some([0, _]), Some([k, _])) if k > 0 => f64::INFINITY,
            (Some([k, _]), Some([0, _])) if k > 0 => -1.0,
            _ => f64::NEG_INFINITY,
        },
    }
}

fn figures(c: &CellValues, m: &Metric) -> SideFigures {
    if let Some(k) = c.counts.get(m) {
        return SideFigures {
            n: k.runs,
            geomean: None,
            client_bound_runs: c.client_bound_runs,
            errors_of_calls: Some([k.events, k.exposure]),
        };
    }
    let usable: Vec<f64> = c
        .values_of(m)
        .into_iter()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    SideFigures {
        n: usable.len(),
        geomean: httplab_stats::geometric_mean(&usable),
        client_bound_runs: c.client_bound_runs,
        errors_of_calls: None,
    }
}

/// What holds a verdict back for a client-measured metric: a client-bound run on BASE's side
/// and on NEW's (the study's rule: a bound on the loser holds a win back, a bound on either
/// side holds equivalence back).
fn bounds(base: &CellValues, new: &CellValues, m: &Metric) -> (Option<String>, Option<String>) {
    if m.measured() != Measured::ByClient {
        return (None, None);
    }
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
    (bound("BASE", base), bound("NEW", new))
}

/// The comparison of NEW (side A) against BASE (side B), with client bounds holding back what
/// they could change.
fn comparison(base: &CellValues, new: &CellValues, m: &Metric) -> (Comparison, SessionRatios) {
    // A result file is one session; with several on a side, sessions are the unit.
    let s = by_sessions(&new.by_session(m), &base.by_session(m), m.better());
    let mut c = Comparison::new(Looks::single(s.ratios));
    // Values on a grid (a sweep's highest sustained rate) get the spread the grid allows.
    if let Some(step) = base
        .resolution
        .into_iter()
        .chain(new.resolution)
        .reduce(f64::max)
    {
        c = c.with_resolution(step);
    }
    let (b, n) = bounds(base, new, m);
    c.no_winner = if s.ratios.mean >= 0.0 {
        b.clone()
    } else {
        n.clone()
    };
    c.no_equivalence = b.or(n);
    (c, s)
}

/// How one (cell, metric) is judged.
#[derive(Clone, Debug)]
enum Test {
    /// Values per run: the unpaired ratio of geometric means (of session means where a side
    /// has several sessions).
    Ratio(Box<Comparison>, SessionRatios),
    /// A count metric: NEW's errors (side A) against BASE's, as counts.
    Counts(CountComparison),
    /// A count metric without an event on either side: not a comparison.
    NoEvents,
}

/// The test of a metric both sides have.
fn test(base: &CellValues, new: &CellValues, m: &Metric) -> Test {
    let (Some(b), Some(n)) = (base.counts.get(m), new.counts.get(m)) else {
        let (c, s) = comparison(base, new, m);
        return Test::Ratio(Box::new(c), s);
    };
    if b.events == 0 && n.events == 0 {
        return Test::NoEvents;
    }
    let counts = RateRatio::new(n.events, n.exposure as f64, b.events, b.exposure as f64);
    let mut c = CountComparison::new(counts);
    let (lb, ln) = bounds(base, new, m);
    // NEW is better with fewer errors per call (a rate ratio below 1).
    let new_better = counts.ratio().is_some_and(|x| x <= 1.0);
    c.no_winner = if new_better { lb.clone() } else { ln.clone() };
    c.no_equivalence = lb.or(ln);
    Test::Counts(c)
}

/// A (cell, metric) to report, with its test when both sides have the metric.
type Pair = (String, Metric, Option<Test>);

/// Every (cell, metric) to report, with its test when both sides have the metric, and notes
/// on cells one side lacks.
fn pairs(base: &Side, new: &Side, opts: &Options) -> (Vec<Pair>, Vec<String>) {
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
    let mut pairs = Vec::new();
    for cell in &base.order {
        let (Some(b), Some(n)) = (base.cells.get(cell), new.cells.get(cell)) else {
            continue;
        };
        let metrics: BTreeSet<&Metric> = b.metrics().chain(n.metrics()).collect();
        for m in metrics {
            if !opts.metrics.is_empty() && !opts.metrics.contains(m) {
                continue;
            }
            let both = b.has(m) && n.has(m);
            pairs.push((cell.clone(), m.clone(), both.then(|| test(b, n, m))));
        }
    }
    (pairs, notes)
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
    let (pairs, mut notes) = pairs(base, new, opts);
    if base.kind == Kind::Run && base.shapes != new.shapes {
        notes.push(format!(
            "the sides ran different loads (BASE: {}; NEW: {}): their figures may differ for that reason alone",
            base.shapes.join(" / "),
            new.shapes.join(" / ")
        ));
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
    let mut ratios = Vec::new();
    let mut counts = Vec::new();
    for (_, _, t) in &pairs {
        match t {
            Some(Test::Ratio(c, _)) => ratios.push((**c).clone()),
            Some(Test::Counts(c)) => counts.push(c.clone()),
            Some(Test::NoEvents) | None => {}
        }
    }
    let design = DesignOptions {
        alpha: opts.alpha,
        delta: opts.delta,
        ..DesignOptions::default()
    };
    let (by_ratio, by_count) = decide_family(&ratios, &counts, &design);
    let (mut by_ratio, mut by_count) = (by_ratio.into_iter(), by_count.into_iter());
    let rows = pairs
        .iter()
        .map(|(cell, m, t)| {
            let d = match t {
                Some(Test::Ratio(..)) => by_ratio.next(),
                Some(Test::Counts(_)) => by_count.next(),
                Some(Test::NoEvents) | None => None,
            };
            let none = matches!(t, Some(Test::NoEvents));
            let (b, n) = (&base.cells[cell], &new.cells[cell]);
            let sessions = match t {
                Some(Test::Ratio(_, s)) => Some(s),
                _ => None,
            };
            let mut r = row(cell, m, (b, n), (d.as_ref(), sessions), none, opts);
            // The plain 95 % interval, descriptive, beside the decision's.
            let plain = match t {
                Some(Test::Ratio(c, _)) => c.looks.last.interval(0.95).map(|(a, b)| [a, b]),
                Some(Test::Counts(c)) => c.counts.interval(0.95).map(|(a, b)| [1.0 / b, 1.0 / a]),
                _ => None,
            };
            let finite = |x: &f64| x.is_finite() && *x > 0.0;
            r.ci95 = raw_ci(m.better(), plain).filter(|c| c.iter().all(finite));
            r
        })
        .collect::<Vec<Row>>();
    notes.extend(session_notes(&rows));
    Ok(Judgement {
        kind: base.kind,
        rows,
        family: ratios.len() + counts.len(),
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
    (b, n): (&CellValues, &CellValues),
    (d, sessions): (Option<&Decision>, Option<&SessionRatios>),
    no_events: bool,
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
        ci: None,
        ci_level: None,
        verdict: Verdict::Missing,
        beyond_threshold: false,
        p_value: None,
        p_equivalent: None,
        detectable: None,
        runs_to_settle: None,
        sessions: sessions.map_or([0, 0], |s| [s.sessions[1], s.sessions[0]]),
        session_spread: sessions.and_then(|s| s.spread).map(f64::exp_m1),
        note: String::new(),
    };
    if no_events {
        r.verdict = Verdict::NoErrors;
        r.note = "no errors on either side: nothing to judge".into();
        return r;
    }
    let Some(d) = d else {
        let side = if r.base.n == 0 { "NEW" } else { "BASE" };
        r.note = format!("only {side} has this metric");
        return r;
    };
    // A rate ratio of 0 or ∞ (errors on one side only) is told as counts, not as a ratio.
    let finite = |x: &f64| x.is_finite() && *x > 0.0;
    r.ratio = d.ratio.map(|x| raw(better, x)).filter(finite);
    r.ci = raw_ci(better, d.ci).filter(|c| c.iter().all(finite));
    r.ci_level = d.ci_level;
    r.ci90 = raw_ci(better, d.ci90).filter(|c| c.iter().all(finite));
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
    if let Some(spread) = within_spread(d, sessions) {
        r.verdict = Verdict::Inconclusive;
        r.beyond_threshold = false;
        r.note = format!(
            "a change within the spread between sessions (±{}): not told apart from a session's own",
            pct(spread)
        );
        return r;
    }
    r.beyond_threshold = r.verdict == Verdict::Regression && worsening(&r) > opts.threshold;
    r.note = note(&r, d, opts);
    r
}

/// A winner whose interval does not clear the spread between sessions (where it is known):
/// a change that small could be one session's level, so it is not called. Returns the
/// spread (relative).
fn within_spread(d: &Decision, sessions: Option<&SessionRatios>) -> Option<f64> {
    let sigma = sessions
        .filter(|s| s.unit == SessionUnit::Sessions)?
        .spread?;
    let [lo, hi] = d.ci?;
    let near = match d.winner? {
        Which::A => lo.ln(),
        Which::B => -hi.ln(),
    };
    (d.outcome == Outcome::Winner && near <= sigma).then(|| sigma.exp_m1())
}

/// A confidence level: "95 %", "97.5 %".
pub fn level_text(level: f64) -> String {
    let s = format!("{:.2}", level * 100.0);
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
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

/// Whether a row compared session means (some side has two sessions or more).
fn by_sessions_unit(r: &Row) -> bool {
    !r.metric.is_count() && r.sessions.iter().any(|&k| k >= 2)
}

/// What the reader must know about the sessions behind the verdicts: one session a side
/// (the spread between sessions unmeasured), or how many and how far apart they were.
fn session_notes(rows: &[Row]) -> Vec<String> {
    let ratio_rows: Vec<&Row> = rows
        .iter()
        .filter(|r| !r.metric.is_count() && r.sessions[0] > 0 && r.sessions[1] > 0)
        .collect();
    let Some(first) = ratio_rows.first() else {
        return Vec::new();
    };
    if ratio_rows.iter().all(|r| r.sessions == [1, 1]) {
        let see = ratio_rows
            .iter()
            .filter_map(|r| r.detectable)
            .filter(|e| e.is_finite())
            .reduce(f64::min);
        return vec![format!(
            "BASE and NEW are one session each (one result file a side): the intervals hold the spread of runs within a session, not the spread between sessions, which on a shared machine is often larger, so a difference between the two sessions reads as the builds'{}. To see less, give BASE several sessions (result files of separate runs, e.g. --save-baseline NAME a.json b.json c.json), or run both builds in one session (--base-cmd, --new-cmd)",
            see.map_or(String::new(), |e| format!(
                "; within that, these runs could see changes of ≥ {}",
                pct(e)
            ))
        )];
    }
    let spread = ratio_rows
        .iter()
        .filter_map(|r| r.session_spread)
        .reduce(f64::max);
    vec![format!(
        "compared by session (a result file is one session): BASE {} session{}, NEW {}; the levels of sessions differ by about {} (largest of the metrics' estimates), and no change within that spread is called",
        first.sessions[0],
        if first.sessions[0] == 1 { "" } else { "s" },
        first.sessions[1],
        spread.map_or_else(|| "an unknown amount".to_string(), pct)
    )]
}

fn note(r: &Row, d: &Decision, opts: &Options) -> String {
    let delta = pct(opts.delta);
    if let (Verdict::Inconclusive, Some(why)) = (r.verdict, &d.held_back) {
        return format!("held back: {why}");
    }
    let counts = r.metric.is_count();
    let test = if counts {
        "exact test on the counts, adjusted over the comparisons"
    } else {
        "adjusted over the comparisons"
    };
    let level = level_text(d.ci_level.unwrap_or(1.0 - opts.alpha));
    // "p = 0.03", "p < 0.001".
    let p = d.p.map(|p| {
        let s = httplab_stats::format_p(p);
        if s.starts_with('<') {
            format!("p {s}")
        } else {
            format!("p = {s}")
        }
    });
    match r.verdict {
        Verdict::Regression if !r.beyond_threshold => format!(
            "significantly worse, but not beyond the threshold of {}",
            pct(opts.threshold)
        ),
        Verdict::Regression | Verdict::Improvement => match p {
            Some(p) => format!("{p} ({test})"),
            None => String::new(),
        },
        Verdict::Equivalent => format!("{level} CI inside ±{delta}"),
        Verdict::Missing | Verdict::NoErrors => String::new(),
        Verdict::Inconclusive if counts => match (p, d.p.is_some_and(|x| x <= opts.alpha)) {
            (Some(p), true) => format!("a change smaller than δ = {delta} ({p}, {test})"),
            (Some(p), false) => format!("not a significant change: {p} ({test})"),
            (None, _) => String::new(),
        },
        Verdict::Inconclusive if !by_sessions_unit(r) && (r.base.n < 2 || r.new.n < 2) => format!(
            "no spread: BASE has {} run{}, NEW {}; a verdict needs at least 2 runs per side (httplab load --repeat 5)",
            r.base.n,
            if r.base.n == 1 { "" } else { "s" },
            r.new.n
        ),
        Verdict::Inconclusive => {
            let unit = if by_sessions_unit(r) {
                "sessions"
            } else {
                "runs"
            };
            let see = match d.detectable {
                Some(e) if e.is_finite() && e < 9.0 => format!("these {unit} could see ≥ {}", pct(e)),
                _ => format!("these {unit} could see only differences of 10× or more"),
            };
            let have = if by_sessions_unit(r) {
                r.sessions[0].min(r.sessions[1])
            } else {
                r.base.n.min(r.new.n)
            };
            let settle = match d.rounds_to_settle {
                Some(k) if (k as usize) > have => {
                    format!("; ≈ {k} {unit} per side would settle ±{delta}")
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
