//! Whole-experiment runner: corpus, servers, workloads, report.

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `httplab study`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`httplab study` is not implemented yet")
}
