//! CPU affinity: which cores a thread (or a child process) may run on.

use std::io;

use crate::cvt;

/// A set of CPU cores (a `cpu_set_t`). Built before a fork, it can be
/// applied in the child without allocating ([`CpuSet::pin_current_thread`]
/// is async-signal-safe).
#[derive(Clone, Copy)]
pub struct CpuSet {
    set: libc::cpu_set_t,
    empty: bool,
}

/// Cores a `cpu_set_t` can name.
const SETSIZE: usize = libc::CPU_SETSIZE as usize;

impl CpuSet {
    /// The set of `cores` (cores past the set's capacity, 1024, are left out).
    pub fn new(cores: impl IntoIterator<Item = usize>) -> CpuSet {
        // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let mut empty = true;
        for c in cores {
            if c < SETSIZE {
                // SAFETY: `c` is below CPU_SETSIZE, so the bit lies inside `set`.
                unsafe { libc::CPU_SET(c, &mut set) };
                empty = false;
            }
        }
        CpuSet { set, empty }
    }

    /// Whether no core is in the set.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// The cores in the set, ascending.
    pub fn cores(&self) -> Vec<usize> {
        (0..SETSIZE)
            // SAFETY: the index is below CPU_SETSIZE, the set's capacity.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &self.set) })
            .collect()
    }

    /// Restricts the calling thread to this set (no-op when it is empty).
    /// Async-signal-safe: one system call on data built beforehand, so it
    /// may run in a forked child before exec.
    pub fn pin_current_thread(&self) -> io::Result<()> {
        if self.empty {
            return Ok(());
        }
        // SAFETY: pid 0 is the calling thread; `self.set` is a valid
        // cpu_set_t and its exact size is passed; the kernel only reads it.
        cvt(unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set)
        })?;
        Ok(())
    }
}

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CpuSet").field(&self.cores()).finish()
    }
}

/// Pins the calling thread to `cores` (no-op when empty).
pub fn pin_current_thread(cores: &[usize]) -> io::Result<()> {
    CpuSet::new(cores.iter().copied()).pin_current_thread()
}

/// The cores the calling thread may run on (its affinity mask).
pub fn allowed_cores() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is writable and of the size passed.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    Ok(CpuSet { set, empty: false }.cores())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_round_trips_and_ignores_cores_past_its_size() {
        let s = CpuSet::new([3, 0, 5, 5000]);
        assert_eq!(s.cores(), vec![0, 3, 5]);
        assert!(!s.is_empty());
        assert!(CpuSet::new([SETSIZE]).is_empty());
        assert_eq!(format!("{s:?}"), "CpuSet([0, 3, 5])");
    }

    #[test]
    fn pinning_to_the_allowed_cores_keeps_them() {
        let before = allowed_cores().unwrap();
        assert!(!before.is_empty());
        let t = std::thread::spawn(move || {
            pin_current_thread(&before[..1]).unwrap();
            let now = allowed_cores().unwrap();
            pin_current_thread(&[]).unwrap();
            (before[0], now)
        });
        let (first, now) = t.join().unwrap();
        assert_eq!(now, vec![first]);
    }
}
