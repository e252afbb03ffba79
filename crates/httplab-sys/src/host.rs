//! Facts about this machine's kernel: sysconf values, its name and the
//! memory it reports.

/// Clock ticks per second of /proc's CPU fields (`_SC_CLK_TCK`; 100 if
/// sysconf fails).
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The page size in bytes (4096 if sysconf fails).
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// `uname -sr` (empty if uname fails).
pub fn kernel() -> String {
    uname().map_or_else(String::new, |(name, release)| format!("{name} {release}"))
}

/// `uname -r`, the kernel's release (`6.1.0-13-amd64`; empty if uname
/// fails).
pub fn kernel_release() -> String {
    uname().map_or_else(String::new, |(_, release)| release)
}

/// The kernel's name and release from uname(2).
fn uname() -> Option<(String, String)> {
    // SAFETY: an all-zero utsname is a valid value of this plain C struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some((field(&u.sysname), field(&u.release)))
}

/// Total memory in bytes (`MemTotal` of /proc/meminfo); None when the file
/// cannot be read or has no such line.
pub fn mem_total_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&meminfo)
}

/// The `MemTotal:` line of a /proc/meminfo text (in kB there), in bytes.
fn parse_mem_total(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .and_then(|kb| kb.checked_mul(1024))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sysconf_values_are_sane() {
        assert!(super::clock_ticks() >= 1.0);
        assert!(super::page_size().is_power_of_two());
        assert!(super::kernel().starts_with("Linux "));
        assert!(super::mem_total_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn mem_total_is_read_from_its_line_in_kilobytes() {
        let sample = "MemFree:         1024000 kB\nMemTotal:       16318412 kB\nMemAvailable:   12000000 kB\n";
        assert_eq!(super::parse_mem_total(sample), Some(16_318_412 * 1024));
        assert_eq!(super::parse_mem_total("MemFree: 5 kB\n"), None);
        assert_eq!(super::parse_mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(super::parse_mem_total(""), None);
    }
}
