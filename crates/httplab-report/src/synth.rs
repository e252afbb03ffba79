//! Synthetic results: deterministic [`RunResult`]s and [`SweepResult`]s for
//! tests, fixtures and demonstrations, built without any network.
//!
//! The model is a single-queue server of fixed capacity (replies per second)
//! and fixed base service time, fed open-loop at a demanded rate: below
//! capacity the reply rate follows the demand and latency stays near the base;
//! above it the reply rate flattens at capacity and latency climbs with the
//! queue, the way seed 002's and seed 003's charts look.

use hdrhistogram::Histogram;
use httplab_model::{
    ConnectionStats, Environment, Errors, Interval, Latencies, Latency, LoadMode, ReplyStats,
    RequestStats, Resources, RunConfig, RunResult, SelfCheck, StatusClasses, Summary, SweepResult,
    SweepStep, SweepTarget, ToolInfo, Totals, RUN_SCHEMA, SWEEP_SCHEMA,
};

/// The tool version written into synthetic documents (fixed, so that
/// fixtures do not change with the crate version).
pub const SYNTH_VERSION: &str = "0.0.0-synthetic";

/// Parameters of a synthetic run.
#[derive(Debug, Clone)]
pub struct SynthServer {
    /// Label of the server (becomes the run label).
    pub name: String,
    /// Replies per second the server can sustain.
    pub capacity: f64,
    /// Service time when idle, ms.
    pub base_ms: f64,
    /// Seed of the pseudo-random jitter.
    pub seed: u64,
    /// Mark runs at or above this demanded request rate as client-bound.
    pub client_bound_above: Option<f64>,
}

impl SynthServer {
    /// A server with the given capacity and base latency.
    pub fn new(name: &str, capacity: f64, base_ms: f64) -> Self {
        SynthServer {
            name: name.to_string(),
            capacity,
            base_ms,
            seed: 1,
            client_bound_above: None,
        }
    }
}

/// A tiny deterministic generator (xorshift64*), enough for jitter.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (v >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn hist() -> Histogram<u64> {
    // 1 µs .. 1 h, 3 significant digits; these bounds are valid constants.
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// One synthetic open-loop run: `rate` connections per second, `num_calls`
/// requests each, for `duration_s` seconds.
pub fn run(server: &SynthServer, rate: f64, num_calls: u64, duration_s: f64) -> RunResult {
    let mut rng = Rng(server.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (rate.to_bits() | 1));
    let q = Queue::new(server, rate, num_calls, duration_s);
    let timeout_s = 5.0;
    let (errors, replies) = lost_to_timeouts(&q, timeout_s);
    // The generator's draws come in a fixed order: latencies, series, lifetimes.
    let [resp, first_byte, connect] = latency_histograms(&mut rng, server, &q, replies);
    let (series, rate_samples) = reply_series(&mut rng, server, rate, &q);
    let response = Latency::from_histogram(&resp);
    let client_bound = server
        .client_bound_above
        .is_some_and(|limit| q.demanded >= limit);
    let (conns, requests, test_duration_s) = (q.conns, q.requests, q.test_duration_s);
    let bytes_received = replies * 1300;
    let bytes_sent = requests * 70;
    let conn_rate = conns as f64 / test_duration_s;
    let lifetimes: Vec<f64> = (0..50)
        .map(|_| response.mean_ms * num_calls as f64 * (0.5 + rng.next_f64()))
        .collect();
    RunResult {
        schema: RUN_SCHEMA.into(),
        tool: ToolInfo::current(SYNTH_VERSION),
        label: server.name.clone(),
        started_at: "2026-01-01T00:00:00Z".into(),
        config: run_config(server, rate, conns, num_calls, timeout_s),
        totals: Totals {
            connections: conns,
            requests,
            replies,
            test_duration_s,
            max_concurrent_connections: (rate * (0.001 + q.backlog_s)).ceil() as u64,
        },
        connection: ConnectionStats {
            rate_per_s: conn_rate,
            ms_per_conn: 1000.0 / conn_rate.max(1e-9),
            lifetime_ms: Summary::of(&lifetimes),
            connect_ms: 0.07,
            replies_per_conn: replies as f64 / conns as f64,
        },
        request: RequestStats {
            rate_per_s: requests as f64 / test_duration_s,
            ms_per_req: 1000.0 * test_duration_s / requests as f64,
            size_bytes: 70.0,
        },
        reply: ReplyStats {
            rate: Summary::of(&rate_samples),
            sample_interval_s: 1.0,
            response_ms: first_byte.mean() / 1000.0,
            transfer_ms: 0.02,
            header_bytes: 200.0,
            content_bytes: 1100.0,
            footer_bytes: 0.0,
            status: StatusClasses {
                success: replies,
                ..StatusClasses::default()
            },
        },
        resources: Resources {
            user_s: test_duration_s * 0.2,
            system_s: test_duration_s * 0.3,
            bytes_sent,
            bytes_received,
            net_kb_per_s: (bytes_sent + bytes_received) as f64 / 1024.0 / test_duration_s,
            net_mbit_per_s: (bytes_sent + bytes_received) as f64 * 8.0 / 1e6 / test_duration_s,
        },
        errors,
        latency: Latencies {
            connect: Latency::from_histogram(&connect),
            first_byte: Latency::from_histogram(&first_byte),
            response_uncorrected: response.clone(),
            response,
            ..Default::default()
        },
        series,
        accuracy: Default::default(),
        self_check: self_check(client_bound, conns),
        environment: environment(),
        interrupted: false,
        server: None,
        shards: Vec::new(),
        tls: None,
        http2: None,
        http3: None,
        repeats: Vec::new(),
        stages: Vec::new(),
        probe: None,
        client_check: None,
    }
}

/// The single queue of a synthetic run: demand, load, backlog and length.
struct Queue {
    /// Demanded request rate, per second.
    demanded: f64,
    conns: u64,
    requests: u64,
    /// Reply rate the server sustains: the demand, at most the capacity.
    served_rate: f64,
    /// Over capacity the queue grows linearly: mean wait ≈ half the final backlog.
    backlog_s: f64,
    /// How much queueing stretches the service time below capacity.
    queue_factor: f64,
    test_duration_s: f64,
}

impl Queue {
    fn new(server: &SynthServer, rate: f64, num_calls: u64, duration_s: f64) -> Queue {
        let demanded = rate * num_calls as f64;
        let conns = (rate * duration_s).round().max(1.0) as u64;
        let load = demanded / server.capacity;
        let backlog_s = if load > 1.0 {
            duration_s * (load - 1.0) / load
        } else {
            0.0
        };
        let queue_factor = if load < 1.0 {
            1.0 / (1.0 - load * 0.9)
        } else {
            10.0
        };
        Queue {
            demanded,
            conns,
            requests: conns * num_calls,
            served_rate: demanded.min(server.capacity),
            backlog_s,
            queue_factor,
            test_duration_s: duration_s * load.max(1.0) + server.base_ms / 1000.0,
        }
    }
}

/// The requests lost to client timeouts once the backlog outgrows the
/// timeout, as errors, and the replies left.
fn lost_to_timeouts(q: &Queue, timeout_s: f64) -> (Errors, u64) {
    let mut errors = Errors::default();
    let mut replies = q.requests;
    if q.backlog_s > timeout_s {
        let lost = ((q.backlog_s - timeout_s) / q.backlog_s * q.requests as f64 * 0.5) as u64;
        errors.client_timo = lost;
        errors.total = lost;
        replies = q.requests - lost;
    }
    (errors, replies)
}

/// Response, first-byte and connect histograms of up to 20 000 replies.
fn latency_histograms(
    rng: &mut Rng,
    server: &SynthServer,
    q: &Queue,
    replies: u64,
) -> [Histogram<u64>; 3] {
    let mut resp = hist();
    let mut first_byte = hist();
    let mut connect = hist();
    for i in 0..replies.min(20_000) {
        let u = rng.next_f64();
        let pos = i as f64 / replies.max(1) as f64;
        let wait_ms = q.backlog_s * 1000.0 * pos;
        let jitter = -u.max(1e-9).ln() * server.base_ms * 0.3 * q.queue_factor;
        let ms = server.base_ms * q.queue_factor.sqrt() + jitter + wait_ms;
        let us = (ms * 1000.0).max(1.0) as u64;
        let _ = resp.record(us);
        let _ = first_byte.record((us as f64 * 0.9).max(1.0) as u64);
        let _ = connect.record((50.0 + rng.next_f64() * 40.0) as u64);
    }
    [resp, first_byte, connect]
}

/// The per-second series, and the reply rates of its full intervals.
fn reply_series(
    rng: &mut Rng,
    server: &SynthServer,
    rate: f64,
    q: &Queue,
) -> (Vec<Interval>, Vec<f64>) {
    let test_duration_s = q.test_duration_s;
    let mut series = Vec::new();
    let intervals = test_duration_s.ceil().max(1.0) as u64;
    let mut rate_samples = Vec::new();
    for k in 0..intervals {
        let t = (k + 1) as f64;
        let len = if t > test_duration_s {
            test_duration_s - k as f64
        } else {
            1.0
        };
        let r = q.served_rate * (0.97 + 0.06 * rng.next_f64());
        let rep = (r * len).round() as u64;
        if len >= 1.0 {
            rate_samples.push(r);
        }
        let wait_ms = q.backlog_s * 1000.0 * (k as f64 / intervals as f64);
        series.push(Interval {
            t_s: k as f64 + len,
            len_s: len,
            connections: (rate * len).round() as u64,
            requests: (q.demanded * len).round() as u64,
            replies: rep,
            errors: 0,
            bytes_in: rep * 1300,
            reply_rate: r,
            p50_ms: server.base_ms * q.queue_factor.sqrt() + wait_ms,
            p99_ms: server.base_ms * q.queue_factor.sqrt() * 3.0 + wait_ms * 1.1,
            open_connections: (rate * (server.base_ms / 1000.0 + wait_ms / 1000.0)).round() as u64,
        });
    }
    (series, rate_samples)
}

/// The configuration an open-loop `httplab load` run would record.
fn run_config(
    server: &SynthServer,
    rate: f64,
    conns: u64,
    num_calls: u64,
    timeout_s: f64,
) -> RunConfig {
    RunConfig {
        command_line: vec![
            "--server".into(),
            "127.0.0.1".into(),
            "--rate".into(),
            format!("{rate}"),
            "--num-conns".into(),
            conns.to_string(),
            "--num-calls".into(),
            num_calls.to_string(),
        ],
        targets: vec![format!("http://127.0.0.1:8080/{}", server.name)],
        mode: LoadMode::OpenLoop,
        rate: Some(rate),
        distribution: Some("deterministic".into()),
        num_conns: Some(conns),
        num_calls: Some(num_calls),
        duration_s: None,
        users: None,
        think_ms: None,
        timeout_s: Some(timeout_s),
        threads: 1,
        method: "GET".into(),
        facts: Default::default(),
        extra: Default::default(),
        warmup_s: 0.0,
    }
}

/// The self-check: a client-bound run says so, with its warning.
fn self_check(client_bound: bool, conns: u64) -> SelfCheck {
    SelfCheck {
        client_cpu_pct: if client_bound { 99.0 } else { 40.0 },
        schedule_lag_p50_ms: 0.01,
        schedule_lag_p99_ms: if client_bound { 25.0 } else { 0.05 },
        schedule_lag_max_ms: if client_bound { 80.0 } else { 0.3 },
        late_starts: if client_bound { conns / 3 } else { 0 },
        client_bound,
        warnings: if client_bound {
            vec!["generator CPU at 99%: the client, not the server, limited this run".into()]
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}

/// A fixed, machine-independent environment for fixtures.
pub fn environment() -> Environment {
    Environment {
        kernel: "Linux 6.1.0".into(),
        cpu_model: "Synthetic CPU @ 3.0GHz".into(),
        cores: 2,
        client_affinity: vec![],
        memory_bytes: 8 << 30,
        facts: Default::default(),
        extra: Default::default(),
    }
}

/// A whole synthetic sweep over `servers` at `rates` (connections per second).
pub fn sweep(
    servers: &[SynthServer],
    rates: &[f64],
    num_calls: u64,
    duration_s: f64,
) -> SweepResult {
    let slo_ms = 1000.0;
    let targets = servers
        .iter()
        .map(|s| {
            let steps: Vec<SweepStep> = rates
                .iter()
                .map(|&r| SweepStep {
                    demanded_rate: r,
                    run: run(s, r, num_calls, duration_s),
                })
                .collect();
            let saturation = crate::analysis::analyze(&steps, slo_ms);
            SweepTarget {
                label: s.name.clone(),
                url: format!("http://127.0.0.1:8080/{}", s.name),
                steps,
                saturation,
            }
        })
        .collect();
    SweepResult {
        schema: SWEEP_SCHEMA.into(),
        tool: ToolInfo::current(SYNTH_VERSION),
        started_at: "2026-01-01T00:00:00Z".into(),
        command_line: vec!["--low-rate".into(), "synthetic".into()],
        targets,
        environment: environment(),
    }
}
