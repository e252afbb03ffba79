//! The facts httplab records about a run beyond httperf's configuration
//! ([`RunFacts`], `config.facts`) and about the machines of a merged run
//! ([`EnvironmentFacts`], `environment.facts`), each with its type.
//!
//! Before `httplab.run/1.1` these were words in the `extra` maps
//! (`config.extra["unsent_calls"] = "3"`, JSON text for the session
//! statistics and the calibration). Reading an older document moves every
//! such key whose value parses into its field ([`RunFacts::adopt_legacy`]);
//! keys httplab does not write (a user's or a server's free-form facts, a
//! newer version's keys) and values that do not parse stay in `extra` and
//! are written back unchanged.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

pub use crate::legacy::Extra;
use crate::legacy::{adopt, adopt_flag, adopt_list, num, text};
pub use crate::shard::ClientShard;
use crate::study_facts::{StudyEnvironmentFacts, StudyRunFacts};

/// What httplab records about a run that httperf's configuration has no
/// field for (`config.facts`). Every field is optional: a run records what
/// applies to it, and older documents lack most of them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RunFacts {
    /// The httperf-style normalised command line (first line of the text report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalized_command: Option<String>,
    /// Largest number of connections started at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connect_burst: Option<u64>,
    /// Sends later than this count as late starts, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_threshold_ms: Option<f64>,
    /// `--verbose` was given.
    #[serde(skip_serializing_if = "is_false")]
    pub verbose: bool,
    /// `--busy-poll` was given (the generator spins: its CPU share says nothing).
    #[serde(skip_serializing_if = "is_false")]
    pub busy_poll: bool,
    /// `--reconnect` was given.
    #[serde(skip_serializing_if = "is_false")]
    pub reconnect: bool,
    /// `--calls-per-conn`: calls a connection carries before it is replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_per_conn: Option<u64>,
    /// `--uri-list`: the number of paths in the list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri_list: Option<u64>,
    /// `--local-addr`: the source addresses given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub local_addrs: Vec<IpAddr>,
    /// `--wset N,X`: the working set walked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wset: Option<WorkingSet>,
    /// Calls per burst (`--burst-length` above 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_length: Option<u64>,
    /// httperf's session block (session workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_stats: Option<SessionStats>,
    /// Calls abandoned when the run was interrupted (when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abandoned_calls: Option<u64>,
    /// Calls not made because the server closed their connection
    /// (request-oriented runs without `--reconnect`; when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsent_calls: Option<u64>,
    /// HTTP/1.1 calls the server closed their connection on without
    /// answering, made again on a new connection (when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_calls: Option<u64>,
    /// The cap on connections in setup (`--max-connecting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connecting: Option<u64>,
    /// The loopback source addresses chosen when none were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_addrs_auto: Option<AddrRange>,
    /// Times the setup cap held the schedule back (when it did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_capped: Option<u64>,
    /// Arrivals that waited for a connection slot (when the cap held).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_waited: Option<u64>,
    /// p99 of that wait, ms (when the cap held).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_wait_p99_ms: Option<f64>,
    /// Arrivals not attempted after waiting longer than `--timeout` for a
    /// slot (counted as client-timo; when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_attempted: Option<u64>,
    /// The socket I/O engine that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_engine: Option<IoEngineUsed>,
    /// The client's host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A client shard's `I/N` (`--client I/N` with N > 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_shard: Option<ClientShard>,
    /// The run id every shard of one run shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The shared start instant (`--start-at`): RFC 3339 or unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// For a client shard of a counted run: the sessions (connections,
    /// sessions or users) of the schedule it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard_sessions: Option<u64>,
    /// The calibration the run's client ceiling came from, when it was
    /// measured in the same command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// A merged run (`httplab merge`): the number of shards merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<u32>,
    /// A merged run: the fields that could not be merged exactly, each with
    /// how it was estimated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merge_approximations: Vec<String>,
    /// A step of a staged sweep (`httplab sweep --staged`): the stage of one
    /// staged run it was cut from. Its errors are not split by class and its
    /// replies are counted as 2xx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_step: Option<StagedStep>,
    /// What a study records about its run (a study's runs only; version
    /// 3.2 of the study schema, older ones kept these as words in `extra`).
    #[serde(skip_serializing_if = "StudyRunFacts::is_empty")]
    pub study: StudyRunFacts,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// httperf's `--wset N,X` (`RunFacts::wset`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkingSet {
    /// N: files in the working set.
    pub files: u64,
    /// X: the walk ratio.
    pub ratio: f64,
}

/// A range of source addresses, first to last (`RunFacts::local_addrs_auto`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct AddrRange {
    /// The first address.
    pub first: IpAddr,
    /// The last address.
    pub last: IpAddr,
}

/// The stage of a staged run a sweep step was cut from (`RunFacts::staged_step`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct StagedStep {
    /// Start of the stage, seconds from the run's schedule origin.
    pub start_s: f64,
    /// Length of the stage, seconds.
    pub duration_s: f64,
}

impl StagedStep {
    /// The words older documents held (`stage at S s for D s of one staged run; …`).
    fn parse_legacy(s: &str) -> Option<StagedStep> {
        let rest = s.strip_prefix("stage at ")?;
        let (start, rest) = rest.split_once(" s for ")?;
        let (dur, _) = rest.split_once(" s of one staged run")?;
        Some(StagedStep {
            start_s: start.trim().parse().ok()?,
            duration_s: dur.trim().parse().ok()?,
        })
    }
}

/// The socket I/O engine a run used (`RunFacts::io_engine`). Written as
/// the words of [`IoEngineUsed::as_str`]; a word this version does not know
/// is read back as [`IoEngineUsed::Other`] and written again unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum IoEngineUsed {
    /// io_uring completions ("io_uring").
    IoUring,
    /// epoll readiness ("epoll": HTTP/1.1 without io_uring, HTTPS, HTTP/2 by default).
    Epoll,
    /// The tokio stream driver of HTTP/3 ("tokio").
    Tokio,
    /// Any other word, as read.
    Other(String),
}

impl IoEngineUsed {
    /// The word written in results and reports.
    pub fn as_str(&self) -> &str {
        match self {
            IoEngineUsed::IoUring => "io_uring",
            IoEngineUsed::Epoll => "epoll",
            IoEngineUsed::Tokio => "tokio",
            IoEngineUsed::Other(s) => s,
        }
    }
}

impl From<String> for IoEngineUsed {
    fn from(s: String) -> IoEngineUsed {
        match s.as_str() {
            "io_uring" => IoEngineUsed::IoUring,
            "epoll" => IoEngineUsed::Epoll,
            "tokio" => IoEngineUsed::Tokio,
            _ => IoEngineUsed::Other(s),
        }
    }
}

impl From<IoEngineUsed> for String {
    fn from(e: IoEngineUsed) -> String {
        e.as_str().to_string()
    }
}

impl std::fmt::Display for IoEngineUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// httperf's session statistics (`RunFacts::session_stats`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SessionStats {
    /// Sessions started.
    pub started: u64,
    /// Sessions that completed every call.
    pub completed: u64,
    /// Sessions that failed.
    pub failed: u64,
    /// Connections opened by sessions.
    pub connections: u64,
    /// Sum of lifetimes of completed sessions, s.
    pub lifetime_sum_s: f64,
    /// Sum of lifetimes of failed sessions, s.
    pub failtime_sum_s: f64,
    /// Completed sessions per interval (session rate samples).
    pub rate_samples: Vec<f64>,
    /// `length_histogram[n]`: sessions that got n replies.
    pub length_histogram: Vec<u64>,
}

impl SessionStats {
    /// The sum of two shards' statistics: counts and sums add, the rate
    /// samples interval by interval and the length histogram bin by bin
    /// (the longer one's tail kept).
    pub fn add(&self, o: &SessionStats) -> SessionStats {
        fn zip_add<T: Copy + std::ops::Add<Output = T>>(a: &[T], b: &[T]) -> Vec<T> {
            let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
            long.iter()
                .enumerate()
                .map(|(i, x)| short.get(i).map_or(*x, |y| *x + *y))
                .collect()
        }
        SessionStats {
            started: self.started + o.started,
            completed: self.completed + o.completed,
            failed: self.failed + o.failed,
            connections: self.connections + o.connections,
            lifetime_sum_s: self.lifetime_sum_s + o.lifetime_sum_s,
            failtime_sum_s: self.failtime_sum_s + o.failtime_sum_s,
            rate_samples: zip_add(&self.rate_samples, &o.rate_samples),
            length_histogram: zip_add(&self.length_histogram, &o.length_histogram),
        }
    }
}

/// What a client calibration measured (`RunFacts::calibration`): the
/// generator's ceiling for one shape of run, against an in-process sink.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// Replies per second the generator sustained for this shape: its ceiling.
    pub ceiling_rps: f64,
    /// The shape, in words (e.g. "16 connections, 10 calls/connection, no pipelining, 100 B responses, 1 thread").
    pub shape: String,
    /// Connections (or users) in flight.
    pub connections: u64,
    /// Calls per connection (None: a connection carries all of a user's calls).
    pub calls_per_conn: Option<u64>,
    /// Calls per pipelined burst.
    pub pipeline: u32,
    /// Response body size, bytes.
    pub response_bytes: u64,
    /// Generator threads.
    pub threads: u32,
    /// CPUs the generator could use.
    pub client_cores: Vec<u32>,
    /// CPUs the sink ran on.
    pub sink_cores: Vec<u32>,
    /// True when the sink had to share the client's cores (the ceiling is then a lower bound).
    pub shared_cores: bool,
    /// Measured window, seconds.
    pub window_s: f64,
    /// Replies in the window.
    pub replies: u64,
    /// Reply rate reached against the sink (bounded by round trips when few
    /// connections are in flight; the ceiling extrapolates by CPU cost).
    #[serde(default)]
    pub reached_rps: f64,
    /// Generator CPU over the window, percent of one core.
    pub client_cpu_pct: f64,
}

impl Calibration {
    /// One line for the text report.
    pub fn describe(&self) -> String {
        format!(
            "httplab calibration: client ceiling {:.0} requests/s for {} ({} replies in {:.2} s, {:.0}/s at client CPU {:.0}%: the ceiling is where that CPU cost per reply fills the client's cores; sink on CPU {}{})",
            self.ceiling_rps,
            self.shape,
            self.replies,
            self.window_s,
            self.reached_rps,
            self.client_cpu_pct,
            cpu_list(&self.sink_cores),
            if self.shared_cores {
                ", shared with the client: a lower bound"
            } else {
                ""
            }
        )
    }
}

fn cpu_list(c: &[u32]) -> String {
    if c.is_empty() {
        return "?".into();
    }
    c.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl RunFacts {
    /// True when no fact is recorded.
    pub fn is_empty(&self) -> bool {
        *self == RunFacts::default()
    }

    /// Moves the facts an older document kept as words in `extra` (the
    /// keys are the field names) into their fields. A key whose value does
    /// not parse, and every key httplab does not write, stays in `extra`.
    pub fn adopt_legacy(&mut self, x: &mut Extra) {
        adopt(&mut self.normalized_command, x, "normalized_command", text);
        adopt(&mut self.max_connect_burst, x, "max_connect_burst", num);
        adopt(&mut self.lag_threshold_ms, x, "lag_threshold_ms", num);
        adopt_flag(&mut self.verbose, x, "verbose");
        adopt_flag(&mut self.busy_poll, x, "busy_poll");
        adopt_flag(&mut self.reconnect, x, "reconnect");
        adopt(&mut self.calls_per_conn, x, "calls_per_conn", num);
        adopt(&mut self.uri_list, x, "uri_list", num);
        adopt_list(&mut self.local_addrs, x, "local_addrs", ",", num);
        adopt(&mut self.wset, x, "wset", |s| {
            let (n, r) = s.split_once(',')?;
            Some(WorkingSet {
                files: num(n)?,
                ratio: num(r)?,
            })
        });
        adopt(&mut self.burst_length, x, "burst_length", num);
        adopt(&mut self.session_stats, x, "session_stats", |s| {
            serde_json::from_str(s).ok()
        });
        adopt(&mut self.abandoned_calls, x, "abandoned_calls", num);
        adopt(&mut self.unsent_calls, x, "unsent_calls", num);
        adopt(&mut self.retried_calls, x, "retried_calls", num);
        adopt(&mut self.max_connecting, x, "max_connecting", num);
        adopt(&mut self.local_addrs_auto, x, "local_addrs_auto", |s| {
            let (a, b) = s.split_once('-')?;
            Some(AddrRange {
                first: num(a)?,
                last: num(b)?,
            })
        });
        adopt(&mut self.setup_capped, x, "setup_capped", num);
        adopt(&mut self.setup_waited, x, "setup_waited", num);
        adopt(&mut self.setup_wait_p99_ms, x, "setup_wait_p99_ms", num);
        adopt(&mut self.not_attempted, x, "not_attempted", num);
        adopt(&mut self.io_engine, x, "io_engine", |s| {
            Some(IoEngineUsed::from(s.to_string()))
        });
        adopt(&mut self.host, x, "host", text);
        adopt(
            &mut self.client_shard,
            x,
            "client_shard",
            ClientShard::parse,
        );
        adopt(&mut self.run_id, x, "run_id", text);
        adopt(&mut self.start_at, x, "start_at", text);
        adopt(&mut self.shard_sessions, x, "shard_sessions", num);
        adopt(&mut self.calibration, x, "calibration", |s| {
            serde_json::from_str(s).ok()
        });
        adopt(&mut self.merged_shards, x, "merged_shards", num);
        adopt_list(
            &mut self.merge_approximations,
            x,
            "merge_approximations",
            "; ",
            text,
        );
        adopt(
            &mut self.staged_step,
            x,
            "staged_step",
            StagedStep::parse_legacy,
        );
    }
}

/// What `httplab merge` records about the machines of a merged result
/// (`environment.facts`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct EnvironmentFacts {
    /// Client shards (or sweep documents) merged into this result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// The hosts the shards ran on, in shard order (those that recorded one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// What a study records about the whole study (version 3.2 of the
    /// study schema; older ones kept these as words in `extra`).
    #[serde(skip_serializing_if = "StudyEnvironmentFacts::is_empty")]
    pub study: StudyEnvironmentFacts,
}

impl EnvironmentFacts {
    /// True when no fact is recorded.
    pub fn is_empty(&self) -> bool {
        *self == EnvironmentFacts::default()
    }

    /// As [`RunFacts::adopt_legacy`], for `environment.extra`.
    pub fn adopt_legacy(&mut self, x: &mut Extra) {
        adopt(&mut self.shards, x, "shards", num);
        adopt_list(&mut self.hosts, x, "hosts", ",", text);
    }

    /// The facts as (name, value) words, for a report's environment list.
    pub fn entries(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(n) = self.shards {
            v.push(("shards".to_string(), n.to_string()));
        }
        if !self.hosts.is_empty() {
            v.push(("hosts".to_string(), self.hosts.join(",")));
        }
        v.extend(self.study.entries());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_shards_parse_and_print() {
        let s = ClientShard::parse(" 1/3 ").unwrap();
        assert_eq!((s.index, s.count), (1, 3));
        assert_eq!(s.to_string(), "1/3");
        for bad in ["3/3", "1/0", "x/2", "1", ""] {
            assert_eq!(ClientShard::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn io_engine_words_round_trip_and_keep_unknown_ones() {
        for w in ["io_uring", "epoll", "tokio", "kqueue"] {
            let e = IoEngineUsed::from(w.to_string());
            assert_eq!(e.as_str(), w);
            let j = serde_json::to_string(&e).unwrap();
            assert_eq!(serde_json::from_str::<IoEngineUsed>(&j).unwrap(), e);
        }
        assert_eq!(
            IoEngineUsed::from("kqueue".to_string()),
            IoEngineUsed::Other("kqueue".into())
        );
    }

    #[test]
    fn a_value_that_does_not_parse_stays_in_extra() {
        let mut x: Extra = [
            ("unsent_calls", "many"),
            ("client_shard", "3/2"),
            ("verbose", "yes"),
            ("local_addrs", "10.0.0.1,nope"),
            ("retried_calls", "4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let before = x.clone();
        let mut f = RunFacts::default();
        f.adopt_legacy(&mut x);
        assert_eq!(f.retried_calls, Some(4));
        assert_eq!(f.unsent_calls, None);
        assert!(f.client_shard.is_none() && !f.verbose && f.local_addrs.is_empty());
        let mut left = before;
        left.remove("retried_calls");
        assert_eq!(x, left);
    }

    #[test]
    fn a_typed_fact_wins_over_a_legacy_word() {
        let mut x: Extra = [("run_id".to_string(), "old".to_string())].into();
        let mut f = RunFacts {
            run_id: Some("new".into()),
            ..RunFacts::default()
        };
        f.adopt_legacy(&mut x);
        assert_eq!(f.run_id.as_deref(), Some("new"));
        assert_eq!(x["run_id"], "old");
    }

    #[test]
    fn session_stats_add_by_interval_and_bin() {
        let a = SessionStats {
            started: 2,
            rate_samples: vec![1.0, 2.0],
            length_histogram: vec![0, 1, 1],
            ..SessionStats::default()
        };
        let b = SessionStats {
            started: 3,
            rate_samples: vec![0.5, 0.5, 4.0],
            length_histogram: vec![1],
            ..SessionStats::default()
        };
        let s = a.add(&b);
        assert_eq!(s.started, 5);
        assert_eq!(s.rate_samples, vec![1.5, 2.5, 4.0]);
        assert_eq!(s.length_histogram, vec![1, 1, 1]);
    }

    /// Every key httplab wrote under `config.extra` before version 1.1,
    /// as it wrote them, and one key of a user's.
    fn legacy_config_extra() -> serde_json::Value {
        let session = r#"{"started":4,"completed":3,"failed":1,"connections":5,"lifetime_sum_s":1.5,"failtime_sum_s":0.25,"rate_samples":[1.0,2.0],"length_histogram":[0,1,3]}"#;
        let calibration = r#"{"ceiling_rps":50000.0,"shape":"16 connections","connections":16,"calls_per_conn":null,"pipeline":1,"response_bytes":100,"threads":1,"client_cores":[0,1],"sink_cores":[2],"shared_cores":false,"window_s":1.0,"replies":50000,"reached_rps":40000.0,"client_cpu_pct":80.0}"#;
        serde_json::json!({
            "normalized_command": "httperf --hog --server=127.0.0.1",
            "max_connect_burst": "8",
            "lag_threshold_ms": "10",
            "verbose": "true",
            "busy_poll": "true",
            "reconnect": "true",
            "calls_per_conn": "5",
            "uri_list": "3",
            "local_addrs": "127.0.0.2,127.0.0.3",
            "wset": "100,0.25",
            "burst_length": "4",
            "session_stats": session,
            "abandoned_calls": "2",
            "unsent_calls": "3",
            "retried_calls": "7",
            "max_connecting": "1024",
            "local_addrs_auto": "127.0.0.2-127.0.0.9",
            "setup_capped": "11",
            "setup_waited": "12",
            "setup_wait_p99_ms": "1.250",
            "not_attempted": "13",
            "io_engine": "io_uring",
            "host": "client-1",
            "client_shard": "1/2",
            "run_id": "r-42",
            "start_at": "1767225600.5",
            "shard_sessions": "450",
            "calibration": calibration,
            "merged_shards": "2",
            "merge_approximations": "connection.lifetime_ms.median: count-weighted mean; totals.max_concurrent_connections: sum of the shards' maxima (an upper bound)",
            "staged_step": "stage at 10 s for 5 s of one staged run; errors not split by class, replies counted as 2xx",
            "server_version": "nginx/1.22.1"
        })
    }

    /// A version 1 run document with every legacy key, a merged run's
    /// shard and environment words, and the status classes as an array.
    fn legacy_run() -> serde_json::Value {
        let mut v = serde_json::to_value(crate::RunResult::default()).unwrap();
        v["schema"] = "httplab.run/1".into();
        v["config"]["extra"] = legacy_config_extra();
        v["reply"]["status"] = serde_json::json!([1, 50, 2, 3, 4]);
        v["environment"]["extra"] = serde_json::json!({"shards": "2", "hosts": "client-0,client-1", "server_version": "nginx/1.22.1"});
        let mut shard = serde_json::to_value(crate::ShardInfo::default()).unwrap();
        shard["extra"] = serde_json::json!({"client_shard": "0/2", "run_id": "r-42", "host": "client-0", "mine": "kept"});
        v["shards"] = serde_json::json!([shard]);
        v
    }

    #[test]
    fn an_old_document_loads_every_legacy_key_into_its_field() {
        let r: crate::RunResult = serde_json::from_value(legacy_run()).unwrap();
        let f = &r.config.facts;
        assert_eq!(
            f.normalized_command.as_deref(),
            Some("httperf --hog --server=127.0.0.1")
        );
        assert_eq!(f.max_connect_burst, Some(8));
        assert_eq!(f.lag_threshold_ms, Some(10.0));
        assert!(f.verbose && f.busy_poll && f.reconnect);
        assert_eq!((f.calls_per_conn, f.uri_list), (Some(5), Some(3)));
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(f.local_addrs, vec![ip("127.0.0.2"), ip("127.0.0.3")]);
        assert_eq!(
            f.wset,
            Some(WorkingSet {
                files: 100,
                ratio: 0.25
            })
        );
        assert_eq!(f.burst_length, Some(4));
        let ss = f.session_stats.as_ref().unwrap();
        assert_eq!(
            (ss.started, ss.failed, ss.length_histogram.len()),
            (4, 1, 3)
        );
        assert_eq!(
            (f.abandoned_calls, f.unsent_calls, f.retried_calls),
            (Some(2), Some(3), Some(7))
        );
        assert_eq!(f.max_connecting, Some(1024));
        assert_eq!(
            f.local_addrs_auto,
            Some(AddrRange {
                first: ip("127.0.0.2"),
                last: ip("127.0.0.9")
            })
        );
        assert_eq!(
            (
                f.setup_capped,
                f.setup_waited,
                f.setup_wait_p99_ms,
                f.not_attempted
            ),
            (Some(11), Some(12), Some(1.25), Some(13))
        );
        assert_eq!(f.io_engine, Some(IoEngineUsed::IoUring));
        assert_eq!(f.host.as_deref(), Some("client-1"));
        assert_eq!(f.client_shard, Some(ClientShard { index: 1, count: 2 }));
        assert_eq!(f.run_id.as_deref(), Some("r-42"));
        assert_eq!(f.start_at.as_deref(), Some("1767225600.5"));
        assert_eq!(f.shard_sessions, Some(450));
        let c = f.calibration.as_ref().unwrap();
        assert_eq!(
            (c.ceiling_rps, c.client_cores.clone()),
            (50000.0, vec![0, 1])
        );
        assert_eq!(f.merged_shards, Some(2));
        assert_eq!(f.merge_approximations.len(), 2);
        assert_eq!(
            f.staged_step,
            Some(StagedStep {
                start_s: 10.0,
                duration_s: 5.0
            })
        );
        // Only the user's key is left among the words.
        let left: Vec<&str> = r.config.extra.keys().map(String::as_str).collect();
        assert_eq!(left, ["server_version"]);
        assert_eq!(r.reply.status.server_error, 4);
        assert_eq!(r.reply.status.success, 50);
        assert_eq!(r.environment.facts.shards, Some(2));
        assert_eq!(r.environment.facts.hosts, ["client-0", "client-1"]);
        assert_eq!(r.environment.extra.len(), 1);
        let s = &r.shards[0];
        assert_eq!(
            s.facts.client_shard,
            Some(ClientShard { index: 0, count: 2 })
        );
        assert_eq!(s.facts.host.as_deref(), Some("client-0"));
        assert_eq!(s.extra.keys().collect::<Vec<_>>(), ["mine"]);
    }

    #[test]
    fn unknown_keys_survive_a_load_save_round_trip() {
        let mut v = legacy_run();
        v["config"]["extra"]["from_a_newer_httplab"] = "42".into();
        // A known key whose value does not parse is kept as it was, too.
        v["config"]["extra"]["unsent_calls"] = "a few".into();
        let r: crate::RunResult = serde_json::from_value(v).unwrap();
        let saved = serde_json::to_value(&r).unwrap();
        assert_eq!(
            saved["config"]["extra"],
            serde_json::json!({
                "from_a_newer_httplab": "42",
                "server_version": "nginx/1.22.1",
                "unsent_calls": "a few"
            })
        );
        assert_eq!(
            saved["environment"]["extra"],
            serde_json::json!({"server_version": "nginx/1.22.1"})
        );
        assert_eq!(
            saved["shards"][0]["extra"],
            serde_json::json!({"mine": "kept"})
        );
        let again: crate::RunResult = serde_json::from_value(saved).unwrap();
        assert_eq!(again, r);
        assert_eq!(again.config.facts.unsent_calls, None);
    }

    #[test]
    fn the_new_document_round_trips_with_typed_values() {
        let r: crate::RunResult = serde_json::from_value(legacy_run()).unwrap();
        let text = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let f = &v["config"]["facts"];
        assert_eq!(f["unsent_calls"], 3);
        assert_eq!(f["verbose"], true);
        assert_eq!(
            f["client_shard"],
            serde_json::json!({"index": 1, "count": 2})
        );
        assert_eq!(f["session_stats"]["started"], 4);
        assert_eq!(f["calibration"]["ceiling_rps"], 50000.0);
        assert_eq!(f["io_engine"], "io_uring");
        assert_eq!(
            v["environment"]["facts"]["hosts"],
            serde_json::json!(["client-0", "client-1"])
        );
        // The status classes keep the array every reader of /1 knows.
        assert_eq!(v["reply"]["status"], serde_json::json!([1, 50, 2, 3, 4]));
        let back: crate::RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        // Written again, the same text.
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // A run without facts writes no `facts` object.
        let plain = serde_json::to_value(crate::RunResult::default()).unwrap();
        assert!(plain["config"].get("facts").is_none());
        assert!(plain["environment"].get("facts").is_none());
    }

    #[test]
    fn staged_step_words_parse() {
        let s = StagedStep::parse_legacy(
            "stage at 12.5 s for 10 s of one staged run; errors not split by class, replies counted as 2xx",
        )
        .unwrap();
        assert_eq!((s.start_s, s.duration_s), (12.5, 10.0));
    }
}
