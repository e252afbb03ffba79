//! Small wrappers around the few system calls std does not expose.
//! Every `unsafe` block of the crate lives here, each with its reason.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `sendfile(2)` from `file` at `*offset` (advanced) to socket `sock`.
pub fn sendfile(sock: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: both descriptors are open for the duration of the call (the
    // callers hold them), and `off` is a valid, exclusively borrowed off_t.
    let n = cvt_size(unsafe { libc::sendfile(sock, file, &mut off, count) })?;
    *offset = off as u64;
    Ok(n)
}

/// `send(2)` with MSG_NOSIGNAL, plus MSG_MORE when `more` (more data follows,
/// e.g. a sendfile body, so the kernel holds a partial segment back).
pub fn send(sock: RawFd, buf: &[u8], more: bool) -> io::Result<usize> {
    let flags = if more {
        libc::MSG_MORE | libc::MSG_NOSIGNAL
    } else {
        libc::MSG_NOSIGNAL
    };
    // SAFETY: `buf` is a valid readable slice for its length.
    cvt_size(unsafe { libc::send(sock, buf.as_ptr().cast(), buf.len(), flags) })
}

/// `recv(2)` into `buf`.
pub fn recv(sock: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid writable slice for its length.
    cvt_size(unsafe { libc::recv(sock, buf.as_mut_ptr().cast(), buf.len(), 0) })
}

/// `sendmsg(2)` of several buffers at once, with MSG_NOSIGNAL (a closed peer
/// gives EPIPE, never SIGPIPE).
pub fn send_vectored(sock: RawFd, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: `IoSlice` is guaranteed ABI-compatible with `struct iovec` on
    // Unix; the slices outlive the call and are only read. A zeroed msghdr
    // is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
    // SAFETY: `msg` points at valid iovecs for the duration of the call.
    cvt_size(unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) })
}

/// `setsockopt(2)` of an int-valued option (SO_SNDBUF, TCP_NOTSENT_LOWAT).
pub fn set_int_opt(sock: RawFd, level: i32, name: i32, value: usize) -> io::Result<()> {
    let v: libc::c_int = value.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: `v` is a valid c_int that outlives the call; the kernel only
    // reads `size_of::<c_int>()` bytes from it.
    let r = unsafe {
        libc::setsockopt(
            sock,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// TCP_DEFER_ACCEPT on a listener: connections are queued for accept only
/// once the client has sent data (or after about `secs`).
pub fn set_defer_accept(sock: RawFd, secs: i32) -> io::Result<()> {
    // SAFETY: `secs` is a valid int of the size passed.
    cvt(unsafe {
        libc::setsockopt(
            sock,
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&secs as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Writes all of `buf` to file descriptor 1 with plain `write` calls.
pub fn write_all_stdout(mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a valid readable slice; fd 1 may be closed, in
        // which case write fails with EBADF and we return the error.
        match cvt_size(unsafe { libc::write(1, buf.as_ptr().cast(), buf.len()) }) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Raises RLIMIT_NOFILE as far as allowed: to `fs.nr_open` (capped at
/// 2^20) when privileged, else the soft limit to the hard limit. Returns the
/// new soft limit.
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
        // SAFETY: `want` is a valid rlimit struct, read only.
        if cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }).is_ok() {
            return Ok(want.rlim_cur);
        }
    }
    Ok(lim.rlim_cur)
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
    /// Creates the pipe (close-on-exec).
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
/// Returns, per descriptor, whether it is ready.
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

/// Outcome of [`fork`].
pub enum Forked {
    /// In the parent; the child's pid.
    Parent(libc::pid_t),
    /// In the child.
    Child,
}

/// `fork(2)`.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: fork has no memory-safety preconditions; the child only runs
    // the connection code and then leaves with `exit_now`, never returning
    // into the caller's threads.
    let pid = cvt(unsafe { libc::fork() })?;
    Ok(if pid == 0 {
        Forked::Child
    } else {
        Forked::Parent(pid)
    })
}

/// Leaves the process immediately (no atexit handlers, no unwinding): what a
/// forked child must do.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Non-blocking `waitpid` on one child: true once it has been reaped.
pub fn reap(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: `status` is a valid writable int.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    // r == pid: reaped; r < 0 (ECHILD): already gone; 0: still running.
    r != 0
}

/// Blocking `waitpid` on one child.
pub fn wait_child(pid: libc::pid_t) {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Sends SIGKILL to a child.
pub fn kill_child(pid: libc::pid_t) {
    // SAFETY: signalling a pid we forked and have not reaped yet.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// `pidfd_open(2)`: a descriptor that becomes readable when the child exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a fresh descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
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
    pages * page_size()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Peak RSS (bytes) and CPU time (user + system) of this process, or of its
/// reaped children when `children` is set.
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

/// Blocks SIGINT and SIGTERM in the calling thread (threads spawned later
/// inherit the mask), so that [`wait_for_signal`] can take them.
pub fn block_term_signals() -> io::Result<()> {
    let set = term_set();
    // SAFETY: `set` is an initialised sigset_t; old set not requested.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Waits for SIGINT or SIGTERM (blocked with [`block_term_signals`]) or
/// until `timeout`; returns the signal number, if any.
pub fn wait_for_signal(timeout: Duration) -> Option<i32> {
    let set = term_set();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `set` and `ts` are valid; siginfo pointer may be null.
    let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    if r > 0 {
        Some(r)
    } else {
        None
    }
}

fn term_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    set
}

/// A value in a shared anonymous mapping: visible to, and updated by,
/// forked children as well as threads. Only for types made of atomics.
pub struct Shared<T: Default + Sync> {
    ptr: std::ptr::NonNull<T>,
}

// SAFETY: the pointee is Sync (atomics) and lives until Drop; sharing the
// pointer across threads is as safe as sharing &T.
unsafe impl<T: Default + Sync> Send for Shared<T> {}
// SAFETY: as above, only &T is ever handed out.
unsafe impl<T: Default + Sync> Sync for Shared<T> {}

impl<T: Default + Sync> Shared<T> {
    /// Maps a fresh shared region holding `T::default()`.
    pub fn new() -> io::Result<Self> {
        let size = std::mem::size_of::<T>().max(1);
        // SAFETY: anonymous shared mapping, no file descriptor; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = p.cast::<T>();
        // SAFETY: the mapping is page-aligned (enough for any T), writable and
        // at least size_of::<T>() bytes; we initialise it before any read.
        unsafe { ptr.write(T::default()) };
        std::ptr::NonNull::new(ptr)
            .map(|ptr| Shared { ptr })
            .ok_or_else(|| io::Error::other("mmap returned null"))
    }
}

impl<T: Default + Sync> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialised in `new`, unmapped only in Drop.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Default + Sync> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: drops the value written in `new`, then unmaps the region we
        // mapped; no references outlive `self`.
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr());
            libc::munmap(self.ptr.as_ptr().cast(), std::mem::size_of::<T>().max(1));
        }
    }
}

impl<T: Default + Sync + std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Kernel id of the calling thread (tests).
#[cfg(test)]
pub fn current_tid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Sends `sig` to one thread of this process (tests).
#[cfg(test)]
pub fn signal_thread(tid: libc::pid_t, sig: i32) {
    // SAFETY: plain syscall with integer arguments, aimed at our own process.
    unsafe {
        libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig);
    }
}

/// Opens `path` (relative, no NUL) under the directory `dir` with
/// `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: the kernel
/// fails with `EXDEV` instead of leaving `dir` and with `ELOOP` at any
/// symlink, in one system call, so a success opened exactly `dir/path` with
/// no link followed (the confinement that `realpath` + prefix check +
/// `open` give in a dozen calls). Read-only,
/// non-blocking (a FIFO must not stall the worker), close-on-exec.
/// `ENOSYS` on kernels before 5.6 (or when a seccomp filter hides it).
pub fn open_beneath(dir: RawFd, path: &std::ffi::CStr) -> io::Result<std::fs::File> {
    // SAFETY: `open_how` is three integers; all-zero is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `path` is a valid NUL-terminated string and `how` a fully
    // initialised `open_how` whose size is passed; on success the kernel
    // returns a new descriptor that nothing else owns, so `File` may own it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: see above: a fresh descriptor owned by nobody else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as RawFd) })
}
