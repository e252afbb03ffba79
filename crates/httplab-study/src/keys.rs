//! Every key the study writes under `extra` in its results, in one place:
//! [`EnvKey`] for `environment.extra` (facts about the whole study) and
//! the `RUN_*` keys for each run's `config.extra`. The maps stay maps of
//! words in `httplab.study/3.1` (the facts of httplab-load and of merge are
//! typed, `httplab_model::RunFacts`); the code names their keys by type.

use std::borrow::Cow;

use httplab_model as m;

/// Key of `RunConfig.extra` naming the varied parameter of a step.
pub const RUN_PARAM: &str = "study_param";
/// Key of `RunConfig.extra` holding the step's value.
pub const RUN_STEP: &str = "study_step";
/// Key of `RunConfig.extra` naming what ran the load (`httplab-load`).
pub const RUN_DRIVER: &str = "driver";
/// Key of `RunConfig.extra` saying why a run has no client ceiling.
pub const RUN_CLIENT_CEILING: &str = "client_ceiling";
/// Its value for an HTTP/2 run.
pub const CEILING_UNKNOWN_H2: &str = "unknown: the client calibration measures HTTP/1.1 against an HTTP/1.1 sink, not HTTP/2, so this run was not checked for being client-bound";
/// Its value for an HTTP/3 run.
pub const CEILING_UNKNOWN_H3: &str = "unknown: the client calibration measures HTTP/1.1 against an HTTP/1.1 sink, not HTTP/3, so this run was not checked for being client-bound";
/// Key of `RunConfig.extra`: the packet loss (percent) on loopback during the run.
pub const RUN_PACKET_LOSS: &str = "packet_loss_pct";
/// How the packet loss was injected (nftables on the server's port, or
/// netem on all of `lo`).
pub const RUN_PACKET_LOSS_METHOD: &str = "packet_loss_method";
/// Prefix of every key an idle workload adds to `RunConfig.extra`.
pub const RUN_IDLE_PREFIX: &str = "idle_";

/// `environment.extra`: the study ran over TLS ([`EnvKey::Tls`]).
pub const ENV_TLS: &str = "tls";
/// `environment.extra`: the TLS versions and suites negotiated ([`EnvKey::TlsSeen`]).
pub const ENV_TLS_SEEN: &str = "tls_seen";
/// `environment.extra`: why capacity under a CPU quota had none ([`EnvKey::CpuQuota`]).
pub const ENV_CPU_QUOTA: &str = "cpu_quota";
/// `environment.extra`: a sharded study's `I/N` ([`EnvKey::StudyShard`]).
pub const ENV_STUDY_SHARD: &str = "client_shard";
/// `environment.extra`: a sharded study's run id ([`EnvKey::StudyRunId`]).
pub const ENV_STUDY_RUN_ID: &str = "run_id";

/// A key of `environment.extra`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvKey<'a> {
    /// The study ran over TLS (and with which certificate).
    Tls,
    /// The TLS versions and cipher suites the study's runs negotiated.
    TlsSeen,
    /// Why capacity under a CPU quota was measured without one.
    CpuQuota,
    /// The cores the servers were pinned to.
    ServerCores,
    /// The cores the load generator was pinned to.
    ClientCores,
    /// The corpus: files and bytes.
    Corpus,
    /// The i-th note on pinning.
    Note(usize),
    /// A server's version (or why it is not available).
    Version(&'a str),
    /// Why a step's extra rounds had another window than its first ones
    /// (keyed by the workload and step).
    ExtraRounds(&'a str),
    /// What a server's TLS readiness probe negotiated.
    TlsOf(&'a str),
    /// Where server CPU time was read from.
    ServerCpuSource,
    /// Wall seconds of the whole study.
    StudySeconds,
    /// A sharded study's `I/N`.
    StudyShard,
    /// A sharded study's run id.
    StudyRunId,
}

impl EnvKey<'_> {
    /// The key as written.
    pub fn key(&self) -> Cow<'static, str> {
        match self {
            EnvKey::Tls => ENV_TLS.into(),
            EnvKey::TlsSeen => ENV_TLS_SEEN.into(),
            EnvKey::CpuQuota => ENV_CPU_QUOTA.into(),
            EnvKey::ServerCores => "server_cores".into(),
            EnvKey::ClientCores => "client_cores".into(),
            EnvKey::Corpus => "corpus".into(),
            EnvKey::Note(i) => format!("note_{i}").into(),
            EnvKey::Version(server) => format!("version: {server}").into(),
            EnvKey::ExtraRounds(step) => format!("extra rounds: {step}").into(),
            EnvKey::TlsOf(server) => format!("tls: {server}").into(),
            EnvKey::ServerCpuSource => "server_cpu_source".into(),
            EnvKey::StudySeconds => "study_seconds".into(),
            EnvKey::StudyShard => ENV_STUDY_SHARD.into(),
            EnvKey::StudyRunId => ENV_STUDY_RUN_ID.into(),
        }
    }

    /// Sets this fact in `env`.
    pub fn set(&self, env: &mut m::Environment, value: impl Into<String>) {
        env.extra.insert(self.key().into_owned(), value.into());
    }

    /// This fact in `env`, when recorded.
    pub fn get<'e>(&self, env: &'e m::Environment) -> Option<&'e String> {
        env.extra.get(self.key().as_ref())
    }
}
