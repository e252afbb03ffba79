//! `httplab load`: an httperf-compatible HTTP/1.1, HTTPS and HTTP/2 load
//! generator that is accurate where httperf, wrk and oha are not.
//!
//! - **HTTP/2** (`--http2`, [`Http2Spec`]): over TLS (ALPN h2) and h2c with
//!   prior knowledge; `--max-concurrent-streams` (h2load's `-m`), flow-control
//!   windows; open and closed loop on the same schedules; counts of streams,
//!   RST_STREAM and GOAWAY ([`httplab_model::Http2Summary`]). Built on the
//!   `h2` crate, driven by a tokio current-thread runtime per load thread
//!   (`http2.rs`; see the README for why accuracy is kept).
//! - **HTTPS**: `https://` URLs (certificates verified; `--cacert`,
//!   `--insecure`) and httperf's `--ssl` (not verified, as httperf),
//!   `--ssl-ciphers`, `--ssl-no-reuse`; TLS 1.2/1.3, SNI, ALPN; the TLS
//!   handshake is its own latency row ([`httplab_model::TlsSummary`]).
//! - **Overload without collapse**: connections in setup are capped
//!   (`--max-connecting`), loopback targets get source addresses spread over
//!   127.0.0.0/8, and the report names what limited the run.
//! - **Shape**: protocol state machines without I/O (`h1.rs`; TLS as a byte
//!   transformer, `tls.rs`) driven by one epoll I/O driver (`engine.rs`).
//!
//! - **httperf compatible**: every httperf 0.9 command line runs with
//!   `httperf` replaced by `httplab load` (same options, prefixes, meaning),
//!   and the report has httperf's sections, labels and units.
//! - **Open loop done right**: connections/sessions start on a schedule
//!   (deterministic, uniform, exponential) whatever the server does; latency
//!   is measured from the *scheduled* start (coordinated-omission corrected)
//!   and from the actual send; late starts are counted, never shifted.
//! - **Closed loop**: `--users N --requests-per-user M | --duration T --think T`.
//! - **Path lists** (`--uri-list`), **sessions across server closes**
//!   (`--reconnect`, session time), a **warm-up** left out of every figure
//!   (`--warmup`), and **client calibration** ([`calibrate`], `--calibrate`)
//!   behind a client-bound verdict that holds in every mode (see the README).
//! - **HDR histograms** everywhere (connect, first byte, response corrected
//!   and uncorrected, schedule lag), a per-interval time series, body-length
//!   accuracy and `--verify-root`, and a self-check that says when the
//!   generator, not the server, was the bottleneck.
//!
//! # Library API
//!
//! Other crates (sweep, study) call the generator in process:
//!
//! ```no_run
//! let spec = httplab_load::parse_args(["--server", "127.0.0.1", "--port", "8080",
//!     "--rate", "100", "--num-conns", "500", "--timeout", "5"])?;
//! let result = httplab_load::run(&spec, false)?;          // never prints
//! print!("{}", httplab_load::render_httperf_report(&result));
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! - [`parse_args`] parses httperf-style arguments (without the program name) into a [`LoadSpec`].
//! - [`LoadSpec::new`] builds a spec directly (httperf defaults); fill its public fields.
//! - [`run`] runs it and returns an [`httplab_model::RunResult`]; [`run_with_stop`]
//!   takes a flag that ends the run early (the result then has `interrupted: true`).
//! - [`render_httperf_report`] renders a result (also one read back from JSON).
//! - [`cli_main`] is the whole command (`httplab load ...`).
//! - [`calibrate`] measures the generator's ceiling for a spec's shape against
//!   an in-process sink; put `ceiling_rps` into [`LoadSpec::client_ceiling`].
//!
//! # JSON
//!
//! `--json FILE` writes [`httplab_model::RunResult`] (schema `httplab.run/1`,
//! documented in the model crate): config, counters, the four latency HDR
//! histograms (V2-deflate, base64), the time series, accuracy, self-check and
//! environment. Keys this crate adds under `config.extra`:
//! `normalized_command`, `max_connect_burst`, `lag_threshold_ms`,
//! `session_stats` (JSON of [`SessionStats`], session workloads only),
//! `abandoned_calls` (interrupted runs), `local_addrs`, `wset`, `burst_length`,
//! `verbose`, `busy_poll`, `unsent_calls`, `reconnect`, `calls_per_conn`,
//! `uri_list`, `calibration` (JSON of [`Calibration`]), `host`, `max_connecting`,
//! `local_addrs_auto`, `setup_capped`, `setup_waited`, `setup_wait_p99_ms`,
//! `not_attempted`, `io_engine` ([`EXTRA_IO_ENGINE`]); client shards (`--client I/N` with N > 1, `--run-id`,
//! `--start-at`) add `client_shard`, `run_id`, `start_at` and
//! [`EXTRA_SHARD_SESSIONS`]. HTTPS runs add [`httplab_model::RunResult::tls`], `--http2` runs
//! [`httplab_model::RunResult::http2`].
//!
//! # Meaning of the numbers
//!
//! - *Connections* are connection attempts (sockets that reached `connect`).
//! - `max_concurrent_connections` with `--threads N` is the sum of each thread's maximum.
//! - Reply-rate samples use `--sample-interval` (default 1 s, httperf used 5 s);
//!   only full intervals count as samples.
//! - Errors use httperf's classes: a timeout of `--timeout` is `client-timo`,
//!   a kernel ETIMEDOUT `socket-timo`, ECONNREFUSED `connrefused`, a reset or a
//!   close before any reply byte `connreset`, EMFILE/ENFILE `fd-unavail`,
//!   EADDRNOTAVAIL `addrunavail`; malformed replies, truncated bodies and data
//!   nobody asked for are `other`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod calibrate;
pub mod calibration_cache;
mod cli;
mod engine;
mod frametap;
mod h1;
mod http2;
mod plan;
mod report;
mod spec;
mod stats;
mod sys;
mod tls;
mod uring;

/// Process-wide Ctrl-C handling shared by every httplab command that runs load:
/// the first SIGINT sets [`interrupted`], a second exits at once (status 130).
pub use sys::{install_sigint, interrupted};

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use httplab_model::RunResult;

pub use calibrate::{
    calibrate, Calibration, CALIBRATION_WARMUP_S, CALIBRATION_WINDOW_S, DEFAULT_CALIBRATION_CONNS,
    DEFAULT_CALIBRATION_SIZE,
};
pub use http2::{Http2Spec, DEFAULT_H2_WINDOW};
pub use report::{
    environment, render_httperf_report, write_csv, CPU_LIMIT_PCT, EXTRA_ABANDONED,
    EXTRA_CALIBRATION, EXTRA_COMMAND, EXTRA_LAG_THRESHOLD, EXTRA_MAX_BURST, EXTRA_SESSIONS,
    EXTRA_UNSENT, MIN_CPU_JUDGE_S, UTILIZATION_LIMIT,
};
pub use spec::{
    format_unix_micros, parse_session_log, parse_start_at, parse_time, parse_uri_list, Arrival,
    Dist, IoEngine, LoadSpec, LogBurst, LogCall, LogSession, PrintWhat, Workload,
    DEFAULT_MAX_CONNECTING,
};
pub use stats::SessionStats;
pub use tls::{parse_ciphers, TlsSpec, TlsVersion};

/// Parses httperf-style arguments (without the program name) into a spec.
/// `--help`/`--version` are errors here; use [`cli_main`] for those.
pub fn parse_args<I, S>(args: I) -> Result<LoadSpec>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut v: Vec<OsString> = vec!["httplab load".into()];
    v.extend(args.into_iter().map(Into::into));
    match cli::parse(&v)? {
        cli::Parsed::Run(s) => Ok(*s),
        cli::Parsed::Text(t) => bail!("{t}"),
    }
}

/// Runs `spec` and returns its result. Never prints, except a live progress
/// line on stderr when `progress` is true and stderr is a terminal.
pub fn run(spec: &LoadSpec, progress: bool) -> Result<RunResult> {
    let stop = AtomicBool::new(false);
    run_with_stop(spec, progress, &stop)
}

fn resolve(spec: &LoadSpec) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (spec.server.as_str(), spec.port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve server '{}'", spec.server))?
        .collect();
    let want_v6 = spec.local_addrs.first().is_some_and(|a| a.is_ipv6());
    addrs
        .iter()
        .find(|a| a.is_ipv6() == want_v6)
        .or_else(|| addrs.first())
        .copied()
        .with_context(|| format!("server '{}' has no address", spec.server))
}

/// Source addresses: `--local-addr` when given; for an IPv4 loopback target,
/// [`AUTO_LOOPBACK_SOURCES`] addresses of 127.0.0.0/8, so ports in TIME_WAIT
/// towards the one server address never run out (each source address has
/// its own ephemeral port range); else none (the kernel chooses).
fn source_addrs(spec: &LoadSpec, addr: SocketAddr) -> Vec<std::net::IpAddr> {
    if !spec.local_addrs.is_empty() {
        return spec.local_addrs.clone();
    }
    // Where 127.0.0.0/8 is not all local (some sandboxes), keep the kernel's choice.
    let spread_ok =
        || std::net::TcpListener::bind((std::net::Ipv4Addr::new(127, 0, 0, 2), 0)).is_ok();
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_loopback() && spread_ok() => (1..=AUTO_LOOPBACK_SOURCES)
            .map(|i| std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, i)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Source addresses spread over for loopback targets (127.0.0.1 ..= 127.0.0.N).
pub const AUTO_LOOPBACK_SOURCES: u8 = 16;

/// Like [`run`], but ends early (reporting what ran so far) once `stop` is set.
pub fn run_with_stop(spec: &LoadSpec, progress: bool, stop: &AtomicBool) -> Result<RunResult> {
    run_raw(spec, progress, stop).map(|(r, _)| r)
}

/// Longest wait for `--start-at`.
pub const MAX_START_WAIT_S: f64 = 24.0 * 3600.0;

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Fails when `--start-at` has passed or is too far ahead.
pub fn check_start_at(spec: &LoadSpec) -> Result<()> {
    if let Some(at) = spec.start_at {
        let ahead = at - unix_now();
        if ahead <= 0.0 {
            bail!(
                "--start-at {} has passed ({:.3} s ago): give every shard an instant far enough ahead for all of them to be ready",
                spec::format_unix_micros(at),
                -ahead
            );
        }
        if ahead > MAX_START_WAIT_S {
            bail!(
                "--start-at {} is {:.0} s ahead, more than the 24 h httplab waits",
                spec::format_unix_micros(at),
                ahead
            );
        }
    }
    Ok(())
}

/// Waits for `--start-at` (or not), returning the schedule's t0 and the
/// `started_at` to record (with microseconds for a shared start).
fn wait_start(spec: &LoadSpec, stop: &AtomicBool) -> Result<(Instant, String)> {
    let Some(at) = spec.start_at else {
        // Start a little in the future so every worker is set up before its first send.
        return Ok((
            Instant::now() + Duration::from_millis(5),
            httplab_model::now_rfc3339(),
        ));
    };
    check_start_at(spec)?;
    loop {
        let left = at - unix_now();
        if left <= 0.05 {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted while waiting for --start-at");
        }
        std::thread::sleep(Duration::from_secs_f64((left - 0.05).min(0.1)));
    }
    // The workers sleep the last few milliseconds to t0 themselves.
    let left = (at - unix_now()).max(0.0);
    Ok((
        Instant::now() + Duration::from_secs_f64(left),
        spec::format_unix_micros(at),
    ))
}

/// The client's host name (`config.extra.host`).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Like [`run_with_stop`], and the corrected response times (µs) when
/// `spec.raw_latencies` is set.
fn run_raw(
    spec: &LoadSpec,
    progress: bool,
    stop: &AtomicBool,
) -> Result<(RunResult, Option<Vec<u64>>)> {
    spec.validate()?;
    check_start_at(spec)?;
    let _ = sys::raise_nofile_limit();
    let addr = resolve(spec)?;
    let tls = match &spec.tls {
        Some(t) => {
            let sni_fallback = spec.host_header.as_deref().unwrap_or(&spec.server);
            Some(tls::Client::new(t, sni_fallback)?)
        }
        None => None,
    };
    let plan = plan::Plan::build(spec);
    // Sequential httperf runs (no --rate) are one stream: one thread.
    let threads = match (spec.arrival, &spec.workload) {
        (Arrival::Concurrent(k), _) => {
            // This shard's users (or connections at a time).
            let (i, n) = spec.client;
            let mine = plan::share_lane(k, (u64::from(i), u64::from(n.max(1))));
            spec.threads.min(mine.clamp(1, u64::from(u32::MAX)) as u32)
        }
        _ => spec.threads,
    }
    .max(1);
    let mut spec_eff = spec.clone();
    spec_eff.threads = threads;
    let spec = &spec_eff;
    let collector = stats::Collector::new(threads, spec.sample_interval);
    let local_addrs = source_addrs(spec, addr);
    let (io_engine, io_note) = choose_io(spec);
    let uring = io_engine == EXTRA_IO_URING;
    let cap = spec.max_connecting.unwrap_or(spec::DEFAULT_MAX_CONNECTING);
    let (t0, started_at) = wait_start(spec, stop)?;
    let wall0 = Instant::now();
    let show = progress && !spec.no_progress && std::io::stderr().is_terminal();
    let ctxs: Vec<engine::WorkerCtx<'_>> = (0..threads)
        .map(|i| engine::WorkerCtx {
            thread: i,
            threads,
            t0,
            spec,
            plan: &plan,
            addr,
            stop,
            collector: &collector,
            tls: tls.as_ref(),
            local_addrs: &local_addrs,
            setup_cap: plan::share_lane(cap, (i as u64, threads as u64)).max(1),
            uring,
        })
        .collect();
    let results: Vec<std::io::Result<stats::WorkerStats>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for ctx in &ctxs {
            let h = std::thread::Builder::new()
                .name(format!("httplab-load-{}", ctx.thread))
                .spawn_scoped(scope, move || match &ctx.spec.http2 {
                    Some(h) => http2::run_worker(ctx, h),
                    None => engine::Worker::new(ctx)?.run(),
                });
            handles.push(h);
        }
        if show {
            let mut last = Instant::now();
            loop {
                let all_done = handles
                    .iter()
                    .all(|h| h.as_ref().map_or(true, |h| h.is_finished()));
                if all_done {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
                if last.elapsed() >= Duration::from_millis(500) {
                    last = Instant::now();
                    let p = collector.progress();
                    let mut e = std::io::stderr().lock();
                    let _ = write!(
                        e,
                        "\r\x1b[K[{:>7.1}s] sent {} replies {} rate {:.1}/s errors {} p99 {:.3} ms",
                        wall0.elapsed().as_secs_f64(),
                        p.sent,
                        p.replies,
                        p.last_rate,
                        p.errors,
                        p.p99_ms
                    );
                    let _ = e.flush();
                }
            }
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("worker thread panicked"))),
                Err(e) => Err(e),
            })
            .collect()
    });
    let mut total = stats::WorkerStats::new();
    for r in results {
        let st = r.context("load worker failed")?;
        total.merge(&st);
    }
    let series = collector.finish();
    let interrupted = stop.load(Ordering::Relaxed);
    let mut result = report::build_result(
        spec,
        &total,
        series,
        started_at,
        wall0.elapsed().as_secs_f64(),
        interrupted,
    );
    if let Some(t) = &tls {
        report::add_tls(&mut result, &total, t);
    }
    report::add_overload(&mut result, spec, &total, &local_addrs, cap);
    if let Some(h) = &spec.http2 {
        let sum = total.h2.summary(spec, h);
        if sum.connections == 0 && sum.streams_completed == 0 && !interrupted {
            // Nothing spoke HTTP/2: say why instead of an empty report.
            if let Some(e) = sum
                .first_error
                .clone()
                .or_else(|| total.tls.first_error.clone())
            {
                bail!("--http2 against {}:{}: {e}", spec.server, spec.port);
            }
            if total.connections > 0 && total.connect.is_empty() {
                bail!(
                    "--http2: no connection succeeded ({} attempts): is the server listening on {}:{}?",
                    total.connections,
                    spec.server,
                    spec.port
                );
            }
        }
        result.http2 = Some(sum);
    }
    if let Some(note) = io_note {
        result.self_check.warnings.push(note);
    }
    let extra = &mut result.config.extra;
    extra.insert(EXTRA_IO_ENGINE.into(), io_engine.into());
    extra.insert(httplab_model::EXTRA_HOST.into(), host_name());
    if spec.is_shard() {
        let (i, n) = spec.client;
        extra.insert(httplab_model::EXTRA_CLIENT_SHARD.into(), format!("{i}/{n}"));
        extra.insert(
            httplab_model::EXTRA_RUN_ID.into(),
            spec.run_id(&result.started_at),
        );
        if let Some(at) = spec.start_at {
            extra.insert(
                httplab_model::EXTRA_START_AT.into(),
                spec::format_unix_micros(at),
            );
        }
        // config.rate, num_conns, users ... are the whole run's demand;
        // this is the part of a counted demand this shard ran.
        if total.planned_sessions > 0 {
            extra.insert(
                EXTRA_SHARD_SESSIONS.into(),
                total.planned_sessions.to_string(),
            );
        }
    }
    Ok((result, total.raw.take()))
}

/// Key of `config.extra` naming the socket I/O engine that ran: `io_uring`,
/// `epoll` (HTTP/1.1, HTTPS) or `tokio` (`--http2`).
pub const EXTRA_IO_ENGINE: &str = "io_engine";
const EXTRA_IO_URING: &str = "io_uring";

/// Whether `--io uring` can run here (io_uring_setup works and the kernel
/// has what the engine needs).
pub fn io_uring_available() -> bool {
    uring::probe().is_ok()
}

/// The I/O engine for this run (see `--io`), and a warning when `--io uring`
/// was asked for and cannot run.
fn choose_io(spec: &LoadSpec) -> (&'static str, Option<String>) {
    if spec.http2.is_some() {
        return ("tokio", None);
    }
    let asked = spec.io == IoEngine::Uring;
    if spec.tls.is_some() {
        // rustls sits between the socket and H1Conn; porting its record I/O to
        // completions is not done: HTTPS stays on the epoll engine.
        let note = asked.then(|| "--io uring: HTTPS runs on the epoll engine".to_string());
        return ("epoll", note);
    }
    match spec.io {
        IoEngine::Epoll => ("epoll", None),
        IoEngine::Auto | IoEngine::Uring => match uring::probe() {
            Ok(()) => (EXTRA_IO_URING, None),
            Err(why) => (
                "epoll",
                asked.then(|| format!("--io uring: {why}; the run used epoll")),
            ),
        },
    }
}

/// Key of `config.extra` holding, for a client shard of a counted run, the
/// sessions (connections, sessions or users) of the schedule it ran.
pub const EXTRA_SHARD_SESSIONS: &str = "shard_sessions";

/// Entry point of `httplab load`: `args[0]` is the program name.
pub fn cli_main(args: Vec<OsString>) -> Result<ExitCode> {
    let spec = match cli::parse(&args)? {
        cli::Parsed::Text(t) => {
            print!("{t}");
            return Ok(ExitCode::SUCCESS);
        }
        cli::Parsed::Run(s) => *s,
    };
    let mut spec = spec;
    let mut calibration = None;
    if spec.calibrate || spec.calibrate_only {
        let c = calibrate(&spec)?;
        if spec.calibrate_only {
            println!("{}", c.describe());
            if let Some(path) = &spec.json {
                let text = serde_json::to_string_pretty(&c)?;
                std::fs::write(path, text + "\n")
                    .with_context(|| format!("cannot write --json file {}", path.display()))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        spec.client_ceiling = Some(c.ceiling_rps);
        calibration = Some(c);
    }
    check_start_at(&spec)?;
    sys::install_sigint();
    let stop = sys::interrupted();
    let (mut result, raw) = run_raw(&spec, true, stop)?;
    if let Some(w) = result
        .self_check
        .warnings
        .iter()
        .find(|w| w.starts_with("--io uring"))
    {
        eprintln!("httplab load: warning: {w}");
    }
    if let (Some(path), Some(raw)) = (&spec.raw_latencies, raw) {
        let mut text = String::with_capacity(raw.len() * 8);
        for v in raw {
            text.push_str(&v.to_string());
            text.push('\n');
        }
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --latency-dump file {}", path.display()))?;
    }
    if let Some(c) = &calibration {
        calibration_cache::record(&mut result.config, c);
    }
    if !spec.quiet {
        let mut out = std::io::stdout().lock();
        out.write_all(render_httperf_report(&result).as_bytes())?;
        out.flush()?;
    }
    if let Some(path) = &spec.json {
        let text = serde_json::to_string_pretty(&result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    if let Some(path) = &spec.csv {
        write_csv(&result, path)
            .with_context(|| format!("cannot write --csv file {}", path.display()))?;
    }
    Ok(if result.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
