//! Merging the `httplab.run/1` results of the shards of one run.

use std::collections::{BTreeMap, BTreeSet};

use httplab_model::{
    Accuracy, ClientShard, Errors, Interval, Latencies, Latency, ProbeResult, RunFacts, RunResult,
    ShardInfo, StageResult, StatusClasses, Summary, ToolInfo, RUN_SCHEMA,
};
use serde_json::Value;

use crate::latency::merge_latency;
use crate::{MergeError, Merged, Options};

/// What the merged document says about its inexact fields
/// (`config.facts.merge_approximations`).
const APPROXIMATIONS: [&str; 5] = [
    "connection.lifetime_ms.median: count-weighted mean of the shards' medians",
    "series[].p50_ms: reply-weighted mean of the shards' interval medians",
    "series[].p99_ms and self_check.schedule_lag_p50_ms/p99_ms: largest of the shards' values (an upper bound)",
    "totals.max_concurrent_connections: sum of the shards' maxima (an upper bound)",
    "config.facts.setup_wait_p99_ms: largest of the shards' values (an upper bound)",
];

/// Merges the results of every shard of one run. Inputs are (name, result)
/// pairs; the name (a file name) appears in errors and in the shard list.
/// The order of the inputs does not matter: shards are merged in shard order.
pub fn merge_runs(
    inputs: &[(String, RunResult)],
    opts: &Options,
) -> Result<Merged<RunResult>, MergeError> {
    let refs: Vec<(&str, &RunResult)> = inputs.iter().map(|(n, r)| (n.as_str(), r)).collect();
    merge_run_refs(&refs, opts)
}

/// [`merge_runs`] on borrowed inputs.
pub fn merge_run_refs(
    inputs: &[(&str, &RunResult)],
    opts: &Options,
) -> Result<Merged<RunResult>, MergeError> {
    let (shards, count) = shards_in_order(inputs, opts)?;
    let mut warnings = Vec::new();
    let starts = shard_starts(&shards, opts, &mut warnings)?;
    let (offsets, span) = offsets_and_span(&shards, &starts);

    let base = shards[0].1;
    let runs: Vec<&RunResult> = shards.iter().map(|(_, r, _)| *r).collect();
    let names: Vec<&str> = shards.iter().map(|(n, _, _)| *n).collect();
    let agg = Runs(&runs);

    let mut out: RunResult = base.clone();
    out.schema = RUN_SCHEMA.into();
    out.tool = ToolInfo::current(env!("CARGO_PKG_VERSION"));
    let earliest = starts
        .iter()
        .enumerate()
        .fold(0, |best, (i, s)| if *s < starts[best] { i } else { best });
    out.started_at = runs[earliest].started_at.clone();
    out.interrupted = runs.iter().any(|r| r.interrupted);
    out.server = runs.iter().find_map(|r| r.server.clone());

    // Latencies: every distribution, histograms added.
    out.latency = merge_latencies(&runs, &names)?;
    merge_counters(&mut out, &agg, span);

    let interval = base.reply.sample_interval_s;
    out.series = merge_series(&shards, &offsets, interval, &mut warnings);
    merge_reply(&mut out, &agg, interval);
    merge_resources(&mut out, &agg, span);
    out.errors = runs
        .iter()
        .fold(Errors::default(), |a, r| add_errors(a, &r.errors));
    out.accuracy = runs
        .iter()
        .fold(Accuracy::default(), |a, r| add_accuracy(a, &r.accuracy));
    merge_self_check(&mut out, &agg, span);
    out.self_check.warnings = self_check_warnings(&shards, count, &warnings);
    merge_config_and_environment(&mut out, &runs, count);
    crate::protocols::merge_protocol_blocks(&mut out, &runs, &names)?;
    out.stages = merge_stages(&shards)?;
    out.probe = merge_probes(&shards, &out.latency.response)?;

    out.shards = shards
        .iter()
        .zip(&offsets)
        .zip(hosts(&runs))
        .map(|(((name, r, i), off), host)| shard_info(name, r, *i, count, *off, host))
        .collect();
    Ok(Merged {
        result: out,
        warnings,
    })
}

/// One shard's input: its name, its result and its shard index.
type Shard<'a> = (&'a str, &'a RunResult, u32);

/// The inputs as `(name, result, shard index)` in shard order, whatever the
/// order of the files, and the number of shards; refuses an empty input,
/// an already merged result and shards of different runs.
fn shards_in_order<'a>(
    inputs: &[(&'a str, &'a RunResult)],
    opts: &Options,
) -> Result<(Vec<Shard<'a>>, u32), MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::Empty);
    }
    for (name, r) in inputs {
        if !r.shards.is_empty() {
            return Err(MergeError::AlreadyMerged(name.to_string()));
        }
        if !r.repeats.is_empty() {
            return Err(MergeError::Repeated(name.to_string(), r.run_count()));
        }
    }
    let ids = assign_shards(inputs, opts.force)?;
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| ids[i].0);
    let shards: Vec<(&str, &RunResult, u32)> = order
        .iter()
        .map(|&i| (inputs[i].0, inputs[i].1, ids[i].0))
        .collect();
    let count = ids[0].1;
    check_same_run(&shards, opts.force)?;
    Ok((shards, count))
}

/// Each shard's start relative to the earliest, and the merged run's span:
/// from the earliest start to the latest end (at least 1 ns).
fn offsets_and_span(shards: &[(&str, &RunResult, u32)], starts: &[f64]) -> (Vec<f64>, f64) {
    let t0 = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let offsets: Vec<f64> = starts.iter().map(|s| s - t0).collect();
    let span = shards
        .iter()
        .zip(&offsets)
        .map(|((_, r, _), o)| o + r.totals.test_duration_s.max(0.0))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    (offsets, span)
}

/// The shards' runs in shard order, with the sums, maxima and weighted
/// means the merge takes over them.
struct Runs<'a>(&'a [&'a RunResult]);

impl Runs<'_> {
    fn sum(&self, f: impl Fn(&RunResult) -> u64) -> u64 {
        self.0.iter().map(|r| f(r)).sum::<u64>()
    }

    fn fsum(&self, f: impl Fn(&RunResult) -> f64) -> f64 {
        self.0.iter().map(|r| f(r)).sum::<f64>()
    }

    fn fmax(&self, f: impl Fn(&RunResult) -> f64) -> f64 {
        self.0.iter().map(|r| f(r)).fold(0.0_f64, f64::max)
    }

    /// Mean of per-unit averages weighted by their unit counts: the merged
    /// total divided by the merged count, exactly.
    fn weighted(&self, avg: impl Fn(&RunResult) -> f64, n: impl Fn(&RunResult) -> u64) -> f64 {
        let total: u64 = self.sum(&n);
        if total == 0 {
            0.0
        } else {
            self.fsum(|r| avg(r) * n(r) as f64) / total as f64
        }
    }
}

/// Totals, connection and request sections: counters added, rates over
/// the merged span (after the latencies, whose connect mean they use).
fn merge_counters(out: &mut RunResult, agg: &Runs<'_>, span: f64) {
    let t = &mut out.totals;
    t.connections = agg.sum(|r| r.totals.connections);
    t.requests = agg.sum(|r| r.totals.requests);
    t.replies = agg.sum(|r| r.totals.replies);
    t.test_duration_s = span;
    t.max_concurrent_connections = agg.sum(|r| r.totals.max_concurrent_connections);
    let (conns, reqs, replies) = (t.connections, t.requests, t.replies);

    let c = &mut out.connection;
    c.rate_per_s = conns as f64 / span;
    c.ms_per_conn = if c.rate_per_s > 0.0 {
        1000.0 / c.rate_per_s
    } else {
        0.0
    };
    let lifetimes: Vec<Summary> = agg.0.iter().map(|r| r.connection.lifetime_ms).collect();
    c.lifetime_ms = merge_summary(&lifetimes);
    c.connect_ms = if out.latency.connect.count > 0 {
        out.latency.connect.mean_ms
    } else {
        agg.weighted(|r| r.connection.connect_ms, |r| r.totals.connections)
    };
    // Successful connections of each shard, recovered from replies per connection.
    let conns_ok = |r: &RunResult| {
        if r.connection.replies_per_conn > 0.0 {
            (r.totals.replies as f64 / r.connection.replies_per_conn).round() as u64
        } else {
            0
        }
    };
    let ok = agg.sum(conns_ok);
    out.connection.replies_per_conn = if ok > 0 {
        replies as f64 / ok as f64
    } else {
        0.0
    };

    let q = &mut out.request;
    q.rate_per_s = reqs as f64 / span;
    q.ms_per_req = if q.rate_per_s > 0.0 {
        1000.0 / q.rate_per_s
    } else {
        0.0
    };
    q.size_bytes = agg.weighted(|r| r.request.size_bytes, |r| r.totals.requests);
}

/// The reply section: the rate summary over the merged series' full
/// intervals, reply-weighted means, status classes added.
fn merge_reply(out: &mut RunResult, agg: &Runs<'_>, interval: f64) {
    let full: Vec<f64> = out
        .series
        .iter()
        .filter(|i| i.len_s >= interval * 0.999)
        .map(|i| i.reply_rate)
        .collect();
    let by_replies = |f: &dyn Fn(&RunResult) -> f64| agg.weighted(f, |r| r.totals.replies);
    let p = &mut out.reply;
    p.rate = Summary::of(&full);
    p.sample_interval_s = interval;
    p.response_ms = by_replies(&|r| r.reply.response_ms);
    p.transfer_ms = by_replies(&|r| r.reply.transfer_ms);
    p.header_bytes = by_replies(&|r| r.reply.header_bytes);
    p.content_bytes = by_replies(&|r| r.reply.content_bytes);
    p.footer_bytes = by_replies(&|r| r.reply.footer_bytes);
    p.status = agg
        .0
        .iter()
        .fold(StatusClasses::default(), |a, r| a.add(&r.reply.status));
}

/// The resources section: CPU times and bytes added, rates over the span.
fn merge_resources(out: &mut RunResult, agg: &Runs<'_>, span: f64) {
    let res = &mut out.resources;
    res.user_s = agg.fsum(|r| r.resources.user_s);
    res.system_s = agg.fsum(|r| r.resources.system_s);
    res.bytes_sent = agg.sum(|r| r.resources.bytes_sent);
    res.bytes_received = agg.sum(|r| r.resources.bytes_received);
    let bytes = (res.bytes_sent + res.bytes_received) as f64;
    res.net_kb_per_s = bytes / 1024.0 / span;
    res.net_mbit_per_s = bytes * 8.0 / 1e6 / span;
}

/// The self-check without its warnings: the merged run is client-bound
/// when any shard was (after the totals, whose reply rate it uses).
fn merge_self_check(out: &mut RunResult, agg: &Runs<'_>, span: f64) {
    let sc = &mut out.self_check;
    sc.client_cpu_pct = 100.0 * (res_cpu(agg.0)) / span;
    sc.schedule_lag_p50_ms = agg.fmax(|r| r.self_check.schedule_lag_p50_ms);
    sc.schedule_lag_p99_ms = agg.fmax(|r| r.self_check.schedule_lag_p99_ms);
    sc.schedule_lag_max_ms = agg.fmax(|r| r.self_check.schedule_lag_max_ms);
    sc.late_starts = agg.sum(|r| r.self_check.late_starts);
    sc.client_bound = agg.0.iter().any(|r| r.self_check.client_bound);
    // The shards' clients are separate machines: their ceilings add, and the
    // merged utilization is the merged reply rate over that sum (known only
    // when every shard calibrated). Reasons are the union.
    let ceilings: Option<Vec<f64>> = agg.0.iter().map(|r| r.self_check.client_ceiling).collect();
    sc.client_ceiling = ceilings.map(|c| c.iter().sum::<f64>()).filter(|c| *c > 0.0);
    sc.client_utilization = sc
        .client_ceiling
        .map(|c| out.totals.replies as f64 / out.totals.test_duration_s.max(1e-9) / c);
    sc.reasons = Vec::new();
    for r in agg.0 {
        for reason in &r.self_check.reasons {
            if !sc.reasons.contains(reason) {
                sc.reasons.push(reason.clone());
            }
        }
    }
}

/// Every shard's self-check warnings, each prefixed with its shard, then
/// the merge's own.
fn self_check_warnings(
    shards: &[(&str, &RunResult, u32)],
    count: u32,
    merge_warnings: &[String],
) -> Vec<String> {
    let runs: Vec<&RunResult> = shards.iter().map(|(_, r, _)| *r).collect();
    let mut out = Vec::new();
    for ((_, r, i), host) in shards.iter().zip(hosts(&runs)) {
        let who = shard_label(*i, count, &host);
        for w in &r.self_check.warnings {
            out.push(format!("{who}: {w}"));
        }
    }
    for w in merge_warnings {
        out.push(format!("merge: {w}"));
    }
    out
}

/// Configuration and environment: the first shard's, with the shard's
/// `I/N` replaced by the number of shards and per-shard facts dropped (each
/// shard keeps its own in `shards`).
fn merge_config_and_environment(out: &mut RunResult, runs: &[&RunResult], count: u32) {
    out.config.facts = merge_facts(runs, count);
    out.config.extra = merge_extra(runs);
    let f = &mut out.environment.facts;
    f.shards = Some(count);
    f.hosts = hosts(runs).into_iter().filter(|h| !h.is_empty()).collect();
}

fn res_cpu(runs: &[&RunResult]) -> f64 {
    runs.iter()
        .map(|r| r.resources.user_s + r.resources.system_s)
        .sum()
}

fn shard_label(i: u32, n: u32, host: &str) -> String {
    if host.is_empty() {
        format!("shard {i}/{n}")
    } else {
        format!("shard {i}/{n} ({host})")
    }
}

/// The host each run recorded: `config.facts.host`, else a `host` or
/// `hostname` a user or another tool wrote among the environment's free-form
/// facts, else empty.
fn hosts(runs: &[&RunResult]) -> Vec<String> {
    runs.iter()
        .map(|r| {
            r.config
                .facts
                .host
                .as_ref()
                .or_else(|| r.environment.extra.get("host"))
                .or_else(|| r.environment.extra.get("hostname"))
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

fn shard_info(name: &str, r: &RunResult, i: u32, n: u32, off: f64, host: String) -> ShardInfo {
    // The registry's corrected percentile, else the uncorrected one of a shard without it.
    let pct = |p: f64| {
        httplab_model::metric::response_percentile_ms(r, p)
            .or_else(|| {
                httplab_model::metric::latency_percentile_ms(&r.latency.response_uncorrected, p)
            })
            .unwrap_or(0.0)
    };
    ShardInfo {
        index: i,
        count: n,
        run_id: r.config.facts.run_id.clone().unwrap_or_default(),
        host,
        source: name.to_string(),
        started_at: r.started_at.clone(),
        start_offset_s: off,
        test_duration_s: r.totals.test_duration_s,
        connections: r.totals.connections,
        requests: r.totals.requests,
        replies: r.totals.replies,
        errors: r.errors.total,
        p50_ms: pct(50.0),
        p99_ms: pct(99.0),
        client_bound: r.self_check.client_bound,
        warnings: r.self_check.warnings.clone(),
        command_line: r.config.command_line.clone(),
        facts: r.config.facts.clone(),
        extra: r.config.extra.clone(),
        tool: r.tool.clone(),
        environment: r.environment.clone(),
    }
}

/// The run's shard, checked: None for a run from one client; an error for
/// a shard that is not I/N with 0 <= I < N (an older document's word that
/// did not parse stays in `config.extra`).
fn shard_of(name: &str, r: &RunResult) -> Result<Option<(u32, u32)>, MergeError> {
    let bad = |value: String| MergeError::BadShard {
        source_name: name.to_string(),
        value,
    };
    match r.config.facts.client_shard {
        Some(ClientShard { index, count }) if index < count => Ok(Some((index, count))),
        Some(s) => Err(bad(s.to_string())),
        None => match r.config.extra.get("client_shard") {
            Some(word) => Err(bad(word.clone())),
            None => Ok(None),
        },
    }
}

/// (I, N) of every input, checked: one N, every I once.
fn assign_shards(
    inputs: &[(&str, &RunResult)],
    force: bool,
) -> Result<Vec<(u32, u32)>, MergeError> {
    let mut parsed = Vec::with_capacity(inputs.len());
    for (name, r) in inputs {
        parsed.push(shard_of(name, r)?);
    }
    let sharded = parsed.iter().position(Option::is_some);
    let unsharded = parsed.iter().position(Option::is_none);
    let ids: Vec<(u32, u32)> = match (sharded, unsharded) {
        (None, _) => {
            if !force {
                return Err(MergeError::NoShardInfo(inputs[0].0.to_string()));
            }
            let n = inputs.len() as u32;
            (0..n).map(|i| (i, n)).collect()
        }
        (Some(s), Some(u)) => {
            let (i, n) = parsed[s].unwrap_or_default();
            return Err(MergeError::PartlySharded {
                unsharded: inputs[u].0.to_string(),
                sharded: inputs[s].0.to_string(),
                shard: format!("{i}/{n}"),
            });
        }
        (Some(_), None) => parsed.into_iter().flatten().collect(),
    };
    let n = ids[0].1;
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for ((i, ni), (name, _)) in ids.iter().zip(inputs) {
        if *ni != n {
            return Err(MergeError::ShardCount {
                a: inputs[0].0.to_string(),
                an: n,
                b: name.to_string(),
                bn: *ni,
            });
        }
        if let Some(first) = seen.insert(*i, name) {
            return Err(MergeError::Overlap {
                shard: format!("{i}/{n}"),
                first: first.to_string(),
                second: name.to_string(),
            });
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            have: seen.len(),
            count: n,
        });
    }
    Ok(ids)
}

/// Same run id everywhere; without run ids (force), the same configuration.
/// The sample interval and the load mode must agree in any case.
fn check_same_run(shards: &[(&str, &RunResult, u32)], force: bool) -> Result<(), MergeError> {
    let (first, base, _) = shards[0];
    let id = |r: &RunResult| {
        r.config
            .facts
            .run_id
            .as_ref()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let mut any_missing = false;
    let mut known: Option<(&str, String)> = None;
    for (name, r, _) in shards {
        match id(r) {
            None if !force => return Err(MergeError::NoRunId(name.to_string())),
            None => any_missing = true,
            Some(v) => match &known {
                Some((kn, kv)) if *kv != v => {
                    return Err(MergeError::DifferentRuns {
                        a: kn.to_string(),
                        a_id: kv.clone(),
                        b: name.to_string(),
                        b_id: v,
                    })
                }
                Some(_) => {}
                None => known = Some((name, v)),
            },
        }
    }
    for (name, r, _) in &shards[1..] {
        let differ = |what: &str, a: String, b: String| {
            if a == b {
                Ok(())
            } else {
                Err(MergeError::Incompatible {
                    a: first.to_string(),
                    b: name.to_string(),
                    what: what.into(),
                    a_value: a,
                    b_value: b,
                })
            }
        };
        differ(
            "sample interval",
            format!("{} s", base.reply.sample_interval_s),
            format!("{} s", r.reply.sample_interval_s),
        )?;
        differ(
            "load mode",
            format!("{:?}", base.config.mode),
            format!("{:?}", r.config.mode),
        )?;
        if any_missing {
            let (a, b) = (&base.config, &r.config);
            differ(
                "targets",
                format!("{:?}", a.targets),
                format!("{:?}", b.targets),
            )?;
            differ("rate", format!("{:?}", a.rate), format!("{:?}", b.rate))?;
            differ(
                "distribution",
                format!("{:?}", a.distribution),
                format!("{:?}", b.distribution),
            )?;
            differ(
                "num_conns",
                format!("{:?}", a.num_conns),
                format!("{:?}", b.num_conns),
            )?;
            differ(
                "num_calls",
                format!("{:?}", a.num_calls),
                format!("{:?}", b.num_calls),
            )?;
            differ(
                "duration",
                format!("{:?}", a.duration_s),
                format!("{:?}", b.duration_s),
            )?;
            differ("users", format!("{:?}", a.users), format!("{:?}", b.users))?;
            differ(
                "think time",
                format!("{:?}", a.think_ms),
                format!("{:?}", b.think_ms),
            )?;
            differ(
                "timeout",
                format!("{:?}", a.timeout_s),
                format!("{:?}", b.timeout_s),
            )?;
            differ("method", a.method.clone(), b.method.clone())?;
        }
    }
    Ok(())
}

/// Parses RFC 3339 (fractional seconds allowed) or unix seconds.
pub(crate) fn parse_time(s: &str) -> Option<f64> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(d.as_secs_f64())
}

/// Each shard's start (unix seconds): its recorded `--start-at` instant when
/// there is one (the engine starts its clock on it), else `started_at`.
/// Warns when starts disagree by more than the allowed skew.
fn shard_starts(
    shards: &[(&str, &RunResult, u32)],
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<Vec<f64>, MergeError> {
    let n = shards.len() as u32;
    let mut starts = Vec::with_capacity(shards.len());
    let mut actual = Vec::with_capacity(shards.len());
    for (name, r, i) in shards {
        let started = match parse_time(&r.started_at) {
            Some(t) => t,
            None if opts.force => {
                warnings.push(format!(
                    "{name}: started_at \"{}\" is not a time; its time series is aligned as if it started first",
                    r.started_at
                ));
                f64::NAN
            }
            None => {
                return Err(MergeError::BadTime {
                    source_name: name.to_string(),
                    field: "started_at".into(),
                    value: r.started_at.clone(),
                })
            }
        };
        let planned = match &r.config.facts.start_at {
            Some(v) => Some(parse_time(v).ok_or_else(|| MergeError::BadTime {
                source_name: name.to_string(),
                field: "config.facts.start_at".into(),
                value: v.clone(),
            })?),
            None => None,
        };
        if let (Some(p), true) = (planned, started.is_finite()) {
            // `started_at` has whole seconds: it may read up to 1 s early.
            let late = started - p;
            if late > opts.max_skew_s {
                warnings.push(format!(
                    "shard {i}/{n} ({name}) started {late:.1} s after the shared --start-at: its clock is behind or it started late"
                ));
            } else if -late > opts.max_skew_s + 1.0 {
                warnings.push(format!(
                    "shard {i}/{n} ({name}) recorded a start {:.1} s before the shared --start-at: its clock is ahead",
                    -late
                ));
            }
        }
        actual.push(started);
        starts.push(planned.unwrap_or(started));
    }
    let finite: Vec<f64> = starts.iter().copied().filter(|s| s.is_finite()).collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if finite.len() > 1 && hi - lo > opts.max_skew_s {
        warnings.push(format!(
            "the shards started up to {:.1} s apart (more than --max-skew {} s): their clocks or start times disagree; run them with one --start-at and synchronised clocks",
            hi - lo,
            opts.max_skew_s
        ));
    }
    let lo = if lo.is_finite() { lo } else { 0.0 };
    Ok(starts
        .into_iter()
        .map(|s| if s.is_finite() { s } else { lo })
        .collect())
}

/// Adds two error blocks.
fn add_errors(a: Errors, b: &Errors) -> Errors {
    a.add(b)
}

fn add_accuracy(a: Accuracy, b: &Accuracy) -> Accuracy {
    Accuracy {
        bytes_expected: a.bytes_expected + b.bytes_expected,
        bytes_received: a.bytes_received + b.bytes_received,
        framing_errors: a.framing_errors + b.framing_errors,
        verified: a.verified + b.verified,
        mismatches: a.mismatches + b.mismatches,
    }
}

/// Merges the shards' rate stages (`--stages`): every shard ran the same
/// stages (its every N-th arrival of the one schedule), so counters add and
/// each stage's histograms are added exactly. Shards with different stage
/// lists (or some with stages, some without) are refused.
fn merge_stages(shards: &[Shard<'_>]) -> Result<Vec<StageResult>, MergeError> {
    let (first_name, first, _) = shards[0];
    let same = |a: &StageResult, b: &StageResult| {
        a.start_s == b.start_s
            && a.duration_s == b.duration_s
            && a.rate_from == b.rate_from
            && a.rate_to == b.rate_to
    };
    for (name, r, _) in &shards[1..] {
        let equal = r.stages.len() == first.stages.len()
            && r.stages.iter().zip(&first.stages).all(|(a, b)| same(a, b));
        if !equal {
            return Err(MergeError::Unsupported {
                source_name: name.to_string(),
                what: format!(
                    "its rate stages ({} stages) are not those of {first_name} ({} stages): shards of one staged run share one --stages list",
                    r.stages.len(),
                    first.stages.len()
                ),
            });
        }
    }
    let mut out = Vec::with_capacity(first.stages.len());
    for (i, base) in first.stages.iter().enumerate() {
        let rows: Vec<(&str, &StageResult)> =
            shards.iter().map(|(n, r, _)| (*n, &r.stages[i])).collect();
        let what = format!("stage {} response", i + 1);
        let resp: Vec<(&str, &Latency)> = rows.iter().map(|(n, s)| (*n, &s.response)).collect();
        let unc: Vec<(&str, &Latency)> = rows
            .iter()
            .map(|(n, s)| (*n, &s.response_uncorrected))
            .collect();
        let sum = |f: fn(&StageResult) -> u64| rows.iter().map(|(_, s)| f(s)).sum::<u64>();
        let replies = sum(|s| s.replies);
        out.push(StageResult {
            arrivals: sum(|s| s.arrivals),
            sent: sum(|s| s.sent),
            replies,
            errors: sum(|s| s.errors),
            achieved_rps: if base.duration_s > 0.0 {
                replies as f64 / base.duration_s
            } else {
                0.0
            },
            response: merge_latency(&resp, &what)?,
            response_uncorrected: merge_latency(&unc, &format!("{what} (uncorrected)"))?,
            ..base.clone()
        });
    }
    Ok(out)
}

/// Merges the shards' probes (`--probe`): each shard ran its own, so rates,
/// connections and counters add and the histograms are added exactly; the
/// queueing rule is judged again against the merged load.
fn merge_probes(shards: &[Shard<'_>], loaded: &Latency) -> Result<Option<ProbeResult>, MergeError> {
    let probes: Vec<(&str, &ProbeResult)> = shards
        .iter()
        .filter_map(|(n, r, _)| r.probe.as_ref().map(|p| (*n, p)))
        .collect();
    if probes.is_empty() {
        return Ok(None);
    }
    let resp: Vec<(&str, &Latency)> = probes.iter().map(|(n, p)| (*n, &p.response)).collect();
    let response = merge_latency(&resp, "probe response")?;
    Ok(Some(ProbeResult {
        rate: probes.iter().map(|(_, p)| p.rate).sum(),
        connections: probes.iter().map(|(_, p)| p.connections).sum(),
        cpu: None,
        sent: probes.iter().map(|(_, p)| p.sent).sum(),
        replies: probes.iter().map(|(_, p)| p.replies).sum(),
        errors: probes.iter().map(|(_, p)| p.errors).sum(),
        client_queueing: ProbeResult::queueing_rule(loaded, &response),
        response,
    }))
}

/// Merges every distribution of [`Latencies`], including ones this crate
/// does not name: the block is walked as JSON so that a distribution added
/// to the model later is merged too, rather than silently taken from one shard.
fn merge_latencies(runs: &[&RunResult], names: &[&str]) -> Result<Latencies, MergeError> {
    let internal = |what: &str| MergeError::Internal(what.to_string());
    let mut values = Vec::with_capacity(runs.len());
    for r in runs {
        values.push(serde_json::to_value(&r.latency).map_err(|_| internal("latency"))?);
    }
    let keys: BTreeSet<String> = values
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|m| m.keys().cloned())
        .collect();
    let mut out = serde_json::Map::new();
    for key in keys {
        let mut parts: Vec<(&str, Latency)> = Vec::new();
        for (v, name) in values.iter().zip(names) {
            if let Some(x) = v.get(&key) {
                let l: Latency = serde_json::from_value(x.clone())
                    .map_err(|_| internal(&format!("latency.{key}")))?;
                parts.push((name, l));
            }
        }
        let refs: Vec<(&str, &Latency)> = parts.iter().map(|(n, l)| (*n, l)).collect();
        let m = merge_latency(&refs, &format!("latency.{key}"))?;
        out.insert(
            key.clone(),
            serde_json::to_value(m).map_err(|_| internal(&format!("latency.{key}")))?,
        );
    }
    serde_json::from_value(Value::Object(out)).map_err(|_| internal("latency"))
}

/// Merges summaries of disjoint samples: count, min, max, mean and the
/// population standard deviation are exact (pooled from each part's count,
/// mean and deviation); the median cannot be, and is the count-weighted mean
/// of the parts' medians.
pub fn merge_summary(parts: &[Summary]) -> Summary {
    let parts: Vec<&Summary> = parts.iter().filter(|s| s.count > 0).collect();
    let n: u64 = parts.iter().map(|s| s.count).sum();
    if n == 0 {
        return Summary::default();
    }
    let nf = n as f64;
    let mean = parts.iter().map(|s| s.count as f64 * s.avg).sum::<f64>() / nf;
    let var = parts
        .iter()
        .map(|s| s.count as f64 * (s.stddev * s.stddev + (s.avg - mean) * (s.avg - mean)))
        .sum::<f64>()
        / nf;
    Summary {
        count: n,
        min: parts.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
        avg: mean,
        max: parts
            .iter()
            .map(|s| s.max)
            .fold(f64::NEG_INFINITY, f64::max),
        median: parts.iter().map(|s| s.count as f64 * s.median).sum::<f64>() / nf,
        stddev: var.max(0.0).sqrt(),
    }
}

#[derive(Default)]
struct Bucket {
    len_s: f64,
    connections: u64,
    requests: u64,
    replies: u64,
    errors: u64,
    bytes_in: u64,
    open: u64,
    p50_weighted: f64,
    p99_max: f64,
}

/// Aligns every shard's intervals on the common start and adds them.
fn merge_series(
    shards: &[(&str, &RunResult, u32)],
    offsets: &[f64],
    interval: f64,
    warnings: &mut Vec<String>,
) -> Vec<Interval> {
    if shards.iter().all(|(_, r, _)| r.series.is_empty()) {
        return Vec::new();
    }
    if !(interval.is_finite() && interval > 0.0) {
        warnings.push(
            "the shards record no sample interval: the merged result has no time series".into(),
        );
        return Vec::new();
    }
    let n = shards.len();
    let mut buckets: BTreeMap<i64, Bucket> = BTreeMap::new();
    for ((name, r, i), off) in shards.iter().zip(offsets) {
        let shift = off / interval;
        if (shift - shift.round()).abs() > 1e-6 {
            warnings.push(format!(
                "shard {i}/{n} ({name}) started {off:.3} s after the first, not a whole number of {interval} s intervals: its time series is aligned to the nearest interval"
            ));
        }
        let shift = shift.round() as i64;
        for iv in &r.series {
            let k = ((iv.t_s - iv.len_s) / interval).round() as i64 + shift;
            let b = buckets.entry(k).or_default();
            b.len_s = b.len_s.max(iv.len_s);
            b.connections += iv.connections;
            b.requests += iv.requests;
            b.replies += iv.replies;
            b.errors += iv.errors;
            b.bytes_in += iv.bytes_in;
            b.open += iv.open_connections;
            b.p50_weighted += iv.p50_ms * iv.replies as f64;
            b.p99_max = b.p99_max.max(iv.p99_ms);
        }
    }
    buckets
        .into_iter()
        .map(|(k, b)| {
            let len = if b.len_s > 0.0 { b.len_s } else { interval };
            Interval {
                t_s: k as f64 * interval + len,
                len_s: len,
                connections: b.connections,
                requests: b.requests,
                replies: b.replies,
                errors: b.errors,
                bytes_in: b.bytes_in,
                reply_rate: b.replies as f64 / len,
                p50_ms: if b.replies > 0 {
                    b.p50_weighted / b.replies as f64
                } else {
                    0.0
                },
                p99_ms: b.p99_max,
                open_connections: b.open,
            }
        })
        .collect()
}

/// Merges `config.facts`: counters add (calls abandoned, unsent, retried,
/// not attempted; setup waits), the p99 setup wait is the largest shard's
/// (an upper bound), the largest burst is the largest
/// shard's, the session statistics add; a fact every shard records alike is
/// kept, others (each shard's command line, host, calibration) are dropped
/// here and kept in each shard's [`ShardInfo::facts`]. The shard's own `I/N`
/// and share of a counted demand give way to the number of shards: the
/// merged run is the whole.
fn merge_facts(runs: &[&RunResult], count: u32) -> RunFacts {
    let fs: Vec<&RunFacts> = runs.iter().map(|r| &r.config.facts).collect();
    let sum = |f: fn(&RunFacts) -> Option<u64>| -> Option<u64> {
        fs.iter().filter_map(|x| f(x)).reduce(|a, b| a + b)
    };
    RunFacts {
        normalized_command: agree(&fs, |f| &f.normalized_command),
        max_connect_burst: fs.iter().filter_map(|f| f.max_connect_burst).max(),
        lag_threshold_ms: agree(&fs, |f| &f.lag_threshold_ms),
        verbose: fs.iter().all(|f| f.verbose),
        busy_poll: fs.iter().all(|f| f.busy_poll),
        reconnect: fs.iter().all(|f| f.reconnect),
        calls_per_conn: agree(&fs, |f| &f.calls_per_conn),
        uri_list: agree(&fs, |f| &f.uri_list),
        local_addrs: agree(&fs, |f| &f.local_addrs),
        wset: agree(&fs, |f| &f.wset),
        burst_length: agree(&fs, |f| &f.burst_length),
        session_stats: fs.iter().filter_map(|f| f.session_stats.as_ref()).fold(
            None,
            |a: Option<httplab_model::SessionStats>, s| {
                Some(a.map_or_else(|| s.clone(), |a| a.add(s)))
            },
        ),
        abandoned_calls: sum(|f| f.abandoned_calls),
        unsent_calls: sum(|f| f.unsent_calls),
        retried_calls: sum(|f| f.retried_calls),
        max_connecting: agree(&fs, |f| &f.max_connecting),
        local_addrs_auto: agree(&fs, |f| &f.local_addrs_auto),
        setup_capped: sum(|f| f.setup_capped),
        setup_waited: sum(|f| f.setup_waited),
        setup_wait_p99_ms: fs
            .iter()
            .filter_map(|f| f.setup_wait_p99_ms)
            .reduce(f64::max),
        not_attempted: sum(|f| f.not_attempted),
        io_engine: agree(&fs, |f| &f.io_engine),
        host: agree(&fs, |f| &f.host),
        client_shard: None,
        run_id: agree(&fs, |f| &f.run_id),
        start_at: agree(&fs, |f| &f.start_at),
        shard_sessions: None,
        calibration: agree(&fs, |f| &f.calibration),
        merged_shards: Some(count),
        merge_approximations: APPROXIMATIONS.iter().map(|s| s.to_string()).collect(),
        staged_step: agree(&fs, |f| &f.staged_step),
        // A study's shards of one run: each fact every shard records alike.
        study: httplab_model::StudyRunFacts {
            param: agree(&fs, |f| &f.study.param),
            step: agree(&fs, |f| &f.study.step),
            driver: agree(&fs, |f| &f.study.driver),
            client_ceiling: agree(&fs, |f| &f.study.client_ceiling),
            packet_loss: agree(&fs, |f| &f.study.packet_loss),
            idle: agree(&fs, |f| &f.study.idle),
        },
    }
}

/// The value every shard has (the type's default, "none", when they differ).
fn agree<T: PartialEq + Clone + Default>(fs: &[&RunFacts], f: impl Fn(&RunFacts) -> &T) -> T {
    let first = fs.first().map(|x| f(x));
    match first {
        Some(v) if fs.iter().all(|x| f(x) == v) => v.clone(),
        _ => T::default(),
    }
}

/// Merges `config.extra` (the free-form words): a word every shard agrees
/// on is kept, others are dropped here and kept in each shard's
/// [`ShardInfo::extra`].
fn merge_extra(runs: &[&RunResult]) -> BTreeMap<String, String> {
    let keys: BTreeSet<&String> = runs.iter().flat_map(|r| r.config.extra.keys()).collect();
    let mut out = BTreeMap::new();
    for key in keys {
        let vals: Vec<Option<&String>> = runs.iter().map(|r| r.config.extra.get(key)).collect();
        if let Some(Some(first)) = vals.first() {
            if vals.iter().all(|v| *v == Some(*first)) {
                out.insert(key.clone(), (*first).clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("2026-01-01T00:00:00Z"), Some(1_767_225_600.0));
        assert_eq!(parse_time("2026-01-01T00:00:00.5Z"), Some(1_767_225_600.5));
        assert_eq!(parse_time("1767225600.25"), Some(1_767_225_600.25));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn summaries_pool_exactly() {
        let a = [1.0, 2.0, 3.0];
        let b = [10.0, 20.0];
        let all = [1.0, 2.0, 3.0, 10.0, 20.0];
        let m = merge_summary(&[Summary::of(&a), Summary::of(&b), Summary::default()]);
        let u = Summary::of(&all);
        assert_eq!((m.count, m.min, m.max), (u.count, u.min, u.max));
        assert!((m.avg - u.avg).abs() < 1e-12);
        assert!((m.stddev - u.stddev).abs() < 1e-12);
    }

    #[test]
    fn facts_add_counters_keep_agreement_and_drop_the_rest() {
        let run = |i: u32, host: &str, unsent: Option<u64>| RunResult {
            config: httplab_model::RunConfig {
                facts: RunFacts {
                    unsent_calls: unsent,
                    // The same counts on both shards: the whole run's are twice them.
                    not_attempted: Some(3),
                    setup_capped: Some(1),
                    setup_waited: Some(7),
                    setup_wait_p99_ms: Some(f64::from(i) + 2.0),
                    max_connect_burst: Some(u64::from(i) + 3),
                    host: Some(host.into()),
                    run_id: Some("r".into()),
                    client_shard: Some(ClientShard { index: i, count: 2 }),
                    shard_sessions: Some(5),
                    reconnect: true,
                    ..RunFacts::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let (a, b) = (run(0, "a", Some(2)), run(1, "b", None));
        let f = merge_facts(&[&a, &b], 2);
        assert_eq!(f.unsent_calls, Some(2));
        assert_eq!(
            (f.not_attempted, f.setup_capped, f.setup_waited),
            (Some(6), Some(2), Some(14))
        );
        assert_eq!(f.setup_wait_p99_ms, Some(3.0));
        assert_eq!(f.max_connect_burst, Some(4));
        assert_eq!(f.host, None);
        assert_eq!(f.run_id.as_deref(), Some("r"));
        assert_eq!((f.client_shard, f.shard_sessions), (None, None));
        assert!(f.reconnect);
        assert_eq!(f.merged_shards, Some(2));
        assert_eq!(f.merge_approximations.len(), APPROXIMATIONS.len());
    }
}
