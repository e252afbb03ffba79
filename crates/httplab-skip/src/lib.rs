//! Skipping tests that cannot run on this machine (a peer server or tool
//! missing, not root, no io_uring), visibly, and the workspace's one reading
//! of the `CI` variable.
//!
//! The rule every test suite follows: a test that cannot run here says so
//! with a `SKIPPED: <reason>` line and returns; under CI (`CI` set to `1`,
//! `true` or `yes`, in any case) a missing prerequisite fails the test
//! instead, because CI installs everything.
//!
//! The line is written straight to the process's standard error, not through
//! `eprintln!`, which the test harness captures and shows only for failing
//! tests: so `cargo test` prints it next to the test's `ok`, and
//! `cargo test 2>&1 | grep SKIPPED` lists every skip of a run. Each line
//! carries the count of skips so far in that test binary.
//!
//! [`serial`] holds the one lock by which a test binary's tests that start
//! servers and load them take turns on the machine; [`chromium`] finds and
//! runs headless Chromium, bounded in time, for the tests that open a page.

#![forbid(unsafe_code)]

pub mod chromium;
pub mod serial;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether `value` (of the `CI` variable) switches CI mode on: `1`, `true`
/// or `yes`, in any case, surrounding blanks ignored.
pub fn ci_value(value: &str) -> bool {
    let v = value.trim();
    v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes")
}

/// Whether the tests run under CI: then every prerequisite must be there.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| ci_value(&v))
}

/// Skips (part of) a test that cannot run here: prints `SKIPPED: <reason>`
/// where the test summary shows it and counts it. Under CI it panics
/// instead (the caller's prerequisite must exist there). The caller returns
/// after it.
pub fn skip(reason: &str) {
    if under_ci() {
        panic!("cannot run under CI: {reason}");
    }
    skipped(reason);
}

/// Like [`skip`], but never fails, also under CI: for what CI cannot be
/// expected to provide either (e.g. a kernel feature the host lacks).
pub fn skipped(reason: &str) {
    let n = SKIPPED.fetch_add(1, Ordering::Relaxed) + 1;
    let line = format!("SKIPPED: {reason} (skip {n} of this test binary)\n");
    // Straight to the descriptor: bypasses the harness's output capture.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Skips counted so far in this process.
pub fn skip_count() -> usize {
    SKIPPED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_values_mean_the_same() {
        for v in ["1", "true", "TRUE", "True", "yes", "Yes", " true\n"] {
            assert!(ci_value(v), "{v:?}");
        }
        for v in ["", "0", "false", "no", "off", "truthy"] {
            assert!(!ci_value(v), "{v:?}");
        }
    }

    #[test]
    fn skipped_is_counted() {
        let before = skip_count();
        skipped("a test of the skip counter itself");
        assert!(skip_count() > before);
    }
}
