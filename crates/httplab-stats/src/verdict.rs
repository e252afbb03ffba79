//! Verdicts: which server is better on one metric of one step, in the three outcomes of
//! [`crate::decide`]. A step's servers are ranked by geometric mean, the leader is compared with
//! the runner-up (and must also beat every other server), and the decision is made once the whole
//! study's family of comparisons is known ([`crate::decide`] corrects across it).
//!
//! ```
//! use httplab_stats::{decide, finish, matchup, Better, DesignOptions, Measured, Sample};
//!
//! let event = [13100.0, 12950.0, 13240.0, 13020.0, 13180.0].map(Some); // one value per round
//! let nginx = [10050.0, 9980.0, 10120.0, 9900.0, 10010.0].map(Some);
//! let m = matchup(
//!     "reply_rate",
//!     Better::Higher,
//!     &[
//!         Sample { name: "httplab event", values: &event, client_bound: false },
//!         Sample { name: "nginx", values: &nginx, client_bound: false },
//!     ],
//!     Measured::ByClient,
//!     None,
//! );
//! let opts = DesignOptions::default();
//! let decisions = decide(&[m.comparison.clone().expect("two servers")], &opts);
//! let v = finish(&m, Some(&decisions[0]), &opts);
//! assert_eq!(v.winner.as_deref(), Some("httplab event"));
//! println!("{}", v.note);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::better::Better;
use crate::decide::{
    describe, Comparison, Decision, DesignOptions, LogRatios, Looks, Outcome, Stages,
};

/// Who measured a metric: the client (its figures can be bounds when the client was the limit)
/// or the server's own accounting (CPU, memory: no client bound applies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measured {
    /// Reply rate, latency, throughput: what the load generator saw.
    ByClient,
    /// Server CPU per request, memory: read from the server's accounting.
    ByServer,
}

/// One server's results on one step: one slot per round (slot i of every server is round i;
/// `None` where that round has no value).
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// Server name, unique within a step.
    pub name: &'a str,
    /// One slot per round.
    pub values: &'a [Option<f64>],
    /// Some run of this server was limited by the load generator: for client-measured metrics
    /// its figure is only a bound in the worse direction (throughput at least this, latency at
    /// most this).
    pub client_bound: bool,
}

impl Sample<'_> {
    fn usable(&self) -> Vec<f64> {
        self.values
            .iter()
            .filter_map(|&x| x.filter(|v| v.is_finite() && *v > 0.0))
            .collect()
    }
}

/// Geometric mean of positive values (`None` when there are none).
pub fn geometric_mean(xs: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = xs
        .iter()
        .filter(|x| x.is_finite() && **x > 0.0)
        .map(|x| x.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// A comparison set up for decision: the two servers, the looks, and what holds it back.
#[derive(Clone, Debug, PartialEq)]
pub struct Matchup {
    /// Metric key.
    pub metric: String,
    /// Which direction is better.
    pub better: Better,
    /// Who measured the metric.
    pub measured: Measured,
    /// First server of the comparison (a step's leader, or the server compared with a
    /// baseline).
    pub a: Option<String>,
    /// Second server (the runner-up, or the baseline).
    pub b: Option<String>,
    /// Values per server (usable ones).
    pub n: BTreeMap<String, usize>,
    /// Servers whose figures are only bounds (client-measured metrics only).
    pub client_bound: Vec<String>,
    /// The other servers the leader must also beat, in the order of `Comparison::also`.
    pub others: Vec<String>,
    /// The comparison to decide, when there are two servers with values.
    pub comparison: Option<Comparison>,
    /// Why there is nothing to decide, when `comparison` is `None`.
    pub why_not: Option<String>,
}

/// Ranks the step's servers by geometric mean and sets up the leader against the runner-up
/// (the leader must also beat every other server). `stages`: the rounds were planned in two
/// stages, the first ones forming an interim look.
pub fn matchup(
    metric: &str,
    better: Better,
    samples: &[Sample],
    measured: Measured,
    stages: Option<Stages>,
) -> Matchup {
    let mut ranked: Vec<(&Sample, f64)> = samples
        .iter()
        .filter_map(|s| Some((s, geometric_mean(&s.usable())?)))
        .collect();
    // Stable sort: ties keep the input order, so the ranking is deterministic.
    match better {
        Better::Higher => ranked.sort_by(|x, y| y.1.total_cmp(&x.1)),
        Better::Lower => ranked.sort_by(|x, y| x.1.total_cmp(&y.1)),
    }
    let order: Vec<&Sample> = ranked.into_iter().map(|(s, _)| s).collect();
    let mut m = base(metric, better, samples, measured);
    match order.as_slice() {
        [] => m.why_not = Some(format!("no server has results for {metric}")),
        [only] => {
            m.a = Some(only.name.to_string());
            m.why_not = Some(format!(
                "only one server has results for {metric} ({})",
                only.name
            ));
        }
        [leader, runner, rest @ ..] => {
            let mut c = pair_comparison(leader, runner, better, measured, stages);
            c.also = rest
                .iter()
                .map(|o| looks(leader, o, better, stages))
                .collect();
            if measured == Measured::ByClient {
                let bound: Vec<&str> = rest
                    .iter()
                    .filter(|o| o.client_bound)
                    .map(|o| o.name)
                    .collect();
                if c.no_winner.is_none() && !bound.is_empty() {
                    c.no_winner = Some(bound_text(&bound, better));
                }
            }
            m.a = Some(leader.name.to_string());
            m.b = Some(runner.name.to_string());
            m.others = rest.iter().map(|o| o.name.to_string()).collect();
            m.comparison = Some(c);
        }
    }
    m
}

/// Sets up `a` against `b` as given (a server against a baseline).
pub fn matchup_pair(
    metric: &str,
    better: Better,
    a: &Sample,
    b: &Sample,
    measured: Measured,
    stages: Option<Stages>,
) -> Matchup {
    let mut m = base(metric, better, &[*a, *b], measured);
    m.a = Some(a.name.to_string());
    m.b = Some(b.name.to_string());
    m.comparison = Some(pair_comparison(a, b, better, measured, stages));
    m
}

fn base(metric: &str, better: Better, samples: &[Sample], measured: Measured) -> Matchup {
    Matchup {
        metric: metric.to_string(),
        better,
        measured,
        a: None,
        b: None,
        n: samples
            .iter()
            .map(|s| (s.name.to_string(), s.usable().len()))
            .collect(),
        client_bound: if measured == Measured::ByClient {
            samples
                .iter()
                .filter(|s| s.client_bound && !s.usable().is_empty())
                .map(|s| s.name.to_string())
                .collect()
        } else {
            Vec::new()
        },
        others: Vec::new(),
        comparison: None,
        why_not: None,
    }
}

fn looks(a: &Sample, b: &Sample, better: Better, stages: Option<Stages>) -> Looks {
    let last = LogRatios::paired(a.values, b.values, better);
    let Some((st, w)) = stages.and_then(|s| Some((s, s.first_weight()?))) else {
        return Looks::single(last);
    };
    let len = a.values.len().min(b.values.len());
    let k = st.first.min(len);
    let interim = LogRatios::paired(&a.values[..k], &b.values[..k], better);
    let later = LogRatios::paired(&a.values[k..len], &b.values[k..len], better);
    Looks {
        interim: Some(interim),
        later: (later.n > 0).then_some(later),
        last,
        first_weight: Some(w),
    }
}

fn bound_text(names: &[&str], better: Better) -> String {
    let what = match better {
        Better::Higher => "at least",
        Better::Lower => "at most",
    };
    let (verb, its) = if names.len() == 1 {
        ("was", "its figure is")
    } else {
        ("were", "their figures are")
    };
    format!(
        "{} {verb} client-bound ({its} only a bound: the true value is {what} the figure)",
        join_names(names)
    )
}

/// The bounds that could change the outcome: a bound on `b` (its true value may be better) can
/// undo a's win; a bound on `a` makes its win conservative. Either makes equivalence unsure.
fn pair_comparison(
    a: &Sample,
    b: &Sample,
    better: Better,
    measured: Measured,
    stages: Option<Stages>,
) -> Comparison {
    let mut c = Comparison::new(looks(a, b, better, stages));
    if measured == Measured::ByClient {
        let loser = if c.looks.last.mean >= 0.0 { b } else { a };
        if loser.client_bound {
            c.no_winner = Some(bound_text(&[loser.name], better));
        }
        let bound: Vec<&str> = [a, b]
            .iter()
            .filter(|s| s.client_bound)
            .map(|s| s.name)
            .collect();
        if !bound.is_empty() {
            c.no_equivalence = Some(bound_text(&bound, better));
        }
    }
    c
}

/// "a", "a and b", "a, b and c".
fn join_names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The verdict of one comparison: the matchup and its decision. Serialized into `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The metric compared (e.g. `reply_rate`).
    pub metric: String,
    /// Which direction of the metric is better.
    pub better: Better,
    /// Who measured the metric.
    pub measured: Measured,
    /// Winner, equivalent or inconclusive.
    pub outcome: Outcome,
    /// The winner (set exactly when the outcome is `Winner`).
    pub winner: Option<String>,
    /// First server: the leader of a ranked step, or the server compared with a baseline.
    pub leader: Option<String>,
    /// Second server: the runner-up, or the baseline.
    pub runner_up: Option<String>,
    /// Geometric-mean ratio leader/runner-up in the better direction (> 1: leader better).
    pub ratio: Option<f64>,
    /// The decision's interval of the ratio, at level `ratio_ci_level` (1 − α/m over a family
    /// of m comparisons; two stages combined when the design had an interim look).
    pub ratio_ci: Option<[f64; 2]>,
    /// Confidence level of `ratio_ci` (absent in documents written before it was recorded,
    /// whose `ratio_ci` was a 95 % interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_ci_level: Option<f64>,
    /// Plain 90 % t interval of the ratio over every round (descriptive).
    pub ratio_ci90: Option<[f64; 2]>,
    /// p value of a difference by the rule, adjusted over the family (≤ alpha exactly when
    /// `ratio_ci` leaves 1 out).
    pub p_value: Option<f64>,
    /// p value of equivalence by the rule, adjusted over the family (≤ alpha exactly when
    /// `ratio_ci` lies inside ±δ).
    pub p_equivalent: Option<f64>,
    /// True exactly when there is a winner.
    pub significant: bool,
    /// Values per server.
    pub n: BTreeMap<String, usize>,
    /// Rounds paired between the two servers.
    pub pairs: usize,
    /// Servers whose figures are only bounds (client-measured metrics).
    pub client_bound: Vec<String>,
    /// Smallest effect (ratio − 1) the rule, with these rounds and spread, names a winner for
    /// with 80 % power.
    pub detectable: Option<f64>,
    /// Rounds in one look that would settle the comparison with 80 % power if effect and
    /// spread are as observed.
    pub rounds_to_settle: Option<u32>,
    /// The δ in force.
    pub delta: f64,
    /// One human sentence that says what was found.
    pub note: String,
}

/// The verdict of a matchup given its decision (`None` when it had no comparison).
pub fn finish(m: &Matchup, d: Option<&Decision>, opts: &DesignOptions) -> Verdict {
    let mut v = Verdict {
        metric: m.metric.clone(),
        better: m.better,
        measured: m.measured,
        outcome: Outcome::Inconclusive,
        winner: None,
        leader: m.a.clone(),
        runner_up: m.b.clone(),
        ratio: None,
        ratio_ci: None,
        ratio_ci_level: None,
        ratio_ci90: None,
        p_value: None,
        p_equivalent: None,
        significant: false,
        n: m.n.clone(),
        pairs: 0,
        client_bound: m.client_bound.clone(),
        detectable: None,
        rounds_to_settle: None,
        delta: opts.delta,
        note: String::new(),
    };
    let (Some(d), Some(a), Some(b)) = (d, &m.a, &m.b) else {
        v.note = format!(
            "{}: no comparison",
            m.why_not
                .clone()
                .unwrap_or_else(|| "nothing to compare".into())
        );
        return v;
    };
    v.outcome = d.outcome;
    v.winner = match d.winner {
        Some(crate::decide::Side::A) => Some(a.clone()),
        Some(crate::decide::Side::B) => Some(b.clone()),
        None => None,
    };
    v.significant = v.winner.is_some();
    v.ratio = d.ratio;
    v.ratio_ci = d.ci;
    v.ratio_ci_level = d.ci_level;
    v.ratio_ci90 = d.ci90;
    v.p_value = d.p;
    v.p_equivalent = d.p_equivalent;
    v.pairs = d.n;
    v.detectable = d.detectable;
    v.rounds_to_settle = d.rounds_to_settle;
    v.note = if d.n < 2 {
        format!(
            "too few rounds to compare {a} and {b} on {} ({} paired): no decision",
            m.metric, d.n
        )
    } else {
        let mut note = describe(d, a, b, &m.metric, m.better, opts);
        if let Some(other) = d.blocked_by.and_then(|i| m.others.get(i)) {
            note.push_str(&format!(
                "; {a} is not yet clear of {other} (a winner must beat every server)"
            ));
        }
        note
    };
    v
}
