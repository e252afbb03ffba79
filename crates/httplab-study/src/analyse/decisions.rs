//! The study's decisions: from the cells of every step to the family of
//! comparisons, their decisions (winner, equivalent, inconclusive) and the
//! verdict records. No I/O; the runner calls it twice when the study has a
//! budget for extra rounds (at the interim look, to hand the rounds out, and
//! at the end), once otherwise (see [`crate::analyse::design`]).
//!
//! The family is every comparison of the study: each step's leader against
//! its runner-up on the workload's metric; on server CPU per request for
//! fixed-rate load steps (the server's own accounting, valid whoever the
//! client was); each server against `[compare] baseline` (on the workload's
//! metric, and on fixed-rate load steps on server CPU per request too); and each question's
//! evidence that is not already one of those. Every claim is read off an
//! interval at the whole family's level (`httplab_stats::decide`,
//! docs/statistics.md).

use httplab_model as m;
use httplab_stats as st;

use crate::execute::cells::CellData;
use crate::plan::study_plan::StudyPlan;
use crate::spec::Metric;

/// One step's data as the analysis sees it.
#[derive(Debug, Clone)]
pub struct StepView<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// Step label.
    pub step: Option<&'a str>,
    /// The workload's metric.
    pub metric: Metric,
    /// Also judge server CPU per request (fixed offered work).
    pub server_cost: bool,
    /// Cells of the step, one per server.
    pub cells: Vec<CellData>,
    /// The two stages the rounds were planned in (the interim look's rounds
    /// and the cap), when the design had an interim look.
    pub interim: Option<st::Stages>,
}

/// One comparison of the family, before its decision.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Index of its step in the views.
    pub step_index: usize,
    /// Workload.
    pub workload: String,
    /// Step label.
    pub step: Option<String>,
    /// Step comparison or a named pair.
    pub kind: m::VerdictKind,
    /// The metric compared (the matchup names it by its key).
    pub metric: Metric,
    /// The matchup (servers, looks, bounds).
    pub matchup: st::Matchup,
}

/// The design options of a protocol.
pub fn design_options(p: &m::Protocol) -> st::DesignOptions {
    st::DesignOptions {
        alpha: p.alpha,
        delta: p.min_effect,
        ..st::DesignOptions::default()
    }
}

fn better(metric: Metric) -> st::Better {
    if metric.higher_is_better() {
        st::Better::Higher
    } else {
        st::Better::Lower
    }
}

fn measured(metric: Metric) -> st::Measured {
    match metric.measured_by() {
        m::MeasuredBy::Server => st::Measured::ByServer,
        m::MeasuredBy::Client => st::Measured::ByClient,
    }
}

/// Relative step of the grid a capacity search's values sit on.
pub use crate::plan::rounds::CAPACITY_GRID;

/// Capacity values sit on the search's doubling/bisection grid: their
/// spread is floored at what that grid resolves.
fn on_grid(metric: Metric, mut m: st::Matchup) -> st::Matchup {
    if metric == Metric::MaxRate {
        m.comparison = m.comparison.map(|c| c.with_resolution(CAPACITY_GRID));
    }
    m
}

fn samples<'a>(cells: &'a [CellData], metric: Metric) -> Vec<st::Sample<'a>> {
    cells
        .iter()
        .map(|c| st::Sample {
            name: &c.server,
            values: c.rounds_of(metric),
            client_bound: c.client_bound_runs > 0,
        })
        .collect()
}

/// The named pairs of a step: everyone against the baseline (on the
/// workload's metric, and on server CPU per request where the offered work
/// is fixed, as the step comparison is), then the questions' evidence.
fn named_pairs(plan: &StudyPlan, v: &StepView) -> Vec<(String, String, Metric)> {
    let mut pairs: Vec<(String, String, Metric)> = Vec::new();
    if let Some(base) = &plan.baseline {
        for c in v.cells.iter().filter(|c| &c.server != base) {
            pairs.push((c.server.clone(), base.clone(), v.metric));
            if v.server_cost {
                pairs.push((c.server.clone(), base.clone(), Metric::ServerCpuUsPerReq));
            }
        }
    }
    for q in &plan.questions {
        for e in q.evidence.iter().filter(|e| e.workload == v.workload) {
            pairs.push((
                e.server.clone(),
                e.versus.clone(),
                e.metric.unwrap_or(v.metric),
            ));
        }
    }
    pairs
}

/// Every comparison of the study, in report order: per step, the step
/// comparisons, then the pairs.
pub fn plan(study_plan: &StudyPlan, views: &[StepView]) -> Vec<Planned> {
    let mut out = Vec::new();
    for (i, v) in views.iter().enumerate() {
        let mut push = |kind, metric, matchup| {
            out.push(Planned {
                step_index: i,
                workload: v.workload.to_string(),
                step: v.step.map(str::to_string),
                kind,
                metric,
                matchup,
            })
        };
        let mut metrics = vec![v.metric];
        if v.server_cost && v.metric != Metric::ServerCpuUsPerReq {
            metrics.push(Metric::ServerCpuUsPerReq);
        }
        for &metric in &metrics {
            let s = samples(&v.cells, metric);
            let has_values = s.iter().filter(|x| x.values.iter().any(Option::is_some));
            if metric != v.metric && has_values.count() < 2 {
                continue;
            }
            push(
                m::VerdictKind::Step,
                metric,
                on_grid(
                    metric,
                    st::matchup(
                        metric.key(),
                        better(metric),
                        &s,
                        measured(metric),
                        v.interim,
                    ),
                ),
            );
        }
        let pairs = named_pairs(study_plan, v);
        let mut seen: Vec<(String, String, Metric)> = Vec::new();
        for (a, b, metric) in pairs {
            let key = (a.clone(), b.clone(), metric);
            let rev = (b.clone(), a.clone(), metric);
            if seen.contains(&key) || seen.contains(&rev) {
                continue;
            }
            seen.push(key);
            let (Some(ca), Some(cb)) = (
                v.cells.iter().find(|c| c.server == a),
                v.cells.iter().find(|c| c.server == b),
            ) else {
                continue;
            };
            // Already the step's own comparison: the pair adds nothing.
            let same_as_step = out.iter().any(|p| {
                p.step_index == i
                    && p.kind == m::VerdictKind::Step
                    && p.metric == metric
                    && ((p.matchup.a.as_deref() == Some(&a) && p.matchup.b.as_deref() == Some(&b))
                        || (p.matchup.a.as_deref() == Some(&b)
                            && p.matchup.b.as_deref() == Some(&a)))
            });
            if same_as_step {
                continue;
            }
            let s = samples(std::slice::from_ref(ca), metric);
            let t = samples(std::slice::from_ref(cb), metric);
            let has_values = |x: &[st::Sample]| x[0].values.iter().any(Option::is_some);
            if metric != v.metric && !(has_values(&s) && has_values(&t)) {
                // A second metric without values (no CPU accounting): no pair.
                continue;
            }
            out.push(Planned {
                step_index: i,
                workload: v.workload.to_string(),
                step: v.step.map(str::to_string),
                kind: m::VerdictKind::Pair,
                metric,
                matchup: on_grid(
                    metric,
                    st::matchup_pair(
                        metric.key(),
                        better(metric),
                        &s[0],
                        &t[0],
                        measured(metric),
                        v.interim,
                    ),
                ),
            });
        }
    }
    out
}

/// The comparisons that can be decided (two servers with values), with
/// their index in `planned`.
fn family(planned: &[Planned]) -> (Vec<usize>, Vec<st::Comparison>) {
    planned
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.matchup.comparison.clone()?)))
        .unzip()
}

/// Decisions at the interim look (for handing out extra rounds), by planned
/// index; `None` where there is nothing to decide.
pub fn interim(planned: &[Planned], opts: &st::DesignOptions) -> Vec<Option<st::Decision>> {
    let (idx, fam) = family(planned);
    let mut out = vec![None; planned.len()];
    for (i, d) in idx.into_iter().zip(st::decide_interim(&fam, opts)) {
        out[i] = Some(d);
    }
    out
}

/// Rounds each step would need to settle its nearest undecided comparison,
/// with that comparison's index in `planned` (None when every comparison is
/// decided or none can be), from the interim decisions.
pub fn to_settle(
    planned: &[Planned],
    decisions: &[Option<st::Decision>],
    steps: usize,
) -> Vec<Option<(u32, usize)>> {
    let mut out: Vec<Option<(u32, usize)>> = vec![None; steps];
    for (i, (p, d)) in planned.iter().zip(decisions).enumerate() {
        let Some(d) = d else { continue };
        if d.outcome != st::Outcome::Inconclusive || d.held_back.is_some() {
            continue;
        }
        let want = d.rounds_to_settle.unwrap_or(st::MAX_ROUNDS);
        let slot = &mut out[p.step_index];
        if slot.map_or(true, |(x, _)| want < x) {
            *slot = Some((want, i));
        }
    }
    out
}

/// The final decisions and the verdict records, in planned order.
pub fn verdicts(planned: &[Planned], opts: &st::DesignOptions) -> Vec<m::StudyVerdict> {
    let (idx, fam) = family(planned);
    let mut decided: Vec<Option<st::Decision>> = vec![None; planned.len()];
    for (i, d) in idx.into_iter().zip(st::decide(&fam, opts)) {
        decided[i] = Some(d);
    }
    planned
        .iter()
        .zip(&decided)
        .map(|(p, d)| to_model(p, st::finish(&p.matchup, d.as_ref(), opts)))
        .collect()
}

fn to_model(p: &Planned, v: st::Verdict) -> m::StudyVerdict {
    m::StudyVerdict {
        workload: p.workload.clone(),
        step: p.step.clone(),
        metric: p.metric.into(),
        better: match v.better {
            st::Better::Lower => m::Direction::Lower,
            st::Better::Higher => m::Direction::Higher,
        },
        outcome: Some(match v.outcome {
            st::Outcome::Winner => m::VerdictOutcome::Winner,
            st::Outcome::Equivalent => m::VerdictOutcome::Equivalent,
            st::Outcome::Inconclusive => m::VerdictOutcome::Inconclusive,
        }),
        kind: p.kind,
        measured_by: Some(match v.measured {
            st::Measured::ByClient => m::MeasuredBy::Client,
            st::Measured::ByServer => m::MeasuredBy::Server,
        }),
        winner: v.winner,
        leader: v.leader,
        runner_up: v.runner_up,
        ratio: v.ratio,
        ratio_ci: v.ratio_ci,
        ratio_ci_level: v.ratio_ci_level,
        ratio_ci90: v.ratio_ci90,
        p_value: v.p_value,
        p_equivalent: v.p_equivalent,
        significant: v.significant,
        n: v.n.into_iter().map(|(k, n)| (k, n as u32)).collect(),
        pairs: v.pairs as u32,
        client_bound: v.client_bound,
        detectable: v.detectable,
        rounds_to_settle: v.rounds_to_settle,
        delta: Some(v.delta),
        noise: None,
        note: v.note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(server: &str, p50: [f64; 3], cpu: [f64; 3]) -> CellData {
        let mut c = CellData {
            server: server.into(),
            ..CellData::default()
        };
        c.by_round
            .insert(Metric::P50Ms, p50.iter().copied().map(Some).collect());
        c.by_round.insert(
            Metric::ServerCpuUsPerReq,
            cpu.iter().copied().map(Some).collect(),
        );
        c
    }

    fn study(baseline: Option<&str>) -> StudyPlan {
        let compare = baseline.map_or(String::new(), |b| {
            format!("[compare]\nbaseline = \"{b}\"\n")
        });
        let text = format!(
            "name = \"t\"\n[[servers]]\nname = \"a\"\nkind = \"nginx\"\n[[servers]]\nname = \"b\"\nkind = \"h2o\"\n\
             [[servers]]\nname = \"base\"\nkind = \"lighttpd\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\n\
             target = \"/x\"\nrate = 100\nmetric = \"p50_ms\"\n{compare}"
        );
        StudyPlan::new(
            &crate::spec::parse(&text, "t.toml").unwrap(),
            false,
            None,
            crate::execute::servers::speaks,
        )
    }

    fn planned(s: &StudyPlan) -> Vec<(String, String, String)> {
        let views = vec![StepView {
            workload: "w",
            step: None,
            metric: Metric::P50Ms,
            server_cost: true,
            cells: vec![
                cell("a", [1.0, 1.1, 1.2], [10.0, 11.0, 12.0]),
                cell("b", [2.0, 2.1, 2.2], [20.0, 21.0, 22.0]),
                cell("base", [3.0, 3.1, 3.2], [30.0, 31.0, 32.0]),
            ],
            interim: None,
        }];
        plan(s, &views)
            .into_iter()
            .filter(|p| p.kind == m::VerdictKind::Pair)
            .map(|p| {
                (
                    p.matchup.a.unwrap_or_default(),
                    p.matchup.b.unwrap_or_default(),
                    p.matchup.metric,
                )
            })
            .collect()
    }

    #[test]
    fn every_server_meets_the_baseline_on_cpu_too_where_the_work_is_fixed() {
        assert!(planned(&study(None)).is_empty());
        let pairs = planned(&study(Some("base")));
        let has = |a: &str, metric: &str| {
            pairs
                .iter()
                .any(|(x, y, m)| x == a && y == "base" && m == metric)
        };
        // The step comparisons are a vs b on both metrics; every pair with
        // the baseline is new, on the workload's metric and on CPU.
        assert!(has("a", "p50_ms") && has("b", "p50_ms"), "{pairs:?}");
        assert!(
            has("a", "server_cpu_us_per_req") && has("b", "server_cpu_us_per_req"),
            "{pairs:?}"
        );
        assert_eq!(pairs.len(), 4, "{pairs:?}");
    }
}
