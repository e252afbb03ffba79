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
        for &x in v.iter() {
            c.push_value(m.clone(), x, 0);
        }
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
        &[(Metric::REPLY_RATE, &RATE_A), (Metric::P99, &P99_A)],
        0,
    );
    let new = side(
        Kind::Run,
        &[(Metric::REPLY_RATE, &RATE_B), (Metric::P99, &P99_B)],
        0,
    );
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(j.family, 2);
    assert_eq!(only(&j, Metric::REPLY_RATE).verdict, Verdict::Equivalent);
    let p99 = only(&j, Metric::P99);
    assert_eq!(p99.verdict, Verdict::Regression);
    assert!(p99.beyond_threshold);
    let [lo, hi] = p99.ci95.expect("ci");
    assert!(lo > 1.4 && hi < 1.65 && (p99.ratio.expect("ratio") - 1.5045).abs() < 0.001);
    let answer = render::answer(&j);
    assert!(
        answer.starts_with("regression: p99 +50 % (97.5 % CI +"),
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
    let base = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_A)], 0);
    let new = side(Kind::Run, &[(Metric::REPLY_RATE, &slow)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::REPLY_RATE);
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
    let base = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_A)], 0);
    let new = side(Kind::Run, &[(Metric::REPLY_RATE, &slow)], 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::REPLY_RATE);
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
    let base = side(Kind::Run, &[(Metric::SERVER_CPU, &a)], 4);
    let new = side(Kind::Run, &[(Metric::SERVER_CPU, &b)], 4);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::SERVER_CPU).verdict, Verdict::Regression);
}

#[test]
fn metrics_can_be_restricted_and_missing_ones_are_named() {
    let base = side(
        Kind::Run,
        &[
            (Metric::REPLY_RATE, &RATE_A),
            (Metric::SERVER_CPU, &[1.0, 1.1]),
        ],
        0,
    );
    let new = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_B)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::SERVER_CPU).verdict, Verdict::Missing);
    assert_eq!(j.family, 1);
    let opts = Options {
        metrics: vec![Metric::REPLY_RATE],
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
    let base = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_A)], 0);
    let new = side(Kind::Study, &[(Metric::REPLY_RATE, &RATE_B)], 0);
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
    // The forest plot opens the page, one mark per comparison with a ratio, coloured by its
    // verdict, before the table.
    let svg = html
        .find("<svg class=\"forest\"")
        .or_else(|| html.find("class=\"forest\" role"));
    assert!(
        svg.is_some_and(|i| i < html.find("<table").unwrap_or(0)),
        "{html}"
    );
    assert_eq!(html.matches("<g class=\"mark ").count(), 1, "{html}");
    assert_eq!(html.matches("<g class=\"mark worse\"").count(), 1, "{html}");
    assert!(html.contains("class=\"band\""), "{html}");
}

/// A cell with reply rates and errors counted over `runs` runs.
fn with_errors(rates: &[f64], errors: u64, calls: u64, runs: usize) -> Side {
    let mut s = side(Kind::Run, &[(Metric::REPLY_RATE, rates)], 0);
    if let Some(c) = s.cells.get_mut("") {
        c.counts.insert(
            Metric::ERRORS,
            crate::input::Counted {
                events: errors,
                exposure: calls,
                runs,
            },
        );
    }
    s
}

#[test]
fn no_errors_on_either_side_is_not_judged_whatever_the_calls() {
    // The calls of the report that failed a gate: 0 of 1 267 364 against 0 of 685 141.
    let base = with_errors(&RATE_A, 0, 1_267_364, 5);
    let new = with_errors(&RATE_B, 0, 685_141, 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::NoErrors);
    assert!(!r.beyond_threshold);
    assert_eq!((r.ratio, r.ci95, r.p_value), (None, None, None));
    // Not a member of the family: only the reply rate was decided.
    assert_eq!(j.family, 1);
    assert!(j.regressions().is_empty(), "exit status 0");
    let answer = render::answer(&j);
    assert_eq!(
        answer,
        "no regression beyond 5 %: 1 equivalent (reply_rate), no errors on either side"
    );
    let text = render::text(&j);
    assert!(text.contains("0 → 0 errors"), "{text}");
    assert!(text.contains("0 (0 of 1267364, n=5)"), "{text}");
    let json = render::json(&j, &base.files, &new.files).expect("json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("parse");
    assert_eq!(v["regression"], false);
    assert_eq!(v["rows"][1]["verdict"], "no_errors", "{v}");
}

#[test]
fn errors_on_one_side_only_are_judged_by_the_exact_test() {
    // None of a million calls against 50 of a million: a regression, told as counts.
    let base = with_errors(&RATE_A, 0, 1_000_000, 5);
    let new = with_errors(&RATE_B, 50, 1_000_000, 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(r.beyond_threshold);
    assert_eq!(r.ratio, None, "an infinite ratio is not printed as one");
    assert!(r.p_value.expect("p") < 1e-10);
    assert!(
        r.note.starts_with("p < 0.001 (exact test on the counts"),
        "{}",
        r.note
    );
    assert_eq!(j.family, 2);
    assert_eq!(
        render::answer(&j),
        "regression: errors 0 → 50 errors (0 → 0.005 % of calls)"
    );
    assert!(worsening(r).is_infinite());
    // The other way round: an improvement.
    let j = judge(&new, &base, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ERRORS).verdict, Verdict::Improvement);
    assert!(j.regressions().is_empty());
    // One error in 100 calls against none: nothing can be told from one error.
    let base = with_errors(&RATE_A, 0, 100, 1);
    let new = with_errors(&RATE_B, 1, 100, 1);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(
        r.note.starts_with("not a significant change: p = 1"),
        "{}",
        r.note
    );
    // One run a side is no reason to ask for more runs: counts need no spread.
    assert!(!render::answer(&j).contains("too few runs"));
}

#[test]
fn the_same_error_rate_over_very_different_calls_is_no_regression() {
    // 1 error in 10 000 calls on both sides, over 1 267 364 and 685 141 calls.
    let base = with_errors(&RATE_A, 127, 1_267_364, 5);
    let new = with_errors(&RATE_B, 68, 685_141, 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(!r.beyond_threshold && j.regressions().is_empty());
    let x = r.ratio.expect("ratio");
    assert!((x - (68.0 / 685_141.0) / (127.0 / 1_267_364.0)).abs() < 1e-12);
    let [lo, hi] = r.ci95.expect("ci");
    assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
    assert!(r.p_value.expect("p") > 0.5);
    // Many more errors at one rate: equivalent.
    let base = with_errors(&RATE_A, 126_736, 1_267_364_000, 5);
    let new = with_errors(&RATE_B, 68_514, 685_141_000, 5);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ERRORS).verdict, Verdict::Equivalent);
}

#[test]
fn error_counts_join_the_family() {
    // 41 errors in 28 010 calls against 15 in 19 017: exact p = 0.048. Alone it is a
    // regression; beside a p99 it is one of a family of two, its level halved.
    let base = with_errors(&RATE_A, 15, 19_017, 5);
    let new = with_errors(&RATE_B, 41, 28_010, 5);
    let opts = Options {
        metrics: vec![Metric::ERRORS],
        ..Options::default()
    };
    let j = judge(&base, &new, &opts).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!((j.family, r.verdict), (1, Verdict::Regression));
    assert!((r.p_value.expect("p") - 0.047_660_246_754_565_9).abs() < 1e-9);
    let wide = [1.0, 1.3, 0.85, 1.15];
    let mut base = base;
    let mut new = new;
    for (s, v) in [(&mut base, wide), (&mut new, [1.15, 0.85, 1.3, 1.0])] {
        if let Some(c) = s.cells.get_mut("") {
            c.values.remove(&Metric::P99);
            for x in v {
                c.push_value(Metric::P99, x, 0);
            }
        }
    }
    let opts = Options {
        metrics: vec![Metric::ERRORS, Metric::P99],
        ..Options::default()
    };
    let j = judge(&base, &new, &opts).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!((j.family, r.verdict), (2, Verdict::Inconclusive));
    assert!((r.p_value.expect("p") - 2.0 * 0.047_660_246_754_565_9).abs() < 1e-9);
}

#[test]
fn a_client_bound_new_side_holds_an_errors_regression_back() {
    let base = with_errors(&RATE_A, 0, 1_000_000, 5);
    let mut new = with_errors(&RATE_B, 50, 1_000_000, 5);
    if let Some(c) = new.cells.get_mut("") {
        c.client_bound_runs = 2;
    }
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(
        r.note.starts_with("held back: 2 of NEW's runs"),
        "{}",
        r.note
    );
}

/// A load result of `runs` runs: each with `calls` calls of which `errors` failed, at 1000
/// replies a second.
fn document(runs: &[(u64, u64)], user_s: f64) -> httplab_model::Document {
    use httplab_model::{RunResult, RUN_SCHEMA};
    let one = |&(calls, errors): &(u64, u64)| {
        let mut r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        r.totals.replies = calls - errors;
        r.errors.total = errors;
        r.totals.test_duration_s = r.totals.replies as f64 / 1000.0;
        r.resources.user_s = user_s * r.totals.replies as f64 / 1e6;
        r
    };
    let mut first = one(&runs[0]);
    first.repeats = runs[1..].iter().map(one).collect();
    httplab_model::Document::Run(Box::new(first))
}

#[test]
fn load_results_end_to_end() {
    use crate::input::side_of;
    // Five runs a side, no error anywhere, very different calls: the gate passes.
    let base_runs = [
        (253_472, 0),
        (253_473, 0),
        (253_473, 0),
        (253_473, 0),
        (253_473, 0),
    ];
    let new_runs = [
        (137_028, 0),
        (137_028, 0),
        (137_028, 0),
        (137_028, 0),
        (137_029, 0),
    ];
    let side = |name: &str, runs: &[(u64, u64)], cpu: f64| {
        side_of(vec![(name.to_string(), document(runs, cpu))]).expect("side")
    };
    let base = side("base.json", &base_runs, 20.0);
    let new = side("new.json", &new_runs, 20.0);
    assert_eq!(
        base.cells[""].counts[&Metric::ERRORS],
        crate::input::Counted {
            events: 0,
            exposure: 1_267_364,
            runs: 5
        }
    );
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert!(j.regressions().is_empty(), "{}", render::text(&j));
    assert_eq!(only(&j, Metric::ERRORS).verdict, Verdict::NoErrors);
    assert!(render::answer(&j).ends_with("no errors on either side"));
    // The same NEW with 50 errors in its third run, and more CPU per reply: both regress,
    // decided in one family.
    let mut failing = new_runs;
    failing[2].1 = 50;
    let new = side("new.json", &failing, 30.0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ERRORS).verdict, Verdict::Regression);
    assert_eq!(only(&j, Metric::CLIENT_CPU).verdict, Verdict::Regression);
    let answer = render::answer(&j);
    assert!(
        answer.starts_with(
            "regression: errors 0 → 50 errors (0 → 0.0073 % of calls); also client_cpu"
        ),
        "{answer}"
    );
    let text = render::text(&j);
    assert!(text.contains("Errors are counts"), "{text}");
}

#[test]
fn replies_with_a_5xx_status_are_failed_calls_and_none_on_either_side_is_no_regression() {
    use crate::input::side_of;
    let runs = [(10_000, 0), (10_000, 0), (10_000, 0)];
    let base = side_of(vec![("base.json".into(), document(&runs, 20.0))]).expect("base");
    // NEW answers every call, quickly, without a single connection error: 0 against 0
    // failed calls is not judged, whatever else the runs show.
    let same = side_of(vec![("new.json".into(), document(&runs, 20.0))]).expect("new");
    let j = judge(&base, &same, &Options::default()).expect("judge");
    assert_eq!(only(&j, Metric::ERRORS).verdict, Verdict::NoErrors);
    assert!(j.regressions().is_empty());
    // The same NEW with 300 of its second run's replies a 503: failed calls, counted as
    // errors over the attempted calls (the model's one definition), and a regression.
    let mut doc = document(&runs, 20.0);
    if let httplab_model::Document::Run(r) = &mut doc {
        r.repeats[0].reply.status.server_error = 300;
    }
    let new = side_of(vec![("new.json".into(), doc)]).expect("new");
    assert_eq!(
        new.cells[""].counts[&Metric::ERRORS],
        crate::input::Counted {
            events: 300,
            exposure: 30_000,
            runs: 3
        }
    );
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::ERRORS);
    assert_eq!(r.verdict, Verdict::Regression);
    assert_eq!(r.new.errors_of_calls, Some([300, 30_000]));
    assert!(render::answer(&j).starts_with("regression: errors 0 → 300 errors"));
}

/// A side whose runs of `m` come from several sessions (result files).
fn sessions_side(m: &Metric, sessions: &[&[f64]]) -> Side {
    let mut s = side(Kind::Run, &[], 0);
    let c = s.cells.get_mut("").expect("cell");
    for (k, runs) in (0u32..).zip(sessions) {
        for v in runs.iter() {
            c.push_value(m.clone(), *v, k);
        }
        c.runs += runs.len();
    }
    s.files = (0..sessions.len()).map(|k| format!("{k}.json")).collect();
    s
}

#[test]
fn one_session_a_side_says_the_spread_between_sessions_was_not_measured() {
    let base = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_A)], 0);
    let new = side(Kind::Run, &[(Metric::REPLY_RATE, &RATE_B)], 0);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, Metric::REPLY_RATE);
    assert_eq!(r.sessions, [1, 1]);
    assert!(r.session_spread.is_none());
    assert!(
        j.notes
            .iter()
            .any(|n| n.starts_with("BASE and NEW are one session each")),
        "{:?}",
        j.notes
    );
}

#[test]
fn a_baseline_of_several_sessions_is_compared_by_session() {
    // Each session's runs agree within 0.2 %; the sessions differ by about 3 %. NEW's one
    // session is 2.5 % below BASE's mean: by runs a clear regression, by sessions not.
    let m = Metric::REPLY_RATE;
    let base = sessions_side(
        &m,
        &[
            &[1000.0, 1001.0, 999.0],
            &[1040.0, 1041.0, 1039.0],
            &[970.0, 971.0, 969.0],
            &[1020.0, 1021.0, 1019.0],
        ],
    );
    let new = sessions_side(&m, &[&[982.0, 983.0, 981.0]]);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, m.clone());
    assert_eq!(r.sessions, [4, 1]);
    assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
    assert!(!r.beyond_threshold);
    let spread = r.session_spread.expect("spread");
    assert!(spread > 0.02 && spread < 0.04, "{spread}");
    assert!(r.note.contains("sessions could see"), "{}", r.note);
    assert!(
        j.notes.iter().any(|n| n.contains("BASE 4 sessions, NEW 1")),
        "{:?}",
        j.notes
    );
    // The same values as one session each side: the runs call it.
    let flat: Vec<f64> = base.cells[""].values_of(&m);
    let one = side(Kind::Run, &[(m.clone(), &flat)], 0);
    let new_one = side(Kind::Run, &[(m.clone(), &[982.0, 983.0, 981.0])], 0);
    let j1 = judge(&one, &new_one, &Options::default()).expect("judge");
    assert_eq!(only(&j1, m).verdict, Verdict::Regression);
}

#[test]
fn a_change_far_beyond_the_spread_between_sessions_is_called() {
    let m = Metric::REPLY_RATE;
    let base = sessions_side(
        &m,
        &[
            &[1000.0, 1001.0, 999.0],
            &[1010.0, 1011.0, 1009.0],
            &[990.0, 991.0, 989.0],
            &[1005.0, 1006.0, 1004.0],
            &[995.0, 996.0, 994.0],
        ],
    );
    let new = sessions_side(&m, &[&[800.0, 801.0, 799.0]]);
    let j = judge(&base, &new, &Options::default()).expect("judge");
    let r = only(&j, m);
    assert_eq!(r.verdict, Verdict::Regression, "{r:?}");
    assert!(r.beyond_threshold);
}
