//! The plan of an idle workload's step (`kind = "idle"`): how many
//! connections to hold, what they send and how long they may take to
//! connect ([`HoldSpec`]), and its line in the plan.

use std::net::SocketAddr;
use std::time::Duration;

use crate::plan::steps::StepParams;
use crate::plan::text::fmt_num;
use crate::spec::{IdleSend, VaryParam, Workload, DEFAULT_IDLE_CONNS, MAX_IDLE_CONNS};

/// Idle connections of one step: the varied value, or `idle_conns`.
pub fn conns_of(w: &Workload, p: &StepParams) -> u64 {
    if w.vary
        .as_ref()
        .is_some_and(|v| v.param == VaryParam::IdleConns)
    {
        if let Ok(k) = p.step.parse::<f64>() {
            return (k.max(1.0) as u64).min(MAX_IDLE_CONNS);
        }
    }
    w.idle_conns.unwrap_or(DEFAULT_IDLE_CONNS)
}

/// The plan line of one step (`--dry-run`).
pub fn describe(w: &Workload, p: &StepParams) -> String {
    format!(
        "while {} idle connection(s) are held ({}, connecting within {} s)",
        conns_of(w, p),
        w.idle_send.unwrap_or_default().as_str(),
        fmt_num(connect_within(w, p).as_secs_f64())
    )
}

fn connect_within(w: &Workload, p: &StepParams) -> Duration {
    w.idle_connect_s
        .map_or(p.timeout, Duration::from_secs_f64)
        .clamp(Duration::from_millis(10), Duration::from_secs(600))
}

/// What to hold.
#[derive(Debug, Clone)]
pub struct HoldSpec {
    /// The server.
    pub addr: SocketAddr,
    /// Connections to hold.
    pub conns: u64,
    /// What each sends.
    pub send: IdleSend,
    /// Longest wait for them to connect.
    pub connect_within: Duration,
}

impl HoldSpec {
    /// The hold of one step of an idle workload.
    pub fn of(w: &Workload, p: &StepParams, addr: SocketAddr) -> HoldSpec {
        HoldSpec {
            addr,
            conns: conns_of(w, p),
            send: w.idle_send.unwrap_or_default(),
            connect_within: connect_within(w, p),
        }
    }
}
