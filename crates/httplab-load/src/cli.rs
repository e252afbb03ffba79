//! The command line: httperf 0.9's options with httperf's meaning (and its
//! unambiguous-prefix spellings), plus httplab's own.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use crate::spec::{
    parse_session_log, parse_start_at, parse_time, Arrival, Dist, IoEngine, LoadSpec, PrintWhat,
    Workload,
};
use crate::tls::{parse_ciphers, TlsSpec, TlsVersion};

const AFTER_HELP: &str = "\
Any httperf command line works with `httperf` replaced by `httplab load`; long
options may be abbreviated to any unambiguous prefix (--num-conn, --ra) and take
their value as `--opt=value` or `--opt value`.

Examples:
  httplab load --server localhost --port 8080 --uri /index.html --rate 100 --num-conns 1000 --timeout 5
  httplab load http://127.0.0.1:8080/x --rate 1000 --duration 10s --json run.json
  httplab load http://127.0.0.1:8080/ --users 50 --requests-per-user 200 --think 10ms
  httplab load --server h --wsesslog 100,1,sessions.txt --rate 10
  httplab load https://example.org/ --rate 50 --num-conns 500 --timeout 5
  httplab load --ssl --server 127.0.0.1 --port 8443 --uri /x --rate 100 --num-conns 1000
  httplab load https://127.0.0.1:8443/x --insecure --http2 --users 4 --requests-per-user 2500 --max-concurrent-streams 16
  httplab load https://127.0.0.1:8443/x --http3 --cacert ca.pem --rate 100 --num-conns 100 --num-calls 10

Latency is measured both from the scheduled start (coordinated-omission
corrected) and from the actual send. See the crate documentation for the JSON schema.";

/// `httplab load`: an httperf-compatible open/closed-loop HTTP/1.1 load generator.
#[derive(Parser, Debug, Default)]
#[command(
    name = "httplab load",
    version,
    infer_long_args = true,
    disable_help_subcommand = true,
    after_help = AFTER_HELP,
    max_term_width = 100
)]
struct Cli {
    /// Target URL (http://host[:port]/path or https://...); sets --server, --port and
    /// --uri; https:// speaks TLS and verifies the server's certificate.
    #[arg(value_name = "URL")]
    url: Option<String>,

    // ---- httperf: target and request ----
    /// Server host name or address [default: localhost].
    #[arg(long, value_name = "S", help_heading = "Target")]
    server: Option<String>,
    /// Host header value instead of the --server name.
    #[arg(long, value_name = "S", help_heading = "Target")]
    server_name: Option<String>,
    /// Server port [default: 80].
    #[arg(long, value_name = "N", help_heading = "Target")]
    port: Option<u16>,
    /// Request URI (the prefix of the file names with --wset) [default: /].
    #[arg(long, value_name = "S", help_heading = "Target")]
    uri: Option<String>,
    /// Paths from FILE (one per line, # comments): each request takes the next path in
    /// rotation (a file set, or a page then its objects); works with every workload but
    /// --wset and --wsesslog, and with --verify-root (httplab extension).
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    uri_list: Option<PathBuf>,
    /// Request method [default: GET].
    #[arg(long, value_name = "S", help_heading = "Target")]
    method: Option<String>,
    /// HTTP version of the requests: 1.1 or 1.0 [default: 1.1].
    #[arg(long, value_name = "S", help_heading = "Target")]
    http_version: Option<String>,
    /// Extra header(s); repeatable; "\n" separates several headers in one value.
    #[arg(long, value_name = "S", action = ArgAction::Append, help_heading = "Target")]
    add_header: Vec<String>,
    /// Leave out the Host header.
    #[arg(long, help_heading = "Target")]
    no_host_hdr: bool,
    /// Request body sent with every request-oriented call (httplab extension).
    #[arg(long, value_name = "S", help_heading = "Target")]
    body: Option<String>,

    // ---- httperf: workload ----
    /// Connections (or sessions) created per second; 0 = one after another.
    #[arg(long, value_name = "X", help_heading = "Workload (httperf)")]
    rate: Option<f64>,
    /// Inter-arrival time [d|u|e]T1[,T2] seconds: deterministic, uniform [T1,T2), exponential.
    #[arg(long, value_name = "[D]T1[,T2]", help_heading = "Workload (httperf)")]
    period: Option<String>,
    /// Rate stages instead of one --rate: DURATION:RATE (held) or DURATION:R1-R2 (a linear
    /// ramp), comma-separated, e.g. 10s:1000,30s:1000-8000,10s:8000. RATE is what --rate
    /// means (connections, or sessions, per second). Open loop only; the run lasts the
    /// stages' total (no --duration, --num-conns, --rate, --users, --warmup). Arrivals are
    /// evenly spaced, or Poisson with --period e. Every call belongs to the stage of its
    /// scheduled instant: the report has one row per stage (httplab extension).
    #[arg(long, value_name = "D:R[-R2],...", help_heading = "Workload (httperf)")]
    stages: Option<String>,
    /// Unqueued latency probe: a light open-loop client beside the load (its own thread,
    /// pinned to a core the load threads do not use when there is one) sending the same
    /// request at RATE requests/s over CONNS connections [default: 1] for the whole run.
    /// The report puts its p50/p99 beside the load's and warns when the load's median is
    /// above the probe's p99 (the client queued its own requests) (httplab extension).
    #[arg(long, value_name = "RATE[,CONNS]", help_heading = "Workload (httperf)")]
    probe: Option<String>,
    /// Total connections to create [default: 1].
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    num_conns: Option<u64>,
    /// Calls (requests) per connection [default: 1]; with --users, the requests a user makes
    /// on one connection before it opens a new one (default: all of them).
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    num_calls: Option<u64>,
    /// Calls per burst; a burst's calls are pipelined on the connection.
    /// With closed-loop --users (httplab extension): each user sends N
    /// requests at once and waits for all N replies (h2load --h1 -m N style)
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    burst_length: Option<u32>,
    /// Sessions: N1 sessions of N2 calls, X seconds of think time between bursts.
    #[arg(long, value_name = "N1,N2,X", help_heading = "Workload (httperf)")]
    wsess: Option<String>,
    /// Sessions from FILE (httperf format: bursts, think=, method=, contents=), N sessions, default think X.
    #[arg(long, value_name = "N,X,FILE", help_heading = "Workload (httperf)")]
    wsesslog: Option<String>,
    /// File set: walk N files named <uri>/d/d/d.html; X is the fraction of requests that move on to the next file.
    #[arg(long, value_name = "N,X", help_heading = "Workload (httperf)")]
    wset: Option<String>,
    /// Sessions: at most N connections per session (httplab uses one connection per session).
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    max_connections: Option<u32>,
    /// Sessions: at most N pipelined calls outstanding per connection.
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    max_piped_calls: Option<u32>,
    /// Sessions: retry a call answered with --failure-status instead of failing the session.
    #[arg(long, help_heading = "Workload (httperf)")]
    retry_on_failure: bool,
    /// Sessions: a reply with this status code fails the session.
    #[arg(long, value_name = "N", help_heading = "Workload (httperf)")]
    failure_status: Option<u16>,
    /// This machine is client I of N: it runs shard I of the run's schedule (open loop: the
    /// arrivals k with k mod N = I, at their planned times; --users: the users u with
    /// u mod N = I); N shards together run exactly the one-machine schedule.
    #[arg(long, value_name = "I/N", help_heading = "Workload (httperf)")]
    client: Option<String>,

    // ---- httperf: connections and timing ----
    /// Seconds to wait for progress (connect, send, reply) before counting client-timo [default: forever].
    #[arg(long, value_name = "X", help_heading = "Connections (httperf)")]
    timeout: Option<String>,
    /// Seconds added to --timeout while waiting for a reply to start.
    #[arg(long, value_name = "X", help_heading = "Connections (httperf)")]
    think_timeout: Option<String>,
    /// Longest a reply may take, from its request's send to its last byte, however steadily it
    /// streams (--timeout only bounds the gaps between bytes); a reply over it is cut and counted
    /// as response-timo. Units as --timeout (2, 500ms, 1m) [default: no limit; a --duration run
    /// still ends at its drain].
    #[arg(long, value_name = "X", help_heading = "Connections (httperf)")]
    max_response_time: Option<String>,
    /// SO_SNDBUF of each connection in bytes (httperf's 4096 is shown but only set when given).
    #[arg(long, value_name = "N", help_heading = "Connections (httperf)")]
    send_buffer: Option<usize>,
    /// SO_RCVBUF of each connection in bytes (httperf's 16384 is shown but only set when given).
    #[arg(long, value_name = "N", help_heading = "Connections (httperf)")]
    recv_buffer: Option<usize>,
    /// Use the whole port range (always the case in httplab; accepted for compatibility).
    #[arg(long, help_heading = "Connections (httperf)")]
    hog: bool,
    /// Close connections with a TCP RST instead of FIN.
    #[arg(long, help_heading = "Connections (httperf)")]
    close_with_reset: bool,

    // ---- httperf: output ----
    /// Print replies to stdout (RH/RB/RS lines): all, header or body.
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "all", help_heading = "Output")]
    print_reply: Option<String>,
    /// Print requests to stdout (SH/SB/SS lines): all, header or body.
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "all", help_heading = "Output")]
    print_request: Option<String>,
    /// Verbose report: every reply-rate sample and the connection-lifetime histogram.
    #[arg(short, long, action = ArgAction::Count, help_heading = "Output")]
    verbose: u8,
    /// httperf debug level (accepted, ignored).
    #[arg(short = 'd', long, value_name = "N", help_heading = "Output")]
    debug: Option<u32>,
    /// Write the complete result (schema httplab.run/1) as JSON to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    json: Option<PathBuf>,
    /// Write the per-interval time series as CSV to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    csv: Option<PathBuf>,
    /// Write the per-interval series to FILE: `.csv`, or `.jsonl` (one JSON object per line).
    /// Columns: t_s, len_s, rate, replies, errors, p50_ms, p99_ms, open_connections,
    /// server_cpu_s (empty here: a plain run does not sample the server; study runs do).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    series: Option<PathBuf>,
    /// Serve live metrics (Prometheus text format) on http://ADDR/metrics while the run
    /// goes on, updated once per interval; port 0 picks a free port (the address is
    /// printed on stderr as `metrics: http://ADDR/metrics`).
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    prometheus: Option<String>,
    /// Length of the time-series intervals and reply-rate samples [default: 1s].
    #[arg(long, value_name = "TIME", help_heading = "Output")]
    sample_interval: Option<String>,
    /// Do not print the report (use with --json).
    #[arg(short, long, help_heading = "Output")]
    quiet: bool,
    /// Before the run, check the client: a short step (0.5 s warm-up, at most 2.5 s measured)
    /// at the run's rate from one client process, then from two processes (`--client 0/2`
    /// and `1/2`) at the same total rate; warns when their reply rate or p50/p99 differ
    /// beyond the steps' own spread (the client distorts the measurement), and records the
    /// check in the JSON (`client_check`).
    #[arg(long, help_heading = "Output")]
    check_client: bool,
    /// Internal: run one client's part of a --check-client step and print its result as JSON.
    #[arg(long, value_name = "I/N@START", hide = true)]
    client_check_step: Option<String>,
    /// No live progress line, even on a terminal.
    #[arg(long, help_heading = "Output")]
    no_progress: bool,
    /// Label stored in the JSON result.
    #[arg(long, value_name = "S", help_heading = "Output")]
    label: Option<String>,
    /// Run the same load N times back to back and write ONE result holding the N runs (run 1
    /// at the top level, runs 2..N under `repeats`); the report prints one line per run and
    /// the geometric means of reply rate, p50 and p99 with 95 % t intervals over the runs.
    /// What `httplab compare` needs for a verdict (at least 2 runs per side) [default: 1].
    #[arg(long, value_name = "N", help_heading = "Output")]
    repeat: Option<u32>,

    // ---- httplab extensions ----
    /// Run for this long (e.g. 10s) instead of a count; with --rate the schedule runs this long.
    #[arg(long, value_name = "TIME", help_heading = "httplab")]
    duration: Option<String>,
    /// Seed of the random schedules (the same on every --client shard: they split one schedule).
    #[arg(long, value_name = "N", help_heading = "httplab")]
    seed: Option<u64>,
    /// Worker threads; the schedule is split between them [default: 1].
    #[arg(long, value_name = "N", help_heading = "httplab")]
    threads: Option<u32>,
    /// Closed loop: N users, each sends, waits for the reply, thinks, repeats. With --rate R
    /// the users' requests follow a schedule of R requests/s (wrk2 style, latency corrected).
    #[arg(long, value_name = "N", help_heading = "httplab")]
    users: Option<u64>,
    /// Closed loop: requests each user sends (or use --duration).
    #[arg(long, value_name = "M", help_heading = "httplab")]
    requests_per_user: Option<u64>,
    /// Closed loop: think time between a reply and the user's next request (e.g. 100ms).
    #[arg(long, value_name = "TIME", help_heading = "httplab")]
    think: Option<String>,
    /// Source addresses to spread connections over (repeatable or comma-separated), e.g. 127.0.0.2,127.0.0.3.
    #[arg(long, value_name = "IP[,IP...]", action = ArgAction::Append, help_heading = "httplab")]
    local_addr: Vec<String>,
    /// Compare every 200 reply body with the file of the same path under DIR.
    #[arg(long, value_name = "DIR", help_heading = "httplab")]
    verify_root: Option<PathBuf>,
    /// Spin on epoll instead of sleeping (one core per thread at 100%): lowest latency overhead.
    #[arg(long, help_heading = "httplab")]
    busy_poll: bool,
    /// Socket I/O engine for cleartext HTTP/1.1: `uring` submits a turn's sends and
    /// receives and reaps their completions in one io_uring_enter (instead of a system
    /// call per send, per receive and per wait; measured ~1.1x the requests per client
    /// CPU-second of epoll on loopback, where the TCP path itself dominates); `epoll`
    /// is the readiness loop; `auto` is io_uring where the kernel has it (Linux 5.11+,
    /// kernel.io_uring_disabled = 0), epoll otherwise. HTTPS and --http2 always use
    /// their own drivers. `uring` where io_uring is unavailable warns and runs on
    /// epoll. The report and the JSON (config.extra.io_engine) name the engine.
    #[arg(long, value_name = "ENGINE", value_parser = ["auto", "epoll", "uring"], default_value = "auto", help_heading = "httplab")]
    io: String,
    /// Sends later than this count as late; a p99 schedule lag above it marks the run client-bound [default: 2ms].
    #[arg(long, value_name = "TIME", help_heading = "httplab")]
    lag_threshold: Option<String>,
    /// Run this long first and leave everything scheduled in it out of every statistic
    /// (counters, latencies, errors, series, CPU); --duration then measures after it [default: 0].
    #[arg(long, value_name = "TIME", help_heading = "httplab")]
    warmup: Option<String>,
    /// When the server closes a connection after a reply, make the connection's remaining
    /// --num-calls on a new one, as a browser does (default, like httperf: the connection
    /// ends and its remaining calls are not made). Session time covers all N calls.
    #[arg(long, help_heading = "httplab")]
    reconnect: bool,
    /// Measure the generator's own ceiling for this run's shape (connections, calls per
    /// connection, pipelining, response size) against an in-process sink on the other
    /// cores, then run with it: the report gives client utilization (achieved ÷ ceiling).
    #[arg(long, help_heading = "Calibration")]
    calibrate: bool,
    /// Like --calibrate, but only print the calibration (no server needed).
    #[arg(long, help_heading = "Calibration")]
    calibrate_only: bool,
    /// Calibration: sink response body size in bytes [default: the first path's file under
    /// --verify-root, else 100].
    #[arg(long, value_name = "N", help_heading = "Calibration")]
    calibrate_size: Option<u64>,
    /// Calibration: connections in flight for open-loop runs (closed loop: --users) [default: 16].
    #[arg(long, value_name = "N", help_heading = "Calibration")]
    calibrate_conns: Option<u64>,
    /// A known client ceiling (requests/s, e.g. from an earlier --calibrate-only) for the
    /// client-utilization check; a run at >= 85 % of it is client-bound.
    #[arg(long, value_name = "R", help_heading = "Calibration")]
    client_ceiling: Option<f64>,

    // ---- client shards ----
    /// Start the schedule on this instant (RFC 3339 UTC, e.g. 2026-03-01T12:00:00Z, or unix
    /// seconds): wait for it (at most 24 h ahead); refused once it has passed. Give every
    /// shard of a run the same instant.
    #[arg(long, value_name = "TIME", help_heading = "Client shards")]
    start_at: Option<String>,
    /// Id of the run, the same on every shard (recorded for `httplab merge`) [default: derived
    /// from the command line without the shard index and --start-at].
    #[arg(long, value_name = "ID", help_heading = "Client shards")]
    run_id: Option<String>,
    /// Testing aid: write every corrected response time (µs, one a line) to FILE. (Not
    /// `--raw-...`: that would make httperf's `--ra` prefix of --rate ambiguous.)
    #[arg(long = "latency-dump", value_name = "FILE", hide = true)]
    raw_latencies: Option<PathBuf>,

    // ---- httperf options httplab does not implement ----
    #[arg(long, hide = true)]
    session_cookie: bool,
    #[arg(long, hide = true)]
    wlog: Option<String>,
    #[arg(long, hide = true)]
    use_timer_cache: bool,

    // ---- TLS (httperf's --ssl options, and https:// URLs) ----
    /// Speak TLS (httperf): the certificate is NOT verified, as in httperf, and the report
    /// says so; default port 443. https:// URLs verify instead.
    #[arg(long, help_heading = "TLS")]
    ssl: bool,
    /// Cipher suites to offer, OpenSSL or rustls names, ':' separated (rustls has only
    /// modern AEAD suites; others are refused with the list of available ones).
    #[arg(long, value_name = "LIST", help_heading = "TLS")]
    ssl_ciphers: Option<String>,
    /// Do not resume TLS sessions: every connection makes a full handshake (httperf;
    /// resumption by session ticket or ID is on by default).
    #[arg(long, help_heading = "TLS")]
    ssl_no_reuse: bool,
    /// Verify the server's certificate against the CA certificates in this PEM file
    /// instead of the system's roots (also turns verification on with --ssl).
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    cacert: Option<PathBuf>,
    /// Do not verify the server's certificate (https:// URLs; a self-signed target).
    #[arg(long, help_heading = "TLS")]
    insecure: bool,
    /// Offer only this TLS version: 1.2 or 1.3 [default: both].
    #[arg(long, value_name = "V", help_heading = "TLS")]
    tls_version: Option<String>,

    // ---- overload ----
    /// Most connections in setup at once (connecting, in the TLS handshake, or waiting for
    /// their first reply byte), over all threads; when reached, open-loop arrivals wait and
    /// their wait counts in the corrected latency (an arrival waiting longer than --timeout
    /// is counted as client-timo without being attempted). Keeps an overloaded server's
    /// listen queue from overflowing [default: 500].
    #[arg(long, value_name = "N", help_heading = "Overload")]
    max_connecting: Option<u64>,

    // ---- HTTP/2 ----
    /// Speak HTTP/2: over TLS (https:// or --ssl) the client offers ALPN h2 (and http/1.1,
    /// so a server without h2 is named); on cleartext it is h2c with prior knowledge. Each
    /// call is a stream; --num-calls streams per connection, --num-conns connections,
    /// --rate connection arrivals, --users connections that keep their streams busy.
    #[arg(long, help_heading = "HTTP/2")]
    http2: bool,
    /// Streams each HTTP/2 or HTTP/3 connection keeps open at once (h2load's -m); the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS (HTTP/3: MAX_STREAMS) caps it too [default:
    /// 1, as h2load].
    #[arg(long, value_name = "N", help_heading = "HTTP/2")]
    max_concurrent_streams: Option<u32>,
    /// Initial HTTP/2 stream flow-control window, bytes [default: 1073741823 = 2^30-1, as
    /// h2load's -w 30].
    #[arg(long, value_name = "BYTES", help_heading = "HTTP/2")]
    h2_window: Option<u32>,
    /// HTTP/2 connection flow-control window, bytes [default: 1073741823 = 2^30-1, as
    /// h2load's -W 30].
    #[arg(long, value_name = "BYTES", help_heading = "HTTP/2")]
    h2_conn_window: Option<u32>,

    // ---- HTTP/3 ----
    /// Speak HTTP/3 over QUIC (UDP, TLS 1.3, ALPN h3). TLS is implied: the server's
    /// certificate is verified as for https:// (--cacert, --insecure). Each call is a
    /// request stream; --num-calls, --num-conns, --rate, --users and
    /// --max-concurrent-streams as for --http2.
    #[arg(long, help_heading = "HTTP/3")]
    http3: bool,
}

/// Outcome of parsing a command line.
#[derive(Debug)]
pub enum Parsed {
    /// A run to do.
    Run(Box<LoadSpec>),
    /// The same run, `times` (≥ 2) times back to back (`--repeat N`).
    Repeat {
        /// The run.
        spec: Box<LoadSpec>,
        /// How many times.
        times: u32,
    },
    /// Help or version text to print.
    Text(String),
}

/// Spellings of wrk, oha and hey, and what `httplab load` says instead.
const LOAD_HINTS: &[httplab_usage::Hint] = &[
    (
        "-c",
        "--users N (N closed-loop users) or --num-conns N --rate R (open loop)",
    ),
    (
        "--connections",
        "--users N (N closed-loop users) or --num-conns N --rate R (open loop)",
    ),
    ("-t", "--threads N"),
    ("-z", "--duration D"),
    (
        "-n",
        "--num-conns N (httperf) or --users U --requests-per-user N",
    ),
];

/// Parses `httplab load` arguments (`args[0]` is the program name).
pub fn parse(args: &[OsString]) -> Result<Parsed> {
    let cmd = Cli::command();
    let matches = match cmd.try_get_matches_from(args.iter()) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    return Ok(Parsed::Text(e.render().to_string()))
                }
                _ => {
                    let text = httplab_usage::clap_message("load", &e, LOAD_HINTS);
                    let text = text.trim_end();
                    let text = text.strip_prefix("httplab load: error: ").unwrap_or(text);
                    return Err(httplab_usage::usage(text).into());
                }
            }
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| anyhow::anyhow!("{e}"))?;
    let command_line: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let repeat = cli.repeat;
    let spec = Box::new(to_spec(cli, command_line)?);
    match repeat {
        None | Some(1) => Ok(Parsed::Run(spec)),
        Some(0) => bail!("--repeat must be at least 1"),
        Some(times) => {
            check_repeatable(&spec)?;
            Ok(Parsed::Repeat { spec, times })
        }
    }
}

/// Options that describe one run only and cannot be repeated.
fn check_repeatable(spec: &LoadSpec) -> Result<()> {
    if spec.is_shard() || spec.start_at.is_some() {
        bail!("--repeat cannot be combined with --client I/N or --start-at: repeated results cannot be merged; repeat the whole sharded run instead");
    }
    if spec.csv.is_some() || spec.raw_latencies.is_some() {
        bail!("--csv writes one run's time series: with --repeat use --json (every run's series is in it)");
    }
    if spec.calibrate_only {
        bail!("--repeat with --calibrate-only: nothing to repeat");
    }
    Ok(())
}

fn to_spec(cli: Cli, command_line: Vec<String>) -> Result<LoadSpec> {
    if cli.session_cookie {
        bail!("--session-cookie is not supported");
    }
    if cli.wlog.is_some() {
        bail!("--wlog is not supported; use --wsesslog or --wset");
    }
    let mut spec = LoadSpec::new("localhost", 80);
    spec.command_line = command_line;
    set_target(&cli, &mut spec)?;
    set_live(&cli, &mut spec)?;

    // Arrivals.
    let mut open: Option<Dist> = None;
    if let Some(r) = cli.rate {
        if !r.is_finite() || r < 0.0 {
            bail!("--rate must be a non-negative number");
        }
        if r > 0.0 {
            open = Some(Dist::Deterministic(1.0 / r));
        }
    }
    let stages = stage_list(&cli)?;
    if let Some(p) = &cli.period {
        if stages.is_none() {
            open = Dist::parse_period(p)?;
        }
    }
    spec.arrival = match open {
        Some(d) => Arrival::Open(d),
        None => Arrival::Concurrent(1),
    };
    if let Some(d) = &cli.duration {
        spec.duration = Some(parse_time(d).context("--duration")?);
    }
    if let Some(t) = &cli.timeout {
        spec.timeout = Some(parse_time(t).context("--timeout")?);
    }
    if let Some(t) = &cli.max_response_time {
        spec.max_response_time = Some(parse_time(t).context("--max-response-time")?);
    }
    if let Some(t) = &cli.think_timeout {
        spec.think_timeout = parse_time(t).context("--think-timeout")?;
    }
    // The workload (before any option moves out of `cli`), through the stages.
    set_staged_workload(&cli, &mut spec, open, stages)?;
    spec.send_buffer = cli.send_buffer;
    spec.recv_buffer = cli.recv_buffer;
    spec.close_with_reset = cli.close_with_reset;
    spec.retry_on_failure = cli.retry_on_failure;
    spec.failure_status = cli.failure_status;
    spec.max_connections = cli.max_connections;
    spec.max_piped_calls = cli.max_piped_calls;
    spec.print_reply = parse_print(cli.print_reply.as_deref(), "--print-reply")?;
    spec.print_request = parse_print(cli.print_request.as_deref(), "--print-request")?;
    spec.verbose = cli.verbose > 0;
    let _ = (cli.debug, cli.hog, cli.use_timer_cache);
    if let Some(c) = &cli.client {
        let (i, n) = c
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)))
            .with_context(|| format!("bad --client '{c}': expected I/N"))?;
        spec.client = (i, n);
    }
    // Not derived from the shard index: every shard generates the one schedule.
    spec.seed = cli.seed.unwrap_or(crate::spec::DEFAULT_SEED);
    if let Some(t) = &cli.start_at {
        spec.start_at = Some(parse_start_at(t)?);
    }
    spec.run_id = cli.run_id;
    spec.raw_latencies = cli.raw_latencies;
    spec.threads = cli.threads.unwrap_or(1);
    if let Some(s) = &cli.sample_interval {
        spec.sample_interval = parse_time(s).context("--sample-interval")?;
    }
    if let Some(s) = &cli.lag_threshold {
        spec.lag_threshold = parse_time(s).context("--lag-threshold")?;
    }
    for a in &cli.local_addr {
        for part in a.split(',').filter(|p| !p.trim().is_empty()) {
            let ip: IpAddr = part
                .trim()
                .parse()
                .with_context(|| format!("bad --local-addr '{part}'"))?;
            spec.local_addrs.push(ip);
        }
    }
    spec.verify_root = cli.verify_root;
    spec.json = cli.json;
    spec.csv = cli.csv;
    spec.quiet = cli.quiet;
    spec.busy_poll = cli.busy_poll;
    spec.io = match cli.io.as_str() {
        "epoll" => IoEngine::Epoll,
        "uring" => IoEngine::Uring,
        _ => IoEngine::Auto,
    };
    if let Some(w) = &cli.warmup {
        spec.warmup = parse_time(w).context("--warmup")?;
    }
    spec.reconnect = cli.reconnect;
    spec.calibrate = cli.calibrate;
    spec.calibrate_only = cli.calibrate_only;
    spec.calibrate_size = cli.calibrate_size;
    spec.calibrate_conns = cli.calibrate_conns;
    spec.client_ceiling = cli.client_ceiling;
    spec.no_progress = cli.no_progress;
    spec.label = cli.label.unwrap_or_default();

    spec.validate()?;
    Ok(spec)
}

/// `--series`, `--prometheus`, `--check-client` into `spec.live`.
fn set_live(cli: &Cli, spec: &mut LoadSpec) -> Result<()> {
    if let Some(p) = &cli.series {
        httplab_model::series::SeriesFormat::of_path(p).map_err(anyhow::Error::msg)?;
        spec.live.series = Some(p.clone());
    }
    if let Some(a) = &cli.prometheus {
        spec.live.prometheus = Some(httplab_live::parse_addr(a).map_err(anyhow::Error::msg)?);
    }
    spec.live.check_client = cli.check_client;
    if let Some(s) = &cli.client_check_step {
        spec.live.step = Some(crate::client_check::parse_step(s)?);
    }
    Ok(())
}

/// The target, request and TLS/HTTP/2 options into `spec`.
fn set_target(cli: &Cli, spec: &mut LoadSpec) -> Result<()> {
    let mut https = false;
    if let Some(url) = &cli.url {
        let (secure, host, port, path) = parse_url(url)?;
        https = secure;
        spec.server = host;
        spec.port = port;
        spec.uri = path;
    } else if cli.ssl || cli.http3 {
        // httperf: --ssl without --port means 443 (so does QUIC).
        spec.port = 443;
    }
    spec.tls = tls_spec(cli, https)?;
    spec.http2 = http2_spec(cli)?;
    spec.http3 = http3_spec(cli);
    spec.max_connecting = cli.max_connecting;
    if let Some(s) = cli.server.clone() {
        spec.server = s;
    }
    if let Some(p) = cli.port {
        spec.port = p;
    }
    if let Some(u) = cli.uri.clone() {
        spec.uri = u;
    }
    if let Some(f) = &cli.uri_list {
        spec.set_uri_list(f)?;
    }
    spec.host_header = cli.server_name.clone();
    if let Some(m) = cli.method.clone() {
        spec.method = m;
    }
    if let Some(v) = cli.http_version.clone() {
        spec.http_version = v;
    }
    for h in &cli.add_header {
        for line in h.replace("\\r", "").split("\\n") {
            let line = line.trim_end_matches(['\r', '\n']);
            if !line.is_empty() {
                spec.headers.push(line.to_string());
            }
        }
    }
    spec.no_host_hdr = cli.no_host_hdr;
    spec.body = cli.body.clone().map(String::into_bytes);
    Ok(())
}

/// The workload options (`--num-conns`/`--num-calls`, `--wsess`,
/// `--wsesslog`, `--users`) into `spec` (`open`: the arrival schedule, if any).
fn set_workload(cli: &Cli, spec: &mut LoadSpec, open: Option<Dist>) -> Result<()> {
    if let Some(w) = &cli.wset {
        let parts: Vec<&str> = w.split(',').collect();
        let bad = || format!("bad --wset '{w}': expected N,X");
        if parts.len() != 2 {
            bail!(bad());
        }
        let n: u64 = parts[0].trim().parse().with_context(bad)?;
        let x: f64 = parts[1].trim().parse().with_context(bad)?;
        spec.wset = Some((n, x));
    }
    // Workload.
    let burst = cli.burst_length.unwrap_or(1);
    let modes = [
        cli.wsess.is_some(),
        cli.wsesslog.is_some(),
        cli.users.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    if modes > 1 {
        bail!("choose one of --wsess, --wsesslog and --users");
    }
    if let Some(ws) = &cli.wsess {
        let p: Vec<&str> = ws.split(',').collect();
        let bad = || format!("bad --wsess '{ws}': expected N1,N2,X");
        if p.len() != 3 {
            bail!(bad());
        }
        let n1: u64 = p[0].trim().parse().with_context(bad)?;
        let n2: u64 = p[1].trim().parse().with_context(bad)?;
        let x = parse_time(p[2]).with_context(bad)?;
        spec.workload = Workload::Sessions {
            num_sessions: if n1 == 0 && spec.duration.is_some() {
                None
            } else {
                Some(n1)
            },
            calls: n2,
            burst,
            think: x,
        };
    } else if let Some(wl) = &cli.wsesslog {
        let mut it = wl.splitn(3, ',');
        let bad = || format!("bad --wsesslog '{wl}': expected N,X,FILE");
        let n: u64 = it.next().unwrap_or("").trim().parse().with_context(bad)?;
        let x = parse_time(it.next().unwrap_or("")).with_context(bad)?;
        let file = it.next().with_context(bad)?.to_string();
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read --wsesslog file '{file}'"))?;
        let sessions = parse_session_log(&text).with_context(|| format!("in '{file}'"))?;
        spec.workload = Workload::SessionLog {
            num_sessions: if n == 0 && spec.duration.is_some() {
                None
            } else {
                Some(n)
            },
            think: x,
            sessions,
            file,
        };
    } else if let Some(users) = cli.users {
        let think = match &cli.think {
            Some(t) => parse_time(t).context("--think")?,
            None => 0.0,
        };
        spec.calls_per_conn = cli.num_calls;
        spec.workload = Workload::Users {
            users,
            requests_per_user: cli.requests_per_user.or(if spec.duration.is_some() {
                None
            } else {
                Some(1)
            }),
            think,
            burst,
            pace: open,
        };
        spec.arrival = Arrival::Concurrent(users);
    } else {
        if cli.requests_per_user.is_some() || cli.think.is_some() {
            bail!("--requests-per-user and --think need --users");
        }
        let num_conns = match (cli.num_conns, spec.duration) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        };
        spec.workload = Workload::Requests {
            num_conns,
            num_calls: cli.num_calls.unwrap_or(1),
            burst,
        };
    }
    Ok(())
}

/// The workload, with `--stages` (the stages' mean rate and total length in
/// place of `--rate` and `--duration`) and `--probe`.
fn set_staged_workload(
    cli: &Cli,
    spec: &mut LoadSpec,
    mut open: Option<Dist>,
    stages: Option<(Vec<crate::stages::Stage>, bool)>,
) -> Result<()> {
    if let Some((st, exponential)) = &stages {
        // The rate's place: the stages' mean; the length: their total.
        let mut shape = LoadSpec::new("localhost", 80);
        shape.set_stages(st.clone(), *exponential);
        open = match shape.arrival {
            Arrival::Open(d) => Some(d),
            Arrival::Concurrent(_) => None,
        };
        spec.duration = shape.duration;
    }
    set_workload(cli, spec, open)?;
    if let Some((st, exponential)) = stages {
        if matches!(
            spec.workload,
            Workload::Sessions {
                num_sessions: Some(_),
                ..
            } | Workload::SessionLog {
                num_sessions: Some(_),
                ..
            }
        ) {
            bail!("--stages sets the run's length: give the session count as 0 (--wsess 0,N2,X)");
        }
        spec.set_stages(st, exponential);
    }
    if let Some(p) = &cli.probe {
        spec.probe = Some(crate::spec::ProbeSpec::parse(p)?);
    }
    Ok(())
}

/// `--stages` and whether its arrivals are exponential (`--period e`);
/// refuses the options the stages replace.
fn stage_list(cli: &Cli) -> Result<Option<(Vec<crate::stages::Stage>, bool)>> {
    let Some(s) = &cli.stages else {
        return Ok(None);
    };
    for (given, name) in [
        (cli.rate.is_some(), "--rate"),
        (cli.num_conns.is_some(), "--num-conns"),
        (cli.duration.is_some(), "--duration"),
        (cli.users.is_some(), "--users (closed loop)"),
        (cli.warmup.is_some(), "--warmup"),
    ] {
        if given {
            bail!("--stages sets the rate and the length of the run: it cannot be combined with {name}");
        }
    }
    let exponential = match cli.period.as_deref().map(str::trim) {
        None | Some("d") => false,
        Some("e") => true,
        Some(p) => bail!("--period '{p}' with --stages: give only the kind of gaps, d (even, the default) or e (exponential); the stages set the rate"),
    };
    Ok(Some((crate::stages::parse_stages(s)?, exponential)))
}

fn parse_print(v: Option<&str>, name: &str) -> Result<PrintWhat> {
    Ok(match v {
        None => PrintWhat::None,
        Some("all") | Some("") => PrintWhat::All,
        Some("header") => PrintWhat::Header,
        Some("body") => PrintWhat::Body,
        Some(o) => bail!("{name} takes header or body, not '{o}'"),
    })
}

/// The HTTP/2 settings the command line asks for (None: HTTP/1.1).
fn http2_spec(cli: &Cli) -> Result<Option<crate::spec::Http2Spec>> {
    if !cli.http2 {
        for (given, name) in [
            (
                cli.max_concurrent_streams.is_some() && !cli.http3,
                "--max-concurrent-streams",
            ),
            (cli.h2_window.is_some(), "--h2-window"),
            (cli.h2_conn_window.is_some(), "--h2-conn-window"),
        ] {
            if given {
                bail!("{name} needs --http2");
            }
        }
        return Ok(None);
    }
    let d = crate::spec::Http2Spec::default();
    Ok(Some(crate::spec::Http2Spec {
        max_concurrent_streams: cli
            .max_concurrent_streams
            .unwrap_or(d.max_concurrent_streams),
        stream_window: cli.h2_window.unwrap_or(d.stream_window),
        conn_window: cli.h2_conn_window.unwrap_or(d.conn_window),
    }))
}

/// The HTTP/3 settings the command line asks for (None: not HTTP/3).
fn http3_spec(cli: &Cli) -> Option<crate::spec::Http3Spec> {
    cli.http3.then(|| crate::spec::Http3Spec {
        max_concurrent_streams: cli
            .max_concurrent_streams
            .unwrap_or(crate::spec::Http3Spec::default().max_concurrent_streams),
    })
}

/// The TLS settings the command line asks for (None: cleartext). QUIC
/// (`--http3`) is always TLS, verified as for https:// URLs.
fn tls_spec(cli: &Cli, https: bool) -> Result<Option<TlsSpec>> {
    let tls = https || cli.ssl || cli.http3;
    if !tls {
        for (given, name) in [
            (cli.ssl_ciphers.is_some(), "--ssl-ciphers"),
            (cli.ssl_no_reuse, "--ssl-no-reuse"),
            (cli.cacert.is_some(), "--cacert"),
            (cli.insecure, "--insecure"),
            (cli.tls_version.is_some(), "--tls-version"),
        ] {
            if given {
                bail!("{name} needs TLS: give an https:// URL or --ssl");
            }
        }
        return Ok(None);
    }
    if cli.insecure && cli.cacert.is_some() {
        bail!("--insecure and --cacert contradict each other: choose one");
    }
    let version = match cli.tls_version.as_deref() {
        None => None,
        Some("1.2") => Some(TlsVersion::V1_2),
        Some("1.3") => Some(TlsVersion::V1_3),
        Some(v) => bail!("--tls-version must be 1.2 or 1.3, not '{v}'"),
    };
    Ok(Some(TlsSpec {
        // httperf's --ssl does not verify; https:// does unless --insecure;
        // --cacert always does.
        verify: cli.cacert.is_some() || ((https || cli.http3) && !cli.ssl && !cli.insecure),
        cacert: cli.cacert.clone(),
        ciphers: cli
            .ssl_ciphers
            .as_deref()
            .map(parse_ciphers)
            .unwrap_or_default(),
        reuse: !cli.ssl_no_reuse,
        version,
        sni: None,
        alpn: vec!["http/1.1".into()],
    }))
}

/// Splits `http[s]://host[:port][/path]` into (https, host, port, path).
pub fn parse_url(url: &str) -> Result<(bool, String, u16, String)> {
    let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        bail!("URL '{url}' must start with http:// or https://");
    };
    let default_port = if https { 443 } else { 80 };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    if authority.is_empty() {
        bail!("URL '{url}' has no host");
    }
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        let end = stripped
            .find(']')
            .with_context(|| format!("bad IPv6 host in '{url}'"))?;
        let host = &stripped[..end];
        let port = match stripped[end + 1..].strip_prefix(':') {
            Some(p) => p.parse().with_context(|| format!("bad port in '{url}'"))?,
            None => default_port,
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (
                h.to_string(),
                p.parse().with_context(|| format!("bad port in '{url}'"))?,
            ),
            None => (authority.to_string(), default_port),
        }
    };
    Ok((https, host, port, path))
}

/// Parses httperf-style arguments (without the program name) into a spec.
/// `--help`/`--version` are errors here; use [`crate::cli_main`] for those.
pub fn parse_args<I, S>(args: I) -> Result<LoadSpec>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut v: Vec<OsString> = vec!["httplab load".into()];
    v.extend(args.into_iter().map(Into::into));
    match parse(&v)? {
        Parsed::Run(s) => Ok(*s),
        Parsed::Repeat { .. } => bail!("--repeat is an option of the `httplab load` command only"),
        Parsed::Text(t) => bail!("{t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(line: &str) -> LoadSpec {
        let mut args: Vec<OsString> = vec!["httplab load".into()];
        args.extend(line.split_whitespace().map(OsString::from));
        match parse(&args) {
            Ok(Parsed::Run(s)) => *s,
            Ok(Parsed::Repeat { spec, .. }) => *spec,
            Ok(Parsed::Text(t)) => panic!("unexpected text {t}"),
            Err(e) => panic!("{line}: {e:#}"),
        }
    }

    #[test]
    fn repeat_is_parsed_and_checked() {
        let parse_line = |line: &str| {
            let mut args: Vec<OsString> = vec!["httplab load".into()];
            args.extend(line.split_whitespace().map(OsString::from));
            parse(&args)
        };
        match parse_line("http://127.0.0.1:1/ --rate 10 --num-conns 5 --repeat 3") {
            Ok(Parsed::Repeat { times, .. }) => assert_eq!(times, 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_line("http://127.0.0.1:1/ --repeat 1"),
            Ok(Parsed::Run(_))
        ));
        for bad in [
            "http://127.0.0.1:1/ --repeat 0",
            "http://127.0.0.1:1/ --repeat 2 --csv x.csv",
            "http://127.0.0.1:1/ --rate 10 --num-conns 5 --repeat 2 --client 0/2",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
        assert!(parse_args(["http://127.0.0.1:1/", "--repeat", "2"]).is_err());
    }

    #[test]
    fn seed_000_prefixes() {
        let s = spec("--server localhost --port 18000 --uri /www.cs.toronto.edu/~ylzhang/csc258/memes.html --rate 10 --num-conn 100 --num-call 10 --timeout 5");
        assert_eq!(s.server, "localhost");
        assert_eq!(s.port, 18000);
        assert_eq!(s.arrival, Arrival::Open(Dist::Deterministic(0.1)));
        assert_eq!(
            s.workload,
            Workload::Requests {
                num_conns: Some(100),
                num_calls: 10,
                burst: 1
            }
        );
        assert_eq!(s.timeout, Some(5.0));
        let s = spec("--server localhost --port 18000 --uri /x --rate 1000 --num-conn 1000 --num-call 1 --timeout 5");
        assert_eq!(s.arrival, Arrival::Open(Dist::Deterministic(0.001)));
    }

    #[test]
    fn seed_002_equals_forms() {
        let s = spec("--timeout=5 --client=0/1 --server=ckc-110-92.reshall.berkeley.edu --port=80 --uri=/testme.htm --rate=100 --send-buffer=4096 --recv-buffer=16384 --num-conns=6000 --num-calls=1");
        assert_eq!(s.client, (0, 1));
        assert_eq!(s.send_buffer, Some(4096));
        assert_eq!(s.recv_buffer, Some(16384));
        assert_eq!(s.uri, "/testme.htm");
        assert_eq!(
            s.workload,
            Workload::Requests {
                num_conns: Some(6000),
                num_calls: 1,
                burst: 1
            }
        );
    }

    #[test]
    fn seed_003_lines() {
        let s = spec("--server=www.example.com --rate=10 --num-conns=500");
        assert_eq!(s.port, 80);
        assert_eq!(s.uri, "/");
        let s = spec("--client=0/1 --server=www.example.com --port=80 --uri=/ --rate=10 --send-buffer=4096 --recv-buffer=16384 --num-conns=500 --num-calls=1");
        assert_eq!(s.arrival, Arrival::Open(Dist::Deterministic(0.1)));
        let s = spec("--server 192.168.4.2 --uri /test1.pdf --port 80 --num-conns 10");
        assert_eq!(s.arrival, Arrival::Concurrent(1));
        // the comment's wsesslog line (quotes already removed by the shell)
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("httperf-test");
        std::fs::write(&f, "/testurl method=POST contents='data here'\n").unwrap();
        let mut args: Vec<OsString> = vec![
            "httplab load".into(),
            "--server".into(),
            "server.example.com".into(),
            "--add-header=content-type: text/xml\\n".into(),
            "--wsesslog".into(),
            format!("1,2,{}", f.display()).into(),
        ];
        let s = match parse(&args).unwrap() {
            Parsed::Run(s) => s,
            _ => panic!(),
        };
        assert_eq!(s.headers, vec!["content-type: text/xml".to_string()]);
        assert!(matches!(
            s.workload,
            Workload::SessionLog {
                num_sessions: Some(1),
                ..
            }
        ));
        args.push("--bogus".into());
        assert!(parse(&args).is_err());
    }

    #[test]
    fn seed_004_closed_loop_and_file_sets() {
        let s =
            spec("http://127.0.0.1:8080/files --users 50 --requests-per-user 200 --wset 500,1.0");
        assert_eq!(s.arrival, Arrival::Concurrent(50));
        assert_eq!(s.wset, Some((500, 1.0)));
        assert_eq!(
            s.workload,
            Workload::Users {
                users: 50,
                requests_per_user: Some(200),
                think: 0.0,
                burst: 1,
                pace: None
            }
        );
    }

    #[test]
    fn extras_and_errors() {
        let s = spec("http://127.0.0.1:8080/x --rate 1000 --duration 10s --threads 2 --local-addr 127.0.0.2,127.0.0.3");
        assert_eq!(s.duration, Some(10.0));
        assert_eq!(s.threads, 2);
        assert_eq!(s.local_addrs.len(), 2);
        assert_eq!(
            s.workload,
            Workload::Requests {
                num_conns: None,
                num_calls: 1,
                burst: 1
            }
        );
        let s = spec("--ra 5 --num-conns 3 --period e0.5 --print-reply=header --print-request -v");
        assert_eq!(s.arrival, Arrival::Open(Dist::Exponential(0.5)));
        assert_eq!(s.print_reply, PrintWhat::Header);
        assert_eq!(s.print_request, PrintWhat::All);
        assert!(s.verbose);
        let bad = |l: &str| {
            let mut a: Vec<OsString> = vec!["httplab load".into()];
            a.extend(l.split_whitespace().map(OsString::from));
            parse(&a).is_err()
        };
        assert!(bad("--r 5"));
        assert!(bad("--rate abc"));
        assert!(bad("--num-calls 0"));
        assert!(bad("--client 2/1"));
        assert!(bad("--insecure"));
        assert!(bad("--ssl --tls-version 1.1"));
        assert!(bad("https://h/ --insecure --cacert x.pem"));
        assert!(bad("--server h --max-concurrent-streams 4"));
        assert!(bad("--server h --http3 --http2"));
        assert!(bad("--server h --http3 --tls-version 1.2"));
        assert!(bad("--server h --http3 --max-concurrent-streams 0"));
        let s = spec("--http3 --server 127.0.0.1 --port 4433 --uri /x --max-concurrent-streams 8");
        assert_eq!(s.http3.as_ref().unwrap().max_concurrent_streams, 8);
        assert!(s.http2.is_none());
        assert!(
            s.tls.as_ref().unwrap().verify,
            "QUIC verifies as https:// does"
        );
        assert!(
            !spec("https://h:4433/x --http3 --insecure")
                .tls
                .unwrap()
                .verify
        );
        let s = spec("https://h:4433/y --http3 --cacert ca.pem");
        assert_eq!((s.port, s.uri.as_str()), (4433, "/y"));
        assert!(s.tls.unwrap().verify);
        assert_eq!(spec("--http3 --server h").port, 443);
        let s = spec("--ssl --server h --ssl-no-reuse --ssl-ciphers ECDHE-RSA-AES128-GCM-SHA256");
        let t = s.tls.as_ref().unwrap();
        assert_eq!(s.port, 443);
        assert!(!t.verify && !t.reuse);
        assert_eq!(t.ciphers, vec!["ECDHE-RSA-AES128-GCM-SHA256".to_string()]);
        let s = spec("https://h:8443/x");
        assert!(s.tls.as_ref().unwrap().verify);
        assert_eq!((s.port, s.uri.as_str()), (8443, "/x"));
        assert!(!spec("https://h/ --insecure").tls.unwrap().verify);
        assert!(spec("--ssl --cacert ca.pem").tls.unwrap().verify);
        assert!(spec("http://h/").tls.is_none());
        let paced = spec("http://h/ --users 3 --rate 5 --duration 2s");
        assert!(matches!(
            paced.workload,
            Workload::Users {
                pace: Some(Dist::Deterministic(_)),
                ..
            }
        ));
        assert!(bad("ftp://x/"));
        assert!(bad("--period u3,1"));
        assert!(bad("--rate 10 --num-conns 5 --duration -3"));
        let help = parse(&["httplab load".into(), "--help".into()]).unwrap();
        match help {
            Parsed::Text(t) => {
                for opt in [
                    "--num-conns",
                    "--wsesslog",
                    "--users",
                    "--json",
                    "--burst-length",
                ] {
                    assert!(t.contains(opt), "help lacks {opt}");
                }
            }
            _ => panic!(),
        }
    }

    #[test]
    fn new_options() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("uris");
        std::fs::write(&f, "# pages\n/index.html\n/img/1.png\n").unwrap();
        let s = spec(&format!(
            "http://h:8/ --rate 10 --num-conns 5 --num-calls 3 --uri-list {} --warmup 1.5s --reconnect --client-ceiling 2500",
            f.display()
        ));
        assert_eq!(s.uris, vec!["/index.html", "/img/1.png"]);
        assert_eq!(s.warmup, 1.5);
        assert!(s.reconnect);
        assert_eq!(s.client_ceiling, Some(2500.0));
        assert!(!s.calibrate && !s.calibrate_only);
        assert!(s.normalized_command().contains("--warmup=1.5"));
        let u = spec("http://h/ --users 4 --requests-per-user 10 --num-calls 2 --calibrate --calibrate-size 4096 --calibrate-conns 8");
        assert_eq!(u.calls_per_conn, Some(2));
        assert!(u.calibrate);
        assert_eq!((u.calibrate_size, u.calibrate_conns), (Some(4096), Some(8)));
        let o = spec("http://h/ --num-conns 2 --num-calls 2");
        assert_eq!(
            (o.calls_per_conn, o.reconnect, o.warmup),
            (None, false, 0.0)
        );
        let bad = |l: String| {
            let mut a: Vec<OsString> = vec!["httplab load".into()];
            a.extend(l.split_whitespace().map(OsString::from));
            parse(&a).is_err()
        };
        assert!(bad(format!(
            "http://h/ --uri-list {} --wset 10,1",
            f.display()
        )));
        assert!(bad("http://h/ --uri-list /nonexistent/list".into()));
        assert!(bad("http://h/ --warmup -1".into()));
        assert!(bad("http://h/ --client-ceiling 0".into()));
        assert!(bad("http://h/ --users 2 --num-calls 0".into()));
        let help = match parse(&["httplab load".into(), "--help".into()]).unwrap() {
            Parsed::Text(t) => t,
            _ => panic!(),
        };
        for opt in [
            "--uri-list",
            "--warmup",
            "--reconnect",
            "--calibrate",
            "--calibrate-only",
            "--calibrate-size",
            "--calibrate-conns",
            "--client-ceiling",
        ] {
            assert!(help.contains(opt), "help lacks {opt}");
        }
    }

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("http://h:81/a?b").unwrap(),
            (false, "h".into(), 81, "/a?b".into())
        );
        assert_eq!(
            parse_url("http://h").unwrap(),
            (false, "h".into(), 80, "/".into())
        );
        assert_eq!(
            parse_url("https://h").unwrap(),
            (true, "h".into(), 443, "/".into())
        );
        assert_eq!(
            parse_url("http://[::1]:9/").unwrap(),
            (false, "::1".into(), 9, "/".into())
        );
        assert!(parse_url("ftp://h/").is_err());
        assert!(parse_url("http://h:x/").is_err());
    }
}
