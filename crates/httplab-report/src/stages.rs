//! The rows of staged runs (`httplab load --stages`): one table row per
//! stage (offered rate, achieved reply rate, corrected percentiles, errors)
//! and a chart of each stage's p99 against its offered rate; the
//! unqueued probe (`--probe`) beside the loaded client's percentiles.

use httplab_model::Latency;

use crate::data::Collected;
use crate::text::{ms, num, Table};

fn pct(l: &Latency, p: f64) -> String {
    ms(l.at(p).unwrap_or(f64::NAN))
}

/// One table per staged run; none for other runs.
pub fn stage_tables(c: &Collected) -> Vec<Table> {
    let headers = [
        "stage",
        "start s",
        "length s",
        "offered /s",
        "replies /s",
        "sent",
        "replies",
        "errors",
        "p50",
        "p90",
        "p99",
        "p99.9",
    ];
    let mut out = Vec::new();
    for it in c.runs.iter().filter(|it| !it.run.stages.is_empty()) {
        let mut t = Table {
            title: format!("Stages of {} (response time ms, corrected)", it.label),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            numeric: (0..headers.len()).map(|i| i >= 1).collect(),
            ..Default::default()
        };
        for (i, s) in it.run.stages.iter().enumerate() {
            let offered = if s.rate_from == s.rate_to {
                num(s.rate_from, 1)
            } else {
                format!("{}–{}", num(s.rate_from, 1), num(s.rate_to, 1))
            };
            t.rows.push(vec![
                (i + 1).to_string(),
                num(s.start_s, 1),
                num(s.duration_s, 1),
                offered,
                num(s.achieved_rps, 1),
                num(s.sent as f64, 0),
                num(s.replies as f64, 0),
                num(s.errors as f64, 0),
                pct(&s.response, 50.0),
                pct(&s.response, 90.0),
                pct(&s.response, 99.0),
                pct(&s.response, 99.9),
            ]);
        }
        t.notes.push(
            "Every call belongs to the stage of its scheduled instant, and its latency counts from that instant: a stall shows in the stage whose demand it delayed. Offered is in the unit of --rate (connections or sessions per second)."
                .into(),
        );
        out.push(t);
    }
    out
}

/// One table per run with a probe: the probe's and the loaded client's
/// corrected p50/p99 side by side.
pub fn probe_tables(c: &Collected) -> Vec<Table> {
    let mut out = Vec::new();
    for it in &c.runs {
        let Some(p) = &it.run.probe else { continue };
        let mut t = Table {
            title: format!(
                "Unqueued probe beside {} (response time ms, corrected)",
                it.label
            ),
            headers: ["client", "rate /s", "replies", "p50", "p99"]
                .iter()
                .map(|h| h.to_string())
                .collect(),
            numeric: vec![false, true, true, true, true],
            ..Default::default()
        };
        t.rows.push(vec![
            "probe".into(),
            num(p.rate, 1),
            num(p.replies as f64, 0),
            pct(&p.response, 50.0),
            pct(&p.response, 99.0),
        ]);
        let l = &it.run.latency.response;
        t.rows.push(vec![
            "load".into(),
            it.run.config.rate.map_or_else(|| "–".into(), |r| num(r, 1)),
            num(it.run.totals.replies as f64, 0),
            pct(l, 50.0),
            pct(l, 99.0),
        ]);
        if p.client_queueing {
            t.flagged.push(1);
            t.notes.push("The loaded client's median is above the probe's p99: the difference is the loaded client's own queueing, not the server's latency.".into());
        }
        out.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_model::{Document, ProbeResult, RunResult, StageResult};

    #[test]
    fn staged_runs_get_rows_a_chart_and_the_probe() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in [100u64, 200, 5000] {
            h.record(v).unwrap();
        }
        let lat = Latency::from_histogram(&h);
        let mut r = RunResult {
            stages: vec![
                StageResult {
                    duration_s: 1.0,
                    rate_from: 10.0,
                    rate_to: 10.0,
                    replies: 3,
                    response: lat.clone(),
                    ..Default::default()
                },
                StageResult {
                    start_s: 1.0,
                    duration_s: 1.0,
                    rate_from: 10.0,
                    rate_to: 30.0,
                    ..Default::default()
                },
            ],
            ..RunResult::default()
        };
        r.probe = Some(ProbeResult {
            rate: 100.0,
            response: lat,
            client_queueing: true,
            ..Default::default()
        });
        let docs = [Document::Run(Box::new(r))];
        let c = crate::data::collect(&docs);
        let t = stage_tables(&c);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].rows.len(), 2);
        assert_eq!(t[0].rows[1][3], "10.0–30.0");
        let p = probe_tables(&c);
        assert_eq!(p[0].rows.len(), 2);
        assert!(!p[0].notes.is_empty());
        let mut figs = Vec::new();
        crate::html::stage_figures(&c, &mut figs).unwrap();
        assert_eq!(figs.len(), 1);
        assert!(figs[0].svg.contains("<svg"));
    }
}
