//! Server-wide counters. They live in a shared anonymous mapping so that
//! forked children update the same numbers as threads do; workers add to
//! them in batches, not per request.

use std::sync::atomic::Ordering;
use std::time::Duration;

/// Counters (all monotonic except `open`), in a shared mapping.
#[derive(Debug)]
pub struct Stats {
    c: httplab_sys::shared::SharedCounters<10>,
}

const ACCEPTED: usize = 0;
const CLOSED: usize = 1;
const REQUESTS: usize = 2;
const BYTES_OUT: usize = 3;
const WRITES: usize = 4;
const REFUSED: usize = 5;
const FORKED: usize = 6;
const REAPED: usize = 7;
const COPIED: usize = 8;
const SENDFILED: usize = 9;

/// A point-in-time copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Connections currently open.
    pub open: u64,
    /// Connections accepted since start.
    pub accepted: u64,
    /// Requests answered since start.
    pub requests: u64,
    /// Bytes written since start.
    pub bytes_out: u64,
    /// send/sendfile calls that wrote data.
    pub writes: u64,
    /// Connections closed at once because a cap was reached.
    pub refused: u64,
    /// Child processes started (fork model).
    pub forked: u64,
    /// Child processes reaped (fork model).
    pub reaped: u64,
    /// File bytes (not response heads) sent in cleartext by copying
    /// (pread + send).
    pub file_copy_bytes: u64,
    /// File bytes (not response heads) sent in cleartext by sendfile.
    pub file_sendfile_bytes: u64,
}

impl Stats {
    /// Counts an accepted connection.
    pub fn accepted(&self) {
        self.c[ACCEPTED].fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a closed connection.
    pub fn closed(&self) {
        self.c[CLOSED].fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a forked child.
    pub fn forked(&self) {
        self.c[FORKED].fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a reaped child.
    pub fn reaped(&self) {
        self.c[REAPED].fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a connection refused at a cap.
    pub fn refused(&self) {
        self.c[REFUSED].fetch_add(1, Ordering::Relaxed);
    }
    /// Adds answered requests, bytes written and write calls.
    pub fn add_io(&self, requests: u64, bytes: u64, writes: u64) {
        if writes > 0 {
            self.c[WRITES].fetch_add(writes, Ordering::Relaxed);
        }
        if requests > 0 {
            self.c[REQUESTS].fetch_add(requests, Ordering::Relaxed);
        }
        if bytes > 0 {
            self.c[BYTES_OUT].fetch_add(bytes, Ordering::Relaxed);
        }
    }
    /// Reads all counters.
    pub fn add_file_paths(&self, copied: u64, sendfiled: u64) {
        self.c[COPIED].fetch_add(copied, Ordering::Relaxed);
        self.c[SENDFILED].fetch_add(sendfiled, Ordering::Relaxed);
    }
    pub fn snapshot(&self) -> Snapshot {
        let accepted = self.c[ACCEPTED].load(Ordering::Relaxed);
        let closed = self.c[CLOSED].load(Ordering::Relaxed);
        Snapshot {
            open: accepted.saturating_sub(closed),
            accepted,
            requests: self.c[REQUESTS].load(Ordering::Relaxed),
            bytes_out: self.c[BYTES_OUT].load(Ordering::Relaxed),
            writes: self.c[WRITES].load(Ordering::Relaxed),
            refused: self.c[REFUSED].load(Ordering::Relaxed),
            forked: self.c[FORKED].load(Ordering::Relaxed),
            reaped: self.c[REAPED].load(Ordering::Relaxed),
            file_copy_bytes: self.c[COPIED].load(Ordering::Relaxed),
            file_sendfile_bytes: self.c[SENDFILED].load(Ordering::Relaxed),
        }
    }
}

/// One statistics report line's worth of numbers.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// Seconds since start.
    pub t: f64,
    /// Counters.
    pub snap: Snapshot,
    /// Requests per second over the interval.
    pub rps: f64,
    /// Current resident set size (bytes); for the fork model the parent's
    /// plus its live children's.
    pub rss: u64,
    /// CPU use over the interval, percent of one core.
    pub cpu_pct: f64,
}

impl Report {
    /// Human-readable line.
    pub fn line(&self) -> String {
        format!(
            "stats t={:.1}s open={} accepted={} requests={} rps={:.0} bytes_out={} rss_kib={} cpu={:.1}%{}",
            self.t,
            self.snap.open,
            self.snap.accepted,
            self.snap.requests,
            self.rps,
            self.snap.bytes_out,
            self.rss / 1024,
            self.cpu_pct,
            self.file_paths()
        )
    }

    /// ` file_copy=P% file_bytes=N` once file bodies were written in
    /// cleartext (which path `--file-io` took), else nothing.
    fn file_paths(&self) -> String {
        let (c, s) = (self.snap.file_copy_bytes, self.snap.file_sendfile_bytes);
        if c + s == 0 {
            return String::new();
        }
        format!(
            " file_copy={:.1}% file_bytes={}",
            100.0 * c as f64 / (c + s) as f64,
            c + s
        )
    }

    pub fn json(&self) -> String {
        format!(
            "{{\"t\":{:.3},\"open\":{},\"accepted\":{},\"requests\":{},\"rps\":{:.1},\"bytes_out\":{},\"rss\":{},\"cpu_pct\":{:.1},\"file_copy_bytes\":{},\"file_sendfile_bytes\":{}}}",
            self.t,
            self.snap.open,
            self.snap.accepted,
            self.snap.requests,
            self.rps,
            self.snap.bytes_out,
            self.rss,
            self.cpu_pct,
            self.snap.file_copy_bytes,
            self.snap.file_sendfile_bytes
        )
    }
}

/// Computes reports from successive snapshots.
#[derive(Debug)]
pub struct Reporter {
    start: std::time::Instant,
    last_t: Duration,
    last_cpu: Duration,
    last_requests: u64,
    children: bool,
}

impl Reporter {
    /// Starts timing now; `children` adds forked children's RSS.
    pub fn new(children: bool) -> Self {
        Reporter {
            start: std::time::Instant::now(),
            last_t: Duration::ZERO,
            last_cpu: crate::sys::rusage(false).1,
            last_requests: 0,
            children,
        }
    }

    /// A report for the interval since the previous call.
    pub fn report(&mut self, snap: Snapshot) -> Report {
        let t = self.start.elapsed();
        let cpu = crate::sys::rusage(false).1 + crate::sys::rusage(true).1;
        let dt = (t - self.last_t).as_secs_f64().max(1e-6);
        let cpu_pct = (cpu.saturating_sub(self.last_cpu)).as_secs_f64() / dt * 100.0;
        let rps = snap.requests.saturating_sub(self.last_requests) as f64 / dt;
        self.last_t = t;
        self.last_cpu = cpu;
        self.last_requests = snap.requests;
        Report {
            t: t.as_secs_f64(),
            snap,
            rps,
            rss: crate::sys::rss_bytes(self.children),
            cpu_pct,
        }
    }
}

/// Statistics shared by all workers, threads and forked children.
pub type SharedStats = std::sync::Arc<Stats>;

/// Allocates fresh shared statistics (all zero).
pub fn shared() -> std::io::Result<SharedStats> {
    Ok(std::sync::Arc::new(Stats {
        c: httplab_sys::shared::SharedCounters::new()?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_line_and_json_parse() {
        let r = Report {
            t: 1.5,
            snap: Snapshot {
                open: 2,
                accepted: 3,
                requests: 40,
                bytes_out: 5000,
                ..Snapshot::default()
            },
            rps: 26.7,
            rss: 4096 * 1024,
            cpu_pct: 12.5,
        };
        let line = r.line();
        let fields: std::collections::HashMap<&str, &str> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .collect();
        assert!(line.starts_with("stats "));
        assert_eq!(fields["open"], "2");
        assert_eq!(fields["requests"], "40");
        assert_eq!(fields["rss_kib"], "4096");
        assert_eq!(fields["cpu"], "12.5%");
        let json = r.json();
        assert!(json.starts_with('{') && json.ends_with('}'));
        assert!(json.contains("\"requests\":40,"));
        assert!(json.contains("\"rss\":4194304,"));
    }
}
