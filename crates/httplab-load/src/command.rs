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
    Ok(crate::outcome::exit_status(&spec, &[&result]))
}
