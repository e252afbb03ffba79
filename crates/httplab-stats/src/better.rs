//! Which direction of a metric is better: read by the decisions (`decide`) and the verdicts
//! built on them (`verdict`), so it lives apart from both.

use serde::{Deserialize, Serialize};

/// Which direction of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latency, CPU per request).
    Lower,
    /// Larger is better (reply rate, throughput).
    Higher,
}
