//! The study report: results.json, CSV tables and a self-contained
//! index.html (summary, environment, one section per workload with tables
//! and SVG charts).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use httplab_model as m;

use crate::runner::EXTRA_STEP;
use crate::spec::{Metric, StudyFile, WorkloadKind};

/// Metric values of one run (None where not measurable).
pub fn metrics_of(r: &m::RunResult) -> BTreeMap<Metric, f64> {
    let mut v = BTreeMap::new();
    let d = r.totals.test_duration_s.max(1e-9);
    v.insert(Metric::ReplyRate, r.totals.replies as f64 / d);
    v.insert(
        Metric::ThroughputMbS,
        r.reply.content_bytes * r.totals.replies as f64 / d / 1e6,
    );
    if r.latency.response.count > 0 {
        v.insert(Metric::ResponseMs, r.latency.response.mean_ms);
        if let Some(p) = r.latency.response.at(99.0) {
            v.insert(Metric::P99Ms, p);
        }
    }
    if r.connection.lifetime_ms.count > 0 {
        v.insert(Metric::ConnectionMs, r.connection.lifetime_ms.avg);
    }
    if let Some(v2) = r
        .config
        .extra
        .get(crate::loadgen::EXTRA_SESSION_MS)
        .and_then(|x| x.parse::<f64>().ok())
    {
        v.insert(Metric::SessionMs, v2);
    } else if r.connection.lifetime_ms.count > 0 {
        // httplab load: one connection per session.
        v.insert(Metric::SessionMs, r.connection.lifetime_ms.avg);
    }
    let req: f64 = r
        .config
        .extra
        .get("requested_body_bytes")
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0);
    let ok: f64 = r
        .config
        .extra
        .get("intact_body_bytes")
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0);
    if req > 0.0 {
        v.insert(Metric::Accuracy, (ok / req * 100.0).min(100.0));
    } else if r.accuracy.verified > 0 {
        // httplab load: share of verified bodies that matched, scaled by the
        // share of replies among requests.
        let a = &r.accuracy;
        let matched = (a.verified - a.mismatches.min(a.verified)) as f64 / a.verified as f64;
        let answered = r.totals.replies as f64 / r.totals.requests.max(1) as f64;
        v.insert(Metric::Accuracy, (matched * answered * 100.0).min(100.0));
    }
    if let Some(s) = &r.server {
        if r.totals.replies > 0 {
            v.insert(
                Metric::ServerCpuPerKreq,
                s.cpu_s / r.totals.replies as f64 * 1000.0,
            );
        }
        v.insert(Metric::ServerRssMb, s.peak_rss_bytes as f64 / 1e6);
    }
    v
}

/// One row of the flat table: a run (or a sweep step) of a server.
#[derive(Debug, Clone)]
pub struct Row {
    /// Workload.
    pub workload: String,
    /// Server.
    pub server: String,
    /// Step label ("" when the workload has one step).
    pub step: String,
    /// Repetition.
    pub repetition: u32,
    /// ok / failed / not installed / skipped.
    pub status: String,
    /// Why not ok.
    pub reason: String,
    /// Metric values.
    pub metrics: BTreeMap<Metric, f64>,
    /// The load generator limited this run.
    pub client_bound: bool,
    /// Replies, errors.
    pub replies: u64,
    /// Errors of any class.
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
            status: r.status.clone(),
            reason: r.reason.clone(),
            metrics: run.map(metrics_of).unwrap_or_default(),
            client_bound: run.is_some_and(|x| x.self_check.client_bound),
            replies: run.map_or(0, |x| x.totals.replies),
            errors: run.map_or(0, |x| x.errors.total),
        };
        if let Some(sw) = &r.sweep {
            let steps: Vec<&m::SweepStep> =
                sw.targets.iter().flat_map(|t| t.steps.iter()).collect();
            if steps.is_empty() {
                out.push(mk(String::new(), None));
            }
            for s in steps {
                out.push(mk(crate::runner::fmt_num(s.demanded_rate), Some(&s.run)));
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
                .and_then(|x| x.config.extra.get(EXTRA_STEP).cloned())
                .unwrap_or_default();
            out.push(mk(step, r.run.as_ref()));
        }
    }
    out
}

/// Mean and standard deviation over repetitions.
#[derive(Debug, Clone, Default)]
pub struct Agg {
    /// Mean per metric.
    pub mean: BTreeMap<Metric, f64>,
    /// Stddev per metric.
    pub sd: BTreeMap<Metric, f64>,
    /// Successful runs.
    pub ok: u32,
    /// Runs in total.
    pub n: u32,
    /// Any run client-bound.
    pub client_bound: bool,
    /// First non-ok status and reason.
    pub problem: Option<(String, String)>,
}

/// (server, step, aggregate) cells of one workload.
pub type Cells = Vec<(String, String, Agg)>;

/// workload → (server, step) → aggregate, in first-seen order.
pub fn aggregate(rows: &[Row]) -> Vec<(String, Cells)> {
    let mut out: Vec<(String, Cells)> = Vec::new();
    for r in rows {
        let wi = match out.iter().position(|(w, _)| *w == r.workload) {
            Some(i) => i,
            None => {
                out.push((r.workload.clone(), Vec::new()));
                out.len() - 1
            }
        };
        let list = &mut out[wi].1;
        let si = match list
            .iter()
            .position(|(s, st, _)| *s == r.server && *st == r.step)
        {
            Some(i) => i,
            None => {
                list.push((r.server.clone(), r.step.clone(), Agg::default()));
                list.len() - 1
            }
        };
        let a = &mut list[si].2;
        a.n += 1;
        if r.status == "ok" {
            a.ok += 1;
        } else if a.problem.is_none() {
            a.problem = Some((r.status.clone(), r.reason.clone()));
        }
        a.client_bound |= r.client_bound;
    }
    for (w, list) in out.iter_mut() {
        for (s, st, a) in list.iter_mut() {
            for metric in Metric::ALL {
                let vals: Vec<f64> = rows
                    .iter()
                    .filter(|r| {
                        r.workload == *w && r.server == *s && r.step == *st && r.status == "ok"
                    })
                    .filter_map(|r| r.metrics.get(&metric).copied())
                    .collect();
                if !vals.is_empty() {
                    let sm = m::Summary::of(&vals);
                    a.mean.insert(metric, sm.avg);
                    a.sd.insert(metric, sm.stddev);
                }
            }
        }
    }
    out
}

fn primary_metric(study: Option<&StudyFile>, workload: &str) -> Metric {
    let Some(s) = study else {
        return Metric::ReplyRate;
    };
    let w = s.workloads.iter().find(|w| w.name == workload);
    w.and_then(|w| w.metric)
        .or(s.compare.metric)
        .unwrap_or(match w.map(|w| w.kind) {
            Some(WorkloadKind::Users) => Metric::ThroughputMbS,
            _ => Metric::ReplyRate,
        })
}

fn fmt_val(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        let s = format!("{:.0}", x);
        // thousands separators
        let (sign, digits) = s.split_at(if s.starts_with('-') { 1 } else { 0 });
        let mut o = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(c);
        }
        format!("{sign}{o}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Written summary: per workload, who won by how much on its metric.
pub fn summary(res: &m::StudyResult, study: Option<&StudyFile>) -> Vec<String> {
    summarize(res, study).0
}

/// One sentence over all workloads: how many each server won.
pub fn headline(res: &m::StudyResult, study: Option<&StudyFile>) -> String {
    let (_, winners) = summarize(res, study);
    if winners.is_empty() {
        return "No workload was completed by any server.".into();
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (_, w) in &winners {
        match counts.iter_mut().find(|(n, _)| n == w) {
            Some(c) => c.1 += 1,
            None => counts.push((w.clone(), 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let parts: Vec<String> = counts
        .iter()
        .map(|(n, c)| {
            let ws: Vec<&str> = winners
                .iter()
                .filter(|(_, w)| w == n)
                .map(|(x, _)| x.as_str())
                .collect();
            format!("{n} won {c} ({})", ws.join(", "))
        })
        .collect();
    format!(
        "Of {} workload(s) with a winner: {}.",
        winners.len(),
        parts.join("; ")
    )
}

/// Summary lines and (workload, winner) pairs.
fn summarize(
    res: &m::StudyResult,
    study: Option<&StudyFile>,
) -> (Vec<String>, Vec<(String, String)>) {
    let rows = rows(res);
    let agg = aggregate(&rows);
    let mut lines = Vec::new();
    let mut winners = Vec::new();
    let baseline = study.and_then(|s| s.compare.baseline.clone());
    for (w, list) in &agg {
        let metric = primary_metric(study, w);
        let hib = metric.higher_is_better();
        let is_sweep = study
            .and_then(|s| s.workloads.iter().find(|x| x.name == *w))
            .is_some_and(|x| x.kind == WorkloadKind::Sweep);
        // Per server: mean of its step means (only servers with every step).
        let mut servers: Vec<String> = Vec::new();
        for (s, _, _) in list {
            if !servers.contains(s) {
                servers.push(s.clone());
            }
        }
        let steps: Vec<&String> = {
            let mut v: Vec<&String> = Vec::new();
            for (_, st, _) in list {
                if !v.contains(&st) {
                    v.push(st);
                }
            }
            v
        };
        let mut scores: Vec<(String, f64)> = Vec::new();
        let mut missing: Vec<(String, String)> = Vec::new();
        for s in &servers {
            let vals: Vec<f64> = list
                .iter()
                .filter(|(x, st, _)| x == s && st.as_str() != "(rest)")
                .filter_map(|(_, _, a)| a.mean.get(&metric).copied())
                .collect();
            let nsteps = steps.iter().filter(|st| st.as_str() != "(rest)").count();
            if vals.len() == nsteps && !vals.is_empty() {
                // A sweep is ranked by its best step (the peak reply rate);
                // other workloads by the mean over their steps.
                let score = if is_sweep && hib {
                    vals.iter().copied().fold(f64::MIN, f64::max)
                } else {
                    vals.iter().sum::<f64>() / vals.len() as f64
                };
                scores.push((s.clone(), score));
            } else {
                let why = list
                    .iter()
                    .find(|(x, _, a)| x == s && a.problem.is_some())
                    .and_then(|(_, _, a)| a.problem.clone());
                missing.push((
                    s.clone(),
                    match why {
                        Some((st, r)) if r.is_empty() => st,
                        Some((st, r)) => format!("{st}: {r}"),
                        None => format!("no {} value", metric.label()),
                    },
                ));
            }
        }
        scores.sort_by(|a, b| {
            if hib {
                b.1.total_cmp(&a.1)
            } else {
                a.1.total_cmp(&b.1)
            }
        });
        let mut line = format!("{w}: ");
        match scores.as_slice() {
            [] => line.push_str("no server completed it"),
            [(only, v)] => line.push_str(&format!(
                "only {only} completed it ({} {})",
                fmt_val(*v),
                metric.label()
            )),
            [(best, bv), (second, sv), ..] => {
                winners.push((w.clone(), best.clone()));
                let ratio = if hib {
                    bv / sv.max(1e-12)
                } else {
                    sv / bv.max(1e-12)
                };
                line.push_str(&format!(
                    "{best} won on {}{} with {} vs {} for {second} ({})",
                    if is_sweep && hib { "peak " } else { "" },
                    metric.label(),
                    fmt_val(*bv),
                    fmt_val(*sv),
                    ratio_text(ratio, hib)
                ));
                if let Some(b) = &baseline {
                    if b != best && b != second {
                        if let Some((_, v)) = scores.iter().find(|(n, _)| n == b) {
                            let r = if hib {
                                bv / v.max(1e-12)
                            } else {
                                v / bv.max(1e-12)
                            };
                            line.push_str(&format!(
                                "; baseline {b}: {} ({})",
                                fmt_val(*v),
                                ratio_text(r, hib)
                            ));
                        }
                    }
                }
                if scores.len() > 2 {
                    let last = &scores[scores.len() - 1];
                    line.push_str(&format!("; last: {} with {}", last.0, fmt_val(last.1)));
                }
            }
        }
        let cb: Vec<String> = list
            .iter()
            .filter(|(_, _, a)| a.client_bound)
            .map(|(s, _, _)| s.clone())
            .collect();
        // One entry per server: "nginx" or "nginx (2 of 4 steps)".
        let cb: Vec<String> = servers
            .iter()
            .filter_map(|srv| {
                let n = cb.iter().filter(|x| *x == srv).count();
                let of = list
                    .iter()
                    .filter(|(x, st, _)| x == srv && st != "(rest)")
                    .count();
                match n {
                    0 => None,
                    _ if of <= 1 => Some(srv.clone()),
                    _ => Some(format!("{srv} ({n} of {of} steps)")),
                }
            })
            .collect();
        if !cb.is_empty() {
            line.push_str(&format!(
                ". Client-bound (the load generator, not the server, was the limit): {}",
                cb.join(", ")
            ));
        }
        if !missing.is_empty() {
            // Group servers that share a reason: "a, b (skipped: …)".
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for (srv, why) in &missing {
                match groups.iter_mut().find(|(w, _)| w == why) {
                    Some(g) => g.1.push(srv.clone()),
                    None => groups.push((why.clone(), vec![srv.clone()])),
                }
            }
            let parts: Vec<String> = groups
                .iter()
                .map(|(why, srvs)| format!("{} ({why})", srvs.join(", ")))
                .collect();
            line.push_str(&format!(". Not compared: {}", parts.join("; ")));
        }
        line.push('.');
        lines.push(line);
    }
    (lines, winners)
}

fn ratio_text(r: f64, hib: bool) -> String {
    if !r.is_finite() || r <= 0.0 {
        return "no comparison".into();
    }
    match (hib, r >= 2.0) {
        (true, true) => format!("{r:.1}× as high"),
        (true, false) => format!("+{:.0}%", (r - 1.0) * 100.0),
        (false, true) => format!("{r:.1}× lower"),
        (false, false) => format!("{:.0}% lower", (1.0 - 1.0 / r) * 100.0),
    }
}

/// Writes results.json, runs.csv, summary.csv and index.html into `out`.
pub fn write_all(
    res: &m::StudyResult,
    study: Option<&StudyFile>,
    out: &Path,
    interrupted: bool,
) -> Result<()> {
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = serde_json::to_string_pretty(res)?;
    fs::write(out.join("results.json"), json).context("writing results.json")?;
    let rows = rows(res);
    write_csv(&rows, &out.join("runs.csv"))?;
    write_summary_csv(&rows, &out.join("summary.csv"))?;
    fs::write(out.join("index.html"), html(res, study, interrupted))
        .context("writing index.html")?;
    Ok(())
}

fn write_csv(rows: &[Row], path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut head = vec![
        "workload",
        "server",
        "step",
        "repetition",
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
            r.status.clone(),
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

fn write_summary_csv(rows: &[Row], path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut head = vec![
        "workload".to_string(),
        "server".into(),
        "step".into(),
        "ok_runs".into(),
        "runs".into(),
        "client_bound".into(),
        "problem".into(),
    ];
    for mt in Metric::ALL {
        head.push(format!("{}_mean", mt.key()));
        head.push(format!("{}_sd", mt.key()));
    }
    w.write_record(&head)?;
    for (wl, list) in aggregate(rows) {
        for (s, st, a) in list {
            let mut rec = vec![
                wl.clone(),
                s,
                st,
                a.ok.to_string(),
                a.n.to_string(),
                a.client_bound.to_string(),
                a.problem
                    .map(|(s, r)| format!("{s}: {r}"))
                    .unwrap_or_default(),
            ];
            for mt in Metric::ALL {
                rec.push(
                    a.mean
                        .get(&mt)
                        .map(|v| format!("{v:.6}"))
                        .unwrap_or_default(),
                );
                rec.push(a.sd.get(&mt).map(|v| format!("{v:.6}")).unwrap_or_default());
            }
            w.write_record(&rec)?;
        }
    }
    w.flush()?;
    Ok(())
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// A bar chart of one value per server.
pub fn svg_bars(title: &str, unit: &str, bars: &[(String, f64, Option<f64>)]) -> String {
    let w = 640.0;
    let row = 26.0;
    let left = 190.0;
    let h = 40.0 + row * bars.len() as f64 + 10.0;
    let max = bars
        .iter()
        .map(|b| b.1 + b.2.unwrap_or(0.0))
        .fold(0.0_f64, f64::max)
        .max(1e-12);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\"><title>{}</title>", esc(title));
    let _ = write!(
        s,
        "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{} ({})</text>",
        esc(title),
        esc(unit)
    );
    for (i, (name, v, sd)) in bars.iter().enumerate() {
        let y = 34.0 + row * i as f64;
        let bw = (w - left - 90.0) * v / max;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 15.0,
            esc(name)
        );
        let _ = write!(
            s,
            "<rect x=\"{left}\" y=\"{y}\" width=\"{bw:.1}\" height=\"20\" fill=\"{}\"/>",
            PALETTE[i % PALETTE.len()]
        );
        if let Some(sd) = sd.filter(|x| *x > 0.0) {
            let x0 = left + (w - left - 90.0) * (v - sd).max(0.0) / max;
            let x1 = left + (w - left - 90.0) * (v + sd) / max;
            let _ = write!(
                s,
                "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"black\"/>",
                y + 10.0,
                y + 10.0
            );
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"12\">{}</text>",
            left + bw + 4.0,
            y + 15.0,
            fmt_val(*v)
        );
    }
    s.push_str("</svg>");
    s
}

/// A line chart: x labels (numeric when all parse), one series per server.
pub fn svg_lines(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    xs: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let (w, h) = (640.0, 360.0);
    let (l, r, t, b) = (70.0, 170.0, 30.0, 50.0);
    let numeric: Option<Vec<f64>> = xs.iter().map(|x| x.parse::<f64>().ok()).collect();
    let xpos: Vec<f64> = match &numeric {
        Some(v) if v.len() > 1 => {
            let (lo, hi) = (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            v.iter()
                .map(|x| l + (w - l - r) * if hi > lo { (x - lo) / (hi - lo) } else { 0.5 })
                .collect()
        }
        _ => (0..xs.len())
            .map(|i| {
                l + (w - l - r)
                    * if xs.len() > 1 {
                        i as f64 / (xs.len() - 1) as f64
                    } else {
                        0.5
                    }
            })
            .collect(),
    };
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .copied()
        .fold(0.0_f64, f64::max)
        .max(1e-12)
        * 1.1;
    let ypos = |v: f64| t + (h - t - b) * (1.0 - v / ymax);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\"><title>{}</title>", esc(title));
    let _ = write!(
        s,
        "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        esc(title)
    );
    let _ = write!(s, "<line x1=\"{l}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"#333\"/>", h - b, w - r, h - b, h - b);
    for k in 0..=4 {
        let v = ymax * k as f64 / 4.0;
        let y = ypos(v);
        let _ = write!(s, "<line x1=\"{l}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>", w - r, l - 4.0, y + 4.0, fmt_val(v));
    }
    for (i, x) in xs.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            xpos[i],
            h - b + 16.0,
            esc(x)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
        l + (w - l - r) / 2.0,
        h - 10.0,
        esc(xlabel)
    );
    let _ = write!(s, "<text x=\"14\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>", t + (h - t - b) / 2.0, t + (h - t - b) / 2.0, esc(ylabel));
    for (si, (name, ys)) in series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let pts: Vec<String> = ys
            .iter()
            .enumerate()
            .filter_map(|(i, y)| y.map(|y| format!("{:.1},{:.1}", xpos[i], ypos(y))))
            .collect();
        if pts.len() > 1 {
            let _ = write!(
                s,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                pts.join(" ")
            );
        }
        for p in &pts {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                s,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let ly = t + 14.0 + 18.0 * si as f64;
        let _ = write!(s, "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>", w - r + 10.0, ly - 10.0, w - r + 26.0, ly, esc(name));
    }
    s.push_str("</svg>");
    s
}

/// The whole index.html.
pub fn html(res: &m::StudyResult, study: Option<&StudyFile>, interrupted: bool) -> String {
    let rows = rows(res);
    let agg = aggregate(&rows);
    let title = study
        .map(|s| {
            if s.title.is_empty() {
                s.name.clone()
            } else {
                s.title.clone()
            }
        })
        .unwrap_or_else(|| res.name.clone());
    let mut h = String::new();
    let _ = write!(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>httplab study: {}</title>\n<style>\
        body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\
        table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}\
        th{{background:#f3f3f3}}td.l,th.l{{text-align:left}}tr.bad td{{background:#fff3f3}}.cb{{color:#b35900;font-weight:bold}}\
        .warn{{background:#fff7e0;border:1px solid #e0c070;padding:.5em 1em}}code{{background:#f4f4f4;padding:0 3px}}\
        </style></head><body>\n", esc(&title));
    let _ = writeln!(h, "<h1>httplab study: {}</h1>", esc(&title));
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
    // Summary
    let _ = writeln!(
        h,
        "<h2 id=\"summary\">Summary</h2><p><b>{}</b></p><ul>",
        esc(&headline(res, study))
    );
    for line in summary(res, study) {
        let _ = writeln!(h, "<li>{}</li>", esc(&line));
    }
    let _ = writeln!(h, "</ul>");
    let cb = rows.iter().filter(|r| r.client_bound).count();
    let failed = rows.iter().filter(|r| r.status == "failed").count();
    let _ = writeln!(h, "<p>{} run(s) in total; {} failed; {} client-bound (marked <span class=\"cb\">⚠ client-bound</span>: the load generator, not the server, limited them, so they understate the server).</p>", rows.len(), failed, cb);
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
        let status = if let Some(ni) = all.iter().find(|x| x.status == "not installed") {
            ni.reason.clone()
        } else if ok == all.len() {
            format!("{ok} run(s) ok")
        } else {
            let bad = all
                .iter()
                .find(|x| x.status != "ok")
                .map(|x| format!("{}: {}", x.status, x.reason))
                .unwrap_or_default();
            format!("{ok} of {} run(s) ok; {bad}", all.len())
        };
        let version = res
            .environment
            .extra
            .get(&format!("version: {}", r.server))
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
    // Workloads
    for (w, list) in &agg {
        let metric = primary_metric(study, w);
        let wl = study.and_then(|s| s.workloads.iter().find(|x| x.name == *w));
        let _ = writeln!(h, "<h2 id=\"w-{}\">Workload: {}</h2>", esc(w), esc(w));
        if let Some(wl) = wl {
            if !wl.description.is_empty() {
                let _ = writeln!(h, "<p>{}</p>", esc(&wl.description));
            }
            let st = crate::runner::steps(wl);
            let _ = writeln!(
                h,
                "<p>Kind <code>{}</code>; {}{}.</p>",
                wl.kind.as_str(),
                esc(&st.first().map(describe_step).unwrap_or_default()),
                if st.len() > 1 {
                    format!(" ({} steps)", st.len())
                } else {
                    String::new()
                }
            );
        }
        let servers: Vec<String> = {
            let mut v: Vec<String> = Vec::new();
            for (s, _, _) in list {
                if !v.contains(s) {
                    v.push(s.clone());
                }
            }
            v
        };
        let steps: Vec<String> = {
            let mut v: Vec<String> = Vec::new();
            for (_, st, _) in list {
                if !v.contains(st) && st != "(rest)" {
                    v.push(st.clone());
                }
            }
            v
        };
        let shown = study
            .map(|s| s.compare.metrics.clone())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| Metric::ALL.to_vec());
        // Chart
        if steps.len() > 1 {
            let xlabel = wl
                .map(|wl| match (&wl.vary, wl.kind) {
                    (_, WorkloadKind::Sweep) => "demanded rate (conn/s)".to_string(),
                    (Some(v), _) => v.param.as_str().to_string(),
                    _ => "step".into(),
                })
                .unwrap_or_else(|| "step".into());
            let second = if metric == Metric::ResponseMs {
                Metric::ThroughputMbS
            } else {
                Metric::ResponseMs
            };
            for mt in [metric, second] {
                let series: Vec<(String, Vec<Option<f64>>)> = servers
                    .iter()
                    .map(|s| {
                        (
                            s.clone(),
                            steps
                                .iter()
                                .map(|st| {
                                    list.iter()
                                        .find(|(x, y, _)| x == s && y == st)
                                        .and_then(|(_, _, a)| a.mean.get(&mt).copied())
                                })
                                .collect(),
                        )
                    })
                    .collect();
                if series.iter().any(|(_, v)| v.iter().any(|x| x.is_some())) {
                    h.push_str(&svg_lines(
                        &format!("{w}: {}", mt.label()),
                        &xlabel,
                        mt.label(),
                        &steps,
                        &series,
                    ));
                    h.push('\n');
                }
            }
        } else {
            // The ranking metric, then the server's cost for the same work.
            let mut charted = vec![metric];
            if metric != Metric::ServerCpuPerKreq {
                charted.push(Metric::ServerCpuPerKreq);
            }
            for mt in charted {
                let bars: Vec<(String, f64, Option<f64>)> = list
                    .iter()
                    .filter_map(|(s, _, a)| {
                        a.mean
                            .get(&mt)
                            .map(|v| (s.clone(), *v, a.sd.get(&mt).copied()))
                    })
                    .collect();
                if !bars.is_empty() {
                    h.push_str(&svg_bars(
                        &format!("{w}: {}", mt.label()),
                        if mt.higher_is_better() {
                            "higher is better"
                        } else {
                            "lower is better"
                        },
                        &bars,
                    ));
                    h.push('\n');
                }
            }
        }
        // Saturation of sweeps
        let sats: Vec<(&str, u32, &m::Saturation)> = res
            .runs
            .iter()
            .filter(|r| r.workload == *w)
            .filter_map(|r| {
                let t = r.sweep.as_ref()?.targets.first()?;
                Some((r.server.as_str(), r.repetition, &t.saturation))
            })
            .collect();
        if !sats.is_empty() {
            let _ = writeln!(h, "<table><tr><th class=\"l\">server</th><th>repetition</th><th>highest rate sustained (conn/s)</th><th>first rate not sustained</th></tr>");
            for (srv, rep, sat) in sats {
                let f = |x: Option<f64>| x.map_or("–".to_string(), crate::runner::fmt_num);
                let _ = writeln!(
                    h,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(srv),
                    rep + 1,
                    f(sat.max_sustainable_rate),
                    f(sat.knee_rate)
                );
            }
            let _ = writeln!(h, "</table><p>Sustained: every reply arrived, at 95% or more of the demanded rate, with no errors.</p>");
        }
        // Table
        let _ = write!(
            h,
            "<table><tr><th class=\"l\">server</th>{}<th class=\"l\">runs ok</th>",
            if steps.len() > 1 || steps.iter().any(|s| !s.is_empty()) {
                "<th>step</th>"
            } else {
                ""
            }
        );
        for mt in &shown {
            let _ = write!(h, "<th>{}</th>", esc(mt.label()));
        }
        let _ = writeln!(h, "<th class=\"l\">notes</th></tr>");
        for (s, st, a) in list {
            let bad = a.ok < a.n;
            let _ = write!(
                h,
                "<tr{}><td class=\"l\">{}</td>",
                if bad { " class=\"bad\"" } else { "" },
                esc(s)
            );
            if steps.len() > 1 || steps.iter().any(|s| !s.is_empty()) {
                let _ = write!(h, "<td>{}</td>", esc(st));
            }
            let _ = write!(h, "<td class=\"l\">{}/{}</td>", a.ok, a.n);
            for mt in &shown {
                let cell = match (a.mean.get(mt), a.sd.get(mt)) {
                    (Some(v), Some(sd)) if a.ok > 1 && *sd > 0.0 => {
                        format!("{} ± {}", fmt_val(*v), fmt_val(*sd))
                    }
                    (Some(v), _) => fmt_val(*v),
                    _ => "–".into(),
                };
                let _ = write!(h, "<td>{cell}</td>");
            }
            let mut notes = Vec::new();
            if a.client_bound {
                notes.push("<span class=\"cb\">⚠ client-bound</span>".to_string());
            }
            if let Some((stt, r)) = &a.problem {
                notes.push(esc(&format!(
                    "{stt}{}",
                    if r.is_empty() {
                        String::new()
                    } else {
                        format!(": {r}")
                    }
                )));
            }
            let _ = writeln!(h, "<td class=\"l\">{}</td></tr>", notes.join("; "));
        }
        let _ = writeln!(h, "</table>");
    }
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
    kv.extend(e.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (k, v) in kv {
        let _ = writeln!(
            h,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(&k),
            esc(&v)
        );
    }
    let _ = writeln!(h, "</table>");
    let _ = writeln!(h, "<p>Data: <a href=\"results.json\">results.json</a> (schema {}), <a href=\"runs.csv\">runs.csv</a>, <a href=\"summary.csv\">summary.csv</a>.</p>", m::STUDY_SCHEMA);
    h.push_str("</body></html>\n");
    h
}

fn describe_step(p: &crate::runner::StepParams) -> String {
    use crate::loadgen::Offer;
    let mut t = match p.offer {
        Offer::Open {
            rate: Some(r),
            num_conns,
        } => format!("{num_conns} connections at {}/s", crate::runner::fmt_num(r)),
        Offer::Open {
            rate: None,
            num_conns,
        } => format!("{num_conns} connections back to back"),
        Offer::Closed {
            users, requests, ..
        } => format!("{users} users × {requests} requests"),
    };
    t.push_str(&format!(", {} request(s) per connection", p.num_calls));
    if p.pipeline > 1 {
        t.push_str(&format!(", pipelined {} deep", p.pipeline));
    }
    t.push_str(&format!(", target {}", p.target));
    t
}
