//! `httplab report`: rendering of saved results (single runs, sweeps,
//! studies) into charts, tables, an HTML page and a Markdown summary, and the
//! pure analysis of measured sweep steps. It runs no load: `httplab sweep`
//! (httplab-sweep) measures and renders through this crate.
//!
//! Public API for other tools (e.g. the study runner):
//! - [`render_report`] / [`html::render_report_with`]: documents → `index.html`,
//!   `summary.md` and one `.svg` per figure.
//! - [`html::figures`], [`text::all_tables`] on [`data::collect`]ed documents,
//!   and the individual charts in [`charts`] and tables in [`text`].
//! - [`analysis`]: step metrics and the saturation analysis of measured steps.
//! - [`csv`]: autobench's CSV/TSV.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod charts;
pub mod csv;
pub mod data;
pub mod forest;
pub mod html;
pub mod shards;
pub mod stages;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
pub mod text;

use anyhow::{Context, Result};
use clap::Parser;
use httplab_model::Document;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

pub use html::{render_report, render_report_with, ReportFiles, ReportOptions};

#[derive(Parser, Debug)]
#[command(
    name = "httplab report",
    about = "Render saved results (httplab load/sweep/study JSON) into charts, tables and an HTML report"
)]
struct ReportCli {
    /// Result files (JSON) to render; several are compared in the same charts.
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// Output directory (index.html, summary.md, one .svg per chart) [default: report;
    /// with --series, no report unless --out is given].
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Page title.
    #[arg(long)]
    title: Option<String>,
    /// Write the per-interval series of every run to FILE: `.csv` or `.jsonl` (JSON lines).
    /// Columns: t_s, len_s, rate, replies, errors, p50_ms, p99_ms, open_connections,
    /// server_cpu_s (a study's server CPU per interval; empty where not sampled). Sweeps,
    /// studies and several files put all their runs in one file, with a leading `run`
    /// column naming each (FILE:target/rate, FILE:workload/server/step/rN).
    #[arg(long, value_name = "FILE")]
    series: Option<PathBuf>,
}

/// `--series`: every run's intervals into one file.
fn write_series(docs: &[Document], names: &[String], path: &std::path::Path) -> Result<usize> {
    use httplab_model::series;
    series::SeriesFormat::of_path(path).map_err(anyhow::Error::msg)?;
    let mut rows = Vec::new();
    for (doc, name) in docs.iter().zip(names) {
        let mut r = series::document_rows(doc);
        if docs.len() > 1 {
            for row in &mut r {
                row.run = Some(match &row.run {
                    Some(k) => format!("{name}:{k}"),
                    None => name.clone(),
                });
            }
        }
        rows.extend(r);
    }
    let text = series::render_for(&rows, path).map_err(anyhow::Error::msg)?;
    std::fs::write(path, text)
        .with_context(|| format!("cannot write --series file {}", path.display()))?;
    Ok(rows.len())
}

/// Reads one result document, naming the file in any error.
pub fn read_document(path: &std::path::Path) -> Result<Document> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Document::from_json(&text)
        .map_err(|e| anyhow::anyhow!("{}: not an httplab result: {e}", path.display()))
}

/// Entry point of `httplab report`: `args[0]` is the program name.
pub fn report_main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let cli = match ReportCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return Ok(httplab_usage::clap_exit("report", &e, &[])),
    };
    let mut docs = Vec::new();
    for p in &cli.results {
        docs.push(read_document(p).map_err(|e| httplab_usage::usage(format!("{e:#}")))?);
    }
    let opts = ReportOptions {
        title: cli.title.clone().unwrap_or_default(),
        sources: cli
            .results
            .iter()
            .map(|p| {
                p.file_name()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.display().to_string())
            })
            .collect(),
    };
    if let Some(path) = &cli.series {
        let n = write_series(&docs, &opts.sources, path)?;
        eprintln!("httplab report: wrote {} ({n} intervals)", path.display());
        if cli.out.is_none() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let out = cli.out.clone().unwrap_or_else(|| PathBuf::from("report"));
    let files = render_report_with(&docs, &out, &opts)?;
    eprintln!(
        "httplab report: wrote {} ({} charts) and {}",
        files.index.display(),
        files.svgs.len(),
        files.markdown.display()
    );
    Ok(ExitCode::SUCCESS)
}
