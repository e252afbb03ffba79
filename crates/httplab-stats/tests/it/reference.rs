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
//! ```

use httplab_stats::{
    holm_adjust, paired_t_test, precise_enough, t_interval, welch_t_test, Estimate,
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
