//! The protocol blocks of a run's shards (`tls`, `http2`, `http3`): counters
//! and per-reason maps summed, handshake histograms added exactly, settings
//! taken from the first shard (the shards ran one command line, which
//! `check_same_run` has already checked), the first error in shard order.

use std::collections::BTreeMap;

use httplab_model::{Http2Summary, Http3Errors, Http3Summary, Latency, RunResult, TlsSummary};

use crate::latency::merge_latency;
use crate::MergeError;

/// Sets `out.tls`, `out.http2` and `out.http3` from the shards (in shard
/// order, named by `names`). A block that some shards have and others do not
/// is refused: those shards did not speak the same protocol.
pub(crate) fn merge_protocol_blocks(
    out: &mut RunResult,
    runs: &[&RunResult],
    names: &[&str],
) -> Result<(), MergeError> {
    out.tls = merge_block(runs, names, "tls", |r| r.tls.as_ref(), merge_tls)?;
    out.http2 = merge_block(runs, names, "http2", |r| r.http2.as_ref(), merge_http2)?;
    out.http3 = merge_block(runs, names, "http3", |r| r.http3.as_ref(), merge_http3)?;
    Ok(())
}

/// The block of every shard merged by `merge`, `None` when no shard has one.
fn merge_block<T>(
    runs: &[&RunResult],
    names: &[&str],
    what: &str,
    get: impl Fn(&RunResult) -> Option<&T>,
    merge: impl Fn(&[(&str, &T)]) -> Result<T, MergeError>,
) -> Result<Option<T>, MergeError> {
    let parts: Vec<(&str, &T)> = runs
        .iter()
        .zip(names)
        .filter_map(|(r, n)| get(r).map(|b| (*n, b)))
        .collect();
    if parts.is_empty() {
        return Ok(None);
    }
    if parts.len() != runs.len() {
        let missing = runs
            .iter()
            .zip(names)
            .find(|(r, _)| get(r).is_none())
            .map_or("", |(_, n)| *n);
        return Err(MergeError::Unsupported {
            source_name: missing.to_string(),
            what: format!(
                "has no `{what}` block while {} has one: the shards did not use the same protocol",
                parts[0].0
            ),
        });
    }
    merge(&parts).map(Some)
}

fn sum_maps(maps: impl Iterator<Item = BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *out.entry(k).or_insert(0) += v;
        }
    }
    out
}

fn handshakes<T>(
    parts: &[(&str, &T)],
    what: &str,
    get: impl Fn(&T) -> &Latency,
) -> Result<Latency, MergeError> {
    let refs: Vec<(&str, &Latency)> = parts.iter().map(|(n, b)| (*n, get(b))).collect();
    merge_latency(&refs, what)
}

fn first_error<T>(parts: &[(&str, &T)], get: impl Fn(&T) -> &Option<String>) -> Option<String> {
    parts.iter().find_map(|(_, b)| get(b).clone())
}

fn merge_tls(parts: &[(&str, &TlsSummary)]) -> Result<TlsSummary, MergeError> {
    let sum = |f: fn(&TlsSummary) -> u64| parts.iter().map(|(_, b)| f(b)).sum::<u64>();
    Ok(TlsSummary {
        verified: parts.iter().all(|(_, b)| b.verified),
        sni: parts[0].1.sni.clone(),
        resumption: parts[0].1.resumption,
        handshakes: sum(|b| b.handshakes),
        full: sum(|b| b.full),
        resumed: sum(|b| b.resumed),
        failures: sum(|b| b.failures),
        handshake: handshakes(parts, "tls.handshake", |b| &b.handshake)?,
        versions: sum_maps(parts.iter().map(|(_, b)| b.versions.clone())),
        cipher_suites: sum_maps(parts.iter().map(|(_, b)| b.cipher_suites.clone())),
        alpn: sum_maps(parts.iter().map(|(_, b)| b.alpn.clone())),
        first_error: first_error(parts, |b| &b.first_error),
    })
}

fn merge_http2(parts: &[(&str, &Http2Summary)]) -> Result<Http2Summary, MergeError> {
    let sum = |f: fn(&Http2Summary) -> u64| parts.iter().map(|(_, b)| f(b)).sum::<u64>();
    let first = parts[0].1;
    Ok(Http2Summary {
        cleartext: first.cleartext,
        max_concurrent_streams: first.max_concurrent_streams,
        stream_window: first.stream_window,
        conn_window: first.conn_window,
        connections: sum(|b| b.connections),
        streams_started: sum(|b| b.streams_started),
        streams_completed: sum(|b| b.streams_completed),
        streams_failed: sum(|b| b.streams_failed),
        streams_retried: sum(|b| b.streams_retried),
        rst_stream_received: sum_maps(parts.iter().map(|(_, b)| b.rst_stream_received.clone())),
        goaway_received: sum(|b| b.goaway_received),
        goaway_reasons: sum_maps(parts.iter().map(|(_, b)| b.goaway_reasons.clone())),
        failed_connections: sum(|b| b.failed_connections),
        first_error: first_error(parts, |b| &b.first_error),
    })
}

fn merge_http3(parts: &[(&str, &Http3Summary)]) -> Result<Http3Summary, MergeError> {
    let sum = |f: fn(&Http3Summary) -> u64| parts.iter().map(|(_, b)| f(b)).sum::<u64>();
    let errs = |f: fn(&Http3Errors) -> u64| parts.iter().map(|(_, b)| f(&b.errors)).sum::<u64>();
    Ok(Http3Summary {
        max_concurrent_streams: parts[0].1.max_concurrent_streams,
        connections: sum(|b| b.connections),
        streams_started: sum(|b| b.streams_started),
        streams_completed: sum(|b| b.streams_completed),
        streams_failed: sum(|b| b.streams_failed),
        handshake: handshakes(parts, "http3.handshake", |b| &b.handshake)?,
        handshakes_1rtt: sum(|b| b.handshakes_1rtt),
        handshakes_0rtt: sum(|b| b.handshakes_0rtt),
        errors: Http3Errors {
            handshake_failed: errs(|e| e.handshake_failed),
            version_negotiation: errs(|e| e.version_negotiation),
            closed_by_peer: sum_maps(parts.iter().map(|(_, b)| b.errors.closed_by_peer.clone())),
            stream_reset: sum_maps(parts.iter().map(|(_, b)| b.errors.stream_reset.clone())),
            idle_timeout: errs(|e| e.idle_timeout),
            protocol_error: errs(|e| e.protocol_error),
        },
        lost_packets: sum(|b| b.lost_packets),
        datagrams_sent: sum(|b| b.datagrams_sent),
        datagrams_received: sum(|b| b.datagrams_received),
        failed_connections: sum(|b| b.failed_connections),
        first_error: first_error(parts, |b| &b.first_error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h2(streams: u64, reason: &str, err: Option<&str>) -> Http2Summary {
        Http2Summary {
            cleartext: true,
            max_concurrent_streams: 10,
            connections: 2,
            streams_started: streams,
            streams_completed: streams - 1,
            streams_failed: 1,
            rst_stream_received: BTreeMap::from([(reason.to_string(), 1)]),
            first_error: err.map(str::to_string),
            ..Http2Summary::default()
        }
    }

    #[test]
    fn http2_counters_and_reasons_are_summed() {
        let a = RunResult {
            http2: Some(h2(10, "REFUSED_STREAM", None)),
            ..RunResult::default()
        };
        let b = RunResult {
            http2: Some(h2(7, "CANCEL", Some("second"))),
            ..RunResult::default()
        };
        let mut out = RunResult::default();
        merge_protocol_blocks(&mut out, &[&a, &b], &["a", "b"]).expect("merges");
        let m = out.http2.expect("block kept");
        assert_eq!(m.connections, 4);
        assert_eq!(m.streams_started, 17);
        assert_eq!(m.streams_completed, 15);
        assert_eq!(m.rst_stream_received.len(), 2);
        assert_eq!(m.first_error.as_deref(), Some("second"));
        assert!(out.tls.is_none() && out.http3.is_none());
    }

    #[test]
    fn tls_handshake_histograms_are_added_exactly() {
        let tls = |values: &[u64], version: &str| {
            let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("histogram");
            for v in values {
                h.record(*v).expect("records");
            }
            TlsSummary {
                handshakes: values.len() as u64,
                handshake: Latency::from_histogram(&h),
                versions: BTreeMap::from([(version.to_string(), values.len() as u64)]),
                ..TlsSummary::default()
            }
        };
        let a = RunResult {
            tls: Some(tls(&[100, 200, 300], "TLSv1.3")),
            ..RunResult::default()
        };
        let b = RunResult {
            tls: Some(tls(&[5_000], "TLSv1.2")),
            ..RunResult::default()
        };
        let mut out = RunResult::default();
        merge_protocol_blocks(&mut out, &[&a, &b], &["a", "b"]).expect("merges");
        let m = out.tls.expect("block kept");
        assert_eq!(m.handshakes, 4);
        assert_eq!(m.handshake.count, 4);
        assert_eq!(m.versions.len(), 2);
        assert!(m.handshake.max_ms > a.tls.as_ref().map_or(0.0, |t| t.handshake.max_ms));
    }

    #[test]
    fn a_block_on_one_shard_only_is_refused() {
        let a = RunResult {
            tls: Some(TlsSummary::default()),
            ..RunResult::default()
        };
        let b = RunResult::default();
        let mut out = RunResult::default();
        let err = merge_protocol_blocks(&mut out, &[&a, &b], &["a", "b"]).unwrap_err();
        assert!(err.to_string().contains("tls"), "{err}");
    }

    #[test]
    fn http3_errors_are_summed_by_class() {
        let mk = |n: u64| Http3Summary {
            streams_started: n,
            errors: Http3Errors {
                idle_timeout: 1,
                closed_by_peer: BTreeMap::from([("H3_NO_ERROR".to_string(), n)]),
                ..Http3Errors::default()
            },
            ..Http3Summary::default()
        };
        let a = RunResult {
            http3: Some(mk(3)),
            ..RunResult::default()
        };
        let b = RunResult {
            http3: Some(mk(4)),
            ..RunResult::default()
        };
        let mut out = RunResult::default();
        merge_protocol_blocks(&mut out, &[&a, &b], &["a", "b"]).expect("merges");
        let m = out.http3.expect("block kept");
        assert_eq!(m.streams_started, 7);
        assert_eq!(m.errors.idle_timeout, 2);
        assert_eq!(m.errors.closed_by_peer["H3_NO_ERROR"], 7);
    }
}
