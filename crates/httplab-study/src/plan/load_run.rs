//! One load run of a study as a typed description ([`LoadRun`]): the step,
//! the server's address, the paths, TLS and client shard. It becomes the
//! `httplab_load::LoadSpec` that runs through its `httplab load` command
//! line (httperf spellings), which the run's result records as it always
//! has; the client's calibration is keyed by the spec's shape
//! (`httplab_load::calibration_cache`), not by that text. An `h2` workload's
//! run is `httplab load --http2` (h2 over TLS by ALPN, h2c by prior
//! knowledge in a cleartext study); an `h3` workload's run is `httplab load
//! --http3` (QUIC, so TLS studies only, verified against the study's
//! certificate as every TLS run is).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use httplab_load::LoadSpec;

use crate::plan::steps::{Offer, StepParams};
use crate::spec::Protocol;

/// Streams an HTTP/2 or HTTP/3 run keeps open per connection: one, so that a
/// connection (or a user) has one request in flight as over HTTP/1.1
/// without pipelining, and the servers are compared on the same offered
/// load whatever the protocol (h2load's default too).
pub const H2_STREAMS: u32 = 1;

/// How a study run speaks TLS.
#[derive(Debug, Clone)]
pub struct RunTls {
    /// The study's certificate, the only trust anchor (`--cacert`).
    pub ca: PathBuf,
    /// Resume sessions on new connections (else `--ssl-no-reuse`).
    pub resume: bool,
}

/// A run's client shard: `--client I/N` and the run's own id.
#[derive(Debug, Clone)]
pub struct RunShard {
    /// This shard, 0 <= index < count.
    pub index: u32,
    /// Shards.
    pub count: u32,
    /// The run id every shard of this run shares.
    pub run_id: String,
}

/// What one `httplab load` run of a study needs.
#[derive(Debug, Clone)]
pub struct LoadRun {
    /// Server address.
    pub addr: SocketAddr,
    /// The single path (or the first of the list).
    pub uri: String,
    /// A file listing the paths to request in turn (sets, pages).
    pub uri_list: Option<PathBuf>,
    /// The step.
    pub params: StepParams,
    /// Corpus root (bodies are verified against it).
    pub root: PathBuf,
    /// Result label.
    pub label: String,
    /// Generator threads (one per client core).
    pub threads: usize,
    /// Over TLS: the CA file and whether sessions resume (None: cleartext).
    pub tls: Option<RunTls>,
    /// The run's client shard (None: the whole run).
    pub shard: Option<RunShard>,
    /// The HTTP version the client speaks.
    pub protocol: Protocol,
    /// HTTP/2 and HTTP/3: streams per connection at once (the workload's
    /// `streams`, else [`H2_STREAMS`]).
    pub streams: u32,
}

impl LoadRun {
    /// The load spec of this run.
    pub fn spec(&self) -> Result<LoadSpec> {
        httplab_load::parse_args(self.args()).context("httplab load arguments")
    }

    /// The `httplab load` arguments (httperf spellings) of this run, as its
    /// result records them.
    ///
    /// - Window-measured runs: `--warmup W --duration T` (open loop at `rate`;
    ///   back-to-back connections become one closed-loop user, which is what
    ///   httperf's sequential mode is; closed loop with `--users`).
    /// - Count-measured runs keep the workload's counts and add the warm-up's
    ///   share in front (`rate × warm-up` connections; users run their counts
    ///   after a timed warm-up).
    /// - Sessions of several calls reconnect when a server closes (`--reconnect`)
    ///   and bodies are verified against the corpus (`--verify-root`; not
    ///   over HTTP/2 or HTTP/3, whose drivers do not verify bodies).
    /// - HTTP/2: `--http2 --max-concurrent-streams N`; HTTP/3: `--http3
    ///   --max-concurrent-streams N` (TLS below, as always in a study that can
    ///   hold an h3 workload); N is the workload's `streams`, by default
    ///   [`H2_STREAMS`].
    pub fn args(&self) -> Vec<String> {
        let p = &self.params;
        let mut v: Vec<String> = vec![
            "--server".into(),
            self.addr.ip().to_string(),
            "--port".into(),
            self.addr.port().to_string(),
            "--uri".into(),
            self.uri.clone(),
            "--timeout".into(),
            format!("{}", p.timeout.as_secs_f64()),
            "--label".into(),
            self.label.clone(),
            "--threads".into(),
            self.threads.to_string(),
            "--no-progress".into(),
        ];
        match self.protocol {
            Protocol::H1 => {
                v.push("--verify-root".into());
                v.push(self.root.to_string_lossy().into_owned());
            }
            Protocol::H2 => {
                v.push("--http2".into());
                v.push("--max-concurrent-streams".into());
                v.push(self.streams.to_string());
            }
            Protocol::H3 => {
                v.push("--http3".into());
                v.push("--max-concurrent-streams".into());
                v.push(self.streams.to_string());
            }
        }
        let mut push = |k: &str, val: String| {
            v.push(k.to_string());
            v.push(val);
        };
        if let Some(l) = &self.uri_list {
            push("--uri-list", l.to_string_lossy().into_owned());
        }
        if let Some(r) = p.probe {
            push("--probe", format!("{r}"));
        }
        let warm = p.warmup.as_secs_f64();
        if warm > 0.0 {
            push("--warmup", format!("{warm}"));
        }
        if p.num_calls > 1 || (p.num_calls_given && matches!(p.offer, Offer::Closed { .. })) {
            // Users keep one connection for all their requests unless told
            // otherwise; `num_calls = 1` written out means a connection per request.
            push("--num-calls", p.num_calls.to_string());
        }
        if p.pipeline > 1 {
            push("--burst-length", p.pipeline.to_string());
        }
        offer_args(p, warm, &mut push);
        if p.num_calls > 1 {
            v.push("--reconnect".into());
        }
        if let Some(t) = &self.tls {
            // `--ssl` keeps the study's host/port spelling; `--cacert` turns
            // verification on against the study's certificate only.
            v.push("--ssl".into());
            v.push("--cacert".into());
            v.push(t.ca.to_string_lossy().into_owned());
            if !t.resume {
                v.push("--ssl-no-reuse".into());
            }
        }
        if let Some(sh) = &self.shard {
            v.extend([
                "--client".to_string(),
                format!("{}/{}", sh.index, sh.count),
                "--run-id".into(),
                sh.run_id.clone(),
            ]);
        }
        v
    }
}

/// The arguments of the offered load: rate or users, and the window or the counts.
fn offer_args(p: &StepParams, warm: f64, push: &mut impl FnMut(&str, String)) {
    let lag = |r: f64| format!("{:.3}ms", (500.0 / r.max(1e-9)).max(10.0));
    match (p.offer, p.window.map(|d| d.as_secs_f64())) {
        (Offer::Open { rate: Some(r), .. }, Some(t)) => {
            push("--rate", format!("{r}"));
            push("--duration", format!("{t}"));
            push("--lag-threshold", lag(r));
        }
        (
            Offer::Open {
                rate: Some(r),
                num_conns,
            },
            None,
        ) => {
            push("--rate", format!("{r}"));
            let extra = (r * warm).ceil() as u64;
            push("--num-conns", (num_conns + extra).to_string());
            push("--lag-threshold", lag(r));
        }
        (Offer::Open { rate: None, .. }, Some(t)) => {
            push("--users", "1".into());
            push("--duration", format!("{t}"));
        }
        (
            Offer::Open {
                rate: None,
                num_conns,
            },
            None,
        ) => push("--num-conns", num_conns.to_string()),
        (
            Offer::Closed {
                users,
                requests,
                think_ms,
            },
            window,
        ) => {
            push("--users", users.to_string());
            match window {
                Some(t) => push("--duration", format!("{t}")),
                None => push("--requests-per-user", requests.to_string()),
            }
            if think_ms > 0.0 {
                push("--think", format!("{think_ms}ms"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(offer: Offer, window: Option<f64>) -> LoadRun {
        LoadRun {
            addr: "127.0.0.1:8080".parse().unwrap(),
            uri: "/a".into(),
            uri_list: None,
            params: StepParams {
                step: String::new(),
                offer,
                target: "/a".into(),
                num_calls: 1,
                num_calls_given: false,
                pipeline: 1,
                timeout: Duration::from_secs(5),
                max_duration: Duration::from_secs(60),
                warmup: Duration::from_secs(1),
                window: window.map(Duration::from_secs_f64),
                probe: None,
            },
            root: PathBuf::from("/srv"),
            label: "x".into(),
            threads: 1,
            tls: None,
            shard: None,
            protocol: Protocol::H1,
            streams: H2_STREAMS,
        }
    }

    #[test]
    fn a_probe_key_becomes_the_load_runs_probe() {
        let mut r = run(
            Offer::Open {
                rate: Some(100.0),
                num_conns: 100,
            },
            Some(2.0),
        );
        r.params.probe = Some(50.0);
        let a = r.args();
        let at = a.iter().position(|x| x == "--probe").expect("--probe");
        assert_eq!(a[at + 1], "50");
        let spec = r.spec().expect("valid");
        assert_eq!(spec.probe.map(|p| (p.rate, p.conns)), Some((50.0, 1)));
    }

    #[test]
    fn open_and_closed_runs_parse_as_load_specs() {
        let open = run(
            Offer::Open {
                rate: Some(100.0),
                num_conns: 50,
            },
            None,
        );
        let a = open.args();
        assert!(a.windows(2).any(|w| w == ["--num-conns", "150"]), "{a:?}");
        assert!(open.spec().is_ok());
        let closed = run(
            Offer::Closed {
                users: 4,
                requests: 10,
                think_ms: 2.0,
            },
            Some(3.0),
        );
        let a = closed.args();
        assert!(a.windows(2).any(|w| w == ["--users", "4"]), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--think", "2ms"]), "{a:?}");
        assert!(!a.contains(&"--requests-per-user".to_string()));
        assert!(closed.spec().is_ok());
    }

    #[test]
    fn an_h2_run_is_load_with_http2_and_one_stream() {
        let mut r = run(
            Offer::Closed {
                users: 4,
                requests: 10,
                think_ms: 0.0,
            },
            Some(3.0),
        );
        let h1 = r.spec().unwrap();
        assert!(h1.http2.is_none());
        assert!(h1.verify_root.is_some());
        r.protocol = Protocol::H2;
        let a = r.args();
        assert!(a.contains(&"--http2".to_string()), "{a:?}");
        assert!(!a.contains(&"--verify-root".to_string()), "{a:?}");
        let spec = r.spec().unwrap();
        let h = spec.http2.as_ref().expect("an h2 run carries HTTP/2");
        assert_eq!(h.max_concurrent_streams, H2_STREAMS);
        assert!(spec.tls.is_none(), "cleartext: h2c by prior knowledge");
        // Over TLS: h2 by ALPN, the study's certificate the only anchor.
        r.tls = Some(RunTls {
            ca: PathBuf::from("/nonexistent/ca.pem"),
            resume: true,
        });
        let spec = r.spec().unwrap();
        assert!(spec.http2.is_some() && spec.tls.is_some());
        // The calibration cache sees a different shape than HTTP/1.1.
        r.protocol = Protocol::H1;
        let h1_tls = r.spec().unwrap();
        assert_ne!(
            httplab_load::calibration_cache::Shape::of(&spec),
            httplab_load::calibration_cache::Shape::of(&h1_tls)
        );
    }

    #[test]
    fn an_h3_run_is_load_with_http3_over_verified_tls() {
        let mut r = run(
            Offer::Open {
                rate: Some(10.0),
                num_conns: 5,
            },
            Some(1.0),
        );
        r.protocol = Protocol::H3;
        r.tls = Some(RunTls {
            ca: PathBuf::from("/nonexistent/ca.pem"),
            resume: true,
        });
        let a = r.args();
        assert!(a.contains(&"--http3".to_string()), "{a:?}");
        assert!(!a.contains(&"--http2".to_string()), "{a:?}");
        assert!(!a.contains(&"--verify-root".to_string()), "{a:?}");
        let spec = r.spec().unwrap();
        let h = spec.http3.as_ref().expect("an h3 run carries HTTP/3");
        assert_eq!(h.max_concurrent_streams, H2_STREAMS);
        assert!(spec.http2.is_none());
        let tls = spec.tls.as_ref().expect("QUIC is TLS");
        assert!(tls.verify, "verified against the study's certificate");
        // A different shape for the calibration cache than HTTP/1.1 over TLS.
        r.protocol = Protocol::H1;
        let h1_tls = r.spec().unwrap();
        assert_ne!(
            httplab_load::calibration_cache::Shape::of(&spec),
            httplab_load::calibration_cache::Shape::of(&h1_tls)
        );
    }
}
