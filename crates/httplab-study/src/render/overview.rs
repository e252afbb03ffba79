//! The first screen of index.html: every verdict in one forest plot
//! (httplab-report's [`httplab_report::forest`]: each comparison's ratio and
//! the interval it was decided on, the equivalence band, the outcome), then
//! one table of every server's figure per workload step (the workload's own
//! metric: mean and 95 % CI, as the analysis computed them). Nothing is
//! computed here.

use std::fmt::Write as _;

use httplab_model as m;
use httplab_report::forest::{self, Forest};
use httplab_report::text::esc_html as esc;

use crate::render::numbers::fmt_estimate;

/// The forest plot of every verdict with a ratio (None without any).
pub fn forest_svg(res: &m::StudyResult) -> Option<String> {
    let rows = forest::study_rows(&res.verdicts);
    if !rows.iter().any(|r| r.ratio.is_finite() && r.ratio > 0.0) {
        return None;
    }
    let delta = res
        .protocol
        .as_ref()
        .map(|p| p.min_effect)
        .filter(|d| *d > 0.0)
        .or_else(|| res.verdicts.iter().find_map(|v| v.delta));
    Some(forest::svg(&Forest {
        id: "forest".into(),
        title: "Every comparison: who leads where, and how sure".into(),
        axis: forest::STUDY_AXIS.into(),
        interval: interval_words(res),
        delta,
        rows,
    }))
}

/// The whiskers in words: at the study's family level when every verdict
/// records the same one.
fn interval_words(res: &m::StudyResult) -> String {
    let mut levels = res
        .verdicts
        .iter()
        .filter(|v| v.ratio_ci.is_some())
        .map(|v| v.ratio_ci_level);
    let first = levels.next().flatten();
    match first {
        Some(l) if levels.all(|x| x == Some(l)) => {
            let s = format!("{:.2}", l * 100.0);
            format!(
                "the interval each verdict reads ({} % CI, the study's level)",
                s.trim_end_matches('0').trim_end_matches('.')
            )
        }
        _ => "the interval each verdict reads".into(),
    }
}

/// The forest plot and the table, as a section of the page.
pub fn html(h: &mut String, res: &m::StudyResult) {
    let svg = forest_svg(res);
    let table = table(res);
    if svg.is_none() && table.is_none() {
        return;
    }
    let _ = writeln!(h, "<section id=\"overview\">");
    if let Some(svg) = svg {
        let _ = writeln!(
            h,
            "<figure class=\"forest\">\n{svg}<figcaption>Each row is one of the study's comparisons: the first server's figure over the second's, turned so that right of 1 means the first is better, with the interval its verdict was decided on. The shaded band is ±δ: an interval inside it is <i>equivalent</i>, one clear of 1 is decided (<i>better</i> or <i>worse</i> for the first server), anything else <i>undecided</i>. The verdicts in words follow below.</figcaption>\n</figure>"
        );
    }
    if let Some(t) = table {
        h.push_str(&t);
    }
    let _ = writeln!(h, "</section>");
}

/// Workload steps in the order of the cells, servers in the order of the runs.
fn axes(res: &m::StudyResult) -> (Vec<(&str, &Option<String>)>, Vec<&str>) {
    let mut steps: Vec<(&str, &Option<String>)> = Vec::new();
    for c in &res.cells {
        if !steps.iter().any(|(w, s)| *w == c.workload && **s == c.step) {
            steps.push((&c.workload, &c.step));
        }
    }
    let mut servers: Vec<&str> = Vec::new();
    for r in &res.runs {
        if !servers.contains(&r.server.as_str()) && res.cells.iter().any(|c| c.server == r.server) {
            servers.push(&r.server);
        }
    }
    (steps, servers)
}

/// Servers × workload steps: each cell's figure of its workload's metric,
/// the step's decided winner in bold (None without cells).
fn table(res: &m::StudyResult) -> Option<String> {
    let (steps, servers) = axes(res);
    if steps.is_empty() {
        return None;
    }
    let mut h = String::from(
        "<table class=\"overview\"><caption>Every server's figure: mean [95 % CI] over its rounds; bold: the step's decided winner; ≥ / ≤: client-bound, a bound.</caption>\n<tr><th class=\"l\">workload</th><th class=\"l\">metric</th>",
    );
    for s in &servers {
        let _ = write!(h, "<th>{}</th>", esc(s));
    }
    h.push_str("</tr>\n");
    for (w, step) in steps {
        let cells: Vec<&m::Cell> = res
            .cells
            .iter()
            .filter(|c| c.workload == w && c.step == *step)
            .collect();
        let Some(metric) = cells.first().map(|c| &c.metric) else {
            continue;
        };
        let winner = res
            .verdicts
            .iter()
            .find(|v| {
                v.workload == w
                    && v.step == *step
                    && v.kind == m::VerdictKind::Step
                    && v.metric == *metric
                    && v.outcome() == m::VerdictOutcome::Winner
            })
            .and_then(|v| v.winner.as_deref());
        let place = match step {
            Some(s) => format!("{w} [{s}]"),
            None => w.to_string(),
        };
        let label = metric.metric().map_or(metric.key(), |x| x.label());
        let _ = write!(
            h,
            "<tr><td class=\"l\"><a href=\"#w-{}\">{}</a></td><td class=\"l\">{}</td>",
            esc(w),
            esc(&place),
            esc(label)
        );
        for s in &servers {
            let cell = cells.iter().find(|c| c.server == *s);
            let text = cell
                .and_then(|c| Some((c, c.metrics.get(&c.metric)?)))
                .map_or("–".to_string(), |(c, e)| {
                    let higher = c.metric.metric().map_or(true, |x| x.higher_is_better());
                    fmt_estimate(e, c.client_bound, higher)
                });
            if winner == Some(*s) {
                let _ = write!(h, "<td><b>{}</b></td>", esc(&text));
            } else {
                let _ = write!(h, "<td>{}</td>", esc(&text));
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(w: &str, step: Option<&str>, server: &str, mean: f64) -> m::Cell {
        let metric = m::MetricKey::Known(m::Metric::ReplyRate);
        let mut metrics = std::collections::BTreeMap::new();
        metrics.insert(
            metric.clone(),
            m::Estimate {
                n: 3,
                mean,
                median: mean,
                stddev: 1.0,
                ci_low: Some(mean - 10.0),
                ci_high: Some(mean + 10.0),
            },
        );
        m::Cell {
            workload: w.into(),
            step: step.map(String::from),
            server: server.into(),
            n: 3,
            metric,
            metrics,
            ..Default::default()
        }
    }

    fn run(w: &str, server: &str) -> m::StudyRun {
        m::StudyRun {
            workload: w.into(),
            server: server.into(),
            ..Default::default()
        }
    }

    fn study() -> m::StudyResult {
        let verdict = m::StudyVerdict {
            workload: "small".into(),
            step: Some("100".into()),
            metric: m::MetricKey::Known(m::Metric::ReplyRate),
            outcome: Some(m::VerdictOutcome::Winner),
            winner: Some("a".into()),
            leader: Some("a".into()),
            runner_up: Some("b".into()),
            ratio: Some(1.5),
            ratio_ci: Some([1.2, 1.8]),
            ratio_ci_level: Some(0.99),
            ..Default::default()
        };
        let mut v2 = verdict.clone();
        v2.workload = "<big>".into();
        v2.step = None;
        v2.outcome = Some(m::VerdictOutcome::Inconclusive);
        v2.winner = None;
        v2.ratio = Some(1.01);
        v2.ratio_ci = Some([0.9, 1.1]);
        m::StudyResult {
            runs: vec![run("small", "a"), run("small", "b")],
            cells: vec![
                cell("small", Some("100"), "a", 1500.0),
                cell("small", Some("100"), "b", 1000.0),
                cell("<big>", None, "a", 50.0),
            ],
            verdicts: vec![verdict, v2],
            ..Default::default()
        }
    }

    #[test]
    fn the_forest_has_one_mark_per_verdict() {
        let svg = forest_svg(&study()).expect("a picture");
        assert_eq!(svg.matches("<g class=\"mark better\"").count(), 1);
        assert_eq!(svg.matches("<g class=\"mark undecided\"").count(), 1);
        assert!(svg.contains("99 % CI, the study&#39;s level"), "{svg}");
        assert!(svg.contains("&lt;big&gt;"));
        assert!(forest_svg(&m::StudyResult::default()).is_none());
    }

    #[test]
    fn the_table_has_every_server_per_step_with_the_winner_bold() {
        let t = table(&study()).expect("a table");
        assert!(t.contains("<th>a</th><th>b</th>"));
        assert!(t.contains("small [100]"));
        assert!(
            t.contains("<td><b>1,500 [1,490–1,510]</b></td><td>1,000 [990–1,010]</td>"),
            "{t}"
        );
        // A server without a cell in a step: a dash; names escaped.
        assert!(
            t.contains("&lt;big&gt;</a></td><td class=\"l\">replies/s"),
            "{t}"
        );
        assert!(t.contains("<td>50.0 [40.0–60.0]</td><td>–</td>"), "{t}");
    }

    #[test]
    fn the_section_comes_with_both() {
        let mut h = String::new();
        html(&mut h, &study());
        assert!(h.starts_with("<section id=\"overview\">"));
        assert!(h.find("<svg").unwrap() < h.find("<table").unwrap());
        let mut none = String::new();
        html(&mut none, &m::StudyResult::default());
        assert!(none.is_empty());
    }
}
