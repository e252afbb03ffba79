//! The state of a study while it runs: what every run needs (study, its
//! plan, corpus, protocol, certificate, calibrations) and the rows
//! filed so far.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use httplab_load::calibration_cache::CalibrationCache;
use httplab_model as m;

use crate::execute::corpus::CorpusIndex;
use crate::execute::events::Event;
use crate::execute::options::Options;
use crate::execute::packet_loss::Injector;
use crate::execute::tls::CertFiles;
use crate::plan::study_plan::StudyPlan;
use crate::spec::StudyFile;

/// A study in progress.
pub struct Execution<'a> {
    /// The study (each workload's own settings).
    pub study: &'a StudyFile,
    /// Its plan: servers, steps, rounds, metrics, budget, pinning.
    pub plan: &'a StudyPlan,
    /// How to run it.
    pub opts: &'a Options,
    /// Its corpus on disk.
    pub corpus: &'a CorpusIndex,
    /// The protocol in force (the design's figures are added as it goes).
    pub proto: m::Protocol,
    /// HTTPS: the study's certificate (also the load generator's CA file).
    pub tls: Option<CertFiles>,
    /// Every run filed so far, in order.
    pub runs: Vec<m::StudyRun>,
    /// The client's calibrations, once per shape of run.
    pub calibrations: CalibrationCache,
    /// Where path lists (`--uri-list`) are written.
    pub lists: PathBuf,
    /// Packet loss (`loss_pct`): `tc` once a workload asked for it, or why
    /// the study cannot inject loss (None: not asked yet).
    pub packet_loss: Option<Result<Injector, String>>,
    /// Which start of the servers is being measured, from 0 (every row
    /// carries it; see [`crate::execute::slots::restart_servers`]).
    pub start: u32,
}

impl Execution<'_> {
    /// Tells the observer.
    pub fn emit(&self, e: Event) {
        if let Some(f) = &self.opts.on_event {
            f(&e);
        }
    }

    /// Tells the observer what the study is doing now.
    pub fn announce(&self, message: impl Into<String>) {
        self.emit(Event::Activity {
            message: message.into(),
        });
    }

    /// True once Ctrl-C (or the caller) asked the study to stop.
    pub fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::Relaxed)
    }
}
