//! The verdict of one workload: which server is best, and whether that is significant.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::format::{format_p, format_sig3};
use crate::{bootstrap_ratio_ci, holm_adjust, mean, paired_t_test, welch_t_test, TTest};

/// Which direction of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latency, CPU per request).
    Lower,
    /// Larger is better (reply rate, throughput).
    Higher,
}

impl Better {
    fn word(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

/// One server's results for one workload: one value per round, in round order.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// Server name; names are expected to be unique within one verdict.
    pub name: &'a str,
    /// One value per round (round i of every server is the same round). Non-finite values are
    /// dropped (and the sample is then no longer paired with any other).
    pub values: &'a [f64],
    /// The load generator, not the server, was the bottleneck: the figure is only a bound in the
    /// worse direction (throughput at least this, latency at most this).
    pub client_bound: bool,
}

/// The bootstrap seed of [`VerdictOptions::default`].
pub const DEFAULT_SEED: u64 = 0x5eed;

/// Options of [`verdict`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictOptions {
    /// Significance level (default 0.05). The ratio interval has confidence 1 - alpha.
    pub alpha: f64,
    /// Bootstrap resamples for the ratio interval (default 10 000).
    pub resamples: usize,
    /// Bootstrap seed: same input and seed give the same verdict.
    pub seed: u64,
    /// Smallest relative effect that can make a winner: ratio - 1 >= min_effect (default 0.0;
    /// 0.05 asks for at least 5 %).
    pub min_effect: f64,
}

impl Default for VerdictOptions {
    fn default() -> Self {
        VerdictOptions {
            alpha: 0.05,
            resamples: 10_000,
            seed: DEFAULT_SEED,
            min_effect: 0.0,
        }
    }
}

/// The verdict of one workload (step). Serialized into `results.json` as is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The metric compared (e.g. `reply_rate`).
    pub metric: String,
    /// Which direction of the metric is better.
    pub better: Better,
    /// The leader when its lead is significant; `None` otherwise. Set exactly when `significant`.
    pub winner: Option<String>,
    /// Best mean in the `better` direction (set whenever at least one server has a value).
    pub leader: Option<String>,
    /// Second-best mean.
    pub runner_up: Option<String>,
    /// How many times better the leader is than the runner-up (>= 1). Higher: mean(leader) /
    /// mean(runner-up); Lower: mean(runner-up) / mean(leader). `None` when undefined.
    pub ratio: Option<f64>,
    /// Bootstrap interval of `ratio` at confidence 1 - alpha (95 % by default).
    pub ratio_ci: Option<[f64; 2]>,
    /// p value of leader vs runner-up, Holm-adjusted over all leader-vs-other comparisons.
    pub p_value: Option<f64>,
    /// Holm-adjusted p < alpha, the ratio interval excludes 1, ratio - 1 >= min_effect, and no
    /// server with results was client-bound.
    pub significant: bool,
    /// Number of (finite) values per server, 0 for servers without results.
    pub n: BTreeMap<String, usize>,
    /// Servers with results whose figure is only a bound (client-bound runs).
    pub client_bound: Vec<String>,
    /// One human sentence that says what was found.
    pub note: String,
}

struct Entry<'a> {
    name: &'a str,
    values: Vec<f64>,
    /// Some value was not finite and was dropped: rounds no longer line up.
    dropped: bool,
    mean: f64,
}

/// Compares two servers for the verdict. On log values (a ratio scale) when every value is
/// positive, else on raw values. Paired when both have the same number of values from the same
/// rounds; Welch otherwise. Returns the test and whether it was paired.
fn compare(a: &Entry, b: &Entry) -> Option<(TTest, bool)> {
    let paired = a.values.len() == b.values.len() && !a.dropped && !b.dropped;
    let positive = a.values.iter().chain(&b.values).all(|&x| x > 0.0);
    let (la, lb): (Vec<f64>, Vec<f64>) = if positive {
        (
            a.values.iter().map(|x| x.ln()).collect(),
            b.values.iter().map(|x| x.ln()).collect(),
        )
    } else {
        (a.values.clone(), b.values.clone())
    };
    let test = if paired {
        paired_t_test(&la, &lb)?
    } else {
        welch_t_test(&la, &lb)?
    };
    Some((test, paired))
}

/// "a", "a and b", "a, b and c".
fn join_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn p_clause(p: f64) -> String {
    let s = format_p(p);
    if s.starts_with('<') {
        format!("p {s}")
    } else {
        format!("p = {s}")
    }
}

fn percent(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0} %")
    } else {
        format!("{} %", format_sig3(pct))
    }
}

/// Decides one workload. See the crate README for the rules; in short: rank by mean, test the
/// leader against every other server on log values (paired t test when rounds line up, Welch
/// otherwise), Holm-adjust, bootstrap the leader/runner-up ratio, and name a winner only when the
/// adjusted p is below alpha, the ratio interval excludes 1, the effect reaches `min_effect`,
/// and no server was client-bound.
pub fn verdict(metric: &str, better: Better, samples: &[Sample], opts: &VerdictOptions) -> Verdict {
    let mut n = BTreeMap::new();
    let mut entries: Vec<Entry> = Vec::new();
    let mut client_bound = Vec::new();
    for s in samples {
        let values: Vec<f64> = s.values.iter().copied().filter(|x| x.is_finite()).collect();
        n.insert(s.name.to_string(), values.len());
        if values.is_empty() {
            continue;
        }
        if s.client_bound {
            client_bound.push(s.name.to_string());
        }
        entries.push(Entry {
            name: s.name,
            dropped: values.len() != s.values.len(),
            mean: mean(&values),
            values,
        });
    }
    // Stable sort: equal means keep the input order, so the verdict is deterministic.
    match better {
        Better::Higher => entries.sort_by(|a, b| b.mean.total_cmp(&a.mean)),
        Better::Lower => entries.sort_by(|a, b| a.mean.total_cmp(&b.mean)),
    }

    let mut v = Verdict {
        metric: metric.to_string(),
        better,
        winner: None,
        leader: entries.first().map(|e| e.name.to_string()),
        runner_up: entries.get(1).map(|e| e.name.to_string()),
        ratio: None,
        ratio_ci: None,
        p_value: None,
        significant: false,
        n,
        client_bound,
        note: String::new(),
    };

    let (leader, runner) = match entries.as_slice() {
        [] => {
            v.note = format!("no server has results for {metric}: no winner");
            return v;
        }
        [only] => {
            v.note = format!(
                "only one server has results for {metric} ({}): no comparison",
                only.name
            );
            return v;
        }
        [leader, runner, ..] => (leader, runner),
    };

    let ratio = match better {
        Better::Higher => leader.mean / runner.mean,
        Better::Lower => runner.mean / leader.mean,
    };
    v.ratio = ratio.is_finite().then_some(ratio);
    let n_pair = format!("n = {} / {}", leader.values.len(), runner.values.len());
    let level = 1.0 - opts.alpha;

    if !(opts.alpha > 0.0 && opts.alpha < 1.0) || opts.resamples == 0 {
        v.note = format!(
            "invalid verdict options (alpha = {}, resamples = {}): no winner",
            opts.alpha, opts.resamples
        );
        return v;
    }

    let testable = entries.iter().filter(|e| e.values.len() >= 2).count();
    if leader.values.len() < 2 || runner.values.len() < 2 || testable < 2 {
        let few: Vec<String> = entries
            .iter()
            .filter(|e| e.values.len() < 2)
            .map(|e| e.name.to_string())
            .collect();
        v.note = format!(
            "too few values to compare {} and {} on {metric} ({n_pair}; {} only one): no winner",
            leader.name,
            runner.name,
            join_names(&few) + if few.len() == 1 { " has" } else { " have" },
        );
        return v;
    }

    // Leader against every other server with at least two values; Holm over that family.
    let others: Vec<&Entry> = entries[1..]
        .iter()
        .filter(|e| e.values.len() >= 2)
        .collect();
    let mut raw_p = Vec::with_capacity(others.len());
    let mut runner_paired = false;
    for (i, other) in others.iter().enumerate() {
        match compare(leader, other) {
            Some((test, paired)) => {
                raw_p.push(test.p);
                if i == 0 {
                    runner_paired = paired;
                }
            }
            None => raw_p.push(1.0),
        }
    }
    let adjusted = holm_adjust(&raw_p);
    // others[0] is the runner-up: it has at least two values and ranks first among the rest.
    let p = adjusted[0];
    v.p_value = Some(p);

    let (num, den) = match better {
        Better::Higher => (&leader.values, &runner.values),
        Better::Lower => (&runner.values, &leader.values),
    };
    let ci = if v.ratio.is_some() {
        bootstrap_ratio_ci(num, den, runner_paired, level, opts.resamples, opts.seed)
    } else {
        None
    };
    v.ratio_ci = ci.map(|(lo, hi)| [lo, hi]);

    let ci_text = match ci {
        Some((lo, hi)) => format!(
            "{} CI {}–{}",
            percent(level),
            format_sig3(lo),
            format_sig3(hi)
        ),
        None => format!("{} CI unavailable", percent(level)),
    };
    let (ratio_text, p_text) = (format_sig3(ratio), p_clause(p));
    // After a colon: "ratio 1.31 (95 % CI 1.22–1.40), p = 0.003, n = 5 / 5".
    let stats = format!("ratio {ratio_text} ({ci_text}), {p_text}, {n_pair}");
    // Inside parentheses: "ratio 1.01, 95 % CI 0.97–1.05, p = 0.41, n = 5 / 5".
    let stats_inner = format!("ratio {ratio_text}, {ci_text}, {p_text}, {n_pair}");

    let Some(ratio) = v.ratio else {
        v.note = format!(
            "{} leads {} on {metric} but the ratio is undefined (a mean of zero): no winner",
            leader.name, runner.name
        );
        return v;
    };
    let p_ok = p < opts.alpha;
    let ci_ok = ci.is_some_and(|(lo, _)| lo > 1.0);
    let effect_ok = ratio - 1.0 >= opts.min_effect;

    if !v.client_bound.is_empty() {
        let (verb, their) = if v.client_bound.len() == 1 {
            ("was", "its figure is a bound")
        } else {
            ("were", "their figures are bounds")
        };
        v.note = format!(
            "{} {verb} client-bound ({their}: the run measured the client): no winner \
             ({} leads {} on {metric}, {stats_inner})",
            join_names(&v.client_bound),
            leader.name,
            runner.name
        );
        return v;
    }

    if p_ok && ci_ok && effect_ok {
        v.significant = true;
        v.winner = Some(leader.name.to_string());
        v.note = format!(
            "{} beats {} on {metric} ({} is better): {stats}",
            leader.name,
            runner.name,
            better.word()
        );
    } else if p_ok && ci_ok {
        v.note = format!(
            "{} leads {} on {metric} by less than the minimum effect of {} ({stats_inner}): no winner",
            leader.name,
            runner.name,
            percent(opts.min_effect)
        );
    } else {
        v.note = format!(
            "no significant difference between {} and {} on {metric} ({stats_inner})",
            leader.name, runner.name
        );
    }
    v
}
