//! Where the noise of a comparison lives. A step measured in slices (A B | B A …) gives, per
//! round, one paired log ratio per slice: slice j of the leader against slice j of the
//! runner-up, seconds apart. Their spread around the round's mean is the noise between slices;
//! what the round means spread beyond that is the noise between rounds (one-way random effects,
//! method of moments). More slices per round shrink only the first; more rounds shrink both.
//! No I/O: it reads the rows of a finished study.

use std::collections::BTreeMap;

use httplab_model as m;

use crate::execute::cells::metrics_of;

/// One server's slice values of `metric` on a step, by round, in the order they ran.
fn slices_of(runs: &[m::StudyRun], v: &m::StudyVerdict, server: &str) -> BTreeMap<u32, Vec<f64>> {
    let mut by_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for r in runs.iter().filter(|r| {
        r.workload == v.workload && r.step == v.step && r.server == server && r.status.is_ok()
    }) {
        let Some(run) = &r.run else { continue };
        let value = metrics_of(run)
            .into_iter()
            .find(|(k, _)| k.key() == v.metric)
            .map(|(_, x)| x)
            .filter(|x| x.is_finite() && *x > 0.0);
        if let Some(x) = value {
            by_round.entry(r.repetition).or_default().push(x);
        }
    }
    by_round
}

/// The components of one verdict's log ratio, when its step was measured in two or more
/// slices per round and at least two rounds have every slice of both servers.
pub fn components(runs: &[m::StudyRun], v: &m::StudyVerdict) -> Option<m::NoiseComponents> {
    let (a, b) = (v.leader.as_deref()?, v.runner_up.as_deref()?);
    let (sa, sb) = (slices_of(runs, v, a), slices_of(runs, v, b));
    let slices = sa.values().map(Vec::len).max()?;
    if slices < 2 {
        return None;
    }
    let (mut ss, mut df) = (0.0, 0.0);
    let mut means = Vec::new();
    for (round, xa) in &sa {
        let Some(xb) = sb.get(round) else { continue };
        if xa.len() != slices || xb.len() != slices {
            continue;
        }
        let d: Vec<f64> = xa.iter().zip(xb).map(|(x, y)| x.ln() - y.ln()).collect();
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        ss += d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
        df += (d.len() - 1) as f64;
        means.push(mean);
    }
    if means.len() < 2 || df == 0.0 {
        return None;
    }
    let within = ss / df;
    let k = means.len() as f64;
    let grand = means.iter().sum::<f64>() / k;
    let var_means = means.iter().map(|x| (x - grand) * (x - grand)).sum::<f64>() / (k - 1.0);
    Some(m::NoiseComponents {
        rounds: means.len() as u32,
        slices: slices as u32,
        between_slices: within.sqrt(),
        between_rounds: (var_means - within / slices as f64).max(0.0).sqrt(),
    })
}

/// Fills every verdict's noise components from the study's rows.
pub fn annotate(res: &mut m::StudyResult) {
    let runs = &res.runs;
    for v in &mut res.verdicts {
        v.noise = components(runs, v);
    }
}

/// "±2.1 % between slices, ±0.8 % between rounds (12 rounds of 4 slices)".
pub fn text(n: &m::NoiseComponents) -> String {
    let pct = |x: f64| {
        let p = x.exp_m1() * 100.0;
        if p >= 10.0 {
            format!("{p:.0} %")
        } else {
            format!("{p:.1} %")
        }
    };
    format!(
        "±{} between slices, ±{} between rounds ({} rounds of {} slices)",
        pct(n.between_slices),
        pct(n.between_rounds),
        n.rounds,
        n.slices
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: &str, round: u32, cpu_us: f64) -> m::StudyRun {
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
        assert!((n.between_slices - 0.011_433).abs() < 1e-4, "{n:?}");
        // Every round has the same mean ratio: nothing between rounds.
        assert!(n.between_rounds < 1e-9, "{n:?}");
        assert!(text(&n).starts_with("±1.1 % between slices, ±0.0 % between rounds"));
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
