//! The idle-connections workload (`kind = "idle"`): K connections are held
//! open against the server (connected and silent, or with an unfinished
//! request line as slowloris sends) while a normal client — one `httplab
//! load` run, closed-loop `users` or open loop at `rate` — measures latency
//! and errors. Afterwards the holder counts how many of its connections the
//! server still keeps open, closed, or answered, and the server's descriptor
//! and memory samples show how many it actually accepted and what one costs.
//!
//! The holder is its own small non-blocking connector (mio) rather than the
//! load engine: the engine's connections exist to carry requests, these must
//! carry none, and they must outlive the whole load run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use httplab_model as m;
use serde::Deserialize;
use socket2::{Domain, Protocol, Socket, Type};

use crate::runner::StepParams;
use crate::spec::{VaryParam, Workload};

/// Most idle connections one step may hold.
pub const MAX_IDLE_CONNS: u64 = 100_000;
/// Default number of idle connections.
pub const DEFAULT_IDLE_CONNS: u64 = 100;
/// Connections the holder has in setup at once.
pub const MAX_CONNECTING: usize = 256;
/// What a `partial` connection sends: a request line without its CRLF.
pub const PARTIAL_REQUEST: &[u8] = b"GET / HTTP/1.1";
/// Held connections per source address at most (of ~28 000 ephemeral ports).
const PER_SOURCE: u64 = 20_000;
/// Source addresses used (127.0.0.33 …), apart from the load generator's 127.0.0.1–16.
const FIRST_SOURCE: u8 = 33;

/// Key prefix of everything this workload adds to `RunConfig.extra`.
pub const EXTRA_PREFIX: &str = "idle_";

/// What each held connection sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleSend {
    /// Connected, nothing sent.
    #[default]
    Silent,
    /// An unfinished request line ([`PARTIAL_REQUEST`]), then nothing.
    Partial,
}

impl IdleSend {
    /// Name as written in study files.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleSend::Silent => "silent",
            IdleSend::Partial => "partial",
        }
    }
}

/// Checks an idle workload's own fields.
pub fn validate(w: &Workload) -> Result<()> {
    let check = |k: f64| -> Result<()> {
        if !(k >= 1.0 && k <= MAX_IDLE_CONNS as f64 && k.fract() == 0.0) {
            bail!("idle_conns must be a whole number from 1 to {MAX_IDLE_CONNS}, not {k}");
        }
        Ok(())
    };
    if let Some(k) = w.idle_conns {
        check(k as f64)?;
    }
    if let Some(v) = w.vary.as_ref().filter(|v| v.param == VaryParam::IdleConns) {
        for x in &v.values {
            match x {
                crate::spec::VaryValue::Num(n) => check(*n)?,
                crate::spec::VaryValue::Text(t) => {
                    bail!("vary idle_conns values must be numbers, got \"{t}\"")
                }
            }
        }
    }
    if w.idle_connect_s.is_some_and(|s| !(s > 0.0 && s <= 600.0)) {
        bail!("idle_connect_s must be between 0 and 600 seconds");
    }
    if w.users.is_some() && w.rate.is_some() {
        bail!(
            "give the normal client either `users` (closed loop) or `rate` (open loop), not both"
        );
    }
    Ok(())
}

/// Idle connections of one step: the varied value, or `idle_conns`.
pub fn conns_of(w: &Workload, p: &StepParams) -> u64 {
    if w.vary
        .as_ref()
        .is_some_and(|v| v.param == VaryParam::IdleConns)
    {
        if let Ok(k) = p.step.parse::<f64>() {
            return (k.max(1.0) as u64).min(MAX_IDLE_CONNS);
        }
    }
    w.idle_conns.unwrap_or(DEFAULT_IDLE_CONNS)
}

/// The plan line of one step (`--dry-run`).
pub fn describe(w: &Workload, p: &StepParams) -> String {
    format!(
        "while {} idle connection(s) are held ({}, connecting within {} s)",
        conns_of(w, p),
        w.idle_send.unwrap_or_default().as_str(),
        crate::runner::fmt_num(connect_within(w, p).as_secs_f64())
    )
}

fn connect_within(w: &Workload, p: &StepParams) -> Duration {
    w.idle_connect_s
        .map_or(p.timeout, Duration::from_secs_f64)
        .clamp(Duration::from_millis(10), Duration::from_secs(600))
}

/// What to hold.
#[derive(Debug, Clone)]
pub struct HoldSpec {
    /// The server.
    pub addr: SocketAddr,
    /// Connections to hold.
    pub conns: u64,
    /// What each sends.
    pub send: IdleSend,
    /// Longest wait for them to connect.
    pub connect_within: Duration,
}

impl HoldSpec {
    /// The hold of one step of an idle workload.
    pub fn of(w: &Workload, p: &StepParams, addr: SocketAddr) -> HoldSpec {
        HoldSpec {
            addr,
            conns: conns_of(w, p),
            send: w.idle_send.unwrap_or_default(),
            connect_within: connect_within(w, p),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum State {
    Connecting,
    Connected,
    Failed,
}

/// Connections held open; dropping it closes them all with a reset (no
/// TIME_WAIT left behind on either side).
pub struct Holder {
    socks: Vec<Option<mio::net::TcpStream>>,
    state: Vec<State>,
    requested: u64,
    not_attempted: u64,
    failed: BTreeMap<String, u64>,
    open_s: f64,
    send: IdleSend,
}

/// The holder's count at the end of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Census {
    /// Connections asked for.
    pub requested: u64,
    /// Connected by the end of the opening phase.
    pub connected: u64,
    /// Still in setup at the end of the opening phase (SYNs unanswered).
    pub pending: u64,
    /// Refused, reset or otherwise failed while connecting.
    pub failed: u64,
    /// Never attempted (the opening phase ended first).
    pub not_attempted: u64,
    /// Still open at the end of the run (as seen from the client).
    pub open_at_end: u64,
    /// Closed by the server (FIN) by the end of the run.
    pub closed_by_server: u64,
    /// Reset by the server by the end of the run.
    pub reset_by_server: u64,
    /// The server sent bytes on them (e.g. a 408 or 400 response).
    pub answered: u64,
    /// Seconds the opening phase took.
    pub open_s: f64,
    /// Failure classes while connecting, with counts ("refused 3, EMFILE 1").
    pub errors: String,
}

/// Source addresses to spread `conns` over: 127.0.0.33 … for an IPv4
/// loopback server (each source has its own ephemeral ports), else none.
fn sources(addr: SocketAddr, conns: u64) -> Vec<IpAddr> {
    let IpAddr::V4(ip) = addr.ip() else {
        return Vec::new();
    };
    if !ip.is_loopback() {
        return Vec::new();
    }
    // Where 127.0.0.0/8 is not all local (some sandboxes), keep the kernel's choice.
    if std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 0, FIRST_SOURCE), 0)).is_err() {
        return Vec::new();
    }
    let n = conns.div_ceil(PER_SOURCE).clamp(1, 64) as u8;
    (0..n)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, FIRST_SOURCE + i)))
        .collect()
}

fn err_class(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "refused".into(),
        io::ErrorKind::ConnectionReset => "reset".into(),
        io::ErrorKind::TimedOut => "timed out".into(),
        io::ErrorKind::AddrNotAvailable => "no local port".into(),
        _ if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => {
            "too many open files".into()
        }
        _ => e.to_string(),
    }
}

impl Holder {
    /// Opens `spec.conns` connections, at most [`MAX_CONNECTING`] in setup at
    /// once, for at most `spec.connect_within` (or until `stop`); those not
    /// connected by then are counted pending or not attempted.
    pub fn open(spec: &HoldSpec, stop: &AtomicBool) -> Result<Holder> {
        if spec.conns > MAX_IDLE_CONNS {
            bail!("{} idle connections: at most {MAX_IDLE_CONNS}", spec.conns);
        }
        crate::raise_fd_limit();
        let t0 = Instant::now();
        let deadline = t0 + spec.connect_within;
        let srcs = sources(spec.addr, spec.conns);
        let mut poll = mio::Poll::new()?;
        let mut events = mio::Events::with_capacity(1024);
        let k = spec.conns as usize;
        let mut h = Holder {
            socks: Vec::with_capacity(k),
            state: Vec::with_capacity(k),
            requested: spec.conns,
            not_attempted: 0,
            failed: BTreeMap::new(),
            open_s: 0.0,
            send: spec.send,
        };
        let mut connecting = 0usize;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            while h.socks.len() < k && connecting < MAX_CONNECTING && Instant::now() < deadline {
                let i = h.socks.len();
                let src = (!srcs.is_empty()).then(|| srcs[i % srcs.len()]);
                match start_connect(spec.addr, src) {
                    Ok((mut s, done)) => {
                        let reg = poll.registry().register(
                            &mut s,
                            mio::Token(i),
                            mio::Interest::WRITABLE | mio::Interest::READABLE,
                        );
                        if let Err(e) = reg {
                            *h.failed.entry(err_class(&e)).or_default() += 1;
                            h.socks.push(None);
                            h.state.push(State::Failed);
                            continue;
                        }
                        h.socks.push(Some(s));
                        if done {
                            h.state.push(State::Connected);
                            h.on_connected(i);
                        } else {
                            h.state.push(State::Connecting);
                            connecting += 1;
                        }
                    }
                    Err(e) => {
                        *h.failed.entry(err_class(&e)).or_default() += 1;
                        h.socks.push(None);
                        h.state.push(State::Failed);
                    }
                }
            }
            let now = Instant::now();
            if (h.socks.len() == k && connecting == 0) || now >= deadline {
                break;
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            match poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if h.state.get(i) != Some(&State::Connecting) {
                    continue;
                }
                match h.resolve(i) {
                    Some(State::Connected) => {
                        connecting -= 1;
                        h.state[i] = State::Connected;
                        h.on_connected(i);
                    }
                    Some(State::Failed) => {
                        connecting -= 1;
                        h.state[i] = State::Failed;
                        h.socks[i] = None;
                    }
                    _ => {}
                }
            }
        }
        h.not_attempted = spec.conns - h.socks.len() as u64;
        h.open_s = t0.elapsed().as_secs_f64();
        Ok(h)
    }

    /// Where a connection in setup stands now (None: still in setup).
    fn resolve(&mut self, i: usize) -> Option<State> {
        let s = self.socks.get(i)?.as_ref()?;
        match s.take_error() {
            Ok(Some(e)) | Err(e) => {
                *self.failed.entry(err_class(&e)).or_default() += 1;
                return Some(State::Failed);
            }
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => Some(State::Connected),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => None,
            Err(e) => {
                *self.failed.entry(err_class(&e)).or_default() += 1;
                Some(State::Failed)
            }
        }
    }

    fn on_connected(&mut self, i: usize) {
        if self.send == IdleSend::Partial {
            if let Some(s) = self.socks.get_mut(i).and_then(Option::as_mut) {
                // A few bytes into an empty send buffer: written whole or not at all.
                let _ = s.write(PARTIAL_REQUEST);
            }
        }
    }

    /// Counts where every connection stands now, without reading anything
    /// (a peek): open, closed or reset by the server, or answered.
    pub fn census(&mut self) -> Census {
        let mut c = Census {
            requested: self.requested,
            not_attempted: self.not_attempted,
            open_s: self.open_s,
            ..Default::default()
        };
        let mut buf = [0u8; 1];
        for i in 0..self.socks.len() {
            match self.state[i] {
                State::Failed => {
                    c.failed += 1;
                    continue;
                }
                State::Connecting => {
                    c.pending += 1;
                    match self.resolve(i) {
                        Some(State::Connected) => {}
                        _ => continue,
                    }
                }
                State::Connected => c.connected += 1,
            }
            let Some(s) = self.socks[i].as_ref() else {
                continue;
            };
            match s.peek(&mut buf) {
                Ok(0) => c.closed_by_server += 1,
                Ok(_) => c.answered += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.open_at_end += 1,
                Err(_) => c.reset_by_server += 1,
            }
        }
        // Failures found at census time (pending ones that failed since).
        c.errors = self
            .failed
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        c
    }
}

/// Starts a non-blocking connect; `true` when it completed at once.
fn start_connect(addr: SocketAddr, src: Option<IpAddr>) -> io::Result<(mio::net::TcpStream, bool)> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    // Closed with a reset: thousands of held connections leave no TIME_WAIT.
    sock.set_linger(Some(Duration::ZERO))?;
    if let Some(ip) = src {
        sock.bind(&SocketAddr::new(ip, 0).into())?;
    }
    let done = match sock.connect(&addr.into()) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
        Err(e) => return Err(e),
    };
    let s: std::net::TcpStream = sock.into();
    Ok((mio::net::TcpStream::from_std(s), done))
}

/// Writes the census, the server's descriptors and memory before and during
/// the hold, and a note when the client was hurt, into `run.config.extra`.
pub fn annotate(run: &mut m::RunResult, c: &Census, send: IdleSend, before: &m::ServerSample) {
    // Peaks over the run's samples: the server may accept held connections
    // while the client already runs.
    let samples = run.server.as_ref().map_or(&[][..], |s| &s.samples[..]);
    let fds_during = samples.iter().map(|s| s.fds).max().unwrap_or(0);
    let rss_during = samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
    let held = c.connected + c.pending;
    let x = &mut run.config.extra;
    let mut put = |k: &str, v: String| {
        x.insert(format!("{EXTRA_PREFIX}{k}"), v);
    };
    put("conns", c.requested.to_string());
    put("send", send.as_str().into());
    put("connected", c.connected.to_string());
    put("pending", c.pending.to_string());
    put("failed", c.failed.to_string());
    put("not_attempted", c.not_attempted.to_string());
    put("open_at_end", c.open_at_end.to_string());
    put("closed_by_server", c.closed_by_server.to_string());
    put("reset_by_server", c.reset_by_server.to_string());
    put("answered_by_server", c.answered.to_string());
    put("open_s", format!("{:.3}", c.open_s));
    if !c.errors.is_empty() {
        put("errors", c.errors.clone());
    }
    put("server_fds_before", before.fds.to_string());
    put("server_fds_during", fds_during.to_string());
    put("server_rss_before_bytes", before.rss_bytes.to_string());
    put("server_rss_during_bytes", rss_during.to_string());
    if held > 0 && rss_during > 0 {
        let per = (rss_during as f64 - before.rss_bytes as f64) / held as f64;
        put("server_rss_per_conn_bytes", format!("{:.0}", per.max(0.0)));
    }
    let note = note(run, c, before.fds, fds_during);
    if !note.is_empty() {
        run.config.extra.insert(format!("{EXTRA_PREFIX}note"), note);
    }
}

/// What the reader must know about this run, in words (empty: nothing).
fn note(run: &m::RunResult, c: &Census, fds_before: u64, fds_during: u64) -> String {
    let mut parts = Vec::new();
    let e = &run.errors;
    if run.totals.replies == 0 {
        parts.push(format!(
            "the server stopped serving new clients: no replies, {} error(s) (client-timo {}, connrefused {}, connreset {}, other {})",
            e.total, e.client_timo, e.connrefused, e.connreset, e.other
        ));
    } else if e.total > 0 {
        parts.push(format!(
            "the client got {} error(s) beside {} replies (client-timo {}, connrefused {}, connreset {}, other {})",
            e.total, run.totals.replies, e.client_timo, e.connrefused, e.connreset, e.other
        ));
    }
    if c.pending + c.not_attempted + c.failed > 0 {
        parts.push(format!(
            "only {} of {} idle connections connected ({} still in setup, {} failed{}, {} not attempted)",
            c.connected,
            c.requested,
            c.pending,
            c.failed,
            if c.errors.is_empty() {
                String::new()
            } else {
                format!(": {}", c.errors)
            },
            c.not_attempted
        ));
    }
    let gone = c.closed_by_server + c.reset_by_server + c.answered;
    if gone > 0 {
        parts.push(format!(
            "the server ended {gone} of them during the run ({} closed, {} reset, {} answered)",
            c.closed_by_server, c.reset_by_server, c.answered
        ));
    }
    let added = fds_during.saturating_sub(fds_before);
    if c.connected >= 10 && added < c.connected / 2 && fds_during > 0 {
        parts.push(format!(
            "the server holds about {added} more descriptors: most held connections wait in the kernel (listen backlog or deferred accept), not in the server"
        ));
    }
    parts.join("; ")
}

fn extra_f(r: &m::RunResult, k: &str) -> Option<f64> {
    r.config
        .extra
        .get(&format!("{EXTRA_PREFIX}{k}"))
        .and_then(|v| v.parse().ok())
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One row of the idle table: a server at one step, over its repetitions.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Step label (idle connections, or the varied value).
    pub step: String,
    /// Server.
    pub server: String,
    /// Repetitions that produced a run.
    pub reps: usize,
    /// Mean replies per run.
    pub replies: f64,
    /// Mean errors per run.
    pub errors: f64,
    /// Mean p50 response ms (runs with replies).
    pub p50_ms: Option<f64>,
    /// Mean p99 response ms (runs with replies).
    pub p99_ms: Option<f64>,
    /// Idle connections asked for.
    pub conns: f64,
    /// Mean connected.
    pub connected: f64,
    /// Mean open at the end.
    pub open_at_end: f64,
    /// Mean descriptors the server added while holding.
    pub fds_added: f64,
    /// Largest server RSS added per held connection over the repetitions, bytes.
    pub rss_per_conn: Option<f64>,
    /// Notes of the repetitions (distinct).
    pub notes: Vec<String>,
}

/// The idle table of workload `w` (empty when it is not an idle workload).
pub fn rows(res: &m::StudyResult, w: &str) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut acc: BTreeMap<(usize, String), Vec<&m::RunResult>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for r in res.runs.iter().filter(|r| r.workload == w) {
        let Some(run) = r.run.as_ref() else { continue };
        if !run.config.extra.contains_key("idle_conns") {
            continue;
        }
        let key = (r.step.clone().unwrap_or_default(), r.server.clone());
        let pos = match order.iter().position(|k| *k == key) {
            Some(p) => p,
            None => {
                order.push(key.clone());
                order.len() - 1
            }
        };
        acc.entry((pos, key.1)).or_default().push(run);
    }
    for ((pos, server), runs) in acc {
        let col = |f: &dyn Fn(&m::RunResult) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|r| f(r)).collect()
        };
        let mut notes: Vec<String> = Vec::new();
        for r in &runs {
            if let Some(n) = r.config.extra.get("idle_note") {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
        }
        out.push(Row {
            step: order[pos].0.clone(),
            server,
            reps: runs.len(),
            replies: mean(&col(&|r| Some(r.totals.replies as f64))).unwrap_or(0.0),
            errors: mean(&col(&|r| Some(r.errors.total as f64))).unwrap_or(0.0),
            p50_ms: mean(&col(&|r| r.latency.response.at(50.0))),
            p99_ms: mean(&col(&|r| r.latency.response.at(99.0))),
            conns: mean(&col(&|r| extra_f(r, "conns"))).unwrap_or(0.0),
            connected: mean(&col(&|r| extra_f(r, "connected"))).unwrap_or(0.0),
            open_at_end: mean(&col(&|r| extra_f(r, "open_at_end"))).unwrap_or(0.0),
            fds_added: mean(&col(&|r| {
                Some(extra_f(r, "server_fds_during")? - extra_f(r, "server_fds_before")?)
            }))
            .unwrap_or(0.0),
            // The largest: a later round finds memory an earlier one left
            // the server, and shows less than the connections cost.
            rss_per_conn: col(&|r| extra_f(r, "server_rss_per_conn_bytes"))
                .into_iter()
                .reduce(f64::max),
            notes,
        });
    }
    out.sort_by_key(|r| (order.iter().position(|k| k.0 == r.step), r.server.clone()));
    out
}

fn opt_ms(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.2}"))
}

/// The HTML table of an idle workload (None when `w` is not one).
pub fn html_section(res: &m::StudyResult, w: &str) -> Option<String> {
    let rows = rows(res, w);
    if rows.is_empty() {
        return None;
    }
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<h3>Under idle connections</h3><p>Means over repetitions. <i>connected</i>: held \
         connections whose handshake completed; <i>open at end</i>: still open when the client \
         finished; <i>server fds added</i>: the server's descriptors while holding minus before \
         (what it actually accepted); <i>RSS / conn</i>: the server's peak memory added per held \
         connection (the largest over repetitions: later rounds reuse memory an earlier one left).</p>"
    );
    let _ = writeln!(
        h,
        "<table><tr><th class=\"l\">step</th><th class=\"l\">server</th><th>n</th><th>replies</th>\
         <th>errors</th><th>p50 ms</th><th>p99 ms</th><th>idle conns</th><th>connected</th>\
         <th>open at end</th><th>server fds added</th><th>RSS / conn KB</th><th class=\"l\">note</th></tr>"
    );
    for r in &rows {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td>\
             <td>{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td>\
             <td class=\"l\">{}</td></tr>",
            esc(&r.step),
            esc(&r.server),
            r.reps,
            r.replies,
            r.errors,
            opt_ms(r.p50_ms),
            opt_ms(r.p99_ms),
            r.conns,
            r.connected,
            r.open_at_end,
            r.fds_added,
            r.rss_per_conn
                .map_or("–".into(), |b| format!("{:.1}", b / 1e3)),
            esc(&r.notes.join(" | "))
        );
    }
    let _ = writeln!(h, "</table>");
    Some(h)
}

/// Text lines for the terminal summary: one per server and step whose
/// client was hurt by the held connections.
pub fn summary_lines(res: &m::StudyResult) -> Vec<String> {
    let mut ws: Vec<&str> = Vec::new();
    for r in &res.runs {
        if !ws.contains(&r.workload.as_str()) {
            ws.push(&r.workload);
        }
    }
    let mut out = Vec::new();
    for w in ws {
        for r in rows(res, w) {
            if r.notes.is_empty() {
                continue;
            }
            out.push(format!(
                "{w} [{}] {}: {}",
                r.step,
                r.server,
                r.notes.join(" | ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_spread_only_for_loopback() {
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let s = sources(lo, 45_000);
        // Either spread (3 addresses for 45 000) or the kernel's choice
        // where 127.0.0.0/8 is not all local.
        assert!(s.is_empty() || s.len() == 3, "{s:?}");
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert!(sources(v6, 10).is_empty());
    }

    #[test]
    fn partial_request_is_unfinished() {
        assert!(!PARTIAL_REQUEST.ends_with(b"\n"));
    }

    #[test]
    fn census_of_a_refused_port_counts_failures() {
        // A port with no listener: every connect is refused (or, rarely,
        // still pending at the deadline); nothing is connected.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let spec = HoldSpec {
            addr,
            conns: 5,
            send: IdleSend::Silent,
            connect_within: Duration::from_secs(5),
        };
        let mut h = Holder::open(&spec, &AtomicBool::new(false)).unwrap();
        let c = h.census();
        assert_eq!(c.requested, 5);
        assert_eq!(c.connected, 0);
        assert_eq!(c.failed + c.pending + c.not_attempted, 5);
    }

    #[test]
    fn holds_connections_to_a_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let spec = HoldSpec {
            addr,
            conns: 20,
            send: IdleSend::Partial,
            connect_within: Duration::from_secs(10),
        };
        let mut h = Holder::open(&spec, &AtomicBool::new(false)).unwrap();
        // The backlog (not accept) completes the handshakes.
        let c = h.census();
        assert_eq!(c.connected, 20, "{c:?}");
        assert_eq!(c.open_at_end, 20, "{c:?}");
        // Accept one, read the partial request line, close it: the census sees it.
        let (mut s, _) = l.accept().unwrap();
        let mut got = vec![0u8; PARTIAL_REQUEST.len()];
        std::io::Read::read_exact(&mut s, &mut got).unwrap();
        assert_eq!(got, PARTIAL_REQUEST);
        drop(s);
        // Closing is asynchronous only in the peer's view of it; the FIN is
        // queued before drop returns on loopback, but poll until seen (bounded).
        let mut seen = h.census();
        for _ in 0..1000 {
            if seen.closed_by_server == 1 {
                break;
            }
            std::thread::yield_now();
            seen = h.census();
        }
        assert_eq!(seen.closed_by_server, 1, "{seen:?}");
        assert_eq!(seen.open_at_end, 19);
    }
}
