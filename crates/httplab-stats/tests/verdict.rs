//! Verdict logic. The p values are checked against SciPy / statsmodels:
//!
//! ```python
//! import numpy as np
//! from scipy import stats
//! from statsmodels.stats.multitest import multipletests
//! event = [13100, 12950, 13240, 13020, 13180]
//! nginx = [10050, 9980, 10120, 9900, 10010]
//! h2o = [11000, 11100, 10900, 11050, 10980]
//! la = np.log(event)
//! ps = [stats.ttest_rel(la, np.log(h2o)).pvalue, stats.ttest_rel(la, np.log(nginx)).pvalue]
//! multipletests(ps, method="holm")[1]   # -> [1.577404248073038e-05, 1.2803493404207982e-07]
//! np.mean(event) / np.mean(h2o)         # -> 1.1900781391968018
//! A = [100, 110, 95, 105, 102]; B = [101, 98, 107, 99, 104]
//! stats.ttest_rel(np.log(A), np.log(B)).pvalue   # -> 0.9016381619346071
//! slow = [50.1, 52.3, 49.8, 51.0]; fast = [45.2, 46.1, 44.9, 45.8, 46.3, 45.0]
//! stats.ttest_ind(np.log(fast), np.log(slow), equal_var=False).pvalue   # -> 0.0005381289486064005
//! np.mean(slow) / np.mean(fast)         # -> 1.1152579582875959
//! ```

use httplab_stats::{verdict, Better, Sample, Verdict, VerdictOptions};
use rand::{Rng, SeedableRng};

const EVENT: [f64; 5] = [13100.0, 12950.0, 13240.0, 13020.0, 13180.0];
const NGINX: [f64; 5] = [10050.0, 9980.0, 10120.0, 9900.0, 10010.0];
const H2O: [f64; 5] = [11000.0, 11100.0, 10900.0, 11050.0, 10980.0];

fn s<'a>(name: &'a str, values: &'a [f64]) -> Sample<'a> {
    Sample {
        name,
        values,
        client_bound: false,
    }
}

fn opts() -> VerdictOptions {
    VerdictOptions::default()
}

fn close(a: f64, e: f64, tol: f64) -> bool {
    (a - e).abs() <= tol * e.abs().max(1.0)
}

#[test]
fn clear_gap_has_a_winner() {
    let samples = [
        s("nginx", &NGINX),
        s("httplab event", &EVENT),
        s("h2o", &H2O),
    ];
    let v = verdict("reply_rate", Better::Higher, &samples, &opts());
    assert_eq!(v.leader.as_deref(), Some("httplab event"));
    assert_eq!(v.runner_up.as_deref(), Some("h2o"));
    assert_eq!(v.winner.as_deref(), Some("httplab event"));
    assert!(v.significant);
    let ratio = v.ratio.expect("ratio");
    assert!(close(ratio, 1.1900781391968018, 1e-12), "{ratio}");
    let p = v.p_value.expect("p");
    assert!(close(p, 1.577404248073038e-05, 1e-6), "{p}");
    let [lo, hi] = v.ratio_ci.expect("ci");
    assert!(lo > 1.0 && lo <= ratio && ratio <= hi, "{lo} {hi}");
    assert_eq!(v.n.get("nginx"), Some(&5));
    assert_eq!(v.n.len(), 3);
    assert!(v.client_bound.is_empty());
    assert!(
        v.note.starts_with(
            "httplab event beats h2o on reply_rate (higher is better): ratio 1.19 (95 % CI 1.1"
        ),
        "{}",
        v.note
    );
    assert!(v.note.ends_with("p < 0.001, n = 5 / 5"), "{}", v.note);
}

#[test]
fn overlap_has_no_winner() {
    let a = [100.0, 110.0, 95.0, 105.0, 102.0];
    let b = [101.0, 98.0, 107.0, 99.0, 104.0];
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("A", &a), s("B", &b)],
        &opts(),
    );
    assert_eq!(v.leader.as_deref(), Some("A"));
    assert_eq!(v.winner, None);
    assert!(!v.significant);
    let p = v.p_value.expect("p");
    assert!(close(p, 0.9016381619346071, 1e-7), "{p}");
    let [lo, hi] = v.ratio_ci.expect("ci");
    assert!(lo < 1.0 && hi > 1.0);
    assert!(
        v.note.starts_with(
            "no significant difference between A and B on reply_rate (ratio 1.01, 95 % CI 0.9"
        ),
        "{}",
        v.note
    );
    assert!(v.note.ends_with("p = 0.9, n = 5 / 5)"), "{}", v.note);
}

#[test]
fn lower_is_better_with_unequal_n_uses_welch() {
    let slow = [50.1, 52.3, 49.8, 51.0];
    let fast = [45.2, 46.1, 44.9, 45.8, 46.3, 45.0];
    let v = verdict(
        "response_ms",
        Better::Lower,
        &[s("slow", &slow), s("fast", &fast)],
        &opts(),
    );
    assert_eq!(v.leader.as_deref(), Some("fast"));
    assert_eq!(v.runner_up.as_deref(), Some("slow"));
    assert_eq!(v.winner.as_deref(), Some("fast"));
    let ratio = v.ratio.expect("ratio");
    assert!(close(ratio, 1.1152579582875959, 1e-12), "{ratio}");
    let p = v.p_value.expect("p");
    assert!(close(p, 0.0005381289486064005, 1e-6), "{p}");
    assert_eq!(
        v.note,
        format!(
            "fast beats slow on response_ms (lower is better): ratio 1.12 (95 % CI {}–{}), \
             p < 0.001, n = 6 / 4",
            httplab_stats::format_sig3(v.ratio_ci.expect("ci")[0]),
            httplab_stats::format_sig3(v.ratio_ci.expect("ci")[1]),
        )
    );

    // The same data read as "higher is better" flips the leader; the lead is still significant.
    let h = verdict(
        "response_ms",
        Better::Higher,
        &[s("slow", &slow), s("fast", &fast)],
        &opts(),
    );
    assert_eq!(h.leader.as_deref(), Some("slow"));
    assert_eq!(h.winner.as_deref(), Some("slow"));
    assert!(close(h.ratio.expect("ratio"), 1.1152579582875959, 1e-12));
}

#[test]
fn client_bound_never_wins() {
    for bound in ["httplab event", "h2o", "nginx"] {
        let samples: Vec<Sample> = [
            ("httplab event", &EVENT[..]),
            ("h2o", &H2O[..]),
            ("nginx", &NGINX[..]),
        ]
        .into_iter()
        .map(|(name, values)| Sample {
            name,
            values,
            client_bound: name == bound,
        })
        .collect();
        let v = verdict("reply_rate", Better::Higher, &samples, &opts());
        assert_eq!(v.winner, None, "{bound} client-bound");
        assert!(!v.significant);
        assert_eq!(v.client_bound, vec![bound.to_string()]);
        assert_eq!(v.leader.as_deref(), Some("httplab event"));
        assert!(v.ratio.is_some() && v.p_value.is_some() && v.ratio_ci.is_some());
        assert!(
            v.note.starts_with(&format!(
                "{bound} was client-bound (its figure is a bound: the run measured the client): \
                 no winner (httplab event leads h2o on reply_rate, ratio 1.19"
            )),
            "{}",
            v.note
        );
    }
    let samples = [
        Sample {
            name: "nginx",
            values: &NGINX,
            client_bound: true,
        },
        s("httplab event", &EVENT),
        Sample {
            name: "h2o",
            values: &H2O,
            client_bound: true,
        },
    ];
    let v = verdict("reply_rate", Better::Higher, &samples, &opts());
    assert_eq!(v.winner, None);
    assert!(
        v.note
            .starts_with("nginx and h2o were client-bound (their figures are bounds: the run measured the client): no winner"),
        "{}",
        v.note
    );
}

#[test]
fn a_a_with_noise_has_no_winner() {
    // Two identical servers: values drawn from the same distribution (fixed data seed), with a
    // round effect shared by both (the randomized block design).
    let mut rng = rand_pcg::Pcg64::seed_from_u64(2024);
    let mut draw = |n: usize| -> (Vec<f64>, Vec<f64>) {
        (0..n)
            .map(|_| {
                let round: f64 = rng.random_range(-200.0..200.0);
                (
                    10_000.0 + round + rng.random_range(-150.0..150.0),
                    10_000.0 + round + rng.random_range(-150.0..150.0),
                )
            })
            .unzip()
    };
    let (a, b) = draw(7);
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("A", &a), s("A'", &b)],
        &opts(),
    );
    assert_eq!(v.winner, None, "{}", v.note);
    assert!(
        v.note.starts_with("no significant difference between"),
        "{}",
        v.note
    );

    // Calibration sanity over many A/A trials: false winners stay rare (alpha = 0.05).
    let o = VerdictOptions {
        resamples: 1000,
        ..opts()
    };
    let trials = 200;
    let false_winners = (0..trials)
        .filter(|_| {
            let (a, b) = draw(5);
            verdict("reply_rate", Better::Higher, &[s("A", &a), s("A'", &b)], &o)
                .winner
                .is_some()
        })
        .count();
    eprintln!("A/A: {false_winners} false winners in {trials} trials");
    assert!(
        false_winners <= trials / 10,
        "{false_winners} false winners in {trials}"
    );
}

#[test]
fn same_input_and_seed_give_the_same_verdict() {
    let samples = [s("nginx", &NGINX), s("event", &EVENT), s("h2o", &H2O)];
    let one = verdict("reply_rate", Better::Higher, &samples, &opts());
    let two = verdict("reply_rate", Better::Higher, &samples, &opts());
    assert_eq!(one, two);
    let other = verdict(
        "reply_rate",
        Better::Higher,
        &samples,
        &VerdictOptions { seed: 99, ..opts() },
    );
    assert_eq!(
        one.p_value, other.p_value,
        "tests do not depend on the seed"
    );
}

#[test]
fn min_effect_blocks_small_but_significant_leads() {
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("event", &EVENT), s("h2o", &H2O)],
        &VerdictOptions {
            min_effect: 0.25,
            ..opts()
        },
    );
    assert_eq!(v.winner, None);
    assert!(!v.significant);
    assert!(
        v.note.starts_with(
            "event leads h2o on reply_rate by less than the minimum effect of 25 % (ratio 1.19"
        ),
        "{}",
        v.note
    );
    assert!(v.note.ends_with("): no winner"), "{}", v.note);
}

#[test]
fn too_little_data() {
    let none = verdict(
        "reply_rate",
        Better::Higher,
        &[s("a", &[]), s("b", &[])],
        &opts(),
    );
    assert_eq!(none.leader, None);
    assert_eq!(none.winner, None);
    assert_eq!(none.n.get("a"), Some(&0));
    assert_eq!(none.note, "no server has results for reply_rate: no winner");

    let one = verdict(
        "reply_rate",
        Better::Higher,
        &[s("a", &[]), s("b", &EVENT)],
        &opts(),
    );
    assert_eq!(one.leader.as_deref(), Some("b"));
    assert_eq!(one.runner_up, None);
    assert_eq!(one.winner, None);
    assert_eq!(
        one.note,
        "only one server has results for reply_rate (b): no comparison"
    );

    let single = verdict(
        "reply_rate",
        Better::Higher,
        &[s("a", &[20000.0]), s("b", &EVENT)],
        &opts(),
    );
    assert_eq!(single.leader.as_deref(), Some("a"));
    assert_eq!(single.runner_up.as_deref(), Some("b"));
    assert_eq!(single.winner, None);
    assert!(single.ratio.is_some());
    assert_eq!(single.p_value, None);
    assert_eq!(
        single.note,
        "too few values to compare a and b on reply_rate (n = 1 / 5; a has only one): no winner"
    );
}

#[test]
fn non_finite_values_are_dropped_and_unpair() {
    let with_nan = [13100.0, f64::NAN, 13240.0, 13020.0, 13180.0];
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("event", &with_nan), s("h2o", &H2O)],
        &opts(),
    );
    assert_eq!(v.n.get("event"), Some(&4));
    assert_eq!(v.winner.as_deref(), Some("event"));
    assert!(v.note.ends_with("n = 4 / 5"), "{}", v.note);
}

#[test]
fn zero_values_do_not_panic() {
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("dead", &[0.0, 0.0, 0.0]), s("alive", &[10.0, 11.0, 12.0])],
        &opts(),
    );
    assert_eq!(v.leader.as_deref(), Some("alive"));
    assert_eq!(v.ratio, None);
    assert_eq!(v.winner, None);
    assert!(v.note.contains("ratio is undefined"), "{}", v.note);

    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[
            s("flaky", &[0.0, 5.0, 6.0]),
            s("alive", &[10.0, 11.0, 12.0]),
        ],
        &opts(),
    );
    assert_eq!(v.leader.as_deref(), Some("alive"));
    assert!(v.ratio.is_some() && v.p_value.is_some());
}

#[test]
fn invalid_options_never_name_a_winner() {
    let samples = [s("event", &EVENT), s("h2o", &H2O)];
    for o in [
        VerdictOptions {
            alpha: 0.0,
            ..opts()
        },
        VerdictOptions {
            alpha: f64::NAN,
            ..opts()
        },
        VerdictOptions {
            resamples: 0,
            ..opts()
        },
    ] {
        let v = verdict("reply_rate", Better::Higher, &samples, &o);
        assert_eq!(v.winner, None);
        assert!(v.note.starts_with("invalid verdict options"), "{}", v.note);
    }
}

#[test]
fn serializes_with_the_documented_field_names() {
    let v = verdict(
        "reply_rate",
        Better::Higher,
        &[s("event", &EVENT), s("h2o", &H2O)],
        &opts(),
    );
    let json = serde_json::to_value(&v).expect("serialize");
    for key in [
        "metric",
        "better",
        "winner",
        "leader",
        "runner_up",
        "ratio",
        "ratio_ci",
        "p_value",
        "significant",
        "n",
        "client_bound",
        "note",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["better"], "higher");
    assert_eq!(json["n"]["event"], 5);
    let back: Verdict = serde_json::from_value(json).expect("deserialize");
    assert_eq!(back, v);
}
