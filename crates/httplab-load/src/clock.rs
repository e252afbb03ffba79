//! Time helpers and constants both drivers share.

use std::time::Duration;

/// Grace for in-flight calls after a `--duration` run ends, when no
/// `--timeout` is set.
pub(crate) const DRAIN: Duration = Duration::from_secs(10);

/// Longest a driver's loop sleeps without checking the stop flag.
pub(crate) const MAX_SLEEP: Duration = Duration::from_millis(50);

/// Seconds (from the spec) as a duration; negative or not finite: zero.
pub(crate) fn dur(s: f64) -> Duration {
    if s.is_finite() {
        Duration::from_secs_f64(s.clamp(0.0, 1e9))
    } else {
        Duration::ZERO
    }
}

/// Whole microseconds, saturating.
pub(crate) fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_clamp_and_microseconds_saturate() {
        assert_eq!(dur(-1.0), Duration::ZERO);
        assert_eq!(dur(f64::NAN), Duration::ZERO);
        assert_eq!(dur(0.25), Duration::from_millis(250));
        assert_eq!(us(Duration::from_millis(3)), 3000);
        assert_eq!(us(Duration::MAX), u64::MAX);
    }
}
