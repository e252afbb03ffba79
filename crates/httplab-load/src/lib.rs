//! `httplab load`: an httperf-compatible HTTP/1.1, HTTPS, HTTP/2 and HTTP/3
//! load generator that is accurate where httperf, wrk and oha are not.
//!
//! - **HTTP/2** (`--http2`, [`Http2Spec`]): over TLS (ALPN h2) and h2c with
//!   prior knowledge; `--max-concurrent-streams` (h2load's `-m`), flow-control
//!   windows; open and closed loop on the same schedules; counts of streams,
//!   RST_STREAM and GOAWAY ([`httplab_model::Http2Summary`]). A connection
//!   machine without I/O (`h2proto.rs`, on `httplab-wire`'s HTTP/2 codec) on the same
//!   engine as HTTP/1.1 (`engine/h2.rs`), allocation-free per request.
//! - **HTTP/3** (`--http3`, [`Http3Spec`]): over QUIC (quinn, TLS 1.3, ALPN
//!   h3) with the `h3` crate, on a tokio stream driver (quinn is async;
//!   `streams.rs`, `http3.rs`, `h3conn.rs`); the QUIC handshake (1-RTT,
//!   0-RTT) is its own latency row, failures are counted by class
//!   ([`httplab_model::Http3Summary`]).
//! - **HTTPS**: `https://` URLs (certificates verified; `--cacert`,
//!   `--insecure`) and httperf's `--ssl` (not verified, as httperf),
//!   `--ssl-ciphers`, `--ssl-no-reuse`; TLS 1.2/1.3, SNI, ALPN; the TLS
//!   handshake is its own latency row ([`httplab_model::TlsSummary`]).
//! - **Overload without collapse**: connections in setup are capped
//!   (`--max-connecting`), loopback targets get source addresses spread over
//!   127.0.0.0/8, and the report names what limited the run.
//! - **Shape**: the session rules as one machine without I/O (`session.rs`),
//!   protocol state machines without I/O (`h1.rs`, `h2proto.rs`; TLS as a
//!   byte transformer, `tls.rs`), driven by the epoll/io_uring engine
//!   (`engine.rs`) or, for HTTP/3, the tokio stream driver (`streams.rs`),
//!   which share arrivals, window and statistics (`arrivals.rs`, `worker.rs`).
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
//! use httplab_load::{Length, Load, LoadSpec, Offer};
//! let mut spec = LoadSpec::target("127.0.0.1", 8080, "/")
//!     .with_load(Load::new(Offer::Rate(100.0), Length::Count(500)));
//! spec.timeout = Some(5.0);
//! let spec = spec.checked()?;  // validated; `command_line` is its `to_args()`
//! // The same value as the command line:
//! let parsed = httplab_load::parse_args(["--server", "127.0.0.1", "--port", "8080",
//!     "--rate", "100", "--num-conns", "500", "--timeout", "5"])?;
//! assert_eq!(parsed.workload, spec.workload);
//! let result = httplab_load::run(&spec, false)?;          // never prints
//! print!("{}", httplab_load::render_httperf_report(&result));
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! - [`LoadSpec::target`] starts a typed spec with the command line's defaults;
//!   [`LoadSpec::with_load`] ([`Load`], [`Offer`], [`Length`]),
//!   [`LoadSpec::with_protocol`], [`LoadSpec::with_tls`], [`LoadSpec::with_shard`],
//!   [`LoadSpec::with_uri_list`] set what the matching options set; other
//!   options are public fields. [`LoadSpec::checked`] validates it and records
//!   [`LoadSpec::to_args`], the command line that parses back to it.
//! - [`parse_args`] parses httperf-style arguments (without the program name) into a [`LoadSpec`].
//! - [`LoadSpec::new`] builds a spec with httperf's defaults (its own seed, 1).
//! - [`run`] runs it and returns an [`httplab_model::RunResult`]; [`run_with_stop`]
//!   takes a flag that ends the run early (the result then has `interrupted: true`).
//! - [`render_httperf_report`] renders a result (also one read back from JSON).
//! - [`cli_main`] is the whole command (`httplab load ...`).
//! - [`calibrate`] measures the generator's ceiling for a spec's shape against
//!   an in-process sink; put `ceiling_rps` into [`LoadSpec::client_ceiling`].
//!
//! # JSON
//!
//! `--json FILE` writes [`httplab_model::RunResult`] (schema `httplab.run/1.1`,
//! documented in the model crate): config, counters, the four latency HDR
//! histograms (V2-deflate, base64), the time series, accuracy, self-check and
//! environment. What this crate records beyond httperf's configuration is
//! typed, in `config.facts` ([`httplab_model::RunFacts`]): the normalised
//! command line, the largest connect burst, the lag threshold, the session
//! statistics ([`SessionStats`], session workloads), abandoned, unsent and
//! retried calls, the options httperf's configuration has no field for
//! (`--verbose`, `--busy-poll`, `--reconnect`, `--calls-per-conn`,
//! `--uri-list`, `--local-addr`, `--wset`, `--burst-length`), the
//! [`Calibration`] behind the client ceiling, the host, the overload guard
//! (`max_connecting`, `local_addrs_auto`, `setup_capped`, `setup_waited`,
//! `setup_wait_p99_ms`, `not_attempted`) and the I/O engine; client shards
//! (`--client I/N` with N > 1, `--run-id`, `--start-at`) add `client_shard`,
//! `run_id`, `start_at` and `shard_sessions`. HTTPS runs add [`httplab_model::RunResult::tls`], `--http2` runs
//! [`httplab_model::RunResult::http2`], `--http3` runs [`httplab_model::RunResult::http3`].
//! `--stages` runs add [`httplab_model::RunResult::stages`] (one row per stage),
//! `--probe` runs [`httplab_model::RunResult::probe`].
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

mod args;
mod arrivals;
mod build;
mod calibrate;
pub mod calibration_cache;
mod cli;
mod client_check;
mod clock;
mod command;
mod engine;
mod h1;
mod h2proto;
mod h3conn;
mod http3;
mod live;
mod outcome;
mod plan;
mod probe;
mod record;
mod repeat;
mod report;
mod run;
mod session;
mod slot;
mod spec;
mod stages;
mod stats;
mod streams;
mod sys;
mod tls;
mod uring;
mod worker;

/// Process-wide Ctrl-C handling shared by every httplab command that runs load:
/// the first SIGINT sets [`interrupted`], a second exits at once (status 130).
pub use sys::{install_sigint, interrupted};

pub use arrivals::schedule::arrivals_per_stage;
pub use build::{Length, Load, Offer, Protocol};
pub use calibrate::{
    calibrate, CALIBRATION_WARMUP_S, CALIBRATION_WINDOW_S, DEFAULT_CALIBRATION_CONNS,
    DEFAULT_CALIBRATION_SIZE,
};
pub use cli::parse_args;
pub use client_check::{
    check_client, record as record_client_check, warning as client_check_warning, StepShard,
    STEP_INTERVAL_S, STEP_S, STEP_WARMUP_S,
};
pub use command::cli_main;
pub use live::LiveSpec;
pub use report::{
    environment, render_httperf_report, write_csv, Calibration, CPU_LIMIT_PCT, MIN_CPU_JUDGE_S,
    UTILIZATION_LIMIT,
};
pub use run::{
    check_start_at, io_uring_available, run, run_with_stop, AUTO_LOOPBACK_SOURCES, MAX_START_WAIT_S,
};
pub use spec::{
    format_unix_micros, parse_session_log, parse_start_at, parse_time, parse_uri_list, Arrival,
    Dist, Http2Spec, Http3Spec, IoEngine, LoadSpec, LogBurst, LogCall, LogSession, PrintWhat,
    ProbeSpec, Workload, DEFAULT_H2_WINDOW, DEFAULT_LAG_THRESHOLD, DEFAULT_MAX_CONNECTING,
    DEFAULT_SEED, MAX_PROBE_RATE,
};
pub use stages::{parse_stages, Stage, MAX_STAGES};
pub use stats::SessionStats;
pub use tls::{parse_ciphers, TlsSpec, TlsVersion};
