//! Signals: SIGINT/SIGTERM taken synchronously (the server), a Ctrl-C flag
//! (the load generator and the study), and signals to one thread (tests).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// While it lives, SIGINT sets a caller's flag (see [`stop_on_sigint`]).
#[must_use = "the flag is set only while the guard lives"]
pub struct SigintGuard {
    ids: [signal_hook::SigId; 2],
}

impl Drop for SigintGuard {
    fn drop(&mut self) {
        for id in self.ids {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Sets `flag` on SIGINT (Ctrl-C) for as long as the returned guard lives;
/// a SIGINT that finds `flag` already set ends the process with status 130
/// (the second Ctrl-C). The flag is the caller's own — a study's `stop`,
/// say — so nothing has to copy a process-wide flag into it. The handlers
/// are `signal-hook`'s, which chain to any handler installed before.
pub fn stop_on_sigint(flag: &Arc<AtomicBool>) -> io::Result<SigintGuard> {
    // The exit is registered first, so that the first SIGINT finds the flag
    // still clear and only sets it.
    let exit = signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        130,
        Arc::clone(flag),
    )?;
    let set = match signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(flag)) {
        Ok(id) => id,
        Err(e) => {
            signal_hook::low_level::unregister(exit);
            return Err(e);
        }
    };
    Ok(SigintGuard { ids: [exit, set] })
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

    #[test]
    fn sigint_sets_the_callers_flag_while_the_guard_lives() {
        let flag = Arc::new(AtomicBool::new(false));
        let guard = stop_on_sigint(&flag).unwrap();
        // A signal a thread sends itself is handled before tgkill returns.
        signal_thread(current_tid(), libc::SIGINT).unwrap();
        assert!(flag.load(Ordering::SeqCst));
        drop(guard);
    }

    fn wait_for_signal_none() -> Option<i32> {
        let t = std::thread::spawn(|| {
            block_term_signals().unwrap();
            wait_for_signal(Duration::from_millis(1))
        });
        t.join().unwrap()
    }
}
