//! Whole-experiment runner: corpus, servers, workloads, report.
//!
//! `httplab study [NAME|FILE]` reads a study (a built-in by name, or a TOML
//! file, see `docs/study-format.md`), generates its corpus, starts every
//! server at once (httplab itself and the peers nginx, Apache, lighttpd and
//! h2o, each configured by httplab), runs every workload in rounds of random
//! server order while sampling the servers from /proc, decides every
//! comparison (`decisions.rs`, `docs/statistics.md`), and writes
//! `index.html`, `results.json` and CSV tables.

#![forbid(unsafe_code)]

pub mod answers;
pub mod corpus;
pub mod cpu;
pub mod decisions;
pub mod env;
pub mod idle;
pub mod report;
pub mod rounds;
pub mod runner;
pub mod sampler;
pub mod servers;
pub mod shard;
pub mod spec;
pub mod tls;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

/// Built-in studies: (name, one-line summary, TOML text).
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "default",
        "Short tour of all four seed studies with httplab, nginx, Apache, lighttpd and h2o (a few minutes)",
        include_str!("../../../studies/default.toml"),
    ),
    (
        "architectures",
        "Seed 000: simple / persistent / pipelined servers and Apache on a page with embedded objects, test-1..3",
        include_str!("../../../studies/architectures.toml"),
    ),
    (
        "file-sizes",
        "Seed 001: 87 B, 12.9 KB and 2.9 MB files at 10 and 150 connections, httplab vs Apache",
        include_str!("../../../studies/file-sizes.toml"),
    ),
    (
        "capacity",
        "Seed 002: reply rate and response time vs request rate, simultaneous clients, 32 MB transfer, memory",
        include_str!("../../../studies/capacity.toml"),
    ),
    (
        "worker-threads",
        "Seed 004: server threads, client load, file size and file-set size; MB/s and accuracy",
        include_str!("../../../studies/worker-threads.toml"),
    ),
    (
        "https",
        "httplab vs nginx, Apache, lighttpd and h2o over TLS: full and resumed handshakes per second, keep-alive requests",
        include_str!("../../../studies/https.toml"),
    ),
    (
        "idle",
        "100, 1 000 and 10 000 idle connections held while a client measures, on httplab's models and every peer (about 3 minutes)",
        include_str!("../../../studies/idle.toml"),
    ),
];

/// Looks up a built-in study by name.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
}

/// Loads a study: a built-in name or a path to a TOML file.
pub fn load_study(which: &str) -> Result<spec::StudyFile> {
    if let Some(text) = builtin(which) {
        return spec::parse(text, &format!("built-in study '{which}'"));
    }
    let path = PathBuf::from(which);
    if !path.exists() {
        let names: Vec<&str> = BUILTINS.iter().map(|(n, _, _)| *n).collect();
        anyhow::bail!(
            "'{which}' is neither a built-in study ({}) nor a file",
            names.join(", ")
        );
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    spec::parse(&text, &path.display().to_string())
}

/// Run a whole server comparison and write its report.
#[derive(Debug, Parser)]
#[command(
    about = "Run a whole server comparison (httplab's models, nginx, Apache, lighttpd, h2o) and write its report",
    long_about = "Runs a study: generates the corpus, starts every server at once, each on its own free loopback \
                  port (writing peers' configurations itself), runs every workload in rounds that visit the \
                  servers in a random order, then gives a budget of extra rounds to the comparisons nearest a \
                  decision, and writes index.html, results.json and CSVs. Every comparison ends as a winner, \
                  equivalent or inconclusive (with the difference the run could have seen); see docs/statistics.md. \
                  Peers that are not installed appear in the report as \"not installed\". \
                  Ctrl-C stops the run in progress, keeps the finished ones and still writes the report. \
                  The study file format is documented in docs/study-format.md.",
    after_help = "Examples:\n  \
                  httplab study                      run the default study (a few minutes)\n  \
                  httplab study --list               list the built-in studies\n  \
                  httplab study capacity --dry-run   show what the capacity study would run\n  \
                  httplab study my.toml --out my-report"
)]
struct Cli {
    /// A built-in study name (see --list) or a study TOML file [default: default]
    study: Option<String>,
    /// Output directory for index.html, results.json, runs.csv and summary.csv
    #[arg(long, short, default_value = "httplab-report")]
    out: PathBuf,
    /// List the built-in studies and exit
    #[arg(long)]
    list: bool,
    /// Print the plan (corpus, servers and their availability, workloads, run count) and exit
    #[arg(long)]
    dry_run: bool,
    /// Print a built-in study's TOML (a starting point for your own) and exit
    #[arg(long)]
    show: bool,
    /// Fewest repetitions of every cell (overrides the study; at least 2, a CI needs two values)
    #[arg(long, value_name = "N", alias = "min-reps")]
    repetitions: Option<u32>,
    /// Most repetitions of every cell: the cap on the extra rounds the sequential design may
    /// give a step [default: the study's, 10]
    #[arg(long, value_name = "N")]
    max_reps: Option<u32>,
    /// Seconds of extra rounds after the first ones, handed to the comparisons nearest a
    /// decision (0: no second phase) [default: the study's budget_s, else as long as the first
    /// phase took]
    #[arg(long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// Smallest effect of interest δ as a fraction: a winner is better by at least 1+δ, and
    /// "equivalent" means the 90 % interval of the ratio is inside ±δ [default: the study's, 0.05]
    #[arg(long, value_name = "FRACTION")]
    delta: Option<f64>,
    /// Seconds of load before each measurement window, discarded [default: the study's, 1]
    #[arg(long, value_name = "SECONDS")]
    warmup: Option<f64>,
    /// Seconds each run measures [default: the study's, 3]
    #[arg(long, value_name = "SECONDS")]
    window: Option<f64>,
    /// Seed of the random server order of every round; recorded in results.json [default: drawn at start]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Trade certainty for time: 2–3 repetitions, 0.3 s warm-up, 1 s window (wider intervals, fewer
    /// comparisons decided)
    #[arg(long)]
    quick: bool,
    /// Run only these servers (by report name; repeatable)
    #[arg(long = "server", value_name = "NAME")]
    servers: Vec<String>,
    /// The httplab binary for `kind = "httplab"` servers [default: $HTTPLAB_BIN, else this program]
    #[arg(long, value_name = "PATH")]
    httplab_bin: Option<PathBuf>,
    /// No progress bar
    #[arg(long)]
    no_progress: bool,
    /// Serve and load over TLS (as `tls = true` in the study file): the study makes a
    /// self-signed certificate for 127.0.0.1, every server serves HTTPS with it, and every
    /// workload runs over TLS, verifying that certificate
    #[arg(long)]
    tls: bool,
    /// This machine is client I of N: every load run of the study runs shard I of its
    /// schedule (as `httplab load --client I/N`). Fixes the study in advance (every cell
    /// exactly its fewest repetitions, one seed for all shards) and keeps each run's JSON
    /// in OUT/runs/ for `httplab merge`; capacity searches, one-stream workloads and
    /// fewer users than N are refused. See docs/distributed.md
    #[arg(long, value_name = "I/N", help_heading = "Client shards")]
    client: Option<String>,
    /// Id of the sharded study, the same on every shard (each run's id is derived from it)
    /// [default: derived from the study and N]
    #[arg(long, value_name = "ID", help_heading = "Client shards")]
    run_id: Option<String>,
}

fn install_sigint() {
    httplab_load::install_sigint();
}

/// Raises the open-file limit as far as allowed (servers inherit it):
/// workloads with hundreds of users need more than the usual 1024.
fn raise_fd_limit() {
    let _ = httplab_sys::limits::raise_nofile_limit();
}

/// Entry point of `httplab study`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            e.print()?;
            return Ok(ExitCode::from(code));
        }
    };
    if cli.list {
        println!("Built-in studies (run with `httplab study NAME`):");
        for (n, about, text) in BUILTINS {
            let runs = spec::parse(text, n)
                .map(|s| runner::count_runs(&s))
                .unwrap_or(0);
            println!("  {n:<15} {about} [{runs} runs]");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let which = cli.study.clone().unwrap_or_else(|| "default".into());
    if cli.show {
        let text = builtin(&which).with_context(|| format!("'{which}' is not a built-in study"))?;
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut study = load_study(&which)?;
    apply_overrides(&mut study, &cli)?;
    if cli.tls {
        study.tls = true;
    }
    if !cli.servers.is_empty() {
        let names: Vec<String> = spec::expand_servers(&study)
            .into_iter()
            .map(|s| s.name)
            .collect();
        for s in &cli.servers {
            if !names.contains(s) {
                anyhow::bail!(
                    "--server '{s}': the study has no such server (have: {})",
                    names.join(", ")
                );
            }
        }
        study = restrict_servers(study, &cli.servers);
    }
    let shard = match (&cli.client, &cli.run_id) {
        (None, None) => None,
        (client, run_id) => {
            let (index, count) = match client {
                Some(c) => shard::parse_client(c)?,
                None => (0, 1),
            };
            let run_id = run_id
                .clone()
                .unwrap_or_else(|| shard::derive_run_id(&study, count));
            shard::check_run_id(&run_id)?;
            let sh = shard::Shard {
                index,
                count,
                run_id,
            };
            shard::prepare(&mut study, &sh).with_context(|| format!("--client {index}/{count}"))?;
            Some(sh)
        }
    };
    if cli.dry_run {
        print!("{}", runner::describe_plan(&study));
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
    install_sigint();
    raise_fd_limit();
    let stop = Arc::new(AtomicBool::new(false));
    let bridge_stop = Arc::clone(&stop);
    let done = Arc::new(AtomicBool::new(false));
    let bridge_done = Arc::clone(&done);
    let bridge = std::thread::spawn(move || {
        while !bridge_done.load(Ordering::Relaxed) {
            if httplab_load::interrupted().load(Ordering::Relaxed) {
                bridge_stop.store(true, Ordering::Relaxed);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let opts = runner::Options {
        httplab_exe: cli.httplab_bin.clone().or_else(runner::find_httplab_exe),
        progress: !cli.no_progress,
        stop: Arc::clone(&stop),
        on_event: None,
        work_dir: None,
        quick: cli.quick,
        tls: cli.tls,
        shard: shard.clone(),
        budget_s: if shard.is_some() {
            Some(0.0)
        } else {
            cli.budget
        },
    };
    let (lo, hi) = runner::count_runs_range(&study);
    eprintln!(
        "httplab study: {} ({lo}–{hi} runs, about {} at the fewest); report in {}",
        study.name,
        runner::human_secs(runner::estimate_seconds(&study)),
        cli.out.display()
    );
    let result = runner::run_study(&study, &opts);
    done.store(true, Ordering::Relaxed);
    let _ = bridge.join();
    let result = result?;
    let interrupted = stop.load(Ordering::Relaxed);
    report::write_all(&result, Some(&study), &cli.out, interrupted)?;
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
    println!("Summary: {}", report::headline(&result, Some(&study)));
    for line in report::summary(&result, Some(&study)) {
        println!("  {line}");
    }
    println!("Report: {}", cli.out.join("index.html").display());
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
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
    Ok(())
}

/// Keeps only the named servers (report names after expansion).
pub fn restrict_servers(mut s: spec::StudyFile, keep: &[String]) -> spec::StudyFile {
    let expanded = spec::expand_servers(&s);
    let mut servers = Vec::new();
    for inst in expanded {
        if keep.contains(&inst.name) {
            let mut sv = inst.spec.clone();
            sv.name = Some(inst.name.clone());
            sv.workers = inst.workers.map(spec::OneOrMany::One);
            servers.push(sv);
        }
    }
    s.servers = servers;
    s.workloads.retain_mut(|w| {
        if w.servers.is_empty() {
            return true;
        }
        w.servers.retain(|n| keep.contains(n));
        !w.servers.is_empty()
    });
    s
}
