//! `--find-max`: the adaptive search for the maximum sustainable rate, which
//! runs load through a caller's closure (the sweep's runner, or the study's)
//! and judges each run with `httplab_report::analysis`.

use anyhow::Result;
use httplab_model::{RunResult, Saturation, SweepStep};
use httplab_report::analysis::{is_marginal, knee, metrics, step_metrics};

/// Relative width at which `--find-max` stops bisecting (2 %).
pub const FIND_MAX_PRECISION: f64 = 0.02;

/// Bounds and limits of a `--find-max` search.
#[derive(Debug, Clone, Copy)]
pub struct FindMax {
    /// First rate tried (connections per second).
    pub start: f64,
    /// Never try above this rate, if set.
    pub ceiling: Option<f64>,
    /// Stop when (high − low) / low is at most this (default 2 %).
    pub precision: f64,
    /// Give up after this many runs.
    pub max_runs: u32,
    /// The SLO, ms.
    pub slo_ms: f64,
}

impl Default for FindMax {
    fn default() -> Self {
        FindMax {
            start: 10.0,
            ceiling: None,
            precision: FIND_MAX_PRECISION,
            max_runs: 40,
            slo_ms: 1000.0,
        }
    }
}

fn round_rate(r: f64) -> f64 {
    if r >= 100.0 {
        r.round()
    } else {
        (r * 10.0).round() / 10.0
    }
}

/// Adaptive search for the maximum sustainable rate: start at `cfg.start`,
/// double while sustained (bracket; upward without limit unless
/// `cfg.ceiling` is set), halve while not, then bisect between the highest
/// sustained and the lowest failed rate until they are within
/// `cfg.precision` of each other. A client-bound step ends the search: the
/// saturation is then marked `client_bound` and its rate is a lower bound
/// ("≥ X"), because the generator, not the server, stopped keeping up. `run` is called with each rate tried and
/// returns the step result. A marginal failure
/// ([`is_marginal`](httplab_report::analysis::is_marginal)) is measured
/// once more and the repeat stands. Returns one step per rate tried, sorted by
/// rate, and the analysis (method "find-max", `runs` = load runs made,
/// repeats included).
pub fn find_max<F>(cfg: &FindMax, run: F) -> Result<(Vec<SweepStep>, Saturation)>
where
    F: FnMut(f64) -> Result<RunResult>,
{
    let mut search = Search {
        cfg,
        run,
        steps: Vec::new(),
        highest_sustained: None,
        lowest_failed: None,
        runs: 0,
        stopped: false,
        client_bound: false,
    };
    let first = round_rate(cfg.start.max(0.1));
    search.bracket(first)?;
    search.bisect()?;
    Ok(search.finish())
}

/// The state of one `find_max` search.
struct Search<'a, F> {
    cfg: &'a FindMax,
    /// Runs load at a rate.
    run: F,
    /// One step per rate tried, in the order tried.
    steps: Vec<SweepStep>,
    /// The highest rate found sustained.
    highest_sustained: Option<f64>,
    /// The lowest rate found not sustained.
    lowest_failed: Option<f64>,
    /// Load runs made, repeats included.
    runs: u32,
    /// Ctrl-C or a client-bound step ended the search.
    stopped: bool,
    /// A step the load generator limited ended the search.
    client_bound: bool,
}

impl<F> Search<'_, F>
where
    F: FnMut(f64) -> Result<RunResult>,
{
    /// Runs `rate`, once more when the first verdict may be noise (see below).
    fn measure(&mut self, rate: f64) -> Result<RunResult> {
        let mut r = (self.run)(rate)?;
        self.runs += 1;
        // A marginal failure (only the 1 % band missed, by less than 3 %) may
        // be noise from this machine: it is measured once more, and the
        // repeat's verdict stands. Overload of 3 % or more fails for sure.
        let m = metrics(rate, &r, self.cfg.slo_ms);
        if !r.interrupted
            && !m.sustained
            && is_marginal(&m, self.cfg.slo_ms)
            && self.runs < self.cfg.max_runs
        {
            r = (self.run)(rate)?;
            self.runs += 1;
        }
        // A client-bound step ends the search, so one caused by a passing
        // hiccup of a shared machine (a late second of sends) would end it
        // early: it is measured once more, and the repeat stands.
        if !r.interrupted && r.self_check.client_bound && self.runs < self.cfg.max_runs {
            r = (self.run)(rate)?;
            self.runs += 1;
        }
        Ok(r)
    }

    /// Measures and judges `rate`, records the step and moves the bracket's
    /// bounds; returns whether it was sustained.
    fn try_rate(&mut self, rate: f64) -> Result<bool> {
        let r = self.measure(rate)?;
        // An interrupted run (Ctrl-C) ends the search; it judges nothing.
        self.stopped = r.interrupted;
        let sustained = !r.interrupted && metrics(rate, &r, self.cfg.slo_ms).sustained;
        // A step the load generator limited says nothing about the server
        // above it: the search ends there, and its result is a lower bound.
        if !r.interrupted && r.self_check.client_bound {
            self.client_bound = true;
            self.stopped = true;
        }
        if sustained {
            self.highest_sustained = Some(rate);
        } else if !self.stopped {
            self.lowest_failed = Some(rate);
        }
        self.steps.push(SweepStep {
            demanded_rate: rate,
            run: r,
        });
        Ok(sustained)
    }

    /// From `rate`, doubles while sustained (up to the ceiling) and halves
    /// while not, until one sustained and one failed rate are known.
    fn bracket(&mut self, mut rate: f64) -> Result<()> {
        while self.runs < self.cfg.max_runs {
            let sustained = self.try_rate(rate)?;
            if self.stopped {
                break;
            }
            let next = if sustained {
                if self.lowest_failed.is_some() {
                    break;
                }
                match self.cfg.ceiling {
                    Some(c) if rate >= c => break,
                    Some(c) => round_rate((rate * 2.0).min(c)),
                    None => round_rate(rate * 2.0),
                }
            } else {
                if self.highest_sustained.is_some() {
                    break;
                }
                let next = round_rate(rate / 2.0);
                if next < 0.1 || next >= rate {
                    break;
                }
                next
            };
            rate = next;
        }
        Ok(())
    }

    /// Bisects between the highest sustained and the lowest failed rate
    /// until they are within the precision, or the runs run out.
    fn bisect(&mut self) -> Result<()> {
        while let (Some(l), Some(h)) = (self.highest_sustained, self.lowest_failed) {
            if self.stopped || (h - l) / l <= self.cfg.precision || self.runs >= self.cfg.max_runs {
                break;
            }
            let mid = round_rate((l + h) / 2.0);
            if mid <= l || mid >= h {
                break;
            }
            self.try_rate(mid)?;
        }
        Ok(())
    }

    /// The steps sorted by rate, and the saturation they show.
    fn finish(self) -> (Vec<SweepStep>, Saturation) {
        let mut sorted = self.steps;
        sorted.sort_by(|a, b| a.demanded_rate.total_cmp(&b.demanded_rate));
        let ms = step_metrics(&sorted, self.cfg.slo_ms);
        let sat = Saturation {
            max_sustainable_rate: self.highest_sustained,
            knee_rate: knee(&ms),
            slo_ms: self.cfg.slo_ms,
            client_bound: self.client_bound,
            runs: self.runs,
            method: "find-max".into(),
        };
        (sorted, sat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_report::synth::{self, SynthServer};

    #[test]
    fn find_max_brackets_and_bisects() {
        let s = SynthServer::new("a", 7_300.0, 0.5);
        let cfg = FindMax {
            start: 1000.0,
            ..Default::default()
        };
        let (steps, sat) = find_max(&cfg, |r| Ok(synth::run(&s, r, 1, 5.0))).unwrap();
        let max = sat.max_sustainable_rate.unwrap();
        assert!((max - 7300.0).abs() / 7300.0 < 0.05, "max {max}");
        assert!(sat.runs as usize >= steps.len());
        assert!(steps.len() < 15);
        assert!(steps
            .windows(2)
            .all(|w| w[0].demanded_rate <= w[1].demanded_rate));
    }

    #[test]
    fn find_max_goes_down_when_start_fails() {
        let s = SynthServer::new("a", 300.0, 0.5);
        let cfg = FindMax {
            start: 5000.0,
            ..Default::default()
        };
        let (_, sat) = find_max(&cfg, |r| Ok(synth::run(&s, r, 1, 5.0))).unwrap();
        let max = sat.max_sustainable_rate.unwrap();
        assert!((max - 300.0).abs() / 300.0 < 0.05, "max {max}");
    }

    #[test]
    fn find_max_stops_at_a_client_bound_step() {
        let s = SynthServer::new("a", 1_000_000.0, 0.5);
        let cfg = FindMax {
            start: 1000.0,
            ..Default::default()
        };
        let (steps, sat) = find_max(&cfg, |r| {
            let mut run = synth::run(&s, r, 1, 5.0);
            run.self_check.client_bound = r >= 8000.0;
            Ok(run)
        })
        .unwrap();
        assert!(sat.client_bound);
        assert_eq!(sat.max_sustainable_rate, Some(8000.0));
        assert_eq!(steps.len(), 4, "1k, 2k, 4k, 8k");
        assert_eq!(sat.runs, 5, "the client-bound step is measured twice");
    }
}
