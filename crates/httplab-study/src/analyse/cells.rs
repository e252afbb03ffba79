//! The cell records of the results: each server's estimates on each step.

use httplab_model as m;
use httplab_stats as st;

use crate::execute::cells::CellData;
use crate::spec::Metric;

/// Converts the statistics crate's estimate into the result model's.
pub fn estimate(xs: &[f64]) -> Option<m::Estimate> {
    let e = st::Estimate::of(xs)?;
    let finite = |x: f64| x.is_finite().then_some(x);
    Some(m::Estimate {
        n: e.n as u32,
        mean: e.mean,
        median: e.median,
        stddev: if e.stddev.is_finite() { e.stddev } else { 0.0 },
        ci_low: finite(e.ci_low),
        ci_high: finite(e.ci_high),
    })
}

/// The cell record of one server on one step.
pub fn cell(workload: &str, step: Option<&str>, metric: Metric, d: &CellData) -> m::Cell {
    m::Cell {
        workload: workload.to_string(),
        step: step.map(str::to_string),
        server: d.server.clone(),
        n: d.values.len() as u32,
        metric: metric.into(),
        values: d
            .metrics
            .iter()
            .map(|(k, v)| (m::MetricKey::from(*k), v.clone()))
            .collect(),
        stop: d.final_stop().into(),
        precision: st::Estimate::of(&d.values)
            .map(|e| e.relative_half_width())
            .filter(|x| x.is_finite()),
        client_bound_runs: d.client_bound_runs,
        client_bound: d.client_bound_runs > 0,
        metrics: d
            .metrics
            .iter()
            .filter_map(|(k, v)| Some((m::MetricKey::from(*k), estimate(v)?)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn empty_runs_are_not_repetitions() {
        let mut d = CellData {
            server: "s".into(),
            empty_runs: 2,
            ..Default::default()
        };
        let c = cell("w", None, Metric::ReplyRate, &d);
        assert_eq!((c.n, c.stop), (0, m::CellStop::NothingMeasured));
        d.push(
            1,
            100.0,
            &BTreeMap::from([(Metric::ReplyRate, 100.0)]),
            false,
            &[],
        );
        let c = cell("w", None, Metric::ReplyRate, &d);
        assert_eq!((c.n, &c.stop), (1, &m::CellStop::Design));
        assert_eq!(
            c.values[&m::MetricKey::from(Metric::ReplyRate)],
            vec![100.0]
        );
        assert_eq!(d.rounds_of(Metric::ReplyRate), &[None, Some(100.0)]);
        // Written with the words study documents have always had.
        let json = serde_json::to_value(&c).expect("json");
        assert_eq!(json["values"]["reply_rate"], serde_json::json!([100.0]));
    }
}
