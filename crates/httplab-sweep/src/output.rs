//! What a sweep writes: progress and one line per step on the terminal,
//! autobench's CSV (streamed as each rate completes), the JSON document, the
//! HTML report (rendered by httplab-report) and the closing summary.

use crate::plan::{fmt_rate, SweepPlan, Target};
use crate::run::{run_sweep, was_interrupted};
use anyhow::{Context, Result};
use httplab_model::{RunResult, SweepResult};
use httplab_report::csv::{self as abcsv, Format};
use httplab_report::{analysis, charts, html};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;

/// Runs `plan` with progress on stderr, writes every output, prints the summary.
pub fn execute<R>(plan: &SweepPlan, mut runner: R) -> Result<SweepResult>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
{
    // Stepped sweeps stream autobench's lines as each rate completes, as
    // autobench does (a file is rewritten whole at the end).
    let csv_streamed = !plan.find_max;
    let mut csv = if csv_streamed {
        Some(CsvStream::open(plan)?)
    } else {
        None
    };
    let progress = progress_bar(plan);
    let result = run_sweep(
        plan,
        |t, rate| {
            progress.set_message(format!(
                "{} @ {}/s",
                t.label(),
                fmt_rate(rate * plan.num_calls as f64)
            ));
            runner(t, rate)
        },
        |t, rate, r| {
            progress.inc(1);
            if let Some(csv) = csv.as_mut() {
                csv.add_step(plan, rate, r, &progress);
            }
            if !plan.quiet {
                progress.suspend(|| {
                    // autobench echoes httperf's output when the CSV goes to a file.
                    if plan.file.is_some() {
                        println!("{}", httperf_report(r));
                    }
                    eprintln!("{}", step_line(t, rate, r, plan.slo_ms));
                });
            }
        },
    );
    progress.finish_and_clear();
    let csv_error = csv.and_then(CsvStream::close);
    let result = result?;
    if let Some(e) = csv_error {
        return Err(e.context("writing the CSV"));
    }
    if was_interrupted(&result) {
        eprintln!("httplab sweep: interrupted — writing the steps that ran");
    }
    write_result_files(plan, &result, csv_streamed)?;
    print_summary(plan, &result);
    Ok(result)
}

/// A bar of steps for a stepped sweep, a spinner counting runs for `--find-max`.
fn progress_bar(plan: &SweepPlan) -> ProgressBar {
    let (bar, style) = if plan.find_max {
        (
            ProgressBar::new_spinner(),
            ProgressStyle::with_template("{spinner} find-max: {pos} runs [{elapsed}] {msg}"),
        )
    } else {
        (
            ProgressBar::new((plan.rates().len() * plan.targets.len()) as u64),
            ProgressStyle::with_template("{bar:30} {pos}/{len} steps [{elapsed} < {eta}] {msg}"),
        )
    };
    bar.set_draw_target(ProgressDrawTarget::stderr());
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

/// autobench's CSV written line by line: a line once every target has run
/// the rate.
struct CsvStream {
    out: Box<dyn Write>,
    /// The current rate's steps so far, in target order.
    pending: Vec<RunResult>,
    /// The first write error, reported once the sweep has ended.
    error: Option<anyhow::Error>,
}

impl CsvStream {
    /// Opens `--file` (else standard output) and writes the header.
    fn open(plan: &SweepPlan) -> Result<Self> {
        let hosts: Vec<&str> = plan.targets.iter().map(|t| t.host.as_str()).collect();
        let mut out: Box<dyn Write> = match &plan.file {
            Some(f) => Box::new(
                std::fs::File::create(f)
                    .with_context(|| format!("cannot write {}", f.display()))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        writeln!(out, "{}", abcsv::header(&hosts, plan.format))?;
        out.flush()?;
        Ok(CsvStream {
            out,
            pending: Vec::new(),
            error: None,
        })
    }

    /// Takes one finished step; writes the rate's line after its last target.
    fn add_step(&mut self, plan: &SweepPlan, rate: f64, r: &RunResult, progress: &ProgressBar) {
        self.pending.push(r.clone());
        if self.pending.len() < plan.targets.len() {
            return;
        }
        let runs: Vec<&RunResult> = self.pending.iter().collect();
        let line = abcsv::row(rate, plan.num_calls, &runs, plan.format);
        progress.suspend(|| {
            if let Err(e) = writeln!(self.out, "{line}").and_then(|_| self.out.flush()) {
                self.error.get_or_insert(e.into());
            }
        });
        self.pending.clear();
    }

    /// Closes the output; returns the first write error, if any.
    fn close(self) -> Option<anyhow::Error> {
        self.error
    }
}

/// After the files are written: the saturation summary and where everything went.
fn print_summary(plan: &SweepPlan, result: &SweepResult) {
    eprint!("{}", summary(result, plan.num_calls));
    eprintln!("httplab sweep: results in {}", plan.json.display());
    if let Some(f) = &plan.file {
        eprintln!(
            "httplab sweep: {} in {}",
            if plan.format == Format::Tsv {
                "TSV"
            } else {
                "CSV"
            },
            f.display()
        );
    }
    if let Some(d) = &plan.report {
        eprintln!(
            "httplab sweep: report in {}",
            d.join("index.html").display()
        );
    }
}

/// One line per finished step, for the terminal.
pub fn step_line(t: &Target, rate: f64, r: &RunResult, slo_ms: f64) -> String {
    let m = analysis::metrics(rate, r, slo_ms);
    format!(
        "{} @ {} req/s: reply {:.1}/s, p50 {}, p99 {}, errors {:.2}%{}{}",
        t.label(),
        abcsv::perl_number(m.demanded_req_rate),
        m.reply_rate,
        m.p50_ms.map(charts::ms_label).unwrap_or_else(|| "–".into()),
        m.p99_ms.map(charts::ms_label).unwrap_or_else(|| "–".into()),
        m.error_pct,
        if m.sustained {
            ""
        } else {
            " — not sustained"
        },
        if m.client_bound {
            " [client-bound]"
        } else {
            ""
        }
    )
}

/// The httperf-style report of one run (what autobench echoes per step).
pub fn httperf_report(r: &RunResult) -> String {
    httplab_load::render_httperf_report(r)
}

/// Writes the CSV, the JSON and (if asked) the report of a finished sweep.
pub fn write_outputs(plan: &SweepPlan, result: &SweepResult) -> Result<()> {
    write_result_files(plan, result, false)
}

/// [`write_outputs`]; with `csv_streamed`, a CSV for standard output was
/// already printed line by line and is not printed again.
fn write_result_files(plan: &SweepPlan, result: &SweepResult, csv_streamed: bool) -> Result<()> {
    let csv = abcsv::write_sweep(result, plan.num_calls, plan.format);
    match &plan.file {
        // The file is rewritten whole, streamed or not (same content when complete).
        Some(f) => {
            std::fs::write(f, &csv).with_context(|| format!("cannot write {}", f.display()))?
        }
        None if csv_streamed => {}
        None => {
            std::io::stdout().write_all(csv.as_bytes())?;
        }
    }
    if let Some(dir) = plan.json.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
    }
    let json = serde_json::to_string_pretty(result)?;
    std::fs::write(&plan.json, json)
        .with_context(|| format!("cannot write {}", plan.json.display()))?;
    if let Some(dir) = &plan.report {
        let docs = vec![httplab_model::Document::Sweep(Box::new(result.clone()))];
        let opts = html::ReportOptions {
            title: "httplab sweep report".into(),
            sources: vec![plan
                .json
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()],
        };
        html::render_report_with(&docs, dir, &opts)?;
    }
    Ok(())
}

/// A human summary of the saturation analysis.
pub fn summary(result: &SweepResult, num_calls: u64) -> String {
    let mut s = String::new();
    for t in &result.targets {
        let sat = &t.saturation;
        let calls = num_calls.max(1) as f64;
        let max = match sat.max_sustainable_rate {
            Some(r) if num_calls > 1 => format!(
                "{} req/s ({} conn/s)",
                abcsv::perl_number(r * calls),
                abcsv::perl_number(r)
            ),
            Some(r) => format!("{} req/s", abcsv::perl_number(r)),
            None => "none of the rates tried".into(),
        };
        let top = t
            .steps
            .iter()
            .max_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
        let max = match (top, sat.max_sustainable_rate) {
            (Some(top), Some(r)) if (top.demanded_rate - r).abs() < 1e-9 => {
                format!("{max} (the highest rate tried: the limit is above it)")
            }
            _ => max,
        };
        let knee = sat
            .knee_rate
            .map(|k| format!("{} req/s", abcsv::perl_number(k * calls)))
            .unwrap_or_else(|| "not reached".into());
        let cb = t
            .steps
            .iter()
            .filter(|s| s.run.self_check.client_bound)
            .count();
        s.push_str(&format!(
            "{}: max sustainable {max}; knee {knee}; p99 SLO {}; {} {}{}\n",
            t.label,
            charts::ms_label(sat.slo_ms),
            sat.runs,
            if sat.method == "find-max" {
                "runs (find-max)"
            } else {
                "steps"
            },
            if cb > 0 {
                format!("; WARNING: {cb} client-bound step(s), the generator limited them")
            } else {
                String::new()
            }
        ));
    }
    s
}
