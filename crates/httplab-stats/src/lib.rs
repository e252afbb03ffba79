//! Statistics for httplab studies: descriptive estimates with t intervals, two-sample and paired
//! t tests, the Holm–Bonferroni adjustment, percentile bootstrap intervals of a ratio of means,
//! and the per-workload [`verdict`] that says "A beats B" only when the data support it.
//!
//! Pure library: no I/O, no dependency on other httplab crates. Every function validates its
//! input and answers `None` (or a documented convention) instead of panicking; everything is
//! deterministic for a given input and seed. The rules are written down in the crate README and
//! in `docs/statistics.md` of the workspace.
//!
//! ```
//! use httplab_stats::{verdict, Better, Sample, VerdictOptions};
//!
//! let event = [13100.0, 12950.0, 13240.0, 13020.0, 13180.0]; // one value per round
//! let nginx = [10050.0, 9980.0, 10120.0, 9900.0, 10010.0];
//! let v = verdict(
//!     "reply_rate",
//!     Better::Higher,
//!     &[
//!         Sample { name: "httplab event", values: &event, client_bound: false },
//!         Sample { name: "nginx", values: &nginx, client_bound: false },
//!     ],
//!     &VerdictOptions::default(),
//! );
//! assert_eq!(v.winner.as_deref(), Some("httplab event"));
//! println!("{}", v.note);
//! ```

mod bootstrap;
mod describe;
mod format;
mod ttest;
mod verdict;

pub use bootstrap::bootstrap_ratio_ci;
pub use describe::{precise_enough, t_interval, Estimate};
pub use format::{format_p, format_sig3};
pub use ttest::{holm_adjust, paired_t_test, welch_t_test, TTest};
pub use verdict::{verdict, Better, Sample, Verdict, VerdictOptions, DEFAULT_SEED};

/// Mean of a non-empty slice (callers check emptiness).
fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n - 1 denominator) of a slice with at least two values, two-pass for accuracy.
fn sample_variance(xs: &[f64], mean: f64) -> f64 {
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    ss / (xs.len() as f64 - 1.0)
}

fn all_finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// The standard Student t distribution with `df` degrees of freedom (`df` > 0 and finite).
fn students_t(df: f64) -> Option<statrs::distribution::StudentsT> {
    if !(df.is_finite() && df > 0.0) {
        return None;
    }
    statrs::distribution::StudentsT::new(0.0, 1.0, df).ok()
}

/// Two-sided critical value t* with P(|T| <= t*) = level, for `level` in (0, 1).
fn t_critical(df: f64, level: f64) -> Option<f64> {
    use statrs::distribution::ContinuousCDF;
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let dist = students_t(df)?;
    let q = dist.inverse_cdf(0.5 + level / 2.0);
    q.is_finite().then_some(q)
}
