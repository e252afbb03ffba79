//! The error rate of the errors rule, by simulation through the code `httplab compare` runs:
//! load result documents in memory → `input::side_of` → `judge` → the errors row's verdict.
//!
//! Both sides fail at the same true rate per call (errors drawn as Poisson counts per run), but
//! over very different numbers of calls: BASE five runs of 1 267 364 calls in all, NEW five of
//! 685 141, the calls of the report in which two error-free results failed the gate. The rate
//! cycles from 1 in four million calls (half an error in all on average, mostly none) to 1 in
//! 15 625 (about 125). 2 000 pairs with a fixed seed, so the test is deterministic; the Monte
//! Carlo standard error of a rate near 5 % is 0.49 %.

use httplab_compare::input::side_of;
use httplab_compare::metric::Metric;
use httplab_compare::{judge, Options, Verdict};
use httplab_model::{Document, RunResult, RUN_SCHEMA};
use rand::{Rng, SeedableRng};

const TRIALS: usize = 2000;
const BASE_CALLS: [u64; 5] = [253_472, 253_473, 253_473, 253_473, 253_473];
const NEW_CALLS: [u64; 5] = [137_028, 137_028, 137_028, 137_028, 137_029];
const RATES: [f64; 5] = [2.5e-7, 1e-6, 4e-6, 1.6e-5, 6.4e-5];

/// One Poisson draw of mean `mean` (≤ 30 here): Knuth's product of uniforms.
fn poisson(rng: &mut impl Rng, mean: f64) -> u64 {
    let limit = (-mean).exp();
    let mut k = 0;
    let mut product: f64 = rng.random_range(0.0..1.0);
    while product > limit {
        k += 1;
        product *= rng.random_range(0.0..1.0);
    }
    k
}

/// A load result of one run per entry of `calls`, each failing at `rate` per call.
fn document(rng: &mut impl Rng, calls: &[u64], rate: f64) -> Document {
    let mut runs = calls.iter().map(|&n| {
        let errors = poisson(rng, rate * n as f64).min(n);
        let mut r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        r.totals.replies = n - errors;
        r.errors.total = errors;
        r.totals.test_duration_s = 10.0;
        r
    });
    let mut first = runs.next().unwrap_or_default();
    first.repeats = runs.collect();
    Document::Run(Box::new(first))
}

/// The errors row's verdict for `trials` simulated pairs, NEW failing `ratio` times as often.
fn verdicts(seed: u64, ratio: f64, rates: &[f64], trials: usize) -> Vec<Verdict> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let opts = Options {
        metrics: vec![Metric::ERRORS],
        ..Options::default()
    };
    (0..trials)
        .map(|i| {
            let rate = rates[i % rates.len()];
            let base = document(&mut rng, &BASE_CALLS, rate);
            let new = document(&mut rng, &NEW_CALLS, rate * ratio);
            let base = side_of(vec![("base.json".into(), base)]).expect("base");
            let new = side_of(vec![("new.json".into(), new)]).expect("new");
            let j = judge(&base, &new, &opts).expect("judge");
            assert!(j.family <= 1);
            j.rows[0].verdict
        })
        .collect()
}

fn share(v: &[Verdict], which: &[Verdict]) -> f64 {
    v.iter().filter(|x| which.contains(x)).count() as f64 / v.len() as f64
}

#[test]
fn equal_error_rates_over_unequal_calls_are_rarely_called_a_change() {
    let v = verdicts(2026, 1.0, &RATES, TRIALS);
    let regressions = share(&v, &[Verdict::Regression]);
    let changes = share(&v, &[Verdict::Regression, Verdict::Improvement]);
    let none = share(&v, &[Verdict::NoErrors]);
    eprintln!("equal rates: regressions {regressions}, any change {changes}, no errors {none}");
    // α = 5 % for a change either way, plus two Monte Carlo standard errors. The exact test
    // is conservative, so the observed rates are far below.
    assert!(changes <= 0.05 + 2.0 * 0.0049, "{changes}");
    assert!(regressions <= 0.05 + 2.0 * 0.0049, "{regressions}");
    // No errors on either side happens (mostly at the lowest rate) and is never a change.
    assert!(none > 0.1, "{none}");
}

#[test]
fn a_doubled_error_rate_with_enough_errors_is_found() {
    // 1 in 15 625 calls against 2 in 15 625: about 81 and 88 errors.
    let v = verdicts(7, 2.0, &RATES[4..], 500);
    let found = share(&v, &[Verdict::Regression]);
    eprintln!("doubled rate: regressions {found}");
    assert!(found >= 0.9, "{found}");
    assert_eq!(share(&v, &[Verdict::Improvement]), 0.0);
}
