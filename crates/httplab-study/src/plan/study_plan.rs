//! The plan as one value: everything a study will run, computed once from
//! the study file and the command line's choices. `--dry-run` prints it,
//! execution runs it, and the time and run estimates are read from it, so
//! what is shown is what runs.

use httplab_model as m;

use crate::plan::pinning::resolve_pinning;
use crate::plan::rounds;
use crate::plan::steps::{steps_with, StepParams};
use crate::spec::{
    expand_servers, Metric, Protocol, Question, ServerInstance, StudyFile, Workload, WorkloadKind,
};

/// Whether a server speaks a protocol in a study over TLS (`true`) or in
/// cleartext (Err says why not). The peers answer it (`servers::speaks`);
/// the plan asks once per workload and server, and execution reads the
/// plan's answer ([`WorkloadPlan::left_out`]).
pub type Speaks = fn(&ServerInstance, Protocol, bool) -> Result<(), String>;

/// Runs one capacity search is expected to take (for planning).
pub const SEARCH_RUNS: u64 = 7;

/// The servers a workload runs on (all of the study's when it names none).
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

/// Seconds between two runs (starting the load generator, filing the row),
/// counted in the estimate.
const GAP_S: f64 = 0.1;

/// Seconds a run under packet loss (`loss_pct`) lasts beyond its load, in
/// the estimate: its last connections can wait up to one initial
/// retransmission timeout (1 s in Linux TCP; QUIC's first probe timeout is
/// about as long) for a lost handshake packet before the run ends. In the
/// built-in `protocols` study the loss workloads' first rounds took 0.4–0.75 s
/// per run longer than the same workloads without loss; the estimate counts
/// the most, so that its "at most" holds.
const LOSS_TAIL_S: f64 = 0.75;

/// The words of a workload skipped because its packet loss cannot be
/// injected, for `why`.
pub fn loss_skip_reason(why: &str) -> String {
    format!("packet loss not injected, workload skipped: {why}")
}

/// The plan of workload `w`: its servers, those left out because they
/// cannot speak its protocol, its steps, rounds and estimates (counting
/// only the servers that run it).
fn workload_plan(
    study: &StudyFile,
    protocol: &m::Protocol,
    servers: &[ServerInstance],
    w: &Workload,
    speaks: Speaks,
) -> WorkloadPlan {
    let mine: Vec<usize> = servers_of(w, servers)
        .iter()
        .filter_map(|x| servers.iter().position(|s| s.name == x.name))
        .collect();
    let left_out: Vec<(usize, String)> = mine
        .iter()
        .filter_map(|&i| {
            speaks(&servers[i], w.protocol, study.tls)
                .err()
                .map(|why| (i, format!("does not speak {}: {why}", w.protocol)))
        })
        .collect();
    let running = (mine.len() - left_out.len()) as u64;
    let steps = steps_with(w, &study.protocol);
    let slices = w.slice_count();
    let per_server = if w.kind == WorkloadKind::Sweep {
        SEARCH_RUNS
    } else {
        u64::from(slices)
    };
    let tail = if w.loss_pct.is_some() {
        LOSS_TAIL_S
    } else {
        0.0
    };
    let round_seconds = running as f64
        * steps
            .iter()
            .map(|st| {
                let one = f64::from(slices) * (st.sliced(slices).run_seconds() + GAP_S + tail);
                if w.kind == WorkloadKind::Sweep {
                    one * SEARCH_RUNS as f64
                } else {
                    one
                }
            })
            .sum::<f64>();
    WorkloadPlan {
        name: w.name.clone(),
        kind: w.kind,
        slices,
        runs_per_round: per_server * running * steps.len() as u64,
        servers: mine,
        left_out,
        steps,
        metric: rounds::primary_metric(study, w),
        rounds: rounds::reps_of(protocol, w),
        round_seconds,
        lossy: w.loss_pct.is_some(),
        skipped: None,
    }
}

/// What a study will run.
#[derive(Debug, Clone)]
pub struct StudyPlan {
    /// The protocol in force, its seed drawn when the study fixes none.
    pub protocol: m::Protocol,
    /// The seed was given (study file or `--seed`), not drawn.
    pub seed_given: bool,
    /// Every server, `workers = [..]` expanded, in the study's order.
    pub servers: Vec<ServerInstance>,
    /// Every workload, in the study's order.
    pub workloads: Vec<WorkloadPlan>,
    /// The study serves and loads over TLS (`tls = true` or `--tls`).
    pub tls: bool,
    /// The seconds of extra rounds the sequential design may spend.
    pub budget: Budget,
    /// Where the servers and the load generator run.
    pub pinning: Pinning,
    /// `[compare] baseline`: the server every other one is compared with.
    pub baseline: Option<String>,
    /// The study's questions, whose evidence the analysis compares and
    /// answers.
    pub questions: Vec<Question>,
}

/// One workload of the plan.
#[derive(Debug, Clone)]
pub struct WorkloadPlan {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: WorkloadKind,
    /// Measurement windows per run (slices; 1 when not sliced).
    pub slices: u32,
    /// Indices into [`StudyPlan::servers`] of the servers it compares
    /// (those [`WorkloadPlan::left_out`] included: each files a row with
    /// the reason in every round).
    pub servers: Vec<usize>,
    /// The servers of [`WorkloadPlan::servers`] that cannot speak its
    /// protocol, each with the reason (`does not speak h3: …`): they never
    /// run it, and the run and time estimates leave them out.
    pub left_out: Vec<(usize, String)>,
    /// Its steps, each with its offered load, warm-up and window.
    pub steps: Vec<StepParams>,
    /// The metric it is judged by.
    pub metric: Metric,
    /// Rounds per step: the fewest (before the interim look) and the most.
    pub rounds: (u32, u32),
    /// Runs per server and round (slices; a capacity search counts
    /// [`SEARCH_RUNS`]).
    pub runs_per_round: u64,
    /// Estimated seconds of one round of all its steps and servers.
    pub round_seconds: f64,
    /// It asks for packet loss (`loss_pct`).
    pub lossy: bool,
    /// Why it runs nothing here (its packet loss cannot be injected: see
    /// [`StudyPlan::without_packet_loss`]); None: it runs.
    pub skipped: Option<String>,
}

impl WorkloadPlan {
    /// Why server `i` (an index into [`StudyPlan::servers`]) is left out of
    /// this workload (None: it runs it).
    pub fn left_out_reason(&self, i: usize) -> Option<&str> {
        self.left_out
            .iter()
            .find(|(x, _)| *x == i)
            .map(|(_, why)| why.as_str())
    }
}

/// The seconds of extra rounds the sequential design may spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// A fixed number of seconds (`--budget`, `[protocol] budget_s`); 0
    /// turns the second phase off.
    Seconds(f64),
    /// As long as the first rounds took (neither sets one).
    AsLongAsFirstRounds,
}

/// Where the servers and the load generator run.
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    /// The servers' cores.
    pub server_cores: Vec<usize>,
    /// The load generator's cores.
    pub client_cores: Vec<usize>,
    /// What was changed or shared, in words.
    pub notes: Vec<String>,
}

impl StudyPlan {
    /// The plan of `study`: `quick` is `--quick` (recorded in the protocol),
    /// `budget_s` the command line's `--budget` (overriding the file's),
    /// `speaks` who speaks which protocol (`servers::speaks`).
    pub fn new(study: &StudyFile, quick: bool, budget_s: Option<f64>, speaks: Speaks) -> StudyPlan {
        let protocol = rounds::protocol(study, quick);
        let servers = expand_servers(study);
        let workloads = study
            .workloads
            .iter()
            .map(|w| workload_plan(study, &protocol, &servers, w, speaks))
            .collect();
        let budget = match budget_s.or(study.protocol.budget_s) {
            Some(b) => Budget::Seconds(b.max(0.0)),
            None => Budget::AsLongAsFirstRounds,
        };
        let (server_cores, client_cores, notes) = resolve_pinning(study);
        StudyPlan {
            seed_given: study.protocol.seed.is_some(),
            protocol,
            servers,
            workloads,
            tls: study.tls,
            budget,
            pinning: Pinning {
                server_cores,
                client_cores,
                notes,
            },
            baseline: study.compare.baseline.clone(),
            questions: study.questions.clone(),
        }
    }

    /// The workload named `name`.
    pub fn workload(&self, name: &str) -> Option<&WorkloadPlan> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// The servers of workload `wi`.
    pub fn servers_of(&self, wi: usize) -> impl Iterator<Item = &ServerInstance> {
        self.workloads[wi]
            .servers
            .iter()
            .filter_map(|&i| self.servers.get(i))
    }

    /// Load runs at the fewest rounds and at the most (a capacity search
    /// counted as [`SEARCH_RUNS`] runs).
    pub fn runs_range(&self) -> (u64, u64) {
        self.workloads.iter().fold((0, 0), |(lo, hi), w| {
            (
                lo + w.runs_per_round * u64::from(w.rounds.0),
                hi + w.runs_per_round * u64::from(w.rounds.1),
            )
        })
    }

    /// Estimated seconds of the first rounds (every step at its fewest).
    pub fn first_rounds_seconds(&self) -> f64 {
        self.workloads
            .iter()
            .map(|w| w.round_seconds * f64::from(w.rounds.0))
            .sum()
    }

    /// Seconds of extra rounds at most: the budget, or the first rounds'
    /// estimate when the budget is "as long as the first rounds"; 0 when
    /// no step can have more rounds than its fewest.
    pub fn extra_seconds(&self) -> f64 {
        if self.workloads.iter().all(|w| w.rounds.1 <= w.rounds.0) {
            return 0.0;
        }
        match self.budget {
            Budget::Seconds(b) => b,
            Budget::AsLongAsFirstRounds => self.first_rounds_seconds(),
        }
    }

    /// The plan where packet loss cannot be injected, for `why`: the
    /// workloads that ask for it are skipped (a row with the reason for
    /// each server), so they leave the run and time estimates.
    pub fn without_packet_loss(mut self, why: &str) -> StudyPlan {
        for w in self.workloads.iter_mut().filter(|w| w.lossy) {
            w.skipped = Some(loss_skip_reason(why));
            w.runs_per_round = 0;
            w.round_seconds = 0.0;
        }
        self
    }

    /// Estimated seconds of the whole study at most: the first rounds and
    /// the whole budget of extra rounds.
    pub fn longest_seconds(&self) -> f64 {
        self.first_rounds_seconds() + self.extra_seconds()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_speak(_: &ServerInstance, _: Protocol, _: bool) -> Result<(), String> {
        Ok(())
    }

    fn study(extra: &str) -> StudyFile {
        let text = format!(
            "name = \"t\"\n{extra}\n[[servers]]\nname = \"a\"\nkind = \"nginx\"\n[[servers]]\nname = \"b\"\nkind = \"h2o\"\n\
             [[servers]]\nname = \"c\"\nkind = \"lighttpd\"\n\
             [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\nservers = [\"a\", \"b\"]\n\
             [[workloads]]\nname = \"v\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\nslices = 2\n"
        );
        crate::spec::parse(&text, "t.toml").expect("study")
    }

    #[test]
    fn each_workload_knows_its_servers_steps_and_runs() {
        let s = study("");
        let p = StudyPlan::new(&s, false, None, all_speak);
        assert_eq!(p.servers.len(), 3);
        assert_eq!(p.workloads[0].servers, vec![0, 1]);
        assert_eq!(p.workloads[1].servers, vec![0, 1, 2]);
        let names: Vec<&str> = p.servers_of(0).map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        // Two servers × one step, and three servers × two slices.
        assert_eq!(p.workloads[0].runs_per_round, 2);
        assert_eq!(p.workloads[1].runs_per_round, 6);
        let (lo, hi) = p.runs_range();
        let (min, max) = p.workloads[0].rounds;
        assert_eq!(lo, 8 * u64::from(min));
        assert_eq!(hi, 8 * u64::from(max));
    }

    #[test]
    fn a_loss_workloads_runs_are_estimated_with_a_retransmission_timeout_more() {
        let p = StudyPlan::new(&study(""), false, None, all_speak);
        let mut s = study("");
        s.workloads[1].loss_pct = Some(1.0);
        let q = StudyPlan::new(&s, false, None, all_speak);
        // Three servers × two slices, a tail each.
        let more = q.workloads[1].round_seconds - p.workloads[1].round_seconds;
        assert!((more - 6.0 * LOSS_TAIL_S).abs() < 1e-9, "{more}");
        assert_eq!(q.workloads[0].round_seconds, p.workloads[0].round_seconds);
        // Where the loss cannot be injected, the workload runs nothing.
        let r = StudyPlan::new(&s, false, None, all_speak).without_packet_loss("needs root");
        assert_eq!(r.workloads[1].round_seconds, 0.0);
        assert_eq!(
            r.runs_range(),
            (
                2 * u64::from(r.workloads[0].rounds.0),
                2 * u64::from(r.workloads[0].rounds.1)
            )
        );
        assert!(r.workloads[1]
            .skipped
            .as_deref()
            .is_some_and(|w| w.ends_with("needs root")));
        assert_eq!(r.workloads[0].skipped, None);
    }

    #[test]
    fn the_budget_comes_from_the_command_line_then_the_file() {
        let s = study("[protocol]\nbudget_s = 40\n");
        assert_eq!(
            StudyPlan::new(&s, false, None, all_speak).budget,
            Budget::Seconds(40.0)
        );
        assert_eq!(
            StudyPlan::new(&s, false, Some(0.0), all_speak).budget,
            Budget::Seconds(0.0)
        );
        let p = StudyPlan::new(&study(""), false, None, all_speak);
        assert_eq!(p.budget, Budget::AsLongAsFirstRounds);
    }

    #[test]
    fn the_longest_estimate_adds_the_budget() {
        let s = study("[protocol]\nbudget_s = 40\n");
        let p = StudyPlan::new(&s, false, None, all_speak);
        let first = p.first_rounds_seconds();
        assert!(first > 0.0);
        assert!((p.longest_seconds() - (first + 40.0)).abs() < 1e-9);
        let none = StudyPlan::new(&s, false, Some(0.0), all_speak);
        assert!((none.longest_seconds() - first).abs() < 1e-9);
        let as_long = StudyPlan::new(&study(""), false, None, all_speak);
        assert!((as_long.longest_seconds() - 2.0 * first).abs() < 1e-9);
    }

    #[test]
    fn a_given_seed_is_kept_and_a_missing_one_drawn() {
        let s = study("[protocol]\nseed = 7\n");
        let p = StudyPlan::new(&s, false, None, all_speak);
        assert!(p.seed_given);
        assert_eq!(p.protocol.seed, 7);
        assert!(!StudyPlan::new(&study(""), false, None, all_speak).seed_given);
    }

    /// Only httplab speaks HTTP/3, and only over TLS.
    fn only_httplab_speaks_h3(inst: &ServerInstance, p: Protocol, tls: bool) -> Result<(), String> {
        match p {
            Protocol::H3 if !tls => Err("needs TLS".into()),
            Protocol::H3 if inst.spec.kind != crate::spec::ServerKind::Httplab => {
                Err("no QUIC".into())
            }
            _ => Ok(()),
        }
    }

    #[test]
    fn a_server_that_cannot_speak_a_workload_is_left_out_of_its_estimate() {
        let text = "name = \"t\"\ntls = true\n\
                    [[servers]]\nname = \"mine\"\nkind = \"httplab\"\n\
                    [[servers]]\nname = \"peer\"\nkind = \"nginx\"\n\
                    [[workloads]]\nname = \"w3\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\nprotocol = \"h3\"\n\
                    [[workloads]]\nname = \"w1\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\n";
        let s = crate::spec::parse(text, "t.toml").expect("study");
        let p = StudyPlan::new(&s, false, None, only_httplab_speaks_h3);
        assert!(p.tls);
        let (w3, w1) = (&p.workloads[0], &p.workloads[1]);
        // Both servers are the h3 workload's (the left-out one files a row
        // with the reason), but only httplab runs it.
        assert_eq!(w3.servers, vec![0, 1]);
        assert_eq!(
            w3.left_out,
            vec![(1, "does not speak h3: no QUIC".to_string())]
        );
        assert_eq!(w3.left_out_reason(1), Some("does not speak h3: no QUIC"));
        assert_eq!(w3.left_out_reason(0), None);
        assert!(w1.left_out.is_empty());
        assert_eq!(w3.runs_per_round, 1);
        assert_eq!(w1.runs_per_round, 2);
        // The same steps: one server's round is half of two servers'.
        assert!((2.0 * w3.round_seconds - w1.round_seconds).abs() < 1e-9);
        let (min, max) = w3.rounds;
        assert_eq!(p.runs_range(), (3 * u64::from(min), 3 * u64::from(max)));
        let expected = 1.5 * w1.round_seconds * f64::from(min);
        assert!((p.first_rounds_seconds() - expected).abs() < 1e-9);
    }
}
