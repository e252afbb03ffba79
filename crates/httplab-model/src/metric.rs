//! The one registry of metrics: every figure httplab measures, compares or charts, with its
//! stable key, unit, label, direction, who measures it, how it is read from a [`RunResult`](crate::RunResult)
//! and how two sides are compared. The study, `compare`, the report and `merge` all read
//! their metrics from here; none keeps a list of its own.
//!
//! # Failed calls and the error rate
//!
//! This is the one definition, used by the study's cells and tables, `httplab compare`'s
//! exact test, the report's saturation analysis and `merge`'s summary:
//!
//! - a **call** is a request with an outcome: a complete reply (whatever its status) or an
//!   error of any class (`errors.total`: timeouts, refused and reset connections, protocol
//!   faults …). The **attempted calls** of a run are `replies + errors.total`
//!   ([`attempted_calls`], the same as [`RunResult::calls`](crate::RunResult::calls));
//! - a **failed call** is an error of any class *or a reply with a 5xx status* (a server that
//!   answers 503 quickly has failed those calls, however fast it was). The **failed calls**
//!   of a run are `errors.total + 5xx replies` ([`failed_calls`]); a 5xx reply is one of the
//!   replies, so failed calls never exceed attempted calls;
//! - the **error rate** is failed calls / attempted calls ([`Metric::ErrorPct`], written in
//!   percent; none for a run without a call). `httplab compare` compares it as the two
//!   integer counts (failed, attempted) summed over each side's runs ([`Metric::counts_of_run`]),
//!   by the exact test of docs/statistics.md.
//!
//! Where this changed what a stored figure means: `httplab compare`'s error counts (its
//! `errors` row, JSON `base.errors`/`new.errors`), the study's `errors` column of `runs.csv`
//! and of the idle table, and `merge`'s summary line counted `errors.total` alone and now
//! count the 5xx replies too; the report's saturation analysis counted 5xx replies already but
//! over the largest of connections, requests, planned connections and calls, and now over the
//! attempted calls. The autobench CSV's `percent_errors` keeps autobench's own definition
//! (100 × `errors.total` / replies, 101 without a reply), since tools read it by that name.
//!
//! # Keys
//!
//! [`Metric::key`] is the word result documents and CSV headers write (a study's cells and
//! verdicts, `runs.csv`, `summary.csv`); it never changes. [`Metric::word`] is `httplab
//! compare`'s shorter word for the same metric (its `--metric`, answer line, table and JSON),
//! the key itself except where compare has always written another (`p50`, `p99`, `p99.9`,
//! `errors`, `client_cpu`, `server_cpu`, `max_sustainable_rate`). A key read from a document
//! that names no metric of this version is kept as [`MetricKey::Other`] and written back
//! unchanged.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

mod read;

pub use read::{
    attempted_calls, error_rate, failed_calls, latency_percentile_ms, response_percentile_ms,
};

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better (rates, throughput).
    #[default]
    Higher,
    /// Lower is better (times, costs).
    Lower,
}

impl Direction {
    /// "higher" or "lower", as documents write it.
    pub fn word(self) -> &'static str {
        match self {
            Direction::Higher => "higher",
            Direction::Lower => "lower",
        }
    }
}

/// Who measured a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeasuredBy {
    /// The load generator.
    Client,
    /// The server's own CPU or memory accounting.
    Server,
}

impl MeasuredBy {
    /// "client" or "server", as documents write it.
    pub fn word(self) -> &'static str {
        match self {
            MeasuredBy::Client => "client",
            MeasuredBy::Server => "server",
        }
    }
}

/// A metric httplab measures or derives, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Metric {
    /// Replies per second of the measurement window (every reply, whatever its status).
    #[default]
    ReplyRate,
    /// Body MB/s received.
    ThroughputMbS,
    /// Mean response time (coordinated-omission corrected), ms.
    ResponseMs,
    /// Median response time (corrected), ms. At low rates the mean is dominated by rare
    /// millisecond stalls of the machine that land on one server's window by chance; the
    /// median is several times steadier.
    P50Ms,
    /// 99th percentile response time (corrected), ms.
    P99Ms,
    /// Mean connection lifetime, ms.
    ConnectionMs,
    /// Mean time to make all `num_calls` requests of a session, reconnections included, ms
    /// (compares close and keep-alive servers fairly).
    SessionMs,
    /// Median of the same session times, ms.
    SessionP50Ms,
    /// Fraction of expected body bytes received intact, %.
    Accuracy,
    /// Server CPU seconds per 1000 replies.
    ServerCpuPerKreq,
    /// Peak server RSS, MB.
    ServerRssMb,
    /// Server CPU µs per reply, from nanosecond accounting.
    ServerCpuUsPerReq,
    /// Highest connection rate sustained: a capacity search's, or a sweep's saturation
    /// analysis ([`Source::CapacitySearch`]).
    MaxRate,
    /// Replies per second of server CPU at the highest sustained rate of a capacity search;
    /// with `cpu_quota`, every server held to the same share of a core.
    ReqPerServerCpuS,
    /// Median response time of the unqueued probe (`--probe`), ms: what the server gives a
    /// client that does not queue.
    ProbeP50Ms,
    /// p99 response time of the unqueued probe, ms (only from runs whose probe got at least
    /// [`PROBE_MIN_REPLIES`](crate::PROBE_MIN_REPLIES) replies).
    ProbeP99Ms,
    /// 99.9th percentile response time (corrected), ms.
    P999Ms,
    /// Client (load generator) CPU, user + system, µs per reply.
    ClientCpuUsPerReq,
    /// Failed calls in percent of attempted calls (the module's definition); compared as
    /// counts ([`Comparison::ExactTestOfCounts`]).
    ErrorPct,
}

/// The unit a metric's values are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Replies per second.
    RepliesPerSecond,
    /// Megabytes (10⁶ bytes) per second.
    MegabytesPerSecond,
    /// Milliseconds.
    Milliseconds,
    /// Percent.
    Percent,
    /// CPU seconds per 1000 replies.
    CpuSecondsPerKiloReply,
    /// Megabytes (10⁶ bytes).
    Megabytes,
    /// CPU microseconds per reply.
    CpuMicrosecondsPerReply,
    /// Connections per second.
    ConnectionsPerSecond,
    /// Replies per CPU second.
    RepliesPerCpuSecond,
}

impl Unit {
    /// The unit as tables print it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::RepliesPerSecond => "replies/s",
            Unit::MegabytesPerSecond => "MB/s",
            Unit::Milliseconds => "ms",
            Unit::Percent => "%",
            Unit::CpuSecondsPerKiloReply => "CPU s / 1000 replies",
            Unit::Megabytes => "MB",
            Unit::CpuMicrosecondsPerReply => "CPU µs / reply",
            Unit::ConnectionsPerSecond => "conn/s",
            Unit::RepliesPerCpuSecond => "replies / CPU s",
        }
    }
}

/// How two sides' values of a metric are compared (docs/statistics.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// One value per run (or round); the ratio of the two sides' geometric means with a t
    /// interval on the log values (paired by round in a study, Welch's in `compare`).
    GeometricMeanRatio,
    /// Events over an exposure, integer counts summed over each side's runs
    /// ([`Metric::counts_of_run`]); the exact test and interval of the two rates' ratio.
    ExactTestOfCounts,
}

/// Where a metric's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One load run: [`Metric::of_run`].
    Run,
    /// A capacity search over several runs (a study's `sweep` workload, a sweep's saturation
    /// analysis): not read from one run.
    CapacitySearch,
}

/// Events and their exposure in one run, both integers (for the error rate: failed calls of
/// attempted calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Events (failed calls).
    pub events: u64,
    /// Their exposure (attempted calls); never less than `events`.
    pub exposure: u64,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 19] = [
        Metric::ReplyRate,
        Metric::ThroughputMbS,
        Metric::ResponseMs,
        Metric::P50Ms,
        Metric::P99Ms,
        Metric::ConnectionMs,
        Metric::SessionMs,
        Metric::SessionP50Ms,
        Metric::Accuracy,
        Metric::ServerCpuPerKreq,
        Metric::ServerRssMb,
        Metric::ServerCpuUsPerReq,
        Metric::MaxRate,
        Metric::ReqPerServerCpuS,
        Metric::ProbeP50Ms,
        Metric::ProbeP99Ms,
        Metric::P999Ms,
        Metric::ClientCpuUsPerReq,
        Metric::ErrorPct,
    ];

    /// The metrics of one load run `httplab compare` reads, in its table order.
    pub const COMPARED_RUN: [Metric; 7] = [
        Metric::ReplyRate,
        Metric::P50Ms,
        Metric::P99Ms,
        Metric::P999Ms,
        Metric::ErrorPct,
        Metric::ClientCpuUsPerReq,
        Metric::ServerCpuUsPerReq,
    ];

    /// The stable key result documents and CSV headers write (see the module docs).
    pub fn key(self) -> &'static str {
        match self {
            Metric::ReplyRate => "reply_rate",
            Metric::ThroughputMbS => "throughput_mb_s",
            Metric::ResponseMs => "response_ms",
            Metric::P50Ms => "p50_ms",
            Metric::P99Ms => "p99_ms",
            Metric::ConnectionMs => "connection_ms",
            Metric::SessionMs => "session_ms",
            Metric::SessionP50Ms => "session_p50_ms",
            Metric::Accuracy => "accuracy",
            Metric::ServerCpuPerKreq => "server_cpu_per_kreq",
            Metric::ServerRssMb => "server_rss_mb",
            Metric::ServerCpuUsPerReq => "server_cpu_us_per_req",
            Metric::MaxRate => "max_rate",
            Metric::ReqPerServerCpuS => "req_per_server_cpu_s",
            Metric::ProbeP50Ms => "probe_p50_ms",
            Metric::ProbeP99Ms => "probe_p99_ms",
            Metric::P999Ms => "p999_ms",
            Metric::ClientCpuUsPerReq => "client_cpu_us_per_req",
            Metric::ErrorPct => "error_pct",
        }
    }

    /// `httplab compare`'s word (its `--metric`, answer line, table and JSON): the key, or
    /// the shorter word compare has always written.
    pub fn word(self) -> &'static str {
        match self {
            Metric::P50Ms => "p50",
            Metric::P99Ms => "p99",
            Metric::P999Ms => "p99.9",
            Metric::ErrorPct => "errors",
            Metric::ClientCpuUsPerReq => "client_cpu",
            Metric::ServerCpuUsPerReq => "server_cpu",
            Metric::MaxRate => "max_sustainable_rate",
            m => m.key(),
        }
    }

    /// Other spellings a user may type (`compare --metric`, study files).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Metric::ReplyRate => &["rate", "replies"],
            Metric::P50Ms => &["median"],
            Metric::P999Ms => &["p999"],
            Metric::ErrorPct => &["error_rate"],
            Metric::MaxRate => &["saturation"],
            _ => &[],
        }
    }

    /// The metric whose [`key`](Metric::key) is exactly `key` (how documents are read).
    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.key() == key)
    }

    /// The metric a user's word names: its key, compare's word or an alias.
    pub fn from_word(word: &str) -> Option<Metric> {
        let w = word.trim();
        Metric::ALL
            .into_iter()
            .find(|m| m.key() == w || m.word() == w || m.aliases().contains(&w))
    }

    /// Column heading: name and unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::ReplyRate => "replies/s",
            Metric::ThroughputMbS => "MB/s",
            Metric::ResponseMs => "response ms (mean)",
            Metric::P50Ms => "response ms (median)",
            Metric::P99Ms => "response ms (p99)",
            Metric::ConnectionMs => "connection ms (mean)",
            Metric::SessionMs => "session ms (mean)",
            Metric::SessionP50Ms => "session ms (median)",
            Metric::Accuracy => "accuracy %",
            Metric::ServerCpuPerKreq => "server CPU s / 1000 replies",
            Metric::ServerRssMb => "server peak RSS MB",
            Metric::ServerCpuUsPerReq => "server CPU µs / reply",
            Metric::MaxRate => "max sustained conn/s",
            Metric::ReqPerServerCpuS => "replies / server CPU-s at saturation",
            Metric::ProbeP50Ms => "probe response ms (median)",
            Metric::ProbeP99Ms => "probe response ms (p99)",
            Metric::P999Ms => "response ms (p99.9)",
            Metric::ClientCpuUsPerReq => "client CPU µs / reply",
            Metric::ErrorPct => "errors % of calls",
        }
    }

    /// The unit of its values.
    pub fn unit(self) -> Unit {
        match self {
            Metric::ReplyRate => Unit::RepliesPerSecond,
            Metric::ThroughputMbS => Unit::MegabytesPerSecond,
            Metric::ResponseMs
            | Metric::P50Ms
            | Metric::P99Ms
            | Metric::P999Ms
            | Metric::ConnectionMs
            | Metric::SessionMs
            | Metric::SessionP50Ms
            | Metric::ProbeP50Ms
            | Metric::ProbeP99Ms => Unit::Milliseconds,
            Metric::Accuracy | Metric::ErrorPct => Unit::Percent,
            Metric::ServerCpuPerKreq => Unit::CpuSecondsPerKiloReply,
            Metric::ServerRssMb => Unit::Megabytes,
            Metric::ServerCpuUsPerReq | Metric::ClientCpuUsPerReq => Unit::CpuMicrosecondsPerReply,
            Metric::MaxRate => Unit::ConnectionsPerSecond,
            Metric::ReqPerServerCpuS => Unit::RepliesPerCpuSecond,
        }
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            Metric::ReplyRate
            | Metric::ThroughputMbS
            | Metric::Accuracy
            | Metric::MaxRate
            | Metric::ReqPerServerCpuS => Direction::Higher,
            _ => Direction::Lower,
        }
    }

    /// True when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self.direction() == Direction::Higher
    }

    /// Who measures it: a client-bound run's figure is only a bound for the client's
    /// metrics, while the server's own accounting holds whatever the client did. Replies per
    /// server CPU second at saturation is the client's: the saturation it is read at is the
    /// client's search's, which a client-bound search only bounds.
    pub fn measured_by(self) -> MeasuredBy {
        match self {
            Metric::ServerCpuPerKreq | Metric::ServerRssMb | Metric::ServerCpuUsPerReq => {
                MeasuredBy::Server
            }
            _ => MeasuredBy::Client,
        }
    }

    /// How two sides are compared.
    pub fn comparison(self) -> Comparison {
        match self {
            Metric::ErrorPct => Comparison::ExactTestOfCounts,
            _ => Comparison::GeometricMeanRatio,
        }
    }

    /// True for a metric compared as counts ([`Comparison::ExactTestOfCounts`]).
    pub fn is_count(self) -> bool {
        self.comparison() == Comparison::ExactTestOfCounts
    }

    /// Where its value comes from.
    pub fn source(self) -> Source {
        match self {
            Metric::MaxRate | Metric::ReqPerServerCpuS => Source::CapacitySearch,
            _ => Source::Run,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Metric {
    /// A key, compare's word or an alias (study files); an unknown word is an error that
    /// lists the keys.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let w = String::deserialize(d)?;
        Metric::from_word(&w).ok_or_else(|| {
            let keys: Vec<&str> = Metric::ALL.iter().map(|m| m.key()).collect();
            serde::de::Error::custom(format!(
                "unknown metric `{w}`, expected one of {}",
                keys.join(", ")
            ))
        })
    }
}

/// A metric key as a document holds it: a metric of the registry, or a word this version
/// does not know (kept, and written back unchanged). Written as the word; ordered by the word,
/// so maps keyed by it write their keys in the order maps of words always did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum MetricKey {
    /// A metric of the registry, written as its [`Metric::key`].
    Known(Metric),
    /// Any other word, as read.
    Other(String),
}

impl MetricKey {
    /// The word written.
    pub fn key(&self) -> &str {
        match self {
            MetricKey::Known(m) => m.key(),
            MetricKey::Other(s) => s,
        }
    }

    /// The registry's metric, when the key names one.
    pub fn metric(&self) -> Option<Metric> {
        match self {
            MetricKey::Known(m) => Some(*m),
            MetricKey::Other(_) => None,
        }
    }
}

impl From<Metric> for MetricKey {
    fn from(m: Metric) -> MetricKey {
        MetricKey::Known(m)
    }
}

impl From<&str> for MetricKey {
    /// Exactly a key of the registry, else [`MetricKey::Other`]: a document's word is never
    /// respelled.
    fn from(s: &str) -> MetricKey {
        Metric::from_key(s).map_or_else(|| MetricKey::Other(s.to_string()), MetricKey::Known)
    }
}

impl From<String> for MetricKey {
    fn from(s: String) -> MetricKey {
        match Metric::from_key(&s) {
            Some(m) => MetricKey::Known(m),
            None => MetricKey::Other(s),
        }
    }
}

impl From<MetricKey> for String {
    fn from(k: MetricKey) -> String {
        match k {
            MetricKey::Known(m) => m.key().to_string(),
            MetricKey::Other(s) => s,
        }
    }
}

impl PartialEq for MetricKey {
    fn eq(&self, other: &MetricKey) -> bool {
        self.key() == other.key()
    }
}

impl Eq for MetricKey {}

impl std::hash::Hash for MetricKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl PartialEq<Metric> for MetricKey {
    fn eq(&self, other: &Metric) -> bool {
        *self == MetricKey::Known(*other)
    }
}

impl PartialOrd for MetricKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MetricKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(other.key())
    }
}

impl std::borrow::Borrow<str> for MetricKey {
    fn borrow(&self) -> &str {
        self.key()
    }
}

impl Default for MetricKey {
    /// The empty word: what a document without the key read as before the
    /// key was typed.
    fn default() -> MetricKey {
        MetricKey::Other(String::new())
    }
}

impl PartialEq<str> for MetricKey {
    fn eq(&self, other: &str) -> bool {
        self.key() == other
    }
}

impl PartialEq<&str> for MetricKey {
    fn eq(&self, other: &&str) -> bool {
        self.key() == *other
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn every_metric_has_one_key_that_round_trips_and_its_properties() {
        let mut keys = BTreeSet::new();
        let mut words = BTreeSet::new();
        for m in Metric::ALL {
            assert!(keys.insert(m.key()), "{m}: key used twice");
            assert!(words.insert(m.word()), "{m}: word used twice");
            assert_eq!(Metric::from_key(m.key()), Some(m));
            assert_eq!(Metric::from_word(m.key()), Some(m));
            assert_eq!(Metric::from_word(m.word()), Some(m));
            for a in m.aliases() {
                assert_eq!(Metric::from_word(a), Some(m), "{a}");
            }
            let json = serde_json::to_string(&m).expect("json");
            assert_eq!(json, format!("\"{}\"", m.key()));
            assert_eq!(serde_json::from_str::<Metric>(&json).expect("back"), m);
            let k = MetricKey::from(m.key());
            assert_eq!(k, MetricKey::Known(m));
            assert_eq!(String::from(k), m.key());
            assert!(!m.label().is_empty() && !m.unit().symbol().is_empty());
            // Every metric says which way is better, who measures it and how it is
            // compared (the matches are exhaustive; these pin the few that are not the
            // default).
            let _ = (m.direction(), m.measured_by(), m.comparison(), m.source());
        }
        // Keys and words never collide across metrics.
        for m in Metric::ALL {
            for n in Metric::ALL.into_iter().filter(|n| *n != m) {
                assert_ne!(m.key(), n.word(), "{m} / {n}");
                assert!(!n.aliases().contains(&m.key()), "{m} / {n}");
            }
        }
        assert_eq!(Metric::ReplyRate.direction(), Direction::Higher);
        assert_eq!(Metric::P99Ms.direction(), Direction::Lower);
        assert_eq!(Metric::ErrorPct.direction(), Direction::Lower);
        assert_eq!(Metric::ServerCpuUsPerReq.measured_by(), MeasuredBy::Server);
        assert_eq!(Metric::P50Ms.measured_by(), MeasuredBy::Client);
        assert_eq!(Metric::ReqPerServerCpuS.measured_by(), MeasuredBy::Client);
        assert_eq!(Metric::ErrorPct.comparison(), Comparison::ExactTestOfCounts);
        assert_eq!(Metric::P50Ms.comparison(), Comparison::GeometricMeanRatio);
        assert_eq!(Metric::MaxRate.source(), Source::CapacitySearch);
        assert!(Metric::from_word("nonsense").is_none());
        assert!(serde_json::from_str::<Metric>("\"nonsense\"").is_err());
    }

    #[test]
    fn the_words_documents_and_compare_have_always_written() {
        for (m, key, word) in [
            (Metric::ReplyRate, "reply_rate", "reply_rate"),
            (Metric::P50Ms, "p50_ms", "p50"),
            (Metric::P99Ms, "p99_ms", "p99"),
            (
                Metric::ServerCpuUsPerReq,
                "server_cpu_us_per_req",
                "server_cpu",
            ),
            (Metric::MaxRate, "max_rate", "max_sustainable_rate"),
            (Metric::ProbeP99Ms, "probe_p99_ms", "probe_p99_ms"),
            (Metric::P999Ms, "p999_ms", "p99.9"),
            (Metric::ErrorPct, "error_pct", "errors"),
            (
                Metric::ClientCpuUsPerReq,
                "client_cpu_us_per_req",
                "client_cpu",
            ),
        ] {
            assert_eq!((m.key(), m.word()), (key, word));
        }
    }

    #[test]
    fn an_older_study_cell_round_trips_unchanged() {
        // A version 3 cell as studies wrote it before the registry: its values a map of words.
        let old = serde_json::json!({
            "workload": "static", "step": "rate=100", "server": "nginx", "n": 2,
            "metric": "reply_rate",
            "values": {"p50_ms": [0.4, 0.5], "reply_rate": [99.0, 101.0], "retired_key": [1.0, 2.0]},
            "stop": "design", "precision": null, "client_bound_runs": 0, "client_bound": false,
            "metrics": {}
        });
        let cell: crate::Cell = serde_json::from_value(old.clone()).expect("read");
        assert_eq!(
            cell.values[&MetricKey::Known(Metric::ReplyRate)],
            vec![99.0, 101.0]
        );
        assert_eq!(cell.values["retired_key"], vec![1.0, 2.0]);
        assert_eq!(serde_json::to_value(&cell).expect("write"), old);
        // And a cell without `values` (version 2) reads as empty.
        let mut v2 = old;
        v2.as_object_mut().expect("object").remove("values");
        let cell: crate::Cell = serde_json::from_value(v2).expect("read v2");
        assert!(cell.values.is_empty());
    }

    #[test]
    fn a_map_keyed_by_metric_writes_and_reads_the_same_words() {
        // An older document's map of words, one of them unknown to this version.
        let old = r#"{"accuracy":[100.0],"old_metric":[1.0],"p50_ms":[0.5],"reply_rate":[10.0]}"#;
        let map: BTreeMap<MetricKey, Vec<f64>> = serde_json::from_str(old).expect("read");
        assert_eq!(map[&MetricKey::Known(Metric::P50Ms)], vec![0.5]);
        assert_eq!(map["old_metric"], vec![1.0]);
        assert_eq!(serde_json::to_string(&map).expect("write"), old);
    }
}
