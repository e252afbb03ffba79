//! Resource limits.

use std::io;

use crate::cvt;

/// Raises RLIMIT_NOFILE as far as allowed: to `fs.nr_open` (capped at
/// 2^20) when privileged, else the soft limit to the hard limit. Returns the
/// soft limit now in force. Child processes inherit it.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit struct.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
        .min(1 << 20);
    for target in [nr_open, lim.rlim_max] {
        if target <= lim.rlim_cur {
            continue;
        }
        let want = libc::rlimit {
            rlim_cur: target,
            rlim_max: target.max(lim.rlim_max),
        };
        // SAFETY: `want` is a valid rlimit struct, only read.
        if cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }).is_ok() {
            return Ok(want.rlim_cur);
        }
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    #[test]
    fn raising_never_lowers_the_limit() {
        let a = super::raise_nofile_limit().unwrap();
        let b = super::raise_nofile_limit().unwrap();
        assert!(a > 0);
        assert_eq!(a, b);
    }
}
