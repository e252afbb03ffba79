//! Property: splitting samples into N shards, recording each shard's
//! histogram into a result and merging gives exactly the union's statistics.

use crate::common;

use common::{hist_of, named, shard};
use httplab_merge::{merge_runs, Options};
use httplab_model::Latency;
use proptest::prelude::*;

/// Relative precision of a 3-significant-digit HDR histogram (plus 1 µs).
fn close(a_ms: f64, b_ms: f64) -> bool {
    (a_ms - b_ms).abs() <= b_ms.abs() * 1e-3 + 1e-3
}

fn same_distribution(a: &Latency, b: &Latency) {
    assert_eq!(a.count, b.count);
    assert_eq!(a.min_ms, b.min_ms);
    assert_eq!(a.max_ms, b.max_ms);
    assert_eq!(a.mean_ms, b.mean_ms);
    assert_eq!(a.stddev_ms, b.stddev_ms);
    assert_eq!(a.percentiles, b.percentiles);
    let (ha, hb) = (a.histogram().unwrap(), b.histogram().unwrap());
    match (ha, hb) {
        (Some(ha), Some(hb)) => {
            let ca: Vec<(u64, u64)> = ha
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            let cb: Vec<(u64, u64)> = hb
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            assert_eq!(ca, cb, "bucket counts differ");
        }
        (None, None) => {}
        _ => panic!("one side has no histogram"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn merged_equals_union(
        samples in prop::collection::vec((1u64..20_000_000, 0u32..8), 1..400),
        n in 1u32..6,
        errs in prop::collection::vec(0u64..50, 6),
    ) {
        let mut parts: Vec<Vec<u64>> = vec![Vec::new(); n as usize];
        for (v, s) in &samples {
            parts[(s % n) as usize].push(*v);
        }
        let runs: Vec<_> = (0..n)
            .map(|i| shard(i, n, "run-1", &parts[i as usize], errs[i as usize]))
            .collect();
        let merged = merge_runs(&named(runs.clone()), &Options::default()).unwrap().result;
        let all: Vec<u64> = samples.iter().map(|(v, _)| *v).collect();
        let union = Latency::from_histogram(&hist_of(&all));

        // Exactly the union's histogram, hence its statistics.
        same_distribution(&merged.latency.response, &union);
        same_distribution(&merged.latency.response_uncorrected, &union);

        // And, within histogram precision, the raw samples' statistics.
        let mut sorted = all.clone();
        sorted.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        let r = &merged.latency.response;
        prop_assert_eq!(r.count, all.len() as u64);
        prop_assert!(close(r.min_ms, ms(sorted[0])), "min {} vs {}", r.min_ms, ms(sorted[0]));
        prop_assert!(close(r.max_ms, ms(*sorted.last().unwrap())));
        let mean = all.iter().map(|&v| v as f64).sum::<f64>() / all.len() as f64 / 1000.0;
        prop_assert!(close(r.mean_ms, mean), "mean {} vs {}", r.mean_ms, mean);
        for p in &r.percentiles {
            // The sample at the percentile's rank, give or take one rank.
            let k = (p.pct / 100.0 * sorted.len() as f64).ceil() as usize;
            let lo = ms(sorted[k.saturating_sub(2).min(sorted.len() - 1)]);
            let hi = ms(sorted[k.min(sorted.len() - 1)]);
            prop_assert!(p.ms >= lo * (1.0 - 1e-3) - 1e-3 && p.ms <= hi * (1.0 + 1e-3) + 1e-3,
                "p{} = {} outside [{lo}, {hi}]", p.pct, p.ms);
        }

        // Counters add.
        let t = &merged.totals;
        prop_assert_eq!(t.requests, all.len() as u64);
        prop_assert_eq!(t.replies, all.len() as u64);
        prop_assert_eq!(t.connections, all.len() as u64);
        let e: u64 = errs[..n as usize].iter().sum();
        prop_assert_eq!(merged.errors.total, e);
        prop_assert_eq!(merged.errors.client_timo, e);
        prop_assert_eq!(merged.reply.status.success, all.len() as u64);
        prop_assert_eq!(merged.resources.bytes_received, 1000 * all.len() as u64);
        prop_assert_eq!(merged.series.iter().map(|i| i.replies).sum::<u64>(), all.len() as u64);
        prop_assert_eq!(merged.config.facts.abandoned_calls, Some(u64::from(n)));
        // The union span is the longest shard (all started together).
        prop_assert_eq!(t.test_duration_s, 10.0 + f64::from(n - 1));
        prop_assert_eq!(merged.shards.len(), n as usize);

        // Connect times: exactly the union too.
        let conn: Vec<u64> = all.iter().map(|s| s / 10).collect();
        same_distribution(&merged.latency.connect, &Latency::from_histogram(&hist_of(&conn)));

        // The order of the files does not matter.
        let mut rev = named(runs);
        rev.reverse();
        let again = merge_runs(&rev, &Options::default()).unwrap().result;
        let mut a = serde_json::to_value(&merged).unwrap();
        let mut b = serde_json::to_value(&again).unwrap();
        a["shards"] = serde_json::Value::Null;
        b["shards"] = serde_json::Value::Null;
        prop_assert_eq!(a, b);
    }
}
