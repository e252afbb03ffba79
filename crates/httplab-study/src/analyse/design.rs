//! The sequential design over the measured steps: the interim look that
//! hands the budget's extra rounds to the undecided steps nearest a
//! decision, and the final look that decides the whole family at once.

use httplab_model as m;

use crate::analyse::cells::cell;
use crate::analyse::decisions::{self, StepView};
use crate::execute::rounds::StepRun;
use crate::spec::{StudyFile, WorkloadKind};

/// What the analysis sees of the measured steps (`interim`: the design had
/// an interim look after each step's first rounds).
pub fn step_views<'a>(
    study: &'a StudyFile,
    steps: &'a [StepRun],
    interim: bool,
) -> Vec<StepView<'a>> {
    steps
        .iter()
        .map(|sr| {
            let w = &study.workloads[sr.wi];
            StepView {
                workload: &w.name,
                step: sr.label.as_deref(),
                metric: sr.metric,
                server_cost: matches!(w.kind, WorkloadKind::Load | WorkloadKind::Users)
                    && sr.params.fixed_rate(),
                cells: sr.cells(),
                interim: interim.then_some(httplab_stats::Stages {
                    first: sr.first_rounds as usize,
                    planned: sr.cap as usize,
                }),
            }
        })
        .collect()
}

/// The extra rounds of each step in the second phase: the family decided
/// at the interim look, then the budget's seconds handed to the undecided
/// steps nearest a decision (`httplab_stats::allocate`).
pub fn extra_rounds(
    study: &StudyFile,
    proto: &m::Protocol,
    steps: &[StepRun],
    budget_s: f64,
) -> Vec<u32> {
    let opts = decisions::design_options(proto);
    // The stages as planned: the interim look reads the weights the final
    // look will combine the stages with.
    let views = step_views(study, steps, true);
    let planned = decisions::plan(study, &views);
    let interim = decisions::interim(&planned, &opts);
    let settle = decisions::to_settle(&planned, &interim, steps.len());
    let needs: Vec<httplab_stats::Need> = steps
        .iter()
        .zip(&settle)
        .map(|(sr, t)| httplab_stats::Need {
            rounds: sr.rounds,
            to_settle: *t,
            round_cost_s: if sr.rounds > 0 {
                sr.spent_s / f64::from(sr.rounds)
            } else {
                f64::INFINITY
            },
            cap: if sr.active() { sr.cap } else { sr.rounds },
        })
        .collect();
    httplab_stats::allocate(&needs, budget_s)
}

/// The final look: every step's cells and the verdicts of the whole family
/// (`sequential`: the design had an interim look).
pub fn conclude(
    study: &StudyFile,
    proto: &m::Protocol,
    steps: &[StepRun],
    sequential: bool,
) -> (Vec<m::Cell>, Vec<m::StudyVerdict>) {
    let views = step_views(study, steps, sequential);
    let planned = decisions::plan(study, &views);
    let mut verdicts = decisions::verdicts(&planned, &decisions::design_options(proto));
    for v in verdicts.iter_mut().filter(|v| v.ratio.is_none()) {
        explain_left_out(study, v, steps);
    }
    let mut cells = Vec::new();
    for sr in steps {
        for c in sr.data.values() {
            cells.push(cell(
                &study.workloads[sr.wi].name,
                sr.label.as_deref(),
                sr.metric,
                c,
            ));
        }
    }
    (cells, verdicts)
}

/// A verdict that compared nothing says why the servers without values were
/// not run (not installed, cannot speak the protocol, packet loss not
/// available), rather than only that they have no results.
fn explain_left_out(study: &StudyFile, v: &mut m::StudyVerdict, steps: &[StepRun]) {
    let mut by_reason: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for d in steps
        .iter()
        .filter(|sr| study.workloads[sr.wi].name == v.workload && sr.label == v.step)
        .flat_map(|sr| sr.data.values())
    {
        if let Some(why) = d.left_out.as_deref() {
            by_reason.entry(why).or_default().push(&d.server);
        }
    }
    if !by_reason.is_empty() {
        let list: Vec<String> = by_reason
            .into_iter()
            .map(|(why, servers)| format!("{}: {why}", servers.join(", ")))
            .collect();
        v.note = format!("{}; left out: {}", v.note, list.join("; "));
    }
}
