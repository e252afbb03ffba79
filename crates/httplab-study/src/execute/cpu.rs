//! Server CPU time in nanoseconds over the server's whole process tree,
//! exited children included.
//!
//! The preferred source is a cgroup of the server's own: the server's root
//! process joins it before `exec` (so every worker, thread and forked child is
//! in it from the start) and the kernel's CPU accounting of the group
//! (cgroup v1 `cpuacct.usage`, ns; or cgroup v2 `cpu.stat` `usage_usec`)
//! counts every process that ever ran in it. Where no cgroup can be created
//! (not root, no cpuacct), the fallback sums `/proc/PID/task/TID/schedstat`
//! (ns) over the live tree and adds the clock-tick CPU of children the root
//! has reaped; the result records which source was used.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// Where a server's CPU time comes from.
#[derive(Debug)]
pub enum CpuSource {
    /// cgroup v1 `cpuacct` group (ns).
    CgroupV1(PathBuf),
    /// cgroup v2 group (`cpu.stat` `usage_usec`).
    CgroupV2(PathBuf),
    /// `/proc` schedstat over the live tree (ns), plus reaped children (ticks).
    Schedstat,
}

impl CpuSource {
    /// Which source this is, as a study's environment records it.
    pub fn kind(&self) -> httplab_model::ServerCpuSource {
        match self {
            CpuSource::CgroupV1(_) => httplab_model::ServerCpuSource::CgroupV1,
            CpuSource::CgroupV2(_) => httplab_model::ServerCpuSource::CgroupV2,
            CpuSource::Schedstat => httplab_model::ServerCpuSource::Schedstat,
        }
    }

    /// Short name recorded with each result.
    pub fn name(&self) -> String {
        self.kind().name().to_string()
    }

    /// The `cgroup.procs` files a new server process must join: its
    /// accounting group and, on cgroup v1, its CPU-limit group (see
    /// [`CpuLimit`]).
    pub fn procs_files(&self, limit: Option<&CpuLimit>) -> Vec<CString> {
        let mut dirs: Vec<&Path> = Vec::new();
        if let CpuSource::CgroupV1(d) | CpuSource::CgroupV2(d) = self {
            dirs.push(d);
        }
        if let Some(CpuLimit::V1(d)) = limit {
            dirs.push(d);
        }
        dirs.iter()
            .filter_map(|d| CString::new(d.join("cgroup.procs").to_string_lossy().as_bytes()).ok())
            .collect()
    }

    /// Creates a group named `name` under the first hierarchy that allows it.
    pub fn create(name: &str) -> CpuSource {
        let v1 = Path::new("/sys/fs/cgroup/cpuacct");
        if v1.join("cpuacct.usage").exists() {
            let d = v1.join(name);
            if fs::create_dir(&d).is_ok() || d.join("cpuacct.usage").exists() {
                return CpuSource::CgroupV1(d);
            }
        }
        for root in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            let r = Path::new(root);
            if r.join("cgroup.controllers").exists() {
                let d = r.join(name);
                if (fs::create_dir(&d).is_ok() || d.exists()) && d.join("cpu.stat").exists() {
                    return CpuSource::CgroupV2(d);
                }
                let _ = fs::remove_dir(&d);
            }
        }
        CpuSource::Schedstat
    }

    /// CPU seconds used so far by the group, or by the tree rooted at `root`.
    pub fn cpu_s(&self, root: i32) -> f64 {
        match self {
            CpuSource::CgroupV1(d) => fs::read_to_string(d.join("cpuacct.usage"))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .map_or_else(|| tree_cpu_s(root), |ns| ns as f64 / 1e9),
            CpuSource::CgroupV2(d) => fs::read_to_string(d.join("cpu.stat"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse::<u64>().ok())
                })
                .map_or_else(|| tree_cpu_s(root), |us| us as f64 / 1e6),
            CpuSource::Schedstat => tree_cpu_s(root),
        }
    }

    /// Removes the group (after the server has stopped; a group with live
    /// processes cannot be removed, which is harmless).
    pub fn remove(&self) {
        if let CpuSource::CgroupV1(d) | CpuSource::CgroupV2(d) = self {
            let _ = fs::remove_dir(d);
        }
    }
}

/// Where a server's CPU can be limited to a share of a core (a CFS quota),
/// for capacity measured at an equal CPU quota per server.
#[derive(Debug)]
pub enum CpuLimit {
    /// cgroup v1 `cpu` controller group (`cpu.cfs_quota_us`, `cpu.cfs_period_us`).
    V1(PathBuf),
    /// cgroup v2 group with the `cpu` controller (`cpu.max`).
    V2(PathBuf),
    /// No quota possible here, and why.
    Unavailable(String),
}

/// The CFS period used for quotas: short, so that a server throttled at the
/// end of one period waits at most a few milliseconds (a quarter core at a
/// 10 ms period runs 2.5 ms, then waits 7.5 ms).
pub const QUOTA_PERIOD_US: u64 = 10_000;

impl CpuLimit {
    /// The limit group that goes with `source` (created under the v1 `cpu`
    /// hierarchy when the accounting group is v1).
    pub fn create(name: &str, source: &CpuSource) -> CpuLimit {
        match source {
            CpuSource::CgroupV2(d) => {
                if d.join("cpu.max").exists() {
                    CpuLimit::V2(d.clone())
                } else {
                    CpuLimit::Unavailable(
                        "the cgroup v2 group has no cpu controller (cpu.max missing: \
                         enable +cpu in the parent's cgroup.subtree_control)"
                            .into(),
                    )
                }
            }
            CpuSource::CgroupV1(_) => {
                let root = Path::new("/sys/fs/cgroup/cpu");
                if !root.join("cpu.cfs_quota_us").exists() {
                    return CpuLimit::Unavailable(
                        "no cgroup v1 cpu controller with CFS quotas (cpu.cfs_quota_us)".into(),
                    );
                }
                let d = root.join(name);
                if (fs::create_dir(&d).is_ok() || d.exists()) && d.join("cpu.cfs_quota_us").exists()
                {
                    CpuLimit::V1(d)
                } else {
                    CpuLimit::Unavailable(format!(
                        "could not create a cgroup under the cpu controller (need root): {}",
                        std::io::Error::last_os_error()
                    ))
                }
            }
            CpuSource::Schedstat => CpuLimit::Unavailable(
                "no CPU-accounting cgroup could be created (httplab study needs root for \
                 cgroups)"
                    .into(),
            ),
        }
    }

    /// Why no quota can be set, if none can.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            CpuLimit::Unavailable(why) => Some(why),
            _ => None,
        }
    }

    /// Limits the group to `cores` of CPU time (a share of one core when
    /// below 1), or lifts the limit with `None`.
    pub fn set(&self, cores: Option<f64>) -> std::io::Result<()> {
        let quota = cores.map(|c| ((c * QUOTA_PERIOD_US as f64).round() as u64).max(1_000));
        match self {
            CpuLimit::V1(d) => {
                fs::write(d.join("cpu.cfs_period_us"), QUOTA_PERIOD_US.to_string())?;
                let q = quota.map_or_else(|| "-1".to_string(), |q| q.to_string());
                fs::write(d.join("cpu.cfs_quota_us"), q)
            }
            CpuLimit::V2(d) => {
                let q = quota.map_or_else(|| "max".to_string(), |q| q.to_string());
                fs::write(d.join("cpu.max"), format!("{q} {QUOTA_PERIOD_US}"))
            }
            CpuLimit::Unavailable(why) => Err(std::io::Error::other(why.clone())),
        }
    }

    /// Removes a v1 limit group (after the server has stopped).
    pub fn remove(&self) {
        if let CpuLimit::V1(d) = self {
            let _ = fs::remove_dir(d);
        }
    }
}

fn read_u64_first(path: &str) -> Option<u64> {
    fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU of the live tree rooted at `root` (its process group and
/// descendants) from per-thread schedstat, plus the reaped children of each
/// process (clock ticks: the kernel keeps no finer figure for them).
pub fn tree_cpu_s(root: i32) -> f64 {
    let hz = crate::execute::sampler::clock_ticks();
    let mut ns: u64 = 0;
    let mut reaped_ticks: u64 = 0;
    for pid in crate::execute::sampler::tree_pids(root) {
        // Live threads in ns; a process's own clock ticks also hold the
        // threads that have exited, so take whichever is larger.
        let mut threads_ns: u64 = 0;
        if let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) {
            for t in rd.flatten() {
                let p = t.path().join("schedstat");
                if let Some(v) = read_u64_first(&p.to_string_lossy()) {
                    threads_ns += v;
                }
            }
        }
        let own_ticks = crate::execute::sampler::own_ticks(pid);
        ns += threads_ns.max((own_ticks as f64 / hz * 1e9) as u64);
        reaped_ticks += crate::execute::sampler::reaped_child_ticks(pid);
    }
    ns as f64 / 1e9 + reaped_ticks as f64 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_tree_cpu_is_positive_and_a_busy_thread_is_counted() {
        let me = std::process::id() as i32;
        assert!(tree_cpu_s(me) > 0.0);
        // Other test threads come and go, so the tree's total is not
        // compared; this thread's own nanosecond figure must grow.
        let own = || read_u64_first("/proc/thread-self/schedstat").unwrap_or(0);
        // The kernel folds a running thread's time into schedstat at a
        // scheduler tick or a switch, so a fixed short loop may finish
        // before any: work in rounds until the figure moves (bounded: a few
        // seconds of CPU at most, far more than one tick).
        let before = own();
        let mut x = 0u64;
        let mut grew = false;
        for _ in 0..1000 {
            for i in 0..3_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i.wrapping_mul(i)));
            }
            if own() > before {
                grew = true;
                break;
            }
        }
        assert!(x > 0);
        assert!(grew, "a busy thread's schedstat time never grew");
    }

    #[test]
    fn a_quota_is_written_and_lifted() {
        let name = format!("httplab-test-quota-{}", std::process::id());
        let src = CpuSource::create(&name);
        let limit = CpuLimit::create(&name, &src);
        if let Some(why) = limit.unavailable() {
            src.remove();
            // Without root no cgroup can be made: CI runs as root, so there
            // this fails. As root, a host whose cgroups have no CPU controller
            // to delegate is a kernel set-up CI cannot promise either (like
            // io_uring): visible, never a failure.
            let reason = format!("no CPU quota here: {why}");
            if httplab_sys::process::is_root() {
                return httplab_skip::skipped(&reason);
            }
            return httplab_skip::skip(&format!("{reason} (not root)"));
        }
        limit.set(Some(0.25)).expect("set a quarter core");
        let read = |f: &str| match &limit {
            CpuLimit::V1(d) | CpuLimit::V2(d) => fs::read_to_string(d.join(f)).unwrap_or_default(),
            CpuLimit::Unavailable(_) => String::new(),
        };
        match &limit {
            CpuLimit::V1(_) => {
                assert_eq!(read("cpu.cfs_period_us").trim(), "10000");
                assert_eq!(read("cpu.cfs_quota_us").trim(), "2500");
            }
            _ => assert_eq!(read("cpu.max").trim(), "2500 10000"),
        }
        limit.set(None).expect("lift the quota");
        match &limit {
            CpuLimit::V1(_) => assert_eq!(read("cpu.cfs_quota_us").trim(), "-1"),
            _ => assert!(read("cpu.max").starts_with("max")),
        }
        assert_eq!(
            src.procs_files(Some(&limit)).len(),
            if matches!(limit, CpuLimit::V1(_)) {
                2
            } else {
                1
            }
        );
        limit.remove();
        src.remove();
    }
}
