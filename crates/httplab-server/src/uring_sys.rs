//! The io_uring ring of one event worker (`--io uring`): the `io-uring`
//! crate's ring plus the memory the kernel writes into (a provided-buffer
//! ring for receives, the peer addresses of accepts). Every `unsafe` of the
//! io_uring engine lives here, each with its reason.
//!
//! Receives never point the kernel at a session's buffer: they use buffer
//! selection from the ring's own provided buffers, and the driver copies the
//! bytes into the session (a request is small; this keeps idle connections
//! free of buffers, as with epoll). Sends point at a session's output
//! buffer, so [`Ring::send`] is `unsafe`: the caller keeps those bytes in
//! place until the completion arrives.
//!
//! The ring counts the operations the kernel still owns. When it is dropped
//! with some still in flight (a shutdown that could not wait them out), the
//! memory they may write into is leaked instead of freed.

use std::alloc::Layout;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::types::{BufRingEntry, CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};

/// Buffer group id of the receive buffers.
const BGID: u16 = 0;
/// User data of operations whose success posts no completion (closes,
/// cancels): a failure's completion is not counted as in flight either.
const UNCOUNTED: u64 = u64::MAX;
/// How long a wait that also expects the completions of this turn's sends
/// holds out for one more event before it returns with what is there
/// (the bound on the delay when a send did not complete at once).
const MIN_WAIT_US: u32 = 200;

/// Whether io_uring can be used here: not disabled by
/// `/proc/sys/kernel/io_uring_disabled`, and `io_uring_setup` works (it
/// fails with ENOSYS on old kernels and EPERM under some sandboxes).
pub fn available() -> bool {
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        if s.trim() != "0" {
            return false;
        }
    }
    // On a short-lived thread: io_uring work left behind by a ring can
    // interrupt a later blocking call of the thread that made it (EINTR on a
    // read with a timeout was seen), so the caller's thread makes none.
    std::thread::spawn(|| IoUring::new(2).is_ok())
        .join()
        .unwrap_or(false)
}

/// One completion: (user data, result, flags).
pub type Cqe = (u64, i32, u32);

/// A worker's ring, its receive buffers and its accept address slots.
pub struct Ring {
    ring: IoUring,
    /// Page-aligned `BufRingEntry` array shared with the kernel.
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    nbufs: u16,
    buf_size: usize,
    /// The receive buffers, `nbufs * buf_size` bytes; never resized.
    bufs: Box<[u8]>,
    /// Our copy of the buffer ring's tail (published with a release store).
    tail: u16,
    registered: bool,
    /// Peer addresses written by in-flight accepts, one per accept slot.
    addrs: Box<[(libc::sockaddr_storage, libc::socklen_t)]>,
    /// Operations submitted whose last completion has not been seen.
    in_flight: usize,
    /// Created disabled (single issuer): [`Ring::enable`] must run first.
    disabled: bool,
    /// Sends pushed since the last wait.
    sends: u32,
    /// The kernel takes a minimum wait (6.12): see `submit_and_wait`.
    min_timeout: bool,
}

// SAFETY: the raw pointer is the ring's own allocation, used only through
// `&mut self`; the ring moves to its worker thread once, before any use.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring with `sq` submission entries, `nbufs` receive buffers of
    /// `buf_size` bytes (`nbufs` a power of two) and `accepts` accept
    /// slots. `single_issuer`: the ring is enabled later by
    /// [`Ring::enable`] on the thread that uses it (which lets the kernel
    /// defer completion work to that thread's waits).
    pub fn new(sq: u32, nbufs: u16, buf_size: usize, accepts: usize) -> io::Result<Ring> {
        // Deferred task work (completions run only when the worker waits)
        // needs a single issuer, so the ring starts disabled and is enabled
        // on the worker's thread; kernels before 6.1 get a plain ring.
        let (ring, disabled) = match IoUring::builder()
            .setup_cqsize(sq * 4)
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_r_disabled()
            .build(sq)
        {
            Ok(r) => (r, true),
            Err(_) => (IoUring::builder().setup_cqsize(sq * 4).build(sq)?, false),
        };
        assert!(nbufs.is_power_of_two());
        let entries_layout = Layout::from_size_align(
            usize::from(nbufs) * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size (nbufs >= 1). Zeroed memory
        // is a valid (empty) buffer ring: the kernel reads the tail at
        // offset 14 of the first entry, which is 0.
        let entries = unsafe { std::alloc::alloc_zeroed(entries_layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut r = Ring {
            ring,
            entries,
            entries_layout,
            nbufs,
            buf_size,
            bufs: vec![0u8; usize::from(nbufs) * buf_size].into_boxed_slice(),
            tail: 0,
            registered: false,
            // SAFETY: sockaddr_storage is plain data; all-zero is valid.
            addrs: (0..accepts)
                .map(|_| (unsafe { std::mem::zeroed() }, 0))
                .collect(),
            in_flight: 0,
            disabled,
            sends: 0,
            min_timeout: false,
        };
        r.min_timeout = r.ring.params().is_feature_min_timeout();
        // SAFETY: `entries` points at `nbufs` entries, page aligned, and
        // stays allocated until after the ring is dropped (see Drop: it is
        // unregistered first, or leaked).
        unsafe {
            r.ring
                .submitter()
                .register_buf_ring_with_flags(r.entries as u64, nbufs, BGID, 0)?;
        }
        r.registered = true;
        for bid in 0..nbufs {
            r.put_buffer(bid);
        }
        r.publish();
        Ok(r)
    }

    /// Enables the ring on the calling thread (the only one that may
    /// submit to it from now on).
    pub fn enable(&mut self) -> io::Result<()> {
        if self.disabled {
            self.ring.submitter().register_enable_rings()?;
            self.disabled = false;
        }
        Ok(())
    }

    fn put_buffer(&mut self, bid: u16) {
        let idx = usize::from(self.tail & (self.nbufs - 1));
        let addr = self.bufs[usize::from(bid) * self.buf_size..].as_ptr() as u64;
        // SAFETY: idx < nbufs, so the entry lies inside the allocation; the
        // kernel only reads entries between its head and our published
        // tail, and this one is past the tail until `publish`.
        let e = unsafe { &mut *self.entries.add(idx) };
        e.set_addr(addr);
        e.set_len(self.buf_size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field lives in the first entry of our allocation
        // (BufRingEntry::tail computes its address); it is a u16 the kernel
        // reads concurrently, hence the atomic release store, which also
        // orders the entry writes before it.
        unsafe {
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// The bytes a receive completion put into buffer `bid`.
    pub fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let start = usize::from(bid.min(self.nbufs - 1)) * self.buf_size;
        &self.bufs[start..start + len.min(self.buf_size)]
    }

    /// Gives buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        if bid < self.nbufs {
            self.put_buffer(bid);
            self.publish();
        }
    }

    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        let counted = e.get_user_data() != UNCOUNTED;
        loop {
            // SAFETY: every entry built by this module points only at
            // memory owned by the ring (buffers, accept slots) or, for
            // `send`, memory the caller promised to keep in place.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                if counted {
                    self.in_flight += 1;
                }
                return Ok(());
            }
            // The submission queue is full: hand it to the kernel now.
            self.ring.submit()?;
        }
    }

    /// Accepts one connection on `listener` into accept slot `slot`
    /// (non-blocking, close-on-exec).
    pub fn accept(&mut self, listener: RawFd, slot: usize, ud: u64) -> io::Result<()> {
        let (addr, len) = &mut self.addrs[slot];
        *len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let e = opcode::Accept::new(
            Fd(listener),
            (addr as *mut libc::sockaddr_storage).cast(),
            len,
        )
        .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        .build()
        .user_data(ud);
        self.push(e)
    }

    /// The peer address an accept completion wrote into slot `slot`.
    pub fn peer(&self, slot: usize) -> Option<IpAddr> {
        let (ss, _) = self.addrs.get(slot)?;
        match i32::from(ss.ss_family) {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in,
                // which is smaller than and alignment-compatible with
                // sockaddr_storage.
                let a =
                    unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))))
            }
            libc::AF_INET6 => {
                // SAFETY: as above, for sockaddr_in6.
                let a =
                    unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
                Some(IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }

    /// Receives from `fd` until cancelled, the peer's end of input, an
    /// error or no free buffer (a completion without the "more" flag): one
    /// multishot receive per connection, each completion in a buffer the
    /// kernel picks from the ring.
    pub fn recv_multi(&mut self, fd: RawFd, ud: u64) -> io::Result<()> {
        let e = opcode::RecvMulti::new(Fd(fd), BGID).build().user_data(ud);
        self.push(e)
    }

    /// Cancels the operation submitted with user data `target` (no
    /// completion of its own on success).
    pub fn cancel(&mut self, target: u64) -> io::Result<()> {
        let e = opcode::AsyncCancel::new(target)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(UNCOUNTED);
        self.push(e)
    }

    /// Sends `len` bytes at `ptr` on `fd` (MSG_NOSIGNAL).
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid and unmodified until this operation's
    /// completion has been reaped (or, if the ring is dropped first, forever).
    pub unsafe fn send(
        &mut self,
        fd: RawFd,
        ptr: *const u8,
        len: usize,
        ud: u64,
    ) -> io::Result<()> {
        let e = opcode::Send::new(Fd(fd), ptr, len.min(u32::MAX as usize) as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(ud);
        self.push(e)?;
        self.sends += 1;
        Ok(())
    }

    /// One-shot readiness poll of `fd` for `events` (POLLIN, POLLOUT).
    pub fn poll(&mut self, fd: RawFd, events: i16, ud: u64) -> io::Result<()> {
        let e = opcode::PollAdd::new(Fd(fd), events as u32)
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Cancels every operation in flight on `fd` (no completion of its own
    /// on success).
    pub fn cancel_fd(&mut self, fd: RawFd) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(fd)).all())
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(UNCOUNTED);
        self.push(e)
    }

    /// Cancels every operation in flight.
    pub fn cancel_all(&mut self, ud: u64) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Closes `fd` (no operation of ours may still use it; no completion
    /// on success).
    pub fn close(&mut self, fd: RawFd) -> io::Result<()> {
        let e = opcode::Close::new(Fd(fd))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(UNCOUNTED);
        self.push(e)
    }

    /// Submits everything queued and waits until a completion arrives or
    /// `timeout` passes: one `io_uring_enter`.
    ///
    /// A send to a socket with room completes during the submission, and
    /// its completion alone would end the wait: the turn would take a
    /// second `io_uring_enter` only to wait for the next request. So when
    /// the kernel has a minimum wait (6.12), the call waits for one event
    /// more than the sends it submits, for at most `MIN_WAIT_US`, then for
    /// any one (a send that could not complete at once delays the next
    /// turn by at most that).
    pub fn submit_and_wait(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let sends = std::mem::take(&mut self.sends);
        let (want, args) = if self.min_timeout && sends > 0 && !timeout.is_zero() {
            (
                sends as usize + 1,
                SubmitArgs::new().timespec(&ts).min_wait_usec(MIN_WAIT_US),
            )
        } else {
            (1, SubmitArgs::new().timespec(&ts))
        };
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Moves every available completion into `out`.
    pub fn reap(&mut self, out: &mut Vec<Cqe>) {
        let mut done = 0;
        for c in self.ring.completion() {
            if c.user_data() == UNCOUNTED {
                // A close or cancel that failed (the operation it meant to
                // cancel had already ended): nothing to do.
                continue;
            }
            if !cqueue::more(c.flags()) {
                done += 1;
            }
            out.push((c.user_data(), c.result(), c.flags()));
        }
        self.in_flight = self.in_flight.saturating_sub(done);
    }

    /// Operations whose final completion has not been reaped.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

/// Whether more completions of the same (multishot) operation follow.
pub fn more(flags: u32) -> bool {
    cqueue::more(flags)
}

/// The provided buffer a receive completion used.
pub fn selected_buffer(flags: u32) -> Option<u16> {
    cqueue::buffer_select(flags)
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.in_flight > 0 {
            // The kernel may still write into the receive buffers or accept
            // slots after the ring is closed: leak them rather than free
            // memory it can reach.
            std::mem::forget(std::mem::take(&mut self.bufs));
            std::mem::forget(std::mem::take(&mut self.addrs));
            return;
        }
        if self.registered {
            let _ = self.ring.submitter().unregister_buf_ring(BGID);
        }
        // SAFETY: allocated in `new` with this layout; the kernel no longer
        // references it (unregistered, nothing in flight).
        unsafe { std::alloc::dealloc(self.entries.cast(), self.entries_layout) };
    }
}

/// `shutdown(fd, SHUT_WR)`: the lingering close's half-close.
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: plain system call on a descriptor we own; errors are ignored
    // (the connection is closing anyway).
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// Whether TCP_NODELAY is set on `fd`.
pub fn nodelay(fd: RawFd) -> bool {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    r == 0 && v != 0
}

/// Closes `fd` synchronously (shutdown paths, when no operation of the
/// ring uses it).
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and never uses it again.
    unsafe { libc::close(fd) };
}
