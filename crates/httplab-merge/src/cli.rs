//! `httplab merge FILE... -o OUT`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use httplab_model::{metric, Document, Metric};

use crate::documents::merge_documents;
use crate::sweep::Analyze;
use crate::Options;

#[derive(Parser, Debug)]
#[command(
    name = "httplab merge",
    about = "Merge the results of a run's client shards (--client I/N) into one result, exactly",
    long_about = "Merge the results of a run's client shards (httplab load --client I/N on N \
machines) into one result, exactly: counters add, latency histograms add bucket by bucket (so \
merged percentiles are those of all the shards' samples together), time series align on the \
common start, and rates are recomputed over the union of the shards' time spans. Sweeps \
(httplab.sweep/1) merge step by step, steps matched by demanded rate. The shards' hosts, starts \
and counters are kept, and `httplab report` shows them as a per-shard table.\n\n\
Refuses results of different runs (run ids, or configurations), overlapping or missing shards, \
and mixed kinds of result. Warns when shards started further apart than --max-skew.",
    after_help = "Example:\n  httplab merge shard-0.json shard-1.json shard-2.json -o all.json\n  httplab report all.json -o report/"
)]
struct MergeCli {
    /// Result files of the shards (JSON written by `httplab load --json` or
    /// `httplab sweep --json`), in any order.
    #[arg(required = true, value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Where to write the merged result (JSON); `-` writes it to standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    output: PathBuf,
    /// Merge results that record no client shard or run id (runs made without
    /// --client I/N): they are taken as shards 0..N-1 in the order given, and
    /// their configurations (targets, rate, counts, durations) must match.
    #[arg(long)]
    force: bool,
    /// Warn when the shards' start times differ by more than this many
    /// seconds (clock skew or a late start).
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, value_parser = parse_skew)]
    max_skew: f64,
    /// Print no summary line (warnings and errors still go to standard error).
    #[arg(short, long)]
    quiet: bool,
}

fn parse_skew(s: &str) -> std::result::Result<f64, String> {
    match s.trim().trim_end_matches('s').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds (>= 0)")),
    }
}

/// Entry point of `httplab merge` (`args[0]` is the program name). Merged
/// sweeps keep no saturation analysis; see [`cli_main_with`].
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    cli_main_with(args, None)
}

/// [`cli_main`] with a function that re-analyses each merged sweep target.
pub fn cli_main_with(args: Vec<OsString>, analyze: Option<Analyze>) -> Result<ExitCode> {
    let cli = match MergeCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return Ok(httplab_usage::clap_exit("merge", &e, &[])),
    };
    let to_stdout = cli.output.as_os_str() == "-";
    if !to_stdout {
        refuse_overwriting_an_input(&cli.output, &cli.inputs)
            .map_err(|e| httplab_usage::usage(format!("{e:#}")))?;
    }
    let mut docs = Vec::with_capacity(cli.inputs.len());
    for p in &cli.inputs {
        // An input that cannot be read or is no result: a usage error.
        let text = std::fs::read_to_string(p)
            .map_err(|e| httplab_usage::usage(format!("cannot read {}: {e}", p.display())))?;
        let doc = Document::from_json(&text).map_err(|e| {
            httplab_usage::usage(format!("{}: not an httplab result: {e}", p.display()))
        })?;
        docs.push((p.display().to_string(), doc));
    }
    let opts = Options {
        force: cli.force,
        max_skew_s: cli.max_skew,
    };
    // Shards that do not make one run are refused: the inputs are wrong.
    let merged = merge_documents(docs, &opts, analyze)
        .map_err(|e| httplab_usage::usage(format!("{e:#}")))?;
    for w in &merged.warnings {
        eprintln!("httplab merge: warning: {w}");
    }
    let json = match &merged.result {
        Document::Run(r) => serde_json::to_string_pretty(r),
        Document::Sweep(s) => serde_json::to_string_pretty(s),
        Document::Study(s) => serde_json::to_string_pretty(s),
    }
    .context("cannot serialise the merged result")?;
    if to_stdout {
        println!("{json}");
    } else {
        std::fs::write(&cli.output, json + "\n")
            .with_context(|| format!("cannot write {}", cli.output.display()))?;
    }
    if !cli.quiet {
        let what = match &merged.result {
            Document::Run(r) => {
                let p99 = Metric::P99Ms.of_run(r).unwrap_or(0.0);
                format!(
                    "{} shards: {} connections, {} requests, {} replies, {} failed calls (errors and 5xx replies), response p99 {p99:.3} ms",
                    r.shards.len(),
                    r.totals.connections,
                    r.totals.requests,
                    r.totals.replies,
                    metric::failed_calls(r)
                )
            }
            Document::Sweep(s) => format!(
                "{} sweeps: {} target(s), {} merged steps",
                cli.inputs.len(),
                s.targets.len(),
                s.targets.iter().map(|t| t.steps.len()).sum::<usize>()
            ),
            Document::Study(_) => String::new(),
        };
        let dest = if to_stdout {
            "standard output".to_string()
        } else {
            cli.output.display().to_string()
        };
        eprintln!("httplab merge: wrote {dest}: {what}");
    }
    Ok(ExitCode::SUCCESS)
}

fn refuse_overwriting_an_input(out: &Path, inputs: &[PathBuf]) -> Result<()> {
    let Ok(o) = out.canonicalize() else {
        return Ok(());
    };
    for i in inputs {
        if i.canonicalize().is_ok_and(|c| c == o) {
            bail!(
                "the output {} is also an input: write the merged result to another file",
                out.display()
            );
        }
    }
    Ok(())
}
