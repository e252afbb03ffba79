//! The idle workload in the report: the table of held connections per
//! server and step, and the terminal lines of clients hurt by them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use httplab_model as m;

fn idle(r: &m::RunResult) -> Option<&m::IdleFacts> {
    r.config.facts.study.idle.as_ref()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One row of the idle table: a server at one step, over its repetitions.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Step label (idle connections, or the varied value).
    pub step: String,
    /// Server.
    pub server: String,
    /// Repetitions that produced a run.
    pub reps: usize,
    /// Mean replies per run.
    pub replies: f64,
    /// Mean failed calls per run (errors of any class and 5xx replies).
    pub errors: f64,
    /// Mean p50 response ms (runs with replies).
    pub p50_ms: Option<f64>,
    /// Mean p99 response ms (runs with replies).
    pub p99_ms: Option<f64>,
    /// Idle connections asked for.
    pub conns: f64,
    /// Mean connected.
    pub connected: f64,
    /// Mean open at the end.
    pub open_at_end: f64,
    /// Mean descriptors the server added while holding.
    pub fds_added: f64,
    /// Largest server RSS added per held connection over the repetitions, bytes.
    pub rss_per_conn: Option<f64>,
    /// Notes of the repetitions (distinct).
    pub notes: Vec<String>,
}

/// The idle table of workload `w` (empty when it is not an idle workload).
pub fn rows(res: &m::StudyResult, w: &str) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut acc: BTreeMap<(usize, String), Vec<&m::RunResult>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for r in res.runs.iter().filter(|r| r.workload == w) {
        let Some(run) = r.run.as_ref() else { continue };
        if idle(run).is_none() {
            continue;
        }
        let key = (r.step.clone().unwrap_or_default(), r.server.clone());
        let pos = match order.iter().position(|k| *k == key) {
            Some(p) => p,
            None => {
                order.push(key.clone());
                order.len() - 1
            }
        };
        acc.entry((pos, key.1)).or_default().push(run);
    }
    for ((pos, server), runs) in acc {
        let col = |f: &dyn Fn(&m::RunResult) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|r| f(r)).collect()
        };
        let mut notes: Vec<String> = Vec::new();
        for r in &runs {
            if let Some(n) = idle(r).and_then(|i| i.note.as_ref()) {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
        }
        out.push(Row {
            step: order[pos].0.clone(),
            server,
            reps: runs.len(),
            replies: mean(&col(&|r| Some(r.totals.replies as f64))).unwrap_or(0.0),
            errors: mean(&col(&|r| Some(m::metric::failed_calls(r) as f64))).unwrap_or(0.0),
            p50_ms: mean(&col(&|r| r.latency.response.at(50.0))),
            p99_ms: mean(&col(&|r| r.latency.response.at(99.0))),
            conns: mean(&col(&|r| Some(idle(r)?.conns as f64))).unwrap_or(0.0),
            connected: mean(&col(&|r| Some(idle(r)?.connected as f64))).unwrap_or(0.0),
            open_at_end: mean(&col(&|r| Some(idle(r)?.open_at_end as f64))).unwrap_or(0.0),
            fds_added: mean(&col(&|r| Some(idle(r)?.fds_added()))).unwrap_or(0.0),
            // The largest: a later round finds memory an earlier one left
            // the server, and shows less than the connections cost.
            rss_per_conn: col(&|r| idle(r)?.server_rss_per_conn_bytes)
                .into_iter()
                .reduce(f64::max),
            notes,
        });
    }
    out.sort_by_key(|r| (order.iter().position(|k| k.0 == r.step), r.server.clone()));
    out
}

fn opt_ms(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.2}"))
}

/// The HTML table of an idle workload (None when `w` is not one).
pub fn html_section(res: &m::StudyResult, w: &str) -> Option<String> {
    let rows = rows(res, w);
    if rows.is_empty() {
        return None;
    }
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<h3>Under idle connections</h3><p>Means over repetitions. <i>connected</i>: held \
         connections whose handshake completed; <i>open at end</i>: still open when the client \
         finished; <i>server fds added</i>: the server's descriptors while holding minus before \
         (what it actually accepted); <i>RSS / conn</i>: the server's peak memory added per held \
         connection (the largest over repetitions: later rounds reuse memory an earlier one left).</p>"
    );
    let _ = writeln!(
        h,
        "<table><tr><th class=\"l\">step</th><th class=\"l\">server</th><th>n</th><th>replies</th>\
         <th>errors</th><th>p50 ms</th><th>p99 ms</th><th>idle conns</th><th>connected</th>\
         <th>open at end</th><th>server fds added</th><th>RSS / conn KB</th><th class=\"l\">note</th></tr>"
    );
    for r in &rows {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td>\
             <td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td>\
             <td class=\"l\">{}</td></tr>",
            esc(&r.step),
            esc(&r.server),
            r.reps,
            r.replies,
            r.errors,
            opt_ms(r.p50_ms),
            opt_ms(r.p99_ms),
            r.conns,
            r.connected,
            r.open_at_end,
            r.fds_added,
            r.rss_per_conn
                .map_or("–".into(), |b| format!("{:.1}", b / 1e3)),
            esc(&r.notes.join(" | "))
        );
    }
    let _ = writeln!(h, "</table>");
    Some(h)
}

/// Text lines for the terminal summary: one per server and step whose
/// client was hurt by the held connections.
pub fn summary_lines(res: &m::StudyResult) -> Vec<String> {
    let mut ws: Vec<&str> = Vec::new();
    for r in &res.runs {
        if !ws.contains(&r.workload.as_str()) {
            ws.push(&r.workload);
        }
    }
    let mut out = Vec::new();
    for w in ws {
        for r in rows(res, w) {
            if r.notes.is_empty() {
                continue;
            }
            out.push(format!(
                "{w} [{}] {}: {}",
                r.step,
                r.server,
                r.notes.join(" | ")
            ));
        }
    }
    out
}
