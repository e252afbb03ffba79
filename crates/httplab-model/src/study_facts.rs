//! The facts a study records about each of its runs ([`StudyRunFacts`],
//! `config.facts.study`) and about the whole study
//! ([`StudyEnvironmentFacts`], `environment.facts.study`), each with its
//! type, and the words of the study file they are made of ([`HttpProtocol`],
//! [`VaryParam`], [`IdleSend`]).
//!
//! Before `httplab.study/3.2` these were words in the `extra` maps
//! (`config.extra["study_step"]`, `environment.extra["version: nginx"]`).
//! Reading a study document moves every such word whose value parses into
//! its field ([`StudyRunFacts::adopt_legacy`],
//! [`StudyEnvironmentFacts::adopt_legacy`]); words the study never wrote,
//! and values that do not parse, stay in `extra` and are written back
//! unchanged.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::legacy::{adopt, num, text, Extra};
use crate::shard::ClientShard;

/// The HTTP version a workload's client speaks (`protocol` in a study
/// file's workload).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub enum HttpProtocol {
    /// HTTP/1.1 (the default).
    #[default]
    #[serde(rename = "h1")]
    H1,
    /// HTTP/2: over TLS by ALPN `h2`, in a cleartext study h2c by prior
    /// knowledge.
    #[serde(rename = "h2")]
    H2,
    /// HTTP/3 (over QUIC, so only in a TLS study): `httplab load --http3`.
    #[serde(rename = "h3")]
    H3,
}

impl HttpProtocol {
    /// Every protocol, in order.
    pub const ALL: [HttpProtocol; 3] = [HttpProtocol::H1, HttpProtocol::H2, HttpProtocol::H3];

    /// Name as written in study files (`h1`, `h2`, `h3`).
    pub fn as_str(self) -> &'static str {
        match self {
            HttpProtocol::H1 => "h1",
            HttpProtocol::H2 => "h2",
            HttpProtocol::H3 => "h3",
        }
    }

    /// Name as the report writes it (`HTTP/1.1`, `HTTP/2`, `HTTP/3`).
    pub fn label(self) -> &'static str {
        match self {
            HttpProtocol::H1 => "HTTP/1.1",
            HttpProtocol::H2 => "HTTP/2",
            HttpProtocol::H3 => "HTTP/3",
        }
    }
}

impl fmt::Display for HttpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parameter a workload can vary across steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VaryParam {
    /// Closed-loop users.
    Users,
    /// Open-loop rate.
    Rate,
    /// Requests per connection.
    NumCalls,
    /// Connections.
    NumConns,
    /// Pipeline depth.
    Pipeline,
    /// Target (`/path`, `set:NAME`, `page:NAME`).
    Target,
    /// idle: connections held open while the client measures.
    IdleConns,
}

impl VaryParam {
    /// Every parameter.
    pub const ALL: [VaryParam; 7] = [
        VaryParam::Users,
        VaryParam::Rate,
        VaryParam::NumCalls,
        VaryParam::NumConns,
        VaryParam::Pipeline,
        VaryParam::Target,
        VaryParam::IdleConns,
    ];

    /// Name as written in study files.
    pub fn as_str(self) -> &'static str {
        match self {
            VaryParam::Users => "users",
            VaryParam::Rate => "rate",
            VaryParam::NumCalls => "num_calls",
            VaryParam::NumConns => "num_conns",
            VaryParam::Pipeline => "pipeline",
            VaryParam::Target => "target",
            VaryParam::IdleConns => "idle_conns",
        }
    }

    /// The parameter named `s` as study files write it.
    pub fn from_name(s: &str) -> Option<VaryParam> {
        VaryParam::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// The parameter a run's workload varies as a result document holds it
/// ([`StudyRunFacts::param`]): a [`VaryParam`], or a word this version does
/// not know (a newer httplab's), kept as [`StepParam::Other`] and written
/// back unchanged. A study file's `vary.param` stays a [`VaryParam`]: an
/// unknown word there is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StepParam {
    /// A parameter this version knows.
    Known(VaryParam),
    /// Any other word, as read.
    Other(String),
}

impl StepParam {
    /// The word written.
    pub fn as_str(&self) -> &str {
        match self {
            StepParam::Known(p) => p.as_str(),
            StepParam::Other(s) => s,
        }
    }

    /// The parameter, when this version knows the word.
    pub fn known(&self) -> Option<VaryParam> {
        match self {
            StepParam::Known(p) => Some(*p),
            StepParam::Other(_) => None,
        }
    }
}

impl From<VaryParam> for StepParam {
    fn from(p: VaryParam) -> StepParam {
        StepParam::Known(p)
    }
}

impl From<String> for StepParam {
    fn from(s: String) -> StepParam {
        VaryParam::from_name(&s).map_or(StepParam::Other(s), StepParam::Known)
    }
}

impl From<StepParam> for String {
    fn from(p: StepParam) -> String {
        match p {
            StepParam::Known(p) => p.as_str().to_string(),
            StepParam::Other(s) => s,
        }
    }
}

impl fmt::Display for StepParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What each held connection of an idle workload sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleSend {
    /// Connected, nothing sent.
    #[default]
    Silent,
    /// An unfinished request line (`GET / HTTP/1.1` without its CRLF), then nothing.
    Partial,
}

impl IdleSend {
    /// Name as written in study files.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleSend::Silent => "silent",
            IdleSend::Partial => "partial",
        }
    }

    /// The word `s` as study files write it.
    pub fn from_name(s: &str) -> Option<IdleSend> {
        [IdleSend::Silent, IdleSend::Partial]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

/// What a study records about one of its load runs (`config.facts.study`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StudyRunFacts {
    /// The parameter the run's workload varies (a workload with steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<StepParam>,
    /// The step's label: the varied parameter's value (a workload with steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What ran the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<LoadDriver>,
    /// Why the run has no client ceiling, when it has none by design.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_ceiling: Option<ClientCeiling>,
    /// The packet loss on loopback during the run (`loss_pct`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_loss: Option<PacketLoss>,
    /// An idle workload's held connections and the server's resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleFacts>,
}

impl StudyRunFacts {
    /// True when no fact is recorded.
    pub fn is_empty(&self) -> bool {
        *self == StudyRunFacts::default()
    }
}

/// What ran a study's load ([`StudyRunFacts::driver`]). A word this
/// version does not know is read as [`LoadDriver::Other`] and written back
/// unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum LoadDriver {
    /// `httplab load`, in process ("httplab-load").
    HttplabLoad,
    /// Any other word, as read.
    Other(String),
}

impl LoadDriver {
    /// The word documents write.
    pub fn as_str(&self) -> &str {
        match self {
            LoadDriver::HttplabLoad => "httplab-load",
            LoadDriver::Other(s) => s,
        }
    }
}

impl From<String> for LoadDriver {
    fn from(s: String) -> LoadDriver {
        if s == "httplab-load" {
            LoadDriver::HttplabLoad
        } else {
            LoadDriver::Other(s)
        }
    }
}

impl From<LoadDriver> for String {
    fn from(d: LoadDriver) -> String {
        d.as_str().to_string()
    }
}

/// Why a run has no client ceiling ([`StudyRunFacts::client_ceiling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientCeiling {
    /// Unknown for this protocol: the client calibration measures HTTP/1.1
    /// against an HTTP/1.1 sink, so a run of another protocol was not
    /// checked for being client-bound.
    Unknown(HttpProtocol),
}

impl ClientCeiling {
    /// The reason in words (what `config.extra["client_ceiling"]` held
    /// before `httplab.study/3.2`).
    pub fn reason(self) -> String {
        match self {
            ClientCeiling::Unknown(p) => format!(
                "unknown: the client calibration measures HTTP/1.1 against an HTTP/1.1 sink, not {}, so this run was not checked for being client-bound",
                p.label()
            ),
        }
    }
}

/// The packet loss on loopback during a run ([`StudyRunFacts::packet_loss`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketLoss {
    /// Packets dropped, percent.
    pub pct: f64,
    /// How they were dropped (absent when an older document's words name
    /// no method this version knows: those stay in `extra`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<LossMethod>,
}

/// How a study drops packets ([`PacketLoss::method`]). Written as the word
/// of [`LossMethod::as_str`]; a word this version does not know is read as
/// [`LossMethod::Other`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum LossMethod {
    /// nftables, scoped to the measured server's port on `lo` ("nftables").
    Nftables,
    /// tc netem on every packet of `lo` ("netem").
    Netem,
    /// Any other word, as read.
    Other(String),
}

impl LossMethod {
    /// The word documents write.
    pub fn as_str(&self) -> &str {
        match self {
            LossMethod::Nftables => "nftables",
            LossMethod::Netem => "netem",
            LossMethod::Other(s) => s,
        }
    }

    /// How, in words (an unknown method: its word).
    pub fn describe(&self) -> &str {
        match self {
            LossMethod::Nftables => {
                "nftables: TCP and UDP packets to and from the server's port on lo"
            }
            LossMethod::Netem => "tc netem: every packet on lo",
            LossMethod::Other(s) => s,
        }
    }

    /// The method an older document described in words (only the known ones).
    fn from_words(s: &str) -> Option<LossMethod> {
        [LossMethod::Nftables, LossMethod::Netem]
            .into_iter()
            .find(|m| m.describe() == s)
    }
}

impl From<String> for LossMethod {
    fn from(s: String) -> LossMethod {
        match s.as_str() {
            "nftables" => LossMethod::Nftables,
            "netem" => LossMethod::Netem,
            _ => LossMethod::Other(s),
        }
    }
}

impl From<LossMethod> for String {
    fn from(m: LossMethod) -> String {
        m.as_str().to_string()
    }
}

/// An idle workload's run: the census of the held connections at the end of
/// the run, the server's descriptors and memory before and during the hold,
/// and what the reader must know ([`StudyRunFacts::idle`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IdleFacts {
    /// Idle connections asked for.
    pub conns: u64,
    /// What each held connection sent.
    pub send: IdleSend,
    /// Connected by the end of the opening phase.
    pub connected: u64,
    /// Still in setup at the end of the opening phase (SYNs unanswered).
    pub pending: u64,
    /// Refused, reset or otherwise failed while connecting.
    pub failed: u64,
    /// Never attempted (the opening phase ended first).
    pub not_attempted: u64,
    /// Still open at the end of the run (as seen from the client).
    pub open_at_end: u64,
    /// Closed by the server (FIN) by the end of the run.
    pub closed_by_server: u64,
    /// Reset by the server by the end of the run.
    pub reset_by_server: u64,
    /// The server sent bytes on them (e.g. a 408 or 400 response).
    pub answered_by_server: u64,
    /// Seconds the opening phase took (to the millisecond).
    pub open_s: f64,
    /// Failure classes while connecting, with counts (when any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<String>,
    /// The server's descriptors before the hold.
    pub server_fds_before: u64,
    /// The server's most descriptors during the run.
    pub server_fds_during: u64,
    /// The server's resident memory before the hold, bytes.
    pub server_rss_before_bytes: u64,
    /// The server's most resident memory during the run, bytes.
    pub server_rss_during_bytes: u64,
    /// Resident memory added per held connection, whole bytes (when any
    /// connection was held and memory was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_per_conn_bytes: Option<f64>,
    /// What the reader must know about the run (when anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl IdleFacts {
    /// Descriptors the server added while holding (during − before).
    pub fn fds_added(&self) -> f64 {
        self.server_fds_during as f64 - self.server_fds_before as f64
    }
}

/// What a study records about the whole study (`environment.facts.study`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StudyEnvironmentFacts {
    /// The study ran over TLS: its certificate, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// The TLS versions and cipher suites its runs negotiated, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_seen: Option<String>,
    /// Why capacity under a CPU quota was measured without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<String>,
    /// The cores the servers were pinned to (empty: any core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<Vec<u32>>,
    /// The cores the load generator was pinned to (empty: any core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cores: Option<Vec<u32>>,
    /// The corpus the servers served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corpus: Option<CorpusFacts>,
    /// Notes on pinning, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Each server's version (or why it is not available), by server name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
    /// Why a step's extra rounds had another window than its first ones, by
    /// the step's name (`workload [step]`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_rounds: BTreeMap<String, String>,
    /// What each server's TLS readiness probe negotiated, by server name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_of: BTreeMap<String, String>,
    /// Where server CPU time was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_source: Option<ServerCpuSource>,
    /// Wall seconds of the whole study (to a tenth).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study_seconds: Option<f64>,
    /// A sharded study's `I/N`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ClientShard>,
    /// A sharded study's run id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// The corpus a study generated ([`StudyEnvironmentFacts::corpus`]).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CorpusFacts {
    /// Files.
    pub files: u64,
    /// Bytes of all files.
    pub bytes: u64,
}

/// Where a study read its servers' CPU time
/// ([`StudyEnvironmentFacts::server_cpu_source`]). Written as the word of
/// [`ServerCpuSource::as_str`]; a word this version does not know is read
/// as [`ServerCpuSource::Other`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ServerCpuSource {
    /// cgroup v1 `cpuacct.usage` ("cgroup_v1").
    CgroupV1,
    /// cgroup v2 `cpu.stat` ("cgroup_v2").
    CgroupV2,
    /// `/proc/PID/schedstat` of live processes and reaped children's ticks
    /// ("schedstat").
    Schedstat,
    /// Any other word, as read.
    Other(String),
}

impl ServerCpuSource {
    /// The word documents write.
    pub fn as_str(&self) -> &str {
        match self {
            ServerCpuSource::CgroupV1 => "cgroup_v1",
            ServerCpuSource::CgroupV2 => "cgroup_v2",
            ServerCpuSource::Schedstat => "schedstat",
            ServerCpuSource::Other(s) => s,
        }
    }

    /// Short name, as reports write it (an unknown source: its word).
    pub fn name(&self) -> &str {
        match self {
            ServerCpuSource::CgroupV1 => "cgroup cpuacct (ns)",
            ServerCpuSource::CgroupV2 => "cgroup v2 cpu.stat (µs)",
            ServerCpuSource::Schedstat => {
                "schedstat (ns, live processes) + reaped children (ticks)"
            }
            ServerCpuSource::Other(s) => s,
        }
    }

    /// The source an older document named in words (only the known ones).
    fn from_name(s: &str) -> Option<ServerCpuSource> {
        [
            ServerCpuSource::CgroupV1,
            ServerCpuSource::CgroupV2,
            ServerCpuSource::Schedstat,
        ]
        .into_iter()
        .find(|x| x.name() == s)
    }
}

impl From<String> for ServerCpuSource {
    fn from(s: String) -> ServerCpuSource {
        match s.as_str() {
            "cgroup_v1" => ServerCpuSource::CgroupV1,
            "cgroup_v2" => ServerCpuSource::CgroupV2,
            "schedstat" => ServerCpuSource::Schedstat,
            _ => ServerCpuSource::Other(s),
        }
    }
}

impl From<ServerCpuSource> for String {
    fn from(c: ServerCpuSource) -> String {
        c.as_str().to_string()
    }
}

/// `core(s) 0,1` for `[0, 1]`, `any core` for none.
pub fn cores_text(c: &[u32]) -> String {
    if c.is_empty() {
        "any core".into()
    } else {
        format!(
            "core(s) {}",
            c.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

impl StudyEnvironmentFacts {
    /// True when no fact is recorded.
    pub fn is_empty(&self) -> bool {
        *self == StudyEnvironmentFacts::default()
    }

    /// The facts as (name, value) words, for a report's environment list:
    /// the names and values `environment.extra` held before
    /// `httplab.study/3.2`, sorted by name.
    pub fn entries(&self) -> Vec<(String, String)> {
        let mut v: BTreeMap<String, String> = BTreeMap::new();
        let mut put = |k: String, x: String| {
            v.insert(k, x);
        };
        if let Some(t) = &self.tls {
            put("tls".into(), t.clone());
        }
        if let Some(t) = &self.tls_seen {
            put("tls_seen".into(), t.clone());
        }
        if let Some(t) = &self.cpu_quota {
            put("cpu_quota".into(), t.clone());
        }
        if let Some(c) = &self.server_cores {
            put("server_cores".into(), cores_text(c));
        }
        if let Some(c) = &self.client_cores {
            put("client_cores".into(), cores_text(c));
        }
        if let Some(c) = &self.corpus {
            put(
                "corpus".into(),
                format!("{} files, {}", c.files, human_bytes(c.bytes)),
            );
        }
        for (i, n) in self.notes.iter().enumerate() {
            put(format!("note_{i}"), n.clone());
        }
        for (s, x) in &self.versions {
            put(format!("version: {s}"), x.clone());
        }
        for (s, x) in &self.extra_rounds {
            put(format!("extra rounds: {s}"), x.clone());
        }
        for (s, x) in &self.tls_of {
            put(format!("tls: {s}"), x.clone());
        }
        if let Some(c) = &self.server_cpu_source {
            put("server_cpu_source".into(), c.name().into());
        }
        if let Some(s) = self.study_seconds {
            put("study_seconds".into(), format!("{s:.1}"));
        }
        if let Some(s) = self.shard {
            put("client_shard".into(), s.to_string());
        }
        if let Some(r) = &self.run_id {
            put("run_id".into(), r.clone());
        }
        v.into_iter().collect()
    }
}

/// Bytes in the study's words: `340 B`, `1.5 KB`, `2.0 MB`, `1.25 GB`
/// (powers of 1000).
pub fn human_bytes(b: u64) -> String {
    let v = b as f64;
    if b < 1000 {
        format!("{b} B")
    } else if v < 1e6 {
        format!("{:.1} KB", v / 1e3)
    } else if v < 1e9 {
        format!("{:.1} MB", v / 1e6)
    } else {
        format!("{:.2} GB", v / 1e9)
    }
}

// The compatibility reader: the words of `httplab.study/3.1` and older.

/// Moves every `extra["{prefix}{name}"]` into `map[name]` (a map keyed by
/// data: server or step names), unless `map` already has that name.
fn adopt_map(map: &mut BTreeMap<String, String>, extra: &mut Extra, prefix: &str) {
    let keys: Vec<String> = extra
        .keys()
        .filter(|k| k.starts_with(prefix) && k.len() > prefix.len())
        .cloned()
        .collect();
    for k in keys {
        let name = &k[prefix.len()..];
        if map.contains_key(name) {
            continue;
        }
        if let Some(v) = extra.remove(&k) {
            map.insert(name.to_string(), v);
        }
    }
}

/// `any core` or `core(s) 0,1`.
fn parse_cores(s: &str) -> Option<Vec<u32>> {
    if s == "any core" {
        return Some(Vec::new());
    }
    s.strip_prefix("core(s) ")?
        .split(',')
        .map(num)
        .collect::<Option<Vec<u32>>>()
}

/// `12 files, 340 B`: only a byte count written exactly (below 1000 bytes);
/// a rounded one (`1.5 MB`) is not lifted, so no count is made up.
fn parse_corpus(s: &str) -> Option<CorpusFacts> {
    let (files, size) = s.split_once(" files, ")?;
    let bytes: u64 = num(size.strip_suffix(" B")?)?;
    (bytes < 1000).then_some(CorpusFacts {
        files: num(files)?,
        bytes,
    })
}

const IDLE: &str = "idle_";

fn idle_word(extra: &Extra, k: &str) -> Option<String> {
    extra.get(&format!("{IDLE}{k}")).cloned()
}

/// The idle census of an older document: every count it always wrote
/// parses, or nothing is lifted.
fn adopt_idle(slot: &mut Option<IdleFacts>, x: &mut Extra) {
    if slot.is_some() || !x.contains_key("idle_conns") {
        return;
    }
    let n = |k: &str| idle_word(x, k).and_then(|v| num::<u64>(&v));
    let parsed = (|| {
        Some(IdleFacts {
            conns: n("conns")?,
            send: IdleSend::from_name(&idle_word(x, "send")?)?,
            connected: n("connected")?,
            pending: n("pending")?,
            failed: n("failed")?,
            not_attempted: n("not_attempted")?,
            open_at_end: n("open_at_end")?,
            closed_by_server: n("closed_by_server")?,
            reset_by_server: n("reset_by_server")?,
            answered_by_server: n("answered_by_server")?,
            open_s: num(&idle_word(x, "open_s")?)?,
            errors: None,
            server_fds_before: n("server_fds_before")?,
            server_fds_during: n("server_fds_during")?,
            server_rss_before_bytes: n("server_rss_before_bytes")?,
            server_rss_during_bytes: n("server_rss_during_bytes")?,
            server_rss_per_conn_bytes: None,
            note: None,
        })
    })();
    let Some(mut f) = parsed else { return };
    for k in [
        "conns",
        "send",
        "connected",
        "pending",
        "failed",
        "not_attempted",
        "open_at_end",
        "closed_by_server",
        "reset_by_server",
        "answered_by_server",
        "open_s",
        "server_fds_before",
        "server_fds_during",
        "server_rss_before_bytes",
        "server_rss_during_bytes",
    ] {
        x.remove(&format!("{IDLE}{k}"));
    }
    adopt(&mut f.errors, x, "idle_errors", text);
    adopt(
        &mut f.server_rss_per_conn_bytes,
        x,
        "idle_server_rss_per_conn_bytes",
        num,
    );
    adopt(&mut f.note, x, "idle_note", text);
    *slot = Some(f);
}

impl StudyRunFacts {
    /// Moves the facts an older study document kept as words in a run's
    /// `config.extra` (`study_param`, `study_step`, `driver`,
    /// `client_ceiling`, `packet_loss_pct` with `packet_loss_method`, the
    /// `idle_` words) into their fields. A word whose value does not parse,
    /// and every word the study does not write, stays in `extra`.
    pub fn adopt_legacy(&mut self, x: &mut Extra) {
        adopt(&mut self.param, x, "study_param", |s| {
            VaryParam::from_name(s).map(StepParam::Known)
        });
        adopt(&mut self.step, x, "study_step", text);
        adopt(&mut self.driver, x, "driver", |s| {
            (s == LoadDriver::HttplabLoad.as_str()).then_some(LoadDriver::HttplabLoad)
        });
        adopt(&mut self.client_ceiling, x, "client_ceiling", |s| {
            HttpProtocol::ALL
                .into_iter()
                .map(ClientCeiling::Unknown)
                .find(|c| c.reason() == s)
        });
        adopt(&mut self.packet_loss, x, "packet_loss_pct", |s| {
            Some(PacketLoss {
                pct: num(s)?,
                method: None,
            })
        });
        if let Some(p) = &mut self.packet_loss {
            adopt(
                &mut p.method,
                x,
                "packet_loss_method",
                LossMethod::from_words,
            );
        }
        adopt_idle(&mut self.idle, x);
    }
}

impl StudyEnvironmentFacts {
    /// As [`StudyRunFacts::adopt_legacy`], for `environment.extra` (`tls`,
    /// `tls_seen`, `cpu_quota`, `server_cores`, `client_cores`, `corpus`,
    /// `note_I`, `version: SERVER`, `extra rounds: STEP`, `tls: SERVER`,
    /// `server_cpu_source`, `study_seconds`, `client_shard`, `run_id`).
    pub fn adopt_legacy(&mut self, x: &mut Extra) {
        adopt(&mut self.tls, x, "tls", text);
        adopt(&mut self.tls_seen, x, "tls_seen", text);
        adopt(&mut self.cpu_quota, x, "cpu_quota", text);
        adopt(&mut self.server_cores, x, "server_cores", parse_cores);
        adopt(&mut self.client_cores, x, "client_cores", parse_cores);
        adopt(&mut self.corpus, x, "corpus", parse_corpus);
        if self.notes.is_empty() {
            let mut i = 0;
            while let Some(n) = x.remove(&format!("note_{i}")) {
                self.notes.push(n);
                i += 1;
            }
        }
        adopt_map(&mut self.versions, x, "version: ");
        adopt_map(&mut self.extra_rounds, x, "extra rounds: ");
        adopt_map(&mut self.tls_of, x, "tls: ");
        adopt(
            &mut self.server_cpu_source,
            x,
            "server_cpu_source",
            ServerCpuSource::from_name,
        );
        adopt(&mut self.study_seconds, x, "study_seconds", num);
        adopt(&mut self.shard, x, "client_shard", ClientShard::parse);
        adopt(&mut self.run_id, x, "run_id", text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_reasons_are_the_words_of_before() {
        assert_eq!(
            ClientCeiling::Unknown(HttpProtocol::H2).reason(),
            "unknown: the client calibration measures HTTP/1.1 against an HTTP/1.1 sink, not HTTP/2, so this run was not checked for being client-bound"
        );
        assert_eq!(
            serde_json::to_value(ClientCeiling::Unknown(HttpProtocol::H3)).unwrap(),
            serde_json::json!({"unknown": "h3"})
        );
    }

    #[test]
    fn cores_and_corpus_words_parse_back() {
        for c in [vec![], vec![0, 3, 7]] {
            assert_eq!(parse_cores(&cores_text(&c)), Some(c));
        }
        assert_eq!(
            parse_corpus("12 files, 340 B"),
            Some(CorpusFacts {
                files: 12,
                bytes: 340
            })
        );
        // A rounded size is not made into a count.
        assert_eq!(parse_corpus("12 files, 1.5 MB"), None);
    }

    #[test]
    fn names_round_trip() {
        for p in VaryParam::ALL {
            assert_eq!(VaryParam::from_name(p.as_str()), Some(p));
            let j = serde_json::to_string(&p).unwrap();
            assert_eq!(j, format!("\"{}\"", p.as_str()));
        }
        for s in [
            ServerCpuSource::CgroupV1,
            ServerCpuSource::CgroupV2,
            ServerCpuSource::Schedstat,
        ] {
            assert_eq!(ServerCpuSource::from_name(s.name()), Some(s));
        }
        for m in [LossMethod::Nftables, LossMethod::Netem] {
            assert_eq!(LossMethod::from_words(m.describe()), Some(m));
        }
    }

    #[test]
    fn an_idle_census_missing_a_count_stays_in_extra() {
        let mut x: Extra = [("idle_conns", "10"), ("idle_send", "silent")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let before = x.clone();
        let mut f = StudyRunFacts::default();
        f.adopt_legacy(&mut x);
        assert!(f.idle.is_none());
        assert_eq!(x, before);
    }

    /// Every word a study wrote in `httplab.study/3.1`: a run of an idle
    /// step with packet loss over HTTP/2, and the environment of a sharded
    /// TLS study with a budget; beside them a user's word each.
    fn study_3_1() -> serde_json::Value {
        let mut run = serde_json::to_value(crate::RunResult::default()).unwrap();
        run["schema"] = "httplab.run/1.1".into();
        run["config"]["extra"] = serde_json::json!({
            "study_param": "idle_conns",
            "study_step": "1000",
            "driver": "httplab-load",
            "client_ceiling": ClientCeiling::Unknown(HttpProtocol::H2).reason(),
            "packet_loss_pct": "0.5",
            "packet_loss_method": "tc netem: every packet on lo",
            "idle_conns": "1000",
            "idle_send": "partial",
            "idle_connected": "990",
            "idle_pending": "4",
            "idle_failed": "6",
            "idle_not_attempted": "0",
            "idle_open_at_end": "980",
            "idle_closed_by_server": "10",
            "idle_reset_by_server": "0",
            "idle_answered_by_server": "0",
            "idle_open_s": "0.250",
            "idle_errors": "connrefused ×6",
            "idle_server_fds_before": "12",
            "idle_server_fds_during": "1002",
            "idle_server_rss_before_bytes": "1000000",
            "idle_server_rss_during_bytes": "3000000",
            "idle_server_rss_per_conn_bytes": "2020",
            "idle_note": "the server stopped serving new clients",
            "mine": "kept"
        });
        let doc = crate::StudyResult {
            schema: "httplab.study/3.1".into(),
            runs: vec![crate::StudyRun {
                workload: "idle".into(),
                server: "nginx".into(),
                step: Some("1000".into()),
                ..crate::StudyRun::default()
            }],
            ..crate::StudyResult::default()
        };
        let mut v = serde_json::to_value(doc).unwrap();
        v["runs"][0]["run"] = run;
        v["environment"]["extra"] = serde_json::json!({
            "tls": "self-signed certificate",
            "tls_seen": "handshakes: TLSv1_3 ×12",
            "cpu_quota": "no cgroup here",
            "server_cores": "core(s) 0,1",
            "client_cores": "any core",
            "corpus": "3 files, 600 B",
            "note_0": "first note",
            "note_1": "second note",
            "version: nginx": "nginx/1.22.1",
            "version: httplab event": "httplab 0.1.0",
            "extra rounds: small [100]": "a longer window",
            "tls: nginx": "TLSv1_3",
            "server_cpu_source": "cgroup v2 cpu.stat (µs)",
            "study_seconds": "12.5",
            "client_shard": "1/2",
            "run_id": "r-7",
            "mine": "kept too"
        });
        v
    }

    #[test]
    fn a_3_1_study_loads_every_old_word_into_its_field() {
        let s: crate::StudyResult = serde_json::from_value(study_3_1()).unwrap();
        let run = s.runs[0].run.as_ref().unwrap();
        let f = &run.config.facts.study;
        assert_eq!(f.param, Some(VaryParam::IdleConns.into()));
        assert_eq!(f.step.as_deref(), Some("1000"));
        assert_eq!(f.driver, Some(LoadDriver::HttplabLoad));
        assert_eq!(
            f.client_ceiling,
            Some(ClientCeiling::Unknown(HttpProtocol::H2))
        );
        assert_eq!(
            f.packet_loss,
            Some(PacketLoss {
                pct: 0.5,
                method: Some(LossMethod::Netem)
            })
        );
        let i = f.idle.as_ref().unwrap();
        assert_eq!(
            (i.conns, i.send, i.connected),
            (1000, IdleSend::Partial, 990)
        );
        assert_eq!((i.pending, i.failed, i.not_attempted), (4, 6, 0));
        assert_eq!((i.open_at_end, i.closed_by_server), (980, 10));
        assert_eq!((i.reset_by_server, i.answered_by_server), (0, 0));
        assert_eq!(i.open_s, 0.25);
        assert_eq!(i.errors.as_deref(), Some("connrefused ×6"));
        assert_eq!((i.server_fds_before, i.server_fds_during), (12, 1002));
        assert_eq!(
            (i.server_rss_before_bytes, i.server_rss_during_bytes),
            (1_000_000, 3_000_000)
        );
        assert_eq!(i.server_rss_per_conn_bytes, Some(2020.0));
        assert_eq!(
            i.note.as_deref(),
            Some("the server stopped serving new clients")
        );
        assert_eq!(run.config.extra.keys().collect::<Vec<_>>(), ["mine"]);

        let e = &s.environment.facts.study;
        assert_eq!(e.tls.as_deref(), Some("self-signed certificate"));
        assert_eq!(e.tls_seen.as_deref(), Some("handshakes: TLSv1_3 ×12"));
        assert_eq!(e.cpu_quota.as_deref(), Some("no cgroup here"));
        assert_eq!(e.server_cores, Some(vec![0, 1]));
        assert_eq!(e.client_cores, Some(vec![]));
        assert_eq!(
            e.corpus,
            Some(CorpusFacts {
                files: 3,
                bytes: 600
            })
        );
        assert_eq!(e.notes, ["first note", "second note"]);
        assert_eq!(e.versions["nginx"], "nginx/1.22.1");
        assert_eq!(e.versions["httplab event"], "httplab 0.1.0");
        assert_eq!(e.extra_rounds["small [100]"], "a longer window");
        assert_eq!(e.tls_of["nginx"], "TLSv1_3");
        assert_eq!(e.server_cpu_source, Some(ServerCpuSource::CgroupV2));
        assert_eq!(e.study_seconds, Some(12.5));
        assert_eq!(e.shard, Some(ClientShard { index: 1, count: 2 }));
        assert_eq!(e.run_id.as_deref(), Some("r-7"));
        assert_eq!(s.environment.extra.keys().collect::<Vec<_>>(), ["mine"]);
        // The report's words are the old ones, the user's word aside.
        let words: Extra = e.entries().into_iter().collect();
        let mut old: Extra =
            serde_json::from_value(study_3_1()["environment"]["extra"].clone()).unwrap();
        old.remove("mine");
        assert_eq!(words, old);
    }

    #[test]
    fn unknown_study_words_round_trip() {
        let mut v = study_3_1();
        v["runs"][0]["run"]["config"]["extra"]["study_from_a_newer_httplab"] = "x".into();
        // Words that do not parse stay as they were.
        v["runs"][0]["run"]["config"]["extra"]["packet_loss_method"] = "carrier pigeon".into();
        v["environment"]["extra"]["corpus"] = "3 files, 1.5 MB".into();
        v["environment"]["extra"]["server_cpu_source"] = "a sundial".into();
        let s: crate::StudyResult = serde_json::from_value(v).unwrap();
        let saved = serde_json::to_value(&s).unwrap();
        assert_eq!(saved["schema"], "httplab.study/3.1");
        assert_eq!(
            saved["runs"][0]["run"]["config"]["extra"],
            serde_json::json!({
                "mine": "kept",
                "packet_loss_method": "carrier pigeon",
                "study_from_a_newer_httplab": "x"
            })
        );
        assert_eq!(
            saved["runs"][0]["run"]["config"]["facts"]["study"]["packet_loss"],
            serde_json::json!({"pct": 0.5})
        );
        assert_eq!(
            saved["environment"]["extra"],
            serde_json::json!({
                "corpus": "3 files, 1.5 MB",
                "mine": "kept too",
                "server_cpu_source": "a sundial"
            })
        );
        let text = serde_json::to_string(&s).unwrap();
        let again: crate::StudyResult = serde_json::from_str(&text).unwrap();
        assert_eq!(again, s);
        assert_eq!(serde_json::to_string(&again).unwrap(), text);
    }

    #[test]
    fn a_newer_httplabs_enum_words_load_and_are_written_back_as_read() {
        let s: crate::StudyResult = serde_json::from_value(study_3_1()).unwrap();
        let mut v = serde_json::to_value(&s).unwrap();
        let f = &mut v["runs"][0]["run"]["config"]["facts"]["study"];
        f["param"] = "streams".into();
        f["packet_loss"]["method"] = "ebpf".into();
        f["driver"] = "httplab-load-v9".into();
        v["environment"]["facts"]["study"]["server_cpu_source"] = "cgroup_v3".into();
        v["schema"] = crate::STUDY_SCHEMA.into();
        let text = serde_json::to_string(&v).unwrap();
        let read = match crate::Document::from_json(&text).expect("the document loads") {
            crate::Document::Study(s) => s,
            _ => panic!("not a study"),
        };
        let f = &read.runs[0].run.as_ref().expect("a run").config.facts.study;
        assert_eq!(f.param, Some(StepParam::Other("streams".into())));
        assert_eq!(f.param.as_ref().and_then(StepParam::known), None);
        let method = f.packet_loss.as_ref().and_then(|p| p.method.clone());
        assert_eq!(method, Some(LossMethod::Other("ebpf".into())));
        assert_eq!(f.driver, Some(LoadDriver::Other("httplab-load-v9".into())));
        let e = &read.environment.facts.study;
        let cpu = e.server_cpu_source.clone();
        assert_eq!(cpu, Some(ServerCpuSource::Other("cgroup_v3".into())));
        // A report shows the word as written.
        let words: BTreeMap<String, String> = e.entries().into_iter().collect();
        assert_eq!(words["server_cpu_source"], "cgroup_v3");
        assert_eq!(LossMethod::Other("ebpf".into()).describe(), "ebpf");
        // Written back as read.
        let again = serde_json::to_value(&read).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        );
    }

    #[test]
    fn known_enum_words_are_the_words_of_before() {
        fn json<T: Serialize>(x: &T) -> String {
            serde_json::to_value(x)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        }
        for (c, w) in [
            (ServerCpuSource::CgroupV1, "cgroup_v1"),
            (ServerCpuSource::CgroupV2, "cgroup_v2"),
            (ServerCpuSource::Schedstat, "schedstat"),
        ] {
            assert_eq!(json(&c), w);
            assert_eq!(ServerCpuSource::from(w.to_string()), c);
        }
        for (m, w) in [
            (LossMethod::Nftables, "nftables"),
            (LossMethod::Netem, "netem"),
        ] {
            assert_eq!(json(&m), w);
            assert_eq!(LossMethod::from(w.to_string()), m);
        }
        assert_eq!(json(&LoadDriver::HttplabLoad), "httplab-load");
        for p in VaryParam::ALL {
            assert_eq!(json(&StepParam::Known(p)), p.as_str());
            assert_eq!(StepParam::from(p.as_str().to_string()), StepParam::Known(p));
        }
    }

    #[test]
    fn the_3_2_document_writes_typed_facts_and_reads_them_back() {
        let s: crate::StudyResult = serde_json::from_value(study_3_1()).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        let f = &v["runs"][0]["run"]["config"]["facts"]["study"];
        assert_eq!(f["param"], "idle_conns");
        assert_eq!(f["client_ceiling"], serde_json::json!({"unknown": "h2"}));
        assert_eq!(
            f["packet_loss"],
            serde_json::json!({"pct": 0.5, "method": "netem"})
        );
        assert_eq!(f["idle"]["send"], "partial");
        let e = &v["environment"]["facts"]["study"];
        assert_eq!(e["versions"]["nginx"], "nginx/1.22.1");
        assert_eq!(e["shard"], serde_json::json!({"index": 1, "count": 2}));
        assert_eq!(e["server_cpu_source"], "cgroup_v2");
        let back: crate::StudyResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        // A study without facts writes no `study` object.
        let plain = serde_json::to_value(crate::RunResult::default()).unwrap();
        assert!(plain["config"].get("facts").is_none());
    }
}
