//! Decisions on ratios: every comparison of two servers is a ratio with an interval on the
//! paired per-round log differences (Yuen's trimmed t: `trim.rs`), and ends in one of three
//! outcomes — a winner, equivalent, or inconclusive with the effect this run could have seen.
//!
//! Every claim is read off one interval per comparison at the level of the whole family
//! (1 − α/m for m comparisons, Bonferroni), so the chance that any claim of a study is false is
//! at most α. With an interim look the design has two stages, combined by the inverse-normal
//! method with weights fixed in advance, stage 2 judged on its new rounds only, so any rule for
//! handing out the extra rounds keeps the error rate (`rule.rs`). The detectable effect and the
//! rounds to settle are computed from the same rule. `docs/statistics.md` explains the choices;
//! the error rates and the promised power are checked by simulation in `tests/it/simulation.rs`.

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use crate::better::Better;
use crate::counts::RateRatio;
use crate::format::{format_p, format_sig3};
use crate::rule::{solve_effect, Rule, Stage};
use crate::students_t;

/// What a comparison decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// One side is better: the decision's interval (at the family's level) leaves 1 out.
    Winner,
    /// The decision's interval lies inside [1/(1+δ), 1+δ]: any difference is smaller than δ.
    Equivalent,
    /// Neither: this run cannot tell (see the detectable effect and the rounds it would take).
    Inconclusive,
}

impl Outcome {
    /// The word used in reports ("winner", "equivalent", "inconclusive").
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Winner => "winner",
            Outcome::Equivalent => "equivalent",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// Which side of a comparison won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The first server of the comparison.
    A,
    /// The second.
    B,
}

/// Options of the decision procedure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignOptions {
    /// Familywise error rate over every claim of a family, winners and equivalences (0.05).
    pub alpha: f64,
    /// Smallest effect of interest δ (default 0.05 = 5 %): equivalence means within
    /// [1/(1+δ), 1+δ].
    pub delta: f64,
    /// Power at which the detectable effect is quoted (default 0.8).
    pub power: f64,
    /// Share of each comparison's level that stage 1 alone may spend, when the design has two
    /// stages (default 0.1; the combination of both stages spends the rest).
    pub interim_share: f64,
}

impl Default for DesignOptions {
    fn default() -> Self {
        DesignOptions {
            alpha: 0.05,
            delta: 0.05,
            power: 0.8,
            interim_share: 0.1,
        }
    }
}

impl DesignOptions {
    /// True when every option is in its range.
    pub fn valid(&self) -> bool {
        self.alpha > 0.0
            && self.alpha < 0.5
            && self.delta > 0.0
            && self.delta.is_finite()
            && self.power > 0.0
            && self.power < 1.0
            && self.interim_share > 0.0
            && self.interim_share < 1.0
    }
}

/// Paired per-round log ratios of two servers at one look: d_i = ln(a_i / b_i) oriented so that
/// a positive value means `a` was better in round i, summarised by Yuen's trimmed t
/// (`trim.rs`): k = ⌊g·n⌋ rounds trimmed from each end ([`crate::TRIM`]), the trimmed mean as
/// the estimate, the winsorized spread for its standard error, n − 2k − 1 degrees of freedom.
/// With k = 0 (fewer than 1/g rounds) that is the plain paired t.
///
/// Or, built by [`LogRatios::unpaired`], the difference of the mean logs of two independent
/// samples (runs of two builds that were not measured in shared rounds): then `unpaired` holds
/// each side's count and spread, the standard error and degrees of freedom are Welch's, and
/// every decision below (interval, test, two one-sided tests, detectable effect, runs to
/// settle) reads them instead of the paired ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogRatios {
    /// Rounds where both servers have a positive finite value (unpaired: the smaller side's
    /// count, so that "n < 2" means "a side without a spread estimate").
    pub n: usize,
    /// The estimate of the log ratio: the trimmed mean of the log differences (the plain mean
    /// when `trimmed` is 0), the log of the trimmed geometric-mean ratio. Unpaired: the
    /// difference of the two sides' mean logs.
    pub mean: f64,
    /// The per-round spread the standard error is made of, se = sd/√n: the sample standard
    /// deviation of the winsorized log differences over 1 − 2k/n (the plain sample standard
    /// deviation when `trimmed` is 0; 0 when n < 2). Unpaired: the spread of one run's log
    /// against one run of the other side, √(s_a² + s_b²).
    pub sd: f64,
    /// Rounds trimmed from each end, k (paired; 0: the plain t, and always 0 unpaired). The t
    /// quantities have n − 2k − 1 degrees of freedom.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trimmed: usize,
    /// The two independent samples, for an unpaired comparison (`None`: paired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpaired: Option<Unpaired>,
}

/// Each side of an unpaired comparison ([`LogRatios::unpaired`]): count and sample standard
/// deviation of its log values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Unpaired {
    /// Values of side a.
    pub n_a: usize,
    /// Values of side b.
    pub n_b: usize,
    /// Standard deviation of ln(a) (0 when n_a < 2).
    pub sd_a: f64,
    /// Standard deviation of ln(b) (0 when n_b < 2).
    pub sd_b: f64,
    /// Degrees of freedom when they are not Welch–Satterthwaite's: both sides' spread is one
    /// pooled estimate (`crate::sessions`, a side of one session), with its own degrees of
    /// freedom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
}

impl Unpaired {
    fn var_means(&self) -> (f64, f64) {
        (
            self.sd_a * self.sd_a / self.n_a.max(1) as f64,
            self.sd_b * self.sd_b / self.n_b.max(1) as f64,
        )
    }

    /// Welch–Satterthwaite degrees of freedom; n_a + n_b − 2 when neither side has a spread.
    fn df(&self) -> f64 {
        if let Some(df) = self.df {
            return df;
        }
        let (qa, qb) = self.var_means();
        let se2 = qa + qb;
        if se2 == 0.0 {
            return (self.n_a + self.n_b) as f64 - 2.0;
        }
        let na1 = (self.n_a as f64 - 1.0).max(1.0);
        let nb1 = (self.n_b as f64 - 1.0).max(1.0);
        se2 * se2 / (qa * qa / na1 + qb * qb / nb1)
    }
}

fn is_zero(k: &usize) -> bool {
    *k == 0
}

fn usable(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite() && *v > 0.0)
}

impl LogRatios {
    /// Pairs `a` and `b` by round index (slot i of both is round i); a round where either value
    /// is missing, not finite or not positive is left out, never shifted.
    pub fn paired(a: &[Option<f64>], b: &[Option<f64>], better: Better) -> LogRatios {
        let d: Vec<f64> = a
            .iter()
            .zip(b)
            .filter_map(|(&x, &y)| {
                let (x, y) = (usable(x)?, usable(y)?);
                Some(match better {
                    Better::Higher => x.ln() - y.ln(),
                    Better::Lower => y.ln() - x.ln(),
                })
            })
            .collect();
        LogRatios::of_differences(&d)
    }

    /// From log differences directly (values that are not finite are left out): Yuen's trimmed
    /// statistic of them.
    pub fn of_differences(d: &[f64]) -> LogRatios {
        let d: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
        let Some(t) = crate::trim::trimmed(&d) else {
            return LogRatios::default();
        };
        LogRatios {
            n: d.len(),
            mean: t.mean,
            sd: t.spread,
            trimmed: t.k,
            unpaired: None,
        }
    }

    /// Two independent samples (no rounds shared between them): the log of the ratio of their
    /// geometric means, ln(GM(a) / GM(b)), oriented so that positive means `a` is better, with
    /// Welch's standard error √(s_a²/n_a + s_b²/n_b) and Welch–Satterthwaite degrees of freedom
    /// on the log values. Values that are missing, not finite or not positive are left out.
    pub fn unpaired(a: &[f64], b: &[f64], better: Better) -> LogRatios {
        let (la, lb) = (crate::logs(a), crate::logs(b));
        let spread = |l: &[f64], m: f64| {
            if l.len() >= 2 {
                crate::sample_variance(l, m).sqrt()
            } else {
                0.0
            }
        };
        let side = Unpaired {
            n_a: la.len(),
            n_b: lb.len(),
            sd_a: la.first().map_or(0.0, |_| spread(&la, crate::mean(&la))),
            sd_b: lb.first().map_or(0.0, |_| spread(&lb, crate::mean(&lb))),
            df: None,
        };
        if la.is_empty() || lb.is_empty() {
            return LogRatios {
                unpaired: Some(side),
                ..LogRatios::default()
            };
        }
        let diff = crate::mean(&la) - crate::mean(&lb);
        LogRatios {
            n: la.len().min(lb.len()),
            mean: match better {
                Better::Higher => diff,
                Better::Lower => -diff,
            },
            sd: (side.sd_a * side.sd_a + side.sd_b * side.sd_b).sqrt(),
            trimmed: 0,
            unpaired: Some(side),
        }
    }

    /// Degrees of freedom of the t quantities: n − 2k − 1 paired (k rounds trimmed from each
    /// end; n − 1 without trimming), Welch–Satterthwaite unpaired.
    pub fn df(&self) -> f64 {
        match &self.unpaired {
            Some(u) => u.df(),
            None => self.n as f64 - 2.0 * self.trimmed as f64 - 1.0,
        }
    }

    /// The ratio (a over b, > 1 when a is better): exp(`mean`), paired the trimmed
    /// geometric-mean ratio (the geometric-mean ratio of the rounds left after trimming),
    /// unpaired the ratio of the two geometric means; `None` without pairs.
    pub fn ratio(&self) -> Option<f64> {
        (self.n >= 1).then(|| self.mean.exp())
    }

    /// Standard error of `mean`: sd/√n paired (Yuen's s_w / ((1 − 2k/n)·√n); s/√n without
    /// trimming), √(s_a²/n_a + s_b²/n_b) unpaired.
    pub fn se(&self) -> f64 {
        match &self.unpaired {
            Some(u) => {
                let (qa, qb) = u.var_means();
                (qa + qb).sqrt()
            }
            None => self.sd / (self.n as f64).sqrt(),
        }
    }

    /// Two-sided t interval of the ratio at confidence `level` (paired: Yuen's trimmed t);
    /// `None` when n < 2.
    pub fn interval(&self, level: f64) -> Option<(f64, f64)> {
        if self.n < 2 {
            return None;
        }
        let t = crate::t_critical(self.df(), level)?;
        let h = t * self.se();
        Some(((self.mean - h).exp(), (self.mean + h).exp()))
    }

    /// Two-sided p value of "the ratio is 1" (paired: Yuen's trimmed t test on the log
    /// differences, the paired t test when nothing is trimmed).
    pub fn p_two_sided(&self) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        // The paired (or Welch) t test's own rule (`ttest.rs`), zero-spread convention included.
        crate::ttest::from_diff(self.mean, self.se(), self.df()).map(|t| t.p)
    }

    /// p value of "the ratio lies inside [1/(1+δ), 1+δ]" by two one-sided tests: the larger of
    /// the two one-sided p values (small = equivalent).
    pub fn p_equivalent(&self, delta: f64) -> Option<f64> {
        if self.n < 2 || delta.is_nan() || delta <= 0.0 {
            return None;
        }
        let bound = (1.0 + delta).ln();
        let se = self.se();
        if se == 0.0 {
            return Some(if self.mean.abs() < bound { 0.0 } else { 1.0 });
        }
        let dist = students_t(self.df())?;
        // H0 lower: mean <= -bound; H0 upper: mean >= bound.
        let p_lower = dist.sf((self.mean + bound) / se);
        let p_upper = dist.cdf((self.mean - bound) / se);
        Some(p_lower.max(p_upper).min(1.0))
    }

    /// The smallest relative effect (ratio - 1) a two-sided test at `alpha` finds with
    /// probability `power` with this many rounds and this spread: [`detectable_effect`]'s rule
    /// on this statistic's standard error and degrees of freedom (Yuen's paired, Welch's
    /// unpaired); `None` when n < 2.
    pub fn detectable(&self, alpha: f64, power: f64) -> Option<f64> {
        if self.n < 2 || !self.sd.is_finite() || self.sd < 0.0 {
            return None;
        }
        let ta = crate::t_critical(self.df(), 1.0 - alpha)?;
        let tb = crate::t_critical(self.df(), 2.0 * power - 1.0)?;
        Some(((ta + tb) * self.se()).exp() - 1.0)
    }

    /// Standard error and degrees of freedom with `k` rounds (unpaired: `k` runs per side) at
    /// the spread observed: paired, the trimmed rule's at k rounds (sd/√k, k − 2⌊g·k⌋ − 1).
    fn se_df_at(&self, k: u32) -> (f64, f64) {
        let kf = f64::from(k);
        match &self.unpaired {
            Some(u) => {
                let (va, vb) = (u.sd_a * u.sd_a, u.sd_b * u.sd_b);
                let df = if va + vb > 0.0 {
                    (kf - 1.0) * (va + vb).powi(2) / (va * va + vb * vb)
                } else {
                    2.0 * kf - 2.0
                };
                (((va + vb) / kf).sqrt(), df)
            }
            None => (self.sd / kf.sqrt(), crate::trim::df(k as usize)),
        }
    }

    /// Rounds (in total, counting the ones already run) after which, if the true effect and
    /// spread are the ones observed, the comparison would be settled at ±`delta` with
    /// probability `power`: a winner when the observed effect is at least δ (a two-sided test
    /// at `alpha_sup`), equivalent otherwise (two one-sided tests at `alpha_eq`). The usual
    /// sample-size rule n ≥ ((t_α + t_power) · s / gap)², with s the spread the standard error
    /// is made of and t quantiles at the trimmed rule's n − 2⌊g·n⌋ − 1 degrees of freedom.
    /// `None` when it would take more than [`MAX_ROUNDS`] (an effect on the edge of δ) or there
    /// is no spread estimate. Unpaired: runs per side, with Welch's degrees of freedom.
    pub fn rounds_to_settle(
        &self,
        delta: f64,
        alpha_sup: f64,
        alpha_eq: f64,
        power: f64,
    ) -> Option<u32> {
        if self.n < 2 || delta.is_nan() || delta <= 0.0 {
            return None;
        }
        let bound = (1.0 + delta).ln();
        let effect = self.mean.abs();
        let (gap, level) = if effect >= bound {
            (effect, 1.0 - alpha_sup)
        } else {
            (bound - effect, 1.0 - 2.0 * alpha_eq)
        };
        if self.sd == 0.0 {
            return Some(self.n.max(2) as u32);
        }
        if gap <= 0.0 {
            return None;
        }
        (2..=MAX_ROUNDS).find(|&n| {
            let (se, df) = self.se_df_at(n);
            match (
                crate::t_critical(df, level),
                crate::t_critical(df, 2.0 * power - 1.0),
            ) {
                (Some(ta), Some(tb)) => (ta + tb) * se <= gap,
                _ => false,
            }
        })
    }
}

/// The most rounds [`LogRatios::rounds_to_settle`] looks at.
pub const MAX_ROUNDS: u32 = 1000;

/// The smallest relative effect (ratio - 1) that a two-sided paired t test at `alpha` finds with
/// probability `power`, with `n` rounds whose log differences spread by `sd`:
/// exp((t_{1-alpha/2} + t_power) · sd / √n) - 1, with n - 1 degrees of freedom. The plain t's
/// formula, nothing trimmed; [`LogRatios::detectable`] applies it to the trimmed statistic.
pub fn detectable_effect(n: usize, sd: f64, alpha: f64, power: f64) -> Option<f64> {
    if n < 2 || !sd.is_finite() || sd < 0.0 {
        return None;
    }
    let df = n as f64 - 1.0;
    let ta = crate::t_critical(df, 1.0 - alpha)?;
    let tb = crate::t_critical(df, 2.0 * power - 1.0)?;
    Some(((ta + tb) * sd / (n as f64).sqrt()).exp() - 1.0)
}

/// How a comparison's rounds were planned in two stages, fixed before the data are seen: the
/// first `first` rounds form the interim look, `planned` rounds in all set the weight of each
/// stage in the combination (stage 1's weight w₁² = first / planned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stages {
    /// Rounds before the interim look.
    pub first: usize,
    /// Rounds planned in all (the cap on a step's rounds).
    pub planned: usize,
}

impl Stages {
    /// Stage 1's weight w₁² in the inverse-normal combination; `None` when no second stage of
    /// at least two rounds was possible (then the design is a single look).
    pub fn first_weight(&self) -> Option<f64> {
        (self.first >= 2 && self.planned >= self.first + 2)
            .then(|| (self.first as f64 / self.planned as f64).clamp(0.05, 0.95))
    }
}

/// One comparison as measured: its looks at the data.
#[derive(Clone, Debug, PartialEq)]
pub struct Looks {
    /// Stage 1: the rounds of the interim look, when the design had one.
    pub interim: Option<LogRatios>,
    /// Stage 2: only the rounds after the interim look (none when not continued).
    pub later: Option<LogRatios>,
    /// Every round: the printed ratio.
    pub last: LogRatios,
    /// Stage 1's weight w₁² in the combination, fixed in advance ([`Stages::first_weight`]);
    /// `None`: a single look.
    pub first_weight: Option<f64>,
}

impl Looks {
    /// A design with one look only.
    pub fn single(last: LogRatios) -> Looks {
        Looks {
            interim: None,
            later: None,
            last,
            first_weight: None,
        }
    }

    /// The stages the rule reads: stage 1 and, when continued with at least two rounds, stage 2;
    /// a single look is stage 1 alone. `None` without a spread estimate.
    fn stages(&self) -> Option<(Stage, Option<Stage>, bool)> {
        let stage = |l: &LogRatios| {
            (l.n >= 2 && l.se().is_finite()).then(|| Stage {
                mean: l.mean,
                se: l.se(),
                df: l.df(),
            })
        };
        match (self.first_weight, &self.interim) {
            (Some(_), Some(first)) => {
                let one = stage(first)?;
                let two = self.later.as_ref().and_then(stage);
                Some((one, two, true))
            }
            _ => Some((stage(&self.last)?, None, false)),
        }
    }

    /// The rule of this comparison at per-tail level `a`.
    fn rule(&self, a: f64, share: f64) -> Rule {
        Rule {
            a,
            share,
            w1sq: self.first_weight.unwrap_or(0.5),
        }
    }

    /// The decision's interval (log scale) at per-tail `a`.
    fn interval(&self, a: f64, share: f64) -> Option<(f64, f64)> {
        let (one, two, staged) = self.stages()?;
        let rule = self.rule(a, share);
        if staged && two.is_none() {
            // Not continued: stage 1 alone, at its share.
            return Rule {
                a: a * share,
                ..rule
            }
            .interval(&one, None);
        }
        rule.interval(&one, two.as_ref())
    }

    /// Per-tail p value of the rule for "the log ratio is above `theta0`" (`up`) or below it:
    /// the smallest per-tail level at which the interval would leave `theta0` out on that side.
    fn p_tail(&self, share: f64, theta0: f64, up: bool) -> Option<f64> {
        let (mut one, mut two, staged) = self.stages()?;
        let mut th = theta0;
        if !up {
            one.mean = -one.mean;
            if let Some(t) = two.as_mut() {
                t.mean = -t.mean;
            }
            th = -theta0;
        }
        let rule = self.rule(0.0, share);
        if staged && two.is_none() {
            return rule.p_above(&one, None, th).map(|p| (p / share).min(1.0));
        }
        rule.p_above(&one, two.as_ref(), th)
    }
}

/// One comparison to decide: server `a` against server `b`.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The looks of a against b (positive log differences: a better).
    pub looks: Looks,
    /// Further comparisons a must also win for a win to count (a step's leader against every
    /// server but the runner-up): the winner's p value is the largest of them all (an
    /// intersection-union test, which needs no correction).
    pub also: Vec<Looks>,
    /// Why a winner may not be named even when the data say so (a figure that is only a bound
    /// in the direction that could change the outcome).
    pub no_winner: Option<String>,
    /// Why equivalence may not be claimed (a figure that is only a bound).
    pub no_equivalence: Option<String>,
}

impl Comparison {
    /// A plain comparison of two servers.
    pub fn new(looks: Looks) -> Comparison {
        Comparison {
            looks,
            also: Vec::new(),
            no_winner: None,
            no_equivalence: None,
        }
    }
}

impl Comparison {
    /// Floors the spread of every look at what values measured on a grid of relative step
    /// `step` (a capacity search's bisection precision) can resolve: a uniform rounding error
    /// of ±step/2 on each value gives each log difference a spread of about step/√6. Without
    /// it two identical grid values would have no spread at all, and any difference would
    /// look certain. Unpaired: each side's spread is floored at step/√12 (one value's
    /// rounding error), which gives the same step/√6 for one log difference.
    pub fn with_resolution(mut self, step: f64) -> Comparison {
        if step > 0.0 && step.is_finite() {
            let floor = (1.0 + step).ln() / 6f64.sqrt();
            let lift = |l: &mut LogRatios| {
                if l.n < 2 {
                    return;
                }
                match l.unpaired.as_mut() {
                    Some(u) => {
                        let side = (1.0 + step).ln() / 12f64.sqrt();
                        u.sd_a = u.sd_a.max(side);
                        u.sd_b = u.sd_b.max(side);
                        l.sd = (u.sd_a * u.sd_a + u.sd_b * u.sd_b).sqrt();
                    }
                    None => l.sd = l.sd.max(floor),
                }
            };
            for looks in std::iter::once(&mut self.looks).chain(self.also.iter_mut()) {
                lift(&mut looks.last);
                if let Some(i) = looks.interim.as_mut() {
                    lift(i);
                }
            }
        }
        self
    }
}

/// The decision on one comparison, with everything a reader needs to trust it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Winner, equivalent or inconclusive.
    pub outcome: Outcome,
    /// Which side won (set exactly when `outcome` is `Winner`).
    pub winner: Option<Side>,
    /// Rounds paired at the last look.
    pub n: usize,
    /// Ratio a/b (> 1: a better) over every round: exp of the trimmed mean of the paired log
    /// differences (the trimmed geometric-mean ratio; the geometric-mean ratio when nothing is
    /// trimmed or unpaired).
    pub ratio: Option<f64>,
    /// The decision's interval of the ratio, at level `ci_level` (1 − α/m for a family of m):
    /// every claim is read off it.
    pub ci: Option<[f64; 2]>,
    /// Confidence level of `ci`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_level: Option<f64>,
    /// The 90 % interval over every round by the same statistic (Yuen's trimmed t paired,
    /// Welch's unpaired; descriptive: no decision reads it).
    pub ci90: Option<[f64; 2]>,
    /// Two-sided p value at the last look, before any adjustment (descriptive).
    pub p_raw: Option<f64>,
    /// p value of a difference by the rule, Bonferroni-adjusted over the family: ≤ α exactly
    /// when `ci` leaves 1 out.
    pub p: Option<f64>,
    /// p value of equivalence by the rule (two one-sided tests), adjusted like `p`: ≤ α exactly
    /// when `ci` lies inside ±δ.
    pub p_equivalent: Option<f64>,
    /// Smallest effect (ratio − 1) this rule, with these rounds and this spread, names a winner
    /// with the design's power.
    pub detectable: Option<f64>,
    /// Rounds in all that would settle the comparison (a winner or equivalent) with the design's
    /// power if effect and spread are as observed. At the final look: a study of that many
    /// rounds in one look; at the interim look: the rounds in all this study's stage 2 needs.
    pub rounds_to_settle: Option<u32>,
    /// Why the outcome is not what the data alone say (a bound that could change it).
    pub held_back: Option<String>,
    /// Index in `Comparison::also` of the server the first one has not yet beaten, when that,
    /// not the comparison itself, kept it from winning.
    pub blocked_by: Option<usize>,
}

/// Decides a family of comparisons (every comparison of a study), each on its interval at the
/// family's level (see [`decide_family`]).
pub fn decide(family: &[Comparison], opts: &DesignOptions) -> Vec<Decision> {
    decide_family(family, &[], opts).0
}

/// Per-tail level of each member of a family of `m`: α / 2m (Bonferroni over every claim).
fn per_tail(o: &DesignOptions, m: usize) -> f64 {
    o.alpha / (2.0 * m.max(1) as f64)
}

/// Decides one family made of ratio comparisons and count comparisons ([`CountComparison`]:
/// errors compared as counts by the exact test of their rate ratio). Every member has one
/// interval at level 1 − α/m (m: the family's size), so all of them hold together with
/// probability ≥ 1 − α; every claim is read off it: a **winner** when it leaves 1 out (and, for
/// a step's leader, the intervals against every other server leave 1 out the same way),
/// **equivalent** when it lies inside [1/(1+δ), 1+δ], otherwise inconclusive. The chance that
/// any claim of the family is false is then at most α. Returns the decisions of `family` and of
/// `counts`, each in input order.
pub fn decide_family(
    family: &[Comparison],
    counts: &[CountComparison],
    opts: &DesignOptions,
) -> (Vec<Decision>, Vec<Decision>) {
    let o = if opts.valid() {
        *opts
    } else {
        DesignOptions::default()
    };
    let m = (family.len() + counts.len()).max(1);
    let ratios = family.iter().map(|c| decide_one(c, m, &o, true)).collect();
    let counted = counts.iter().map(|c| decide_count(c, m, &o)).collect();
    (ratios, counted)
}

/// The power extra rounds are planned for at the interim look: higher than the power quoted
/// for the detectable effect, because the interim estimate of the effect is itself noisy and a
/// plan made for 80 % on it delivers less.
pub const PLANNING_POWER: f64 = 0.9;

/// Decides a family at the interim look of a two-stage design: `looks.last` of each comparison
/// holds the rounds so far (stage 1), decided at stage 1's share of each comparison's level
/// (these decisions stand at the end: stage 1's rejections are part of the rule). The rounds
/// to settle are the rounds in all after which stage 2 would settle the comparison with
/// [`PLANNING_POWER`] if effect and spread are as observed (conditional power), for
/// [`allocate`]. A comparison with no second stage planned is decided at its full level.
pub fn decide_interim(family: &[Comparison], opts: &DesignOptions) -> Vec<Decision> {
    let o = if opts.valid() {
        *opts
    } else {
        DesignOptions::default()
    };
    let m = family.len().max(1);
    let a = per_tail(&o, m);
    family
        .iter()
        .map(|c| {
            let staged = |l: &Looks| Looks {
                interim: Some(l.last),
                later: None,
                last: l.last,
                first_weight: l.first_weight,
            };
            let now = Comparison {
                looks: staged(&c.looks),
                also: c.also.iter().map(staged).collect(),
                ..c.clone()
            };
            let mut d = decide_one(&now, m, &o, false);
            d.detectable = None;
            d.rounds_to_settle = match c.looks.first_weight {
                Some(w) if d.outcome == Outcome::Inconclusive => {
                    plan_stage_two(&c.looks.last, w, a, &o)
                }
                _ => None,
            };
            d
        })
        .collect()
}

/// Rounds in all (stage 1 + stage 2) after which the combination settles the comparison with
/// [`PLANNING_POWER`], by conditional power given stage 1, at the effect and spread observed.
fn plan_stage_two(first: &LogRatios, w1sq: f64, a: f64, o: &DesignOptions) -> Option<u32> {
    if first.n < 2 || first.unpaired.is_some() {
        return None;
    }
    let rule = Rule {
        a,
        share: o.interim_share,
        w1sq,
    };
    let one = Stage {
        mean: first.mean,
        se: first.se(),
        df: first.df(),
    };
    let mirror = Stage {
        mean: -first.mean,
        ..one
    };
    let sd = first.sd;
    if sd == 0.0 {
        return Some((first.n + 2) as u32);
    }
    let b = (1.0 + o.delta).ln();
    let target = PLANNING_POWER.max(o.power);
    let up = first.mean >= 0.0;
    let z_win = crate::rule::stage_score(if up { &one } else { &mirror }, 0.0)?;
    let z_lo = crate::rule::stage_score(&one, -b)?;
    let z_hi = crate::rule::stage_score(&mirror, -b)?;
    let k_win = first.mean.abs() / sd;
    let (k_lo, k_hi) = ((first.mean + b) / sd, (b - first.mean) / sd);
    let settles = |n2: usize| -> bool {
        let cp = |z: f64, k: f64| crate::rule::conditional_power(&rule, z, n2, k);
        let win = cp(z_win, k_win);
        let eq = cp(z_lo, k_lo) + cp(z_hi, k_hi) - 1.0;
        win.max(eq) >= target
    };
    let most = MAX_ROUNDS as usize - first.n.min(MAX_ROUNDS as usize);
    if most < 2 || !settles(most) {
        return None;
    }
    let (mut lo, mut hi) = (2usize, most);
    if settles(lo) {
        return Some((first.n + lo) as u32);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if settles(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some((first.n + hi) as u32)
}

/// The smallest relative effect the rule of `looks` names a winner for with probability
/// `power`, at per-tail `a`: one look by the noncentral t distribution, two stages by
/// integrating stage 1's score (see `rule.rs`). Remembered per design, since it depends only
/// on the rounds, the level and the weights (and scales with the spread).
fn detectable_of(looks: &Looks, a: f64, o: &DesignOptions) -> Option<f64> {
    let last = &looks.last;
    if last.n < 2 || !last.sd.is_finite() {
        return None;
    }
    let staged = looks.first_weight.zip(looks.interim.as_ref());
    let (n2, df2) = looks.later.as_ref().map_or((0, 0.0), |l| (l.n, l.df()));
    let k = match staged {
        Some((w, first)) if n2 >= 2 && first.unpaired.is_none() => {
            let rule = Rule {
                a,
                share: o.interim_share,
                w1sq: w,
            };
            let df1 = first.df();
            let key = DesignKey::new(first.n, n2, a, o.interim_share, w, o.power).with_df(df1, df2);
            let k = cached(key, || {
                let grid = crate::rule::TwoStageGrid::new(&rule, (first.n, df1), (n2, df2))?;
                solve_effect(o.power, |k| Some(grid.power(k)))
            })?;
            k * last.sd
        }
        Some((_, first)) => {
            // Not continued: stage 1 alone at its share.
            let df = first.df();
            let key = DesignKey::new(first.n, 0, a * o.interim_share, df, 0.0, o.power);
            let k = cached(key, || {
                solve_effect(o.power, |k| {
                    crate::rule::power_one_look(k, df, a * o.interim_share)
                })
            })?;
            k * first.se()
        }
        None => {
            let df = last.df();
            let key = DesignKey::new(last.n, 0, a, df, 0.0, o.power);
            let k = cached(key, || {
                solve_effect(o.power, |k| crate::rule::power_one_look(k, df, a))
            })?;
            k * last.se()
        }
    };
    Some(k.exp() - 1.0)
}

/// The smallest relative effect (ratio − 1) the decision rule names a winner for with the
/// design's power, for comparison `c` as a member of a family of `family` comparisons, at the
/// spread observed: the figure an inconclusive decision prints, for any comparison.
pub fn detectable(c: &Comparison, family: usize, opts: &DesignOptions) -> Option<f64> {
    let o = if opts.valid() {
        *opts
    } else {
        DesignOptions::default()
    };
    detectable_of(&c.looks, per_tail(&o, family), &o)
}

/// Rounds in one look that would settle comparison `c` (a winner or equivalent) with the
/// design's power, as a member of a family of `family`, if effect and spread are as observed.
pub fn rounds_to_settle(c: &Comparison, family: usize, opts: &DesignOptions) -> Option<u32> {
    let o = if opts.valid() {
        *opts
    } else {
        DesignOptions::default()
    };
    rounds_one_look(&c.looks.last, per_tail(&o, family), &o)
}

/// Rounds in one look that would settle the comparison (a winner or equivalent by the rule at
/// per-tail `a`) with probability `power` if effect and spread are as observed.
fn rounds_one_look(l: &LogRatios, a: f64, o: &DesignOptions) -> Option<u32> {
    if l.n < 2 || !l.sd.is_finite() {
        return None;
    }
    if l.sd == 0.0 {
        return Some(l.n.max(2) as u32);
    }
    let b = (1.0 + o.delta).ln();
    let settles = |k: u32| -> bool {
        let (se, df) = l.se_df_at(k);
        let win = crate::rule::power_one_look(l.mean.abs() / se, df, a).unwrap_or(0.0);
        let eq = crate::rule::power_equivalent(l.mean, b, se, df, a).unwrap_or(0.0);
        win.max(eq) >= o.power
    };
    // Start from the normal approximation, then bracket the exact answer around it.
    let z = |p: f64| -crate::rule::phi_inv(p);
    let zp = z(1.0 - o.power);
    let (theta, sd) = (l.mean.abs(), l.sd);
    let win = ((z(a) + zp) * sd / theta.max(1e-12)).powi(2);
    let eq = ((z(a) + z((1.0 - o.power) / 2.0)) * sd / (b - theta).max(1e-12)).powi(2);
    let guess = win.min(eq).clamp(2.0, f64::from(MAX_ROUNDS)) as u32;
    let (mut lo, mut hi) = if settles(guess) {
        // Settles at the guess: walk down to the first that does not.
        let mut step = 1;
        let mut hi = guess;
        loop {
            let lo = hi.saturating_sub(step).max(2);
            if lo == hi || !settles(lo) {
                break (lo, hi);
            }
            hi = lo;
            step *= 2;
        }
    } else {
        let mut step = 1;
        let mut lo = guess;
        loop {
            let hi = (lo + step).min(MAX_ROUNDS);
            if settles(hi) {
                break (lo, hi);
            }
            if hi == MAX_ROUNDS {
                return None;
            }
            lo = hi;
            step *= 2;
        }
    };
    if lo == hi {
        return Some(hi);
    }
    if settles(lo) {
        return Some(lo);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if settles(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// A design's identity for the detectable-effect cache.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct DesignKey([u64; 8]);

impl DesignKey {
    fn new(n1: usize, n2: usize, a: f64, x: f64, w: f64, power: f64) -> DesignKey {
        DesignKey([
            n1 as u64,
            n2 as u64,
            a.to_bits(),
            x.to_bits(),
            w.to_bits(),
            power.to_bits(),
            0,
            0,
        ])
    }

    /// The stages' degrees of freedom (two stages: they depend on the rounds trimmed).
    fn with_df(mut self, df1: f64, df2: f64) -> DesignKey {
        self.0[6] = df1.to_bits();
        self.0[7] = df2.to_bits();
        self
    }
}

fn cached(key: DesignKey, f: impl FnOnce() -> Option<f64>) -> Option<f64> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<DesignKey, Option<f64>>> = RefCell::new(HashMap::new());
    }
    if let Some(v) = CACHE.with(|c| c.borrow().get(&key).copied()) {
        return v;
    }
    let v = f();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 4096 {
            c.clear();
        }
        c.insert(key, v);
    });
    v
}

fn decide_one(c: &Comparison, m: usize, o: &DesignOptions, figures: bool) -> Decision {
    let last = &c.looks.last;
    let a = per_tail(o, m);
    let share = o.interim_share;
    let scale = 2.0 * m as f64;
    let adjust = |p: Option<f64>| p.map(|p| (p * scale).min(1.0));
    let b = (1.0 + o.delta).ln();
    let interval = c.looks.interval(a, share);
    // p of a difference in the direction the interval shows (else the data's); a leader must
    // be clear of every other server in the same direction (an intersection–union test: the
    // largest p).
    let up = match interval {
        Some((_, hi)) if hi < 0.0 => false,
        Some((lo, _)) if lo > 0.0 => true,
        _ => last.mean >= 0.0,
    };
    let main = c.looks.p_tail(share, 0.0, up);
    let mut p = main.unwrap_or(1.0);
    let mut by = None;
    let mut others_clear = true;
    for (i, other) in c.also.iter().enumerate() {
        let q = if (other.last.mean >= 0.0) == up {
            other.p_tail(share, 0.0, up).unwrap_or(1.0)
        } else {
            1.0
        };
        if q > p {
            p = q;
            by = Some(i);
        }
        let clear = other
            .interval(a, share)
            .is_some_and(|(lo, hi)| if up { lo > 0.0 } else { hi < 0.0 });
        others_clear &= clear;
    }
    let p_eq = match (
        c.looks.p_tail(share, -b, true),
        c.looks.p_tail(share, b, false),
    ) {
        (Some(x), Some(y)) => Some(x.max(y)),
        _ => None,
    };
    let mut d = Decision {
        outcome: Outcome::Inconclusive,
        winner: None,
        n: last.n,
        ratio: last.ratio(),
        ci: interval.map(|(lo, hi)| [lo.exp(), hi.exp()]),
        ci_level: interval.map(|_| 1.0 - 2.0 * a),
        ci90: last.interval(0.9).map(|(a, b)| [a, b]),
        p_raw: last.p_two_sided(),
        p: adjust(main.map(|_| p)),
        p_equivalent: adjust(p_eq),
        detectable: None,
        rounds_to_settle: None,
        held_back: None,
        blocked_by: None,
    };
    settle(&mut d, others_clear, &c.no_winner, &c.no_equivalence, o);
    // What it would take is told where nothing was decided.
    if d.outcome == Outcome::Inconclusive && figures {
        d.detectable = detectable_of(&c.looks, a, o);
        d.rounds_to_settle = rounds_one_look(last, a, o);
    }
    if d.outcome == Outcome::Inconclusive && !others_clear {
        d.blocked_by = by;
    }
    d
}

/// The outcome from the decision's interval, the one rule every comparison shares: a winner
/// when it leaves 1 out (and `others_clear`: a leader is clear of every other server the same
/// way), equivalent when it lies inside [1/(1+δ), 1+δ]. A reason given holds the outcome back.
fn settle(
    d: &mut Decision,
    others_clear: bool,
    no_winner: &Option<String>,
    no_equivalence: &Option<String>,
    o: &DesignOptions,
) {
    let Some([lo, hi]) = d.ci.filter(|[lo, hi]| !lo.is_nan() && !hi.is_nan()) else {
        return;
    };
    let bound = 1.0 + o.delta;
    let clear_of_one = lo > 1.0 || hi < 1.0;
    let inside_delta = lo >= 1.0 / bound && hi <= bound;
    if clear_of_one && others_clear {
        match no_winner {
            None => {
                d.outcome = Outcome::Winner;
                d.winner = Some(if lo > 1.0 { Side::A } else { Side::B });
                return;
            }
            Some(why) => d.held_back = Some(why.clone()),
        }
    }
    if inside_delta {
        match no_equivalence {
            None => {
                d.outcome = Outcome::Equivalent;
                d.held_back = None;
            }
            Some(why) => d.held_back = Some(why.clone()),
        }
    }
}

/// Two counts of events that are bad to have (errors) compared as counts: side `a` against
/// side `b`, each over its exposure, by the exact conditional test of the rate ratio and its
/// exact interval ([`RateRatio`]). Fewer events per exposure is better.
#[derive(Clone, Debug, PartialEq)]
pub struct CountComparison {
    /// The counts (a: the side the decision's ratio puts on top).
    pub counts: RateRatio,
    /// Why a winner may not be named even when the counts say so.
    pub no_winner: Option<String>,
    /// Why equivalence may not be claimed.
    pub no_equivalence: Option<String>,
}

impl CountComparison {
    /// A plain comparison of two counts.
    pub fn new(counts: RateRatio) -> CountComparison {
        CountComparison {
            counts,
            no_winner: None,
            no_equivalence: None,
        }
    }
}

/// The decision on a count comparison, oriented like every decision (ratio > 1: a better, i.e.
/// the ratio is b's rate over a's): 0 or +∞ where one side has no event. No detectable effect
/// and no runs to settle: counts have no per-run spread to plan with. `n` is the events on
/// both sides together.
/// The decision on a count comparison, oriented like every decision (ratio > 1: a better, i.e.
/// the ratio is b's rate over a's): 0 or +∞ where one side has no event. Its interval is the
/// exact one at the family's level. No detectable effect and no runs to settle: counts have no
/// per-run spread to plan with. `n` is the events on both sides together.
fn decide_count(c: &CountComparison, m: usize, o: &DesignOptions) -> Decision {
    let rr = &c.counts;
    let a = per_tail(o, m);
    // Fewer events is better: a's advantage is b's rate over a's.
    let flip = |(lo, hi): (f64, f64)| [1.0 / hi, 1.0 / lo];
    let p_raw = rr.p_two_sided();
    let scale = m as f64;
    let ci = p_raw.and(rr.interval(1.0 - 2.0 * a)).map(flip);
    let mut d = Decision {
        outcome: Outcome::Inconclusive,
        winner: None,
        n: rr
            .total()
            .map_or(0, |k| usize::try_from(k).unwrap_or(usize::MAX)),
        ratio: rr.ratio().map(|x| 1.0 / x),
        ci,
        ci_level: ci.map(|_| 1.0 - 2.0 * a),
        ci90: rr.interval(0.9).map(flip),
        p_raw,
        p: p_raw.map(|p| (p * scale).min(1.0)),
        p_equivalent: rr.p_equivalent(o.delta).map(|p| (p * 2.0 * scale).min(1.0)),
        detectable: None,
        rounds_to_settle: None,
        held_back: None,
        blocked_by: None,
    };
    settle(&mut d, true, &c.no_winner, &c.no_equivalence, o);
    d
}

/// "7–12 %", or "2.1–2.5×" for large ratios: the interval of the winner's advantage.
fn advantage(lo: f64, hi: f64) -> String {
    if lo >= 2.0 {
        format!("{}–{}×", format_sig3(lo), format_sig3(hi))
    } else {
        let p = |x: f64| {
            let s = pct(x - 1.0);
            s.trim_end_matches(" %").to_string()
        };
        format!("{}–{} %", p(lo), p(hi))
    }
}

/// "99.7 %" for a confidence level.
pub fn level_text(level: f64) -> String {
    let v = level * 100.0;
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

/// One sentence for a decision: "a beats b on reply_rate (higher is better) by 7–12 %: ratio
/// 1.10 (99.7 % CI 1.07–1.12), p = 0.003, n = 6", "a and b are equivalent on … (within ±5 %)",
/// or "no decision: … this run could see ≥ 19 %; ≈ 40 rounds in one look would settle ±5 %".
/// Every figure of the interval is the decision's own (its level is the family's).
pub fn describe(
    d: &Decision,
    a: &str,
    b: &str,
    metric: &str,
    better: Better,
    opts: &DesignOptions,
) -> String {
    let delta = pct(opts.delta);
    let Some(r) = d.ratio else {
        return format!("{a} vs {b} on {metric}: no round where both have a value: no decision");
    };
    let level = d.ci_level.map_or_else(|| "95 %".to_string(), level_text);
    let ci = match d.ci {
        Some([lo, hi]) => format!(
            "{level} CI {}–{}",
            format_sig3(lo.min(hi)),
            format_sig3(hi.max(lo))
        ),
        None => "no interval with one round".into(),
    };
    let p =
        d.p.map(|p| {
            let s = format_p(p);
            if s.starts_with('<') {
                format!(", p {s}")
            } else {
                format!(", p = {s}")
            }
        })
        .unwrap_or_default();
    let way = match better {
        Better::Higher => "higher",
        Better::Lower => "lower",
    };
    let stats = format!("{} ({ci}){p}, n = {}", format_sig3(r), d.n);
    let held = d
        .held_back
        .as_ref()
        .map(|w| format!("; held back: {w}"))
        .unwrap_or_default();
    match d.outcome {
        Outcome::Winner => {
            let [lo, hi] = d.ci.unwrap_or([r, r]);
            let (w, l, lo, hi) = if d.winner == Some(Side::B) {
                (b, a, 1.0 / hi, 1.0 / lo)
            } else {
                (a, b, lo, hi)
            };
            let small = if hi <= 1.0 + opts.delta {
                format!(" (less than {delta})")
            } else {
                String::new()
            };
            format!(
                "{w} beats {l} on {metric} ({way} is better) by {}{small}: ratio {stats}",
                advantage(lo, hi)
            )
        }
        Outcome::Equivalent => format!(
            "{a} and {b} are equivalent on {metric} (within ±{delta}): ratio {} ({ci}), n = {}",
            format_sig3(r),
            d.n
        ),
        Outcome::Inconclusive => {
            let see = match d.detectable {
                Some(e) if e.is_finite() && e < 9.0 => format!("this run could see ≥ {}", pct(e)),
                Some(_) => "this run could see only differences of 10× or more".into(),
                None => "too few rounds to see any effect".into(),
            };
            let settle = match d.rounds_to_settle {
                Some(n) if n as usize <= d.n => String::new(),
                Some(n) => format!("; ≈ {n} rounds in one look would settle ±{delta}"),
                None => format!("; no number of rounds would settle ±{delta} at this effect"),
            };
            format!("{a} vs {b} on {metric}: no decision: ratio {stats}; {see}{settle}{held}")
        }
    }
}

/// "5 %", "19 %", "2.5 %".
fn pct(x: f64) -> String {
    let v = x * 100.0;
    if v >= 10.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} %")
    } else {
        format!("{v:.1} %")
    }
}

/// What one step (a set of comparisons measured together) needs from the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Need {
    /// Rounds run so far.
    pub rounds: u32,
    /// Rounds in all that would settle its nearest undecided comparison (None: undecidable or
    /// already decided).
    pub to_settle: Option<u32>,
    /// Seconds one more round costs.
    pub round_cost_s: f64,
    /// Most rounds this step may have.
    pub cap: u32,
}

/// Extra rounds per step for a budget of `budget_s` seconds: steps nearest a decision (fewest
/// seconds to settle) first, each given what it needs within its cap; what is left goes round
/// by round to those same steps (nearest a decision), then to the undecided steps that could not
/// be given all they need, under their caps. Decided steps get nothing, and no step gets a
/// single extra round (a second stage needs two). Any allocation keeps the error rate: the
/// second stage is judged on its own rounds ([`decide`]).
pub fn allocate(needs: &[Need], budget_s: f64) -> Vec<u32> {
    let mut extra = vec![0u32; needs.len()];
    let mut left = if budget_s.is_finite() { budget_s } else { 0.0 };
    let cost = |n: &Need, k: u32| k as f64 * n.round_cost_s.max(0.0);
    let mut order: Vec<usize> = (0..needs.len())
        .filter(|&i| needs[i].to_settle.is_some() && needs[i].rounds < needs[i].cap)
        .collect();
    let want = |n: &Need| {
        match n
            .to_settle
            .map_or(0, |t| t.min(n.cap).saturating_sub(n.rounds))
        {
            // A stage of one round cannot be judged: two at least.
            1 if n.rounds + 2 <= n.cap => 2,
            1 => 0,
            k => k,
        }
    };
    order.sort_by(|&i, &j| {
        cost(&needs[i], want(&needs[i])).total_cmp(&cost(&needs[j], want(&needs[j])))
    });
    for &i in &order {
        let k = want(&needs[i]);
        if k > 0 && cost(&needs[i], k) <= left {
            extra[i] = k;
            left -= cost(&needs[i], k);
        }
    }
    // The rest, one round at a time: first to the steps just given what they need (their
    // need is an estimate from few rounds, and they are the nearest to a decision), then to
    // the undecided steps that could not be given all they need, under their caps.
    let (unfunded, funded): (Vec<usize>, Vec<usize>) = order.iter().partition(|&&i| extra[i] == 0);
    for group in [funded, unfunded] {
        loop {
            let mut gave = false;
            for &i in &group {
                let n = &needs[i];
                if n.rounds + extra[i] < n.cap && n.round_cost_s <= left {
                    extra[i] += 1;
                    left -= n.round_cost_s.max(0.0);
                    gave = true;
                }
            }
            if !gave {
                break;
            }
        }
    }
    // A second stage of one round has no spread of its own (its t statistic needs two): a
    // step given one round gets a second one if the budget and its cap allow, else none.
    for (i, n) in needs.iter().enumerate() {
        if extra[i] == 1 {
            if n.rounds + 2 <= n.cap && n.round_cost_s.max(0.0) <= left {
                extra[i] = 2;
                left -= n.round_cost_s.max(0.0);
            } else {
                extra[i] = 0;
                left += n.round_cost_s.max(0.0);
            }
        }
    }
    extra
}

#[cfg(test)]
mod unit {
    use super::*;

    fn lr(d: &[f64]) -> LogRatios {
        LogRatios::of_differences(d)
    }

    #[test]
    fn pairs_by_round_and_leaves_gaps() {
        let a = [Some(110.0), None, Some(120.0), Some(0.0)];
        let b = [Some(100.0), Some(100.0), Some(100.0), Some(100.0)];
        let l = LogRatios::paired(&a, &b, Better::Higher);
        assert_eq!(l.n, 2);
        let want = ((1.1f64).ln() + (1.2f64).ln()) / 2.0;
        assert!((l.mean - want).abs() < 1e-12);
        let lower = LogRatios::paired(&a, &b, Better::Lower);
        assert!((lower.mean + want).abs() < 1e-12);
    }

    #[test]
    fn geometric_ratio_and_t_interval() {
        // d = ln 1.1, ln 1.2, ln 1.15: interval exp(mean ± t(0.975, 2) sd / sqrt 3).
        let d = [(1.1f64).ln(), (1.2f64).ln(), (1.15f64).ln()];
        let l = lr(&d);
        let (lo, hi) = l.interval(0.95).expect("interval");
        let m = d.iter().sum::<f64>() / 3.0;
        let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt();
        let h = 4.302_652_729_911_275 * sd / 3f64.sqrt();
        assert!((lo - (m - h).exp()).abs() < 1e-9 && (hi - (m + h).exp()).abs() < 1e-9);
        assert!((l.ratio().expect("ratio") - m.exp()).abs() < 1e-12);
    }

    #[test]
    fn paired_rounds_are_read_by_yuens_trimmed_t() {
        // Ten rounds, two of them disturbed: g = 0.15 trims one a side. Worked by hand (the
        // Python in `trim.rs`, k = 1; the t distribution with 7 degrees of freedom in closed
        // form, A(t) = (2/π)(θ + sin θ (cos θ + 2/3 cos³θ + 8/15 cos⁵θ)), θ = atan(t/√7)):
        // trimmed mean 0.022, se 0.008536685539481935, t = 2.57711261569266, two-sided
        // p = 1 − A(t) = 0.03662612686799671, t(0.975, 7) = 2.364624251592783, 95 % interval
        // exp(0.022 ± 2.364624 · se) = 1.001815592541011–1.043088531131707. The plain t of the
        // same rounds: p = 0.61.
        let d = [
            0.031, -0.012, 0.048, 0.022, 0.410, 0.019, -0.300, 0.027, 0.035, 0.006,
        ];
        let l = lr(&d);
        assert_eq!((l.n, l.trimmed, l.df()), (10, 1, 7.0));
        assert!((l.ratio().expect("ratio") - 0.022f64.exp()).abs() < 1e-15);
        assert!((l.se() - 0.008_536_685_539_481_935).abs() < 1e-15);
        let p = l.p_two_sided().expect("p");
        assert!((p - 0.036_626_126_867_996_71).abs() < 1e-9, "{p}");
        let (lo, hi) = l.interval(0.95).expect("interval");
        assert!((lo - 1.001_815_592_541_011).abs() < 1e-9, "{lo}");
        assert!((hi - 1.043_088_531_131_707).abs() < 1e-9, "{hi}");
        // Serialized with the rounds trimmed; documents without the field read as untrimmed.
        let json = serde_json::to_string(&l).expect("json");
        assert!(json.contains("\"trimmed\":1"), "{json}");
        assert_eq!(serde_json::from_str::<LogRatios>(&json).ok(), Some(l));
        let old: LogRatios = serde_json::from_str(r#"{"n":3,"mean":0.1,"sd":0.02}"#).expect("old");
        assert_eq!((old.trimmed, old.df()), (0, 2.0));
        // Fewer than 7 rounds: nothing trimmed, the plain paired t.
        let short = lr(&d[..6]);
        assert_eq!((short.trimmed, short.df()), (0, 5.0));
    }

    #[test]
    fn detectable_effect_matches_the_formula() {
        // n = 4, sd = 0.08, alpha = 0.05, power 0.8: t(0.975, 3) = 3.182446, t(0.8, 3) = 0.978472.
        let e = detectable_effect(4, 0.08, 0.05, 0.8).expect("mde");
        let want = ((3.182_446_305_284_263 + 0.978_472_312_383_5) * 0.08 / 2.0f64).exp() - 1.0;
        assert!((e - want).abs() < 1e-6, "{e} vs {want}");
        assert!(detectable_effect(1, 0.08, 0.05, 0.8).is_none());
    }

    #[test]
    fn three_outcomes() {
        let opts = DesignOptions::default();
        // Clear 20 % win.
        let win = lr(&[0.18, 0.19, 0.17, 0.185, 0.175]);
        // Tight around 1: equivalent at 5 %.
        let same = lr(&[0.004, -0.003, 0.001, 0.0, -0.002]);
        // Wide: inconclusive.
        let wide = lr(&[0.3, -0.2, 0.1, -0.25]);
        let ds = decide(
            &[
                Comparison::new(Looks::single(win)),
                Comparison::new(Looks::single(same)),
                Comparison::new(Looks::single(wide)),
            ],
            &opts,
        );
        assert_eq!(ds[0].outcome, Outcome::Winner);
        assert_eq!(ds[0].winner, Some(Side::A));
        assert_eq!(ds[1].outcome, Outcome::Equivalent);
        assert_eq!(ds[2].outcome, Outcome::Inconclusive);
        assert!(ds[2].detectable.expect("mde") > 0.3);
        let text = describe(&ds[2], "x", "y", "reply_rate", Better::Higher, &opts);
        assert!(text.contains("could see ≥"), "{text}");
        // A significant effect smaller than δ is a winner whose interval says how small.
        let small = lr(&[0.02, 0.021, 0.019, 0.02, 0.022]);
        let d = decide(&[Comparison::new(Looks::single(small))], &opts);
        assert_eq!(d[0].outcome, Outcome::Winner);
        let text = describe(&d[0], "x", "y", "reply_rate", Better::Higher, &opts);
        assert!(text.contains("(less than 5 %)"), "{text}");
        assert!(
            text.contains("x beats y on reply_rate (higher is better) by 1."),
            "{text}"
        );
    }

    #[test]
    fn counts_are_decided_in_the_same_family() {
        let opts = DesignOptions::default();
        let win = Comparison::new(Looks::single(lr(&[0.18, 0.19, 0.17, 0.185, 0.175])));
        // a: 0 events against b's 50 over equal exposures: a is better, ratio +∞.
        let fewer = CountComparison::new(RateRatio::new(0, 1e6, 50, 1e6));
        let (r, c) = decide_family(std::slice::from_ref(&win), &[fewer], &opts);
        // A member of a family of two: its interval is at 97.5 %, its p doubled (Bonferroni).
        let alone = decide(std::slice::from_ref(&win), &opts);
        assert_eq!(r[0].outcome, alone[0].outcome);
        assert_eq!(r[0].ci_level, Some(0.975));
        assert_eq!(alone[0].ci_level, Some(0.95));
        assert!(detectable(&win, 2, &opts) > detectable(&win, 1, &opts));
        let p_count = c[0].p_raw.expect("p");
        assert!((c[0].p.expect("p") - 2.0 * p_count).abs() < 1e-20);
        assert_eq!(
            (c[0].outcome, c[0].winner),
            (Outcome::Winner, Some(Side::A))
        );
        assert_eq!(c[0].ratio, Some(f64::INFINITY));
        assert_eq!(c[0].ci.expect("ci")[1], f64::INFINITY);
        // p = 0.048 alone is a decision (b better: a has more events per exposure); beside
        // another member of the family it is not: its interval is wider.
        let close = CountComparison::new(RateRatio::new(41, 28010.0, 15, 19017.0));
        let (_, c) = decide_family(&[], std::slice::from_ref(&close), &opts);
        assert_eq!(
            (c[0].outcome, c[0].winner),
            (Outcome::Winner, Some(Side::B))
        );
        let none = CountComparison::new(RateRatio::new(0, 1e6, 0, 2e6));
        let (_, c) = decide_family(&[], &[close, none], &opts);
        assert_eq!(c[0].outcome, Outcome::Inconclusive);
        assert!((c[0].p.expect("p") - 2.0 * c[0].p_raw.expect("p")).abs() < 1e-12);
        // No events on either side: no p value, no ratio, no outcome.
        assert_eq!(
            (c[1].outcome, c[1].p, c[1].ratio),
            (Outcome::Inconclusive, None, None)
        );
        // Many events at one rate: equivalent within ±5 %.
        let same = CountComparison::new(RateRatio::new(40_000, 4e7, 20_100, 2e7));
        let (_, c) = decide_family(&[], &[same], &opts);
        assert_eq!(c[0].outcome, Outcome::Equivalent);
    }

    #[test]
    fn b_can_win_and_bounds_hold_back() {
        let opts = DesignOptions::default();
        let lose = lr(&[-0.18, -0.19, -0.17, -0.185]);
        let mut c = Comparison::new(Looks::single(lose));
        let d = decide(std::slice::from_ref(&c), &opts);
        assert_eq!(
            (d[0].outcome, d[0].winner),
            (Outcome::Winner, Some(Side::B))
        );
        c.no_winner = Some("b was client-bound".into());
        let d = decide(&[c], &opts);
        assert_eq!(d[0].outcome, Outcome::Inconclusive);
        assert!(d[0].held_back.is_some());
    }

    #[test]
    fn leader_must_beat_everyone_in_the_same_direction() {
        let opts = DesignOptions::default();
        let mut c = Comparison::new(Looks::single(lr(&[0.18, 0.19, 0.17, 0.185])));
        c.also = vec![Looks::single(lr(&[0.3, -0.2, 0.1, -0.25]))];
        let d = decide(&[c], &opts);
        assert_eq!(d[0].outcome, Outcome::Inconclusive);
    }

    fn staged(first: &[f64], later: &[f64], planned: usize) -> Looks {
        let all: Vec<f64> = first.iter().chain(later).copied().collect();
        let stages = Stages {
            first: first.len(),
            planned,
        };
        Looks {
            interim: Some(lr(first)),
            later: (!later.is_empty()).then(|| lr(later)),
            last: lr(&all),
            first_weight: stages.first_weight(),
        }
    }

    #[test]
    fn two_stages_are_judged_each_on_its_own_rounds() {
        let opts = DesignOptions::default();
        // Stage 1 wide, stage 2 clear: the combination decides.
        let looks = staged(
            &[0.3, -0.1, 0.2, 0.0],
            &[0.1, 0.11, 0.09, 0.1, 0.105, 0.095],
            10,
        );
        let d = decide(&[Comparison::new(looks)], &opts);
        assert_eq!(d[0].outcome, Outcome::Winner, "{d:?}");
        assert!((d[0].p.expect("p") <= 0.05) == (d[0].ci.expect("ci")[0] > 1.0));
        // Not continued: stage 1 alone, at its share of the level: wider than one look.
        let first = [0.1, 0.12, 0.08, 0.1];
        let alone = decide(&[Comparison::new(Looks::single(lr(&first)))], &opts);
        let stopped = decide(&[Comparison::new(staged(&first, &[], 10))], &opts);
        let width = |d: &Decision| d.ci.map(|[a, b]| b - a).expect("ci");
        assert!(width(&stopped[0]) > width(&alone[0]));
        // One round of stage 2 cannot be judged: the same as not continued.
        let one_more = decide(&[Comparison::new(staged(&first, &[0.1], 10))], &opts);
        assert_eq!(one_more[0].ci, stopped[0].ci);
    }

    #[test]
    fn a_decision_agrees_with_the_interval_printed() {
        let opts = DesignOptions::default();
        for d in [
            lr(&[0.001, 0.0, -0.001, 0.2, -0.1]),
            lr(&[0.05, 0.06, 0.04, 0.05]),
            lr(&[0.01, 0.012, 0.008, 0.011, 0.009, 0.01]),
        ] {
            let x = &decide(&[Comparison::new(Looks::single(d))], &opts)[0];
            let [lo, hi] = x.ci.expect("ci");
            assert_eq!(x.outcome == Outcome::Winner, lo > 1.0 || hi < 1.0);
            assert_eq!(x.p.expect("p") <= 0.05, lo > 1.0 || hi < 1.0);
            let inside = lo >= 1.0 / 1.05 && hi <= 1.05;
            assert_eq!(x.p_equivalent.expect("p") <= 0.05, inside);
        }
    }

    #[test]
    fn grid_values_are_not_certain() {
        // Two capacity searches landing on the same grid points every round: no spread, p = 0
        // without a floor; with the 5 % grid's resolution a 4 % gap is not a win.
        let same = lr(&[0.04, 0.04, 0.04]);
        assert_eq!(same.p_two_sided(), Some(0.0));
        let c = Comparison::new(Looks::single(same)).with_resolution(0.05);
        assert!(c.looks.last.sd > 0.0);
        let d = decide(&[c], &DesignOptions::default());
        assert_ne!(d[0].outcome, Outcome::Winner);
    }

    #[test]
    fn rounds_to_settle_grows_with_spread() {
        let a = lr(&[0.0, 0.02, -0.02, 0.01]);
        let b = lr(&[0.0, 0.08, -0.08, 0.04]);
        let na = a.rounds_to_settle(0.05, 0.05, 0.05, 0.8).expect("a");
        let nb = b.rounds_to_settle(0.05, 0.05, 0.05, 0.8).expect("b");
        assert!(na < nb, "{na} {nb}");
        // Just inside δ with some spread: equivalence would take thousands of rounds.
        let b = (1.05f64).ln();
        let edge = lr(&[b - 0.001 - 0.02, b - 0.001 + 0.02]);
        assert_eq!(edge.rounds_to_settle(0.05, 0.05, 0.05, 0.8), None);
    }

    #[test]
    fn allocation_prefers_the_nearest_and_skips_the_decided() {
        let needs = [
            Need {
                rounds: 4,
                to_settle: Some(6),
                round_cost_s: 10.0,
                cap: 20,
            },
            Need {
                rounds: 4,
                to_settle: None,
                round_cost_s: 10.0,
                cap: 20,
            },
            Need {
                rounds: 4,
                to_settle: Some(40),
                round_cost_s: 10.0,
                cap: 20,
            },
        ];
        let x = allocate(&needs, 100.0);
        assert_eq!(x[1], 0);
        assert_eq!(x[0] + x[2], 10);
        assert!(x[0] >= 2, "{x:?}");
        // Step 0 is funded first even when the budget covers only its need.
        assert_eq!(allocate(&needs, 25.0), vec![2, 0, 0]);
        assert_eq!(allocate(&needs, 0.0), vec![0, 0, 0]);
    }
}
