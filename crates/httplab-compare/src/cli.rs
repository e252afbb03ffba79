//! The command line of `httplab compare`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::judge::{judge, Options};
use crate::metric::Metric;
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
needs at least 2 runs per side. Errors are compared as counts (errors over calls, summed
over the runs, by an exact test); no errors on either side is never a regression.

Exit status:
  0  no regression beyond --threshold
  1  a regression beyond --threshold
  2  usage or input error

Examples:
  httplab load http://127.0.0.1:8080/ --rate 500 --duration 5s --repeat 5 --json base.json
  httplab compare --save-baseline main base.json
  httplab load http://127.0.0.1:8080/ --rate 500 --duration 5s --repeat 5 --json new.json
  httplab compare --baseline main new.json          # exit status 1 on a regression
  httplab compare base.json new.json --metric p99 --threshold 10 --html compare.html";

/// `httplab compare`: is NEW slower than BASE?
#[derive(Parser, Debug)]
#[command(
    name = "httplab compare",
    version,
    about = "Compare saved results: did NEW get slower than BASE? (a regression gate; runs no load)",
    after_help = AFTER_HELP,
    override_usage = "httplab compare [OPTIONS] BASE NEW\n       httplab compare [OPTIONS] --baseline NAME NEW\n       httplab compare --save-baseline NAME FILE...",
    max_term_width = 100
)]
struct Cli {
    /// BASE then NEW (each FILE, FILE,FILE... or DIR); with --baseline only NEW; with
    /// --save-baseline the files to save.
    #[arg(value_name = "BASE NEW")]
    inputs: Vec<String>,
    /// A regression counts for the exit status only when NEW is worse by more than PCT
    /// percent.
    #[arg(long, value_name = "PCT", default_value = "5")]
    threshold: String,
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

/// Entry point of `httplab compare`: `args[0]` is the program name. Errors are printed here
/// and give exit status 2 (1 is a regression).
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return Ok(httplab_usage::clap_exit("compare", &e, &[])),
    };
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

fn run(cli: &Cli) -> Result<ExitCode> {
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
        threshold: percent("--threshold", &cli.threshold)?,
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
