//! Written answers to a study's questions (`[[questions]]`): each piece of
//! evidence is a two-server comparison on one workload, read from the study's
//! verdicts (the same family, so the same study-wide correction), then set
//! against what the seed concluded. A seed's "same" is confirmed only by
//! `equivalent`; `inconclusive` is "not settled by this run".

use std::fmt::Write as _;

use httplab_model as m;

use crate::plan::study_plan::StudyPlan;
use crate::spec::{Evidence, Question};

/// What one comparison showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `server` is significantly better than `versus`.
    Better,
    /// `server` is significantly worse.
    Worse,
    /// Equivalent within ±δ.
    Same,
    /// Not settled by this run (inconclusive, or a figure was a bound).
    Unclear,
    /// No data.
    Missing,
}

/// The answers to every question of the study.
pub fn answer_all(plan: &StudyPlan, res: &m::StudyResult) -> Vec<m::Answer> {
    plan.questions
        .iter()
        .map(|q| answer(plan, res, q))
        .collect()
}

fn answer(plan: &StudyPlan, res: &m::StudyResult, q: &Question) -> m::Answer {
    let mut text = String::new();
    let mut agree = 0;
    let mut contradict = 0;
    let mut smaller = 0;
    let mut unclear = 0;
    for e in &q.evidence {
        for (step, outcome, note) in compare(plan, res, e) {
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
                (Some("same"), Outcome::Same) => agree += 1,
                (Some("same"), Outcome::Better | Outcome::Worse) => contradict += 1,
                // Equivalent within ±δ does not say the seed's direction is wrong: the
                // difference is smaller than the seed's.
                (Some("better" | "worse"), Outcome::Same) => smaller += 1,
                (Some(_), Outcome::Unclear) => unclear += 1,
                _ => {}
            }
        }
    }
    let mut versus = String::new();
    if !q.seed_answer.is_empty() {
        let _ = write!(versus, "The seed concluded: {} ", q.seed_answer.trim());
    }
    let judged = agree + contradict + smaller + unclear;
    if judged > 0 {
        let smaller = if smaller > 0 {
            format!(", finds {smaller} smaller than the seed's difference (equivalent within ±δ)")
        } else {
            String::new()
        };
        let _ = write!(
            versus,
            "Of {judged} comparison(s) the seed made a claim about, this run confirms {agree}, contradicts {contradict}{smaller} and does not settle {unclear} (inconclusive: each says how large a difference it could have seen)."
        );
    }
    if contradict + smaller + unclear > 0 && !q.why_differ.is_empty() {
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
    plan: &StudyPlan,
    res: &m::StudyResult,
    e: &Evidence,
) -> Vec<(Option<String>, Outcome, String)> {
    let Some(w) = plan.workload(&e.workload) else {
        return Vec::new();
    };
    let metric = e.metric.unwrap_or(w.metric);
    let mut steps: Vec<Option<String>> = Vec::new();
    for c in res.cells.iter().filter(|c| c.workload == e.workload) {
        if !steps.contains(&c.step) {
            steps.push(c.step.clone());
        }
    }
    steps
        .into_iter()
        .map(|step| {
            let found = res.verdicts.iter().find(|v| {
                v.workload == e.workload
                    && v.step == step
                    && v.metric == metric
                    && ((v.leader.as_deref() == Some(&e.server)
                        && v.runner_up.as_deref() == Some(&e.versus))
                        || (v.leader.as_deref() == Some(&e.versus)
                            && v.runner_up.as_deref() == Some(&e.server)))
            });
            let Some(v) = found else {
                return (
                    step,
                    Outcome::Missing,
                    "no results for one of the two servers.".into(),
                );
            };
            let outcome = match (v.outcome(), v.winner.as_deref()) {
                (m::VerdictOutcome::Winner, Some(x)) if x == e.server => Outcome::Better,
                (m::VerdictOutcome::Winner, Some(_)) => Outcome::Worse,
                (m::VerdictOutcome::Equivalent, _) => Outcome::Same,
                _ => Outcome::Unclear,
            };
            (
                step,
                outcome,
                format!("{} ({}).", v.note.trim_end_matches('.'), metric.label()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equivalent_to_a_seeds_better_is_a_smaller_difference_not_a_contradiction() {
        let text = "name = \"t\"\n[[servers]]\nname = \"a\"\nkind = \"nginx\"\n[[servers]]\nname = \"b\"\nkind = \"h2o\"\n\
                    [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\nmetric = \"p50_ms\"\n\
                    [[questions]]\nask = \"Is a better?\"\nevidence = [ { workload = \"w\", server = \"a\", versus = \"b\", seed_says = \"better\" } ]\n";
        let study = crate::spec::parse(text, "t.toml").expect("study");
        let plan = StudyPlan::new(&study, false, None, crate::execute::servers::speaks);
        let mut res = m::StudyResult::default();
        res.cells.push(m::Cell {
            workload: "w".into(),
            server: "a".into(),
            ..m::Cell::default()
        });
        res.verdicts.push(m::StudyVerdict {
            workload: "w".into(),
            metric: "p50_ms".into(),
            outcome: Some(m::VerdictOutcome::Equivalent),
            leader: Some("a".into()),
            runner_up: Some("b".into()),
            note: "a and b are equivalent".into(),
            ..m::StudyVerdict::default()
        });
        let a = &answer_all(&plan, &res)[0];
        assert!(
            a.versus_seed
                .contains("confirms 0, contradicts 0, finds 1 smaller than the seed's difference"),
            "{}",
            a.versus_seed
        );
    }
}
