//! The `httplab study` command line: options, the built-in list, the
//! dry run, the run itself with its progress bar ([`progress`], a
//! subscriber to the study's events) and the report written at the end.

mod mine;
mod progress;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use crate::execute::options::Options;
use crate::execute::servers::find_httplab_exe;
use crate::plan::estimate::{count_runs, count_runs_range, estimate_seconds};
use crate::plan::text::human_secs;
use crate::plan::{rounds, shard};
use crate::render::plan_text::describe_plan;
use crate::render::report;
use crate::spec;
use crate::studies::{builtin, load_study, restrict_servers, BUILTINS};

/// Run a whole server comparison and write its report.
#[derive(Debug, Parser)]
#[command(
    about = "Run a whole server comparison (httplab's models, nginx, Apache, lighttpd, h2o, Caddy) and write its report",
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
                  httplab study my.toml --out my-report\n\n\
                  My server against nginx:\n  \
                  httplab study --mine './my-server --port {port} --root {root}' --quick\n  \
                  httplab study --mine './my-server -p {port} -d {root}' --against nginx,h2o\n  \
                  httplab study --init mine.toml     write that study as a file to edit, then: httplab study mine.toml"
)]
struct Cli {
    /// A built-in study name (see --list) or a study TOML file [default: default]
    study: Option<String>,
    /// Output directory for index.html, summary.md, results.json and the CSV tables
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
    /// Smallest effect of interest δ as a fraction: "equivalent" means the decision's interval
    /// of the ratio is inside ±δ (docs/statistics.md) [default: the study's, 0.05]
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
    /// Your own server's command line, run against --against (nginx by default) over
    /// six workloads: small files over keep-alive, on a new connection per request, a
    /// 2.9 MB file, each as capacity and as server CPU per request at a fixed rate. `{port}`
    /// (where to listen, on 127.0.0.1) and `{root}` (the files to serve) are required and
    /// filled in; `{dir}` is a scratch directory, `{workers}` 1. Split into words as a shell
    /// would. The answer ("mine vs nginx: …") is the first lines of the output and report
    #[arg(long, value_name = "CMD", help_heading = "My server against nginx")]
    mine: Option<String>,
    /// The peers to compare your server with, comma-separated or repeated: nginx, apache,
    /// lighttpd, h2o, caddy; the first is the baseline [default: nginx]
    #[arg(long, value_name = "PEERS", help_heading = "My server against nginx")]
    against: Vec<String>,
    /// Your server's name in the report [default: mine]
    #[arg(long, value_name = "NAME", help_heading = "My server against nginx")]
    name: Option<String>,
    /// Write the study of --mine as a commented TOML file to edit (your command from
    /// --mine, else a placeholder; --against, --name) and exit; never overwrites a file
    #[arg(long, value_name = "FILE", help_heading = "My server against nginx")]
    init: Option<PathBuf>,
    /// Seconds every server may take to answer its first request before it counts as not
    /// starting [default: the server's ready_timeout_s, 15]
    #[arg(long, value_name = "SECONDS")]
    ready_timeout: Option<f64>,
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
    /// Serve live metrics (Prometheus text format) on http://ADDR/metrics during the study:
    /// the running load run's metrics (updated once per interval) and
    /// `httplab_run_info{workload,server,step,round}`; port 0 picks a free port (printed on
    /// stderr)
    #[arg(long, value_name = "ADDR", value_parser = httplab_live::parse_addr)]
    prometheus: Option<std::net::SocketAddr>,
}

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
        print!("{}", describe_plan(&study));
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
        let runs = spec::parse(text, n).map(|s| count_runs(&s)).unwrap_or(0);
        println!("  {n:<15} {about} [{runs} runs]");
    }
}

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

/// Runs the study (Ctrl-C stops it and keeps what ran), then writes the
/// report, the shard's run files and the summary.
fn run(cli: &Cli, study: &spec::StudyFile, shard: Option<shard::Shard>) -> Result<ExitCode> {
    httplab_load::install_sigint();
    // Servers inherit the limit: workloads with hundreds of users need more
    // than the usual 1024 open files.
    let _ = httplab_sys::limits::raise_nofile_limit();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let bridge = sigint_bridge(Arc::clone(&stop), Arc::clone(&done));
    let served = cli.prometheus.map(httplab_live::serve_load).transpose()?;
    let live = served.as_ref().map(|(l, _)| l.clone());
    let opts = Options {
        httplab_exe: cli.httplab_bin.clone().or_else(find_httplab_exe),
        stop: Arc::clone(&stop),
        on_event: (!cli.no_progress).then(progress::bar),
        work_dir: None,
        quick: cli.quick,
        tls: cli.tls,
        shard: shard.clone(),
        budget_s: if shard.is_some() {
            Some(0.0)
        } else {
            cli.budget
        },
        live,
    };
    let (lo, hi) = count_runs_range(study);
    eprintln!(
        "httplab study: {} ({lo}–{hi} runs, about {} at the fewest); report in {}",
        study.name,
        human_secs(estimate_seconds(study)),
        cli.out.display()
    );
    let result = crate::runner::run_study(study, &opts);
    done.store(true, Ordering::Relaxed);
    let _ = bridge.join();
    let result = result?;
    let interrupted = stop.load(Ordering::Relaxed);
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

/// Passes the process's Ctrl-C flag on to the study's `stop` until `done`.
fn sigint_bridge(stop: Arc<AtomicBool>, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !done.load(Ordering::Relaxed) {
            if httplab_load::interrupted().load(Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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
