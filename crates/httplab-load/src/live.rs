//! What `--prometheus`, `--series` and `--check-client` add to a run: the
//! live metrics handle the interval collector publishes to, and the keys of
//! the error classes as the metrics name them.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::stats::ERR_CLASSES;

/// The live side of a run (`LoadSpec::live`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveSpec {
    /// Where the run publishes each finished interval (the metrics that
    /// `--prometheus` serves); None: nowhere. Sweep and study set one
    /// handle on every run they make.
    pub metrics: Option<httplab_live::LoadLive>,
    /// `--prometheus ADDR`: serve the metrics on `http://ADDR/metrics` (CLI only).
    pub prometheus: Option<SocketAddr>,
    /// `--series FILE`: write the per-interval series (`.csv` or `.jsonl`) (CLI only).
    pub series: Option<PathBuf>,
    /// `--check-client`: before the run, compare one client process with two
    /// at the same total rate (CLI only).
    pub check_client: bool,
    /// The hidden `--client-check-step I/N@START`: this process is one
    /// client of a `--check-client` step; it runs the step and prints its
    /// result as JSON (CLI only).
    pub step: Option<crate::client_check::StepShard>,
}

/// `--prometheus` of `httplab load`: the metrics handle and its endpoint,
/// which serves until this is dropped.
pub(crate) struct Live {
    served: Option<(httplab_live::LoadLive, httplab_live::Endpoint)>,
}

impl Live {
    /// Starts the endpoint when `--prometheus` was given.
    pub fn start(spec: &crate::spec::LoadSpec) -> anyhow::Result<Live> {
        let Some(addr) = spec.live.prometheus else {
            return Ok(Live { served: None });
        };
        Ok(Live {
            served: Some(httplab_live::serve_load(addr)?),
        })
    }

    /// The handle the run publishes to.
    pub fn metrics(&self) -> Option<httplab_live::LoadLive> {
        self.served.as_ref().map(|(m, _)| m.clone())
    }
}

/// The error classes in `ErrClass` order, as the metrics' `class` label.
/// The names are `Errors`' field names in the result JSON.
pub(crate) const ERR_KEYS: [&str; ERR_CLASSES] = [
    "client_timo",
    "socket_timo",
    "connrefused",
    "connreset",
    "fd_unavail",
    "addrunavail",
    "other",
    "response_timo",
    "bad_status_line",
    "bad_header",
    "headers_too_large",
    "bad_chunk",
    "body_overrun",
    "truncated",
    "tls",
];

/// Pairs an interval's counts by class with their keys.
pub(crate) fn errors_by_key(counts: &[u64; ERR_CLASSES]) -> [(&'static str, u64); ERR_CLASSES] {
    let mut out = [("", 0); ERR_CLASSES];
    for (i, (k, n)) in ERR_KEYS.iter().zip(counts).enumerate() {
        out[i] = (k, *n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ErrClass;

    #[test]
    fn keys_follow_the_class_order() {
        assert_eq!(ERR_KEYS[ErrClass::ClientTimo as usize], "client_timo");
        assert_eq!(ERR_KEYS[ErrClass::ConnReset as usize], "connreset");
        assert_eq!(ERR_KEYS[ErrClass::ResponseTimo as usize], "response_timo");
        assert_eq!(ERR_KEYS[ErrClass::Tls as usize], "tls");
        let mut c = [0; ERR_CLASSES];
        c[ErrClass::BadChunk as usize] = 3;
        assert!(errors_by_key(&c).contains(&("bad_chunk", 3)));
    }
}
