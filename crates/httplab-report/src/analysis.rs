//! Saturation analysis of measured steps: which steps of a sweep were
//! sustained, the maximum sustainable rate and the knee of the response-time
//! curve. Pure functions of finished runs; the `--find-max` search, which
//! runs load, is httplab-sweep's and judges its steps with these.
//!
//! A step is *sustained* when
//! - its reply rate is at least 99 % of the demanded request rate (within 1 %),
//! - fewer than 0.1 % of its calls failed (the error rate of the model's one
//!   definition, [`httplab_model::metric`]: errors of every class plus 5xx
//!   replies, over the calls with an outcome), and
//! - its p99 response time (coordinated-omission corrected) is within the SLO.
//!
//! The reply rate used here is the larger of two estimates: the average of the
//! full per-interval reply-rate samples (a server that falls behind replies at
//! its capacity in every interval), and the run's replies divided by its
//! duration less the median response time (a count-bounded open-loop run lasts
//! the send span plus the time the last replies take; that tail would otherwise
//! make a short run miss the 1 % band, while a server that falls behind
//! stretches the run by its backlog, about twice the median wait). Taking the
//! larger keeps one late interval or one slow last reply from failing a step;
//! an overload of more than about 2 % fails both.

use httplab_model::metric::{latency_percentile_ms, response_percentile_ms};
use httplab_model::{Metric, RunResult, Saturation, SweepStep};

/// Fraction of the demanded rate a step's reply rate must reach.
pub const RATE_TOLERANCE: f64 = 0.01;
/// Largest error fraction of a sustained step (0.1 %).
pub const MAX_ERROR_FRACTION: f64 = 0.001;

/// The numbers of one run that sweeps chart and judge.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepMetrics {
    /// Demanded connection rate (the sweep's step rate).
    pub demanded_conn_rate: f64,
    /// Demanded request rate: connection rate × calls per connection.
    pub demanded_req_rate: f64,
    /// Achieved request rate (httperf "Request rate").
    pub req_rate: f64,
    /// Achieved connection rate.
    pub conn_rate: f64,
    /// Reply rate: the registry's [`Metric::ReplyRate`] (what the charts plot).
    pub reply_rate: f64,
    /// The reply rate the sustain test uses (see the module docs).
    pub judged_rate: f64,
    /// httperf's sampled reply rate: min, avg, max, stddev, samples.
    pub rep_min: f64,
    /// Average sampled reply rate.
    pub rep_avg: f64,
    /// Maximum sampled reply rate.
    pub rep_max: f64,
    /// Standard deviation of the sampled reply rate.
    pub rep_stddev: f64,
    /// Number of reply-rate samples.
    pub rep_samples: u64,
    /// Median response time (corrected), ms, if known.
    pub p50_ms: Option<f64>,
    /// 99th percentile response time (corrected), ms, if known.
    pub p99_ms: Option<f64>,
    /// Mean response time (corrected), ms, if known.
    pub mean_ms: Option<f64>,
    /// Failed calls in percent of attempted ones: the registry's [`Metric::ErrorPct`]
    /// (0 for a run without a call).
    pub error_pct: f64,
    /// The generator flagged itself as the bottleneck.
    pub client_bound: bool,
    /// Whether the step met every criterion (given the SLO it was judged with).
    pub sustained: bool,
}

/// Response latency of a run: the corrected one when present, else the
/// uncorrected one (documents without the corrected distribution).
fn response(run: &RunResult) -> &httplab_model::Latency {
    if run.latency.response.count > 0 {
        &run.latency.response
    } else {
        &run.latency.response_uncorrected
    }
}

/// p-th percentile of a run's response time, ms: the registry's corrected
/// percentile ([`response_percentile_ms`]), else the uncorrected one of a
/// document without the corrected distribution.
pub fn percentile_ms(run: &RunResult, pct: f64) -> Option<f64> {
    response_percentile_ms(run, pct).or_else(|| latency_percentile_ms(response(run), pct))
}

/// Failed calls of a run in percent of its attempted calls: the registry's
/// [`Metric::ErrorPct`] (errors of every class plus 5xx replies over replies
/// plus errors), 0 for a run without a call.
pub fn error_pct(run: &RunResult) -> f64 {
    Metric::ErrorPct.of_run(run).unwrap_or(0.0)
}

/// Replies per second: the registry's [`Metric::ReplyRate`] (replies / test
/// duration); the sampled average when the duration is unknown.
pub fn throughput(run: &RunResult) -> f64 {
    Metric::ReplyRate.of_run(run).unwrap_or(run.reply.rate.avg)
}

/// The rate the sustain test judges (see the module docs; not the reply-rate
/// metric): the larger of the per-interval sample average and replies /
/// (duration − median response time).
pub fn judged_rate(run: &RunResult) -> f64 {
    let d = run.totals.test_duration_s;
    let replies = run.totals.replies as f64;
    if replies <= 0.0 {
        return 0.0;
    }
    let sampled = if run.reply.rate.count > 0 && run.reply.rate.avg.is_finite() {
        run.reply.rate.avg
    } else {
        0.0
    };
    if !(d.is_finite() && d > 0.0) {
        return sampled;
    }
    let tail = percentile_ms(run, 50.0).unwrap_or(0.0) / 1000.0;
    let span = if d - tail > d * 0.5 { d - tail } else { d };
    (replies / span).max(sampled)
}

/// Computes the metrics of one step and judges it against `slo_ms`.
pub fn metrics(step_rate: f64, run: &RunResult, slo_ms: f64) -> StepMetrics {
    let calls = run.config.num_calls.unwrap_or(1).max(1) as f64;
    let demanded_req_rate = step_rate * calls;
    let p99 = percentile_ms(run, 99.0);
    let lat = response(run);
    let mut m = StepMetrics {
        demanded_conn_rate: step_rate,
        demanded_req_rate,
        req_rate: run.request.rate_per_s,
        conn_rate: run.connection.rate_per_s,
        reply_rate: throughput(run),
        judged_rate: judged_rate(run),
        rep_min: run.reply.rate.min,
        rep_avg: run.reply.rate.avg,
        rep_max: run.reply.rate.max,
        rep_stddev: run.reply.rate.stddev,
        rep_samples: run.reply.rate.count,
        p50_ms: percentile_ms(run, 50.0),
        p99_ms: p99,
        mean_ms: if lat.count > 0 {
            Some(lat.mean_ms)
        } else if run.totals.replies > 0 {
            Some(run.reply.response_ms + run.reply.transfer_ms)
        } else {
            None
        },
        error_pct: error_pct(run),
        client_bound: run.self_check.client_bound,
        sustained: false,
    };
    let p99_ok = match p99 {
        Some(v) => v <= slo_ms,
        None => run.totals.replies > 0 && run.reply.response_ms <= slo_ms,
    };
    // A run cut short by Ctrl-C proves nothing about the rate.
    m.sustained = !run.interrupted
        && run.totals.replies > 0
        && m.judged_rate >= demanded_req_rate * (1.0 - RATE_TOLERANCE)
        && m.error_pct < MAX_ERROR_FRACTION * 100.0
        && p99_ok;
    m
}

/// Metrics of every step, in the steps' order.
pub fn step_metrics(steps: &[SweepStep], slo_ms: f64) -> Vec<StepMetrics> {
    steps
        .iter()
        .map(|s| metrics(s.demanded_rate, &s.run, slo_ms))
        .collect()
}

/// The knee: the highest demanded rate before the median response time first
/// rises above twice its low-load baseline (and at least 1 ms above it).
/// The baseline is the smallest median of the three lowest-rate steps; the
/// mean stands in when a step has no percentiles.
/// `None` when the curve never climbs or there are fewer than three steps.
pub fn knee(metrics: &[StepMetrics]) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = metrics
        .iter()
        .filter_map(|m| m.p50_ms.or(m.mean_ms).map(|t| (m.demanded_conn_rate, t)))
        .filter(|(r, t)| r.is_finite() && t.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pts.len() < 3 {
        return None;
    }
    let baseline = pts
        .iter()
        .take(3)
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min);
    let threshold = (baseline * 2.0).max(baseline + 1.0);
    let first_high = pts.iter().position(|p| p.1 > threshold)?;
    if first_high == 0 {
        return None;
    }
    Some(pts[first_high - 1].0)
}

/// Saturation analysis of a plain (stepped) sweep of one target.
pub fn analyze(steps: &[SweepStep], slo_ms: f64) -> Saturation {
    let ms = step_metrics(steps, slo_ms);
    let max = ms
        .iter()
        .filter(|m| m.sustained)
        .map(|m| m.demanded_conn_rate)
        .fold(None, |acc: Option<f64>, r| {
            Some(acc.map_or(r, |a| a.max(r)))
        });
    Saturation {
        max_sustainable_rate: max,
        knee_rate: knee(&ms),
        slo_ms,
        client_bound: ms.iter().any(|m| m.client_bound),
        runs: steps.len() as u32,
        method: "steps".into(),
    }
}

/// A failed step that missed only the reply-rate band, and by less than 3 %:
/// errors and p99 were fine.
pub fn is_marginal(m: &StepMetrics, slo_ms: f64) -> bool {
    !m.sustained
        && m.judged_rate >= m.demanded_req_rate * 0.97
        && m.error_pct < MAX_ERROR_FRACTION * 100.0
        && m.p99_ms.map_or(true, |p| p <= slo_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, SynthServer};

    #[test]
    fn steps_find_capacity_within_one_step() {
        let s = SynthServer::new("a", 5_000.0, 0.5);
        let rates: Vec<f64> = (1..=10).map(|i| i as f64 * 1000.0).collect();
        let sw = synth::sweep(&[s], &rates, 1, 5.0);
        let sat = &sw.targets[0].saturation;
        let max = sat.max_sustainable_rate.expect("some step sustained");
        assert!((4000.0..=5000.0).contains(&max), "max {max}");
        let knee = sat.knee_rate.expect("knee");
        assert!((3000.0..=5000.0).contains(&knee), "knee {knee}");
    }

    #[test]
    fn zero_reply_run_is_not_sustained() {
        let r = RunResult::default();
        let m = metrics(100.0, &r, 1000.0);
        assert!(!m.sustained);
        assert_eq!(m.reply_rate, 0.0);
    }

    #[test]
    fn a_server_answering_5xx_quickly_does_not_sustain_its_rate() {
        let mut r = RunResult::default();
        r.totals.replies = 10_000;
        r.totals.requests = 10_000;
        r.totals.test_duration_s = 10.0;
        r.latency.response.count = 10_000;
        r.latency.response.percentiles = vec![
            httplab_model::Percentile { pct: 50.0, ms: 0.1 },
            httplab_model::Percentile { pct: 99.0, ms: 0.2 },
        ];
        assert!(metrics(1000.0, &r, 1000.0).sustained);
        // The same replies, 20 of them 503: 0.2 % of the calls failed.
        r.reply.status.server_error = 20;
        let m = metrics(1000.0, &r, 1000.0);
        assert!((m.error_pct - 0.2).abs() < 1e-12, "{}", m.error_pct);
        assert!(!m.sustained);
        // The one definition: the registry's, in percent.
        assert_eq!(Some(m.error_pct), Metric::ErrorPct.of_run(&r));
    }
}
