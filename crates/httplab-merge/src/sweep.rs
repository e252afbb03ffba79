//! Merging `httplab.sweep/1` documents step by step: the shards of a sweep
//! ran the same steps (demanded rates), each step split with `--client I/N`;
//! the merged sweep has, per target, one merged run per demanded rate.

use httplab_model::{
    RunResult, Saturation, SweepResult, SweepStep, SweepTarget, ToolInfo, SWEEP_SCHEMA,
};

use crate::run::{merge_run_refs, parse_time};
use crate::{MergeError, Merged, Options};

/// Recomputes a sweep target's saturation from its steps and SLO (ms).
pub type Analyze = fn(&[SweepStep], f64) -> Saturation;

/// Whether two demanded rates are the same step.
fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Merges the sweeps of every shard. Targets are matched by position and must
/// have the same URL; steps are matched by demanded rate. A step that some
/// shard did not run is left out with a warning (its merged run would miss
/// that shard). Each step's runs are merged with [`crate::merge_runs`]'s
/// rules (shards, run ids). `analyze` recomputes each target's saturation.
pub fn merge_sweeps(
    inputs: &[(String, SweepResult)],
    opts: &Options,
    analyze: Option<Analyze>,
) -> Result<Merged<SweepResult>, MergeError> {
    let Some((first_name, base)) = inputs.first() else {
        return Err(MergeError::Empty);
    };
    check_same_targets(inputs)?;
    let mut warnings = Vec::new();
    let mut targets = Vec::with_capacity(base.targets.len());
    for (ti, t) in base.targets.iter().enumerate() {
        let mut steps = merge_target_steps(inputs, ti, opts, &mut warnings)?;
        for (name, s) in &inputs[1..] {
            for st in &s.targets[ti].steps {
                if !t
                    .steps
                    .iter()
                    .any(|x| same_rate(x.demanded_rate, st.demanded_rate))
                {
                    warnings.push(format!(
                        "target {}: step {}/s of {name} left out: {first_name} did not run it",
                        t.label, st.demanded_rate
                    ));
                }
            }
        }
        steps.sort_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
        let saturation = match analyze {
            Some(f) => f(&steps, t.saturation.slo_ms),
            None => Saturation {
                slo_ms: t.saturation.slo_ms,
                runs: steps.len() as u32,
                method: "merged (not analysed)".into(),
                ..Default::default()
            },
        };
        targets.push(SweepTarget {
            label: t.label.clone(),
            url: t.url.clone(),
            steps,
            saturation,
        });
    }
    let earliest = inputs
        .iter()
        .filter_map(|(_, s)| parse_time(&s.started_at).map(|t| (t, &s.started_at)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(|| base.started_at.clone(), |(_, s)| s.clone());
    let mut environment = base.environment.clone();
    environment.facts.shards = Some(inputs.len() as u32);
    Ok(Merged {
        result: SweepResult {
            schema: SWEEP_SCHEMA.into(),
            tool: ToolInfo::current(env!("CARGO_PKG_VERSION")),
            started_at: earliest,
            command_line: base.command_line.clone(),
            targets,
            environment,
        },
        warnings,
    })
}

/// Refuses sweeps whose targets differ from the first's, in number or URL
/// (targets are matched by position).
fn check_same_targets(inputs: &[(String, SweepResult)]) -> Result<(), MergeError> {
    let Some((first_name, base)) = inputs.first() else {
        return Err(MergeError::Empty);
    };
    for (name, s) in &inputs[1..] {
        if s.targets.len() != base.targets.len() {
            return Err(MergeError::Incompatible {
                a: first_name.clone(),
                b: name.clone(),
                what: "number of targets".into(),
                a_value: base.targets.len().to_string(),
                b_value: s.targets.len().to_string(),
            });
        }
        for (ta, tb) in base.targets.iter().zip(&s.targets) {
            if ta.url != tb.url {
                return Err(MergeError::Incompatible {
                    a: first_name.clone(),
                    b: name.clone(),
                    what: "target".into(),
                    a_value: ta.url.clone(),
                    b_value: tb.url.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The merged steps of target `ti`, one per step of the first sweep that
/// every sweep ran (in the first sweep's order); a step some sweep did not
/// run is left out with a warning.
fn merge_target_steps(
    inputs: &[(String, SweepResult)],
    ti: usize,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Vec<SweepStep>, MergeError> {
    let Some((_, base)) = inputs.first() else {
        return Err(MergeError::Empty);
    };
    let t = &base.targets[ti];
    let mut steps = Vec::new();
    for step in &t.steps {
        let rate = step.demanded_rate;
        let mut runs: Vec<(String, &RunResult)> = Vec::with_capacity(inputs.len());
        for (name, s) in inputs {
            if let Some(st) = s.targets[ti]
                .steps
                .iter()
                .find(|x| same_rate(x.demanded_rate, rate))
            {
                runs.push((
                    format!("{name} (target {}, step {rate}/s)", t.label),
                    &st.run,
                ));
            }
        }
        if runs.len() < inputs.len() {
            warnings.push(format!(
                "target {}: step {rate}/s left out: only {} of the {} sweeps ran it",
                t.label,
                runs.len(),
                inputs.len()
            ));
            continue;
        }
        let refs: Vec<(&str, &RunResult)> = runs.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        let m = merge_run_refs(&refs, opts)?;
        warnings.extend(
            m.warnings
                .into_iter()
                .map(|w| format!("target {}, step {rate}/s: {w}", t.label)),
        );
        steps.push(SweepStep {
            demanded_rate: rate,
            run: m.result,
        });
    }
    Ok(steps)
}
