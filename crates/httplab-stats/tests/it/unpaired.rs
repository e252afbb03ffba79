//! The unpaired (Welch) ratio of geometric means, checked against SciPy.
//!
//! The reference numbers were produced with Python 3, SciPy 1.17 and NumPy 2.4:
//!
//! ```python
//! import numpy as np
//! from scipy import stats
//! a = np.array([1210., 1185., 1240., 1198., 1225.])
//! b = np.array([1002., 1050., 981., 1020., 1011., 995.])
//! r = stats.ttest_ind(np.log(a), np.log(b), equal_var=False)
//! r.statistic, r.pvalue, r.df
//! #  -> 14.621931758536094, 1.473241178326461e-07, 8.961384145504006
//! ci, ci90 = r.confidence_interval(0.95), r.confidence_interval(0.90)
//! np.exp([ci.low, ci.high, ci90.low, ci90.high])
//! #  -> 1.1665401733557637, 1.2342623459653437, 1.1728040118680152, 1.227670264135264
//! np.exp(np.log(a).mean() - np.log(b).mean())   # -> 1.1999235854957195
//!
//! # Two one-sided tests at δ = 5 % on a close pair, by hand on Welch's se and df:
//! c = np.log([100., 103., 98., 101., 99.5])
//! d = np.log([101., 97., 102.5, 99., 100.2, 98.8, 101.3])
//! va, vb = c.var(ddof=1) / len(c), d.var(ddof=1) / len(d)
//! se = np.sqrt(va + vb); df = (va + vb)**2 / (va**2 / (len(c) - 1) + vb**2 / (len(d) - 1))
//! m = c.mean() - d.mean(); bd = np.log(1.05)
//! max(stats.t.sf((m + bd) / se, df), stats.t.cdf((m - bd) / se, df))
//! #  m 0.003290912962118142, se 0.010822782062771551, df 8.778609252744237,
//! #  p_equivalent 0.0012116604193705752
//! stats.ttest_ind(c, d, equal_var=False).pvalue          # -> 0.7681564281245437
//! np.exp((stats.t.ppf(0.975, df) + stats.t.ppf(0.8, df)) * se) - 1
//! #  -> 0.03473990131801585 (the detectable effect at alpha 5 %, power 80 %)
//! ```

use httplab_stats::{
    decide, welch_t_test, Better, Comparison, DesignOptions, LogRatios, Looks, Outcome, Side,
};

fn close(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol * expected.abs().max(1e-300)
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

const A: [f64; 5] = [1210., 1185., 1240., 1198., 1225.];
const B: [f64; 6] = [1002., 1050., 981., 1020., 1011., 995.];
const C: [f64; 5] = [100., 103., 98., 101., 99.5];
const D: [f64; 7] = [101., 97., 102.5, 99., 100.2, 98.8, 101.3];

#[test]
fn welch_interval_on_logs_matches_scipy() {
    let l = LogRatios::unpaired(&A, &B, Better::Higher);
    assert_close!(l.ratio().expect("ratio"), 1.1999235854957195, 1e-12);
    assert_close!(l.df(), 8.961384145504006, 1e-10);
    let (lo, hi) = l.interval(0.95).expect("interval");
    assert_close!(lo, 1.1665401733557637, 1e-10);
    assert_close!(hi, 1.2342623459653437, 1e-10);
    let (lo, hi) = l.interval(0.90).expect("interval");
    assert_close!(lo, 1.1728040118680152, 1e-10);
    assert_close!(hi, 1.227670264135264, 1e-10);
    assert_close!(l.p_two_sided().expect("p"), 1.473241178326461e-07, 1e-6);
    // The same t test as `welch_t_test` on the logs.
    let ln = |xs: &[f64]| xs.iter().map(|x| x.ln()).collect::<Vec<_>>();
    let w = welch_t_test(&ln(&A), &ln(&B)).expect("welch");
    assert_close!(w.t, 14.621931758536094, 1e-10);
    assert_close!(l.mean / l.se(), w.t, 1e-12);
}

#[test]
fn lower_is_better_flips_the_sign_not_the_spread() {
    let hi = LogRatios::unpaired(&A, &B, Better::Higher);
    let lo = LogRatios::unpaired(&A, &B, Better::Lower);
    assert_close!(lo.mean, -hi.mean, 1e-15);
    assert_close!(lo.se(), hi.se(), 1e-15);
    assert_close!(lo.ratio().expect("ratio"), 1.0 / 1.1999235854957195, 1e-12);
}

#[test]
fn two_one_sided_tests_and_detectable_effect_match_scipy() {
    let l = LogRatios::unpaired(&C, &D, Better::Higher);
    assert_close!(l.mean, 0.003290912962118142, 1e-10);
    assert_close!(l.se(), 0.010822782062771551, 1e-10);
    assert_close!(l.df(), 8.778609252744237, 1e-10);
    assert_close!(
        l.p_equivalent(0.05).expect("p"),
        0.0012116604193705752,
        1e-7
    );
    assert_close!(l.p_two_sided().expect("p"), 0.7681564281245437, 1e-9);
    assert_close!(
        l.detectable(0.05, 0.8).expect("mde"),
        0.03473990131801585,
        1e-7
    );
}

#[test]
fn the_study_rules_decide_unpaired_comparisons() {
    let opts = DesignOptions::default();
    let win = LogRatios::unpaired(&A, &B, Better::Higher);
    let same = LogRatios::unpaired(&C, &D, Better::Higher);
    let lose = LogRatios::unpaired(&B, &A, Better::Higher);
    let ds = decide(
        &[
            Comparison::new(Looks::single(win)),
            Comparison::new(Looks::single(same)),
            Comparison::new(Looks::single(lose)),
        ],
        &opts,
    );
    assert_eq!(
        (ds[0].outcome, ds[0].winner),
        (Outcome::Winner, Some(Side::A))
    );
    assert_eq!(ds[1].outcome, Outcome::Equivalent);
    assert_eq!(
        (ds[2].outcome, ds[2].winner),
        (Outcome::Winner, Some(Side::B))
    );
    // The decision's interval is the Welch one (checked against SciPy above) at the family's
    // level: 1 − α/3 for a family of three.
    let [lo, hi] = ds[0].ci.expect("ci");
    let (want_lo, want_hi) = win.interval(1.0 - 0.05 / 3.0).expect("interval");
    assert_close!(lo, want_lo, 1e-10);
    assert_close!(hi, want_hi, 1e-10);
    assert_eq!(ds[0].ci_level, Some(1.0 - 0.05 / 3.0));
}

#[test]
fn one_run_on_a_side_has_a_ratio_but_no_interval() {
    let l = LogRatios::unpaired(&[1200.0], &B, Better::Higher);
    assert_eq!(l.n, 1);
    assert!(l.ratio().is_some());
    assert!(l.interval(0.95).is_none());
    assert!(l.p_two_sided().is_none());
    assert!(l.detectable(0.05, 0.8).is_none());
    let d = decide(
        &[Comparison::new(Looks::single(l))],
        &DesignOptions::default(),
    );
    assert_eq!(d[0].outcome, Outcome::Inconclusive);
    // No usable value on a side: no ratio at all, and no panic.
    let none = LogRatios::unpaired(&[0.0, f64::NAN], &B, Better::Higher);
    assert_eq!((none.n, none.ratio()), (0, None));
    assert_eq!(none.unpaired.map(|u| (u.n_a, u.n_b)), Some((0, 6)));
}

#[test]
fn runs_to_settle_are_per_side_and_shrink_with_spread() {
    let tight = LogRatios::unpaired(&C, &D, Better::Higher);
    let wide: Vec<f64> = D
        .iter()
        .enumerate()
        .map(|(i, x)| if i % 2 == 0 { x * 1.08 } else { x / 1.08 })
        .collect();
    let loose = LogRatios::unpaired(&C, &wide, Better::Higher);
    let a = tight
        .rounds_to_settle(0.05, 0.05, 0.05, 0.8)
        .expect("tight");
    let b = loose
        .rounds_to_settle(0.05, 0.05, 0.05, 0.8)
        .expect("loose");
    assert!(a < b, "{a} {b}");
}

#[test]
fn grid_values_get_the_grid_spread_per_side() {
    // Two capacity searches per side landing on the same grid points: no spread without a
    // floor; with a 5 % grid each side's log spread is at least ln(1.05)/√12.
    let l = LogRatios::unpaired(&[1000.0, 1000.0], &[960.0, 960.0], Better::Higher);
    assert_eq!(l.se(), 0.0);
    let c = Comparison::new(Looks::single(l)).with_resolution(0.05);
    let u = c.looks.last.unpaired.expect("unpaired");
    let side = (1.05f64).ln() / 12f64.sqrt();
    assert_close!(u.sd_a, side, 1e-12);
    assert_close!(u.sd_b, side, 1e-12);
    assert_close!(c.looks.last.sd, (1.05f64).ln() / 6f64.sqrt(), 1e-12);
    let d = decide(&[c], &DesignOptions::default());
    assert_ne!(d[0].outcome, Outcome::Winner);
}
