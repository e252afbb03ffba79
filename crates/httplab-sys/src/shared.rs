//! Sharing with threads and forked children: counters in a shared mapping,
//! a wake pipe, and `poll` for readability.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::cvt;

/// `N` atomic counters in a shared anonymous mapping: visible to, and
/// updated by, forked children as well as threads. They start at zero.
pub struct SharedCounters<const N: usize> {
    ptr: NonNull<[AtomicU64; N]>,
}

// SAFETY: the pointee is an array of atomics (Sync) that lives until Drop;
// sharing the pointer across threads is as safe as sharing &[AtomicU64; N].
unsafe impl<const N: usize> Send for SharedCounters<N> {}
// SAFETY: as above, only shared references are ever handed out.
unsafe impl<const N: usize> Sync for SharedCounters<N> {}

impl<const N: usize> SharedCounters<N> {
    const SIZE: usize = if std::mem::size_of::<[AtomicU64; N]>() == 0 {
        1
    } else {
        std::mem::size_of::<[AtomicU64; N]>()
    };

    /// Maps a fresh shared region of `N` zeroed counters.
    pub fn new() -> io::Result<Self> {
        // SAFETY: anonymous shared mapping, no file descriptor; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // The mapping is page-aligned (enough for AtomicU64), writable, at
        // least SIZE bytes and zero-filled by the kernel: a valid array of
        // counters at zero. Atomics hold no pointers, so a forked child's
        // updates are meaningful to every process sharing the mapping.
        NonNull::new(p.cast::<[AtomicU64; N]>())
            .map(|ptr| SharedCounters { ptr })
            .ok_or_else(|| io::Error::other("mmap returned null"))
    }
}

impl<const N: usize> std::ops::Deref for SharedCounters<N> {
    type Target = [AtomicU64; N];
    fn deref(&self) -> &[AtomicU64; N] {
        // SAFETY: mapped and zero-initialised (a valid value) in `new`,
        // unmapped only in Drop.
        unsafe { self.ptr.as_ref() }
    }
}

impl<const N: usize> Drop for SharedCounters<N> {
    fn drop(&mut self) {
        // SAFETY: unmaps the region mapped in `new`; no reference outlives
        // `self` (atomics need no drop).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), Self::SIZE);
        }
    }
}

impl<const N: usize> std::fmt::Debug for SharedCounters<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A pipe used to wake threads (and child processes) blocked in `poll`.
/// Once [`WakePipe::wake`] has written a byte nobody reads it, so the read
/// end stays readable for every poller.
#[derive(Debug)]
pub struct WakePipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl WakePipe {
    /// Creates the pipe (close-on-exec, non-blocking).
    pub fn new() -> io::Result<Self> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
        // SAFETY: pipe2 succeeded, so both descriptors are open and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(WakePipe { read, write })
    }

    /// Makes the read end readable (idempotent enough: a full pipe is fine).
    pub fn wake(&self) {
        let b = [1u8];
        // SAFETY: writing one byte from a valid buffer to our own pipe.
        let _ = unsafe { libc::write(self.write.as_raw_fd(), b.as_ptr().cast(), 1) };
    }

    /// The descriptor to poll for readability.
    pub fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable (or hung up) or the timeout passes.
/// Returns, per descriptor, whether it is ready (all false on EINTR).
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = match timeout {
        None => -1,
        Some(d) => d.as_millis().clamp(0, i32::MAX as u128) as libc::c_int,
    };
    // A timeout of 0 ms for a sub-millisecond remainder would spin; round up.
    let ms = match timeout {
        Some(d) if ms == 0 && !d.is_zero() => 1,
        _ => ms,
    };
    // SAFETY: `pfds` is a valid array of pollfd of the given length.
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn counters_are_shared_with_a_forked_child() {
        let c = SharedCounters::<3>::new().unwrap();
        assert_eq!(format!("{c:?}"), "[0, 0, 0]");
        let (_, pid) = crate::process::fork_child((), || {
            c[1].fetch_add(5, Ordering::Relaxed);
            0
        });
        crate::process::wait_child(pid.unwrap());
        c[2].fetch_add(1, Ordering::Relaxed);
        assert_eq!(c[1].load(Ordering::Relaxed), 5);
        assert_eq!(c[2].load(Ordering::Relaxed), 1);
    }

    #[test]
    fn wake_pipe_wakes_pollers() {
        let w = WakePipe::new().unwrap();
        let fd = w.read_fd();
        assert_eq!(
            poll_readable(&[fd], Some(Duration::from_micros(10))).unwrap(),
            vec![false]
        );
        w.wake();
        assert_eq!(poll_readable(&[fd], None).unwrap(), vec![true]);
        assert_eq!(poll_readable(&[fd], None).unwrap(), vec![true]);
    }
}
