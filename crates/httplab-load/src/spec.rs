//! What a run should do: [`LoadSpec`], parsed from a command line by
//! [`crate::parse_args`] or built as a typed value (the constructors of
//! `build.rs`: [`LoadSpec::target`], [`LoadSpec::with_load`], ...); either
//! way [`LoadSpec::validate`] checks it, and [`LoadSpec::to_args`] writes
//! it back as a command line.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

/// Inter-arrival distribution of connections or sessions (httperf `--period`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Fixed period, seconds.
    Deterministic(f64),
    /// Uniform over `[lo, hi)` seconds.
    Uniform(f64, f64),
    /// Exponential (Poisson arrivals) with this mean, seconds.
    Exponential(f64),
}

impl Dist {
    /// Mean inter-arrival time, seconds.
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Deterministic(p) | Dist::Exponential(p) => p,
            Dist::Uniform(a, b) => (a + b) / 2.0,
        }
    }

    /// Name used in the result model.
    pub fn name(&self) -> &'static str {
        match self {
            Dist::Deterministic(_) => "deterministic",
            Dist::Uniform(..) => "uniform",
            Dist::Exponential(_) => "exponential",
        }
    }

    /// Parses httperf's `--period=[d|u|e]T1[,T2]`.
    pub fn parse_period(s: &str) -> Result<Option<Dist>> {
        let s = s.trim();
        let (kind, rest) = match s.chars().next() {
            Some(c @ ('d' | 'u' | 'e')) => (c, &s[1..]),
            Some('v') => bail!("--period v (variable) is not supported; use d, u or e"),
            _ => ('d', s),
        };
        let nums: Vec<f64> = rest
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .with_context(|| format!("bad --period '{s}': expected [d|u|e]T1[,T2]"))?;
        let finite = nums.iter().all(|x| x.is_finite() && *x >= 0.0);
        if !finite {
            bail!("bad --period '{s}': times must be non-negative seconds");
        }
        let d = match (kind, nums.as_slice()) {
            ('d', [t]) => Dist::Deterministic(*t),
            ('e', [t]) => Dist::Exponential(*t),
            ('u', [a, b]) if b > a => Dist::Uniform(*a, *b),
            ('u', _) => bail!("bad --period '{s}': u needs T1,T2 with T1 < T2"),
            _ => bail!("bad --period '{s}': expected [d|u|e]T1[,T2]"),
        };
        if d.mean() == 0.0 {
            return Ok(None);
        }
        Ok(Some(d))
    }
}

/// `--probe RATE[,CONNS]`: a light open-loop client beside the load, on its
/// own thread (pinned to a core the load threads do not use, when there is
/// one), sending the same requests at `rate` per second over `conns`
/// persistent connections for the whole run, with its own corrected latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeSpec {
    /// Requests per second.
    pub rate: f64,
    /// Connections (each a paced user) [default: 1].
    pub conns: u32,
}

/// Most requests per second a probe may send (it must stay light).
pub const MAX_PROBE_RATE: f64 = 10_000.0;

impl ProbeSpec {
    /// Parses `RATE[,CONNS]` (`200`, `200,2`).
    pub fn parse(s: &str) -> Result<ProbeSpec> {
        let (r, c) = match s.split_once(',') {
            Some((r, c)) => (r, Some(c)),
            None => (s, None),
        };
        let rate: f64 = r.trim().parse().with_context(|| {
            format!("bad --probe '{s}': expected RATE[,CONNS] (e.g. 200 or 200,2)")
        })?;
        let conns = match c {
            Some(c) => c
                .trim()
                .parse()
                .with_context(|| format!("bad --probe '{s}': CONNS must be a whole number"))?,
            None => 1,
        };
        let p = ProbeSpec { rate, conns };
        p.validate()?;
        Ok(p)
    }

    /// A positive rate up to [`MAX_PROBE_RATE`], 1 to 16 connections.
    pub fn validate(&self) -> Result<()> {
        if !(self.rate > 0.0 && self.rate <= MAX_PROBE_RATE) {
            bail!("--probe: the rate must be above 0 and at most {MAX_PROBE_RATE} requests/s (a probe is light)");
        }
        if !(1..=16).contains(&self.conns) {
            bail!("--probe: 1 to 16 connections");
        }
        Ok(())
    }
}

/// How sessions (connections, httperf sessions, users) are started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Open loop: sessions start on a schedule regardless of the server.
    Open(Dist),
    /// A fixed number of sessions run at once; a new one starts as soon as
    /// one ends (httperf without `--rate` is `Concurrent(1)`).
    Concurrent(u64),
}

/// One call of a session-log session.
#[derive(Debug, Clone, PartialEq)]
pub struct LogCall {
    /// Request target.
    pub uri: String,
    /// Method (default the run's method).
    pub method: Option<String>,
    /// Request body.
    pub body: Option<Vec<u8>>,
}

/// A burst of a session-log session: the first call, then the rest pipelined.
#[derive(Debug, Clone, PartialEq)]
pub struct LogBurst {
    /// Calls, first one sent alone.
    pub calls: Vec<LogCall>,
    /// Think time after the burst, seconds (None: the default X).
    pub think: Option<f64>,
}

/// A session of a `--wsesslog` file.
pub type LogSession = Vec<LogBurst>;

/// What each session does.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// httperf's request-oriented workload: each session is one connection
    /// carrying `num_calls` calls in pipelined bursts of `burst` calls.
    Requests {
        /// Connections to create; None with `--duration`.
        num_conns: Option<u64>,
        /// Calls per connection.
        num_calls: u64,
        /// Calls per pipelined burst.
        burst: u32,
    },
    /// `--wsess=N1,N2,X`: sessions of N2 calls in bursts, think X between bursts.
    Sessions {
        /// Sessions to create (N1).
        num_sessions: Option<u64>,
        /// Calls per session (N2).
        calls: u64,
        /// Burst length.
        burst: u32,
        /// Think time between bursts, seconds.
        think: f64,
    },
    /// `--wsesslog=N,X,FILE`: sessions replayed round-robin from a file.
    SessionLog {
        /// Sessions to create.
        num_sessions: Option<u64>,
        /// Default think time, seconds.
        think: f64,
        /// Parsed sessions.
        sessions: Vec<LogSession>,
        /// File name (for the report).
        file: String,
    },
    /// Closed loop: `users` users each send, wait, think, repeat.
    Users {
        /// Number of users.
        users: u64,
        /// Requests per user; None with `--duration`.
        requests_per_user: Option<u64>,
        /// Think time between a reply and the next request, seconds.
        think: f64,
        /// Requests a user pipelines at once (`--burst-length`): it sends
        /// them together and waits for all their replies before it thinks
        /// and goes on. 1: one request at a time.
        burst: u32,
        /// Paced users (`--users N --rate R`, wrk2 style): the users' requests
        /// together follow this schedule; a user whose previous reply is late
        /// sends at once, and the corrected latency counts from the schedule.
        pace: Option<Dist>,
    },
}

/// The socket I/O engine of the HTTP/1.1 driver (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoEngine {
    /// io_uring where this kernel has it and the run can use it (cleartext
    /// HTTP/1.1), epoll otherwise.
    #[default]
    Auto,
    /// epoll readiness and one system call per send and receive.
    Epoll,
    /// io_uring completions: one `io_uring_enter` per event-loop turn
    /// (falls back to epoll, with a warning, where unavailable).
    Uring,
}

impl IoEngine {
    /// The spelling of `--io`.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Auto => "auto",
            IoEngine::Epoll => "epoll",
            IoEngine::Uring => "uring",
        }
    }
}

/// What `--print-request` / `--print-reply` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrintWhat {
    /// Nothing.
    #[default]
    None,
    /// Head lines only.
    Header,
    /// Body lines only.
    Body,
    /// Head, body and summary.
    All,
}

impl PrintWhat {
    /// Whether header lines are printed.
    pub fn header(self) -> bool {
        matches!(self, PrintWhat::Header | PrintWhat::All)
    }
    /// Whether body lines are printed.
    pub fn body(self) -> bool {
        matches!(self, PrintWhat::Body | PrintWhat::All)
    }
    /// Whether anything is printed.
    pub fn any(self) -> bool {
        self != PrintWhat::None
    }
}

/// A complete description of a load run. Build it with [`crate::parse_args`]
/// (httperf-style arguments) or fill it directly; [`LoadSpec::new`] gives
/// httperf's defaults for a target.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    /// Arguments as given (for the report and the JSON config).
    pub command_line: Vec<String>,
    /// Host name or address of the server.
    pub server: String,
    /// Port.
    pub port: u16,
    /// Host header value (default `server`, or `server:port` when the port is not 80).
    pub host_header: Option<String>,
    /// Request target, or the prefix of `--wset` targets.
    pub uri: String,
    /// Path list (`--uri-list`): when not empty, each request takes the next
    /// path in rotation instead of `uri` (each worker thread keeps its own
    /// rotation, starting at its share of the list).
    pub uris: Vec<String>,
    /// The `--uri-list` file `uris` were read from (set with `uris` by the
    /// command line and by [`LoadSpec::with_uri_list`]); the command line of
    /// [`LoadSpec::to_args`] names it. None: `uris` were given directly.
    pub uri_list: Option<PathBuf>,
    /// Method.
    pub method: String,
    /// "1.1" or "1.0".
    pub http_version: String,
    /// Leave out the Host header.
    pub no_host_hdr: bool,
    /// Extra header lines (no CRLF).
    pub headers: Vec<String>,
    /// Request body for every request-oriented call.
    pub body: Option<Vec<u8>>,
    /// Sessions and their calls.
    pub workload: Workload,
    /// How sessions start.
    pub arrival: Arrival,
    /// `--wset=N,X`: walk N files under `uri` with miss ratio X.
    pub wset: Option<(u64, f64)>,
    /// Reply timeout, seconds (None: wait forever, like httperf).
    pub timeout: Option<f64>,
    /// Added to `timeout` while waiting for a reply to start.
    pub think_timeout: f64,
    /// SO_SNDBUF, when given.
    pub send_buffer: Option<usize>,
    /// SO_RCVBUF, when given.
    pub recv_buffer: Option<usize>,
    /// Close connections with RST.
    pub close_with_reset: bool,
    /// Sessions: retry a call whose reply has `failure_status`.
    pub retry_on_failure: bool,
    /// Sessions: a reply with this status fails the session.
    pub failure_status: Option<u16>,
    /// Sessions: connections per session (httplab uses one; kept for the record).
    pub max_connections: Option<u32>,
    /// Sessions: most pipelined calls outstanding on a connection.
    pub max_piped_calls: Option<u32>,
    /// Print requests to stdout.
    pub print_request: PrintWhat,
    /// Print replies to stdout.
    pub print_reply: PrintWhat,
    /// Verbose report (httperf `-v`).
    pub verbose: bool,
    /// `--client=I/N`: this machine runs shard I of N of the schedule (open
    /// loop: the arrivals k with k mod N == I; closed loop: the users u with
    /// u mod N == I). (0, 1): the whole schedule.
    pub client: (u32, u32),
    /// Seed of the random schedules and file-set walks.
    pub seed: u64,
    /// Worker threads.
    pub threads: u32,
    /// Run for this long instead of a count, seconds.
    pub duration: Option<f64>,
    /// Interval of the time series and of the reply-rate samples, seconds.
    pub sample_interval: f64,
    /// Source addresses to spread connections over.
    pub local_addrs: Vec<IpAddr>,
    /// Compare bodies with the files under this directory.
    pub verify_root: Option<PathBuf>,
    /// Sends later than this (seconds) count as late starts; a p99 lag above it marks the run client-bound.
    pub lag_threshold: f64,
    /// Free-form label copied into the result.
    pub label: String,
    /// Write the result as JSON here (CLI only).
    pub json: Option<PathBuf>,
    /// Write the time series as CSV here (CLI only).
    pub csv: Option<PathBuf>,
    /// Spin on epoll instead of sleeping: lowest measurement overhead, one
    /// core per thread at 100 % (the CPU self-check then ignores CPU use).
    pub busy_poll: bool,
    /// Socket I/O engine for cleartext HTTP/1.1 (`--io`); HTTPS and
    /// `--http2` always use their own drivers (epoll, tokio).
    pub io: IoEngine,
    /// Request-oriented workloads: when the server closes the connection
    /// (`Connection: close`, a close-delimited body, HTTP/1.0), make the
    /// connection's remaining calls on a new connection, as a browser does.
    /// Off (httperf's behaviour): the connection ends there and its remaining
    /// calls are not made (counted as `unsent_calls`). Sessions and
    /// closed-loop users always reconnect.
    pub reconnect: bool,
    /// Closed-loop users: requests a user makes on one connection before it
    /// closes it and opens a new one (`--users N --num-calls M`); these M
    /// requests are the user's *session* (session-time row). None: a user
    /// keeps its connection, and its session is all its requests.
    pub calls_per_conn: Option<u64>,
    /// Warm-up, seconds: the generator runs as specified from t0, but
    /// everything scheduled before t0 + warmup (connections, sessions,
    /// requests) is left out of every statistic; `duration` is measured
    /// after the warm-up. 0: no warm-up.
    pub warmup: f64,
    /// The generator's own ceiling for this run's shape, requests/s, from
    /// [`crate::calibrate`]; gives `client_utilization` and its client-bound test.
    pub client_ceiling: Option<f64>,
    /// Calibration: response body size of the sink, bytes (None: the size of
    /// the first path's file under `verify_root`, else 100 bytes).
    pub calibrate_size: Option<u64>,
    /// Calibration: connections in flight for open-loop shapes (closed loop
    /// uses its own user count) [default: 16].
    pub calibrate_conns: Option<u64>,
    /// CLI only: calibrate first and run with the measured ceiling.
    pub calibrate: bool,
    /// CLI only: calibrate, print the calibration and exit.
    pub calibrate_only: bool,
    /// Do not print the report (CLI only).
    pub quiet: bool,
    /// Suppress live progress even on a terminal (CLI only).
    pub no_progress: bool,
    // ---- client shards (docs/distributed.md) ----
    /// `--start-at`: the shared start instant, unix seconds: the run waits
    /// for it and starts its schedule clock on it; refused once it has passed.
    pub start_at: Option<f64>,
    /// `--run-id`: the id shared by every shard of one run (None: derived
    /// from the command line and the start time, see [`LoadSpec::run_id`]).
    pub run_id: Option<String>,
    /// `--latency-dump`: write every corrected response time (µs, one a line) here (CLI only;
    /// a testing aid: memory grows with the replies).
    pub raw_latencies: Option<PathBuf>,
    /// HTTPS (`https://` URLs, `--ssl`): TLS settings; None: cleartext.
    pub tls: Option<crate::tls::TlsSpec>,
    /// Most connections in setup at once (connecting, in the TLS handshake,
    /// or waiting for their first reply byte), over all threads; open-loop
    /// arrivals wait while it is reached (see the README's "Overload").
    /// None: [`DEFAULT_MAX_CONNECTING`].
    pub max_connecting: Option<u64>,
    /// `--max-response-time`: longest a reply may take from its request's
    /// send to its end, seconds (None: no limit).
    pub max_response_time: Option<f64>,
    /// `--http2`: HTTP/2 (over TLS with ALPN h2, or h2c with prior knowledge
    /// on cleartext) instead of HTTP/1.1; None: HTTP/1.1.
    pub http2: Option<Http2Spec>,
    /// `--http3`: HTTP/3 over QUIC (TLS 1.3, ALPN h3) instead of HTTP/1.1;
    /// None: not HTTP/3.
    pub http3: Option<Http3Spec>,
    /// `--stages`: the offered rate as a list of stages (held or ramped),
    /// open loop only; empty: the rate of `arrival`. Set with
    /// [`LoadSpec::set_stages`], which also sets `arrival` and `duration`.
    pub stages: Vec<crate::stages::Stage>,
    /// `--probe`: a light open-loop client beside the load, with its own
    /// corrected latency (see [`crate::ProbeSpec`]); None: no probe.
    pub probe: Option<ProbeSpec>,
    /// Live metrics, series file and client check (`--prometheus`,
    /// `--series`, `--check-client`).
    pub live: crate::live::LiveSpec,
}

/// Default of [`LoadSpec::lag_threshold`], seconds.
pub const DEFAULT_LAG_THRESHOLD: f64 = 0.002;

/// The schedule seed of a command line without `--seed` (and of
/// [`LoadSpec::target`]); [`LoadSpec::new`] keeps its own seed, 1.
pub const DEFAULT_SEED: u64 = 0x5eed_0000_0000_0000;

/// Default of [`LoadSpec::max_connecting`]: below nginx's default listen
/// backlog (511) and Linux's somaxconn (4096), so a server that falls behind
/// never has SYNs dropped from its accept queue by this client; a remote
/// target at R connections/s with round trip T needs about R * T.
pub const DEFAULT_MAX_CONNECTING: u64 = 500;

impl LoadSpec {
    /// The `:authority` of HTTP/2 and HTTP/3 requests: the Host header,
    /// else server and port (an IPv6 address in brackets).
    pub(crate) fn authority(&self) -> String {
        if let Some(h) = &self.host_header {
            return h.clone();
        }
        let host = if self.server.contains(':') && !self.server.starts_with('[') {
            format!("[{}]", self.server)
        } else {
            self.server.clone()
        };
        format!("{host}:{}", self.port)
    }

    /// The header fields of HTTP/2 and HTTP/3 requests, lower-case, in
    /// order: user-agent, the `--add-header` fields these protocols allow
    /// (RFC 9113, 8.2.2; RFC 9114, 4.2: no connection-specific fields, no
    /// Host, which is `:authority`), content-length with a body.
    pub(crate) fn stream_header_fields(&self) -> Result<Vec<(String, String)>> {
        let ua = format!("httplab/{}", env!("CARGO_PKG_VERSION"));
        let mut h = vec![("user-agent".to_string(), ua)];
        for line in &self.headers {
            let Some((n, v)) = line.split_once(':') else {
                bail!("--add-header '{line}' is not 'Name: value'");
            };
            let n = n.trim().to_ascii_lowercase();
            let connection_specific = matches!(
                n.as_str(),
                "host"
                    | "connection"
                    | "keep-alive"
                    | "proxy-connection"
                    | "transfer-encoding"
                    | "upgrade"
                    | "te"
            );
            if connection_specific {
                continue;
            }
            let valid_name = !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                bail!("--add-header '{line}': not a valid header name");
            }
            let v = v.trim();
            if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                bail!("--add-header '{line}': not a valid header value");
            }
            h.push((n, v.to_string()));
        }
        if let Some(b) = &self.body {
            h.push(("content-length".into(), b.len().to_string()));
        }
        Ok(h)
    }

    /// httperf's defaults against `server:port` (one connection, one call, GET /).
    pub fn new(server: &str, port: u16) -> LoadSpec {
        LoadSpec {
            command_line: Vec::new(),
            server: server.to_string(),
            port,
            host_header: None,
            uri: "/".into(),
            uris: Vec::new(),
            uri_list: None,
            method: "GET".into(),
            http_version: "1.1".into(),
            no_host_hdr: false,
            headers: Vec::new(),
            body: None,
            workload: Workload::Requests {
                num_conns: Some(1),
                num_calls: 1,
                burst: 1,
            },
            arrival: Arrival::Concurrent(1),
            wset: None,
            timeout: None,
            think_timeout: 0.0,
            send_buffer: None,
            recv_buffer: None,
            close_with_reset: false,
            retry_on_failure: false,
            failure_status: None,
            max_connections: None,
            max_piped_calls: None,
            print_request: PrintWhat::None,
            print_reply: PrintWhat::None,
            verbose: false,
            client: (0, 1),
            seed: 1,
            threads: 1,
            duration: None,
            sample_interval: 1.0,
            local_addrs: Vec::new(),
            verify_root: None,
            lag_threshold: DEFAULT_LAG_THRESHOLD,
            label: String::new(),
            json: None,
            csv: None,
            busy_poll: false,
            io: IoEngine::Auto,
            reconnect: false,
            calls_per_conn: None,
            warmup: 0.0,
            client_ceiling: None,
            calibrate_size: None,
            calibrate_conns: None,
            calibrate: false,
            calibrate_only: false,
            quiet: false,
            no_progress: false,
            start_at: None,
            run_id: None,
            raw_latencies: None,
            tls: None,
            max_connecting: None,
            max_response_time: None,
            http2: None,
            http3: None,
            stages: Vec::new(),
            probe: None,
            live: crate::live::LiveSpec::default(),
        }
    }

    /// Runs the open-loop schedule through `stages` (see `--stages`): the
    /// arrivals keep their kind (`exponential`: Poisson; else evenly
    /// spaced), the rate follows the stages, and the run lasts their total
    /// (`duration`). The workload must be open loop (not `--users`) and
    /// uncounted; [`LoadSpec::validate`] checks the rest.
    pub fn set_stages(&mut self, stages: Vec<crate::stages::Stage>, exponential: bool) {
        let mean = crate::stages::mean_rate(&stages);
        let gap = if mean > 0.0 { 1.0 / mean } else { 1.0 };
        self.arrival = Arrival::Open(if exponential {
            Dist::Exponential(gap)
        } else {
            Dist::Deterministic(gap)
        });
        self.duration = Some(crate::stages::total_s(&stages));
        match &mut self.workload {
            Workload::Requests { num_conns, .. } => *num_conns = None,
            Workload::Sessions { num_sessions, .. } | Workload::SessionLog { num_sessions, .. } => {
                *num_sessions = None
            }
            Workload::Users { .. } => {}
        }
        self.stages = stages;
    }

    /// `--stages`: open loop, uncounted, no warm-up, the stages' total as
    /// the duration.
    fn validate_stages(&self) -> Result<()> {
        if self.stages.is_empty() {
            return Ok(());
        }
        if self.stages.len() > crate::stages::MAX_STAGES {
            bail!("--stages: at most {} stages", crate::stages::MAX_STAGES);
        }
        if matches!(self.workload, Workload::Users { .. }) {
            bail!("--stages is an open-loop schedule: closed-loop --users cannot follow it (use --num-calls, --wsess or --wsesslog with --stages)");
        }
        match self.arrival {
            Arrival::Open(Dist::Deterministic(_) | Dist::Exponential(_)) => {}
            Arrival::Open(Dist::Uniform(..)) => {
                bail!("--stages with uniform gaps is not supported: use --period d or --period e")
            }
            Arrival::Concurrent(_) => bail!("--stages needs an open-loop schedule"),
        }
        let counted = match &self.workload {
            Workload::Requests { num_conns, .. } => num_conns.is_some(),
            Workload::Sessions { num_sessions, .. } | Workload::SessionLog { num_sessions, .. } => {
                num_sessions.is_some()
            }
            Workload::Users { .. } => false,
        };
        if counted {
            bail!("--stages sets the run's length: leave out --num-conns (or the session count: give 0)");
        }
        if self.warmup > 0.0 {
            bail!("--stages with --warmup is not supported: make the first stage the warm-up (its row is reported on its own)");
        }
        let total = crate::stages::total_s(&self.stages);
        if self.duration != Some(total) {
            bail!(
                "--stages sets --duration to the stages' total ({total} s): leave --duration out"
            );
        }
        Ok(())
    }

    /// This spec as a run made inside another one (the probe beside a load,
    /// a client check's step): it writes no file, prints nothing, is not
    /// calibrated, and carries `label`.
    pub(crate) fn as_inner_run(&mut self, label: String) {
        self.json = None;
        self.csv = None;
        self.raw_latencies = None;
        self.quiet = true;
        self.no_progress = true;
        self.calibrate = false;
        self.calibrate_only = false;
        self.label = label;
    }

    /// Whether this run is a client shard: `--client I/N` with N > 1, or a
    /// `--run-id` or `--start-at` given. Shards record `client_shard`,
    /// `run_id` and `start_at` in `config.extra`.
    pub fn is_shard(&self) -> bool {
        self.client.1 > 1 || self.run_id.is_some() || self.start_at.is_some()
    }

    /// The run id: `--run-id`, else `run-` and 16 hex digits of a hash of
    /// the normalised command line (without the shard index, so every shard
    /// derives the same id) and the start time: `--start-at` when given,
    /// else `started_at` (then only shards started in the same second agree).
    pub fn run_id(&self, started_at: &str) -> String {
        if let Some(id) = &self.run_id {
            return id.clone();
        }
        let (i, n) = self.client;
        let cmd = self
            .normalized_command()
            .replace(&format!("--client={i}/{n}"), &format!("--client=*/{n}"));
        let when = match self.start_at {
            Some(t) => format!("{t}"),
            None => started_at.to_string(),
        };
        format!("run-{:016x}", fnv1a(format!("{cmd}\n{when}").as_bytes()))
    }

    /// The base URL (`http://server:port`, `https://` over TLS).
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.server, self.port)
    }

    /// Checks the combination of options; called by [`crate::run`].
    pub fn validate(&self) -> Result<()> {
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if let Some(h) = &self.http2 {
            validate_http2(self, h)?;
        }
        if let Some(h) = &self.http3 {
            validate_http3(self, h)?;
        }
        if self.max_connecting == Some(0) {
            bail!("--max-connecting must be at least 1");
        }
        if !(self.sample_interval >= 0.001 && self.sample_interval.is_finite()) {
            bail!("--sample-interval must be at least 1ms");
        }
        if let Some(d) = self.duration {
            if !(d > 0.0 && d.is_finite()) {
                bail!("--duration must be a positive time");
            }
        }
        if let Some(t) = self.timeout {
            if !(t > 0.0 && t.is_finite()) {
                bail!("--timeout must be a positive number of seconds");
            }
        }
        if let Some(t) = self.max_response_time {
            if !(t > 0.0 && t.is_finite()) {
                bail!("--max-response-time must be a positive time");
            }
        }
        if self.method.is_empty() || self.method.bytes().any(|b| b.is_ascii_whitespace()) {
            bail!("--method must be a single token");
        }
        if self.uri.is_empty() || self.uri.bytes().any(|b| b.is_ascii_whitespace()) {
            bail!("--uri must be non-empty and contain no spaces");
        }
        self.validate_request()?;
        self.validate_arrival()?;
        for u in &self.uris {
            if u.is_empty() || u.bytes().any(|b| b.is_ascii_whitespace()) {
                bail!("--uri-list path '{u}' must be non-empty and contain no spaces");
            }
        }
        if !self.uris.is_empty() {
            if self.wset.is_some() {
                bail!("--uri-list and --wset are two ways to choose paths: use one");
            }
            if matches!(self.workload, Workload::SessionLog { .. }) {
                bail!("--uri-list does not apply to --wsesslog (the log names the paths)");
            }
        }
        if !(self.warmup >= 0.0 && self.warmup.is_finite()) {
            bail!("--warmup must be a non-negative time");
        }
        if let Some(c) = self.client_ceiling {
            if !(c > 0.0 && c.is_finite()) {
                bail!("--client-ceiling must be a positive rate");
            }
        }
        if self.calls_per_conn.is_some() && !matches!(self.workload, Workload::Users { .. }) {
            bail!("calls_per_conn applies to closed-loop users (--users) only");
        }
        if self.calls_per_conn == Some(0) {
            bail!("--num-calls must be at least 1");
        }
        if self.calibrate_conns == Some(0) {
            bail!("--calibrate-conns must be at least 1");
        }
        self.validate_shard()?;
        self.validate_stages()?;
        if let Some(p) = &self.probe {
            p.validate()?;
        }
        let counted = self.validate_workload()?;
        if !counted && self.duration.is_none() {
            bail!("the run needs a count (--num-conns, --requests-per-user, ...) or --duration");
        }
        if let Some((n, x)) = self.wset {
            if n == 0 || !(0.0..=1.0).contains(&x) {
                bail!("--wset N,X needs N >= 1 and 0 <= X <= 1");
            }
        }
        Ok(())
    }

    /// The request's version, headers and the sessions' pipelining.
    fn validate_request(&self) -> Result<()> {
        if self.http_version != "1.0" && self.http_version != "1.1" {
            bail!("--http-version must be 1.0 or 1.1");
        }
        for line in &self.headers {
            if !line.contains(':') {
                bail!("--add-header '{line}' is not a 'Name: value' header");
            }
        }
        if self.max_piped_calls == Some(0) {
            bail!("--max-piped-calls must be at least 1");
        }
        Ok(())
    }

    /// The schedule: positive finite gaps, at least one session at once.
    fn validate_arrival(&self) -> Result<()> {
        let pace = match &self.workload {
            Workload::Users { pace, .. } => *pace,
            _ => None,
        };
        let open = match self.arrival {
            Arrival::Open(d) => Some(d),
            Arrival::Concurrent(0) => bail!("at least one connection, session or user at once"),
            Arrival::Concurrent(_) => None,
        };
        for d in open.into_iter().chain(pace) {
            let ok = match d {
                Dist::Deterministic(p) | Dist::Exponential(p) => p.is_finite() && p > 0.0,
                Dist::Uniform(a, b) => a.is_finite() && b.is_finite() && 0.0 <= a && a < b,
            };
            if !ok {
                bail!("--rate must be a positive number (--period: positive gaps)");
            }
        }
        Ok(())
    }

    /// The workload's own limits; true when it is counted (not only a duration).
    fn validate_workload(&self) -> Result<bool> {
        Ok(match &self.workload {
            Workload::Requests {
                num_conns,
                num_calls,
                burst,
            } => {
                if *num_calls == 0 || *burst == 0 {
                    bail!("--num-calls and --burst-length must be at least 1");
                }
                num_conns.is_some()
            }
            Workload::Sessions {
                num_sessions,
                calls,
                burst,
                ..
            } => {
                if *calls == 0 || *burst == 0 {
                    bail!("--wsess needs at least one call per session and a burst length of at least 1");
                }
                num_sessions.is_some()
            }
            Workload::SessionLog {
                num_sessions,
                sessions,
                ..
            } => {
                if sessions.is_empty() {
                    bail!("--wsesslog file defines no session");
                }
                num_sessions.is_some()
            }
            Workload::Users {
                users,
                requests_per_user,
                burst,
                pace,
                ..
            } => {
                if *users == 0 {
                    bail!("--users must be at least 1");
                }
                if *burst == 0 {
                    bail!("--burst-length must be at least 1");
                }
                if *burst > 1 && pace.is_some() {
                    bail!("--burst-length with paced users (--users with --rate) is not supported: the schedule is one of requests; pipeline with closed-loop users (no --rate) or with --num-conns/--num-calls");
                }
                if matches!(self.arrival, Arrival::Open(_)) {
                    bail!(
                        "--users: use Workload::Users::pace for a rate, with Arrival::Concurrent"
                    );
                }
                requests_per_user.is_some()
            }
        })
    }

    /// `--client I/N`, `--start-at`, `--run-id`.
    fn validate_shard(&self) -> Result<()> {
        let (i, n) = self.client;
        if n == 0 || i >= n {
            bail!("--client I/N needs 0 <= I < N");
        }
        if n > 1 {
            match (&self.workload, self.arrival) {
                (Workload::Users { users, .. }, _) if *users < u64::from(n) => bail!(
                    "--client {i}/{n}: {users} user(s) cannot be split into {n} shards (user u runs on shard u mod N): use at least {n} users"
                ),
                (Workload::Users { .. }, _) | (_, Arrival::Open(_)) => {}
                (_, Arrival::Concurrent(_)) => bail!(
                    "--client {i}/{n}: a sequential run (no --rate or --period: one connection after another) has no schedule to split; give --rate (open loop) or --users (closed loop)"
                ),
            }
        }
        if let Some(t) = self.start_at {
            if !(t.is_finite() && t > 0.0) {
                bail!("--start-at must be a time after 1970");
            }
        }
        if let Some(id) = &self.run_id {
            if id.is_empty()
                || id.len() > 128
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
            {
                bail!("--run-id '{id}' must be 1 to 128 characters of A-Z a-z 0-9 - _ . :");
            }
        }
        Ok(())
    }

    /// The normalised httperf-style command line printed at the top of the report.
    pub fn normalized_command(&self) -> String {
        let mut s = String::from("httplab load");
        if self.verbose {
            s.push_str(" --verbose");
        }
        if self.print_reply.any() {
            s.push_str(" --print-reply");
        }
        if self.print_request.any() {
            s.push_str(" --print-request");
        }
        if let Some(t) = self.timeout {
            s.push_str(&format!(" --timeout={}", fmt_num(t)));
        }
        s.push_str(&format!(
            " --client={}/{} --server={} --port={} --uri={}",
            self.client.0, self.client.1, self.server, self.port, self.uri
        ));
        if let Some(t) = &self.tls {
            s.push_str(" --ssl");
            if !t.reuse {
                s.push_str(" --ssl-no-reuse");
            }
        }
        if let Some(h) = &self.http2 {
            s.push_str(&format!(
                " --http2 --max-concurrent-streams={}",
                h.max_concurrent_streams
            ));
            let d = Http2Spec::default();
            if h.stream_window != d.stream_window {
                s.push_str(&format!(" --h2-window={}", h.stream_window));
            }
            if h.conn_window != d.conn_window {
                s.push_str(&format!(" --h2-conn-window={}", h.conn_window));
            }
        }
        if let Some(h) = &self.http3 {
            s.push_str(&format!(
                " --http3 --max-concurrent-streams={}",
                h.max_concurrent_streams
            ));
        }
        if !self.stages.is_empty() {
            let list: Vec<String> = self.stages.iter().map(|s| s.spelled()).collect();
            s.push_str(&format!(" --stages={}", list.join(",")));
            if let Arrival::Open(Dist::Exponential(_)) = self.arrival {
                s.push_str(" --period=e");
            }
        } else if let Arrival::Open(d) = self.arrival {
            match d {
                Dist::Deterministic(p) => s.push_str(&format!(" --rate={}", fmt_num(1.0 / p))),
                Dist::Exponential(p) => s.push_str(&format!(" --period=e{}", fmt_num(p))),
                Dist::Uniform(a, b) => {
                    s.push_str(&format!(" --period=u{},{}", fmt_num(a), fmt_num(b)))
                }
            }
        }
        s.push_str(&format!(
            " --send-buffer={} --recv-buffer={}",
            self.send_buffer.unwrap_or(4096),
            self.recv_buffer.unwrap_or(16384)
        ));
        if self.think_timeout > 0.0 {
            s.push_str(&format!(" --think-timeout={}", fmt_num(self.think_timeout)));
        }
        for h in &self.headers {
            s.push_str(&format!(" --add-header='{}\\n'", h));
        }
        if self.method != "GET" {
            s.push_str(&format!(" --method={}", self.method));
        }
        self.workload_args(&mut s);
        if let Some((n, x)) = self.wset {
            s.push_str(&format!(" --wset={n},{x:.3}"));
        }
        if let Some(d) = self.duration {
            s.push_str(&format!(" --duration={}", fmt_num(d)));
        }
        if self.warmup > 0.0 {
            s.push_str(&format!(" --warmup={}", fmt_num(self.warmup)));
        }
        if let Some(n) = self.calls_per_conn {
            s.push_str(&format!(" --num-calls={n}"));
        }
        if !self.uris.is_empty() {
            s.push_str(&format!(" --uri-list=({} paths)", self.uris.len()));
        }
        if self.reconnect {
            s.push_str(" --reconnect");
        }
        if self.threads > 1 {
            s.push_str(&format!(" --threads={}", self.threads));
        }
        s
    }

    /// The workload's options, as [`LoadSpec::normalized_command`] spells them.
    fn workload_args(&self, s: &mut String) {
        match &self.workload {
            Workload::Requests {
                num_conns,
                num_calls,
                burst,
            } => {
                if let Some(n) = num_conns {
                    s.push_str(&format!(" --num-conns={n}"));
                }
                s.push_str(&format!(" --num-calls={num_calls}"));
                if *burst > 1 {
                    s.push_str(&format!(" --burst-length={burst}"));
                }
            }
            Workload::Sessions {
                num_sessions,
                calls,
                burst,
                think,
            } => {
                s.push_str(&format!(
                    " --wsess={},{},{:.3}",
                    num_sessions.unwrap_or(0),
                    calls,
                    think
                ));
                if *burst > 1 {
                    s.push_str(&format!(" --burst-length={burst}"));
                }
            }
            Workload::SessionLog {
                num_sessions,
                think,
                file,
                ..
            } => s.push_str(&format!(
                " --wsesslog={},{:.3},{}",
                num_sessions.unwrap_or(0),
                think,
                file
            )),
            Workload::Users {
                users,
                requests_per_user,
                think,
                burst,
                pace,
            } => {
                if let Some(d) = pace {
                    s.push_str(&format!(" --rate={}", fmt_num(1.0 / d.mean())));
                }
                s.push_str(&format!(" --users={users}"));
                if *burst > 1 {
                    s.push_str(&format!(" --burst-length={burst}"));
                }
                if let Some(r) = requests_per_user {
                    s.push_str(&format!(" --requests-per-user={r}"));
                }
                if *think > 0.0 {
                    s.push_str(&format!(" --think={}", fmt_num(*think)));
                }
            }
        }
    }
}

/// FNV-1a, 64 bits. Written here rather than using std's hasher because the
/// run id must be the same on every client, whatever Rust version built it
/// (std's `DefaultHasher` output is unspecified across releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Parses `--start-at`: RFC 3339 (`2026-03-01T12:00:00Z`, fractions of a
/// second allowed) or unix seconds (`1772366400`, `1772366400.25`). Returns
/// unix seconds.
pub fn parse_start_at(s: &str) -> Result<f64> {
    let t = s.trim();
    if let Ok(v) = t.parse::<f64>() {
        if v.is_finite() && v > 0.0 {
            return Ok(v);
        }
        bail!("bad --start-at '{s}': unix seconds must be positive");
    }
    let when = humantime::parse_rfc3339_weak(t).with_context(|| {
        format!("bad --start-at '{s}': expected RFC 3339 (2026-03-01T12:00:00Z) or unix seconds")
    })?;
    let d = when
        .duration_since(std::time::UNIX_EPOCH)
        .with_context(|| format!("bad --start-at '{s}': before 1970"))?;
    Ok(d.as_secs_f64())
}

/// Formats unix seconds as RFC 3339 UTC with microseconds.
pub fn format_unix_micros(t: f64) -> String {
    let d = std::time::Duration::from_secs_f64(t.max(0.0));
    humantime::format_rfc3339_micros(std::time::UNIX_EPOCH + d).to_string()
}

pub(crate) fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Parses a time: plain seconds (`2.5`) or with a unit (`250ms`, `10s`, `2m`, `500us`).
pub fn parse_time(s: &str) -> Result<f64> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .with_context(|| format!("bad time '{s}' (examples: 5, 2.5s, 250ms, 2m)"))?;
    if !v.is_finite() || v < 0.0 {
        bail!("bad time '{s}': must be a non-negative number");
    }
    Ok(v * mult)
}

/// Parses a `--uri-list` file: one path per line; blank lines and lines
/// starting with `#` are skipped; surrounding whitespace is trimmed.
pub fn parse_uri_list(text: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if l.bytes().any(|b| b.is_ascii_whitespace()) {
            bail!("uri list line {}: '{l}' contains whitespace", no + 1);
        }
        out.push(l.to_string());
    }
    if out.is_empty() {
        bail!("the uri list names no path");
    }
    Ok(out)
}

/// Parses a `--wsesslog` file (httperf's format): `#` comments, blank lines
/// between sessions, one URI per line with optional `method=`, `contents=`
/// and `think=`; lines starting with whitespace join the previous burst.
pub fn parse_session_log(text: &str) -> Result<Vec<LogSession>> {
    let mut sessions: Vec<LogSession> = Vec::new();
    let mut cur: LogSession = Vec::new();
    // Join "\<newline>" continuations first.
    let joined = text.replace("\\\r\n", "\n").replace("\\\n", "\n");
    for (no, line) in joined.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            if !cur.is_empty() {
                sessions.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let in_burst = line.starts_with(' ') || line.starts_with('\t');
        let (call, think) =
            parse_log_line(line.trim()).with_context(|| format!("session log line {}", no + 1))?;
        if in_burst {
            match cur.last_mut() {
                Some(b) => {
                    b.calls.push(call);
                    if think.is_some() {
                        b.think = think;
                    }
                }
                None => cur.push(LogBurst {
                    calls: vec![call],
                    think,
                }),
            }
        } else {
            cur.push(LogBurst {
                calls: vec![call],
                think,
            });
        }
    }
    if !cur.is_empty() {
        sessions.push(cur);
    }
    Ok(sessions)
}

fn parse_log_line(line: &str) -> Result<(LogCall, Option<f64>)> {
    let mut rest = line;
    let uri_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let uri = rest[..uri_end].to_string();
    rest = rest[uri_end..].trim_start();
    let mut call = LogCall {
        uri,
        method: None,
        body: None,
    };
    let mut think = None;
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .with_context(|| format!("expected key=value in '{rest}'"))?;
        let key = rest[..eq].trim();
        rest = &rest[eq + 1..];
        let value: String;
        if rest.starts_with('\'') || rest.starts_with('"') {
            let q = rest.as_bytes()[0] as char;
            let end = rest[1..]
                .find(q)
                .with_context(|| format!("unterminated quote in '{line}'"))?;
            value = rest[1..1 + end].to_string();
            rest = rest[end + 2..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            value = rest[..end].to_string();
            rest = rest[end..].trim_start();
        }
        match key {
            "method" => call.method = Some(value),
            "contents" => call.body = Some(value.replace("\\n", "\n").into_bytes()),
            "think" => {
                let t = value
                    .parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t >= 0.0)
                    .with_context(|| format!("bad think time '{value}'"))?;
                think = Some(t)
            }
            other => bail!("unknown session-log attribute '{other}'"),
        }
    }
    Ok((call, think))
}

/// Default flow-control windows, stream and connection: 2^30 - 1 bytes, as
/// h2load's `-w 30 -W 30`, so large bodies are not throttled by the
/// protocol's 64 KiB default unless asked.
pub const DEFAULT_H2_WINDOW: u32 = (1 << 30) - 1;

/// HTTP/2 settings of a run ([`LoadSpec::http2`]).
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
pub(crate) fn validate_http2(spec: &LoadSpec, h: &Http2Spec) -> Result<()> {
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
    if spec.body.as_ref().is_some_and(|b| b.len() > 65_535) {
        bail!("--http2 sends request bodies of at most 65 535 bytes (the protocol's initial flow-control window; the client does not wait for more)");
    }
    validate_streams(spec, "--http2")
}

/// What the stream drivers (`--http2`, `--http3`) do not do.
fn validate_streams(spec: &LoadSpec, flag: &str) -> Result<()> {
    match &spec.workload {
        Workload::Requests { burst, .. } | Workload::Users { burst, .. } if *burst > 1 => {
            bail!("--burst-length does not apply to {flag}: streams are concurrent, use --max-concurrent-streams")
        }
        Workload::Sessions { .. } | Workload::SessionLog { .. } => {
            bail!("--wsess and --wsesslog are not supported with {flag} (use --num-conns/--num-calls or --users)")
        }
        _ => {}
    }
    if spec.verify_root.is_some() {
        bail!("--verify-root is not supported with {flag}");
    }
    if spec.print_reply.any() || spec.print_request.any() {
        bail!("--print-request and --print-reply are not supported with {flag}");
    }
    if spec.calibrate || spec.calibrate_only {
        bail!("--calibrate measures the HTTP/1.1 engine against an HTTP/1.1 sink: not with {flag}");
    }
    if spec.http_version != "1.1" {
        bail!("--http-version does not apply to {flag}");
    }
    Ok(())
}

/// HTTP/3 settings of a run ([`LoadSpec::http3`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Http3Spec {
    /// Request streams a connection keeps open at once (default 1, as for
    /// `--http2`). The server's MAX_STREAMS also caps it.
    pub max_concurrent_streams: u32,
}

impl Default for Http3Spec {
    fn default() -> Http3Spec {
        Http3Spec {
            max_concurrent_streams: 1,
        }
    }
}

/// Refuses what the HTTP/3 driver does not do.
pub(crate) fn validate_http3(spec: &LoadSpec, h: &Http3Spec) -> Result<()> {
    if h.max_concurrent_streams == 0 {
        bail!("--max-concurrent-streams must be at least 1");
    }
    if spec.http2.is_some() {
        bail!("--http2 and --http3 contradict each other: choose one");
    }
    match &spec.tls {
        None => {
            bail!("--http3 runs over QUIC, which is always TLS: the run needs its TLS settings")
        }
        Some(t) if t.version == Some(crate::tls::TlsVersion::V1_2) => {
            bail!("--tls-version 1.2 does not apply to --http3: QUIC is TLS 1.3 only")
        }
        Some(_) => {}
    }
    validate_streams(spec, "--http3")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_header_fields_drop_connection_fields_and_refuse_bad_ones() {
        let mut s = LoadSpec::new("h", 80);
        s.headers = vec![
            "Connection: keep-alive".into(),
            "Host: other".into(),
            "X-Test: 1".into(),
            "Accept-Encoding: gzip".into(),
        ];
        s.body = Some(b"abc".to_vec());
        let h = s.stream_header_fields().unwrap();
        let names: Vec<&str> = h.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["user-agent", "x-test", "accept-encoding", "content-length"]
        );
        assert_eq!(h[1].1, "1");
        assert_eq!(h[3].1, "3");
        s.headers = vec!["no colon here".into()];
        assert!(s.stream_header_fields().is_err());
        s.headers = vec!["Bad Name: x".into()];
        assert!(s.stream_header_fields().is_err());
        assert_eq!(LoadSpec::new("::1", 8443).authority(), "[::1]:8443");
    }

    #[test]
    fn period_forms() {
        assert_eq!(
            Dist::parse_period("0.2").unwrap(),
            Some(Dist::Deterministic(0.2))
        );
        assert_eq!(
            Dist::parse_period("d0.2").unwrap(),
            Some(Dist::Deterministic(0.2))
        );
        assert_eq!(
            Dist::parse_period("e0.01").unwrap(),
            Some(Dist::Exponential(0.01))
        );
        assert_eq!(
            Dist::parse_period("u1,3").unwrap(),
            Some(Dist::Uniform(1.0, 3.0))
        );
        assert_eq!(Dist::parse_period("0").unwrap(), None);
        assert!(Dist::parse_period("u3,1").is_err());
        assert!(Dist::parse_period("x").is_err());
        assert!(Dist::parse_period("v1").is_err());
    }

    #[test]
    fn uri_lists() {
        let l = parse_uri_list("# set\n/a.html\n\n  /b/c.html  \n#x\n/d?q=1\n").unwrap();
        assert_eq!(l, vec!["/a.html", "/b/c.html", "/d?q=1"]);
        assert!(parse_uri_list("# nothing\n\n").is_err());
        assert!(parse_uri_list("/a b\n").is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("5").unwrap(), 5.0);
        assert_eq!(parse_time("250ms").unwrap(), 0.25);
        assert_eq!(parse_time("2m").unwrap(), 120.0);
        assert_eq!(parse_time("10s").unwrap(), 10.0);
        assert!(parse_time("-1").is_err());
        assert!(parse_time("abc").is_err());
    }

    #[test]
    fn manpage_session_log() {
        let text = "# comment\n\n/foo.html think=2.0\n     /pict1.gif\n     /pict2.gif\n/foo2.html method=POST contents='Post data'\n     /pict3.gif\n     /pict4.gif\n\n\n# session 2\n/foo3.html method=POST contents=\"Multiline\\ndata\"\n/foo4.html method=HEAD\n";
        let s = parse_session_log(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].len(), 2);
        assert_eq!(s[0][0].calls.len(), 3);
        assert_eq!(s[0][0].think, Some(2.0));
        assert_eq!(s[0][1].calls[0].method.as_deref(), Some("POST"));
        assert_eq!(s[0][1].calls[0].body.as_deref(), Some(&b"Post data"[..]));
        assert_eq!(
            s[1][0].calls[0].body.as_deref(),
            Some(&b"Multiline\ndata"[..])
        );
        assert_eq!(s[1][1].calls[0].method.as_deref(), Some("HEAD"));
        assert!(parse_session_log("/a bogus=1\n").is_err());
        assert!(parse_session_log("/a contents='x\n").is_err());
    }
    #[test]
    fn validate_refuses_what_the_driver_does_not_do() {
        let h = Http2Spec::default();
        let mut s = LoadSpec::new("h", 80);
        assert!(validate_http2(&s, &h).is_ok());
        s.verify_root = Some("/".into());
        assert!(validate_http2(&s, &h).is_err());
        let s = LoadSpec::new("h", 80);
        let bad = Http2Spec {
            stream_window: MAX_WINDOW + 1,
            ..Http2Spec::default()
        };
        assert!(validate_http2(&s, &bad).is_err());
    }
}
