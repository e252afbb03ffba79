//! The metrics compared and how each is read from a run.

use httplab_model::RunResult;
use httplab_stats::{Better, Measured};
use serde::Serialize;

/// A metric `httplab compare` judges.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub enum Metric {
    /// Replies per second of the measurement window.
    ReplyRate,
    /// Median response time (coordinated-omission corrected), ms.
    P50,
    /// 99th percentile response time, ms.
    P99,
    /// 99.9th percentile response time, ms.
    P999,
    /// Errors per call, compared as counts: a cell's errors summed over its runs against their
    /// calls (see [`Metric::count_of_run`]).
    ErrorRate,
    /// Client CPU (user + system) per reply, µs.
    ClientCpu,
    /// Server CPU per reply, µs (where the documents have the server's accounting).
    ServerCpu,
    /// The highest sustained rate of a sweep target (its saturation analysis).
    MaxSustainable,
    /// Another metric a study's cells carry (its key), e.g. `max_rate` of a capacity search.
    Study(String),
}

/// The metrics of a run document, in table order.
pub const RUN_METRICS: [Metric; 7] = [
    Metric::ReplyRate,
    Metric::P50,
    Metric::P99,
    Metric::P999,
    Metric::ErrorRate,
    Metric::ClientCpu,
    Metric::ServerCpu,
];

/// Study metric keys where a larger value is better (every other key: smaller is better).
/// The same split as the study's own `Metric::higher_is_better`.
const STUDY_HIGHER: [&str; 5] = [
    "reply_rate",
    "throughput_mb_s",
    "accuracy",
    "max_rate",
    "req_per_server_cpu_s",
];

/// Study metric keys measured by the server's own accounting.
const STUDY_SERVER: [&str; 4] = [
    "server_cpu_per_kreq",
    "server_rss_mb",
    "server_cpu_us_per_req",
    "req_per_server_cpu_s",
];

impl Metric {
    /// The key used on the command line (`--metric`) and in JSON.
    pub fn key(&self) -> &str {
        match self {
            Metric::ReplyRate => "reply_rate",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::ErrorRate => "errors",
            Metric::ClientCpu => "client_cpu",
            Metric::ServerCpu => "server_cpu",
            Metric::MaxSustainable => "max_sustainable_rate",
            Metric::Study(k) => k,
        }
    }

    /// A study cell's key as one of ours where it is the same quantity.
    pub fn from_study_key(key: &str) -> Metric {
        match key {
            "reply_rate" => Metric::ReplyRate,
            "p50_ms" => Metric::P50,
            "p99_ms" => Metric::P99,
            "server_cpu_us_per_req" => Metric::ServerCpu,
            other => Metric::Study(other.to_string()),
        }
    }

    /// Parses a `--metric` word: our keys, a few spellings, or any study key.
    pub fn parse(word: &str) -> Metric {
        match word.trim() {
            "reply_rate" | "rate" | "replies" => Metric::ReplyRate,
            "p50" | "p50_ms" | "median" => Metric::P50,
            "p99" | "p99_ms" => Metric::P99,
            "p99.9" | "p999" | "p999_ms" => Metric::P999,
            "errors" | "error_rate" => Metric::ErrorRate,
            "client_cpu" => Metric::ClientCpu,
            "server_cpu" | "server_cpu_us_per_req" => Metric::ServerCpu,
            "max_sustainable_rate" | "saturation" => Metric::MaxSustainable,
            other => Metric::Study(other.to_string()),
        }
    }

    /// Name with unit, for tables.
    pub fn label(&self) -> String {
        match self {
            Metric::ReplyRate => "reply rate (/s)".into(),
            Metric::P50 => "p50 (ms)".into(),
            Metric::P99 => "p99 (ms)".into(),
            Metric::P999 => "p99.9 (ms)".into(),
            Metric::ErrorRate => "errors (% of calls)".into(),
            Metric::ClientCpu => "client CPU (µs/reply)".into(),
            Metric::ServerCpu => "server CPU (µs/reply)".into(),
            Metric::MaxSustainable => "max sustained rate (/s)".into(),
            Metric::Study(k) => k.clone(),
        }
    }

    /// Which direction is better.
    pub fn better(&self) -> Better {
        let higher = match self {
            Metric::ReplyRate | Metric::MaxSustainable => true,
            Metric::Study(k) => STUDY_HIGHER.contains(&k.as_str()),
            _ => false,
        };
        if higher {
            Better::Higher
        } else {
            Better::Lower
        }
    }

    /// Who measured it: a client-bound run's figure is only a bound for client metrics.
    pub fn measured(&self) -> Measured {
        let server = match self {
            Metric::ServerCpu => true,
            Metric::Study(k) => STUDY_SERVER.contains(&k.as_str()),
            _ => false,
        };
        if server {
            Measured::ByServer
        } else {
            Measured::ByClient
        }
    }

    /// True for a metric compared as counts (events over an exposure, summed over the runs)
    /// rather than as one value per run.
    pub fn is_count(&self) -> bool {
        matches!(self, Metric::ErrorRate)
    }

    /// A count metric's events and exposure in one run: for the errors, [`Errors::total`] of
    /// [`RunResult::calls`] (the model's definitions). `None` for other metrics and for a run
    /// without a call.
    ///
    /// [`Errors::total`]: httplab_model::Errors::total
    pub fn count_of_run(&self, r: &RunResult) -> Option<[u64; 2]> {
        match self {
            Metric::ErrorRate => {
                let calls = r.calls();
                (calls > 0).then_some([r.errors.total, calls])
            }
            _ => None,
        }
    }

    /// This metric's value in one run (`None` where the run does not have it, and for the
    /// count metrics: see [`Metric::count_of_run`]).
    pub fn of_run(&self, r: &RunResult) -> Option<f64> {
        let replies = r.totals.replies as f64;
        let per_reply = |x: f64| (replies > 0.0 && x.is_finite()).then(|| x / replies * 1e6);
        match self {
            Metric::ReplyRate => {
                let d = r.totals.test_duration_s;
                (d.is_finite() && d > 0.0).then(|| replies / d)
            }
            Metric::P50 => r.latency.response.at(50.0),
            Metric::P99 => r.latency.response.at(99.0),
            Metric::P999 => r.latency.response.at(99.9),
            Metric::ErrorRate => None,
            Metric::ClientCpu => per_reply(r.resources.user_s + r.resources.system_s),
            Metric::ServerCpu => r
                .server
                .as_ref()
                .filter(|s| !s.cpu_source.is_empty())
                .and_then(|s| per_reply(s.cpu_s)),
            Metric::MaxSustainable | Metric::Study(_) => None,
        }
    }
}

impl From<Metric> for String {
    fn from(m: Metric) -> String {
        m.key().to_string()
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert_eq!(Metric::ReplyRate.better(), Better::Higher);
        assert_eq!(Metric::P99.better(), Better::Lower);
        assert_eq!(Metric::Study("max_rate".into()).better(), Better::Higher);
        assert_eq!(Metric::Study("session_ms".into()).better(), Better::Lower);
        assert_eq!(Metric::ServerCpu.measured(), Measured::ByServer);
        assert_eq!(Metric::P50.measured(), Measured::ByClient);
    }

    #[test]
    fn words() {
        for m in RUN_METRICS {
            assert_eq!(Metric::parse(m.key()), m);
        }
        assert_eq!(Metric::parse("p99_ms"), Metric::P99);
        assert_eq!(Metric::from_study_key("p99_ms"), Metric::P99);
        assert_eq!(
            Metric::from_study_key("max_rate"),
            Metric::Study("max_rate".into())
        );
    }

    #[test]
    fn errors_are_counts_of_calls() {
        let mut r = RunResult::default();
        assert_eq!(Metric::ErrorRate.count_of_run(&r), None);
        r.totals.replies = 999;
        assert_eq!(Metric::ErrorRate.count_of_run(&r), Some([0, 999]));
        r.errors.total = 1;
        assert_eq!(Metric::ErrorRate.count_of_run(&r), Some([1, 1000]));
        assert_eq!(Metric::ErrorRate.of_run(&r), None);
        assert!(Metric::ErrorRate.is_count() && !Metric::P99.is_count());
        assert_eq!(Metric::P99.count_of_run(&r), None);
        assert_eq!(Metric::ClientCpu.of_run(&RunResult::default()), None);
    }
}
