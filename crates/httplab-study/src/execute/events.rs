//! What a running study tells its observer: typed events for progress
//! displays and tests. The study library draws nothing itself.

use httplab_model::RunStatus;

/// Something the study reports to an observer (progress, tests).
#[derive(Debug, Clone)]
pub enum Event {
    /// The study is about to start: the runs it plans at the fewest
    /// repetitions and the seconds they are estimated to take.
    Planned {
        /// Load runs at the fewest repetitions.
        runs: u64,
        /// Estimated seconds.
        seconds: f64,
    },
    /// The sequential design added runs (extra rounds) to the plan.
    MoreRuns {
        /// Runs added.
        runs: u64,
    },
    /// What the study is doing now, in words.
    Activity {
        /// E.g. "nginx · static [10] · round 2".
        message: String,
    },
    /// Something the user should still read after the study: printed, not
    /// a passing message (e.g. why a workload was skipped).
    Notice {
        /// The words.
        message: String,
    },
    /// One planned run is done (measured, failed or given up).
    Progress {
        /// Seconds of the estimate this run stood for.
        seconds: f64,
    },
    /// A server is up.
    ServerStarted {
        /// Label.
        server: String,
        /// Root PID (its process group).
        pid: i32,
    },
    /// A run (one step, one repetition) is about to start.
    RunStarted {
        /// Label.
        server: String,
        /// Workload name.
        workload: String,
    },
    /// A run (one step, one repetition) finished.
    RunFinished {
        /// Label.
        server: String,
        /// Workload name.
        workload: String,
        /// Server root PID.
        pid: i32,
        /// Ok, empty, failed or skipped.
        status: RunStatus,
    },
    /// Every run is done and the servers are stopped.
    Finished {
        /// Ctrl-C cut the study short.
        interrupted: bool,
    },
}

/// A callback receiving the study's events.
pub type Observer = Box<dyn Fn(&Event) + Send + Sync>;
