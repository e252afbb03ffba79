//! `--check-client`: before the run, a short step at the run's rate from one
//! client process, then from two (`--client 0/2` and `1/2` of the same
//! schedule, so the same total rate), compared interval by interval. If two
//! clients get a different reply rate or latency than one, the one client
//! was part of what the run measures.
//!
//! The steps run as child processes of the httplab executable (`httplab
//! load <the same arguments> --client-check-step I/N@START`), each a client
//! of its own with its own threads, sockets and scheduler share, started at
//! one shared instant. Where this code does not run as `httplab load` (the
//! library inside another program or a test harness, whose executable does
//! not understand `load`), the steps run in-process on threads instead, and
//! the record says `threads`. (A study's runs are typed specs without a
//! command line: they would run on threads.)

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use httplab_model::{CheckStep, ClientCheck, RunResult};

pub use crate::live::StepShard;
use crate::spec::LoadSpec;

/// Measured window of a step, seconds (after [`STEP_WARMUP_S`]).
pub const STEP_S: f64 = 2.5;
/// Warm-up of a step, seconds.
pub const STEP_WARMUP_S: f64 = 0.5;
/// Interval of a step's series, seconds (about ten values per step).
pub const STEP_INTERVAL_S: f64 = 0.25;
/// How far ahead of now the steps' shared start is set (time to start the processes).
const START_AHEAD_S: f64 = 1.5;
/// Longest a step's process may take before it is killed.
const STEP_DEADLINE: Duration = Duration::from_secs(120);
/// A difference smaller than this fraction of the one-client value is not
/// reported however steady the steps (immaterial).
const MATERIAL: f64 = 0.05;

/// Parses `I/N@START`.
pub(crate) fn parse_step(s: &str) -> Result<StepShard> {
    let bad = || format!("--client-check-step '{s}': expected I/N@UNIX_SECONDS");
    let (shard, at) = s.split_once('@').with_context(bad)?;
    let (i, n) = shard.split_once('/').with_context(bad)?;
    let index: u32 = i.parse().ok().with_context(bad)?;
    let of: u32 = n.parse().ok().with_context(bad)?;
    let start_at: f64 = at.parse().ok().with_context(bad)?;
    if of == 0 || index >= of || !start_at.is_finite() {
        bail!(bad());
    }
    Ok(StepShard {
        index,
        of,
        start_at,
    })
}

/// The step's spec: the run's, bounded to a short window, as shard I of N,
/// with nothing written and nothing served.
pub(crate) fn step_spec(spec: &LoadSpec, shard: StepShard) -> LoadSpec {
    let mut s = spec.clone();
    s.duration = Some(s.duration.map_or(STEP_S, |d| d.min(STEP_S)));
    s.warmup = STEP_WARMUP_S;
    s.sample_interval = STEP_INTERVAL_S;
    s.client = (shard.index, shard.of);
    s.start_at = Some(shard.start_at);
    s.run_id = Some("client-check".into());
    s.live = crate::live::LiveSpec::default();
    s.as_inner_run(format!("client check {}/{}", shard.index, shard.of));
    s
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Runs both steps and compares them: as processes when this is the
/// httplab executable and `spec` has its command line, else on threads.
pub fn check_client(spec: &LoadSpec) -> Result<ClientCheck> {
    if spec.is_shard() {
        bail!("--check-client runs its own shards: leave out --client, --start-at and --run-id");
    }
    let exe = std::env::current_exe()
        .ok()
        .filter(|e| e.file_name().is_some_and(|n| n == "httplab"))
        .filter(|_| !spec.command_line.is_empty());
    let (method, one, two) = match &exe {
        Some(exe) => (
            "processes",
            run_processes(exe, spec, 1)?,
            run_processes(exe, spec, 2)?,
        ),
        None => ("threads", run_threads(spec, 1)?, run_threads(spec, 2)?),
    };
    let one = summarize(&one, 1);
    let two = summarize(&two, 2);
    let (differences, note) = compare(&one, &two);
    Ok(ClientCheck {
        method: method.into(),
        step_s: STEP_S,
        one,
        two,
        distorts: !differences.is_empty(),
        differences,
        note,
    })
}

/// `--check-client`: the check, its warning printed on stderr; None when not asked.
pub(crate) fn check_if_asked(spec: &LoadSpec) -> Result<Option<ClientCheck>> {
    if !spec.live.check_client {
        return Ok(None);
    }
    let c = check_client(spec)?;
    if let Some(w) = warning(&c) {
        eprintln!("httplab load: warning: {w}");
    }
    Ok(Some(c))
}

/// Keeps the check in the result (and its warning in the self-check).
pub fn record(result: &mut RunResult, check: Option<ClientCheck>) {
    if let Some(c) = check {
        if let Some(w) = warning(&c) {
            result.self_check.warnings.push(w);
        }
        result.client_check = Some(c);
    }
}

/// A child of [`run_processes`]: runs its part of the step and prints the
/// result as JSON on stdout.
pub(crate) fn step_main(spec: &LoadSpec, step: StepShard) -> Result<std::process::ExitCode> {
    let mut s = step_spec(spec, step);
    if step.start_at <= unix_now() {
        // Started too late (a loaded machine): start now rather than fail;
        // the step is still bounded, only less well aligned with its sibling.
        s.start_at = None;
    }
    let r = crate::run::run(&s, false)?;
    println!("{}", serde_json::to_string(&r)?);
    Ok(std::process::ExitCode::SUCCESS)
}

/// The warning printed and kept in the self-check when the check failed.
pub fn warning(c: &ClientCheck) -> Option<String> {
    c.distorts.then(|| {
        format!(
            "the client distorts the measurement: {} (--check-client: one client process vs two at the same total rate; use more client cores or machines, see --client I/N)",
            c.differences.join("; ")
        )
    })
}

fn run_processes(exe: &std::path::Path, spec: &LoadSpec, n: u32) -> Result<Vec<RunResult>> {
    let start_at = unix_now() + START_AHEAD_S;
    let mut children = Vec::new();
    for i in 0..n {
        let child = Command::new(exe)
            .arg("load")
            .args(&spec.command_line)
            .arg(format!("--client-check-step={i}/{n}@{start_at:.6}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("--check-client: cannot start {}", exe.display()))?;
        children.push(child);
    }
    // Read every child's output (in threads, so no pipe fills), then wait
    // for all of them with one deadline.
    let readers: Vec<_> = children.iter_mut().map(read_output).collect();
    let deadline = Instant::now() + STEP_DEADLINE;
    let mut results = Vec::new();
    for (mut child, (out, err)) in children.into_iter().zip(readers) {
        let status = wait_until(&mut child, deadline)?;
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        if !status.success() {
            bail!("--check-client: a step's client failed: {}", err.trim());
        }
        let r: RunResult = serde_json::from_str(&out)
            .context("--check-client: a step's client printed no result")?;
        results.push(r);
    }
    Ok(results)
}

type Reader = std::thread::JoinHandle<String>;

fn read_output(child: &mut Child) -> (Reader, Reader) {
    let spawn = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = child
        .stdout
        .take()
        .map(|p| Box::new(p) as Box<dyn Read + Send>);
    let err = child
        .stderr
        .take()
        .map(|p| Box::new(p) as Box<dyn Read + Send>);
    (spawn(out), spawn(err))
}

/// Waits for `child`, killing it (and failing) past `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<std::process::ExitStatus> {
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("--check-client: a step's client did not finish within {STEP_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_threads(spec: &LoadSpec, n: u32) -> Result<Vec<RunResult>> {
    let start_at = unix_now() + START_AHEAD_S;
    let specs: Vec<LoadSpec> = (0..n)
        .map(|index| {
            step_spec(
                spec,
                StepShard {
                    index,
                    of: n,
                    start_at,
                },
            )
        })
        .collect();
    std::thread::scope(|scope| {
        let hs: Vec<_> = specs
            .iter()
            .map(|s| scope.spawn(move || crate::run::run(s, false)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("--check-client: a step's thread panicked"))
            })
            .collect()
    })
}

/// Mean and sample standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// One step's figures from its shards' series, interval by interval: rates
/// added, percentiles weighted by the shards' replies. The last, partial
/// interval is left out.
pub(crate) fn summarize(shards: &[RunResult], clients: u32) -> CheckStep {
    let len = shards.iter().map(|r| r.series.len()).max().unwrap_or(0);
    let (mut rate, mut p50, mut p99) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..len {
        let ivs: Vec<_> = shards.iter().filter_map(|r| r.series.get(k)).collect();
        if ivs.iter().any(|i| i.len_s < 0.9 * STEP_INTERVAL_S) {
            continue;
        }
        rate.push(ivs.iter().map(|i| i.reply_rate).sum());
        let replies: u64 = ivs.iter().map(|i| i.replies).sum();
        if replies > 0 {
            let w = |f: fn(&httplab_model::Interval) -> f64| {
                ivs.iter().map(|i| f(i) * i.replies as f64).sum::<f64>() / replies as f64
            };
            p50.push(w(|i| i.p50_ms));
            p99.push(w(|i| i.p99_ms));
        }
    }
    let (reply_rate, reply_rate_sd) = mean_sd(&rate);
    let (p50_ms, p50_sd) = mean_sd(&p50);
    let (p99_ms, p99_sd) = mean_sd(&p99);
    CheckStep {
        clients,
        intervals: rate.len() as u32,
        reply_rate,
        reply_rate_sd,
        p50_ms,
        p50_sd,
        p99_ms,
        p99_sd,
        errors: shards.iter().map(|r| r.errors.total).sum(),
    }
}

/// The figures that differ beyond the steps' spread: the difference of the
/// means exceeds twice its standard error (the intervals' standard
/// deviations over their counts, about a 95 % bound) and [`MATERIAL`] of the
/// one-client value. Also a note when a step has too few intervals to judge.
pub(crate) fn compare(one: &CheckStep, two: &CheckStep) -> (Vec<String>, String) {
    if one.intervals < 2 || two.intervals < 2 {
        return (
            Vec::new(),
            format!(
                "too few intervals to judge ({} and {}): the run is shorter than the check's step or got no replies",
                one.intervals, two.intervals
            ),
        );
    }
    let (n1, n2) = (f64::from(one.intervals), f64::from(two.intervals));
    let figures = [
        (
            "reply rate",
            "/s",
            one.reply_rate,
            one.reply_rate_sd,
            two.reply_rate,
            two.reply_rate_sd,
        ),
        ("p50", " ms", one.p50_ms, one.p50_sd, two.p50_ms, two.p50_sd),
        ("p99", " ms", one.p99_ms, one.p99_sd, two.p99_ms, two.p99_sd),
    ];
    let mut out = Vec::new();
    for (name, unit, m1, s1, m2, s2) in figures {
        let se = (s1 * s1 / n1 + s2 * s2 / n2).sqrt();
        let d = (m1 - m2).abs();
        if d > 2.0 * se && d > MATERIAL * m1.abs() {
            out.push(format!(
                "{name} {m1:.3}{unit} from one client vs {m2:.3}{unit} from two (spread ±{:.3}{unit})",
                2.0 * se
            ));
        }
    }
    (out, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_model::Interval;

    fn run(rates: &[f64], p99: f64) -> RunResult {
        RunResult {
            series: rates
                .iter()
                .enumerate()
                .map(|(k, r)| Interval {
                    t_s: (k + 1) as f64 * STEP_INTERVAL_S,
                    len_s: STEP_INTERVAL_S,
                    replies: (r * STEP_INTERVAL_S) as u64,
                    reply_rate: *r,
                    p50_ms: p99 / 4.0,
                    p99_ms: p99,
                    ..Interval::default()
                })
                .collect(),
            ..RunResult::default()
        }
    }

    #[test]
    fn parses_the_hidden_step() {
        let s = parse_step("1/2@1700000000.5").unwrap();
        assert_eq!((s.index, s.of, s.start_at), (1, 2, 1_700_000_000.5));
        for bad in ["2/2@1", "0/0@1", "1/2", "x/2@1", "0/1@nan"] {
            assert!(parse_step(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn two_shards_add_their_rates_and_equal_steps_do_not_differ() {
        let one = summarize(&[run(&[100.0, 104.0, 96.0, 100.0], 8.0)], 1);
        let two = summarize(
            &[
                run(&[50.0, 52.0, 48.0, 50.0], 8.0),
                run(&[50.0, 52.0, 48.0, 50.0], 8.0),
            ],
            2,
        );
        assert_eq!(two.intervals, 4);
        assert_eq!(two.reply_rate, one.reply_rate);
        assert_eq!(two.p99_ms, 8.0);
        let (d, note) = compare(&one, &two);
        assert!(d.is_empty() && note.is_empty(), "{d:?} {note}");
    }

    #[test]
    fn a_difference_beyond_the_spread_is_reported() {
        let one = summarize(&[run(&[80.0, 81.0, 79.0, 80.0], 40.0)], 1);
        let two = summarize(
            &[
                run(&[50.0, 50.0, 50.0, 50.0], 8.0),
                run(&[50.0, 50.0, 50.0, 50.0], 8.0),
            ],
            2,
        );
        let (d, _) = compare(&one, &two);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(
            d[0].starts_with("reply rate 80.000/s from one client vs 100.000/s"),
            "{d:?}"
        );
        let c = ClientCheck {
            distorts: true,
            differences: d,
            ..ClientCheck::default()
        };
        assert!(warning(&c)
            .unwrap()
            .starts_with("the client distorts the measurement: "));
    }

    #[test]
    fn too_few_intervals_are_a_note_not_a_verdict() {
        let one = summarize(&[run(&[80.0], 4.0)], 1);
        let (d, note) = compare(&one, &one);
        assert!(d.is_empty());
        assert!(note.contains("too few intervals"), "{note}");
    }
}
