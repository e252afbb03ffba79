//! Running a sweep: every step (or every `--find-max` search) through a
//! runner, by default `httplab load` in process, and Ctrl-C handling.

use crate::plan::{fmt_rate, SweepPlan, Target};
use crate::saturation_search::{find_max, FindMax};
use anyhow::{Context, Result};
use httplab_load::calibration_cache::CalibrationCache;
use httplab_load::LoadSpec;
use httplab_model::{
    RunResult, Saturation, SweepResult, SweepStep, SweepTarget, ToolInfo, SWEEP_SCHEMA,
};
use httplab_report::analysis;
use std::sync::atomic::AtomicBool;

/// Runs a whole sweep with `runner(target, rate)` doing each load run. Steps
/// are taken in autobench's order (at each rate, every target); `--find-max`
/// searches each target in turn. `on_step` sees every finished step.
pub fn run_sweep<R, S>(plan: &SweepPlan, mut runner: R, mut on_step: S) -> Result<SweepResult>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
    S: FnMut(&Target, f64, &RunResult),
{
    let measured = if plan.find_max {
        search_each_target(plan, &mut runner, &mut on_step)?
    } else {
        step_through_rates(plan, &mut runner, &mut on_step)?
    };
    Ok(sweep_result(plan, measured))
}

/// What a sweep measured, per target in the plan's order.
struct Measured {
    steps: Vec<Vec<SweepStep>>,
    saturations: Vec<Saturation>,
}

/// `--find-max`: one search per target; Ctrl-C ends the sweep, and the
/// targets not yet searched get an empty analysis.
fn search_each_target<R, S>(plan: &SweepPlan, runner: &mut R, on_step: &mut S) -> Result<Measured>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
    S: FnMut(&Target, f64, &RunResult),
{
    let mut steps: Vec<Vec<SweepStep>> = vec![Vec::new(); plan.targets.len()];
    let mut saturations = Vec::new();
    for (ti, t) in plan.targets.iter().enumerate() {
        let cfg = FindMax {
            start: plan.low_rate,
            ceiling: plan.high_rate.is_finite().then_some(plan.high_rate),
            max_runs: plan.max_runs,
            slo_ms: plan.slo_ms,
            ..Default::default()
        };
        let (st, sat) = find_max(&cfg, |rate| {
            let r = runner(t, rate)?;
            on_step(t, rate, &r);
            Ok(r)
        })?;
        let stop = st.iter().any(|s| s.run.interrupted);
        steps[ti] = st;
        saturations.push(sat);
        if stop {
            // The remaining targets were never run.
            for _ in ti + 1..plan.targets.len() {
                saturations.push(analysis::analyze(&[], plan.slo_ms));
            }
            break;
        }
    }
    Ok(Measured { steps, saturations })
}

/// A stepped sweep: at each rate, every target; Ctrl-C ends it after the
/// interrupted step.
fn step_through_rates<R, S>(plan: &SweepPlan, runner: &mut R, on_step: &mut S) -> Result<Measured>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
    S: FnMut(&Target, f64, &RunResult),
{
    let mut steps: Vec<Vec<SweepStep>> = vec![Vec::new(); plan.targets.len()];
    'rates: for rate in plan.rates() {
        for (ti, t) in plan.targets.iter().enumerate() {
            let r = runner(t, rate).with_context(|| {
                format!("load run at rate {} against {}", fmt_rate(rate), t.label())
            })?;
            on_step(t, rate, &r);
            let stop = r.interrupted;
            steps[ti].push(SweepStep {
                demanded_rate: rate,
                run: r,
            });
            if stop {
                break 'rates;
            }
        }
    }
    let saturations = steps
        .iter()
        .map(|s| analysis::analyze(s, plan.slo_ms))
        .collect();
    Ok(Measured { steps, saturations })
}

/// The sweep document: the first step's environment, the earliest start.
fn sweep_result(plan: &SweepPlan, measured: Measured) -> SweepResult {
    let Measured { steps, saturations } = measured;
    let environment = steps
        .iter()
        .flatten()
        .next()
        .map(|s| s.run.environment.clone())
        .unwrap_or_default();
    let started_at = steps
        .iter()
        .flatten()
        .map(|s| s.run.started_at.clone())
        .min()
        .unwrap_or_default();
    SweepResult {
        schema: SWEEP_SCHEMA.into(),
        tool: ToolInfo::current(env!("CARGO_PKG_VERSION")),
        started_at,
        command_line: plan.command_line.clone(),
        targets: plan
            .targets
            .iter()
            .zip(steps)
            .zip(saturations)
            .map(|((t, steps), saturation)| SweepTarget {
                label: t.label(),
                url: t.url(),
                steps,
                saturation,
            })
            .collect(),
        environment,
    }
}

/// The default runner: `httplab load` as a library, one run per step. With
/// `plan.calibrate` the generator measures its own ceiling once per shape of
/// run (the shape does not change with the rate or the target, see
/// [`httplab_load::calibration_cache`]) and every step gets it, so each step
/// records its client utilization and is marked client-bound at 85 % or more
/// of it.
pub fn load_runner(plan: &SweepPlan) -> impl FnMut(&Target, f64) -> Result<RunResult> + '_ {
    load_runner_live(plan, None)
}

/// [`load_runner`], publishing every step's intervals to `live` (with the
/// target and rate as `httplab_run_info`), and with `plan.check_client` a
/// client check before every step, kept in its run.
pub fn load_runner_live(
    plan: &SweepPlan,
    live: Option<httplab_live::LoadLive>,
) -> impl FnMut(&Target, f64) -> Result<RunResult> + '_ {
    let mut ceilings = CalibrationCache::new();
    move |t: &Target, rate: f64| {
        let mut spec = plan.load_spec(t, rate)?;
        if plan.calibrate {
            ceilings.apply(&mut spec);
        }
        if let Some(l) = &live {
            l.set_context(vec![
                ("target".into(), t.label()),
                ("rate".into(), fmt_rate(rate)),
            ]);
        }
        // The check's steps publish nothing: the counters are the steps' own.
        let check = if plan.check_client {
            Some(httplab_load::check_client(&spec)?)
        } else {
            None
        };
        spec.live.metrics = live.clone();
        let mut r = httplab_load::run_with_stop(&spec, false, stop_flag())?;
        httplab_load::record_client_check(&mut r, check);
        if r.label.is_empty() {
            r.label = t.label();
        }
        Ok(r)
    }
}

/// Runs a load spec in process, calibrated as [`load_runner`]'s runs are
/// (once per shape of run, with `plan.calibrate`): the runner of a staged
/// sweep's runs.
pub fn spec_runner(plan: &SweepPlan) -> impl FnMut(&LoadSpec) -> Result<RunResult> + '_ {
    let mut ceilings = CalibrationCache::new();
    move |spec: &LoadSpec| {
        let mut spec = spec.clone();
        if plan.calibrate {
            ceilings.apply(&mut spec);
        }
        httplab_load::run_with_stop(&spec, false, stop_flag())
    }
}

/// Runs a load spec in process. The run ends early, marked
/// `interrupted`, once [`stop_flag`] is set.
pub fn run_load(spec: &LoadSpec) -> Result<RunResult> {
    httplab_load::run_with_stop(spec, false, stop_flag())
}

/// The sweep's Ctrl-C flag: the process-wide flag of [`install_sigint`].
pub fn stop_flag() -> &'static AtomicBool {
    httplab_load::interrupted()
}

/// First Ctrl-C ends the current step and the sweep, which then writes what
/// it has; a second one exits at once.
pub fn install_sigint() {
    httplab_load::install_sigint();
}

/// True when any step of `result` was cut short by Ctrl-C.
pub fn was_interrupted(result: &SweepResult) -> bool {
    result
        .targets
        .iter()
        .any(|t| t.steps.iter().any(|s| s.run.interrupted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_plan;
    use httplab_report::synth;
    use std::ffi::OsString;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn interrupted_step_ends_the_sweep() {
        let p = parse_plan(&os(&[
            "x",
            "--no-config",
            "--host1=a",
            "--low-rate=100",
            "--high-rate=1000",
            "--rate-step=100",
        ]))
        .unwrap()
        .unwrap();
        let server = synth::SynthServer::new("a", 10_000.0, 0.5);
        let mut calls = 0;
        let r = run_sweep(
            &p,
            |_, rate| {
                calls += 1;
                let mut r = synth::run(&server, rate, 1, 2.0);
                r.interrupted = calls == 3;
                Ok(r)
            },
            |_, _, _| {},
        )
        .unwrap();
        assert_eq!(r.targets[0].steps.len(), 3);
        assert!(was_interrupted(&r));
        // The cut-short step is not counted as sustained.
        assert_eq!(r.targets[0].saturation.max_sustainable_rate, Some(200.0));

        let mut fm = p.clone();
        fm.find_max = true;
        let mut calls = 0;
        let r = run_sweep(
            &fm,
            |_, rate| {
                calls += 1;
                let mut r = synth::run(&server, rate, 1, 2.0);
                r.interrupted = calls == 2;
                Ok(r)
            },
            |_, _, _| {},
        )
        .unwrap();
        assert_eq!(r.targets[0].steps.len(), 2);
        assert_eq!(r.targets[0].saturation.max_sustainable_rate, Some(100.0));
    }
}
