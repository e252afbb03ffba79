//! Result rendering (text, CSV, JSON, SVG, HTML) and rate sweeps.

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `httplab sweep`: `args[0]` is the program name.
pub fn sweep_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`httplab sweep` is not implemented yet")
}

/// Entry point of `httplab report`: `args[0]` is the program name.
pub fn report_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`httplab report` is not implemented yet")
}
