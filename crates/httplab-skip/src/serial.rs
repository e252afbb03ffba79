//! Turns on the machine for the tests of one test binary that start servers
//! and load them.
//!
//! A crate's integration tests are one binary (`tests/it/main.rs`, one module
//! per former file), and the harness runs its tests on several threads at
//! once. Tests that start servers and measure them must not share the cores
//! with another module's servers and load: what lands on one server's window
//! and not on the other's is what fools a comparison. Every such test takes a
//! turn from this one lock for as long as it runs:
//!
//! - [`alone`]: no other turn is held meanwhile (a measuring test, or one that
//!   changes something every other test would see, such as packet loss on
//!   loopback);
//! - [`shared`]: tests of the same group (by convention the module's name)
//!   run side by side, as they did when the module was its own binary, but
//!   never beside another group's turn or an `alone` one.
//!
//! A turn ends when its [`Turn`] is dropped, also when the test panics.
//! Tests that start nothing (parsers, source scans) take no turn.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Who holds the machine: a group (None: an `alone` turn) and how many turns.
struct Holders {
    group: Option<&'static str>,
    count: usize,
}

static HOLDERS: Mutex<Holders> = Mutex::new(Holders {
    group: None,
    count: 0,
});
static RELEASED: Condvar = Condvar::new();

fn holders() -> MutexGuard<'static, Holders> {
    HOLDERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A turn on the machine; dropping it ends the turn.
#[must_use = "the turn ends when this is dropped"]
pub struct Turn(());

impl Drop for Turn {
    fn drop(&mut self) {
        let mut h = holders();
        h.count = h.count.saturating_sub(1);
        if h.count == 0 {
            h.group = None;
        }
        drop(h);
        RELEASED.notify_all();
    }
}

/// Waits until no other turn is held, then holds the machine alone.
pub fn alone() -> Turn {
    take(None)
}

/// Waits until no turn or only turns of `group` are held, then holds one
/// beside them.
pub fn shared(group: &'static str) -> Turn {
    take(Some(group))
}

fn take(group: Option<&'static str>) -> Turn {
    let mut h = holders();
    while !(h.count == 0 || (group.is_some() && h.group == group)) {
        h = RELEASED.wait(h).unwrap_or_else(PoisonError::into_inner);
    }
    h.group = group;
    h.count += 1;
    Turn(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    /// The lock is process-wide: these checks run as one test.
    #[test]
    fn groups_share_and_alone_excludes() {
        // Two turns of one group are held at once.
        let a = shared("x");
        let b = shared("x");
        // Another group and an `alone` turn wait until both end.
        let entered = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            let (tx, rx) = mpsc::channel();
            let entered = &entered;
            sc.spawn(move || {
                let _y = shared("y");
                entered.fetch_add(1, Ordering::SeqCst);
                tx.send(()).ok();
            });
            drop(a);
            assert_eq!(entered.load(Ordering::SeqCst), 0, "group x still holds");
            drop(b);
            rx.recv().expect("group y got its turn once x ended");
        });
        assert_eq!(entered.load(Ordering::SeqCst), 1);
        let one = alone();
        drop(one);
        let _again = alone();
    }
}
