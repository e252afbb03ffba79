//! The rounds of a step: every active server once per round, in the
//! round's seeded random order (in ABBA slices when the workload asks), each
//! run filed as a row and each round's value added to the server's cell.
//! Every round of a step files a row for each of its servers: one that is
//! not measured in it (down, left out, stopped by an earlier failure or by
//! Ctrl-C) gets a row with the status and reason, never no row.

use std::collections::BTreeMap;
use std::time::Instant;

use httplab_model::{self as m, RunStatus};

use crate::execute::cells::{measured_nothing, CellData, Stop, REASON_EMPTY};
use crate::execute::context::Execution;
use crate::execute::events::Event;
use crate::execute::measure::{measure, usable, Measured, RunError};
use crate::execute::packet_loss::Injector;
use crate::execute::slots::{Down, Slot};
use crate::plan::rounds;
use crate::plan::steps::{Offer, StepParams};
use crate::plan::study_plan::loss_skip_reason;
use crate::spec::{Metric, Workload};

/// Reason of a run cut short by Ctrl-C (its partial result is kept in the JSON).
pub const INTERRUPTED_DURING: &str = "interrupted (Ctrl-C) during the run; partial result kept";

/// Reason of a run not made because of Ctrl-C.
const INTERRUPTED: &str = "interrupted (Ctrl-C)";

/// One workload step as it is measured: its servers' cells and rounds.
pub struct StepRun {
    /// Workload index.
    pub wi: usize,
    /// Step index within the workload.
    pub si: usize,
    /// The step.
    pub params: StepParams,
    /// Its label (None: a workload without steps).
    pub label: Option<String>,
    /// The metric it is judged by.
    pub metric: Metric,
    /// Slots of the servers of this workload.
    pub mine: Vec<usize>,
    /// Each server's cell, by slot.
    pub data: BTreeMap<usize, CellData>,
    /// Rounds run so far.
    pub rounds: u32,
    /// Rounds of the first phase (the interim look, when there is one).
    pub first_rounds: u32,
    /// Most rounds.
    pub cap: u32,
    /// Wall seconds spent on its rounds.
    pub spent_s: f64,
}

impl StepRun {
    /// The cells, in slot order.
    pub fn cells(&self) -> Vec<CellData> {
        self.data.values().cloned().collect()
    }
    /// Servers still measured (not failed or interrupted).
    pub fn active_count(&self) -> usize {
        self.data.values().filter(|d| d.stop.is_none()).count()
    }
    /// Servers no longer measured whose rounds still file a row each (see
    /// [`CellData::not_measured`]).
    pub fn not_measured_count(&self) -> usize {
        self.data
            .values()
            .filter(|d| d.stop.is_some() && d.not_measured.is_some())
            .count()
    }
    /// True while at least two servers are measured (a comparison).
    pub fn active(&self) -> bool {
        self.active_count() >= 2
    }
}

/// One run's outcome and its position in the round.
type Outcome = (u32, Result<Measured, RunError>);

/// Phase one of a workload: every step's fewest rounds.
pub fn run_workload(
    cx: &mut Execution,
    slots: &mut [Slot],
    wi: usize,
    w: &Workload,
) -> Vec<StepRun> {
    // Slots are the plan's servers, in its order.
    let plan = cx.plan;
    let wp = &plan.workloads[wi];
    let mine: Vec<usize> = wp
        .servers
        .iter()
        .copied()
        .filter(|&i| i < slots.len())
        .collect();
    let metric = wp.metric;
    let (min_reps, max_reps) = wp.rounds;
    let steps = wp.steps.clone();
    let no_loss = loss_unavailable(cx, w, wp.skipped.as_deref());
    // Servers that cannot speak the workload's protocol, with the reason,
    // as the plan decided them; every server when its packet loss cannot
    // be injected.
    let left_out: BTreeMap<usize, (RunStatus, String)> = mine
        .iter()
        .filter_map(|&i| match (&no_loss, wp.left_out_reason(i)) {
            (Some(why), _) => Some((i, (RunStatus::Skipped, why.clone()))),
            (None, Some(why)) => Some((i, (RunStatus::Unsupported, why.to_string()))),
            (None, None) => None,
        })
        .collect();
    let mut out = Vec::new();
    for (si, p) in steps.into_iter().enumerate() {
        let step = p.label();
        let mut data: BTreeMap<usize, CellData> = BTreeMap::new();
        for &i in &mine {
            let mut d = CellData {
                server: slots[i].inst.name.clone(),
                ..Default::default()
            };
            // Servers that never started, and servers left out of this
            // workload's comparisons: not measured, a row with the reason
            // in every round of the step (filed by `run_rounds`).
            let out = slots[i].down.clone().or_else(|| {
                left_out.get(&i).map(|(status, reason)| Down {
                    status: status.clone(),
                    reason: reason.clone(),
                })
            });
            if let Some(down) = out {
                d.stop = Some(Stop::Failed);
                d.left_out = Some(down.reason.clone());
                d.not_measured = Some(down);
            }
            data.insert(i, d);
        }
        let mut sr = StepRun {
            wi,
            si,
            params: p,
            label: step,
            metric,
            mine: mine.clone(),
            data,
            rounds: 0,
            first_rounds: 0,
            cap: max_reps,
            spent_s: 0.0,
        };
        run_rounds(cx, slots, w, &mut sr, min_reps);
        sr.first_rounds = sr.rounds;
        out.push(sr);
    }
    out
}

/// Why a workload's packet loss cannot be injected (None: it can, or it
/// asks for none): as the plan says (`planned`), else looked for once per
/// study. The reason is printed.
fn loss_unavailable(cx: &mut Execution, w: &Workload, planned: Option<&str>) -> Option<String> {
    w.loss_pct?;
    let why = match planned {
        Some(why) => why.to_string(),
        None => cx
            .packet_loss
            .get_or_insert_with(Injector::usable)
            .as_ref()
            .err()
            .map(|why| loss_skip_reason(why))?,
    };
    cx.emit(Event::Notice {
        message: format!("{}: {why}", w.name),
    });
    Some(why)
}

/// Runs rounds of one step until it has `until` rounds (at most its cap).
/// Every round visits every active server once in the round's seeded random
/// order; a server no longer measured (down, left out, failed or
/// interrupted earlier) gets a row with the reason instead, also when no
/// server is left to measure: every planned round is recorded.
pub fn run_rounds(
    cx: &mut Execution,
    slots: &mut [Slot],
    w: &Workload,
    sr: &mut StepRun,
    until: u32,
) {
    let started = Instant::now();
    let mut round = sr.rounds;
    loop {
        let active: Vec<usize> = sr
            .mine
            .iter()
            .copied()
            .filter(|i| sr.data.get(i).is_some_and(|d| d.stop.is_none()))
            .collect();
        let mut made = 0;
        let mut got = BTreeMap::new();
        let mut order = Vec::new();
        if !active.is_empty() {
            order = rounds::round_order(&active, cx.proto.seed, sr.wi, sr.si, round);
            got = run_round(cx, slots, w, sr, round, &order);
            made = got.values().map(|v: &Vec<Outcome>| v.len() as u32).sum();
        }
        let first_row = cx.runs.len();
        for &i in &order {
            let outcomes = got.remove(&i).unwrap_or_default();
            record(cx, slots, w, sr, round, i, outcomes);
        }
        file_not_measured(cx, w, sr, round, &active, made);
        // Rows in the order the runs were made, the servers not measured last.
        cx.runs[first_row..].sort_by_key(|r| r.position);
        round += 1;
        if round >= until || round >= sr.cap {
            break;
        }
    }
    for i in &sr.mine {
        if let Some(d) = sr.data.get_mut(i) {
            if d.stop.is_none() && round >= sr.cap {
                d.stop = Some(Stop::MaxRepetitions);
            }
        }
    }
    sr.rounds = round;
    sr.spent_s += started.elapsed().as_secs_f64();
}

/// Files a row for every server of the step that this round did not
/// measure because it had stopped before it, with its status and reason,
/// at the positions after the round's `made` runs.
fn file_not_measured(
    cx: &mut Execution,
    w: &Workload,
    sr: &StepRun,
    round: u32,
    measured: &[usize],
    made: u32,
) {
    let mut position = made;
    for i in sr.mine.iter().filter(|i| !measured.contains(i)) {
        let Some(d) = sr.data.get(i) else {
            continue;
        };
        let Some(why) = d.not_measured.as_ref() else {
            continue;
        };
        Row::new(w, &d.server, &sr.label, round).file(
            cx,
            position,
            why.status.clone(),
            &why.reason,
            None,
        );
        cx.emit(Event::Progress { seconds: 0.0 });
        position += 1;
    }
}

/// The runs of one round: `slices` short runs per server, in the round's
/// order and then reversed (A B | B A …), so that drift within the round
/// falls on every server alike; one slice is the plain round. Returns each
/// server's outcomes with their positions.
fn run_round(
    cx: &mut Execution,
    slots: &mut [Slot],
    w: &Workload,
    sr: &StepRun,
    round: u32,
    order: &[usize],
) -> BTreeMap<usize, Vec<Outcome>> {
    let where_ = format!(
        "{}{} · round {}",
        w.name,
        sr.label
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default(),
        round + 1
    );
    let slices = w.slice_count();
    let ps = sr.params.sliced(slices);
    let mut got: BTreeMap<usize, Vec<Outcome>> = BTreeMap::new();
    let mut position = 0u32;
    for slice in 0..slices {
        let seq: Vec<usize> = if slice % 2 == 0 {
            order.to_vec()
        } else {
            order.iter().rev().copied().collect()
        };
        for &i in &seq {
            // A server whose slice failed is not measured again this round.
            if got
                .get(&i)
                .is_some_and(|v| v.iter().any(|(_, r)| r.is_err()))
            {
                continue;
            }
            let part = if slices > 1 {
                format!(" · slice {}/{slices}", slice + 1)
            } else {
                String::new()
            };
            cx.announce(format!("{} · {where_}{part}", slots[i].inst.name));
            let outcome = if cx.stopped() {
                Err(RunError::Skipped(INTERRUPTED.to_string()))
            } else {
                usable(&mut slots[i]).and_then(|()| measure(cx, &mut slots[i], w, &ps, round))
            };
            finished(cx, &slots[i], w, &outcome, ps.run_seconds());
            got.entry(i).or_default().push((position, outcome));
            position += 1;
        }
    }
    got
}

/// Progress after each run: observers hear that a run is done and its status.
fn finished(
    cx: &mut Execution,
    slot: &Slot,
    w: &Workload,
    outcome: &Result<Measured, RunError>,
    seconds: f64,
) {
    cx.emit(Event::Progress { seconds });
    let status = match outcome {
        Ok(x) if x.run.as_ref().is_some_and(measured_nothing) => RunStatus::Empty,
        Ok(_) => RunStatus::Ok,
        Err(e) => e.status(),
    };
    cx.emit(Event::RunFinished {
        server: slot.inst.name.clone(),
        workload: w.name.clone(),
        pid: slot.running.as_ref().map_or(0, |r| r.pid),
        status,
    });
}

/// Where a row of the results belongs: workload, server, step, round.
#[derive(Clone, Copy)]
struct Row<'a> {
    w: &'a Workload,
    server: &'a str,
    step: &'a Option<String>,
    round: u32,
}

impl<'a> Row<'a> {
    fn new(w: &'a Workload, server: &'a str, step: &'a Option<String>, round: u32) -> Row<'a> {
        Row {
            w,
            server,
            step,
            round,
        }
    }

    /// Files a row without a measurement (its status says why).
    fn file(
        self,
        cx: &mut Execution,
        position: u32,
        status: RunStatus,
        reason: &str,
        m: Option<Measured>,
    ) {
        let (run, sweep) = m.map_or((None, None), |m| (m.run, m.sweep));
        self.file_run(cx, position, status, reason, run, sweep);
    }

    /// Files a row of the results, the step's parameter and value added to
    /// its run's facts.
    fn file_run(
        self,
        cx: &mut Execution,
        position: u32,
        status: RunStatus,
        reason: &str,
        run: Option<m::RunResult>,
        sweep: Option<m::SweepResult>,
    ) {
        let run = run.map(|mut r| {
            if let (Some(v), Some(s)) = (&self.w.vary, self.step) {
                let f = &mut r.config.facts.study;
                f.param = Some(v.param.into());
                f.step = Some(s.clone());
            }
            r
        });
        cx.runs.push(m::StudyRun {
            workload: self.w.name.clone(),
            server: self.server.to_string(),
            repetition: self.round,
            step: self.step.clone(),
            position,
            start: cx.start,
            status,
            reason: reason.into(),
            run,
            sweep,
        });
    }
}

/// What one slice's outcome gives the cell's round.
enum SliceValue {
    /// Every metric of the slice, those not valid for comparison, and
    /// whether the client limited it.
    Values(BTreeMap<Metric, f64>, Vec<Metric>, bool),
    /// Nothing measured: the round is not a repetition.
    Empty,
    /// The cell stops; its later rounds file rows with this status and reason.
    Stop(Stop, Down),
}

/// The rows of a cell's rounds after `stop` ended it in round `round`
/// (`why`: that round's reason).
fn after_stop(stop: Stop, round: u32, why: &str) -> Down {
    match stop {
        Stop::Interrupted => Down {
            status: RunStatus::Skipped,
            reason: INTERRUPTED.to_string(),
        },
        _ => Down {
            status: RunStatus::Failed,
            reason: format!(
                "not measured: round {} of this step failed ({why})",
                round + 1
            ),
        },
    }
}

/// Files one server's repetition (one outcome per slice): a row per run, and
/// the cell's value for this round, the geometric mean of its slices (or
/// why there is none).
fn record(
    cx: &mut Execution,
    slots: &mut [Slot],
    w: &Workload,
    sr: &mut StepRun,
    round: u32,
    i: usize,
    outcomes: Vec<Outcome>,
) {
    let name = slots[i].inst.name.clone();
    let row = Row::new(w, &name, &sr.label, round);
    let mut parts: Vec<BTreeMap<Metric, f64>> = Vec::new();
    let (mut client_bound, mut invalid) = (false, Vec::new());
    let (mut stop, mut empty) = (None, false);
    for (pos, outcome) in outcomes {
        match file_outcome(cx, &mut slots[i], row, sr, pos, outcome) {
            SliceValue::Values(all, bad, cb) => {
                invalid.extend(bad);
                client_bound |= cb;
                parts.push(all);
            }
            SliceValue::Empty => empty = true,
            SliceValue::Stop(s, later) => stop = Some((s, later)),
        }
    }
    let Some(d) = sr.data.get_mut(&i) else {
        return;
    };
    if let Some((s, later)) = stop {
        d.stop = Some(s);
        d.not_measured = Some(later);
        return;
    }
    if empty {
        d.empty_runs += 1;
        return;
    }
    let all = combine_slices(&parts);
    if let Some(v) = all.get(&sr.metric).copied() {
        d.push(round, v, &all, client_bound, &invalid);
    }
}

/// Files the row of one run and says what it gives the cell.
fn file_outcome(
    cx: &mut Execution,
    slot: &mut Slot,
    row: Row,
    sr: &StepRun,
    pos: u32,
    outcome: Result<Measured, RunError>,
) -> SliceValue {
    let metric = sr.metric;
    let m = match outcome {
        Ok(m) => m,
        Err(e) => {
            if let RunError::Failed(why) = &e {
                // A server that died stays down for the rest of the study.
                if slot.down.is_none() && slot.running.as_mut().and_then(|r| r.exited()).is_some() {
                    slot.down = Some(crate::execute::slots::Down {
                        status: RunStatus::Failed,
                        reason: why.clone(),
                    });
                }
            }
            row.file(cx, pos, e.status(), e.reason(), None);
            let stop = match e {
                RunError::Skipped(_) => Stop::Interrupted,
                RunError::Failed(_) => Stop::Failed,
            };
            return SliceValue::Stop(stop, after_stop(stop, row.round, e.reason()));
        }
    };
    if m.run.as_ref().is_some_and(|r| r.interrupted) {
        row.file(cx, pos, RunStatus::Skipped, INTERRUPTED_DURING, Some(m));
        let stop = Stop::Interrupted;
        return SliceValue::Stop(stop, after_stop(stop, row.round, INTERRUPTED_DURING));
    }
    if m.run.as_ref().is_some_and(measured_nothing) {
        // Not a repetition: the cell gets another round (up to its cap)
        // instead of a rate of 0.
        row.file(cx, pos, RunStatus::Empty, REASON_EMPTY, Some(m));
        return SliceValue::Empty;
    }
    let mut all_m = m
        .run
        .as_ref()
        .map(crate::execute::cells::metrics_of)
        .unwrap_or_default();
    all_m.extend(m.values.iter().copied());
    let invalid = invalid_metrics(&sr.params, m.run.as_ref());
    let has = |k: &Metric| all_m.get(k).is_some_and(|v| v.is_finite());
    if m.sweep.is_some() && !has(&Metric::MaxRate) {
        // The client limited the search before any rate was sustained:
        // nothing is known of the server; the cell gets another round (up
        // to its cap).
        let rate = m
            .sweep
            .as_ref()
            .and_then(|s| s.targets.first())
            .and_then(|t| t.steps.first())
            .map_or(0.0, |s| s.demanded_rate);
        let why = format!(
            "the client limited the capacity search at {} conn/s, before any rate was sustained \
             (a busy machine?): no capacity this round",
            crate::plan::text::fmt_num(rate)
        );
        row.file(cx, pos, RunStatus::Empty, &why, Some(m));
        return SliceValue::Empty;
    }
    if m.sweep.is_some() && has(&Metric::MaxRate) && !has(&metric) {
        // A search that never reached the CPU quota: no figure at
        // saturation this round; the cell gets another (up to its cap).
        let why = "the capacity search stopped before the server used 90 % of its CPU quota \
                   (a disturbance?): no figure at saturation this round";
        row.file(cx, pos, RunStatus::Empty, why, Some(m));
        return SliceValue::Empty;
    }
    if !has(&metric) {
        let why = format!(
            "no value of {} could be computed (no replies?)",
            metric.key()
        );
        row.file(cx, pos, RunStatus::Failed, &why, Some(m));
        let stop = Stop::Failed;
        return SliceValue::Stop(stop, after_stop(stop, row.round, &why));
    }
    let client_bound = m.client_bound;
    row.file(cx, pos, RunStatus::Ok, "", Some(m));
    SliceValue::Values(all_m, invalid, client_bound)
}

/// One value per metric for a round measured in slices: the geometric mean
/// of the slices' values (the comparisons are on log values), for metrics
/// every slice has; a single slice is returned as it is.
fn combine_slices(parts: &[BTreeMap<Metric, f64>]) -> BTreeMap<Metric, f64> {
    match parts {
        [] => BTreeMap::new(),
        [one] => one.clone(),
        [first, ..] => first
            .keys()
            .filter_map(|k| {
                let vs: Vec<f64> = parts.iter().filter_map(|p| p.get(k).copied()).collect();
                if vs.len() < parts.len() || vs.iter().any(|v| !v.is_finite()) {
                    return None;
                }
                let v = if vs.iter().all(|v| *v > 0.0) {
                    (vs.iter().map(|v| v.ln()).sum::<f64>() / vs.len() as f64).exp()
                } else {
                    vs.iter().sum::<f64>() / vs.len() as f64
                };
                Some((*k, v))
            })
            .collect(),
    }
}

/// Metrics of a run that are measured but not valid for comparison: server
/// CPU per request when the run was offered a fixed rate and achieved
/// outside 2 % of it (the servers then did different work).
fn invalid_metrics(p: &StepParams, run: Option<&m::RunResult>) -> Vec<Metric> {
    let Some(r) = run else {
        return Vec::new();
    };
    let ok = match p.offer {
        Offer::Open {
            rate: Some(rate), ..
        } => {
            let offered = rate * p.num_calls.max(1) as f64;
            let achieved = Metric::ReplyRate.of_run(r).unwrap_or(0.0);
            offered > 0.0 && (achieved / offered - 1.0).abs() <= 0.02
        }
        // Not a fixed rate: there is no offered work to hold it to.
        _ => true,
    };
    if ok {
        Vec::new()
    } else {
        vec![Metric::ServerCpuUsPerReq, Metric::ServerCpuPerKreq]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_combine_by_geometric_mean_of_shared_metrics() {
        let a: BTreeMap<Metric, f64> =
            [(Metric::ReplyRate, 100.0), (Metric::ResponseMs, 2.0)].into();
        let b: BTreeMap<Metric, f64> = [(Metric::ReplyRate, 400.0)].into();
        let c = combine_slices(&[a.clone(), b]);
        assert!((c[&Metric::ReplyRate] - 200.0).abs() < 1e-9);
        assert!(!c.contains_key(&Metric::ResponseMs), "not in every slice");
        assert_eq!(combine_slices(std::slice::from_ref(&a)), a);
        assert!(combine_slices(&[]).is_empty());
    }
}
