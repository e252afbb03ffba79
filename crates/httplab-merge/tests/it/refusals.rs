//! What `httplab merge` refuses, what it warns about, and sweeps.

use crate::common;

use common::{named, shard};
use httplab_merge::{merge_documents, merge_runs, merge_sweeps, MergeError, Options};
use httplab_model::{
    ClientShard, Document, RunResult, Saturation, StudyResult, SweepResult, SweepStep, SweepTarget,
    STUDY_SCHEMA, SWEEP_SCHEMA,
};

fn three() -> Vec<RunResult> {
    (0..3)
        .map(|i| shard(i, 3, "run-a", &[1000 * u64::from(i + 1), 5000], 0))
        .collect()
}

fn err(runs: Vec<RunResult>, opts: Options) -> MergeError {
    match merge_runs(&named(runs), &opts) {
        Ok(_) => panic!("merge should have been refused"),
        Err(e) => e,
    }
}

#[test]
fn a_complete_set_merges() {
    let m = merge_runs(&named(three()), &Options::default()).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let r = m.result;
    assert_eq!(r.totals.replies, 6);
    assert_eq!(
        r.shards.iter().map(|s| s.index).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(r.shards[2].host, "client-2");
    assert_eq!(
        r.environment.facts.hosts,
        ["client-0", "client-1", "client-2"]
    );
    assert_eq!(r.environment.facts.shards, Some(3));
    assert_eq!(r.config.facts.merged_shards, Some(3));
    assert_eq!(r.config.facts.run_id.as_deref(), Some("run-a"));
    assert_eq!(r.config.facts.client_shard, None);
    assert!(!r.config.facts.merge_approximations.is_empty());
    assert_eq!(r.shards[1].facts.client_shard.map(|s| s.index), Some(1));
    // Rates over the union span (the longest shard: 12 s).
    assert_eq!(r.totals.test_duration_s, 12.0);
    assert!((r.request.rate_per_s - 6.0 / 12.0).abs() < 1e-12);
    // Averages per reply are exact totals over counts.
    assert!(
        (r.reply.content_bytes - (2.0 * 1000.0 + 2.0 * 2000.0 + 2.0 * 3000.0) / 6.0).abs() < 1e-9
    );
    // Series: 10 aligned intervals, each the sum of the shards'.
    assert_eq!(r.series.len(), 10);
    assert_eq!(r.series[0].t_s, 1.0);
    assert_eq!(r.series[0].replies, 3);
    assert_eq!(r.series[0].open_connections, 3);
    // It reads back as a run and cannot be merged again.
    let text = serde_json::to_string(&r).unwrap();
    let back = match Document::from_json(&text).unwrap() {
        Document::Run(b) => *b,
        _ => panic!("not a run"),
    };
    assert_eq!(back, r);
    let e = merge_runs(&named(vec![back]), &Options::default()).unwrap_err();
    assert!(matches!(e, MergeError::AlreadyMerged(_)), "{e}");
}

/// `r` as a version 1 document wrote it: the facts as words in `config.extra`.
fn as_version_1(r: &RunResult) -> RunResult {
    let f = &r.config.facts;
    let mut v = serde_json::to_value(r).unwrap();
    v["schema"] = "httplab.run/1".into();
    v["config"].as_object_mut().unwrap().remove("facts");
    let words = serde_json::json!({
        "client_shard": f.client_shard.map(|s| s.to_string()),
        "run_id": f.run_id,
        "host": f.host,
        "abandoned_calls": f.abandoned_calls.map(|n| n.to_string()),
        "server_version": "nginx/1.22.1",
    });
    v["config"]["extra"] = words;
    serde_json::from_value(v).unwrap()
}

#[test]
fn version_1_shards_merge_like_typed_ones() {
    let typed = merge_runs(&named(three()), &Options::default())
        .unwrap()
        .result;
    let old: Vec<RunResult> = three().iter().map(as_version_1).collect();
    assert_eq!(
        old[1].config.facts.client_shard,
        Some(ClientShard { index: 1, count: 3 })
    );
    let r = merge_runs(&named(old), &Options::default()).unwrap().result;
    assert_eq!(r.totals, typed.totals);
    assert_eq!(r.config.facts, typed.config.facts);
    assert_eq!(r.environment.facts.hosts, typed.environment.facts.hosts);
    // A free-form word every shard agrees on is kept.
    assert_eq!(r.config.extra["server_version"], "nginx/1.22.1");
}

#[test]
fn different_runs_are_refused() {
    let mut v = three();
    v[1].config.facts.run_id = Some("run-b".into());
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::DifferentRuns { .. }), "{e}");
    assert!(
        e.to_string().contains("run-b") && e.to_string().contains("shard-1.json"),
        "{e}"
    );
}

#[test]
fn overlapping_shards_are_refused() {
    let mut v = three();
    v[2].config.facts.client_shard = Some(ClientShard { index: 1, count: 3 });
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::Overlap { .. }), "{e}");
    assert!(e.to_string().contains("shard 1/3 given twice"), "{e}");
}

#[test]
fn missing_shards_are_refused() {
    let mut v = three();
    v.remove(1);
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::Missing { .. }), "{e}");
    assert!(e.to_string().contains("missing shard(s) 1/3"), "{e}");
    // --force does not make a partial set whole.
    let mut v = three();
    v.remove(0);
    let e = err(
        v,
        Options {
            force: true,
            ..Options::default()
        },
    );
    assert!(matches!(e, MergeError::Missing { .. }), "{e}");
}

#[test]
fn shards_of_different_splits_are_refused() {
    let mut v = three();
    v[1].config.facts.client_shard = Some(ClientShard { index: 1, count: 4 });
    assert!(matches!(
        err(v, Options::default()),
        MergeError::ShardCount { .. }
    ));
    let mut v = three();
    v[1].config.facts.client_shard = Some(ClientShard { index: 3, count: 3 });
    assert!(matches!(
        err(v, Options::default()),
        MergeError::BadShard { .. }
    ));
    // An older document's word that does not parse is refused the same way.
    let mut v = three();
    let mut doc = serde_json::to_value(&v[1]).unwrap();
    doc["config"]["facts"]
        .as_object_mut()
        .unwrap()
        .remove("client_shard");
    doc["config"]["extra"]["client_shard"] = "3/3".into();
    v[1] = serde_json::from_value(doc).unwrap();
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::BadShard { .. }), "{e}");
    assert!(e.to_string().contains("\"3/3\""), "{e}");
}

#[test]
fn unsharded_results_need_force_and_matching_configs() {
    let plain = |i| shard(i, 2, "", &[1000, 2000], 0);
    let e = err(vec![plain(0), plain(1)], Options::default());
    assert!(matches!(e, MergeError::NoShardInfo(_)), "{e}");
    assert!(e.to_string().contains("--force"), "{e}");
    let forced = Options {
        force: true,
        ..Options::default()
    };
    let m = merge_runs(&named(vec![plain(0), plain(1)]), &forced).unwrap();
    assert_eq!(m.result.totals.replies, 4);
    assert_eq!(m.result.shards[1].index, 1);
    let mut other = plain(1);
    other.config.rate = Some(50.0);
    let e = err(vec![plain(0), other], forced);
    assert!(
        matches!(e, MergeError::Incompatible { ref what, .. } if what == "rate"),
        "{e}"
    );
    // Shards mixed with a plain run.
    let e = err(vec![shard(0, 2, "r", &[1], 0), plain(1)], forced);
    assert!(matches!(e, MergeError::PartlySharded { .. }), "{e}");
    // A shard without a run id.
    let mut v = three();
    v[0].config.facts.run_id = None;
    assert!(matches!(err(v, Options::default()), MergeError::NoRunId(_)));
}

#[test]
fn different_sample_intervals_are_refused() {
    let mut v = three();
    v[2].reply.sample_interval_s = 5.0;
    let e = err(v, Options::default());
    assert!(
        matches!(e, MergeError::Incompatible { ref what, .. } if what == "sample interval"),
        "{e}"
    );
}

#[test]
fn a_latency_without_histogram_is_refused() {
    let mut v = three();
    v[1].latency.response.hdr.clear();
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::Histogram { .. }), "{e}");
    assert!(e.to_string().contains("latency.response"), "{e}");
    let mut v = three();
    v[1].latency.response.hdr = "not base64!".into();
    assert!(matches!(
        err(v, Options::default()),
        MergeError::Histogram { .. }
    ));
}

#[test]
fn skewed_starts_warn_and_shift_the_series() {
    let mut v = three();
    v[1].started_at = "2026-03-01T12:00:03Z".into();
    let m = merge_runs(&named(v), &Options::default()).unwrap();
    assert!(
        m.warnings.iter().any(|w| w.contains("3.0 s apart")),
        "{:?}",
        m.warnings
    );
    assert!(m
        .result
        .self_check
        .warnings
        .iter()
        .any(|w| w.starts_with("merge: ")));
    let r = m.result;
    // Shard 1's intervals start 3 s later: 13 intervals, the first three
    // without shard 1, and the span is 3 + 11 s.
    assert_eq!(r.series.len(), 13);
    assert_eq!(r.series[0].open_connections, 2);
    assert_eq!(r.series[12].open_connections, 1);
    assert_eq!(r.totals.test_duration_s, 14.0);
    assert_eq!(r.shards[1].start_offset_s, 3.0);
    // Within the allowed skew: no warning.
    let mut v = three();
    v[1].started_at = "2026-03-01T12:00:03Z".into();
    let m = merge_runs(
        &named(v),
        &Options {
            max_skew_s: 5.0,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn a_shared_start_at_aligns_and_late_shards_warn() {
    let mut v = three();
    for r in &mut v {
        r.config.facts.start_at = Some("2026-03-01T12:00:00Z".into());
    }
    // started_at has whole seconds; the planned start aligns exactly.
    v[2].started_at = "2026-03-01T11:59:59Z".into();
    let m = merge_runs(&named(v.clone()), &Options::default()).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(m.result.series.len(), 10);
    v[0].started_at = "2026-03-01T12:00:04Z".into();
    let m = merge_runs(&named(v), &Options::default()).unwrap();
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("after the shared --start-at")),
        "{:?}",
        m.warnings
    );
}

#[test]
fn bad_times_are_refused() {
    let mut v = three();
    v[0].started_at = "soon".into();
    assert!(matches!(
        err(v, Options::default()),
        MergeError::BadTime { .. }
    ));
}

fn sweep(i: u32, rates: &[f64]) -> SweepResult {
    SweepResult {
        schema: SWEEP_SCHEMA.into(),
        started_at: "2026-03-01T12:00:00Z".into(),
        targets: vec![SweepTarget {
            label: "farm".into(),
            url: "http://10.0.0.1:8080/".into(),
            steps: rates
                .iter()
                .map(|&r| {
                    let mut run = shard(
                        i,
                        2,
                        &format!("sweep-{r}"),
                        &[1000, 2000 * u64::from(i + 1)],
                        0,
                    );
                    run.config.rate = Some(r);
                    SweepStep {
                        demanded_rate: r,
                        run,
                    }
                })
                .collect(),
            saturation: Saturation {
                slo_ms: 250.0,
                ..Default::default()
            },
        }],
        ..Default::default()
    }
}

fn count_steps(steps: &[SweepStep], slo: f64) -> Saturation {
    Saturation {
        runs: steps.len() as u32,
        slo_ms: slo,
        method: "test".into(),
        max_sustainable_rate: steps.last().map(|s| s.demanded_rate),
        ..Default::default()
    }
}

#[test]
fn sweeps_merge_step_by_step() {
    let a = sweep(0, &[100.0, 200.0, 300.0]);
    let b = sweep(1, &[300.0, 100.0, 200.0]);
    let m = merge_sweeps(
        &[("a.json".into(), a), ("b.json".into(), b)],
        &Options::default(),
        Some(count_steps),
    )
    .unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let t = &m.result.targets[0];
    assert_eq!(
        t.steps.iter().map(|s| s.demanded_rate).collect::<Vec<_>>(),
        [100.0, 200.0, 300.0]
    );
    for s in &t.steps {
        assert_eq!(s.run.totals.replies, 4);
        assert_eq!(s.run.shards.len(), 2);
        assert_eq!(s.run.config.rate, Some(s.demanded_rate));
    }
    assert_eq!(t.saturation.method, "test");
    assert_eq!(t.saturation.max_sustainable_rate, Some(300.0));
    assert_eq!(t.saturation.slo_ms, 250.0);
}

#[test]
fn a_step_missing_from_one_sweep_is_left_out() {
    let a = sweep(0, &[100.0, 200.0, 300.0]);
    let b = sweep(1, &[100.0, 200.0]);
    let m = merge_sweeps(
        &[("a.json".into(), a), ("b.json".into(), b)],
        &Options::default(),
        None,
    )
    .unwrap();
    assert_eq!(m.result.targets[0].steps.len(), 2);
    assert!(
        m.warnings.iter().any(|w| w.contains("step 300/s left out")),
        "{:?}",
        m.warnings
    );
    assert_eq!(
        m.result.targets[0].saturation.method,
        "merged (not analysed)"
    );
    // Steps of different runs are refused like runs.
    let a = sweep(0, &[100.0]);
    let mut b = sweep(1, &[100.0]);
    b.targets[0].steps[0].run.config.facts.run_id = Some("other".into());
    let e = merge_sweeps(
        &[("a.json".into(), a), ("b.json".into(), b)],
        &Options::default(),
        None,
    )
    .unwrap_err();
    assert!(matches!(e, MergeError::DifferentRuns { .. }), "{e}");
}

#[test]
fn mixed_kinds_and_studies_are_refused() {
    let run = Document::Run(Box::new(shard(0, 2, "r", &[1], 0)));
    let sw = Document::Sweep(Box::new(sweep(1, &[100.0])));
    let e = merge_documents(
        vec![("a.json".into(), run.clone()), ("b.json".into(), sw)],
        &Options::default(),
        None,
    )
    .unwrap_err();
    assert!(matches!(e, MergeError::MixedSchemas { .. }), "{e}");
    assert!(e.to_string().contains("httplab.sweep/1"), "{e}");
    let study = Document::Study(Box::new(StudyResult {
        schema: STUDY_SCHEMA.into(),
        ..Default::default()
    }));
    let e = merge_documents(vec![("s.json".into(), study)], &Options::default(), None).unwrap_err();
    assert!(matches!(e, MergeError::Unsupported { .. }), "{e}");
    let e = merge_documents(vec![], &Options::default(), None).unwrap_err();
    assert!(matches!(e, MergeError::Empty));
}

#[test]
fn repeated_results_are_refused_with_a_pointer_to_compare() {
    let mut v = three();
    let again = v[0].clone();
    v[0].repeats = vec![again];
    let e = err(v, Options::default());
    assert!(matches!(e, MergeError::Repeated(_, 2)), "{e}");
    assert!(e.to_string().contains("httplab compare"), "{e}");
}
