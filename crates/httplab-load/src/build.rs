//! Typed constructors of a [`LoadSpec`]: what other crates (sweep, study)
//! use instead of writing a command line. Each builder sets the fields the
//! matching options of the command line set, with the command line's
//! meaning, so `httplab load --server S --port P --uri U --rate R
//! --duration T` and `LoadSpec::target(S, P, U).with_load(Load::new(Offer::Rate(R),
//! Length::Window(T)))` are the same value; [`LoadSpec::checked`] validates
//! it and records its command line ([`LoadSpec::to_args`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::spec::{
    parse_uri_list, Arrival, Dist, Http2Spec, Http3Spec, LoadSpec, ProbeSpec, Workload,
    DEFAULT_SEED,
};
use crate::tls::TlsSpec;

/// How a run offers its load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offer {
    /// Open loop: connections start at this rate per second, evenly spaced,
    /// whatever the server does (`--rate R`).
    Rate(f64),
    /// Closed loop: `users` users, each sends, waits for the reply, thinks
    /// `think` seconds and goes on (`--users N --think T`).
    Users {
        /// Users.
        users: u64,
        /// Think time, seconds.
        think: f64,
    },
    /// One connection after another, each as soon as the previous one ends
    /// (httperf without `--rate`).
    BackToBack,
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    /// This long, seconds, after the warm-up (`--duration`).
    Window(f64),
    /// A count: connections for [`Offer::Rate`] and [`Offer::BackToBack`]
    /// (`--num-conns`), requests per user for [`Offer::Users`]
    /// (`--requests-per-user`).
    Count(u64),
}

/// The offered load of a run: the offer, its length, calls per connection
/// and pipelining ([`LoadSpec::with_load`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// How the load is offered.
    pub offer: Offer,
    /// How long it lasts.
    pub length: Length,
    /// Calls per connection (`--num-calls`). None: one per connection for
    /// connections; users keep one connection for all their requests.
    pub calls: Option<u64>,
    /// Calls sent at once, pipelined (`--burst-length`) [default: 1].
    pub burst: u32,
}

impl Load {
    /// `offer` for `length`, default calls and no pipelining.
    pub fn new(offer: Offer, length: Length) -> Load {
        Load {
            offer,
            length,
            calls: None,
            burst: 1,
        }
    }

    /// With `n` calls per connection (`--num-calls N`).
    pub fn calls(self, n: u64) -> Load {
        Load {
            calls: Some(n),
            ..self
        }
    }

    /// With bursts of `n` pipelined calls (`--burst-length N`).
    pub fn burst(self, n: u32) -> Load {
        Load { burst: n, ..self }
    }
}

/// The HTTP version a run speaks ([`LoadSpec::with_protocol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (the default).
    Http1,
    /// HTTP/2 (`--http2 --max-concurrent-streams N`): over TLS by ALPN,
    /// else h2c with prior knowledge.
    Http2 {
        /// Streams each connection keeps open at once.
        streams: u32,
    },
    /// HTTP/3 over QUIC (`--http3 --max-concurrent-streams N`); needs TLS.
    Http3 {
        /// Request streams each connection keeps open at once.
        streams: u32,
    },
}

impl TlsSpec {
    /// TLS verified against the CA certificates of `ca` only (`--ssl
    /// --cacert FILE`), sessions resumed.
    pub fn verified_by(ca: impl Into<PathBuf>) -> TlsSpec {
        TlsSpec {
            cacert: Some(ca.into()),
            ..TlsSpec::default()
        }
    }

    /// httperf's `--ssl`: TLS without verifying the certificate.
    pub fn unverified() -> TlsSpec {
        TlsSpec {
            verify: false,
            ..TlsSpec::default()
        }
    }

    /// With session resumption on new connections (`resume`), or a full
    /// handshake on every one (`--ssl-no-reuse`).
    pub fn resume(self, resume: bool) -> TlsSpec {
        TlsSpec {
            reuse: resume,
            ..self
        }
    }
}

impl ProbeSpec {
    /// A probe at `rate` requests/s over one connection (`--probe RATE`).
    pub fn at(rate: f64) -> ProbeSpec {
        ProbeSpec { rate, conns: 1 }
    }
}

impl LoadSpec {
    /// What `httplab load --server S --port P --uri U` parses to: the
    /// command line's defaults (one connection, one call, GET, the
    /// command line's seed [`DEFAULT_SEED`]) against `server:port`.
    pub fn target(server: &str, port: u16, uri: &str) -> LoadSpec {
        let mut s = LoadSpec::new(server, port);
        s.uri = uri.to_string();
        s.seed = DEFAULT_SEED;
        s
    }

    /// Sets the offered load: the arrivals, the workload, the duration of
    /// a window and the calls per connection, as `--rate`/`--users`,
    /// `--duration`/`--num-conns`/`--requests-per-user`, `--num-calls` and
    /// `--burst-length` do.
    pub fn with_load(mut self, load: Load) -> LoadSpec {
        let (window, count) = match load.length {
            Length::Window(t) => (Some(t), None),
            Length::Count(n) => (None, Some(n)),
        };
        self.duration = window;
        self.calls_per_conn = None;
        match load.offer {
            Offer::Users { users, think } => {
                self.workload = Workload::Users {
                    users,
                    requests_per_user: count,
                    think,
                    burst: load.burst,
                    pace: None,
                };
                self.arrival = Arrival::Concurrent(users);
                self.calls_per_conn = load.calls;
            }
            Offer::Rate(_) | Offer::BackToBack => {
                self.workload = Workload::Requests {
                    num_conns: count,
                    num_calls: load.calls.unwrap_or(1),
                    burst: load.burst,
                };
                self.arrival = match load.offer {
                    Offer::Rate(r) => Arrival::Open(Dist::Deterministic(1.0 / r)),
                    _ => Arrival::Concurrent(1),
                };
            }
        }
        self
    }

    /// Speaks `protocol` (HTTP/2 with the default flow-control windows).
    pub fn with_protocol(mut self, protocol: Protocol) -> LoadSpec {
        (self.http2, self.http3) = match protocol {
            Protocol::Http1 => (None, None),
            Protocol::Http2 { streams } => (
                Some(Http2Spec {
                    max_concurrent_streams: streams,
                    ..Http2Spec::default()
                }),
                None,
            ),
            Protocol::Http3 { streams } => (
                None,
                Some(Http3Spec {
                    max_concurrent_streams: streams,
                }),
            ),
        };
        self
    }

    /// Over TLS with these settings (None: cleartext).
    pub fn with_tls(mut self, tls: Option<TlsSpec>) -> LoadSpec {
        self.tls = tls;
        self
    }

    /// Shard `index` of `count` of the run's schedule (`--client I/N`),
    /// with the run id every shard shares (`--run-id`).
    pub fn with_shard(mut self, index: u32, count: u32, run_id: Option<String>) -> LoadSpec {
        self.client = (index, count);
        self.run_id = run_id;
        self
    }

    /// Requests take the paths of the file `path` in turn (`--uri-list
    /// FILE`): read and parsed as the command line does.
    pub fn with_uri_list(mut self, path: &Path) -> Result<LoadSpec> {
        self.set_uri_list(path)?;
        Ok(self)
    }

    /// [`LoadSpec::with_uri_list`] in place.
    pub fn set_uri_list(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --uri-list file '{}'", path.display()))?;
        self.uris = parse_uri_list(&text).with_context(|| format!("in '{}'", path.display()))?;
        self.uri_list = Some(path.to_path_buf());
        Ok(())
    }

    /// The spec validated ([`LoadSpec::validate`], the command line's own
    /// check), with its command line ([`LoadSpec::to_args`]) recorded in
    /// `command_line`, as a parsed command line records its arguments.
    pub fn checked(mut self) -> Result<LoadSpec> {
        self.validate()?;
        self.command_line = self.to_args();
        Ok(self)
    }

    /// This spec with further `httplab load` options given after its own
    /// (an option given twice is refused, as on one command line): a
    /// sweep's pass-through options, which a user typed for the load
    /// generator. Without options, the spec itself, checked.
    pub fn with_options(self, options: &[String]) -> Result<LoadSpec> {
        if options.is_empty() {
            return self.checked();
        }
        let mut args = self.to_args();
        args.extend(options.iter().cloned());
        crate::cli::parse_args(&args)
            .with_context(|| format!("bad load options: {}", options.join(" ")))
    }
}
