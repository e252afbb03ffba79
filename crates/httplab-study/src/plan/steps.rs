//! The steps of a workload and the load each offers: one step for a plain
//! `load`/`users`/`idle` workload and for a capacity search, one per value
//! of a `vary`; each with its warm-up, window or counts.

use std::time::Duration;

use crate::plan::text::fmt_num;
use crate::spec::{Measure, ProtocolSpec, VaryParam, VaryValue, Workload, WorkloadKind};

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offer {
    /// `num_conns` connections at `rate` per second (None: back to back, one at a time).
    Open {
        /// Connections per second.
        rate: Option<f64>,
        /// Connections to open (count-measured runs).
        num_conns: u64,
    },
    /// `users` each send `requests` requests, one after another.
    Closed {
        /// Simultaneous users.
        users: u64,
        /// Requests per user (count-measured runs).
        requests: u64,
        /// Pause between a reply and the next request, ms.
        think_ms: f64,
    },
}

/// One load run's parameters, after defaults and the step's value.
#[derive(Debug, Clone)]
pub struct StepParams {
    /// Step label: "" for a single-step workload, else the varied value.
    pub step: String,
    /// Offered load.
    pub offer: Offer,
    /// Target name.
    pub target: String,
    /// Requests per connection.
    pub num_calls: u64,
    /// `num_calls` was written (by the workload or its `vary`): a `users`
    /// workload then opens a new connection every `num_calls` requests;
    /// without it a user keeps one keep-alive connection for all of them.
    pub num_calls_given: bool,
    /// Pipeline depth.
    pub pipeline: u32,
    /// Reply timeout.
    pub timeout: Duration,
    /// Hard limit.
    pub max_duration: Duration,
    /// Warm-up discarded before the window.
    pub warmup: Duration,
    /// Measurement window (None: the workload's own counts).
    pub window: Option<Duration>,
    /// `probe`: the unqueued probe's requests per second (`--probe`).
    pub probe: Option<f64>,
}

impl StepParams {
    /// The step's label, None for a workload without steps.
    pub fn label(&self) -> Option<String> {
        (!self.step.is_empty()).then(|| self.step.clone())
    }

    /// The same step at `rate` connections per second (a capacity search's
    /// probe); a closed-loop step is left as it is.
    pub fn at_rate(&self, rate: f64) -> StepParams {
        let mut p = self.clone();
        if let Offer::Open { num_conns, .. } = p.offer {
            p.offer = Offer::Open {
                rate: Some(rate),
                num_conns,
            };
        }
        p
    }

    /// The step's parameters for one of `slices` short runs: the same
    /// warm-up, the window divided among the slices.
    pub fn sliced(&self, slices: u32) -> StepParams {
        let mut q = self.clone();
        if slices > 1 {
            q.window = q.window.map(|w| w / slices);
        }
        q
    }

    /// True when the step offers a fixed rate (open loop): its servers do
    /// the same work, so their CPU per request compares.
    pub fn fixed_rate(&self) -> bool {
        matches!(self.offer, Offer::Open { rate: Some(_), .. })
    }

    /// Seconds one run of this step lasts (warm-up + window, or an estimate from counts).
    pub fn run_seconds(&self) -> f64 {
        let w = self.warmup.as_secs_f64();
        match self.window {
            Some(win) => w + win.as_secs_f64(),
            None => match self.offer {
                Offer::Open {
                    rate: Some(r),
                    num_conns,
                } => w + num_conns as f64 / r.max(1e-9),
                _ => w + 1.0,
            },
        }
    }
}

/// Seconds one run of this step lasts (see [`StepParams::run_seconds`]).
pub fn run_seconds(p: &StepParams) -> f64 {
    p.run_seconds()
}

/// The steps of a workload (one for a plain `load`/`users`; one per rate for a sweep;
/// one per value for `vary`).
pub fn steps(w: &Workload) -> Vec<StepParams> {
    steps_with(w, &ProtocolSpec::default())
}

/// What a step's value changes in its workload.
#[derive(Debug, Default)]
struct StepValue<'a> {
    rate: Option<f64>,
    num_conns: Option<u64>,
    users: Option<u64>,
    num_calls: Option<u64>,
    pipeline: Option<u32>,
    target: Option<&'a str>,
}

impl<'a> StepValue<'a> {
    fn of(param: VaryParam, val: &'a VaryValue) -> StepValue<'a> {
        let n = match val {
            VaryValue::Num(n) => Some(*n),
            VaryValue::Text(_) => None,
        };
        let whole = n.map(|x| x as u64);
        match (param, val) {
            (VaryParam::Users, _) => StepValue {
                users: whole,
                ..Default::default()
            },
            (VaryParam::Rate, _) => StepValue {
                rate: n,
                ..Default::default()
            },
            (VaryParam::NumCalls, _) => StepValue {
                num_calls: whole,
                ..Default::default()
            },
            (VaryParam::NumConns, _) => StepValue {
                num_conns: whole,
                ..Default::default()
            },
            (VaryParam::Pipeline, _) => StepValue {
                pipeline: n.map(|x| x as u32),
                ..Default::default()
            },
            (VaryParam::Target, VaryValue::Text(t)) => StepValue {
                target: Some(t.as_str()),
                ..Default::default()
            },
            // The step's label is its value (see `plan::idle::conns_of`).
            (VaryParam::Target, VaryValue::Num(_)) | (VaryParam::IdleConns, _) => {
                StepValue::default()
            }
        }
    }
}

/// The steps of a workload under a protocol (its warm-up and window).
pub fn steps_with(w: &Workload, proto: &ProtocolSpec) -> Vec<StepParams> {
    let warmup = Duration::from_secs_f64(w.warmup_s.unwrap_or(proto.warmup_s).max(0.0));
    let window = match w.measure {
        Measure::Count => None,
        Measure::Window => Some(Duration::from_secs_f64(
            w.window_s.unwrap_or(proto.window_s).max(0.1),
        )),
    };
    let step = |label: String, v: StepValue| step_of(w, label, v, warmup, window);
    if w.kind == WorkloadKind::Sweep {
        // A capacity search: one step that searches upward from low_rate.
        let start = StepValue {
            rate: Some(w.low_rate.unwrap_or(100.0)),
            ..Default::default()
        };
        return vec![step(String::new(), start)];
    }
    match &w.vary {
        None => vec![step(String::new(), StepValue::default())],
        Some(vary) => vary
            .values
            .iter()
            .map(|val| step(val.to_string(), StepValue::of(vary.param, val)))
            .collect(),
    }
}

/// One step of `w`: the workload's own values, with the step's in their place.
fn step_of(
    w: &Workload,
    label: String,
    v: StepValue,
    warmup: Duration,
    window: Option<Duration>,
) -> StepParams {
    let num_calls_given = v.num_calls.or(w.num_calls).is_some();
    let num_calls = v.num_calls.or(w.num_calls).unwrap_or(1).max(1);
    // An idle workload's normal client is closed loop unless it has a rate.
    let closed = w.kind == WorkloadKind::Users
        || (w.kind == WorkloadKind::Idle && v.rate.or(w.rate).is_none());
    let offer = if closed {
        Offer::Closed {
            users: v.users.or(w.users).unwrap_or(1).max(1),
            requests: w.requests.unwrap_or(100).max(1),
            think_ms: w.think_ms.unwrap_or(0.0).max(0.0),
        }
    } else {
        Offer::Open {
            rate: v.rate.or(w.rate),
            num_conns: v.num_conns.or(w.num_conns).unwrap_or(100).max(1),
        }
    };
    StepParams {
        step: label,
        offer,
        target: v.target.unwrap_or(&w.target).to_string(),
        num_calls,
        num_calls_given,
        pipeline: v.pipeline.or(w.pipeline).unwrap_or(1).max(1),
        timeout: Duration::from_secs_f64(w.timeout_s.unwrap_or(5.0).clamp(0.01, 600.0)),
        max_duration: Duration::from_secs_f64(w.max_duration_s.unwrap_or(60.0).clamp(0.1, 3600.0)),
        warmup,
        window,
        probe: w.probe,
    }
}

/// The offered load of a step in words (the plan and the report).
pub fn describe_offer(p: &StepParams) -> String {
    let counted = p.window.is_none();
    let mut t = match p.offer {
        Offer::Open {
            rate: Some(r),
            num_conns,
        } if counted => format!("{num_conns} conns at {} /s", fmt_num(r)),
        Offer::Open { rate: Some(r), .. } => format!("conns at {} /s", fmt_num(r)),
        Offer::Open {
            rate: None,
            num_conns,
        } if counted => format!("{num_conns} conns back to back"),
        Offer::Open { rate: None, .. } => "conns back to back".to_string(),
        Offer::Closed {
            users,
            requests,
            think_ms,
        } => {
            let mut t = if counted {
                format!("{users} users × {requests} requests")
            } else {
                format!("{users} users")
            };
            if think_ms > 0.0 {
                t.push_str(&format!(", think {think_ms} ms"));
            }
            t
        }
    };
    if matches!(p.offer, Offer::Closed { .. }) && !p.num_calls_given {
        t.push_str(", one keep-alive connection per user");
    } else {
        t.push_str(&format!(", {} call(s)/conn", p.num_calls));
    }
    if p.pipeline > 1 {
        t.push_str(&format!(", pipeline {}", p.pipeline));
    }
    t.push_str(&format!(", target {}", p.target));
    match p.window {
        Some(w) => t.push_str(&format!(
            "; warm-up {} s, window {} s",
            fmt_num(p.warmup.as_secs_f64()),
            fmt_num(w.as_secs_f64())
        )),
        None if !p.warmup.is_zero() => t.push_str(&format!(
            "; counts as given, after a {} s warm-up",
            fmt_num(p.warmup.as_secs_f64())
        )),
        None => t.push_str("; counts as given"),
    }
    t
}
