//! The `httplab study` command line: options, the built-in list, the
//! dry run, the run itself with its progress bar ([`progress`], a
//! subscriber to the study's events) and the report written at the end.

mod args;
pub mod gate;
mod mine;
mod progress;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;

use args::Cli;

use crate::execute::options::Options;
use crate::execute::servers::find_httplab_exe;
use crate::plan::study_plan::StudyPlan;
use crate::plan::{rounds, shard};
use crate::render::plan_text::{describe_plan, time_text};
use crate::render::report;
use crate::spec;
use crate::studies::{builtin, load_study, restrict_servers, BUILTINS};

/// Entry point of `httplab study`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => return Ok(httplab_usage::clap_exit("study", &e, &[])),
    };
    if cli.list {
        print_list();
        return Ok(ExitCode::SUCCESS);
    }
    // A wrong flag, study name, study file or override: a usage error.
    let usage = |e: anyhow::Error| httplab_usage::usage(format!("{e:#}"));
    mine::check_flags(&cli).map_err(usage)?;
    if let Some(path) = &cli.init {
        mine::init(&cli, path)?;
        return Ok(ExitCode::SUCCESS);
    }
    let which = cli.study.clone().unwrap_or_else(|| "default".into());
    if cli.show {
        let text = builtin(&which)
            .with_context(|| format!("'{which}' is not a built-in study"))
            .map_err(usage)?;
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut study = match &cli.mine {
        Some(cmd) => mine::study(&cli, cmd).map_err(usage)?,
        None => load_study(&which).map_err(usage)?,
    };
    apply_overrides(&mut study, &cli).map_err(usage)?;
    if cli.tls {
        study.tls = true;
    }
    if !cli.servers.is_empty() {
        study = only_servers(study, &cli.servers).map_err(usage)?;
    }
    let shard = shard_of(&cli, &mut study).map_err(usage)?;
    if cli.dry_run {
        let budget = if shard.is_some() {
            Some(0.0)
        } else {
            cli.budget
        };
        let plan = crate::runner::plan(&study, cli.quick, budget);
        print!("{}", describe_plan(&study, &plan));
        if let Some(sh) = &shard {
            println!(
                "shard: client {}/{} of run {} (every cell exactly its fewest repetitions; run files in {}/runs/)",
                sh.index,
                sh.count,
                sh.run_id,
                cli.out.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    mine::preflight(&study, &cli)?;
    run(&cli, &study, shard)
}

/// `--list`: the built-in studies with their run counts.
fn print_list() {
    println!("Built-in studies (run with `httplab study NAME`):");
    for (n, about, text) in BUILTINS {
        let runs = spec::parse(text, n)
            .map(|s| crate::runner::plan(&s, false, None).runs_range().0)
            .unwrap_or(0);
        println!("  {n:<15} {about} [{runs} runs]");
    }
    println!("{SEEDS_NOTE}");
}

/// What "Seed 00N" in the list means, and where it is explained.
const SEEDS_NOTE: &str = "Seeds 000-004 are the five published performance reports the built-in \
studies reproduce; docs/seeds.md says what each measured and which study answers it.";

/// `--server`: the study with only these servers (each must be one of its own).
fn only_servers(study: spec::StudyFile, keep: &[String]) -> Result<spec::StudyFile> {
    let names: Vec<String> = spec::expand_servers(&study)
        .into_iter()
        .map(|s| s.name)
        .collect();
    for s in keep {
        if !names.contains(s) {
            anyhow::bail!(
                "--server '{s}': the study has no such server (have: {})",
                names.join(", ")
            );
        }
    }
    Ok(restrict_servers(study, keep))
}

/// `--client I/N` and `--run-id`: the shard, with the study fixed for it.
fn shard_of(cli: &Cli, study: &mut spec::StudyFile) -> Result<Option<shard::Shard>> {
    if cli.client.is_none() && cli.run_id.is_none() {
        return Ok(None);
    }
    let (index, count) = match &cli.client {
        Some(c) => shard::parse_client(c)?,
        None => (0, 1),
    };
    let run_id = cli
        .run_id
        .clone()
        .unwrap_or_else(|| shard::derive_run_id(study, count));
    shard::check_run_id(&run_id)?;
    let sh = shard::Shard {
        index,
        count,
        run_id,
    };
    shard::prepare(study, &sh).with_context(|| format!("--client {index}/{count}"))?;
    Ok(Some(sh))
}

/// The budget of extra rounds in force: none for a client shard (every
/// cell exactly its fewest rounds), else `--budget` (None: the study's).
fn budget_of(cli: &Cli, sharded: bool) -> Option<f64> {
    if sharded {
        Some(0.0)
    } else {
        cli.budget
    }
}

/// Runs the study (Ctrl-C stops it and keeps what ran), then writes the
/// report, the shard's run files and the summary.
fn run(cli: &Cli, study: &spec::StudyFile, shard: Option<shard::Shard>) -> Result<ExitCode> {
    let served = cli.prometheus.map(httplab_live::serve_load).transpose()?;
    let live = served.as_ref().map(|(l, _)| l.clone());
    let opts = Options {
        httplab_exe: cli.httplab_bin.clone().or_else(find_httplab_exe),
        stop: Arc::new(AtomicBool::new(false)),
        on_event: (!cli.no_progress).then(progress::bar),
        work_dir: None,
        quick: cli.quick,
        tls: cli.tls,
        shard: shard.clone(),
        budget_s: budget_of(cli, shard.is_some()),
        live,
    };
    let plan = crate::runner::plan_of(study, &opts);
    let (lo, hi) = plan.runs_range();
    eprintln!(
        "httplab study: {} ({lo}–{hi} runs; {}); report in {}",
        study.name,
        time_text(&plan),
        cli.out.display()
    );
    let (result, interrupted) = run_interruptible(study, &plan, &opts)?;
    report::write_all(&result, Some(study), &cli.out, interrupted)?;
    // The answer first: "mine vs nginx: …" (studies with a baseline).
    for line in crate::render::versus::lines(&result, Some(study)) {
        println!("{line}");
    }
    if let Some(sh) = &shard {
        let n = write_run_files(&result, sh, &cli.out)?;
        println!(
            "Shard {}/{} of {}: {n} run file(s) in {} (merge each run's shards with `httplab merge`)",
            sh.index,
            sh.count,
            sh.run_id,
            cli.out.join("runs").display()
        );
    }
    println!("Summary: {}", report::headline(&result, Some(study)));
    for line in report::summary(&result, Some(study)) {
        println!("  {line}");
    }
    println!("Report: {}", cli.out.join("index.html").display());
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `plan` while Ctrl-C sets `opts.stop` (finished runs are kept):
/// the result and whether it was interrupted. Servers inherit the raised
/// open-files limit: workloads with hundreds of users need more than the
/// usual 1024.
pub(crate) fn run_interruptible(
    study: &spec::StudyFile,
    plan: &StudyPlan,
    opts: &Options,
) -> Result<(httplab_model::StudyResult, bool)> {
    let _sigint = httplab_sys::signal::stop_on_sigint(&opts.stop).context("catching Ctrl-C")?;
    let _ = httplab_sys::limits::raise_nofile_limit();
    let result = crate::runner::run_plan(study, plan, opts);
    Ok((result?, opts.stop.load(Ordering::Relaxed)))
}

/// Writes every run of a sharded study as its own `httplab.run/1` document
/// under `OUT/runs/` (see [`shard::run_file_name`]); returns how many.
pub fn write_run_files(
    res: &httplab_model::StudyResult,
    sh: &shard::Shard,
    out: &std::path::Path,
) -> Result<usize> {
    let dir = out.join("runs");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = shard::run_files(res, sh);
    for (name, run) in &files {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(run).context("serializing a run")?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(files.len())
}

/// Applies the command line's protocol options to the study.
fn apply_overrides(study: &mut spec::StudyFile, cli: &Cli) -> Result<()> {
    if cli.quick {
        rounds::make_quick(study);
    }
    let p = &mut study.protocol;
    if let Some(n) = cli.repetitions {
        if n < 2 {
            anyhow::bail!("--repetitions {n}: at least 2 (a confidence interval needs two values)");
        }
        p.min_repetitions = n;
        p.max_repetitions = p.max_repetitions.max(n);
        study.repetitions = None;
        for w in &mut study.workloads {
            w.repetitions = None;
        }
    }
    if let Some(n) = cli.max_reps {
        if n < p.min_repetitions {
            anyhow::bail!(
                "--max-reps {n} is below the fewest repetitions ({})",
                p.min_repetitions
            );
        }
        p.max_repetitions = n;
        for w in &mut study.workloads {
            w.max_repetitions = None;
        }
    }
    if let Some(x) = cli.delta {
        if !(x > 0.0 && x < 1.0) {
            anyhow::bail!("--delta {x}: a fraction between 0 and 1 (0.05 = ±5 %)");
        }
        p.min_effect = x;
    }
    if let Some(x) = cli.budget {
        if !(x >= 0.0 && x.is_finite()) {
            anyhow::bail!("--budget {x}: seconds, 0 or more");
        }
        // The budget in force, so that the plan (`--dry-run`) shows it.
        p.budget_s = Some(x);
    }
    if let Some(x) = cli.warmup {
        if !(0.0..=600.0).contains(&x) {
            anyhow::bail!("--warmup {x}: seconds between 0 and 600");
        }
        p.warmup_s = x;
        for w in &mut study.workloads {
            w.warmup_s = None;
        }
    }
    if let Some(x) = cli.window {
        if !(0.1..=3600.0).contains(&x) {
            anyhow::bail!("--window {x}: seconds between 0.1 and 3600");
        }
        p.window_s = x;
        for w in &mut study.workloads {
            w.window_s = None;
        }
    }
    if let Some(x) = cli.seed {
        p.seed = Some(x);
    }
    if let Some(x) = cli.ready_timeout {
        if !(0.1..=600.0).contains(&x) {
            anyhow::bail!("--ready-timeout {x}: seconds between 0.1 and 600");
        }
        for s in &mut study.servers {
            s.ready_timeout_s = Some(x);
        }
    }
    Ok(())
}
