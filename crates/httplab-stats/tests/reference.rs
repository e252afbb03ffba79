//! Checks against values computed independently with SciPy / statsmodels / NumPy.
//!
//! The reference numbers were produced with Python 3, scipy, statsmodels and numpy:
//!
//! ```python
//! import numpy as np
//! from scipy import stats
//! from statsmodels.stats.multitest import multipletests
//! xs = np.array([1012.3, 998.7, 1005.1, 1020.4, 990.2])
//! stats.t.interval(0.95, len(xs) - 1, loc=xs.mean(), scale=stats.sem(xs))
//! #  -> (990.7985824632271, 1019.8814175367727)
//! stats.t.interval(0.99, len(xs) - 1, loc=xs.mean(), scale=stats.sem(xs))
//! #  -> (981.2264074863656, 1029.4535925136342)
//! xs.mean(), np.median(xs), xs.std(ddof=1)
//! #  -> 1005.3399999999999, 1005.1, 11.711233923033012
//! stats.t.interval(0.95, 1, loc=4.0, scale=stats.sem([3.0, 5.0]))
//! #  -> (-8.706204736174694, 16.706204736174694)
//! stats.ttest_ind([10.1, 12.3, 11.8, 9.7, 10.9, 11.4], [12.9, 13.4, 11.8, 14.1, 12.6],
//!                 equal_var=False)
//! #  -> t -3.4325800251174656, df 8.973044291272265, p 0.007510955971778877
//! stats.ttest_ind([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 2.0, 3.5, 4.5, 5.0, 1.0, 2.2], equal_var=False)
//! #  -> t -0.33574978483397355, df 6.707141994003753, p 0.7473165226457845
//! stats.ttest_rel([101.2, 98.4, 103.5, 99.9, 102.1], [97.8, 96.1, 100.2, 98.3, 99.0])
//! #  -> t 7.956246286704919, df 4.0, p 0.0013517943108034252
//! stats.ttest_rel([5.0, 6.0, 7.0], [5.1, 5.8, 7.4])
//! #  -> t -0.5773502691896248, df 2.0, p 0.6220355269907734
//! multipletests([0.01, 0.04, 0.03, 0.005], method="holm")[1]  # -> [0.03, 0.06, 0.06, 0.02]
//! multipletests([0.2, 0.01, 0.5], method="holm")[1]          # -> [0.4, 0.03, 0.5]
//! multipletests([0.04, 0.04, 0.01], method="holm")[1]        # -> [0.08, 0.08, 0.03]
//!
//! def boot(a, b, paired, level=0.95, B=200000, seed=0):   # percentile bootstrap, numpy
//!     a, b = np.asarray(a), np.asarray(b)
//!     rng = np.random.default_rng(seed)
//!     if paired:
//!         idx = rng.integers(0, len(a), size=(B, len(a)))
//!         ra, rb = a[idx].mean(axis=1), b[idx].mean(axis=1)
//!     else:
//!         ra = a[rng.integers(0, len(a), size=(B, len(a)))].mean(axis=1)
//!         rb = b[rng.integers(0, len(b), size=(B, len(b)))].mean(axis=1)
//!     t = (1 - level) / 2
//!     return np.percentile(ra / rb, [100 * t, 100 * (1 - t)])
//! boot([13100, 12950, 13240, 13020, 13180], [11000, 11100, 10900, 11050, 10980], True)
//! #  -> [1.17594937, 1.20445825]
//! boot([50.1, 52.3, 49.8, 51.0], [45.2, 46.1, 44.9, 45.8, 46.3, 45.0], False)
//! #  -> [1.09344262, 1.13980263]  (seeds 0..2 agree to 1e-4)
//! boot([100, 110, 95, 105, 102], [101, 98, 107, 99, 104], True)
//! #  -> [0.9389313, 1.07287449]; the same with B=10000 and seeds 0..7 gives an upper end of
//! #     1.07214, 1.07287 or 1.08048 (the resampled ratios take few distinct values), and the exact
//! #     distribution over all 5**5 index tuples has percentiles [0.9389313, 1.07287449].
//! ```

use httplab_stats::{
    bootstrap_ratio_ci, holm_adjust, paired_t_test, precise_enough, t_interval, welch_t_test,
    Estimate,
};

fn close(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol * expected.abs().max(1.0)
}

macro_rules! assert_close {
    ($actual:expr, $expected:expr, $tol:expr) => {{
        let (a, e) = ($actual, $expected);
        assert!(
            close(a, e, $tol),
            "{} = {a}, expected {e} (tol {})",
            stringify!($actual),
            $tol
        );
    }};
}

const XS: [f64; 5] = [1012.3, 998.7, 1005.1, 1020.4, 990.2];

#[test]
fn t_interval_matches_scipy() {
    let (lo, hi) = t_interval(&XS, 0.95).expect("interval");
    assert_close!(lo, 990.7985824632271, 1e-10);
    assert_close!(hi, 1019.8814175367727, 1e-10);
    let (lo, hi) = t_interval(&XS, 0.99).expect("interval");
    assert_close!(lo, 981.2264074863656, 1e-10);
    assert_close!(hi, 1029.4535925136342, 1e-10);
    // Two values: one degree of freedom, the widest case.
    let (lo, hi) = t_interval(&[3.0, 5.0], 0.95).expect("interval");
    assert_close!(lo, -8.706204736174694, 1e-10);
    assert_close!(hi, 16.706204736174694, 1e-10);
}

#[test]
fn estimate_matches_numpy() {
    let e = Estimate::of(&XS).expect("estimate");
    assert_eq!(e.n, 5);
    assert_close!(e.mean, 1005.3399999999999, 1e-12);
    assert_close!(e.median, 1005.1, 1e-12);
    assert_close!(e.stddev, 11.711233923033012, 1e-12);
    assert_close!(e.ci_low, 990.7985824632271, 1e-10);
    assert_close!(e.ci_high, 1019.8814175367727, 1e-10);
    // Relative half-width: (1019.88 - 990.80) / 2 / 1005.34 = 0.014464...
    let rhw = (1019.8814175367727 - 990.7985824632271) / 2.0 / 1005.3399999999999;
    assert_close!(e.relative_half_width(), rhw, 1e-10);
    assert!(precise_enough(&XS, 0.02, 5));
    assert!(!precise_enough(&XS, 0.01, 5));
    assert!(!precise_enough(&XS, 0.02, 6));
}

#[test]
fn welch_matches_scipy() {
    let a = [10.1, 12.3, 11.8, 9.7, 10.9, 11.4];
    let b = [12.9, 13.4, 11.8, 14.1, 12.6];
    let w = welch_t_test(&a, &b).expect("test");
    assert_close!(w.t, -3.4325800251174656, 1e-10);
    assert_close!(w.df, 8.973044291272265, 1e-10);
    assert_close!(w.p, 0.007510955971778877, 1e-8);
    // Swapping the samples flips t only.
    let s = welch_t_test(&b, &a).expect("test");
    assert_close!(s.t, 3.4325800251174656, 1e-10);
    assert_close!(s.p, w.p, 1e-12);

    let w = welch_t_test(
        &[1.0, 2.0, 3.0, 4.0],
        &[1.5, 2.5, 2.0, 3.5, 4.5, 5.0, 1.0, 2.2],
    )
    .expect("test");
    assert_close!(w.t, -0.33574978483397355, 1e-10);
    assert_close!(w.df, 6.707141994003753, 1e-10);
    assert_close!(w.p, 0.7473165226457845, 1e-8);
}

#[test]
fn paired_matches_scipy() {
    let p = paired_t_test(
        &[101.2, 98.4, 103.5, 99.9, 102.1],
        &[97.8, 96.1, 100.2, 98.3, 99.0],
    )
    .expect("test");
    assert_close!(p.t, 7.956246286704919, 1e-9);
    assert_eq!(p.df, 4.0);
    assert_close!(p.p, 0.0013517943108034252, 1e-7);

    let p = paired_t_test(&[5.0, 6.0, 7.0], &[5.1, 5.8, 7.4]).expect("test");
    assert_close!(p.t, -0.5773502691896248, 1e-9);
    assert_eq!(p.df, 2.0);
    assert_close!(p.p, 0.6220355269907734, 1e-8);
}

#[test]
fn holm_matches_statsmodels() {
    let cases: [(&[f64], &[f64]); 3] = [
        (&[0.01, 0.04, 0.03, 0.005], &[0.03, 0.06, 0.06, 0.02]),
        (&[0.2, 0.01, 0.5], &[0.4, 0.03, 0.5]),
        (&[0.04, 0.04, 0.01], &[0.08, 0.08, 0.03]),
    ];
    for (input, expected) in cases {
        let got = holm_adjust(input);
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(expected) {
            assert_close!(*g, *e, 1e-12);
        }
    }
}

const EVENT: [f64; 5] = [13100.0, 12950.0, 13240.0, 13020.0, 13180.0];
const H2O: [f64; 5] = [11000.0, 11100.0, 10900.0, 11050.0, 10980.0];

#[test]
fn bootstrap_is_reproducible_for_a_seed() {
    let one = bootstrap_ratio_ci(&EVENT, &H2O, false, 0.95, 5000, 42);
    let two = bootstrap_ratio_ci(&EVENT, &H2O, false, 0.95, 5000, 42);
    assert_eq!(one, two);
    assert!(one.is_some());
    let other = bootstrap_ratio_ci(&EVENT, &H2O, false, 0.95, 5000, 43);
    assert_ne!(one, other, "a different seed draws different resamples");
}

#[test]
fn bootstrap_of_identical_samples_is_a_point() {
    // Paired identical samples: every resample has the same mean on both sides.
    let xs = [3.0, 4.5, 5.25, 9.0];
    assert_eq!(
        bootstrap_ratio_ci(&xs, &xs, true, 0.95, 2000, 7),
        Some((1.0, 1.0))
    );
    // Constant samples, paired or not: every resample gives the same ratio.
    let (lo, hi) = bootstrap_ratio_ci(&[6.0; 4], &[3.0; 7], false, 0.95, 2000, 7).expect("ci");
    assert_eq!((lo, hi), (2.0, 2.0));
}

#[test]
fn bootstrap_contains_the_observed_ratio_and_excludes_one_for_a_clear_gap() {
    let observed = 1.1900781391968018; // mean(EVENT) / mean(H2O)
    for paired in [true, false] {
        let (lo, hi) = bootstrap_ratio_ci(&EVENT, &H2O, paired, 0.95, 10_000, 1).expect("ci");
        assert!(lo <= observed && observed <= hi, "{lo} {hi}");
        assert!(lo > 1.0, "clear gap: CI excludes 1 ({lo}, {hi})");
    }
}

#[test]
fn bootstrap_agrees_with_numpy() {
    // Monte Carlo error of a 2.5 % quantile at 10 000 resamples is well under 0.5 % here.
    let (lo, hi) = bootstrap_ratio_ci(&EVENT, &H2O, true, 0.95, 10_000, 1).expect("ci");
    assert_close!(lo, 1.17594937, 5e-3);
    assert_close!(hi, 1.20445825, 5e-3);

    let slow = [50.1, 52.3, 49.8, 51.0];
    let fast = [45.2, 46.1, 44.9, 45.8, 46.3, 45.0];
    let (lo, hi) = bootstrap_ratio_ci(&slow, &fast, false, 0.95, 10_000, 1).expect("ci");
    assert_close!(lo, 1.09344262, 5e-3);
    assert_close!(hi, 1.13980263, 5e-3);

    let a = [100.0, 110.0, 95.0, 105.0, 102.0];
    let b = [101.0, 98.0, 107.0, 99.0, 104.0];
    // Few distinct resampled ratios: the upper end jumps between neighbouring values (numpy
    // itself gives 1.072 to 1.080 across seeds), hence the looser tolerance.
    let (lo, hi) = bootstrap_ratio_ci(&a, &b, true, 0.95, 10_000, 1).expect("ci");
    assert_close!(lo, 0.9389313, 1e-2);
    assert_close!(hi, 1.07287449, 1e-2);
}
