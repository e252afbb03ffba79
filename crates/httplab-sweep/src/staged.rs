//! `--staged`: the sweep's steps as the stages of one `httplab load
//! --stages` run per target (each rate held for the step's length), and
//! each stage as a step of the sweep result. One run has no gaps between
//! steps and one connection-setup history; its rows are split by the
//! scheduled instant of each call (see httplab-load's stages).

use crate::plan::{fmt_rate, SweepPlan, Target};
use anyhow::{bail, Result};
use httplab_load::{Length, Load, LoadSpec, Offer, Stage};
use httplab_model::{Errors, RunResult, StageResult, StagedStep, StatusClasses, Summary};

/// Seconds each step's stage lasts at `rate`: its planned connections over the rate.
fn stage_seconds(plan: &SweepPlan, rate: f64) -> f64 {
    plan.conns_at(rate) as f64 / rate
}

/// The stages of a staged sweep: a warm-up stage at the first rate (when
/// the sweep has one; its row is dropped), one held stage per rate, then a
/// tail at rate 0 ([`TAIL_S`], its row dropped too) in which arrivals of
/// the last step that start late still start.
pub fn stages(plan: &SweepPlan) -> Vec<Stage> {
    let held = |duration_s: f64, rate: f64| Stage {
        duration_s,
        from: rate,
        to: rate,
    };
    let mut list = Vec::new();
    if plan.warmup_s > 0.0 {
        list.push(held(plan.warmup_s, plan.low_rate));
    }
    for r in plan.rates() {
        list.push(held(stage_seconds(plan, r), r));
    }
    list.push(held(TAIL_S, 0.0));
    list
}

/// Seconds of the rate-0 stage that ends a staged sweep's run.
pub const TAIL_S: f64 = 1.0;

/// The load spec of a staged sweep's one run against `t`: the sweep's
/// stages, evenly spaced arrivals, then the pass-through options.
pub fn load_spec(plan: &SweepPlan, t: &Target) -> Result<LoadSpec> {
    let list = stages(plan);
    let total = list.iter().map(|s| s.duration_s).sum();
    let mut s = plan.run_spec(
        t,
        Load::new(Offer::Rate(plan.low_rate), Length::Window(total)),
    );
    s.set_stages(list, false);
    s.with_options(&plan.passthrough)
}

/// Refuses what a staged sweep cannot do.
pub fn check(plan: &SweepPlan) -> Result<()> {
    if plan.find_max {
        bail!(
            "--staged runs the stepped rates as stages of one run: it cannot search (--find-max)"
        );
    }
    if plan.client.is_some() || plan.start_at.is_some() {
        bail!("--staged with client shards (--client, --start-at) is not supported: run each shard's `httplab load --stages` and merge them");
    }
    if plan.low_rate <= 0.0 {
        bail!("--staged needs rates above 0");
    }
    Ok(())
}

/// The steps of a staged run: one result per stage of `rates` (the first
/// stage is the warm-up when `warmup`), each the run's result narrowed to
/// the stage: its calls, latency, errors, rates and intervals.
pub fn split(run: &RunResult, rates: &[f64], warmup: bool) -> Vec<(f64, RunResult)> {
    let rows = if warmup && !run.stages.is_empty() {
        &run.stages[1..]
    } else {
        &run.stages[..]
    };
    rows.iter()
        .zip(rates)
        .map(|(s, &rate)| (rate, narrow(run, s, rate)))
        .collect()
}

fn narrow(run: &RunResult, s: &StageResult, rate: f64) -> RunResult {
    let mut r = run.clone();
    let d = s.duration_s.max(1e-9);
    r.stages = Vec::new();
    r.totals.connections = s.arrivals;
    r.totals.requests = s.sent;
    r.totals.replies = s.replies;
    r.totals.test_duration_s = s.duration_s;
    r.config.rate = Some(rate);
    r.config.num_conns = Some(s.arrivals);
    r.connection.rate_per_s = s.arrivals as f64 / d;
    r.request.rate_per_s = s.sent as f64 / d;
    r.latency.response = s.response.clone();
    r.latency.response_uncorrected = s.response_uncorrected.clone();
    // The classes are the whole run's; a stage knows only its total.
    r.errors = Errors {
        total: s.errors,
        other: s.errors,
        ..Errors::default()
    };
    r.reply.status = StatusClasses {
        success: s.replies,
        ..StatusClasses::default()
    };
    let end = s.start_s + s.duration_s;
    r.series
        .retain(|i| i.t_s + 1e-9 >= s.start_s && i.t_s + i.len_s <= end + 1e-9);
    let full: Vec<f64> = r
        .series
        .iter()
        .filter(|i| (i.len_s - r.reply.sample_interval_s).abs() < 1e-6)
        .map(|i| i.reply_rate)
        .collect();
    r.reply.rate = Summary::of(&full);
    r.config.facts.staged_step = Some(StagedStep {
        start_s: s.start_s,
        duration_s: s.duration_s,
    });
    r
}

/// The default runner of a staged sweep: the first call for a target runs
/// its whole staged load run; every call returns that run's step of `rate`.
pub fn runner<'a>(
    plan: &'a SweepPlan,
    mut run: impl FnMut(&LoadSpec) -> Result<RunResult> + 'a,
) -> impl FnMut(&Target, f64) -> Result<RunResult> + 'a {
    let mut done: Vec<(Target, Vec<(f64, RunResult)>)> = Vec::new();
    move |t: &Target, rate: f64| {
        if !done.iter().any(|(tt, _)| tt == t) {
            let mut r = run(&load_spec(plan, t)?)?;
            if r.label.is_empty() {
                r.label = t.label();
            }
            let steps = split(&r, &plan.rates(), plan.warmup_s > 0.0);
            done.push((t.clone(), steps));
        }
        done.iter()
            .find(|(tt, _)| tt == t)
            .and_then(|(_, steps)| steps.iter().find(|(r, _)| *r == rate))
            .map(|(_, r)| r.clone())
            .ok_or_else(|| {
                anyhow::anyhow!("the staged run has no stage at rate {}", fmt_rate(rate))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_plan;
    use httplab_model::Latency;
    use std::ffi::OsString;

    fn plan(extra: &[&str]) -> SweepPlan {
        let mut v: Vec<OsString> = [
            "x",
            "--no-config",
            "--host1=127.0.0.1",
            "--low-rate=10",
            "--high-rate=30",
            "--rate-step=10",
            "--const-test-time=2",
            "--staged",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        v.extend(extra.iter().map(OsString::from));
        parse_plan(&v).unwrap().unwrap()
    }

    #[test]
    fn steps_become_stages_and_stages_steps() {
        let p = plan(&["--warmup=1"]);
        assert!(p.staged);
        let spelled: Vec<(f64, f64)> = stages(&p).iter().map(|s| (s.duration_s, s.from)).collect();
        assert_eq!(
            spelled,
            [
                (1.0, 10.0),
                (2.0, 10.0),
                (2.0, 20.0),
                (2.0, 30.0),
                (1.0, 0.0)
            ]
        );
        let spec = load_spec(&p, &p.targets[0]).expect("a valid spec");
        assert_eq!(spec.stages.len(), 5);
        // The spec the staged sweep's command line gave before.
        let legacy = "--server 127.0.0.1 --port 80 --uri / --stages 1:10,2:10,2:20,2:30,1:0 --num-calls 1 --timeout 5";
        let mut old = httplab_load::parse_args(legacy.split_whitespace()).expect("parse");
        old.command_line = spec.command_line.clone();
        assert_eq!(spec, old);
        let mut run = RunResult::default();
        run.reply.sample_interval_s = 1.0;
        for (i, rate) in [10.0, 10.0, 20.0, 30.0].iter().enumerate() {
            run.stages.push(StageResult {
                start_s: if i == 0 {
                    0.0
                } else {
                    1.0 + 2.0 * (i - 1) as f64
                },
                duration_s: if i == 0 { 1.0 } else { 2.0 },
                rate_from: *rate,
                rate_to: *rate,
                arrivals: 2 * *rate as u64,
                sent: 2 * *rate as u64,
                replies: 2 * *rate as u64 - 1,
                errors: 1,
                response: Latency::default(),
                ..Default::default()
            });
        }
        let steps = split(&run, &p.rates(), true);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[1].0, 20.0);
        assert_eq!(steps[1].1.totals.replies, 39);
        assert_eq!(steps[1].1.errors.total, 1);
        assert_eq!(steps[1].1.config.rate, Some(20.0));
        assert!(steps[1].1.stages.is_empty());
    }

    #[test]
    fn staged_refuses_what_it_cannot_do() {
        let mut p = plan(&[]);
        assert!(check(&p).is_ok());
        p.find_max = true;
        assert!(check(&p).is_err());
    }
}
