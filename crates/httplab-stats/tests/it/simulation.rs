//! Error rates of the study's decision procedure, by simulation: thousands of simulated studies
//! run through the same functions the study runner calls (`matchup`, `decide_interim`,
//! `allocate`, `decide`), with round effects shared by every server of a round (the randomized
//! block design) and independent noise per run.
//!
//! The spread is the one this machine shows: per-round log differences between two servers
//! with s_d ≈ 8 % (the architectures cell of the default study), i.e. a per-run noise of
//! 8 % / √2 per server. The design is the default one: 4 rounds before the interim look, up to
//! 16 rounds per step, a budget of 6 extra rounds per step on average, δ = 5 %, alpha = 5 %.
//!
//! The thresholds are tested with margin for Monte Carlo error: with 2 000 studies the standard
//! error of a rate near 5 % is 0.5 %, so an observed rate ≤ 5 % means the true rate is below
//! about 6 % with high confidence; the data seed is fixed, so these tests are deterministic.

use httplab_stats::{
    allocate, decide, decide_interim, matchup, Better, Comparison, DesignOptions, Matchup,
    Measured, Need, Outcome, Sample,
};
use rand::{Rng, SeedableRng};

const SD_DIFF: f64 = 0.08;
const N0: usize = 4;
const CAP: usize = 16;

/// One standard normal draw (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A simulated step: `effects[i]` is server i's true log advantage (higher is better).
struct Step {
    effects: Vec<f64>,
}

/// Values of every server for `CAP` rounds: base × exp(effect + round + noise).
fn draw(rng: &mut impl Rng, step: &Step) -> Vec<Vec<Option<f64>>> {
    let per_run = SD_DIFF / 2f64.sqrt();
    let mut v = vec![Vec::with_capacity(CAP); step.effects.len()];
    for _ in 0..CAP {
        let round = 0.05 * normal(rng);
        for (s, e) in step.effects.iter().enumerate() {
            v[s].push(Some(1000.0 * (e + round + per_run * normal(rng)).exp()));
        }
    }
    v
}

const NAMES: [&str; 6] = ["s0", "s1", "s2", "s3", "s4", "s5"];

fn matchup_of(values: &[Vec<Option<f64>>], rounds: usize, interim: Option<usize>) -> Matchup {
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Sample {
            name: NAMES[i],
            values: &v[..rounds],
            client_bound: false,
        })
        .collect();
    matchup("m", Better::Higher, &samples, Measured::ByClient, interim)
}

fn comparison(values: &[Vec<Option<f64>>], rounds: usize, interim: Option<usize>) -> Comparison {
    matchup_of(values, rounds, interim)
        .comparison
        .expect("two servers")
}

/// Runs one simulated study; returns each step's outcome and its leader index ("s3" → 3).
fn study(rng: &mut impl Rng, steps: &[Step], budget_rounds: f64) -> Vec<(Outcome, Option<usize>)> {
    let opts = DesignOptions::default();
    let data: Vec<Vec<Vec<Option<f64>>>> = steps.iter().map(|s| draw(rng, s)).collect();
    // Interim look after N0 rounds.
    let first: Vec<Comparison> = data.iter().map(|d| comparison(d, N0, None)).collect();
    let interim = decide_interim(&first, &opts);
    let needs: Vec<Need> = interim
        .iter()
        .zip(steps)
        .map(|(d, s)| Need {
            rounds: N0 as u32,
            to_settle: (d.outcome == Outcome::Inconclusive)
                .then_some(d.rounds_to_settle)
                .flatten()
                .or((d.outcome == Outcome::Inconclusive).then_some(CAP as u32)),
            round_cost_s: s.effects.len() as f64,
            cap: CAP as u32,
        })
        .collect();
    let budget: f64 = budget_rounds * steps.iter().map(|s| s.effects.len() as f64).sum::<f64>();
    let extra = allocate(&needs, budget);
    let last: Vec<Comparison> = data
        .iter()
        .zip(&extra)
        .map(|(d, &e)| comparison(d, N0 + e as usize, Some(N0)))
        .collect();
    let leader = |d: &Vec<Vec<Option<f64>>>, rounds: usize| {
        matchup_of(d, rounds, Some(N0))
            .a
            .and_then(|a| NAMES.iter().position(|n| *n == a))
    };
    decide(&last, &opts)
        .into_iter()
        .zip(data.iter().zip(&extra))
        .map(|(d, (v, &e))| (d.outcome, leader(v, N0 + e as usize)))
        .collect()
}

fn null_steps() -> Vec<Step> {
    // The default study's shape: steps of six servers and of two.
    [6, 6, 6, 2, 2, 6, 2]
        .iter()
        .map(|&k| Step {
            effects: vec![0.0; k],
        })
        .collect()
}

#[test]
fn a_a_studies_name_no_false_winner_more_than_5_percent_of_the_time() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(18);
    let studies = 2000;
    let mut with_false_winner = 0;
    let mut equivalent = 0usize;
    let mut comparisons = 0usize;
    for _ in 0..studies {
        let out = study(&mut rng, &null_steps(), 6.0);
        if out.iter().any(|(o, _)| *o == Outcome::Winner) {
            with_false_winner += 1;
        }
        equivalent += out
            .iter()
            .filter(|(o, _)| *o == Outcome::Equivalent)
            .count();
        comparisons += out.len();
    }
    let rate = with_false_winner as f64 / studies as f64;
    eprintln!(
        "A/A: {with_false_winner} of {studies} studies named a false winner ({:.1} %); {:.1} % of comparisons equivalent",
        100.0 * rate,
        100.0 * equivalent as f64 / comparisons as f64
    );
    assert!(rate <= 0.05, "study-wide false-winner rate {rate}");
}

#[test]
fn a_10_percent_effect_is_found_at_least_80_percent_of_the_time() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(19);
    let studies = 2000;
    let mut found = 0;
    let mut wrong = 0;
    for _ in 0..studies {
        let mut steps = null_steps();
        // One two-server step with a true 10 % difference (s1 better).
        steps[3] = Step {
            effects: vec![0.0, (1.1f64).ln()],
        };
        let out = study(&mut rng, &steps, 6.0);
        match out[3] {
            (Outcome::Winner, Some(1)) => found += 1,
            (Outcome::Winner, _) => wrong += 1,
            _ => {}
        }
    }
    let power = found as f64 / studies as f64;
    eprintln!(
        "A/B 10 %: found in {found} of {studies} studies ({:.1} %), wrong winner {wrong}",
        100.0 * power
    );
    assert!(power >= 0.8, "power {power}");
    assert_eq!(wrong, 0);
}

#[test]
fn an_effect_on_the_edge_of_delta_is_rarely_called_equivalent() {
    // True ratio exactly 1 + δ: "equivalent" would be a false claim; two one-sided tests keep it
    // at or below alpha per comparison.
    let mut rng = rand_pcg::Pcg64::seed_from_u64(20);
    let studies = 2000;
    let mut false_equivalent = 0;
    for _ in 0..studies {
        let steps = [Step {
            effects: vec![0.0, (1.05f64).ln()],
        }];
        if study(&mut rng, &steps, 6.0)[0].0 == Outcome::Equivalent {
            false_equivalent += 1;
        }
    }
    let rate = false_equivalent as f64 / studies as f64;
    eprintln!(
        "edge of δ: {false_equivalent} of {studies} called equivalent ({:.1} %)",
        100.0 * rate
    );
    assert!(rate <= 0.05, "false-equivalence rate {rate}");
}
