//! HTTP/2 (`--http2`): a second I/O driver, beside the epoll engine, for
//! the `h2` crate (framing, HPACK, flow control), which needs an async
//! runtime.
//!
//! Each load thread runs one tokio *current-thread* runtime: no work
//! stealing, no thread hops; the thread's connections, their streams and its
//! schedule are futures polled by that one thread, as the epoll engine's
//! slots are. The thread is fed by the same `plan.rs` lanes (arrival k of
//! the run's schedule, shards and threads alike) and fills the same
//! [`WorkerStats`] and interval collector, so the report, JSON, warm-up,
//! shards and self-check are unchanged.
//!
//! Accuracy: the open-loop schedule is not left to tokio's timer wheel
//! (millisecond granularity) but waits on a timerfd registered with the
//! runtime's reactor (`AsyncFd`), so arrivals start within microseconds of
//! their instant; every stream's corrected latency counts from its intended
//! instant (the arrival's scheduled time for a connection's first streams,
//! the pace schedule for paced users, the end of the previous stream or
//! think time otherwise) and lateness is recorded exactly as in the epoll
//! engine (schedule lag, late starts, setup cap waits). Think times and
//! pacing sleep on tokio's timer (1 ms granularity); their lateness is
//! measured and counted, never hidden.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};

use crate::engine::WorkerCtx;
use crate::frametap::{reason_index, FrameTap, REASONS};
use crate::plan::{share_lane, Schedule, Shape};
use crate::spec::{Arrival, LoadSpec, Workload};
use crate::stats::{interval_hist, rec, ErrClass, IntervalPart, WorkerStats};
use crate::sys;

/// Default flow-control windows, stream and connection: 2^30 - 1 bytes, as
/// h2load's `-w 30 -W 30`, so large bodies are not throttled by the
/// protocol's 64 KiB default unless asked.
pub const DEFAULT_H2_WINDOW: u32 = (1 << 30) - 1;

/// HTTP/2 settings of a run ([`crate::LoadSpec::http2`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Http2Spec {
    /// Streams a connection keeps open at once (h2load's `-m`; default 1,
    /// as h2load). The server's SETTINGS_MAX_CONCURRENT_STREAMS also caps it.
    pub max_concurrent_streams: u32,
    /// Initial stream window advertised (SETTINGS_INITIAL_WINDOW_SIZE), bytes.
    pub stream_window: u32,
    /// Connection window, bytes.
    pub conn_window: u32,
}

impl Default for Http2Spec {
    fn default() -> Http2Spec {
        Http2Spec {
            max_concurrent_streams: 1,
            stream_window: DEFAULT_H2_WINDOW,
            conn_window: DEFAULT_H2_WINDOW,
        }
    }
}

/// Largest flow-control window HTTP/2 allows (2^31 - 1).
const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Refuses what the HTTP/2 driver does not do.
pub(crate) fn validate(spec: &LoadSpec, h: &Http2Spec) -> Result<()> {
    if h.max_concurrent_streams == 0 {
        bail!("--max-concurrent-streams must be at least 1");
    }
    for (w, name) in [
        (h.stream_window, "--h2-window"),
        (h.conn_window, "--h2-conn-window"),
    ] {
        if w == 0 || w > MAX_WINDOW {
            bail!("{name} must be 1 ..= {MAX_WINDOW} bytes");
        }
    }
    match &spec.workload {
        Workload::Requests { burst, .. } | Workload::Users { burst, .. } if *burst > 1 => {
            bail!("--burst-length does not apply to --http2: streams are concurrent, use --max-concurrent-streams")
        }
        Workload::Sessions { .. } | Workload::SessionLog { .. } => {
            bail!("--wsess and --wsesslog are not supported with --http2 (use --num-conns/--num-calls or --users)")
        }
        _ => {}
    }
    if spec.verify_root.is_some() {
        bail!("--verify-root is not supported with --http2");
    }
    if spec.print_reply.any() || spec.print_request.any() {
        bail!("--print-request and --print-reply are not supported with --http2");
    }
    if spec.calibrate || spec.calibrate_only {
        bail!(
            "--calibrate measures the HTTP/1.1 engine against an HTTP/1.1 sink: not with --http2"
        );
    }
    if spec.http_version != "1.1" {
        bail!("--http-version does not apply to --http2");
    }
    Ok(())
}

/// HTTP/2 counters of one worker (see `httplab_model::Http2Summary`).
#[derive(Debug, Default, Clone)]
pub(crate) struct H2Stats {
    pub connections: u64,
    pub streams_started: u64,
    pub streams_completed: u64,
    pub streams_failed: u64,
    pub rst: [u64; 15],
    pub goaway_conns: u64,
    pub goaway_reasons: [u64; 15],
    pub failed_connections: u64,
    pub first_error: Option<String>,
}

impl H2Stats {
    pub fn merge(&mut self, o: &H2Stats) {
        self.connections += o.connections;
        self.streams_started += o.streams_started;
        self.streams_completed += o.streams_completed;
        self.streams_failed += o.streams_failed;
        for i in 0..self.rst.len() {
            self.rst[i] += o.rst[i];
            self.goaway_reasons[i] += o.goaway_reasons[i];
        }
        self.goaway_conns += o.goaway_conns;
        self.failed_connections += o.failed_connections;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }

    fn failed(&mut self, why: impl FnOnce() -> String) {
        self.failed_connections += 1;
        if self.first_error.is_none() {
            self.first_error = Some(why());
        }
    }

    /// The summary for `RunResult::http2`.
    pub fn summary(&self, spec: &LoadSpec, h: &Http2Spec) -> httplab_model::Http2Summary {
        let named = |a: &[u64; 15]| -> BTreeMap<String, u64> {
            a.iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (REASONS[i].to_string(), *n))
                .collect()
        };
        httplab_model::Http2Summary {
            cleartext: spec.tls.is_none(),
            max_concurrent_streams: h.max_concurrent_streams,
            stream_window: h.stream_window,
            conn_window: h.conn_window,
            connections: self.connections,
            streams_started: self.streams_started,
            streams_completed: self.streams_completed,
            streams_failed: self.streams_failed,
            rst_stream_received: named(&self.rst),
            goaway_received: self.goaway_conns,
            goaway_reasons: named(&self.goaway_reasons),
            failed_connections: self.failed_connections,
            first_error: self.first_error.clone(),
        }
    }
}

// ---------------------------------------------------------------- transport

/// Byte counts and the frame tap of one connection, shared between the
/// connection's I/O (polled by h2's connection task) and its streams.
#[derive(Debug)]
struct TapState {
    sent: u64,
    recv: u64,
    tap: FrameTap,
}

type Tap = Arc<Mutex<TapState>>;

fn lock(t: &Tap) -> std::sync::MutexGuard<'_, TapState> {
    match t.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Cleartext or TLS under h2, counting HTTP/2 bytes (before encryption, as
/// the HTTP/1.1 path counts HTTP bytes) and tapping frame headers.
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

struct Tapped {
    io: Io,
    tap: Tap,
}

impl AsyncRead for Tapped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = r {
            let got = &buf.filled()[before..];
            if !got.is_empty() {
                let mut t = lock(&self.tap);
                t.recv += got.len() as u64;
                t.tap.feed(got);
            }
        }
        r
    }
}

impl AsyncWrite for Tapped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        if let Poll::Ready(Ok(n)) = r {
            lock(&self.tap).sent += n as u64;
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

// ---------------------------------------------------------------- requests

/// A request prepared once per distinct path.
struct ReqTmpl {
    uri: http::Uri,
}

fn authority(spec: &LoadSpec) -> String {
    if let Some(h) = &spec.host_header {
        return h.clone();
    }
    let host = if spec.server.contains(':') && !spec.server.starts_with('[') {
        format!("[{}]", spec.server)
    } else {
        spec.server.clone()
    };
    format!("{host}:{}", spec.port)
}

/// Header fields HTTP/2 forbids (RFC 9113, 8.2.2) or carries as pseudo-headers.
fn forbidden(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "upgrade"
            | "te"
    )
}

fn headers(spec: &LoadSpec) -> Result<http::HeaderMap> {
    let mut h = http::HeaderMap::new();
    let ua = format!("httplab/{}", env!("CARGO_PKG_VERSION"));
    h.insert(
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&ua).map_err(|e| anyhow!("user-agent: {e}"))?,
    );
    for line in &spec.headers {
        let Some((n, v)) = line.split_once(':') else {
            bail!("--add-header '{line}' is not 'Name: value'");
        };
        let n = n.trim().to_ascii_lowercase();
        if forbidden(&n) {
            continue;
        }
        let name = http::HeaderName::from_bytes(n.as_bytes())
            .map_err(|_| anyhow!("--add-header '{line}': not a valid header name"))?;
        let value = http::HeaderValue::from_str(v.trim())
            .map_err(|_| anyhow!("--add-header '{line}': not a valid header value"))?;
        h.append(name, value);
    }
    if let Some(b) = &spec.body {
        h.insert(
            http::header::CONTENT_LENGTH,
            http::HeaderValue::from(b.len()),
        );
    }
    Ok(h)
}

// ---------------------------------------------------------------- the worker

fn dur(s: f64) -> Duration {
    if s.is_finite() {
        Duration::from_secs_f64(s.clamp(0.0, 1e9))
    } else {
        Duration::ZERO
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Statistics of one thread: the window's, the warm-up's, and the interval part.
struct Acc {
    st: WorkerStats,
    warm: WorkerStats,
    part: IntervalPart,
    ihist: Histogram<u64>,
    open_conns: u64,
    /// Streams in flight that were scheduled in the window / in all.
    inflight_measured: u64,
    inflight: u64,
}

impl Acc {
    fn of(&mut self, measured: bool) -> &mut WorkerStats {
        if measured {
            &mut self.st
        } else {
            &mut self.warm
        }
    }
}

struct W<'a> {
    ctx: &'a WorkerCtx<'a>,
    h2: &'a Http2Spec,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    reqs: Vec<ReqTmpl>,
    method: http::Method,
    headers: http::HeaderMap,
    body: Option<Bytes>,
    acc: RefCell<Acc>,
    win: Instant,
    end_at: Option<Instant>,
    timeout: Option<Duration>,
    reply_timeout: Option<Duration>,
    /// `--max-response-time`.
    max_resp: Option<Duration>,
    lag_threshold_us: u64,
    setup_now: Cell<u64>,
    setup_freed: tokio::sync::Notify,
    local_next: Cell<usize>,
    /// Set when the drain after --duration or Ctrl-C gives up: sessions stop.
    over: Cell<bool>,
}

/// One HTTP/2 connection in use by a session.
struct Conn {
    send: h2::client::SendRequest<Bytes>,
    tap: Tap,
    driver: tokio::task::JoinHandle<std::result::Result<(), h2::Error>>,
    start: Instant,
    measured: bool,
    in_setup: Cell<bool>,
    /// Bytes already counted from the tap.
    counted: Cell<(u64, u64)>,
    replies: Cell<u64>,
}

/// How a stream ended.
enum StreamEnd {
    Ok,
    /// Failed (reset, lost, timed out): counted as an error; `conn_lost`:
    /// the connection is gone with it.
    Failed {
        conn_lost: bool,
    },
    /// Not processed by the server (GOAWAY, REFUSED_STREAM): the call may
    /// be made again on a new connection.
    Refused,
}

/// Runs one worker thread's share of an HTTP/2 run.
pub(crate) fn run_worker(ctx: &WorkerCtx<'_>, h2: &Http2Spec) -> io::Result<WorkerStats> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let w = W::new(ctx, h2).map_err(|e| io::Error::other(format!("{e:#}")))?;
    rt.block_on(w.run())
}

impl<'a> W<'a> {
    fn new(ctx: &'a WorkerCtx<'a>, h2: &'a Http2Spec) -> Result<W<'a>> {
        let spec = ctx.spec;
        let scheme = if spec.tls.is_some() { "https" } else { "http" };
        let auth = authority(spec);
        let mut reqs = Vec::with_capacity(ctx.plan.requests.len());
        for r in &ctx.plan.requests {
            let uri = http::Uri::builder()
                .scheme(scheme)
                .authority(auth.as_str())
                .path_and_query(r.path.as_str())
                .build()
                .map_err(|e| anyhow!("request target '{}{}': {e}", auth, r.path))?;
            reqs.push(ReqTmpl { uri });
        }
        let method = http::Method::from_bytes(spec.method.as_bytes())
            .map_err(|_| anyhow!("--method '{}' is not a valid method", spec.method))?;
        let tls = ctx.tls.map(|c| {
            let mut cfg = (*c.for_worker()).clone();
            // h2 first; http/1.1 too, so a server without h2 says what it chose.
            cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            (
                tokio_rustls::TlsConnector::from(Arc::new(cfg)),
                c.name.clone(),
            )
        });
        let mut st = WorkerStats::new();
        st.keep_raw(spec.raw_latencies.is_some());
        let win = ctx.t0 + dur(spec.warmup);
        Ok(W {
            ctx,
            h2,
            tls,
            reqs,
            method,
            headers: headers(spec)?,
            body: spec.body.clone().map(Bytes::from),
            acc: RefCell::new(Acc {
                st,
                warm: WorkerStats::new(),
                part: IntervalPart::default(),
                ihist: interval_hist(),
                open_conns: 0,
                inflight_measured: 0,
                inflight: 0,
            }),
            win,
            end_at: spec.duration.map(|d| win + dur(d)),
            timeout: spec.timeout.map(dur),
            reply_timeout: spec.timeout.map(|t| dur(t + spec.think_timeout)),
            max_resp: spec.max_response_time.map(dur),
            lag_threshold_us: (spec.lag_threshold * 1e6) as u64,
            setup_now: Cell::new(0),
            setup_freed: tokio::sync::Notify::new(),
            local_next: Cell::new(ctx.thread as usize),
            over: Cell::new(false),
        })
    }

    fn acc(&self) -> RefMut<'_, Acc> {
        self.acc.borrow_mut()
    }

    fn stopped(&self) -> bool {
        self.over.get() || self.ctx.stop.load(Ordering::Relaxed)
    }

    fn record_lag(&self, measured: bool, lag: u64) {
        let mut a = self.acc();
        let st = a.of(measured);
        rec(&mut st.lag, lag);
        if lag > self.lag_threshold_us {
            st.late_starts += 1;
        }
    }

    /// The main loop: arrivals, interval ticks, the drain, the sessions.
    async fn run(self) -> io::Result<WorkerStats> {
        let ctx = self.ctx;
        let plan = ctx.plan;
        let spec = ctx.spec;
        let t0 = ctx.t0;
        let lane = plan.lane(ctx.thread, ctx.threads);
        let (mut schedule, concurrency) = match plan.arrival {
            Arrival::Open(d) => (Some(Schedule::lane(d, lane.0, lane.1, spec.seed)), 0),
            Arrival::Concurrent(k) => (None, share_lane(k, lane)),
        };
        let mut sessions_left = if plan.is_users {
            Some(concurrency)
        } else {
            plan.sessions_total.map(|n| share_lane(n, lane))
        };
        self.acc().st.planned_sessions = sessions_left.unwrap_or(0);
        // Precise wake-ups (arrivals, ticks, the drain): a timerfd in the reactor.
        let timer = sys::TimerFd::new()?.into_async()?;
        let mut timer_target: Option<Instant> = None;
        let interval = dur(spec.sample_interval);
        let mut interval_k = 0u64;
        let mut next_tick = self.win + interval;
        let mut cpu0 = None;
        let mut started_here = 0u64;
        let mut drain_until: Option<Instant> = None;
        let mut backlogged = false;
        let mut sessions = FuturesUnordered::new();
        let now = Instant::now();
        if t0 > now {
            tokio::time::sleep_until(t0.into()).await;
            while Instant::now() < t0 {
                std::hint::spin_loop();
            }
        }
        if self.win <= t0 {
            cpu0 = Some(sys::thread_cpu());
        }
        let next_arrival = |started_here: &mut u64| {
            let a = lane.0.saturating_add(lane.1.saturating_mul(*started_here));
            *started_here += 1;
            a
        };
        if schedule.is_none() {
            let now = Instant::now();
            let mut started = 0;
            while started < concurrency
                && sessions_left != Some(0)
                && self.end_at.map_or(true, |e| now < e)
            {
                if let Some(n) = sessions_left.as_mut() {
                    *n -= 1;
                }
                let a = next_arrival(&mut started_here);
                sessions.push(self.session(a, t0));
                started += 1;
            }
            let mut acc = self.acc();
            acc.st.max_burst = acc.st.max_burst.max(started);
        }
        loop {
            let now = Instant::now();
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            if cpu0.is_none() && now >= self.win {
                cpu0 = Some(sys::thread_cpu());
            }
            while now >= next_tick {
                self.flush_interval(interval_k, interval.as_secs_f64());
                interval_k += 1;
                next_tick = self.win + interval * ((interval_k + 1) as u32);
            }
            // Open-loop arrivals due now.
            let mut burst = 0u64;
            while let Some(sched) = schedule.as_mut() {
                let at = t0 + dur(sched.peek());
                if at > now {
                    backlogged = false;
                    break;
                }
                if sessions_left == Some(0) || self.end_at.is_some_and(|e| at >= e) {
                    schedule = None;
                    break;
                }
                let measured = at >= self.win;
                if self.setup_now.get() >= ctx.setup_cap {
                    if !backlogged {
                        backlogged = true;
                        self.acc().of(measured).setup_capped += 1;
                    }
                    break;
                }
                sched.advance();
                if let Some(n) = sessions_left.as_mut() {
                    *n = n.saturating_sub(1);
                }
                let lag = us(now.saturating_duration_since(at));
                if backlogged {
                    let mut a = self.acc();
                    rec(&mut a.of(measured).setup_wait, lag);
                    if self
                        .timeout
                        .is_some_and(|t| now.saturating_duration_since(at) > t)
                    {
                        let st = a.of(measured);
                        st.sessions.started += 1;
                        st.sessions.failed += 1;
                        st.not_attempted += 1;
                        st.error(ErrClass::ClientTimo);
                        if measured {
                            a.part.errors += 1;
                        }
                        started_here += 1;
                        continue;
                    }
                } else {
                    self.record_lag(measured, lag);
                }
                burst += 1;
                let a = next_arrival(&mut started_here);
                sessions.push(self.session(a, at));
            }
            {
                let mut a = self.acc();
                a.st.max_burst = a.st.max_burst.max(burst);
            }
            if let Some(e) = self.end_at {
                if now >= e && drain_until.is_none() {
                    let grace = self.reply_timeout.unwrap_or(Duration::from_secs(10));
                    drain_until = Some(e + grace);
                    schedule = None;
                }
            }
            if drain_until.is_some_and(|d| now >= d) {
                break;
            }
            if sessions.is_empty() && schedule.is_none() {
                break;
            }
            // Sleep until the next thing to do (or a session progresses).
            let mut next = next_tick.min(now + Duration::from_millis(50));
            if let Some(s) = &schedule {
                if self.setup_now.get() < ctx.setup_cap {
                    next = next.min(t0 + dur(s.peek()));
                }
            }
            if let Some(d) = drain_until {
                next = next.min(d);
            }
            if cpu0.is_none() {
                next = next.min(self.win);
            }
            if timer_target != Some(next) {
                timer
                    .get_ref()
                    .arm(next.saturating_duration_since(Instant::now()))?;
                timer_target = Some(next);
            }
            tokio::select! {
                biased;
                g = timer.readable() => {
                    if let Ok(mut g) = g {
                        g.get_inner().drain();
                        g.clear_ready();
                    }
                    timer_target = None;
                }
                Some(()) = sessions.next(), if !sessions.is_empty() => {
                    // Sequential httperf runs: the next connection when one ends.
                    let now = Instant::now();
                    if matches!(plan.arrival, Arrival::Concurrent(_))
                        && !plan.is_users
                        && sessions_left != Some(0)
                        && self.end_at.map_or(true, |e| now < e)
                        && !self.stopped()
                    {
                        if let Some(n) = sessions_left.as_mut() {
                            *n -= 1;
                        }
                        let a = next_arrival(&mut started_here);
                        sessions.push(self.session(a, now));
                    }
                }
                _ = self.setup_freed.notified() => {}
            }
        }
        // Give up on what is still running (Ctrl-C, or the drain expired).
        let interrupted = ctx.stop.load(Ordering::Relaxed);
        self.over.set(true);
        {
            let mut a = self.acc();
            if interrupted {
                a.st.abandoned += a.inflight;
            } else {
                let n = a.inflight_measured;
                for _ in 0..n {
                    a.st.error(ErrClass::ClientTimo);
                }
                a.st.h2.streams_failed += n;
                a.part.errors += n;
            }
            a.inflight = 0;
            a.inflight_measured = 0;
        }
        drop(sessions);
        let end = Instant::now();
        let k_start = self.win + interval * (interval_k as u32);
        let part_len = end.saturating_duration_since(k_start).as_secs_f64();
        if end > self.win && (part_len > 0.0 || self.acc().part.replies > 0) {
            self.flush_interval(interval_k, part_len.max(1e-9));
        }
        ctx.collector.thread_finished();
        let mut acc = self.acc.into_inner();
        if let Some((c0, u0, s0)) = cpu0 {
            let (c1, u1, s1) = sys::thread_cpu();
            let total = (c1 - c0).max(0.0);
            let (du, ds) = ((u1 - u0).max(0.0), (s1 - s0).max(0.0));
            let user = if du + ds > 0.0 {
                total * du / (du + ds)
            } else {
                total
            };
            acc.st.cpu_user = user;
            acc.st.cpu_sys = total - user;
        }
        acc.st.end_s = end.saturating_duration_since(t0).as_secs_f64();
        Ok(acc.st)
    }

    fn flush_interval(&self, k: u64, len_s: f64) {
        let mut a = self.acc();
        let mut part = std::mem::take(&mut a.part);
        part.len_s = len_s;
        part.open = a.open_conns;
        self.ctx.collector.report(k, part, &a.ihist);
        a.ihist.reset();
    }

    fn local_addr(&self) -> Option<IpAddr> {
        let la = self.ctx.local_addrs;
        if la.is_empty() {
            return None;
        }
        let i = self.local_next.get();
        self.local_next.set(i.wrapping_add(1));
        Some(la[i % la.len()])
    }

    fn setup_done(&self, c: &Conn) {
        if c.in_setup.replace(false) {
            self.setup_now.set(self.setup_now.get().saturating_sub(1));
            self.setup_freed.notify_one();
        }
    }

    /// Opens a connection: TCP, TLS (ALPN h2), the HTTP/2 preface. On
    /// failure the error is counted here and its class returned.
    async fn connect(&self, measured: bool) -> std::result::Result<Conn, ErrClass> {
        let spec = self.ctx.spec;
        let addr = self.ctx.addr;
        let now = Instant::now();
        {
            let mut a = self.acc();
            let st = a.of(measured);
            st.connections += 1;
            st.sessions.connections += 1;
            if measured {
                a.part.connections += 1;
                if a.st.first_s.is_none() {
                    a.st.first_s = Some(now.saturating_duration_since(self.ctx.t0).as_secs_f64());
                }
            }
        }
        self.setup_now.set(self.setup_now.get() + 1);
        let guard = SetupGuard(self);
        let r = self.open(addr, spec, measured, now).await;
        match r {
            Ok((send, tap, driver)) => {
                std::mem::forget(guard);
                let mut a = self.acc();
                a.open_conns += 1;
                if now >= self.win {
                    a.st.max_open = a.st.max_open.max(a.open_conns);
                }
                Ok(Conn {
                    send,
                    tap,
                    driver,
                    start: now,
                    measured,
                    in_setup: Cell::new(true),
                    counted: Cell::new((0, 0)),
                    replies: Cell::new(0),
                })
            }
            Err(class) => {
                drop(guard);
                let mut a = self.acc();
                a.of(measured).error(class);
                if measured {
                    a.part.errors += 1;
                }
                Err(class)
            }
        }
    }

    async fn open(
        &self,
        addr: SocketAddr,
        spec: &LoadSpec,
        measured: bool,
        start: Instant,
    ) -> std::result::Result<
        (
            h2::client::SendRequest<Bytes>,
            Tap,
            tokio::task::JoinHandle<std::result::Result<(), h2::Error>>,
        ),
        ErrClass,
    > {
        let deadline = self.timeout.map(|t| start + t);
        let sock = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| ErrClass::from_io(&e))?;
        if let Some(n) = spec.send_buffer {
            let _ = sock.set_send_buffer_size(n.min(u32::MAX as usize) as u32);
        }
        if let Some(n) = spec.recv_buffer {
            let _ = sock.set_recv_buffer_size(n.min(u32::MAX as usize) as u32);
        }
        if let Some(ip) = self.local_addr() {
            let _ = sys::set_bind_no_port(sock.as_raw_fd());
            sock.bind(SocketAddr::new(ip, 0))
                .map_err(|e| ErrClass::from_io(&e))?;
        }
        let stream = with_deadline(deadline, sock.connect(addr))
            .await
            .ok_or(ErrClass::ClientTimo)?
            .map_err(|e| ErrClass::from_io(&e))?;
        let _ = stream.set_nodelay(true);
        let connected = Instant::now();
        rec(
            &mut self.acc().of(measured).connect,
            us(connected.saturating_duration_since(start)),
        );
        let io = match &self.tls {
            None => Io::Plain(stream),
            Some((connector, name)) => {
                let hs = connector.connect(name.clone(), stream);
                let r = with_deadline(deadline, hs).await;
                let mut a = self.acc();
                let st = a.of(measured);
                let tls = match r {
                    None => {
                        st.tls.failed(|| {
                            "the TLS handshake did not complete within --timeout".into()
                        });
                        return Err(ErrClass::ClientTimo);
                    }
                    Some(Err(e)) => {
                        let why = tls_error_words(&e);
                        let rustls_err =
                            e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
                        let class = if rustls_err.is_some() {
                            ErrClass::Other
                        } else {
                            ErrClass::from_io(&e)
                        };
                        if matches!(
                            rustls_err,
                            Some(rustls::Error::AlertReceived(
                                rustls::AlertDescription::NoApplicationProtocol
                            ))
                        ) {
                            st.h2.failed(|| {
                                "server refused h2: no ALPN protocol in common (alert no_application_protocol)".into()
                            });
                        }
                        st.tls.failed(|| why);
                        return Err(class);
                    }
                    Some(Ok(t)) => t,
                };
                let now = Instant::now();
                let c = tls.get_ref().1;
                let t = &mut st.tls;
                rec(
                    &mut t.handshake,
                    us(now.saturating_duration_since(connected)),
                );
                if c.handshake_kind() == Some(HandshakeKind::Resumed) {
                    t.resumed += 1;
                } else {
                    t.full += 1;
                }
                if let Some(v) = c.protocol_version().and_then(|v| v.as_str()) {
                    *t.versions.entry(v).or_default() += 1;
                }
                if let Some(s) = c.negotiated_cipher_suite().and_then(|c| c.suite().as_str()) {
                    *t.suites.entry(s).or_default() += 1;
                }
                let alpn = c
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned());
                *t.alpn
                    .entry(alpn.clone().unwrap_or_else(|| "none".into()))
                    .or_default() += 1;
                if alpn.as_deref() != Some("h2") {
                    st.h2.failed(|| match &alpn {
                        Some(p) => format!("server refused h2: ALPN chose {p}"),
                        None => "server refused h2: it chose no ALPN protocol (no HTTP/2 over TLS)"
                            .into(),
                    });
                    return Err(ErrClass::Other);
                }
                Io::Tls(Box::new(tls))
            }
        };
        let tap: Tap = Arc::new(Mutex::new(TapState {
            sent: 0,
            recv: 0,
            tap: FrameTap::new(),
        }));
        let io = Tapped {
            io,
            tap: tap.clone(),
        };
        let mut b = h2::client::Builder::new();
        b.initial_window_size(self.h2.stream_window)
            .initial_connection_window_size(self.h2.conn_window)
            .max_concurrent_streams(100)
            .enable_push(false);
        let hs = with_deadline(deadline, b.handshake::<_, Bytes>(io)).await;
        let (send, conn) = match hs {
            None => return Err(ErrClass::ClientTimo),
            Some(Err(e)) => return Err(h2_class(&e)),
            Some(Ok(x)) => x,
        };
        let driver = tokio::spawn(conn);
        Ok((send, tap, driver))
    }

    /// One session: an open-loop connection's calls, a sequential
    /// connection, or a closed-loop user (reconnecting as needed).
    async fn session(&self, arrival: u64, sched: Instant) {
        let ctx = self.ctx;
        let plan = ctx.plan;
        let spec = ctx.spec;
        let m = self.h2.max_concurrent_streams as usize;
        let users = plan.is_users;
        let sess_measured = sched >= self.win;
        {
            let mut a = self.acc();
            a.of(sess_measured).sessions.started += 1;
        }
        let (total, think) = match plan.shape {
            Shape::Calls { total, think, .. } => (total, think),
            Shape::Log { .. } => (1, 0.0),
        };
        // Calls per connection: a user with --num-calls closes after that many.
        let per_conn = match (users, plan.user_group) {
            (true, Some(g)) if plan.close_after_group => g,
            _ => u64::MAX,
        };
        let group = if users { plan.user_group } else { None };
        let reconnect = users || spec.reconnect;
        let mut pace = plan.pace.map(|(d, n)| {
            Schedule::new(
                d,
                arrival.min(u64::from(u32::MAX)) as u32,
                n.clamp(1, u64::from(u32::MAX)) as u32,
                spec.seed,
            )
        });
        let mut todo = total; // calls not yet made successfully or failed
        let mut k = 0u64; // call index (path rotation)
        let mut replies = 0u64;
        let mut failed = false;
        let mut ready_at = sched; // intended instant of the next unpaced call
        let mut grp_start = sched;
        let mut grp_replies = 0u64;
        let mut last_ok = sched;
        'conns: while todo > 0 && !self.stopped() {
            let now = Instant::now();
            if k > 0 && self.end_at.is_some_and(|e| now >= e) {
                break;
            }
            let conn_measured = if users {
                ready_at.max(sched) >= self.win
            } else {
                sess_measured
            };
            let conn = match self.connect(conn_measured).await {
                Ok(c) => c,
                Err(_) => {
                    tokio::task::yield_now().await;
                    if users {
                        // The user's next request goes on a new connection.
                        todo -= 1;
                        k += 1;
                        ready_at = Instant::now() + dur(think);
                        if think > 0.0 {
                            tokio::time::sleep_until(ready_at.into()).await;
                        }
                        continue;
                    }
                    failed = true;
                    break;
                }
            };
            let mut inflight = FuturesUnordered::new();
            let mut on_conn = 0u64;
            let mut dead = false;
            loop {
                // Start what may start now.
                let mut wait_until: Option<Instant> = None;
                while !dead
                    && inflight.len() < m
                    && todo > inflight.len() as u64
                    && on_conn < per_conn
                    && !self.stopped()
                {
                    let now = Instant::now();
                    let intended = match &pace {
                        Some(p) => ctx.t0 + dur(p.peek()),
                        None => ready_at,
                    };
                    if k > 0 && self.end_at.is_some_and(|e| intended >= e || now >= e) {
                        todo = inflight.len() as u64;
                        break;
                    }
                    if intended > now {
                        wait_until = Some(intended);
                        break;
                    }
                    if let Some(p) = pace.as_mut() {
                        p.advance();
                    }
                    let measured = if users {
                        intended >= self.win
                    } else {
                        sess_measured
                    };
                    if users && grp_replies == 0 && inflight.is_empty() {
                        grp_start = intended;
                    }
                    let r = plan.req_for(plan.call(0, k, 0), arrival, k, 0);
                    k += 1;
                    on_conn += 1;
                    inflight.push(self.stream(&conn, r as usize, intended, measured));
                }
                if inflight.is_empty() {
                    match wait_until {
                        Some(t) if !dead => {
                            tokio::time::sleep_until(t.into()).await;
                            let lag = us(Instant::now().saturating_duration_since(t));
                            self.record_lag(t >= self.win, lag);
                            // Pace: the send is due now; unpaced: think time over.
                            continue;
                        }
                        _ => break,
                    }
                }
                let end = match wait_until {
                    Some(t) if !dead => {
                        tokio::select! {
                            r = inflight.next() => r,
                            _ = tokio::time::sleep_until(t.into()) => {
                                let lag = us(Instant::now().saturating_duration_since(t));
                                self.record_lag(t >= self.win, lag);
                                continue;
                            }
                        }
                    }
                    _ => inflight.next().await,
                };
                let Some(end) = end else { break };
                let now = Instant::now();
                match end {
                    StreamEnd::Ok => {
                        todo -= 1;
                        replies += 1;
                        last_ok = now;
                        ready_at = if think > 0.0 { now + dur(think) } else { now };
                        if let Some(g) = group {
                            grp_replies += 1;
                            if grp_replies >= g {
                                let mut a = self.acc();
                                let gm = grp_start >= self.win;
                                rec(
                                    &mut a.of(gm).session,
                                    us(now.saturating_duration_since(grp_start)),
                                );
                                grp_replies = 0;
                            }
                        }
                    }
                    StreamEnd::Failed { conn_lost } => {
                        // A reset stream is one failed call; a lost
                        // connection fails a request-oriented session.
                        todo -= 1;
                        grp_replies = 0;
                        ready_at = now;
                        if conn_lost || conn.driver.is_finished() {
                            dead = true;
                            if !users && !spec.reconnect {
                                failed = true;
                            }
                        }
                    }
                    StreamEnd::Refused => {
                        dead = true;
                        ready_at = now;
                    }
                }
            }
            drop(inflight);
            let got = conn.replies.get();
            self.close(conn).await;
            if failed {
                break 'conns;
            }
            if dead && got == 0 && todo > 0 {
                // Refused without serving anything: a failure, not a reason
                // to reconnect at once (no busy loop against such a server).
                let cm = if users {
                    ready_at >= self.win
                } else {
                    sess_measured
                };
                {
                    let mut a = self.acc();
                    a.of(cm).error(ErrClass::ConnReset);
                    if cm {
                        a.part.errors += 1;
                    }
                }
                if !users {
                    failed = true;
                    break 'conns;
                }
                todo -= 1;
                tokio::task::yield_now().await;
                continue;
            }
            if todo > 0 && dead && !reconnect {
                // httperf: the server ended the connection; its calls are not made.
                self.acc().of(sess_measured).unsent_calls += todo;
                break;
            }
        }
        // Session end.
        let now = Instant::now();
        let mut a = self.acc();
        let st = a.of(sess_measured);
        let life = now.saturating_duration_since(sched).as_secs_f64();
        let complete = !failed && !users && replies >= total;
        if complete {
            rec(
                &mut st.session,
                us(last_ok.saturating_duration_since(sched)),
            );
        }
        let ss = &mut st.sessions;
        if failed {
            ss.failed += 1;
            ss.failtime_sum_s += life;
        } else {
            ss.completed += 1;
            ss.lifetime_sum_s += life;
        }
        let n = replies as usize;
        if ss.length_histogram.len() <= n {
            ss.length_histogram.resize(n + 1, 0);
        }
        ss.length_histogram[n] += 1;
        if sess_measured && !failed {
            a.part.sessions_done += 1;
        }
    }

    /// Closes a connection (gracefully: dropping the last handle ends the
    /// h2 connection) and counts what its tap saw.
    async fn close(&self, conn: Conn) {
        self.setup_done(&conn);
        let Conn {
            send,
            tap,
            driver,
            start,
            measured,
            counted,
            replies,
            ..
        } = conn;
        drop(send);
        let mut driver = driver;
        if tokio::time::timeout(Duration::from_millis(100), &mut driver)
            .await
            .is_err()
        {
            driver.abort();
        }
        let t = lock(&tap);
        let (s0, r0) = counted.get();
        let mut a = self.acc();
        a.open_conns = a.open_conns.saturating_sub(1);
        if measured {
            a.part.bytes_in += t.recv - r0;
        }
        let st = a.of(measured);
        st.bytes_sent += t.sent - s0;
        st.bytes_recv += t.recv - r0;
        let c = &t.tap.counts;
        for i in 0..c.rst.len() {
            st.h2.rst[i] += c.rst[i];
        }
        if c.goaway > 0 {
            st.h2.goaway_conns += 1;
            st.h2.goaway_reasons[reason_index(c.goaway_reason)] += 1;
        }
        if c.spoke_h2 {
            st.h2.connections += 1;
        } else if let Some(line) = c.http1_line() {
            st.h2.failed(|| format!("not an HTTP/2 server: got '{line}' (an HTTP/1.x answer to the h2c preface; use TLS with ALPN, or drop --http2)"));
        } else if replies.get() == 0 {
            st.h2
                .failed(|| "the server did not speak HTTP/2 (no SETTINGS frame)".into());
        }
        if replies.get() > 0 {
            rec(
                &mut st.lifetime,
                us(Instant::now().saturating_duration_since(start)),
            );
            st.conns_ok += 1;
        }
    }

    /// Moves the tap's byte counts into the statistics (called as streams end).
    fn count_bytes(&self, conn: &Conn, measured: bool) {
        let (sent, recv) = {
            let t = lock(&conn.tap);
            (t.sent, t.recv)
        };
        let (s0, r0) = conn.counted.replace((sent, recv));
        let mut a = self.acc();
        if measured {
            a.part.bytes_in += recv - r0;
        }
        let st = a.of(conn.measured);
        st.bytes_sent += sent - s0;
        st.bytes_recv += recv - r0;
    }

    /// One stream: request out, response head and body in; records the reply.
    async fn stream(
        &self,
        conn: &Conn,
        req: usize,
        intended: Instant,
        measured: bool,
    ) -> StreamEnd {
        let sent = Instant::now();
        {
            let mut a = self.acc();
            a.inflight += 1;
            if measured {
                a.inflight_measured += 1;
                a.part.requests += 1;
            }
            let st = a.of(measured);
            st.requests += 1;
            st.h2.streams_started += 1;
        }
        // --timeout bounds the whole stream here; --max-response-time too,
        // with its own class when it is the nearer limit.
        let timeo = self.reply_timeout.map(|t| sent + t);
        let limit = self.max_resp.map(|t| sent + t);
        let (deadline, late_class) = match (timeo, limit) {
            (Some(a), Some(b)) if b < a => (Some(b), ErrClass::ResponseTimo),
            (None, Some(b)) => (Some(b), ErrClass::ResponseTimo),
            (a, _) => (a, ErrClass::ClientTimo),
        };
        let r = with_deadline(deadline, self.exchange(conn, req)).await;
        let now = Instant::now();
        self.count_bytes(conn, measured);
        let mut a = self.acc();
        a.inflight = a.inflight.saturating_sub(1);
        if measured {
            a.inflight_measured = a.inflight_measured.saturating_sub(1);
        }
        let r = match r {
            None => Err(Fail::Class(late_class, false)),
            Some(r) => r,
        };
        match r {
            Ok(x) => {
                drop(a);
                self.setup_done(conn);
                conn.replies.set(conn.replies.get() + 1);
                let mut a = self.acc();
                if measured {
                    a.part.replies += 1;
                }
                let total_unc = us(now.saturating_duration_since(x.sent));
                if measured {
                    rec(&mut a.ihist, total_unc);
                }
                let st = a.of(measured);
                st.h2.streams_completed += 1;
                st.replies += 1;
                let class = (x.status / 100) as usize;
                if (1..=5).contains(&class) {
                    st.status[class - 1] += 1;
                }
                st.header_bytes += x.header_bytes;
                st.body_bytes += x.body_bytes;
                st.body_received += x.body_bytes;
                st.bytes_expected += x.content_length.unwrap_or(x.body_bytes);
                let resp_us = us(x.first.saturating_duration_since(x.sent));
                st.response_sum_us += resp_us as f64;
                st.transfer_sum_us += us(now.saturating_duration_since(x.first)) as f64;
                rec(&mut st.first_byte, resp_us);
                rec(&mut st.response_unc, total_unc);
                st.record_response(us(now.saturating_duration_since(intended)));
                StreamEnd::Ok
            }
            Err(Fail::Refused) => {
                // Not processed by the server (GOAWAY, REFUSED_STREAM): made again.
                let st = a.of(measured);
                st.requests = st.requests.saturating_sub(1);
                st.h2.streams_started = st.h2.streams_started.saturating_sub(1);
                if measured {
                    a.part.requests = a.part.requests.saturating_sub(1);
                }
                StreamEnd::Refused
            }
            Err(Fail::Class(class, conn_lost)) => {
                let st = a.of(measured);
                st.error(class);
                st.h2.streams_failed += 1;
                if measured {
                    a.part.errors += 1;
                }
                StreamEnd::Failed { conn_lost }
            }
        }
    }

    /// The request/response exchange of one stream. A stream the server did
    /// not process comes back as `ConnRefused` (see [`StreamEnd::Refused`]).
    async fn exchange(&self, conn: &Conn, req: usize) -> std::result::Result<Exchange, Fail> {
        let t = &self.reqs[req];
        let mut rq = http::Request::new(());
        *rq.method_mut() = self.method.clone();
        *rq.uri_mut() = t.uri.clone();
        *rq.headers_mut() = self.headers.clone();
        let mut send = conn.send.clone();
        std::future::poll_fn(|cx| send.poll_ready(cx))
            .await
            .map_err(|e| stream_class(&e))?;
        // Sent now: a wait above for a stream slot (the server's
        // SETTINGS_MAX_CONCURRENT_STREAMS) counts only in the corrected latency.
        let sent = Instant::now();
        let end = self.body.is_none();
        let (resp, mut out) = send.send_request(rq, end).map_err(|e| stream_class(&e))?;
        if let Some(b) = &self.body {
            out.send_data(b.clone(), true)
                .map_err(|e| stream_class(&e))?;
        }
        let resp = resp.await.map_err(|e| stream_class(&e))?;
        let first = Instant::now();
        let status = resp.status().as_u16();
        let header_bytes: u64 = resp
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().len() + v.len() + 4) as u64)
            .sum::<u64>()
            + 13; // ":status: NNN\r\n"
        let content_length = resp
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let mut body = resp.into_body();
        let mut body_bytes = 0u64;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| stream_class(&e))?;
            body_bytes += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok(Exchange {
            sent,
            first,
            status,
            header_bytes,
            body_bytes,
            content_length,
        })
    }
}

struct Exchange {
    sent: Instant,
    first: Instant,
    status: u16,
    header_bytes: u64,
    body_bytes: u64,
    content_length: Option<u64>,
}

/// Releases a setup slot when a connection attempt is abandoned or fails.
struct SetupGuard<'w, 'a>(&'w W<'a>);

impl Drop for SetupGuard<'_, '_> {
    fn drop(&mut self) {
        let w = self.0;
        w.setup_now.set(w.setup_now.get().saturating_sub(1));
        w.setup_freed.notify_one();
    }
}

async fn with_deadline<F: std::future::Future>(d: Option<Instant>, f: F) -> Option<F::Output> {
    match d {
        Some(d) => tokio::time::timeout_at(d.into(), f).await.ok(),
        None => Some(f.await),
    }
}

/// Error class of a connection-level h2 failure.
fn h2_class(e: &h2::Error) -> ErrClass {
    match e.get_io() {
        Some(io) => ErrClass::from_io(io),
        None => ErrClass::Other,
    }
}

/// Why a stream failed.
enum Fail {
    /// Counted as an error of this class; true: the connection failed too.
    Class(ErrClass, bool),
    /// The server did not process it (GOAWAY past its last stream,
    /// REFUSED_STREAM): the call is made again on a new connection.
    Refused,
}

fn stream_class(e: &h2::Error) -> Fail {
    if let Some(io) = e.get_io() {
        return Fail::Class(ErrClass::from_io(io), true);
    }
    let refused = e.reason() == Some(h2::Reason::REFUSED_STREAM)
        || (e.is_go_away() && e.is_remote() && e.reason() == Some(h2::Reason::NO_ERROR));
    if refused {
        Fail::Refused
    } else {
        // A stream reset is the stream's; a GOAWAY with an error (ours or
        // the server's) ends the connection.
        Fail::Class(ErrClass::Other, e.is_go_away())
    }
}

fn tls_error_words(e: &io::Error) -> String {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(r) => crate::tls::describe_error(r),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                "the server closed the connection during the TLS handshake".into()
            }
            _ => format!("TLS handshake failed: {e}"),
        },
    }
}

/// The report's `HTTP/2:` block (nothing for HTTP/1.1 runs).
pub(crate) fn render_block(o: &mut String, r: &httplab_model::RunResult) {
    use std::fmt::Write as _;
    let Some(h) = &r.http2 else { return };
    let counts = |m: &BTreeMap<String, u64>| -> String {
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
        "HTTP/2 streams: started {} completed {} failed {}",
        h.streams_started, h.streams_completed, h.streams_failed
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_is_the_host_header_or_server_and_port() {
        let mut s = LoadSpec::new("127.0.0.1", 8443);
        assert_eq!(authority(&s), "127.0.0.1:8443");
        s.server = "::1".into();
        assert_eq!(authority(&s), "[::1]:8443");
        s.host_header = Some("example.org".into());
        assert_eq!(authority(&s), "example.org");
    }

    #[test]
    fn headers_drop_what_http2_forbids_and_refuse_bad_ones() {
        let mut s = LoadSpec::new("h", 80);
        s.headers = vec![
            "Connection: keep-alive".into(),
            "Host: other".into(),
            "X-Test: 1".into(),
            "Accept-Encoding: gzip".into(),
        ];
        s.body = Some(b"abc".to_vec());
        let h = headers(&s).unwrap();
        assert!(h.get("connection").is_none());
        assert!(h.get("host").is_none());
        assert_eq!(h.get("x-test").unwrap(), "1");
        assert_eq!(h.get("accept-encoding").unwrap(), "gzip");
        assert_eq!(h.get("content-length").unwrap(), "3");
        assert!(h.get("user-agent").is_some());
        s.headers = vec!["no colon here".into()];
        assert!(headers(&s).is_err());
        s.headers = vec!["Bad Name: x".into()];
        assert!(headers(&s).is_err());
    }

    #[test]
    fn refused_streams_are_made_again_and_resets_are_errors() {
        assert!(matches!(
            stream_class(&h2::Error::from(h2::Reason::REFUSED_STREAM)),
            Fail::Refused
        ));
        assert!(matches!(
            stream_class(&h2::Error::from(h2::Reason::CANCEL)),
            Fail::Class(ErrClass::Other, false)
        ));
    }

    #[test]
    fn validate_refuses_what_the_driver_does_not_do() {
        let h = Http2Spec::default();
        let mut s = LoadSpec::new("h", 80);
        assert!(validate(&s, &h).is_ok());
        s.verify_root = Some("/".into());
        assert!(validate(&s, &h).is_err());
        let s = LoadSpec::new("h", 80);
        let bad = Http2Spec {
            stream_window: MAX_WINDOW + 1,
            ..Http2Spec::default()
        };
        assert!(validate(&s, &bad).is_err());
    }

    #[test]
    fn summary_names_reasons() {
        let mut st = H2Stats::default();
        st.rst[8] = 3;
        st.goaway_conns = 1;
        st.goaway_reasons[0] = 1;
        let mut o = H2Stats::default();
        o.merge(&st);
        o.merge(&st);
        let spec = LoadSpec::new("h", 80);
        let sum = o.summary(&spec, &Http2Spec::default());
        assert_eq!(sum.rst_stream_received.get("CANCEL"), Some(&6));
        assert_eq!(sum.goaway_received, 2);
        assert_eq!(sum.goaway_reasons.get("NO_ERROR"), Some(&2));
        assert!(sum.cleartext);
    }
}
