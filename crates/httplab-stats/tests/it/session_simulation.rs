//! Error rates of comparing saved results by session ([`by_sessions`]), the way `httplab
//! compare` reads result files (a file is one session), by simulation: every session has its
//! own level (the machine's state that day), and runs within a session scatter around it.
//!
//! Shape: a session's level spreads 3 % (log standard deviation) from session to session and
//! a run 3 % around its session's level, 5 runs a session; BASE has 4 sessions (a baseline
//! saved over several days), NEW 1; δ = 5 %, alpha = 5 %, one comparison, 4 000 simulated
//! comparisons per check with a fixed seed. The check beside it shows what comparing runs
//! does with the same data: it calls most such A/A pairs a change.

use httplab_stats::{
    by_sessions, decide, Better, Comparison, DesignOptions, LogRatios, Looks, Outcome, SessionUnit,
    Side,
};
use rand::{Rng, SeedableRng};

use crate::draws::normal;

const RUNS: usize = 5;
const SESSION_SD: f64 = 0.03;
const RUN_SD: f64 = 0.03;
const TRIALS: usize = 4000;

/// `k` sessions of a build whose true log level is `level`.
fn sessions(rng: &mut impl Rng, k: usize, level: f64) -> Vec<Vec<f64>> {
    (0..k)
        .map(|_| {
            let day = level + SESSION_SD * normal(rng);
            (0..RUNS)
                .map(|_| 1000.0 * (day + RUN_SD * normal(rng)).exp())
                .collect()
        })
        .collect()
}

/// Outcomes of NEW (1 session, true log advantage `effect`) against BASE (`k_base`
/// sessions): by session, and by run on the same data.
fn outcomes(seed: u64, effect: f64, k_base: usize) -> Vec<[(Outcome, Option<Side>); 2]> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let opts = DesignOptions::default();
    let one = |l: LogRatios| {
        let d = decide(&[Comparison::new(Looks::single(l))], &opts);
        (d[0].outcome, d[0].winner)
    };
    (0..TRIALS)
        .map(|_| {
            let new = sessions(&mut rng, 1, effect);
            let base = sessions(&mut rng, k_base, 0.0);
            let s = by_sessions(&new, &base, Better::Higher);
            assert_eq!(s.unit, SessionUnit::Sessions);
            let runs = LogRatios::unpaired(&new.concat(), &base.concat(), Better::Higher);
            [one(s.ratios), one(runs)]
        })
        .collect()
}

fn rate(n: usize) -> f64 {
    n as f64 / TRIALS as f64
}

#[test]
fn a_a_sessions_name_a_change_at_most_5_percent_of_the_time_where_runs_name_one_often() {
    let o = outcomes(21, 0.0, 4);
    let by_session = o.iter().filter(|x| x[0].0 == Outcome::Winner).count();
    let by_run = o.iter().filter(|x| x[1].0 == Outcome::Winner).count();
    eprintln!(
        "A/A changes called: by session {}, by run {}",
        rate(by_session),
        rate(by_run)
    );
    // The pooled interval is exact for normal levels: two Monte Carlo errors over α.
    assert!(rate(by_session) <= 0.057, "{}", rate(by_session));
    // What the runs alone would claim (observed with this seed: about a third).
    assert!(rate(by_run) >= 0.2, "{}", rate(by_run));
}

#[test]
fn a_change_of_exactly_delta_is_called_equivalent_at_most_5_percent_of_the_time() {
    let o = outcomes(22, (1.05f64).ln(), 4);
    let eq = o.iter().filter(|x| x[0].0 == Outcome::Equivalent).count();
    eprintln!("equivalent at delta: {}", rate(eq));
    assert!(rate(eq) <= 0.05, "{}", rate(eq));
}

#[test]
fn a_20_percent_change_is_found_the_right_way_round_by_six_sessions_of_base() {
    let o = outcomes(23, (1.2f64).ln(), 6);
    let found = o
        .iter()
        .filter(|x| x[0].0 == Outcome::Winner && x[0].1 == Some(Side::A))
        .count();
    let wrong = o.iter().filter(|x| x[0].1 == Some(Side::B)).count();
    eprintln!("20 % found: {}", rate(found));
    assert!(rate(found) >= 0.8, "{}", rate(found));
    assert_eq!(wrong, 0);
}
