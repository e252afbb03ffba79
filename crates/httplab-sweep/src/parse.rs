//! `httplab sweep` arguments and the configuration file → [`SweepPlan`].
//! Command-line values win over the file's, as in autobench.

use crate::cli::{split_args, Cli};
use crate::config::ConfigValues;
use crate::plan::{StepSize, SweepPlan, Target, DEFAULT_STEP_SECONDS, DEFAULT_WARMUP_SECONDS};
use anyhow::{anyhow, bail, Result};
use clap::Parser;
use httplab_report::csv::Format;
use std::ffi::OsString;
use std::path::PathBuf;

/// Default reply timeout, seconds.
const DEFAULT_TIMEOUT_SECONDS: f64 = 5.0;
/// Default p99 objective of a sustained step, ms.
const DEFAULT_SLO_MS: f64 = 1000.0;
/// Default run limit of `--find-max` per target.
const DEFAULT_MAX_RUNS: u32 = 40;
/// Default first rate of `--find-max` when none is given.
const DEFAULT_FIND_MAX_START: f64 = 10.0;
/// Default `--step-gap`, seconds.
const DEFAULT_STEP_GAP_SECONDS: f64 = 5.0;

/// Resolves a sweep from `httplab sweep` arguments (`args[0]` is the program
/// name). Returns `Ok(Err(code))` when clap printed help or an error.
pub fn parse_plan(args: &[OsString]) -> Result<std::result::Result<SweepPlan, clap::Error>> {
    let command_line: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (sweep_args, load_args) = split_args(&command_line);
    let program = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "httplab sweep".into());
    let cli = match Cli::try_parse_from(std::iter::once(program).chain(sweep_args)) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let conf = ConfigValues::load(cli.config.as_deref(), !cli.no_config, cli.quiet)?;
    // The file's load options first, then the command line's.
    let mut passthrough = conf.load_options();
    passthrough.extend(load_args);
    let targets = resolve_targets(&cli, &conf)?;
    let rates = resolve_rates(&cli, &conf)?;
    let step = resolve_step_shape(&cli, &conf)?;
    let outputs = resolve_outputs(&cli, &conf)?;
    let shards = resolve_shards(&cli)?;
    let slo_ms = match &cli.slo {
        Some(s) => parse_duration_ms(s)?,
        None => DEFAULT_SLO_MS,
    };
    let warmup_s = resolve_warmup(&cli, &conf)?;
    Ok(Ok(SweepPlan {
        targets,
        low_rate: rates.low,
        high_rate: rates.high,
        rate_step: rates.step,
        size: step.size,
        num_calls: step.num_calls,
        timeout_s: step.timeout_s,
        slo_ms,
        find_max: cli.find_max,
        max_runs: cli.max_runs.unwrap_or(DEFAULT_MAX_RUNS).max(1),
        warmup_s,
        calibrate: !cli.no_calibrate,
        passthrough,
        file: outputs.file,
        format: outputs.format,
        json: outputs.json,
        report: cli.report.clone(),
        quiet: cli.quiet || conf.is_true("quiet"),
        command_line,
        client: shards.client,
        start_at: shards.start_at,
        run_id: cli.run_id.clone(),
        step_gap_s: shards.step_gap_s,
        staged: cli.staged,
        prometheus: cli
            .prometheus
            .as_deref()
            .map(httplab_live::parse_addr)
            .transpose()
            .map_err(|e| anyhow!(e))?,
        check_client: cli.check_client,
    }))
}

/// Servers under test in autobench's order: host1, host2 (unless
/// `--single-host`), then the URLs.
fn resolve_targets(cli: &Cli, conf: &ConfigValues) -> Result<Vec<Target>> {
    let single_host = cli.single_host || conf.is_true("single_host");
    let mut targets = Vec::new();
    if let Some(host) = cli.host1.clone().or(conf.text("host1").map(String::from)) {
        targets.push(Target {
            host,
            port: port_of(cli.port1, conf, "port1")?,
            uri: uri_of(&cli.uri1, conf, "uri1"),
        });
        if !single_host {
            if let Some(host) = cli.host2.clone().or(conf.text("host2").map(String::from)) {
                targets.push(Target {
                    host,
                    port: port_of(cli.port2, conf, "port2")?,
                    uri: uri_of(&cli.uri2, conf, "uri2"),
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
    Ok(targets)
}

/// A host's port: the command line's, else the file's `key`, else 80.
fn port_of(given: Option<u16>, conf: &ConfigValues, key: &str) -> Result<u16> {
    match given {
        Some(p) => Ok(p),
        None => Ok(conf.number(key)?.map(|p| p as u16).unwrap_or(80)),
    }
}

/// A host's URI: the command line's, else the file's `key`, else `/`.
fn uri_of(given: &Option<String>, conf: &ConfigValues, key: &str) -> String {
    given
        .clone()
        .or(conf.text(key).map(String::from))
        .unwrap_or_else(|| "/".into())
}

/// The rates of a stepped sweep (connections per second), or the start and
/// ceiling of `--find-max` (`high` infinite when no ceiling was given).
struct RateRange {
    low: f64,
    high: f64,
    step: f64,
}

/// `--low-rate`, `--high-rate`, `--rate-step`: all three required for a
/// stepped sweep; `--find-max` starts at 10/s and has no ceiling unless given.
fn resolve_rates(cli: &Cli, conf: &ConfigValues) -> Result<RateRange> {
    let low = cli.low_rate.or(conf.number("low_rate")?);
    let high = cli.high_rate.or(conf.number("high_rate")?);
    let step = cli.rate_step.or(conf.number("rate_step")?);
    let range = if cli.find_max {
        RateRange {
            low: low.unwrap_or(DEFAULT_FIND_MAX_START),
            high: high.unwrap_or(f64::INFINITY),
            step: step.unwrap_or(0.0),
        }
    } else {
        match (low, high, step) {
            (Some(low), Some(high), Some(step)) => RateRange { low, high, step },
            _ => {
                let missing: Vec<&str> = [
                    (low, "--low-rate"),
                    (high, "--high-rate"),
                    (step, "--rate-step"),
                ]
                .iter()
                .filter(|(value, _)| value.is_none())
                .map(|(_, option)| *option)
                .collect();
                bail!(
                    "missing {} (on the command line or in the config file), or use --find-max",
                    missing.join(", ")
                );
            }
        }
    };
    if !(range.low.is_finite() && range.low > 0.0) {
        bail!("--low-rate must be a positive number");
    }
    if !cli.find_max {
        if !(range.step.is_finite() && range.step > 0.0) {
            bail!("--rate-step must be positive");
        }
        if range.high < range.low {
            bail!(
                "--high-rate ({}) is below --low-rate ({})",
                range.high,
                range.low
            );
        }
        if (range.high - range.low) / range.step > 10_000.0 {
            bail!("more than 10 000 steps: raise --rate-step");
        }
    }
    Ok(range)
}

/// What every step runs: how many connections, requests on each, and the
/// reply timeout.
struct StepShape {
    size: StepSize,
    num_calls: u64,
    timeout_s: f64,
}

/// `--const-test-time` wins over `--num-conns`; neither: 5 s per step.
fn resolve_step_shape(cli: &Cli, conf: &ConfigValues) -> Result<StepShape> {
    let const_time = cli.const_test_time.or(conf.number("const_test_time")?);
    let num_conns = cli.num_conns.or(conf.number("num_conn")?.map(|v| v as u64));
    let size = match (const_time, num_conns) {
        (Some(t), _) if t > 0.0 => StepSize::Seconds(t),
        (Some(_), _) => bail!("--const-test-time must be positive"),
        (None, Some(n)) => StepSize::Conns(n),
        (None, None) => StepSize::Seconds(DEFAULT_STEP_SECONDS),
    };
    let num_calls = cli
        .num_calls
        .or(conf.number("num_call")?.map(|v| v as u64))
        .unwrap_or(1)
        .max(1);
    let timeout_s = cli
        .timeout
        .or(conf.number("timeout")?)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    Ok(StepShape {
        size,
        num_calls,
        timeout_s,
    })
}

/// Where the CSV (or TSV) and the JSON go.
struct Outputs {
    file: Option<PathBuf>,
    format: Format,
    json: PathBuf,
}

/// The JSON goes to `--json`, else next to `--file`, else into the
/// `--report` directory, else `sweep.json`.
fn resolve_outputs(cli: &Cli, conf: &ConfigValues) -> Result<Outputs> {
    let format_name = cli
        .output_fmt
        .clone()
        .or(conf.text("output_fmt").map(String::from))
        .unwrap_or_else(|| "csv".into());
    let format = Format::parse(&format_name)
        .ok_or_else(|| anyhow!("output format '{format_name}' not supported (csv or tsv)"))?;
    let file = cli.file.clone().or(conf.text("file").map(PathBuf::from));
    let json = match (&cli.json, &file, &cli.report) {
        (Some(j), _, _) => j.clone(),
        (None, Some(f), _) => f.with_extension("json"),
        (None, None, Some(r)) => r.join("sweep.json"),
        (None, None, None) => PathBuf::from("sweep.json"),
    };
    Ok(Outputs { file, format, json })
}

/// This machine's share of a sweep split across client machines.
struct ShardSchedule {
    client: Option<(u32, u32)>,
    start_at: Option<f64>,
    step_gap_s: f64,
}

/// `--client I/N`, `--start-at`, `--step-gap`. A sweep split into shards
/// needs a shared start and fixed steps.
fn resolve_shards(cli: &Cli) -> Result<ShardSchedule> {
    let client = cli.client.as_deref().map(parse_client).transpose()?;
    let start_at = cli
        .start_at
        .as_deref()
        .map(httplab_load::parse_start_at)
        .transpose()?;
    let step_gap_s = cli.step_gap.unwrap_or(DEFAULT_STEP_GAP_SECONDS);
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
    Ok(ShardSchedule {
        client,
        start_at,
        step_gap_s,
    })
}

/// `I/N` with `0 <= I < N`.
fn parse_client(c: &str) -> Result<(u32, u32)> {
    c.split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)))
        .filter(|(i, n)| *n > 0 && i < n)
        .ok_or_else(|| anyhow!("bad --client '{c}': expected I/N with 0 <= I < N"))
}

/// `--warmup` (or the file's `warmup`), 0 to 600 s; default 1 s.
fn resolve_warmup(cli: &Cli, conf: &ConfigValues) -> Result<f64> {
    match cli.warmup.or(conf.number("warmup")?) {
        Some(w) if !(0.0..=600.0).contains(&w) => {
            bail!("--warmup {w}: seconds between 0 and 600")
        }
        Some(w) => Ok(w),
        None => Ok(DEFAULT_WARMUP_SECONDS),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CALIBRATION_SLOT_S;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// The first target's step at `rate` is the spec `legacy`, the command
    /// line the sweep wrote for it before it built specs, parsed to.
    fn same_as(p: &SweepPlan, rate: f64, legacy: &str) {
        let spec = p.load_spec(&p.targets[0], rate).expect("valid");
        let mut old = httplab_load::parse_args(legacy.split_whitespace()).expect("parse");
        old.command_line = spec.command_line.clone();
        assert_eq!(spec, old);
    }

    #[test]
    fn prometheus_and_check_client_are_the_sweeps_not_passed_to_load() {
        let p = parse_plan(&os(&[
            "httplab sweep",
            "--no-config",
            "--host1=h",
            "--single-host",
            "--low-rate=10",
            "--high-rate=20",
            "--rate-step=10",
            "--prometheus",
            "127.0.0.1:0",
            "--check-client",
            "--threads",
            "2",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(p.prometheus, Some("127.0.0.1:0".parse().unwrap()));
        assert!(p.check_client);
        assert_eq!(p.passthrough, vec!["--threads".to_string(), "2".into()]);
        let bad = parse_plan(&os(&[
            "httplab sweep",
            "--no-config",
            "--host1=h",
            "--find-max",
            "--prometheus=x",
        ]));
        let e = bad.expect_err("a bad address is an error").to_string();
        assert!(e.contains("--prometheus 'x'"), "{e}");
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
        same_as(
            &p,
            20.0,
            "--server www.example.com --port 80 --uri / --rate 20 --num-conns 220 --num-calls 1 --timeout 60 --warmup 1 --hog",
        );
        let spec = p.load_spec(&p.targets[0], 20.0).expect("valid");
        assert_eq!(spec.command_line.last().map(String::as_str), Some("--hog"));
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
        same_as(
            &p0,
            20.0,
            "--server www.example.com --port 80 --uri / --rate 20 --num-conns 200 --num-calls 1 --timeout 60 --hog",
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
        let spec = p
            .load_spec(t, 200.0)
            .expect("every step is a valid load spec");
        assert_eq!(spec.client, (1, 3));
        assert_eq!(spec.run_id.as_deref(), Some("r1"));
        assert_eq!(spec.start_at, Some(s1 + 6.0));
        let a = spec.command_line.join(" ");
        assert!(a.contains("--client 1/3"), "{a}");
        assert!(a.contains("--run-id r1"), "{a}");
        // The spec the step's command line gave before (its start written
        // to the microsecond).
        let mut legacy = httplab_load::parse_args(
            format!(
                "--server 127.0.0.1 --port 8080 --uri / --rate 200 --num-conns 500 --num-calls 1 --timeout 5 --warmup 1 --client 1/3 --run-id r1 --start-at {:.6}",
                s1 + 6.0
            )
            .split_whitespace(),
        )
        .expect("parse");
        legacy.command_line = spec.command_line.clone();
        assert!((legacy.start_at.unwrap_or(0.0) - (s1 + 6.0)).abs() < 1e-6);
        legacy.start_at = spec.start_at;
        assert_eq!(spec, legacy);
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
    fn durations() {
        assert_eq!(parse_duration_ms("1s").unwrap(), 1000.0);
        assert_eq!(parse_duration_ms("250ms").unwrap(), 250.0);
        assert_eq!(parse_duration_ms("2").unwrap(), 2000.0);
        assert!(parse_duration_ms("fast").is_err());
        assert!(parse_duration_ms("-1s").is_err());
    }
}
