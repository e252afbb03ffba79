//! `httplab`: the thin command-line front end.
//!
//! Each subcommand belongs to one library crate, which owns its own argument
//! parser (so that `load` can accept httperf's spellings and `sweep`
//! autobench's). This binary only dispatches: it strips the subcommand name and
//! hands the remaining arguments, unchanged, to the crate.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::process::ExitCode;

type Entry = fn(Vec<OsString>) -> anyhow::Result<ExitCode>;

/// (name, one-line summary, entry point)
const COMMANDS: &[(&str, &str, Entry)] = &[
    (
        "serve",
        "Serve a directory over HTTP/1.1 (event, threads, fork or single model)",
        httplab_server::cli_main,
    ),
    (
        "load",
        "Generate HTTP load; accepts httperf's command lines, prints its report and more",
        httplab_load::cli_main,
    ),
    (
        "sweep",
        "Run load at rising rates (autobench-style) and find the saturation point",
        httplab_sweep::sweep_main,
    ),
    (
        "report",
        "Render saved results (JSON) into charts, tables and an HTML report",
        httplab_report::report_main,
    ),
    (
        "study",
        "Run a whole server comparison and write its report",
        httplab_study::cli_main,
    ),
    (
        "merge",
        "Merge the results of a run's client shards (--client I/N) into one, exactly",
        merge_main,
    ),
    (
        "compare",
        "Did NEW get slower than BASE? Saved results, or two servers run in alternation (exit status 1 on a regression)",
        compare_main,
    ),
];

/// `httplab merge`, with merged sweeps re-analysed by the report's
/// saturation analysis (httplab-merge itself depends only on the model).
fn merge_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    httplab_merge::cli_main_with(args, Some(httplab_report::analysis::analyze))
}

/// `httplab compare`, whose paired mode (`--base-cmd`, `--new-cmd`) runs
/// its two servers through the study crate (httplab-compare runs no load).
fn compare_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    httplab_compare::cli_main_with(args, Some(httplab_study::run_paired))
}

fn cli() -> clap::Command {
    use clap::{Arg, Command};
    let mut cmd = Command::new("httplab")
        .version(env!("CARGO_PKG_VERSION"))
        .about("httplab — a web-server performance laboratory")
        .long_about(
            "httplab — a web-server performance laboratory.\n\n\
             One tool to serve, load, sweep and compare HTTP servers: a fast static-file server \
             with several concurrency models, an httperf-compatible open/closed-loop load \
             generator, autobench-style sweeps with charts, and whole studies against nginx, \
             Apache, lighttpd and h2o.",
        )
        .after_help("Run `httplab <COMMAND> --help` for the options of a command.")
        .disable_help_subcommand(true)
        .subcommand_required(true)
        .arg_required_else_help(true);
    cmd = cmd.subcommand(
        Command::new("help")
            .about("Print this message or the help of the given command")
            .arg(
                Arg::new("command").value_parser(COMMANDS.iter().map(|c| c.0).collect::<Vec<_>>()),
            ),
    );
    for (name, about, _) in COMMANDS {
        cmd = cmd.subcommand(
            Command::new(*name)
                .about(*about)
                .disable_help_flag(true)
                .disable_version_flag(true)
                .arg(
                    Arg::new("args")
                        .num_args(0..)
                        .trailing_var_arg(true)
                        .allow_hyphen_values(true)
                        .value_parser(clap::value_parser!(OsString)),
                ),
        );
    }
    cmd
}

fn main() -> ExitCode {
    let matches = match cli().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let Some((mut name, sub_m)) = matches.subcommand() else {
        return ExitCode::from(2);
    };
    let mut forwarded: Vec<OsString> = sub_m
        .try_get_many::<OsString>("args")
        .ok()
        .flatten()
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    if name == "help" {
        match sub_m.get_one::<String>("command") {
            Some(c) => {
                name = COMMANDS.iter().find(|x| x.0 == c).map_or("", |x| x.0);
                forwarded = vec![OsString::from("--help")];
            }
            None => {
                let _ = cli().print_long_help();
                return ExitCode::SUCCESS;
            }
        }
    }
    let Some((_, _, entry)) = COMMANDS.iter().find(|(n, _, _)| *n == name) else {
        return ExitCode::from(2);
    };
    // The crate sees "httplab <name>" as its program name, then its own args.
    let mut sub = vec![OsString::from(format!("httplab {name}"))];
    sub.extend(forwarded);
    match entry(sub) {
        Ok(code) => code,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("httplab {name}: error: {e:#}");
            // The one mapping of errors to statuses (httplab-usage's table).
            if httplab_usage::is_usage(e.chain()) {
                ExitCode::from(httplab_usage::USAGE)
            } else {
                ExitCode::from(httplab_usage::FAILED)
            }
        }
    }
}
