//! How to run a study: the choices of the command line that are not in the
//! study file.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::execute::events::Observer;
use crate::plan::shard::Shard;

/// How to run.
pub struct Options {
    /// The httplab binary (for `kind = "httplab"` servers).
    pub httplab_exe: Option<PathBuf>,
    /// Set to stop: finished runs are kept, the rest marked skipped.
    pub stop: Arc<AtomicBool>,
    /// Observer of the study's events (progress, tests).
    pub on_event: Option<Observer>,
    /// Where corpus and server work dirs go (default: a fresh temp dir).
    pub work_dir: Option<PathBuf>,
    /// `--quick` was given (recorded in the protocol).
    pub quick: bool,
    /// `--tls`: serve and load over TLS even when the study file does not say
    /// `tls = true`.
    pub tls: bool,
    /// `--client I/N`: every load run is this shard of the run's schedule.
    /// The study must have been fixed with [`crate::plan::shard::prepare`].
    pub shard: Option<Shard>,
    /// `--budget`: seconds of extra rounds for the sequential design
    /// (overrides `[protocol] budget_s`; 0 turns the second phase off).
    pub budget_s: Option<f64>,
    /// `--prometheus`: every load run publishes its intervals here, with the
    /// workload, server, step and round as `httplab_run_info`.
    pub live: Option<httplab_live::LoadLive>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            httplab_exe: None,
            stop: Arc::new(AtomicBool::new(false)),
            on_event: None,
            work_dir: None,
            quick: false,
            tls: false,
            shard: None,
            budget_s: None,
            live: None,
        }
    }
}
