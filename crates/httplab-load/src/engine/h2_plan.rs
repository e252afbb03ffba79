//! The plan of a run's HTTP/2 connections (`--http2`): the header block of
//! every planned request, encoded once, the request body and the windows to
//! announce. A value the engine holds; the engine's HTTP/2 side (`h2.rs`)
//! reads it.

use crate::h1::Pending;
use crate::h2proto::{self, Event, H2Conn};
use crate::plan::Plan;
use crate::spec::{Http2Spec, LoadSpec};

/// What every connection of the run sends: a header block per planned
/// request (encoded once), the request body, and the windows to announce.
pub(crate) struct H2Plan {
    pub blocks: Vec<Vec<u8>>,
    pub body: Option<Vec<u8>>,
    pub spec: Http2Spec,
    /// Events of one feed (kept for its memory).
    pub events: Vec<Event>,
    /// Calls of a connection being failed (kept for its memory).
    pub calls: Vec<Pending>,
}

impl H2Plan {
    pub fn new(spec: &LoadSpec, plan: &Plan, h: &Http2Spec) -> anyhow::Result<H2Plan> {
        let auth = spec.authority();
        let extra = spec.stream_header_fields()?;
        let extra: Vec<(&str, &str)> = extra
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let blocks = plan
            .requests
            .iter()
            .map(|r| {
                let method = if r.is_head { "HEAD" } else { &spec.method };
                h2proto::request_block(method, spec.tls.is_some(), &auth, &r.path, &extra)
            })
            .collect();
        Ok(H2Plan {
            blocks,
            body: spec.body.clone(),
            spec: h.clone(),
            events: Vec::new(),
            calls: Vec::new(),
        })
    }

    /// A fresh connection machine with the run's windows.
    pub fn conn(&self) -> H2Conn {
        H2Conn::new(self.spec.stream_window, self.spec.conn_window)
    }
}
