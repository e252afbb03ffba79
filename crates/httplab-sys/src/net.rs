//! Socket calls std and mio do not expose.

use std::io;
use std::os::fd::RawFd;

use crate::{cvt, cvt_size};

/// `sendfile(2)` from `file` at `*offset` (advanced) to socket `sock`.
#[inline]
pub fn sendfile(sock: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: `off` is a valid, exclusively borrowed off_t; the kernel checks
    // the descriptors (a closed one is EBADF).
    let n = cvt_size(unsafe { libc::sendfile(sock, file, &mut off, count) })?;
    *offset = off as u64;
    Ok(n)
}

/// `send(2)` with MSG_NOSIGNAL, plus MSG_MORE when `more` (more data follows,
/// e.g. a sendfile body, so the kernel holds a partial segment back).
#[inline]
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
#[inline]
pub fn recv(sock: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid writable slice for its length.
    cvt_size(unsafe { libc::recv(sock, buf.as_mut_ptr().cast(), buf.len(), 0) })
}

/// `sendmsg(2)` of several buffers at once, with MSG_NOSIGNAL (a closed peer
/// gives EPIPE, never SIGPIPE).
#[inline]
pub fn send_vectored(sock: RawFd, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: a zeroed msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is guaranteed ABI-compatible with `struct iovec` on Unix.
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
    // SAFETY: `msg` points at valid iovecs that outlive the call and that
    // the kernel only reads.
    cvt_size(unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) })
}

/// `setsockopt(2)` of an int-valued option (SO_SNDBUF, TCP_NOTSENT_LOWAT,
/// TCP_NODELAY, ...); `value` is capped at `i32::MAX`.
pub fn set_int_opt(sock: RawFd, level: i32, name: i32, value: usize) -> io::Result<()> {
    let v: libc::c_int = value.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: `v` is a valid c_int that outlives the call; the kernel only
    // reads `size_of::<c_int>()` bytes from it.
    cvt(unsafe {
        libc::setsockopt(
            sock,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `getsockopt(2)` of an int-valued option.
pub fn get_int_opt(sock: RawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes of their sizes.
    cvt(unsafe {
        libc::getsockopt(
            sock,
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(v)
}

/// TCP_DEFER_ACCEPT on a listener: connections are queued for accept only
/// once the client has sent data (or after about `secs`).
pub fn set_defer_accept(sock: RawFd, secs: i32) -> io::Result<()> {
    set_int_opt(
        sock,
        libc::IPPROTO_TCP,
        libc::TCP_DEFER_ACCEPT,
        secs.max(0) as usize,
    )
}

/// Whether TCP_NODELAY is set on `sock` (false when it cannot be read).
pub fn nodelay(sock: RawFd) -> bool {
    get_int_opt(sock, libc::IPPROTO_TCP, libc::TCP_NODELAY).is_ok_and(|v| v != 0)
}

/// Sets IP_BIND_ADDRESS_NO_PORT so that binding a source address defers the
/// port choice to connect(), letting one source address use the whole
/// ephemeral range per destination.
pub fn set_bind_no_port(sock: RawFd) -> io::Result<()> {
    set_int_opt(sock, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)
}

/// `shutdown(sock, SHUT_WR)`: a lingering close's half-close. Errors are
/// ignored (the connection is closing anyway).
pub fn shutdown_write(sock: RawFd) {
    // SAFETY: plain system call with integer arguments.
    unsafe { libc::shutdown(sock, libc::SHUT_WR) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn send_recv_options_and_half_close() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        let fd = a.as_raw_fd();
        set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).unwrap();
        assert!(nodelay(fd));
        set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 0).unwrap();
        assert!(!nodelay(fd));
        assert_eq!(send(fd, b"ab", true).unwrap(), 2);
        let n = send_vectored(fd, &[io::IoSlice::new(b"cd"), io::IoSlice::new(b"ef")]).unwrap();
        assert_eq!(n, 4);
        shutdown_write(fd);
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abcdef");
        b.write_all(b"xy").unwrap();
        let mut buf = [0u8; 8];
        let n = recv(fd, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"xy");
        set_defer_accept(l.as_raw_fd(), 1).unwrap();
    }

    #[test]
    fn sendfile_advances_the_offset() {
        let dir = std::env::temp_dir().join(format!("httplab-sys-sf-{}", std::process::id()));
        std::fs::write(&dir, b"0123456789").unwrap();
        let f = std::fs::File::open(&dir).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        let mut off = 2;
        assert_eq!(
            sendfile(a.as_raw_fd(), f.as_raw_fd(), &mut off, 5).unwrap(),
            5
        );
        assert_eq!(off, 7);
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"23456");
        let _ = std::fs::remove_file(&dir);
    }
}
