//! Turning worker statistics into a [`RunResult`], and a [`RunResult`] into
//! httperf's report (plus httplab's own block) and CSV.

use std::fmt::Write as _;

pub use httplab_model::Calibration;
use httplab_model::{
    Accuracy, AddrRange, ConnectionStats, Environment, Errors, Interval, Latencies, Latency,
    LoadMode, ReplyStats, RequestStats, Resources, RunConfig, RunFacts, RunResult, SelfCheck,
    Summary, TlsSummary, ToolInfo, Totals, WorkingSet, RUN_SCHEMA,
};

use crate::spec::{Arrival, LoadSpec, Workload};
use crate::stats::{ErrClass, SessionStats, WorkerStats};
use crate::sys;

/// Utilization of the calibrated ceiling at which a run is client-bound.
pub const UTILIZATION_LIMIT: f64 = 0.85;
/// Share of the generator's cores (percent of one core) at which a run is client-bound.
pub const CPU_LIMIT_PCT: f64 = 90.0;
/// Shortest measured time, seconds, over which the generator's CPU share is
/// judged. A shorter run is mostly the generator's own start and finish,
/// which run back to back whatever the server does (a 1 ms run is "100 %
/// busy"), so its CPU share says nothing about who limited it.
pub const MIN_CPU_JUDGE_S: f64 = 0.1;

fn summary_of_hist(h: &hdrhistogram::Histogram<u64>) -> Summary {
    if h.is_empty() {
        return Summary::default();
    }
    let ms = |v: f64| v / 1000.0;
    Summary {
        count: h.len(),
        min: ms(h.min() as f64),
        avg: ms(h.mean()),
        max: ms(h.max() as f64),
        median: ms(h.value_at_quantile(0.5) as f64),
        stddev: ms(h.stdev()),
    }
}

/// Marks the run client-bound for `key`, with a human-readable `text`.
fn flag(sc: &mut SelfCheck, key: &str, text: String) {
    sc.reasons.push(key.to_string());
    sc.warnings.push(text);
}

/// Builds the complete result of a run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_result(
    spec: &LoadSpec,
    st: &WorkerStats,
    series_sessions: Vec<(Interval, u64)>,
    started_at: String,
    wall_s: f64,
    interrupted: bool,
) -> RunResult {
    let dur = measured_s(spec, st, wall_s, interrupted);
    let per = |n: u64| n as f64 / dur;
    let interval = spec.sample_interval;
    let full: Vec<&(Interval, u64)> = series_sessions
        .iter()
        .filter(|(i, _)| i.len_s >= interval * 0.999)
        .collect();
    let rate_samples: Vec<f64> = full.iter().map(|(i, _)| i.reply_rate).collect();
    let series: Vec<Interval> = series_sessions.iter().map(|(i, _)| *i).collect();
    let replies = st.replies.max(1) as f64;
    let has_replies = st.replies > 0;
    let avg = |x: f64| if has_replies { x / replies } else { 0.0 };

    let config = run_config(spec, st, &full);
    let errors = errors_of(st);
    let conn_rate = per(st.connections);
    let req_rate = per(st.requests);
    let self_check = self_check(spec, st, dur, &errors, interrupted);
    RunResult {
        schema: RUN_SCHEMA.into(),
        tool: ToolInfo::current(env!("CARGO_PKG_VERSION")),
        label: spec.label.clone(),
        started_at,
        config,
        totals: Totals {
            connections: st.connections,
            requests: st.requests,
            replies: st.replies,
            test_duration_s: dur,
            max_concurrent_connections: st.max_open,
        },
        connection: ConnectionStats {
            rate_per_s: conn_rate,
            ms_per_conn: if conn_rate > 0.0 {
                1000.0 / conn_rate
            } else {
                0.0
            },
            lifetime_ms: summary_of_hist(&st.lifetime),
            connect_ms: if st.connect.is_empty() {
                0.0
            } else {
                st.connect.mean() / 1000.0
            },
            replies_per_conn: if st.conns_ok > 0 {
                st.replies as f64 / st.conns_ok as f64
            } else {
                0.0
            },
        },
        request: RequestStats {
            rate_per_s: req_rate,
            ms_per_req: if req_rate > 0.0 {
                1000.0 / req_rate
            } else {
                0.0
            },
            size_bytes: if st.requests > 0 {
                st.bytes_sent as f64 / st.requests as f64
            } else {
                0.0
            },
        },
        reply: ReplyStats {
            rate: Summary::of(&rate_samples),
            sample_interval_s: interval,
            response_ms: avg(st.response_sum_us) / 1000.0,
            transfer_ms: avg(st.transfer_sum_us) / 1000.0,
            header_bytes: avg(st.header_bytes as f64),
            content_bytes: avg(st.body_bytes as f64),
            footer_bytes: avg(st.footer_bytes as f64),
            status: st.status,
        },
        resources: Resources {
            user_s: st.cpu_user,
            system_s: st.cpu_sys,
            bytes_sent: st.bytes_sent,
            bytes_received: st.bytes_recv,
            net_kb_per_s: (st.bytes_sent + st.bytes_recv) as f64 / 1024.0 / dur,
            net_mbit_per_s: (st.bytes_sent + st.bytes_recv) as f64 * 8.0 / 1e6 / dur,
        },
        errors,
        latency: Latencies {
            connect: Latency::from_histogram(&st.connect),
            first_byte: Latency::from_histogram(&st.first_byte),
            response: Latency::from_histogram(&st.response),
            response_uncorrected: Latency::from_histogram(&st.response_unc),
            session: Latency::from_histogram(&st.session),
        },
        series,
        accuracy: Accuracy {
            bytes_expected: st.bytes_expected,
            bytes_received: st.body_received,
            framing_errors: st.framing_errors,
            verified: st.verified,
            mismatches: st.mismatches,
        },
        self_check,
        environment: environment(),
        interrupted,
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

/// The measured time: httperf's first connection to last event; with a
/// warm-up the window from its start to the last event, and at least
/// `--duration`.
fn measured_s(spec: &LoadSpec, st: &WorkerStats, wall_s: f64, interrupted: bool) -> f64 {
    // httperf: first connection to last event. With a warm-up: the window,
    // from its start to the last event, and at least --duration (a run whose
    // last reply came before the end of its window still measured all of it).
    if spec.warmup > 0.0 {
        let d = match spec.duration {
            Some(d) if !interrupted => d,
            _ => 0.0,
        };
        (st.end_s - spec.warmup).max(d).max(1e-9)
    } else if st.end_s > 0.0 {
        (st.end_s - st.first_s.unwrap_or(0.0)).max(1e-9)
    } else {
        wall_s.max(1e-9)
    }
}

/// The run's configuration as the result records it.
fn run_config(spec: &LoadSpec, st: &WorkerStats, full: &[&(Interval, u64)]) -> RunConfig {
    let (mode, rate, distribution) = match spec.arrival {
        Arrival::Open(d) => (
            LoadMode::OpenLoop,
            Some(1.0 / d.mean()),
            Some(d.name().to_string()),
        ),
        Arrival::Concurrent(_) => match spec.workload {
            Workload::Users { pace: Some(d), .. } => (
                LoadMode::OpenLoop,
                Some(1.0 / d.mean()),
                Some(d.name().to_string()),
            ),
            Workload::Users { .. } => (LoadMode::ClosedLoop, None, None),
            _ => (LoadMode::Sequential, None, None),
        },
    };
    let (num_conns, num_calls, users, think_ms) = match &spec.workload {
        Workload::Requests {
            num_conns,
            num_calls,
            ..
        } => (*num_conns, Some(*num_calls), None, None),
        Workload::Sessions {
            num_sessions,
            calls,
            think,
            ..
        } => (*num_sessions, Some(*calls), None, Some(think * 1000.0)),
        Workload::SessionLog {
            num_sessions,
            think,
            ..
        } => (*num_sessions, None, None, Some(think * 1000.0)),
        Workload::Users {
            users,
            requests_per_user,
            think,
            ..
        } => (None, *requests_per_user, Some(*users), Some(think * 1000.0)),
    };
    let facts = config_facts(spec, st, full);
    let targets = targets(spec);
    RunConfig {
        command_line: spec.command_line.clone(),
        targets,
        mode,
        rate,
        distribution,
        num_conns,
        num_calls,
        duration_s: spec.duration,
        users,
        think_ms,
        timeout_s: spec.timeout,
        threads: spec.threads,
        method: spec.method.clone(),
        warmup_s: spec.warmup,
        facts,
        extra: Default::default(),
    }
}

/// The URLs the run requests (each once).
fn targets(spec: &LoadSpec) -> Vec<String> {
    match &spec.workload {
        Workload::SessionLog { sessions, .. } => {
            let mut t: Vec<String> = sessions
                .iter()
                .flatten()
                .flat_map(|b| b.calls.iter())
                .map(|c| format!("{}{}", spec.base_url(), c.uri))
                .collect();
            t.sort();
            t.dedup();
            t
        }
        _ if !spec.uris.is_empty() => {
            let mut seen = std::collections::BTreeSet::new();
            spec.uris
                .iter()
                .filter(|u| seen.insert(u.as_str()))
                .map(|u| format!("{}{}", spec.base_url(), u))
                .collect()
        }
        _ => vec![format!("{}{}", spec.base_url(), spec.uri)],
    }
}

/// `config.facts`: what httperf's configuration has no field for.
fn config_facts(spec: &LoadSpec, st: &WorkerStats, full: &[&(Interval, u64)]) -> RunFacts {
    let burst = match spec.workload {
        Workload::Requests { burst, .. }
        | Workload::Sessions { burst, .. }
        | Workload::Users { burst, .. } => burst,
        Workload::SessionLog { .. } => 1,
    };
    let is_session = matches!(
        spec.workload,
        Workload::Sessions { .. } | Workload::SessionLog { .. }
    );
    let session_stats = is_session.then(|| {
        let mut ss: SessionStats = st.sessions.clone();
        ss.rate_samples = full.iter().map(|(i, s)| *s as f64 / i.len_s).collect();
        ss
    });
    let when_any = |n: u64| (n > 0).then_some(n);
    RunFacts {
        normalized_command: Some(spec.normalized_command()),
        max_connect_burst: Some(st.max_burst),
        lag_threshold_ms: Some(spec.lag_threshold * 1000.0),
        verbose: spec.verbose,
        busy_poll: spec.busy_poll,
        reconnect: spec.reconnect,
        abandoned_calls: when_any(st.abandoned),
        unsent_calls: when_any(st.unsent_calls),
        retried_calls: when_any(st.retried_calls),
        calls_per_conn: spec.calls_per_conn,
        uri_list: (!spec.uris.is_empty()).then_some(spec.uris.len() as u64),
        local_addrs: spec.local_addrs.clone(),
        wset: spec.wset.map(|(files, ratio)| WorkingSet { files, ratio }),
        burst_length: (burst > 1).then_some(burst as u64),
        session_stats,
        ..RunFacts::default()
    }
}

/// httperf's error classes, and the protocol faults named one by one.
fn errors_of(st: &WorkerStats) -> Errors {
    Errors {
        total: st.errors_total(),
        client_timo: st.errors[0],
        socket_timo: st.errors[1],
        connrefused: st.errors[2],
        connreset: st.errors[3],
        fd_unavail: st.errors[4],
        addrunavail: st.errors[5],
        ftab_full: 0,
        // httperf's `other` holds every protocol fault, named below.
        other: st.errors[ErrClass::Other as usize]
            + [
                ErrClass::BadStatusLine,
                ErrClass::BadHeader,
                ErrClass::HeadersTooLarge,
                ErrClass::BadChunk,
                ErrClass::BodyOverrun,
                ErrClass::Truncated,
                ErrClass::Tls,
            ]
            .iter()
            .map(|c| st.errors[*c as usize])
            .sum::<u64>(),
        response_timo: st.errors[ErrClass::ResponseTimo as usize],
        bad_status_line: st.errors[ErrClass::BadStatusLine as usize],
        bad_header: st.errors[ErrClass::BadHeader as usize],
        headers_too_large: st.errors[ErrClass::HeadersTooLarge as usize],
        bad_chunk: st.errors[ErrClass::BadChunk as usize],
        body_overrun: st.errors[ErrClass::BodyOverrun as usize],
        truncated: st.errors[ErrClass::Truncated as usize],
        tls: st.errors[ErrClass::Tls as usize],
    }
}

/// The self-check: how the generator spent the run, and whether it, not
/// the server, may have limited it.
fn self_check(
    spec: &LoadSpec,
    st: &WorkerStats,
    dur: f64,
    errors: &Errors,
    interrupted: bool,
) -> SelfCheck {
    let cpu = st.cpu_user + st.cpu_sys;
    let cpu_pct = 100.0 * cpu / dur;
    let lag = |q: f64| {
        if st.lag.is_empty() {
            0.0
        } else {
            st.lag.value_at_quantile(q) as f64 / 1000.0
        }
    };
    let mut self_check = SelfCheck {
        client_cpu_pct: cpu_pct,
        schedule_lag_p50_ms: lag(0.5),
        schedule_lag_p99_ms: lag(0.99),
        schedule_lag_max_ms: if st.lag.is_empty() {
            0.0
        } else {
            st.lag.max() as f64 / 1000.0
        },
        late_starts: st.late_starts,
        client_bound: false,
        warnings: Vec::new(),
        client_ceiling: spec.client_ceiling,
        client_utilization: None,
        reasons: Vec::new(),
    };
    let reply_rate = st.replies as f64 / dur;
    // The criteria about how the generator spent the run (utilization, CPU,
    // schedule lag) judge a measurement: with no reply at all there is none,
    // and the run's failure (refused, timed out, reset) is the server's or
    // the network's to explain, not a client limit. Running out of
    // descriptors or ports (below) is a client limit whatever the replies.
    let measured = st.replies > 0;
    let cpu_judged = measured && dur >= MIN_CPU_JUDGE_S;
    if let Some(ceiling) = spec.client_ceiling.filter(|c| *c > 0.0) {
        let u = reply_rate / ceiling;
        self_check.client_utilization = Some(u);
        if measured && u >= UTILIZATION_LIMIT {
            flag(
                &mut self_check,
                "client_utilization",
                format!(
                    "{reply_rate:.0} replies/s is {:.0}% of the generator's own ceiling ({ceiling:.0}/s for this shape, >= {:.0}%): the client, not the server, may have limited this run",
                    100.0 * u,
                    100.0 * UTILIZATION_LIMIT
                ),
            );
        }
    }
    // The generator can use one core per thread, at most the cores it may run on.
    let allowed = sys::affinity().len().max(1) as u32;
    let cores = spec.threads.max(1).min(allowed);
    if cpu_judged && cpu_pct >= CPU_LIMIT_PCT * f64::from(cores) && !spec.busy_poll {
        flag(
            &mut self_check,
            "client_cpu",
            format!(
                "generator CPU at {cpu_pct:.0}% of its {cores} core(s) (>= {CPU_LIMIT_PCT:.0}% each): the client, not the server, may have limited this run (add --threads or a client core)"
            ),
        );
    }
    // Anything with a plan in time (open-loop arrivals, paced users, think
    // times) records how late it went out; a p99 above the threshold means
    // the generator fell behind its own plan.
    let thr_ms = spec.lag_threshold * 1000.0;
    let lag_p99 = self_check.schedule_lag_p99_ms;
    if measured && !cpu_judged && !spec.busy_poll {
        self_check.warnings.push(format!(
            "run too short to judge the client: {dur:.3} s measured, under the {MIN_CPU_JUDGE_S} s its CPU share needs (the {cpu_pct:.0}% over so short a run is mostly the generator starting and finishing); a longer run (--num-conns, --duration) checks the client"
        ));
    }
    if measured && !st.lag.is_empty() && self_check.schedule_lag_p99_ms > thr_ms {
        flag(
            &mut self_check,
            "schedule_lag",
            format!(
                "schedule lag p99 {:.3} ms exceeds {:.3} ms ({} late starts): the generator could not keep its schedule",
                lag_p99, thr_ms, st.late_starts
            ),
        );
    }
    limits_and_failures(&mut self_check, spec, st, errors, measured, interrupted);
    self_check.client_bound = !self_check.reasons.is_empty();
    self_check
}

/// Client limits whatever the replies (descriptors, ports), and runs that
/// measured nothing.
fn limits_and_failures(
    self_check: &mut SelfCheck,
    spec: &LoadSpec,
    st: &WorkerStats,
    errors: &Errors,
    measured: bool,
    interrupted: bool,
) {
    if errors.fd_unavail > 0 {
        flag(
            self_check,
            "fd_exhausted",
            format!(
                "ran out of file descriptors {} times (RLIMIT_NOFILE {}, at most {} connections open at once): raise the hard limit (ulimit -Hn), or lower --max-connecting if the server was not accepting",
                errors.fd_unavail,
                sys::raise_nofile_limit().map_or("?".to_string(), |n| n.to_string()),
                st.max_open
            ),
        );
    }
    if errors.addrunavail > 0 {
        flag(
            self_check,
            "ports_exhausted",
            format!(
                "ran out of local ports {} times (ephemeral range {}, {} TCP sockets in TIME_WAIT at the end): spread connections with --local-addr A,B,... (automatic for loopback targets), or widen net.ipv4.ip_local_port_range",
                errors.addrunavail,
                sys::ephemeral_ports().map_or("?".to_string(), |(a, b)| format!("{a}-{b}")),
                sys::time_wait_sockets().map_or("?".to_string(), |n| n.to_string())
            ),
        );
    }
    if st.connections > 0 && !st.connect.is_empty() && !measured && !interrupted {
        self_check.warnings.push(format!(
            "no reply: {} connection(s) opened and {} request(s) sent, but no reply came (client-timo {}, connreset {}, other {}): nothing was measured",
            st.connections,
            st.requests,
            errors.client_timo,
            errors.connreset,
            errors.other
        ));
    }
    if st.connections > 0 && st.connect.is_empty() {
        // Not a client limit: the target could not be reached at all.
        self_check.warnings.push(format!(
            "no connection succeeded ({} attempts; connrefused {}, socket-timo {}, client-timo {}, addrunavail {}): is the server listening on {}:{}?",
            st.connections,
            errors.connrefused,
            errors.socket_timo,
            errors.client_timo,
            errors.addrunavail,
            spec.server,
            spec.port
        ));
    }
}

/// Records the overload guard (connections in setup capped, source
/// addresses) and, when it held arrivals back, says so and names why.
pub(crate) fn add_overload(
    r: &mut RunResult,
    spec: &LoadSpec,
    st: &WorkerStats,
    local_addrs: &[std::net::IpAddr],
    cap: u64,
) {
    let x = &mut r.config.facts;
    x.max_connecting = Some(cap);
    if let (true, Some(first), Some(last)) = (
        spec.local_addrs.is_empty(),
        local_addrs.first(),
        local_addrs.last(),
    ) {
        x.local_addrs_auto = Some(AddrRange {
            first: *first,
            last: *last,
        });
    }
    if st.setup_capped == 0 {
        return;
    }
    let waited = st.setup_wait.len();
    let p99 = if waited > 0 {
        st.setup_wait.value_at_quantile(0.99) as f64 / 1000.0
    } else {
        0.0
    };
    x.setup_capped = Some(st.setup_capped);
    x.setup_waited = Some(waited);
    x.setup_wait_p99_ms = Some(p99);
    x.not_attempted = (st.not_attempted > 0).then_some(st.not_attempted);
    r.self_check.warnings.push(format!(
        "demand exceeded what the server took: {cap} connections were in setup (connecting or waiting for their first reply byte; --max-connecting) {} times, so {waited} arrivals waited for a slot (p99 {p99:.3} ms, included in the corrected latency) and {} were not attempted after waiting longer than --timeout (counted as client-timo). The limit is the server's rate of accepting and answering new connections (its listen queue), not the generator's descriptors or ports",
        st.setup_capped, st.not_attempted
    ));
}

/// Adds the TLS block of an HTTPS run.
pub(crate) fn add_tls(r: &mut RunResult, st: &WorkerStats, client: &crate::tls::Client) {
    let t = &st.tls;
    r.tls = Some(TlsSummary {
        verified: client.verify,
        sni: client.sni.clone(),
        resumption: client.reuse,
        handshakes: t.full + t.resumed,
        full: t.full,
        resumed: t.resumed,
        failures: t.failures,
        handshake: Latency::from_histogram(&t.handshake),
        versions: t
            .versions
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        cipher_suites: t.suites.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        alpn: t.alpn.clone(),
        first_error: t.first_error.clone(),
    });
}

fn fmt_counts(m: &std::collections::BTreeMap<String, u64>) -> String {
    let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// Facts about this machine.
pub fn environment() -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count() as u32;
    let memory_bytes = sys::mem_total_bytes().unwrap_or(0);
    Environment {
        kernel: sys::kernel(),
        cpu_model,
        cores,
        client_affinity: sys::affinity(),
        memory_bytes,
        facts: Default::default(),
        extra: Default::default(),
    }
}

fn fmt_pct_row(out: &mut String, name: &str, l: &Latency) {
    if l.count == 0 {
        let _ = writeln!(out, "  {name:<24} (none)");
        return;
    }
    let p = |x: f64| l.at(x).unwrap_or(0.0);
    let _ = writeln!(
        out,
        "  {name:<24}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>10.3}",
        p(50.0),
        p(90.0),
        p(99.0),
        p(99.9),
        p(99.99),
        l.max_ms
    );
}

/// Renders the httperf report (same sections, labels and units as httperf
/// 0.9) followed by httplab's block (percentiles, samples, accuracy,
/// self-check). Works on any [`RunResult`], including one read from JSON.
pub fn render_httperf_report(r: &RunResult) -> String {
    let mut o = String::new();
    let x = &r.config.facts;
    if let Some(c) = &x.normalized_command {
        let _ = writeln!(o, "{c}");
    }
    let _ = writeln!(
        o,
        "Maximum connect burst length: {}",
        x.max_connect_burst.unwrap_or(0)
    );
    let t = &r.totals;
    let c = &r.connection;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Total: connections {} requests {} replies {} test-duration {:.3} s",
        t.connections, t.requests, t.replies, t.test_duration_s
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Connection rate: {:.1} conn/s ({:.1} ms/conn, <={} concurrent connections)",
        c.rate_per_s, c.ms_per_conn, t.max_concurrent_connections
    );
    let l = &c.lifetime_ms;
    let _ = writeln!(
        o,
        "Connection time [ms]: min {:.1} avg {:.1} max {:.1} median {:.1} stddev {:.1}",
        l.min, l.avg, l.max, l.median, l.stddev
    );
    let _ = writeln!(o, "Connection time [ms]: connect {:.1}", c.connect_ms);
    let _ = writeln!(
        o,
        "Connection length [replies/conn]: {:.3}",
        c.replies_per_conn
    );
    let _ = writeln!(o);
    let q = &r.request;
    let _ = writeln!(
        o,
        "Request rate: {:.1} req/s ({:.1} ms/req)",
        q.rate_per_s, q.ms_per_req
    );
    let _ = writeln!(o, "Request size [B]: {:.1}", q.size_bytes);
    let _ = writeln!(o);
    let p = &r.reply;
    let _ = writeln!(
        o,
        "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples)",
        p.rate.min, p.rate.avg, p.rate.max, p.rate.stddev, p.rate.count
    );
    let _ = writeln!(
        o,
        "Reply time [ms]: response {:.1} transfer {:.1}",
        p.response_ms, p.transfer_ms
    );
    let _ = writeln!(
        o,
        "Reply size [B]: header {:.1} content {:.1} footer {:.1} (total {:.1})",
        p.header_bytes,
        p.content_bytes,
        p.footer_bytes,
        p.header_bytes + p.content_bytes + p.footer_bytes
    );
    let s = p.status;
    let _ = writeln!(
        o,
        "Reply status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={}",
        s.informational, s.success, s.redirect, s.client_error, s.server_error
    );
    let _ = writeln!(o);
    let res = &r.resources;
    let d = t.test_duration_s.max(1e-9);
    let _ = writeln!(
        o,
        "CPU time [s]: user {:.2} system {:.2} (user {:.1}% system {:.1}% total {:.1}%)",
        res.user_s,
        res.system_s,
        100.0 * res.user_s / d,
        100.0 * res.system_s / d,
        100.0 * (res.user_s + res.system_s) / d
    );
    let _ = writeln!(
        o,
        "Net I/O: {:.1} KB/s ({:.1}*10^6 bps)",
        res.net_kb_per_s, res.net_mbit_per_s
    );
    let _ = writeln!(o);
    let e = &r.errors;
    let _ = writeln!(
        o,
        "Errors: total {} client-timo {} socket-timo {} connrefused {} connreset {}",
        e.total, e.client_timo, e.socket_timo, e.connrefused, e.connreset
    );
    let _ = writeln!(
        o,
        "Errors: fd-unavail {} addrunavail {} ftab-full {} other {}",
        e.fd_unavail, e.addrunavail, e.ftab_full, e.other
    );
    // httplab's named classes (the parts of `other`, and response-timo),
    // shown when any is non-zero so clean reports keep httperf's shape.
    let named = e.named();
    if named.iter().any(|(_, n)| *n > 0) {
        let _ = write!(o, "Error detail:");
        for (name, n) in named {
            let _ = write!(o, " {name} {n}");
        }
        let _ = writeln!(o);
    }
    render_sessions(&mut o, r);
    render_httplab_block(&mut o, r);
    o.push_str(&crate::stages::render(&r.stages));
    o.push_str(&crate::probe::render(r));
    render_accuracy_and_self_check(&mut o, r);
    o
}

/// httperf's session section (session workloads).
fn render_sessions(o: &mut String, r: &RunResult) {
    let d = r.totals.test_duration_s.max(1e-9);
    if let Some(ss) = &r.config.facts.session_stats {
        let rs = Summary::of(&ss.rate_samples);
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Session rate [sess/s]: min {:.2} avg {:.2} max {:.2} stddev {:.2} ({}/{})",
            rs.min,
            ss.completed as f64 / d,
            rs.max,
            rs.stddev,
            ss.completed,
            ss.started
        );
        let _ = writeln!(
            o,
            "Session: avg {:.2} connections/session",
            if ss.started > 0 {
                ss.connections as f64 / ss.started as f64
            } else {
                0.0
            }
        );
        let _ = writeln!(
            o,
            "Session lifetime [s]: {:.1}",
            if ss.completed > 0 {
                ss.lifetime_sum_s / ss.completed as f64
            } else {
                0.0
            }
        );
        let _ = writeln!(
            o,
            "Session failtime [s]: {:.1}",
            if ss.failed > 0 {
                ss.failtime_sum_s / ss.failed as f64
            } else {
                0.0
            }
        );
        let h: Vec<String> = ss.length_histogram.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(o, "Session length histogram: {}", h.join(" "));
    }
}

/// httplab's own block of the report: TLS, sessions, warm-up, samples, latency.
fn render_httplab_block(o: &mut String, r: &RunResult) {
    let x = &r.config.facts;
    let t = &r.totals;
    let e = &r.errors;
    let d = t.test_duration_s.max(1e-9);
    // ---- httplab's own block ----
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "httplab latency [ms]:             p50       p90       p99     p99.9    p99.99       max"
    );
    fmt_pct_row(o, "connect", &r.latency.connect);
    fmt_pct_row(o, "first byte", &r.latency.first_byte);
    fmt_pct_row(o, "response (corrected)", &r.latency.response);
    fmt_pct_row(o, "response (uncorrected)", &r.latency.response_uncorrected);
    if let Some(h3) = &r.http3 {
        // QUIC's handshake is its TLS handshake: one row.
        fmt_pct_row(o, "QUIC handshake", &h3.handshake);
    } else if let Some(tls) = &r.tls {
        fmt_pct_row(o, "TLS handshake", &tls.handshake);
    }
    if r.latency.session.count > 0 {
        fmt_pct_row(o, "session", &r.latency.session);
        let _ = writeln!(
            o,
            "httplab session time: {} sessions, mean {:.3} ms (all calls of a session, reconnections included)",
            r.latency.session.count, r.latency.session.mean_ms
        );
    }
    if let Some(tls) = &r.tls {
        let _ = writeln!(
            o,
            "httplab TLS: handshakes {} (full {}, resumed {}{}), failed {}; version {}; cipher {}; ALPN {}",
            tls.handshakes,
            tls.full,
            tls.resumed,
            if tls.resumption { "" } else { ", resumption off" },
            tls.failures,
            fmt_counts(&tls.versions),
            fmt_counts(&tls.cipher_suites),
            fmt_counts(&tls.alpn),
        );
        let _ = writeln!(
            o,
            "httplab TLS certificate: {}; SNI {}",
            if tls.verified {
                "verified"
            } else {
                "NOT VERIFIED (--ssl or --insecure: any certificate was accepted)"
            },
            if tls.sni.is_empty() {
                "none (IP address)"
            } else {
                tls.sni.as_str()
            }
        );
        if let Some(e) = &tls.first_error {
            let _ = writeln!(o, "httplab TLS error (first of {}): {e}", tls.failures);
        }
    }
    render_http2_block(o, r);
    render_http3_block(o, r);
    if r.config.warmup_s > 0.0 {
        let _ = writeln!(
            o,
            "httplab warm-up: {:.3} s left out of every figure above; the window is {:.3} s",
            r.config.warmup_s, t.test_duration_s
        );
    }
    if let Some(n) = x.unsent_calls {
        let _ = writeln!(
            o,
            "httplab: {n} calls not made: the server closed their connection (httperf behaviour; --reconnect makes them on a new connection)"
        );
    }
    if let Some(n) = x.retried_calls {
        let _ = writeln!(
            o,
            "httplab: {n} calls made again on a new connection: the server closed theirs without answering them (behind a `Connection: close` reply, or as it closed an idle connection); counted as sent once"
        );
    }
    render_samples(o, r);
    if r.config.mode == LoadMode::ClosedLoop {
        let _ = writeln!(
            o,
            "httplab closed loop: {} users, think {:.1} ms",
            r.config.users.unwrap_or(0),
            r.config.think_ms.unwrap_or(0.0)
        );
        let _ = writeln!(
            o,
            "  {:>8} {:>10} {:>10} {:>10} {:>8}",
            "t [s]", "TPS", "p50 [ms]", "p99 [ms]", "errors"
        );
        for i in &r.series {
            let _ = writeln!(
                o,
                "  {:>8.1} {:>10.1} {:>10.3} {:>10.3} {:>8}",
                i.t_s, i.reply_rate, i.p50_ms, i.p99_ms, i.errors
            );
        }
        let _ = writeln!(
            o,
            "  total TPS {:.1}, avg response {:.3} ms, max response {:.3} ms, requests {}, errors {}",
            t.replies as f64 / d,
            r.latency.response_uncorrected.mean_ms,
            r.latency.response_uncorrected.max_ms,
            t.requests,
            e.total
        );
    }
}

/// The reply-rate samples (or why there are none).
fn render_samples(o: &mut String, r: &RunResult) {
    let p = &r.reply;
    let t = &r.totals;
    let iv = p.sample_interval_s;
    let full: Vec<&Interval> = r.series.iter().filter(|i| i.len_s >= iv * 0.999).collect();
    if full.is_empty() {
        let _ = writeln!(
            o,
            "httplab reply rate: run too short for a {iv:.3} s sample ({:.3} s); see the averages above",
            t.test_duration_s
        );
    } else {
        let show = if r.config.mode == LoadMode::ClosedLoop
            || full.len() <= 12
            || r.config.facts.verbose
        {
            full.len()
        } else {
            12
        };
        let vals: Vec<String> = full
            .iter()
            .take(show)
            .map(|i| format!("{:.1}", i.reply_rate))
            .collect();
        let _ = writeln!(
            o,
            "httplab reply rate [replies/s] every {iv} s ({} samples): {}{}",
            full.len(),
            vals.join(" "),
            if show < full.len() { " ..." } else { "" }
        );
    }
}

/// The report's accuracy, self-check and environment lines.
fn render_accuracy_and_self_check(o: &mut String, r: &RunResult) {
    let x = &r.config.facts;
    let a = &r.accuracy;
    let pct = if a.bytes_expected > 0 {
        100.0 * a.bytes_received as f64 / a.bytes_expected as f64
    } else {
        100.0
    };
    let _ = write!(
        o,
        "httplab accuracy: body bytes expected {} received {} ({:.3}%), framing errors {}",
        a.bytes_expected, a.bytes_received, pct, a.framing_errors
    );
    if a.verified > 0 {
        let _ = write!(o, ", verified {} mismatches {}", a.verified, a.mismatches);
    }
    let _ = writeln!(o);
    let sc = &r.self_check;
    let _ = writeln!(
        o,
        "httplab self-check: client CPU {:.1}%{} ({} thread{}), schedule lag p50 {:.3} ms p99 {:.3} ms max {:.3} ms, late starts {} (> {} ms)",
        sc.client_cpu_pct,
        if r.totals.replies == 0 || r.totals.test_duration_s < MIN_CPU_JUDGE_S {
            " (not judged)"
        } else {
            ""
        },
        r.config.threads,
        if r.config.threads == 1 { "" } else { "s" },
        sc.schedule_lag_p50_ms,
        sc.schedule_lag_p99_ms,
        sc.schedule_lag_max_ms,
        sc.late_starts,
        x.lag_threshold_ms
            .map_or_else(|| "?".to_string(), |ms| ms.to_string())
    );
    if let Some(io) = &x.io_engine {
        let _ = writeln!(o, "httplab I/O engine: {io}");
    }
    if let Some(c) = &x.calibration {
        let _ = writeln!(o, "{}", c.describe());
    }
    if let Some(ceiling) = sc.client_ceiling {
        let _ = writeln!(
            o,
            "httplab client ceiling: {ceiling:.0} requests/s, utilization {} (client-bound at >= {:.0}%)",
            sc.client_utilization
                .map_or("?".to_string(), |u| format!("{:.1}%", 100.0 * u)),
            100.0 * UTILIZATION_LIMIT
        );
    }
    for w in &sc.warnings {
        let _ = writeln!(o, "httplab WARNING: {w}");
    }
    if sc.client_bound {
        let _ = writeln!(
            o,
            "httplab verdict: CLIENT-BOUND ({}): the load generator limited this run; do not read it as the server's capacity",
            if sc.reasons.is_empty() {
                "see warnings".to_string()
            } else {
                sc.reasons.join(", ")
            }
        );
    } else if r.totals.replies == 0 {
        let _ = writeln!(
            o,
            "httplab verdict: nothing measured: {}; not client-bound (there was no load to judge the client by)",
            why_no_reply(r)
        );
    } else if r.totals.test_duration_s < MIN_CPU_JUDGE_S && !x.busy_poll {
        let _ = writeln!(
            o,
            "httplab verdict: too short to judge the client: {:.3} s measured, under the {MIN_CPU_JUDGE_S} s its CPU share needs; no other client limit seen",
            r.totals.test_duration_s
        );
    } else {
        let _ = writeln!(
            o,
            "httplab verdict: ok: the generator kept up (it was not the bottleneck)"
        );
    }
    if r.interrupted {
        let _ = writeln!(o, "httplab: interrupted; the report covers what ran so far");
    }
}

/// What happened in a run without a single reply, for the verdict line:
/// "no server answered: 3 connections refused", "no reply: …".
fn why_no_reply(r: &RunResult) -> String {
    let e = &r.errors;
    let named = [
        ("connrefused", e.connrefused),
        ("socket-timo", e.socket_timo),
        ("client-timo", e.client_timo),
        ("connreset", e.connreset),
        ("fd-unavail", e.fd_unavail),
        ("addrunavail", e.addrunavail),
        ("other", e.other),
    ];
    let list: Vec<String> = named
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let list = if list.is_empty() {
        String::new()
    } else {
        format!(" ({})", list.join(", "))
    };
    let conns = r.totals.connections;
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    if conns == 0 {
        if r.interrupted {
            "interrupted before any connection".to_string()
        } else {
            "no connection was attempted".to_string()
        }
    } else if r.latency.connect.count == 0 {
        if e.connrefused == conns && e.total == conns {
            format!(
                "no server answered: {} refused",
                plural(conns, "connection", "connections")
            )
        } else {
            format!(
                "no server answered: {} failed{list}",
                plural(conns, "connection attempt", "connection attempts")
            )
        }
    } else {
        format!(
            "no reply: {} opened, {} sent, none answered{list}",
            plural(conns, "connection", "connections"),
            plural(r.totals.requests, "request", "requests")
        )
    }
}

/// Writes the time series as CSV.
pub fn write_csv(r: &RunResult, path: &std::path::Path) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    for i in &r.series {
        w.serialize(i)?;
    }
    w.flush()?;
    Ok(())
}

/// The report's `HTTP/2:` block (nothing for HTTP/1.1 runs).
fn render_http2_block(o: &mut String, r: &httplab_model::RunResult) {
    let Some(h) = &r.http2 else { return };
    let counts = |m: &std::collections::BTreeMap<String, u64>| -> String {
        if m.is_empty() {
            return "0".into();
        }
        let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!("{} ({})", m.values().sum::<u64>(), v.join(", "))
    };
    let _ = writeln!(
        o,
        "HTTP/2: {} (max concurrent streams {}, windows stream {} conn {} bytes)",
        if h.cleartext {
            "h2c, prior knowledge"
        } else {
            "over TLS, ALPN h2"
        },
        h.max_concurrent_streams,
        h.stream_window,
        h.conn_window
    );
    let _ = writeln!(
        o,
        "HTTP/2 connections: {} spoke HTTP/2, {} failed before it",
        h.connections, h.failed_connections
    );
    let _ = writeln!(
        o,
        "HTTP/2 streams: started {} completed {} failed {}; not processed by the server and retried {}",
        h.streams_started, h.streams_completed, h.streams_failed, h.streams_retried
    );
    let _ = writeln!(
        o,
        "HTTP/2 received: RST_STREAM {}; GOAWAY {}",
        counts(&h.rst_stream_received),
        if h.goaway_received == 0 {
            "0".to_string()
        } else {
            format!("{} connections ({})", h.goaway_received, {
                let v: Vec<String> = h
                    .goaway_reasons
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                v.join(", ")
            })
        }
    );
    if let Some(e) = &h.first_error {
        let _ = writeln!(o, "HTTP/2 error (first of {}): {e}", h.failed_connections);
    }
}

/// The report's `HTTP/3:` block (nothing for other runs).
fn render_http3_block(o: &mut String, r: &httplab_model::RunResult) {
    let Some(h) = &r.http3 else { return };
    let counts = |m: &std::collections::BTreeMap<String, u64>| -> String {
        if m.is_empty() {
            return "0".into();
        }
        let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!("{} ({})", m.values().sum::<u64>(), v.join(", "))
    };
    let _ = writeln!(
        o,
        "HTTP/3: over QUIC, ALPN h3 (max concurrent streams {})",
        h.max_concurrent_streams
    );
    let _ = writeln!(
        o,
        "HTTP/3 connections: {} spoke HTTP/3, {} failed before it; handshakes 1-RTT {} 0-RTT {}",
        h.connections, h.failed_connections, h.handshakes_1rtt, h.handshakes_0rtt
    );
    let _ = writeln!(
        o,
        "HTTP/3 streams: started {} completed {} failed {}",
        h.streams_started, h.streams_completed, h.streams_failed
    );
    let e = &h.errors;
    let _ = writeln!(
        o,
        "HTTP/3 errors: handshake-failed {} version-negotiation {} idle-timeout {} protocol-error {}",
        e.handshake_failed, e.version_negotiation, e.idle_timeout, e.protocol_error
    );
    let _ = writeln!(
        o,
        "HTTP/3 closed by server: {}; streams reset: {}",
        counts(&e.closed_by_peer),
        counts(&e.stream_reset)
    );
    let _ = writeln!(
        o,
        "HTTP/3 UDP: datagrams sent {} received {}; packets lost {}",
        h.datagrams_sent, h.datagrams_received, h.lost_packets
    );
    if let Some(e) = &h.first_error {
        let _ = writeln!(o, "HTTP/3 error (first of {}): {e}", h.failed_connections);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_labels_match_httperf() {
        let r = RunResult::default();
        let text = render_httperf_report(&r);
        for label in [
            "Total: connections ",
            "Connection rate: ",
            "Connection time [ms]: min ",
            "Connection time [ms]: connect ",
            "Connection length [replies/conn]: ",
            "Request rate: ",
            "Request size [B]: ",
            "Reply rate [replies/s]: min ",
            "Reply time [ms]: response ",
            "Reply size [B]: header ",
            "Reply status: 1xx=",
            "CPU time [s]: user ",
            "Net I/O: ",
            "Errors: total ",
            "Errors: fd-unavail ",
            "run too short",
        ] {
            assert!(text.contains(label), "missing {label}");
        }
    }

    fn spec_of(args: &str) -> LoadSpec {
        crate::cli::parse_args(args.split_whitespace()).expect("valid test arguments")
    }

    /// Statistics of a run that lasted `dur_s` seconds with the generator
    /// busy all along (CPU = duration: 100 % of one core).
    fn stats(conns: u64, replies: u64, dur_s: f64) -> WorkerStats {
        let mut st = WorkerStats::new();
        st.connections = conns;
        st.requests = replies;
        st.replies = replies;
        st.first_s = Some(0.0);
        st.end_s = dur_s;
        st.cpu_user = dur_s;
        st
    }

    fn result_of(spec: &LoadSpec, st: &WorkerStats) -> RunResult {
        build_result(spec, st, Vec::new(), String::new(), st.end_s, false)
    }

    #[test]
    fn refused_connections_are_not_client_bound() {
        // As `--num-conns 3` against a closed port: 1 ms, all refused, the
        // generator "100 % busy" over that millisecond.
        let spec = spec_of("--server 127.0.0.1 --port 9 --num-conns 3");
        let mut st = stats(3, 0, 0.001);
        st.errors[ErrClass::ConnRefused as usize] = 3;
        let r = result_of(&spec, &st);
        assert!(!r.self_check.client_bound, "{:?}", r.self_check);
        assert!(r.self_check.reasons.is_empty(), "{:?}", r.self_check);
        let text = render_httperf_report(&r);
        assert!(!text.contains("CLIENT-BOUND"), "{text}");
        assert!(
            text.contains(
                "httplab verdict: nothing measured: no server answered: 3 connections refused"
            ),
            "{text}"
        );
    }

    #[test]
    fn connected_but_unanswered_says_so() {
        let spec = spec_of("--server 127.0.0.1 --port 9 --num-conns 2 --timeout 0.1");
        let mut st = stats(2, 0, 0.2);
        st.requests = 2;
        st.errors[ErrClass::ClientTimo as usize] = 2;
        let _ = st.connect.record(50);
        let _ = st.connect.record(60);
        let r = result_of(&spec, &st);
        assert!(!r.self_check.client_bound);
        let text = render_httperf_report(&r);
        assert!(
            text.contains("nothing measured: no reply: 2 connections opened, 2 requests sent, none answered (client-timo 2)"),
            "{text}"
        );
    }

    #[test]
    fn too_short_to_judge_the_client_cpu() {
        let spec = spec_of("--server 127.0.0.1 --port 9 --num-conns 5");
        let st = stats(5, 5, 0.004);
        let r = result_of(&spec, &st);
        assert!(r.self_check.client_cpu_pct >= 99.0);
        assert!(!r.self_check.client_bound, "{:?}", r.self_check);
        assert!(
            r.self_check
                .warnings
                .iter()
                .any(|w| w.contains("too short")),
            "{:?}",
            r.self_check.warnings
        );
        let text = render_httperf_report(&r);
        assert!(
            text.contains("httplab verdict: too short to judge the client"),
            "{text}"
        );
        assert!(text.contains("client CPU 100.0% (not judged)"), "{text}");
        // The same busy generator over a second is client-bound.
        let st = stats(5, 5, 1.0);
        let r = result_of(&spec, &st);
        assert!(r.self_check.client_bound);
        assert_eq!(r.self_check.reasons, ["client_cpu"]);
        assert!(render_httperf_report(&r).contains("CLIENT-BOUND (client_cpu)"));
    }

    #[test]
    fn running_out_of_ports_is_client_bound_without_replies() {
        let spec = spec_of("--server 127.0.0.1 --port 9 --num-conns 4");
        let mut st = stats(4, 0, 0.001);
        st.errors[ErrClass::AddrUnavail as usize] = 4;
        let r = result_of(&spec, &st);
        assert!(r.self_check.client_bound);
        assert_eq!(r.self_check.reasons, ["ports_exhausted"]);
    }
}
