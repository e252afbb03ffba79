//! `httplab merge`: one result from the results of a run's client shards.
//!
//! A run split with `httplab load --client I/N` on N machines leaves N
//! `httplab.run/1` documents (or N `httplab.sweep/1` documents for a sweep).
//! This crate merges them *exactly*:
//!
//! - counters (connections, requests, replies, bytes, statuses, every error
//!   class, accuracy) add;
//! - every latency distribution is merged by adding the shards' HDR histograms
//!   bucket by bucket, so the merged count, percentiles, min, max, mean and
//!   standard deviation are those of the union of the shards' samples (to the
//!   histogram's precision), never averages of the shards' statistics;
//! - the time series are aligned on the common start (each shard's start plus
//!   its intervals' `t_s`) and added interval by interval;
//! - rates are recomputed from the merged counts and the union time span;
//! - the shards themselves are kept in [`httplab_model::RunResult::shards`]
//!   (host, start, counters, p50/p99, environment), so a report can show one
//!   slow client.
//!
//! A few numbers cannot be merged exactly from what a shard stores (no
//! histogram is kept for them); the merged document names them in
//! `config.facts.merge_approximations` and says which bound they are.
//!
//! It refuses, with an error naming the files: documents of different runs
//! (different `run_id`, or different configurations when no run id was
//! recorded), overlapping or missing shards, different sample intervals, mixed
//! schemas, studies, and results that were already merged. It warns when the
//! shards started further apart than [`Options::max_skew_s`].
//!
//! Shards are identified by the facts the load generator records
//! ([`httplab_model::RunFacts`]): `client_shard` (`I/N`), `run_id`, and
//! optionally `start_at` (the shared `--start-at` instant) and `host`; older
//! documents' words in `config.extra` are read into them. Results without
//! them merge only with [`Options::force`], numbered in the order given.
//!
//! ```
//! use httplab_merge::{merge_runs, Options};
//! use httplab_model::RunResult;
//! # fn shard(i: u32) -> RunResult {
//! #     let mut r = RunResult { schema: httplab_model::RUN_SCHEMA.into(), ..Default::default() };
//! #     r.started_at = "2026-01-01T00:00:00Z".into();
//! #     r.reply.sample_interval_s = 1.0;
//! #     r.totals.replies = 10;
//! #     r.config.facts.client_shard = Some(httplab_model::ClientShard { index: i, count: 2 });
//! #     r.config.facts.run_id = Some("r1".into());
//! #     r
//! # }
//! let shards = vec![("a.json".to_string(), shard(0)), ("b.json".to_string(), shard(1))];
//! let merged = merge_runs(&shards, &Options::default()).unwrap();
//! assert_eq!(merged.result.totals.replies, 20);
//! assert_eq!(merged.result.shards.len(), 2);
//! ```

#![forbid(unsafe_code)]

mod cli;
mod documents;
mod latency;
mod protocols;
mod run;
mod sweep;

pub use cli::{cli_main, cli_main_with};
pub use documents::merge_documents;
pub use latency::merge_latency;
pub use run::{merge_run_refs, merge_runs, merge_summary};
pub use sweep::{merge_sweeps, Analyze};

/// How strict a merge is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Accept results that record no `client_shard` / `run_id` (runs made
    /// without `--client I/N`): they are numbered 0..N-1 in the order given
    /// and must have the same configuration.
    pub force: bool,
    /// Warn when the shards' starts differ by more than this, seconds.
    pub max_skew_s: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            force: false,
            max_skew_s: 1.0,
        }
    }
}

/// A merged document and the warnings the merge raised.
#[derive(Debug, Clone)]
pub struct Merged<T> {
    /// The merged result.
    pub result: T,
    /// Things the user should know (clock skew, dropped sweep steps, …).
    pub warnings: Vec<String>,
}

/// Why a merge was refused.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No input.
    #[error("nothing to merge: give the result files of every shard")]
    Empty,
    /// Run and sweep documents mixed.
    #[error(
        "{first} is {first_schema} but {other} is {other_schema}: merge results of one kind only"
    )]
    MixedSchemas {
        /// First file.
        first: String,
        /// Its schema.
        first_schema: String,
        /// The other file.
        other: String,
        /// Its schema.
        other_schema: String,
    },
    /// A kind of document that cannot be merged.
    #[error("{source_name}: {what}")]
    Unsupported {
        /// File.
        source_name: String,
        /// Why.
        what: String,
    },
    /// The document was itself produced by a merge.
    #[error(
        "{0}: already a merged result (it lists shards); merge the shards' own results instead"
    )]
    AlreadyMerged(String),
    /// The document holds repeated runs (`httplab load --repeat N`).
    #[error("{0}: holds {1} repeated runs (`httplab load --repeat`), not one shard of a run: merge combines the shards of one run; compare repeated results with `httplab compare`")]
    Repeated(String, usize),
    /// No shard recorded, and `--force` not given.
    #[error("{0}: records no client shard (config.facts.client_shard, written by a sharded `httplab load --client I/N`); pass --force to merge such results as shards 0..N-1 in the order given")]
    NoShardInfo(String),
    /// Some inputs are shards, others are not.
    #[error("{unsharded}: records no client shard while {sharded} is shard {shard}: merge only the shards of one run")]
    PartlySharded {
        /// A file without a shard.
        unsharded: String,
        /// A file with one.
        sharded: String,
        /// Its shard.
        shard: String,
    },
    /// The shard string does not parse.
    #[error("{source_name}: client_shard \"{value}\" is not I/N with 0 <= I < N")]
    BadShard {
        /// File.
        source_name: String,
        /// What it said.
        value: String,
    },
    /// Shards of splits into different numbers of parts.
    #[error("{a} is a shard of {an} but {b} is a shard of {bn}: these are not shards of one run")]
    ShardCount {
        /// File.
        a: String,
        /// Its N.
        an: u32,
        /// Other file.
        b: String,
        /// Its N.
        bn: u32,
    },
    /// The same shard given twice.
    #[error(
        "shard {shard} given twice: {first} and {second} overlap (each shard must be merged once)"
    )]
    Overlap {
        /// `I/N`.
        shard: String,
        /// First file.
        first: String,
        /// Second file.
        second: String,
    },
    /// Shards missing from the inputs.
    #[error("missing shard(s) {missing}: got {have} of {count}; a merge without every shard would not be the whole run")]
    Missing {
        /// The missing `I/N`s.
        missing: String,
        /// How many were given.
        have: usize,
        /// N.
        count: u32,
    },
    /// No run id recorded, and `--force` not given.
    #[error("{0}: records no run id (config.facts.run_id); pass --force to merge results without one (their configurations must then match)")]
    NoRunId(String),
    /// Different run ids.
    #[error(
        "{a} belongs to run \"{a_id}\" but {b} to run \"{b_id}\": refusing to merge different runs"
    )]
    DifferentRuns {
        /// File.
        a: String,
        /// Its run id.
        a_id: String,
        /// Other file.
        b: String,
        /// Its run id.
        b_id: String,
    },
    /// Configurations that cannot belong to one run.
    #[error("{a} and {b} differ in {what} ({a_value} vs {b_value}): not the same run")]
    Incompatible {
        /// File.
        a: String,
        /// Other file.
        b: String,
        /// Which setting.
        what: String,
        /// Value in `a`.
        a_value: String,
        /// Value in `b`.
        b_value: String,
    },
    /// A time that does not parse.
    #[error("{source_name}: {field} \"{value}\" is not an RFC 3339 time or unix seconds")]
    BadTime {
        /// File.
        source_name: String,
        /// Which field.
        field: String,
        /// What it said.
        value: String,
    },
    /// A latency distribution with values but no usable histogram.
    #[error("{source_name}: {what}: {problem}; an exact merge needs every shard's histogram")]
    Histogram {
        /// File.
        source_name: String,
        /// Which distribution (`latency.response`).
        what: String,
        /// What went wrong.
        problem: String,
    },
    /// A JSON round trip of a model type failed (a bug, not bad input).
    #[error("internal error while merging {0}")]
    Internal(String),
}
