//! `httplab sweep`: autobench's rate sweep on top of `httplab load`, and the
//! `--find-max` saturation search. Everything here runs load; the analysis of
//! finished steps and all rendering (CSV, charts, HTML) are httplab-report's.
//!
//! Command line: autobench's options in either spelling (`--low_rate 10` or
//! `--low-rate=10`, `--host1=www.example.com`, `--single_host`, `--num_call`,
//! `--const_test_time`), httperf's (`--num-conns`, `--num-calls`, `--timeout`),
//! target URLs as positional arguments, and an `~/.autobench.conf`-style
//! config file (`--config FILE`; `~/.autobench.conf` is read when present
//! unless `--no-config`). Command-line values override the file, as in
//! autobench. Any other option — or everything after `--` — is passed to the
//! load generator unchanged (the file's `httperf_*` keys too, as autobench does).
//!
//! Public API for other tools (e.g. the study runner):
//! - [`parse_plan`]: arguments → [`SweepPlan`];
//! - [`run_sweep`]: the sweep loop with a pluggable runner; [`execute`] adds
//!   progress and writes every output; [`load_runner`] is `httplab load` in
//!   process;
//! - [`find_max`] / [`FindMax`]: the adaptive capacity search, running load
//!   through a closure.

#![forbid(unsafe_code)]

mod cli;
mod config;
mod output;
mod parse;
mod plan;
mod run;
mod saturation_search;
pub mod staged;

pub use cli::split_args;
pub use config::parse_config;
pub use output::{execute, httperf_report, step_line, summary, write_outputs};
pub use parse::{parse_duration_ms, parse_plan};
pub use plan::{
    StepSize, SweepPlan, Target, CALIBRATION_SLOT_S, DEFAULT_STEP_SECONDS, DEFAULT_WARMUP_SECONDS,
};
pub use run::{
    install_sigint, load_runner, load_runner_live, run_load, run_sweep, spec_runner, stop_flag,
    was_interrupted,
};
pub use saturation_search::{find_max, FindMax, FIND_MAX_PRECISION};

use anyhow::Result;
use httplab_model::RunResult;
use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `httplab sweep`: `args[0]` is the program name.
pub fn sweep_main(args: Vec<OsString>) -> Result<ExitCode> {
    let plan = match parse_plan(&args).map_err(|e| httplab_usage::usage(format!("{e:#}")))? {
        Ok(p) => p,
        Err(e) => return Ok(clap_exit(&e)),
    };
    install_sigint();
    // `--prometheus`: the endpoint serves until the sweep is written.
    let served = plan.prometheus.map(httplab_live::serve_load).transpose()?;
    let live = served.as_ref().map(|(l, _)| l.clone());
    let result = if plan.staged {
        // One staged run per target.
        staged::check(&plan)?;
        execute(&plan, staged::runner(&plan, spec_runner(&plan)))?
    } else {
        execute(&plan, run::load_runner_live(&plan, live))?
    };
    if was_interrupted(&result) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// `httplab sweep` with a caller-supplied runner (tests, study runner).
pub fn sweep_main_with<R>(args: Vec<OsString>, runner: R) -> Result<ExitCode>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
{
    let plan = match parse_plan(&args).map_err(|e| httplab_usage::usage(format!("{e:#}")))? {
        Ok(p) => p,
        Err(e) => return Ok(clap_exit(&e)),
    };
    let result = execute(&plan, runner)?;
    if was_interrupted(&result) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints clap's help, version or error; exit 0 for help and version, 2 for
/// an error.
fn clap_exit(e: &clap::Error) -> ExitCode {
    httplab_usage::clap_exit("sweep", e, &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_report::synth;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn cli_with_a_synthetic_runner_writes_every_output() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("s.tsv");
        let report = dir.path().join("rep");
        let server = synth::SynthServer::new("a", 3_000.0, 0.5);
        let code = sweep_main_with(
            os(&[
                "httplab sweep",
                "--no-config",
                "--host1=h1",
                "--host2=h2",
                "--low_rate=1000",
                "--high_rate=4000",
                "--rate_step=1000",
                "--output_fmt=tsv",
                "--quiet",
                &format!("--file={}", csv.display()),
                &format!("--report={}", report.display()),
            ]),
            |_, rate| Ok(synth::run(&server, rate, 1, 2.0)),
        )
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(text.starts_with("dem_req_rate\treq_rate_h1\t"));
        assert!(text.lines().all(|l| l.split('\t').count() == 19));
        let json = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
        let doc = httplab_model::Document::from_json(&json).unwrap();
        let httplab_model::Document::Sweep(sw) = doc else {
            panic!("not a sweep")
        };
        assert_eq!(sw.targets.len(), 2);
        assert_eq!(sw.targets[0].saturation.max_sustainable_rate, Some(3000.0));
        assert!(report.join("index.html").is_file());
    }
}
