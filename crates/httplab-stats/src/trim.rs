//! Yuen's trimmed-mean t, the statistic every paired comparison is decided on.
//!
//! Of n log differences, k = ⌊g·n⌋ are trimmed from each end (g = [`TRIM`]). The estimate is
//! the mean of the n − 2k left, the trimmed mean; its standard error is the Tukey–McLaughlin
//! one, s_w / ((1 − 2k/n)·√n), with s_w the sample standard deviation of the winsorized
//! differences (the k smallest set to the (k+1)-th smallest, the k largest to the (k+1)-th
//! largest); the t quantities have n − 2k − 1 degrees of freedom (Yuen 1974; Wilcox's `trimci`).
//! The fraction in the standard error is the one actually trimmed, k/n, so that with k = 0 (fewer
//! than 1/g rounds) the statistic is exactly the paired t.
//!
//! Why: on a shared machine a round now and then meets a disturbance (one round in ten, one
//! server 15–60 % worse on the 2-core machine), and the plain t statistic takes such rounds at
//! face value: the mean moves and the spread grows. The trimmed mean sets the extreme rounds
//! aside and the winsorized spread does not grow with them. Under normal noise the price is a
//! little efficiency and 2k degrees of freedom (`docs/statistics.md`).

/// Fraction of a stage's log differences trimmed from each end.
pub const TRIM: f64 = 0.15;

/// Values trimmed from each end of `n`: ⌊g·n⌋ (the small tolerance keeps g·n that is an
/// integer in exact arithmetic from rounding down).
pub(crate) fn count(n: usize) -> usize {
    ((TRIM * n as f64) + 1e-9).floor() as usize
}

/// Degrees of freedom of the trimmed t with `n` values: n − 2k − 1.
pub(crate) fn df(n: usize) -> f64 {
    n as f64 - 2.0 * count(n) as f64 - 1.0
}

/// The trimmed statistic of some finite values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Trimmed {
    /// Values trimmed from each end.
    pub k: usize,
    /// The trimmed mean.
    pub mean: f64,
    /// The per-value spread the standard error is made of: s_w / (1 − 2k/n), so that the
    /// standard error is spread/√n (the sample standard deviation when k = 0; 0 when n < 2).
    pub spread: f64,
}

/// Yuen's trimmed statistic of `xs` (all finite, at least one value) with k = ⌊g·n⌋.
pub(crate) fn trimmed(xs: &[f64]) -> Option<Trimmed> {
    trimmed_k(xs, count(xs.len()))
}

/// The trimmed statistic with `k` values trimmed from each end.
pub(crate) fn trimmed_k(xs: &[f64], k: usize) -> Option<Trimmed> {
    let n = xs.len();
    if n == 0 || 2 * k >= n || !crate::all_finite(xs) {
        return None;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let kept = &s[k..n - k];
    let mean = crate::mean(kept);
    if n < 2 {
        return Some(Trimmed {
            k,
            mean,
            spread: 0.0,
        });
    }
    let (lo, hi) = (s[k], s[n - 1 - k]);
    let w: Vec<f64> = s.iter().map(|x| x.clamp(lo, hi)).collect();
    let sw = crate::sample_variance(&w, crate::mean(&w)).sqrt();
    let spread = sw * n as f64 / (n - 2 * k) as f64;
    Some(Trimmed { k, mean, spread })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn no_trim_is_the_plain_mean_and_sd() {
        let d = [0.1, -0.05, 0.3, 0.02];
        let t = trimmed_k(&d, 0).expect("stat");
        let m = d.iter().sum::<f64>() / 4.0;
        let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 3.0).sqrt();
        assert_eq!(t.k, 0);
        assert!((t.mean - m).abs() < 1e-15 && (t.spread - sd).abs() < 1e-15);
    }

    #[test]
    fn counts_and_degrees_of_freedom() {
        // g = 0.15: nothing trimmed below 7 values, one a side from 7 to 13, two from 14.
        assert_eq!(
            (1..=21).map(count).collect::<Vec<_>>(),
            [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3]
        );
        assert_eq!(df(4), 3.0);
        assert_eq!(df(10), 7.0);
        assert_eq!(df(16), 11.0);
        assert!(trimmed(&[]).is_none());
        assert!(trimmed(&[1.0, f64::NAN]).is_none());
        assert!(trimmed_k(&[1.0, 2.0], 1).is_none());
        assert_eq!(
            trimmed(&[0.3]),
            Some(Trimmed {
                k: 0,
                mean: 0.3,
                spread: 0.0
            })
        );
    }

    #[test]
    fn yuen_matches_trimci_worked_by_hand() {
        // Wilcox's trimci(x, tr) (R, WRS/WRS2) for tr = 0.2 and 0.1 (k = 2 and 1 of 10), worked
        // by hand (no SciPy here; scipy.stats.trim_mean(x, tr) gives the same trimmed means):
        //
        // ```python
        // from statistics import mean, stdev
        // x = [0.031, -0.012, 0.048, 0.022, 0.410, 0.019, -0.300, 0.027, 0.035, 0.006]
        // def yuen(x, k):
        //     n = len(x); s = sorted(x)
        //     tm = mean(s[k:n-k])
        //     w = [min(max(v, s[k]), s[n-1-k]) for v in s]
        //     se = stdev(w) / ((1 - 2*k/n) * n ** 0.5)
        //     return tm, se, tm / se, n - 2*k - 1
        // yuen(x, 2)  # (0.023333333333333334, 0.0065489609014628344, 3.5629061899150125, 5)
        // yuen(x, 1)  # (0.022, 0.008536685539481935, 2.57711261569266, 7)
        // # the plain t of the same values: mean 0.0286, sd 0.1687, t = 0.536
        // ```
        let x = [
            0.031, -0.012, 0.048, 0.022, 0.410, 0.019, -0.300, 0.027, 0.035, 0.006,
        ];
        let root = 10f64.sqrt();
        for (k, mean, se, t) in [
            (
                2,
                0.023_333_333_333_333_334,
                0.006_548_960_901_462_834_4,
                3.562_906_189_915_012_5,
            ),
            (1, 0.022, 0.008_536_685_539_481_935, 2.577_112_615_692_66),
        ] {
            let y = trimmed_k(&x, k).expect("stat");
            assert!((y.mean - mean).abs() < 1e-15, "{y:?}");
            assert!((y.spread / root - se).abs() < 1e-15, "{y:?}");
            assert!((y.mean / (y.spread / root) - t).abs() < 1e-12, "{y:?}");
        }
        // g = 0.15 trims one a side of 10.
        assert_eq!(trimmed(&x).map(|y| y.k), Some(1));
    }
}
