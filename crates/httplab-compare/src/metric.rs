//! The metrics compared: the model's registry ([`httplab_model::metric`]), which says how
//! each is read from a run, which way is better, who measures it and whether it is compared
//! as counts, and any other key a study's cells carry.

use std::cmp::Ordering;

use httplab_model::metric::Comparison as How;
use httplab_model::{Direction, MeasuredBy, MetricKey};
use httplab_stats::{Better, Measured};
use serde::Serialize;

pub use httplab_model::Metric as Registered;

/// A metric `httplab compare` judges: one of the registry's, or another key of a study's
/// cells (written as read).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum Metric {
    /// A metric of the registry.
    Known(Registered),
    /// Another metric a study's cells carry (its key).
    Study(String),
}

impl Metric {
    /// Replies per second.
    pub const REPLY_RATE: Metric = Metric::Known(Registered::ReplyRate);
    /// Median response time, ms.
    pub const P50: Metric = Metric::Known(Registered::P50Ms);
    /// 99th percentile response time, ms.
    pub const P99: Metric = Metric::Known(Registered::P99Ms);
    /// 99.9th percentile response time, ms.
    pub const P999: Metric = Metric::Known(Registered::P999Ms);
    /// Failed calls of attempted calls, compared as counts.
    pub const ERRORS: Metric = Metric::Known(Registered::ErrorPct);
    /// Client CPU per reply, µs.
    pub const CLIENT_CPU: Metric = Metric::Known(Registered::ClientCpuUsPerReq);
    /// Server CPU per reply, µs.
    pub const SERVER_CPU: Metric = Metric::Known(Registered::ServerCpuUsPerReq);
    /// The highest sustained rate (a sweep target's saturation analysis, a study's capacity).
    pub const MAX_SUSTAINABLE: Metric = Metric::Known(Registered::MaxRate);

    /// The registry's metric, when it is one.
    pub fn registered(&self) -> Option<Registered> {
        match self {
            Metric::Known(m) => Some(*m),
            Metric::Study(_) => None,
        }
    }

    /// The key used on the command line (`--metric`) and in JSON: the registry's
    /// [`word`](Registered::word), or a study's own key.
    pub fn key(&self) -> &str {
        match self {
            Metric::Known(m) => m.word(),
            Metric::Study(k) => k,
        }
    }

    /// A key of a study's cells.
    pub fn from_study_key(key: &MetricKey) -> Metric {
        match key {
            MetricKey::Known(m) => Metric::Known(*m),
            MetricKey::Other(k) => Metric::Study(k.clone()),
        }
    }

    /// Parses a `--metric` word: a registry key, compare's word, an alias, or any study key.
    pub fn parse(word: &str) -> Metric {
        Registered::from_word(word)
            .map_or_else(|| Metric::Study(word.trim().to_string()), Metric::Known)
    }

    /// Name with unit, for tables.
    pub fn label(&self) -> String {
        match self {
            Metric::Known(m) => m.label().to_string(),
            Metric::Study(k) => k.clone(),
        }
    }

    /// Which direction is better (a key the registry does not know: lower).
    pub fn better(&self) -> Better {
        match self.registered().map(Registered::direction) {
            Some(Direction::Higher) => Better::Higher,
            _ => Better::Lower,
        }
    }

    /// Who measured it: a client-bound run's figure is only a bound for client metrics.
    pub fn measured(&self) -> Measured {
        match self.registered().map(Registered::measured_by) {
            Some(MeasuredBy::Server) => Measured::ByServer,
            _ => Measured::ByClient,
        }
    }

    /// True for a metric compared as counts (events over an exposure, summed over the runs)
    /// rather than as one value per run.
    pub fn is_count(&self) -> bool {
        self.registered()
            .is_some_and(|m| m.comparison() == How::ExactTestOfCounts)
    }

    /// Place in the table: the run metrics in compare's order, then the registry's, then
    /// study keys by word.
    fn rank(&self) -> (usize, &str) {
        match self {
            Metric::Known(m) => {
                let run = Registered::COMPARED_RUN.iter().position(|x| x == m);
                let all = Registered::ALL.iter().position(|x| x == m);
                (
                    run.or(all.map(|i| i + Registered::COMPARED_RUN.len()))
                        .unwrap_or(usize::MAX - 1),
                    "",
                )
            }
            Metric::Study(k) => (usize::MAX, k),
        }
    }
}

impl PartialOrd for Metric {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Metric {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
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
        assert_eq!(Metric::REPLY_RATE.better(), Better::Higher);
        assert_eq!(Metric::P99.better(), Better::Lower);
        assert_eq!(Metric::parse("max_rate").better(), Better::Higher);
        assert_eq!(Metric::parse("session_ms").better(), Better::Lower);
        assert_eq!(Metric::Study("unknown".into()).better(), Better::Lower);
        assert_eq!(Metric::SERVER_CPU.measured(), Measured::ByServer);
        assert_eq!(Metric::P50.measured(), Measured::ByClient);
        assert!(Metric::ERRORS.is_count() && !Metric::P99.is_count());
    }

    #[test]
    fn words() {
        for m in Registered::COMPARED_RUN.map(Metric::Known) {
            assert_eq!(Metric::parse(m.key()), m);
        }
        for (word, m) in [
            ("p99_ms", Metric::P99),
            ("p50", Metric::P50),
            ("p99.9", Metric::P999),
            ("errors", Metric::ERRORS),
            ("error_rate", Metric::ERRORS),
            ("server_cpu_us_per_req", Metric::SERVER_CPU),
            ("saturation", Metric::MAX_SUSTAINABLE),
            ("my_key", Metric::Study("my_key".into())),
        ] {
            assert_eq!(Metric::parse(word), m, "{word}");
        }
        assert_eq!(
            Metric::from_study_key(&MetricKey::from("p99_ms")),
            Metric::P99
        );
        assert_eq!(Metric::P99.key(), "p99");
        assert_eq!(
            Metric::from_study_key(&MetricKey::from("old_key")),
            Metric::Study("old_key".into())
        );
    }

    #[test]
    fn table_order_is_compares_own() {
        let mut ms = [
            Metric::Study("a".into()),
            Metric::MAX_SUSTAINABLE,
            Metric::SERVER_CPU,
            Metric::ERRORS,
            Metric::P50,
            Metric::REPLY_RATE,
        ];
        ms.sort();
        let words: Vec<&str> = ms.iter().map(Metric::key).collect();
        assert_eq!(
            words,
            [
                "reply_rate",
                "p50",
                "errors",
                "server_cpu",
                "max_sustainable_rate",
                "a"
            ]
        );
    }
}
