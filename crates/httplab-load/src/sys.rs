//! System facts and calls of the load generator. Every call into the
//! kernel goes through `httplab_sys`'s safe wrappers (the only crate of the
//! workspace allowed to call into the kernel directly); what is left here
//! reads /proc and /sys.

use std::io;

pub use httplab_sys::clock::{thread_cpu, TimerFd};
pub use httplab_sys::host::{kernel, mem_total_bytes};
pub use httplab_sys::limits::raise_nofile_limit;
pub use httplab_sys::net::set_bind_no_port;
pub use httplab_sys::signal::{install_sigint, interrupted};

/// Online CPUs of the machine (from the kernel's online mask), best effort.
pub fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
            out.extend(a..=b.min(a.saturating_add(4095)));
        }
    }
    if out.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        out = (0..n as u32).collect();
    }
    out
}

/// Restricts the calling thread to `cpus` (ignored when empty).
pub fn pin_current_thread(cpus: &[u32]) -> io::Result<()> {
    httplab_sys::cpu::CpuSet::new(cpus.iter().map(|&c| c as usize)).pin_current_thread()
}

/// CPUs this process may run on (empty if the mask cannot be read).
pub fn affinity() -> Vec<u32> {
    httplab_sys::cpu::allowed_cores()
        .map(|v| v.into_iter().map(|c| c as u32).collect())
        .unwrap_or_default()
}

/// TCP sockets in TIME_WAIT on this machine (/proc/net/sockstat, `tw`).
pub fn time_wait_sockets() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == "tw" {
            return it.next()?.parse().ok();
        }
    }
    None
}

/// The ephemeral port range (net.ipv4.ip_local_port_range).
pub fn ephemeral_ports() -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u32>().ok());
    Some((it.next()??, it.next()??))
}
