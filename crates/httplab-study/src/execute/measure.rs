//! One repetition of one step on one server: a load run through `httplab
//! load` in process (pinned to the client cores, the server's CPU read from
//! its cgroup and its memory sampled), a run under idle connections, or a
//! capacity search through `httplab_sweep::find_max`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use httplab_load::LoadSpec;
use httplab_model::{self as m, RunStatus};

use crate::execute::context::Execution;
use crate::execute::events::Event;
use crate::execute::idle::Holder;
use crate::execute::sampler::{self, Sampler};
use crate::execute::servers;
use crate::execute::slots::Slot;
use crate::plan::idle::HoldSpec;
use crate::plan::load_run::{LoadRun, RunShard, RunTls};
use crate::plan::steps::StepParams;
use crate::plan::text::{fmt_num, sanitize};
use crate::spec::{Metric, Workload, WorkloadKind};

/// Why a run has no measurement.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// The run or its server failed.
    Failed(String),
    /// Ctrl-C: the run was not made.
    Skipped(String),
}

impl RunError {
    /// The run's status in the results.
    pub fn status(&self) -> RunStatus {
        match self {
            RunError::Failed(_) => RunStatus::Failed,
            RunError::Skipped(_) => RunStatus::Skipped,
        }
    }

    /// Why, in words.
    pub fn reason(&self) -> &str {
        match self {
            RunError::Failed(why) | RunError::Skipped(why) => why,
        }
    }
}

fn failed(why: impl Into<String>) -> RunError {
    RunError::Failed(why.into())
}

/// What one cell repetition produced.
pub struct Measured {
    /// The load run (load, users and idle workloads).
    pub run: Option<m::RunResult>,
    /// The capacity search (sweep workloads).
    pub sweep: Option<m::SweepResult>,
    /// Values that are not metrics of `run` (capacity searches).
    pub values: Vec<(Metric, f64)>,
    /// The client limited the run.
    pub client_bound: bool,
}

impl Measured {
    fn of_run(run: m::RunResult) -> Measured {
        let client_bound = run.self_check.client_bound;
        Measured {
            run: Some(run),
            sweep: None,
            values: Vec::new(),
            client_bound,
        }
    }
}

/// One repetition of one step on one server: a load run, or for a sweep
/// workload a capacity search.
pub fn measure(
    cx: &mut Execution,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<Measured, RunError> {
    cx.emit(Event::RunStarted {
        server: slot.inst.name.clone(),
        workload: w.name.clone(),
    });
    match w.kind {
        WorkloadKind::Sweep => capacity(cx, slot, w, p, round),
        WorkloadKind::Idle => idle_run(cx, slot, w, p, round),
        WorkloadKind::Load | WorkloadKind::Users => {
            one_run(cx, slot, w, p, round).map(Measured::of_run)
        }
    }
}

/// Ok when the slot's server is up and can be measured.
pub fn usable(slot: &mut Slot) -> Result<(), RunError> {
    match (&mut slot.running, &slot.down) {
        (Some(r), None) => match r.exited() {
            Some(why) => Err(failed(format!(
                "server not running: it exited earlier ({why})"
            ))),
            None => Ok(()),
        },
        (_, Some(down)) => Err(failed(down.reason.clone())),
        (None, None) => Err(failed("server not running")),
    }
}

/// An idle workload's repetition: the held connections opened (see
/// [`crate::execute::idle`]), the normal client's run, then the holder's
/// census and the server's descriptors and memory before and during the hold.
fn idle_run(
    cx: &mut Execution,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<Measured, RunError> {
    let Some(srv) = slot.running.as_ref() else {
        return Err(failed("server not running"));
    };
    let (addr, pid) = (srv.addr_for(w.protocol), srv.pid);
    let hold = HoldSpec::of(w, p, addr);
    let before = sampler::sample(pid, 0.0);
    cx.announce(format!(
        "{} · opening {} idle connections",
        slot.inst.name, hold.conns
    ));
    let mut holder = Holder::open(&hold, &cx.opts.stop)
        .map_err(|e| failed(format!("idle connections: {e:#}")))?;
    let r = one_run(cx, slot, w, p, round);
    let census = holder.census();
    drop(holder);
    let mut run = r?;
    crate::execute::idle::annotate(&mut run, &census, hold.send, &before);
    Ok(Measured::of_run(run))
}

/// Searches upward from the workload's `low_rate` until the server
/// saturates (see `httplab_sweep::find_max`); when the client
/// saturates first the value is a lower bound and the cell is client-bound.
fn capacity(
    cx: &mut Execution,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<Measured, RunError> {
    let cfg = httplab_sweep::FindMax {
        start: w.low_rate.unwrap_or(100.0),
        ceiling: None,
        precision: crate::plan::rounds::CAPACITY_GRID,
        max_runs: 12,
        slo_ms: w.timeout_s.unwrap_or(5.0) * 1000.0,
    };
    let quota = set_quota(cx, slot, w);
    let mut err: Option<RunError> = None;
    let found = httplab_sweep::find_max(&cfg, |rate| {
        one_run(cx, slot, w, &p.at_rate(rate), round).map_err(|e| {
            let msg = anyhow::anyhow!("{}", e.reason());
            err = Some(e);
            msg
        })
    });
    if let (Some(_), Some(l)) = (quota, slot.limit.as_ref()) {
        // Lifted for every later workload; a failure here would leave the
        // server throttled, so the study refuses to go on measuring it.
        if let Err(e) = l.set(None) {
            return Err(failed(format!("could not lift the CPU quota: {e}")));
        }
    }
    let (steps, sat) = found.map_err(|e| err.unwrap_or_else(|| failed(format!("{e:#}"))))?;
    let client_bound = sat.client_bound;
    let values = search_values(&steps, &sat, quota)?;
    Ok(Measured {
        values,
        run: None,
        sweep: Some(search_result(cx, slot, w, steps, sat)),
        client_bound,
    })
}

/// What a finished capacity search gives its round: the values at the
/// highest sustained rate; none when the client limited the search before
/// any rate was sustained (nothing is known of the server: the round is a
/// gap, not a failure); a failure when no rate was sustained, down to the
/// lowest tried. `steps` are sorted by rate.
fn search_values(
    steps: &[m::SweepStep],
    sat: &m::Saturation,
    quota: Option<f64>,
) -> Result<Vec<(Metric, f64)>, RunError> {
    match sat.max_sustainable_rate {
        Some(value) => Ok(capacity_values(value, steps, quota)),
        None if sat.client_bound => Ok(Vec::new()),
        None => {
            let Some(low) = steps.first() else {
                return Err(failed("the capacity search made no run"));
            };
            let r = &low.run;
            Err(failed(format!(
                "no rate was sustained, down to {} conn/s ({} replies, {} failed calls there)",
                fmt_num(low.demanded_rate),
                r.totals.replies,
                m::metric::failed_calls(r)
            )))
        }
    }
}

/// The workload's CPU quota set on the server's group (None: no quota, or
/// it could not be set).
fn set_quota(cx: &Execution, slot: &Slot, w: &Workload) -> Option<f64> {
    match (w.cpu_quota, slot.limit.as_ref()) {
        (Some(q), Some(l)) if l.unavailable().is_none() => match l.set(Some(q)) {
            Ok(()) => Some(q),
            Err(e) => {
                cx.announce(format!(
                    "{}: could not set a CPU quota of {q} core ({e}); capacity is measured without it",
                    slot.inst.name
                ));
                None
            }
        },
        _ => None,
    }
}

/// A capacity search as an `httplab.sweep/1` document of one target.
fn search_result(
    cx: &Execution,
    slot: &Slot,
    w: &Workload,
    steps: Vec<m::SweepStep>,
    saturation: m::Saturation,
) -> m::SweepResult {
    let addr = slot
        .running
        .as_ref()
        .map(|r| r.addr.to_string())
        .unwrap_or_default();
    m::SweepResult {
        schema: m::SWEEP_SCHEMA.into(),
        tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
        started_at: steps
            .first()
            .map(|s| s.run.started_at.clone())
            .unwrap_or_default(),
        command_line: Vec::new(),
        targets: vec![m::SweepTarget {
            label: slot.inst.name.clone(),
            url: format!(
                "{}://{addr}{}",
                if cx.tls.is_some() { "https" } else { "http" },
                w.target
            ),
            steps,
            saturation,
        }],
        environment: crate::execute::env::environment(),
    }
}

/// A capacity search's values: the highest sustained rate and, from the run
/// at that rate, replies per second of server CPU (absent when the server's
/// CPU was not measured). Under a CPU quota the figure must come from a
/// sustained run that used at least 90 % of the quota (the server at
/// saturation); a search that a disturbance stopped early has none, and the
/// round is a gap rather than the cost of a half-idle server.
fn capacity_values(
    max_rate: f64,
    steps: &[m::SweepStep],
    quota: Option<f64>,
) -> Vec<(Metric, f64)> {
    let mut out = vec![(Metric::MaxRate, max_rate)];
    let saturated = |s: &m::SweepStep| match quota {
        Some(q) => {
            let busy = s.run.server.as_ref().map_or(0.0, |c| c.cpu_s)
                / s.run.totals.test_duration_s.max(1e-9);
            busy >= 0.9 * q
        }
        None => true,
    };
    let at = steps
        .iter()
        .filter(|s| s.demanded_rate <= max_rate * (1.0 + 1e-9) && saturated(s))
        .max_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
    if let Some(s) = at {
        let cpu = s.run.server.as_ref().map_or(0.0, |c| c.cpu_s);
        if cpu > 0.0 && s.run.totals.replies > 0 {
            out.push((Metric::ReqPerServerCpuS, s.run.totals.replies as f64 / cpu));
        }
    }
    out
}

/// One load run through `httplab load` in process, its threads pinned to the
/// client cores, the server's CPU measured from its cgroup (or schedstat)
/// and its memory sampled from /proc.
fn one_run(
    cx: &mut Execution,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<m::RunResult, RunError> {
    let mut spec = prepare_run(cx, slot, w, p, round)?;
    let check = client_check(cx, w, &spec, round)?;
    if let Some(l) = &cx.opts.live {
        l.set_context(vec![
            ("workload".into(), w.name.clone()),
            ("server".into(), slot.inst.name.clone()),
            ("step".into(), p.step.clone()),
            ("round".into(), round.to_string()),
        ]);
        spec.live.metrics = Some(l.clone());
    }
    // Packet loss on lo for this run only (after the calibration): the
    // guard removes it when the run ends, however it ends.
    let loss = match (w.loss_pct, &cx.packet_loss) {
        (Some(pct), Some(Ok(how))) => Some((how.loss(pct, spec.port).map_err(failed)?, how)),
        (Some(_), _) => return Err(failed("packet loss asked for but not available")),
        (None, _) => None,
    };
    let run = execute_run(
        &cx.plan.pinning.client_cores,
        &cx.opts.stop,
        slot,
        w,
        &spec,
        p.max_duration,
    );
    let how = loss.map(|(guard, how)| {
        drop(guard);
        how.method()
    });
    let mut run = run?;
    httplab_load::record_client_check(&mut run, check);
    let facts = &mut run.config.facts.study;
    if let (Some(pct), Some(method)) = (w.loss_pct, how) {
        facts.packet_loss = Some(m::PacketLoss {
            pct,
            method: Some(method),
        });
    }
    if spec.http2.is_some() {
        facts.client_ceiling = Some(m::ClientCeiling::Unknown(m::HttpProtocol::H2));
    } else if spec.http3.is_some() {
        facts.client_ceiling = Some(m::ClientCeiling::Unknown(m::HttpProtocol::H3));
    }
    Ok(run)
}

/// The typed description of this server's run of the step (its URI list
/// written, its client shard set).
fn load_run(
    cx: &Execution,
    slot: &Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<LoadRun, RunError> {
    let Some(srv) = slot.running.as_ref() else {
        return Err(failed("server not running"));
    };
    let step = p.label();
    let label = format!(
        "{} · {}{}",
        slot.inst.name,
        w.name,
        step.as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default()
    );
    let uris = cx.corpus.uris(&p.target);
    let uri_list = if uris.len() > 1 {
        let f = cx.lists.join(format!("{}.txt", sanitize(&p.target)));
        if !f.exists() {
            let mut text = uris.join("\n");
            text.push('\n');
            std::fs::write(&f, text)
                .map_err(|e| failed(format!("writing {}: {e}", f.display())))?;
        }
        Some(f)
    } else {
        None
    };
    Ok(LoadRun {
        addr: srv.addr_for(w.protocol),
        uri: uris.first().map_or("/", String::as_str).to_string(),
        uri_list,
        params: p.clone(),
        root: cx.corpus.root.clone(),
        label,
        threads: cx.plan.pinning.client_cores.len().max(1),
        tls: cx.tls.as_ref().map(|t| RunTls {
            ca: t.cert.clone(),
            resume: w.tls_resume.unwrap_or(true),
        }),
        shard: cx.opts.shard.as_ref().map(|sh| RunShard {
            index: sh.index,
            count: sh.count,
            run_id: crate::plan::shard::run_id_of(
                &sh.run_id,
                &w.name,
                step.as_deref(),
                &slot.inst.name,
                round,
            ),
        }),
        protocol: w.protocol,
        streams: w.streams.unwrap_or(crate::plan::load_run::H2_STREAMS),
    })
}

/// The load run's spec for this server and step, with the client's ceiling
/// for its shape (calibrated the first time the shape is seen).
fn prepare_run(
    cx: &mut Execution,
    slot: &Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> Result<LoadSpec, RunError> {
    let mut spec = load_run(cx, slot, w, p, round)?
        .spec()
        .map_err(|e| failed(format!("{e:#}")))?;
    if spec.http2.is_some() || spec.http3.is_some() {
        // The calibration's sink speaks HTTP/1.1 only: an HTTP/2 or HTTP/3
        // run's ceiling is unknown (none rather than a wrong one; the run
        // says so).
        spec.client_ceiling = None;
        return Ok(spec);
    }
    if !cx.calibrations.contains(&spec) {
        cx.announce(format!("calibrating the client for {}", w.name));
    }
    let cores = cx.plan.pinning.client_cores.clone();
    spec.client_ceiling = cx.calibrations.ceiling(&spec, |s| {
        with_client_cores(&cores, || httplab_load::calibrate(s))?
    });
    Ok(spec)
}

/// Runs a prepared load run against the slot's server: pinned to the client
/// cores, stopped at `limit`, with the server's CPU read over the run and its
/// memory sampled.
fn execute_run(
    client_cores: &[usize],
    stop: &AtomicBool,
    slot: &mut Slot,
    w: &Workload,
    spec: &LoadSpec,
    limit: Duration,
) -> Result<m::RunResult, RunError> {
    let Some(srv) = slot.running.as_mut() else {
        return Err(failed("server not running"));
    };
    // The run stops at Ctrl-C (`stop`) or when it has lasted `limit`
    // (`max_duration_s`): a watchdog sets the run's own flag.
    let over = AtomicBool::new(false);
    // The sampler and watchdog threads are started pinned to the client's
    // cores (threads inherit their creator's affinity), so they never run on
    // a server's core.
    let pinned = with_client_cores(client_cores, || {
        let cpu0 = slot.cpu.as_ref().map(|c| c.cpu_s(srv.pid));
        let sampler = Sampler::start(&slot.inst.name, srv.pid, Duration::from_millis(100));
        let r = run_watched(spec, stop, &over, limit);
        let cpu1 = slot.cpu.as_ref().map(|c| c.cpu_s(srv.pid));
        (sampler.finish(), r, cpu0.zip(cpu1))
    });
    let (mut cost, r, cpu) = match pinned {
        Ok((cost, r, cpu)) => (cost, Ok(r), cpu),
        Err(e) => (Default::default(), Err(e), None),
    };
    let mut run = match r {
        Ok(Ok(run)) => run,
        Ok(Err(e)) | Err(e) => return Err(failed(format!("httplab load: {e:#}"))),
    };
    if over.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
        return Err(failed(format!(
            "the run was stopped at max_duration_s = {} s ({} of {} requests answered)",
            fmt_num(limit.as_secs_f64()),
            run.totals.replies,
            run.totals.requests
        )));
    }
    if let (Some(c), Some((c0, c1))) = (slot.cpu.as_ref(), cpu) {
        // The window only: the warm-up's share is taken out in proportion.
        let total = (c1 - c0).max(0.0);
        let whole = run.totals.test_duration_s + run.config.warmup_s;
        let share = if whole > 0.0 {
            run.totals.test_duration_s / whole
        } else {
            1.0
        };
        cost.cpu_s = total * share;
        cost.cpu_source = c.name();
    }
    run.server = Some(cost);
    run.config.facts.study.driver = Some(m::LoadDriver::HttplabLoad);
    if let Some(why) = srv.exited() {
        return Err(failed(format!(
            "server died during the run ({why}); {} of {} requests answered{}",
            run.totals.replies,
            run.totals.requests,
            srv.log_tail()
        )));
    }
    if let Some(why) = unanswered(&run, w.kind) {
        return Err(failed(why));
    }
    Ok(run)
}

/// Why a run that got errors and no reply fails (None: it is kept). Under
/// idle connections a server that stops answering is the finding, kept as a
/// run (reply rate 0, its errors and the holder's note); in a capacity
/// search it is a rate the server did not sustain, which the search judges
/// (it goes on below it), not a failure of the whole search.
fn unanswered(run: &m::RunResult, kind: WorkloadKind) -> Option<String> {
    let e = &run.errors;
    let kept = matches!(kind, WorkloadKind::Idle | WorkloadKind::Sweep);
    (run.totals.replies == 0 && e.total > 0 && !kept).then(|| {
        format!(
            "no replies: {} errors (connrefused {}, connreset {}, client-timo {}, socket-timo {}, other {})",
            e.total, e.connrefused, e.connreset, e.client_timo, e.socket_timo, e.other
        )
    })
}

/// `check_client = true`: the client check before a step's first-round run
/// (in process, on the client cores: a study's runs have no command line to
/// hand to child processes).
fn client_check(
    cx: &Execution,
    w: &Workload,
    spec: &LoadSpec,
    round: u32,
) -> Result<Option<m::ClientCheck>, RunError> {
    if !w.check_client || round > 0 {
        return Ok(None);
    }
    let c = with_client_cores(&cx.plan.pinning.client_cores, || {
        httplab_load::check_client(spec)
    })
    .and_then(|r| r)
    .map_err(|e| failed(format!("client check: {e:#}")))?;
    Ok(Some(c))
}

/// Runs `spec` with a watchdog that ends it at Ctrl-C (`stop`) or once it
/// has lasted `limit` (then `over` is set).
fn run_watched(
    spec: &LoadSpec,
    stop: &AtomicBool,
    over: &AtomicBool,
    limit: Duration,
) -> Result<m::RunResult> {
    let run_stop = AtomicBool::new(false);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|sc| {
        let run_stop = &run_stop;
        sc.spawn(move || {
            let t0 = Instant::now();
            loop {
                match done_rx.recv_timeout(Duration::from_millis(50)) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                if t0.elapsed() >= limit {
                    over.store(true, Ordering::Relaxed);
                }
                if stop.load(Ordering::Relaxed) || over.load(Ordering::Relaxed) {
                    run_stop.store(true, Ordering::Relaxed);
                }
            }
        });
        let r = httplab_load::run_with_stop(spec, false, run_stop);
        let _ = done_tx.send(());
        r
    })
}

/// Runs `f` with the calling thread pinned to `cores` (threads it starts
/// inherit the affinity), restoring the previous affinity afterwards.
fn with_client_cores<T>(cores: &[usize], f: impl FnOnce() -> T) -> Result<T> {
    let before = servers::allowed_cores();
    servers::pin_current_thread(cores)?;
    let out = f();
    let _ = servers::pin_current_thread(&before);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, replies: u64, client_bound: bool) -> m::SweepStep {
        let mut run = m::RunResult::default();
        run.totals.replies = replies;
        run.self_check.client_bound = client_bound;
        m::SweepStep {
            demanded_rate: rate,
            run,
        }
    }

    fn saturation(max: Option<f64>, client_bound: bool) -> m::Saturation {
        m::Saturation {
            max_sustainable_rate: max,
            client_bound,
            ..Default::default()
        }
    }

    #[test]
    fn a_search_the_client_ended_before_any_sustained_rate_is_a_gap_not_a_failure() {
        let steps = [step(200.0, 39, true)];
        let got = search_values(&steps, &saturation(None, true), None);
        assert_eq!(got, Ok(Vec::new()));
    }

    #[test]
    fn a_search_that_sustained_nothing_fails_with_the_lowest_rate_tried() {
        let steps = [
            step(25.0, 0, false),
            step(50.0, 3, false),
            step(200.0, 9, false),
        ];
        let Err(RunError::Failed(why)) = search_values(&steps, &saturation(None, false), None)
        else {
            panic!("a failure");
        };
        assert!(why.contains("down to 25 conn/s"), "{why}");
    }

    #[test]
    fn a_sustained_rate_is_the_capacity() {
        let steps = [step(200.0, 40, false), step(400.0, 80, false)];
        let got = search_values(&steps, &saturation(Some(400.0), false), None);
        assert_eq!(got, Ok(vec![(Metric::MaxRate, 400.0)]));
    }

    #[test]
    fn a_capacity_probe_without_replies_is_judged_by_the_search_not_failed() {
        let mut run = m::RunResult::default();
        run.errors.total = 5;
        run.errors.connreset = 5;
        assert!(unanswered(&run, WorkloadKind::Sweep).is_none());
        assert!(unanswered(&run, WorkloadKind::Idle).is_none());
        let why = unanswered(&run, WorkloadKind::Load).expect("a load run fails");
        assert!(why.contains("connreset 5"), "{why}");
        run.totals.replies = 1;
        assert!(unanswered(&run, WorkloadKind::Users).is_none());
    }
}
