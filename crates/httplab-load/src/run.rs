//! A run: resolve the target, plan it, start one worker thread per
//! `--threads` on its driver (the epoll/io_uring engine, or the HTTP/2
//! driver), gather their statistics into the result.

use std::io::{IsTerminal, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use httplab_model::{ClientShard, IoEngineUsed, RunResult};

use crate::arrivals::schedule::share_lane;
use crate::report;
use crate::spec::{self, Arrival, IoEngine, LoadSpec};
use crate::worker::WorkerCtx;
use crate::{engine, http3, plan, stats, sys, tls, uring};

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

/// The client's host name (`config.facts.host`).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Like [`run_with_stop`], and the corrected response times (µs) when
/// `spec.raw_latencies` is set.
pub(crate) fn run_raw(
    spec: &LoadSpec,
    progress: bool,
    stop: &AtomicBool,
) -> Result<(RunResult, Option<Vec<u64>>)> {
    spec.validate()?;
    if let Some(p) = spec.probe {
        return crate::probe::beside(spec, &p, stop, &|s, st| run_raw(s, progress, st));
    }
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
            let mine = share_lane(k, (u64::from(i), u64::from(n.max(1))));
            spec.threads.min(mine.clamp(1, u64::from(u32::MAX)) as u32)
        }
        _ => spec.threads,
    }
    .max(1);
    let mut spec_eff = spec.clone();
    spec_eff.threads = threads;
    let spec = &spec_eff;
    let collector =
        stats::Collector::new(threads, spec.sample_interval).publish_to(spec.live.metrics.clone());
    let _live = LiveRun::start(spec.live.metrics.as_ref());
    let local_addrs = source_addrs(spec, addr);
    let (io_engine, io_note) = choose_io(spec);
    let uring = io_engine == IoEngineUsed::IoUring;
    let cap = spec.max_connecting.unwrap_or(spec::DEFAULT_MAX_CONNECTING);
    let (t0, started_at) = wait_start(spec, stop)?;
    let wall0 = Instant::now();
    let show = progress && !spec.no_progress && std::io::stderr().is_terminal();
    let ctxs: Vec<WorkerCtx<'_>> = (0..threads)
        .map(|i| WorkerCtx {
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
            setup_cap: share_lane(cap, (i as u64, threads as u64)).max(1),
            uring,
        })
        .collect();
    let results = run_workers(&ctxs, show.then_some(wall0), &collector);
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
    add_http2(&mut result, spec, &total, interrupted)?;
    add_http3(&mut result, spec, &total);
    result.stages = crate::stages::results(&spec.stages, &total.stages);
    if let Some(note) = io_note {
        result.self_check.warnings.push(note);
    }
    let facts = &mut result.config.facts;
    facts.io_engine = Some(io_engine);
    facts.host = Some(host_name());
    if spec.is_shard() {
        let (index, count) = spec.client;
        facts.client_shard = Some(ClientShard { index, count });
        facts.run_id = Some(spec.run_id(&result.started_at));
        facts.start_at = spec.start_at.map(spec::format_unix_micros);
        // config.rate, num_conns, users ... are the whole run's demand;
        // this is the part of a counted demand this shard ran.
        facts.shard_sessions = (total.planned_sessions > 0).then_some(total.planned_sessions);
    }
    Ok((result, total.raw.take()))
}

/// Marks the live metrics running while it lives (`httplab_load_running`),
/// also when the run fails.
struct LiveRun<'a>(Option<&'a httplab_live::LoadLive>);

impl<'a> LiveRun<'a> {
    fn start(live: Option<&'a httplab_live::LoadLive>) -> LiveRun<'a> {
        if let Some(l) = live {
            l.run_started();
        }
        LiveRun(live)
    }
}

impl Drop for LiveRun<'_> {
    fn drop(&mut self) {
        if let Some(l) = self.0 {
            l.run_finished();
        }
    }
}

/// Whether `--io uring` can run here (io_uring_setup works and the kernel
/// has what the engine needs).
pub fn io_uring_available() -> bool {
    uring::probe().is_ok()
}

/// The I/O engine for this run (see `--io`), and a warning when `--io uring`
/// was asked for and cannot run.
fn choose_io(spec: &LoadSpec) -> (IoEngineUsed, Option<String>) {
    if spec.http3.is_some() {
        return (IoEngineUsed::Tokio, None);
    }
    let asked = spec.io == IoEngine::Uring;
    if spec.http2.is_some() && spec.io == IoEngine::Auto {
        // HTTP/2 runs on epoll unless io_uring is asked for.
        return (IoEngineUsed::Epoll, None);
    }
    if spec.tls.is_some() {
        // rustls sits between the socket and H1Conn; porting its record I/O to
        // completions is not done: HTTPS stays on the epoll engine.
        let note = asked.then(|| "--io uring: HTTPS runs on the epoll engine".to_string());
        return (IoEngineUsed::Epoll, note);
    }
    match spec.io {
        IoEngine::Epoll => (IoEngineUsed::Epoll, None),
        IoEngine::Auto | IoEngine::Uring => match uring::probe() {
            Ok(()) => (IoEngineUsed::IoUring, None),
            Err(why) => (
                IoEngineUsed::Epoll,
                asked.then(|| format!("--io uring: {why}; the run used epoll")),
            ),
        },
    }
}

/// `--http2`: the run's HTTP/2 block, or why nothing spoke HTTP/2.
fn add_http2(
    result: &mut RunResult,
    spec: &LoadSpec,
    total: &stats::WorkerStats,
    interrupted: bool,
) -> Result<()> {
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
    Ok(())
}

/// `--http3`: the run's HTTP/3 block. A target that never spoke HTTP/3
/// (handshake refused, silent, garbage) still gives a report: its errors by
/// class and the first failure in words.
fn add_http3(result: &mut RunResult, spec: &LoadSpec, total: &stats::WorkerStats) {
    if let Some(h) = &spec.http3 {
        result.http3 = Some(total.h3.summary(h));
    }
}

/// Runs one thread per worker context on its driver and returns each
/// thread's statistics; with `progress` (the run's start) a live line on
/// stderr meanwhile.
fn run_workers(
    ctxs: &[WorkerCtx<'_>],
    progress: Option<Instant>,
    collector: &stats::Collector,
) -> Vec<std::io::Result<stats::WorkerStats>> {
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for ctx in ctxs {
            let h = std::thread::Builder::new()
                .name(format!("httplab-load-{}", ctx.thread))
                .spawn_scoped(scope, move || match &ctx.spec.http3 {
                    Some(h) => http3::run_worker(ctx, h),
                    None => engine::Worker::new(ctx)?.run(),
                });
            handles.push(h);
        }
        if let Some(wall0) = progress {
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
    })
}
