//! The per-interval series of a run as a file of its own (`httplab load
//! --series FILE`, `httplab report RESULT --series FILE`): one row per
//! interval, as CSV (`.csv`) or JSON lines (`.jsonl`), for dashboards and
//! spreadsheets.
//!
//! Columns: `t_s` (end of the interval, seconds from the run's start),
//! `len_s`, `rate` (replies per second), `replies`, `errors`, `p50_ms`,
//! `p99_ms`, `open_connections`, and `server_cpu_s`: the CPU seconds the
//! server used in the interval, read from the samples a study takes of its
//! servers (`ServerCost::samples`, interpolated linearly between samples;
//! their times count from the run's start, the intervals' from the end of
//! its warm-up, so they are shifted by `config.warmup_s`);
//! empty (CSV) or `null` (JSON) where no samples cover the interval, as for
//! every plain `httplab load` run. Documents with several runs (sweeps,
//! studies) put all their runs in one file, with a leading `run` column
//! naming each (`target/rate` for a sweep step, `workload/server/step/rN`
//! for a study run).

use serde::Serialize;

use crate::{Document, Interval, RunResult, ServerSample};

/// Format of a series file, chosen by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesFormat {
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per line.
    JsonLines,
}

impl SeriesFormat {
    /// The format of `path`: `.csv`, or `.jsonl` / `.ndjson`.
    pub fn of_path(path: &std::path::Path) -> Result<SeriesFormat, String> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("csv") => Ok(SeriesFormat::Csv),
            Some("jsonl") | Some("ndjson") => Ok(SeriesFormat::JsonLines),
            _ => Err(format!(
                "--series {}: the file name must end in .csv or .jsonl (JSON lines)",
                path.display()
            )),
        }
    }
}

/// One interval of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// Which run of a sweep or study (None for a single run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// End of the interval, seconds from the run's start.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub len_s: f64,
    /// Replies per second in the interval.
    pub rate: f64,
    /// Replies completed.
    pub replies: u64,
    /// Errors of any class.
    pub errors: u64,
    /// Median response time of the interval's replies, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Open connections at the end of the interval.
    pub open_connections: u64,
    /// Server CPU seconds used in the interval, where samples cover it.
    pub server_cpu_s: Option<f64>,
}

/// Cumulative CPU seconds at `t`, interpolated between the samples around it.
fn cpu_at(samples: &[ServerSample], t: f64) -> Option<f64> {
    let i = samples.iter().position(|s| s.t_s >= t)?;
    let b = samples[i];
    if b.t_s == t || i == 0 {
        return (b.t_s == t).then_some(b.cpu_s);
    }
    let a = samples[i - 1];
    let f = (t - a.t_s) / (b.t_s - a.t_s);
    Some(a.cpu_s + f * (b.cpu_s - a.cpu_s))
}

/// Server CPU seconds within the interval, when samples cover both ends.
/// Interval times count from the measurement window's start, sample times
/// from the run's (before its warm-up): `offset` is the warm-up.
fn server_cpu(samples: &[ServerSample], iv: &Interval, offset: f64) -> Option<f64> {
    let end = cpu_at(samples, offset + iv.t_s)?;
    let start = cpu_at(samples, offset + iv.t_s - iv.len_s)?;
    Some((end - start).max(0.0))
}

/// The rows of one run, each named `key` (None for a single run).
pub fn run_rows(r: &RunResult, key: Option<&str>) -> Vec<SeriesRow> {
    let mut samples: Vec<ServerSample> = r
        .server
        .as_ref()
        .map(|s| s.samples.clone())
        .unwrap_or_default();
    samples.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    r.series
        .iter()
        .map(|iv| SeriesRow {
            run: key.map(str::to_string),
            t_s: iv.t_s,
            len_s: iv.len_s,
            rate: iv.reply_rate,
            replies: iv.replies,
            errors: iv.errors,
            p50_ms: iv.p50_ms,
            p99_ms: iv.p99_ms,
            open_connections: iv.open_connections,
            server_cpu_s: server_cpu(&samples, iv, r.config.warmup_s),
        })
        .collect()
}

/// The rows of every run of a document, in document order.
pub fn document_rows(doc: &Document) -> Vec<SeriesRow> {
    match doc {
        Document::Run(r) => run_rows(r, None),
        Document::Sweep(s) => s
            .targets
            .iter()
            .flat_map(|t| {
                t.steps.iter().flat_map(move |st| {
                    let key = format!("{}/{}", t.label, st.demanded_rate);
                    run_rows(&st.run, Some(&key))
                })
            })
            .collect(),
        Document::Study(s) => s
            .runs
            .iter()
            .flat_map(|r| {
                let key = format!(
                    "{}/{}/{}/r{}",
                    r.workload,
                    r.server,
                    r.step.as_deref().unwrap_or("-"),
                    r.repetition
                );
                r.run
                    .iter()
                    .flat_map(move |run| run_rows(run, Some(&key)))
                    .collect::<Vec<_>>()
            })
            .collect(),
    }
}

/// The column names, in order (with `run` first when `keyed`).
pub fn columns(keyed: bool) -> Vec<&'static str> {
    let mut c = vec![
        "t_s",
        "len_s",
        "rate",
        "replies",
        "errors",
        "p50_ms",
        "p99_ms",
        "open_connections",
        "server_cpu_s",
    ];
    if keyed {
        c.insert(0, "run");
    }
    c
}

/// The file's text: a header line and one line per row (CSV), or one JSON
/// object per row (JSON lines).
pub fn render(rows: &[SeriesRow], fmt: SeriesFormat) -> Result<String, String> {
    match fmt {
        SeriesFormat::JsonLines => {
            let mut out = String::new();
            for r in rows {
                out.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
                out.push('\n');
            }
            Ok(out)
        }
        SeriesFormat::Csv => render_csv(rows),
    }
}

fn render_csv(rows: &[SeriesRow]) -> Result<String, String> {
    let keyed = rows.iter().any(|r| r.run.is_some());
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(columns(keyed)).map_err(|e| e.to_string())?;
    for r in rows {
        let mut rec = vec![
            r.t_s.to_string(),
            r.len_s.to_string(),
            r.rate.to_string(),
            r.replies.to_string(),
            r.errors.to_string(),
            r.p50_ms.to_string(),
            r.p99_ms.to_string(),
            r.open_connections.to_string(),
            r.server_cpu_s.map(|c| c.to_string()).unwrap_or_default(),
        ];
        if keyed {
            rec.insert(0, r.run.clone().unwrap_or_default());
        }
        w.write_record(&rec).map_err(|e| e.to_string())?;
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// The file's text for `path`, in the format its extension names (the
/// caller writes it: this crate does no I/O).
pub fn render_for(rows: &[SeriesRow], path: &std::path::Path) -> Result<String, String> {
    render(rows, SeriesFormat::of_path(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerCost;

    fn run() -> RunResult {
        let iv = |t: f64| Interval {
            t_s: t,
            len_s: 1.0,
            replies: 10,
            reply_rate: 10.0,
            p50_ms: 1.5,
            p99_ms: 3.0,
            open_connections: 2,
            ..Interval::default()
        };
        RunResult {
            series: vec![iv(1.0), iv(2.0), iv(3.0)],
            ..RunResult::default()
        }
    }

    #[test]
    fn format_follows_the_extension() {
        let f = |p: &str| SeriesFormat::of_path(std::path::Path::new(p));
        assert_eq!(f("a.csv"), Ok(SeriesFormat::Csv));
        assert_eq!(f("a.JSONL"), Ok(SeriesFormat::JsonLines));
        assert!(f("a.json").unwrap_err().contains(".csv or .jsonl"));
        assert!(f("noext").is_err());
    }

    #[test]
    fn one_line_per_interval_with_the_columns() {
        let rows = run_rows(&run(), None);
        let csv = render(&rows, SeriesFormat::Csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            "t_s,len_s,rate,replies,errors,p50_ms,p99_ms,open_connections,server_cpu_s"
        );
        assert_eq!(lines[1], "1,1,10,10,0,1.5,3,2,");
        let jl = render(&rows, SeriesFormat::JsonLines).unwrap();
        assert_eq!(jl.lines().count(), 3);
        let v: serde_json::Value = serde_json::from_str(jl.lines().next().unwrap()).unwrap();
        assert_eq!(v["rate"], 10.0);
        assert!(v["server_cpu_s"].is_null());
        assert!(v.get("run").is_none());
    }

    #[test]
    fn server_cpu_is_interpolated_between_samples_and_empty_outside_them() {
        let mut r = run();
        let s = |t_s: f64, cpu_s: f64| ServerSample {
            t_s,
            cpu_s,
            ..ServerSample::default()
        };
        // CPU grows 0.5 s per second from t = 0.5 to t = 2.5.
        r.server = Some(ServerCost {
            samples: vec![s(0.5, 0.0), s(1.5, 0.5), s(2.5, 1.0)],
            ..ServerCost::default()
        });
        let rows = run_rows(&r, Some("w/s/-/r0"));
        assert_eq!(rows[0].server_cpu_s, None); // [0, 1] starts before the first sample
        assert_eq!(rows[1].server_cpu_s, Some(0.5)); // [1, 2]
        assert_eq!(rows[2].server_cpu_s, None); // [2, 3] ends after the last
        let csv = render(&rows, SeriesFormat::Csv).unwrap();
        assert!(csv.starts_with("run,t_s,"), "{csv}");
        assert!(
            csv.contains("\nw/s/-/r0,2,1,10,10,0,1.5,3,2,0.5\n"),
            "{csv}"
        );
        // A warm-up of 0.5 s: interval [0, 1] of the window is [0.5, 1.5] of the run.
        r.config.warmup_s = 0.5;
        let rows = run_rows(&r, None);
        assert_eq!(rows[0].server_cpu_s, Some(0.5));
        assert_eq!(rows[1].server_cpu_s, Some(0.5));
        assert_eq!(rows[2].server_cpu_s, None);
    }
}
