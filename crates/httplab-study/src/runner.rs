//! Plans and runs a study: corpus, every server started at once (each pinned,
//! in its own process group and CPU-accounting cgroup), then every workload
//! step in rounds of random server order until its statistics are precise
//! (see [`crate::rounds`]), every run through `httplab load` in process;
//! /proc sampling, failure rows, Ctrl-C, and the verdicts.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use httplab_load::LoadSpec;
use httplab_model as m;

use crate::corpus::{self, CorpusIndex};
use crate::cpu::CpuSource;
use crate::rounds::{self, CellData};
use crate::sampler::Sampler;
use crate::servers::{self, Running};
use crate::spec::{
    expand_servers, Measure, Metric, ServerInstance, StudyFile, VaryParam, VaryValue, Workload,
    WorkloadKind,
};

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offer {
    /// `num_conns` connections at `rate` per second (None: back to back, one at a time).
    Open {
        /// Connections per second.
        rate: Option<f64>,
        /// Connections to open (count-measured runs).
        num_conns: u64,
    },
    /// `users` each send `requests` requests, one after another.
    Closed {
        /// Simultaneous users.
        users: u64,
        /// Requests per user (count-measured runs).
        requests: u64,
        /// Pause between a reply and the next request, ms.
        think_ms: f64,
    },
}

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
    /// `--quick` was given (recorded in the protocol).
    pub quick: bool,
    /// `--tls`: serve and load over TLS even when the study file does not say
    /// `tls = true`.
    pub tls: bool,
    /// `--client I/N`: every load run is this shard of the run's schedule.
    /// The study must have been fixed with [`crate::shard::prepare`].
    pub shard: Option<crate::shard::Shard>,
    /// `--budget`: seconds of extra rounds for the sequential design
    /// (overrides `[protocol] budget_s`; 0 turns the second phase off).
    pub budget_s: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            httplab_exe: None,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            on_event: None,
            work_dir: None,
            quick: false,
            tls: false,
            shard: None,
            budget_s: None,
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
    /// `num_calls` was written (by the workload or its `vary`): a `users`
    /// workload then opens a new connection every `num_calls` requests;
    /// without it a user keeps one keep-alive connection for all of them.
    pub num_calls_given: bool,
    /// Pipeline depth.
    pub pipeline: u32,
    /// Reply timeout.
    pub timeout: Duration,
    /// Hard limit.
    pub max_duration: Duration,
    /// Warm-up discarded before the window.
    pub warmup: Duration,
    /// Measurement window (None: the workload's own counts).
    pub window: Option<Duration>,
}

/// The steps of a workload (one for a plain `load`/`users`; one per rate for a sweep;
/// one per value for `vary`).
pub fn steps(w: &Workload) -> Vec<StepParams> {
    steps_with(w, &crate::spec::ProtocolSpec::default())
}

/// The steps of a workload under a protocol (its warm-up and window).
pub fn steps_with(w: &Workload, proto: &crate::spec::ProtocolSpec) -> Vec<StepParams> {
    let warmup = Duration::from_secs_f64(w.warmup_s.unwrap_or(proto.warmup_s).max(0.0));
    let window = match w.measure {
        Measure::Count => None,
        Measure::Window => Some(Duration::from_secs_f64(
            w.window_s.unwrap_or(proto.window_s).max(0.1),
        )),
    };
    let base = |step: String,
                rate: Option<f64>,
                num_conns: Option<u64>,
                users: Option<u64>,
                num_calls: Option<u64>,
                pipeline: Option<u32>,
                target: &str| {
        let num_calls_given = num_calls.or(w.num_calls).is_some();
        let num_calls = num_calls.or(w.num_calls).unwrap_or(1).max(1);
        // An idle workload's normal client is closed loop unless it has a rate.
        let closed = w.kind == WorkloadKind::Users
            || (w.kind == WorkloadKind::Idle && rate.or(w.rate).is_none());
        let offer = if closed {
            Offer::Closed {
                users: users.or(w.users).unwrap_or(1).max(1),
                requests: w.requests.unwrap_or(100).max(1),
                think_ms: w.think_ms.unwrap_or(0.0).max(0.0),
            }
        } else {
            Offer::Open {
                rate: rate.or(w.rate),
                num_conns: num_conns.or(w.num_conns).unwrap_or(100).max(1),
            }
        };
        StepParams {
            step,
            offer,
            target: target.to_string(),
            num_calls,
            num_calls_given,
            pipeline: pipeline.or(w.pipeline).unwrap_or(1).max(1),
            timeout: Duration::from_secs_f64(w.timeout_s.unwrap_or(5.0).clamp(0.01, 600.0)),
            max_duration: Duration::from_secs_f64(
                w.max_duration_s.unwrap_or(60.0).clamp(0.1, 3600.0),
            ),
            warmup,
            window,
        }
    };
    if w.kind == WorkloadKind::Sweep {
        // A capacity search: one step that searches upward from low_rate.
        return vec![base(
            String::new(),
            Some(w.low_rate.unwrap_or(100.0)),
            None,
            None,
            None,
            None,
            &w.target,
        )];
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
                    // The step's label is its value (see `idle::conns_of`).
                    (VaryParam::IdleConns, _) => {
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

/// Runs one capacity search is expected to take (for planning).
pub const SEARCH_RUNS: u64 = 7;

/// Load runs the study makes at least (every cell at its fewest repetitions)
/// and at most (every cell at its cap); a capacity search counts as
/// [`SEARCH_RUNS`] runs.
pub fn count_runs_range(s: &StudyFile) -> (u64, u64) {
    let all = expand_servers(s);
    let p = rounds::protocol(s, false);
    let mut lo = 0;
    let mut hi = 0;
    for w in &s.workloads {
        let (min, max) = rounds::reps_of(&p, w);
        let per = servers_of(w, &all).len() as u64
            * steps(w).len() as u64
            * if w.kind == WorkloadKind::Sweep {
                SEARCH_RUNS
            } else {
                u64::from(w.slice_count())
            };
        lo += per * u64::from(min);
        hi += per * u64::from(max);
    }
    (lo, hi)
}

/// Load runs the study makes at least (see [`count_runs_range`]).
pub fn count_runs(s: &StudyFile) -> u64 {
    count_runs_range(s).0
}

/// Seconds one run of this step lasts (warm-up + window, or an estimate from counts).
pub fn run_seconds(p: &StepParams) -> f64 {
    let w = p.warmup.as_secs_f64();
    match p.window {
        Some(win) => w + win.as_secs_f64(),
        None => match p.offer {
            Offer::Open {
                rate: Some(r),
                num_conns,
            } => w + num_conns as f64 / r.max(1e-9),
            _ => w + 1.0,
        },
    }
}

/// Estimated seconds of the study at its fewest repetitions.
pub fn estimate_seconds(s: &StudyFile) -> f64 {
    let all = expand_servers(s);
    let p = rounds::protocol(s, false);
    s.workloads
        .iter()
        .map(|w| {
            let (min, _) = rounds::reps_of(&p, w);
            let n = servers_of(w, &all).len() as f64 * f64::from(min);
            steps_with(w, &s.protocol)
                .iter()
                .map(|st| {
                    let k = w.slice_count();
                    let per = f64::from(k) * (run_seconds(&sliced(st, k)) + 0.1);
                    if w.kind == WorkloadKind::Sweep {
                        per * SEARCH_RUNS as f64
                    } else {
                        per
                    }
                })
                .sum::<f64>()
                * n
        })
        .sum()
}

pub fn describe_offer(p: &StepParams) -> String {
    let counted = p.window.is_none();
    let mut t = match p.offer {
        Offer::Open {
            rate: Some(r),
            num_conns,
        } if counted => format!("{num_conns} conns at {} /s", fmt_num(r)),
        Offer::Open { rate: Some(r), .. } => format!("conns at {} /s", fmt_num(r)),
        Offer::Open {
            rate: None,
            num_conns,
        } if counted => format!("{num_conns} conns back to back"),
        Offer::Open { rate: None, .. } => "conns back to back".to_string(),
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => {
            let mut t = if counted {
                format!("{users} users × {requests} requests")
            } else {
                format!("{users} users")
            };
            if think_ms > 0.0 {
                t.push_str(&format!(", think {think_ms} ms"));
            }
            t
        }
    };
    if matches!(p.offer, Offer::Closed { .. }) && !p.num_calls_given {
        t.push_str(", one keep-alive connection per user");
    } else {
        t.push_str(&format!(", {} call(s)/conn", p.num_calls));
    }
    if p.pipeline > 1 {
        t.push_str(&format!(", pipeline {}", p.pipeline));
    }
    t.push_str(&format!(", target {}", p.target));
    match p.window {
        Some(w) => t.push_str(&format!(
            "; warm-up {} s, window {} s",
            fmt_num(p.warmup.as_secs_f64()),
            fmt_num(w.as_secs_f64())
        )),
        None if !p.warmup.is_zero() => t.push_str(&format!(
            "; counts as given, after a {} s warm-up",
            fmt_num(p.warmup.as_secs_f64())
        )),
        None => t.push_str("; counts as given"),
    }
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
    if s.tls {
        let _ = writeln!(
            o,
            "tls: every server serves HTTPS and every run loads over TLS ({})",
            crate::tls::CERT_DESCRIPTION
        );
    }
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
        let status = match servers::plan(sv, &dry_context(s.tls), 0) {
            Ok(_) => "available".to_string(),
            Err(u) => u.reason(),
        };
        let w = sv
            .workers
            .map(|w| format!(", workers {w}"))
            .unwrap_or_default();
        let _ = writeln!(o, "  {} ({}{w}): {status}", sv.name, sv.spec.kind.as_str());
    }
    let proto = rounds::protocol(s, false);
    let _ = writeln!(
        o,
        "protocol: warm-up {} s, window {} s, {} rounds of random order per step, then {} of extra rounds (up to {} a step) for the comparisons nearest a decision; δ {} %, alpha {}{}",
        fmt_num(proto.warmup_s),
        fmt_num(proto.window_s),
        proto.min_repetitions,
        match s.protocol.budget_s {
            Some(b) => format!("{} s", fmt_num(b)),
            None => "as long as the first rounds took".into(),
        },
        proto.max_repetitions,
        fmt_num(proto.min_effect * 100.0),
        proto.alpha,
        match s.protocol.seed {
            Some(x) => format!(", seed {x}"),
            None => ", seed drawn at start (recorded)".into(),
        }
    );
    let _ = writeln!(o, "workloads:");
    for w in &s.workloads {
        let st = steps_with(w, &s.protocol);
        let srv: Vec<String> = servers_of(w, &all).iter().map(|x| x.name.clone()).collect();
        let (min, max) = rounds::reps_of(&proto, w);
        let _ = writeln!(
            o,
            "  {} ({}, metric {}): {} step(s) × {}–{} repetition(s) on {}{}",
            w.name,
            w.kind.as_str(),
            rounds::primary_metric(s, w).key(),
            st.len(),
            min,
            max,
            srv.join(", "),
            match w.slices {
                Some(k) if k > 1 => format!(
                    "; each round in {k} slices per server, order reversed every other slice (A B | B A)"
                ),
                _ => String::new(),
            }
        );
        for p in &st {
            let label = if p.step.is_empty() {
                String::new()
            } else {
                format!("[{}] ", p.step)
            };
            let tls = match (s.tls, w.tls_resume.unwrap_or(true)) {
                (false, _) => "",
                (true, true) => "; over TLS, sessions resumed",
                (true, false) => "; over TLS, a full handshake per connection",
            };
            let idle = if w.kind == WorkloadKind::Idle {
                format!(", {}", crate::idle::describe(w, p))
            } else {
                String::new()
            };
            let _ = writeln!(o, "    {label}{}{idle}{tls}", describe_offer(p));
        }
    }
    let (lo, hi) = count_runs_range(s);
    let _ = writeln!(
        o,
        "total: {lo} to {hi} load run(s) (capacity searches counted as {SEARCH_RUNS} each); about {} at the fewest repetitions",
        human_secs(estimate_seconds(s))
    );
    o
}

/// `3 min 20 s`, `45 s`.
pub fn human_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

fn dry_context(tls: bool) -> servers::Context {
    servers::Context {
        root: PathBuf::from("/nonexistent"),
        work: PathBuf::from("/nonexistent"),
        httplab_exe: find_httplab_exe(),
        probe_path: "/".into(),
        tls: tls.then(|| crate::tls::CertFiles {
            cert: PathBuf::from("/nonexistent/cert.pem"),
            key: PathBuf::from("/nonexistent/key.pem"),
        }),
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

/// A server of the study, started (or why not).
struct Slot {
    inst: ServerInstance,
    running: Option<Running>,
    cpu: Option<CpuSource>,
    /// The group that can hold the server to a CPU quota (capacity at an
    /// equal quota); absent when no workload asks for one.
    limit: Option<crate::cpu::CpuLimit>,
    /// Why it has no (more) runs: not installed, failed to start, died.
    down: Option<(String, String)>,
}

struct Ctx<'a> {
    study: &'a StudyFile,
    opts: &'a Options,
    corpus: &'a CorpusIndex,
    proto: m::Protocol,
    client_cores: Vec<usize>,
    /// HTTPS: the study's certificate (also the load generator's CA file).
    tls: Option<crate::tls::CertFiles>,
    bar: Option<indicatif::ProgressBar>,
    runs: Vec<m::StudyRun>,
    cells: Vec<m::Cell>,
    verdicts: Vec<m::StudyVerdict>,
    /// Client ceilings by workload shape (calibrated once per shape).
    ceilings: HashMap<String, Option<f64>>,
    lists: PathBuf,
    started: Instant,
    est_left: f64,
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
    fn tick(&mut self, secs: f64) {
        self.est_left = (self.est_left - secs).max(0.0);
        if let Some(b) = &self.bar {
            b.inc(1);
            let elapsed = self.started.elapsed().as_secs_f64();
            b.set_prefix(format!("~{} left", human_secs(self.est_left.max(0.0))));
            let _ = elapsed;
        }
    }
    fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::Relaxed)
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
    let lists = base.join("uri-lists");
    std::fs::create_dir_all(&lists).context("creating the path-list directory")?;
    let (server_cores, client_cores, notes) = resolve_pinning(study);
    let proto = rounds::protocol(study, opts.quick);
    let mut env = crate::env::environment();
    let tls = if study.tls || opts.tls {
        let c = crate::tls::generate(&base.join("tls"))?;
        env.extra
            .insert(EXTRA_TLS.into(), crate::tls::CERT_DESCRIPTION.into());
        Some(c)
    } else {
        None
    };
    if let Some(sh) = &opts.shard {
        env.extra.insert(
            crate::shard::EXTRA_STUDY_SHARD.into(),
            format!("{}/{}", sh.index, sh.count),
        );
        env.extra
            .insert(crate::shard::EXTRA_STUDY_RUN_ID.into(), sh.run_id.clone());
    }
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
                "{elapsed_precise} {prefix} [{bar:30}] {pos}/{len} runs  {msg}",
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
        proto,
        client_cores,
        tls,
        bar,
        runs: Vec::new(),
        cells: Vec::new(),
        verdicts: Vec::new(),
        ceilings: HashMap::new(),
        lists,
        started: Instant::now(),
        est_left: estimate_seconds(study),
    };
    let mut slots = start_servers(&mut cx, &base, &root, &server_cores, &mut env);
    if let Some(src) = slots.iter().find_map(|s| s.cpu.as_ref()) {
        env.extra
            .insert("server_cpu_source".into(), src.name().to_string());
    }
    for s in &slots {
        if let Some(seen) = s.running.as_ref().and_then(|r| r.tls_seen.as_ref()) {
            env.extra
                .insert(format!("tls: {}", s.inst.name), seen.clone());
        }
    }
    // Phase one: every step's fewest rounds.
    let phase_one = Instant::now();
    let mut steps: Vec<StepRun> = Vec::new();
    for (wi, w) in study.workloads.iter().enumerate() {
        steps.extend(run_workload(&mut cx, &mut slots, wi, w));
    }
    // Phase two: the budget's extra rounds to the steps nearest a decision.
    let budget = opts
        .budget_s
        .or(study.protocol.budget_s)
        .unwrap_or_else(|| phase_one.elapsed().as_secs_f64());
    let sequential = budget > 0.0 && !cx.stopped() && steps.iter().any(|s| s.rounds < s.cap);
    if sequential {
        cx.proto.interim_rounds = steps.iter().map(|s| s.first_rounds).min();
        cx.proto.budget_s = Some(budget);
        let spent = extra_rounds(&mut cx, &mut slots, &mut steps, budget);
        cx.proto.budget_used_s = Some(spent);
    }
    let views = step_views(study, &steps, sequential);
    let planned = crate::decisions::plan(study, &views);
    cx.verdicts =
        crate::decisions::verdicts(&planned, &crate::decisions::design_options(&cx.proto));
    for sr in &steps {
        for c in sr.data.values() {
            cx.cells.push(rounds::cell(
                &study.workloads[sr.wi].name,
                sr.label.as_deref(),
                sr.metric,
                c,
            ));
        }
    }
    if cx.tls.is_some() {
        env.extra.insert(EXTRA_TLS_SEEN.into(), tls_seen(&cx.runs));
    }
    for s in &mut slots {
        if let Some(r) = &mut s.running {
            r.stop();
        }
        if let Some(c) = &s.cpu {
            c.remove();
        }
        if let Some(l) = &s.limit {
            l.remove();
        }
    }
    if let Some(b) = &cx.bar {
        b.finish_with_message(if cx.stopped() { "interrupted" } else { "done" });
        eprintln!();
    }
    env.extra.insert(
        "study_seconds".into(),
        format!("{:.1}", cx.started.elapsed().as_secs_f64()),
    );
    let mut res = m::StudyResult {
        schema: m::STUDY_SCHEMA.into(),
        tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
        name: study.name.clone(),
        started_at,
        runs: cx.runs,
        environment: env,
        protocol: Some(cx.proto),
        cells: cx.cells,
        verdicts: cx.verdicts,
        answers: Vec::new(),
    };
    res.answers = crate::answers::answer_all(study, &res);
    Ok(res)
}

/// What the analysis sees of the measured steps.
fn step_views<'a>(
    study: &'a StudyFile,
    steps: &'a [StepRun],
    interim: bool,
) -> Vec<crate::decisions::StepView<'a>> {
    steps
        .iter()
        .map(|sr| {
            let w = &study.workloads[sr.wi];
            crate::decisions::StepView {
                workload: &w.name,
                step: sr.label.as_deref(),
                metric: sr.metric,
                server_cost: matches!(w.kind, WorkloadKind::Load | WorkloadKind::Users)
                    && fixed_rate(&sr.params),
                cells: sr.cells(),
                interim: interim.then_some(sr.first_rounds as usize),
            }
        })
        .collect()
}

/// The sequential design's second phase: decides at the interim look, hands
/// the budget's rounds to the undecided steps nearest a decision
/// (`httplab_stats::allocate`) and runs them. Returns the seconds spent.
fn extra_rounds(cx: &mut Ctx, slots: &mut [Slot], steps: &mut [StepRun], budget: f64) -> f64 {
    let started = Instant::now();
    let opts = crate::decisions::design_options(&cx.proto);
    let extra = {
        let views = step_views(cx.study, steps, false);
        let planned = crate::decisions::plan(cx.study, &views);
        let interim = crate::decisions::interim(&planned, &opts);
        let settle = crate::decisions::to_settle(&planned, &interim, steps.len());
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
        httplab_stats::allocate(&needs, budget)
    };
    let runs: u64 = steps
        .iter()
        .zip(&extra)
        .map(|(sr, &k)| {
            let slices = cx.study.workloads[sr.wi].slice_count();
            u64::from(k) * u64::from(slices) * sr.active_count() as u64
        })
        .sum();
    if let Some(b) = &cx.bar {
        b.inc_length(runs);
    }
    for (sr, k) in steps.iter_mut().zip(extra) {
        if k == 0 || cx.stopped() {
            continue;
        }
        let study = cx.study;
        let w = &study.workloads[sr.wi];
        let until = sr.rounds + k;
        run_rounds(cx, slots, w, sr, until);
    }
    started.elapsed().as_secs_f64()
}

/// Starts every server of the study, each on its own port, pinned, in its
/// own process group and CPU-accounting group. Servers that cannot start get
/// their rows now.
fn start_servers(
    cx: &mut Ctx,
    base: &Path,
    root: &Path,
    server_cores: &[usize],
    env: &mut m::Environment,
) -> Vec<Slot> {
    let mut slots = Vec::new();
    let wants_quota = cx.study.workloads.iter().any(|w| w.cpu_quota.is_some());
    for (i, inst) in expand_servers(cx.study).into_iter().enumerate() {
        if let Some(v) = servers::version(&inst, cx.opts.httplab_exe.as_deref()) {
            env.extra.insert(format!("version: {}", inst.name), v);
        }
        let mut slot = Slot {
            inst,
            running: None,
            cpu: None,
            limit: None,
            down: None,
        };
        if cx.stopped() {
            slot.down = Some((
                "skipped".into(),
                "interrupted (Ctrl-C) before this server ran".into(),
            ));
            slots.push(slot);
            continue;
        }
        let work = base.join(format!("server-{i}"));
        let ctx = servers::Context {
            root: root.to_path_buf(),
            work: work.clone(),
            httplab_exe: cx.opts.httplab_exe.clone(),
            probe_path: cx.corpus.probe_path(),
            tls: cx.tls.clone(),
        };
        cx.announce(&format!("starting {}", slot.inst.name));
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
            let plan = match servers::plan(&slot.inst, &ctx, port) {
                Ok(p) => p,
                Err(u) => {
                    let status = match u {
                        servers::Unavailable::NotInstalled { .. }
                        | servers::Unavailable::NoTls { .. } => "not installed",
                        servers::Unavailable::Other(_) => "failed",
                    };
                    env.extra
                        .insert(format!("version: {}", slot.inst.name), u.reason());
                    slot.down = Some((status.into(), u.reason()));
                    break;
                }
            };
            let group = format!("httplab-{}-{i}", std::process::id());
            let cpu = CpuSource::create(&group);
            let limit = wants_quota.then(|| crate::cpu::CpuLimit::create(&group, &cpu));
            let procs = cpu.procs_files(limit.as_ref());
            match servers::start(&plan, &work, server_cores, procs) {
                Ok(r) => {
                    cx.emit(Event::ServerStarted {
                        server: slot.inst.name.clone(),
                        pid: r.pid,
                    });
                    if let Some(why) = limit.as_ref().and_then(|l| l.unavailable()) {
                        let why = format!(
                            "no CPU quota: {why}; capacity is measured without one \
                             (a lower bound where the client saturates first)"
                        );
                        cx.announce(&format!("{}: {why}", slot.inst.name));
                        env.extra.insert(EXTRA_CPU_QUOTA.into(), why);
                    }
                    slot.running = Some(r);
                    slot.cpu = Some(cpu);
                    slot.limit = limit;
                    break;
                }
                Err(e) => {
                    cpu.remove();
                    if let Some(l) = &limit {
                        l.remove();
                    }
                    last_err = format!("could not start: {e:#}");
                }
            }
        }
        if slot.running.is_none() && slot.down.is_none() {
            slot.down = Some(("failed".into(), last_err));
        }
        slots.push(slot);
    }
    slots
}

fn step_label(p: &StepParams) -> Option<String> {
    (!p.step.is_empty()).then(|| p.step.clone())
}

/// One workload step as it is measured: its servers' cells and rounds.
struct StepRun {
    /// Workload index.
    wi: usize,
    /// Step index within the workload.
    si: usize,
    params: StepParams,
    label: Option<String>,
    metric: Metric,
    /// Slots of the servers of this workload.
    mine: Vec<usize>,
    data: BTreeMap<usize, CellData>,
    /// Rounds run so far.
    rounds: u32,
    /// Rounds of the first phase (the interim look, when there is one).
    first_rounds: u32,
    /// Most rounds.
    cap: u32,
    /// Wall seconds spent on its rounds.
    spent_s: f64,
}

impl StepRun {
    fn cells(&self) -> Vec<CellData> {
        self.data.values().cloned().collect()
    }
    /// Servers still measured (not failed or interrupted).
    fn active_count(&self) -> usize {
        self.data.values().filter(|d| d.stop.is_none()).count()
    }
    fn active(&self) -> bool {
        self.active_count() >= 2
    }
}

/// Phase one of a workload: every step's fewest rounds.
fn run_workload(cx: &mut Ctx, slots: &mut [Slot], wi: usize, w: &Workload) -> Vec<StepRun> {
    let all = expand_servers(cx.study);
    let mine: Vec<usize> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| servers_of(w, &all).iter().any(|x| x.name == s.inst.name))
        .map(|(i, _)| i)
        .collect();
    let metric = rounds::primary_metric(cx.study, w);
    let (min_reps, max_reps) = rounds::reps_of(&cx.proto, w);
    let mut out = Vec::new();
    for (si, p) in steps_with(w, &cx.study.protocol).into_iter().enumerate() {
        let step = step_label(&p);
        let mut data: BTreeMap<usize, CellData> = BTreeMap::new();
        for &i in &mine {
            data.insert(
                i,
                CellData {
                    server: slots[i].inst.name.clone(),
                    ..Default::default()
                },
            );
            // Servers that never started: one row per fewest repetitions.
            if let Some((status, reason)) = slots[i].down.clone() {
                for r in 0..min_reps {
                    push_row(
                        cx,
                        w,
                        &slots[i].inst.name,
                        &step,
                        r,
                        0,
                        &status,
                        &reason,
                        None,
                        None,
                    );
                    cx.tick(0.0);
                }
                if let Some(d) = data.get_mut(&i) {
                    d.stop = Some(rounds::STOP_FAILED);
                }
            }
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

/// Runs rounds of one step until it has `until` rounds (or every server has
/// stopped: failed, interrupted). Every round visits every active server once
/// in the round's seeded random order.
fn run_rounds(cx: &mut Ctx, slots: &mut [Slot], w: &Workload, sr: &mut StepRun, until: u32) {
    let started = Instant::now();
    let p = sr.params.clone();
    let mut round = sr.rounds;
    loop {
        let active: Vec<usize> = sr
            .mine
            .iter()
            .copied()
            .filter(|i| sr.data.get(i).is_some_and(|d| d.stop.is_none()))
            .collect();
        if active.is_empty() {
            break;
        }
        let order = rounds::round_order(&active, cx.proto.seed, sr.wi, sr.si, round);
        let where_ = format!(
            "{}{} · round {}",
            w.name,
            sr.label
                .as_deref()
                .map(|s| format!(" [{s}]"))
                .unwrap_or_default(),
            round + 1
        );
        // A round is `slices` short runs per server, in the round's order and
        // then reversed (A B | B A …), so that drift within the round falls
        // on every server alike; one slice is the plain round.
        let slices = w.slice_count();
        let ps = sliced(&p, slices);
        let mut got: BTreeMap<usize, Vec<Outcome>> = BTreeMap::new();
        let mut position = 0u32;
        for slice in 0..slices {
            let seq: Vec<usize> = if slice % 2 == 0 {
                order.clone()
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
                cx.announce(&format!("{} · {where_}{part}", slots[i].inst.name));
                let outcome = if cx.stopped() {
                    Err(("skipped", "interrupted (Ctrl-C)".to_string()))
                } else {
                    usable(&mut slots[i]).and_then(|()| measure(cx, &mut slots[i], w, &ps, round))
                };
                finished(cx, &slots[i], w, &outcome, run_seconds(&ps));
                got.entry(i).or_default().push((position, outcome));
                position += 1;
            }
        }
        let first_row = cx.runs.len();
        for &i in &order {
            let outcomes = got.remove(&i).unwrap_or_default();
            record(cx, slots, w, sr, round, i, outcomes);
        }
        // Rows in the order the runs were made.
        cx.runs[first_row..].sort_by_key(|r| r.position);
        round += 1;
        if round >= until || round >= sr.cap {
            break;
        }
    }
    for i in &sr.mine {
        if let Some(d) = sr.data.get_mut(i) {
            if d.stop.is_none() && round >= sr.cap {
                d.stop = Some(rounds::STOP_MAX);
            }
        }
    }
    sr.rounds = round;
    sr.spent_s += started.elapsed().as_secs_f64();
}

/// Ok when the slot's server is up and can be measured.
fn usable(slot: &mut Slot) -> std::result::Result<(), RunErr> {
    match (&mut slot.running, &slot.down) {
        (Some(r), None) => match r.exited() {
            Some(why) => Err((
                "failed",
                format!("server not running: it exited earlier ({why})"),
            )),
            None => Ok(()),
        },
        (_, Some((_, why))) => Err(("failed", why.clone())),
        (None, None) => Err(("failed", "server not running".to_string())),
    }
}

/// Progress after each run: the bar moves and observers hear the status.
fn finished(
    cx: &mut Ctx,
    slot: &Slot,
    w: &Workload,
    outcome: &std::result::Result<Measured, RunErr>,
    secs: f64,
) {
    cx.tick(secs);
    let status = match outcome {
        Ok(x) if x.run.as_ref().is_some_and(rounds::measured_nothing) => rounds::STATUS_EMPTY,
        Ok(_) => "ok",
        Err((s, _)) => s,
    };
    cx.emit(Event::RunFinished {
        server: slot.inst.name.clone(),
        workload: w.name.clone(),
        pid: slot.running.as_ref().map_or(0, |r| r.pid),
        status: status.to_string(),
    });
}

/// A step's parameters for one of `slices` short runs: the same warm-up,
/// the window divided among the slices.
fn sliced(p: &StepParams, slices: u32) -> StepParams {
    let mut q = p.clone();
    if slices > 1 {
        q.window = q.window.map(|w| w / slices);
    }
    q
}

/// Files one server's repetition (one outcome per slice): progress, a row
/// per run, and the cell's value for this round, the geometric mean of its
/// slices (or why there is none).
fn record(
    cx: &mut Ctx,
    slots: &mut [Slot],
    w: &Workload,
    sr: &mut StepRun,
    round: u32,
    i: usize,
    outcomes: Vec<Outcome>,
) {
    let name = slots[i].inst.name.clone();
    let (metric, step) = (sr.metric, sr.label.clone());
    let mut parts: Vec<BTreeMap<Metric, f64>> = Vec::new();
    let (mut client_bound, mut invalid) = (false, Vec::new());
    let (mut stop, mut empty) = (None, false);
    for (pos, outcome) in outcomes {
        let m = match outcome {
            Ok(m) => m,
            Err((status, why)) => {
                stop = Some(if status == "skipped" {
                    rounds::STOP_INTERRUPTED
                } else {
                    rounds::STOP_FAILED
                });
                if status == "failed" && slots[i].down.is_none() {
                    // A server that died stays down for the rest of the study.
                    if slots[i].running.as_mut().and_then(|r| r.exited()).is_some() {
                        slots[i].down = Some(("failed".into(), why.clone()));
                    }
                }
                push_row(cx, w, &name, &step, round, pos, status, &why, None, None);
                continue;
            }
        };
        if m.run.as_ref().is_some_and(|r| r.interrupted) {
            stop = Some(rounds::STOP_INTERRUPTED);
            let (run, sweep) = (m.run, m.sweep);
            push_row(
                cx,
                w,
                &name,
                &step,
                round,
                pos,
                "skipped",
                INTERRUPTED_DURING,
                run,
                sweep,
            );
            continue;
        }
        if m.run.as_ref().is_some_and(rounds::measured_nothing) {
            // Not a repetition: the cell gets another round (up to its cap)
            // instead of a rate of 0.
            empty = true;
            let (run, sweep) = (m.run, m.sweep);
            let (st, why) = (rounds::STATUS_EMPTY, rounds::REASON_EMPTY);
            push_row(cx, w, &name, &step, round, pos, st, why, run, sweep);
            continue;
        }
        let mut all_m = m
            .run
            .as_ref()
            .map(crate::report::metrics_of)
            .unwrap_or_default();
        all_m.extend(m.values);
        invalid.extend(invalid_metrics(&sr.params, m.run.as_ref()));
        client_bound |= m.client_bound;
        let has = |k: &Metric| all_m.get(k).is_some_and(|v| v.is_finite());
        if m.sweep.is_some() && has(&Metric::MaxRate) && !has(&metric) {
            // A search that never reached the CPU quota: no figure at
            // saturation this round; the cell gets another (up to its cap).
            empty = true;
            let why = "the capacity search stopped before the server used 90 % of its CPU quota \
                       (a disturbance?): no figure at saturation this round";
            let st = rounds::STATUS_EMPTY;
            push_row(cx, w, &name, &step, round, pos, st, why, m.run, m.sweep);
            continue;
        }
        let (status, reason) = if has(&metric) {
            ("ok", String::new())
        } else {
            stop = Some(rounds::STOP_FAILED);
            let why = format!(
                "no value of {} could be computed (no replies?)",
                metric.key()
            );
            ("failed", why)
        };
        push_row(
            cx, w, &name, &step, round, pos, status, &reason, m.run, m.sweep,
        );
        parts.push(all_m);
    }
    let Some(d) = sr.data.get_mut(&i) else {
        return;
    };
    if stop.is_some() {
        d.stop = stop;
        return;
    }
    if empty {
        d.empty_runs += 1;
        return;
    }
    let all = combine_slices(&parts);
    if let Some(v) = all.get(&metric).copied() {
        d.push(round, v, &all, client_bound, &invalid);
    }
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
            let achieved = r.totals.replies as f64 / r.totals.test_duration_s.max(1e-9);
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

/// True when a step offers a fixed rate (open loop): its servers do the same
/// work, so their CPU per request compares.
fn fixed_rate(p: &StepParams) -> bool {
    matches!(p.offer, Offer::Open { rate: Some(_), .. })
}

#[allow(clippy::too_many_arguments)]
fn push_row(
    cx: &mut Ctx,
    w: &Workload,
    server: &str,
    step: &Option<String>,
    round: u32,
    position: u32,
    status: &str,
    reason: &str,
    run: Option<m::RunResult>,
    sweep: Option<m::SweepResult>,
) {
    let run = run.map(|mut r| {
        if let (Some(v), Some(s)) = (&w.vary, step) {
            r.config
                .extra
                .insert(EXTRA_PARAM.into(), v.param.as_str().into());
            r.config.extra.insert(EXTRA_STEP.into(), s.clone());
        }
        r
    });
    cx.runs.push(m::StudyRun {
        workload: w.name.clone(),
        server: server.to_string(),
        repetition: round,
        step: step.clone(),
        position,
        status: status.into(),
        reason: reason.into(),
        run,
        sweep,
    });
}

/// What one cell repetition produced.
struct Measured {
    run: Option<m::RunResult>,
    sweep: Option<m::SweepResult>,
    /// Values that are not metrics of `run` (capacity searches).
    values: Vec<(Metric, f64)>,
    client_bound: bool,
}

type RunErr = (&'static str, String);

/// One run's outcome and its position in the round.
type Outcome = (u32, std::result::Result<Measured, RunErr>);

/// One repetition of one step on one server: a load run, or for a sweep
/// workload a capacity search.
fn measure(
    cx: &mut Ctx,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> std::result::Result<Measured, RunErr> {
    let name = slot.inst.name.clone();
    cx.emit(Event::RunStarted {
        server: name.clone(),
        workload: w.name.clone(),
    });
    if w.kind == WorkloadKind::Sweep {
        return capacity(cx, slot, w, p, round);
    }
    if w.kind == WorkloadKind::Idle {
        return idle_run(cx, slot, w, p, round);
    }
    let run = one_run(cx, slot, w, p, None, round)?;
    let cb = run.self_check.client_bound;
    Ok(Measured {
        run: Some(run),
        sweep: None,
        values: Vec::new(),
        client_bound: cb,
    })
}

/// An idle workload's repetition: the held connections opened (see
/// [`crate::idle`]), the normal client's run, then the holder's census and the
/// server's descriptors and memory before and during the hold.
fn idle_run(
    cx: &mut Ctx,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> std::result::Result<Measured, RunErr> {
    let Some(srv) = slot.running.as_ref() else {
        return Err(("failed", "server not running".into()));
    };
    let (addr, pid) = (srv.addr, srv.pid);
    let hold = crate::idle::HoldSpec::of(w, p, addr);
    let before = crate::sampler::sample(pid, 0.0);
    cx.announce(&format!(
        "{} · opening {} idle connections",
        slot.inst.name, hold.conns
    ));
    let mut holder = crate::idle::Holder::open(&hold, &cx.opts.stop)
        .map_err(|e| ("failed", format!("idle connections: {e:#}")))?;
    let r = one_run(cx, slot, w, p, None, round);
    let census = holder.census();
    drop(holder);
    let mut run = r?;
    crate::idle::annotate(&mut run, &census, hold.send, &before);
    let cb = run.self_check.client_bound;
    Ok(Measured {
        run: Some(run),
        sweep: None,
        values: Vec::new(),
        client_bound: cb,
    })
}

/// Searches upward from the workload's `low_rate` until the server
/// saturates (see `httplab_sweep::find_max`); when the client
/// saturates first the value is a lower bound and the cell is client-bound.
fn capacity(
    cx: &mut Ctx,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    round: u32,
) -> std::result::Result<Measured, RunErr> {
    let cfg = httplab_sweep::FindMax {
        start: w.low_rate.unwrap_or(100.0),
        ceiling: None,
        precision: crate::decisions::CAPACITY_GRID,
        max_runs: 12,
        slo_ms: w.timeout_s.unwrap_or(5.0) * 1000.0,
    };
    let quota = match (w.cpu_quota, slot.limit.as_ref()) {
        (Some(q), Some(l)) if l.unavailable().is_none() => match l.set(Some(q)) {
            Ok(()) => Some(q),
            Err(e) => {
                cx.announce(&format!(
                    "{}: could not set a CPU quota of {q} core ({e}); capacity is measured without it",
                    slot.inst.name
                ));
                None
            }
        },
        _ => None,
    };
    let mut err: Option<RunErr> = None;
    let found = httplab_sweep::find_max(&cfg, |rate| {
        match one_run(cx, slot, w, p, Some(rate), round) {
            Ok(r) => Ok(r),
            Err(e) => {
                err = Some(e.clone());
                Err(anyhow::anyhow!("{}", e.1))
            }
        }
    });
    if let (Some(_), Some(l)) = (quota, slot.limit.as_ref()) {
        // Lifted for every later workload; a failure here would leave the
        // server throttled, so the study refuses to go on measuring it.
        if let Err(e) = l.set(None) {
            return Err(("failed", format!("could not lift the CPU quota: {e}")));
        }
    }
    let (steps, sat) = match found {
        Ok(x) => x,
        Err(e) => {
            return Err(err.unwrap_or_else(|| ("failed", format!("{e:#}"))));
        }
    };
    let addr = slot
        .running
        .as_ref()
        .map(|r| r.addr.to_string())
        .unwrap_or_default();
    let value = sat.max_sustainable_rate;
    let cb = sat.client_bound;
    let sweep = m::SweepResult {
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
            saturation: sat,
        }],
        environment: crate::env::environment(),
    };
    match value {
        Some(v) => Ok(Measured {
            values: capacity_values(v, &sweep.targets[0].steps, quota),
            run: None,
            sweep: Some(sweep),
            client_bound: cb,
        }),
        None => Err((
            "failed",
            format!(
                "no rate was sustained, down to {} conn/s",
                fmt_num(cfg.start)
            ),
        )),
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

/// The shape of a run for client calibration: what the generator's own
/// ceiling depends on (connections, calls, pipelining, paths), not where it
/// points or how long or how fast it is asked to go.
fn shape_key(args: &[String]) -> String {
    const IGNORED: [&str; 11] = [
        "--run-id",
        "--server",
        "--port",
        "--label",
        "--rate",
        "--duration",
        "--lag-threshold",
        "--warmup",
        "--num-conns",
        "--requests-per-user",
        "--timeout",
    ];
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if IGNORED.contains(&a.as_str()) {
            it.next();
        } else {
            out.push(a.as_str());
        }
    }
    out.join(" ")
}

/// One load run through `httplab load` in process, its threads pinned to the
/// client cores, the server's CPU measured from its cgroup (or schedstat)
/// and its memory sampled from /proc.
fn one_run(
    cx: &mut Ctx,
    slot: &mut Slot,
    w: &Workload,
    p: &StepParams,
    rate: Option<f64>,
    round: u32,
) -> std::result::Result<m::RunResult, RunErr> {
    let spec = prepare_run(cx, slot, w, p, rate, round)?;
    execute_run(
        &cx.client_cores,
        &cx.opts.stop,
        slot,
        w,
        &spec,
        p.max_duration,
    )
}

/// The load run's spec for this server and step (its URI list written, its
/// client shard set, the client's ceiling for its shape calibrated once).
fn prepare_run(
    cx: &mut Ctx,
    slot: &Slot,
    w: &Workload,
    p: &StepParams,
    rate: Option<f64>,
    round: u32,
) -> std::result::Result<LoadSpec, RunErr> {
    let Some(srv) = slot.running.as_ref() else {
        return Err(("failed", "server not running".into()));
    };
    let mut p = p.clone();
    if let (Some(r), Offer::Open { num_conns, .. }) = (rate, p.offer) {
        p.offer = Offer::Open {
            rate: Some(r),
            num_conns,
        };
    }
    let label = format!(
        "{} · {}{}",
        slot.inst.name,
        w.name,
        step_label(&p)
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default()
    );
    let uris = cx.corpus.uris(&p.target);
    let list = if uris.len() > 1 {
        let f = cx.lists.join(format!("{}.txt", sanitize(&p.target)));
        if !f.exists() {
            let mut text = uris.join("\n");
            text.push('\n');
            std::fs::write(&f, text)
                .map_err(|e| ("failed", format!("writing {}: {e}", f.display())))?;
        }
        Some(f)
    } else {
        None
    };
    let mut args = load_args(&LoadArgs {
        addr: srv.addr,
        uri: uris.first().map_or("/", String::as_str),
        uri_list: list.as_deref(),
        params: &p,
        root: &cx.corpus.root,
        label: &label,
        threads: cx.client_cores.len().max(1),
        tls: cx.tls.as_ref().map(|t| TlsArgs {
            ca: &t.cert,
            resume: w.tls_resume.unwrap_or(true),
        }),
    });
    if let Some(sh) = &cx.opts.shard {
        args.extend([
            "--client".to_string(),
            format!("{}/{}", sh.index, sh.count),
            "--run-id".into(),
            crate::shard::run_id_of(
                &sh.run_id,
                &w.name,
                step_label(&p).as_deref(),
                &slot.inst.name,
                round,
            ),
        ]);
    }
    let mut spec = httplab_load::parse_args(&args)
        .map_err(|e| ("failed", format!("httplab load arguments: {e:#}")))?;
    // Calibrate the client once per shape (its ceiling for this shape).
    let key = shape_key(&args);
    if !cx.ceilings.contains_key(&key) {
        cx.announce(&format!("calibrating the client for {}", w.name));
        let c = with_client_cores(&cx.client_cores, || httplab_load::calibrate(&spec))
            .ok()
            .and_then(|c| c.ok())
            .map(|c| c.ceiling_rps)
            .filter(|x| x.is_finite() && *x > 0.0);
        cx.ceilings.insert(key.clone(), c);
    }
    spec.client_ceiling = cx.ceilings.get(&key).copied().flatten();
    Ok(spec)
}

/// Runs a prepared load run against the slot's server: pinned to the client
/// cores, stopped at `limit`, with the server's CPU read over the run and its
/// memory sampled.
fn execute_run(
    client_cores: &[usize],
    stop: &std::sync::atomic::AtomicBool,
    slot: &mut Slot,
    w: &Workload,
    spec: &LoadSpec,
    limit: Duration,
) -> std::result::Result<m::RunResult, RunErr> {
    let Some(srv) = slot.running.as_mut() else {
        return Err(("failed", "server not running".into()));
    };
    // The run stops at Ctrl-C (`stop`) or when it has lasted `limit`
    // (`max_duration_s`): a watchdog sets the run's own flag.
    let run_stop = AtomicBool::new(false);
    let over = AtomicBool::new(false);
    // The sampler and watchdog threads are started pinned to the client's
    // cores (threads inherit their creator's affinity), so they never run on
    // a server's core.
    let pinned = with_client_cores(client_cores, || {
        let cpu0 = slot.cpu.as_ref().map(|c| c.cpu_s(srv.pid));
        let sampler = Sampler::start(&slot.inst.name, srv.pid, Duration::from_millis(100));
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let r = std::thread::scope(|sc| {
            let (run_stop, over) = (&run_stop, &over);
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
        });
        let cpu1 = slot.cpu.as_ref().map(|c| c.cpu_s(srv.pid));
        (sampler.finish(), r, cpu0.zip(cpu1))
    });
    let (mut cost, r, cpu) = match pinned {
        Ok((cost, r, cpu)) => (cost, Ok(r), cpu),
        Err(e) => (Default::default(), Err(e), None),
    };
    let run = match r {
        Ok(Ok(run)) => run,
        Ok(Err(e)) | Err(e) => return Err(("failed", format!("httplab load: {e:#}"))),
    };
    if over.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
        return Err((
            "failed",
            format!(
                "the run was stopped at max_duration_s = {} s ({} of {} requests answered)",
                fmt_num(limit.as_secs_f64()),
                run.totals.replies,
                run.totals.requests
            ),
        ));
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
        cost.cpu_source = c.name().to_string();
    }
    let mut run = run;
    run.server = Some(cost);
    run.config
        .extra
        .insert("driver".into(), "httplab-load".into());
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
    // Under idle connections a server that stops answering is the finding,
    // kept as a run (reply rate 0, its errors and the holder's note).
    if run.totals.replies == 0 && run.errors.total > 0 && w.kind != WorkloadKind::Idle {
        let e = &run.errors;
        return Err(("failed", format!(
            "no replies: {} errors (connrefused {}, connreset {}, client-timo {}, socket-timo {}, other {})",
            e.total, e.connrefused, e.connreset, e.client_timo, e.socket_timo, e.other
        )));
    }
    Ok(run)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
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

/// Groups the runs of a study: workload → server → runs.
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

/// What one `httplab load` run of a study needs.
pub struct LoadArgs<'a> {
    /// Server address.
    pub addr: std::net::SocketAddr,
    /// The single path (or the first of the list).
    pub uri: &'a str,
    /// A file listing the paths to request in turn (sets, pages).
    pub uri_list: Option<&'a Path>,
    /// The step.
    pub params: &'a StepParams,
    /// Corpus root (bodies are verified against it).
    pub root: &'a Path,
    /// Result label.
    pub label: &'a str,
    /// Generator threads (one per client core).
    pub threads: usize,
    /// Over TLS: the CA file and whether sessions resume (None: cleartext).
    pub tls: Option<TlsArgs<'a>>,
}

/// How a study run speaks TLS.
#[derive(Debug, Clone, Copy)]
pub struct TlsArgs<'a> {
    /// The study's certificate, the only trust anchor (`--cacert`).
    pub ca: &'a Path,
    /// Resume sessions on new connections (else `--ssl-no-reuse`).
    pub resume: bool,
}

/// Key of `environment.extra` saying the study ran over TLS (and how).
pub const EXTRA_TLS: &str = "tls";
/// Key of `environment.extra` with the TLS versions and cipher suites the
/// study's runs negotiated (handshake counts).
pub const EXTRA_TLS_SEEN: &str = "tls_seen";

/// Key of `environment.extra` saying why capacity under a CPU quota
/// (`cpu_quota`) could not be measured under one.
pub const EXTRA_CPU_QUOTA: &str = "cpu_quota";

/// `TLSv1_3 ×1200, TLS13_AES_256_GCM_SHA384 ×1200` over every run's
/// handshakes (`RunResult.tls`).
pub fn tls_seen(runs: &[m::StudyRun]) -> String {
    let mut versions: BTreeMap<String, u64> = BTreeMap::new();
    let mut suites: BTreeMap<String, u64> = BTreeMap::new();
    for t in runs.iter().filter_map(|r| r.run.as_ref()?.tls.as_ref()) {
        for (k, v) in &t.versions {
            *versions.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &t.cipher_suites {
            *suites.entry(k.clone()).or_default() += v;
        }
    }
    let all: Vec<String> = versions
        .iter()
        .chain(suites.iter())
        .map(|(k, v)| format!("{k} ×{v}"))
        .collect();
    if all.is_empty() {
        "no handshake completed".into()
    } else {
        format!("handshakes: {}", all.join(", "))
    }
}

/// The `httplab load` arguments (httperf spellings) of one study run.
///
/// - Window-measured runs: `--warmup W --duration T` (open loop at `rate`;
///   back-to-back connections become one closed-loop user, which is what
///   httperf's sequential mode is; closed loop with `--users`).
/// - Count-measured runs keep the workload's counts and add the warm-up's
///   share in front (`rate × warm-up` connections, or one extra request per
///   user per second of warm-up is not defined, so users run their counts
///   after a timed warm-up).
/// - Sessions of several calls reconnect when a server closes (`--reconnect`)
///   and bodies are verified against the corpus (`--verify-root`).
pub fn load_args(a: &LoadArgs) -> Vec<String> {
    let p = a.params;
    let mut v: Vec<String> = vec![
        "--server".into(),
        a.addr.ip().to_string(),
        "--port".into(),
        a.addr.port().to_string(),
        "--uri".into(),
        a.uri.to_string(),
        "--timeout".into(),
        format!("{}", p.timeout.as_secs_f64()),
        "--verify-root".into(),
        a.root.to_string_lossy().into_owned(),
        "--label".into(),
        a.label.to_string(),
        "--threads".into(),
        a.threads.to_string(),
        "--no-progress".into(),
    ];
    let mut push = |k: &str, val: String| {
        v.push(k.to_string());
        v.push(val);
    };
    if let Some(l) = a.uri_list {
        push("--uri-list", l.to_string_lossy().into_owned());
    }
    let warm = p.warmup.as_secs_f64();
    if warm > 0.0 {
        push("--warmup", format!("{warm}"));
    }
    if p.num_calls > 1 || (p.num_calls_given && matches!(p.offer, Offer::Closed { .. })) {
        // Users keep one connection for all their requests unless told
        // otherwise; `num_calls = 1` written out means a connection per request.
        push("--num-calls", p.num_calls.to_string());
    }
    if p.pipeline > 1 {
        push("--burst-length", p.pipeline.to_string());
    }
    let window = p.window.map(|d| d.as_secs_f64());
    match (p.offer, window) {
        (Offer::Open { rate: Some(r), .. }, Some(t)) => {
            push("--rate", format!("{r}"));
            push("--duration", format!("{t}"));
            push(
                "--lag-threshold",
                format!("{:.3}ms", (500.0 / r.max(1e-9)).max(10.0)),
            );
        }
        (
            Offer::Open {
                rate: Some(r),
                num_conns,
            },
            None,
        ) => {
            push("--rate", format!("{r}"));
            let extra = (r * warm).ceil() as u64;
            push("--num-conns", (num_conns + extra).to_string());
            push(
                "--lag-threshold",
                format!("{:.3}ms", (500.0 / r.max(1e-9)).max(10.0)),
            );
        }
        (Offer::Open { rate: None, .. }, Some(t)) => {
            push("--users", "1".into());
            push("--duration", format!("{t}"));
        }
        (
            Offer::Open {
                rate: None,
                num_conns,
            },
            None,
        ) => {
            push("--num-conns", num_conns.to_string());
        }
        (
            Offer::Closed {
                users, think_ms, ..
            },
            Some(t),
        ) => {
            push("--users", users.to_string());
            push("--duration", format!("{t}"));
            if think_ms > 0.0 {
                push("--think", format!("{think_ms}ms"));
            }
        }
        (
            Offer::Closed {
                users,
                requests,
                think_ms,
            },
            None,
        ) => {
            push("--users", users.to_string());
            push("--requests-per-user", requests.to_string());
            if think_ms > 0.0 {
                push("--think", format!("{think_ms}ms"));
            }
        }
    }
    if p.num_calls > 1 {
        v.push("--reconnect".into());
    }
    if let Some(t) = &a.tls {
        // `--ssl` keeps the study's host/port spelling; `--cacert` turns
        // verification on against the study's certificate only.
        v.push("--ssl".into());
        v.push("--cacert".into());
        v.push(t.ca.to_string_lossy().into_owned());
        if !t.resume {
            v.push("--ssl-no-reuse".into());
        }
    }
    v
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
