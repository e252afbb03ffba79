//! Percentile bootstrap interval of a ratio of means.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::all_finite;

/// Percentile bootstrap confidence interval of mean(a) / mean(b) at `level` (e.g. 0.95).
///
/// - `paired`: `a` and `b` have the same length and element i of both comes from the same round;
///   rounds are resampled jointly (one index draw for both). Otherwise `a` and `b` are resampled
///   independently.
/// - `resamples`: number of bootstrap resamples (10 000 is the usual choice).
/// - `seed`: the generator (PCG64) is seeded with it, so the same input and seed always give the
///   same interval.
///
/// `None` when a sample is empty, a value is not finite or is negative, mean(b) is 0, `paired`
/// is asked with different lengths, `resamples` is 0, or `level` is not in (0, 1). A resample
/// whose denominator mean is 0 counts as `+inf` (or is skipped when its numerator mean is 0
/// too, the ratio then being undefined).
///
/// The interval's ends are the (1 - level)/2 and (1 + level)/2 quantiles of the resampled ratios,
/// interpolated linearly between order statistics (numpy's default percentile rule).
pub fn bootstrap_ratio_ci(
    a: &[f64],
    b: &[f64],
    paired: bool,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    if paired && a.len() != b.len() {
        return None;
    }
    if !all_finite(a) || !all_finite(b) || a.iter().chain(b).any(|&x| x < 0.0) {
        return None;
    }
    if b.iter().sum::<f64>() == 0.0 {
        return None;
    }
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (sa, sb) = if paired {
            let n = a.len();
            let (mut sa, mut sb) = (0.0, 0.0);
            for _ in 0..n {
                let i = rng.random_range(0..n);
                sa += a[i];
                sb += b[i];
            }
            (sa / n as f64, sb / n as f64)
        } else {
            (resample_mean(a, &mut rng), resample_mean(b, &mut rng))
        };
        if sb == 0.0 {
            if sa > 0.0 {
                ratios.push(f64::INFINITY);
            }
        } else {
            ratios.push(sa / sb);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((quantile(&ratios, tail), quantile(&ratios, 1.0 - tail)))
}

fn resample_mean(xs: &[f64], rng: &mut Pcg64) -> f64 {
    let n = xs.len();
    let sum: f64 = (0..n).map(|_| xs[rng.random_range(0..n)]).sum();
    sum / n as f64
}

/// Quantile `q` in [0, 1] of sorted, non-empty `xs` with linear interpolation between order
/// statistics (Hyndman–Fan type 7, numpy's default). Written out because it is four lines and the
/// bootstrap cross-check against numpy must use the same rule.
fn quantile(xs: &[f64], q: f64) -> f64 {
    let h = (xs.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let (x_lo, x_hi) = (xs[lo], xs[hi]);
    if lo == hi || x_lo == x_hi {
        x_lo
    } else {
        x_lo + (h - lo as f64) * (x_hi - x_lo)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn quantile_matches_type_7() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert_eq!(quantile(&xs, 1.0), 4.0);
        assert_eq!(quantile(&xs, 0.5), 2.5);
        // numpy.percentile([1, 2, 3, 4], 2.5) == 1.075
        assert!((quantile(&xs, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(quantile(&[5.0], 0.3), 5.0);
        assert_eq!(quantile(&[1.0, f64::INFINITY], 1.0), f64::INFINITY);
    }

    #[test]
    fn bad_input_gives_none() {
        let ok = [1.0, 2.0];
        assert!(bootstrap_ratio_ci(&[], &ok, false, 0.95, 10, 1).is_none());
        assert!(bootstrap_ratio_ci(&ok, &[1.0, 2.0, 3.0], true, 0.95, 10, 1).is_none());
        assert!(bootstrap_ratio_ci(&ok, &ok, false, 1.0, 10, 1).is_none());
        assert!(bootstrap_ratio_ci(&ok, &ok, false, 0.95, 0, 1).is_none());
        assert!(bootstrap_ratio_ci(&ok, &[0.0, 0.0], false, 0.95, 10, 1).is_none());
        assert!(bootstrap_ratio_ci(&ok, &[-1.0, 2.0], false, 0.95, 10, 1).is_none());
        assert!(bootstrap_ratio_ci(&[f64::NAN, 1.0], &ok, false, 0.95, 10, 1).is_none());
    }

    #[test]
    fn zero_denominator_resamples_are_infinite() {
        let (lo, hi) =
            bootstrap_ratio_ci(&[1.0, 1.0], &[0.0, 1.0], false, 0.95, 2000, 3).expect("ci");
        assert!(lo.is_finite() && lo > 0.0);
        assert_eq!(hi, f64::INFINITY);
    }
}
