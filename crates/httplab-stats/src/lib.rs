//! Statistics for httplab studies: descriptive estimates with t intervals, two-sample and paired
//! t tests, the Holm–Bonferroni adjustment, and the decisions of a study: every comparison is a
//! ratio with Yuen's trimmed t interval on paired per-round log differences ([`TRIM`]), decided as a
//! winner, equivalent, or inconclusive with the effect the run could have seen ([`decide`]),
//! under a two-look sequential design whose extra rounds go where they decide most
//! ([`allocate`]). Runs that share no rounds (two builds measured one after the other, as
//! `httplab compare` sees them) are compared by the same rules on Welch's unpaired interval of
//! the log values ([`LogRatios::unpaired`]), with the session as the unit where a side was
//! saved from several sessions ([`by_sessions`]). Event counts (errors over calls) are compared as
//! counts, by the exact conditional test of their rate ratio ([`RateRatio`]), inside the same
//! family ([`decide_family`]).
//!
//! Pure library: no I/O, no dependency on other httplab crates. Every function validates its
//! input and answers `None` (or a documented convention) instead of panicking; everything is
//! deterministic for a given input. The rules are written down once, in `docs/statistics.md` of
//! the workspace; the error rates are checked by simulation (`tests/it/simulation.rs`).

#![forbid(unsafe_code)]

mod better;
mod counts;
mod decide;
mod describe;
mod format;
mod oneway;
mod rule;
mod sessions;
mod trim;
mod ttest;
mod verdict;

pub use better::Better;
pub use counts::{binomial_tails, clopper_pearson, RateRatio};
pub use decide::{
    allocate, decide, decide_family, decide_interim, describe as describe_decision,
    detectable as rule_detectable, detectable_effect, level_text,
    rounds_to_settle as rule_rounds_to_settle, Comparison, CountComparison, Decision,
    DesignOptions, LogRatios, Looks, Need, Outcome, Side, Stages, Unpaired, MAX_ROUNDS,
    PLANNING_POWER,
};
pub use describe::{precise_enough, t_interval, Estimate};
pub use format::{format_p, format_sig3};
pub use oneway::{harmonic as harmonic_size, pooled as pooled_within, OneWay};
pub use sessions::{by_sessions, SessionRatios, Unit as SessionUnit};
pub use trim::TRIM;
pub use ttest::{holm_adjust, paired_t_test, welch_t_test, TTest};
pub use verdict::{
    finish, geometric_mean, matchup, matchup_pair, Matchup, Measured, Sample, Verdict,
};

/// The logs of the positive finite values of `xs` (the others left out).
fn logs(xs: &[f64]) -> Vec<f64> {
    xs.iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .map(|v| v.ln())
        .collect()
}

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
