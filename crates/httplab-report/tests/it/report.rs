//! `httplab report`: determinism (snapshot), XML validity of every SVG,
//! client-bound marking, error messages.

use crate::common;

use std::ffi::OsString;
use std::path::Path;

fn render(dir: &Path) -> httplab_report::ReportFiles {
    let docs = common::fixture_docs();
    let opts = httplab_report::ReportOptions {
        title: String::new(),
        sources: vec![
            "sweep.json".into(),
            "run.json".into(),
            "run-client-bound.json".into(),
        ],
    };
    httplab_report::render_report_with(&docs, dir, &opts).expect("render")
}

/// Replaces RFC 3339 timestamps by `<time>` (timings redacted).
fn redact(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let is_ts = i + 20 <= b.len()
            && b[i..i + 4].iter().all(u8::is_ascii_digit)
            && b[i + 4] == b'-'
            && b[i + 7] == b'-'
            && b[i + 10] == b'T'
            && b[i + 13] == b':';
        if is_ts {
            let mut j = i + 10;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b":.+-".contains(&b[j])) {
                j += 1;
            }
            out.push_str("<time>");
            i = j;
        } else {
            let ch = s[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// index.html with each inline SVG replaced by its length (the SVG files are
/// compared byte for byte between two renders instead).
fn html_skeleton(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("</svg>")
            .map(|e| start + e + 6)
            .unwrap_or(rest.len());
        out.push_str(&format!("<svg …{} bytes…/>", end - start));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    let actual = redact(actual);
    let update = std::env::var("HTTPLAB_UPDATE_SNAPSHOTS").as_deref() == Ok("1");
    if !path.exists() && httplab_skip::under_ci() && !update {
        panic!("snapshot {name} is missing (create it with HTTPLAB_UPDATE_SNAPSHOTS=1)");
    }
    if update || !path.exists() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("read snapshot");
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "snapshot {name} differs at line {}:\n expected: {:?}\n   actual: {:?}\n(rerun with HTTPLAB_UPDATE_SNAPSHOTS=1 if the change is intended)",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

#[test]
fn fixtures_are_current() {
    // The fixtures are what the synthetic builders produce: a change in the
    // builders must come with regenerated fixtures (HTTPLAB_UPDATE_FIXTURES=1).
    common::maybe_update_fixtures();
    for (name, text) in common::fixture_files() {
        let on_disk = std::fs::read_to_string(common::fixtures_dir().join(name)).expect(name);
        assert!(on_disk == text, "fixture {name} is stale");
    }
}

#[test]
fn report_is_deterministic_and_matches_snapshot() {
    let d1 = tempfile::tempdir().expect("tmp");
    let d2 = tempfile::tempdir().expect("tmp");
    let f1 = render(d1.path());
    let f2 = render(d2.path());
    assert_eq!(f1.svgs.len(), f2.svgs.len());
    let mut names: Vec<String> = std::fs::read_dir(d1.path())
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in &names {
        let a = std::fs::read(d1.path().join(n)).expect("read");
        let b = std::fs::read(d2.path().join(n)).expect("read");
        assert!(a == b, "{n} differs between two renders of the same input");
    }
    check_snapshot("files.txt", &(names.join("\n") + "\n"));
    let md = std::fs::read_to_string(&f1.markdown).expect("md");
    check_snapshot("summary.md", &md);
    let html = std::fs::read_to_string(&f1.index).expect("html");
    check_snapshot("index.skeleton.html", &html_skeleton(&html));
}

#[test]
fn every_svg_parses_and_has_labels() {
    let d = tempfile::tempdir().expect("tmp");
    let files = render(d.path());
    assert!(files.svgs.len() >= 7, "{} charts", files.svgs.len());
    for p in &files.svgs {
        let text = std::fs::read_to_string(p).expect("read svg");
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", p.display()));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        assert!(
            texts.len() > 5,
            "{}: only {} labels",
            p.display(),
            texts.len()
        );
    }
    let reply = std::fs::read_to_string(d.path().join("reply-rate.svg")).expect("svg");
    for label in [
        "Reply rate vs demanded request rate",
        "demanded request rate (requests/s)",
        "reply rate (replies/s)",
        "max sustainable",
        "event",
        "threads",
    ] {
        assert!(reply.contains(label), "reply-rate.svg lacks '{label}'");
    }
    // The HTML page, inline SVGs included, is well-formed XML too.
    let html = std::fs::read_to_string(&files.index).expect("html");
    let body = html.trim_start_matches("<!DOCTYPE html>\n");
    roxmltree::Document::parse(body).expect("index.html is well-formed");
    assert!(!html.contains("<script"), "no JavaScript");
    assert!(
        !html.contains("http://") || !html.contains("src=\"http"),
        "no network"
    );
    assert!(!html.contains("<link"), "no external resources");
}

#[test]
fn client_bound_runs_are_marked_everywhere() {
    let d = tempfile::tempdir().expect("tmp");
    let files = render(d.path());
    // Charts of the sweep (its top steps are client-bound) and of the client-bound run.
    for name in [
        "reply-rate.svg",
        "response-time.svg",
        "errors.svg",
        "percentiles.svg",
    ] {
        let s = std::fs::read_to_string(d.path().join(name)).expect(name);
        assert!(
            s.contains("client-bound"),
            "{name} does not mark client-bound runs"
        );
    }
    let ts = files
        .svgs
        .iter()
        .find(|p| p.to_string_lossy().contains("timeseries-client-bound-run"))
        .expect("time series of the client-bound run");
    assert!(std::fs::read_to_string(ts)
        .expect("ts")
        .contains("client-bound"));
    let html = std::fs::read_to_string(&files.index).expect("html");
    // Tables: the sweep table, the percentile table, the spread table and the httperf table.
    assert!(html.matches("<tr class=\"cb\">").count() >= 4);
    assert!(html.contains("Client-bound runs"));
    let md = std::fs::read_to_string(&files.markdown).expect("md");
    assert!(md.contains("client-bound ⚠"));
}

#[test]
fn report_cli_writes_files_and_names_bad_input() {
    let d = tempfile::tempdir().expect("tmp");
    let out = d.path().join("out");
    let mut args: Vec<OsString> = vec!["httplab report".into()];
    for p in common::fixture_paths() {
        args.push(p.into());
    }
    args.push("--out".into());
    args.push(out.clone().into());
    let code = httplab_report::report_main(args).expect("report runs");
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    assert!(out.join("index.html").is_file());
    assert!(out.join("summary.md").is_file());
    assert!(out.join("reply-rate.svg").is_file());

    let bad = d.path().join("bad.json");
    std::fs::write(&bad, "{ not json").expect("write");
    let e = httplab_report::report_main(vec![
        "httplab report".into(),
        bad.clone().into(),
        "--out".into(),
        out.clone().into(),
    ])
    .expect_err("bad JSON is an error");
    assert!(e.to_string().contains("bad.json"), "{e}");

    let wrong = d.path().join("wrong.json");
    std::fs::write(&wrong, "{\"schema\":\"httplab.run/9\"}").expect("write");
    let e = httplab_report::report_main(vec![
        "httplab report".into(),
        wrong.into(),
        "--out".into(),
        out.into(),
    ])
    .expect_err("unknown schema is an error");
    assert!(e.to_string().contains("wrong.json"), "{e}");

    let missing = d.path().join("missing.json");
    let e = httplab_report::report_main(vec!["httplab report".into(), missing.into()])
        .expect_err("missing file is an error");
    assert!(e.to_string().contains("missing.json"), "{e}");
}

#[test]
fn empty_and_degenerate_documents_render() {
    // A run with nothing in it, a sweep with no steps: no panic, valid SVG.
    let run = httplab_model::RunResult {
        schema: httplab_model::RUN_SCHEMA.into(),
        ..Default::default()
    };
    let sweep = httplab_model::SweepResult {
        schema: httplab_model::SWEEP_SCHEMA.into(),
        targets: vec![httplab_model::SweepTarget::default()],
        ..Default::default()
    };
    // Markup in labels is escaped everywhere.
    let mut odd = common::build_run();
    odd.label = "a<b & \"c\" 'd'".into();
    let docs = vec![
        httplab_model::Document::Run(Box::new(run)),
        httplab_model::Document::Sweep(Box::new(sweep)),
        httplab_model::Document::Run(Box::new(odd)),
    ];
    let d = tempfile::tempdir().expect("tmp");
    let files = httplab_report::render_report(&docs, d.path()).expect("render");
    for p in &files.svgs {
        let text = std::fs::read_to_string(p).expect("svg");
        roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", p.display()));
    }
    let html = std::fs::read_to_string(&files.index).expect("html");
    roxmltree::Document::parse(html.trim_start_matches("<!DOCTYPE html>\n"))
        .expect("index.html stays well-formed");
    assert!(html.contains("a&lt;b &amp; &quot;c&quot;"));
}

#[test]
fn study_documents_render_runs_and_sweeps() {
    let sweep = common::build_sweep();
    let study = httplab_model::StudyResult {
        schema: httplab_model::STUDY_SCHEMA.into(),
        name: "demo".into(),
        runs: vec![
            httplab_model::StudyRun {
                workload: "hello".into(),
                server: "nginx".into(),
                repetition: 0,
                status: "ok".into(),
                run: Some(common::build_run()),
                ..Default::default()
            },
            httplab_model::StudyRun {
                workload: "hello".into(),
                server: "nginx".into(),
                repetition: 1,
                status: "ok".into(),
                run: Some(common::build_run_client_bound()),
                ..Default::default()
            },
            httplab_model::StudyRun {
                workload: "ramp".into(),
                server: "httplab".into(),
                status: "ok".into(),
                sweep: Some(sweep),
                ..Default::default()
            },
            httplab_model::StudyRun {
                workload: "ramp".into(),
                server: "apache".into(),
                status: "not installed".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let text = serde_json::to_string(&study).expect("json");
    let doc = httplab_model::Document::from_json(&text).expect("study parses");
    let d = tempfile::tempdir().expect("tmp");
    let files = httplab_report::render_report(&[doc], d.path()).expect("render");
    let html = std::fs::read_to_string(&files.index).expect("html");
    assert!(html.contains("nginx · hello #1"));
    assert!(html.contains("nginx · hello #2"));
    assert!(
        html.contains("httplab · ramp"),
        "sweep targets of a study are labelled"
    );
    assert!(d.path().join("reply-rate.svg").is_file());
    assert!(d.path().join("percentiles.svg").is_file());
}

/// Study documents of every schema version render, each verdict with its
/// outcome: version 1 and 2 verdicts (no `outcome` field) read as a winner
/// when one was named and inconclusive otherwise; version 3 carries its own.
#[test]
fn study_documents_of_versions_1_2_and_3_render_with_outcomes() {
    let verdict_v2 = r#"{"workload":"hello","step":null,"metric":"reply_rate","better":"higher",
        "winner":"nginx","leader":"nginx","runner_up":"h2o","ratio":1.3,"ratio_ci":[1.2,1.4],
        "p_value":0.001,"significant":true,"n":{"nginx":5,"h2o":5},"note":"nginx beats h2o"}"#;
    let verdict_old_none = r#"{"workload":"hello","step":null,"metric":"reply_rate","better":"higher",
        "winner":null,"leader":"nginx","runner_up":"h2o","ratio":1.01,"ratio_ci":null,
        "p_value":0.5,"significant":false,"n":{"nginx":5,"h2o":5},"note":"no significant difference"}"#;
    let verdict_v3 = r#"{"workload":"hello","step":null,"metric":"server_cpu_us_per_req","better":"lower",
        "outcome":"equivalent","kind":"step","measured_by":"server","winner":null,"leader":"nginx",
        "runner_up":"h2o","ratio":1.01,"ratio_ci":[0.99,1.03],"ratio_ci90":[0.995,1.025],"p_value":0.4,
        "p_equivalent":0.001,"significant":false,"n":{"nginx":6,"h2o":6},"pairs":6,
        "detectable":0.04,"rounds_to_settle":6,"delta":0.05,"note":"nginx and h2o are equivalent"}"#;
    for (schema, verdict, word) in [
        ("httplab.study/1", verdict_old_none, "inconclusive"),
        ("httplab.study/2", verdict_v2, "winner"),
        ("httplab.study/3", verdict_v3, "equivalent"),
    ] {
        let base = httplab_model::StudyResult {
            schema: schema.into(),
            name: "demo".into(),
            ..Default::default()
        };
        let mut value = serde_json::to_value(&base).expect("json");
        value["verdicts"] = serde_json::json!([
            serde_json::from_str::<serde_json::Value>(verdict).expect("verdict json")
        ]);
        let text = value.to_string();
        let doc = httplab_model::Document::from_json(&text)
            .unwrap_or_else(|e| panic!("{schema} does not parse: {e}"));
        let d = tempfile::tempdir().expect("tmp");
        let files = httplab_report::render_report(&[doc], d.path()).expect("render");
        let html = std::fs::read_to_string(&files.index).expect("html");
        assert!(
            html.contains(&format!("<i>{word}</i>")),
            "{schema}: outcome '{word}' missing"
        );
        // The page opens with the forest plot: one mark, coloured by the outcome, before the
        // verdicts in words; the page stays well-formed.
        let mark = match word {
            "winner" => "better",
            "equivalent" => "equivalent",
            _ => "undecided",
        };
        assert_eq!(html.matches("<g class=\"mark ").count(), 1, "{schema}");
        assert_eq!(
            html.matches(&format!("<g class=\"mark {mark}\"")).count(),
            1,
            "{schema}"
        );
        let forest = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"forest\"");
        let verdicts = html.find("Study verdicts</h2>");
        assert!(
            forest.is_some() && forest < verdicts,
            "{schema}: no forest plot first"
        );
        let body = &html[html.find("<html").expect("html")..];
        roxmltree::Document::parse(body).expect("index.html is well-formed");
    }
}

#[test]
fn every_run_of_a_repeat_document_is_rendered() {
    // `httplab load --repeat 3` writes run 1 at the top level and runs 2
    // and 3 under `repeats`: all three reach the tables, numbered.
    let mut doc = common::build_run();
    doc.label = "nginx".into();
    let mut second = common::build_run();
    second.reply.rate.avg = 1234.5;
    let third = common::build_run();
    doc.repeats = vec![second, third];
    let docs = vec![httplab_model::Document::Run(Box::new(doc))];
    let c = httplab_report::data::collect(&docs);
    let labels: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["nginx #1", "nginx #2", "nginx #3"]);
    assert_eq!(c.runs[1].run.reply.rate.avg, 1234.5);
    let text: String = httplab_report::text::all_tables(&c)
        .iter()
        .map(|t| t.to_text())
        .collect();
    for l in labels {
        assert!(text.contains(l), "{l} missing from:\n{text}");
    }
    // A single run keeps its plain label.
    let mut one = common::build_run();
    one.label = "h2o".into();
    let docs = vec![httplab_model::Document::Run(Box::new(one))];
    let c = httplab_report::data::collect(&docs);
    assert_eq!(c.runs.len(), 1);
    assert_eq!(c.runs[0].label, "h2o");
}
