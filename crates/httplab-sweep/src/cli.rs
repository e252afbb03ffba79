//! The `httplab sweep` command line: the clap definition, and the split of
//! raw arguments into the sweep's own (autobench spellings normalised to
//! hyphenated names) and those passed through to every `httplab load` run.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug, Default)]
#[command(
    name = "httplab sweep",
    version,
    about = "Run `httplab load` at rising rates (autobench-style) and find the saturation point",
    long_about = None,
    after_help = "autobench spellings are accepted too: --single_host, --low_rate, --high_rate, --rate_step, \
--num_conn, --num_call, --const_test_time, --output_fmt, --host1=HOST. Unknown options, and everything \
after `--`, are passed to `httplab load` for every step.\n\n\
Example (an autobench command line, unchanged): httplab sweep --single_host --host1=www.example.com --file=example.com.csv"
)]
pub(crate) struct Cli {
    /// Target URLs (http://host[:port]/path), in addition to --host1/--host2.
    pub(crate) urls: Vec<String>,
    /// First server under test.
    #[arg(long)]
    pub(crate) host1: Option<String>,
    /// Second server under test (compared side by side).
    #[arg(long)]
    pub(crate) host2: Option<String>,
    /// URI to fetch from host1.
    #[arg(long)]
    pub(crate) uri1: Option<String>,
    /// URI to fetch from host2.
    #[arg(long)]
    pub(crate) uri2: Option<String>,
    /// Port of host1 (default 80).
    #[arg(long)]
    pub(crate) port1: Option<u16>,
    /// Port of host2 (default 80).
    #[arg(long)]
    pub(crate) port2: Option<u16>,
    /// Test host1 only.
    #[arg(long)]
    pub(crate) single_host: bool,
    /// First rate (connections per second).
    #[arg(long)]
    pub(crate) low_rate: Option<f64>,
    /// Last rate (connections per second).
    #[arg(long)]
    pub(crate) high_rate: Option<f64>,
    /// Rate increment between steps.
    #[arg(long)]
    pub(crate) rate_step: Option<f64>,
    /// Connections per step (httperf --num-conns; autobench num_conn).
    #[arg(long)]
    pub(crate) num_conns: Option<u64>,
    /// Requests per connection (httperf --num-calls; autobench num_call).
    #[arg(long)]
    pub(crate) num_calls: Option<u64>,
    /// Seconds per step: connections = rate × seconds (autobench --const_test_time).
    #[arg(long)]
    pub(crate) const_test_time: Option<f64>,
    /// Reply timeout, seconds.
    #[arg(long)]
    pub(crate) timeout: Option<f64>,
    /// Write autobench's CSV/TSV here (default: standard output).
    #[arg(long)]
    pub(crate) file: Option<PathBuf>,
    /// csv or tsv.
    #[arg(long)]
    pub(crate) output_fmt: Option<String>,
    /// Write every step's full result here (default: next to --file, else DIR/sweep.json with --report, else sweep.json).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Write the HTML report into this directory at the end.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// autobench configuration file (key = value lines).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Do not read ~/.autobench.conf.
    #[arg(long)]
    pub(crate) no_config: bool,
    /// Do not print each step's result.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// p99 response-time objective of a sustained step (e.g. 1s, 250ms; bare numbers are seconds).
    #[arg(long)]
    pub(crate) slo: Option<String>,
    /// Search the maximum sustainable rate adaptively (bracket, then bisect to 2 %) instead of stepping.
    #[arg(long)]
    pub(crate) find_max: bool,
    /// Upper bound on the runs of --find-max per target.
    #[arg(long)]
    pub(crate) max_runs: Option<u32>,
    /// Seconds of load before each step's measured connections, discarded (the step opens rate × SECONDS more connections first) [default: 1]
    #[arg(long, value_name = "SECONDS")]
    pub(crate) warmup: Option<f64>,
    /// Run each target's steps as the stages of one `httplab load --stages` run (each rate
    /// held for its step's length, no gap between steps); each stage becomes a step of the
    /// result. Not with --find-max or client shards.
    #[arg(long)]
    pub(crate) staged: bool,
    /// Do not calibrate the load generator (by default it measures its own ceiling once per shape of run (targets of one shape share it), and every step records its utilization and is marked client-bound at ≥ 85 %)
    #[arg(long)]
    pub(crate) no_calibrate: bool,
    /// Accepted for autobench compatibility; no effect.
    #[arg(long, hide = true)]
    pub(crate) debug: bool,
    /// Serve live metrics (Prometheus text format) on http://ADDR/metrics during the sweep:
    /// the load metrics of the running step (updated once per interval) and
    /// `httplab_run_info{target,rate}`; port 0 picks a free port (printed on stderr)
    #[arg(long, value_name = "ADDR")]
    pub(crate) prometheus: Option<String>,
    /// Before every step, check the client as `httplab load --check-client` does (one client
    /// process vs two at the step's rate, a few seconds each) and record it in the step's run
    #[arg(long)]
    pub(crate) check_client: bool,

    // ---- client shards (docs/distributed.md) ----
    /// This machine is client I of N: every step runs shard I of its schedule (`httplab load
    /// --client I/N`); merge the N sweeps with `httplab merge`. Needs --start-at.
    #[arg(long, value_name = "I/N", help_heading = "Client shards")]
    pub(crate) client: Option<String>,
    /// The sweep's shared start (RFC 3339 UTC or unix seconds). Step s starts at this instant
    /// plus the planned lengths of the steps before it, each plus --step-gap (and, before the
    /// first rate, the calibration of each target), the same instants on every shard.
    #[arg(long, value_name = "TIME", help_heading = "Client shards")]
    pub(crate) start_at: Option<String>,
    /// Run id passed to every step (default: each step derives one from its command line
    /// and start, the same on every shard).
    #[arg(long, value_name = "ID", help_heading = "Client shards")]
    pub(crate) run_id: Option<String>,
    /// With --start-at: seconds between the planned end of a step's schedule and the next
    /// step's start, for its last replies (a step that overruns it fails the sweep) [default: 5].
    #[arg(long, value_name = "SECONDS", help_heading = "Client shards")]
    pub(crate) step_gap: Option<f64>,
}

const FLAGS: &[&str] = &[
    "single-host",
    "no-config",
    "quiet",
    "find-max",
    "staged",
    "no-calibrate",
    "debug",
    "check-client",
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
    "prometheus",
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
