//! Written answers to a study's questions (`[[questions]]`): each piece of
//! evidence is a two-server comparison on one workload, judged with the same
//! statistics as the verdicts (a pairwise test, its ratio and 95 % CI), then
//! set against what the seed concluded.

use std::fmt::Write as _;

use httplab_model as m;
use httplab_stats as st;

use crate::rounds;
use crate::spec::{Evidence, Question, StudyFile};

/// What one comparison showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `server` is significantly better than `versus`.
    Better,
    /// `server` is significantly worse.
    Worse,
    /// No significant difference (or a figure was a client-bound bound).
    Unclear,
    /// No data.
    Missing,
}

/// The answers to every question of the study.
pub fn answer_all(study: &StudyFile, res: &m::StudyResult) -> Vec<m::Answer> {
    study
        .questions
        .iter()
        .map(|q| answer(study, res, q))
        .collect()
}

fn answer(study: &StudyFile, res: &m::StudyResult, q: &Question) -> m::Answer {
    let mut text = String::new();
    let mut agree = 0;
    let mut contradict = 0;
    let mut unclear = 0;
    for (ei, e) in q.evidence.iter().enumerate() {
        for (step, outcome, note) in compare(study, res, e, ei) {
            let at = match &step {
                Some(s) => format!("{} [{}]", e.workload, s),
                None => e.workload.clone(),
            };
            let _ = write!(text, "{at}: {note} ");
            match (e.seed_says.as_deref(), &outcome) {
                (Some("better"), Outcome::Better) | (Some("worse"), Outcome::Worse) => agree += 1,
                (Some("better"), Outcome::Worse) | (Some("worse"), Outcome::Better) => {
                    contradict += 1
                }
                (Some("same"), Outcome::Unclear) => agree += 1,
                (Some("same"), Outcome::Better | Outcome::Worse) => contradict += 1,
                (Some(_), Outcome::Unclear) => unclear += 1,
                _ => {}
            }
        }
    }
    let mut versus = String::new();
    if !q.seed_answer.is_empty() {
        let _ = write!(versus, "The seed concluded: {} ", q.seed_answer.trim());
    }
    let judged = agree + contradict + unclear;
    if judged > 0 {
        let _ = write!(
            versus,
            "Of {judged} comparison(s) the seed made a claim about, this run confirms {agree}, contradicts {contradict} and cannot decide {unclear} (no significant difference, or the client was the limit)."
        );
    }
    if contradict + unclear > 0 && !q.why_differ.is_empty() {
        let _ = write!(
            versus,
            " Why the answers can differ: {}",
            q.why_differ.trim()
        );
    }
    m::Answer {
        question: q.ask.clone(),
        answer: text.trim().to_string(),
        versus_seed: versus.trim().to_string(),
    }
}

/// The comparison of `e.server` with `e.versus` on every step of its workload.
pub fn compare(
    study: &StudyFile,
    res: &m::StudyResult,
    e: &Evidence,
    index: usize,
) -> Vec<(Option<String>, Outcome, String)> {
    let Some(w) = study.workloads.iter().find(|w| w.name == e.workload) else {
        return Vec::new();
    };
    let metric = e.metric.unwrap_or_else(|| rounds::primary_metric(study, w));
    let mut steps: Vec<Option<String>> = Vec::new();
    for c in res.cells.iter().filter(|c| c.workload == e.workload) {
        if !steps.contains(&c.step) {
            steps.push(c.step.clone());
        }
    }
    let seed = res.protocol.as_ref().map_or(0, |p| p.seed) ^ (index as u64 + 1);
    let alpha = res.protocol.as_ref().map_or(0.05, |p| p.alpha);
    let min_effect = res.protocol.as_ref().map_or(0.0, |p| p.min_effect);
    steps
        .into_iter()
        .map(|step| {
            let get = |name: &str| {
                res.cells
                    .iter()
                    .find(|c| c.workload == e.workload && c.step == step && c.server == name)
            };
            let (Some(a), Some(b)) = (get(&e.server), get(&e.versus)) else {
                return (
                    step,
                    Outcome::Missing,
                    "no results for one of the two servers.".into(),
                );
            };
            let va = values_for(a, metric.key());
            let vb = values_for(b, metric.key());
            if va.is_empty() || vb.is_empty() {
                return (
                    step,
                    Outcome::Missing,
                    "no results for one of the two servers.".into(),
                );
            }
            let samples = [
                st::Sample {
                    name: &a.server,
                    values: &va,
                    client_bound: a.client_bound,
                },
                st::Sample {
                    name: &b.server,
                    values: &vb,
                    client_bound: b.client_bound,
                },
            ];
            let better = if metric.higher_is_better() {
                st::Better::Higher
            } else {
                st::Better::Lower
            };
            let opts = st::VerdictOptions {
                alpha,
                resamples: 10_000,
                seed,
                min_effect,
            };
            let v = st::verdict(metric.key(), better, &samples, &opts);
            let outcome = match v.winner.as_deref() {
                Some(x) if x == e.server => Outcome::Better,
                Some(_) => Outcome::Worse,
                None => Outcome::Unclear,
            };
            (
                step,
                outcome,
                format!("{} ({}).", v.note.trim_end_matches('.'), metric.label()),
            )
        })
        .collect()
}

/// The per-repetition values of `metric` in a cell, in round order.
fn values_for(c: &m::Cell, metric: &str) -> Vec<f64> {
    c.values.get(metric).cloned().unwrap_or_default()
}
