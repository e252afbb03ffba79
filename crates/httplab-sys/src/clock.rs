//! CPU time of the calling thread and of the process, and a timerfd.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::cvt;

/// CPU seconds of the calling thread: `(total, user, system)`. `total` is
/// the kernel's precise run time of the thread (CLOCK_THREAD_CPUTIME_ID,
/// nanoseconds, the same sum as /proc/thread-self/schedstat); `user` and
/// `system` come from RUSAGE_THREAD, whose split is sampled at clock ticks,
/// so callers use them only to divide `total`.
pub fn thread_cpu() -> (f64, f64, f64) {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage struct.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let (user, sys) = if r == 0 {
        (tv(ru.ru_utime), tv(ru.ru_stime))
    } else {
        (0.0, 0.0)
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    let total = if r == 0 {
        ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
    } else {
        user + sys
    };
    (total, user, sys)
}

/// Peak RSS (bytes) and CPU time (user + system) of this process, or of its
/// reaped children when `children` is set; zero if getrusage fails.
pub fn rusage(children: bool) -> (u64, Duration) {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: `ru` is a valid writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (
        (ru.ru_maxrss as u64) * 1024,
        tv(ru.ru_utime) + tv(ru.ru_stime),
    )
}

/// A non-blocking CLOCK_MONOTONIC timerfd, used to wake an event loop with
/// microsecond precision (epoll's own timeout has millisecond granularity).
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// Creates the timer (disarmed).
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with constant flags; a non-negative result is
        // a fresh descriptor that we own.
        let fd = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just returned by timerfd_create and is owned by no one else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd })
    }

    /// Arms the timer to fire once after `after` (at least 1 ns).
    pub fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the descriptor is a live timerfd; `spec` is valid and read
        // only; a null old-value pointer is allowed.
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Clears the expiration count after the timer fired.
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is a valid writable 8-byte buffer; the fd is non-blocking.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }

    /// The timer registered (readable interest) in the current tokio
    /// runtime's reactor. Must be called inside a runtime.
    #[cfg(feature = "tokio")]
    pub fn into_async(self) -> io::Result<tokio::io::unix::AsyncFd<TimerFd>> {
        // SAFETY: the TimerFd owns its descriptor (a private OwnedFd), which
        // is neither closed nor replaced while the AsyncFd holds it: it is
        // dropped with it, and `as_raw_fd` always returns the same number.
        unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(self, tokio::io::Interest::READABLE)
        }
        .map_err(io::Error::from)
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_and_rusage_advance() {
        let (t0, ..) = thread_cpu();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (t1, u1, s1) = thread_cpu();
        assert!(t1 > t0 && u1 >= 0.0 && s1 >= 0.0);
        let (peak, cpu) = rusage(false);
        assert!(peak > 0 && cpu > Duration::ZERO);
    }

    #[test]
    fn timerfd_fires() {
        let t = TimerFd::new().unwrap();
        t.arm(Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let fd = t.as_raw_fd();
        assert_eq!(
            crate::shared::poll_readable(&[fd], Some(Duration::ZERO)).unwrap(),
            vec![true]
        );
        t.drain();
        assert_eq!(
            crate::shared::poll_readable(&[fd], Some(Duration::ZERO)).unwrap(),
            vec![false]
        );
    }
}
