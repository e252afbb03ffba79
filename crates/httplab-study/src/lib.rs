//! Whole-experiment runner: corpus, servers, workloads, report.
//!
//! `httplab study [NAME|FILE]` reads a study (a built-in by name, or a TOML
//! file, see `docs/study-format.md`), generates its corpus, starts each
//! server in turn (httplab itself and the peers nginx, Apache, lighttpd and
//! h2o, each configured by httplab), runs every workload against it while
//! sampling its processes from /proc, and writes `index.html`,
//! `results.json` and CSV tables.

pub mod corpus;
pub mod env;
pub mod loadgen;
pub mod report;
pub mod runner;
pub mod sampler;
pub mod servers;
pub mod spec;

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
    long_about = "Runs a study: generates the corpus, starts each server in turn on a free loopback port \
                  (writing peers' configurations itself), runs every workload against it while sampling \
                  the server's processes from /proc, and writes index.html, results.json and CSVs. \
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
    /// Override every workload's repetitions
    #[arg(long, value_name = "N")]
    repetitions: Option<u32>,
    /// Run only these servers (by report name; repeatable)
    #[arg(long = "server", value_name = "NAME")]
    servers: Vec<String>,
    /// The httplab binary for `kind = "httplab"` servers [default: $HTTPLAB_BIN, else this program]
    #[arg(long, value_name = "PATH")]
    httplab_bin: Option<PathBuf>,
    /// No progress bar
    #[arg(long)]
    no_progress: bool,
}

fn install_sigint() {
    httplab_load::install_sigint();
}

/// Raises the open-file limit to its hard maximum (servers inherit it):
/// workloads with hundreds of users need more than the usual 1024.
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max.min(1 << 20);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
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
    if let Some(n) = cli.repetitions {
        study.repetitions = n.max(1);
        for w in &mut study.workloads {
            w.repetitions = Some(n.max(1));
        }
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
    if cli.dry_run {
        print!("{}", runner::describe_plan(&study));
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
    };
    eprintln!(
        "httplab study: {} ({} runs); report in {}",
        study.name,
        runner::count_runs(&study),
        cli.out.display()
    );
    let result = runner::run_study(&study, &opts);
    done.store(true, Ordering::Relaxed);
    let _ = bridge.join();
    let result = result?;
    let interrupted = stop.load(Ordering::Relaxed);
    report::write_all(&result, Some(&study), &cli.out, interrupted)?;
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
