//! Shared fixtures of the integration tests.

use httplab_model::{Document, RunResult, SweepResult};
use httplab_report::synth::{self, SynthServer};
use std::path::PathBuf;

/// tests/fixtures/
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A sweep of two synthetic servers; the faster one's top steps are client-bound.
pub fn build_sweep() -> SweepResult {
    let mut a = SynthServer::new("event", 9_000.0, 0.4);
    a.seed = 7;
    a.client_bound_above = Some(10_500.0);
    let mut b = SynthServer::new("threads", 5_500.0, 0.9);
    b.seed = 11;
    let rates: Vec<f64> = (1..=12).map(|i| i as f64 * 1000.0).collect();
    synth::sweep(&[a, b], &rates, 1, 5.0)
}

/// A healthy single run.
pub fn build_run() -> RunResult {
    let mut s = SynthServer::new("single-run", 6_000.0, 0.6);
    s.seed = 3;
    synth::run(&s, 4_000.0, 1, 10.0)
}

/// A client-bound single run.
pub fn build_run_client_bound() -> RunResult {
    let mut s = SynthServer::new("client-bound-run", 30_000.0, 0.3);
    s.seed = 5;
    s.client_bound_above = Some(1.0);
    synth::run(&s, 20_000.0, 1, 6.0)
}

/// (file name, builder) of every fixture.
pub fn fixture_files() -> Vec<(&'static str, String)> {
    vec![
        (
            "sweep.json",
            serde_json::to_string_pretty(&build_sweep()).expect("serialize"),
        ),
        (
            "run.json",
            serde_json::to_string_pretty(&build_run()).expect("serialize"),
        ),
        (
            "run-client-bound.json",
            serde_json::to_string_pretty(&build_run_client_bound()).expect("serialize"),
        ),
    ]
}

/// Writes the fixtures when HTTPLAB_UPDATE_FIXTURES=1 (then commit them).
pub fn maybe_update_fixtures() {
    if std::env::var("HTTPLAB_UPDATE_FIXTURES").as_deref() == Ok("1") {
        std::fs::create_dir_all(fixtures_dir()).expect("mkdir fixtures");
        for (name, text) in fixture_files() {
            std::fs::write(fixtures_dir().join(name), text).expect("write fixture");
        }
    }
}

/// The checked-in fixture documents, in a fixed order.
pub fn fixture_paths() -> Vec<PathBuf> {
    maybe_update_fixtures();
    ["sweep.json", "run.json", "run-client-bound.json"]
        .iter()
        .map(|n| fixtures_dir().join(n))
        .collect()
}

/// Reads the checked-in fixtures.
pub fn fixture_docs() -> Vec<Document> {
    fixture_paths()
        .iter()
        .map(|p| httplab_report::read_document(p).expect("fixture parses"))
        .collect()
}
