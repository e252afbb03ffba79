//! Per-thread counters and histograms, the interval collector shared by the
//! threads, and the merge into [`httplab_model::RunResult`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use httplab_model::{Interval, StatusClasses};

use crate::h2proto::REASONS;
use crate::spec::{Http2Spec, Http3Spec, LoadSpec};

/// Histogram of microseconds, 1 µs .. 1 h, 3 significant digits.
pub(crate) fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds are valid")
}

/// Coarser histogram for per-interval percentiles (2 significant digits).
pub(crate) fn interval_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("constant histogram bounds are valid")
}

/// Records `us` (clamped to the histogram's range).
#[inline]
pub(crate) fn rec(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.max(1));
}

/// Error classes, by index: httperf's seven, then httplab's named ones.
/// The named protocol faults (`BadStatusLine` .. `TlsHandshake`) are parts
/// of httperf's `other` in the report, so httperf's totals stay comparable;
/// `ResponseTimo` is a class of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrClass {
    ClientTimo,
    SocketTimo,
    ConnRefused,
    ConnReset,
    FdUnavail,
    AddrUnavail,
    /// A fault with no better name (kept for httperf's `other`).
    Other,
    /// The reply was not complete within --max-response-time of its request.
    ResponseTimo,
    /// The status line is not HTTP/1.x (garbage, bad version, no code).
    BadStatusLine,
    /// A header line is malformed (bad or conflicting Content-Length ...).
    BadHeader,
    /// The head is larger than the parser's limit or has too many fields.
    HeadersTooLarge,
    /// Chunked framing is broken.
    BadChunk,
    /// Bytes beyond the reply's framing (more than Content-Length, data
    /// with no request outstanding).
    BodyOverrun,
    /// The connection ended inside the reply's framing (a cut chunk).
    Truncated,
    /// The TLS layer failed (handshake refused, certificate, bad record).
    Tls,
}

/// Number of [`ErrClass`] values.
pub(crate) const ERR_CLASSES: usize = 15;

/// The error classes in `ErrClass` order, as the metrics' `class` label.
/// The names are `Errors`' field names in the result JSON.
pub(crate) const ERR_KEYS: [&str; ERR_CLASSES] = [
    "client_timo",
    "socket_timo",
    "connrefused",
    "connreset",
    "fd_unavail",
    "addrunavail",
    "other",
    "response_timo",
    "bad_status_line",
    "bad_header",
    "headers_too_large",
    "bad_chunk",
    "body_overrun",
    "truncated",
    "tls",
];

/// Pairs an interval's counts by class with their keys.
pub(crate) fn errors_by_key(counts: &[u64; ERR_CLASSES]) -> [(&'static str, u64); ERR_CLASSES] {
    let mut out = [("", 0); ERR_CLASSES];
    for (i, (k, n)) in ERR_KEYS.iter().zip(counts).enumerate() {
        out[i] = (k, *n);
    }
    out
}

impl ErrClass {
    /// The class in words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            ErrClass::ClientTimo => "no answer within --timeout",
            ErrClass::SocketTimo => "the kernel timed the connection out",
            ErrClass::ConnRefused => "connection refused",
            ErrClass::ConnReset => "the server closed or reset the connection",
            ErrClass::FdUnavail => "out of file descriptors",
            ErrClass::AddrUnavail => "out of local ports",
            ErrClass::Other => "protocol error",
            ErrClass::ResponseTimo => "reply not complete within --max-response-time",
            ErrClass::BadStatusLine => "bad status line",
            ErrClass::BadHeader => "malformed header",
            ErrClass::HeadersTooLarge => "response head too large",
            ErrClass::BadChunk => "bad chunked framing",
            ErrClass::BodyOverrun => "bytes beyond the reply's framing",
            ErrClass::Truncated => "connection closed inside the reply's framing",
            ErrClass::Tls => "TLS failure",
        }
    }

    /// The class of a response parser error.
    pub fn from_response(e: httplab_wire::response::ResponseError) -> ErrClass {
        use httplab_wire::response::ResponseError as E;
        match e {
            E::BadStatusLine(_) => ErrClass::BadStatusLine,
            E::Malformed(_) => ErrClass::BadHeader,
            E::HeadTooLarge => ErrClass::HeadersTooLarge,
            E::BadChunk(_) => ErrClass::BadChunk,
            E::Truncated => ErrClass::Truncated,
            E::Unexpected => ErrClass::BodyOverrun,
        }
    }

    pub fn from_io(e: &std::io::Error) -> ErrClass {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrClass::ConnRefused,
            Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => {
                ErrClass::ConnReset
            }
            Some(libc::ETIMEDOUT) => ErrClass::SocketTimo,
            Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) => ErrClass::FdUnavail,
            Some(libc::EADDRNOTAVAIL) | Some(libc::EADDRINUSE) => ErrClass::AddrUnavail,
            _ => match e.kind() {
                std::io::ErrorKind::ConnectionRefused => ErrClass::ConnRefused,
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => {
                    ErrClass::ConnReset
                }
                std::io::ErrorKind::TimedOut => ErrClass::SocketTimo,
                _ => ErrClass::Other,
            },
        }
    }
}

/// Session statistics (httperf's session block), recorded in the JSON as
/// `config.facts.session_stats`.
pub use httplab_model::SessionStats;

/// Everything one worker thread measured.
#[derive(Debug)]
pub(crate) struct WorkerStats {
    pub connections: u64,
    pub conns_ok: u64,
    pub requests: u64,
    pub replies: u64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub status: StatusClasses,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub footer_bytes: u64,
    pub response_sum_us: f64,
    pub transfer_sum_us: f64,
    pub errors: [u64; ERR_CLASSES],
    pub max_open: u64,
    pub max_burst: u64,
    pub late_starts: u64,
    pub bytes_expected: u64,
    pub body_received: u64,
    pub framing_errors: u64,
    pub verified: u64,
    pub mismatches: u64,
    pub abandoned: u64,
    pub planned_sessions: u64,
    pub connect: Histogram<u64>,
    pub first_byte: Histogram<u64>,
    pub response: Histogram<u64>,
    pub response_unc: Histogram<u64>,
    pub lifetime: Histogram<u64>,
    pub lag: Histogram<u64>,
    /// Session time (see `Latencies::session`).
    pub session: Histogram<u64>,
    /// Calls not made because the server closed their connection (no --reconnect).
    pub unsent_calls: u64,
    /// HTTP/1.1 calls the server closed their connection on without
    /// answering (behind a `Connection: close` reply, or crossing an idle
    /// close), made again on a new connection: not counted as requests sent
    /// until they are (HTTP/2 counts its own in `h2.streams.retried`).
    pub retried_calls: u64,
    pub cpu_user: f64,
    pub cpu_sys: f64,
    /// Seconds from t0 to this thread's last event.
    pub end_s: f64,
    /// Seconds from t0 to this thread's first connection.
    pub first_s: Option<f64>,
    pub sessions: SessionStats,
    pub port_exhausted: bool,
    pub fd_exhausted: bool,
    /// `--latency-dump`: every corrected response time, µs (None: not kept).
    pub raw: Option<Vec<u64>>,
    /// HTTPS runs: what the TLS layer did.
    pub tls: TlsStats,
    /// Open-loop arrivals that waited for a connection slot (the setup cap):
    /// how long after their scheduled time they started.
    pub setup_wait: Histogram<u64>,
    /// Times the setup cap held the schedule back.
    pub setup_capped: u64,
    /// Arrivals dropped after waiting longer than --timeout for a slot.
    pub not_attempted: u64,
    /// `--http2` runs: what the HTTP/2 layer did.
    pub h2: H2Stats,
    /// `--http3` runs: what the QUIC and HTTP/3 layers did.
    pub h3: H3Stats,
    /// `--stages`: each stage's statistics (empty without stages).
    pub stages: Vec<crate::stages::StageStats>,
}

/// TLS counters of one worker (see `httplab_model::TlsSummary`).
#[derive(Debug)]
pub(crate) struct TlsStats {
    pub handshake: Histogram<u64>,
    pub full: u64,
    pub resumed: u64,
    pub failures: u64,
    /// Keys are rustls' static names: counting allocates only a map node per new key.
    pub versions: BTreeMap<&'static str, u64>,
    pub suites: BTreeMap<&'static str, u64>,
    pub alpn: BTreeMap<String, u64>,
    pub first_error: Option<String>,
}

impl TlsStats {
    pub fn new() -> TlsStats {
        TlsStats {
            handshake: hist(),
            full: 0,
            resumed: 0,
            failures: 0,
            versions: BTreeMap::new(),
            suites: BTreeMap::new(),
            alpn: BTreeMap::new(),
            first_error: None,
        }
    }

    /// Counts a failed handshake; `why` is called for the first one only.
    pub fn failed(&mut self, why: impl FnOnce() -> String) {
        self.failures += 1;
        if self.first_error.is_none() {
            self.first_error = Some(why());
        }
    }

    pub fn merge(&mut self, o: &TlsStats) {
        let _ = self.handshake.add(&o.handshake);
        self.full += o.full;
        self.resumed += o.resumed;
        self.failures += o.failures;
        for (k, v) in &o.versions {
            *self.versions.entry(k).or_default() += v;
        }
        for (k, v) in &o.suites {
            *self.suites.entry(k).or_default() += v;
        }
        for (k, v) in &o.alpn {
            *self.alpn.entry(k.clone()).or_default() += v;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }
}

impl WorkerStats {
    pub fn new() -> WorkerStats {
        WorkerStats {
            connections: 0,
            conns_ok: 0,
            requests: 0,
            replies: 0,
            bytes_sent: 0,
            bytes_recv: 0,
            status: StatusClasses::default(),
            header_bytes: 0,
            body_bytes: 0,
            footer_bytes: 0,
            response_sum_us: 0.0,
            transfer_sum_us: 0.0,
            errors: [0; ERR_CLASSES],
            max_open: 0,
            max_burst: 0,
            late_starts: 0,
            bytes_expected: 0,
            body_received: 0,
            framing_errors: 0,
            verified: 0,
            mismatches: 0,
            abandoned: 0,
            planned_sessions: 0,
            connect: hist(),
            first_byte: hist(),
            response: hist(),
            response_unc: hist(),
            lifetime: hist(),
            lag: hist(),
            session: hist(),
            unsent_calls: 0,
            retried_calls: 0,
            cpu_user: 0.0,
            cpu_sys: 0.0,
            end_s: 0.0,
            first_s: None,
            sessions: SessionStats::default(),
            port_exhausted: false,
            fd_exhausted: false,
            raw: None,
            tls: TlsStats::new(),
            setup_wait: hist(),
            setup_capped: 0,
            not_attempted: 0,
            h2: H2Stats::default(),
            h3: H3Stats::new(),
            stages: Vec::new(),
        }
    }

    /// Keeps every corrected response time as well (`--latency-dump`, a
    /// debugging and testing aid: it grows by 8 bytes per reply).
    pub fn keep_raw(&mut self, on: bool) {
        self.raw = on.then(Vec::new);
    }

    /// Records a corrected response time (µs) in the histogram, and in the
    /// raw list when kept, with the value the histogram got.
    pub fn record_response(&mut self, us: u64) {
        rec(&mut self.response, us);
        if let Some(r) = self.raw.as_mut() {
            r.push(us.max(1));
        }
    }

    pub fn error(&mut self, c: ErrClass) {
        self.errors[c as usize] += 1;
        match c {
            ErrClass::FdUnavail => self.fd_exhausted = true,
            ErrClass::AddrUnavail => self.port_exhausted = true,
            _ => {}
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &WorkerStats) {
        crate::stages::merge_all(&mut self.stages, &o.stages);
        self.connections += o.connections;
        self.conns_ok += o.conns_ok;
        self.requests += o.requests;
        self.replies += o.replies;
        self.bytes_sent += o.bytes_sent;
        self.bytes_recv += o.bytes_recv;
        self.status = self.status.add(&o.status);
        self.header_bytes += o.header_bytes;
        self.body_bytes += o.body_bytes;
        self.footer_bytes += o.footer_bytes;
        self.response_sum_us += o.response_sum_us;
        self.transfer_sum_us += o.transfer_sum_us;
        for i in 0..ERR_CLASSES {
            self.errors[i] += o.errors[i];
        }
        self.max_open += o.max_open;
        self.max_burst = self.max_burst.max(o.max_burst);
        self.late_starts += o.late_starts;
        self.bytes_expected += o.bytes_expected;
        self.body_received += o.body_received;
        self.framing_errors += o.framing_errors;
        self.verified += o.verified;
        self.mismatches += o.mismatches;
        self.abandoned += o.abandoned;
        self.planned_sessions += o.planned_sessions;
        let _ = self.connect.add(&o.connect);
        let _ = self.first_byte.add(&o.first_byte);
        let _ = self.response.add(&o.response);
        let _ = self.response_unc.add(&o.response_unc);
        let _ = self.lifetime.add(&o.lifetime);
        let _ = self.lag.add(&o.lag);
        let _ = self.session.add(&o.session);
        if let Some(r) = &o.raw {
            self.raw.get_or_insert_with(Vec::new).extend_from_slice(r);
        }
        self.unsent_calls += o.unsent_calls;
        self.retried_calls += o.retried_calls;
        self.tls.merge(&o.tls);
        let _ = self.setup_wait.add(&o.setup_wait);
        self.setup_capped += o.setup_capped;
        self.not_attempted += o.not_attempted;
        self.h2.merge(&o.h2);
        self.h3.merge(&o.h3);
        self.cpu_user += o.cpu_user;
        self.cpu_sys += o.cpu_sys;
        self.end_s = self.end_s.max(o.end_s);
        self.first_s = match (self.first_s, o.first_s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let s = &mut self.sessions;
        let t = &o.sessions;
        s.started += t.started;
        s.completed += t.completed;
        s.failed += t.failed;
        s.connections += t.connections;
        s.lifetime_sum_s += t.lifetime_sum_s;
        s.failtime_sum_s += t.failtime_sum_s;
        if s.length_histogram.len() < t.length_histogram.len() {
            s.length_histogram.resize(t.length_histogram.len(), 0);
        }
        for (i, v) in t.length_histogram.iter().enumerate() {
            s.length_histogram[i] += v;
        }
        self.port_exhausted |= o.port_exhausted;
        self.fd_exhausted |= o.fd_exhausted;
    }
}

/// One thread's contribution to one interval.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IntervalPart {
    pub connections: u64,
    pub requests: u64,
    pub replies: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub open: u64,
    pub sessions_done: u64,
    /// Length of this part, seconds (shorter for a final partial interval).
    pub len_s: f64,
    /// `errors` by class (index: `ErrClass as usize`), for the live metrics.
    pub errors_by: [u64; ERR_CLASSES],
}

struct Pending {
    part: IntervalPart,
    hist: Histogram<u64>,
    reports: u32,
}

struct Inner {
    threads: u32,
    finished: u32,
    interval_s: f64,
    pending: BTreeMap<u64, Pending>,
    done: Vec<(Interval, u64)>,
    cumulative: Histogram<u64>,
    sent: u64,
    replies: u64,
    errors: u64,
    /// Where finished intervals are published (`--prometheus`).
    live: Option<httplab_live::LoadLive>,
}

/// Gathers every thread's intervals; finalises an interval once every live
/// thread reported it, so memory stays bounded however long the run.
pub(crate) struct Collector {
    inner: Mutex<Inner>,
}

/// What the live progress line shows.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Progress {
    pub sent: u64,
    pub replies: u64,
    pub errors: u64,
    pub last_rate: f64,
    pub p99_ms: f64,
}

impl Collector {
    pub fn new(threads: u32, interval_s: f64) -> Collector {
        Collector {
            inner: Mutex::new(Inner {
                threads,
                finished: 0,
                interval_s,
                pending: BTreeMap::new(),
                done: Vec::new(),
                cumulative: interval_hist(),
                sent: 0,
                replies: 0,
                errors: 0,
                live: None,
            }),
        }
    }

    /// Publishes every finished interval to `live` too (once per interval,
    /// under the collector's lock: nothing per request).
    pub fn publish_to(self, live: Option<httplab_live::LoadLive>) -> Collector {
        self.lock().live = live;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Thread reports interval `k`.
    pub fn report(&self, k: u64, part: IntervalPart, h: &Histogram<u64>) {
        let mut g = self.lock();
        g.sent += part.requests;
        g.replies += part.replies;
        g.errors += part.errors;
        let _ = g.cumulative.add(h);
        let e = g.pending.entry(k).or_insert_with(|| Pending {
            part: IntervalPart::default(),
            hist: interval_hist(),
            reports: 0,
        });
        e.part.connections += part.connections;
        e.part.requests += part.requests;
        e.part.replies += part.replies;
        e.part.errors += part.errors;
        e.part.bytes_in += part.bytes_in;
        e.part.open += part.open;
        e.part.sessions_done += part.sessions_done;
        e.part.len_s = e.part.len_s.max(part.len_s);
        for (sum, n) in e.part.errors_by.iter_mut().zip(part.errors_by) {
            *sum += n;
        }
        let _ = e.hist.add(h);
        e.reports += 1;
        Self::finalize(&mut g, false);
    }

    /// Thread is done reporting.
    pub fn thread_finished(&self) {
        let mut g = self.lock();
        g.finished += 1;
        Self::finalize(&mut g, false);
    }

    fn finalize(g: &mut Inner, all: bool) {
        let need = g.threads.saturating_sub(g.finished);
        let ready: Vec<u64> = g
            .pending
            .iter()
            .take_while(|(_, p)| all || p.reports >= need)
            .map(|(k, _)| *k)
            .collect();
        for k in ready {
            if let Some(p) = g.pending.remove(&k) {
                let len = if p.part.len_s > 0.0 {
                    p.part.len_s
                } else {
                    g.interval_s
                };
                let q = |x: f64| {
                    if p.hist.is_empty() {
                        0.0
                    } else {
                        p.hist.value_at_quantile(x) as f64 / 1000.0
                    }
                };
                let iv = Interval {
                    t_s: k as f64 * g.interval_s + len,
                    len_s: len,
                    connections: p.part.connections,
                    requests: p.part.requests,
                    replies: p.part.replies,
                    errors: p.part.errors,
                    bytes_in: p.part.bytes_in,
                    reply_rate: p.part.replies as f64 / len,
                    p50_ms: q(0.5),
                    p99_ms: q(0.99),
                    open_connections: p.part.open,
                };
                if let Some(live) = &g.live {
                    live.interval(&iv, &errors_by_key(&p.part.errors_by));
                }
                g.done.push((iv, p.part.sessions_done));
            }
        }
    }

    pub fn progress(&self) -> Progress {
        let g = self.lock();
        Progress {
            sent: g.sent,
            replies: g.replies,
            errors: g.errors,
            last_rate: g.done.last().map_or(0.0, |(i, _)| i.reply_rate),
            p99_ms: if g.cumulative.is_empty() {
                0.0
            } else {
                g.cumulative.value_at_quantile(0.99) as f64 / 1000.0
            },
        }
    }

    /// All intervals in order, with completed sessions per interval.
    pub fn finish(&self) -> Vec<(Interval, u64)> {
        let mut g = self.lock();
        Self::finalize(&mut g, true);
        let mut v = std::mem::take(&mut g.done);
        v.sort_by(|a, b| a.0.t_s.total_cmp(&b.0.t_s));
        v
    }
}

/// Streams of one worker (`--http2`, `--http3`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StreamCounts {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// HTTP/2: calls the server did not process, made again.
    pub retried: u64,
}

impl StreamCounts {
    pub fn merge(&mut self, o: &StreamCounts) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        self.retried += o.retried;
    }
}

/// HTTP/2 counters of one worker (see `httplab_model::Http2Summary`).
#[derive(Debug, Default, Clone)]
pub(crate) struct H2Stats {
    pub connections: u64,
    pub streams: StreamCounts,
    pub rst: [u64; 15],
    pub goaway_conns: u64,
    pub goaway_reasons: [u64; 15],
    pub failed_connections: u64,
    pub first_error: Option<String>,
}

impl H2Stats {
    pub fn merge(&mut self, o: &H2Stats) {
        self.connections += o.connections;
        self.streams.merge(&o.streams);
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

    pub fn failed(&mut self, why: impl FnOnce() -> String) {
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
            streams_started: self.streams.started,
            streams_completed: self.streams.completed,
            streams_failed: self.streams.failed,
            streams_retried: self.streams.retried,
            rst_stream_received: named(&self.rst),
            goaway_received: self.goaway_conns,
            goaway_reasons: named(&self.goaway_reasons),
            failed_connections: self.failed_connections,
            first_error: self.first_error.clone(),
        }
    }
}

/// How the server closed an HTTP/3 connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PeerClose {
    /// CONNECTION_CLOSE with a QUIC transport error code.
    Transport(u64),
    /// CONNECTION_CLOSE with an application (HTTP/3) error code.
    Application(u64),
    /// A stateless reset.
    StatelessReset,
}

impl PeerClose {
    /// The code's name (`PROTOCOL_VIOLATION`, `CRYPTO_ERROR(0x2a, TLS alert BadCertificate)`,
    /// `H3_INTERNAL_ERROR`, `STATELESS_RESET`; unknown codes in hex).
    pub fn name(&self) -> String {
        match *self {
            PeerClose::Transport(c) => transport_code_name(c),
            PeerClose::Application(c) => h3_code_name(c),
            PeerClose::StatelessReset => "STATELESS_RESET".into(),
        }
    }
}

/// An HTTP/3 error code's name (`H3_INTERNAL_ERROR`, or its hex value).
pub(crate) fn h3_code_name(code: u64) -> String {
    h3::error::Code::from(code).to_string()
}

/// A QUIC transport error code's name (`PROTOCOL_VIOLATION`, `CRYPTO_ERROR(0x2a, TLS alert BadCertificate)`).
pub(crate) fn transport_code_name(code: u64) -> String {
    if (0x100..0x200).contains(&code) {
        // The TLS alert the server's handshake raised (RFC 9001, 4.8).
        let alert = rustls::AlertDescription::from((code & 0xff) as u8);
        return format!("CRYPTO_ERROR(0x{:02x}, TLS alert {alert:?})", code & 0xff);
    }
    match TRANSPORT_CODES.get(code as usize) {
        Some(n) if code <= 0x10 => (*n).into(),
        _ => format!("{code:#x}"),
    }
}

/// QUIC transport error codes 0x00 ..= 0x10 (RFC 9000, 20.1).
const TRANSPORT_CODES: [&str; 17] = [
    "NO_ERROR",
    "INTERNAL_ERROR",
    "CONNECTION_REFUSED",
    "FLOW_CONTROL_ERROR",
    "STREAM_LIMIT_ERROR",
    "STREAM_STATE_ERROR",
    "FINAL_SIZE_ERROR",
    "FRAME_ENCODING_ERROR",
    "TRANSPORT_PARAMETER_ERROR",
    "CONNECTION_ID_LIMIT_ERROR",
    "PROTOCOL_VIOLATION",
    "INVALID_TOKEN",
    "APPLICATION_ERROR",
    "CRYPTO_BUFFER_EXCEEDED",
    "KEY_UPDATE_ERROR",
    "AEAD_LIMIT_REACHED",
    "NO_VIABLE_PATH",
];

/// HTTP/3 counters of one worker (see `httplab_model::Http3Summary`).
#[derive(Debug, Clone)]
pub(crate) struct H3Stats {
    pub connections: u64,
    pub streams: StreamCounts,
    /// QUIC handshake times, µs.
    pub handshake: Histogram<u64>,
    pub handshakes_1rtt: u64,
    pub handshakes_0rtt: u64,
    pub handshake_failed: u64,
    pub version_negotiation: u64,
    /// Connections closed by the server, by how.
    pub closed_by_peer: BTreeMap<PeerClose, u64>,
    /// Streams reset by the server, by HTTP/3 error code.
    pub stream_reset: BTreeMap<u64, u64>,
    pub idle_timeout: u64,
    pub protocol_error: u64,
    pub lost_packets: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub failed_connections: u64,
    pub first_error: Option<String>,
}

impl H3Stats {
    pub fn new() -> H3Stats {
        H3Stats {
            connections: 0,
            streams: StreamCounts::default(),
            handshake: hist(),
            handshakes_1rtt: 0,
            handshakes_0rtt: 0,
            handshake_failed: 0,
            version_negotiation: 0,
            closed_by_peer: BTreeMap::new(),
            stream_reset: BTreeMap::new(),
            idle_timeout: 0,
            protocol_error: 0,
            lost_packets: 0,
            datagrams_sent: 0,
            datagrams_received: 0,
            failed_connections: 0,
            first_error: None,
        }
    }

    pub fn merge(&mut self, o: &H3Stats) {
        self.connections += o.connections;
        self.streams.merge(&o.streams);
        let _ = self.handshake.add(&o.handshake);
        self.handshakes_1rtt += o.handshakes_1rtt;
        self.handshakes_0rtt += o.handshakes_0rtt;
        self.handshake_failed += o.handshake_failed;
        self.version_negotiation += o.version_negotiation;
        for (k, v) in &o.closed_by_peer {
            *self.closed_by_peer.entry(*k).or_default() += v;
        }
        for (k, v) in &o.stream_reset {
            *self.stream_reset.entry(*k).or_default() += v;
        }
        self.idle_timeout += o.idle_timeout;
        self.protocol_error += o.protocol_error;
        self.lost_packets += o.lost_packets;
        self.datagrams_sent += o.datagrams_sent;
        self.datagrams_received += o.datagrams_received;
        self.failed_connections += o.failed_connections;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }

    /// A connection failed before speaking HTTP/3; `why` is called for the first one only.
    pub fn failed(&mut self, why: impl FnOnce() -> String) {
        self.failed_connections += 1;
        if self.first_error.is_none() {
            self.first_error = Some(why());
        }
    }

    /// The summary for `RunResult::http3`.
    pub fn summary(&self, h: &Http3Spec) -> httplab_model::Http3Summary {
        httplab_model::Http3Summary {
            max_concurrent_streams: h.max_concurrent_streams,
            connections: self.connections,
            streams_started: self.streams.started,
            streams_completed: self.streams.completed,
            streams_failed: self.streams.failed,
            handshake: httplab_model::Latency::from_histogram(&self.handshake),
            handshakes_1rtt: self.handshakes_1rtt,
            handshakes_0rtt: self.handshakes_0rtt,
            errors: httplab_model::Http3Errors {
                handshake_failed: self.handshake_failed,
                version_negotiation: self.version_negotiation,
                closed_by_peer: self
                    .closed_by_peer
                    .iter()
                    .map(|(k, n)| (k.name(), *n))
                    .collect(),
                stream_reset: self
                    .stream_reset
                    .iter()
                    .map(|(k, n)| (h3_code_name(*k), *n))
                    .collect(),
                idle_timeout: self.idle_timeout,
                protocol_error: self.protocol_error,
            },
            lost_packets: self.lost_packets,
            datagrams_sent: self.datagrams_sent,
            datagrams_received: self.datagrams_received,
            failed_connections: self.failed_connections,
            first_error: self.first_error.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_class_order() {
        assert_eq!(ERR_KEYS[ErrClass::ClientTimo as usize], "client_timo");
        assert_eq!(ERR_KEYS[ErrClass::ConnReset as usize], "connreset");
        assert_eq!(ERR_KEYS[ErrClass::ResponseTimo as usize], "response_timo");
        assert_eq!(ERR_KEYS[ErrClass::Tls as usize], "tls");
        let mut c = [0; ERR_CLASSES];
        c[ErrClass::BadChunk as usize] = 3;
        assert!(errors_by_key(&c).contains(&("bad_chunk", 3)));
    }

    fn part(replies: u64, len_s: f64) -> IntervalPart {
        IntervalPart {
            connections: 1,
            requests: replies,
            replies,
            errors: 0,
            bytes_in: 10 * replies,
            open: 2,
            sessions_done: 0,
            len_s,
            errors_by: [0; ERR_CLASSES],
        }
    }

    #[test]
    fn collector_merges_threads_and_finalises_in_order() {
        let c = Collector::new(2, 1.0);
        let mut h1 = interval_hist();
        let mut h2 = interval_hist();
        for v in [1000u64, 2000, 3000] {
            rec(&mut h1, v);
        }
        rec(&mut h2, 100_000);
        c.report(0, part(3, 1.0), &h1);
        // Interval 0 waits for the second thread.
        assert_eq!(c.progress().replies, 3);
        c.report(0, part(1, 1.0), &h2);
        c.report(1, part(5, 0.5), &h1);
        c.thread_finished();
        c.thread_finished();
        let s = c.finish();
        assert_eq!(s.len(), 2);
        let (i0, _) = s[0];
        assert_eq!((i0.replies, i0.connections, i0.open_connections), (4, 2, 4));
        assert_eq!(i0.reply_rate, 4.0);
        assert_eq!(i0.t_s, 1.0);
        // p99 of {1,2,3,100} ms is the 100 ms sample (2 significant digits).
        assert!((i0.p99_ms - 100.0).abs() <= 1.0, "{}", i0.p99_ms);
        let (i1, _) = s[1];
        assert_eq!(i1.len_s, 0.5);
        assert_eq!(i1.reply_rate, 10.0);
        assert_eq!(i1.t_s, 1.5);
    }

    #[test]
    fn worker_stats_merge_adds_everything() {
        let mut a = WorkerStats::new();
        let mut b = WorkerStats::new();
        a.replies = 3;
        b.replies = 4;
        a.status.success = 3;
        b.status.client_error = 4;
        a.error(ErrClass::FdUnavail);
        b.error(ErrClass::ClientTimo);
        rec(&mut a.response, 500);
        rec(&mut b.response, 1500);
        b.sessions.length_histogram = vec![0, 2, 1];
        a.end_s = 1.0;
        b.end_s = 2.0;
        a.first_s = Some(0.2);
        b.first_s = Some(0.1);
        a.merge(&b);
        assert_eq!(a.replies, 7);
        assert_eq!(a.status.as_array(), [0, 3, 0, 4, 0]);
        assert_eq!(a.errors_total(), 2);
        assert!(a.fd_exhausted);
        assert_eq!(a.response.len(), 2);
        assert_eq!(a.response.max(), 1500);
        assert_eq!(a.sessions.length_histogram, vec![0, 2, 1]);
        assert_eq!((a.end_s, a.first_s), (2.0, Some(0.1)));
    }

    #[test]
    fn error_classes_from_errno() {
        let e = |n| ErrClass::from_io(&std::io::Error::from_raw_os_error(n));
        assert_eq!(e(libc::ECONNREFUSED), ErrClass::ConnRefused);
        assert_eq!(e(libc::ECONNRESET), ErrClass::ConnReset);
        assert_eq!(e(libc::EPIPE), ErrClass::ConnReset);
        assert_eq!(e(libc::ETIMEDOUT), ErrClass::SocketTimo);
        assert_eq!(e(libc::EMFILE), ErrClass::FdUnavail);
        assert_eq!(e(libc::EADDRNOTAVAIL), ErrClass::AddrUnavail);
        assert_eq!(e(libc::EINVAL), ErrClass::Other);
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

    #[test]
    fn h3_stats_merge_and_summarise() {
        let mut a = H3Stats::new();
        a.connections = 2;
        a.handshakes_1rtt = 2;
        rec(&mut a.handshake, 700);
        *a.closed_by_peer
            .entry(PeerClose::Application(0x102))
            .or_default() += 1;
        a.failed(|| "first".into());
        let mut b = H3Stats::new();
        b.merge(&a);
        b.merge(&a);
        b.failed(|| "second".into());
        let sum = b.summary(&Http3Spec::default());
        assert_eq!(sum.connections, 4);
        assert_eq!(sum.handshakes_1rtt, 4);
        assert_eq!(sum.handshake.count, 2);
        assert_eq!(sum.errors.closed_by_peer.get("H3_INTERNAL_ERROR"), Some(&2));
        assert_eq!(sum.failed_connections, 3);
        assert_eq!(sum.first_error.as_deref(), Some("first"));
    }
}
