//! The client's calibrated ceiling, measured once per shape of run.
//!
//! A calibration ([`crate::calibrate`]) measures what the generator can do
//! for a shape of run: its connections or users, calls per connection,
//! pipelining, paths, threads, TLS and client shard. It does not depend on
//! where the run points, how fast it is asked to go or how long it lasts, so
//! a sweep's rates and a study's servers and rounds share one calibration
//! per shape. [`CalibrationCache`] keeps them; sweep and study both use it.

use std::collections::HashMap;

use anyhow::Result;

use crate::{Arrival, Calibration, Dist, LoadSpec, Workload};

/// What a run's calibration depends on: its spec without the target, the
/// offered rate, the counts, the durations and the bookkeeping (label, run
/// id, start instant, output files).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape(String);

impl Shape {
    /// The shape of `spec`.
    pub fn of(spec: &LoadSpec) -> Shape {
        let mut s = spec.clone();
        s.command_line.clear();
        s.uri_list = None;
        s.server.clear();
        s.port = 0;
        s.label.clear();
        s.run_id = None;
        s.start_at = None;
        s.duration = None;
        s.warmup = 0.0;
        s.timeout = None;
        s.lag_threshold = 0.0;
        s.client_ceiling = None;
        s.json = None;
        s.csv = None;
        s.raw_latencies = None;
        s.stages = Vec::new();
        s.probe = None;
        let any_rate = Dist::Deterministic(0.0);
        if let Arrival::Open(_) = s.arrival {
            s.arrival = Arrival::Open(any_rate);
        }
        match &mut s.workload {
            Workload::Requests { num_conns, .. } => *num_conns = None,
            Workload::Sessions { num_sessions, .. } | Workload::SessionLog { num_sessions, .. } => {
                *num_sessions = None
            }
            Workload::Users {
                requests_per_user,
                pace,
                ..
            } => {
                *requests_per_user = None;
                if pace.is_some() {
                    *pace = Some(any_rate);
                }
            }
        }
        Shape(format!("{s:?}"))
    }
}

/// Calibrations by shape; a shape whose calibration failed is remembered
/// as such (runs of that shape then have no ceiling) and not retried.
#[derive(Debug, Default)]
pub struct CalibrationCache {
    by_shape: HashMap<Shape, Option<Calibration>>,
}

impl CalibrationCache {
    /// An empty cache.
    pub fn new() -> CalibrationCache {
        CalibrationCache::default()
    }

    /// True when `spec`'s shape was calibrated (or tried).
    pub fn contains(&self, spec: &LoadSpec) -> bool {
        self.by_shape.contains_key(&Shape::of(spec))
    }

    /// The calibration of `spec`'s shape, measured by `measure` the first
    /// time the shape is seen; None when it failed.
    pub fn get_or_measure(
        &mut self,
        spec: &LoadSpec,
        measure: impl FnOnce(&LoadSpec) -> Result<Calibration>,
    ) -> Option<&Calibration> {
        self.by_shape
            .entry(Shape::of(spec))
            .or_insert_with(|| measure(spec).ok())
            .as_ref()
    }

    /// The client ceiling of `spec`'s shape (see [`Self::get_or_measure`]):
    /// the calibration's `ceiling_rps` when it is a positive number.
    pub fn ceiling(
        &mut self,
        spec: &LoadSpec,
        measure: impl FnOnce(&LoadSpec) -> Result<Calibration>,
    ) -> Option<f64> {
        self.get_or_measure(spec, measure)
            .map(|c| c.ceiling_rps)
            .filter(|x| x.is_finite() && *x > 0.0)
    }

    /// Sets `spec.client_ceiling` to its shape's ceiling, calibrating with
    /// [`crate::calibrate`] the first time the shape is seen.
    pub fn apply(&mut self, spec: &mut LoadSpec) {
        spec.client_ceiling = self.ceiling(spec, crate::calibrate);
    }

    /// Shapes calibrated (or tried) so far.
    pub fn len(&self) -> usize {
        self.by_shape.len()
    }

    /// True when no shape was calibrated yet.
    pub fn is_empty(&self) -> bool {
        self.by_shape.is_empty()
    }
}

/// Records the calibration a run's ceiling came from in its
/// `config.facts.calibration`.
pub fn record(config: &mut httplab_model::RunConfig, c: &Calibration) {
    config.facts.calibration = Some(c.clone());
}

/// The calibration a run recorded with [`record`], if any.
pub fn recorded(config: &httplab_model::RunConfig) -> Option<Calibration> {
    config.facts.calibration.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: &[&str]) -> LoadSpec {
        crate::parse_args(args.iter().copied()).unwrap()
    }

    #[test]
    fn shape_ignores_target_rate_counts_and_durations() {
        let a = spec(&[
            "--server",
            "127.0.0.1",
            "--port",
            "8080",
            "--uri",
            "/x",
            "--rate",
            "100",
            "--num-conns",
            "500",
            "--num-calls",
            "10",
            "--timeout",
            "5",
            "--label",
            "a",
        ]);
        let b = spec(&[
            "--server",
            "127.0.0.1",
            "--port",
            "9090",
            "--uri",
            "/x",
            "--rate",
            "900",
            "--duration",
            "3",
            "--warmup",
            "1",
            "--num-calls",
            "10",
            "--timeout",
            "2",
            "--label",
            "b",
            "--run-id",
            "r1",
        ]);
        assert_eq!(Shape::of(&a), Shape::of(&b));
        let calls = spec(&[
            "--server",
            "127.0.0.1",
            "--port",
            "8080",
            "--uri",
            "/x",
            "--rate",
            "100",
            "--num-conns",
            "500",
            "--num-calls",
            "2",
        ]);
        assert_ne!(Shape::of(&a), Shape::of(&calls));
        let users = spec(&[
            "--server",
            "127.0.0.1",
            "--port",
            "8080",
            "--uri",
            "/x",
            "--users",
            "8",
            "--duration",
            "3",
            "--num-calls",
            "10",
        ]);
        assert_ne!(Shape::of(&a), Shape::of(&users));
    }

    #[test]
    fn a_recorded_calibration_reads_back() {
        let mut config = httplab_model::RunConfig::default();
        assert_eq!(recorded(&config), None);
        let c = Calibration {
            ceiling_rps: 1234.5,
            shape: "16 connections".into(),
            ..Default::default()
        };
        record(&mut config, &c);
        assert!(config.facts.calibration.is_some());
        assert_eq!(recorded(&config), Some(c));
    }

    #[test]
    fn each_shape_is_measured_once_and_failures_are_remembered() {
        let mut cache = CalibrationCache::new();
        let a = spec(&["--server", "127.0.0.1", "--port", "1", "--rate", "10"]);
        let b = spec(&["--server", "127.0.0.1", "--port", "2", "--rate", "20"]);
        let mut measured = 0;
        let mut measure = |_: &LoadSpec| {
            measured += 1;
            Ok(Calibration {
                ceiling_rps: 5000.0,
                ..Default::default()
            })
        };
        assert_eq!(cache.ceiling(&a, &mut measure), Some(5000.0));
        assert_eq!(cache.ceiling(&b, &mut measure), Some(5000.0));
        assert_eq!(measured, 1);
        let users = spec(&["--server", "127.0.0.1", "--port", "1", "--users", "2"]);
        assert!(!cache.contains(&users));
        assert_eq!(cache.ceiling(&users, |_| anyhow::bail!("no sink")), None);
        assert!(cache.contains(&users));
        assert_eq!(cache.ceiling(&users, |_| unreachable!()), None);
        assert_eq!(cache.len(), 2);
    }
}
