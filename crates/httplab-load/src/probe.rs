//! `--probe RATE[,CONNS]`: an unqueued latency probe beside the load.
//!
//! A loaded client that cannot send on schedule queues its own requests, and
//! its corrected latency then includes that wait: the server looks slower
//! than it is. The probe is a second, light client in the same process (a
//! run of its own on its own thread: paced users, one request at a time per
//! connection, at RATE requests/s), pinned to a core the load threads do not
//! use when the machine has one, for the whole run. Its corrected latency is
//! what the server gives a client that does not queue; the rule that flags
//! the difference is [`ProbeResult::queueing_rule`].

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use httplab_model::{Latency, ProbeResult, RunResult};

use crate::spec::{Arrival, Dist, LoadSpec, ProbeSpec, Workload};

/// The probe's length beside a counted run (it is stopped when the load ends).
const UNTIL_STOPPED_S: f64 = 24.0 * 3600.0;

/// A run's result and its raw corrected latencies (`--latency-dump`).
pub(crate) type Ran = Result<(RunResult, Option<Vec<u64>>)>;

/// What runs a spec (the run without its probe): `run::run_raw`.
pub(crate) type Runner<'a> = &'a (dyn Fn(&LoadSpec, &AtomicBool) -> Ran + Sync);

/// The probe's own run: the same target and requests, `p.conns` paced users
/// at `p.rate` requests/s in total, one thread, for the load's duration
/// (or until the load ends, for a counted run).
pub(crate) fn probe_spec(spec: &LoadSpec, p: &ProbeSpec) -> LoadSpec {
    let mut s = spec.clone();
    s.probe = None;
    s.stages = Vec::new();
    s.workload = Workload::Users {
        users: u64::from(p.conns),
        requests_per_user: None,
        think: 0.0,
        burst: 1,
        pace: Some(Dist::Deterministic(1.0 / p.rate)),
    };
    s.arrival = Arrival::Concurrent(u64::from(p.conns));
    s.calls_per_conn = None;
    s.wset = None;
    s.uris = Vec::new();
    s.threads = 1;
    // A counted load run ends when it is done: the probe is stopped then.
    s.duration = Some(spec.duration.unwrap_or(UNTIL_STOPPED_S));
    s.client = (0, 1);
    s.run_id = None;
    s.client_ceiling = None;
    s.print_reply = crate::spec::PrintWhat::None;
    s.print_request = crate::spec::PrintWhat::None;
    s.as_inner_run("probe".into());
    s
}

/// The cores for the load and for the probe: with two or more allowed
/// cores, the probe gets the last and the load the others.
fn split_cores() -> Option<(Vec<usize>, usize)> {
    let mut cores = httplab_sys::cpu::allowed_cores().ok()?;
    if cores.len() < 2 {
        return None;
    }
    let probe = cores.pop()?;
    Some((cores, probe))
}

/// Runs `spec` (its probe taken out) with the probe beside it and puts the
/// probe's figures into the result.
pub(crate) fn beside(
    spec: &LoadSpec,
    p: &ProbeSpec,
    stop: &AtomicBool,
    run: Runner<'_>,
) -> Result<(RunResult, Option<Vec<u64>>)> {
    let mut main_spec = spec.clone();
    main_spec.probe = None;
    let pspec = probe_spec(spec, p);
    let probe_stop = AtomicBool::new(false);
    let cores = split_cores();
    let (pspec, probe_stop) = (&pspec, &probe_stop);
    let (main, probe) = std::thread::scope(|scope| {
        let probe_core = cores.as_ref().map(|c| c.1);
        let handle = std::thread::Builder::new()
            .name("httplab-probe".into())
            .spawn_scoped(scope, move || {
                // Its worker thread inherits this affinity.
                let pinned =
                    probe_core.filter(|&c| httplab_sys::cpu::pin_current_thread(&[c]).is_ok());
                (run(pspec, probe_stop), pinned)
            });
        // The load's workers inherit this thread's affinity: every core but the probe's.
        let restore = cores.as_ref().and_then(|(load, _)| {
            let before = httplab_sys::cpu::allowed_cores().ok()?;
            httplab_sys::cpu::pin_current_thread(load).ok()?;
            Some(before)
        });
        let main = run(&main_spec, stop);
        if let Some(all) = restore {
            let _ = httplab_sys::cpu::pin_current_thread(&all);
        }
        probe_stop.store(true, Ordering::Relaxed);
        let probe = match handle {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| (Err(anyhow::anyhow!("the probe thread panicked")), None)),
            Err(e) => (
                Err(anyhow::anyhow!("cannot start the probe thread: {e}")),
                None,
            ),
        };
        (main, probe)
    });
    let (mut result, raw) = main?;
    attach(&mut result, p, probe);
    Ok((result, raw))
}

/// Puts the probe's run into the load's result (or, when it failed, a warning).
fn attach(result: &mut RunResult, p: &ProbeSpec, (probe, cpu): (Ran, Option<usize>)) {
    let probe = match probe {
        Ok((r, _)) => r,
        Err(e) => {
            result
                .self_check
                .warnings
                .push(format!("--probe: the probe did not run: {e:#}"));
            return;
        }
    };
    let pr = probe_result(p, cpu, &probe, &result.latency.response);
    if let Some(w) = queueing_warning(&result.latency.response, &pr) {
        result.self_check.warnings.push(w);
    }
    result.probe = Some(pr);
}

/// The probe's figures, judged against the loaded client's corrected latency.
pub(crate) fn probe_result(
    p: &ProbeSpec,
    cpu: Option<usize>,
    probe: &RunResult,
    loaded: &Latency,
) -> ProbeResult {
    let response = probe.latency.response.clone();
    ProbeResult {
        rate: p.rate,
        connections: u64::from(p.conns),
        cpu,
        sent: probe.totals.requests,
        replies: probe.totals.replies,
        errors: probe.errors.total,
        client_queueing: ProbeResult::queueing_rule(loaded, &response),
        response,
    }
}

/// The warning when the loaded client queued (see [`ProbeResult::queueing_rule`]).
pub(crate) fn queueing_warning(loaded: &Latency, pr: &ProbeResult) -> Option<String> {
    if !pr.client_queueing {
        return None;
    }
    Some(format!(
        "the loaded client's median response time ({:.3} ms) is above the unqueued probe's p99 ({:.3} ms): the difference is the client's own queueing (requests waiting to be sent), not the server's latency",
        loaded.at(50.0).unwrap_or(0.0),
        pr.response.at(99.0).unwrap_or(0.0)
    ))
}

/// The probe's lines of the text report.
pub(crate) fn render(r: &RunResult) -> String {
    let Some(p) = &r.probe else {
        return String::new();
    };
    let ms = |l: &Latency, q: f64| {
        l.at(q)
            .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
    };
    let core = p
        .cpu
        .map_or_else(|| "not pinned".to_string(), |c| format!("core {c}"));
    let loaded = &r.latency.response;
    let mut s = format!(
        "\nProbe: {} req/s on {} connection(s), {core}: sent {} replies {} errors {}\n",
        p.rate, p.connections, p.sent, p.replies, p.errors
    );
    s.push_str(&format!(
        "Probe vs load (corrected, ms): probe p50 {} p99 {}  load p50 {} p99 {}\n",
        ms(&p.response, 50.0),
        ms(&p.response, 99.0),
        ms(loaded, 50.0),
        ms(loaded, 99.0),
    ));
    // The warning itself is one of the self-check's (printed below).
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_model::Percentile;

    fn lat(count: u64, p50: f64, p99: f64) -> Latency {
        Latency {
            count,
            percentiles: vec![
                Percentile { pct: 50.0, ms: p50 },
                Percentile { pct: 99.0, ms: p99 },
            ],
            ..Latency::default()
        }
    }

    #[test]
    fn the_probe_spec_is_light_paced_and_alone() {
        let mut s = crate::cli::parse_args(
            "--server 127.0.0.1 --port 80 --rate 1000 --duration 5 --threads 4 --probe 200,2"
                .split_whitespace(),
        )
        .expect("valid");
        s.json = Some("x.json".into());
        let p = probe_spec(
            &s,
            &ProbeSpec {
                rate: 200.0,
                conns: 2,
            },
        );
        assert_eq!(p.threads, 1);
        assert_eq!(p.arrival, Arrival::Concurrent(2));
        assert!(p.probe.is_none() && p.json.is_none());
        assert_eq!(p.duration, Some(5.0));
        assert!(p.validate().is_ok(), "{:?}", p.validate());
    }

    #[test]
    fn the_queueing_rule_and_its_warning() {
        let probe = ProbeResult {
            response: lat(500, 0.1, 0.4),
            client_queueing: true,
            ..ProbeResult::default()
        };
        assert!(ProbeResult::queueing_rule(
            &lat(1000, 5.0, 9.0),
            &probe.response
        ));
        assert!(!ProbeResult::queueing_rule(
            &lat(1000, 0.3, 9.0),
            &probe.response
        ));
        assert!(
            !ProbeResult::queueing_rule(&lat(50, 5.0, 9.0), &probe.response),
            "too few replies"
        );
        let w = queueing_warning(&lat(1000, 5.0, 9.0), &probe).expect("warns");
        assert!(w.contains("client's own queueing"), "{w}");
    }
}
