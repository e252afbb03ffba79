//! Static-file HTTP/1.1 server with several concurrency models.

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point of `httplab serve`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`httplab serve` is not implemented yet")
}
