//! The study report: results.json, CSV tables and a self-contained
//! index.html: first the forest plot of every verdict and the table of every
//! server's figures (`overview`), then the verdicts (a winner only where the difference is
//! significant), the answers to the study's questions, the protocol, and one
//! section per workload with charts (httplab-report's, with 95 % CI
//! whiskers) and tables where every figure carries its interval and n.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use httplab_model as m;

pub use crate::execute::cells::metrics_of;
use crate::plan::text::fmt_num;
pub use crate::render::numbers::{fmt_estimate, fmt_val};
use crate::spec::{Metric, StudyFile};

/// One row of the flat table: a run (or a sweep step) of a server.
#[derive(Debug, Clone)]
pub struct Row {
    /// Workload.
    pub workload: String,
    /// Server.
    pub server: String,
    /// Step label ("" when the workload has one step).
    pub step: String,
    /// Repetition (round).
    pub repetition: u32,
    /// Place in the round's random order.
    pub position: u32,
    /// Which start of the server it measured, from 0.
    pub start: u32,
    /// Ok, failed, not installed, skipped, empty.
    pub status: m::RunStatus,
    /// Why not ok.
    pub reason: String,
    /// Metric values.
    pub metrics: BTreeMap<Metric, f64>,
    /// The load generator limited this run.
    pub client_bound: bool,
    /// Replies (every status).
    pub replies: u64,
    /// Failed calls: errors of any class and 5xx replies (`httplab_model::metric`'s
    /// definition; before, errors alone).
    pub errors: u64,
}

/// Flattens a study into rows.
pub fn rows(res: &m::StudyResult) -> Vec<Row> {
    let mut out = Vec::new();
    for r in &res.runs {
        let mk = |step: String, run: Option<&m::RunResult>| Row {
            workload: r.workload.clone(),
            server: r.server.clone(),
            step,
            repetition: r.repetition,
            position: r.position,
            start: r.start,
            status: r.status.clone(),
            reason: r.reason.clone(),
            metrics: run.map(metrics_of).unwrap_or_default(),
            client_bound: run.is_some_and(|x| x.self_check.client_bound),
            replies: run.map_or(0, |x| x.totals.replies),
            errors: run.map_or(0, m::metric::failed_calls),
        };
        if let Some(sw) = &r.sweep {
            let steps: Vec<&m::SweepStep> =
                sw.targets.iter().flat_map(|t| t.steps.iter()).collect();
            if steps.is_empty() {
                out.push(mk(String::new(), None));
            }
            for s in steps {
                out.push(mk(fmt_num(s.demanded_rate), Some(&s.run)));
            }
            if r.status != "ok" && !sw.targets.iter().all(|t| t.steps.is_empty()) {
                let mut f = mk("(rest)".into(), None);
                f.status = r.status.clone();
                out.push(f);
            }
        } else {
            let step = r
                .run
                .as_ref()
                .and_then(|x| x.config.facts.study.step.clone())
                .unwrap_or_default();
            out.push(mk(step, r.run.as_ref()));
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn at(workload: &str, step: &Option<String>) -> String {
    match step {
        Some(s) => format!("{workload} [{s}]"),
        None => workload.to_string(),
    }
}

/// Where a verdict stands: "workload [step]", with "· metric" when the
/// verdict judges another metric than the workload's own, "· vs baseline"
/// for a named pair.
fn place(v: &m::StudyVerdict, res: &m::StudyResult) -> String {
    let mut s = at(&v.workload, &v.step);
    let primary = res
        .cells
        .iter()
        .find(|c| c.workload == v.workload)
        .map(|c| &c.metric);
    if primary.is_some_and(|p| *p != v.metric) {
        s.push_str(&format!(" · {}", v.metric));
    }
    if v.kind == m::VerdictKind::Pair {
        s.push_str(" · pair");
    }
    s
}

/// One line per verdict: "workload [step]: note".
pub fn summary(res: &m::StudyResult, _study: Option<&StudyFile>) -> Vec<String> {
    let mut v: Vec<String> = res
        .verdicts
        .iter()
        .map(|v| format!("{}: {}", place(v, res), v.note))
        .collect();
    v.extend(crate::render::idle::summary_lines(res));
    v
}

/// Verdicts counted by outcome: (winners, equivalent, inconclusive).
pub fn outcome_counts(res: &m::StudyResult) -> (usize, usize, usize) {
    let count = |o| res.verdicts.iter().filter(|v| v.outcome() == o).count();
    (
        count(m::VerdictOutcome::Winner),
        count(m::VerdictOutcome::Equivalent),
        count(m::VerdictOutcome::Inconclusive),
    )
}

/// One sentence over all verdicts: "7 comparisons: 3 winners, 2 equivalent,
/// 2 inconclusive", then who won where.
pub fn headline(res: &m::StudyResult, _study: Option<&StudyFile>) -> String {
    if res.verdicts.is_empty() {
        return "No workload was completed by any server.".into();
    }
    let (wins, same, open) = outcome_counts(res);
    let mut counts: Vec<(String, Vec<String>)> = Vec::new();
    for v in res.verdicts.iter().filter(|v| v.winner.is_some()) {
        let w = v.winner.clone().unwrap_or_default();
        let where_ = place(v, res);
        match counts.iter_mut().find(|(n, _)| *n == w) {
            Some(c) => c.1.push(where_),
            None => counts.push((w, vec![where_])),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1.len()));
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut s = format!(
        "{}: {}, {} equivalent, {} inconclusive",
        plural(res.verdicts.len(), "comparison", "comparisons"),
        plural(wins, "winner", "winners"),
        same,
        open
    );
    if !counts.is_empty() {
        let parts: Vec<String> = counts
            .iter()
            .map(|(n, ws)| format!("{n} {} ({})", ws.len(), ws.join(", ")))
            .collect();
        s.push_str(&format!(" — wins: {}", parts.join("; ")));
    }
    s.push('.');
    s
}

/// Writes results.json, runs.csv, summary.csv, verdicts.csv, index.html and
/// summary.md into `out`.
pub fn write_all(
    res: &m::StudyResult,
    study: Option<&StudyFile>,
    out: &Path,
    interrupted: bool,
) -> Result<()> {
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = serde_json::to_string_pretty(res)?;
    fs::write(out.join("results.json"), json).context("writing results.json")?;
    write_csv(&rows(res), &out.join("runs.csv"))?;
    write_summary_csv(res, &out.join("summary.csv"))?;
    write_verdicts_csv(res, &out.join("verdicts.csv"))?;
    fs::write(out.join("index.html"), html(res, study, interrupted))
        .context("writing index.html")?;
    fs::write(out.join("summary.md"), markdown(res, study, interrupted))
        .context("writing summary.md")?;
    Ok(())
}

/// summary.md: the answer for the baseline's pairs first, then every
/// verdict (the terminal summary, as a list).
pub fn markdown(res: &m::StudyResult, study: Option<&StudyFile>, interrupted: bool) -> String {
    let title = study
        .map(|s| {
            if s.title.is_empty() {
                &s.name
            } else {
                &s.title
            }
        })
        .unwrap_or(&res.name);
    let mut o = format!("# httplab study: {title}\n\n");
    o.push_str(&crate::render::versus::markdown(res, study));
    if interrupted {
        o.push_str("Interrupted (Ctrl-C): this report holds the runs that finished.\n\n");
    }
    let _ = writeln!(o, "## Verdicts\n\n{}\n", headline(res, study));
    for line in summary(res, study) {
        let _ = writeln!(o, "- {line}");
    }
    let noise: Vec<String> = res
        .verdicts
        .iter()
        .filter_map(|v| {
            let n = v.noise.as_ref()?;
            let step = v.step.as_ref().map_or(String::new(), |s| format!(" [{s}]"));
            Some(format!(
                "- {}{step}, {} vs {} on {}: {}",
                v.workload,
                v.leader.as_deref().unwrap_or("?"),
                v.runner_up.as_deref().unwrap_or("?"),
                v.metric,
                crate::analyse::noise::text(n)
            ))
        })
        .collect();
    if !noise.is_empty() {
        let _ = writeln!(
            o,
            "\n## Where the noise lives\n\nThe spread of each compared log ratio, between the slices of a round, between rounds \
             of one start of the servers, and between their starts (every server is restarted once, before the extra rounds). \
             More slices per round shrink only the first; more rounds of one start, the first two; only more starts, the third:\n"
        );
        for line in noise {
            let _ = writeln!(o, "{line}");
        }
    }
    o
}

fn write_csv(rows: &[Row], path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut head = vec![
        "workload",
        "server",
        "step",
        "repetition",
        "position",
        "start",
        "status",
        "reason",
        "replies",
        "errors",
        "client_bound",
    ];
    head.extend(Metric::ALL.iter().map(|m| m.key()));
    w.write_record(&head)?;
    for r in rows {
        let mut rec = vec![
            r.workload.clone(),
            r.server.clone(),
            r.step.clone(),
            r.repetition.to_string(),
            r.position.to_string(),
            r.start.to_string(),
            r.status.to_string(),
            r.reason.clone(),
            r.replies.to_string(),
            r.errors.to_string(),
            r.client_bound.to_string(),
        ];
        rec.extend(Metric::ALL.iter().map(|m| {
            r.metrics
                .get(m)
                .map(|v| format!("{v:.6}"))
                .unwrap_or_default()
        }));
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}

/// One row per cell and metric: n, mean, median, stddev and the 95 % CI.
fn write_summary_csv(res: &m::StudyResult, path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    w.write_record([
        "workload",
        "step",
        "server",
        "metric",
        "primary",
        "n",
        "mean",
        "median",
        "stddev",
        "ci95_low",
        "ci95_high",
        "stop",
        "client_bound_runs",
    ])?;
    let f = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_default();
    for c in &res.cells {
        for (k, e) in &c.metrics {
            w.write_record([
                c.workload.clone(),
                c.step.clone().unwrap_or_default(),
                c.server.clone(),
                k.to_string(),
                (*k == c.metric).to_string(),
                e.n.to_string(),
                format!("{:.6}", e.mean),
                format!("{:.6}", e.median),
                format!("{:.6}", e.stddev),
                f(e.ci_low),
                f(e.ci_high),
                c.stop.to_string(),
                c.client_bound_runs.to_string(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

/// The verdicts, one row each.
fn write_verdicts_csv(res: &m::StudyResult, path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    w.write_record([
        "workload",
        "step",
        "kind",
        "metric",
        "measured_by",
        "better",
        "outcome",
        "winner",
        "leader",
        "runner_up",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "ratio_ci_level",
        "ratio_ci90_low",
        "ratio_ci90_high",
        "p_value",
        "p_equivalent",
        "pairs",
        "detectable",
        "rounds_to_settle",
        "delta",
        "client_bound",
        "note",
    ])?;
    let f = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_default();
    for v in &res.verdicts {
        w.write_record([
            v.workload.clone(),
            v.step.clone().unwrap_or_default(),
            match v.kind {
                m::VerdictKind::Step => "step".into(),
                m::VerdictKind::Pair => "pair".into(),
            },
            v.metric.to_string(),
            v.measured_by.map_or("", |x| x.word()).into(),
            v.better.word().into(),
            v.outcome().word().into(),
            v.winner.clone().unwrap_or_default(),
            v.leader.clone().unwrap_or_default(),
            v.runner_up.clone().unwrap_or_default(),
            f(v.ratio),
            f(v.ratio_ci.map(|c| c[0])),
            f(v.ratio_ci.map(|c| c[1])),
            f(v.ratio_ci_level.or(v.ratio_ci.map(|_| 0.95))),
            f(v.ratio_ci90.map(|c| c[0])),
            f(v.ratio_ci90.map(|c| c[1])),
            f(v.p_value),
            f(v.p_equivalent),
            v.pairs.to_string(),
            f(v.detectable),
            v.rounds_to_settle
                .map(|n| n.to_string())
                .unwrap_or_default(),
            f(v.delta),
            v.client_bound.join(" "),
            v.note.clone(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// The whole index.html.
pub fn html(res: &m::StudyResult, study: Option<&StudyFile>, interrupted: bool) -> String {
    let mut h = String::new();
    html_intro(&mut h, res, study, interrupted);
    verdicts_section(&mut h, res, study);
    answers_section(&mut h, res);
    servers_section(&mut h, res);
    // Workloads, in study order.
    let mut workloads: Vec<String> = Vec::new();
    for r in &res.runs {
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload.clone());
        }
    }
    for w in &workloads {
        workload_section(&mut h, res, study, w);
    }
    environment_section(&mut h, res);
    h.push_str("</body></html>\n");
    h
}

/// The page's head, title, description and protocol.
fn html_intro(h: &mut String, res: &m::StudyResult, study: Option<&StudyFile>, interrupted: bool) {
    let title = study
        .map(|s| {
            if s.title.is_empty() {
                s.name.clone()
            } else {
                s.title.clone()
            }
        })
        .unwrap_or_else(|| res.name.clone());
    let _ = write!(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>httplab study: {}</title>\n<style>\
        body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
        table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}\
        th{{background:#f3f3f3}}td.l,th.l{{text-align:left}}tr.bad td{{background:#fff3f3}}.cb{{color:#b35900;font-weight:bold}}\
        .warn{{background:#fff7e0;border:1px solid #e0c070;padding:.5em 1em}}code{{background:#f4f4f4;padding:0 3px}}\
        .win{{font-weight:bold}}svg{{max-width:100%;height:auto}}\
        </style></head><body>\n", esc(&title));
    let _ = writeln!(h, "<h1>httplab study: {}</h1>", esc(&title));
    crate::render::overview::html(h, res);
    crate::render::versus::html(h, res, study);
    let _ = writeln!(
        h,
        "<p>Study <code>{}</code>, started {} by httplab {}.</p>",
        esc(&res.name),
        esc(&res.started_at),
        esc(&res.tool.version)
    );
    if let Some(s) = study {
        if !s.description.is_empty() {
            let _ = writeln!(h, "<p>{}</p>", esc(&s.description));
        }
        if !s.seed.is_empty() {
            let _ = writeln!(h, "<p>Reproduces: {}</p>", esc(&s.seed));
        }
    }
    if interrupted {
        let _ = writeln!(h, "<p class=\"warn\">Interrupted (Ctrl-C): this report holds the runs that finished; the rest are marked skipped.</p>");
    }
    if let Some(p) = &res.protocol {
        let design = match (p.interim_rounds, p.budget_s) {
            (Some(k), Some(b)) => format!(
                "at least {k} rounds of every step, an interim look, then {} s of a {} s budget of extra rounds handed to the comparisons nearest a decision (at most {} rounds a step); the first rounds and the extra ones, each judged on its own rounds, combined by an inverse-normal test with weights fixed in advance",
                fmt_num(p.budget_used_s.unwrap_or(0.0).round()),
                fmt_num(b.round()),
                p.max_repetitions
            ),
            _ => format!("{} rounds of every step, one look at the end", p.min_repetitions),
        };
        let delta = if p.min_effect > 0.0 {
            p.min_effect
        } else {
            0.05
        };
        let _ = writeln!(h, "<p>Protocol: every run discards a {} s warm-up and measures a {} s window (or the workload's own counts); each workload step runs in rounds, each round visiting every server once in a fresh random order (seed <code>{}</code>; rerun with <code>--seed {}</code> for the same orders): {design}. Every comparison is a geometric-mean ratio with a t interval on the paired per-round log differences, and an interval at the level of the whole study (1 − α/m over its m = {m} comparisons, α = {alpha}: all of them hold together with probability 1 − α), and ends as a <i>winner</i> (the interval leaves 1 out), <i>equivalent</i> (the interval lies inside ±{pct_delta} %) or <i>inconclusive</i> (with the smallest effect the rule could have seen and the rounds that would settle it); see docs/statistics.md. Server CPU per request is the server's own nanosecond accounting over each run's window, compared on fixed-rate steps (same work for every server); the client was <code>httplab load</code>, and on loopback part of each side's network work is billed to the other side, so the figure depends on the client.{}</p>",
            fmt_num(p.warmup_s), fmt_num(p.window_s), p.seed, p.seed,
            if p.quick { " <b>--quick</b>: fewer rounds and shorter windows, so fewer comparisons are decided." } else { "" },
            m = res.verdicts.len(), alpha = p.alpha, pct_delta = fmt_num(delta * 100.0));
    }
}

/// The verdicts, with the count of failed and client-bound runs.
fn verdicts_section(h: &mut String, res: &m::StudyResult, study: Option<&StudyFile>) {
    // Verdicts
    let _ = writeln!(
        h,
        "<h2 id=\"summary\">Verdicts</h2><p><b>{}</b></p><ul>",
        esc(&headline(res, study))
    );
    for v in &res.verdicts {
        let _ = writeln!(
            h,
            "<li{}><a href=\"#w-{}\">{}</a>: <i>{}</i>: {}</li>",
            if v.winner.is_some() {
                " class=\"win\""
            } else {
                ""
            },
            esc(&v.workload),
            esc(&place(v, res)),
            v.outcome().word(),
            esc(&v.note)
        );
    }
    let _ = writeln!(h, "</ul>");
    let rows = rows(res);
    let cb = rows.iter().filter(|r| r.client_bound).count();
    let failed = rows.iter().filter(|r| r.status == "failed").count();
    let _ = writeln!(h, "<p>{} run(s) in total; {} failed; {} client-bound (marked <span class=\"cb\">≥ client-bound</span>: the load generator, not the server, limited them, so their figures are bounds and never win).</p>", rows.len(), failed, cb);
}

/// The written answers to the study's questions.
fn answers_section(h: &mut String, res: &m::StudyResult) {
    // Answers
    if !res.answers.is_empty() {
        let _ = writeln!(h, "<h2 id=\"answers\">Answers to the seed's questions</h2>");
        for a in &res.answers {
            let _ = writeln!(
                h,
                "<h3>{}</h3><p>{}</p><p><i>{}</i></p>",
                esc(&a.question),
                esc(&a.answer),
                esc(&a.versus_seed)
            );
        }
    }
}

/// Every server with its runs' status and version.
fn servers_section(h: &mut String, res: &m::StudyResult) {
    // Servers
    let _ = writeln!(h, "<h2 id=\"servers\">Servers</h2><table><tr><th class=\"l\">server</th><th class=\"l\">status</th><th class=\"l\">version</th></tr>");
    let mut seen = Vec::new();
    for r in &res.runs {
        if seen.contains(&r.server) {
            continue;
        }
        seen.push(r.server.clone());
        let all: Vec<&m::StudyRun> = res.runs.iter().filter(|x| x.server == r.server).collect();
        let ok = all.iter().filter(|x| x.status == "ok").count();
        let not_run = |x: &&&m::StudyRun| x.status == "not installed" || x.status == "unsupported";
        // A server that cannot speak a workload's protocol is "unsupported"
        // for that workload only: its reason says which.
        let status = match all.iter().find(not_run) {
            Some(ni) if all.iter().all(|x| not_run(&x)) => ni.reason.clone(),
            _ if ok == all.len() => format!("{ok} run(s) ok"),
            _ => {
                let bad = all
                    .iter()
                    .find(|x| x.status != "ok")
                    .map(|x| {
                        if x.status == "unsupported" {
                            x.reason.clone()
                        } else {
                            format!("{}: {}", x.status, x.reason)
                        }
                    })
                    .unwrap_or_default();
                format!("{ok} of {} run(s) ok; {bad}", all.len())
            }
        };
        let version = res
            .environment
            .facts
            .study
            .versions
            .get(&r.server)
            .cloned()
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.server),
            esc(&status),
            esc(&version)
        );
    }
    let _ = writeln!(h, "</table>");
}

/// The machine and the study's facts.
fn environment_section(h: &mut String, res: &m::StudyResult) {
    // Environment
    let e = &res.environment;
    let _ = writeln!(h, "<h2 id=\"environment\">Environment</h2><table>");
    let mut kv = vec![
        ("CPU".to_string(), e.cpu_model.clone()),
        ("cores".to_string(), e.cores.to_string()),
        ("kernel".to_string(), e.kernel.clone()),
        (
            "memory".to_string(),
            crate::spec::human_bytes(e.memory_bytes),
        ),
    ];
    // The study's facts in the words they have always been listed with,
    // among the free-form ones, sorted by name.
    let words: std::collections::BTreeMap<String, String> = e
        .facts
        .entries()
        .into_iter()
        .chain(e.extra.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    kv.extend(words);
    for (k, v) in kv {
        let _ = writeln!(
            h,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(&k),
            esc(&v)
        );
    }
    let _ = writeln!(h, "</table>");
    let _ = writeln!(h, "<p>Data: <a href=\"results.json\">results.json</a> (schema {}), <a href=\"runs.csv\">runs.csv</a> (every run), <a href=\"summary.csv\">summary.csv</a> (mean, median, 95 % CI and n of every metric), <a href=\"verdicts.csv\">verdicts.csv</a>.</p>", m::STUDY_SCHEMA);
}

/// What a capacity search under `cpu_quota` measured, or why it could not.
pub fn quota_text(q: f64, res: &m::StudyResult) -> String {
    match &res.environment.facts.study.cpu_quota {
        Some(why) => format!("Asked for a CPU quota of {q} core per server, but {why}."),
        None => format!(
            "Every server held to {q} core of CPU (a CFS quota, {} ms period) during the \
             capacity search, so that one client can saturate it; judged by replies per \
             second of server CPU at the highest rate sustained (not the capacity of a \
             whole machine).",
            crate::execute::cpu::QUOTA_PERIOD_US / 1000
        ),
    }
}

fn workload_section(h: &mut String, res: &m::StudyResult, study: Option<&StudyFile>, w: &str) {
    let wl = study.and_then(|s| s.workloads.iter().find(|x| x.name == w));
    workload_intro(h, res, study, wl, w);
    for v in res.verdicts.iter().filter(|v| v.workload == w) {
        let _ = writeln!(
            h,
            "<p{}>{}<i>{}</i>: {}</p>",
            if v.winner.is_some() {
                " class=\"win\""
            } else {
                ""
            },
            v.step
                .as_ref()
                .map(|s| format!("[{}] ", esc(s)))
                .unwrap_or_default(),
            v.outcome().word(),
            esc(&v.note)
        );
    }
    let Some(g) = WorkloadCells::of(res, w) else {
        workload_runs(h, res, w);
        return;
    };
    workload_charts(h, &g, wl);
    workload_table(h, res, study, &g);
    if let Some(t) = crate::render::idle::html_section(res, w) {
        h.push_str(&t);
    }
}

/// A workload's heading, description, offered load and capacity notes.
fn workload_intro(
    h: &mut String,
    res: &m::StudyResult,
    study: Option<&StudyFile>,
    wl: Option<&crate::spec::Workload>,
    w: &str,
) {
    let _ = writeln!(h, "<h2 id=\"w-{}\">Workload: {}</h2>", esc(w), esc(w));
    if let Some(wl) = wl {
        if !wl.description.is_empty() {
            let _ = writeln!(h, "<p>{}</p>", esc(&wl.description));
        }
        let proto = study.map(|s| s.protocol.clone()).unwrap_or_default();
        let st = crate::plan::steps::steps_with(wl, &proto);
        let _ = writeln!(
            h,
            "<p>Kind <code>{}</code>; {}{}.</p>",
            wl.kind.as_str(),
            esc(&st
                .first()
                .map(crate::plan::steps::describe_offer)
                .unwrap_or_default()),
            if st.len() > 1 {
                format!(" ({} steps)", st.len())
            } else {
                String::new()
            }
        );
        protocol_note(h, res, study, wl);
        if let Some(pct) = wl.loss_pct {
            let _ = writeln!(
                h,
                "<p>With {pct} % packet loss on the loopback interface during every run (nftables on the server's port, or netem: see each run's <code>config.facts.study.packet_loss</code>).</p>"
            );
        }
        if let Some(q) = wl.cpu_quota {
            let _ = writeln!(h, "<p>{}</p>", esc(&quota_text(q, res)));
        } else if wl.kind == crate::spec::WorkloadKind::Sweep {
            let bound: std::collections::BTreeSet<&str> = res
                .runs
                .iter()
                .filter(|r| r.workload == w)
                .filter(|r| {
                    r.sweep
                        .as_ref()
                        .is_some_and(|s| s.targets.iter().any(|t| t.saturation.client_bound))
                })
                .map(|r| r.server.as_str())
                .collect();
            if !bound.is_empty() {
                let names: Vec<&str> = bound.into_iter().collect();
                let _ = writeln!(
                    h,
                    "<p>The client saturated before {}: those capacities are lower bounds. \
                     <code>cpu_quota = 0.25</code> on this workload holds every server to the \
                     same quarter core so one client can saturate each (needs root), and \
                     compares replies per server CPU-second instead.</p>",
                    esc(&names.join(", "))
                );
            }
        }
    }
}

/// A workload over HTTP/2 (or later HTTP/3): how it was spoken, that the
/// client's ceiling is unknown, and which servers were left out because they
/// do not speak it.
fn protocol_note(
    h: &mut String,
    res: &m::StudyResult,
    study: Option<&StudyFile>,
    wl: &crate::spec::Workload,
) {
    use crate::spec::Protocol;
    if wl.protocol == Protocol::H1 {
        return;
    }
    let tls = study.is_some_and(|s| s.tls) || res.environment.facts.study.tls.is_some();
    let how = match (wl.protocol, tls) {
        (Protocol::H2, true) => "HTTP/2 (h2 by ALPN over TLS)",
        (Protocol::H2, false) => "HTTP/2 (h2c by prior knowledge)",
        (Protocol::H3, _) => "HTTP/3 (h3 over QUIC)",
        (p, _) => p.label(),
    };
    let mut left_out: Vec<String> = Vec::new();
    for r in res.runs.iter().filter(|r| r.workload == wl.name) {
        if r.status == "unsupported" {
            let line = format!("{} ({})", r.server, r.reason);
            if !left_out.contains(&line) {
                left_out.push(line);
            }
        }
    }
    let _ = writeln!(
        h,
        "<p>Over {how}, one stream per connection. The client's ceiling is unknown over {} \
         (its calibration measures HTTP/1.1), so no run here is marked client-bound.{}</p>",
        wl.protocol.label(),
        if left_out.is_empty() {
            String::new()
        } else {
            format!(" Left out: {}.", esc(&left_out.join("; ")))
        }
    );
}

/// The runs of a workload without cells (a version 1 document, or every
/// run failed).
fn workload_runs(h: &mut String, res: &m::StudyResult, w: &str) {
    // A version 1 document or a workload with no cells: list its runs.
    let _ = writeln!(h, "<p>No statistics recorded for this workload (a study/1 document, or every run failed):</p><ul>");
    for r in res.runs.iter().filter(|r| r.workload == w) {
        let _ = writeln!(
            h,
            "<li>{} repetition {}: {} {}</li>",
            esc(&r.server),
            r.repetition + 1,
            esc(r.status.as_str()),
            esc(&r.reason)
        );
    }
    let _ = writeln!(h, "</ul>");
}

/// A workload's cells laid out: its servers and steps in first-seen order
/// and the metric it is judged by.
struct WorkloadCells<'a> {
    w: &'a str,
    cells: Vec<&'a m::Cell>,
    servers: Vec<String>,
    steps: Vec<Option<String>>,
    primary: Metric,
}

impl<'a> WorkloadCells<'a> {
    /// None when the workload has no cells.
    fn of(res: &'a m::StudyResult, w: &'a str) -> Option<WorkloadCells<'a>> {
        let cells: Vec<&m::Cell> = res.cells.iter().filter(|c| c.workload == w).collect();
        if cells.is_empty() {
            return None;
        }
        let primary = cells
            .first()
            .and_then(|c| c.metric.metric())
            .unwrap_or_default();
        let mut servers: Vec<String> = Vec::new();
        let mut steps: Vec<Option<String>> = Vec::new();
        for c in &cells {
            if !servers.contains(&c.server) {
                servers.push(c.server.clone());
            }
            if !steps.contains(&c.step) {
                steps.push(c.step.clone());
            }
        }
        Some(WorkloadCells {
            w,
            cells,
            servers,
            steps,
            primary,
        })
    }

    fn find(&self, s: &str, st: &Option<String>) -> Option<&'a m::Cell> {
        self.cells
            .iter()
            .copied()
            .find(|c| c.server == s && c.step == *st)
    }
}

/// A workload's charts: its metric (and server CPU per request when
/// measured), by step or as bars.
fn workload_charts(h: &mut String, g: &WorkloadCells, wl: Option<&crate::spec::Workload>) {
    let WorkloadCells {
        w,
        cells,
        servers,
        steps,
        primary,
    } = g;
    let (w, primary) = (*w, *primary);
    let find = |s: &str, st: &Option<String>| g.find(s, st);
    let mut charted = vec![primary];
    if primary != Metric::ServerCpuUsPerReq
        && cells
            .iter()
            .any(|c| c.estimate(Metric::ServerCpuUsPerReq).is_some())
    {
        charted.push(Metric::ServerCpuUsPerReq);
    }
    for mt in charted {
        let direction = if mt.higher_is_better() {
            "higher is better"
        } else {
            "lower is better"
        };
        let svg = if steps.len() > 1 {
            let labels: Vec<String> = steps
                .iter()
                .map(|s| s.clone().unwrap_or_default())
                .collect();
            let xdesc = wl
                .and_then(|wl| wl.vary.as_ref())
                .map_or("step".to_string(), |v| v.param.as_str().to_string());
            let series: Vec<httplab_report::charts::EstimateSeries> = servers
                .iter()
                .map(|s| httplab_report::charts::EstimateSeries {
                    label: s.clone(),
                    points: steps
                        .iter()
                        .map(|st| {
                            let c = find(s, st)?;
                            let e = c.estimate(mt)?;
                            Some(httplab_report::charts::EstimatePoint {
                                mean: e.mean,
                                ci: e.ci_low.zip(e.ci_high),
                                client_bound: c.client_bound,
                            })
                        })
                        .collect(),
                })
                .collect();
            httplab_report::charts::estimate_lines(
                &format!("{w}: {} ({direction})", mt.label()),
                &xdesc,
                mt.label(),
                &labels,
                &series,
            )
        } else {
            let bars: Vec<httplab_report::charts::EstimateBar> = servers
                .iter()
                .filter_map(|s| {
                    let c = find(s, &steps[0])?;
                    let e = c.estimate(mt)?;
                    Some(httplab_report::charts::EstimateBar {
                        label: s.clone(),
                        mean: e.mean,
                        ci: e.ci_low.zip(e.ci_high),
                        client_bound: c.client_bound,
                    })
                })
                .collect();
            if bars.is_empty() {
                continue;
            }
            httplab_report::charts::estimate_bars(
                &format!("{w}: {} ({direction})", mt.label()),
                mt.label(),
                &bars,
            )
        };
        if let Ok(svg) = svg {
            h.push_str(&svg);
            h.push('\n');
        }
    }
}

/// A workload's table: every cell's estimates with their intervals, n, why
/// it stopped and its notes.
fn workload_table(
    h: &mut String,
    res: &m::StudyResult,
    study: Option<&StudyFile>,
    g: &WorkloadCells,
) {
    let WorkloadCells {
        w,
        cells,
        servers,
        steps,
        primary,
    } = g;
    let (w, primary) = (*w, *primary);
    let find = |s: &str, st: &Option<String>| g.find(s, st);
    // Table: the primary metric first, then the others recorded.
    let shown: Vec<Metric> = {
        let wanted = study
            .map(|s| s.compare.metrics.clone())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| Metric::ALL.to_vec());
        let mut v = vec![primary];
        v.extend(
            wanted
                .into_iter()
                .filter(|m| *m != primary && cells.iter().any(|c| c.estimate(*m).is_some())),
        );
        v
    };
    let stepped = steps.iter().any(|s| s.is_some());
    let _ = write!(
        h,
        "<table><tr><th class=\"l\">server</th>{}<th>n</th><th class=\"l\">stopped</th>",
        if stepped { "<th>step</th>" } else { "" }
    );
    for mt in &shown {
        let _ = write!(h, "<th>{}<br>mean [95 % CI]</th>", esc(mt.label()));
    }
    let _ = writeln!(h, "<th class=\"l\">notes</th></tr>");
    for st in steps {
        for s in servers {
            let Some(c) = find(s, st) else { continue };
            let problem = res
                .runs
                .iter()
                .find(|r| r.workload == w && r.server == *s && r.step == *st && r.status != "ok");
            let _ = write!(
                h,
                "<tr{}><td class=\"l\">{}</td>",
                if c.n == 0 { " class=\"bad\"" } else { "" },
                esc(s)
            );
            if stepped {
                let _ = write!(h, "<td>{}</td>", esc(&st.clone().unwrap_or_default()));
            }
            let stop = match (&c.stop, c.precision) {
                (m::CellStop::Precision, Some(p)) => format!("±{:.1} % reached", p * 100.0),
                (m::CellStop::MaxRepetitions, Some(p)) => format!("cap (±{:.1} %)", p * 100.0),
                (x, _) => x.to_string(),
            };
            let _ = write!(h, "<td>{}</td><td class=\"l\">{}</td>", c.n, esc(&stop));
            for mt in &shown {
                let cell = c.estimate(*mt).map_or("–".to_string(), |e| {
                    fmt_estimate(e, c.client_bound && *mt == primary, mt.higher_is_better())
                });
                let _ = write!(h, "<td>{}</td>", esc(&cell));
            }
            let mut notes = Vec::new();
            if c.client_bound {
                notes.push(format!(
                    "<span class=\"cb\">≥ client-bound</span> ({} of {} runs)",
                    c.client_bound_runs, c.n
                ));
            }
            if let Some(r) = problem {
                notes.push(esc(&format!(
                    "{}{}",
                    r.status,
                    if r.reason.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", r.reason)
                    }
                )));
            }
            let _ = writeln!(h, "<td class=\"l\">{}</td></tr>", notes.join("; "));
        }
    }
    let _ = writeln!(h, "</table>");
}
