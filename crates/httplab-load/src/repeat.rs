//! `httplab load --repeat N`: the same load N times back to back, written as one result
//! document (run 1 at the top level, runs 2..N in `RunResult::repeats`), reported one line
//! per run and the geometric means over the runs with 95 % t intervals (on the log values:
//! the interval of the geometric mean, the same quantity `httplab compare` and the study
//! judge by).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use httplab_model::RunResult;

use crate::report::Calibration;
use crate::run::run_raw;
use crate::spec::LoadSpec;

/// Runs `spec` `times` times and writes/prints the one result. Stops after a run that was
/// interrupted (Ctrl-C), keeping the runs so far.
pub(crate) fn run_repeated(
    spec: &LoadSpec,
    times: u32,
    calibration: Option<&Calibration>,
    stop: &AtomicBool,
) -> Result<ExitCode> {
    let mut runs: Vec<RunResult> = Vec::with_capacity(times as usize);
    for i in 0..times {
        let (mut r, _) =
            run_raw(spec, true, stop).with_context(|| format!("run {} of {times}", i + 1))?;
        if let Some(c) = calibration {
            crate::calibration_cache::record(&mut r.config, c);
        }
        if i == 0 {
            if let Some(w) = r
                .self_check
                .warnings
                .iter()
                .find(|w| w.starts_with("--io uring"))
            {
                eprintln!("httplab load: warning: {w}");
            }
        }
        if !spec.quiet {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", run_line(i as usize + 1, times as usize, &r))?;
            out.flush()?;
        }
        let interrupted = r.interrupted;
        runs.push(r);
        if interrupted {
            break;
        }
    }
    let mut it = runs.into_iter();
    let mut result = it.next().context("no run was made")?;
    result.repeats = it.collect();
    if !spec.quiet {
        print!("{}", render_summary(&result));
    }
    if let Some(path) = &spec.json {
        let text = serde_json::to_string_pretty(&result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    Ok(crate::outcome::exit_status(spec, &result.runs()))
}

/// Replies per second of the measurement window: the model's registry
/// ([`httplab_model::Metric::ReplyRate`]), as the study and `httplab compare` read it.
fn reply_rate(r: &RunResult) -> Option<f64> {
    httplab_model::Metric::ReplyRate.of_run(r)
}

/// One line for run `i` of `n`.
fn run_line(i: usize, n: usize, r: &RunResult) -> String {
    let ms = |p: f64| {
        r.latency
            .response
            .at(p)
            .map_or_else(|| "–".to_string(), |v| format!("{v:.3} ms"))
    };
    let mut s = format!(
        "run {i}/{n}: {} replies/s, p50 {}, p99 {}, errors {}",
        reply_rate(r).map_or_else(|| "–".into(), |v| format!("{v:.1}")),
        ms(50.0),
        ms(99.0),
        // Failed calls: errors and 5xx replies (`httplab_model::metric`).
        httplab_model::metric::failed_calls(r)
    );
    if r.self_check.client_bound {
        s.push_str(", client-bound ⚠");
    }
    if r.interrupted {
        s.push_str(", interrupted");
    }
    s
}

/// "12,003 (11,950–12,050)": the geometric mean of `xs` and its 95 % t interval (computed on
/// the logs); without an interval for fewer than two values.
fn geo_with_interval(xs: &[f64], digits: usize) -> String {
    let xs: Vec<f64> = xs
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let Some(g) = httplab_stats::geometric_mean(&xs) else {
        return "–".into();
    };
    let logs: Vec<f64> = xs.iter().map(|v| v.ln()).collect();
    match httplab_stats::t_interval(&logs, 0.95) {
        Some((lo, hi)) => format!(
            "{g:.digits$} (95 % CI {:.digits$}–{:.digits$}, n = {})",
            lo.exp(),
            hi.exp(),
            xs.len()
        ),
        None => format!("{g:.digits$} (n = {}: no interval)", xs.len()),
    }
}

/// The summary over every run of a repeated result.
pub(crate) fn render_summary(r: &RunResult) -> String {
    let runs = r.runs();
    let rates: Vec<f64> = runs.iter().filter_map(|x| reply_rate(x)).collect();
    let pct = |p: f64| -> Vec<f64> {
        runs.iter()
            .filter_map(|x| x.latency.response.at(p))
            .collect()
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nGeometric means over {} runs (95 % t interval over runs):",
        runs.len()
    );
    let _ = writeln!(
        s,
        "  reply rate  {} replies/s",
        geo_with_interval(&rates, 1)
    );
    let _ = writeln!(s, "  p50         {} ms", geo_with_interval(&pct(50.0), 3));
    let _ = writeln!(s, "  p99         {} ms", geo_with_interval(&pct(99.0), 3));
    let bound = runs.iter().filter(|x| x.self_check.client_bound).count();
    if bound > 0 {
        let _ = writeln!(
            s,
            "  ⚠ {bound} of {} runs were client-bound: their figures describe the client",
            runs.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(replies: u64) -> RunResult {
        let mut r = RunResult::default();
        r.totals.replies = replies;
        r.totals.test_duration_s = 1.0;
        r
    }

    #[test]
    fn summary_of_three_runs() {
        let mut r = run(100);
        r.repeats = vec![run(200), run(400)];
        let s = render_summary(&r);
        // Geometric mean of 100, 200, 400 is 200.
        assert!(s.contains("over 3 runs"), "{s}");
        assert!(s.contains("reply rate  200.0 (95 % CI"), "{s}");
        // No latency recorded: no figure rather than a made-up one.
        assert!(s.contains("p50         – ms"), "{s}");
    }

    #[test]
    fn one_value_has_no_interval() {
        assert_eq!(geo_with_interval(&[5.0], 1), "5.0 (n = 1: no interval)");
        assert_eq!(geo_with_interval(&[0.0, f64::NAN], 1), "–");
        assert!(run_line(1, 2, &run(10)).starts_with("run 1/2: 10.0 replies/s"));
    }
}
