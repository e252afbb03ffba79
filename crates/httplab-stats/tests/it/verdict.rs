//! Verdicts: ranking, the geometric-mean ratio, its t interval, the tests and the three outcomes,
//! checked against values computed independently with SciPy:
//!
//! ```python
//! import numpy as np
//! from scipy import stats
//! event = np.array([13100, 12950, 13240, 13020, 13180.])
//! nginx = np.array([10050, 9980, 10120, 9900, 10010.])
//! h2o = np.array([11000, 11100, 10900, 11050, 10980.])
//! d = np.log(event) - np.log(h2o); n = len(d); se = d.std(ddof=1) / np.sqrt(n)
//! np.exp(d.mean())                                    # -> 1.1900623968349353
//! t = stats.t.ppf(0.975, n - 1)
//! np.exp(d.mean() - t * se), np.exp(d.mean() + t * se)  # -> 1.1670735179859464, 1.2135041079542044
//! stats.ttest_rel(np.log(event), np.log(h2o)).pvalue   # -> 1.577404248073038e-05
//! stats.ttest_rel(np.log(event), np.log(nginx)).pvalue # -> 6.401746702103991e-08
//! A = np.array([100, 101, 99.5, 100.2, 100.4]); B = np.array([100.3, 100.6, 99.9, 100.0, 100.1])
//! d = np.log(A) - np.log(B); se = d.std(ddof=1) / np.sqrt(5); b = np.log(1.05)
//! max(stats.t.sf((d.mean() + b) / se, 4), stats.t.cdf((d.mean() - b) / se, 4))  # -> 3.8107015653587043e-06
//! t90 = stats.t.ppf(0.95, 4)
//! np.exp(d.mean() - t90 * se), np.exp(d.mean() + t90 * se)  # -> 0.9969245128744993, 1.003868181252997
//! np.exp((stats.t.ppf(0.975, 3) + stats.t.ppf(0.8, 3)) * 0.08 / 2) - 1  # -> 0.181088823386514
//! ```

use httplab_stats::{
    decide, detectable_effect, finish, matchup, matchup_pair, Better, DesignOptions, LogRatios,
    Measured, Outcome, Sample,
};

const EVENT: [f64; 5] = [13100.0, 12950.0, 13240.0, 13020.0, 13180.0];
const NGINX: [f64; 5] = [10050.0, 9980.0, 10120.0, 9900.0, 10010.0];
const H2O: [f64; 5] = [11000.0, 11100.0, 10900.0, 11050.0, 10980.0];

fn some(xs: &[f64]) -> Vec<Option<f64>> {
    xs.iter().copied().map(Some).collect()
}

fn sample<'a>(name: &'a str, values: &'a [Option<f64>]) -> Sample<'a> {
    Sample {
        name,
        values,
        client_bound: false,
    }
}

fn close(a: f64, e: f64, tol: f64) -> bool {
    (a - e).abs() <= tol * e.abs().max(1e-300)
}

fn one(m: &httplab_stats::Matchup) -> httplab_stats::Verdict {
    let opts = DesignOptions::default();
    let d = m
        .comparison
        .as_ref()
        .map(|c| decide(std::slice::from_ref(c), &opts).remove(0));
    finish(m, d.as_ref(), &opts)
}

#[test]
fn clear_gap_has_a_winner_with_scipy_values() {
    let (e, n, h) = (some(&EVENT), some(&NGINX), some(&H2O));
    let samples = [
        sample("nginx", &n),
        sample("httplab event", &e),
        sample("h2o", &h),
    ];
    let m = matchup(
        "reply_rate",
        Better::Higher,
        &samples,
        Measured::ByClient,
        None,
    );
    let v = one(&m);
    assert_eq!(v.leader.as_deref(), Some("httplab event"));
    assert_eq!(v.runner_up.as_deref(), Some("h2o"));
    assert_eq!(v.outcome, Outcome::Winner);
    assert_eq!(v.winner.as_deref(), Some("httplab event"));
    assert!(close(v.ratio.unwrap(), 1.1900623968349353, 1e-12));
    let [lo, hi] = v.ratio_ci.unwrap();
    assert!(close(lo, 1.1670735179859464, 1e-9), "{lo}");
    assert!(close(hi, 1.2135041079542044, 1e-9), "{hi}");
    // A family of one: the intersection-union p is the larger of the leader's two p values.
    assert!(close(v.p_value.unwrap(), 1.577404248073038e-05, 1e-6));
    assert!(
        v.note.starts_with("httplab event beats h2o on reply_rate"),
        "{}",
        v.note
    );
}

#[test]
fn equivalence_by_two_one_sided_tests() {
    let a = some(&[100.0, 101.0, 99.5, 100.2, 100.4]);
    let b = some(&[100.3, 100.6, 99.9, 100.0, 100.1]);
    let l = LogRatios::paired(&a, &b, Better::Higher);
    assert!(close(
        l.p_equivalent(0.05).unwrap(),
        3.8107015653587043e-06,
        1e-6
    ));
    let m = matchup_pair(
        "reply_rate",
        Better::Higher,
        &sample("a", &a),
        &sample("b", &b),
        Measured::ByClient,
        None,
    );
    let v = one(&m);
    assert_eq!(v.outcome, Outcome::Equivalent, "{}", v.note);
    let [lo, hi] = v.ratio_ci90.unwrap();
    assert!(close(lo, 0.9969245128744993, 1e-9) && close(hi, 1.003868181252997, 1e-9));
    assert!(v.note.contains("equivalent"), "{}", v.note);
}

#[test]
fn detectable_effect_matches_scipy() {
    let e = detectable_effect(4, 0.08, 0.05, 0.8).unwrap();
    assert!(close(e, 0.181088823386514, 1e-6), "{e}");
}

#[test]
fn inconclusive_says_what_it_could_have_seen() {
    let a = some(&[100.0, 110.0, 95.0, 105.0, 102.0]);
    let b = some(&[101.0, 98.0, 107.0, 99.0, 104.0]);
    let m = matchup(
        "reply_rate",
        Better::Higher,
        &[sample("A", &a), sample("B", &b)],
        Measured::ByClient,
        None,
    );
    let v = one(&m);
    assert_eq!(v.outcome, Outcome::Inconclusive);
    assert!(v.note.contains("no decision"), "{}", v.note);
    assert!(v.note.contains("this run could see ≥"), "{}", v.note);
    assert!(
        v.note.contains("rounds in one look would settle ±5 %"),
        "{}",
        v.note
    );
    assert!(v.detectable.unwrap() > 0.05);
    assert!(v.rounds_to_settle.unwrap() > 5);
}

#[test]
fn a_bound_on_the_loser_holds_a_win_back_but_a_bound_on_the_winner_does_not() {
    let (e, h) = (some(&EVENT), some(&H2O));
    let setup = |event_bound: bool, h2o_bound: bool| {
        matchup(
            "reply_rate",
            Better::Higher,
            &[
                Sample {
                    name: "event",
                    values: &e,
                    client_bound: event_bound,
                },
                Sample {
                    name: "h2o",
                    values: &h,
                    client_bound: h2o_bound,
                },
            ],
            Measured::ByClient,
            None,
        )
    };
    // The leader's throughput is at least its figure: its win is conservative.
    let v = one(&setup(true, false));
    assert_eq!(v.winner.as_deref(), Some("event"), "{}", v.note);
    assert_eq!(v.client_bound, vec!["event".to_string()]);
    // The runner-up's figure is only a bound: it might be as fast.
    let v = one(&setup(false, true));
    assert_eq!(v.outcome, Outcome::Inconclusive, "{}", v.note);
    assert!(v.note.contains("client-bound"), "{}", v.note);
    // Server-side metrics are not bounded by the client.
    let m = matchup(
        "server_cpu_us_per_req",
        Better::Lower,
        &[
            Sample {
                name: "event",
                values: &h,
                client_bound: true,
            },
            Sample {
                name: "h2o",
                values: &e,
                client_bound: true,
            },
        ],
        Measured::ByServer,
        None,
    );
    let v = one(&m);
    assert_eq!(v.winner.as_deref(), Some("event"), "{}", v.note);
    assert!(v.client_bound.is_empty());
}

#[test]
fn missing_rounds_are_gaps_not_shifts() {
    // b misses round 1: pairs are rounds 0, 2, 3 — never b's round 2 against a's round 1.
    let a = [Some(100.0), Some(200.0), Some(100.0), Some(100.0)];
    let b = [Some(50.0), None, Some(50.0), Some(50.0)];
    let l = LogRatios::paired(&a, &b, Better::Higher);
    assert_eq!(l.n, 3);
    assert!(close(l.mean, 2f64.ln(), 1e-12));
    assert_eq!(l.sd, 0.0);
}

#[test]
fn too_little_data() {
    let a = some(&[1.0]);
    let b = some(&[2.0]);
    let none = matchup("m", Better::Higher, &[], Measured::ByClient, None);
    assert!(one(&none).note.contains("no server has results"));
    let single = matchup(
        "m",
        Better::Higher,
        &[sample("a", &a)],
        Measured::ByClient,
        None,
    );
    assert!(one(&single).note.contains("only one server"));
    let two = matchup(
        "m",
        Better::Higher,
        &[sample("a", &a), sample("b", &b)],
        Measured::ByClient,
        None,
    );
    let v = one(&two);
    assert_eq!(v.outcome, Outcome::Inconclusive);
    assert!(v.note.contains("too few rounds"), "{}", v.note);
}

#[test]
fn zero_and_non_finite_values_do_not_panic() {
    let a = [Some(0.0), Some(f64::NAN), Some(f64::INFINITY), Some(-1.0)];
    let b = some(&[1.0, 2.0, 3.0, 4.0]);
    let m = matchup(
        "m",
        Better::Lower,
        &[sample("a", &a), sample("b", &b)],
        Measured::ByClient,
        None,
    );
    let v = one(&m);
    assert_eq!(v.outcome, Outcome::Inconclusive);
}

#[test]
fn the_family_correction_makes_winners_harder() {
    // p ≈ 0.01 alone is a winner; in a family of 20 it is not.
    let d = [0.10, 0.16, 0.04, 0.12, 0.07];
    let l = LogRatios::of_differences(&d);
    let p = l.p_two_sided().unwrap();
    assert!(p < 0.05 && p * 20.0 > 0.05, "{p}");
    let c = httplab_stats::Comparison::new(httplab_stats::Looks::single(l));
    let opts = DesignOptions::default();
    assert_eq!(
        decide(std::slice::from_ref(&c), &opts)[0].outcome,
        Outcome::Winner
    );
    let family = vec![c; 20];
    assert!(decide(&family, &opts)
        .iter()
        .all(|d| d.outcome != Outcome::Winner));
}
