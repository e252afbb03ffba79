//! What `--prometheus`, `--series` and `--check-client` add to a run's
//! spec (a leaf module: the spec holds it, the collector and the client
//! check read it).

use std::net::SocketAddr;
use std::path::PathBuf;

/// The live side of a run (`LoadSpec::live`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveSpec {
    /// Where the run publishes each finished interval (the metrics that
    /// `--prometheus` serves); None: nowhere. Sweep and study set one
    /// handle on every run they make.
    pub metrics: Option<httplab_live::LoadLive>,
    /// `--prometheus ADDR`: serve the metrics on `http://ADDR/metrics` (CLI only).
    pub prometheus: Option<SocketAddr>,
    /// `--series FILE`: write the per-interval series (`.csv` or `.jsonl`) (CLI only).
    pub series: Option<PathBuf>,
    /// `--check-client`: before the run, compare one client process with two
    /// at the same total rate (CLI only).
    pub check_client: bool,
    /// The hidden `--client-check-step I/N@START`: this process is one
    /// client of a `--check-client` step; it runs the step and prints its
    /// result as JSON (CLI only).
    pub step: Option<StepShard>,
}

/// The step a child process of `--check-client` runs (the hidden
/// `--client-check-step I/N@START`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepShard {
    /// This process's shard.
    pub index: u32,
    /// Shards in the step.
    pub of: u32,
    /// Shared start, unix seconds.
    pub start_at: f64,
}
