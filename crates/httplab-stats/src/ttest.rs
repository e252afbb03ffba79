//! Welch's and the paired t test, and the Holm–Bonferroni adjustment.

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use crate::{all_finite, mean, sample_variance, students_t};

/// The result of a two-sided t test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    /// The t statistic (sign: first sample minus second). `±inf` when the samples have no
    /// spread but differ (see [`welch_t_test`]).
    pub t: f64,
    /// Degrees of freedom (Welch–Satterthwaite for Welch's test, n - 1 for the paired test).
    pub df: f64,
    /// Two-sided p value in [0, 1].
    pub p: f64,
}

/// Builds the test from a mean difference and its standard error. Zero standard error (no spread
/// at all) is decided exactly: equal means give t = 0, p = 1; different means give t = ±inf, p = 0.
pub(crate) fn from_diff(diff: f64, se: f64, df: f64) -> Option<TTest> {
    if se == 0.0 {
        return Some(if diff == 0.0 {
            TTest { t: 0.0, df, p: 1.0 }
        } else {
            TTest {
                t: diff.signum() * f64::INFINITY,
                df,
                p: 0.0,
            }
        });
    }
    let t = diff / se;
    let dist = students_t(df)?;
    // 2 * survival function rather than 2 * (1 - cdf): keeps precision for tiny p values.
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    (t.is_finite() && p.is_finite()).then_some(TTest { t, df, p })
}

/// Welch's two-sample t test (unequal variances), two-sided.
///
/// `None` when a sample has fewer than two values or a value is not finite. When neither sample
/// has any spread the test is decided exactly (equal means: p = 1; different means: p = 0) and
/// `df` is n_a + n_b - 2.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<TTest> {
    if a.len() < 2 || b.len() < 2 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    let qa = sample_variance(a, ma) / na;
    let qb = sample_variance(b, mb) / nb;
    let se2 = qa + qb;
    if se2 == 0.0 {
        return from_diff(ma - mb, 0.0, na + nb - 2.0);
    }
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    from_diff(ma - mb, se2.sqrt(), df)
}

/// Paired t test on the differences a\[i\] - b\[i\], two-sided.
///
/// `None` when the lengths differ, there are fewer than two pairs, or a value is not finite.
/// Differences without spread are decided exactly (all zero: p = 1; otherwise p = 0).
pub fn paired_t_test(a: &[f64], b: &[f64]) -> Option<TTest> {
    if a.len() != b.len() || a.len() < 2 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if !all_finite(&d) {
        return None;
    }
    let n = d.len() as f64;
    let md = mean(&d);
    let se = (sample_variance(&d, md) / n).sqrt();
    from_diff(md, se, n - 1.0)
}

/// Holm–Bonferroni step-down adjustment of a family of p values.
///
/// Returns the adjusted p values in the input order: sorted ascending, the i-th smallest (from 0)
/// becomes max over j <= i of (m - j) * p_(j), capped at 1. A non-finite or out-of-range input
/// counts as 1 (no evidence) rather than poisoning the family.
pub fn holm_adjust(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|&x| if (0.0..=1.0).contains(&x) { x } else { 1.0 })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    // Stable sort: ties keep input order, so the output is deterministic.
    order.sort_by(|&i, &j| clean[i].total_cmp(&clean[j]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let v = ((m - rank) as f64 * clean[i]).min(1.0);
        running = running.max(v);
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn bad_input_gives_none() {
        assert!(welch_t_test(&[1.0], &[1.0, 2.0]).is_none());
        assert!(welch_t_test(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
        assert!(paired_t_test(&[1.0, 2.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(paired_t_test(&[1.0], &[1.0]).is_none());
    }

    #[test]
    fn no_spread_is_decided_exactly() {
        let same = welch_t_test(&[2.0, 2.0], &[2.0, 2.0, 2.0]).expect("test");
        assert_eq!((same.t, same.p), (0.0, 1.0));
        let diff = welch_t_test(&[3.0, 3.0], &[2.0, 2.0]).expect("test");
        assert_eq!((diff.t, diff.p), (f64::INFINITY, 0.0));
        let shift = paired_t_test(&[2.0, 3.0, 4.0], &[1.0, 2.0, 3.0]).expect("test");
        assert_eq!((shift.t, shift.p, shift.df), (f64::INFINITY, 0.0, 2.0));
    }

    #[test]
    fn holm_edge_cases() {
        assert!(holm_adjust(&[]).is_empty());
        assert_eq!(holm_adjust(&[0.03]), vec![0.03]);
        assert_eq!(holm_adjust(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert_eq!(holm_adjust(&[0.6, 0.6]), vec![1.0, 1.0]);
    }
}
