//! The study's load driver: a small, bounded, blocking HTTP/1.1 client that
//! fills httplab's [`RunResult`] (httperf's blocks, latency histograms,
//! accuracy against the generated corpus, a self-check).
//!
//! It exists so the study does not depend on the in-process API of
//! `httplab-load`; every run is bounded in count and in time.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use httplab_model as m;

use crate::corpus::Expected;

/// Key under `RunConfig.extra`: mean time to complete all `num_calls` of a
/// session (connection), reconnections included, ms.
pub const EXTRA_SESSION_MS: &str = "session_ms_mean";

/// Connections the open-loop driver can have in flight at once (one thread each).
pub const OPEN_LOOP_SLOTS: u64 = 256;

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offer {
    /// `num_conns` connections at `rate` per second (None: back to back, one at a time).
    Open {
        /// Connections per second.
        rate: Option<f64>,
        /// Connections to open.
        num_conns: u64,
    },
    /// `users` each send `requests` requests, one after another.
    Closed {
        /// Simultaneous users.
        users: u64,
        /// Requests per user.
        requests: u64,
        /// Pause between a reply and the next request, ms.
        think_ms: f64,
    },
}

/// One run to do.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Label for the result.
    pub label: String,
    /// Server address.
    pub addr: SocketAddr,
    /// Paths requested in turn.
    pub uris: Vec<String>,
    /// Open or closed loop.
    pub offer: Offer,
    /// Requests per connection.
    pub num_calls: u64,
    /// Requests in flight per connection.
    pub pipeline: u32,
    /// Connect / reply timeout.
    pub timeout: Duration,
    /// Hard limit on the whole run.
    pub max_duration: Duration,
    /// Cores for the client threads (empty: not pinned).
    pub client_cores: Vec<usize>,
    /// Expected bodies by path.
    pub expected: Arc<HashMap<String, Expected>>,
    /// Set to stop early (Ctrl-C); the run reports what it did so far.
    pub stop: Arc<AtomicBool>,
}

#[derive(Clone)]
struct Local {
    connections: u64,
    requests: u64,
    replies: u64,
    bytes_sent: u64,
    bytes_received: u64,
    header_bytes: u64,
    content_bytes: u64,
    status: [u64; 5],
    errors: m::Errors,
    acc: m::Accuracy,
    requested_body: u64,
    intact_body: u64,
    conn_life_ms: Vec<f64>,
    session_ms: Vec<f64>,
    connect_sum_ms: f64,
    connect_n: u64,
    h_connect: Histogram<u64>,
    h_first: Histogram<u64>,
    h_resp: Histogram<u64>,
    h_resp_unc: Histogram<u64>,
    h_lag: Histogram<u64>,
    late: u64,
    /// Per second: (connections, requests, replies, errors, bytes_in)
    per_sec: Vec<[u64; 5]>,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds are valid")
}

impl Local {
    fn new() -> Local {
        Local {
            connections: 0,
            requests: 0,
            replies: 0,
            bytes_sent: 0,
            bytes_received: 0,
            header_bytes: 0,
            content_bytes: 0,
            status: [0; 5],
            errors: m::Errors::default(),
            acc: m::Accuracy::default(),
            requested_body: 0,
            intact_body: 0,
            conn_life_ms: Vec::new(),
            session_ms: Vec::new(),
            connect_sum_ms: 0.0,
            connect_n: 0,
            h_connect: hist(),
            h_first: hist(),
            h_resp: hist(),
            h_resp_unc: hist(),
            h_lag: hist(),
            late: 0,
            per_sec: Vec::new(),
        }
    }
    fn sec(&mut self, t0: Instant, col: usize, n: u64) {
        let s = t0.elapsed().as_secs() as usize;
        if self.per_sec.len() <= s {
            self.per_sec.resize(s + 1, [0; 5]);
        }
        self.per_sec[s][col] += n;
    }
    fn merge(&mut self, o: &Local) {
        self.connections += o.connections;
        self.requests += o.requests;
        self.replies += o.replies;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.header_bytes += o.header_bytes;
        self.content_bytes += o.content_bytes;
        for i in 0..5 {
            self.status[i] += o.status[i];
        }
        let (e, f) = (&mut self.errors, &o.errors);
        e.client_timo += f.client_timo;
        e.socket_timo += f.socket_timo;
        e.connrefused += f.connrefused;
        e.connreset += f.connreset;
        e.fd_unavail += f.fd_unavail;
        e.addrunavail += f.addrunavail;
        e.other += f.other;
        self.acc.bytes_expected += o.acc.bytes_expected;
        self.acc.bytes_received += o.acc.bytes_received;
        self.acc.framing_errors += o.acc.framing_errors;
        self.acc.verified += o.acc.verified;
        self.acc.mismatches += o.acc.mismatches;
        self.requested_body += o.requested_body;
        self.intact_body += o.intact_body;
        self.conn_life_ms.extend_from_slice(&o.conn_life_ms);
        self.session_ms.extend_from_slice(&o.session_ms);
        self.connect_sum_ms += o.connect_sum_ms;
        self.connect_n += o.connect_n;
        let _ = self.h_connect.add(&o.h_connect);
        let _ = self.h_first.add(&o.h_first);
        let _ = self.h_resp.add(&o.h_resp);
        let _ = self.h_resp_unc.add(&o.h_resp_unc);
        let _ = self.h_lag.add(&o.h_lag);
        self.late += o.late;
        if self.per_sec.len() < o.per_sec.len() {
            self.per_sec.resize(o.per_sec.len(), [0; 5]);
        }
        for (mine, row) in self.per_sec.iter_mut().zip(o.per_sec.iter()) {
            for (a, b) in mine.iter_mut().zip(row.iter()) {
                *a += b;
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Connect,
    Io,
}

fn classify(e: &io::Error, phase: Phase, errs: &mut m::Errors) {
    match e.raw_os_error() {
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            errs.fd_unavail += 1;
            return;
        }
        Some(libc::EADDRNOTAVAIL) => {
            errs.addrunavail += 1;
            return;
        }
        _ => {}
    }
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => match phase {
            Phase::Connect => errs.socket_timo += 1,
            Phase::Io => errs.client_timo += 1,
        },
        io::ErrorKind::ConnectionRefused => errs.connrefused += 1,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => errs.connreset += 1,
        _ => errs.other += 1,
    }
}

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    opened: Instant,
}

struct Reply {
    close: bool,
}

fn us(d: Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

impl Conn {
    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < 256 * 1024 {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "response head too large",
                ));
            }
        }
        let n = self.s.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Reads one response for `uri`; records into `l`.
    fn read_reply(
        &mut self,
        uri: &str,
        exp: Option<&Expected>,
        sent_at: Instant,
        sched: Instant,
        t0: Instant,
        l: &mut Local,
    ) -> io::Result<Reply> {
        // Head.
        let (status, head_len, clen, close) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&self.buf[self.start..self.end]) {
                Ok(httparse::Status::Complete(n)) => {
                    let status = resp.code.unwrap_or(0);
                    let mut clen = None;
                    let mut close = resp.version == Some(0);
                    let mut chunked = false;
                    for h in resp.headers.iter() {
                        if h.name.eq_ignore_ascii_case("content-length") {
                            clen = std::str::from_utf8(h.value)
                                .ok()
                                .and_then(|v| v.trim().parse::<u64>().ok());
                        } else if h.name.eq_ignore_ascii_case("connection") {
                            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                            if v.contains("close") {
                                close = true;
                            } else if v.contains("keep-alive") {
                                close = false;
                            }
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            chunked = true;
                        }
                    }
                    if chunked || (clen.is_none() && status != 204 && status != 304) {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "response without Content-Length",
                        ));
                    }
                    break (status, n, clen.unwrap_or(0), close);
                }
                Ok(httparse::Status::Partial) => {
                    if self.fill()? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "connection closed before a reply",
                        ));
                    }
                }
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("bad response: {e}"),
                    ))
                }
            }
        };
        let now = Instant::now();
        l.h_first.saturating_record(us(now - sent_at));
        self.start += head_len;
        l.header_bytes += head_len as u64;
        // Body.
        let verify = if status == 200 { exp } else { None };
        let mut got = 0u64;
        let mut intact = verify.is_some_and(|e| e.len() == clen);
        while got < clen {
            if self.start == self.end && self.fill()? == 0 {
                l.acc.framing_errors += 1;
                l.acc.bytes_received += got;
                l.bytes_received += got;
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "body cut short",
                ));
            }
            let take = ((clen - got) as usize).min(self.end - self.start);
            let chunk = &self.buf[self.start..self.start + take];
            if intact {
                if let Some(e) = verify {
                    intact = e.matches(got, chunk);
                }
            }
            got += take as u64;
            self.start += take;
            l.sec(t0, 4, take as u64);
        }
        let done = Instant::now();
        l.replies += 1;
        l.sec(t0, 2, 1);
        l.content_bytes += clen;
        l.bytes_received += head_len as u64 + clen;
        l.acc.bytes_expected += clen;
        l.acc.bytes_received += got;
        if (100..600).contains(&status) {
            l.status[(status / 100 - 1) as usize] += 1;
        }
        if let Some(e) = exp {
            l.acc.verified += 1;
            if status == 200 && intact {
                l.intact_body += e.len();
            } else {
                l.acc.mismatches += 1;
            }
        }
        l.h_resp.saturating_record(us(done - sched));
        l.h_resp_unc.saturating_record(us(done - sent_at));
        let _ = uri;
        Ok(Reply { close })
    }
}

struct Shared {
    plan: LoadPlan,
    t0: Instant,
    deadline: Instant,
    uri_next: AtomicU64,
    open: AtomicU64,
    max_open: AtomicU64,
    busy: AtomicU64,
    max_busy: AtomicU64,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.plan.stop.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }
    fn next_uri(&self) -> &str {
        let i = self.uri_next.fetch_add(1, Ordering::Relaxed) as usize;
        &self.plan.uris[i % self.plan.uris.len()]
    }
}

/// One connection's worth of calls (reconnecting when the server closes
/// after a reply, as a browser would). Returns false on an error.
fn session(sh: &Shared, calls: u64, sched: Instant, l: &mut Local) -> bool {
    let t = Instant::now();
    let ok = session_inner(sh, calls, sched, l);
    if ok && !sh.stopped() {
        l.session_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ok
}

fn session_inner(sh: &Shared, calls: u64, sched: Instant, l: &mut Local) -> bool {
    let p = &sh.plan;
    let mut remaining = calls;
    let mut sched = Some(sched);
    while remaining > 0 {
        if sh.stopped() {
            return true;
        }
        let c0 = Instant::now();
        if let Some(s) = sched {
            // How late this connection starts against the open-loop schedule.
            let lag = c0.saturating_duration_since(s);
            l.h_lag.saturating_record(us(lag));
            if lag > Duration::from_millis(10) {
                l.late += 1;
            }
        }
        let stream = match TcpStream::connect_timeout(&p.addr, p.timeout) {
            Ok(s) => s,
            Err(e) => {
                classify(&e, Phase::Connect, &mut l.errors);
                l.sec(sh.t0, 3, 1);
                return false;
            }
        };
        let cdur = c0.elapsed();
        l.connections += 1;
        l.sec(sh.t0, 0, 1);
        l.h_connect.saturating_record(us(cdur));
        l.connect_sum_ms += cdur.as_secs_f64() * 1e3;
        l.connect_n += 1;
        let open = sh.open.fetch_add(1, Ordering::Relaxed) + 1;
        sh.max_open.fetch_max(open, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(p.timeout));
        let _ = stream.set_write_timeout(Some(p.timeout));
        let mut c = Conn {
            s: stream,
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            opened: c0,
        };
        let mut ok = true;
        let mut closed = false;
        while remaining > 0 && !closed {
            if sh.stopped() {
                break;
            }
            let batch = remaining.min(u64::from(p.pipeline.max(1)));
            let uris: Vec<String> = (0..batch).map(|_| sh.next_uri().to_string()).collect();
            let mut req = Vec::new();
            for u in &uris {
                req.extend_from_slice(
                    format!(
                        "GET {u} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: httplab-study\r\n\r\n"
                    )
                    .as_bytes(),
                );
                if let Some(e) = p.expected.get(u) {
                    l.requested_body += e.len();
                }
            }
            let sent_at = Instant::now();
            let first_sched = sched.take().unwrap_or(sent_at);
            l.requests += batch;
            l.sec(sh.t0, 1, batch);
            if let Err(e) = c.s.write_all(&req) {
                classify(&e, Phase::Io, &mut l.errors);
                l.sec(sh.t0, 3, 1);
                ok = false;
                break;
            }
            l.bytes_sent += req.len() as u64;
            for (k, u) in uris.iter().enumerate() {
                let s = if k == 0 { first_sched } else { sent_at };
                match c.read_reply(u, p.expected.get(u), sent_at, s, sh.t0, l) {
                    Ok(r) => {
                        remaining -= 1;
                        if r.close {
                            closed = true;
                            if k + 1 < uris.len() {
                                // Pipelined requests after a close are lost: resend them.
                                l.requests -= (uris.len() - k - 1) as u64;
                            }
                            break;
                        }
                    }
                    Err(e) => {
                        classify(&e, Phase::Io, &mut l.errors);
                        l.sec(sh.t0, 3, 1);
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                break;
            }
        }
        sh.open.fetch_sub(1, Ordering::Relaxed);
        if ok {
            l.conn_life_ms.push(c.opened.elapsed().as_secs_f64() * 1e3);
        }
        if !ok {
            return false;
        }
        if sh.stopped() {
            return true;
        }
    }
    true
}

/// Runs the plan to completion (or its time limit, or `stop`).
pub fn run(plan: &LoadPlan) -> m::RunResult {
    let started_at = httplab_model::now_rfc3339();
    let (u0, s0) = crate::env::self_cpu();
    let t0 = Instant::now();
    let sh = Arc::new(Shared {
        plan: plan.clone(),
        t0,
        deadline: t0 + plan.max_duration,
        uri_next: AtomicU64::new(0),
        open: AtomicU64::new(0),
        max_open: AtomicU64::new(0),
        busy: AtomicU64::new(0),
        max_busy: AtomicU64::new(0),
    });
    let total = Arc::new(Mutex::new(Local::new()));
    let mut handles = Vec::new();
    match plan.offer {
        Offer::Open { rate, num_conns } => {
            let threads = match rate {
                None => 1,
                Some(_) => num_conns.clamp(1, OPEN_LOOP_SLOTS),
            };
            let next = Arc::new(AtomicU64::new(0));
            for _ in 0..threads {
                let sh = Arc::clone(&sh);
                let next = Arc::clone(&next);
                let total = Arc::clone(&total);
                handles.push(thread::spawn(move || {
                    let _ = crate::servers::pin_current_thread(&sh.plan.client_cores);
                    let mut l = Local::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= num_conns || sh.stopped() {
                            break;
                        }
                        let sched = match rate {
                            Some(r) => {
                                let at = sh.t0 + Duration::from_secs_f64(i as f64 / r);
                                let now = Instant::now();
                                if at > now {
                                    if at >= sh.deadline {
                                        break;
                                    }
                                    // Open-loop schedule: wait for this connection's start time.
                                    thread::sleep(at - now);
                                }
                                at
                            }
                            None => Instant::now(),
                        };
                        let b = sh.busy.fetch_add(1, Ordering::Relaxed) + 1;
                        sh.max_busy.fetch_max(b, Ordering::Relaxed);
                        session(&sh, sh.plan.num_calls.max(1), sched, &mut l);
                        sh.busy.fetch_sub(1, Ordering::Relaxed);
                    }
                    if let Ok(mut t) = total.lock() {
                        t.merge(&l);
                    }
                }));
            }
        }
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => {
            for _ in 0..users.clamp(1, 2048) {
                let sh = Arc::clone(&sh);
                let total = Arc::clone(&total);
                handles.push(thread::spawn(move || {
                    let _ = crate::servers::pin_current_thread(&sh.plan.client_cores);
                    let mut l = Local::new();
                    let per_conn = sh.plan.num_calls.max(1);
                    let mut left = requests;
                    while left > 0 && !sh.stopped() {
                        let calls = if think_ms > 0.0 {
                            1
                        } else {
                            left.min(per_conn)
                        };
                        if !session(&sh, calls, Instant::now(), &mut l) {
                            // httperf-style: a failed session is not retried at once.
                        }
                        left -= calls;
                        if think_ms > 0.0 && left > 0 {
                            // Closed-loop think time between a reply and the next request.
                            thread::sleep(Duration::from_secs_f64(think_ms / 1e3));
                        }
                    }
                    if let Ok(mut t) = total.lock() {
                        t.merge(&l);
                    }
                }));
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let duration = t0.elapsed().as_secs_f64().max(1e-9);
    let (u1, s1) = crate::env::self_cpu();
    let l = total
        .lock()
        .map(|g| g.clone())
        .unwrap_or_else(|p| p.into_inner().clone());
    build_result(plan, &sh, &l, started_at, duration, (u1 - u0, s1 - s0))
}

fn build_result(
    plan: &LoadPlan,
    sh: &Shared,
    l: &Local,
    started_at: String,
    duration: f64,
    cpu: (f64, f64),
) -> m::RunResult {
    let mut errors = l.errors;
    errors.total = errors.client_timo
        + errors.socket_timo
        + errors.connrefused
        + errors.connreset
        + errors.fd_unavail
        + errors.addrunavail
        + errors.other;
    let full_secs = duration.floor() as usize;
    let rate_samples: Vec<f64> = l
        .per_sec
        .iter()
        .take(full_secs)
        .map(|r| r[2] as f64)
        .collect();
    let mean = |sum: f64, n: u64| if n > 0 { sum / n as f64 } else { 0.0 };
    let resp = m::Latency::from_histogram(&l.h_resp);
    let first = m::Latency::from_histogram(&l.h_first);
    let unc = m::Latency::from_histogram(&l.h_resp_unc);
    let cores = if plan.client_cores.is_empty() {
        crate::servers::allowed_cores().len().max(1)
    } else {
        plan.client_cores.len()
    };
    let cpu_pct = (cpu.0 + cpu.1) / duration * 100.0;
    let mut warnings = Vec::new();
    // CPU shares of very short runs are dominated by thread start-up: judge
    // the generator's CPU only on runs of half a second or more.
    let cpu_bound = duration >= 0.5 && cpu_pct >= 90.0 * cores as f64;
    if cpu_bound {
        warnings.push(format!("load generator used {cpu_pct:.0}% CPU of {cores} core(s): it, not the server, may have limited this run"));
    }
    let lag = |q: f64| {
        if l.h_lag.is_empty() {
            0.0
        } else {
            l.h_lag.value_at_quantile(q) as f64 / 1e3
        }
    };
    let open_loop = matches!(plan.offer, Offer::Open { rate: Some(_), .. });
    let slots = match plan.offer {
        Offer::Open { num_conns, .. } => num_conns.clamp(1, OPEN_LOOP_SLOTS),
        Offer::Closed { .. } => u64::MAX,
    };
    // Late starts while every connection slot was busy mean the server held
    // the connections (it was not keeping up); late starts with free slots
    // mean the generator itself fell behind.
    let slots_exhausted = sh.max_busy.load(Ordering::Relaxed) >= slots;
    // Late means later than 10 ms, or half the interval between starts when
    // that is longer (a 20 ms hiccup does not change a 10/s schedule).
    let lag_limit = match plan.offer {
        Offer::Open { rate: Some(r), .. } if r > 0.0 => (500.0 / r).max(10.0),
        _ => 10.0,
    };
    let lag_bound = open_loop && lag(0.99) > lag_limit && !slots_exhausted;
    if open_loop && lag(0.99) > lag_limit {
        if slots_exhausted {
            warnings.push(format!(
                "all {slots} connection slots were busy (the server was not keeping up): connections started up to {:.1} ms (p99) late, so the offered rate was lower than asked",
                lag(0.99)
            ));
        } else {
            warnings.push(format!(
                "connections started late (p99 {:.1} ms behind schedule) with free connection slots: the generator fell behind",
                lag(0.99)
            ));
        }
    }
    if plan.stop.load(Ordering::Relaxed) {
        warnings.push("interrupted".into());
    } else if Instant::now() >= sh.deadline {
        warnings.push(format!(
            "stopped at the {:.0} s time limit",
            plan.max_duration.as_secs_f64()
        ));
    }
    let (mode, rate, num_conns, users, think) = match plan.offer {
        Offer::Open { rate, num_conns } => (
            if rate.is_some() {
                m::LoadMode::OpenLoop
            } else {
                m::LoadMode::Sequential
            },
            rate,
            Some(num_conns),
            None,
            None,
        ),
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => (
            m::LoadMode::ClosedLoop,
            None,
            Some(users * requests.div_ceil(plan.num_calls.max(1))),
            Some(users),
            Some(think_ms),
        ),
    };
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("pipeline".into(), plan.pipeline.to_string());
    extra.insert("requested_body_bytes".into(), l.requested_body.to_string());
    extra.insert("intact_body_bytes".into(), l.intact_body.to_string());
    if !l.session_ms.is_empty() {
        let sm = m::Summary::of(&l.session_ms);
        extra.insert(EXTRA_SESSION_MS.into(), format!("{:.6}", sm.avg));
    }
    if let Offer::Closed { requests, .. } = plan.offer {
        extra.insert("requests_per_user".into(), requests.to_string());
    }
    let mut cmd = vec![
        format!("--server=127.0.0.1"),
        format!("--port={}", plan.addr.port()),
    ];
    if let Some(r) = rate {
        cmd.push(format!("--rate={r}"));
    }
    if let Some(n) = num_conns {
        cmd.push(format!("--num-conns={n}"));
    }
    cmd.push(format!("--num-calls={}", plan.num_calls));
    cmd.push(format!("--timeout={}", plan.timeout.as_secs_f64()));
    let series = l
        .per_sec
        .iter()
        .enumerate()
        .map(|(i, r)| m::Interval {
            t_s: (i + 1) as f64,
            len_s: 1.0,
            connections: r[0],
            requests: r[1],
            replies: r[2],
            errors: r[3],
            bytes_in: r[4],
            reply_rate: r[2] as f64,
            ..Default::default()
        })
        .collect();
    m::RunResult {
        schema: m::RUN_SCHEMA.into(),
        tool: m::ToolInfo::current(env!("CARGO_PKG_VERSION")),
        label: plan.label.clone(),
        started_at,
        config: m::RunConfig {
            command_line: cmd,
            targets: plan
                .uris
                .iter()
                .map(|u| format!("http://{}{u}", plan.addr))
                .collect(),
            mode,
            rate,
            distribution: rate.map(|_| "deterministic".into()),
            num_conns,
            num_calls: Some(plan.num_calls),
            duration_s: None,
            users,
            think_ms: think,
            timeout_s: Some(plan.timeout.as_secs_f64()),
            threads: 0,
            method: "GET".into(),
            extra,
        },
        totals: m::Totals {
            connections: l.connections,
            requests: l.requests,
            replies: l.replies,
            test_duration_s: duration,
            max_concurrent_connections: sh.max_open.load(Ordering::Relaxed),
        },
        connection: m::ConnectionStats {
            rate_per_s: l.connections as f64 / duration,
            ms_per_conn: if l.connections > 0 {
                duration * 1e3 / l.connections as f64
            } else {
                0.0
            },
            lifetime_ms: m::Summary::of(&l.conn_life_ms),
            connect_ms: mean(l.connect_sum_ms, l.connect_n),
            replies_per_conn: if l.connections > 0 {
                l.replies as f64 / l.connections as f64
            } else {
                0.0
            },
        },
        request: m::RequestStats {
            rate_per_s: l.requests as f64 / duration,
            ms_per_req: if l.requests > 0 {
                duration * 1e3 / l.requests as f64
            } else {
                0.0
            },
            size_bytes: mean(l.bytes_sent as f64, l.requests),
        },
        reply: m::ReplyStats {
            rate: m::Summary::of(&rate_samples),
            sample_interval_s: 1.0,
            response_ms: first.mean_ms,
            transfer_ms: (unc.mean_ms - first.mean_ms).max(0.0),
            header_bytes: mean(l.header_bytes as f64, l.replies),
            content_bytes: mean(l.content_bytes as f64, l.replies),
            footer_bytes: 0.0,
            status: l.status,
        },
        resources: m::Resources {
            user_s: cpu.0,
            system_s: cpu.1,
            bytes_sent: l.bytes_sent,
            bytes_received: l.bytes_received,
            net_kb_per_s: (l.bytes_sent + l.bytes_received) as f64 / 1024.0 / duration,
            net_mbit_per_s: (l.bytes_sent + l.bytes_received) as f64 * 8.0 / 1e6 / duration,
        },
        errors,
        latency: m::Latencies {
            connect: m::Latency::from_histogram(&l.h_connect),
            first_byte: first,
            response: resp,
            response_uncorrected: unc,
        },
        series,
        accuracy: l.acc,
        self_check: m::SelfCheck {
            client_cpu_pct: cpu_pct,
            schedule_lag_p50_ms: lag(0.5),
            schedule_lag_p99_ms: lag(0.99),
            schedule_lag_max_ms: if l.h_lag.is_empty() {
                0.0
            } else {
                l.h_lag.max() as f64 / 1e3
            },
            late_starts: l.late,
            client_bound: cpu_bound || lag_bound,
            warnings,
        },
        environment: m::Environment {
            client_affinity: plan.client_cores.iter().map(|&c| c as u32).collect(),
            ..crate::env::environment()
        },
        interrupted: plan.stop.load(Ordering::Relaxed),
        server: None,
        shards: Vec::new(),
    }
}
