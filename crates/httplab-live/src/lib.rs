//! Live metrics of a running `httplab load`, `sweep`, `study` or `serve`, in
//! the Prometheus text exposition format (OpenMetrics), on `GET /metrics`.
//!
//! - [`LoadLive`]: what a run's interval collector publishes once per interval
//!   (requests sent, replies, errors by class, open connections, the last
//!   interval's reply rate and p50/p99), plus an info metric naming the
//!   current sweep step or study workload and server. Nothing is counted per
//!   request: the load engine's collector already sums each interval, and
//!   hands the sums over here.
//! - [`ServerLive`]: the server's own counters (`httplab_server::stats`),
//!   read when scraped.
//! - [`Endpoint`]: a small HTTP/1.1 listener on its own thread that answers
//!   `GET /metrics` with the registry's encoding, 404 for any other target,
//!   400 for a malformed or oversized request.
//!
//! The metric families are the registry's `Collector`s from the
//! `prometheus-client` crate, encoded by its text encoder; they read
//! values kept elsewhere instead of owning counters, so the measured
//! code keeps its own counters and the scrape reads them.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod endpoint;
mod load;
mod server;

pub use endpoint::{Endpoint, CONTENT_TYPE, MAX_REQUEST_BYTES};
pub use load::{LoadLive, LoadSnapshot};
pub use prometheus_client::registry::Registry;
pub use server::{ServerCounters, ServerLive};

/// Parses `--prometheus ADDR` (`127.0.0.1:9464`, `[::1]:0`; port 0: any free
/// port), with a message naming the option.
pub fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("--prometheus '{s}': expected IP:PORT, e.g. 127.0.0.1:9464 (port 0: any free port)")
    })
}

/// Starts the endpoint for `registry` on `addr` and prints
/// `metrics: http://ADDR/metrics` on stderr (the bound address, also for port 0).
pub fn start(addr: std::net::SocketAddr, registry: Registry) -> std::io::Result<Endpoint> {
    let e = Endpoint::start(addr, registry)?;
    eprintln!("metrics: {}", e.url());
    Ok(e)
}

/// `--prometheus ADDR` of `load`, `sweep` and `study`: a new [`LoadLive`]
/// registered and served on `addr` (announced on stderr). The endpoint
/// serves until dropped.
pub fn serve_load(addr: std::net::SocketAddr) -> std::io::Result<(LoadLive, Endpoint)> {
    let live = LoadLive::new();
    let mut registry = Registry::default();
    live.register(&mut registry);
    Ok((live, start(addr, registry)?))
}
