//! The per-shard table of merged runs (`httplab merge`): one row per client
//! shard, so that one slow or overloaded client stands out next to the others.

use crate::data::Collected;
use crate::text::{ms, num, Table, CLIENT_BOUND_MARK};

/// One table per merged run (a run with `shards`); none for other runs.
pub fn shard_tables(c: &Collected) -> Vec<Table> {
    let headers = [
        "shard",
        "host",
        "started at",
        "offset s",
        "duration s",
        "requests",
        "replies",
        "errors",
        "p50",
        "p99",
    ];
    let mut out = Vec::new();
    for it in c.runs.iter().filter(|it| !it.run.shards.is_empty()) {
        let mut t = Table {
            title: format!(
                "Client shards of {} (merged from {}; response time ms)",
                it.label,
                it.run.shards.len()
            ),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            numeric: (0..headers.len()).map(|i| i >= 3).collect(),
            ..Default::default()
        };
        for s in &it.run.shards {
            let mut shard = format!("{}/{}", s.index, s.count);
            if s.client_bound {
                t.flagged.push(t.rows.len());
                shard = format!("{shard} ({CLIENT_BOUND_MARK})");
            }
            t.rows.push(vec![
                shard,
                if s.host.is_empty() {
                    "–".into()
                } else {
                    s.host.clone()
                },
                s.started_at.clone(),
                num(s.start_offset_s, 3),
                num(s.test_duration_s, 3),
                num(s.requests as f64, 0),
                num(s.replies as f64, 0),
                num(s.errors as f64, 0),
                ms(s.p50_ms),
                ms(s.p99_ms),
            ]);
        }
        t.notes.push(
            "Each row is one client's own result before the merge; the run's other tables show the merged totals and percentiles (histograms added exactly). A client whose p99, errors or start differ from the others' was itself a bottleneck or started late."
                .into(),
        );
        out.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_model::{Document, RunResult, ShardInfo};

    #[test]
    fn one_row_per_shard_and_client_bound_flagged() {
        let shard = |i: u32, bound: bool| ShardInfo {
            index: i,
            count: 2,
            host: format!("client-{i}"),
            started_at: "2026-03-01T12:00:00Z".into(),
            requests: 100,
            replies: 99,
            errors: 1,
            p50_ms: 1.5,
            p99_ms: 20.0,
            client_bound: bound,
            ..Default::default()
        };
        let merged = RunResult {
            label: "farm".into(),
            shards: vec![shard(0, false), shard(1, true)],
            ..Default::default()
        };
        let plain = RunResult::default();
        let docs = [
            Document::Run(Box::new(merged)),
            Document::Run(Box::new(plain)),
        ];
        let c = crate::data::collect(&docs);
        let t = shard_tables(&c);
        assert_eq!(t.len(), 1, "only the merged run has a shard table");
        assert_eq!(t[0].rows.len(), 2);
        assert_eq!(t[0].flagged, vec![1]);
        let html = t[0].to_html();
        assert!(html.contains("client-1") && html.contains("Client shards of farm"));
        assert!(t[0].rows[1][0].starts_with("1/2 ("));
    }
}
