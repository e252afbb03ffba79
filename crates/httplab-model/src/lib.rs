//! The result model of httplab: what a load run, a sweep and a study produce.
//!
//! This crate holds only data types (serde) and their small helpers, so that the
//! load generator (which fills them), the report renderer (which draws them)
//! and the study runner (which collects them) agree on one versioned format.
//!
//! # Versioning
//! Every top-level document carries a `schema` string such as `httplab.run/1`.
//! Adding an optional field keeps the version; removing or changing the meaning
//! of a field bumps it. Readers reject a major version they do not know
//! ([`check_schema`]). The JSON layout is documented on the types of this crate.
//!
//! # Units
//! Times are milliseconds as `f64` unless a field name says otherwise
//! (`_s` seconds, `_us` microseconds). Rates are per second. Sizes are bytes.
//! Histograms record microseconds.

#![forbid(unsafe_code)]

pub mod facts;
mod legacy;
pub mod metric;
pub mod series;
mod shard;
mod status;
pub mod study_facts;

pub use facts::{
    AddrRange, Calibration, ClientShard, EnvironmentFacts, Extra, IoEngineUsed, RunFacts,
    SessionStats, StagedStep, WorkingSet,
};
pub use status::StatusClasses;
pub use study_facts::{
    ClientCeiling, CorpusFacts, HttpProtocol, IdleFacts, IdleSend, LoadDriver, LossMethod,
    PacketLoss, ServerCpuSource, StepParam, StudyEnvironmentFacts, StudyRunFacts, VaryParam,
};

pub use metric::{Direction, MeasuredBy, Metric, MetricKey};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Schema tag of a single load run ([`RunResult`]). Version 1.1 moved the
/// facts httplab records beyond httperf's configuration out of the
/// `extra` maps of words into typed `facts` ([`RunFacts`],
/// [`EnvironmentFacts`]); version 1 documents still load, their words
/// moved into the typed fields as they are read.
pub const RUN_SCHEMA: &str = "httplab.run/1.1";
/// Schema tag of a rate sweep ([`SweepResult`]); 1.1 for the runs' typed
/// facts, as [`RUN_SCHEMA`].
pub const SWEEP_SCHEMA: &str = "httplab.sweep/1.1";
/// Schema tag of a study ([`StudyResult`]). Version 2 added repetitions in
/// rounds, per-cell statistics and verdicts; version 3 gives every verdict one
/// of three outcomes (winner, equivalent, inconclusive) with its detectable
/// effect, adds server-side verdicts and comparisons with a baseline, and the
/// sequential design's rounds per cell; 3.1 gives its runs typed facts, as
/// [`RUN_SCHEMA`]; 3.2 types the study's own facts ([`StudyRunFacts`] in
/// each run's `config.facts.study`, [`StudyEnvironmentFacts`] in
/// `environment.facts.study`), which older versions wrote as words in the
/// `extra` maps: reading one moves those words into the fields. Readers still
/// accept versions 1 and 2 ([`STUDY_SCHEMA_V1`], [`STUDY_SCHEMA_V2`]), whose
/// new fields read as empty.
pub const STUDY_SCHEMA: &str = "httplab.study/3.2";
/// Version 2 of the study schema, still read.
pub const STUDY_SCHEMA_V2: &str = "httplab.study/2";
/// Version 1 of the study schema, still read.
pub const STUDY_SCHEMA_V1: &str = "httplab.study/1";

/// Errors from reading result documents.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The document's schema tag is not one this build understands.
    #[error("unsupported schema '{found}' (this httplab reads {expected})")]
    Schema {
        /// What the document said.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// A serialized histogram could not be decoded.
    #[error("bad histogram encoding: {0}")]
    Histogram(String),
}

/// Checks that `found` is `expected` or a same-major version of it
/// (`httplab.run/1` accepts `httplab.run/1`, `httplab.run/1.2`).
pub fn check_schema(found: &str, expected: &str) -> Result<(), ModelError> {
    let major = |s: &str| -> Option<(String, String)> {
        let (name, ver) = s.split_once('/')?;
        Some((name.to_string(), ver.split('.').next()?.to_string()))
    };
    match (major(found), major(expected)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        _ => Err(ModelError::Schema {
            found: found.to_string(),
            expected: expected.to_string(),
        }),
    }
}

/// The current UTC time in RFC 3339 with whole seconds (`2026-11-22T05:37:52Z`),
/// the form of every `started_at` field.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The name and version of the tool that wrote a document.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ToolInfo {
    /// Always "httplab".
    pub name: String,
    /// Crate version.
    pub version: String,
}

impl ToolInfo {
    /// This build's tool info.
    pub fn current(version: &str) -> Self {
        ToolInfo {
            name: "httplab".into(),
            version: version.into(),
        }
    }
}

/// Where a run happened: enough to tell two machines or kernels apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(remote = "Self")]
pub struct Environment {
    /// `uname -sr` style kernel string.
    pub kernel: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: u32,
    /// CPUs the load generator was allowed to run on (affinity), if known.
    #[serde(default)]
    pub client_affinity: Vec<u32>,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// What `httplab merge` records about the machines of a merged result.
    #[serde(default, skip_serializing_if = "EnvironmentFacts::is_empty")]
    pub facts: EnvironmentFacts,
    /// Free-form extra facts (e.g. "server_version": "nginx/1.22.1"), and
    /// words of older or newer versions this one does not know.
    #[serde(default)]
    pub extra: Extra,
}

/// Serde for a type whose older documents kept typed facts as words in
/// `extra`: the derived form (`#[serde(remote = "Self")]`), then the words
/// moved into the facts.
macro_rules! with_legacy_facts {
    ($t:ty, |$v:ident| $adopt:expr) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$t>::serialize(self, s)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let mut $v = <$t>::deserialize(d)?;
                $adopt;
                Ok($v)
            }
        }
    };
}

with_legacy_facts!(Environment, |e| e.facts.adopt_legacy(&mut e.extra));
with_legacy_facts!(RunConfig, |c| c.facts.adopt_legacy(&mut c.extra));
with_legacy_facts!(ShardInfo, |s| s.facts.adopt_legacy(&mut s.extra));
with_legacy_facts!(StudyResult, |s| s.adopt_legacy());

impl StudyResult {
    /// Moves the words a study document before version 3.2 wrote in its
    /// runs' `config.extra` and in `environment.extra` into their typed
    /// fields ([`StudyRunFacts::adopt_legacy`],
    /// [`StudyEnvironmentFacts::adopt_legacy`]); other words stay.
    fn adopt_legacy(&mut self) {
        for r in self.runs.iter_mut().filter_map(|r| r.run.as_mut()) {
            r.config.facts.study.adopt_legacy(&mut r.config.extra);
        }
        let e = &mut self.environment;
        e.facts.study.adopt_legacy(&mut e.extra);
    }
}

/// min/avg/max/median/stddev of a sample, as the seeds tabulate them.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest sample.
    pub max: f64,
    /// Median (50th percentile).
    pub median: f64,
    /// Population standard deviation.
    pub stddev: f64,
}

impl Summary {
    /// Summarises a slice of samples (order irrelevant). Empty → all zero.
    pub fn of(samples: &[f64]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Summary::default();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len() as f64;
        let avg = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        Summary {
            count: v.len() as u64,
            min: v[0],
            avg,
            max: v[v.len() - 1],
            median,
            stddev: var.sqrt(),
        }
    }
}

/// One point of a latency distribution.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    /// Percentile, 0–100 (e.g. 99.9).
    pub pct: f64,
    /// Value at that percentile, milliseconds.
    pub ms: f64,
}

/// A latency distribution: summary, the standard percentiles and the full
/// HDR histogram (microseconds), serialized losslessly.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Recorded values.
    pub count: u64,
    /// Smallest, ms.
    pub min_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Standard deviation, ms.
    pub stddev_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// p50 p90 p99 p99.9 p99.99 (and any others the writer chose).
    pub percentiles: Vec<Percentile>,
    /// HDR histogram of microseconds, V2 deflate serialization, base64.
    /// Empty when nothing was recorded.
    #[serde(default)]
    pub hdr: String,
}

/// The percentiles every report prints.
pub const STANDARD_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

impl Latency {
    /// Builds the distribution from a histogram of microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |v: f64| v / 1000.0;
        let mut buf = Vec::new();
        let hdr = match V2DeflateSerializer::new().serialize(h, &mut buf) {
            Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
            Err(_) => String::new(),
        };
        Latency {
            count: h.len(),
            min_ms: us(h.min() as f64),
            mean_ms: us(h.mean()),
            stddev_ms: us(h.stdev()),
            max_ms: us(h.max() as f64),
            percentiles: STANDARD_PERCENTILES
                .iter()
                .map(|&p| Percentile {
                    pct: p,
                    ms: us(h.value_at_quantile(p / 100.0) as f64),
                })
                .collect(),
            hdr,
        }
    }

    /// Decodes the embedded histogram (microseconds). `Ok(None)` when empty.
    pub fn histogram(&self) -> Result<Option<Histogram<u64>>, ModelError> {
        if self.hdr.is_empty() {
            return Ok(None);
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.hdr)
            .map_err(|e| ModelError::Histogram(e.to_string()))?;
        let plain = hdr_v2_bytes(&bytes).map_err(ModelError::Histogram)?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut plain.as_slice())
            .map_err(|e| ModelError::Histogram(format!("{e:?}")))?;
        Ok(Some(h))
    }

    /// The value at percentile `pct` from the stored list, if present.
    pub fn at(&self, pct: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|p| (p.pct - pct).abs() < 1e-9)
            .map(|p| p.ms)
    }
}

/// The HDR histogram's plain (uncompressed) V2 encoding of `bytes`, checked
/// before it reaches `hdrhistogram`'s deserializer.
///
/// Written here because the library trusts the header: it sizes its payload
/// buffer from the header's 32-bit length before reading, so a few bytes of a
/// damaged or hostile result document could make `report` or `merge` allocate
/// 4 GiB. This checks that the stated payload is really there, and inflates a
/// compressed histogram with a bound on its output.
fn hdr_v2_bytes(bytes: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    // The format's cookies: base values with the word-size flag 0x10 set.
    const V2: u32 = 0x1c84_9313;
    const V2_DEFLATE: u32 = 0x1c84_9314;
    /// cookie, payload length, normalizing offset, digits, low, high, ratio.
    const HEADER: usize = 40;
    /// Far above any histogram httplab writes (3 significant digits up to an
    /// hour in microseconds is a few hundred kilobytes at most).
    const MAX_PLAIN: u64 = 64 << 20;
    let word = |b: &[u8], at: usize| -> Option<u32> {
        b.get(at..at + 4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    let plain = match word(bytes, 0) {
        Some(V2) => bytes.to_vec(),
        Some(V2_DEFLATE) => {
            let stated = word(bytes, 4).ok_or("truncated histogram header")? as usize;
            let deflated = bytes
                .get(8..8 + stated)
                .ok_or("histogram is shorter than its header says")?;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(deflated)
                .take(MAX_PLAIN + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("histogram does not inflate: {e}"))?;
            if out.len() as u64 > MAX_PLAIN {
                return Err("histogram inflates beyond 64 MiB".into());
            }
            out
        }
        _ => return Err("not an HDR histogram (unknown cookie)".into()),
    };
    if word(&plain, 0) != Some(V2) {
        return Err("not an HDR histogram (unknown inner cookie)".into());
    }
    let stated = word(&plain, 4).ok_or("truncated histogram header")? as usize;
    if plain.len() < HEADER || plain.len() - HEADER < stated {
        return Err("histogram is shorter than its header says".into());
    }
    Ok(plain)
}

/// How the load was offered.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// Arrivals follow a schedule regardless of the server (httperf --rate).
    #[default]
    OpenLoop,
    /// N users each send, wait, think, repeat (openload, seed 004's client).
    ClosedLoop,
    /// Connections opened back to back as fast as possible (httperf without --rate).
    Sequential,
}

/// The configuration a run used, normalised. The exact command line is kept too.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(remote = "Self")]
pub struct RunConfig {
    /// argv as given (after `httplab load`).
    pub command_line: Vec<String>,
    /// Target URLs (one for most runs; several for file sets).
    pub targets: Vec<String>,
    /// Open, closed or sequential.
    pub mode: LoadMode,
    /// Demanded connection/session rate per second (open loop), if any.
    pub rate: Option<f64>,
    /// Arrival distribution: "deterministic", "uniform", "exponential".
    pub distribution: Option<String>,
    /// Connections (or sessions) to open, if counted.
    pub num_conns: Option<u64>,
    /// Requests per connection.
    pub num_calls: Option<u64>,
    /// Planned duration in seconds, if timed.
    pub duration_s: Option<f64>,
    /// Closed loop: number of users.
    pub users: Option<u64>,
    /// Closed loop: think time between requests, ms.
    pub think_ms: Option<f64>,
    /// Reply timeout, seconds.
    pub timeout_s: Option<f64>,
    /// Worker threads of the generator.
    pub threads: u32,
    /// HTTP method.
    pub method: String,
    /// Warm-up before the measurement window, seconds: everything scheduled
    /// earlier is left out of every statistic (0: no warm-up).
    #[serde(default)]
    pub warmup_s: f64,
    /// What httplab records beyond httperf's configuration (version 1.1;
    /// older documents kept these as words in `extra`).
    #[serde(default, skip_serializing_if = "RunFacts::is_empty")]
    pub facts: RunFacts,
    /// Free-form options not covered above, and words of older or newer
    /// versions this one does not know.
    #[serde(default)]
    pub extra: Extra,
}

/// Counters in httperf's sense.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    /// Connections initiated.
    pub connections: u64,
    /// Requests sent.
    pub requests: u64,
    /// Replies received (complete).
    pub replies: u64,
    /// Wall time of the test, seconds (first connection to last event).
    pub test_duration_s: f64,
    /// Largest number of simultaneously open connections.
    pub max_concurrent_connections: u64,
}

/// httperf's "Connection rate / time / length" block.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ConnectionStats {
    /// Connections per second.
    pub rate_per_s: f64,
    /// Milliseconds per connection (1000 / rate).
    pub ms_per_conn: f64,
    /// Lifetime of successful connections, ms.
    pub lifetime_ms: Summary,
    /// Time to establish a connection (avg), ms.
    pub connect_ms: f64,
    /// Replies per connection (avg).
    pub replies_per_conn: f64,
}

/// httperf's "Request rate / size" block.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct RequestStats {
    /// Requests per second.
    pub rate_per_s: f64,
    /// Milliseconds per request.
    pub ms_per_req: f64,
    /// Average request size, bytes.
    pub size_bytes: f64,
}

/// httperf's "Reply rate / time / size / status" block.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ReplyStats {
    /// Reply rate samples (per `sample_interval_s`): min/avg/max/median/stddev.
    pub rate: Summary,
    /// Interval between reply-rate samples, seconds.
    pub sample_interval_s: f64,
    /// Time to first byte of the reply (httperf "response"), avg ms.
    pub response_ms: f64,
    /// Time from first to last byte (httperf "transfer"), avg ms.
    pub transfer_ms: f64,
    /// Average header size, bytes.
    pub header_bytes: f64,
    /// Average body size, bytes.
    pub content_bytes: f64,
    /// Average trailer size, bytes.
    pub footer_bytes: f64,
    /// Replies by status class, 1xx..5xx (written as the array of five).
    pub status: StatusClasses,
}

/// httperf's "CPU time" and "Net I/O" lines.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Resources {
    /// Generator user CPU, seconds.
    pub user_s: f64,
    /// Generator system CPU, seconds.
    pub system_s: f64,
    /// Bytes sent by the generator.
    pub bytes_sent: u64,
    /// Bytes received by the generator.
    pub bytes_received: u64,
    /// Net I/O in KB/s (httperf: 1 KB = 1024 B).
    pub net_kb_per_s: f64,
    /// Net I/O in Mbit/s (1e6 bits).
    pub net_mbit_per_s: f64,
}

/// httperf's error classes.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Errors {
    /// Sum of every class.
    pub total: u64,
    /// Reply not complete within --timeout.
    pub client_timo: u64,
    /// Connect timed out.
    pub socket_timo: u64,
    /// ECONNREFUSED.
    pub connrefused: u64,
    /// ECONNRESET or EPIPE.
    pub connreset: u64,
    /// Out of file descriptors (EMFILE/ENFILE).
    pub fd_unavail: u64,
    /// Out of local ports (EADDRNOTAVAIL).
    pub addrunavail: u64,
    /// httperf's table-full (kept for compatibility; httplab has no table).
    pub ftab_full: u64,
    /// httperf's catch-all: every protocol fault below (bad_status_line ..
    /// tls) plus the unnamed rest.
    pub other: u64,
    /// Replies not complete within `--max-response-time` of their request
    /// (a class of its own, in `total`, not in `other`).
    #[serde(default)]
    pub response_timo: u64,
    /// Part of `other`: the status line was not HTTP/1.x (garbage, bad version).
    #[serde(default)]
    pub bad_status_line: u64,
    /// Part of `other`: a malformed header (bad or conflicting Content-Length ...).
    #[serde(default)]
    pub bad_header: u64,
    /// Part of `other`: the response head exceeded the parser's limit.
    #[serde(default)]
    pub headers_too_large: u64,
    /// Part of `other`: broken chunked framing.
    #[serde(default)]
    pub bad_chunk: u64,
    /// Part of `other`: bytes beyond the reply's framing (more body than
    /// Content-Length, data with no request outstanding).
    #[serde(default)]
    pub body_overrun: u64,
    /// Part of `other`: the connection ended inside the reply's framing.
    #[serde(default)]
    pub truncated: u64,
    /// Part of `other`: TLS failures (handshake refused, certificate, bad record).
    #[serde(default)]
    pub tls: u64,
}

impl Errors {
    /// The sum of two error blocks, class by class (shards of one run).
    pub fn add(&self, o: &Errors) -> Errors {
        Errors {
            total: self.total + o.total,
            client_timo: self.client_timo + o.client_timo,
            socket_timo: self.socket_timo + o.socket_timo,
            connrefused: self.connrefused + o.connrefused,
            connreset: self.connreset + o.connreset,
            fd_unavail: self.fd_unavail + o.fd_unavail,
            addrunavail: self.addrunavail + o.addrunavail,
            ftab_full: self.ftab_full + o.ftab_full,
            other: self.other + o.other,
            response_timo: self.response_timo + o.response_timo,
            bad_status_line: self.bad_status_line + o.bad_status_line,
            bad_header: self.bad_header + o.bad_header,
            headers_too_large: self.headers_too_large + o.headers_too_large,
            bad_chunk: self.bad_chunk + o.bad_chunk,
            body_overrun: self.body_overrun + o.body_overrun,
            truncated: self.truncated + o.truncated,
            tls: self.tls + o.tls,
        }
    }

    /// The named parts of `other` and `response_timo`, as (name, count),
    /// in report order, zero counts included.
    pub fn named(&self) -> [(&'static str, u64); 8] {
        [
            ("response-timo", self.response_timo),
            ("bad-status-line", self.bad_status_line),
            ("bad-header", self.bad_header),
            ("headers-too-large", self.headers_too_large),
            ("bad-chunk", self.bad_chunk),
            ("body-overrun", self.body_overrun),
            ("truncated", self.truncated),
            ("tls", self.tls),
        ]
    }
}

/// Body accuracy: did every reply carry what its framing promised?
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Accuracy {
    /// Body bytes the replies' framing announced.
    pub bytes_expected: u64,
    /// Body bytes actually received.
    pub bytes_received: u64,
    /// Replies whose body was shorter/longer than announced.
    pub framing_errors: u64,
    /// Replies compared with files under --verify-root.
    pub verified: u64,
    /// Of those, replies whose body differed from the file.
    pub mismatches: u64,
}

/// The generator's verdict on itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SelfCheck {
    /// Generator CPU use over the run, percent of one core per thread summed.
    pub client_cpu_pct: f64,
    /// How late scheduled sends went out, ms (p50, p99, max).
    pub schedule_lag_p50_ms: f64,
    /// p99 of send lateness, ms.
    pub schedule_lag_p99_ms: f64,
    /// Largest lateness, ms.
    pub schedule_lag_max_ms: f64,
    /// Sends that started later than the lag threshold.
    pub late_starts: u64,
    /// True when the generator, not the server, limited the run.
    pub client_bound: bool,
    /// Human-readable reasons (empty when all is well).
    pub warnings: Vec<String>,
    /// The generator's own ceiling for this run's shape, requests/s (from a
    /// calibration against an in-process sink), when known.
    #[serde(default)]
    pub client_ceiling: Option<f64>,
    /// Achieved reply rate ÷ `client_ceiling`, when the ceiling is known.
    #[serde(default)]
    pub client_utilization: Option<f64>,
    /// Which client-bound criteria fired, as stable keys: `client_utilization`
    /// (utilization ≥ 0.85), `client_cpu` (CPU ≥ 90 % of the generator's
    /// cores), `schedule_lag` (sends later than planned: p99 lag above the
    /// threshold), `fd_exhausted`, `ports_exhausted`. Empty when not client-bound.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// One interval of the time series.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    /// Seconds from the start of the run to the end of this interval.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub len_s: f64,
    /// Connections opened in the interval.
    pub connections: u64,
    /// Requests sent.
    pub requests: u64,
    /// Replies completed.
    pub replies: u64,
    /// Errors of any class.
    pub errors: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Replies per second in this interval.
    pub reply_rate: f64,
    /// Response-time percentiles of replies completed in the interval, ms.
    pub p50_ms: f64,
    /// p99 in the interval, ms.
    pub p99_ms: f64,
    /// Open connections at the end of the interval.
    pub open_connections: u64,
}

/// A sample of a server process taken from /proc while a run went (study).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerSample {
    /// Seconds from the start of the run.
    pub t_s: f64,
    /// Cumulative CPU seconds (user + system) of all server processes.
    pub cpu_s: f64,
    /// Resident memory of all server processes, bytes.
    pub rss_bytes: u64,
    /// Threads across server processes.
    pub threads: u64,
    /// Open descriptors across server processes.
    pub fds: u64,
    /// Number of server processes.
    pub processes: u64,
}

/// Server-side cost of a run (filled by the study runner, absent otherwise).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerCost {
    /// Server label (e.g. "nginx", "httplab event").
    pub name: String,
    /// CPU seconds the server used during the run.
    pub cpu_s: f64,
    /// Where `cpu_s` comes from ("cgroup cpuacct (ns)", "schedstat …"; empty: clock ticks).
    #[serde(default)]
    pub cpu_source: String,
    /// Peak RSS, bytes.
    pub peak_rss_bytes: u64,
    /// Samples over time.
    pub samples: Vec<ServerSample>,
}

/// Latency distributions of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latencies {
    /// TCP connect time.
    pub connect: Latency,
    /// Time to first byte of the reply, from the actual send.
    pub first_byte: Latency,
    /// Whole response from the *scheduled* send time (coordinated-omission corrected).
    pub response: Latency,
    /// Whole response from the actual send time (uncorrected, what wrk/httperf show).
    pub response_uncorrected: Latency,
    /// Session time: from a session's scheduled start to the reply of its
    /// last call, reconnections (and think times) included. A session is a
    /// connection's `num_calls` calls (request-oriented), an httperf session,
    /// or `num_calls` requests of a closed-loop user. Only complete sessions.
    #[serde(default)]
    pub session: Latency,
}

/// Everything one `httplab load` run measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// Always [`RUN_SCHEMA`].
    pub schema: String,
    /// Writer.
    pub tool: ToolInfo,
    /// Free-form label (server name, step), chosen by the caller.
    #[serde(default)]
    pub label: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// What was asked.
    pub config: RunConfig,
    /// Counters.
    pub totals: Totals,
    /// Connection block.
    pub connection: ConnectionStats,
    /// Request block.
    pub request: RequestStats,
    /// Reply block.
    pub reply: ReplyStats,
    /// CPU and network.
    pub resources: Resources,
    /// Error classes.
    pub errors: Errors,
    /// Latency histograms.
    pub latency: Latencies,
    /// Per-interval time series.
    pub series: Vec<Interval>,
    /// Body accuracy.
    pub accuracy: Accuracy,
    /// Generator self-check.
    pub self_check: SelfCheck,
    /// Machine facts.
    pub environment: Environment,
    /// True when the run was interrupted (Ctrl-C) and reports what ran so far.
    #[serde(default)]
    pub interrupted: bool,
    /// Server cost, when the runner sampled the server.
    #[serde(default)]
    pub server: Option<ServerCost>,
    /// The client shards this result was merged from (`httplab merge`), in
    /// shard order; empty for a run from one client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardInfo>,
    /// TLS facts of a run over HTTPS (`httplab load --ssl`, `https://`);
    /// absent for cleartext runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    /// HTTP/2 facts of a run with `--http2`; absent for HTTP/1.1 runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Summary>,
    /// HTTP/3 facts of a run with `--http3`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Summary>,
    /// `httplab load --repeat N`: runs 2..=N of the same load, back to back,
    /// each a whole result (with no `repeats` of its own). This document's
    /// own fields are run 1, so a reader that knows nothing of repeats still
    /// reads a complete run; [`RunResult::runs`] gives all N in order.
    /// Empty for a single run (and then not written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RunResult>,
    /// Rate stages of a run with `--stages`, in order; empty otherwise.
    /// Every call belongs to the stage of its *scheduled* send instant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageResult>,
    /// The unqueued latency probe of a run with `--probe`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeResult>,
    /// The client check made before the run (`httplab load --check-client`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_check: Option<ClientCheck>,
}

impl RunResult {
    /// Every run of this document in order: itself (run 1, without its
    /// `repeats`) followed by its repeats. One run for a document without
    /// repeats.
    pub fn runs(&self) -> Vec<&RunResult> {
        std::iter::once(self).chain(self.repeats.iter()).collect()
    }

    /// Runs in this document (1 + the repeats).
    pub fn run_count(&self) -> usize {
        1 + self.repeats.len()
    }

    /// Calls with an outcome, the exposure of the error count: complete replies plus errors
    /// ([`Errors::total`], every class). A run's error rate is [`metric::failed_calls`] over
    /// these (the one definition: [`metric`]'s docs).
    pub fn calls(&self) -> u64 {
        self.totals.replies.saturating_add(self.errors.total)
    }
}

/// One rate stage of an `httplab load --stages` run (`RunResult::stages`).
/// Calls (and arrivals) belong to the stage of their scheduled instant, so
/// a stage's latency is corrected for what the server did to *its* demand.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StageResult {
    /// Start of the stage, seconds from the schedule's origin.
    pub start_s: f64,
    /// Length of the stage, seconds.
    pub duration_s: f64,
    /// Offered rate at the stage's start (the unit of `--rate`: connections
    /// or sessions per second).
    pub rate_from: f64,
    /// Offered rate at the stage's end (equal to `rate_from` when held).
    pub rate_to: f64,
    /// Arrivals (connections or sessions) scheduled in the stage that started.
    pub arrivals: u64,
    /// Requests sent whose scheduled instant falls in the stage.
    pub sent: u64,
    /// Replies to those requests.
    pub replies: u64,
    /// Requests of the stage without a reply (failed, timed out, abandoned),
    /// and arrivals of the stage skipped after waiting past `--timeout`.
    pub errors: u64,
    /// Replies per second of the stage's length.
    pub achieved_rps: f64,
    /// Response time corrected for coordinated omission (from the
    /// scheduled instant), with its HDR histogram.
    pub response: Latency,
    /// Response time from the actual send.
    pub response_uncorrected: Latency,
}

impl StageResult {
    /// The mean offered rate of the stage (the unit of `--rate`).
    pub fn offered_rate(&self) -> f64 {
        (self.rate_from + self.rate_to) / 2.0
    }
}

/// The unqueued latency probe of `httplab load --probe` (`RunResult::probe`):
/// a light open-loop client on its own thread beside the load, sending the
/// same requests; its latency is what the server gives an unqueued client.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ProbeResult {
    /// Requests per second the probe offered.
    pub rate: f64,
    /// Its connections.
    pub connections: u64,
    /// The core its thread was pinned to, when it was.
    pub cpu: Option<usize>,
    /// Requests sent.
    pub sent: u64,
    /// Replies received.
    pub replies: u64,
    /// Errors, all classes.
    pub errors: u64,
    /// Corrected response time (from the scheduled instant), with its histogram.
    pub response: Latency,
    /// True when the loaded client's latency exceeds the probe's beyond
    /// their uncertainty (see [`ProbeResult::client_queueing`]).
    pub client_queueing: bool,
}

/// Fewest probe replies for its p99 to be compared.
pub const PROBE_MIN_REPLIES: u64 = 100;

impl ProbeResult {
    /// The rule behind [`ProbeResult::client_queueing`]: the loaded
    /// client's median is above the probe's 99th percentile, with at least
    /// [`PROBE_MIN_REPLIES`] replies on each side. If both clients saw the
    /// same server latency, a median of the larger sample above the
    /// probe's p99 would need 1 % of the probe's replies to outnumber half of
    /// the loaded ones' (a difference far outside sampling noise), so the
    /// gap is latency the loaded client added itself: its own queueing.
    pub fn queueing_rule(loaded: &Latency, probe: &Latency) -> bool {
        if loaded.count < PROBE_MIN_REPLIES || probe.count < PROBE_MIN_REPLIES {
            return false;
        }
        match (loaded.at(50.0), probe.at(99.0)) {
            (Some(l50), Some(p99)) => l50 > p99,
            _ => false,
        }
    }
}

/// `httplab load --check-client`: a short step at the run's rate from one
/// client process, then from two at the same total rate. Where the two
/// differ beyond the steps' own spread, the client, not the server, shaped
/// the figures (`distorts`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ClientCheck {
    /// How the clients ran: `processes` (the httplab executable spawned
    /// with `--client I/N`) or `threads` (in-process runs, when the
    /// executable cannot be spawned as `httplab load`).
    pub method: String,
    /// Measured window of each step, seconds (after its warm-up).
    pub step_s: f64,
    /// The step from one client.
    pub one: CheckStep,
    /// The step from two clients, summed (rates) or reply-weighted (percentiles).
    pub two: CheckStep,
    /// True when a figure differs beyond the steps' spread.
    pub distorts: bool,
    /// Each figure that differs, in words (empty when none does).
    pub differences: Vec<String>,
    /// Why a figure could not be judged (too few intervals), else empty.
    pub note: String,
}

/// One step of a [`ClientCheck`]: the means over its intervals, with their
/// standard deviations over the intervals.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CheckStep {
    /// Client processes (or threads) that made the step.
    pub clients: u32,
    /// Intervals measured.
    pub intervals: u32,
    /// Mean reply rate, replies/s.
    pub reply_rate: f64,
    /// Its standard deviation over the intervals.
    pub reply_rate_sd: f64,
    /// Mean of the intervals' p50, ms.
    pub p50_ms: f64,
    /// Its standard deviation over the intervals.
    pub p50_sd: f64,
    /// Mean of the intervals' p99, ms.
    pub p99_ms: f64,
    /// Its standard deviation over the intervals.
    pub p99_sd: f64,
    /// Errors in the step.
    pub errors: u64,
}

/// What the QUIC and HTTP/3 layers of an `httplab load --http3` run did
/// (`RunResult::http3`). Counts cover the measurement window, like every
/// other counter; each stream is one request and one reply of the usual
/// blocks, and its latency is in the usual response-time rows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Http3Summary {
    /// Streams each connection keeps open at most (`--max-concurrent-streams`).
    pub max_concurrent_streams: u32,
    /// Connections whose QUIC handshake completed with ALPN h3.
    pub connections: u64,
    /// Request streams opened (requests sent).
    pub streams_started: u64,
    /// Streams that ended with a complete response.
    pub streams_completed: u64,
    /// Streams that failed (reset, connection lost, timed out).
    pub streams_failed: u64,
    /// QUIC handshake time: from the first Initial packet to the handshake's
    /// end (HDR percentiles, like the other latency rows).
    pub handshake: Latency,
    /// Handshakes that took a full round trip (no 0-RTT).
    pub handshakes_1rtt: u64,
    /// Handshakes resumed with 0-RTT accepted by the server.
    pub handshakes_0rtt: u64,
    /// Failures, by class.
    pub errors: Http3Errors,
    /// Packets quinn declared lost (its loss detection), summed over the
    /// connections whose handshake completed (as are the datagram counts).
    pub lost_packets: u64,
    /// UDP datagrams sent, summed over connections.
    pub datagrams_sent: u64,
    /// UDP datagrams received, summed over connections.
    pub datagrams_received: u64,
    /// Connections that failed before speaking HTTP/3 (handshake failures,
    /// version negotiation, timeouts).
    pub failed_connections: u64,
    /// The first of those failures, in words.
    pub first_error: Option<String>,
}

/// HTTP/3 failures by class (`Http3Summary::errors`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Http3Errors {
    /// QUIC/TLS handshakes that failed (certificate, ALPN, a close during it, a timeout).
    pub handshake_failed: u64,
    /// Connections that ended in QUIC version negotiation (no version in common).
    pub version_negotiation: u64,
    /// Connections the server closed, by error code name (QUIC transport
    /// codes such as `PROTOCOL_VIOLATION`, HTTP/3 codes such as
    /// `H3_INTERNAL_ERROR`; `H3_NO_ERROR` is a graceful close).
    pub closed_by_peer: std::collections::BTreeMap<String, u64>,
    /// Request streams the server reset, by HTTP/3 error code name.
    pub stream_reset: std::collections::BTreeMap<String, u64>,
    /// Connections ended by the QUIC idle timeout (the server went silent).
    pub idle_timeout: u64,
    /// Connections this client closed because the server broke QUIC (a
    /// transport error detected here) or HTTP/3 (bad frames, a broken
    /// control stream).
    pub protocol_error: u64,
}

/// What the HTTP/2 layer of an `httplab load --http2` run did
/// (`RunResult::http2`). Counts cover the measurement window, like every
/// other counter; each stream is one request and one reply of the usual
/// blocks, and its latency is in the usual response-time rows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Http2Summary {
    /// Cleartext HTTP/2 with prior knowledge (h2c); false: over TLS (ALPN h2).
    pub cleartext: bool,
    /// Streams each connection keeps open at most (`--max-concurrent-streams`).
    pub max_concurrent_streams: u32,
    /// Initial stream flow-control window advertised (`--h2-window`), bytes.
    pub stream_window: u32,
    /// Connection flow-control window (`--h2-conn-window`), bytes.
    pub conn_window: u32,
    /// Connections on which the server spoke HTTP/2 (its first frame was SETTINGS).
    pub connections: u64,
    /// Streams opened (requests sent).
    pub streams_started: u64,
    /// Streams that ended with a complete response.
    pub streams_completed: u64,
    /// Streams that failed (reset, connection lost, timed out).
    pub streams_failed: u64,
    /// Calls the server did not process (above a GOAWAY's last stream id,
    /// or refused with REFUSED_STREAM), made again on a new connection:
    /// neither errors nor in `streams_started`.
    #[serde(default)]
    pub streams_retried: u64,
    /// RST_STREAM frames received, by error code name (e.g. `CANCEL`).
    #[serde(default)]
    pub rst_stream_received: std::collections::BTreeMap<String, u64>,
    /// Connections that received a GOAWAY frame.
    pub goaway_received: u64,
    /// Those connections by the error code of their last GOAWAY.
    #[serde(default)]
    pub goaway_reasons: std::collections::BTreeMap<String, u64>,
    /// Connections that failed before speaking HTTP/2 (TLS refused, ALPN
    /// without h2, an HTTP/1.x answer to the h2c preface).
    #[serde(default)]
    pub failed_connections: u64,
    /// The first of those failures, in words.
    #[serde(default)]
    pub first_error: Option<String>,
}

/// What the TLS layer of an HTTPS run did (`RunResult::tls`). Counts cover
/// the measurement window, like every other counter.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TlsSummary {
    /// Whether the server's certificate was verified. False for httperf's
    /// `--ssl` spelling and for `--insecure`: the report says so.
    pub verified: bool,
    /// Server name sent as SNI (empty: none, the target is an IP address).
    #[serde(default)]
    pub sni: String,
    /// Whether session resumption was offered (off with `--ssl-no-reuse`).
    pub resumption: bool,
    /// Handshakes completed.
    pub handshakes: u64,
    /// Of those, full handshakes.
    pub full: u64,
    /// Of those, resumed handshakes (session ticket or session ID).
    pub resumed: u64,
    /// Handshakes that failed (alert, refused, verification failure, close).
    pub failures: u64,
    /// Handshake time: from the TCP connection's establishment to the end of
    /// the TLS handshake (HDR percentiles, like the other latency rows).
    pub handshake: Latency,
    /// Completed handshakes per protocol version (e.g. `TLSv1_3`).
    #[serde(default)]
    pub versions: std::collections::BTreeMap<String, u64>,
    /// Completed handshakes per cipher suite (rustls names).
    #[serde(default)]
    pub cipher_suites: std::collections::BTreeMap<String, u64>,
    /// Completed handshakes per ALPN protocol (`none` when the server chose none).
    #[serde(default)]
    pub alpn: std::collections::BTreeMap<String, u64>,
    /// The first handshake failure's reason, as rustls words it.
    #[serde(default)]
    pub first_error: Option<String>,
}

/// One client shard of a merged run: who ran it, when, and what it saw, so a
/// report can show one slow client. Filled by `httplab merge`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(remote = "Self")]
pub struct ShardInfo {
    /// Shard index I (0-based) of `I/N`.
    pub index: u32,
    /// Number of shards N.
    pub count: u32,
    /// Run id the shard recorded (empty when none).
    #[serde(default)]
    pub run_id: String,
    /// Host the shard ran on, when recorded.
    #[serde(default)]
    pub host: String,
    /// File (or name) the shard was read from.
    #[serde(default)]
    pub source: String,
    /// The shard's own start time, RFC 3339.
    pub started_at: String,
    /// Seconds from the merged run's start to this shard's start.
    pub start_offset_s: f64,
    /// The shard's test duration, seconds.
    pub test_duration_s: f64,
    /// Connections the shard opened.
    pub connections: u64,
    /// Requests it sent.
    pub requests: u64,
    /// Replies it received.
    pub replies: u64,
    /// Errors of every class.
    pub errors: u64,
    /// Response time (coordinated-omission corrected) p50, ms.
    pub p50_ms: f64,
    /// Response time p99, ms.
    pub p99_ms: f64,
    /// The shard's generator flagged itself as the bottleneck.
    pub client_bound: bool,
    /// The shard's self-check warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The shard's command line.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The shard's `config.facts`.
    #[serde(default, skip_serializing_if = "RunFacts::is_empty")]
    pub facts: RunFacts,
    /// The shard's `config.extra`.
    #[serde(default)]
    pub extra: Extra,
    /// Writer of the shard's document.
    #[serde(default)]
    pub tool: ToolInfo,
    /// The shard's machine.
    #[serde(default)]
    pub environment: Environment,
}

/// Saturation analysis of one target in a sweep.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Saturation {
    /// Highest demanded rate that was sustained (reply rate within 1 %,
    /// errors < 0.1 %, p99 under the SLO), if any.
    pub max_sustainable_rate: Option<f64>,
    /// Demanded rate where response time starts to climb, if found.
    pub knee_rate: Option<f64>,
    /// The SLO used, ms.
    pub slo_ms: f64,
    /// The search stopped because the load generator, not the server, reached
    /// its limit: `max_sustainable_rate` is then a lower bound ("≥ X").
    #[serde(default)]
    pub client_bound: bool,
    /// Runs it took (adaptive search) or steps (plain sweep).
    pub runs: u32,
    /// How the rate was found: "steps" or "find-max".
    pub method: String,
}

/// One step of a sweep: the demanded rate and the run at that rate.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepStep {
    /// Demanded rate (connections per second, autobench's `dem_req_rate` / num_calls).
    pub demanded_rate: f64,
    /// Full result of the run.
    pub run: RunResult,
}

/// All steps of one target.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepTarget {
    /// Label (host:port/uri or a name).
    pub label: String,
    /// Target URL.
    pub url: String,
    /// Steps in demanded-rate order.
    pub steps: Vec<SweepStep>,
    /// Saturation analysis.
    pub saturation: Saturation,
}

/// A whole `httplab sweep`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepResult {
    /// Always [`SWEEP_SCHEMA`].
    pub schema: String,
    /// Writer.
    pub tool: ToolInfo,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// argv after `httplab sweep`.
    pub command_line: Vec<String>,
    /// Per target.
    pub targets: Vec<SweepTarget>,
    /// Machine facts.
    pub environment: Environment,
}

/// What became of a run inside a study ([`StudyRun::status`]). Written as
/// the words of [`RunStatus::as_str`]; a word this version does not know is
/// read back as [`RunStatus::Other`] and written again unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RunStatus {
    /// Measured ("ok").
    #[default]
    Ok,
    /// The run or its server failed ("failed").
    Failed,
    /// The server's program is not installed or cannot serve this study ("not installed").
    NotInstalled,
    /// Not run: the server cannot speak the workload's protocol here, the
    /// reason says why ("unsupported").
    Unsupported,
    /// Not run, or cut short, by Ctrl-C ("skipped").
    Skipped,
    /// Ran but measured nothing: no reply and no error in its window ("empty").
    Empty,
    /// Any other word, as read.
    Other(String),
}

impl RunStatus {
    /// The word written in results and tables.
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::NotInstalled => "not installed",
            RunStatus::Unsupported => "unsupported",
            RunStatus::Skipped => "skipped",
            RunStatus::Empty => "empty",
            RunStatus::Other(s) => s,
        }
    }

    /// True for [`RunStatus::Ok`].
    pub fn is_ok(&self) -> bool {
        *self == RunStatus::Ok
    }
}

impl From<&str> for RunStatus {
    fn from(s: &str) -> RunStatus {
        match s {
            "ok" => RunStatus::Ok,
            "failed" => RunStatus::Failed,
            "not installed" => RunStatus::NotInstalled,
            "unsupported" => RunStatus::Unsupported,
            "skipped" => RunStatus::Skipped,
            "empty" => RunStatus::Empty,
            other => RunStatus::Other(other.to_string()),
        }
    }
}

impl From<String> for RunStatus {
    fn from(s: String) -> RunStatus {
        RunStatus::from(s.as_str())
    }
}

impl From<RunStatus> for String {
    fn from(s: RunStatus) -> String {
        match s {
            RunStatus::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for RunStatus {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for RunStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A run inside a study: which server, which workload, which repetition.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StudyRun {
    /// Workload name.
    pub workload: String,
    /// Server name.
    pub server: String,
    /// Repetition index, from 0 (the round this run belongs to).
    pub repetition: u32,
    /// Step label of a workload with steps (`vary`), None otherwise.
    #[serde(default)]
    pub step: Option<String>,
    /// Place of this server in its round's random order, from 0.
    #[serde(default)]
    pub position: u32,
    /// Which start of the server process this run measured, from 0: every server is
    /// restarted once per study, before its extra rounds (0 in older documents).
    #[serde(default)]
    pub start: u32,
    /// What became of the run: "ok", "failed", "not installed", "unsupported", "skipped", "empty".
    pub status: RunStatus,
    /// Why, when not ok.
    #[serde(default)]
    pub reason: String,
    /// A single run's result (load / users workloads).
    #[serde(default)]
    pub run: Option<RunResult>,
    /// A sweep's result (sweep workloads).
    #[serde(default)]
    pub sweep: Option<SweepResult>,
}

/// A whole `httplab study`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(remote = "Self")]
pub struct StudyResult {
    /// Always [`STUDY_SCHEMA`].
    pub schema: String,
    /// Writer.
    pub tool: ToolInfo,
    /// Study name.
    pub name: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// Every run, in order.
    pub runs: Vec<StudyRun>,
    /// Machine facts; the study's own in `facts.study` (each server's
    /// version among them).
    pub environment: Environment,
    /// How the study measured (absent in version 1 documents).
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// Statistics of every workload × step × server (version 2).
    #[serde(default)]
    pub cells: Vec<Cell>,
    /// One verdict per workload and step (version 2).
    #[serde(default)]
    pub verdicts: Vec<StudyVerdict>,
    /// Written answers to the study's questions (version 2).
    #[serde(default)]
    pub answers: Vec<Answer>,
}

/// The measurement protocol of a study: warm-up, window, repetitions in
/// rounds of random order, adaptive stopping and the significance level.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Protocol {
    /// Seed of the round orders and of the bootstrap.
    pub seed: u64,
    /// Warm-up discarded before every run's measurement window, s.
    pub warmup_s: f64,
    /// Measurement window of every window-based run, s.
    pub window_s: f64,
    /// Fewest repetitions (rounds) per cell.
    pub min_repetitions: u32,
    /// Most repetitions per cell.
    pub max_repetitions: u32,
    /// Version 2: the target half-width of the 95 % CI relative to the mean
    /// that stopped the rounds; 0 in version 3, whose rounds are given by the
    /// sequential design (`interim_rounds`, `budget_s`).
    #[serde(default)]
    pub precision: f64,
    /// Significance level of the comparisons (after Holm–Bonferroni).
    pub alpha: f64,
    /// δ, the smallest relative effect of interest: a winner is better by at
    /// least 1 + δ, "equivalent" means the ratio's interval lies inside
    /// [1/(1+δ), 1+δ] (version 3; in version 2 documents the smallest win).
    #[serde(default)]
    pub min_effect: f64,
    /// Rounds before the interim look of the sequential design (version 3;
    /// None: one look after all rounds).
    #[serde(default)]
    pub interim_rounds: Option<u32>,
    /// Seconds of extra rounds the sequential design could hand out (version 3).
    #[serde(default)]
    pub budget_s: Option<f64>,
    /// Seconds of extra rounds it did hand out (version 3).
    #[serde(default)]
    pub budget_used_s: Option<f64>,
    /// `--quick` was given (fewer repetitions, shorter windows).
    #[serde(default)]
    pub quick: bool,
}

/// The statistics of one server on one workload step over its repetitions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    /// Workload.
    pub workload: String,
    /// Step label, None for a workload without steps.
    pub step: Option<String>,
    /// Server.
    pub server: String,
    /// Successful repetitions.
    pub n: u32,
    /// The workload's metric: the one its verdict judges (written as its key;
    /// a key this version does not know is kept as [`MetricKey::Other`];
    /// empty in documents that had none).
    #[serde(default)]
    pub metric: MetricKey,
    /// Every metric's value per successful repetition, in round order, by metric (written as
    /// its key; a key this version does not know is kept as [`MetricKey::Other`]).
    #[serde(default)]
    pub values: std::collections::BTreeMap<MetricKey, Vec<f64>>,
    /// Why repetitions stopped.
    pub stop: CellStop,
    /// Relative half-width of the primary metric's CI when repetitions stopped.
    pub precision: Option<f64>,
    /// Runs of this cell the load generator limited (their figures are bounds).
    pub client_bound_runs: u32,
    /// True when any run of the cell was client-bound.
    pub client_bound: bool,
    /// Mean, median, 95 % CI and n of every metric, by metric (written as its
    /// key; a key this version does not know is kept as [`MetricKey::Other`]).
    pub metrics: std::collections::BTreeMap<MetricKey, Estimate>,
}

impl Cell {
    /// The estimate of `metric` (None when the cell has none).
    pub fn estimate(&self, metric: Metric) -> Option<&Estimate> {
        self.metrics.get(metric.key())
    }
}

/// Why a cell's repetitions stopped ([`Cell::stop`]). Written as the words
/// of [`CellStop::as_str`] (what study documents have always carried; older
/// studies also wrote "precision"); a word this version does not know is
/// read back as [`CellStop::Other`] and written again unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum CellStop {
    /// The cell ran the rounds the design gave it ("design").
    #[default]
    Design,
    /// The repetition cap was reached ("max-repetitions").
    MaxRepetitions,
    /// The server failed ("failed").
    Failed,
    /// The study was interrupted by Ctrl-C ("interrupted").
    Interrupted,
    /// Every run of the cell measured nothing ("nothing-measured").
    NothingMeasured,
    /// The target precision was reached ("precision", older studies).
    Precision,
    /// Any other word, as read.
    Other(String),
}

impl CellStop {
    /// The word written in results and tables.
    pub fn as_str(&self) -> &str {
        match self {
            CellStop::Design => "design",
            CellStop::MaxRepetitions => "max-repetitions",
            CellStop::Failed => "failed",
            CellStop::Interrupted => "interrupted",
            CellStop::NothingMeasured => "nothing-measured",
            CellStop::Precision => "precision",
            CellStop::Other(s) => s,
        }
    }
}

impl From<&str> for CellStop {
    fn from(s: &str) -> CellStop {
        match s {
            "design" => CellStop::Design,
            "max-repetitions" => CellStop::MaxRepetitions,
            "failed" => CellStop::Failed,
            "interrupted" => CellStop::Interrupted,
            "nothing-measured" => CellStop::NothingMeasured,
            "precision" => CellStop::Precision,
            other => CellStop::Other(other.to_string()),
        }
    }
}

impl From<String> for CellStop {
    fn from(s: String) -> CellStop {
        CellStop::from(s.as_str())
    }
}

impl From<CellStop> for String {
    fn from(s: CellStop) -> String {
        match s {
            CellStop::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for CellStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for CellStop {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for CellStop {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Mean, median, standard deviation and a 95 % confidence interval of a
/// metric over repetitions (computed by httplab-stats).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Estimate {
    /// Values.
    pub n: u32,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (n − 1).
    pub stddev: f64,
    /// Lower end of the 95 % CI of the mean (None when n < 2).
    pub ci_low: Option<f64>,
    /// Upper end of the 95 % CI of the mean (None when n < 2).
    pub ci_high: Option<f64>,
}

/// What a verdict decided (version 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictOutcome {
    /// One server is better by at least δ, significantly after the study-wide correction.
    Winner,
    /// The ratio's interval lies inside ±δ.
    Equivalent,
    /// Neither: the run cannot tell; see `detectable` and `rounds_to_settle`.
    Inconclusive,
}

impl VerdictOutcome {
    /// "winner", "equivalent", "inconclusive".
    pub fn word(self) -> &'static str {
        match self {
            VerdictOutcome::Winner => "winner",
            VerdictOutcome::Equivalent => "equivalent",
            VerdictOutcome::Inconclusive => "inconclusive",
        }
    }
}

/// Which comparison a verdict is (version 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictKind {
    /// A step's leader against its runner-up (and every other server).
    #[default]
    Step,
    /// A pair the study file names: a server against `[compare] baseline`,
    /// or a question's evidence.
    Pair,
}

/// The verdict of one comparison on one workload step and metric: who is
/// better, whether they are equivalent, or how large a difference the run
/// could have seen.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StudyVerdict {
    /// Workload.
    pub workload: String,
    /// Step label, None for a workload without steps.
    pub step: Option<String>,
    /// Metric compared (written as its key; a key this version does not know
    /// is kept as [`MetricKey::Other`]).
    pub metric: MetricKey,
    /// Which way the metric is better.
    pub better: Direction,
    /// Winner, equivalent or inconclusive (None in version 1 and 2
    /// documents: see [`StudyVerdict::outcome`]).
    #[serde(default)]
    pub outcome: Option<VerdictOutcome>,
    /// Step comparison or comparison with the baseline.
    #[serde(default)]
    pub kind: VerdictKind,
    /// Who measured the metric (absent in older documents).
    #[serde(default)]
    pub measured_by: Option<MeasuredBy>,
    /// The better server when the outcome is a winner.
    pub winner: Option<String>,
    /// First server: the step's leader (best geometric mean), or the server
    /// compared with the baseline.
    pub leader: Option<String>,
    /// Second server: the runner-up, or the baseline.
    pub runner_up: Option<String>,
    /// Geometric-mean ratio leader/runner-up in the better direction (> 1:
    /// the leader is better). Version 2: ratio of arithmetic means.
    pub ratio: Option<f64>,
    /// The decision's interval of `ratio`, at level `ratio_ci_level` when that
    /// is recorded: 1 − α/m over the study's m comparisons, the interim look's
    /// and the extra rounds combined (docs/statistics.md); every outcome is
    /// read off it. Without `ratio_ci_level`: a 95 % CI (version 3 before the
    /// level was recorded: t interval on paired log differences; version 2:
    /// bootstrap).
    pub ratio_ci: Option<[f64; 2]>,
    /// Confidence level of `ratio_ci` (absent: 95 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_ci_level: Option<f64>,
    /// Plain 90 % t interval of `ratio` over every round (version 3; before
    /// `ratio_ci_level` was recorded, the one the equivalence rule read).
    #[serde(default)]
    pub ratio_ci90: Option<[f64; 2]>,
    /// p value of a difference by the study's rule, adjusted over the study's
    /// family (≤ α exactly when `ratio_ci` leaves 1 out; earlier version 3
    /// documents: alpha spending over the looks and Holm; version 2: Holm
    /// within the step).
    pub p_value: Option<f64>,
    /// p value of equivalence (two one-sided tests), adjusted like `p_value`
    /// when `ratio_ci_level` is recorded; version 3.
    #[serde(default)]
    pub p_equivalent: Option<f64>,
    /// Whether there is a winner.
    pub significant: bool,
    /// Repetitions per server.
    pub n: std::collections::BTreeMap<String, u32>,
    /// Rounds paired between the two servers (version 3).
    #[serde(default)]
    pub pairs: u32,
    /// Servers whose figure is a client-bound bound.
    #[serde(default)]
    pub client_bound: Vec<String>,
    /// Smallest effect (ratio − 1) the run would have found with 80 % power
    /// (version 3).
    #[serde(default)]
    pub detectable: Option<f64>,
    /// Rounds that would settle the comparison at ±δ (version 3; with
    /// `ratio_ci_level`: rounds of a study with one look).
    #[serde(default)]
    pub rounds_to_settle: Option<u32>,
    /// δ in force (version 3).
    #[serde(default)]
    pub delta: Option<f64>,
    /// Where the spread of the compared log ratio lives, for steps measured in slices
    /// (absent otherwise and in older documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseComponents>,
    /// One sentence saying all of the above.
    pub note: String,
}

/// The spread of a comparison's log ratio split into its parts: between the slices of one
/// round (seconds apart), between rounds of one start of the servers, and between the starts
/// (each server is restarted once, before the extra rounds), estimated by one-way random
/// effects on the paired log ratios, level by level.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct NoiseComponents {
    /// Rounds with every slice of both servers.
    pub rounds: u32,
    /// Slices per round.
    pub slices: u32,
    /// Standard deviation of one slice's log ratio around its round's mean (absent with one
    /// slice per round: it is then part of `between_rounds`).
    #[serde(default)]
    pub between_slices: Option<f64>,
    /// Standard deviation of a round's true log ratio from round to round within one start
    /// (what more slices per round cannot remove).
    pub between_rounds: f64,
    /// Starts of the servers the rounds came from (0 in older documents).
    #[serde(default)]
    pub starts: u32,
    /// Standard deviation of the true log ratio from one start of the servers to the next
    /// (what more rounds of one start cannot remove); absent with one start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_starts: Option<f64>,
    /// p value of "every start has the same true ratio" (one-way F test on the round means);
    /// absent with one start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_p: Option<f64>,
    /// The later start's rounds ran another window (the budget chose it), so the starts are
    /// not told apart: `between_starts` and `starts_p` are absent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub window_changed: bool,
}

impl StudyVerdict {
    /// The outcome; for version 1 and 2 documents, a winner when one was
    /// named and inconclusive otherwise (they had no equivalence rule).
    pub fn outcome(&self) -> VerdictOutcome {
        self.outcome.unwrap_or(if self.winner.is_some() {
            VerdictOutcome::Winner
        } else {
            VerdictOutcome::Inconclusive
        })
    }
}

/// A written answer to one of a study's questions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Answer {
    /// The question.
    pub question: String,
    /// The answer with its evidence and uncertainty.
    pub answer: String,
    /// What the seed concluded, and whether this run agrees.
    pub versus_seed: String,
}

/// Any result document, told apart by its `schema` tag.
#[derive(Debug, Clone)]
pub enum Document {
    /// A single run.
    Run(Box<RunResult>),
    /// A sweep.
    Sweep(Box<SweepResult>),
    /// A study.
    Study(Box<StudyResult>),
}

impl Document {
    /// Parses any httplab result document from JSON text.
    pub fn from_json(text: &str) -> Result<Document, Box<dyn std::error::Error + Send + Sync>> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        let schema = v
            .get("schema")
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string();
        if check_schema(&schema, RUN_SCHEMA).is_ok() {
            Ok(Document::Run(Box::new(serde_json::from_value(v)?)))
        } else if check_schema(&schema, SWEEP_SCHEMA).is_ok() {
            Ok(Document::Sweep(Box::new(serde_json::from_value(v)?)))
        } else if check_schema(&schema, STUDY_SCHEMA).is_ok()
            || check_schema(&schema, STUDY_SCHEMA_V2).is_ok()
            || check_schema(&schema, STUDY_SCHEMA_V1).is_ok()
        {
            Ok(Document::Study(Box::new(serde_json::from_value(v)?)))
        } else {
            Err(Box::new(ModelError::Schema {
                found: schema,
                expected: format!(
                    "{RUN_SCHEMA}, {SWEEP_SCHEMA}, {STUDY_SCHEMA}, {STUDY_SCHEMA_V2} or {STUDY_SCHEMA_V1}"
                ),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_statuses_read_and_write_their_words() {
        for w in [
            "ok",
            "failed",
            "not installed",
            "unsupported",
            "skipped",
            "empty",
            "queued",
        ] {
            let s: RunStatus = serde_json::from_str(&format!("\"{w}\"")).unwrap();
            assert_eq!(s, w);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{w}\""));
        }
        assert_eq!(RunStatus::from("not installed"), RunStatus::NotInstalled);
        assert_eq!(RunStatus::from("unsupported"), RunStatus::Unsupported);
        assert_eq!(RunStatus::from("queued"), RunStatus::Other("queued".into()));
    }

    #[test]
    fn cell_stops_read_and_write_their_words() {
        for (w, want) in [
            ("design", CellStop::Design),
            ("max-repetitions", CellStop::MaxRepetitions),
            ("failed", CellStop::Failed),
            ("interrupted", CellStop::Interrupted),
            ("nothing-measured", CellStop::NothingMeasured),
            ("precision", CellStop::Precision),
            ("target-reached", CellStop::Other("target-reached".into())),
            ("", CellStop::Other(String::new())),
        ] {
            let s: CellStop = serde_json::from_str(&format!("\"{w}\"")).unwrap();
            assert_eq!(s, want);
            assert_eq!(s, w);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{w}\""));
        }
    }

    #[test]
    fn summary_basic() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.count, 4);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.median, 2.5);
        assert!((s.avg - 2.5).abs() < 1e-12);
        assert!((s.stddev - 1.118_033_988_7).abs() < 1e-9);
        assert_eq!(Summary::of(&[]), Summary::default());
    }

    #[test]
    fn histogram_round_trips() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in [100u64, 200, 300, 5_000, 1_000_000] {
            h.record(v).unwrap();
        }
        let l = Latency::from_histogram(&h);
        assert_eq!(l.count, 5);
        let back = l.histogram().unwrap().unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        let json = serde_json::to_string(&l).unwrap();
        let l2: Latency = serde_json::from_str(&json).unwrap();
        assert_eq!(l, l2);
    }

    #[test]
    fn histogram_header_lengths_are_checked_before_allocating() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        h.record(250).unwrap();
        let l = Latency::from_histogram(&h);
        let deflated = base64::engine::general_purpose::STANDARD
            .decode(&l.hdr)
            .unwrap();
        let mut plain = hdr_v2_bytes(&deflated).unwrap();
        assert_eq!(&plain[..4], &[0x1c, 0x84, 0x93, 0x13]);
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        // The plain encoding reads back as the same histogram.
        let plain_doc = Latency {
            hdr: b64(&plain),
            ..l.clone()
        };
        assert_eq!(plain_doc.histogram().unwrap().unwrap(), h);
        // A payload length of 4 GiB in either header is refused, not allocated.
        plain[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let big = Latency {
            hdr: b64(&plain),
            ..l.clone()
        };
        assert!(big.histogram().is_err());
        let mut outer = deflated.clone();
        outer[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let big = Latency {
            hdr: b64(&outer),
            ..l.clone()
        };
        assert!(big.histogram().is_err());
        // Compressed with a lying inner header.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, &plain).unwrap();
        let inner = z.finish().unwrap();
        let mut doc = vec![0x1c, 0x84, 0x93, 0x14];
        doc.extend_from_slice(&(inner.len() as u32).to_be_bytes());
        doc.extend_from_slice(&inner);
        let lying = Latency {
            hdr: b64(&doc),
            ..l.clone()
        };
        assert!(lying.histogram().is_err());
        // Garbage and truncation are errors too.
        for bad in [
            &b"xx"[..],
            &[0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 9][..],
            &[0; 40][..],
        ] {
            let bad = Latency {
                hdr: b64(bad),
                ..l.clone()
            };
            assert!(bad.histogram().is_err());
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert_eq!(&t[4..5], "-");
    }

    #[test]
    fn schema_versions() {
        assert!(check_schema("httplab.run/1", RUN_SCHEMA).is_ok());
        assert!(check_schema("httplab.run/1.3", RUN_SCHEMA).is_ok());
        assert!(check_schema("httplab.run/2", RUN_SCHEMA).is_err());
        assert!(check_schema("httplab.sweep/1", RUN_SCHEMA).is_err());
        assert!(check_schema("garbage", RUN_SCHEMA).is_err());
    }

    #[test]
    fn older_run_documents_still_read() {
        // A run written before warmup_s, latency.session and the self-check's
        // ceiling, utilization and reasons existed.
        let r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        let mut v = serde_json::to_value(&r).unwrap();
        v["config"].as_object_mut().unwrap().remove("warmup_s");
        v["latency"].as_object_mut().unwrap().remove("session");
        let sc = v["self_check"].as_object_mut().unwrap();
        for k in ["client_ceiling", "client_utilization", "reasons"] {
            sc.remove(k);
        }
        let back: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(back.config.warmup_s, 0.0);
        assert_eq!(back.latency.session.count, 0);
        assert_eq!(back.self_check.client_ceiling, None);
        assert!(back.self_check.reasons.is_empty());
    }

    #[test]
    fn the_http3_block_is_optional_and_its_fields_default() {
        let r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        // Written before HTTP/3: no block, and none is written back.
        let v = serde_json::to_value(&r).unwrap();
        assert!(v.get("http3").is_none());
        let back: RunResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back.http3, None);
        // A block with only some fields reads, the rest default.
        let mut v = v;
        v["http3"] = serde_json::json!({
            "connections": 2,
            "errors": {"closed_by_peer": {"H3_INTERNAL_ERROR": 1}}
        });
        let back: RunResult = serde_json::from_value(v).unwrap();
        let h = back.http3.expect("the block");
        assert_eq!(h.connections, 2);
        assert_eq!(h.errors.closed_by_peer.get("H3_INTERNAL_ERROR"), Some(&1));
        assert_eq!(h.handshake.count, 0);
        assert_eq!(h.first_error, None);
        // And it round-trips.
        let full = RunResult {
            http3: Some(Http3Summary {
                handshakes_0rtt: 3,
                ..Default::default()
            }),
            ..r
        };
        let text = serde_json::to_string(&full).unwrap();
        assert_eq!(serde_json::from_str::<RunResult>(&text).unwrap(), full);
    }

    #[test]
    fn repeats_are_optional_and_round_trip() {
        let r = RunResult {
            schema: RUN_SCHEMA.into(),
            label: "one".into(),
            ..Default::default()
        };
        // A single run writes no `repeats` key.
        let v = serde_json::to_value(&r).unwrap();
        assert!(v.get("repeats").is_none());
        assert_eq!(r.run_count(), 1);
        // Three runs: run 1 at the top level, runs 2 and 3 under `repeats`.
        let mut three = r.clone();
        for label in ["two", "three"] {
            three.repeats.push(RunResult {
                label: label.into(),
                ..r.clone()
            });
        }
        let text = serde_json::to_string(&three).unwrap();
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, three);
        let labels: Vec<&str> = back.runs().iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["one", "two", "three"]);
        // A reader that knows nothing of repeats (here: a struct without the
        // field, as serde ignores unknown keys) still reads run 1.
        #[derive(Deserialize)]
        struct Old {
            label: String,
        }
        let old: Old = serde_json::from_str(&text).unwrap();
        assert_eq!(old.label, "one");
    }

    #[test]
    fn calls_are_replies_and_errors() {
        let mut r = RunResult::default();
        r.totals.replies = 990;
        r.errors.total = 10;
        assert_eq!(r.calls(), 1000);
        r.errors.total = u64::MAX;
        assert_eq!(r.calls(), u64::MAX);
    }

    #[test]
    fn document_dispatch() {
        let r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(matches!(
            Document::from_json(&text).unwrap(),
            Document::Run(_)
        ));
        assert!(Document::from_json("{\"schema\":\"x/1\"}").is_err());
        // Version 1 studies still read; their new fields are empty.
        let v1 = r#"{"schema":"httplab.study/1","tool":{"name":"httplab","version":"0.1.0"},
            "name":"s","started_at":"2026-11-22T00:00:00Z","runs":[],
            "environment":{"kernel":"","cpu_model":"","cores":2,"memory_bytes":0}}"#;
        match Document::from_json(v1).unwrap() {
            Document::Study(s) => {
                assert!(s.verdicts.is_empty() && s.cells.is_empty() && s.protocol.is_none())
            }
            _ => panic!("not a study"),
        }
    }

    #[test]
    fn study_metric_keys_are_typed_and_an_unknown_one_round_trips_byte_identically() {
        let est = Estimate {
            n: 2,
            mean: 1.5,
            median: 1.5,
            stddev: 0.5,
            ci_low: Some(1.0),
            ci_high: Some(2.0),
        };
        let cell = Cell {
            workload: "w".into(),
            server: "s".into(),
            n: 2,
            metric: Metric::ReplyRate.into(),
            values: [(Metric::ReplyRate.into(), vec![1.0, 2.0])].into(),
            metrics: [(Metric::P50Ms.into(), est), (Metric::ReplyRate.into(), est)].into(),
            ..Cell::default()
        };
        let verdict = StudyVerdict {
            workload: "w".into(),
            metric: Metric::ReplyRate.into(),
            ..StudyVerdict::default()
        };
        let doc = StudyResult {
            schema: STUDY_SCHEMA.into(),
            cells: vec![cell],
            verdicts: vec![verdict],
            ..StudyResult::default()
        };
        let text = serde_json::to_string(&doc).unwrap();
        let back: StudyResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.cells[0].metric, Metric::ReplyRate);
        assert_eq!(back.cells[0].estimate(Metric::P50Ms).map(|e| e.n), Some(2));
        assert_eq!(back.verdicts[0].metric.metric(), Some(Metric::ReplyRate));
        // A newer version's metric, everywhere a study names one.
        let newer = text.replace("\"reply_rate\"", "\"reply_rate_v9\"");
        assert_eq!(newer.matches("reply_rate_v9").count(), 4, "{newer}");
        let read: StudyResult = serde_json::from_str(&newer).unwrap();
        let c = &read.cells[0];
        assert_eq!(c.metric, MetricKey::Other("reply_rate_v9".into()));
        assert!(c.metrics.contains_key("reply_rate_v9") && c.values.contains_key("reply_rate_v9"));
        assert_eq!(read.verdicts[0].metric.metric(), None);
        assert_eq!(serde_json::to_string(&read).unwrap(), newer);
        // A document without the cell's metric reads it as the empty word and
        // writes that word back.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut v = v;
        v["cells"][0].as_object_mut().unwrap().remove("metric");
        let old: StudyResult = serde_json::from_value(v).unwrap();
        assert_eq!(old.cells[0].metric, "");
    }
}
