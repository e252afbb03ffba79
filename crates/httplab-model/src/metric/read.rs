//! How each metric is read from a [`RunResult`], and the one definition of failed and
//! attempted calls (the parent module's docs).

use super::{Comparison, Counts, Metric};
use crate::{Latency, RunResult, PROBE_MIN_REPLIES};

/// Attempted calls of a run: replies (every status) plus errors of every class (the
/// module's definition; the exposure of the error rate).
pub fn attempted_calls(r: &RunResult) -> u64 {
    r.calls()
}

/// Failed calls of a run: errors of every class plus 5xx replies (the module's
/// definition). At most [`attempted_calls`] for a consistent document; clamped to it
/// otherwise, so a rate never exceeds 1.
pub fn failed_calls(r: &RunResult) -> u64 {
    let server_errors = r.reply.status.server_error.min(r.totals.replies);
    r.errors
        .total
        .saturating_add(server_errors)
        .min(attempted_calls(r))
}

/// Failed calls over attempted calls, as a fraction; `None` for a run without a call.
pub fn error_rate(r: &RunResult) -> Option<f64> {
    let attempted = attempted_calls(r);
    (attempted > 0).then(|| failed_calls(r) as f64 / attempted as f64)
}

/// The `pct`-th percentile of a latency distribution, ms: the stored percentile, else read
/// from its histogram; `None` when it recorded nothing.
pub fn latency_percentile_ms(lat: &Latency, pct: f64) -> Option<f64> {
    if lat.count == 0 {
        return None;
    }
    lat.at(pct).or_else(|| match lat.histogram() {
        Ok(Some(h)) => Some(h.value_at_quantile(pct / 100.0) as f64 / 1000.0),
        _ => None,
    })
}

/// The `pct`-th percentile of a run's response time (coordinated-omission corrected), ms.
pub fn response_percentile_ms(r: &RunResult, pct: f64) -> Option<f64> {
    latency_percentile_ms(&r.latency.response, pct)
}

/// The measurement window's duration, when it is a positive number of seconds.
fn duration_s(r: &RunResult) -> Option<f64> {
    let d = r.totals.test_duration_s;
    (d.is_finite() && d > 0.0).then_some(d)
}

/// `x` per reply, in millionths (CPU seconds → µs per reply); `None` without replies.
fn per_reply_us(r: &RunResult, x: f64) -> Option<f64> {
    let replies = r.totals.replies;
    (replies > 0 && x.is_finite()).then(|| x / replies as f64 * 1e6)
}

/// A number the load generator recorded under `config.extra`.
fn extra_number(r: &RunResult, key: &str) -> f64 {
    r.config
        .extra
        .get(key)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0)
}

impl Metric {
    /// This metric's value in one run; `None` where the run does not have it (no replies, no
    /// server accounting, no probe …) and for the capacity searches' metrics.
    pub fn of_run(self, r: &RunResult) -> Option<f64> {
        let replies = r.totals.replies as f64;
        let timed = |lat: &Latency| (lat.count > 0).then_some(lat.mean_ms);
        match self {
            Metric::ReplyRate => duration_s(r).map(|d| replies / d),
            Metric::ThroughputMbS => {
                duration_s(r).map(|d| r.reply.content_bytes * replies / d / 1e6)
            }
            Metric::ResponseMs => timed(&r.latency.response),
            Metric::P50Ms => response_percentile_ms(r, 50.0),
            Metric::P99Ms => response_percentile_ms(r, 99.0),
            Metric::P999Ms => response_percentile_ms(r, 99.9),
            Metric::ConnectionMs => {
                (r.connection.lifetime_ms.count > 0).then_some(r.connection.lifetime_ms.avg)
            }
            // Sessions of several calls, reconnections included (`--reconnect`); else one
            // connection per session.
            Metric::SessionMs => {
                timed(&r.latency.session).or_else(|| Metric::ConnectionMs.of_run(r))
            }
            Metric::SessionP50Ms => {
                if r.latency.session.count > 0 {
                    r.latency.session.at(50.0)
                } else {
                    (r.connection.lifetime_ms.count > 0).then_some(r.connection.lifetime_ms.median)
                }
            }
            Metric::Accuracy => accuracy(r),
            Metric::ServerCpuPerKreq => r
                .server
                .as_ref()
                .filter(|_| r.totals.replies > 0)
                .map(|s| s.cpu_s / replies * 1000.0),
            Metric::ServerRssMb => r.server.as_ref().map(|s| s.peak_rss_bytes as f64 / 1e6),
            Metric::ServerCpuUsPerReq => r
                .server
                .as_ref()
                .filter(|s| !s.cpu_source.is_empty())
                .and_then(|s| per_reply_us(r, s.cpu_s)),
            Metric::ClientCpuUsPerReq => per_reply_us(r, r.resources.user_s + r.resources.system_s),
            Metric::ProbeP50Ms => r
                .probe
                .as_ref()
                .and_then(|p| latency_percentile_ms(&p.response, 50.0)),
            // Fewer replies make the probe's p99 its few slowest replies.
            Metric::ProbeP99Ms => r
                .probe
                .as_ref()
                .filter(|p| p.response.count >= PROBE_MIN_REPLIES)
                .and_then(|p| latency_percentile_ms(&p.response, 99.0)),
            Metric::ErrorPct => error_rate(r).map(|x| x * 100.0),
            Metric::MaxRate | Metric::ReqPerServerCpuS => None,
        }
    }

    /// A count metric's integer counts in one run (for [`Metric::ErrorPct`]: failed calls of
    /// attempted calls, the module's definition); `None` for other metrics and for a run
    /// without a call.
    pub fn counts_of_run(self, r: &RunResult) -> Option<Counts> {
        match self.comparison() {
            Comparison::ExactTestOfCounts => {
                let exposure = attempted_calls(r);
                (exposure > 0).then(|| Counts {
                    events: failed_calls(r),
                    exposure,
                })
            }
            Comparison::GeometricMeanRatio => None,
        }
    }
}

/// Share of the expected body bytes received intact, %: from the byte counts the load
/// generator recorded, else from its verified bodies scaled by the share of requests
/// answered.
fn accuracy(r: &RunResult) -> Option<f64> {
    let requested = extra_number(r, "requested_body_bytes");
    let intact = extra_number(r, "intact_body_bytes");
    if requested > 0.0 {
        return Some((intact / requested * 100.0).min(100.0));
    }
    let a = &r.accuracy;
    (a.verified > 0).then(|| {
        let matched = (a.verified - a.mismatches.min(a.verified)) as f64 / a.verified as f64;
        let answered = r.totals.replies as f64 / r.totals.requests.max(1) as f64;
        (matched * answered * 100.0).min(100.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Counts;

    fn run(replies: u64, errors: u64, fivexx: u64) -> RunResult {
        let mut r = RunResult::default();
        r.totals.replies = replies;
        r.errors.total = errors;
        r.reply.status.server_error = fivexx;
        r.totals.test_duration_s = 2.0;
        r
    }

    #[test]
    fn failed_calls_are_errors_and_5xx_replies_of_the_attempted_calls() {
        assert_eq!(Metric::ErrorPct.counts_of_run(&RunResult::default()), None);
        assert_eq!(Metric::ErrorPct.of_run(&RunResult::default()), None);
        let ok = run(1000, 0, 0);
        assert_eq!(
            Metric::ErrorPct.counts_of_run(&ok),
            Some(Counts {
                events: 0,
                exposure: 1000
            })
        );
        assert_eq!(Metric::ErrorPct.of_run(&ok), Some(0.0));
        // 10 connection errors and 40 replies of 503 among 990 replies.
        let r = run(990, 10, 40);
        assert_eq!((failed_calls(&r), attempted_calls(&r)), (50, 1000));
        assert_eq!(
            Metric::ErrorPct.counts_of_run(&r),
            Some(Counts {
                events: 50,
                exposure: 1000
            })
        );
        assert_eq!(Metric::ErrorPct.of_run(&r), Some(5.0));
        // A server that answers everything with 503 quickly: every call failed.
        let fast_503 = run(1000, 0, 1000);
        assert_eq!(Metric::ErrorPct.of_run(&fast_503), Some(100.0));
        // An inconsistent document cannot make a rate above 1.
        let bad = run(10, 0, 50);
        assert_eq!((failed_calls(&bad), attempted_calls(&bad)), (10, 10));
        assert_eq!(Metric::P99Ms.counts_of_run(&r), None);
    }

    #[test]
    fn values_of_one_run() {
        let mut r = run(1000, 0, 0);
        assert_eq!(Metric::ReplyRate.of_run(&r), Some(500.0));
        assert_eq!(
            Metric::P50Ms.of_run(&r),
            None,
            "no latency: no value, not 0"
        );
        assert_eq!(Metric::ClientCpuUsPerReq.of_run(&r), Some(0.0));
        assert_eq!(Metric::ServerCpuUsPerReq.of_run(&r), None);
        assert_eq!(Metric::MaxRate.of_run(&r), None);
        r.server = Some(crate::ServerCost {
            cpu_s: 0.5,
            cpu_source: "cgroup".into(),
            ..Default::default()
        });
        assert_eq!(Metric::ServerCpuUsPerReq.of_run(&r), Some(500.0));
        assert_eq!(Metric::ServerCpuPerKreq.of_run(&r), Some(0.5));
        r.totals.test_duration_s = 0.0;
        assert_eq!(Metric::ReplyRate.of_run(&r), None, "no window, no rate");
        r.latency.response.count = 3;
        r.latency.response.percentiles = vec![crate::Percentile { pct: 50.0, ms: 1.5 }];
        assert_eq!(Metric::P50Ms.of_run(&r), Some(1.5));
    }
}
