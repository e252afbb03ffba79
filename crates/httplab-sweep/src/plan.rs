//! A resolved sweep: its targets, rates, step size and outputs
//! ([`SweepPlan`]), and the load spec of each step.

use anyhow::{anyhow, bail, Context, Result};
use httplab_load::{Length, Load, LoadSpec, Offer};
use httplab_report::csv::{self as abcsv, Format};
use std::path::PathBuf;

/// Default seconds per step when neither `--num-conns` nor `--const-test-time` is given.
pub const DEFAULT_STEP_SECONDS: f64 = 5.0;
/// Default warm-up before each step's measured connections, seconds.
pub const DEFAULT_WARMUP_SECONDS: f64 = 1.0;

/// One server under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Request URI.
    pub uri: String,
}

impl Target {
    /// `http://host:port/uri`.
    pub fn url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("http://{host}:{}{}", self.port, self.uri)
    }

    /// Label used in charts: `host:port/uri`.
    pub fn label(&self) -> String {
        format!("{}:{}{}", self.host, self.port, self.uri)
    }

    /// Parses `http://host[:port][/path]`.
    pub fn from_url(url: &str) -> Result<Target> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| anyhow!("target URL '{url}' must start with http://"))?;
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
            let (h, after) = r
                .split_once(']')
                .ok_or_else(|| anyhow!("bad IPv6 host in '{url}'"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().with_context(|| format!("bad port in '{url}'"))?,
                None => 80,
            };
            (h.to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().with_context(|| format!("bad port in '{url}'"))?,
                ),
                None => (hostport.to_string(), 80),
            }
        };
        if host.is_empty() {
            bail!("target URL '{url}' has no host");
        }
        Ok(Target {
            host,
            port,
            uri: path.to_string(),
        })
    }
}

/// How many connections each step opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepSize {
    /// A fixed count (autobench num_conn).
    Conns(u64),
    /// rate × seconds (autobench const_test_time).
    Seconds(f64),
}

/// A fully resolved sweep.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Servers under test, in autobench's order (host1, host2, then URLs).
    pub targets: Vec<Target>,
    /// First rate, connections per second.
    pub low_rate: f64,
    /// Last rate.
    pub high_rate: f64,
    /// Step.
    pub rate_step: f64,
    /// Connections per step.
    pub size: StepSize,
    /// Requests per connection.
    pub num_calls: u64,
    /// Reply timeout, seconds.
    pub timeout_s: f64,
    /// p99 objective, ms.
    pub slo_ms: f64,
    /// Adaptive search instead of steps.
    pub find_max: bool,
    /// Run limit of the adaptive search.
    pub max_runs: u32,
    /// Warm-up before each step's measured connections, seconds (discarded).
    pub warmup_s: f64,
    /// Calibrate the generator once per shape of run (targets of one shape share it) and pass its ceiling to every step.
    pub calibrate: bool,
    /// `httplab load` options the user gave for every load run (the
    /// command line's, the config file's), applied after the sweep's own.
    pub passthrough: Vec<String>,
    /// CSV destination (None: stdout).
    pub file: Option<PathBuf>,
    /// csv or tsv.
    pub format: Format,
    /// JSON destination.
    pub json: PathBuf,
    /// Report directory.
    pub report: Option<PathBuf>,
    /// No per-step output.
    pub quiet: bool,
    /// The arguments as given (after `httplab sweep`).
    pub command_line: Vec<String>,
    /// `--client I/N`, passed to every step.
    pub client: Option<(u32, u32)>,
    /// `--start-at`, unix seconds: the sweep's shared start.
    pub start_at: Option<f64>,
    /// `--run-id`, passed to every step.
    pub run_id: Option<String>,
    /// `--step-gap`, seconds.
    pub step_gap_s: f64,
    /// `--staged`: each target's steps as the stages of one run.
    pub staged: bool,
    /// `--prometheus`: where to serve live metrics.
    pub prometheus: Option<std::net::SocketAddr>,
    /// `--check-client`: check the client before every step.
    pub check_client: bool,
}

impl SweepPlan {
    /// The stepped rates, low to high inclusive.
    pub fn rates(&self) -> Vec<f64> {
        if self.rate_step <= 0.0 || self.high_rate < self.low_rate {
            return vec![self.low_rate];
        }
        let n = (((self.high_rate - self.low_rate) / self.rate_step + 1e-9).floor() as u64)
            .min(100_000);
        (0..=n)
            .map(|i| self.low_rate + i as f64 * self.rate_step)
            .collect()
    }

    /// Connections to open at `rate`.
    pub fn conns_at(&self, rate: f64) -> u64 {
        match self.size {
            StepSize::Conns(n) => n.max(1),
            StepSize::Seconds(s) => (rate * s).round().max(1.0) as u64,
        }
    }

    /// The load spec of one step (what autobench's httperf command line
    /// asked for): `conns_at(rate)` connections at `rate`. With a warm-up,
    /// the step first opens `rate × warm-up` connections that the warm-up
    /// leaves out of every figure, so the measured connections are still
    /// `conns_at(rate)`. The pass-through options come last, as the user
    /// gave them.
    pub fn load_spec(&self, t: &Target, rate: f64) -> Result<LoadSpec> {
        let warm = (rate * self.warmup_s).ceil() as u64;
        let count = Length::Count(self.conns_at(rate) + warm);
        let mut s = self.run_spec(t, Load::new(Offer::Rate(rate), count));
        if warm > 0 {
            s.warmup = self.warmup_s;
        }
        if let Some((i, n)) = self.client {
            s.client = (i, n);
        }
        s.run_id = self.run_id.clone();
        s.start_at = self.step_start(t, rate);
        s.with_options(&self.passthrough)
    }

    /// What every run of the sweep against `t` has: the target, `load`
    /// (how the load is offered) with the sweep's calls per connection,
    /// and the timeout.
    pub fn run_spec(&self, t: &Target, load: Load) -> LoadSpec {
        let mut s = LoadSpec::target(&t.host, t.port, &t.uri).with_load(load.calls(self.num_calls));
        s.timeout = Some(self.timeout_s);
        s
    }

    /// With `--start-at`: the instant (unix seconds) the step of `rate`
    /// against `t` starts, the same on every shard. Steps run in the sweep's
    /// order (each rate, every target); each takes its planned schedule
    /// (connections ÷ rate, warm-up included) plus `step_gap_s`; before the
    /// first rate, each target's calibration gets a slot of its own.
    pub fn step_start(&self, t: &Target, rate: f64) -> Option<f64> {
        let mut at = self.start_at?;
        for (ri, r) in self.rates().into_iter().enumerate() {
            for tt in &self.targets {
                if ri == 0 && self.calibrate {
                    at += CALIBRATION_SLOT_S;
                }
                if tt == t && r == rate {
                    return Some(at);
                }
                let warm = (r * self.warmup_s).ceil() as u64;
                at += (self.conns_at(r) + warm) as f64 / r + self.step_gap_s;
            }
        }
        None
    }
}

/// Time set aside for one target's calibration in a sharded sweep, seconds.
pub const CALIBRATION_SLOT_S: f64 =
    httplab_load::CALIBRATION_WARMUP_S + httplab_load::CALIBRATION_WINDOW_S + 2.0;

/// A rate as autobench prints it (a Perl number).
pub(crate) fn fmt_rate(r: f64) -> String {
    abcsv::perl_number(r)
}
