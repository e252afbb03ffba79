//! The three HTML reports, made from small synthetic inputs in a temporary
//! directory and opened by headless Chromium (`httplab_skip::chromium`): the
//! study's index.html, `httplab compare --html` and `httplab report` (a
//! sweep; a study's results.json). Each page logs nothing to the console,
//! loads no file but itself, and opens with its picture: the forest plot
//! with one mark per comparison (a sweep: its first figure).
//!
//! Chromium missing: the test fails when CI=true and is skipped (with a
//! message) otherwise.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use httplab_model as m;
use httplab_report::synth::{self, SynthServer};
use httplab_skip::chromium;

const LIMIT: Duration = Duration::from_secs(120);

/// A run of a synthetic server at a fixed rate.
fn run(name: &str, base_ms: f64, seed: u64) -> m::RunResult {
    let mut s = SynthServer::new(name, 8_000.0, base_ms);
    s.seed = seed;
    synth::run(&s, 2_000.0, 1, 2.0)
}

fn cell(w: &str, step: Option<&str>, server: &str, mean: f64) -> m::Cell {
    let metric = m::MetricKey::Known(m::Metric::ReplyRate);
    let estimate = m::Estimate {
        n: 4,
        mean,
        median: mean,
        stddev: mean * 0.01,
        ci_low: Some(mean * 0.98),
        ci_high: Some(mean * 1.02),
    };
    m::Cell {
        workload: w.into(),
        step: step.map(String::from),
        server: server.into(),
        n: 4,
        metric: metric.clone(),
        metrics: BTreeMap::from([(metric, estimate)]),
        ..Default::default()
    }
}

fn verdict(
    w: &str,
    step: Option<&str>,
    outcome: m::VerdictOutcome,
    ratio: f64,
    ci: [f64; 2],
) -> m::StudyVerdict {
    let winner = (outcome == m::VerdictOutcome::Winner).then(|| {
        if ratio >= 1.0 {
            "httplab".to_string()
        } else {
            "nginx".to_string()
        }
    });
    m::StudyVerdict {
        workload: w.into(),
        step: step.map(String::from),
        metric: m::MetricKey::Known(m::Metric::ReplyRate),
        outcome: Some(outcome),
        winner,
        leader: Some("httplab".into()),
        runner_up: Some("nginx".into()),
        ratio: Some(ratio),
        ratio_ci: Some(ci),
        ratio_ci_level: Some(0.9875),
        pairs: 4,
        delta: Some(0.05),
        note: format!("{w}: a synthetic verdict"),
        ..Default::default()
    }
}

/// Two servers, a stepped and a plain workload, four verdicts (one of each outcome).
fn study() -> m::StudyResult {
    let mut runs = Vec::new();
    for (w, step) in [
        ("small", Some("100")),
        ("small", Some("200")),
        ("large", None),
    ] {
        for (k, server) in ["httplab", "nginx"].into_iter().enumerate() {
            let mut r = run(server, 0.5 + k as f64, 3 + k as u64);
            r.config.facts.study.step = step.map(String::from);
            runs.push(m::StudyRun {
                workload: w.into(),
                server: server.into(),
                step: step.map(String::from),
                status: "ok".into(),
                run: Some(r),
                ..Default::default()
            });
        }
    }
    m::StudyResult {
        schema: m::STUDY_SCHEMA.into(),
        name: "forest-demo".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        runs,
        protocol: Some(m::Protocol {
            alpha: 0.05,
            min_effect: 0.05,
            min_repetitions: 4,
            max_repetitions: 4,
            ..Default::default()
        }),
        cells: vec![
            cell("small", Some("100"), "httplab", 2_400.0),
            cell("small", Some("100"), "nginx", 2_000.0),
            cell("small", Some("200"), "httplab", 2_010.0),
            cell("small", Some("200"), "nginx", 2_000.0),
            cell("large", None, "httplab", 300.0),
            cell("large", None, "nginx", 310.0),
        ],
        verdicts: vec![
            verdict(
                "small",
                Some("100"),
                m::VerdictOutcome::Winner,
                1.2,
                [1.1, 1.3],
            ),
            verdict(
                "small",
                Some("200"),
                m::VerdictOutcome::Equivalent,
                1.005,
                [0.99, 1.02],
            ),
            verdict(
                "large",
                None,
                m::VerdictOutcome::Inconclusive,
                0.97,
                [0.85, 1.1],
            ),
            verdict("large", None, m::VerdictOutcome::Winner, 0.8, [0.7, 0.9]),
        ],
        ..Default::default()
    }
}

/// Opens `page` in Chromium: no console message, nothing loaded but the page; the DOM.
fn open(bin: &Path, profile: &Path, page: &Path) -> String {
    let url = format!("file://{}", page.display());
    let o = chromium::run(bin, profile, &["--dump-dom".to_string()], &url, LIMIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let console = o.console();
    assert!(
        console.is_empty(),
        "{}: console messages:\n{}",
        page.display(),
        console.join("\n")
    );
    assert_eq!(o.loaded_files(), [url], "{}: files loaded", page.display());
    assert!(o.stdout.contains("</html>"), "{}: no DOM", page.display());
    o.stdout
}

/// The forest plot is the DOM's first picture, with `marks` marks, before `then`.
fn opens_with_forest(dom: &str, marks: usize, then: &str, what: &str) {
    let svg = dom.find("<svg").unwrap_or_else(|| panic!("{what}: no svg"));
    assert!(
        dom[svg..].starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"forest\""),
        "{what}: the first picture is not the forest plot"
    );
    let end = svg + dom[svg..].find("</svg>").expect("svg end");
    let forest = &dom[svg..end];
    assert_eq!(
        forest.matches("<g class=\"mark ").count(),
        marks,
        "{what}: marks"
    );
    assert!(forest.contains("class=\"band\""), "{what}: no band");
    assert!(
        dom.find(then).is_some_and(|t| t > end),
        "{what}: {then} does not follow the picture"
    );
}

fn httplab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args(args)
        .output()
        .expect("run httplab")
}

/// `httplab compare --json --html` of three synthetic runs a side (NEW slower): the page and
/// the number of comparisons with a ratio.
fn compare_page(dir: &Path) -> (std::path::PathBuf, usize) {
    let mut sides = Vec::new();
    for (side, base_ms) in [("base", 0.5), ("new", 3.0)] {
        let files: Vec<String> = (0..3)
            .map(|i| {
                let p = dir.join(format!("{side}{i}.json"));
                let doc = serde_json::to_string(&run("srv", base_ms, 10 + i)).expect("json");
                std::fs::write(&p, doc).expect("write run");
                p.display().to_string()
            })
            .collect();
        sides.push(files.join(","));
    }
    let page = dir.join("compare.html");
    let o = httplab(&[
        "compare",
        &sides[0],
        &sides[1],
        "--json",
        "--html",
        &page.display().to_string(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "compare: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("compare json");
    let with_ratio = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["ratio"].is_number())
        .count();
    assert!(with_ratio > 0, "no comparison with a ratio");
    (page, with_ratio)
}

#[test]
fn chromium_opens_every_report_with_its_picture() {
    let Some(bin) = chromium::find() else {
        return httplab_skip::skip(
            "chromium_opens_every_report_with_its_picture: chromium not found (set HTTPLAB_CHROMIUM or install the `chromium` package)",
        );
    };
    let d = tempfile::tempdir().expect("tmp");
    let res = study();

    // The study's own report: the forest plot, then the servers × workloads table, then the
    // verdicts in words.
    let out = d.path().join("study");
    httplab_study::render::report::write_all(&res, None, &out, false).expect("study report");
    let dom = open(&bin, &d.path().join("p1"), &out.join("index.html"));
    opens_with_forest(&dom, 4, "<table class=\"overview\"", "study report");
    let table = dom.find("<table class=\"overview\"").expect("table");
    assert!(dom.find("id=\"summary\"").is_some_and(|v| v > table));
    assert_eq!(dom.matches("<g class=\"mark worse\"").count(), 1);

    // `httplab report` of the study's results.json: its verdicts' forest plot first.
    let rep = d.path().join("report-study");
    let o = httplab(&[
        "report",
        &out.join("results.json").display().to_string(),
        "-o",
        &rep.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = open(&bin, &d.path().join("p2"), &rep.join("index.html"));
    opens_with_forest(&dom, 4, "Study verdicts</h2>", "httplab report of a study");

    // `httplab report` of a sweep: it opens with Figure 1, reply rate against demanded rate.
    let sweep = synth::sweep(
        &[SynthServer::new("event", 6_000.0, 0.4)],
        &[1_000.0, 3_000.0, 5_000.0, 7_000.0],
        1,
        2.0,
    );
    let sw = d.path().join("report-sweep");
    httplab_report::render_report(&[m::Document::Sweep(Box::new(sweep))], &sw).expect("render");
    let dom = open(&bin, &d.path().join("p3"), &sw.join("index.html"));
    let fig = dom.find("<figure id=\"fig-1\"").expect("figure 1");
    assert!(dom.find("<svg").is_some_and(|s| s > fig));
    assert!(dom.find("class=\"findings\"").is_some_and(|f| f > fig));

    // `httplab compare --html`: one mark per comparison with a ratio, before the table.
    let (page, marks) = compare_page(d.path());
    let dom = open(&bin, &d.path().join("p4"), &page);
    opens_with_forest(&dom, marks, "<table", "compare report");
}
