//! Latency distributions of several shards merged exactly: their HDR
//! histograms added bucket by bucket.

use hdrhistogram::Histogram;
use httplab_model::Latency;

use crate::MergeError;

/// Merges latency distributions exactly: the shards' HDR histograms are
/// added (count per bucket), and every statistic is read from the sum.
/// `parts` pairs each distribution with the name of its source for errors.
pub fn merge_latency(parts: &[(&str, &Latency)], what: &str) -> Result<Latency, MergeError> {
    let mut acc: Option<Histogram<u64>> = None;
    for (name, l) in parts {
        if l.count == 0 {
            continue;
        }
        let err = |problem: String| MergeError::Histogram {
            source_name: name.to_string(),
            what: what.to_string(),
            problem,
        };
        let h = l
            .histogram()
            .map_err(|e| err(e.to_string()))?
            .ok_or_else(|| err(format!("{} values but no histogram", l.count)))?;
        match acc.as_mut() {
            None => {
                let mut h = h;
                h.auto(true);
                acc = Some(h);
            }
            Some(a) => a
                .add(&h)
                .map_err(|e| err(format!("histogram cannot be added: {e:?}")))?,
        }
    }
    Ok(acc.map_or_else(Latency::default, |h| Latency::from_histogram(&h)))
}
