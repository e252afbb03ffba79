//! Open- and closed-loop HTTP load generator, httperf-compatible.

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `httplab load`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`httplab load` is not implemented yet")
}
