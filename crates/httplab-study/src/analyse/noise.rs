//! Where the noise of a comparison lives. A step measured in slices (A B | B A …) gives, per
//! round, one paired log ratio per slice: slice j of the leader against slice j of the
//! runner-up, seconds apart. Their spread around the round's mean is the noise between slices;
//! what the round means spread, within one start of the servers, beyond that is the noise
//! between rounds; what the starts' means spread beyond what their rounds explain is the noise
//! between starts (every server is restarted once, before the extra rounds). One-way random
//! effects by moments, level by level ([`OneWay`]). More slices per round shrink only the
//! first; more rounds of one start shrink the first two; only more starts shrink the third.
//! No I/O: it reads the rows of a finished study.

use std::collections::BTreeMap;

use httplab_model as m;
use httplab_stats::OneWay;

use crate::execute::cells::metrics_of;
use crate::spec::Metric;

/// A start's p value below which the report says the starts differ.
const STARTS_DIFFER_P: f64 = 0.01;

/// Where a round belongs: the servers' start, and the planned window of its runs.
#[derive(Clone, Copy)]
struct Round {
    start: u32,
    window_ms: Option<u64>,
}

/// The study's rows with each run's metrics read once.
pub struct Rows<'a> {
    runs: &'a [m::StudyRun],
    metrics: Vec<BTreeMap<Metric, f64>>,
}

impl<'a> Rows<'a> {
    /// Reads every run's metrics once.
    pub fn new(runs: &'a [m::StudyRun]) -> Rows<'a> {
        let metrics = runs
            .iter()
            .map(|r| match (&r.run, r.status.is_ok()) {
                (Some(run), true) => metrics_of(run),
                _ => BTreeMap::new(),
            })
            .collect();
        Rows { runs, metrics }
    }

    /// One server's slice values of the verdict's metric on its step, by round (with the
    /// round's start and its slices' planned length in milliseconds), in the order they ran.
    fn slices_of(&self, v: &m::StudyVerdict, server: &str) -> BTreeMap<u32, (Round, Vec<f64>)> {
        let mut by_round: BTreeMap<u32, (Round, Vec<f64>)> = BTreeMap::new();
        for (r, metrics) in self.runs.iter().zip(&self.metrics) {
            if r.workload != v.workload || r.step != v.step || r.server != server {
                continue;
            }
            let value = metrics
                .iter()
                .find(|(k, _)| v.metric == **k)
                .map(|(_, &x)| x)
                .filter(|x| x.is_finite() && *x > 0.0);
            if let Some(x) = value {
                let window_ms = r
                    .run
                    .as_ref()
                    .and_then(|run| run.config.duration_s)
                    .map(|d| (d * 1000.0).round() as u64);
                let round = Round {
                    start: r.start,
                    window_ms,
                };
                by_round
                    .entry(r.repetition)
                    .or_insert((round, Vec::new()))
                    .1
                    .push(x);
            }
        }
        by_round
    }

    /// The components of one verdict's log ratio, when there is something to split: two or
    /// more slices per round, or rounds from two or more starts of the servers (and a start
    /// with two rounds).
    pub fn components(&self, v: &m::StudyVerdict) -> Option<m::NoiseComponents> {
        let (a, b) = (v.leader.as_deref()?, v.runner_up.as_deref()?);
        let (sa, sb) = (self.slices_of(v, a), self.slices_of(v, b));
        let slices = sa.values().map(|(_, x)| x.len()).max()?;
        // Each complete round's slice log ratios, grouped by round; the rounds by start.
        let mut by_round: Vec<Vec<f64>> = Vec::new();
        let mut by_start: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        let mut windows: BTreeMap<u32, Option<u64>> = BTreeMap::new();
        for (round, (shape, xa)) in &sa {
            let Some((_, xb)) = sb.get(round) else {
                continue;
            };
            if xa.len() != slices || xb.len() != slices {
                continue;
            }
            let d: Vec<f64> = xa.iter().zip(xb).map(|(x, y)| x.ln() - y.ln()).collect();
            windows.entry(shape.start).or_insert(shape.window_ms);
            by_start
                .entry(shape.start)
                .or_default()
                .push(d.iter().sum::<f64>() / d.len() as f64);
            by_round.push(d);
        }
        let rounds = OneWay::of(&by_round);
        let starts = OneWay::of(&by_start.into_values().collect::<Vec<_>>());
        let several_starts = starts.means.len() >= 2;
        if rounds.means.len() < 2 || (slices < 2 && !several_starts) || starts.within_df < 1.0 {
            return None;
        }
        let slice_var = (slices >= 2).then(|| rounds.within_var());
        // A round mean's variance within a start: its true level's plus its slices' share.
        let round_var = starts.within_var() - slice_var.unwrap_or(0.0) / slices as f64;
        // A start whose rounds had another window than the first start's: what differs between
        // the starts is not the start alone.
        let mut w = windows.values();
        let first = w.next().copied().flatten();
        let window_changed = w.any(|x| *x != first);
        let apart = |x: Option<f64>| x.filter(|_| !window_changed);
        Some(m::NoiseComponents {
            rounds: rounds.means.len() as u32,
            slices: slices as u32,
            between_slices: slice_var.map(f64::sqrt),
            between_rounds: round_var.max(0.0).sqrt(),
            starts: starts.means.len() as u32,
            between_starts: apart(starts.between_var().map(f64::sqrt)),
            starts_p: apart(starts.p_levels_equal()),
            window_changed,
        })
    }
}

/// The components of one verdict's log ratio (see [`m::NoiseComponents`]).
pub fn components(runs: &[m::StudyRun], v: &m::StudyVerdict) -> Option<m::NoiseComponents> {
    Rows::new(runs).components(v)
}

/// Fills every verdict's noise components from the study's rows (each run's metrics read once).
pub fn annotate(res: &mut m::StudyResult) {
    let rows = Rows::new(&res.runs);
    for v in &mut res.verdicts {
        v.noise = rows.components(v);
    }
}

/// "±2.1 % between slices, ±0.8 % between rounds, ±0.5 % between starts (12 rounds of 4
/// slices, 2 starts)", and a warning when the starts differ beyond what their rounds explain.
pub fn text(n: &m::NoiseComponents) -> String {
    let pct = |x: f64| {
        let p = x.exp_m1() * 100.0;
        if p >= 10.0 {
            format!("{p:.0} %")
        } else {
            format!("{p:.1} %")
        }
    };
    let mut parts = Vec::new();
    if let Some(s) = n.between_slices {
        parts.push(format!("±{} between slices", pct(s)));
    }
    parts.push(format!(
        "±{} between rounds{}",
        pct(n.between_rounds),
        if n.between_slices.is_none() {
            " (slices included)"
        } else {
            ""
        }
    ));
    if let Some(s) = n.between_starts {
        parts.push(format!("±{} between starts of the servers", pct(s)));
    } else if n.window_changed {
        parts.push("starts not told apart (the extra rounds ran another window)".into());
    }
    let shape = if n.starts >= 2 {
        format!(
            "{} rounds of {} slices, {} starts",
            n.rounds, n.slices, n.starts
        )
    } else {
        format!("{} rounds of {} slices, one start", n.rounds, n.slices)
    };
    let mut t = format!("{} ({shape})", parts.join(", "));
    if let Some(p) = n.starts_p.filter(|&p| p < STARTS_DIFFER_P) {
        let p = httplab_stats::format_p(p);
        let p = if p.starts_with('<') {
            format!("p {p}")
        } else {
            format!("p = {p}")
        };
        t.push_str(&format!(
            "; the starts differ ({p}): the verdict holds for the starts measured, and a \
             rerun's may land elsewhere"
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: &str, round: u32, cpu_us: f64) -> m::StudyRun {
        started(server, round, 0, cpu_us)
    }

    fn started(server: &str, round: u32, start: u32, cpu_us: f64) -> m::StudyRun {
        let mut r = m::RunResult::default();
        r.totals.replies = 1_000_000;
        r.server = Some(m::ServerCost {
            cpu_s: cpu_us, // 1e6 replies: cpu_s = µs per request
            cpu_source: "schedstat".into(),
            ..Default::default()
        });
        m::StudyRun {
            workload: "w".into(),
            server: server.into(),
            repetition: round,
            start,
            run: Some(r),
            ..Default::default()
        }
    }

    fn verdict() -> m::StudyVerdict {
        m::StudyVerdict {
            workload: "w".into(),
            metric: "server_cpu_us_per_req".into(),
            leader: Some("a".into()),
            runner_up: Some("b".into()),
            ..Default::default()
        }
    }

    #[test]
    fn slices_and_rounds_are_told_apart() {
        // Round levels move a lot (×1.0, ×1.2, ×0.9) on both servers alike; within a round
        // the slices of a differ from b's by 1.00 and 1.02 alternately.
        let mut runs = Vec::new();
        for (round, level) in [(0u32, 1.0), (1, 1.2), (2, 0.9)] {
            for j in 0..4 {
                let wobble = if j % 2 == 0 { 1.0 } else { 1.02 };
                runs.push(run("a", round, 10.0 * level * wobble));
                runs.push(run("b", round, 10.0 * level));
            }
        }
        let n = components(&runs, &verdict()).expect("components");
        assert_eq!((n.rounds, n.slices), (3, 4));
        // The slices' log ratios are 0 and ln 1.02 alternately: sd ≈ 0.0114.
        let slices = n.between_slices.unwrap_or(0.0);
        assert!((slices - 0.011_433).abs() < 1e-4, "{n:?}");
        // Every round has the same mean ratio: nothing between rounds.
        assert!(n.between_rounds < 1e-9, "{n:?}");
        assert!(text(&n).starts_with("±1.1 % between slices, ±0.0 % between rounds"));
        assert!(
            text(&n).ends_with("(3 rounds of 4 slices, one start)"),
            "{}",
            text(&n)
        );
        assert_eq!((n.starts, n.between_starts), (1, None));
    }

    #[test]
    fn a_second_start_that_shifts_the_ratio_is_its_own_component() {
        // Start 0: a is 10 % dearer than b in every round, with a ±1 % wobble between rounds;
        // start 1: 20 % dearer. Slices agree within a round.
        let mut runs = Vec::new();
        for (round, start, ratio) in [
            (0u32, 0u32, 1.10),
            (1, 0, 1.11),
            (2, 0, 1.09),
            (3, 1, 1.20),
            (4, 1, 1.21),
            (5, 1, 1.19),
        ] {
            for _ in 0..2 {
                runs.push(started("a", round, start, 10.0 * ratio));
                runs.push(started("b", round, start, 10.0));
            }
        }
        let n = components(&runs, &verdict()).expect("components");
        assert_eq!((n.rounds, n.slices, n.starts), (6, 2, 2));
        assert!(n.between_slices.unwrap_or(1.0) < 1e-9, "{n:?}");
        assert!((n.between_rounds - 0.0087).abs() < 1e-3, "{n:?}");
        // ln(1.2/1.1) = 0.087 between the two starts' means: sd of two means ≈ 0.0615.
        let starts = n.between_starts.unwrap_or(0.0);
        assert!((starts - 0.061).abs() < 2e-3, "{n:?}");
        assert!(n.starts_p.unwrap_or(1.0) < 0.001, "{n:?}");
        let t = text(&n);
        assert!(
            t.contains("between starts of the servers (6 rounds of 2 slices, 2 starts)"),
            "{t}"
        );
        assert!(t.contains("the starts differ (p < 0.001)"), "{t}");
    }

    #[test]
    fn starts_that_ran_other_windows_are_not_told_apart() {
        let mut runs = Vec::new();
        for (round, start, ratio) in [(0u32, 0u32, 1.10), (1, 0, 1.12), (2, 1, 1.21), (3, 1, 1.19)]
        {
            for server in ["a", "b"] {
                let mut r = started(
                    server,
                    round,
                    start,
                    if server == "a" { 10.0 * ratio } else { 10.0 },
                );
                if let Some(run) = &mut r.run {
                    run.config.duration_s = Some(if start == 0 { 1.0 } else { 4.0 });
                }
                runs.push(r);
            }
        }
        let n = components(&runs, &verdict()).expect("components");
        assert!(n.window_changed);
        assert_eq!((n.starts, n.between_starts, n.starts_p), (2, None, None));
        assert!(text(&n).contains("starts not told apart"), "{}", text(&n));
    }

    #[test]
    fn rounds_of_two_starts_without_slices_are_split_too() {
        let mut runs = Vec::new();
        for (round, start, ratio) in [(0u32, 0u32, 1.10), (1, 0, 1.12), (2, 1, 1.11), (3, 1, 1.09)]
        {
            runs.push(started("a", round, start, 10.0 * ratio));
            runs.push(started("b", round, start, 10.0));
        }
        let n = components(&runs, &verdict()).expect("components");
        assert_eq!((n.slices, n.starts, n.between_slices), (1, 2, None));
        assert!(text(&n).contains("between rounds (slices included)"));
        assert!(n.starts_p.unwrap_or(0.0) > 0.5, "{n:?}");
    }

    #[test]
    fn a_step_without_slices_has_no_components() {
        let runs = vec![
            run("a", 0, 10.0),
            run("b", 0, 11.0),
            run("a", 1, 10.0),
            run("b", 1, 11.0),
        ];
        assert!(components(&runs, &verdict()).is_none());
    }
}
