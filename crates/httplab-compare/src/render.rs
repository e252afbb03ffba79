//! The answer line, the table (text and HTML, through httplab-report's `Table`) and the JSON
//! document of a judgement.

use httplab_model::ToolInfo;
use httplab_report::forest;
use httplab_report::text::{esc_html, Table};
use serde::Serialize;

use crate::judge::{pct, Judgement, Row, SideFigures, Verdict};

/// Schema tag of `httplab compare --json`.
pub const COMPARE_SCHEMA: &str = "httplab.compare/1";

/// "+18 %", "−4.5 %".
fn signed(x: f64) -> String {
    let p = pct(x.abs());
    if x >= 0.0 {
        format!("+{p}")
    } else {
        format!("−{p}")
    }
}

/// A share of calls in percent, three significant digits without trailing zeros ("0.005").
fn share(errors: u64, calls: u64) -> String {
    if calls == 0 {
        return "0".into();
    }
    let s = httplab_stats::format_sig3(errors as f64 / calls as f64 * 100.0);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Counts that have no finite ratio: "0 → 50 errors (0 → 0.005 % of calls)", "0 → 0 errors".
fn counts_change(r: &Row) -> Option<String> {
    let ([eb, cb], [en, cn]) = (r.base.errors_of_calls?, r.new.errors_of_calls?);
    if eb == 0 && en == 0 {
        return Some("0 → 0 errors".into());
    }
    Some(format!(
        "{eb} → {en} errors ({} → {} % of calls)",
        share(eb, cb),
        share(en, cn)
    ))
}

/// "+18 % (97.5 % CI +12…+25 %)", with the interval the verdict reads at its level; errors on
/// one side only as counts (see `counts_change`).
fn change(r: &Row) -> String {
    let Some(x) = r.ratio else {
        return counts_change(r).unwrap_or_else(|| "–".into());
    };
    match r.ci {
        Some([lo, hi]) => {
            let (a, b) = (signed(lo - 1.0), signed(hi - 1.0));
            format!(
                "{} ({} CI {}…{})",
                signed(x - 1.0),
                crate::judge::level_text(r.ci_level.unwrap_or(0.95)),
                a.trim_end_matches(" %"),
                b
            )
        }
        None => format!("{} (no interval)", signed(x - 1.0)),
    }
}

fn what(r: &Row) -> String {
    if r.cell.is_empty() {
        r.metric.key().to_string()
    } else {
        format!("{} {}", r.cell, r.metric.key())
    }
}

/// The one-line answer: "regression: p99 +18 % (95 % CI +12…+25 %)" or "no regression beyond
/// 5 %: …".
pub fn answer(j: &Judgement) -> String {
    let regs = j.regressions();
    if let Some(worst) = regs.first() {
        let mut s = format!("regression: {} {}", what(worst), change(worst));
        let rest: Vec<String> = regs[1..].iter().take(3).map(|r| what(r)).collect();
        if !rest.is_empty() {
            let more = regs.len() - 1 - rest.len();
            s.push_str(&format!("; also {}", rest.join(", ")));
            if more > 0 {
                s.push_str(&format!(" and {more} more"));
            }
        }
        return s;
    }
    let count = |v: Verdict| j.rows.iter().filter(|r| r.verdict == v).count();
    let mut parts = Vec::new();
    for v in [
        Verdict::Equivalent,
        Verdict::Improvement,
        Verdict::Regression,
        Verdict::Inconclusive,
    ] {
        let k = count(v);
        if k == 0 {
            continue;
        }
        let names: Vec<String> = j
            .rows
            .iter()
            .filter(|r| r.verdict == v)
            .take(4)
            .map(what)
            .collect();
        let list = if k <= 4 {
            format!(" ({})", names.join(", "))
        } else {
            String::new()
        };
        let word = match v {
            Verdict::Regression => "regression within the threshold",
            other => other.word(),
        };
        parts.push(format!("{k} {word}{list}"));
    }
    // Counts need no spread: one run a side is as good as many.
    let no_spread = j.rows.iter().any(|r| {
        r.verdict == Verdict::Inconclusive && !r.metric.is_count() && (r.base.n < 2 || r.new.n < 2)
    });
    let none: Vec<&Row> = j
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::NoErrors)
        .collect();
    match none.as_slice() {
        [] => {}
        [one] if one.cell.is_empty() => parts.push("no errors on either side".into()),
        [one] => parts.push(format!("no errors on either side in {}", one.cell)),
        many => parts.push(format!("no errors on either side in {} cells", many.len())),
    }
    let mut s = format!(
        "no regression beyond {}: {}",
        pct(j.threshold),
        parts.join(", ")
    );
    if no_spread {
        s.push_str(" — too few runs to judge some metrics: give at least 2 runs per side");
    }
    s
}

fn fig(f: &SideFigures) -> String {
    let n = f.n;
    if let Some([errors, calls]) = f.errors_of_calls {
        // The counts compared: errors over calls, summed over the runs.
        return format!("{} ({errors} of {calls}, n={n})", share(errors, calls));
    }
    match f.geomean {
        Some(x) => format!("{} (n={n})", httplab_stats::format_sig3(x)),
        None => format!("– (n={n})"),
    }
}

/// The table of every comparison.
pub fn table(j: &Judgement) -> Table {
    let cells = j.rows.iter().any(|r| !r.cell.is_empty());
    let mut headers: Vec<String> = Vec::new();
    if cells {
        headers.push("cell".into());
    }
    for h in ["metric", "BASE", "NEW", "NEW/BASE", "verdict", "note"] {
        headers.push(h.into());
    }
    let numeric = headers
        .iter()
        .map(|h| matches!(h.as_str(), "BASE" | "NEW" | "NEW/BASE"))
        .collect();
    let rows = j
        .rows
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            if cells {
                v.push(r.cell.clone());
            }
            let verdict = if r.beyond_threshold {
                format!("{} ✗", r.verdict.word())
            } else {
                r.verdict.word().to_string()
            };
            v.extend([
                r.metric.label(),
                fig(&r.base),
                fig(&r.new),
                change(r),
                verdict,
                r.note.clone(),
            ]);
            v
        })
        .collect();
    let flagged = j
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.beyond_threshold)
        .map(|(i, _)| i)
        .collect();
    let mut notes = vec![format!(
        "Geometric means over runs; NEW/BASE with the Welch interval on the log values (the runs of the two sides are not paired) at the level of all {1} comparisons together (1 − α/{1}, α = 5 %), the interval each verdict reads. δ = {0}: a regression or improvement is an interval clear of 1; equivalent: the interval inside ±δ (docs/statistics.md). ✗: a regression beyond the threshold of {2} (exit code 1).",
        pct(j.delta),
        j.family,
        pct(j.threshold)
    )];
    if j.rows.iter().any(|r| r.metric.is_count()) {
        notes.push("Errors are counts: each side's failed calls (errors of every class and 5xx replies) over its calls (replies + errors), summed over the runs; NEW/BASE is the ratio of the two error rates with its exact interval, tested by the exact test of the counts in the same family. No errors on either side is not judged.".into());
    }
    notes.extend(j.notes.iter().cloned());
    Table {
        title: format!("httplab compare: NEW against BASE ({}s)", j.kind.name()),
        headers,
        rows,
        flagged,
        notes,
        numeric,
    }
}

/// The terminal output: the answer first, then the table.
pub fn text(j: &Judgement) -> String {
    format!("{}\n\n{}", answer(j), table(j).to_text())
}

/// `--json`: the whole judgement.
#[derive(Serialize)]
pub struct JsonDoc<'a> {
    /// [`COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// Writer.
    pub tool: ToolInfo,
    /// BASE's files.
    pub base: &'a [String],
    /// NEW's files.
    pub new: &'a [String],
    /// The answer line.
    pub answer: String,
    /// True when a regression beyond the threshold was found (exit code 1).
    pub regression: bool,
    /// Everything else.
    #[serde(flatten)]
    pub judgement: &'a Judgement,
}

/// The JSON text of `--json`.
pub fn json(j: &Judgement, base: &[String], new: &[String]) -> anyhow::Result<String> {
    let doc = JsonDoc {
        schema: COMPARE_SCHEMA,
        tool: ToolInfo::current(env!("CARGO_PKG_VERSION")),
        base,
        new,
        answer: answer(j),
        regression: !j.regressions().is_empty(),
        judgement: j,
    };
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{padding:.3em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\
.num{text-align:right;font-variant-numeric:tabular-nums}caption{font-weight:bold;text-align:left;padding:.4em 0}\
tr.cb{background:#fde8e8}.answer{font-size:1.3em;font-weight:bold}.note{color:#555;max-width:60em}\
figure.forest{margin:1em 0}figure.forest svg{max-width:100%;height:auto}";

/// `--html FILE`: a self-contained page (no network, no script) with the answer, the forest
/// plot of every comparison's NEW/BASE with the interval its verdict reads, and the table.
pub fn html(j: &Judgement, base: &[String], new: &[String]) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>httplab compare</title><style>{CSS}</style></head><body>\n<h1>httplab compare</h1>\n<p class=\"answer\">{}</p>\n",
        esc_html(&answer(j))
    );
    if let Some(svg) = forest_svg(j) {
        h.push_str("<figure class=\"forest\">\n");
        h.push_str(&svg);
        h.push_str("<figcaption>NEW/BASE per comparison (1 = no change; right of 1: NEW's figure is larger, whichever way is better), with the interval each verdict reads; the shaded band is ±δ. Colour and shape say the verdict: better (an improvement), worse (a regression), equivalent, undecided.</figcaption></figure>\n");
    }
    h.push_str(&format!(
        "<p>BASE: {}<br>NEW: {}</p>\n",
        esc_html(&base.join(", ")),
        esc_html(&new.join(", "))
    ));
    h.push_str(&table(j).to_html());
    h.push_str("</body></html>\n");
    h
}

/// A verdict as the forest plot colours it, from NEW's side.
fn outcome(v: Verdict) -> forest::Outcome {
    match v {
        Verdict::Improvement => forest::Outcome::Better,
        Verdict::Regression => forest::Outcome::Worse,
        Verdict::Equivalent => forest::Outcome::Equivalent,
        Verdict::Inconclusive | Verdict::Missing | Verdict::NoErrors => forest::Outcome::Undecided,
    }
}

/// The forest plot of every row with a ratio, grouped by cell (None without any ratio).
pub fn forest_svg(j: &Judgement) -> Option<String> {
    if !j.rows.iter().any(|r| r.ratio.is_some()) {
        return None;
    }
    let rows = j
        .rows
        .iter()
        .map(|r| forest::ForestRow {
            group: r.cell.clone(),
            label: r.metric.label(),
            ratio: r.ratio.unwrap_or(f64::NAN),
            ci: r.ci.map(|[a, b]| (a, b)),
            outcome: outcome(r.verdict),
        })
        .collect();
    let mut levels = j.rows.iter().filter(|r| r.ci.is_some()).map(|r| r.ci_level);
    let interval = match levels.next().flatten() {
        Some(l) if levels.all(|x| x == Some(l)) => format!(
            "the interval each verdict reads ({} CI)",
            crate::judge::level_text(l)
        ),
        _ => "the interval each verdict reads".into(),
    };
    Some(forest::svg(&forest::Forest {
        id: "forest".into(),
        title: "NEW against BASE: every comparison".into(),
        axis: "NEW ÷ BASE".into(),
        interval,
        delta: Some(j.delta),
        rows,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::worsening;

    #[test]
    fn signed_changes() {
        assert_eq!(signed(0.18), "+18 %");
        assert_eq!(signed(-0.045), "−4.5 %");
    }

    #[test]
    fn worsening_follows_the_direction() {
        use crate::judge::Row;
        use crate::metric::Metric;
        let f = SideFigures {
            n: 2,
            geomean: Some(1.0),
            client_bound_runs: 0,
            errors_of_calls: None,
        };
        let mut r = Row {
            cell: String::new(),
            metric: Metric::P99,
            better: httplab_stats::Better::Lower,
            base: f.clone(),
            new: f,
            ratio: Some(1.2),
            ci95: Some([1.1, 1.3]),
            ci90: None,
            ci: Some([1.1, 1.3]),
            ci_level: Some(0.95),
            verdict: Verdict::Regression,
            beyond_threshold: true,
            p_value: None,
            p_equivalent: None,
            detectable: None,
            runs_to_settle: None,
            sessions: [1, 1],
            session_spread: None,
            note: String::new(),
        };
        assert!((worsening(&r) - 0.2).abs() < 1e-12);
        assert_eq!(change(&r), "+20 % (95 % CI +10…+30 %)");
        r.metric = Metric::REPLY_RATE;
        r.better = httplab_stats::Better::Higher;
        r.ratio = Some(0.8);
        assert!((worsening(&r) - 0.25).abs() < 1e-12);
    }
}
