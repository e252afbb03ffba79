//! Error rates of the unpaired (Welch) comparison by simulation, the way `httplab compare`
//! uses it: two independent samples of runs (a baseline and a new build, measured one after
//! the other, no rounds shared), decided by the study's own [`decide`] on
//! [`LogRatios::unpaired`].
//!
//! Shape: 5 runs per side, per-run log spread 5 % on one side and 8 % on the other (unequal
//! spreads are what Welch's interval is for), δ = 5 %, alpha = 5 %, one comparison. 4 000
//! simulated comparisons per check with a fixed seed, so the tests are deterministic; the Monte
//! Carlo standard error of a rate near 5 % is about 0.35 %.

use httplab_stats::{decide, Better, Comparison, DesignOptions, LogRatios, Looks, Outcome, Side};
use rand::{Rng, SeedableRng};

use crate::draws::normal;

const RUNS: usize = 5;
const SD_A: f64 = 0.05;
const SD_B: f64 = 0.08;
const TRIALS: usize = 4000;

/// One comparison of `a` (true log advantage `effect`) against `b`.
fn draw(rng: &mut impl Rng, effect: f64) -> LogRatios {
    let a: Vec<f64> = (0..RUNS)
        .map(|_| 1000.0 * (effect + SD_A * normal(rng)).exp())
        .collect();
    let b: Vec<f64> = (0..RUNS)
        .map(|_| 1000.0 * (SD_B * normal(rng)).exp())
        .collect();
    LogRatios::unpaired(&a, &b, Better::Higher)
}

fn outcomes(seed: u64, effect: f64) -> Vec<(Outcome, Option<Side>, LogRatios)> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let opts = DesignOptions::default();
    (0..TRIALS)
        .map(|_| {
            let l = draw(&mut rng, effect);
            let d = decide(&[Comparison::new(Looks::single(l))], &opts);
            (d[0].outcome, d[0].winner, l)
        })
        .collect()
}

fn rate(n: usize) -> f64 {
    n as f64 / TRIALS as f64
}

#[test]
fn a_a_comparisons_name_a_regression_or_improvement_at_most_5_percent_of_the_time() {
    let o = outcomes(11, 0.0);
    let false_winners = o.iter().filter(|x| x.0 == Outcome::Winner).count();
    eprintln!("A/A winners: {}", rate(false_winners));
    // Welch's test is exact only approximately: allow two Monte Carlo standard errors over α
    // (observed with this seed: 4.95 %).
    assert!(rate(false_winners) <= 0.057, "{}", rate(false_winners));
}

#[test]
fn the_95_percent_interval_covers_the_true_ratio_95_percent_of_the_time() {
    let effect: f64 = 0.1;
    let o = outcomes(12, effect);
    let covered = o
        .iter()
        .filter(|x| {
            x.2.interval(0.95)
                .is_some_and(|(lo, hi)| lo <= effect.exp() && effect.exp() <= hi)
        })
        .count();
    let c = rate(covered);
    eprintln!("coverage: {c}");
    assert!((0.935..=0.965).contains(&c), "coverage {c}");
}

#[test]
fn a_difference_of_exactly_delta_is_called_equivalent_at_most_5_percent_of_the_time() {
    let o = outcomes(13, (1.05f64).ln());
    let eq = o.iter().filter(|x| x.0 == Outcome::Equivalent).count();
    eprintln!("equivalent at delta: {}", rate(eq));
    assert!(rate(eq) <= 0.05, "{}", rate(eq));
}

#[test]
fn a_20_percent_difference_is_found_the_right_way_round_at_least_80_percent_of_the_time() {
    let o = outcomes(14, (1.2f64).ln());
    let found = o
        .iter()
        .filter(|x| x.0 == Outcome::Winner && x.1 == Some(Side::A))
        .count();
    let wrong = o.iter().filter(|x| x.1 == Some(Side::B)).count();
    eprintln!("20 % found: {}", rate(found));
    assert!(rate(found) >= 0.8, "{}", rate(found));
    assert_eq!(wrong, 0);
}
