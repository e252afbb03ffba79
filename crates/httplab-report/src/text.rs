//! Tables mirroring the seeds: httperf's fields side by side, reply-rate and
//! connection-time min/avg/max/median/stddev, latency percentiles, the
//! autobench columns of each sweep and the saturation summary. Each table is
//! a neutral [`Table`] rendered as Markdown, HTML or aligned plain text.
//! Client-bound runs are marked in every table where they appear.

use crate::data::{Collected, RunItem, SweepSeries};
use httplab_model::RunResult;

/// Marker placed next to a client-bound run in tables.
pub const CLIENT_BOUND_MARK: &str = "client-bound ⚠";

/// A table with a title, header, rows and footnotes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Caption.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// Rows to highlight (client-bound), by index.
    pub flagged: Vec<usize>,
    /// Footnotes printed under the table.
    pub notes: Vec<String>,
    /// Columns to right-align (numbers).
    pub numeric: Vec<bool>,
}

impl Table {
    fn new(title: &str, headers: &[&str]) -> Table {
        Table {
            title: title.into(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            numeric: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
            ..Default::default()
        }
    }

    /// Markdown (GitHub pipe table) with the title in bold above it.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!("**{}**\n\n", self.title);
        out.push_str(&format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        out.push_str(&format!(
            "|{}|\n",
            self.headers
                .iter()
                .enumerate()
                .map(|(i, _)| if self.numeric.get(i).copied().unwrap_or(false) {
                    "---:"
                } else {
                    ":---"
                })
                .collect::<Vec<_>>()
                .join("|")
        ));
        for r in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("\n{n}\n"));
        }
        out
    }

    /// An HTML `<table>` with a caption; flagged rows get class `cb`.
    pub fn to_html(&self) -> String {
        let mut out = String::from("<table>\n");
        out.push_str(&format!(
            "<caption>{}</caption>\n<thead><tr>",
            esc_html(&self.title)
        ));
        for (i, h) in self.headers.iter().enumerate() {
            let cls = if self.numeric.get(i).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            out.push_str(&format!("<th{cls}>{}</th>", esc_html(h)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (ri, r) in self.rows.iter().enumerate() {
            if self.flagged.contains(&ri) {
                out.push_str("<tr class=\"cb\">");
            } else {
                out.push_str("<tr>");
            }
            for (i, c) in r.iter().enumerate() {
                let cls = if self.numeric.get(i).copied().unwrap_or(false) {
                    " class=\"num\""
                } else {
                    ""
                };
                out.push_str(&format!("<td{cls}>{}</td>", esc_html(c)));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        for n in &self.notes {
            out.push_str(&format!("<p class=\"note\">{}</p>\n", esc_html(n)));
        }
        out
    }

    /// Plain text with aligned columns.
    pub fn to_text(&self) -> String {
        let ncol = self.headers.len();
        let mut w = vec![0usize; ncol];
        for row in std::iter::once(&self.headers).chain(self.rows.iter()) {
            for (i, c) in row.iter().enumerate().take(ncol) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |row: &Vec<String>| -> String {
            let mut s = String::new();
            for (i, c) in row.iter().enumerate().take(ncol) {
                let pad = w[i].saturating_sub(c.chars().count());
                if i > 0 {
                    s.push_str("  ");
                }
                if self.numeric.get(i).copied().unwrap_or(false) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
            }
            s.trim_end().to_string()
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(&self.headers));
        out.push('\n');
        out.push_str(&"-".repeat(w.iter().sum::<usize>() + 2 * ncol.saturating_sub(1)));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str(&format!("{n}\n"));
        }
        out
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn esc_html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A number with `dec` decimals and thousands separators ("12,345.6").
pub fn num(v: f64, dec: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = format!("{:.*}", dec, v.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (s.clone(), None),
    };
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let neg = v < 0.0 && s.chars().any(|c| c != '0' && c != '.');
    let mut out = if neg { format!("-{grouped}") } else { grouped };
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    out
}

/// A latency in ms with sensible precision (3 significant digits, at least
/// integer precision above 100 ms).
pub fn ms(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 100.0 {
        num(v, 0)
    } else if a >= 10.0 {
        num(v, 1)
    } else if a >= 1.0 {
        num(v, 2)
    } else {
        num(v, 3)
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map(ms).unwrap_or_else(|| "–".into())
}

fn cb(run: &RunResult) -> &'static str {
    if run.self_check.client_bound {
        CLIENT_BOUND_MARK
    } else {
        ""
    }
}

const CB_NOTE: &str = "⚠ client-bound: the load generator flagged itself as the bottleneck in this run (CPU saturated, sends behind schedule, or out of ports/descriptors); its numbers describe the client, not the server.";

/// Saturation summary: one row per sweep target.
pub fn saturation_table(sweeps: &[SweepSeries]) -> Table {
    let mut t = Table::new(
        "Saturation summary",
        &[
            "target",
            "max sustainable (req/s)",
            "(conn/s)",
            "knee (req/s)",
            "p99 SLO",
            "method",
            "runs",
            "client-bound runs",
        ],
    );
    for (i, s) in sweeps.iter().enumerate() {
        let sat = &s.target.saturation;
        t.rows.push(vec![
            s.label.clone(),
            s.max_req_rate()
                .map(|v| num(v, 0))
                .unwrap_or_else(|| "none".into()),
            sat.max_sustainable_rate
                .map(|v| num(v, if v.fract() == 0.0 { 0 } else { 1 }))
                .unwrap_or_else(|| "–".into()),
            s.knee_req_rate()
                .map(|v| num(v, 0))
                .unwrap_or_else(|| "–".into()),
            format!("{} ms", num(s.slo_ms, 0)),
            if sat.method.is_empty() {
                "steps".into()
            } else {
                sat.method.clone()
            },
            sat.runs.to_string(),
            s.client_bound_steps().to_string(),
        ]);
        if s.client_bound_steps() > 0 {
            t.flagged.push(i);
        }
    }
    t.notes.push(
        "Sustained: reply rate within 1 % of the demanded request rate, errors (incl. 5xx) < 0.1 %, and p99 response time (from the scheduled send) under the SLO. Knee: last rate before the median response time doubles (and grows by at least 1 ms) over its low-load baseline."
            .into(),
    );
    if !t.flagged.is_empty() {
        t.notes.push(CB_NOTE.into());
    }
    t
}

/// One sweep target's steps: autobench's columns plus percentiles and verdict.
pub fn sweep_table(s: &SweepSeries) -> Table {
    let mut t = Table::new(
        &format!("Sweep steps — {} (rates per second, times in ms)", s.label),
        &[
            "dem_req_rate",
            "req_rate",
            "con_rate",
            "reply rate",
            "min_rep",
            "avg_rep",
            "max_rep",
            "sd_rep",
            "resp_time",
            "p50",
            "p99",
            "errors %",
            "sustained",
            "client",
        ],
    );
    for (i, (m, step)) in s.metrics.iter().zip(&s.steps).enumerate() {
        t.rows.push(vec![
            num(m.demanded_req_rate, 0),
            num(m.req_rate, 1),
            num(m.conn_rate, 1),
            num(m.reply_rate, 1),
            num(m.rep_min, 1),
            num(m.rep_avg, 1),
            num(m.rep_max, 1),
            num(m.rep_stddev, 1),
            ms(step.run.reply.response_ms),
            opt_ms(m.p50_ms),
            opt_ms(m.p99_ms),
            num(m.error_pct, 2),
            if m.sustained { "yes" } else { "no" }.into(),
            cb(&step.run).into(),
        ]);
        if m.client_bound {
            t.flagged.push(i);
        }
    }
    t.numeric[12] = false;
    t.numeric[13] = false;
    t.notes.push(
        "reply rate = replies / test duration; min/avg/max/sd_rep are httperf's per-interval reply-rate samples (autobench's min/avg/max/stddev_rep_rate); resp_time is httperf's average time to first byte; p50/p99 are measured from the scheduled send (coordinated-omission corrected)."
            .into(),
    );
    if !t.flagged.is_empty() {
        t.notes.push(CB_NOTE.into());
    }
    t
}

fn run_header(items: &[RunItem]) -> Vec<String> {
    let mut h = vec!["".to_string()];
    for it in items {
        if it.run.self_check.client_bound {
            h.push(format!("{} ({CLIENT_BOUND_MARK})", it.label));
        } else {
            h.push(it.label.clone());
        }
    }
    h
}

/// httperf's report fields, one column per run (seed 002's captured output).
pub fn httperf_table(items: &[RunItem]) -> Table {
    let mut t = Table {
        title: "httperf fields".into(),
        headers: run_header(items),
        ..Default::default()
    };
    t.numeric = t.headers.iter().enumerate().map(|(i, _)| i > 0).collect();
    type Field = (&'static str, fn(&RunResult) -> String);
    let fields: &[Field] = &[
        ("Total: connections", |r| {
            num(r.totals.connections as f64, 0)
        }),
        ("Total: requests", |r| num(r.totals.requests as f64, 0)),
        ("Total: replies", |r| num(r.totals.replies as f64, 0)),
        ("Total: test-duration [s]", |r| {
            num(r.totals.test_duration_s, 3)
        }),
        ("Connection rate [conn/s]", |r| {
            num(r.connection.rate_per_s, 1)
        }),
        ("Connection rate [ms/conn]", |r| {
            num(r.connection.ms_per_conn, 1)
        }),
        ("Concurrent connections (max)", |r| {
            r.totals.max_concurrent_connections.to_string()
        }),
        ("Connection time [ms]: min", |r| {
            ms(r.connection.lifetime_ms.min)
        }),
        ("Connection time [ms]: avg", |r| {
            ms(r.connection.lifetime_ms.avg)
        }),
        ("Connection time [ms]: max", |r| {
            ms(r.connection.lifetime_ms.max)
        }),
        ("Connection time [ms]: median", |r| {
            ms(r.connection.lifetime_ms.median)
        }),
        ("Connection time [ms]: stddev", |r| {
            ms(r.connection.lifetime_ms.stddev)
        }),
        ("Connection time [ms]: connect", |r| {
            ms(r.connection.connect_ms)
        }),
        ("Connection length [replies/conn]", |r| {
            num(r.connection.replies_per_conn, 3)
        }),
        ("Request rate [req/s]", |r| num(r.request.rate_per_s, 1)),
        ("Request size [B]", |r| num(r.request.size_bytes, 1)),
        ("Reply rate [replies/s]: min", |r| num(r.reply.rate.min, 1)),
        ("Reply rate [replies/s]: avg", |r| num(r.reply.rate.avg, 1)),
        ("Reply rate [replies/s]: max", |r| num(r.reply.rate.max, 1)),
        ("Reply rate [replies/s]: stddev", |r| {
            num(r.reply.rate.stddev, 1)
        }),
        ("Reply rate: samples", |r| num(r.reply.rate.count as f64, 0)),
        ("Reply time [ms]: response", |r| ms(r.reply.response_ms)),
        ("Reply time [ms]: transfer", |r| ms(r.reply.transfer_ms)),
        ("Reply size [B]: header", |r| num(r.reply.header_bytes, 1)),
        ("Reply size [B]: content", |r| num(r.reply.content_bytes, 1)),
        ("Reply status: 2xx", |r| {
            num(r.reply.status.success as f64, 0)
        }),
        ("Reply status: 3xx/4xx/5xx", |r| {
            format!(
                "{}/{}/{}",
                r.reply.status.redirect, r.reply.status.client_error, r.reply.status.server_error
            )
        }),
        ("CPU time [s]: user", |r| num(r.resources.user_s, 2)),
        ("CPU time [s]: system", |r| num(r.resources.system_s, 2)),
        ("Net I/O [KB/s]", |r| num(r.resources.net_kb_per_s, 1)),
        ("Errors: total", |r| num(r.errors.total as f64, 0)),
        ("Errors: client-timo", |r| {
            num(r.errors.client_timo as f64, 0)
        }),
        ("Errors: socket-timo", |r| {
            num(r.errors.socket_timo as f64, 0)
        }),
        ("Errors: connrefused", |r| {
            num(r.errors.connrefused as f64, 0)
        }),
        ("Errors: connreset", |r| num(r.errors.connreset as f64, 0)),
        ("Errors: fd-unavail", |r| num(r.errors.fd_unavail as f64, 0)),
        ("Errors: addrunavail", |r| {
            num(r.errors.addrunavail as f64, 0)
        }),
        ("Errors: other", |r| num(r.errors.other as f64, 0)),
        ("Generator CPU [%]", |r| num(r.self_check.client_cpu_pct, 1)),
        ("Schedule lag p99 [ms]", |r| {
            ms(r.self_check.schedule_lag_p99_ms)
        }),
        ("Client-bound", |r| {
            if r.self_check.client_bound {
                CLIENT_BOUND_MARK.into()
            } else {
                "no".into()
            }
        }),
    ];
    for (name, f) in fields {
        let mut row = vec![name.to_string()];
        row.extend(items.iter().map(|it| f(it.run)));
        t.rows.push(row);
    }
    if items.iter().any(|i| i.run.self_check.client_bound) {
        t.notes.push(CB_NOTE.into());
    }
    t
}

/// min/avg/max/median/stddev of the reply-rate samples and the connection
/// lifetimes, one row per run (seed 002's trial tables).
pub fn spread_table(items: &[RunItem]) -> Table {
    let mut t = Table::new(
        "Reply rate and connection time: min / avg / max / median / stddev",
        &[
            "run", "quantity", "min", "avg", "max", "median", "stddev", "samples",
        ],
    );
    t.numeric[1] = false;
    for it in items {
        let r = it.run;
        let label = if r.self_check.client_bound {
            format!("{} ({CLIENT_BOUND_MARK})", it.label)
        } else {
            it.label.clone()
        };
        let s = r.reply.rate;
        if r.self_check.client_bound {
            t.flagged.push(t.rows.len());
            t.flagged.push(t.rows.len() + 1);
        }
        t.rows.push(vec![
            label.clone(),
            "reply rate [replies/s]".into(),
            num(s.min, 1),
            num(s.avg, 1),
            num(s.max, 1),
            num(s.median, 1),
            num(s.stddev, 1),
            s.count.to_string(),
        ]);
        let c = r.connection.lifetime_ms;
        t.rows.push(vec![
            label,
            "connection time [ms]".into(),
            ms(c.min),
            ms(c.avg),
            ms(c.max),
            ms(c.median),
            ms(c.stddev),
            c.count.to_string(),
        ]);
    }
    if !t.flagged.is_empty() {
        t.notes.push(CB_NOTE.into());
    }
    t
}

/// Latency percentiles of each run (corrected and, for p99, uncorrected).
pub fn percentile_table(items: &[RunItem]) -> Table {
    let mut t = Table::new(
        "Response time percentiles (ms, from the scheduled send)",
        &[
            "run",
            "n",
            "min",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "p99.99",
            "max",
            "mean",
            "stddev",
            "p99 uncorr.",
        ],
    );
    for it in items {
        let l = &it.run.latency.response;
        let at = |p: f64| {
            l.at(p)
                .or_else(|| crate::analysis::percentile_ms(it.run, p))
                .map(ms)
                .unwrap_or_else(|| "–".into())
        };
        let label = if it.run.self_check.client_bound {
            t.flagged.push(t.rows.len());
            format!("{} ({CLIENT_BOUND_MARK})", it.label)
        } else {
            it.label.clone()
        };
        t.rows.push(vec![
            label,
            num(l.count as f64, 0),
            ms(l.min_ms),
            at(50.0),
            at(90.0),
            at(99.0),
            at(99.9),
            at(99.99),
            ms(l.max_ms),
            ms(l.mean_ms),
            ms(l.stddev_ms),
            it.run
                .latency
                .response_uncorrected
                .at(99.0)
                .map(ms)
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    if !t.flagged.is_empty() {
        t.notes.push(CB_NOTE.into());
    }
    t
}

/// Every table of a report, in reading order.
pub fn all_tables(c: &Collected) -> Vec<Table> {
    let mut v = Vec::new();
    if !c.sweeps.is_empty() {
        v.push(saturation_table(&c.sweeps));
        for s in &c.sweeps {
            v.push(sweep_table(s));
        }
    }
    if !c.runs.is_empty() {
        v.push(percentile_table(&c.runs));
        v.push(spread_table(&c.runs));
        v.push(httperf_table(&c.runs));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(1234567.891, 1), "1,234,567.9");
        assert_eq!(num(999.0, 0), "999");
        assert_eq!(num(-1000.0, 0), "-1,000");
        assert_eq!(num(0.0, 2), "0.00");
        assert_eq!(ms(0.1234), "0.123");
        assert_eq!(ms(1234.4), "1,234");
    }

    #[test]
    fn table_renders() {
        let mut t = Table::new("T", &["a", "b"]);
        t.rows.push(vec!["x|y".into(), "1".into()]);
        assert!(t.to_markdown().contains("x\\|y"));
        assert!(t.to_html().contains("<td class=\"num\">1</td>"));
        assert!(t.to_text().contains("x|y"));
    }
}
