//! Processes: fork, wait, signals to processes, pidfds, and the set-up of a
//! server's child process between fork and exec.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::cpu::CpuSet;
use crate::cvt;

/// A process id.
pub type Pid = libc::pid_t;

/// Forks. The child first drops `keep_out` (what the child must not hold,
/// e.g. the parent's listener), then runs `child` and leaves the process
/// with its exit code (1 if it panicked) at once: no atexit handlers, and
/// it never returns into the caller's frames. In the parent, returns
/// `keep_out` with the child's pid (or why fork failed).
///
/// The child is a copy of the whole process with only the calling thread:
/// `child` must not wait for a lock another thread of the parent may have
/// held at the fork.
pub fn fork_child<K>(keep_out: K, child: impl FnOnce() -> i32) -> (K, io::Result<Pid>) {
    // SAFETY: fork has no memory-safety preconditions of its own. In the
    // child this function never returns: it runs `child` (with unwinding
    // stopped here) and leaves with `_exit`, so no frame of the caller runs
    // twice and no destructor of the parent's objects runs in the child
    // except `keep_out`'s, which the child owns.
    match cvt(unsafe { libc::fork() }) {
        Err(e) => (keep_out, Err(e)),
        Ok(0) => {
            drop(keep_out);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
            exit_now(r.unwrap_or(1))
        }
        Ok(pid) => (keep_out, Ok(pid)),
    }
}

/// Leaves the process immediately (no atexit handlers, no unwinding).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Non-blocking `waitpid` on one child: true once it has been reaped (or
/// is not a child of ours any more).
pub fn reap(pid: Pid) -> bool {
    let mut status = 0;
    // SAFETY: `status` is a valid writable int.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    // r == pid: reaped; r < 0 (ECHILD): already gone; 0: still running.
    r != 0
}

/// Blocking `waitpid` on one child (retried on EINTR).
pub fn wait_child(pid: Pid) {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Sends `sig` to process `pid` (a positive pid: never a group, never
/// every process).
pub fn signal(pid: Pid, sig: i32) -> io::Result<()> {
    if pid <= 0 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: plain system call with integer arguments.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

/// Sends `sig` to every process of process group `pgid` (ESRCH when the
/// group is gone; never our own group by accident: `pgid` must be > 1).
pub fn signal_group(pgid: Pid, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: plain system call with integer arguments.
    cvt(unsafe { libc::kill(-pgid, sig) })?;
    Ok(())
}

/// `pidfd_open(2)`: a descriptor that becomes readable when the child exits.
pub fn pidfd_open(pid: Pid) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a fresh descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sets up what `cmd`'s child does between fork and exec, for a server a
/// study starts: it dies with its parent (PR_SET_PDEATHSIG, SIGKILL: no
/// orphans if the study process dies), joins the cgroups whose
/// `cgroup.procs` files are listed (best effort: a file that cannot be
/// opened is skipped), so that every process it will ever start is counted
/// and limited there, and pins itself to `cpus` (unless empty; a failure
/// fails the spawn). The child allocates nothing: all of this is built here,
/// before the fork.
pub fn set_server_child_setup(cmd: &mut Command, cgroup_procs: Vec<CString>, cpus: CpuSet) {
    let child = move || -> io::Result<()> {
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
        if !cgroup_procs.is_empty() {
            // The pid in decimal, in a stack buffer.
            let mut buf = [0u8; 24];
            let mut i = buf.len();
            // SAFETY: getpid has no preconditions.
            let mut pid = unsafe { libc::getpid() } as u64;
            loop {
                i -= 1;
                buf[i] = b'0' + (pid % 10) as u8;
                pid /= 10;
                if pid == 0 || i == 0 {
                    break;
                }
            }
            let digits = &buf[i..];
            for path in &cgroup_procs {
                // SAFETY: `path` is a NUL-terminated string built before the fork.
                let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
                if fd >= 0 {
                    // SAFETY: `digits` is a valid readable buffer; `fd` was
                    // just opened here and is closed right after.
                    unsafe {
                        libc::write(fd, digits.as_ptr().cast(), digits.len());
                        libc::close(fd);
                    }
                }
            }
        }
        cpus.pin_current_thread()
    };
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe system calls (prctl, getpid, open, write,
    // close, sched_setaffinity) on data built before the fork; it formats
    // the pid into a stack buffer and allocates nothing (an OS error is an
    // `io::Error` without allocation).
    unsafe {
        cmd.pre_exec(child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn fork_child_runs_the_closure_and_exits_with_its_code() {
        let keep = String::from("parent keeps this");
        let (keep, pid) = fork_child(keep, || 7);
        assert_eq!(keep, "parent keeps this");
        let pid = pid.unwrap();
        let fd = pidfd_open(pid).unwrap();
        drop(fd);
        let until = Instant::now() + Duration::from_secs(10);
        while !reap(pid) {
            assert!(Instant::now() < until, "child did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn child_setup_pins_and_joins_nothing_when_asked_nothing() {
        let mut cmd = Command::new("true");
        set_server_child_setup(&mut cmd, Vec::new(), CpuSet::new([]));
        assert!(cmd.status().unwrap().success());
        let cores = crate::cpu::allowed_cores().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        set_server_child_setup(&mut cmd, Vec::new(), CpuSet::new([cores[0]]));
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().nth(1),
            Some(cores[0].to_string().as_str())
        );
    }

    #[test]
    fn signals_to_a_child_process_group() {
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        signal_group(child.id() as Pid, libc::SIGKILL).unwrap();
        let st = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGKILL));
        let _ = is_root();
    }
}
