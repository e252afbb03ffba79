//! `httplab sweep`: autobench's rate sweep on top of `httplab load`.
//!
//! Command line: autobench's options in either spelling (`--low_rate 10` or
//! `--low-rate=10`, `--host1=www.example.com`, `--single_host`, `--num_call`,
//! `--const_test_time`), httperf's (`--num-conns`, `--num-calls`, `--timeout`),
//! target URLs as positional arguments, and an `~/.autobench.conf`-style
//! config file (`--config FILE`; `~/.autobench.conf` is read when present
//! unless `--no-config`). Command-line values override the file, as in
//! autobench. Any other option — or everything after `--` — is passed to the
//! load generator unchanged (the file's `httperf_*` keys too, as autobench does).

use crate::analysis::{self, FindMax};
use crate::csv::{self as abcsv, Format};
use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use httplab_model::{RunResult, SweepResult, SweepStep, SweepTarget, ToolInfo, SWEEP_SCHEMA};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Default seconds per step when neither `--num-conns` nor `--const-test-time` is given.
pub const DEFAULT_STEP_SECONDS: f64 = 5.0;
/// Default warm-up before each step's measured connections, seconds.
pub const DEFAULT_WARMUP_SECONDS: f64 = 1.0;

#[derive(Parser, Debug, Default)]
#[command(
    name = "httplab sweep",
    version,
    about = "Run `httplab load` at rising rates (autobench-style) and find the saturation point",
    long_about = None,
    after_help = "autobench spellings are accepted too: --single_host, --low_rate, --high_rate, --rate_step, \
--num_conn, --num_call, --const_test_time, --output_fmt, --host1=HOST. Unknown options, and everything \
after `--`, are passed to `httplab load` for every step.\n\n\
Example (seed 003): httplab sweep --single_host --host1=www.example.com --file=example.com.csv"
)]
struct Cli {
    /// Target URLs (http://host[:port]/path), in addition to --host1/--host2.
    urls: Vec<String>,
    /// First server under test.
    #[arg(long)]
    host1: Option<String>,
    /// Second server under test (compared side by side).
    #[arg(long)]
    host2: Option<String>,
    /// URI to fetch from host1.
    #[arg(long)]
    uri1: Option<String>,
    /// URI to fetch from host2.
    #[arg(long)]
    uri2: Option<String>,
    /// Port of host1 (default 80).
    #[arg(long)]
    port1: Option<u16>,
    /// Port of host2 (default 80).
    #[arg(long)]
    port2: Option<u16>,
    /// Test host1 only.
    #[arg(long)]
    single_host: bool,
    /// First rate (connections per second).
    #[arg(long)]
    low_rate: Option<f64>,
    /// Last rate (connections per second).
    #[arg(long)]
    high_rate: Option<f64>,
    /// Rate increment between steps.
    #[arg(long)]
    rate_step: Option<f64>,
    /// Connections per step (httperf --num-conns; autobench num_conn).
    #[arg(long)]
    num_conns: Option<u64>,
    /// Requests per connection (httperf --num-calls; autobench num_call).
    #[arg(long)]
    num_calls: Option<u64>,
    /// Seconds per step: connections = rate × seconds (autobench --const_test_time).
    #[arg(long)]
    const_test_time: Option<f64>,
    /// Reply timeout, seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Write autobench's CSV/TSV here (default: standard output).
    #[arg(long)]
    file: Option<PathBuf>,
    /// csv or tsv.
    #[arg(long)]
    output_fmt: Option<String>,
    /// Write every step's full result here (default: next to --file, else DIR/sweep.json with --report, else sweep.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the HTML report into this directory at the end.
    #[arg(long)]
    report: Option<PathBuf>,
    /// autobench configuration file (key = value lines).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Do not read ~/.autobench.conf.
    #[arg(long)]
    no_config: bool,
    /// Do not print each step's result.
    #[arg(long)]
    quiet: bool,
    /// p99 response-time objective of a sustained step (e.g. 1s, 250ms; bare numbers are seconds).
    #[arg(long)]
    slo: Option<String>,
    /// Search the maximum sustainable rate adaptively (bracket, then bisect to 2 %) instead of stepping.
    #[arg(long)]
    find_max: bool,
    /// Upper bound on the runs of --find-max per target.
    #[arg(long)]
    max_runs: Option<u32>,
    /// Seconds of load before each step's measured connections, discarded (the step opens rate × SECONDS more connections first) [default: 1]
    #[arg(long, value_name = "SECONDS")]
    warmup: Option<f64>,
    /// Do not calibrate the load generator (by default it measures its own ceiling for the sweep's shape once per target, and every step records its utilization and is marked client-bound at ≥ 85 %)
    #[arg(long)]
    no_calibrate: bool,
    /// Accepted for autobench compatibility; no effect.
    #[arg(long, hide = true)]
    debug: bool,

    // ---- client shards (docs/distributed.md) ----
    /// This machine is client I of N: every step runs shard I of its schedule (`httplab load
    /// --client I/N`); merge the N sweeps with `httplab merge`. Needs --start-at.
    #[arg(long, value_name = "I/N", help_heading = "Client shards")]
    client: Option<String>,
    /// The sweep's shared start (RFC 3339 UTC or unix seconds). Step s starts at this instant
    /// plus the planned lengths of the steps before it, each plus --step-gap (and, before the
    /// first rate, the calibration of each target), the same instants on every shard.
    #[arg(long, value_name = "TIME", help_heading = "Client shards")]
    start_at: Option<String>,
    /// Run id passed to every step (default: each step derives one from its command line
    /// and start, the same on every shard).
    #[arg(long, value_name = "ID", help_heading = "Client shards")]
    run_id: Option<String>,
    /// With --start-at: seconds between the planned end of a step's schedule and the next
    /// step's start, for its last replies (a step that overruns it fails the sweep) [default: 5].
    #[arg(long, value_name = "SECONDS", help_heading = "Client shards")]
    step_gap: Option<f64>,
}

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
    /// Calibrate the generator once per target and pass its ceiling to every step.
    pub calibrate: bool,
    /// Options passed to every load run.
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

    /// The `httplab load` arguments of one step (httperf spelling, as autobench
    /// builds them). With a warm-up, the step first opens `rate × warm-up`
    /// connections that `--warmup` leaves out of every figure, so the
    /// measured connections are still `conns_at(rate)`.
    pub fn load_args(&self, t: &Target, rate: f64) -> Vec<String> {
        let warm = (rate * self.warmup_s).ceil() as u64;
        let mut a = vec![
            "httplab load".to_string(),
            "--server".into(),
            t.host.clone(),
            "--port".into(),
            t.port.to_string(),
            "--uri".into(),
            t.uri.clone(),
            "--rate".into(),
            fmt_rate(rate),
            "--num-conns".into(),
            (self.conns_at(rate) + warm).to_string(),
            "--num-calls".into(),
            self.num_calls.to_string(),
            "--timeout".into(),
            abcsv::perl_number(self.timeout_s),
        ];
        if warm > 0 {
            a.extend(["--warmup".into(), abcsv::perl_number(self.warmup_s)]);
        }
        a.extend(self.passthrough.iter().cloned());
        if let Some((i, n)) = self.client {
            a.extend(["--client".into(), format!("{i}/{n}")]);
        }
        if let Some(id) = &self.run_id {
            a.extend(["--run-id".into(), id.clone()]);
        }
        if let Some(at) = self.step_start(t, rate) {
            a.extend(["--start-at".into(), format!("{at:.6}")]);
        }
        a
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

fn fmt_rate(r: f64) -> String {
    abcsv::perl_number(r)
}

/// Parses an SLO: `1s`, `250ms`, `500us`, or a bare number of seconds. Returns ms.
pub fn parse_duration_ms(s: &str) -> Result<f64> {
    let t = s.trim();
    let (num, mult) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (v, 0.001)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1000.0)
    } else if let Some(v) = t.strip_suffix('m') {
        (v, 60_000.0)
    } else {
        (t, 1000.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| anyhow!("bad duration '{s}' (try 1s or 250ms)"))?;
    if !(v.is_finite() && v > 0.0) {
        bail!("duration '{s}' must be positive");
    }
    Ok(v * mult)
}

/// Reads an autobench configuration file: `key = value` lines, `#` comments.
/// The first definition of a key wins, as in autobench.
pub fn parse_config(text: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut warnings = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            warnings.push(format!("line {}: not a 'key = value' line: '{l}'", n + 1));
            continue;
        };
        let k = k.trim();
        let v = v.trim();
        let key_ok = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok || v.is_empty() {
            warnings.push(format!("line {}: not a 'key = value' line: '{l}'", n + 1));
            continue;
        }
        if map.contains_key(k) {
            warnings.push(format!(
                "line {}: '{k}' defined more than once, keeping the first",
                n + 1
            ));
            continue;
        }
        map.insert(k.to_string(), v.to_string());
    }
    (map, warnings)
}

const FLAGS: &[&str] = &[
    "single-host",
    "no-config",
    "quiet",
    "find-max",
    "no-calibrate",
    "debug",
    "help",
    "version",
];
const VALUED: &[&str] = &[
    "host1",
    "host2",
    "uri1",
    "uri2",
    "port1",
    "port2",
    "low-rate",
    "high-rate",
    "rate-step",
    "num-conns",
    "num-calls",
    "const-test-time",
    "timeout",
    "file",
    "output-fmt",
    "json",
    "report",
    "config",
    "slo",
    "max-runs",
    "warmup",
    // client shards
    "client",
    "start-at",
    "run-id",
    "step-gap",
];

fn canonical(name: &str) -> String {
    let n = name.replace('_', "-");
    match n.as_str() {
        "num-conn" => "num-conns".into(),
        "num-call" => "num-calls".into(),
        "single" => "single-host".into(),
        _ => n,
    }
}

/// Splits raw arguments into those for the sweep parser (normalised to
/// hyphenated names) and those passed through to the load generator.
pub fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut mine = Vec::new();
    let mut pass = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            pass.extend(args[i + 1..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let canon = canonical(name);
            if FLAGS.contains(&canon.as_str()) {
                mine.push(format!("--{canon}"));
            } else if VALUED.contains(&canon.as_str()) {
                match value {
                    Some(v) => mine.push(format!("--{canon}={v}")),
                    None => {
                        mine.push(format!("--{canon}"));
                        if let Some(v) = args.get(i + 1) {
                            mine.push(v.clone());
                            i += 1;
                        }
                    }
                }
            } else {
                // Unknown: the load generator's. Its value follows unless it looks like an option.
                pass.push(a.clone());
                if value.is_none() {
                    if let Some(v) = args.get(i + 1) {
                        if !v.starts_with('-') && !v.starts_with("http://") {
                            pass.push(v.clone());
                            i += 1;
                        }
                    }
                }
            }
        } else if a == "-h" || a == "-V" || !a.starts_with('-') || a == "-" {
            mine.push(a.clone());
        } else {
            pass.push(a.clone());
        }
        i += 1;
    }
    (mine, pass)
}

fn truthy(v: &str) -> bool {
    !matches!(v.trim(), "" | "0" | "no" | "false" | "off")
}

/// Resolves a sweep from `httplab sweep` arguments (`args[0]` is the program
/// name). Returns `Ok(Err(code))` when clap printed help or an error.
pub fn parse_plan(args: &[OsString]) -> Result<std::result::Result<SweepPlan, clap::Error>> {
    let strs: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (mine, mut pass) = split_args(&strs);
    let prog = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "httplab sweep".into());
    let cli = match Cli::try_parse_from(std::iter::once(prog).chain(mine)) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let (cfg, cfg_name) = if let Some(p) = &cli.config {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read config file {}", p.display()))?;
        (text, Some(p.display().to_string()))
    } else if !cli.no_config {
        match std::env::var_os("HOME").map(|h| Path::new(&h).join(".autobench.conf")) {
            Some(p) if p.is_file() => match std::fs::read_to_string(&p) {
                Ok(t) => (t, Some(p.display().to_string())),
                Err(_) => (String::new(), None),
            },
            _ => (String::new(), None),
        }
    } else {
        (String::new(), None)
    };
    let (conf, warnings) = parse_config(&cfg);
    if let Some(name) = &cfg_name {
        if !cli.quiet {
            eprintln!("httplab sweep: reading configuration from {name}");
        }
        for w in &warnings {
            eprintln!("httplab sweep: warning: {name}: {w}");
        }
    }
    let get = |k: &str| conf.get(k).map(|s| s.as_str());
    let num = |k: &str| -> Result<Option<f64>> {
        match get(k) {
            None => Ok(None),
            Some(v) => v
                .parse::<f64>()
                .map(Some)
                .map_err(|_| anyhow!("config: {k} = '{v}' is not a number")),
        }
    };
    // httperf_* keys and add_header pass through, as autobench does.
    let mut cfg_pass = Vec::new();
    for (k, v) in &conf {
        if let Some(opt) = k.strip_prefix("httperf_") {
            cfg_pass.push(format!("--{}", opt.replace('_', "-")));
            if v != "NULL" {
                cfg_pass.push(v.clone());
            }
        }
    }
    if let Some(h) = get("add_header") {
        if !h.trim().is_empty() {
            cfg_pass.push("--add-header".into());
            cfg_pass.push(h.to_string());
        }
    }
    cfg_pass.append(&mut pass);
    let pass = cfg_pass;

    let single = cli.single_host || get("single_host").is_some_and(truthy);
    let mut targets = Vec::new();
    let host1 = cli.host1.clone().or(get("host1").map(String::from));
    if let Some(h) = host1 {
        targets.push(Target {
            host: h,
            port: match cli.port1 {
                Some(p) => p,
                None => num("port1")?.map(|p| p as u16).unwrap_or(80),
            },
            uri: cli
                .uri1
                .clone()
                .or(get("uri1").map(String::from))
                .unwrap_or_else(|| "/".into()),
        });
        if !single {
            let host2 = cli.host2.clone().or(get("host2").map(String::from));
            if let Some(h2) = host2 {
                targets.push(Target {
                    host: h2,
                    port: match cli.port2 {
                        Some(p) => p,
                        None => num("port2")?.map(|p| p as u16).unwrap_or(80),
                    },
                    uri: cli
                        .uri2
                        .clone()
                        .or(get("uri2").map(String::from))
                        .unwrap_or_else(|| "/".into()),
                });
            }
        }
    }
    for u in &cli.urls {
        targets.push(Target::from_url(u)?);
    }
    if targets.is_empty() {
        bail!("no target: give --host1 HOST [--port1 P --uri1 /path] (autobench style) or a URL");
    }
    let low = cli.low_rate.or(num("low_rate")?);
    let high = cli.high_rate.or(num("high_rate")?);
    let step = cli.rate_step.or(num("rate_step")?);
    let (low_rate, high_rate, rate_step) = if cli.find_max {
        let l = low.unwrap_or(10.0);
        (l, high.unwrap_or(f64::INFINITY), step.unwrap_or(0.0))
    } else {
        let mut missing = Vec::new();
        if low.is_none() {
            missing.push("--low-rate");
        }
        if high.is_none() {
            missing.push("--high-rate");
        }
        if step.is_none() {
            missing.push("--rate-step");
        }
        if !missing.is_empty() {
            bail!(
                "missing {} (on the command line or in the config file), or use --find-max",
                missing.join(", ")
            );
        }
        (
            low.unwrap_or_default(),
            high.unwrap_or_default(),
            step.unwrap_or_default(),
        )
    };
    if !(low_rate.is_finite() && low_rate > 0.0) {
        bail!("--low-rate must be a positive number");
    }
    if !cli.find_max {
        if !(rate_step.is_finite() && rate_step > 0.0) {
            bail!("--rate-step must be positive");
        }
        if high_rate < low_rate {
            bail!("--high-rate ({high_rate}) is below --low-rate ({low_rate})");
        }
        if (high_rate - low_rate) / rate_step > 10_000.0 {
            bail!("more than 10 000 steps: raise --rate-step");
        }
    }
    let const_time = cli.const_test_time.or(num("const_test_time")?);
    let num_conns = cli.num_conns.or(num("num_conn")?.map(|v| v as u64));
    let size = match (const_time, num_conns) {
        (Some(t), _) if t > 0.0 => StepSize::Seconds(t),
        (Some(_), _) => bail!("--const-test-time must be positive"),
        (None, Some(n)) => StepSize::Conns(n),
        (None, None) => StepSize::Seconds(DEFAULT_STEP_SECONDS),
    };
    let num_calls = cli
        .num_calls
        .or(num("num_call")?.map(|v| v as u64))
        .unwrap_or(1)
        .max(1);
    let timeout_s = cli.timeout.or(num("timeout")?).unwrap_or(5.0);
    let fmt_s = cli
        .output_fmt
        .clone()
        .or(get("output_fmt").map(String::from))
        .unwrap_or_else(|| "csv".into());
    let format = Format::parse(&fmt_s)
        .ok_or_else(|| anyhow!("output format '{fmt_s}' not supported (csv or tsv)"))?;
    let file = cli.file.clone().or(get("file").map(PathBuf::from));
    let json = match (&cli.json, &file, &cli.report) {
        (Some(j), _, _) => j.clone(),
        (None, Some(f), _) => f.with_extension("json"),
        (None, None, Some(r)) => r.join("sweep.json"),
        (None, None, None) => PathBuf::from("sweep.json"),
    };
    let client = match &cli.client {
        Some(c) => {
            let (i, n) = c
                .split_once('/')
                .and_then(|(i, n)| {
                    Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?))
                })
                .filter(|(i, n)| *n > 0 && i < n)
                .ok_or_else(|| anyhow!("bad --client '{c}': expected I/N with 0 <= I < N"))?;
            Some((i, n))
        }
        None => None,
    };
    let start_at = match &cli.start_at {
        Some(t) => Some(httplab_load::parse_start_at(t)?),
        None => None,
    };
    let step_gap_s = cli.step_gap.unwrap_or(5.0);
    if !(step_gap_s.is_finite() && (0.0..=3600.0).contains(&step_gap_s)) {
        bail!("--step-gap must be between 0 and 3600 seconds");
    }
    if let Some((_, n)) = client.filter(|c| c.1 > 1) {
        if cli.find_max {
            bail!("--client with --find-max: each shard would search on its own share; run a stepped sweep (--low-rate, --high-rate, --rate-step) and merge it");
        }
        if start_at.is_none() {
            bail!("a sweep split into {n} shards needs --start-at (the shards' steps must start together)");
        }
    }
    let slo_ms = match &cli.slo {
        Some(s) => parse_duration_ms(s)?,
        None => 1000.0,
    };
    Ok(Ok(SweepPlan {
        targets,
        low_rate,
        high_rate,
        rate_step,
        size,
        num_calls,
        timeout_s,
        slo_ms,
        find_max: cli.find_max,
        max_runs: cli.max_runs.unwrap_or(40).max(1),
        warmup_s: match cli.warmup.or(num("warmup")?) {
            Some(w) if !(0.0..=600.0).contains(&w) => {
                bail!("--warmup {w}: seconds between 0 and 600")
            }
            Some(w) => w,
            None => DEFAULT_WARMUP_SECONDS,
        },
        calibrate: !cli.no_calibrate,
        passthrough: pass,
        file,
        format,
        json,
        report: cli.report.clone(),
        quiet: cli.quiet || get("quiet").is_some_and(truthy),
        command_line: strs,
        client,
        start_at,
        run_id: cli.run_id.clone(),
        step_gap_s,
    }))
}

/// Runs a whole sweep with `runner(target, rate)` doing each load run. Steps
/// are taken in autobench's order (at each rate, every target); `--find-max`
/// searches each target in turn. `on_step` sees every finished step.
pub fn run_sweep<R, S>(plan: &SweepPlan, mut runner: R, mut on_step: S) -> Result<SweepResult>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
    S: FnMut(&Target, f64, &RunResult),
{
    let mut steps: Vec<Vec<SweepStep>> = vec![Vec::new(); plan.targets.len()];
    let mut sats = Vec::new();
    if plan.find_max {
        for (ti, t) in plan.targets.iter().enumerate() {
            let cfg = FindMax {
                start: plan.low_rate,
                ceiling: plan.high_rate.is_finite().then_some(plan.high_rate),
                max_runs: plan.max_runs,
                slo_ms: plan.slo_ms,
                ..Default::default()
            };
            let (st, sat) = analysis::find_max(&cfg, |rate| {
                let r = runner(t, rate)?;
                on_step(t, rate, &r);
                Ok(r)
            })?;
            let stop = st.iter().any(|s| s.run.interrupted);
            steps[ti] = st;
            sats.push(sat);
            if stop {
                // The remaining targets were never run.
                for _ in ti + 1..plan.targets.len() {
                    sats.push(analysis::analyze(&[], plan.slo_ms));
                }
                break;
            }
        }
    } else {
        'rates: for rate in plan.rates() {
            for (ti, t) in plan.targets.iter().enumerate() {
                let r = runner(t, rate).with_context(|| {
                    format!("load run at rate {} against {}", fmt_rate(rate), t.label())
                })?;
                on_step(t, rate, &r);
                let stop = r.interrupted;
                steps[ti].push(SweepStep {
                    demanded_rate: rate,
                    run: r,
                });
                if stop {
                    break 'rates;
                }
            }
        }
        for s in &steps {
            sats.push(analysis::analyze(s, plan.slo_ms));
        }
    }
    let environment = steps
        .iter()
        .flatten()
        .next()
        .map(|s| s.run.environment.clone())
        .unwrap_or_default();
    let started_at = steps
        .iter()
        .flatten()
        .map(|s| s.run.started_at.clone())
        .min()
        .unwrap_or_default();
    Ok(SweepResult {
        schema: SWEEP_SCHEMA.into(),
        tool: ToolInfo::current(env!("CARGO_PKG_VERSION")),
        started_at,
        command_line: plan.command_line.clone(),
        targets: plan
            .targets
            .iter()
            .zip(steps)
            .zip(sats)
            .map(|((t, steps), saturation)| SweepTarget {
                label: t.label(),
                url: t.url(),
                steps,
                saturation,
            })
            .collect(),
        environment,
    })
}

/// One line per finished step, for the terminal.
pub fn step_line(t: &Target, rate: f64, r: &RunResult, slo_ms: f64) -> String {
    let m = analysis::metrics(rate, r, slo_ms);
    format!(
        "{} @ {} req/s: reply {:.1}/s, p50 {}, p99 {}, errors {:.2}%{}{}",
        t.label(),
        abcsv::perl_number(m.demanded_req_rate),
        m.reply_rate,
        m.p50_ms
            .map(crate::charts::ms_label)
            .unwrap_or_else(|| "–".into()),
        m.p99_ms
            .map(crate::charts::ms_label)
            .unwrap_or_else(|| "–".into()),
        m.error_pct,
        if m.sustained {
            ""
        } else {
            " — not sustained"
        },
        if m.client_bound {
            " [client-bound]"
        } else {
            ""
        }
    )
}

/// The default runner: `httplab load` as a library, one run per step. With
/// `plan.calibrate` the generator measures its own ceiling for the sweep's
/// shape once per target (the shape does not change with the rate) and every
/// step gets it, so each step records its client utilization and is marked
/// client-bound at 85 % or more of it.
pub fn load_runner(plan: &SweepPlan) -> impl FnMut(&Target, f64) -> Result<RunResult> + '_ {
    let mut ceilings: std::collections::HashMap<String, Option<f64>> = Default::default();
    move |t: &Target, rate: f64| {
        let args = plan.load_args(t, rate);
        let mut spec = parse_load(&args)?;
        if plan.calibrate {
            let c = ceilings.entry(t.label()).or_insert_with(|| {
                httplab_load::calibrate(&spec)
                    .ok()
                    .map(|c| c.ceiling_rps)
                    .filter(|x| x.is_finite() && *x > 0.0)
            });
            spec.client_ceiling = *c;
        }
        let mut r = httplab_load::run_with_stop(&spec, false, stop_flag())?;
        if r.label.is_empty() {
            r.label = t.label();
        }
        Ok(r)
    }
}

fn parse_load(args: &[String]) -> Result<httplab_load::LoadSpec> {
    httplab_load::parse_args(args.iter().skip(1)).with_context(|| {
        format!(
            "bad load options: {}",
            args.iter().skip(1).cloned().collect::<Vec<_>>().join(" ")
        )
    })
}

/// Runs `httplab load` with `args` (`args[0]` is the program name) in process.
/// The run ends early, marked `interrupted`, once [`stop_flag`] is set.
pub fn run_load(args: &[String]) -> Result<RunResult> {
    httplab_load::run_with_stop(&parse_load(args)?, false, stop_flag())
}

/// The sweep's Ctrl-C flag: the process-wide flag of [`install_sigint`].
pub fn stop_flag() -> &'static AtomicBool {
    httplab_load::interrupted()
}

/// First Ctrl-C ends the current step and the sweep, which then writes what
/// it has; a second one exits at once.
pub fn install_sigint() {
    httplab_load::install_sigint();
}

/// True when any step of `result` was cut short by Ctrl-C.
pub fn was_interrupted(result: &SweepResult) -> bool {
    result
        .targets
        .iter()
        .any(|t| t.steps.iter().any(|s| s.run.interrupted))
}

/// The httperf-style report of one run (what autobench echoes per step).
pub fn httperf_report(r: &RunResult) -> String {
    httplab_load::render_httperf_report(r)
}

/// Writes the CSV, the JSON and (if asked) the report of a finished sweep.
pub fn write_outputs(plan: &SweepPlan, result: &SweepResult) -> Result<()> {
    write_outputs_inner(plan, result, false)
}

fn write_outputs_inner(plan: &SweepPlan, result: &SweepResult, csv_streamed: bool) -> Result<()> {
    let csv = abcsv::write_sweep(result, plan.num_calls, plan.format);
    match &plan.file {
        // The file is rewritten whole, streamed or not (same content when complete).
        Some(f) => {
            std::fs::write(f, &csv).with_context(|| format!("cannot write {}", f.display()))?
        }
        None if csv_streamed => {}
        None => {
            use std::io::Write;
            std::io::stdout().write_all(csv.as_bytes())?;
        }
    }
    if let Some(dir) = plan.json.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
    }
    let json = serde_json::to_string_pretty(result)?;
    std::fs::write(&plan.json, json)
        .with_context(|| format!("cannot write {}", plan.json.display()))?;
    if let Some(dir) = &plan.report {
        let docs = vec![httplab_model::Document::Sweep(Box::new(result.clone()))];
        let opts = crate::html::ReportOptions {
            title: "httplab sweep report".into(),
            sources: vec![plan
                .json
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()],
        };
        crate::html::render_report_with(&docs, dir, &opts)?;
    }
    Ok(())
}

/// A human summary of the saturation analysis.
pub fn summary(result: &SweepResult, num_calls: u64) -> String {
    let mut s = String::new();
    for t in &result.targets {
        let sat = &t.saturation;
        let calls = num_calls.max(1) as f64;
        let max = match sat.max_sustainable_rate {
            Some(r) if num_calls > 1 => format!(
                "{} req/s ({} conn/s)",
                abcsv::perl_number(r * calls),
                abcsv::perl_number(r)
            ),
            Some(r) => format!("{} req/s", abcsv::perl_number(r)),
            None => "none of the rates tried".into(),
        };
        let top = t
            .steps
            .iter()
            .max_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
        let max = match (top, sat.max_sustainable_rate) {
            (Some(top), Some(r)) if (top.demanded_rate - r).abs() < 1e-9 => {
                format!("{max} (the highest rate tried: the limit is above it)")
            }
            _ => max,
        };
        let knee = sat
            .knee_rate
            .map(|k| format!("{} req/s", abcsv::perl_number(k * calls)))
            .unwrap_or_else(|| "not reached".into());
        let cb = t
            .steps
            .iter()
            .filter(|s| s.run.self_check.client_bound)
            .count();
        s.push_str(&format!(
            "{}: max sustainable {max}; knee {knee}; p99 SLO {}; {} {}{}\n",
            t.label,
            crate::charts::ms_label(sat.slo_ms),
            sat.runs,
            if sat.method == "find-max" {
                "runs (find-max)"
            } else {
                "steps"
            },
            if cb > 0 {
                format!("; WARNING: {cb} client-bound step(s), the generator limited them")
            } else {
                String::new()
            }
        ));
    }
    s
}

/// `httplab sweep` with a caller-supplied runner (tests, study runner).
pub fn sweep_main_with<R>(args: Vec<OsString>, runner: R) -> Result<ExitCode>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
{
    let plan = match parse_plan(&args)? {
        Ok(p) => p,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Ok(ExitCode::from(code));
        }
    };
    let result = execute(&plan, runner)?;
    if was_interrupted(&result) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `plan` with progress on stderr, writes every output, prints the summary.
pub fn execute<R>(plan: &SweepPlan, runner: R) -> Result<SweepResult>
where
    R: FnMut(&Target, f64) -> Result<RunResult>,
{
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let total = if plan.find_max {
        0
    } else {
        (plan.rates().len() * plan.targets.len()) as u64
    };
    let pb = if plan.find_max {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(total)
    };
    pb.set_draw_target(ProgressDrawTarget::stderr());
    let style = if plan.find_max {
        ProgressStyle::with_template("{spinner} find-max: {pos} runs [{elapsed}] {msg}")
    } else {
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps [{elapsed} < {eta}] {msg}")
    };
    if let Ok(st) = style {
        pb.set_style(st);
    }
    let mut runner = runner;
    let pb2 = pb.clone();
    // Stepped sweeps stream autobench's lines as each rate completes, as
    // autobench does (a file is rewritten whole at the end).
    let stream = !plan.find_max;
    let mut out: Option<Box<dyn std::io::Write>> = None;
    let mut stream_err: Option<anyhow::Error> = None;
    if stream {
        let hosts: Vec<String> = plan.targets.iter().map(|t| t.host.clone()).collect();
        let refs: Vec<&str> = hosts.iter().map(|h| h.as_str()).collect();
        let mut w: Box<dyn std::io::Write> = match &plan.file {
            Some(f) => Box::new(
                std::fs::File::create(f)
                    .with_context(|| format!("cannot write {}", f.display()))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        writeln!(w, "{}", abcsv::header(&refs, plan.format))?;
        w.flush()?;
        out = Some(w);
    }
    let mut pending: Vec<RunResult> = Vec::new();
    let result = run_sweep(
        plan,
        |t, rate| {
            pb2.set_message(format!(
                "{} @ {}/s",
                t.label(),
                fmt_rate(rate * plan.num_calls as f64)
            ));
            runner(t, rate)
        },
        |t, rate, r| {
            pb.inc(1);
            if let Some(w) = out.as_mut() {
                pending.push(r.clone());
                if pending.len() == plan.targets.len() {
                    let runs: Vec<&RunResult> = pending.iter().collect();
                    let line = abcsv::row(rate, plan.num_calls, &runs, plan.format);
                    pb.suspend(|| {
                        if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
                            stream_err.get_or_insert(e.into());
                        }
                    });
                    pending.clear();
                }
            }
            if !plan.quiet {
                pb.suspend(|| {
                    // autobench echoes httperf's output when the CSV goes to a file.
                    if plan.file.is_some() {
                        println!("{}", httperf_report(r));
                    }
                    eprintln!("{}", step_line(t, rate, r, plan.slo_ms));
                });
            }
        },
    );
    pb.finish_and_clear();
    drop(out);
    let result = result?;
    if let Some(e) = stream_err {
        return Err(e.context("writing the CSV"));
    }
    if was_interrupted(&result) {
        eprintln!("httplab sweep: interrupted — writing the steps that ran");
    }
    write_outputs_inner(plan, &result, stream)?;
    eprint!("{}", summary(&result, plan.num_calls));
    eprintln!("httplab sweep: results in {}", plan.json.display());
    if let Some(f) = &plan.file {
        eprintln!(
            "httplab sweep: {} in {}",
            if plan.format == Format::Tsv {
                "TSV"
            } else {
                "CSV"
            },
            f.display()
        );
    }
    if let Some(d) = &plan.report {
        eprintln!(
            "httplab sweep: report in {}",
            d.join("index.html").display()
        );
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn seed_003_with_config() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("autobench.conf");
        std::fs::write(
            &conf,
            "# Autobench Configuration File\nhost1 = testhost1\nhost2 = testhost2\nuri1 = /\nuri2 = /\nport1 = 80\nport2 = 80\nlow_rate = 10\nhigh_rate = 50\nrate_step = 10\nnum_conn = 200\n#num_call = 10\nnum_call = 1\ntimeout = 60\noutput_fmt = csv\nclients = localhost:4600\nhttperf_hog = NULL\n",
        )
        .unwrap();
        let p = parse_plan(&os(&[
            "httplab sweep",
            "--single_host",
            "--host1=www.example.com",
            "--file=example.com.csv",
            "--config",
            conf.to_str().unwrap(),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(p.targets.len(), 1);
        assert_eq!(p.targets[0].host, "www.example.com");
        assert_eq!(p.rates(), vec![10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(p.size, StepSize::Conns(200));
        assert_eq!(p.num_calls, 1);
        assert_eq!(p.timeout_s, 60.0);
        assert_eq!(p.file, Some(PathBuf::from("example.com.csv")));
        assert_eq!(p.json, PathBuf::from("example.com.json"));
        assert_eq!(p.passthrough, vec!["--hog".to_string()]);
        // The default 1 s warm-up opens 20 more connections first and leaves
        // them out (--warmup), so 200 are still measured.
        let a = p.load_args(&p.targets[0], 20.0);
        assert_eq!(
            a[1..].join(" "),
            "--server www.example.com --port 80 --uri / --rate 20 --num-conns 220 --num-calls 1 --timeout 60 --warmup 1 --hog"
        );
        // --warmup and --no-calibrate are the sweep's own options, never
        // passed through to httplab load.
        let (mine, pass) = split_args(&[
            "--warmup".into(),
            "0.5".into(),
            "--no-calibrate".into(),
            "--hog".into(),
        ]);
        assert_eq!(mine, ["--warmup", "0.5", "--no-calibrate"]);
        assert_eq!(pass, ["--hog"]);
        let mut p0 = p.clone();
        p0.warmup_s = 0.0;
        assert_eq!(
            p0.load_args(&p0.targets[0], 20.0)[1..].join(" "),
            "--server www.example.com --port 80 --uri / --rate 20 --num-conns 200 --num-calls 1 --timeout 60 --hog"
        );
    }

    #[test]
    fn sharded_steps_share_their_instants() {
        let args = |extra: &[&str]| {
            let mut v = vec![
                "x",
                "--no-config",
                "--host1",
                "127.0.0.1",
                "--port1",
                "8080",
                "--low-rate",
                "100",
                "--high-rate",
                "200",
                "--rate-step",
                "100",
                "--num-conns",
                "300",
                "--warmup",
                "1",
            ];
            v.extend_from_slice(extra);
            parse_plan(&os(&v))
        };
        let p = args(&[
            "--client",
            "1/3",
            "--start-at",
            "1000",
            "--run-id",
            "r1",
            "--step-gap",
            "2",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(p.client, Some((1, 3)));
        assert_eq!(p.warmup_s, 1.0);
        let t = &p.targets[0];
        // Calibration slot, then step 100/s: (300 + 100) / 100 s + 2 s gap.
        let s1 = 1000.0 + CALIBRATION_SLOT_S;
        assert_eq!(p.step_start(t, 100.0), Some(s1));
        assert_eq!(p.step_start(t, 200.0), Some(s1 + 4.0 + 2.0));
        let a = p.load_args(t, 200.0)[1..].join(" ");
        assert!(a.contains("--client 1/3"), "{a}");
        assert!(a.contains("--run-id r1"), "{a}");
        assert!(a.contains(&format!("--start-at {:.6}", s1 + 6.0)), "{a}");
        // Every step parses as a load spec.
        assert!(httplab_load::parse_args(p.load_args(t, 200.0).iter().skip(1)).is_ok());
        // Sharded sweeps need a shared start and fixed steps.
        assert!(args(&["--client", "1/3"]).is_err());
        assert!(args(&["--client", "1/3", "--start-at", "1000", "--find-max"]).is_err());
        assert!(args(&["--client", "3/3", "--start-at", "1000"]).is_err());
        let q = args(&["--no-calibrate"]).unwrap().unwrap();
        assert!(!q.calibrate && q.client.is_none() && q.step_start(t, 100.0).is_none());
    }

    #[test]
    fn spellings_and_passthrough() {
        let p = parse_plan(&os(&[
            "x",
            "--no-config",
            "--host1",
            "127.0.0.1",
            "--port1",
            "8080",
            "--uri1",
            "/x",
            "--low_rate",
            "100",
            "--high-rate=300",
            "--rate_step",
            "100",
            "--num_call",
            "10",
            "--const_test_time",
            "2",
            "--threads",
            "2",
            "--hog",
            "--slo",
            "250ms",
            "--",
            "--send-buffer",
            "4096",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(p.targets[0].url(), "http://127.0.0.1:8080/x");
        assert_eq!(p.rates(), vec![100.0, 200.0, 300.0]);
        assert_eq!(p.num_calls, 10);
        assert_eq!(p.size, StepSize::Seconds(2.0));
        assert_eq!(p.conns_at(300.0), 600);
        assert_eq!(p.slo_ms, 250.0);
        assert_eq!(
            p.passthrough,
            vec!["--threads", "2", "--hog", "--send-buffer", "4096"]
        );
    }

    #[test]
    fn urls_and_two_hosts() {
        let p = parse_plan(&os(&[
            "x",
            "--no-config",
            "--host1=a",
            "--host2=b",
            "--port2=81",
            "http://[::1]:9000/y",
            "--find-max",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(p.targets.len(), 3);
        assert_eq!(p.targets[1].port, 81);
        assert_eq!(p.targets[2].host, "::1");
        assert_eq!(p.targets[2].url(), "http://[::1]:9000/y");
        assert!(p.find_max);
    }

    #[test]
    fn missing_rates_is_an_error() {
        let e = parse_plan(&os(&["x", "--no-config", "--host1=a"])).unwrap_err();
        assert!(e.to_string().contains("--low-rate"), "{e}");
        assert!(parse_plan(&os(&["x", "--no-config"])).is_err());
    }

    #[test]
    fn interrupted_step_ends_the_sweep() {
        let p = parse_plan(&os(&[
            "x",
            "--no-config",
            "--host1=a",
            "--low-rate=100",
            "--high-rate=1000",
            "--rate-step=100",
        ]))
        .unwrap()
        .unwrap();
        let server = crate::synth::SynthServer::new("a", 10_000.0, 0.5);
        let mut calls = 0;
        let r = run_sweep(
            &p,
            |_, rate| {
                calls += 1;
                let mut r = crate::synth::run(&server, rate, 1, 2.0);
                r.interrupted = calls == 3;
                Ok(r)
            },
            |_, _, _| {},
        )
        .unwrap();
        assert_eq!(r.targets[0].steps.len(), 3);
        assert!(was_interrupted(&r));
        // The cut-short step is not counted as sustained.
        assert_eq!(r.targets[0].saturation.max_sustainable_rate, Some(200.0));

        let mut fm = p.clone();
        fm.find_max = true;
        let mut calls = 0;
        let r = run_sweep(
            &fm,
            |_, rate| {
                calls += 1;
                let mut r = crate::synth::run(&server, rate, 1, 2.0);
                r.interrupted = calls == 2;
                Ok(r)
            },
            |_, _, _| {},
        )
        .unwrap();
        assert_eq!(r.targets[0].steps.len(), 2);
        assert_eq!(r.targets[0].saturation.max_sustainable_rate, Some(100.0));
    }

    #[test]
    fn cli_with_a_synthetic_runner_writes_every_output() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("s.tsv");
        let report = dir.path().join("rep");
        let server = crate::synth::SynthServer::new("a", 3_000.0, 0.5);
        let code = sweep_main_with(
            os(&[
                "httplab sweep",
                "--no-config",
                "--host1=h1",
                "--host2=h2",
                "--low_rate=1000",
                "--high_rate=4000",
                "--rate_step=1000",
                "--output_fmt=tsv",
                "--quiet",
                &format!("--file={}", csv.display()),
                &format!("--report={}", report.display()),
            ]),
            |_, rate| Ok(crate::synth::run(&server, rate, 1, 2.0)),
        )
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(text.starts_with("dem_req_rate\treq_rate_h1\t"));
        assert!(text.lines().all(|l| l.split('\t').count() == 19));
        let json = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
        let doc = httplab_model::Document::from_json(&json).unwrap();
        let httplab_model::Document::Sweep(sw) = doc else {
            panic!("not a sweep")
        };
        assert_eq!(sw.targets.len(), 2);
        assert_eq!(sw.targets[0].saturation.max_sustainable_rate, Some(3000.0));
        assert!(report.join("index.html").is_file());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1s").unwrap(), 1000.0);
        assert_eq!(parse_duration_ms("250ms").unwrap(), 250.0);
        assert_eq!(parse_duration_ms("2").unwrap(), 2000.0);
        assert!(parse_duration_ms("fast").is_err());
        assert!(parse_duration_ms("-1s").is_err());
    }

    #[test]
    fn config_warnings() {
        let (m, w) = parse_config("a = 1\na = 2\nnonsense\n  # c\n");
        assert_eq!(m.get("a").map(String::as_str), Some("1"));
        assert_eq!(w.len(), 2);
    }
}
