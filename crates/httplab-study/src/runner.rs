//! Plans and runs a study: corpus, servers one at a time, every workload
//! step and repetition, /proc sampling, failure rows, Ctrl-C.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use httplab_model as m;

use crate::corpus::{self, CorpusIndex};
use crate::loadgen::{self, LoadPlan, Offer};
use crate::sampler::Sampler;
use crate::servers::{self, Running};
use crate::spec::{
    expand_servers, Driver, ServerInstance, StudyFile, VaryParam, VaryValue, Workload, WorkloadKind,
};

/// Reason of a run cut short by Ctrl-C (its partial result is kept in the JSON).
pub const INTERRUPTED_DURING: &str = "interrupted (Ctrl-C) during the run; partial result kept";

/// Key under `RunConfig.extra` naming the varied parameter of a step.
pub const EXTRA_PARAM: &str = "study_param";
/// Key under `RunConfig.extra` holding the step's value.
pub const EXTRA_STEP: &str = "study_step";

/// Something the runner reports to an observer (progress, tests).
#[derive(Debug, Clone)]
pub enum Event {
    /// A server is up.
    ServerStarted {
        /// Label.
        server: String,
        /// Root PID (its process group).
        pid: i32,
    },
    /// A run (one step, one repetition) is about to start.
    RunStarted {
        /// Label.
        server: String,
        /// Workload name.
        workload: String,
    },
    /// A run (one step, one repetition) finished.
    RunFinished {
        /// Label.
        server: String,
        /// Workload name.
        workload: String,
        /// Server root PID.
        pid: i32,
        /// "ok" or "failed".
        status: String,
    },
}

/// A callback receiving runner events.
pub type Observer = Box<dyn Fn(&Event) + Send + Sync>;

/// How to run.
pub struct Options {
    /// The httplab binary (for `kind = "httplab"` servers).
    pub httplab_exe: Option<PathBuf>,
    /// Show a progress bar.
    pub progress: bool,
    /// Set to stop: finished runs are kept, the rest marked skipped.
    pub stop: Arc<AtomicBool>,
    /// Observer of runner events.
    pub on_event: Option<Observer>,
    /// Where corpus and server work dirs go (default: a fresh temp dir).
    pub work_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            httplab_exe: None,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            on_event: None,
            work_dir: None,
        }
    }
}

/// One load run's parameters, after defaults and the step's value.
#[derive(Debug, Clone)]
pub struct StepParams {
    /// Step label: "" for a single-step workload, else the varied value.
    pub step: String,
    /// Offered load.
    pub offer: Offer,
    /// Target name.
    pub target: String,
    /// Requests per connection.
    pub num_calls: u64,
    /// Pipeline depth.
    pub pipeline: u32,
    /// Reply timeout.
    pub timeout: Duration,
    /// Hard limit.
    pub max_duration: Duration,
}

/// The steps of a workload (one for a plain `load`/`users`; one per rate for a sweep;
/// one per value for `vary`).
pub fn steps(w: &Workload) -> Vec<StepParams> {
    let base = |step: String,
                rate: Option<f64>,
                num_conns: Option<u64>,
                users: Option<u64>,
                num_calls: Option<u64>,
                pipeline: Option<u32>,
                target: &str| {
        let num_calls = num_calls.or(w.num_calls).unwrap_or(1).max(1);
        let offer = match w.kind {
            WorkloadKind::Users => Offer::Closed {
                users: users.or(w.users).unwrap_or(1).max(1),
                requests: w.requests.unwrap_or(100).max(1),
                think_ms: w.think_ms.unwrap_or(0.0).max(0.0),
            },
            WorkloadKind::Load | WorkloadKind::Sweep => Offer::Open {
                rate: rate.or(w.rate),
                num_conns: num_conns.or(w.num_conns).unwrap_or(100).max(1),
            },
        };
        StepParams {
            step,
            offer,
            target: target.to_string(),
            num_calls,
            pipeline: pipeline.or(w.pipeline).unwrap_or(1).max(1),
            timeout: Duration::from_secs_f64(w.timeout_s.unwrap_or(5.0).clamp(0.01, 600.0)),
            max_duration: Duration::from_secs_f64(
                w.max_duration_s.unwrap_or(60.0).clamp(0.1, 3600.0),
            ),
        }
    };
    if w.kind == WorkloadKind::Sweep {
        let (lo, hi, st) = (
            w.low_rate.unwrap_or(10.0),
            w.high_rate.unwrap_or(10.0),
            w.rate_step.unwrap_or(10.0).max(1e-9),
        );
        let step_s = w.step_s.unwrap_or(2.0).max(0.1);
        let mut v = Vec::new();
        let mut r = lo;
        while r <= hi + 1e-9 && v.len() < 1000 {
            let n = w.num_conns.unwrap_or(((r * step_s).ceil() as u64).max(1));
            v.push(base(
                fmt_num(r),
                Some(r),
                Some(n),
                None,
                None,
                None,
                &w.target,
            ));
            r += st;
        }
        return v;
    }
    match &w.vary {
        None => vec![base(String::new(), None, None, None, None, None, &w.target)],
        Some(vary) => vary
            .values
            .iter()
            .map(|val| {
                let n = match val {
                    VaryValue::Num(n) => Some(*n),
                    VaryValue::Text(_) => None,
                };
                let label = val.to_string();
                match (vary.param, val) {
                    (VaryParam::Users, _) => base(
                        label,
                        None,
                        None,
                        n.map(|x| x as u64),
                        None,
                        None,
                        &w.target,
                    ),
                    (VaryParam::Rate, _) => base(label, n, None, None, None, None, &w.target),
                    (VaryParam::NumCalls, _) => base(
                        label,
                        None,
                        None,
                        None,
                        n.map(|x| x as u64),
                        None,
                        &w.target,
                    ),
                    (VaryParam::NumConns, _) => base(
                        label,
                        None,
                        n.map(|x| x as u64),
                        None,
                        None,
                        None,
                        &w.target,
                    ),
                    (VaryParam::Pipeline, _) => base(
                        label,
                        None,
                        None,
                        None,
                        None,
                        n.map(|x| x as u32),
                        &w.target,
                    ),
                    (VaryParam::Target, VaryValue::Text(t)) => {
                        base(label, None, None, None, None, None, t)
                    }
                    (VaryParam::Target, VaryValue::Num(_)) => {
                        base(label, None, None, None, None, None, &w.target)
                    }
                }
            })
            .collect(),
    }
}

/// `12` for 12.0, `12.5` otherwise.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn servers_of<'a>(w: &Workload, all: &'a [ServerInstance]) -> Vec<&'a ServerInstance> {
    all.iter()
        .filter(|s| {
            w.servers.is_empty()
                || w.servers
                    .iter()
                    .any(|n| *n == s.name || s.spec.name.as_deref() == Some(n.as_str()))
        })
        .collect()
}

fn reps(s: &StudyFile, w: &Workload) -> u32 {
    w.repetitions.unwrap_or(s.repetitions).max(1)
}

/// Number of load runs the study will make (the progress bar's length).
pub fn count_runs(s: &StudyFile) -> u64 {
    let all = expand_servers(s);
    s.workloads
        .iter()
        .map(|w| servers_of(w, &all).len() as u64 * steps(w).len() as u64 * u64::from(reps(s, w)))
        .sum()
}

fn describe_offer(p: &StepParams) -> String {
    let mut t = match p.offer {
        Offer::Open {
            rate: Some(r),
            num_conns,
        } => format!("{num_conns} conns at {} /s", fmt_num(r)),
        Offer::Open {
            rate: None,
            num_conns,
        } => format!("{num_conns} conns back to back"),
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => {
            let mut t = format!("{users} users × {requests} requests");
            if think_ms > 0.0 {
                t.push_str(&format!(", think {think_ms} ms"));
            }
            t
        }
    };
    t.push_str(&format!(", {} call(s)/conn", p.num_calls));
    if p.pipeline > 1 {
        t.push_str(&format!(", pipeline {}", p.pipeline));
    }
    t.push_str(&format!(", target {}", p.target));
    t
}

/// The plan as text (`--dry-run`).
pub fn describe_plan(s: &StudyFile) -> String {
    let mut o = String::new();
    let all = expand_servers(s);
    let _ = writeln!(
        o,
        "study: {}{}",
        s.name,
        if s.title.is_empty() {
            String::new()
        } else {
            format!(" — {}", s.title)
        }
    );
    let c = &s.corpus;
    let _ = writeln!(o, "corpus:");
    for f in &c.files {
        let _ = writeln!(o, "  /{}  {}", f.path.trim_start_matches('/'), f.size);
    }
    for x in &c.sets {
        let _ = writeln!(o, "  set:{}  {} files × {}", x.name, x.count, x.size);
    }
    for p in &c.pages {
        let _ = writeln!(
            o,
            "  page:{}  /{}.html ({}) with {} objects × {}",
            p.name, p.name, p.page_size, p.objects, p.object_size
        );
    }
    let (sc, cc, notes) = resolve_pinning(s);
    let _ = writeln!(
        o,
        "pinning: servers on {}, load generator on {}",
        cores_text(&sc),
        cores_text(&cc)
    );
    for n in notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "servers:");
    for sv in &all {
        let status = match servers::plan(sv, &dry_context(), 0) {
            Ok(_) => "available".to_string(),
            Err(u) => u.reason(),
        };
        let w = sv
            .workers
            .map(|w| format!(", workers {w}"))
            .unwrap_or_default();
        let _ = writeln!(o, "  {} ({}{w}): {status}", sv.name, sv.spec.kind.as_str());
    }
    let _ = writeln!(o, "workloads:");
    for w in &s.workloads {
        let st = steps(w);
        let srv: Vec<String> = servers_of(w, &all).iter().map(|x| x.name.clone()).collect();
        let _ = writeln!(
            o,
            "  {} ({}): {} step(s) × {} repetition(s) on {}",
            w.name,
            w.kind.as_str(),
            st.len(),
            reps(s, w),
            srv.join(", ")
        );
        for p in &st {
            let label = if p.step.is_empty() {
                String::new()
            } else {
                format!("[{}] ", p.step)
            };
            let _ = writeln!(o, "    {label}{}", describe_offer(p));
        }
    }
    let _ = writeln!(o, "total: {} load run(s)", count_runs(s));
    o
}

fn dry_context() -> servers::Context {
    servers::Context {
        root: PathBuf::from("/nonexistent"),
        work: PathBuf::from("/nonexistent"),
        httplab_exe: find_httplab_exe(),
        probe_path: "/".into(),
    }
}

fn cores_text(c: &[usize]) -> String {
    if c.is_empty() {
        "any core".into()
    } else {
        format!(
            "core(s) {}",
            c.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

/// Pinning restricted to the cores this machine lets us use, with notes.
pub fn resolve_pinning(s: &StudyFile) -> (Vec<usize>, Vec<usize>, Vec<String>) {
    let allowed = servers::allowed_cores();
    let mut notes = Vec::new();
    let mut pick = |want: &[u32], who: &str| -> Vec<usize> {
        let v: Vec<usize> = want
            .iter()
            .map(|&c| c as usize)
            .filter(|c| allowed.contains(c))
            .collect();
        if v.len() < want.len() {
            notes.push(format!("{who} cores {want:?} include cores this machine does not offer (have {allowed:?}); using {v:?}"));
        }
        v
    };
    let sc = pick(&s.pinning.server_cores, "server");
    let cc = pick(&s.pinning.client_cores, "client");
    if !sc.is_empty() && sc.iter().any(|c| cc.contains(c)) {
        notes.push(
            "server and client share cores: client-side limits may show up as server limits".into(),
        );
    }
    (sc, cc, notes)
}

/// The httplab binary: `$HTTPLAB_BIN`, this executable if it is httplab, or
/// `httplab` next to (or one level above) this executable (cargo's target layout).
pub fn find_httplab_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HTTPLAB_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_stem().is_some_and(|n| n == "httplab") {
        return Some(exe);
    }
    let dir = exe.parent()?;
    [dir.join("httplab"), dir.parent()?.join("httplab")]
        .into_iter()
        .find(|p| p.is_file())
}

struct Ctx<'a> {
    study: &'a StudyFile,
    opts: &'a Options,
    corpus: &'a CorpusIndex,
    client_cores: Vec<usize>,
    bar: Option<indicatif::ProgressBar>,
    runs: Vec<m::StudyRun>,
}

impl Ctx<'_> {
    fn emit(&self, e: Event) {
        if let Some(f) = &self.opts.on_event {
            f(&e);
        }
    }
    fn announce(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
        }
    }
    fn tick(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }
    fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::Relaxed)
    }
    /// Rows for every run of `server` that will not happen.
    fn rows_without_runs(&mut self, server: &ServerInstance, status: &str, reason: &str) {
        let all = expand_servers(self.study);
        for w in &self.study.workloads {
            if !servers_of(w, &all).iter().any(|s| s.name == server.name) {
                continue;
            }
            let n = steps(w).len() as u64 * u64::from(reps(self.study, w));
            for r in 0..reps(self.study, w) {
                self.runs.push(m::StudyRun {
                    workload: w.name.clone(),
                    server: server.name.clone(),
                    repetition: r,
                    status: status.into(),
                    reason: reason.into(),
                    run: None,
                    sweep: None,
                });
            }
            if let Some(b) = &self.bar {
                b.inc(n);
            }
        }
    }
}

/// Runs the whole study. Never fails because a server does: that becomes a
/// failed row. Fails only when the corpus cannot be written.
pub fn run_study(study: &StudyFile, opts: &Options) -> Result<m::StudyResult> {
    let started_at = httplab_model::now_rfc3339();
    let tmp;
    let base = match &opts.work_dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("httplab-study-")
                .tempdir()
                .context("creating a temporary directory")?;
            tmp.path().to_path_buf()
        }
    };
    let root = base.join("root");
    let corpus = corpus::generate(&study.corpus, &root).context("generating the corpus")?;
    let (server_cores, client_cores, notes) = resolve_pinning(study);
    let mut env = crate::env::environment();
    env.client_affinity = client_cores.iter().map(|&c| c as u32).collect();
    env.extra
        .insert("server_cores".into(), cores_text(&server_cores));
    env.extra
        .insert("client_cores".into(), cores_text(&client_cores));
    env.extra.insert(
        "corpus".into(),
        format!(
            "{} files, {}",
            corpus.files.len(),
            crate::spec::human_bytes(corpus.total_bytes)
        ),
    );
    for (i, n) in notes.iter().enumerate() {
        env.extra.insert(format!("note_{i}"), n.clone());
    }
    let total = count_runs(study);
    let bar = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    });
    let mut cx = Ctx {
        study,
        opts,
        corpus: &corpus,
        client_cores,
        bar,
        runs: Vec::new(),
    };
    let all = expand_servers(study);
    for (i, inst) in all.iter().enumerate() {
        if let Some(v) = servers::version(inst, opts.httplab_exe.as_deref()) {
            env.extra.insert(format!("version: {}", inst.name), v);
        }
        if cx.stopped() {
            cx.rows_without_runs(
                inst,
                "skipped",
                "interrupted (Ctrl-C) before this server ran",
            );
            continue;
        }
        let work = base.join(format!("server-{i}"));
        let ctx = servers::Context {
            root: root.clone(),
            work: work.clone(),
            httplab_exe: opts.httplab_exe.clone(),
            probe_path: corpus.probe_path(),
        };
        if let Some(b) = &cx.bar {
            b.set_message(format!("starting {}", inst.name));
        }
        let mut running = None;
        let mut last_err = String::new();
        // Two attempts: the free port may be taken between choosing and binding.
        for _ in 0..2 {
            let port = match servers::free_port() {
                Ok(p) => p,
                Err(e) => {
                    last_err = format!("{e:#}");
                    continue;
                }
            };
            let plan = match servers::plan(inst, &ctx, port) {
                Ok(p) => p,
                Err(u) => {
                    let status = match u {
                        servers::Unavailable::NotInstalled { .. } => "not installed",
                        servers::Unavailable::Other(_) => "failed",
                    };
                    last_err = u.reason();
                    env.extra
                        .insert(format!("version: {}", inst.name), last_err.clone());
                    cx.rows_without_runs(inst, status, &last_err);
                    break;
                }
            };
            match servers::start(&plan, &work, &server_cores) {
                Ok(r) => {
                    running = Some(r);
                    break;
                }
                Err(e) => last_err = format!("could not start: {e:#}"),
            }
        }
        let Some(mut srv) = running else {
            if !cx.runs.iter().any(|r| r.server == inst.name) {
                cx.rows_without_runs(inst, "failed", &last_err);
            }
            continue;
        };
        cx.emit(Event::ServerStarted {
            server: inst.name.clone(),
            pid: srv.pid,
        });
        for w in &study.workloads {
            if !servers_of(w, &all).iter().any(|s| s.name == inst.name) {
                continue;
            }
            run_workload(&mut cx, inst, &mut srv, w);
        }
        srv.stop();
    }
    if let Some(b) = &cx.bar {
        b.finish_with_message(if cx.stopped() { "interrupted" } else { "done" });
        eprintln!();
    }
    Ok(m::StudyResult {
        schema: m::STUDY_SCHEMA.into(),
        tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
        name: study.name.clone(),
        started_at,
        runs: cx.runs,
        environment: env,
    })
}

fn run_workload(cx: &mut Ctx, inst: &ServerInstance, srv: &mut Running, w: &Workload) {
    let st = steps(w);
    for rep in 0..reps(cx.study, w) {
        let mut sweep_steps = Vec::new();
        let mut sweep_fail: Option<String> = None;
        for p in &st {
            let msg = format!(
                "{} · {}{}",
                inst.name,
                w.name,
                if p.step.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", p.step)
                }
            );
            cx.announce(&msg);
            let outcome = if cx.stopped() {
                Err(("skipped", "interrupted (Ctrl-C)".to_string()))
            } else if let Some(why) = srv.exited() {
                Err((
                    "failed",
                    format!("server not running: it exited earlier ({why})"),
                ))
            } else {
                one_run(cx, inst, srv, w, p)
            };
            cx.tick();
            let status_txt = match &outcome {
                Ok(_) => "ok",
                Err((s, _)) => s,
            };
            cx.emit(Event::RunFinished {
                server: inst.name.clone(),
                workload: w.name.clone(),
                pid: srv.pid,
                status: status_txt.to_string(),
            });
            if w.kind == WorkloadKind::Sweep {
                match outcome {
                    Ok(run) if run.interrupted => {
                        sweep_fail.get_or_insert(INTERRUPTED_DURING.to_string());
                    }
                    Ok(run) => sweep_steps.push(m::SweepStep {
                        demanded_rate: run.config.rate.unwrap_or(0.0),
                        run,
                    }),
                    Err((_, why)) => {
                        sweep_fail.get_or_insert(why);
                    }
                }
                continue;
            }
            let (status, reason, run) = match outcome {
                Ok(run) if run.interrupted => (
                    "skipped".to_string(),
                    INTERRUPTED_DURING.to_string(),
                    Some(run),
                ),
                Ok(run) => ("ok".to_string(), String::new(), Some(run)),
                Err((s, why)) => (s.to_string(), why, None),
            };
            cx.runs.push(m::StudyRun {
                workload: w.name.clone(),
                server: inst.name.clone(),
                repetition: rep,
                status,
                reason,
                run: run.map(|r| annotate(r, w, p)),
                sweep: None,
            });
        }
        if w.kind == WorkloadKind::Sweep {
            let status = match (&sweep_fail, sweep_steps.is_empty()) {
                (None, _) => "ok",
                (Some(_), true) if cx.stopped() => "skipped",
                (Some(_), _) => "failed",
            };
            let sat = saturation(&sweep_steps);
            cx.runs.push(m::StudyRun {
                workload: w.name.clone(),
                server: inst.name.clone(),
                repetition: rep,
                status: status.into(),
                reason: sweep_fail.clone().unwrap_or_default(),
                run: None,
                sweep: Some(m::SweepResult {
                    schema: m::SWEEP_SCHEMA.into(),
                    tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
                    started_at: sweep_steps
                        .first()
                        .map(|s| s.run.started_at.clone())
                        .unwrap_or_default(),
                    command_line: Vec::new(),
                    targets: vec![m::SweepTarget {
                        label: inst.name.clone(),
                        url: format!("http://{}{}", srv.addr, w.target),
                        steps: sweep_steps,
                        saturation: sat,
                    }],
                    environment: crate::env::environment(),
                }),
            });
        }
    }
}

fn annotate(mut r: m::RunResult, w: &Workload, p: &StepParams) -> m::RunResult {
    if let Some(v) = &w.vary {
        r.config
            .extra
            .insert(EXTRA_PARAM.into(), v.param.as_str().into());
        r.config.extra.insert(EXTRA_STEP.into(), p.step.clone());
    }
    r
}

/// Highest demanded rate whose reply rate kept up (within 5 %) without errors.
pub fn saturation(steps: &[m::SweepStep]) -> m::Saturation {
    let ok = |s: &m::SweepStep| {
        let calls = s.run.config.num_calls.unwrap_or(1).max(1) as f64;
        let want = s.demanded_rate * calls;
        let got = s.run.totals.replies as f64 / s.run.totals.test_duration_s.max(1e-9);
        s.run.errors.total == 0 && got >= 0.95 * want
    };
    let max_ok = steps
        .iter()
        .filter(|s| ok(s))
        .map(|s| s.demanded_rate)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    m::Saturation {
        max_sustainable_rate: max_ok,
        knee_rate: steps.iter().find(|s| !ok(s)).map(|s| s.demanded_rate),
        slo_ms: 0.0,
        runs: steps.len() as u32,
        method: "steps".into(),
    }
}

fn one_run(
    cx: &Ctx,
    inst: &ServerInstance,
    srv: &mut Running,
    w: &Workload,
    p: &StepParams,
) -> std::result::Result<m::RunResult, (&'static str, String)> {
    let uris = cx.corpus.uris(&p.target);
    let plan = LoadPlan {
        label: format!(
            "{} · {}{}",
            inst.name,
            w.name,
            if p.step.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.step)
            }
        ),
        addr: srv.addr,
        uris,
        offer: p.offer,
        num_calls: p.num_calls,
        pipeline: p.pipeline,
        timeout: p.timeout,
        max_duration: p.max_duration,
        client_cores: cx.client_cores.clone(),
        expected: Arc::new(cx.corpus.files.clone()),
        stop: Arc::clone(&cx.opts.stop),
    };
    cx.emit(Event::RunStarted {
        server: inst.name.clone(),
        workload: w.name.clone(),
    });
    let driver = w.driver.unwrap_or(cx.study.driver);
    let sampler = Sampler::start(&inst.name, srv.pid, Duration::from_millis(100));
    let mut run = match driver {
        Driver::Builtin => loadgen::run(&plan),
        Driver::HttplabLoad => match run_httplab_load(&plan, &cx.corpus.root) {
            Ok(r) => r,
            Err(e) => {
                let _ = sampler.finish();
                return Err(("failed", format!("httplab load: {e:#}")));
            }
        },
    };
    run.server = Some(sampler.finish());
    if let Some(why) = srv.exited() {
        return Err((
            "failed",
            format!(
                "server died during the run ({why}); {} of {} requests answered{}",
                run.totals.replies,
                run.totals.requests,
                srv.log_tail()
            ),
        ));
    }
    if run.totals.replies == 0 && run.errors.total > 0 {
        let e = &run.errors;
        return Err(("failed", format!(
            "no replies: {} errors (connrefused {}, connreset {}, client-timo {}, socket-timo {}, other {})",
            e.total, e.connrefused, e.connreset, e.client_timo, e.socket_timo, e.other
        )));
    }
    Ok(run)
}

/// Groups the runs of a study: workload → server → step → results.
pub fn group(res: &m::StudyResult) -> BTreeMap<String, BTreeMap<String, Vec<&m::StudyRun>>> {
    let mut g: BTreeMap<String, BTreeMap<String, Vec<&m::StudyRun>>> = BTreeMap::new();
    for r in &res.runs {
        g.entry(r.workload.clone())
            .or_default()
            .entry(r.server.clone())
            .or_default()
            .push(r);
    }
    g
}

/// The `httplab load` arguments (httperf spellings) for one planned run.
pub fn httplab_load_args(plan: &LoadPlan, root: &std::path::Path) -> Vec<String> {
    let uri = plan.uris.first().cloned().unwrap_or_else(|| "/".into());
    let mut a: Vec<String> = vec![
        "--server".into(),
        "127.0.0.1".into(),
        "--port".into(),
        plan.addr.port().to_string(),
        "--uri".into(),
        uri,
        "--timeout".into(),
        format!("{}", plan.timeout.as_secs_f64()),
        "--verify-root".into(),
        root.to_string_lossy().into_owned(),
        "--label".into(),
        plan.label.clone(),
        "--threads".into(),
        plan.client_cores.len().max(1).to_string(),
    ];
    match plan.offer {
        Offer::Open { rate, num_conns } => {
            if let Some(r) = rate {
                a.extend(["--rate".into(), format!("{r}")]);
                // Same lateness rule as the built-in driver: 10 ms, or half
                // the interval between starts when that is longer.
                let limit = (500.0 / r.max(1e-9)).max(10.0);
                a.extend(["--lag-threshold".into(), format!("{limit:.3}ms")]);
            }
            a.extend(["--num-conns".into(), num_conns.to_string()]);
            a.extend(["--num-calls".into(), plan.num_calls.to_string()]);
            if plan.pipeline > 1 {
                a.extend(["--burst-length".into(), plan.pipeline.to_string()]);
            }
        }
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => {
            a.extend(["--users".into(), users.to_string()]);
            a.extend(["--requests-per-user".into(), requests.to_string()]);
            if think_ms > 0.0 {
                a.extend(["--think".into(), format!("{think_ms}ms")]);
            }
        }
    }
    a
}

/// Runs one planned run through `httplab load` in process, its threads
/// pinned to the client cores (they inherit the calling thread's affinity,
/// which is restored afterwards).
fn run_httplab_load(plan: &LoadPlan, root: &std::path::Path) -> Result<m::RunResult> {
    let args = httplab_load_args(plan, root);
    let spec = httplab_load::parse_args(&args)?;
    let before = servers::allowed_cores();
    servers::pin_current_thread(&plan.client_cores)?;
    let r = httplab_load::run_with_stop(&spec, false, &plan.stop);
    let _ = servers::pin_current_thread(&before);
    let mut r = r?;
    r.config
        .extra
        .insert("driver".into(), "httplab-load".into());
    Ok(r)
}
