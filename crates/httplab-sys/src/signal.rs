//! Signals: SIGINT/SIGTERM taken synchronously (the server), a Ctrl-C flag
//! (the load generator and the study), and signals to one thread (tests).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    // SAFETY: `set` and `ts` are valid; the siginfo pointer may be null.
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
    // SAFETY: `set` is a valid sigset_t and the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    set
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_sig: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second Ctrl-C: leave at once.
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(130) };
    }
}

/// Installs a SIGINT handler that sets the flag returned by [`interrupted`]
/// (a second SIGINT ends the process with status 130).
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

/// Kernel id of the calling thread.
pub fn current_tid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Sends `sig` to one thread of this process (ESRCH if it is gone).
pub fn signal_thread(tid: libc::pid_t, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments, aimed at our own process.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_sigterm_is_taken_by_wait_for_signal() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            block_term_signals().unwrap();
            tx.send(current_tid()).unwrap();
            wait_for_signal(Duration::from_secs(10))
        });
        let tid = rx.recv().unwrap();
        signal_thread(tid, libc::SIGTERM).unwrap();
        assert_eq!(t.join().unwrap(), Some(libc::SIGTERM));
        assert_eq!(wait_for_signal_none(), None);
    }

    fn wait_for_signal_none() -> Option<i32> {
        let t = std::thread::spawn(|| {
            block_term_signals().unwrap();
            wait_for_signal(Duration::from_millis(1))
        });
        t.join().unwrap()
    }
}
