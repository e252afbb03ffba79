//! What a report draws, gathered from any mix of result documents: sweep
//! series (one per sweep target) and single runs.

use crate::analysis::{self, StepMetrics};
use httplab_model::{Document, RunResult, SweepStep, SweepTarget};

/// One sweep target, ready to draw.
#[derive(Debug, Clone)]
pub struct SweepSeries<'a> {
    /// Legend label.
    pub label: String,
    /// The target as stored.
    pub target: &'a SweepTarget,
    /// Steps sorted by demanded rate.
    pub steps: Vec<&'a SweepStep>,
    /// Metrics of `steps`, same order, judged with the target's SLO.
    pub metrics: Vec<StepMetrics>,
    /// Requests per connection (from the runs' config), for req/s conversions.
    pub num_calls: u64,
    /// The SLO the sweep was judged with, ms.
    pub slo_ms: f64,
}

impl SweepSeries<'_> {
    /// Max sustainable rate in requests per second, if any.
    pub fn max_req_rate(&self) -> Option<f64> {
        self.target
            .saturation
            .max_sustainable_rate
            .map(|r| r * self.num_calls as f64)
    }

    /// Knee in requests per second, if any.
    pub fn knee_req_rate(&self) -> Option<f64> {
        self.target
            .saturation
            .knee_rate
            .map(|r| r * self.num_calls as f64)
    }

    /// Steps whose generator flagged itself as the bottleneck.
    pub fn client_bound_steps(&self) -> usize {
        self.metrics.iter().filter(|m| m.client_bound).count()
    }
}

/// A single run, ready to draw.
#[derive(Debug, Clone)]
pub struct RunItem<'a> {
    /// Legend label.
    pub label: String,
    /// The run.
    pub run: &'a RunResult,
}

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub struct Collected<'a> {
    /// Sweep targets, in document order.
    pub sweeps: Vec<SweepSeries<'a>>,
    /// Single runs, in document order.
    pub runs: Vec<RunItem<'a>>,
    /// Command lines of the documents (for the methods section).
    pub commands: Vec<String>,
    /// Environments of the documents, deduplicated.
    pub environments: Vec<&'a httplab_model::Environment>,
    /// Verdicts of study documents (study name, verdict).
    pub verdicts: Vec<(&'a str, &'a httplab_model::StudyVerdict)>,
}

/// Builds a sweep series from a stored target.
pub fn sweep_series<'a>(label: String, target: &'a SweepTarget) -> SweepSeries<'a> {
    let mut steps: Vec<&SweepStep> = target.steps.iter().collect();
    steps.sort_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
    let slo_ms = if target.saturation.slo_ms > 0.0 {
        target.saturation.slo_ms
    } else {
        1000.0
    };
    let metrics = steps
        .iter()
        .map(|s| analysis::metrics(s.demanded_rate, &s.run, slo_ms))
        .collect();
    let num_calls = steps
        .iter()
        .find_map(|s| s.run.config.num_calls)
        .unwrap_or(1)
        .max(1);
    SweepSeries {
        label,
        target,
        steps,
        metrics,
        num_calls,
        slo_ms,
    }
}

fn run_label(run: &RunResult, index: usize) -> String {
    if !run.label.is_empty() {
        run.label.clone()
    } else if let Some(t) = run.config.targets.first() {
        t.clone()
    } else {
        format!("run {}", index + 1)
    }
}

/// Gathers sweep series and runs from documents, making labels unique.
pub fn collect(docs: &[Document]) -> Collected<'_> {
    let mut c = Collected::default();
    for doc in docs {
        match doc {
            Document::Run(r) => {
                // Every run of a `--repeat N` document, numbered; one run
                // keeps its plain label.
                let base = run_label(r, c.runs.len());
                let n = r.run_count();
                for (k, run) in r.runs().into_iter().enumerate() {
                    let label = if n > 1 {
                        format!("{base} #{}", k + 1)
                    } else {
                        base.clone()
                    };
                    c.runs.push(RunItem { label, run });
                }
                c.commands
                    .push(format!("httplab load {}", r.config.command_line.join(" ")));
                push_env(&mut c.environments, &r.environment);
            }
            Document::Sweep(s) => {
                for t in &s.targets {
                    let label = if t.label.is_empty() {
                        t.url.clone()
                    } else {
                        t.label.clone()
                    };
                    c.sweeps.push(sweep_series(label, t));
                }
                c.commands
                    .push(format!("httplab sweep {}", s.command_line.join(" ")));
                push_env(&mut c.environments, &s.environment);
            }
            Document::Study(st) => {
                for sr in &st.runs {
                    let base = format!("{} · {}", sr.server, sr.workload);
                    if let Some(r) = &sr.run {
                        let label = if st
                            .runs
                            .iter()
                            .filter(|o| o.server == sr.server && o.workload == sr.workload)
                            .count()
                            > 1
                        {
                            format!("{base} #{}", sr.repetition + 1)
                        } else {
                            base.clone()
                        };
                        c.runs.push(RunItem { label, run: r });
                    }
                    if let Some(sw) = &sr.sweep {
                        for t in &sw.targets {
                            let label = if sw.targets.len() > 1 {
                                format!("{base} · {}", t.label)
                            } else {
                                base.clone()
                            };
                            c.sweeps.push(sweep_series(label, t));
                        }
                    }
                }
                push_env(&mut c.environments, &st.environment);
                c.verdicts
                    .extend(st.verdicts.iter().map(|v| (st.name.as_str(), v)));
            }
        }
    }
    dedupe(c.runs.iter_mut().map(|r| &mut r.label));
    dedupe(c.sweeps.iter_mut().map(|s| &mut s.label));
    c
}

fn push_env<'a>(v: &mut Vec<&'a httplab_model::Environment>, e: &'a httplab_model::Environment) {
    if !v.iter().any(|x| **x == *e) {
        v.push(e);
    }
}

fn dedupe<'b>(labels: impl Iterator<Item = &'b mut String>) {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for l in labels {
        let n = seen.entry(l.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            *l = format!("{l} ({n})");
        }
    }
}
