//! The report: one self-contained `index.html` (inline SVG and CSS, no
//! network, no JavaScript), every chart as its own `.svg`, and a Markdown
//! summary (`summary.md`). Output depends only on the documents given, so the
//! same input renders byte-identical files.

use crate::charts::{self, SpectrumCurve};
use crate::data::{self, Collected, SweepSeries};
use crate::forest;
use crate::text::{self, esc_html, num, Table};
use anyhow::{Context, Result};
use httplab_model::Document;
use std::path::{Path, PathBuf};

/// One chart of a report.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name inside the output directory (`reply-rate.svg`).
    pub file: String,
    /// Short title.
    pub title: String,
    /// Caption under the figure.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

/// Options of [`render_report_with`].
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Page title (default "httplab report").
    pub title: String,
    /// Names of the input files, listed under the title.
    pub sources: Vec<String>,
}

/// What [`render_report`] wrote.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    /// `DIR/index.html`.
    pub index: PathBuf,
    /// `DIR/summary.md`.
    pub markdown: PathBuf,
    /// Every chart written, in figure order.
    pub svgs: Vec<PathBuf>,
}

/// Renders `docs` into `out_dir` (created if needed) with default options.
pub fn render_report(docs: &[Document], out_dir: &Path) -> Result<ReportFiles> {
    render_report_with(docs, out_dir, &ReportOptions::default())
}

/// Renders `docs` into `out_dir`: `index.html`, `summary.md` and one `.svg`
/// per figure.
pub fn render_report_with(
    docs: &[Document],
    out_dir: &Path,
    opts: &ReportOptions,
) -> Result<ReportFiles> {
    let c = data::collect(docs);
    let figs = figures(&c)?;
    let mut tables = text::all_tables(&c);
    tables.extend(crate::shards::shard_tables(&c));
    tables.extend(crate::stages::stage_tables(&c));
    tables.extend(crate::stages::probe_tables(&c));
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut svgs = Vec::new();
    for f in &figs {
        let p = out_dir.join(&f.file);
        std::fs::write(&p, &f.svg).with_context(|| format!("cannot write {}", p.display()))?;
        svgs.push(p);
    }
    let index = out_dir.join("index.html");
    std::fs::write(&index, html_page(&c, &figs, &tables, opts))
        .with_context(|| format!("cannot write {}", index.display()))?;
    let markdown = out_dir.join("summary.md");
    std::fs::write(&markdown, markdown_summary(&c, &figs, &tables, opts))
        .with_context(|| format!("cannot write {}", markdown.display()))?;
    Ok(ReportFiles {
        index,
        markdown,
        svgs,
    })
}

fn slug(s: &str) -> String {
    let mut o = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            o.push(ch.to_ascii_lowercase());
        } else if !o.ends_with('-') {
            o.push('-');
        }
    }
    let o = o.trim_matches('-').to_string();
    if o.is_empty() {
        "run".into()
    } else {
        o.chars().take(40).collect()
    }
}

/// Steps of one sweep whose spectra are worth drawing: up to six, spread over
/// the range, always including the max-sustainable step and the first step
/// above it.
fn spectrum_steps(s: &SweepSeries) -> Vec<usize> {
    let n = s.steps.len();
    if n == 0 {
        return vec![];
    }
    let mut pick: Vec<usize> = Vec::new();
    if let Some(max) = s.target.saturation.max_sustainable_rate {
        if let Some(i) = s
            .steps
            .iter()
            .position(|st| (st.demanded_rate - max).abs() < 1e-9)
        {
            pick.push(i);
            if i + 1 < n {
                pick.push(i + 1);
            }
        }
    }
    let want = 6usize.min(n);
    let mut k = 0;
    while pick.len() < want && k < want {
        let i = if want == 1 {
            0
        } else {
            k * (n - 1) / (want - 1)
        };
        if !pick.contains(&i) {
            pick.push(i);
        }
        k += 1;
    }
    pick.sort_unstable();
    pick.dedup();
    pick.truncate(7);
    pick
}

/// Every figure of a report, in reading order.
pub fn figures(c: &Collected) -> Result<Vec<Figure>> {
    let mut v = Vec::new();
    if !c.sweeps.is_empty() {
        let any_cb_sweep = c.sweeps.iter().any(|s| s.client_bound_steps() > 0);
        let cb_note = if any_cb_sweep {
            " Runs where the load generator was the bottleneck are circled and crossed in red."
        } else {
            ""
        };
        sweep_overview_figures(c, cb_note, &mut v)?;
        sweep_spectrum_figure(c, &mut v)?;
        sweep_timeseries_figures(c, &mut v)?;
    }
    if !c.runs.is_empty() {
        run_spectrum_figures(c, &mut v)?;
        run_timeseries_figures(c, &mut v)?;
        stage_figures(c, &mut v)?;
    }
    Ok(v)
}

/// The chart of each staged run's per-stage percentiles against offered rate.
pub(crate) fn stage_figures(c: &Collected, v: &mut Vec<Figure>) -> Result<()> {
    for (k, it) in c
        .runs
        .iter()
        .filter(|it| !it.run.stages.is_empty())
        .enumerate()
    {
        v.push(Figure {
            file: format!("stages-{}.svg", k + 1),
            title: format!("Stages — {}", it.label),
            caption: format!(
                "p50 and p99 (corrected) of each stage of {} against the stage's mean offered rate.",
                it.label
            ),
            svg: charts::stage_latency_chart(&it.label, &it.run.stages)?,
        });
    }
    Ok(())
}

/// The sweeps' reply rate, response time and errors against the demanded
/// rate, every sweep on each chart.
fn sweep_overview_figures(c: &Collected, cb_note: &str, v: &mut Vec<Figure>) -> Result<()> {
    let many = c.sweeps.len() > 1;
    let which = if many {
        "each server overlaid"
    } else {
        "one target"
    };
    v.push(Figure {
        file: "reply-rate.svg".into(),
        title: "Reply rate vs demanded request rate".into(),
        caption: format!(
            "Reply rate against demanded request rate ({which}). The grey diagonal is a server that keeps up; whiskers span the per-interval reply-rate samples (min–max). The dashed vertical line marks the maximum sustainable rate, the triangle the knee of the response-time curve.{cb_note}"
        ),
        svg: charts::reply_rate_chart(&c.sweeps)?,
    });
    v.push(Figure {
        file: "response-time.svg".into(),
        title: "Response time vs demanded request rate".into(),
        caption: format!(
            "Median (solid) and 99th-percentile (dashed) response time, measured from each request's scheduled send (coordinated-omission corrected), on a log scale. The horizontal line is the p99 SLO; the dashed vertical line marks the maximum sustainable rate.{cb_note}"
        ),
        svg: charts::response_time_chart(&c.sweeps)?,
    });
    v.push(Figure {
        file: "errors.svg".into(),
        title: "Errors vs demanded request rate".into(),
        caption: format!(
            "Failed operations (httperf error classes plus 5xx replies) in percent of attempted connections or requests. A step counts as sustained only below 0.1 %.{cb_note}"
        ),
        svg: charts::errors_chart(&c.sweeps)?,
    });
    Ok(())
}

/// The percentile spectrum of a sweep's selected steps, or of each sweep at
/// its maximum sustainable rate.
fn sweep_spectrum_figure(c: &Collected, v: &mut Vec<Figure>) -> Result<()> {
    let mut curves: Vec<SpectrumCurve> = Vec::new();
    if c.sweeps.len() == 1 {
        let s = &c.sweeps[0];
        for i in spectrum_steps(s) {
            let st = s.steps[i];
            let label = format!("{} req/s", num(s.metrics[i].demanded_req_rate, 0));
            curves.push(charts::spectrum_of(&label, &st.run));
        }
    } else {
        for s in &c.sweeps {
            let idx = s
                .target
                .saturation
                .max_sustainable_rate
                .and_then(|m| {
                    s.steps
                        .iter()
                        .position(|st| (st.demanded_rate - m).abs() < 1e-9)
                })
                .unwrap_or(0);
            if let (Some(st), Some(m)) = (s.steps.get(idx), s.metrics.get(idx)) {
                let label = format!("{} @ {} req/s", s.label, num(m.demanded_req_rate, 0));
                curves.push(charts::spectrum_of(&label, &st.run));
            }
        }
    }
    curves.truncate(7);
    let sub = if c.sweeps.len() == 1 {
        "selected steps of the sweep, including the maximum sustainable rate and the step above it"
    } else {
        "each server at its maximum sustainable rate"
    };
    v.push(Figure {
        file: "sweep-percentiles.svg".into(),
        title: "Latency percentile spectrum (sweep)".into(),
        caption: format!(
            "HDR percentile spectrum of the response time for {sub}. The x axis counts nines (90 %, 99 %, 99.9 % …); the right end of each curve is its maximum."
        ),
        svg: charts::spectrum_chart(&curves, "Response-time percentile spectrum")?,
    });
    Ok(())
}

/// Over time, for up to four sweeps: the last sustained step and the first
/// one above it.
fn sweep_timeseries_figures(c: &Collected, v: &mut Vec<Figure>) -> Result<()> {
    for s in c.sweeps.iter().take(4) {
        let Some(max) = s.target.saturation.max_sustainable_rate else {
            continue;
        };
        let Some(i) = s
            .steps
            .iter()
            .position(|st| (st.demanded_rate - max).abs() < 1e-9)
        else {
            continue;
        };
        for (k, j) in [i, i + 1].into_iter().enumerate() {
            let (Some(st), Some(m)) = (s.steps.get(j), s.metrics.get(j)) else {
                continue;
            };
            let what = if k == 0 {
                "the highest sustained step"
            } else {
                "the first step above it"
            };
            let item = crate::data::RunItem {
                label: format!("{} @ {} req/s", s.label, num(m.demanded_req_rate, 0)),
                run: &st.run,
            };
            let n = v.len() + 1;
            v.push(Figure {
                file: format!("sweep-timeseries-{n}.svg"),
                title: format!("Time series — {}", item.label),
                caption: format!(
                    "Per-interval reply rate and p50/p99 response time of {} ({what}).{}",
                    item.label,
                    if st.run.self_check.client_bound {
                        " This run was client-bound."
                    } else {
                        ""
                    }
                ),
                svg: charts::timeseries_chart(&item)?,
            });
        }
    }
    Ok(())
}

/// The runs' percentile spectra, up to seven runs overlaid per chart.
fn run_spectrum_figures(c: &Collected, v: &mut Vec<Figure>) -> Result<()> {
    for (k, chunk) in c.runs.chunks(7).enumerate() {
        let curves: Vec<SpectrumCurve> = chunk
            .iter()
            .map(|it| charts::spectrum_of(&it.label, it.run))
            .collect();
        let file = if k == 0 {
            "percentiles.svg".to_string()
        } else {
            format!("percentiles-{}.svg", k + 1)
        };
        let cb = if chunk.iter().any(|i| i.run.self_check.client_bound) {
            " Client-bound runs are labelled and marked in red."
        } else {
            ""
        };
        v.push(Figure {
            file,
            title: "Latency percentile spectrum".into(),
            caption: format!(
                "HDR percentile spectrum of the response time of {}, from the scheduled send (coordinated-omission corrected). The x axis counts nines; the right end of each curve is its maximum.{cb}",
                if chunk.len() == 1 { "the run".to_string() } else { format!("{} runs overlaid", chunk.len()) }
            ),
            svg: charts::spectrum_chart(&curves, "Response-time percentile spectrum")?,
        });
    }
    Ok(())
}

/// The time series of each of the first 24 runs, one file per run.
fn run_timeseries_figures(c: &Collected, v: &mut Vec<Figure>) -> Result<()> {
    let mut used = std::collections::BTreeSet::new();
    for it in c.runs.iter().take(24) {
        let mut name = format!("timeseries-{}.svg", slug(&it.label));
        let mut n = 2;
        while !used.insert(name.clone()) {
            name = format!("timeseries-{}-{n}.svg", slug(&it.label));
            n += 1;
        }
        let cb = if it.run.self_check.client_bound {
            " This run was client-bound: the generator, not the server, limited it."
        } else {
            ""
        };
        v.push(Figure {
            file: name,
            title: format!("Time series — {}", it.label),
            caption: format!(
                "Per-interval reply rate (top, with the demanded rate dashed) and p50/p99 response time of the replies completed in each interval (bottom) for {}.{cb}",
                it.label
            ),
            svg: charts::timeseries_chart(it)?,
        });
    }
    Ok(())
}

/// Strips the XML prolog, if any, so an SVG can be inlined in HTML.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

const CSS: &str = r#"
:root { color-scheme: light; }
body { margin: 0; background: #fafafa; color: #1a1a1a;
  font: 16px/1.5 "Charter", "Bitstream Charter", "Georgia", "DejaVu Serif", serif; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 36px 60px; background: #fff;
  box-shadow: 0 0 0 1px #e6e6e6; }
h1 { font-size: 28px; margin: 8px 0 4px; font-weight: 600; }
h2 { font-size: 21px; margin: 36px 0 10px; border-bottom: 1px solid #ddd; padding-bottom: 4px; font-weight: 600; }
h3 { font-size: 17px; margin: 22px 0 6px; }
.sub { color: #555; margin: 0 0 18px; font-size: 14px; }
.sub code { font-size: 12.5px; }
.findings { border-left: 4px solid #0072b2; background: #f3f8fc; padding: 10px 16px; margin: 16px 0; }
.findings p { margin: 4px 0; }
.warn { border-left: 4px solid #c80028; background: #fdf2f4; padding: 10px 16px; margin: 16px 0; }
figure { margin: 22px 0; page-break-inside: avoid; }
figure svg { display: block; width: 100%; height: auto; max-width: 980px; margin: 0 auto; }
figcaption { font-size: 14px; color: #333; margin: 6px auto 0; max-width: 900px; }
figcaption b, caption b { font-weight: 600; }
table { border-collapse: collapse; margin: 18px auto 4px; font: 12.5px/1.35 "Helvetica Neue", Arial, "DejaVu Sans", sans-serif;
  border-top: 2px solid #222; border-bottom: 2px solid #222; }
caption { caption-side: top; text-align: left; font: 14px/1.4 "Charter", "Georgia", serif; padding-bottom: 6px; color: #222; }
th { border-bottom: 1px solid #222; font-weight: 600; padding: 4px 6px; text-align: left; white-space: nowrap; }
td { padding: 3px 6px; border-bottom: 1px solid #eee; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.cb td { background: #fdecef; color: #7a0018; }
p.note { font-size: 12.5px; color: #555; margin: 2px auto 14px; max-width: 900px; }
.wide { overflow-x: auto; }
pre { background: #f6f6f6; padding: 10px; font-size: 12px; overflow-x: auto; white-space: pre-wrap; }
dl.env { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 14px; }
dl.env dt { color: #555; } dl.env dd { margin: 0; }
details summary { cursor: pointer; color: #0056a0; }
@media print { body { background: #fff; } main { box-shadow: none; } }
"#;

fn findings(c: &Collected) -> Vec<String> {
    let mut v = Vec::new();
    for s in &c.sweeps {
        let sat = &s.target.saturation;
        let calls = if s.num_calls > 1 {
            format!(" × {} calls", s.num_calls)
        } else {
            String::new()
        };
        let max = match (s.max_req_rate(), sat.max_sustainable_rate) {
            (Some(r), Some(cr)) if s.num_calls > 1 => format!(
                "sustains up to <b>{} requests/s</b> ({} connections/s{calls})",
                num(r, 0),
                num(cr, 0)
            ),
            (Some(r), _) => format!("sustains up to <b>{} requests/s</b>", num(r, 0)),
            _ => "sustained <b>none</b> of the rates tried".to_string(),
        };
        let top = s.metrics.last();
        let all_ok = top.is_some_and(|m| m.sustained)
            && sat
                .max_sustainable_rate
                .is_some_and(|r| top.is_some_and(|m| (m.demanded_conn_rate - r).abs() < 1e-9));
        let max = if all_ok {
            format!("{max}, the highest rate tried: its limit lies above the range of this sweep")
        } else {
            max
        };
        let knee = s
            .knee_req_rate()
            .map(|k| {
                format!(
                    "; response time starts to climb above {} requests/s",
                    num(k, 0)
                )
            })
            .unwrap_or_default();
        let how = if sat.method == "find-max" {
            format!(
                " — found by adaptive search (bracket, then bisect to 2 %) in {} runs",
                sat.runs
            )
        } else {
            format!(" — {} steps", s.steps.len())
        };
        let max_step_cb = sat.max_sustainable_rate.is_some_and(|r| {
            s.metrics
                .iter()
                .any(|m| m.client_bound && (m.demanded_conn_rate - r).abs() < 1e-9)
        });
        let cb = if s.client_bound_steps() > 0 {
            format!(
                " <span style=\"color:#c80028\">⚠ {} of {} step(s) were client-bound{}</span>",
                s.client_bound_steps(),
                s.steps.len(),
                if max_step_cb {
                    ", including the highest sustained one: read its rate as a lower bound of the server's capacity."
                } else {
                    "."
                }
            )
        } else {
            String::new()
        };
        v.push(format!(
            "<b>{}</b> {max}{knee} (p99 SLO {}){how}.{cb}",
            esc_html(&s.label),
            charts::ms_label(s.slo_ms)
        ));
    }
    for it in &c.runs {
        let r = it.run;
        let p99 = crate::analysis::percentile_ms(r, 99.0)
            .map(text::ms)
            .unwrap_or_else(|| "–".into());
        let p50 = crate::analysis::percentile_ms(r, 50.0)
            .map(text::ms)
            .unwrap_or_else(|| "–".into());
        let cb = if r.self_check.client_bound {
            " <span style=\"color:#c80028\">⚠ client-bound.</span>"
        } else {
            ""
        };
        v.push(format!(
            "<b>{}</b>: {} replies in {} s ({} replies/s), p50 {} ms, p99 {} ms, {} errors.{cb}",
            esc_html(&it.label),
            num(r.totals.replies as f64, 0),
            num(r.totals.test_duration_s, 2),
            num(
                r.reply.rate.avg.max(if r.totals.test_duration_s > 0.0 {
                    r.totals.replies as f64 / r.totals.test_duration_s
                } else {
                    0.0
                }),
                1
            ),
            p50,
            p99,
            // Failed calls: errors and 5xx replies (`httplab_model::metric`).
            num(httplab_model::metric::failed_calls(r) as f64, 0)
        ));
    }
    v
}

fn client_bound_list(c: &Collected) -> Vec<String> {
    let mut v = Vec::new();
    for s in &c.sweeps {
        for (m, st) in s.metrics.iter().zip(&s.steps) {
            if m.client_bound {
                let why = st.run.self_check.warnings.join("; ");
                v.push(format!(
                    "{} at {} req/s{}",
                    s.label,
                    num(m.demanded_req_rate, 0),
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    }
                ));
            }
        }
    }
    for it in &c.runs {
        if it.run.self_check.client_bound {
            let why = it.run.self_check.warnings.join("; ");
            v.push(format!(
                "{}{}",
                it.label,
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ));
        }
    }
    v
}

fn html_page(c: &Collected, figs: &[Figure], tables: &[Table], opts: &ReportOptions) -> String {
    let mut h = String::new();
    push_page_head(&mut h, c, opts);
    // The page opens with its picture: the studies' forest plot, else the first figure (a
    // sweep's reply rate against the demanded rate), which the figures then go on from.
    let first = push_glance(&mut h, c, figs);
    push_verdicts(&mut h, c);
    push_findings(&mut h, c);
    push_client_bound(&mut h, c);
    push_figures_and_tables(&mut h, &figs[first..], first, tables);
    push_method_and_environment(&mut h, c);
    h.push_str("<p class=\"sub\">Generated by httplab report. This page is self-contained: no scripts, no external resources.</p>\n");
    h.push_str("</main>\n</body>\n</html>\n");
    h
}

/// The document head, the title and the line saying what the report holds.
fn push_page_head(h: &mut String, c: &Collected, opts: &ReportOptions) {
    let title = if opts.title.is_empty() {
        "httplab report"
    } else {
        &opts.title
    };
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    h.push_str(&format!(
        "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc_html(title)
    ));
    h.push_str(&format!("<h1>{}</h1>\n", esc_html(title)));
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    if !c.sweeps.is_empty() {
        parts.push(plural(c.sweeps.len(), "swept target", "swept targets"));
    }
    if !c.runs.is_empty() {
        parts.push(plural(c.runs.len(), "single run", "single runs"));
    }
    if parts.is_empty() {
        parts.push("No results".into());
    }
    let what = parts.join(" and ");
    let src = if opts.sources.is_empty() {
        String::new()
    } else {
        format!(
            " from {}",
            opts.sources
                .iter()
                .map(|s| format!("<code>{}</code>", esc_html(s)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    h.push_str(&format!("<p class=\"sub\">{what}{src}.</p>\n"));
}

/// The studies' verdicts, one line each.
fn push_verdicts(h: &mut String, c: &Collected) {
    if !c.verdicts.is_empty() {
        h.push_str("<section class=\"findings\">\n<h2>Study verdicts</h2>\n<ul>\n");
        for (study, v) in &c.verdicts {
            let place = match &v.step {
                Some(s) => format!("{} [{}]", v.workload, s),
                None => v.workload.clone(),
            };
            h.push_str(&format!(
                "<li>{}: <b>{}</b>: <i>{}</i>: {}</li>\n",
                esc_html(study),
                esc_html(&place),
                v.outcome().word(),
                esc_html(&v.note)
            ));
        }
        h.push_str("</ul>\n</section>\n");
    }
}

/// The findings of the sweeps and runs.
fn push_findings(h: &mut String, c: &Collected) {
    let f = findings(c);
    if !f.is_empty() {
        h.push_str("<section class=\"findings\">\n");
        for line in &f {
            h.push_str(&format!("<p>{line}</p>\n"));
        }
        h.push_str("</section>\n");
    }
}

/// The warning that lists the client-bound runs, folded when long.
fn push_client_bound(h: &mut String, c: &Collected) {
    let cbl = client_bound_list(c);
    if !cbl.is_empty() {
        h.push_str(&format!("<section class=\"warn\"><p><b>⚠ Client-bound runs ({}).</b> In these runs the load generator flagged itself as the bottleneck (CPU saturated, sends behind schedule, or out of descriptors or ports): their numbers bound the client, not the server. They are marked in red on every chart and table.</p>\n", cbl.len()));
        let list: String = cbl
            .iter()
            .map(|l| format!("<li>{}</li>\n", esc_html(l)))
            .collect();
        if cbl.len() > 4 {
            h.push_str(&format!(
                "<details><summary>The {} runs and the generator's reasons</summary><ul>\n{list}</ul></details>",
                cbl.len()
            ));
        } else {
            h.push_str(&format!("<ul>\n{list}</ul>"));
        }
        h.push_str("</section>\n");
    }
}

/// The forest plot of every study verdict (the studies' δ band, their interval each verdict
/// reads), None without a verdict with a ratio.
pub fn verdict_forest(c: &Collected) -> Option<String> {
    let many = c
        .verdicts
        .iter()
        .any(|(s, _)| Some(*s) != c.verdicts.first().map(|f| f.0));
    let mut rows = forest::study_rows(c.verdicts.iter().map(|(_, v)| *v));
    if many {
        for (r, (study, _)) in rows.iter_mut().zip(&c.verdicts) {
            r.group = format!("{study}: {}", r.group);
        }
    }
    if !rows.iter().any(|r| r.ratio.is_finite() && r.ratio > 0.0) {
        return None;
    }
    Some(forest::svg(&forest::Forest {
        id: "forest".into(),
        title: "Study verdicts: every comparison".into(),
        axis: forest::STUDY_AXIS.into(),
        interval: "the interval each verdict reads".into(),
        delta: c.verdicts.iter().find_map(|(_, v)| v.delta),
        rows,
    }))
}

/// The picture the page opens with: the studies' forest plot, else the first figure (numbered
/// 1). Returns how many figures it drew (0 or 1).
fn push_glance(h: &mut String, c: &Collected, figs: &[Figure]) -> usize {
    if let Some(svg) = verdict_forest(c) {
        h.push_str(&format!("<figure id=\"forest\">\n{svg}<figcaption>Every study verdict: the first server's figure over the second's, turned so that right of 1 means the first is better, with the interval the verdict was decided on; the shaded band is ±δ. Colour and shape say the outcome.</figcaption>\n</figure>\n"));
        return 0;
    }
    match figs.first() {
        Some(f) => {
            push_figure(h, f, 0);
            1
        }
        None => 0,
    }
}

/// One figure inlined with its caption, numbered `i + 1`.
fn push_figure(h: &mut String, f: &Figure, i: usize) {
    h.push_str(&format!(
        "<figure id=\"fig-{}\">\n{}\n<figcaption><b>Figure {}.</b> {} <a href=\"{}\">[svg]</a></figcaption>\n</figure>\n",
        i + 1,
        inline_svg(&f.svg),
        i + 1,
        esc_html(&f.caption),
        esc_html(&f.file)
    ));
}

/// Every figure inlined with its caption (numbered from `from + 1`), then every table, numbered.
fn push_figures_and_tables(h: &mut String, figs: &[Figure], from: usize, tables: &[Table]) {
    if !figs.is_empty() {
        h.push_str("<h2 id=\"figures\">Figures</h2>\n");
        for (i, f) in figs.iter().enumerate() {
            push_figure(h, f, from + i);
        }
    }
    if !tables.is_empty() {
        h.push_str("<h2 id=\"tables\">Tables</h2>\n");
        for (i, t) in tables.iter().enumerate() {
            let mut t = t.clone();
            t.title = format!("Table {}. {}", i + 1, t.title);
            h.push_str("<div class=\"wide\">\n");
            h.push_str(&t.to_html());
            h.push_str("</div>\n");
        }
    }
}

/// How load is offered and judged, each environment and the command lines.
fn push_method_and_environment(h: &mut String, c: &Collected) {
    h.push_str("<h2 id=\"method\">Method and environment</h2>\n");
    h.push_str("<p>Load is offered open-loop: requests follow the schedule whatever the server does, and response times are measured from the scheduled send, so a stalled server cannot hide its queue (no coordinated omission). A rate is <i>sustained</i> when the reply rate is within 1 % of the demanded request rate, fewer than 0.1 % of operations fail, and the 99th-percentile response time is under the SLO. The <i>knee</i> is the last rate before the median response time doubles (and grows by at least 1 ms) over its low-load baseline.</p>\n");
    for e in &c.environments {
        h.push_str("<dl class=\"env\">\n");
        let mem = if e.memory_bytes > 0 {
            format!("{:.1} GiB", e.memory_bytes as f64 / (1u64 << 30) as f64)
        } else {
            "–".into()
        };
        for (k, v) in [
            ("kernel", e.kernel.clone()),
            ("CPU", e.cpu_model.clone()),
            ("cores", e.cores.to_string()),
            ("memory", mem),
        ] {
            h.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", k, esc_html(&v)));
        }
        let facts = e.facts.entries();
        for (k, v) in facts.iter().map(|(k, v)| (k, v)).chain(&e.extra) {
            h.push_str(&format!(
                "<dt>{}</dt><dd>{}</dd>\n",
                esc_html(k),
                esc_html(v)
            ));
        }
        h.push_str("</dl>\n");
    }
    if !c.commands.is_empty() {
        h.push_str("<details><summary>Command lines</summary>\n<pre>");
        for cmd in &c.commands {
            h.push_str(&esc_html(cmd));
            h.push('\n');
        }
        h.push_str("</pre></details>\n");
    }
}

fn strip_tags(s: &str) -> String {
    let mut o = String::new();
    let mut in_tag = false;
    for ch in s.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => o.push(c),
            _ => {}
        }
    }
    o.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

fn markdown_summary(
    c: &Collected,
    figs: &[Figure],
    tables: &[Table],
    opts: &ReportOptions,
) -> String {
    let title = if opts.title.is_empty() {
        "httplab report"
    } else {
        &opts.title
    };
    let mut m = format!("# {title}\n\n");
    if !opts.sources.is_empty() {
        m.push_str(&format!(
            "Sources: {}\n\n",
            opts.sources
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for l in findings(c) {
        m.push_str(&format!("- {}\n", strip_tags(&l).replace("⚠", "**⚠**")));
    }
    let cbl = client_bound_list(c);
    if !cbl.is_empty() {
        m.push_str(
            "\n**⚠ Client-bound runs** (the generator, not the server, was the bottleneck):\n\n",
        );
        for l in cbl.iter().take(10) {
            m.push_str(&format!("- {l}\n"));
        }
        if cbl.len() > 10 {
            m.push_str(&format!(
                "- … and {} more (see index.html)\n",
                cbl.len() - 10
            ));
        }
    }
    if !figs.is_empty() {
        m.push_str("\n## Figures\n\n");
        for (i, f) in figs.iter().enumerate() {
            m.push_str(&format!(
                "**Figure {}.** {}\n\n![{}]({})\n\n",
                i + 1,
                f.caption,
                f.title,
                f.file
            ));
        }
    }
    if !tables.is_empty() {
        m.push_str("## Tables\n\n");
        for (i, t) in tables.iter().enumerate() {
            let mut t = t.clone();
            t.title = format!("Table {}. {}", i + 1, t.title);
            m.push_str(&t.to_markdown());
            m.push('\n');
        }
    }
    m
}
