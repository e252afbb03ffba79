//! A load run's live figures: published by the run's interval collector
//! once per interval, read by the endpoint at each scrape.

use std::sync::{Arc, Mutex, MutexGuard};

use httplab_model::Interval;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The figures a scrape shows. Counters add up every interval published
/// since the process started (across the runs of a sweep or study), so they
/// only ever grow; gauges are the last interval's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadSnapshot {
    /// Requests sent in the measurement window (warm-up excluded).
    pub requests: u64,
    /// Replies completed.
    pub replies: u64,
    /// Errors by class key (`client_timo`, `connreset` ...), in first-seen order.
    pub errors: Vec<(&'static str, u64)>,
    /// Intervals published.
    pub intervals: u64,
    /// Runs started.
    pub runs: u64,
    /// Whether a run is going on.
    pub running: bool,
    /// Open connections at the end of the last interval.
    pub open_connections: u64,
    /// Replies per second in the last interval.
    pub reply_rate: f64,
    /// Response time p50 of the last interval, ms.
    pub p50_ms: f64,
    /// Response time p99 of the last interval, ms.
    pub p99_ms: f64,
    /// What is running: (label, value) pairs such as `step`, `workload`, `server`.
    pub context: Vec<(String, String)>,
}

impl LoadSnapshot {
    /// Errors of every class.
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().map(|(_, n)| n).sum()
    }
}

/// A handle shared by the run (which publishes) and the endpoint (which
/// reads). Cloning shares it. Equal handles are the same handle.
#[derive(Clone, Default)]
pub struct LoadLive {
    inner: Arc<Mutex<LoadSnapshot>>,
}

impl std::fmt::Debug for LoadLive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadLive")
    }
}

impl PartialEq for LoadLive {
    fn eq(&self, o: &LoadLive) -> bool {
        Arc::ptr_eq(&self.inner, &o.inner)
    }
}

impl LoadLive {
    /// A new handle, all zero.
    pub fn new() -> LoadLive {
        LoadLive::default()
    }

    fn lock(&self) -> MutexGuard<'_, LoadSnapshot> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Names what runs now (a sweep step, a study's workload and server),
    /// shown as the `httplab_run_info` labels.
    pub fn set_context(&self, labels: Vec<(String, String)>) {
        self.lock().context = labels;
    }

    /// A run starts.
    pub fn run_started(&self) {
        let mut g = self.lock();
        g.runs += 1;
        g.running = true;
    }

    /// The run ended (its last interval was published).
    pub fn run_finished(&self) {
        let mut g = self.lock();
        g.running = false;
        g.open_connections = 0;
    }

    /// One finished interval: its counts are added, its rate, percentiles and
    /// open connections become the gauges. `errors` are the interval's
    /// errors by class key (zero counts may be left out).
    pub fn interval(&self, iv: &Interval, errors: &[(&'static str, u64)]) {
        let mut g = self.lock();
        g.requests += iv.requests;
        g.replies += iv.replies;
        for &(k, n) in errors.iter().filter(|(_, n)| *n > 0) {
            match g.errors.iter_mut().find(|(key, _)| *key == k) {
                Some((_, v)) => *v += n,
                None => g.errors.push((k, n)),
            }
        }
        g.intervals += 1;
        g.open_connections = iv.open_connections;
        g.reply_rate = iv.reply_rate;
        g.p50_ms = iv.p50_ms;
        g.p99_ms = iv.p99_ms;
    }

    /// A copy of the current figures.
    pub fn snapshot(&self) -> LoadSnapshot {
        self.lock().clone()
    }

    /// Registers the families (`httplab_load_*`, `httplab_run_info`) in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for LoadLive {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        // Copy out, so a scrape never holds the lock the collector publishes under.
        let s = self.snapshot();
        counter(
            &mut e,
            "httplab_load_requests_sent",
            "Requests sent in measurement windows (updated once per interval)",
            s.requests,
        )?;
        counter(
            &mut e,
            "httplab_load_replies",
            "Replies completed in measurement windows (updated once per interval)",
            s.replies,
        )?;
        {
            let c = ConstCounter::new(0u64);
            let mut fam = e.encode_descriptor(
                "httplab_load_errors",
                "Errors by class (updated once per interval)",
                None,
                c.metric_type(),
            )?;
            for (class, n) in &s.errors {
                let labels = [("class", *class)];
                ConstCounter::new(*n).encode(fam.encode_family(&labels)?)?;
            }
        }
        counter(
            &mut e,
            "httplab_load_intervals",
            "Intervals published",
            s.intervals,
        )?;
        counter(&mut e, "httplab_load_runs", "Runs started", s.runs)?;
        gauge(
            &mut e,
            "httplab_load_running",
            "1 while a run goes on",
            if s.running { 1.0 } else { 0.0 },
        )?;
        gauge(
            &mut e,
            "httplab_load_open_connections",
            "Open connections at the end of the last interval",
            s.open_connections as f64,
        )?;
        gauge(
            &mut e,
            "httplab_load_reply_rate",
            "Replies per second in the last interval",
            s.reply_rate,
        )?;
        gauge(
            &mut e,
            "httplab_load_response_p50_seconds",
            "Median response time of the last interval's replies",
            s.p50_ms / 1000.0,
        )?;
        gauge(
            &mut e,
            "httplab_load_response_p99_seconds",
            "99th percentile response time of the last interval's replies",
            s.p99_ms / 1000.0,
        )?;
        if !s.context.is_empty() {
            let info = Info::new(s.context.clone());
            info.encode(e.encode_descriptor(
                "httplab_run",
                "What runs now (sweep step, study workload and server)",
                None,
                info.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(l: &LoadLive) -> String {
        let mut r = Registry::default();
        l.register(&mut r);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &r).unwrap();
        s
    }

    #[test]
    fn intervals_add_up_and_gauges_follow_the_last() {
        let l = LoadLive::new();
        l.run_started();
        let iv = Interval {
            requests: 10,
            replies: 9,
            errors: 1,
            reply_rate: 9.0,
            p50_ms: 2.0,
            p99_ms: 5.0,
            open_connections: 4,
            ..Interval::default()
        };
        l.interval(&iv, &[("connreset", 1), ("client_timo", 0)]);
        l.interval(&iv, &[("connreset", 2)]);
        let s = l.snapshot();
        assert_eq!((s.requests, s.replies, s.errors_total()), (20, 18, 3));
        l.set_context(vec![("step".into(), "2".into())]);
        let t = text(&l);
        assert!(t.contains("httplab_load_requests_sent_total 20\n"), "{t}");
        assert!(t.contains("httplab_load_replies_total 18\n"), "{t}");
        assert!(
            t.contains("httplab_load_errors_total{class=\"connreset\"} 3\n"),
            "{t}"
        );
        assert!(!t.contains("client_timo"), "{t}");
        assert!(
            t.contains("httplab_load_response_p99_seconds 0.005\n"),
            "{t}"
        );
        assert!(t.contains("httplab_run_info{step=\"2\"} 1\n"), "{t}");
        assert!(t.contains("httplab_load_running 1"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
    }
}
