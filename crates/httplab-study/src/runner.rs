//! Runs a study, layer by layer: the plan ([`crate::plan`]) is executed
//! ([`crate::execute`]: corpus, servers, every step's first rounds), the
//! interim look of the analysis ([`crate::analyse`]) hands out the extra
//! rounds, execution runs them, and the final look decides the whole
//! family. The rendering ([`crate::render`]) is the caller's. Progress is
//! told as typed events ([`Event`]) to the observer in [`Options`].

use std::time::Instant;

use anyhow::{Context as _, Result};
use httplab_load::calibration_cache::CalibrationCache;
use httplab_model as m;

use crate::analyse::{answers, design, facts, noise};
use crate::execute::context::Execution;
use crate::execute::corpus::{self, CorpusIndex};
use crate::execute::packet_loss::Injector;
use crate::execute::rounds::{run_rounds, run_workload, StepRun};
use crate::execute::slots::{restart_servers, start_servers, Placement, Slot};
use crate::execute::{env, servers, tls};
use crate::plan::study_plan::Budget;
use crate::spec::StudyFile;

pub use crate::execute::events::{Event, Observer};
pub use crate::execute::options::Options;
pub use crate::execute::rounds::INTERRUPTED_DURING;
pub use crate::execute::servers::find_httplab_exe;
pub use crate::plan::steps::{describe_offer, run_seconds, steps, steps_with, Offer, StepParams};
pub use crate::plan::study_plan::{StudyPlan, SEARCH_RUNS};
pub use crate::plan::text::{fmt_num, human_secs};
pub use crate::render::plan_text::describe_plan;

/// Runs the whole study: its plan ([`StudyPlan::new`] with the options'
/// `--quick` and `--budget`), run by [`run_plan`].
pub fn run_study(study: &StudyFile, opts: &Options) -> Result<m::StudyResult> {
    run_plan(study, &plan_of(study, opts), opts)
}

/// The plan of `study` run with `opts` (its `--quick` and `--budget`).
pub fn plan_of(study: &StudyFile, opts: &Options) -> StudyPlan {
    plan(study, opts.quick, opts.budget_s)
}

/// The plan of `study` ([`StudyPlan::new`]), the peers deciding who speaks
/// which workload's protocol: `quick` is `--quick`, `budget_s` `--budget`.
/// Workloads with packet loss are skipped where it cannot be injected.
pub fn plan(study: &StudyFile, quick: bool, budget_s: Option<f64>) -> StudyPlan {
    let plan = StudyPlan::new(study, quick, budget_s, servers::speaks);
    if !plan.workloads.iter().any(|w| w.lossy) {
        return plan;
    }
    match Injector::usable() {
        Ok(_) => plan,
        Err(why) => plan.without_packet_loss(&why),
    }
}

/// Runs `plan`, the plan of `study` (the study file gives each workload's
/// own settings: target, connections, protocol). Never fails because a
/// server does: that becomes a failed row. Fails only when the corpus
/// cannot be written.
pub fn run_plan(study: &StudyFile, plan: &StudyPlan, opts: &Options) -> Result<m::StudyResult> {
    let started_at = m::now_rfc3339();
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
    let server_cores = &plan.pinning.server_cores;
    let mut env = env::environment();
    let cert = if study.tls || opts.tls {
        let c = tls::generate(&base.join("tls"))?;
        env.facts.study.tls = Some(tls::CERT_DESCRIPTION.into());
        Some(c)
    } else {
        None
    };
    record_setup(
        &mut env,
        opts,
        (server_cores, &plan.pinning.client_cores),
        &corpus,
        &plan.pinning.notes,
    );
    let mut cx = Execution {
        study,
        plan,
        opts,
        corpus: &corpus,
        proto: plan.protocol.clone(),
        tls: cert,
        runs: Vec::new(),
        calibrations: CalibrationCache::new(),
        lists,
        packet_loss: None,
        start: 0,
    };
    let started = Instant::now();
    cx.emit(Event::Planned {
        runs: plan.runs_range().0,
        seconds: plan.first_rounds_seconds(),
    });
    let at = Placement {
        base: &base,
        root: &root,
        server_cores,
    };
    let mut slots = start_servers(&mut cx, at, &mut env);
    record_servers(&mut env, &slots);
    let (steps, sequential) = measure(&mut cx, &mut slots, at, &mut env);
    let (cells, verdicts) = design::conclude(plan, &cx.proto, &steps, sequential);
    if cx.tls.is_some() {
        env.facts.study.tls_seen = Some(facts::tls_seen(&cx.runs));
    }
    for s in &mut slots {
        s.stop();
    }
    cx.emit(Event::Finished {
        interrupted: cx.stopped(),
    });
    // To a tenth of a second, as it has always been recorded.
    env.facts.study.study_seconds = Some((started.elapsed().as_secs_f64() * 10.0).round() / 10.0);
    let mut res = m::StudyResult {
        schema: m::STUDY_SCHEMA.into(),
        tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
        name: study.name.clone(),
        started_at,
        runs: cx.runs,
        environment: env,
        protocol: Some(cx.proto),
        cells,
        verdicts,
        answers: Vec::new(),
    };
    noise::annotate(&mut res);
    res.answers = answers::answer_all(plan, &res);
    Ok(res)
}

/// The study's setting in its environment: shard, pinning, corpus, notes.
fn record_setup(
    env: &mut m::Environment,
    opts: &Options,
    (server_cores, client_cores): (&[usize], &[usize]),
    corpus: &CorpusIndex,
    notes: &[String],
) {
    let cores = |c: &[usize]| c.iter().map(|&c| c as u32).collect::<Vec<u32>>();
    env.client_affinity = cores(client_cores);
    let f = &mut env.facts.study;
    if let Some(sh) = &opts.shard {
        f.shard = Some(m::ClientShard {
            index: sh.index,
            count: sh.count,
        });
        f.run_id = Some(sh.run_id.clone());
    }
    f.server_cores = Some(cores(server_cores));
    f.client_cores = Some(cores(client_cores));
    f.corpus = Some(m::CorpusFacts {
        files: corpus.files.len() as u64,
        bytes: corpus.total_bytes,
    });
    f.notes = notes.to_vec();
}

/// The servers' facts in the environment: where CPU time was read, what
/// each TLS probe negotiated.
fn record_servers(env: &mut m::Environment, slots: &[Slot]) {
    let f = &mut env.facts.study;
    if let Some(src) = slots.iter().find_map(|s| s.cpu.as_ref()) {
        f.server_cpu_source = Some(src.kind());
    }
    for s in slots {
        if let Some(seen) = s.running.as_ref().and_then(|r| r.tls_seen.as_ref()) {
            f.tls_of.insert(s.inst.name.clone(), seen.clone());
        }
    }
}

/// Phase one (every step's fewest rounds), then, with a budget, the interim
/// look, a restart of every server, and phase two (the extra rounds) on the
/// second start. Returns the measured steps and whether the design had an
/// interim look.
fn measure(
    cx: &mut Execution,
    slots: &mut [Slot],
    at: Placement,
    env: &mut m::Environment,
) -> (Vec<StepRun>, bool) {
    let study = cx.study;
    let phase_one = Instant::now();
    let mut steps: Vec<StepRun> = Vec::new();
    for (wi, w) in study.workloads.iter().enumerate() {
        steps.extend(run_workload(cx, slots, wi, w));
    }
    let budget = match cx.plan.budget {
        Budget::Seconds(b) => b,
        Budget::AsLongAsFirstRounds => phase_one.elapsed().as_secs_f64(),
    };
    let sequential = budget > 0.0 && !cx.stopped() && steps.iter().any(|s| s.rounds < s.cap);
    if sequential {
        cx.proto.interim_rounds = steps.iter().map(|s| s.first_rounds).min();
        cx.proto.budget_s = Some(budget);
        restart_servers(cx, slots, at, env);
        let spent = phase_two(cx, slots, &mut steps, budget, env);
        cx.proto.budget_used_s = Some(spent);
    }
    (steps, sequential)
}

/// The sequential design's second phase: the extra rounds the interim look
/// hands out ([`design::extra_rounds`]), run. Returns the seconds spent.
fn phase_two(
    cx: &mut Execution,
    slots: &mut [Slot],
    steps: &mut [StepRun],
    budget: f64,
    env: &mut m::Environment,
) -> f64 {
    let started = Instant::now();
    let study = cx.study;
    let extra = design::extra_rounds(cx.plan, &cx.proto, steps, budget, &cx.runs);
    let runs: u64 = steps
        .iter()
        .zip(&extra)
        .map(|(sr, e)| {
            let slices = study.workloads[sr.wi].slice_count();
            // The servers measured, and a row each for those that are not.
            let per_round =
                u64::from(slices) * sr.active_count() as u64 + sr.not_measured_count() as u64;
            u64::from(e.rounds) * per_round
        })
        .sum();
    cx.emit(Event::MoreRuns { runs });
    for (sr, e) in steps.iter_mut().zip(extra) {
        if e.rounds == 0 || cx.stopped() {
            continue;
        }
        if let (Some(w), Some(why)) = (e.window_s, &e.why) {
            sr.params.window = Some(std::time::Duration::from_secs_f64(w));
            let step = sr
                .label
                .as_deref()
                .map(|s| format!(" [{s}]"))
                .unwrap_or_default();
            let name = format!("{}{step}", study.workloads[sr.wi].name);
            cx.announce(format!("extra rounds of {name}: {why}"));
            env.facts.study.extra_rounds.insert(name, why.clone());
        }
        let until = sr.rounds + e.rounds;
        run_rounds(cx, slots, &study.workloads[sr.wi], sr, until);
    }
    started.elapsed().as_secs_f64()
}
