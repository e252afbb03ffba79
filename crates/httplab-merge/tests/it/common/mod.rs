//! Builders of shard results for the merge tests.

use hdrhistogram::Histogram;
use httplab_model::{ClientShard, Interval, Latency, RunResult, StatusClasses, RUN_SCHEMA};

/// The load generator's histogram: microseconds, 1 µs .. 1 h, 3 digits.
pub fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()
}

pub fn hist_of(samples_us: &[u64]) -> Histogram<u64> {
    let mut h = hist();
    for &s in samples_us {
        h.saturating_record(s.max(1));
    }
    h
}

/// One shard's result: every sample is one connection, request and reply;
/// `errors` client timeouts; one interval per second of `secs` seconds.
pub fn shard(i: u32, n: u32, run_id: &str, samples_us: &[u64], errors: u64) -> RunResult {
    let h = hist_of(samples_us);
    let k = samples_us.len() as u64;
    let mut r = RunResult {
        schema: RUN_SCHEMA.into(),
        started_at: "2026-03-01T12:00:00Z".into(),
        label: "farm".into(),
        ..Default::default()
    };
    r.config.targets = vec!["http://10.0.0.1:8080/".into()];
    r.config.rate = Some(300.0);
    r.config.num_conns = Some(3000);
    r.config.method = "GET".into();
    r.config.command_line = vec![
        "--rate".into(),
        "300".into(),
        "--client".into(),
        format!("{i}/{n}"),
    ];
    if !run_id.is_empty() {
        r.config.facts.client_shard = Some(ClientShard { index: i, count: n });
        r.config.facts.run_id = Some(run_id.into());
    }
    r.config.facts.host = Some(format!("client-{i}"));
    r.config.facts.abandoned_calls = Some(1);
    r.totals.connections = k;
    r.totals.requests = k;
    r.totals.replies = k;
    r.totals.test_duration_s = 10.0 + f64::from(i);
    r.totals.max_concurrent_connections = 4;
    r.connection.replies_per_conn = if k > 0 { 1.0 } else { 0.0 };
    r.request.size_bytes = 80.0 + f64::from(i);
    r.reply.sample_interval_s = 1.0;
    r.reply.content_bytes = 1000.0 * f64::from(i + 1);
    r.reply.status = StatusClasses {
        success: k,
        ..StatusClasses::default()
    };
    r.resources.bytes_sent = 80 * k;
    r.resources.bytes_received = 1000 * k;
    r.resources.user_s = 0.5;
    r.errors.total = errors;
    r.errors.client_timo = errors;
    r.accuracy.bytes_received = 1000 * k;
    r.latency.response = Latency::from_histogram(&h);
    r.latency.response_uncorrected = Latency::from_histogram(&h);
    r.latency.connect = Latency::from_histogram(&hist_of(
        &samples_us.iter().map(|s| s / 10).collect::<Vec<_>>(),
    ));
    // Samples spread over 10 intervals, in order.
    for s in 0..10u64 {
        let part: Vec<u64> = samples_us
            .iter()
            .enumerate()
            .filter(|(j, _)| *j as u64 % 10 == s)
            .map(|(_, v)| *v)
            .collect();
        let ih = hist_of(&part);
        let q = |x: f64| {
            if ih.is_empty() {
                0.0
            } else {
                ih.value_at_quantile(x) as f64 / 1000.0
            }
        };
        r.series.push(Interval {
            t_s: (s + 1) as f64,
            len_s: 1.0,
            connections: part.len() as u64,
            requests: part.len() as u64,
            replies: part.len() as u64,
            errors: 0,
            bytes_in: 1000 * part.len() as u64,
            reply_rate: part.len() as f64,
            p50_ms: q(0.5),
            p99_ms: q(0.99),
            open_connections: 1,
        });
    }
    r
}

pub fn named(runs: Vec<RunResult>) -> Vec<(String, RunResult)> {
    runs.into_iter()
        .enumerate()
        .map(|(i, r)| (format!("shard-{i}.json"), r))
        .collect()
}
