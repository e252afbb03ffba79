//! The study's servers: every one started at once, each on its own port,
//! pinned, in its own process group and CPU-accounting group (and a
//! CPU-quota group when a workload asks for one), and stopped at the end.

use std::path::Path;

use httplab_model::{self as m, RunStatus};

use crate::execute::context::Execution;
use crate::execute::cpu::{CpuLimit, CpuSource};
use crate::execute::events::Event;
use crate::execute::servers::{self, Running};
use crate::spec::ServerInstance;

/// Why a server has no (more) runs, as its rows say.
#[derive(Debug, Clone)]
pub struct Down {
    /// Not installed, failed or skipped.
    pub status: RunStatus,
    /// Why.
    pub reason: String,
}

/// A server of the study, started (or why not).
pub struct Slot {
    /// The server.
    pub inst: ServerInstance,
    /// Its process, when it runs.
    pub running: Option<Running>,
    /// Where its CPU time is read.
    pub cpu: Option<CpuSource>,
    /// The group that can hold the server to a CPU quota (capacity at an
    /// equal quota); absent when no workload asks for one.
    pub limit: Option<CpuLimit>,
    /// Why it has no (more) runs: not installed, failed to start, died.
    pub down: Option<Down>,
}

impl Slot {
    fn new(inst: ServerInstance) -> Slot {
        Slot {
            inst,
            running: None,
            cpu: None,
            limit: None,
            down: None,
        }
    }

    /// Stops the server and removes its groups.
    pub fn stop(&mut self) {
        if let Some(r) = &mut self.running {
            r.stop();
        }
        if let Some(c) = &self.cpu {
            c.remove();
        }
        if let Some(l) = &self.limit {
            l.remove();
        }
    }
}

/// Where the study's servers run: the same for every start.
#[derive(Clone, Copy)]
pub struct Placement<'a> {
    /// The study's work directory (each server's files under `server-<i>`).
    pub base: &'a Path,
    /// The document root (the corpus).
    pub root: &'a Path,
    /// The cores the servers are pinned to.
    pub server_cores: &'a [usize],
}

impl Placement<'_> {
    fn work(&self, i: usize) -> std::path::PathBuf {
        self.base.join(format!("server-{i}"))
    }
}

/// Starts every server of the study, each on its own port, pinned, in its
/// own process group and CPU-accounting group. Servers that cannot start
/// get the reason in their slot (their rows are filed with each step).
pub fn start_servers(cx: &mut Execution, at: Placement, env: &mut m::Environment) -> Vec<Slot> {
    let mut slots = Vec::new();
    for (i, inst) in cx.plan.servers.iter().cloned().enumerate() {
        if let Some(v) = servers::version(&inst, cx.opts.httplab_exe.as_deref()) {
            env.facts.study.versions.insert(inst.name.clone(), v);
        }
        let mut slot = Slot::new(inst);
        if cx.stopped() {
            slot.down = Some(Down {
                status: RunStatus::Skipped,
                reason: "interrupted (Ctrl-C) before this server ran".into(),
            });
        } else {
            start_one(cx, &mut slot, i, at, env);
        }
        slots.push(slot);
    }
    slots
}

/// Stops every running server and starts it again (a new process, port and
/// accounting group; the same configuration and cores), so that the rounds
/// after it measure a second start of each server and the study can tell how
/// much its servers differ from one start to the next. Rows filed from here
/// on carry the new start's number. A server that does not come back is
/// down, with the reason, for the rest of the study.
pub fn restart_servers(
    cx: &mut Execution,
    slots: &mut [Slot],
    at: Placement,
    env: &mut m::Environment,
) {
    cx.start += 1;
    for (i, slot) in slots.iter_mut().enumerate() {
        if cx.stopped() || slot.down.is_some() || slot.running.is_none() {
            continue;
        }
        cx.announce(format!("restarting {}", slot.inst.name));
        slot.stop();
        slot.running = None;
        slot.cpu = None;
        slot.limit = None;
        start_one(cx, slot, i, at, env);
    }
}

/// Starts one server: two attempts, since the free port may be taken
/// between choosing and binding.
fn start_one(
    cx: &mut Execution,
    slot: &mut Slot,
    i: usize,
    at: Placement,
    env: &mut m::Environment,
) {
    let wants_quota = cx.study.workloads.iter().any(|w| w.cpu_quota.is_some());
    let work = at.work(i);
    let ctx = servers::Context {
        root: at.root.to_path_buf(),
        work: work.clone(),
        httplab_exe: cx.opts.httplab_exe.clone(),
        probe_path: cx.corpus.probe_path(),
        tls: cx.tls.clone(),
        http2: cx
            .study
            .workloads
            .iter()
            .any(|w| w.protocol == crate::spec::Protocol::H2),
        http3: cx.tls.is_some()
            && cx
                .study
                .workloads
                .iter()
                .any(|w| w.protocol == crate::spec::Protocol::H3),
    };
    cx.announce(format!("starting {}", slot.inst.name));
    let mut last_err = String::new();
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
                    | servers::Unavailable::NoTls { .. } => RunStatus::NotInstalled,
                    servers::Unavailable::Other(_) => RunStatus::Failed,
                };
                env.facts
                    .study
                    .versions
                    .insert(slot.inst.name.clone(), u.reason());
                slot.down = Some(Down {
                    status,
                    reason: u.reason(),
                });
                return;
            }
        };
        let group = format!("httplab-{}-{i}-{}", std::process::id(), cx.start);
        let cpu = CpuSource::create(&group);
        let limit = wants_quota.then(|| CpuLimit::create(&group, &cpu));
        let procs = cpu.procs_files(limit.as_ref());
        match servers::start(&plan, &work, at.server_cores, procs) {
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
                    cx.announce(format!("{}: {why}", slot.inst.name));
                    env.facts.study.cpu_quota = Some(why);
                }
                slot.running = Some(r);
                slot.cpu = Some(cpu);
                slot.limit = limit;
                return;
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
    slot.down = Some(Down {
        status: RunStatus::Failed,
        reason: last_err,
    });
}
