//! File calls std does not expose.

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, RawFd};

use crate::{cvt, cvt_size};

/// Opens `path` (relative, no NUL) under the directory `dir` with
/// `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: the kernel
/// fails with `EXDEV` instead of leaving `dir` and with `ELOOP` at any
/// symlink, in one system call, so a success opened exactly `dir/path` with
/// no link followed (the confinement that `realpath` + prefix check +
/// `open` give in a dozen calls). Read-only,
/// non-blocking (a FIFO must not stall the worker), close-on-exec.
/// `ENOSYS` on kernels before 5.6 (or when a seccomp filter hides it).
pub fn open_beneath(dir: RawFd, path: &CStr) -> io::Result<std::fs::File> {
    // SAFETY: `open_how` is three integers; all-zero is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `path` is a valid NUL-terminated string and `how` a fully
    // initialised `open_how` whose size is passed; both outlive the call.
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
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else owns, so `File` may own it.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as RawFd) })
}

/// Writes all of `buf` to file descriptor 1 with plain `write` calls
/// (no std buffering or locking).
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

/// `mkfifo(3)`: creates a named pipe at `path` with `mode`.
pub fn mkfifo(path: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    cvt(unsafe { libc::mkfifo(path.as_ptr(), mode as libc::mode_t) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    #[test]
    fn open_beneath_stays_inside_and_mkfifo_makes_a_fifo() {
        let base = std::env::temp_dir().join(format!("httplab-sys-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root")).unwrap();
        std::fs::write(base.join("root/a"), b"in").unwrap();
        std::fs::write(base.join("secret"), b"out").unwrap();
        std::os::unix::fs::symlink("a", base.join("root/link")).unwrap();
        let dir = std::fs::File::open(base.join("root")).unwrap();
        let c = |s: &str| CString::new(s).unwrap();
        match open_beneath(dir.as_raw_fd(), &c("a")) {
            Ok(mut f) => {
                let mut s = String::new();
                f.read_to_string(&mut s).unwrap();
                assert_eq!(s, "in");
                let e = open_beneath(dir.as_raw_fd(), &c("../secret")).unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EXDEV));
                let e = open_beneath(dir.as_raw_fd(), &c("link")).unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
            }
            Err(e) => assert!(matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM)
            )),
        }
        let fifo = base.join("fifo");
        mkfifo(&c(fifo.to_str().unwrap()), 0o644).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        let _ = std::fs::remove_dir_all(&base);
    }
}
