//! `httplab`: the thin command-line front end.
//!
//! Each subcommand belongs to one library crate, which owns its own argument
//! parser (so that `load` can accept httperf's spellings and `sweep`
//! autobench's). This binary only dispatches: it strips the subcommand name and
//! hands the remaining arguments, unchanged, to the crate.

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
        httplab_report::sweep_main,
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
];

fn usage() -> String {
    let mut s = String::from(
        "httplab — a web-server performance laboratory\n\n\
         Usage: httplab <COMMAND> [ARGS...]\n\nCommands:\n",
    );
    for (name, about, _) in COMMANDS {
        s.push_str(&format!("  {name:<8} {about}\n"));
    }
    s.push_str("  help     Print this message or the help of the given command\n\n");
    s.push_str("Run `httplab <COMMAND> --help` for the options of a command.\n");
    s
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if args.len() < 2 {
        eprint!("{}", usage());
        return ExitCode::from(2);
    }
    let mut cmd = args[1].to_string_lossy().into_owned();
    if cmd == "help" {
        match args.get(2) {
            Some(c) => {
                cmd = c.to_string_lossy().into_owned();
                args = vec![args[0].clone(), c.clone(), OsString::from("--help")];
            }
            None => {
                print!("{}", usage());
                return ExitCode::SUCCESS;
            }
        }
    }
    match cmd.as_str() {
        "-h" | "--help" => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        "-V" | "--version" => {
            println!("httplab {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let Some((name, _, entry)) = COMMANDS.iter().find(|(n, _, _)| *n == cmd) else {
        eprintln!("error: unknown command '{cmd}'\n");
        eprint!("{}", usage());
        return ExitCode::from(2);
    };
    // The crate sees "httplab <name>" as its program name, then its own args.
    let mut sub = vec![OsString::from(format!("httplab {name}"))];
    sub.extend(args.drain(2..));
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
            ExitCode::FAILURE
        }
    }
}
