//! Counts compared as counts: two event counts (errors, say), each over its exposure (the calls
//! in which an event could happen), compared by the exact conditional test of a Poisson rate
//! ratio and its exact interval.
//!
//! With counts k_a ~ Poisson(λ_a e_a) and k_b ~ Poisson(λ_b e_b), the total k = k_a + k_b
//! carries no information on the ratio θ = λ_a / λ_b, and given k, k_a ~ Binomial(k, π) with
//! π = θ e_a / (θ e_a + e_b). So "θ = θ0" is a binomial test of k_a against π(θ0), and the
//! Clopper–Pearson interval of π maps to an exact interval of θ through
//! θ = π / (1 − π) · e_b / e_a. The two-sided p value is the central one, twice the smaller
//! tail (at most 1): p ≤ α exactly when the 1 − α interval leaves out θ0, so the decision and
//! the interval printed never disagree. Both are conservative (the counts are discrete).
//!
//! No errors on either side (k = 0) is no information at all: no p value, the interval is
//! (0, ∞). Errors on one side only give a ratio of 0 or ∞, with a finite p value and an
//! interval open on that side.
//!
//! Tail sums are taken term by term from the observed count outwards, in log-odds so that
//! shares near 0 or 1 keep their precision; the work grows with the square root of the count.

use serde::{Deserialize, Serialize};
use statrs::function::factorial::ln_binomial;

/// ln(1 + e^y) without overflow.
fn softplus(y: f64) -> f64 {
    y.max(0.0) + (-y.abs()).exp().ln_1p()
}

/// P(X ≤ x) and P(X ≥ x) for X ~ Binomial(n, π) with log-odds `ell` = ln(π / (1 − π)).
fn tails_at(x: u64, n: u64, ell: f64) -> (f64, f64) {
    if x > n || ell.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    if n == 0 {
        return (1.0, 1.0);
    }
    if ell == f64::NEG_INFINITY {
        return (1.0, if x == 0 { 1.0 } else { 0.0 });
    }
    if ell == f64::INFINITY {
        return (if x == n { 1.0 } else { 0.0 }, 1.0);
    }
    let ln_p = -softplus(-ell);
    let ln_q = -softplus(ell);
    let (xf, nf) = (x as f64, n as f64);
    let first = (ln_binomial(n, x) + xf * ln_p + (nf - xf) * ln_q).exp();
    // Below the mean the terms fall going down from x, above it going up: sum the tail that
    // lies beyond x, where every term is smaller than the one before.
    let odds = ell.exp();
    let mut sum = first;
    let mut term = first;
    if xf <= nf * ln_p.exp() {
        let mut j = x;
        while j > 0 && term > sum * 1e-17 {
            term *= j as f64 / ((n - j + 1) as f64 * odds);
            sum += term;
            j -= 1;
        }
        let le = sum.min(1.0);
        (le, (1.0 - le + first).clamp(0.0, 1.0))
    } else {
        let mut j = x;
        while j < n && term > sum * 1e-17 {
            term *= (n - j) as f64 * odds / (j + 1) as f64;
            sum += term;
            j += 1;
        }
        let ge = sum.min(1.0);
        ((1.0 - ge + first).clamp(0.0, 1.0), ge)
    }
}

fn logit(p: f64) -> f64 {
    p.ln() - (-p).ln_1p()
}

/// P(X ≤ x) and P(X ≥ x) for X ~ Binomial(n, p): the one-sided p values of an exact binomial
/// test (SciPy's `binomtest(x, n, p, alternative="less" / "greater")`). `None` when x > n or p
/// is outside [0, 1].
pub fn binomial_tails(x: u64, n: u64, p: f64) -> Option<(f64, f64)> {
    if x > n || !(0.0..=1.0).contains(&p) {
        return None;
    }
    Some(tails_at(x, n, logit(p)))
}

/// The log-odds where `f` (monotone increasing in the log-odds) crosses `target`, by bisection.
fn solve_logodds(f: impl Fn(f64) -> f64, target: f64) -> f64 {
    // Shares beyond e^±750 are not representable anyway.
    let (mut lo, mut hi) = (-750.0_f64, 750.0_f64);
    for _ in 0..200 {
        if hi - lo <= 1e-13 * (1.0 + lo.abs().min(hi.abs())) {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if f(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The Clopper–Pearson interval at `level` in log-odds: ±∞ where it is open (x = 0, x = n).
fn clopper_pearson_logodds(x: u64, n: u64, level: f64) -> (f64, f64) {
    let tail = (1.0 - level) / 2.0;
    let lo = if x == 0 {
        f64::NEG_INFINITY
    } else {
        // P(X ≥ x) grows with the share: the lowest share at which x is not unusually high.
        solve_logodds(|l| tails_at(x, n, l).1, tail)
    };
    let hi = if x == n {
        f64::INFINITY
    } else {
        // P(X ≤ x) falls as the share grows.
        solve_logodds(|l| -tails_at(x, n, l).0, -tail)
    };
    (lo, hi)
}

fn valid_level(level: f64) -> bool {
    level > 0.0 && level < 1.0
}

/// The exact (Clopper–Pearson) interval of a binomial share x / n at `level` (SciPy's
/// `binomtest(x, n).proportion_ci(level, method="exact")`). `None` when n = 0, x > n or
/// `level` is outside (0, 1).
pub fn clopper_pearson(x: u64, n: u64, level: f64) -> Option<(f64, f64)> {
    if n == 0 || x > n || !valid_level(level) {
        return None;
    }
    let (lo, hi) = clopper_pearson_logodds(x, n, level);
    let share = |l: f64| (-softplus(-l)).exp();
    Some((share(lo), share(hi)))
}

/// Two event counts over their exposures, `a` against `b` (errors over calls of NEW and BASE).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateRatio {
    /// Events of side a.
    pub a: u64,
    /// Exposure of side a (calls; > 0).
    pub exposure_a: f64,
    /// Events of side b.
    pub b: u64,
    /// Exposure of side b (> 0).
    pub exposure_b: f64,
}

impl RateRatio {
    /// Counts `a` of `exposure_a` against `b` of `exposure_b`.
    pub fn new(a: u64, exposure_a: f64, b: u64, exposure_b: f64) -> RateRatio {
        RateRatio {
            a,
            exposure_a,
            b,
            exposure_b,
        }
    }

    fn valid(&self) -> bool {
        let ok = |e: f64| e.is_finite() && e > 0.0;
        ok(self.exposure_a) && ok(self.exposure_b) && self.a.checked_add(self.b).is_some()
    }

    /// Events on both sides together; `None` when the counts are not usable.
    pub fn total(&self) -> Option<u64> {
        if self.valid() {
            self.a.checked_add(self.b)
        } else {
            None
        }
    }

    /// ln(e_a / e_b): the log-odds of side a's share of the events when the rates are equal.
    fn offset(&self) -> f64 {
        self.exposure_a.ln() - self.exposure_b.ln()
    }

    /// The rate ratio (a / e_a) / (b / e_b): 0 when only b has events, +∞ when only a has;
    /// `None` without any event (or with unusable exposures).
    pub fn ratio(&self) -> Option<f64> {
        let k = self.total()?;
        (k > 0).then(|| (self.a as f64 * self.exposure_b) / (self.b as f64 * self.exposure_a))
    }

    /// One-sided p values of "the rate ratio is `theta0`": (P(k_a ≤ a), P(k_a ≥ a)) given the
    /// total. `None` without any event or with `theta0` not positive and finite.
    pub fn tails(&self, theta0: f64) -> Option<(f64, f64)> {
        let k = self.total()?;
        if k == 0 || !(theta0.is_finite() && theta0 > 0.0) {
            return None;
        }
        Some(tails_at(self.a, k, theta0.ln() + self.offset()))
    }

    /// Exact two-sided p value of "the rates are equal" (the central one: twice the smaller
    /// tail, at most 1). `None` without any event: no count could be unusual.
    pub fn p_two_sided(&self) -> Option<f64> {
        let (le, ge) = self.tails(1.0)?;
        Some((2.0 * le.min(ge)).min(1.0))
    }

    /// p value of "the rate ratio lies inside [1/(1+δ), 1+δ]" by two one-sided exact tests:
    /// the larger of the two (small = equivalent). `None` without any event or for δ ≤ 0.
    pub fn p_equivalent(&self, delta: f64) -> Option<f64> {
        if !(delta.is_finite() && delta > 0.0) {
            return None;
        }
        let bound = 1.0 + delta;
        // Against "θ ≤ 1/(1+δ)": many events on side a are evidence; against "θ ≥ 1+δ": few.
        let (_, above_low) = self.tails(1.0 / bound)?;
        let (below_high, _) = self.tails(bound)?;
        Some(above_low.max(below_high).min(1.0))
    }

    /// Exact interval of the rate ratio at `level` (Clopper–Pearson on a's share of the
    /// events): the lower end is 0 when a has no event, the upper +∞ when b has none.
    /// `None` without any event or for `level` outside (0, 1).
    pub fn interval(&self, level: f64) -> Option<(f64, f64)> {
        let k = self.total()?;
        if k == 0 || !valid_level(level) {
            return None;
        }
        let (lo, hi) = clopper_pearson_logodds(self.a, k, level);
        let theta = |l: f64| (l - self.offset()).exp();
        Some((theta(lo), theta(hi)))
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn tails_are_exact_for_small_counts() {
        // Binomial(4, 1/2): P(X ≤ 1) = 5/16, P(X ≥ 1) = 15/16.
        let (le, ge) = binomial_tails(1, 4, 0.5).expect("tails");
        assert!((le - 5.0 / 16.0).abs() < 1e-15 && (ge - 15.0 / 16.0).abs() < 1e-15);
        assert_eq!(binomial_tails(0, 0, 0.3), Some((1.0, 1.0)));
        assert_eq!(binomial_tails(0, 5, 0.0), Some((1.0, 1.0)));
        assert_eq!(binomial_tails(2, 5, 1.0), Some((0.0, 1.0)));
        assert_eq!(binomial_tails(6, 5, 0.5), None);
        assert_eq!(binomial_tails(1, 5, 1.5), None);
    }

    #[test]
    fn no_events_is_no_information() {
        let r = RateRatio::new(0, 1_267_364.0, 0, 685_141.0);
        assert_eq!(r.ratio(), None);
        assert_eq!(r.p_two_sided(), None);
        assert_eq!(r.interval(0.95), None);
        assert_eq!(r.p_equivalent(0.05), None);
        assert_eq!(RateRatio::new(1, 0.0, 1, 1.0).ratio(), None);
        assert_eq!(RateRatio::new(u64::MAX, 1.0, 1, 1.0).p_two_sided(), None);
    }

    #[test]
    fn one_side_without_events_is_open_on_that_side() {
        let r = RateRatio::new(50, 1e6, 0, 1e6);
        assert_eq!(r.ratio(), Some(f64::INFINITY));
        let (lo, hi) = r.interval(0.95).expect("interval");
        assert!(lo > 1.0 && hi == f64::INFINITY, "{lo} {hi}");
        // 50 of 50 events on one side of equal exposures: p = 2 · 2^−50.
        let p = r.p_two_sided().expect("p");
        assert!((p / 2f64.powi(-49) - 1.0).abs() < 1e-9, "{p}");
        let r = RateRatio::new(0, 1e6, 50, 1e6);
        assert_eq!(r.ratio(), Some(0.0));
        assert_eq!(r.interval(0.95).expect("interval").0, 0.0);
    }

    #[test]
    fn large_counts_stay_finite_and_symmetric() {
        let r = RateRatio::new(2_000_000, 4e9, 2_000_000, 4e9);
        assert_eq!(r.p_two_sided(), Some(1.0));
        let (lo, hi) = r.interval(0.95).expect("interval");
        assert!((lo * hi - 1.0).abs() < 1e-9, "{lo} {hi}");
        // ±1.96 · √(1/k_a + 1/k_b) on the log scale.
        let h = 1.959_964 * (1e-6f64).sqrt();
        assert!((hi.ln() - h).abs() < 1e-5, "{hi}");
    }
}
