//! The system interface of httplab: every `unsafe` block of the workspace
//! lives in this crate, each with a `// SAFETY:` comment, behind small safe
//! wrappers. Every other crate is `#![forbid(unsafe_code)]`.
//!
//! - [`alloc`]: a counting global allocator (tests of allocation-free paths);
//! - [`cpu`]: CPU affinity (pin the calling thread, the allowed cores, a
//!   [`cpu::CpuSet`] built before a fork and applied in the child);
//! - [`limits`]: raising RLIMIT_NOFILE;
//! - [`host`]: sysconf values (clock ticks, page size), the kernel's name
//!   and the total memory;
//! - [`clock`]: CPU time of the thread and process, a timerfd;
//! - [`net`]: socket calls std does not expose (sendfile, send with flags,
//!   sendmsg, socket options, half-close);
//! - [`file`]: `openat2` confinement, raw writes to standard output, FIFOs;
//! - [`process`]: fork, wait, signals to processes, pidfds, and the
//!   pre-exec set-up of a server child (die with the parent, join cgroups,
//!   pin to cores);
//! - [`signal`]: blocking and waiting for SIGINT/SIGTERM, a Ctrl-C flag;
//! - [`shared`]: counters in a shared mapping (seen by forked children), a
//!   wake pipe and `poll`;
//! - [`uring`]: the io_uring pieces of both engines (server and load
//!   generator): ring set-up, the one availability probe, the user-data
//!   encoding, in-flight accounting, and ownership of all memory the kernel
//!   reads or writes while an operation is in flight.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod alloc;
pub mod clock;
pub mod cpu;
pub mod file;
pub mod host;
pub mod limits;
pub mod net;
pub mod process;
pub mod shared;
pub mod signal;
pub mod uring;

use std::io;

/// `Err(last OS error)` for a negative return value.
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `Err(last OS error)` for a negative byte count.
pub(crate) fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
