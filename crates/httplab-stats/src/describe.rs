//! Descriptive statistics and the t interval on a mean.

use crate::{all_finite, mean, sample_variance, t_critical};

/// Descriptive statistics of one sample with a 95 % t interval on the mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Number of values.
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n - 1 denominator); 0 when n = 1.
    pub stddev: f64,
    /// Lower end of the 95 % t interval on the mean; `-inf` when n < 2 (interval unknown).
    pub ci_low: f64,
    /// Upper end of the 95 % t interval on the mean; `+inf` when n < 2 (interval unknown).
    pub ci_high: f64,
}

impl Estimate {
    /// Describes `xs`. `None` when `xs` is empty or holds a non-finite value.
    ///
    /// For n < 2 the interval is unknown and reported as (`-inf`, `+inf`), never NaN.
    pub fn of(xs: &[f64]) -> Option<Estimate> {
        if xs.is_empty() || !all_finite(xs) {
            return None;
        }
        let n = xs.len();
        let m = mean(xs);
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let (stddev, ci_low, ci_high) = if n < 2 {
            (0.0, f64::NEG_INFINITY, f64::INFINITY)
        } else {
            let sd = sample_variance(xs, m).sqrt();
            let (lo, hi) = t_interval(xs, 0.95)?;
            (sd, lo, hi)
        };
        Some(Estimate {
            n,
            mean: m,
            median,
            stddev,
            ci_low,
            ci_high,
        })
    }

    /// Half-width of the interval divided by |mean|: the relative precision of the mean.
    /// Infinite when n < 2 or the mean is 0.
    pub fn relative_half_width(&self) -> f64 {
        if self.n < 2 || self.mean == 0.0 {
            return f64::INFINITY;
        }
        let half = (self.ci_high - self.ci_low) / 2.0;
        if half.is_finite() {
            half / self.mean.abs()
        } else {
            f64::INFINITY
        }
    }
}

/// Two-sided Student t interval for the mean of `xs` at confidence `level` (e.g. 0.95).
///
/// `None` when there are fewer than two values, a value is not finite, or `level` is not in (0, 1).
/// A sample without spread gives the point interval (mean, mean).
pub fn t_interval(xs: &[f64], level: f64) -> Option<(f64, f64)> {
    if xs.len() < 2 || !all_finite(xs) {
        return None;
    }
    let n = xs.len() as f64;
    let m = mean(xs);
    let se = (sample_variance(xs, m) / n).sqrt();
    let t = t_critical(n - 1.0, level)?;
    let half = t * se;
    Some((m - half, m + half))
}

/// Adaptive stopping rule: true when there are at least `min_n` (and at least 2) values and the
/// 95 % interval's relative half-width is at most `precision` (e.g. 0.02 for ±2 %).
pub fn precise_enough(xs: &[f64], precision: f64, min_n: usize) -> bool {
    match Estimate::of(xs) {
        Some(e) => e.n >= min_n.max(2) && e.relative_half_width() <= precision,
        None => false,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn empty_and_non_finite_give_none() {
        assert!(Estimate::of(&[]).is_none());
        assert!(Estimate::of(&[1.0, f64::NAN]).is_none());
        assert!(Estimate::of(&[1.0, f64::INFINITY]).is_none());
        assert!(t_interval(&[1.0], 0.95).is_none());
        assert!(t_interval(&[1.0, 2.0], 1.0).is_none());
        assert!(t_interval(&[1.0, 2.0], 0.0).is_none());
        assert!(t_interval(&[1.0, 2.0], f64::NAN).is_none());
    }

    #[test]
    fn single_value_has_unknown_interval() {
        let e = Estimate::of(&[7.0]).expect("one value");
        assert_eq!(e.n, 1);
        assert_eq!(e.mean, 7.0);
        assert_eq!(e.median, 7.0);
        assert_eq!(e.stddev, 0.0);
        assert_eq!(e.ci_low, f64::NEG_INFINITY);
        assert_eq!(e.ci_high, f64::INFINITY);
        assert_eq!(e.relative_half_width(), f64::INFINITY);
    }

    #[test]
    fn constant_sample_is_a_point() {
        let e = Estimate::of(&[3.0, 3.0, 3.0]).expect("values");
        assert_eq!((e.ci_low, e.ci_high), (3.0, 3.0));
        assert_eq!(e.relative_half_width(), 0.0);
        assert!(precise_enough(&[3.0, 3.0, 3.0], 0.0, 3));
        assert!(!precise_enough(&[3.0, 3.0, 3.0], 0.0, 4));
    }

    #[test]
    fn zero_mean_is_never_precise() {
        let e = Estimate::of(&[-1.0, 1.0]).expect("values");
        assert_eq!(e.relative_half_width(), f64::INFINITY);
        assert!(!precise_enough(&[-1.0, 1.0], 1e9, 2));
        assert!(
            !precise_enough(&[5.0], f64::INFINITY, 1),
            "n < 2 is never precise"
        );
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(
            Estimate::of(&[4.0, 1.0, 3.0, 2.0]).map(|e| e.median),
            Some(2.5)
        );
        assert_eq!(Estimate::of(&[5.0, 1.0, 3.0]).map(|e| e.median), Some(3.0));
    }
}
