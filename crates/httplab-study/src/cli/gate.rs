//! The runner of `httplab compare`'s paired mode: the study of
//! [`crate::studies::gate`] run as `httplab study` runs one (each command
//! server checked to start alone first, Ctrl-C kept, the progress bar), its
//! report written when the request asks. The compare crate reads the
//! verdict; the binary hands this function to it.

use anyhow::{bail, Result};
use httplab_compare::paired::Request;
use httplab_model::StudyResult;

use super::{progress, run_interruptible};
use crate::execute::options::Options;
use crate::execute::preflight::Checks;
use crate::execute::servers::find_httplab_exe;
use crate::render::plan_text::time_text;
use crate::render::report;
use crate::studies::gate;

/// Runs the paired study of `req` and returns its result.
pub fn run_paired(req: &Request) -> Result<StudyResult> {
    let study = gate::study(req)?;
    let exe = find_httplab_exe();
    let checks = Checks::new(&study, false, exe.clone())?;
    eprintln!("httplab compare: checking that base and new start …");
    checks.commands_start(&study)?;
    let opts = Options {
        httplab_exe: exe,
        on_event: req.progress.then(progress::bar),
        budget_s: Some(req.budget_s.unwrap_or(gate::DEFAULT_BUDGET_S)),
        ..Options::default()
    };
    let plan = crate::runner::plan_of(&study, &opts);
    let (lo, hi) = plan.runs_range();
    eprintln!(
        "httplab compare: base and new in alternation ({lo}–{hi} runs; {})",
        time_text(&plan)
    );
    let (result, interrupted) = run_interruptible(&study, &plan, &opts)?;
    if let Some(out) = &req.out {
        report::write_all(&result, Some(&study), out, interrupted)?;
    }
    if interrupted {
        bail!("interrupted (Ctrl-C) before the comparison was complete: no verdict");
    }
    Ok(result)
}
