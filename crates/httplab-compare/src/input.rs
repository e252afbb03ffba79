//! Result files → one side of a comparison: values per cell and metric, one per run.
//!
//! A cell is what is compared on its own: the one load of run documents (every run of every
//! file, repeats included), a sweep target's step (matched by demanded rate) plus the target's
//! highest sustained rate, or a study's (workload, step, server).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use httplab_model::{Document, RunResult, StudyResult, SweepResult};

use crate::metric::{Metric, Registered};

/// What kind of documents a side holds (both sides must hold the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `httplab.run/1` (`httplab load`, possibly `--repeat`).
    Run,
    /// `httplab.sweep/1`.
    Sweep,
    /// `httplab.study/*`.
    Study,
}

impl Kind {
    /// "load result", "sweep result", "study result".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "load result",
            Kind::Sweep => "sweep result",
            Kind::Study => "study result",
        }
    }
}

/// A count metric of one cell: events and their exposure summed over the runs (for the
/// errors: failed calls of attempted calls, [`httplab_model::metric`]'s definition).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Events (failed calls) over every run.
    pub events: u64,
    /// Their exposure (attempted calls) over every run.
    pub exposure: u64,
    /// Runs counted (runs with at least one call).
    pub runs: usize,
}

/// The values of one cell: per metric, one value per run, or the counts summed over the runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellValues {
    /// Values by metric, each with its session.
    pub values: BTreeMap<Metric, Vec<Valued>>,
    /// Count metrics ([`Metric::is_count`]): events and exposure over every run.
    pub counts: BTreeMap<Metric, Counted>,
    /// Runs the load generator limited (their client figures are bounds).
    pub client_bound_runs: usize,
    /// Runs in the cell.
    pub runs: usize,
    /// Relative step of the grid the values sit on (a sweep's rates), when they do.
    pub resolution: Option<f64>,
}

/// One value of a metric and the session it was measured in: the index of the result file it
/// came from (a file is one session, `--repeat` runs included).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Valued {
    /// The session.
    pub session: u32,
    /// The value.
    pub value: f64,
}

impl CellValues {
    /// Adds one value of `m` measured in `session`.
    pub fn push_value(&mut self, m: Metric, value: f64, session: u32) {
        self.values
            .entry(m)
            .or_default()
            .push(Valued { session, value });
    }

    /// One metric's values, in the order they were read.
    pub fn values_of(&self, m: &Metric) -> Vec<f64> {
        self.values
            .get(m)
            .map_or_else(Vec::new, |v| v.iter().map(|x| x.value).collect())
    }

    /// One metric's values grouped by session, sessions in file order.
    pub fn by_session(&self, m: &Metric) -> Vec<Vec<f64>> {
        let mut groups: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for x in self.values.get(m).into_iter().flatten() {
            groups.entry(x.session).or_default().push(x.value);
        }
        groups.into_values().collect()
    }

    fn push_run(&mut self, r: &RunResult, session: u32) {
        self.runs += 1;
        if r.self_check.client_bound {
            self.client_bound_runs += 1;
        }
        for m in Registered::COMPARED_RUN {
            if m.is_count() {
                if let Some(k) = m.counts_of_run(r) {
                    let c = self.counts.entry(Metric::Known(m)).or_default();
                    c.events = c.events.saturating_add(k.events);
                    c.exposure = c.exposure.saturating_add(k.exposure);
                    c.runs += 1;
                }
            } else if let Some(v) = m.of_run(r) {
                self.push_value(Metric::Known(m), v, session);
            }
        }
    }

    /// True when the cell has `m`, as values or as counts.
    pub fn has(&self, m: &Metric) -> bool {
        self.values.contains_key(m) || self.counts.contains_key(m)
    }

    /// Every metric the cell has.
    pub fn metrics(&self) -> impl Iterator<Item = &Metric> {
        self.values.keys().chain(self.counts.keys())
    }
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    /// The kind of its documents.
    pub kind: Kind,
    /// The files read.
    pub files: Vec<String>,
    /// Cells by name ("" for run documents: they are one cell).
    pub cells: BTreeMap<String, CellValues>,
    /// Cell names in the order first seen (a sweep's steps by rate, a study's workloads).
    pub order: Vec<String>,
    /// Load settings seen (rate, mode), to warn when the sides ran different loads.
    pub shapes: Vec<String>,
}

/// Expands FILE, DIR (its `*.json`, sorted) and comma-separated lists of them.
pub fn expand(arg: &str) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for part in arg.split(',').filter(|p| !p.is_empty()) {
        let p = Path::new(part);
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json") && f.is_file())
                .collect();
            files.sort();
            if files.is_empty() {
                bail!("{}: no .json result files in this directory", p.display());
            }
            out.extend(files);
        } else {
            out.push(p.to_path_buf());
        }
    }
    if out.is_empty() {
        bail!("no result file given");
    }
    Ok(out)
}

/// Reads a result file.
pub fn read(path: &Path) -> Result<Document> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Document::from_json(&text)
        .map_err(|e| anyhow::anyhow!("{}: not an httplab result: {e}", path.display()))
}

impl Side {
    /// The cell `key`, created (and put in order) when new.
    fn cell(&mut self, key: &str) -> &mut CellValues {
        if !self.cells.contains_key(key) {
            self.order.push(key.to_string());
        }
        self.cells.entry(key.to_string()).or_default()
    }
}

fn kind_of(d: &Document) -> Kind {
    match d {
        Document::Run(_) => Kind::Run,
        Document::Sweep(_) => Kind::Sweep,
        Document::Study(_) => Kind::Study,
    }
}

/// Reads every file of one side; all must be of one kind.
pub fn side(paths: &[PathBuf]) -> Result<Side> {
    let mut docs = Vec::new();
    for p in paths {
        docs.push((p.display().to_string(), read(p)?));
    }
    side_of(docs)
}

/// One side from documents already read (`(name, document)`).
pub fn side_of(docs: Vec<(String, Document)>) -> Result<Side> {
    let Some(kind) = docs.first().map(|d| kind_of(&d.1)) else {
        bail!("no result file given");
    };
    let mut s = Side {
        kind,
        files: Vec::new(),
        cells: BTreeMap::new(),
        order: Vec::new(),
        shapes: Vec::new(),
    };
    for (session, (name, d)) in (0u32..).zip(&docs) {
        if kind_of(d) != kind {
            bail!(
                "{name} is a {} but {} is a {}: give one kind of result per side",
                kind_of(d).name(),
                s.files.first().map_or("the first file", String::as_str),
                kind.name()
            );
        }
        s.files.push(name.clone());
        match d {
            Document::Run(r) => add_run(&mut s, r, session),
            Document::Sweep(w) => add_sweep(&mut s, w, session),
            Document::Study(st) => add_study(&mut s, st, session),
        }
    }
    Ok(s)
}

fn shape(r: &RunResult) -> String {
    let rate = r
        .config
        .rate
        .map_or_else(|| "no fixed rate".to_string(), |x| format!("rate {x}/s"));
    format!("{:?}, {rate}", r.config.mode).to_lowercase()
}

fn add_run(s: &mut Side, r: &RunResult, session: u32) {
    for run in r.runs() {
        s.cell("").push_run(run, session);
        let sh = shape(run);
        if !s.shapes.contains(&sh) {
            s.shapes.push(sh);
        }
    }
}

/// Sweep cells: "TARGET @ RATE/s" per step (one value per sweep file), and "TARGET" for the
/// highest sustained rate of the target's saturation analysis.
fn add_sweep(s: &mut Side, w: &SweepResult, session: u32) {
    for t in &w.targets {
        for step in &t.steps {
            let key = format!("{} @ {}/s", t.label, step.demanded_rate);
            s.cell(&key).push_run(&step.run, session);
        }
        let rates: Vec<f64> = t.steps.iter().map(|x| x.demanded_rate).collect();
        let cell = s.cell(&t.label);
        if let Some(max) = t.saturation.max_sustainable_rate {
            // The highest sustained rate is one of the steps' rates: a value on their grid.
            if let Some(step) = grid_step(&rates, max) {
                cell.resolution = Some(cell.resolution.map_or(step, |r: f64| r.max(step)));
            }
            cell.push_value(Metric::MAX_SUSTAINABLE, max, session);
            cell.runs += 1;
            if t.saturation.client_bound {
                cell.client_bound_runs += 1;
            }
        }
    }
}

/// The relative gap between `x` and the nearest other rate of the grid.
fn grid_step(rates: &[f64], x: f64) -> Option<f64> {
    rates
        .iter()
        .filter(|r| r.is_finite() && (**r - x).abs() > 1e-9)
        .map(|r| (r - x).abs() / x)
        .filter(|g| g.is_finite() && *g > 0.0)
        .min_by(f64::total_cmp)
}

/// Study cells: "WORKLOAD[/STEP] SERVER", values from the study's load runs in round order;
/// a cell without load runs (a capacity search) takes its per-round values from the study's
/// own cell (`Cell::values`; its count metrics aside: per-run rates are not counts).
fn add_study(s: &mut Side, st: &StudyResult, session: u32) {
    let name = |w: &str, step: &Option<String>, server: &str| match step {
        Some(p) => format!("{w}/{p} {server}"),
        None => format!("{w} {server}"),
    };
    let mut runs: Vec<_> = st
        .runs
        .iter()
        .filter(|r| r.status.is_ok() && r.run.is_some())
        .collect();
    runs.sort_by_key(|r| r.repetition);
    let mut from_runs = std::collections::BTreeSet::new();
    for r in runs {
        if let Some(run) = &r.run {
            let key = name(&r.workload, &r.step, &r.server);
            s.cell(&key).push_run(run, session);
            from_runs.insert(key);
        }
    }
    for c in &st.cells {
        let key = name(&c.workload, &c.step, &c.server);
        if from_runs.contains(&key) {
            continue;
        }
        let cell = s.cell(&key);
        for (k, vs) in &c.values {
            let m = Metric::from_study_key(k);
            if m.is_count() {
                continue;
            }
            for v in vs {
                cell.push_value(m.clone(), *v, session);
            }
        }
        cell.runs += c.n as usize;
        cell.client_bound_runs += c.client_bound_runs as usize;
    }
}

/// Renames the single target of a sweep side to the other side's single target, so two
/// sweeps of differently labelled builds compare. Returns a note when it did.
pub fn align_single_targets(base: &Side, new: &mut Side) -> Option<String> {
    if base.kind != Kind::Sweep {
        return None;
    }
    let targets = |s: &Side| -> Vec<String> {
        s.cells
            .keys()
            .filter(|k| !k.contains(" @ "))
            .cloned()
            .collect()
    };
    let (bt, nt) = (targets(base), targets(new));
    if bt.len() != 1 || nt.len() != 1 || bt == nt {
        return None;
    }
    let (from, to) = (&nt[0], &bt[0]);
    let rename = |k: &str| -> String {
        if k == from {
            to.clone()
        } else if let Some(rest) = k.strip_prefix(&format!("{from} @ ")) {
            format!("{to} @ {rest}")
        } else {
            k.to_string()
        }
    };
    new.cells = std::mem::take(&mut new.cells)
        .into_iter()
        .map(|(k, v)| (rename(&k), v))
        .collect();
    new.order = new.order.iter().map(|k| rename(k)).collect();
    Some(format!(
        "the sweeps' targets have different labels: NEW's \"{from}\" is compared with BASE's \"{to}\""
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_model::{RUN_SCHEMA, STUDY_SCHEMA};

    fn run(replies: u64) -> RunResult {
        let mut r = RunResult {
            schema: RUN_SCHEMA.into(),
            ..Default::default()
        };
        r.totals.replies = replies;
        r.totals.test_duration_s = 1.0;
        r
    }

    #[test]
    fn repeats_are_runs_of_the_one_cell() {
        let mut r = run(100);
        r.repeats = vec![run(110), run(120)];
        let s = side_of(vec![
            ("a".into(), Document::Run(Box::new(r))),
            ("b".into(), Document::Run(Box::new(run(90)))),
        ])
        .expect("side");
        assert_eq!(s.kind, Kind::Run);
        let c = &s.cells[""];
        assert_eq!(c.runs, 4);
        assert_eq!(
            c.values_of(&Metric::REPLY_RATE),
            vec![100.0, 110.0, 120.0, 90.0]
        );
        // No latency histogram: no p50 values rather than zeros.
        assert!(!c.values.contains_key(&Metric::P50));
        // Errors are counted over every run's calls.
        let errors = c.counts[&Metric::ERRORS];
        assert_eq!((errors.events, errors.exposure, errors.runs), (0, 420, 4));
        assert!(!c.values.contains_key(&Metric::ERRORS) && c.has(&Metric::ERRORS));
    }

    fn study(replies: &[u64], capacity: &[f64]) -> StudyResult {
        use httplab_model::{Cell, RunStatus, StudyRun};
        let runs = replies
            .iter()
            .enumerate()
            .map(|(i, &n)| StudyRun {
                workload: "static".into(),
                server: "httplab".into(),
                repetition: i as u32,
                step: Some("rate=100".into()),
                status: RunStatus::Ok,
                run: Some(run(n)),
                ..Default::default()
            })
            .collect();
        let cap = Cell {
            workload: "capacity".into(),
            server: "httplab".into(),
            n: capacity.len() as u32,
            metric: "max_rate".into(),
            values: BTreeMap::from([
                ("max_rate".into(), capacity.to_vec()),
                ("error_pct".into(), vec![0.0; capacity.len()]),
            ]),
            ..Default::default()
        };
        StudyResult {
            schema: STUDY_SCHEMA.into(),
            runs,
            cells: vec![cap],
            ..Default::default()
        }
    }

    #[test]
    fn study_cells_come_from_runs_or_from_the_cells_values() {
        let s = side_of(vec![(
            "s.json".into(),
            Document::Study(Box::new(study(&[100, 101, 99], &[5000.0, 5100.0]))),
        )])
        .expect("side");
        assert_eq!(s.kind, Kind::Study);
        let load = &s.cells["static/rate=100 httplab"];
        assert_eq!(
            load.values_of(&Metric::REPLY_RATE),
            vec![100.0, 101.0, 99.0]
        );
        let cap = &s.cells["capacity httplab"];
        assert_eq!(
            cap.values_of(&Metric::MAX_SUSTAINABLE),
            vec![5000.0, 5100.0]
        );
        // A study cell's per-run error rates are not counts of calls: not compared.
        assert!(!cap.has(&Metric::ERRORS));
    }

    #[test]
    fn sweeps_compare_per_step_and_by_saturation_and_align_one_target() {
        use httplab_model::{Saturation, SweepStep, SweepTarget, SWEEP_SCHEMA};
        let sweep = |label: &str, max: f64| SweepResult {
            schema: SWEEP_SCHEMA.into(),
            targets: vec![SweepTarget {
                label: label.into(),
                steps: [100.0, 200.0]
                    .iter()
                    .map(|&rate| SweepStep {
                        demanded_rate: rate,
                        run: run(rate as u64),
                    })
                    .collect(),
                saturation: Saturation {
                    max_sustainable_rate: Some(max),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        };
        let docs = |label: &str| {
            vec![
                (
                    "a".to_string(),
                    Document::Sweep(Box::new(sweep(label, 900.0))),
                ),
                (
                    "b".to_string(),
                    Document::Sweep(Box::new(sweep(label, 950.0))),
                ),
            ]
        };
        let base = side_of(docs("old")).expect("base");
        let mut new = side_of(docs("new")).expect("new");
        assert_eq!(
            base.cells["old @ 200/s"].values_of(&Metric::REPLY_RATE),
            vec![200.0, 200.0]
        );
        assert_eq!(
            base.cells["old"].values_of(&Metric::MAX_SUSTAINABLE),
            vec![900.0, 950.0]
        );
        let note = align_single_targets(&base, &mut new).expect("aligned");
        assert!(
            note.contains("NEW's \"new\" is compared with BASE's \"old\""),
            "{note}"
        );
        assert!(new.cells.contains_key("old @ 100/s") && new.cells.contains_key("old"));
    }

    #[test]
    fn mixed_kinds_are_refused() {
        let study = StudyResult {
            schema: STUDY_SCHEMA.into(),
            ..Default::default()
        };
        let e = side_of(vec![
            ("a.json".into(), Document::Run(Box::new(run(1)))),
            ("s.json".into(), Document::Study(Box::new(study))),
        ])
        .expect_err("mixed");
        let text = e.to_string();
        assert!(
            text.contains("s.json is a study result but a.json is a load result"),
            "{text}"
        );
    }
}
