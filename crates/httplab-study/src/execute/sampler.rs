//! Samples a server's process tree from /proc while a run goes: CPU time,
//! resident memory, threads and open descriptors.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use httplab_model::{ServerCost, ServerSample};

/// One process's figures from /proc.
#[derive(Debug, Clone, Copy, Default)]
struct Proc {
    ppid: i32,
    pgrp: i32,
    ticks: u64,
    own_ticks: u64,
    threads: u64,
    rss_pages: u64,
}

fn read_stat(pid: i32) -> Option<Proc> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: split after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after comm, 0-based: state(0) ppid(1) pgrp(2) … utime(11) stime(12)
    // cutime(13) cstime(14) … num_threads(17) … rss(21)
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    Some(Proc {
        ppid: n(1) as i32,
        pgrp: n(2) as i32,
        ticks: (n(11) + n(12) + n(13) + n(14)).max(0) as u64,
        own_ticks: (n(11) + n(12)).max(0) as u64,
        threads: n(17).max(0) as u64,
        rss_pages: n(21).max(0) as u64,
    })
}

fn all_pids() -> Vec<i32> {
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Clock ticks per second of /proc's CPU fields.
pub fn clock_ticks() -> f64 {
    httplab_sys::host::clock_ticks()
}

fn page_size() -> u64 {
    httplab_sys::host::page_size()
}

/// PIDs of the tree rooted at `root` (its process group and descendants).
pub fn tree_pids(root: i32) -> Vec<i32> {
    server_pids(root).into_iter().map(|(p, _)| p).collect()
}

/// CPU ticks of `pid` itself (utime + stime, exited threads included).
pub fn own_ticks(pid: i32) -> u64 {
    read_stat(pid).map_or(0, |p| p.own_ticks)
}

/// CPU ticks of the children `pid` has waited for (cutime + cstime).
pub fn reaped_child_ticks(pid: i32) -> u64 {
    let Ok(s) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some(close) = s.rfind(')') else { return 0 };
    let f: Vec<&str> = s[close + 2..].split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(13) + n(14)
}

/// The processes of a server: its process group plus every descendant of its root.
fn server_pids(root: i32) -> Vec<(i32, Proc)> {
    let procs: HashMap<i32, Proc> = all_pids()
        .into_iter()
        .filter_map(|p| Some((p, read_stat(p)?)))
        .collect();
    let mut set: HashSet<i32> = HashSet::new();
    if procs.contains_key(&root) {
        set.insert(root);
    }
    loop {
        let before = set.len();
        for (pid, p) in &procs {
            if p.pgrp == root || set.contains(&p.ppid) {
                set.insert(*pid);
            }
        }
        if set.len() == before {
            break;
        }
    }
    set.into_iter().map(|p| (p, procs[&p])).collect()
}

/// One snapshot of the tree rooted at `root`, `t_s` seconds into the run.
pub fn sample(root: i32, t_s: f64) -> ServerSample {
    let tree = server_pids(root);
    let hz = clock_ticks();
    let page = page_size();
    let mut s = ServerSample {
        t_s,
        ..Default::default()
    };
    for (pid, p) in &tree {
        s.cpu_s += p.ticks as f64 / hz;
        s.rss_bytes += p.rss_pages * page;
        s.threads += p.threads;
        s.fds += fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
        s.processes += 1;
    }
    s
}

/// A background sampler; [`Sampler::finish`] returns the cost.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: thread::JoinHandle<Vec<ServerSample>>,
    name: String,
}

impl Sampler {
    /// Starts sampling `root`'s tree every `every`.
    pub fn start(name: &str, root: i32, every: Duration) -> Sampler {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = thread::spawn(move || {
            let t0 = Instant::now();
            let mut v = vec![sample(root, 0.0)];
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                v.push(sample(root, t0.elapsed().as_secs_f64()));
            }
            v.push(sample(root, t0.elapsed().as_secs_f64()));
            v
        });
        Sampler {
            stop: tx,
            handle,
            name: name.to_string(),
        }
    }

    /// Stops and summarises.
    pub fn finish(self) -> ServerCost {
        let _ = self.stop.send(());
        let samples = self.handle.join().unwrap_or_default();
        cost_of(&self.name, samples)
    }
}

/// CPU used between the first and last sample, and peak RSS.
pub fn cost_of(name: &str, samples: Vec<ServerSample>) -> ServerCost {
    let first = samples.first().map_or(0.0, |s| s.cpu_s);
    let last = samples
        .iter()
        .filter(|s| s.processes > 0)
        .map(|s| s.cpu_s)
        .fold(first, f64::max);
    ServerCost {
        name: name.to_string(),
        cpu_s: (last - first).max(0.0),
        cpu_source: String::new(),
        peak_rss_bytes: samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_own_process() {
        let me = std::process::id() as i32;
        let s = sample(me, 0.0);
        assert!(s.processes >= 1);
        assert!(s.threads >= 1);
        assert!(s.rss_bytes > 0);
        assert!(s.fds >= 1);
    }

    #[test]
    fn sampler_collects() {
        let me = std::process::id() as i32;
        let sm = Sampler::start("me", me, Duration::from_millis(5));
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        let c = sm.finish();
        assert!(c.samples.len() >= 2);
        assert!(c.peak_rss_bytes > 0);
    }
}
