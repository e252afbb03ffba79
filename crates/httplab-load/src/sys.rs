//! Small wrappers around the system calls std and mio do not expose.
//! Every `unsafe` block of the crate lives here, each with its reason.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit struct.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit struct, only read.
        if cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }).is_ok() {
            return Ok(want.rlim_cur);
        }
    }
    Ok(lim.rlim_cur)
}

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
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if (c as usize) < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is below CPU_SETSIZE, the set's capacity.
            unsafe { libc::CPU_SET(c as usize, &mut set) };
        }
    }
    // SAFETY: `set` is a valid cpu_set_t and its exact size is passed; pid 0
    // is the calling thread.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// CPUs this process may run on.
pub fn affinity() -> Vec<u32> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid and writable, and the size passed is its size.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `i` is below CPU_SETSIZE, the set's capacity.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .map(|i| i as u32)
        .collect()
}

/// A non-blocking CLOCK_MONOTONIC timerfd, used to wake the event loop with
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
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
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
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sets IP_BIND_ADDRESS_NO_PORT so that binding a source address defers the
/// port choice to connect(), letting one source address use the whole
/// ephemeral range per destination.
pub fn set_bind_no_port(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a valid c_int and its exact size is passed.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_sig: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second Ctrl-C: leave at once.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Installs a SIGINT handler that sets the flag returned by [`interrupted`].
pub fn install_sigint() {
    // SAFETY: the handler only touches an atomic and calls _exit, both
    // async-signal-safe; the function pointer has the C ABI signal expects.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// The process-wide Ctrl-C flag.
pub fn interrupted() -> &'static AtomicBool {
    &INTERRUPTED
}

/// `uname -sr`.
pub fn kernel() -> String {
    // SAFETY: an all-zero utsname is a valid value of this plain C struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} {}", field(&u.sysname), field(&u.release))
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
