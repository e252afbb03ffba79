//! The system calls this crate makes, all through `httplab_sys`'s safe
//! wrappers (the only crate of the workspace allowed to call into the
//! kernel directly), plus what /proc tells.

pub use httplab_sys::clock::rusage;
pub use httplab_sys::file::{open_beneath, write_all_stdout};
pub use httplab_sys::limits::raise_nofile_limit;
pub use httplab_sys::net::{recv, send, send_vectored, sendfile, set_defer_accept, set_int_opt};
pub use httplab_sys::process::{fork_child, pidfd_open, reap, wait_child, Pid};
pub use httplab_sys::shared::{poll_readable, WakePipe};
pub use httplab_sys::signal::{block_term_signals, wait_for_signal};
#[cfg(test)]
pub use httplab_sys::signal::{current_tid, signal_thread};

/// Sends SIGKILL to a child (gone already: nothing to do).
pub fn kill_child(pid: Pid) {
    let _ = httplab_sys::process::signal(pid, libc::SIGKILL);
}

/// Resident set size of this process in bytes (from /proc/self/statm),
/// plus that of its live children when `children` is set.
pub fn rss_bytes(children: bool) -> u64 {
    let mut total = statm_rss("/proc/self/statm");
    if children {
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for t in tasks.flatten() {
                let Ok(list) = std::fs::read_to_string(t.path().join("children")) else {
                    continue;
                };
                for pid in list.split_whitespace() {
                    total += statm_rss(&format!("/proc/{pid}/statm"));
                }
            }
        }
    }
    total
}

fn statm_rss(path: &str) -> u64 {
    let Ok(s) = std::fs::read_to_string(path) else {
        return 0;
    };
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * httplab_sys::host::page_size()
}
