//! The exact test of two counts (a Poisson rate ratio, conditional on the total) and its
//! Clopper–Pearson interval, against values computed independently.
//!
//! SciPy documents `binomtest(3, n=15, p=0.1, alternative="greater")` with p value
//! 0.18406106910639114 and `proportion_ci(confidence_level=0.95)` (one-sided, so the lower end
//! of the two-sided 90 % interval) with low 0.05684686759024681. The other values were computed
//! by the formulas with exact fractions and mpmath (50 digits), in Python 3:
//!
//! ```python
//! from fractions import Fraction as F
//! from math import comb
//! import mpmath as mp
//! mp.mp.dps = 50
//!
//! def tails(x, n, p):  # P(X <= x), P(X >= x), X ~ Binomial(n, p), exactly
//!     pmf = [F(comb(n, j)) * F(p)**j * (1 - F(p))**(n - j) for j in range(n + 1)]
//!     return sum(pmf[:x + 1]), sum(pmf[x:])
//!
//! def cp(x, n, level):  # Clopper–Pearson by bisection on the regularized incomplete beta
//!     a = (1 - mp.mpf(level)) / 2
//!     def solve(f, target):
//!         lo, hi = mp.mpf(0), mp.mpf(1)
//!         for _ in range(200):
//!             mid = (lo + hi) / 2
//!             lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
//!         return (lo + hi) / 2
//!     lo = 0 if x == 0 else solve(lambda p: mp.betainc(x, n - x + 1, 0, p, regularized=True), a)
//!     hi = 1 if x == n else solve(lambda p: mp.betainc(x + 1, n - x, 0, p, regularized=True), 1 - a)
//!     return float(lo), float(hi)
//!
//! def rate_ratio(a, ea, b, eb, level=0.95):  # central p value and interval of (a/ea)/(b/eb)
//!     le, ge = tails(a, a + b, F(ea) / (F(ea) + F(eb)))
//!     lo, hi = cp(a, a + b, level)
//!     theta = lambda s: s / (1 - s) * mp.mpf(eb) / mp.mpf(ea) if s < 1 else mp.inf
//!     return float(min(1, 2 * min(le, ge))), float(theta(lo)), float(theta(hi))
//!
//! cp(7, 20, 0.95)                          # -> 0.15390920478454118, 0.592188534532828
//! rate_ratio(60, 10**6, 30, 1_200_000)     # -> 8.063503890268376e-05, 1.5238717689994783, 3.854069542798791
//! rate_ratio(41, 28010, 15, 19017)         # -> 0.0476602467545659, 1.0056840626892576, 3.6093003110779054
//! rate_ratio(3, 1267364, 1, 685141)        # -> 1.0, 0.13022061552574343, 85.14072267532623
//! rate_ratio(1, 100, 0, 100)               # -> 1.0, 0.025641025641025664, inf
//! rate_ratio(50, 10**6, 0, 10**6)          # -> 1.7763568394002505e-15, 13.060399108834973, inf
//!
//! def tost(a, ea, b, eb, delta):  # two one-sided exact tests of 1/(1+δ) < θ < 1+δ
//!     share = lambda t: F(t) * F(ea) / (F(t) * F(ea) + F(eb))
//!     _, ge = tails(a, a + b, share(1 / (1 + F(delta))))
//!     le, _ = tails(a, a + b, share(1 + F(delta)))
//!     return float(max(ge, le))
//! tost(105, 10**5, 100, 10**5, F(1, 2))     # -> 0.006646308792190183
//! tost(30, 10**5, 20, 10**5, 1)             # -> 0.1964138647889193
//! ```

use httplab_stats::{binomial_tails, clopper_pearson, RateRatio};

fn close(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol * expected.abs().max(1e-300)
}

macro_rules! assert_close {
    ($actual:expr, $expected:expr, $tol:expr) => {{
        let (a, e) = ($actual, $expected);
        assert!(
            close(a, e, $tol),
            "{} = {a}, expected {e} (relative tol {})",
            stringify!($actual),
            $tol
        );
    }};
}

#[test]
fn binomial_test_and_interval_match_scipys_example() {
    let (_, greater) = binomial_tails(3, 15, 0.1).expect("tails");
    assert_close!(greater, 0.18406106910639114, 1e-12);
    let (lo, hi) = clopper_pearson(3, 15, 0.90).expect("interval");
    assert_close!(lo, 0.05684686759024681, 1e-10);
    assert!(hi < 1.0);
}

#[test]
fn clopper_pearson_matches_the_formula() {
    let (lo, hi) = clopper_pearson(7, 20, 0.95).expect("interval");
    assert_close!(lo, 0.15390920478454118, 1e-10);
    assert_close!(hi, 0.592188534532828, 1e-10);
    // Open ends: none of 10 has the closed form 1 − (α/2)^(1/n) above, and all of 10 below.
    let (lo, hi) = clopper_pearson(0, 10, 0.95).expect("interval");
    assert_eq!(lo, 0.0);
    assert_close!(hi, 1.0 - 0.025f64.powf(0.1), 1e-10);
    let (lo, hi) = clopper_pearson(10, 10, 0.95).expect("interval");
    assert_close!(lo, 0.025f64.powf(0.1), 1e-10);
    assert_eq!(hi, 1.0);
    assert_eq!(clopper_pearson(0, 0, 0.95), None);
    assert_eq!(clopper_pearson(1, 2, 1.0), None);
}

#[test]
fn rate_ratio_test_and_interval_match_the_formula() {
    let cases: [(u64, f64, u64, f64, [f64; 3]); 5] = [
        (
            60,
            1e6,
            30,
            1.2e6,
            [8.063503890268376e-05, 1.5238717689994783, 3.854069542798791],
        ),
        (
            41,
            28010.0,
            15,
            19017.0,
            [0.0476602467545659, 1.0056840626892576, 3.6093003110779054],
        ),
        (
            3,
            1_267_364.0,
            1,
            685_141.0,
            [1.0, 0.13022061552574343, 85.14072267532623],
        ),
        (
            1,
            100.0,
            0,
            100.0,
            [1.0, 0.025641025641025664, f64::INFINITY],
        ),
        (
            50,
            1e6,
            0,
            1e6,
            [1.7763568394002505e-15, 13.060399108834973, f64::INFINITY],
        ),
    ];
    for (a, ea, b, eb, [p, lo, hi]) in cases {
        let r = RateRatio::new(a, ea, b, eb);
        let what = format!("{a} of {ea} against {b} of {eb}");
        let got = r.p_two_sided().expect("p");
        assert!(close(got, p, 1e-8), "{what}: p = {got}, expected {p}");
        let (l, h) = r.interval(0.95).expect("interval");
        assert!(close(l, lo, 1e-9), "{what}: lower {l}, expected {lo}");
        if hi.is_finite() {
            assert!(close(h, hi, 1e-9), "{what}: upper {h}, expected {hi}");
        } else {
            assert_eq!(h, f64::INFINITY, "{what}");
        }
    }
}

#[test]
fn equivalence_of_rates_by_two_exact_one_sided_tests() {
    let p = RateRatio::new(105, 1e5, 100, 1e5)
        .p_equivalent(0.5)
        .expect("p");
    assert_close!(p, 0.006646308792190183, 1e-8);
    let p = RateRatio::new(30, 1e5, 20, 1e5)
        .p_equivalent(1.0)
        .expect("p");
    assert_close!(p, 0.1964138647889193, 1e-8);
}

#[test]
fn the_decision_agrees_with_the_interval() {
    // Central p value ≤ α exactly when the 1 − α interval leaves 1 out, across small counts.
    for a in 0..=40u64 {
        for b in 0..=40u64 {
            let r = RateRatio::new(a, 1e6, b, 1.7e6);
            let (Some(p), Some((lo, hi))) = (r.p_two_sided(), r.interval(0.95)) else {
                assert_eq!(a + b, 0);
                continue;
            };
            let excludes = lo > 1.0 || hi < 1.0;
            // Ties at the boundary are measure-zero; stay clear of them.
            if (p - 0.05).abs() > 1e-9 {
                assert_eq!(p <= 0.05, excludes, "{a} vs {b}: p = {p}, CI {lo}…{hi}");
            }
        }
    }
}
