//! The command line of `httplab compare`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::judge::{judge, Options};
use crate::metric::Metric;
use crate::paired::{self, Request, Runner, Work};
use crate::{baseline, input, render};

const AFTER_HELP: &str = "\
Each side is one or more result files of one kind: load results (`httplab load --json`,
with `--repeat N` for several runs in one file), sweep results or study results. A side is
FILE, a comma-separated list FILE,FILE,..., or a directory (its *.json files).

Per metric (reply rate, p50, p99, p99.9, errors, client CPU per reply, server CPU per reply
where the results have it; for studies per workload step and server, for sweeps per step
and the highest sustained rate) it prints NEW/BASE as a ratio of geometric means with its
interval and a verdict: regression, improvement, equivalent or inconclusive, by the
rules of `httplab study` (docs/statistics.md) on an unpaired (Welch) interval. A verdict
needs at least 2 runs per side. Each result file is one session: where a side has several
(a baseline saved from separate runs), sessions are compared, not runs, and no change
within the spread between sessions is called; with one session a side the output says that
this spread was not measured. Errors are compared as counts (failed calls, errors of every
class and 5xx replies, over calls, summed over the runs, by an exact test); no errors on
either side is never a regression.

Paired mode (--base-cmd and --new-cmd): instead of reading saved results, httplab runs both
servers itself, started at once and measured in alternation in one session (the study's
rounds of random order, each visit in short A B | B A slices), at the same fixed request rate,
and judges NEW against BASE on the server's own CPU per request by the study's rules. Runs
made at different times share whatever else changed on the machine in between; paired runs
do not, so far smaller changes are seen. Each command is one shell-style line with {port}
(the port to listen on, 127.0.0.1) and {root} (the directory of files to serve); the
servers get core 0 and the load generator core 1. It takes about two and a half minutes
(--budget sets the time of the extra rounds). A regression is NEW costing significantly more
CPU per request than BASE with the whole interval of NEW/BASE (the decision's, at the
level of the study's family) above 1 + --threshold (default 0 in this mode: any regression
the interval shows).

Exit status:
  0  no regression beyond --threshold
  1  a regression beyond --threshold (paired mode: also when the two could not be compared)
  2  usage or input error

Examples:
  httplab load http://127.0.0.1:8080/ --rate 500 --duration 5s --repeat 5 --json base.json
  httplab compare --save-baseline main base.json
  httplab load http://127.0.0.1:8080/ --rate 500 --duration 5s --repeat 5 --json new.json
  httplab compare --baseline main new.json          # exit status 1 on a regression
  httplab compare base.json new.json --metric p99 --threshold 10 --html compare.html
  httplab compare --base-cmd './old/my-server --port {port} --root {root}' \
                  --new-cmd './new/my-server --port {port} --root {root}'";

/// `httplab compare`: is NEW slower than BASE?
#[derive(Parser, Debug)]
#[command(
    name = "httplab compare",
    version,
    about = "Compare saved results: did NEW get slower than BASE? (a regression gate; runs no load)",
    after_help = AFTER_HELP,
    override_usage = "httplab compare [OPTIONS] BASE NEW\n       httplab compare [OPTIONS] --baseline NAME NEW\n       httplab compare --save-baseline NAME FILE...\n       httplab compare [OPTIONS] --base-cmd CMD --new-cmd CMD",
    max_term_width = 100
)]
struct Cli {
    /// BASE then NEW (each FILE, FILE,FILE... or DIR); with --baseline only NEW; with
    /// --save-baseline the files to save.
    #[arg(value_name = "BASE NEW")]
    inputs: Vec<String>,
    /// A regression counts for the exit status only when NEW is worse by more than PCT
    /// percent [default: 5; paired mode: 0, and "worse by more" means the whole interval].
    #[arg(long, value_name = "PCT")]
    threshold: Option<String>,
    /// δ, the smallest change of interest: "equivalent" means the verdict's interval lies
    /// within ±δ [default: 5, the study's].
    #[arg(long, value_name = "PCT")]
    delta: Option<String>,
    /// Only these metrics (repeatable or comma-separated): reply_rate, p50, p99, p99.9,
    /// errors, client_cpu, server_cpu, max_sustainable_rate, or a study metric key.
    #[arg(long, value_name = "METRIC", value_delimiter = ',')]
    metric: Vec<String>,
    /// Also write a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print the judgement as JSON (schema httplab.compare/1) instead of text.
    #[arg(long)]
    json: bool,
    /// Use the saved baseline NAME as BASE (give only NEW).
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Save the given result files as baseline NAME (replacing one of that name) and exit.
    #[arg(long, value_name = "NAME", conflicts_with = "baseline")]
    save_baseline: Option<String>,
    /// List the saved baselines and exit.
    #[arg(long)]
    list_baselines: bool,
    /// Where named baselines are kept.
    #[arg(long, value_name = "DIR", default_value = baseline::DEFAULT_DIR)]
    baseline_dir: PathBuf,
    /// Paired mode: BASE's command line ({port} and {root} are filled in).
    #[arg(
        long,
        value_name = "CMD",
        requires = "new_cmd",
        help_heading = "Paired mode"
    )]
    base_cmd: Option<String>,
    /// Paired mode: NEW's command line ({port} and {root} are filled in).
    #[arg(
        long,
        value_name = "CMD",
        requires = "base_cmd",
        help_heading = "Paired mode"
    )]
    new_cmd: Option<String>,
    /// Paired mode: the work both servers get at a fixed rate: small (87 B, 10 keep-alive
    /// requests per connection), small-new-connection, large (2.9 MB per connection).
    #[arg(
        long,
        value_name = "WORK",
        default_value = "small",
        help_heading = "Paired mode"
    )]
    work: String,
    /// Paired mode: new connections per second [default: 1000 for small work, 20 for large].
    #[arg(long, value_name = "N", help_heading = "Paired mode")]
    rate: Option<f64>,
    /// Paired mode: seconds of extra rounds after the first four [default: 120].
    #[arg(long, value_name = "SECONDS", help_heading = "Paired mode")]
    budget: Option<String>,
    /// Paired mode: also write the study's report (index.html, results.json) into DIR.
    #[arg(long, value_name = "DIR", help_heading = "Paired mode")]
    out: Option<PathBuf>,
    /// Paired mode: no progress bar.
    #[arg(long, help_heading = "Paired mode")]
    no_progress: bool,
}

/// "5", "5%", "5 %" → 0.05.
fn percent(what: &str, s: &str) -> Result<f64> {
    let t = s.trim().trim_end_matches('%').trim();
    let v: f64 = t
        .parse()
        .with_context(|| format!("{what} {s:?}: expected a percentage such as 5 or 2.5"))?;
    if !(v.is_finite() && (0.0..100.0).contains(&v)) {
        bail!("{what} {s:?}: expected a percentage from 0 to below 100");
    }
    Ok(v / 100.0)
}

/// Entry point of `httplab compare` without the paired mode (see [`cli_main_with`]).
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    cli_main_with(args, None)
}

/// Entry point of `httplab compare`: `args[0]` is the program name; `paired` runs the paired
/// mode's study (None: the mode is refused). Errors are printed here and give exit status 2
/// (1 is a regression), except a paired run that failed (1).
pub fn cli_main_with(args: Vec<OsString>, paired: Option<Runner>) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return Ok(httplab_usage::clap_exit("compare", &e, &[])),
    };
    if cli.base_cmd.is_some() {
        return run_paired(&cli, paired);
    }
    match run(&cli) {
        Ok(code) => Ok(code),
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return Ok(ExitCode::SUCCESS);
            }
            eprintln!("httplab compare: error: {e:#}");
            Ok(ExitCode::from(httplab_usage::USAGE))
        }
    }
}

/// A usage error of the paired mode: printed, exit status 2.
fn usage(msg: &str) -> ExitCode {
    eprintln!("httplab compare: error: {msg}");
    ExitCode::from(httplab_usage::USAGE)
}

/// The paired mode: checks its options, runs the study, prints the gate's reading.
fn run_paired(cli: &Cli, runner: Option<Runner>) -> Result<ExitCode> {
    let Some(runner) = runner else {
        return Ok(usage(
            "--base-cmd/--new-cmd: this build of httplab compare cannot run servers",
        ));
    };
    let saved_only = [
        (!cli.inputs.is_empty(), "BASE NEW files"),
        (cli.baseline.is_some(), "--baseline"),
        (cli.save_baseline.is_some(), "--save-baseline"),
        (cli.list_baselines, "--list-baselines"),
        (!cli.metric.is_empty(), "--metric"),
        (
            cli.html.is_some(),
            "--html (use --out DIR for the study's report)",
        ),
        (cli.json, "--json (use --out DIR: its results.json)"),
    ];
    if let Some((_, what)) = saved_only.iter().find(|(given, _)| *given) {
        return Ok(usage(&format!(
            "{what} compares saved results; it does not go with --base-cmd/--new-cmd, which run the servers"
        )));
    }
    let (Some(b), Some(n)) = (&cli.base_cmd, &cli.new_cmd) else {
        return Ok(usage("give both --base-cmd and --new-cmd"));
    };
    let command = |flag: &str, line: &str| httplab_usage::server_command(flag, line, &[]);
    let (base, new) = match (command("--base-cmd", b), command("--new-cmd", n)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return Ok(usage(&e.0)),
    };
    let Some(work) = Work::parse(&cli.work) else {
        let words: Vec<&str> = Work::ALL.iter().map(|(_, w)| *w).collect();
        return Ok(usage(&format!(
            "--work {}: one of {}",
            cli.work,
            words.join(", ")
        )));
    };
    if let Some(r) = cli.rate {
        if !(r.is_finite() && r > 0.0) {
            return Ok(usage(&format!(
                "--rate {r}: new connections per second, above 0"
            )));
        }
    }
    let budget_s = match &cli.budget {
        None => None,
        Some(t) => match t.trim().trim_end_matches('s').trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
            _ => return Ok(usage(&format!("--budget {t}: seconds, 0 or more"))),
        },
    };
    let threshold = match &cli.threshold {
        None => 0.0,
        Some(t) => match percent("--threshold", t) {
            Ok(x) => x,
            Err(e) => return Ok(usage(&format!("{e:#}"))),
        },
    };
    let delta = match &cli.delta {
        None => 0.05,
        Some(d) => match percent("--delta", d) {
            Ok(x) if x > 0.0 => x,
            Ok(_) => return Ok(usage("--delta must be above 0")),
            Err(e) => return Ok(usage(&format!("{e:#}"))),
        },
    };
    let req = Request {
        base,
        new,
        work,
        rate: cli.rate,
        budget_s,
        delta,
        out: cli.out.clone(),
        progress: !cli.no_progress,
    };
    let res = match runner(&req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("httplab compare: error: {e:#}");
            return Ok(ExitCode::from(httplab_usage::FAILED));
        }
    };
    let gate = paired::decide(&res, threshold);
    let mut stdout = std::io::stdout().lock();
    for line in &gate.lines {
        writeln!(stdout, "{line}")?;
    }
    if let Some(out) = &cli.out {
        writeln!(stdout, "Report: {}", out.join("index.html").display())?;
    }
    stdout.flush()?;
    Ok(match gate.outcome {
        paired::Outcome::Pass => ExitCode::SUCCESS,
        paired::Outcome::Regression | paired::Outcome::NotMeasured => {
            ExitCode::from(httplab_usage::FAILED)
        }
    })
}

fn run(cli: &Cli) -> Result<ExitCode> {
    let paired_only = [
        (cli.work != "small", "--work"),
        (cli.rate.is_some(), "--rate"),
        (cli.budget.is_some(), "--budget"),
        (cli.out.is_some(), "--out"),
        (cli.no_progress, "--no-progress"),
    ];
    if let Some((_, what)) = paired_only.iter().find(|(given, _)| *given) {
        bail!("{what} goes with --base-cmd and --new-cmd (the paired mode, which runs the servers); saved results were measured already");
    }
    if cli.list_baselines {
        for n in baseline::list(&cli.baseline_dir)? {
            println!("{n}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(name) = &cli.save_baseline {
        return save(cli, name);
    }
    let (base_files, new_files) = sides(cli)?;
    let mut opts = Options {
        threshold: percent("--threshold", cli.threshold.as_deref().unwrap_or("5"))?,
        metrics: cli.metric.iter().map(|m| Metric::parse(m)).collect(),
        ..Options::default()
    };
    if let Some(d) = &cli.delta {
        opts.delta = percent("--delta", d)?;
        if opts.delta <= 0.0 {
            bail!("--delta must be above 0");
        }
    }
    let base = input::side(&base_files)?;
    let mut new = input::side(&new_files)?;
    let aligned = input::align_single_targets(&base, &mut new);
    let mut j = judge(&base, &new, &opts)?;
    j.notes.extend(aligned);
    let out = if cli.json {
        render::json(&j, &base.files, &new.files)?
    } else {
        render::text(&j)
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    if let Some(path) = &cli.html {
        std::fs::write(path, render::html(&j, &base.files, &new.files))
            .with_context(|| format!("cannot write --html file {}", path.display()))?;
    }
    Ok(if j.regressions().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The files of BASE and NEW from the positional arguments and --baseline.
fn sides(cli: &Cli) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    match (&cli.baseline, cli.inputs.as_slice()) {
        (Some(name), [new]) => Ok((
            baseline::files(&cli.baseline_dir, name)?,
            input::expand(new)?,
        )),
        (Some(_), _) => bail!(
            "with --baseline NAME give NEW only (one FILE, FILE,FILE... or DIR), got {} arguments",
            cli.inputs.len()
        ),
        (None, [base, new]) => Ok((input::expand(base)?, input::expand(new)?)),
        (None, _) => bail!(
            "give BASE and NEW (each FILE, FILE,FILE... or DIR), or --baseline NAME and NEW; got {} arguments (see --help)",
            cli.inputs.len()
        ),
    }
}

fn save(cli: &Cli, name: &str) -> Result<ExitCode> {
    baseline::check_name(name)?;
    if cli.inputs.is_empty() {
        bail!("--save-baseline {name}: give the result files to save");
    }
    let mut files = Vec::new();
    for a in &cli.inputs {
        files.extend(input::expand(a)?);
    }
    // Refuse what could not be compared later: unreadable files, mixed kinds.
    let side = input::side(&files)?;
    let written = baseline::save(&cli.baseline_dir, name, &files)?;
    println!(
        "saved baseline {name:?}: {} {} file{} in {}",
        written.len(),
        side.kind.name(),
        if written.len() == 1 { "" } else { "s" },
        baseline::path(&cli.baseline_dir, name)?.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(percent("x", "5").ok(), Some(0.05));
        assert_eq!(percent("x", "2.5 %").ok(), Some(0.025));
        assert_eq!(percent("x", "10%").ok(), Some(0.1));
        for bad in ["", "abc", "-1", "100", "NaN", "inf"] {
            assert!(percent("x", bad).is_err(), "{bad}");
        }
    }
}
