//! The verdict logic on constructed values (deterministic).

use std::collections::BTreeMap;

use super::*;
use crate::render;

fn side(kind: Kind, values: &[(Metric, &[f64])], client_bound_runs: usize) -> Side {
    let mut c = CellValues {
        client_bound_runs,
        ..Default::default()
    };
    for (m, v) in values {
        c.values.insert(m.clone(), v.to_vec());
        c.runs = c.runs.max(v.len());
    }
    Side {
        kind,
        files: vec!["x.json".into()],
        cells: BTreeMap::from([(String::new(), c)]),
        order: vec![String::new()],
        shapes: vec!["open, rate 100/s".into()],
    }
}

fn only(j: &Judgement, m: Metric) -> &Row {
    j.rows.iter().find(|r| r.metric == m).expect("row")
}

const RATE_A: [f64; 5] = [1000.0, 1010.0, 990.0, 1005.0, 995.0];
const RATE_B: [f64; 5] = [1002.0, 998.0, 1008.0, 992.0, 1000.0];
const P99_A: [f64; 5] = [1.0, 1.05, 0.98, 1.02, 1.0];
const P99_B: [f64; 5] = [1.5, 1.55, 1.45, 1.6, 1.5];

#[test]
fn equal_rates_are_equivalent_and_slower_p99_is_a_regression() {
    let base = side(
        Kind::Run,
        &[(Metric::ReplyRate, &RATE_A), (Metric::P99, &P99_A)],
        0,
    );
    let new = side(
        Kind::Run,
        &[(Metric::ReplyRate, &RATE_B), (Metric::P99, &P99_B)],
        0,
    );
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(j.family, 2);
    assert_eq!(only(&j, Metric::ReplyRate).verdict, Verdict::Equivalent);
    let p99 = only(&j, Metric::P99);
    assert_eq!(p99.verdict, Verdict::Regression);
    assert!(p99.beyond_threshold);
    let [lo, hi] = p99.ci95.expect("ci");
    assert!(lo > 1.4 && hi < 1.65 && (p99.ratio.expect("ratio") - 1.5045).abs() < 0.001);
    let answer = render::answer(&j);
    assert!(
        answer.starts_with("regression: p99 +50 % (95 % CI +"),
        "{answer}"
    );
    assert_eq!(j.regressions().len(), 1);
    // The other way round it is an improvement, and no regression.
    let j = judge(&new, &base, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::P99).verdict, Verdict::Improvement);
    let answer = render::answer(&j);
    assert!(
        answer.starts_with(
            "no regression beyond 5 %: 1 equivalent (reply_rate), 1 improvement (p99)"
        ),
        "{answer}"
    );
}

#[test]
fn a_lower_rate_is_a_regression_because_higher_is_better() {
    let slow: Vec<f64> = RATE_A.iter().map(|x| x * 0.8).collect();
    let base = side(Kind::Run, &[(Metric::ReplyRate, &RATE_A)], 0);
    let new = side(Kind::Run, &[(Metric::ReplyRate, &slow)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ReplyRate);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!((r.ratio.expect("ratio") - 0.8).abs() < 1e-9);
    assert!((worsening(r) - 0.25).abs() < 1e-9);
}

#[test]
fn the_threshold_sets_what_counts_for_the_exit_status() {
    let a: [f64; 5] = [1.0, 1.01, 0.99, 1.0, 1.005];
    let b: Vec<f64> = a.iter().map(|x| x * 1.08).collect();
    let base = side(Kind::Run, &[(Metric::P50, &a)], 0);
    let new = side(Kind::Run, &[(Metric::P50, &b)], 0);
    let strict = judge(&base, &new, &Options::default()).expect("judge");
    assert!(only(&strict, Metric::P50).beyond_threshold);
    let lenient = Options {
        threshold: 0.10,
        ..Options::default()
    };
    let j = judge(&base, &new, &lenient).expect("judge");
    let r = only(&j, Metric::P50);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(!r.beyond_threshold);
    assert!(j.regressions().is_empty());
    assert!(
        r.note.contains("not beyond the threshold of 10 %"),
        "{}",
        r.note
    );
    assert!(render::answer(&j)
        .starts_with("no regression beyond 10 %: 1 regression within the threshold (p50)"));
}

#[test]
fn one_run_per_side_is_inconclusive_for_want_of_spread() {
    let base = side(Kind::Run, &[(Metric::P99, &[1.0])], 0);
    let new = side(Kind::Run, &[(Metric::P99, &[3.0])], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::P99);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!((r.ratio.expect("ratio") - 3.0).abs() < 1e-12);
    assert_eq!(r.ci95, None);
    assert!(
        r.note.starts_with("no spread: BASE has 1 run, NEW 1"),
        "{}",
        r.note
    );
    assert!(render::answer(&j).contains("give at least 2 runs per side"));
}

#[test]
fn a_wide_spread_says_what_it_could_have_seen() {
    // The same values in another order: no change at all, but too much spread to say so.
    let base = side(Kind::Run, &[(Metric::P99, &[1.0, 1.3, 0.85, 1.15])], 0);
    let new = side(Kind::Run, &[(Metric::P99, &[1.15, 0.85, 1.3, 1.0])], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::P99);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(r.note.starts_with("these runs could see ≥"), "{}", r.note);
    assert!(
        r.note.contains("runs per side would settle ±5 %"),
        "{}",
        r.note
    );
}

#[test]
fn a_client_bound_loser_holds_a_regression_back() {
    let slow: Vec<f64> = RATE_A.iter().map(|x| x * 0.8).collect();
    let base = side(Kind::Run, &[(Metric::ReplyRate, &RATE_A)], 0);
    let new = side(Kind::Run, &[(Metric::ReplyRate, &slow)], 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ReplyRate);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(
        r.note
            .contains("held back: 5 of NEW's runs were client-bound"),
        "{}",
        r.note
    );
    // Server-measured metrics are never held back.
    let a = [10.0, 10.1, 9.9, 10.05];
    let b = [20.0, 20.1, 19.9, 20.05];
    let base = side(Kind::Run, &[(Metric::ServerCpu, &a)], 4);
    let new = side(Kind::Run, &[(Metric::ServerCpu, &b)], 4);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ServerCpu).verdict, Verdict::Regression);
}

#[test]
fn metrics_can_be_restricted_and_missing_ones_are_named() {
    let base = side(
        Kind::Run,
        &[
            (Metric::ReplyRate, &RATE_A),
            (Metric::ServerCpu, &[1.0, 1.1]),
        ],
        0,
    );
    let new = side(Kind::Run, &[(Metric::ReplyRate, &RATE_B)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ServerCpu).verdict, Verdict::Missing);
    assert_eq!(j.family, 1);
    let opts = Options {
        metrics: vec![Metric::ReplyRate],
        ..Options::default()
    };
    let j = judge(&base, &new, &opts).expect("judge");
    assert_eq!(j.rows.len(), 1);
    let opts = Options {
        metrics: vec![Metric::P999],
        ..Options::default()
    };
    let e = judge(&base, &new, &opts).expect_err("nothing");
    assert!(e.to_string().contains("check --metric"), "{e}");
}

#[test]
fn kinds_must_match() {
    let base = side(Kind::Run, &[(Metric::ReplyRate, &RATE_A)], 0);
    let new = side(Kind::Study, &[(Metric::ReplyRate, &RATE_B)], 0);
    let e = judge(&base, &new, &Options::default()).expect_err("kinds");
    assert!(
        e.to_string()
            .contains("BASE is a load result but NEW is a study result"),
        "{e}"
    );
}

#[test]
fn json_and_html_render() {
    let base = side(Kind::Run, &[(Metric::P99, &P99_A)], 0);
    let new = side(Kind::Run, &[(Metric::P99, &P99_B)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let text = render::json(&j, &base.files, &new.files).expect("json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("parse");
    assert_eq!(v["schema"], "httplab.compare/1");
    assert_eq!(v["regression"], true);
    assert_eq!(v["rows"][0]["metric"], "p99");
    assert_eq!(v["rows"][0]["verdict"], "regression");
    let html = render::html(&j, &base.files, &new.files);
    assert!(
        html.contains("<svg") && html.contains("regression: p99"),
        "{html}"
    );
}
