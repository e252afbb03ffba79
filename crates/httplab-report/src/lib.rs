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
pub mod html;
pub mod shards;
pub mod stages;
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
    /// Output directory (index.html, summary.md, one .svg per chart).
    #[arg(long, short = 'o', default_value = "report")]
    out: PathBuf,
    /// Page title.
    #[arg(long)]
    title: Option<String>,
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
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Ok(ExitCode::from(code));
        }
    };
    let mut docs = Vec::new();
    for p in &cli.results {
        docs.push(read_document(p)?);
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
    let files = render_report_with(&docs, &cli.out, &opts)?;
    eprintln!(
        "httplab report: wrote {} ({} charts) and {}",
        files.index.display(),
        files.svgs.len(),
        files.markdown.display()
    );
    Ok(ExitCode::SUCCESS)
}
