//! Machine facts for the report's environment section.

use std::fs;

use httplab_model::Environment;

/// Kernel, CPU, cores and memory of this machine.
pub fn environment() -> Environment {
    let osrel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let ostype = fs::read_to_string("/proc/sys/kernel/ostype").unwrap_or_else(|_| "Linux".into());
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| {
            l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
        })
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let memory_bytes = httplab_sys::host::mem_total_bytes().unwrap_or(0);
    Environment {
        kernel: format!("{} {}", ostype.trim(), osrel.trim()),
        cpu_model,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        client_affinity: Vec::new(),
        memory_bytes,
        facts: Default::default(),
        extra: Default::default(),
    }
}

/// Seconds of user and system CPU this process has used.
pub fn self_cpu() -> (f64, f64) {
    let Ok(s) = fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else {
        return (0.0, 0.0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let hz = httplab_sys::host::clock_ticks();
    let g = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / hz;
    (g(11), g(12))
}
