//! The server's counters as metric families, read at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// The server's counters at one moment, summed over its workers (and forked
/// children: they share one mapping).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Connections accepted since start.
    pub accepted: u64,
    /// Connections open now.
    pub open: u64,
    /// Requests answered since start.
    pub requests: u64,
    /// Bytes written since start.
    pub bytes_sent: u64,
    /// Connections closed at once at a connection cap.
    pub refused: u64,
}

type Read = Box<dyn Fn() -> ServerCounters + Send + Sync>;

/// The server's metric families; `read` is called once per scrape.
pub struct ServerLive {
    read: Read,
}

impl std::fmt::Debug for ServerLive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerLive")
    }
}

impl ServerLive {
    /// Families reading the counters with `read` at each scrape.
    pub fn new(read: impl Fn() -> ServerCounters + Send + Sync + 'static) -> ServerLive {
        ServerLive {
            read: Box::new(read),
        }
    }

    /// Registers the families (`httplab_serve_*`) in `registry`.
    pub fn register(self, registry: &mut Registry) {
        registry.register_collector(Box::new(self));
    }
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

impl Collector for ServerLive {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let c = (self.read)();
        counter(
            &mut e,
            "httplab_serve_connections_accepted",
            "Connections accepted since start",
            c.accepted,
        )?;
        counter(
            &mut e,
            "httplab_serve_requests_served",
            "Requests answered since start (workers flush once per loop turn)",
            c.requests,
        )?;
        counter(
            &mut e,
            "httplab_serve_bytes_sent",
            "Bytes written since start",
            c.bytes_sent,
        )?;
        counter(
            &mut e,
            "httplab_serve_connections_refused",
            "Connections closed at once because a connection cap was reached",
            c.refused,
        )?;
        let g = ConstGauge::new(c.open as i64);
        g.encode(e.encode_descriptor(
            "httplab_serve_open_connections",
            "Connections open now",
            None,
            g.metric_type(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_counters_read_at_scrape() {
        let mut r = Registry::default();
        ServerLive::new(|| ServerCounters {
            accepted: 3,
            open: 1,
            requests: 7,
            bytes_sent: 900,
            refused: 0,
        })
        .register(&mut r);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &r).unwrap();
        assert!(s.contains("httplab_serve_requests_served_total 7\n"), "{s}");
        assert!(
            s.contains("httplab_serve_connections_accepted_total 3\n"),
            "{s}"
        );
        assert!(s.contains("httplab_serve_bytes_sent_total 900\n"), "{s}");
        assert!(s.contains("httplab_serve_open_connections 1\n"), "{s}");
    }
}
