//! `httplab load` as a command: parse, calibrate if asked, run, print and write.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::calibrate::calibrate;
use crate::report::{render_httperf_report, write_csv};
use crate::run::{check_start_at, run_raw};
use crate::{cli, client_check, sys};

/// Entry point of `httplab load`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    // Everything the command line says wrong is a usage error (status 2).
    let parsed = cli::parse(&args).map_err(|e| httplab_usage::usage(format!("{e:#}")))?;
    let (spec, times) = match parsed {
        cli::Parsed::Text(t) => {
            print!("{t}");
            return Ok(ExitCode::SUCCESS);
        }
        cli::Parsed::Run(s) => (*s, 1),
        cli::Parsed::Repeat { spec, times } => (*spec, times),
    };
    let mut spec = spec;
    if let Some(step) = spec.live.step {
        return client_check::step_main(&spec, step);
    }
    // `--prometheus`: the endpoint serves until the result is written.
    let live = spec
        .live
        .prometheus
        .map(httplab_live::serve_load)
        .transpose()?;
    let mut calibration = None;
    if spec.calibrate || spec.calibrate_only {
        let c = calibrate(&spec)?;
        if spec.calibrate_only {
            println!("{}", c.describe());
            if let Some(path) = &spec.json {
                let text = serde_json::to_string_pretty(&c)?;
                std::fs::write(path, text + "\n")
                    .with_context(|| format!("cannot write --json file {}", path.display()))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        spec.client_ceiling = Some(c.ceiling_rps);
        calibration = Some(c);
    }
    check_start_at(&spec)?;
    sys::install_sigint();
    let check = client_check::check_if_asked(&spec)?;
    spec.live.metrics = live.as_ref().map(|(m, _)| m.clone());
    let stop = sys::interrupted();
    if times > 1 {
        return crate::repeat::run_repeated(&spec, times, calibration.as_ref(), stop);
    }
    let (mut result, raw) = run_raw(&spec, true, stop)?;
    client_check::record(&mut result, check);
    if let Some(w) = result
        .self_check
        .warnings
        .iter()
        .find(|w| w.starts_with("--io uring"))
    {
        eprintln!("httplab load: warning: {w}");
    }
    if let (Some(path), Some(raw)) = (&spec.raw_latencies, raw) {
        let mut text = String::with_capacity(raw.len() * 8);
        for v in raw {
            text.push_str(&v.to_string());
            text.push('\n');
        }
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --latency-dump file {}", path.display()))?;
    }
    if let Some(c) = &calibration {
        crate::calibration_cache::record(&mut result.config, c);
    }
    if !spec.quiet {
        let mut out = std::io::stdout().lock();
        out.write_all(render_httperf_report(&result).as_bytes())?;
        out.flush()?;
    }
    if let Some(path) = &spec.json {
        let text = serde_json::to_string_pretty(&result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    if let Some(path) = &spec.csv {
        write_csv(&result, path)
            .with_context(|| format!("cannot write --csv file {}", path.display()))?;
    }
    if let Some(path) = &spec.live.series {
        let rows = httplab_model::series::run_rows(&result, None);
        let text = httplab_model::series::render_for(&rows, path).map_err(anyhow::Error::msg)?;
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --series file {}", path.display()))?;
    }
    drop(live);
    Ok(exit_status(&spec, &[&result]))
}

/// The exit status of a finished load (every output already written): 130
/// when interrupted; 1, with the reason on stderr, when some run measured
/// nothing because no server answered; 0 otherwise.
pub(crate) fn exit_status(
    spec: &crate::spec::LoadSpec,
    runs: &[&httplab_model::RunResult],
) -> ExitCode {
    if runs.iter().any(|r| r.interrupted) {
        return ExitCode::from(130);
    }
    match runs.iter().find_map(|r| nothing_answered(spec, r)) {
        Some(why) => {
            eprintln!("httplab load: error: {why}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

/// Why a run measured nothing: calls were made or attempted and not one
/// reply came back (a reply of any status counts as an answer).
pub(crate) fn nothing_answered(
    spec: &crate::spec::LoadSpec,
    r: &httplab_model::RunResult,
) -> Option<String> {
    let t = &r.totals;
    if t.replies > 0 || (t.connections == 0 && r.errors.total == 0) {
        return None;
    }
    let e = &r.errors;
    let classes = [
        (e.connrefused, "connection refused"),
        (e.socket_timo, "connect timed out"),
        (e.client_timo, "no answer within --timeout"),
        (e.connreset, "connection closed or reset"),
        (e.fd_unavail, "out of file descriptors"),
        (e.addrunavail, "out of local ports"),
        (
            e.response_timo,
            "reply not complete within --max-response-time",
        ),
        (e.tls, "TLS failure"),
        (e.other.saturating_sub(e.tls), "protocol error"),
    ];
    let mut why: Vec<String> = classes
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{w} ×{n}"))
        .collect();
    if why.is_empty() {
        why.push(format!("{} connections, no reply", t.connections));
    }
    Some(format!(
        "no server answered at {}:{}: {}",
        spec.server,
        spec.port,
        why.join(", ")
    ))
}
