//! The sequential design over the measured steps: the interim look that
//! hands the budget's extra rounds to the undecided steps nearest a
//! decision, and the final look that decides the whole family at once.

use httplab_model as m;

use crate::analyse::cells::cell;
use crate::analyse::decisions::{self, StepView};
use crate::analyse::noise;
use crate::execute::rounds::StepRun;
use crate::plan::study_plan::StudyPlan;
use crate::spec::WorkloadKind;

/// What the analysis sees of the measured steps (`interim`: the design had
/// an interim look after each step's first rounds).
pub fn step_views<'a>(
    plan: &'a StudyPlan,
    steps: &'a [StepRun],
    interim: bool,
) -> Vec<StepView<'a>> {
    steps
        .iter()
        .map(|sr| {
            let w = &plan.workloads[sr.wi];
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

/// What the second phase gives one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Extra {
    /// Extra rounds.
    pub rounds: u32,
    /// The window of each extra round, when it differs from the first rounds'.
    pub window_s: Option<f64>,
    /// Why that window, in words (for the notes of the results).
    pub why: Option<String>,
}

/// The extra rounds of each step in the second phase: the family decided
/// at the interim look, then the budget's seconds handed to the undecided
/// steps nearest a decision (`httplab_stats::allocate`). Where a step was
/// measured in slices, its extra rounds' window is chosen from where its
/// noise lives ([`round_window`]), read from the first rounds' rows (`runs`).
pub fn extra_rounds(
    plan: &StudyPlan,
    proto: &m::Protocol,
    steps: &[StepRun],
    budget_s: f64,
    runs: &[m::StudyRun],
) -> Vec<Extra> {
    let opts = decisions::design_options(proto);
    // The stages as planned: the interim look reads the weights the final
    // look will combine the stages with.
    let views = step_views(plan, steps, true);
    let planned = decisions::plan(plan, &views);
    let interim = decisions::interim(&planned, &opts);
    let settle = decisions::to_settle(&planned, &interim, steps.len());
    let rows = noise::Rows::new(runs);
    let mut windows: Vec<Option<Window>> = Vec::with_capacity(steps.len());
    let needs: Vec<httplab_stats::Need> = steps
        .iter()
        .zip(&settle)
        .map(|(sr, t)| {
            let round_cost_s = if sr.rounds > 0 {
                sr.spent_s / f64::from(sr.rounds)
            } else {
                f64::INFINITY
            };
            let chosen = t.and_then(|(want, i)| {
                let noise = rows.components(&nearest(&planned[i]))?;
                let w = &plan.workloads[sr.wi];
                let window_s = sr.params.window?.as_secs_f64();
                let fits = matches!(w.kind, WorkloadKind::Load | WorkloadKind::Users);
                let shape = RoundShape {
                    window_s,
                    slices: w.slices,
                    servers: sr.active_count(),
                    round_cost_s,
                };
                fits.then(|| round_window(&shape, &noise, want.saturating_sub(sr.rounds)))
                    .flatten()
            });
            let need = httplab_stats::Need {
                rounds: sr.rounds,
                to_settle: match (&chosen, t) {
                    (Some(c), _) => Some(sr.rounds + c.extra),
                    (None, t) => t.map(|(want, _)| want),
                },
                round_cost_s: chosen.as_ref().map_or(round_cost_s, |c| c.round_cost_s),
                cap: if sr.active() { sr.cap } else { sr.rounds },
            };
            windows.push(chosen);
            need
        })
        .collect();
    httplab_stats::allocate(&needs, budget_s)
        .into_iter()
        .zip(windows)
        .map(|(rounds, w)| {
            let w = w.filter(|w| rounds > 0 && w.changed);
            Extra {
                rounds,
                window_s: w.as_ref().map(|w| w.window_s),
                why: w.map(|w| w.why),
            }
        })
        .collect()
}

/// The comparison a step's extra rounds are for, as a verdict names it.
fn nearest(p: &decisions::Planned) -> m::StudyVerdict {
    m::StudyVerdict {
        workload: p.workload.clone(),
        step: p.step.clone(),
        metric: p.metric.into(),
        leader: p.matchup.a.clone(),
        runner_up: p.matchup.b.clone(),
        ..Default::default()
    }
}

/// A step's rounds as the first phase ran them.
#[derive(Debug, Clone, Copy)]
pub struct RoundShape {
    /// Window of a round (shared by its slices).
    pub window_s: f64,
    /// Slices per round.
    pub slices: u32,
    /// Servers measured in each round.
    pub servers: usize,
    /// Seconds a round took.
    pub round_cost_s: f64,
}

/// The window chosen for a step's extra rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Window of each extra round.
    pub window_s: f64,
    /// Whether it differs from the first rounds'.
    pub changed: bool,
    /// Extra rounds that would settle the comparison at that window.
    pub extra: u32,
    /// Seconds a round at that window takes.
    pub round_cost_s: f64,
    /// Why, in words.
    pub why: String,
}

/// The shortest slice a chosen window may give (seconds): shorter ones hold
/// too few requests to count CPU time per request.
const MIN_SLICE_S: f64 = 0.2;

/// The window of a step's extra rounds that settles its comparison in the
/// fewest seconds, from where its noise lives (Kalibera and Jones's rule of
/// spending repetitions where the variance is, applied to the one level
/// this design can move). A round's log ratio varies by
/// σ_r² + σ_s²·W₁/(S·W) at window W, where σ_s is the spread between slices
/// at the first window W₁ (the part that averages out over time, like
/// counting noise) and σ_r the spread between rounds (what a longer window
/// cannot remove); it costs the first rounds' seconds plus the servers'
/// extra window time. `extra` rounds were needed at W₁; the rounds needed
/// at W scale with the variance (at least four, or as many as at W₁ if fewer). Candidates are W₁/2, W₁,
/// 2·W₁ and 4·W₁ (no slice shorter than 0.2 s); W₁ stays unless another
/// saves a tenth of the seconds. Changing the second stage's window keeps
/// the error rate: it is chosen from the first stage's data only, and the
/// second stage is judged on its own rounds. `None` without slices.
pub fn round_window(shape: &RoundShape, noise: &m::NoiseComponents, extra: u32) -> Option<Window> {
    let sd_s = noise.between_slices?;
    let (w1, s) = (shape.window_s, f64::from(shape.slices.max(1)));
    if !(w1 > 0.0 && shape.round_cost_s.is_finite() && shape.round_cost_s > 0.0) || extra == 0 {
        return None;
    }
    let var = |w: f64| noise.between_rounds.powi(2) + sd_s * sd_s * w1 / (s * w);
    let cost = |w: f64| shape.round_cost_s + shape.servers as f64 * (w - w1);
    let rounds_at = |w: f64| {
        let v1 = var(w1);
        let k = if v1 > 0.0 {
            (f64::from(extra) * var(w) / v1).ceil()
        } else {
            f64::from(extra)
        };
        // Never fewer rounds than four (or than needed at W₁): a stage of two or three rounds
        // has too few degrees of freedom for the variance scaling to mean anything.
        (k.min(f64::from(u32::MAX)) as u32).max(extra.min(4)).max(2)
    };
    let seconds = |(_, k, c): (f64, u32, f64)| f64::from(k) * c;
    let first = (w1, rounds_at(w1), cost(w1));
    let fastest = [w1 / 2.0, 2.0 * w1, 4.0 * w1]
        .into_iter()
        .filter(|w| w / s >= MIN_SLICE_S)
        .map(|w| (w, rounds_at(w), cost(w)))
        .min_by(|a, b| seconds(*a).total_cmp(&seconds(*b)));
    let best = match fastest {
        Some(f) if seconds(f) < 0.9 * seconds(first) => f,
        _ => first,
    };
    let changed = best.0 != w1;
    let pct = |x: f64| x.exp_m1() * 100.0;
    let why = format!(
        "{:.1} % between slices, {:.1} % between rounds: {} s windows settle it in about {} \
         rounds of {:.1} s ({} rounds of {:.1} s at {} s)",
        pct(sd_s),
        pct(noise.between_rounds),
        crate::plan::text::fmt_num(best.0),
        best.1,
        best.2,
        first.1,
        first.2,
        crate::plan::text::fmt_num(w1)
    );
    Some(Window {
        window_s: best.0,
        changed,
        extra: best.1,
        round_cost_s: best.2,
        why,
    })
}

/// The final look: every step's cells and the verdicts of the whole family
/// (`sequential`: the design had an interim look).
pub fn conclude(
    plan: &StudyPlan,
    proto: &m::Protocol,
    steps: &[StepRun],
    sequential: bool,
) -> (Vec<m::Cell>, Vec<m::StudyVerdict>) {
    let views = step_views(plan, steps, sequential);
    let planned = decisions::plan(plan, &views);
    let mut verdicts = decisions::verdicts(&planned, &decisions::design_options(proto));
    for v in verdicts.iter_mut().filter(|v| v.ratio.is_none()) {
        explain_left_out(plan, v, steps);
    }
    let mut cells = Vec::new();
    for sr in steps {
        for c in sr.data.values() {
            cells.push(cell(
                &plan.workloads[sr.wi].name,
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
fn explain_left_out(plan: &StudyPlan, v: &mut m::StudyVerdict, steps: &[StepRun]) {
    let mut by_reason: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for d in steps
        .iter()
        .filter(|sr| plan.workloads[sr.wi].name == v.workload && sr.label == v.step)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(slices: f64, rounds: f64) -> m::NoiseComponents {
        m::NoiseComponents {
            rounds: 4,
            slices: 2,
            between_slices: Some(slices),
            between_rounds: rounds,
            ..Default::default()
        }
    }

    const SHAPE: RoundShape = RoundShape {
        window_s: 1.0,
        slices: 2,
        servers: 2,
        round_cost_s: 2.6,
    };

    #[test]
    fn noise_between_slices_buys_longer_windows() {
        // All the noise averages out with time: a 4 s window has a quarter of the variance,
        // so 40 rounds of 2.6 s become 10 of 8.6 s.
        let w = round_window(&SHAPE, &noise(0.08, 0.0), 40).expect("window");
        assert!(w.changed);
        assert_eq!(w.window_s, 4.0);
        assert_eq!(w.extra, 10);
        assert!((w.round_cost_s - 8.6).abs() < 1e-9);
        assert!(
            w.why.contains("4 s windows settle it in about 10 rounds"),
            "{}",
            w.why
        );
    }

    #[test]
    fn noise_between_rounds_buys_more_rounds() {
        // A longer window cannot remove the spread between rounds: shorter, cheaper rounds
        // (0.25 s slices) settle it sooner.
        let w = round_window(&SHAPE, &noise(0.005, 0.05), 20).expect("window");
        assert!(w.changed);
        assert_eq!(w.window_s, 0.5);
        assert!(w.extra <= 21, "{w:?}");
    }

    #[test]
    fn the_first_window_stays_unless_another_saves_a_tenth() {
        // Noise of both kinds: no other window saves a tenth.
        let w = round_window(&SHAPE, &noise(0.06, 0.02), 6).expect("window");
        assert!(!w.changed, "{w:?}");
        assert_eq!((w.window_s, w.extra), (1.0, 6));
        // No slices, nothing known about where the noise lives.
        let flat = m::NoiseComponents {
            between_slices: None,
            ..noise(0.03, 0.03)
        };
        assert!(round_window(&SHAPE, &flat, 6).is_none());
        assert!(round_window(&SHAPE, &noise(0.03, 0.0), 0).is_none());
    }

    #[test]
    fn no_slice_is_made_shorter_than_the_floor() {
        let short = RoundShape {
            window_s: 0.3,
            ..SHAPE
        };
        // Shorter rounds would pay here, but 0.15 s windows make 0.075 s slices.
        let w = round_window(&short, &noise(0.001, 0.1), 20).expect("window");
        assert_eq!(w.window_s, 0.3, "{w:?}");
    }
}
