//! Rate stages (`--stages 10s:1000,30s:1000-8000,10s:8000`): the
//! piecewise-linear offered rate, the arrival times it gives, and the
//! statistics of each stage.
//!
//! The schedule is a time change of a unit-rate sequence: arrival k of the
//! run's one global sequence sits at cumulative count `u_k` (deterministic:
//! `u_k = k`; exponential: a sum of exponential gaps of mean 1, drawn from the
//! seeded generator as every other schedule), and its instant is `Λ⁻¹(u_k)`,
//! where `Λ(t)` is the integral of the offered rate. For exponential gaps
//! this is an inhomogeneous Poisson process of the stages' rate (the
//! time-change theorem); for deterministic gaps the k-th arrival comes when
//! the integral reaches k. Lanes (threads, `--client I/N`) take every N-th
//! arrival of that one sequence, as without stages (`arrivals::schedule::Schedule`).
//!
//! Every call belongs to the stage of its *scheduled* instant (the one its
//! corrected latency counts from), so a stall that hits stage 2 lands in
//! stage 2's row even when its replies arrive during stage 3.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use httplab_model::{Latency, StageResult};

use crate::clock::dur;

/// Most stages a run may have (each keeps two histograms per thread).
pub const MAX_STAGES: usize = 1000;

/// One stage: a length and an offered rate held (`from == to`) or ramped
/// linearly from `from` to `to`, in the unit of `--rate` (connections or
/// sessions per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// Length, seconds.
    pub duration_s: f64,
    /// Rate at the stage's start.
    pub from: f64,
    /// Rate at the stage's end.
    pub to: f64,
}

impl Stage {
    /// Arrivals the stage offers: the integral of its rate.
    pub fn arrivals(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.duration_s
    }

    /// `10s:1000` or `30s:1000-8000`, as given.
    pub fn spelled(&self) -> String {
        let r = |x: f64| format!("{x}");
        let d = humantime::format_duration(dur(self.duration_s));
        if self.from == self.to {
            format!("{d}:{}", r(self.from))
        } else {
            format!("{d}:{}-{}", r(self.from), r(self.to))
        }
    }
}

/// Parses `DURATION:RATE[-RATE2],...` (`10s:1000,30s:1000-8000,10s:8000`).
/// Durations are humantime spellings (`500ms`, `10s`, `2m`, `1m30s`) or plain
/// seconds; rates are non-negative numbers, and the stages together must
/// offer at least one arrival.
pub fn parse_stages(s: &str) -> Result<Vec<Stage>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            bail!("bad --stages '{s}': an empty stage (expected DURATION:RATE[-RATE2],...)");
        }
        let (d, r) = part.split_once(':').with_context(|| {
            format!("bad stage '{part}': expected DURATION:RATE or DURATION:RATE1-RATE2 (e.g. 10s:1000, 30s:1000-8000)")
        })?;
        let duration_s = parse_duration(d.trim()).with_context(|| format!("bad stage '{part}'"))?;
        let (from, to) = match r.trim().split_once('-') {
            Some((a, b)) => (parse_rate(a, part)?, parse_rate(b, part)?),
            None => {
                let x = parse_rate(r, part)?;
                (x, x)
            }
        };
        out.push(Stage {
            duration_s,
            from,
            to,
        });
        if out.len() > MAX_STAGES {
            bail!("--stages: at most {MAX_STAGES} stages");
        }
    }
    if out.iter().map(Stage::arrivals).sum::<f64>() < 1.0 {
        bail!("--stages '{s}' offers no arrival (every rate is 0 or the stages are too short)");
    }
    Ok(out)
}

fn parse_duration(d: &str) -> Result<f64> {
    let secs = match d.parse::<f64>() {
        Ok(x) => x,
        Err(_) => humantime::parse_duration(d)
            .map(|x| x.as_secs_f64())
            .map_err(|e| anyhow::anyhow!("duration '{d}': {e} (e.g. 500ms, 10s, 2m)"))?,
    };
    if !(secs > 0.0 && secs.is_finite() && secs <= 1e7) {
        bail!("duration '{d}' must be a positive time (at most 10^7 s)");
    }
    Ok(secs)
}

fn parse_rate(r: &str, part: &str) -> Result<f64> {
    let x: f64 = r
        .trim()
        .parse()
        .with_context(|| format!("bad stage '{part}': rate '{}' is not a number", r.trim()))?;
    if !(x >= 0.0 && x.is_finite() && x <= 1e9) {
        bail!("bad stage '{part}': a rate must be between 0 and 10^9 per second");
    }
    Ok(x)
}

/// The stages' total length, seconds (summed in order: the run's `--duration`).
pub fn total_s(stages: &[Stage]) -> f64 {
    stages.iter().map(|s| s.duration_s).sum()
}

/// The mean offered rate over all stages.
pub fn mean_rate(stages: &[Stage]) -> f64 {
    let t = total_s(stages);
    if t > 0.0 {
        stages.iter().map(Stage::arrivals).sum::<f64>() / t
    } else {
        0.0
    }
}

/// The offered rate's integral and its inverse; built once per run.
#[derive(Debug, Clone)]
pub(crate) struct Curve {
    stages: Vec<Stage>,
    /// `starts[i]`: start of stage i, seconds; `starts[n]`: the end.
    starts: Vec<f64>,
    /// `cum[i]`: arrivals offered before stage i; `cum[n]`: all of them.
    cum: Vec<f64>,
}

impl Curve {
    pub fn new(stages: &[Stage]) -> Curve {
        let mut starts = vec![0.0];
        let mut cum = vec![0.0];
        let (mut t, mut c) = (0.0, 0.0);
        for s in stages {
            t += s.duration_s;
            c += s.arrivals();
            starts.push(t);
            cum.push(c);
        }
        Curve {
            stages: stages.to_vec(),
            starts,
            cum,
        }
    }

    /// The end of the last stage, seconds.
    pub fn end(&self) -> f64 {
        self.starts.last().copied().unwrap_or(0.0)
    }

    /// `Λ⁻¹(u)`: the instant (seconds) at which the offered arrivals reach
    /// `u`; the end of the stages when they never do.
    pub fn time_at(&self, u: f64) -> f64 {
        let i = self.cum[1..].partition_point(|&c| c <= u);
        let Some(s) = self.stages.get(i) else {
            return self.end();
        };
        let delta = (u - self.cum[i]).max(0.0);
        let a = s.from;
        let b = (s.to - s.from) / s.duration_s;
        // Λ within the stage: a τ + b τ²/2 = Δ. The root written without the
        // cancellation of (−a + √(a² + 2bΔ)) / b, valid for b of any sign and 0.
        let den = a + (a * a + 2.0 * b * delta).max(0.0).sqrt();
        let tau = if den > 0.0 { 2.0 * delta / den } else { 0.0 };
        self.starts[i] + tau.clamp(0.0, s.duration_s)
    }

    /// The stage an instant `t` seconds from the origin falls in.
    pub fn stage_at(&self, t: f64) -> Option<usize> {
        let i = self.starts[1..].partition_point(|&e| e <= t);
        (i < self.stages.len() && t >= 0.0).then_some(i)
    }
}

/// The stage boundaries as offsets from the schedule's origin, for the
/// per-call lookup (no allocation: a search over a fixed slice).
#[derive(Debug, Clone)]
pub(crate) struct StageClock {
    t0: Instant,
    /// `ends[i]`: end of stage i from t0 (the same rounding as arrivals get).
    ends: Box<[Duration]>,
}

impl StageClock {
    pub fn new(stages: &[Stage], t0: Instant) -> StageClock {
        let c = Curve::new(stages);
        StageClock {
            t0,
            ends: c.starts[1..].iter().map(|&e| dur(e)).collect(),
        }
    }

    /// The stage of a call scheduled at `at`.
    #[inline]
    pub fn stage_of(&self, at: Instant) -> Option<usize> {
        let d = at.checked_duration_since(self.t0)?;
        let i = self.ends.partition_point(|&e| e <= d);
        (i < self.ends.len()).then_some(i)
    }
}

/// One thread's statistics of one stage.
#[derive(Debug, Clone)]
pub(crate) struct StageStats {
    pub arrivals: u64,
    pub skipped: u64,
    pub sent: u64,
    pub replies: u64,
    pub response: Histogram<u64>,
    pub response_unc: Histogram<u64>,
}

/// Histogram of microseconds as the run's (1 µs .. 1 h, 3 digits).
fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds are valid")
}

fn rec(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.max(1));
}

impl StageStats {
    pub fn new() -> StageStats {
        StageStats {
            arrivals: 0,
            skipped: 0,
            sent: 0,
            replies: 0,
            response: hist(),
            response_unc: hist(),
        }
    }

    /// A reply: corrected and uncorrected response times, µs.
    #[inline]
    pub fn reply(&mut self, corrected_us: u64, uncorrected_us: u64) {
        self.replies += 1;
        rec(&mut self.response, corrected_us);
        rec(&mut self.response_unc, uncorrected_us);
    }

    pub fn merge(&mut self, o: &StageStats) {
        self.arrivals += o.arrivals;
        self.skipped += o.skipped;
        self.sent += o.sent;
        self.replies += o.replies;
        let _ = self.response.add(&o.response);
        let _ = self.response_unc.add(&o.response_unc);
    }

    /// The result row of stage `s` starting at `start_s`.
    pub fn to_model(&self, s: &Stage, start_s: f64) -> StageResult {
        StageResult {
            start_s,
            duration_s: s.duration_s,
            rate_from: s.from,
            rate_to: s.to,
            arrivals: self.arrivals,
            sent: self.sent,
            replies: self.replies,
            errors: self.sent.saturating_sub(self.replies) + self.skipped,
            achieved_rps: self.replies as f64 / s.duration_s,
            response: Latency::from_histogram(&self.response),
            response_uncorrected: Latency::from_histogram(&self.response_unc),
        }
    }
}

/// Adds `o`'s stages into `into` (threads of one run).
pub(crate) fn merge_all(into: &mut Vec<StageStats>, o: &[StageStats]) {
    if into.len() < o.len() {
        into.resize_with(o.len(), StageStats::new);
    }
    for (a, b) in into.iter_mut().zip(o) {
        a.merge(b);
    }
}

/// The result rows of a run's stages.
pub(crate) fn results(stages: &[Stage], stats: &[StageStats]) -> Vec<StageResult> {
    let mut start = 0.0;
    let mut out = Vec::with_capacity(stages.len());
    for (i, s) in stages.iter().enumerate() {
        let row = match stats.get(i) {
            Some(st) => st.to_model(s, start),
            None => StageStats::new().to_model(s, start),
        };
        out.push(row);
        start += s.duration_s;
    }
    out
}

/// The stages' part of the text report: one row per stage.
pub(crate) fn render(rows: &[StageResult]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let ms = |l: &Latency, p: f64| {
        l.at(p)
            .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
    };
    let mut s = format!(
        "\nStages (calls by scheduled instant; latency corrected, ms):\n{:>5} {:>8} {:>8} {:>17} {:>10} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "stage", "start_s", "length_s", "offered/s", "replies/s", "sent", "replies", "errors",
        "p50", "p90", "p99", "p99.9", "max"
    );
    for (i, r) in rows.iter().enumerate() {
        let offered = if r.rate_from == r.rate_to {
            format!("{:.1}", r.rate_from)
        } else {
            format!("{:.1}-{:.1}", r.rate_from, r.rate_to)
        };
        s.push_str(&format!(
            "{:>5} {:>8.1} {:>8.1} {offered:>17} {:>10.1} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9.3}\n",
            i + 1,
            r.start_s,
            r.duration_s,
            r.achieved_rps,
            r.sent,
            r.replies,
            r.errors,
            ms(&r.response, 50.0),
            ms(&r.response, 90.0),
            ms(&r.response, 99.0),
            ms(&r.response, 99.9),
            r.response.max_ms,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_held_and_ramped_stages() {
        let s = parse_stages("10s:1000,30s:1000-8000,500ms:8000, 2m:0").expect("valid");
        assert_eq!(s.len(), 4);
        assert_eq!(
            s[1],
            Stage {
                duration_s: 30.0,
                from: 1000.0,
                to: 8000.0
            }
        );
        assert_eq!(s[2].duration_s, 0.5);
        assert_eq!(s[3].duration_s, 120.0);
        assert_eq!(s[3].from, 0.0);
        assert_eq!(
            parse_stages("1.5:10").expect("plain seconds")[0].duration_s,
            1.5
        );
        assert_eq!(s[1].spelled(), "30s:1000-8000");
    }

    #[test]
    fn bad_stages_are_errors_not_panics() {
        for bad in [
            "",
            ",",
            "10s",
            "10s:",
            ":100",
            "10s:abc",
            "10s:-5",
            "10s:5-",
            "10s:1-2-3",
            "0s:100",
            "-1s:100",
            "10q:100",
            "10s:inf",
            "10s:NaN",
            "10s:0",
            "1ms:1",
            "10s:100,,10s:100",
            "10s:1e12",
            "ééé:1",
        ] {
            assert!(parse_stages(bad).is_err(), "{bad:?} should be refused");
        }
        let many = vec!["1s:1"; MAX_STAGES + 1].join(",");
        assert!(parse_stages(&many).is_err());
    }

    #[test]
    fn the_inverse_of_the_cumulative_rate() {
        let c = Curve::new(&parse_stages("10s:1000,30s:1000-8000,10s:8000").expect("valid"));
        assert_eq!(c.end(), 50.0);
        assert_eq!(c.time_at(0.0), 0.0);
        assert!((c.time_at(5000.0) - 5.0).abs() < 1e-12);
        assert_eq!(c.time_at(10_000.0), 10.0);
        // The ramp: Λ(10 + τ) = 10 000 + 1000 τ + 7000/30 τ²/2.
        let tau = 12.0;
        let u = 10_000.0 + 1000.0 * tau + 7000.0 / 30.0 * tau * tau / 2.0;
        assert!((c.time_at(u) - (10.0 + tau)).abs() < 1e-9);
        assert_eq!(c.time_at(145_000.0), 40.0);
        assert_eq!(c.time_at(1e12), 50.0, "past the last stage: the end");
        assert_eq!(c.stage_at(9.999), Some(0));
        assert_eq!(c.stage_at(10.0), Some(1));
        assert_eq!(c.stage_at(50.0), None);
        // A downward ramp and a stage at rate 0 in between.
        let d = Curve::new(&parse_stages("2s:100-0,1s:0,1s:50").expect("valid"));
        assert!((d.time_at(100.0 - 25.0) - 1.0).abs() < 1e-9);
        assert_eq!(d.time_at(100.0), 3.0, "the zero stage is skipped");
    }

    #[test]
    fn each_stage_gets_its_integral_of_arrivals() {
        let s = parse_stages("1s:100,3s:100-800,1s:800,2s:0,1s:10").expect("valid");
        // Deterministic: the integrals exactly (100, 1350, 800, 0, 10).
        assert_eq!(
            crate::arrivals::schedule::arrivals_per_stage(&s, false, 1, u64::MAX),
            vec![100, 1350, 800, 0, 10]
        );
        // The same again: a pure function.
        assert_eq!(
            crate::arrivals::schedule::arrivals_per_stage(&s, false, 7, u64::MAX),
            vec![100, 1350, 800, 0, 10]
        );
        // Exponential: reproducible for a seed, none in the zero stage, and
        // each stage within 5 standard deviations of its integral (Poisson).
        let a = crate::arrivals::schedule::arrivals_per_stage(&s, true, 42, u64::MAX);
        assert_eq!(
            a,
            crate::arrivals::schedule::arrivals_per_stage(&s, true, 42, u64::MAX)
        );
        assert_eq!(a[3], 0);
        for (n, want) in a.iter().zip([100.0, 1350.0, 800.0, 0.0, 10.0]) {
            assert!((*n as f64 - want).abs() <= 5.0 * f64::sqrt(want), "{a:?}");
        }
    }

    #[test]
    fn stage_lookup_by_scheduled_instant() {
        let t0 = Instant::now();
        let c = StageClock::new(&parse_stages("1s:10,2s:10").expect("valid"), t0);
        assert_eq!(c.stage_of(t0), Some(0));
        assert_eq!(c.stage_of(t0 + Duration::from_millis(999)), Some(0));
        assert_eq!(c.stage_of(t0 + Duration::from_secs(1)), Some(1));
        assert_eq!(c.stage_of(t0 + Duration::from_secs(3)), None);
    }

    #[test]
    fn rows_count_errors_and_rates() {
        let s = parse_stages("2s:10").expect("valid");
        let mut st = StageStats::new();
        st.sent = 20;
        st.skipped = 1;
        st.reply(1500, 1000);
        st.reply(2500, 2000);
        let mut all = vec![];
        merge_all(&mut all, &[st]);
        let r = results(&s, &all);
        assert_eq!(r[0].errors, 19);
        assert_eq!(r[0].achieved_rps, 1.0);
        assert_eq!(r[0].response.count, 2);
        assert!(render(&r).contains("Stages"));
    }
}

#[cfg(test)]
mod cli_tests {
    use crate::spec::{Arrival, Dist, Workload};

    fn parse(args: &str) -> anyhow::Result<crate::spec::LoadSpec> {
        crate::cli::parse_args(format!("--server 127.0.0.1 --port 80 {args}").split_whitespace())
    }

    #[test]
    fn stages_on_the_command_line() {
        let s = parse("--stages 1s:100,2s:100-400").expect("valid");
        assert_eq!(s.stages.len(), 2);
        assert_eq!(s.duration, Some(3.0));
        // The mean offered rate: (100 + 500) / 3 s.
        assert_eq!(s.arrival, Arrival::Open(Dist::Deterministic(3.0 / 600.0)));
        assert!(matches!(
            s.workload,
            Workload::Requests {
                num_conns: None,
                ..
            }
        ));
        assert!(s
            .normalized_command()
            .contains("--stages=1s:100,2s:100-400"));
        let e = parse("--stages 1s:100 --period e").expect("valid");
        assert!(matches!(e.arrival, Arrival::Open(Dist::Exponential(_))));
        let w = parse("--stages 1s:10 --wsess 0,3,0").expect("sessions");
        assert!(matches!(
            w.workload,
            Workload::Sessions {
                num_sessions: None,
                ..
            }
        ));
        let h2 = parse("--stages 1s:10 --http2 --num-calls 5").expect("HTTP/2");
        assert_eq!(h2.stages.len(), 1);
        assert!(parse("--stages 1s:10 --client 1/2").is_ok());
    }

    #[test]
    fn stages_refuse_what_they_replace() {
        for (bad, says) in [
            ("--stages 1s:10 --rate 5", "--rate"),
            ("--stages 1s:10 --num-conns 5", "--num-conns"),
            ("--stages 1s:10 --duration 5", "--duration"),
            ("--stages 1s:10 --users 5", "--users"),
            ("--stages 1s:10 --warmup 1", "--warmup"),
            ("--stages 1s:10 --period e0.1", "--period"),
            ("--stages 1s:10 --period u1,2", "--period"),
            ("--stages 1s:10 --wsess 5,3,0", "session count"),
            ("--stages 1s:x", "not a number"),
            ("--stages 0s:10", "positive"),
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(format!("{e:#}").contains(says), "{bad}: {e:#}");
        }
    }

    #[test]
    fn probe_on_the_command_line() {
        let s = parse("--rate 10 --duration 1 --probe 200,2").expect("valid");
        assert_eq!(
            s.probe,
            Some(crate::spec::ProbeSpec {
                rate: 200.0,
                conns: 2
            })
        );
        assert_eq!(
            parse("--rate 10 --duration 1 --probe 50")
                .expect("valid")
                .probe
                .map(|p| p.conns),
            Some(1)
        );
        for bad in ["0", "-1", "x", "10,0", "10,x", "10,100", "1e9", "nan"] {
            assert!(
                parse(&format!("--rate 10 --duration 1 --probe {bad}")).is_err(),
                "{bad}"
            );
        }
    }
}
