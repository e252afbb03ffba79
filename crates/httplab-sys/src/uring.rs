//! io_uring for both I/O engines (`httplab serve --io uring` and `httplab
//! load --io uring`): the `io-uring` crate's ring plus everything that must
//! be right once for both.
//!
//! - [`probe`]: the one availability check (disabled by
//!   `kernel.io_uring_disabled`, `io_uring_setup` failing, or a kernel
//!   without EXT_ARG/NODROP, i.e. before 5.11);
//! - [`Setup`] / [`Ring::new`]: ring set-up (single issuer and deferred
//!   task work where the kernel has them, optionally created disabled and
//!   enabled later on the thread that uses it);
//! - [`user_data`] / [`split`]: the user-data encoding (operation, slot,
//!   generation), so a late completion never reaches a reused slot;
//! - in-flight accounting ([`Ring::in_flight`]): operations whose final
//!   completion has not been reaped (multishot operations count once);
//! - ownership of every byte the kernel reads or writes while an operation
//!   is in flight. Operations that point at memory take it from the caller
//!   ([`Ring::send`] takes a `Vec`, [`Ring::recv`] a boxed buffer) or use the
//!   ring's own ([`Ring::accept`]'s address slots, [`Ring::recv_multi`]'s
//!   provided buffers), and the memory comes back with the operation's final
//!   completion ([`Completion::lent`]). Dropped with operations still in
//!   flight, the ring leaks that memory instead of freeing what the kernel
//!   may still reach.
//!
//! So every operation here is safe to call: the engines above (their
//! connection tables, what to submit when) are safe code.

use std::alloc::Layout;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::types::{BufRingEntry, CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};

/// Whether io_uring can be used here with what both engines need: not
/// disabled (`/proc/sys/kernel/io_uring_disabled`), `io_uring_setup` works
/// (it fails with ENOSYS on old kernels and EPERM under some sandboxes),
/// and the kernel has the timeout argument to the wait (IORING_FEAT_EXT_ARG)
/// and buffered completion-queue overflow (FEAT_NODROP), Linux 5.11. `Err`
/// says why not, in a few words.
///
/// The test ring is made on a short-lived thread: io_uring work left behind
/// by a ring can interrupt a later blocking call of the thread that made it
/// (EINTR on a read with a timeout was seen), so the caller's thread makes
/// none.
pub fn probe() -> Result<(), String> {
    std::thread::Builder::new()
        .name("io_uring-probe".into())
        .spawn(probe_here)
        .map_err(|e| format!("cannot start the io_uring probe: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the io_uring probe failed".into()))
}

fn probe_here() -> Result<(), String> {
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        let v = v.trim();
        if v != "0" {
            // 1: only a privileged group may; 2: nobody. Setup tells us which applies.
            if let Err(e) = IoUring::new(8) {
                return Err(format!(
                    "io_uring is disabled (kernel.io_uring_disabled = {v}: {e})"
                ));
            }
        }
    }
    let ring = IoUring::new(8).map_err(|e| format!("io_uring_setup failed: {e}"))?;
    let p = ring.params();
    if !p.is_feature_ext_arg() || !p.is_feature_nodrop() {
        return Err(
            "this kernel's io_uring lacks EXT_ARG or NODROP (Linux 5.11 or later needed)".into(),
        );
    }
    Ok(())
}

/// Whether kernel release `release` is `major.minor` or later; false when
/// it does not start with two numbers.
fn kernel_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(str::parse::<u32>);
    match (parts.next(), parts.next()) {
        (Some(Ok(a)), Some(Ok(b))) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// Bits of the user data that say which of the ring's memory an operation
/// uses; set only by the ring itself (see [`Completion::lent`]).
const KIND_SHIFT: u32 = 62;
const KIND_MASK: u64 = 0b11 << KIND_SHIFT;
const KIND_SEND: u64 = 1 << KIND_SHIFT;
const KIND_RECV: u64 = 2 << KIND_SHIFT;
const KIND_ACCEPT: u64 = 3 << KIND_SHIFT;

/// Largest operation code of [`user_data`]; 63 is the ring's own.
pub const MAX_OP: u8 = 62;
/// Generations are counted modulo 2^24.
pub const GEN_MASK: u32 = 0xff_ffff;
/// User data of operations whose success posts no completion (closes and
/// cancels that skip success): their failures are not counted either.
const UNCOUNTED: u64 = !KIND_MASK;
/// Slots above this are refused (the ring's tables are indexed by slot).
const MAX_SLOT: usize = 1 << 24;

/// The user data of operation `op` (at most [`MAX_OP`]) of slot `slot`
/// whose generation is `gen` (kept modulo 2^24).
#[inline]
pub const fn user_data(op: u8, slot: u32, gen: u32) -> u64 {
    (((op & 0x3f) as u64) << 56) | (((gen & GEN_MASK) as u64) << 32) | slot as u64
}

/// `(op, slot, gen)` of a user data made by [`user_data`].
#[inline]
pub const fn split(ud: u64) -> (u8, u32, u32) {
    (
        ((ud >> 56) & 0x3f) as u8,
        ud as u32,
        ((ud >> 32) as u32) & GEN_MASK,
    )
}

#[inline]
fn slot_of(ud: u64) -> usize {
    ud as u32 as usize
}

/// How to set up a [`Ring`].
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Submission queue entries (a full queue is submitted early, never lost).
    pub sq_entries: u32,
    /// Completion queue entries; the kernel buffers overflow (FEAT_NODROP).
    pub cq_entries: u32,
    /// Create the ring disabled; [`Ring::enable`] on the thread that will
    /// use it. Lets the kernel defer completion work to that thread's waits
    /// even when the ring is made elsewhere.
    pub start_disabled: bool,
    /// Provided receive buffers for [`Ring::recv_multi`]: how many (a power
    /// of two) and of what size.
    pub recv_buffers: Option<(u16, usize)>,
    /// Accept slots for [`Ring::accept`] (peer addresses the kernel writes).
    pub accept_slots: usize,
}

/// Memory an operation used, handed back with its final completion.
#[derive(Debug, Default)]
pub enum Lent {
    /// None (the operation pointed at no memory of the caller's).
    #[default]
    None,
    /// The buffer of a [`Ring::send`].
    Sent(Vec<u8>),
    /// The buffer of a [`Ring::recv`]; its first `result` bytes were received.
    Received(Box<[u8]>),
    /// A successful [`Ring::accept`]: the new connection and its peer.
    Accepted {
        /// The accepted socket (non-blocking, close-on-exec).
        fd: OwnedFd,
        /// Its peer's address (IPv4 or IPv6).
        peer: Option<IpAddr>,
    },
}

/// One completion.
#[derive(Debug)]
pub struct Completion {
    /// The user data the operation was submitted with.
    pub user_data: u64,
    /// The operation's result (negative: `-errno`).
    pub result: i32,
    /// The completion flags (see [`Completion::more`], [`Completion::buffer`]).
    pub flags: u32,
    /// The memory the operation used, back from the kernel.
    pub lent: Lent,
}

impl Completion {
    /// Whether more completions of the same (multishot) operation follow.
    #[inline]
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer a [`Ring::recv_multi`] completion filled.
    #[inline]
    pub fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// Buffer group id of the provided receive buffers.
const BGID: u16 = 0;

/// A provided-buffer ring: the kernel picks a buffer for each multishot
/// receive completion.
struct Provided {
    /// Page-aligned `BufRingEntry` array shared with the kernel.
    entries: NonNull<BufRingEntry>,
    layout: Layout,
    /// `nbufs * size` bytes (a leaked `Box<[u8]>`), written by the kernel.
    bufs: NonNull<[u8]>,
    nbufs: u16,
    size: usize,
    /// Our copy of the ring's tail (published with a release store).
    tail: u16,
    registered: bool,
    /// Per buffer: `Some(bytes)` while the application holds it (from its
    /// completion until [`Ring::recycle`]); `None` while the kernel may.
    held: Box<[Option<u32>]>,
}

impl Provided {
    fn new(nbufs: u16, size: usize) -> io::Result<Provided> {
        if !nbufs.is_power_of_two() || size == 0 || size > u32::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "provided buffers: a power-of-two count of non-empty buffers",
            ));
        }
        let layout = Layout::from_size_align(
            usize::from(nbufs) * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size (nbufs >= 1). Zeroed memory
        // is a valid (empty) buffer ring: the kernel reads the tail at
        // offset 14 of the first entry, which is 0.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<BufRingEntry>();
        let entries = NonNull::new(entries).ok_or(io::ErrorKind::OutOfMemory)?;
        let bufs = vec![0u8; usize::from(nbufs) * size].into_boxed_slice();
        Ok(Provided {
            entries,
            layout,
            bufs: NonNull::from(Box::leak(bufs)),
            nbufs,
            size,
            tail: 0,
            registered: false,
            held: vec![None; usize::from(nbufs)].into_boxed_slice(),
        })
    }

    fn buf_ptr(&self, bid: u16) -> *mut u8 {
        // In bounds: bid < nbufs, and the allocation is nbufs * size bytes.
        self.bufs
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(usize::from(bid) * self.size)
    }

    /// Queues buffer `bid` for the kernel (seen after `publish`).
    fn put(&mut self, bid: u16) {
        let idx = usize::from(self.tail & (self.nbufs - 1));
        let addr = self.buf_ptr(bid) as u64;
        // SAFETY: idx < nbufs, so the entry lies inside the allocation; the
        // kernel only reads entries between its head and our published
        // tail, and this one is past the tail until `publish`.
        let e = unsafe { &mut *self.entries.as_ptr().add(idx) };
        e.set_addr(addr);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field lives in the first entry of our allocation
        // (BufRingEntry::tail computes its address); it is a u16 the kernel
        // reads concurrently, hence the atomic release store, which also
        // orders the entry writes before it.
        unsafe {
            let tail = BufRingEntry::tail(self.entries.as_ptr()) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

/// A peer address slot an accept writes into.
#[repr(C)]
#[derive(Clone, Copy)]
struct AcceptAddr {
    addr: libc::sockaddr_storage,
    len: libc::socklen_t,
}

/// One thread's io_uring and the memory its operations use.
pub struct Ring {
    ring: IoUring,
    /// Operations submitted whose final completion has not been reaped.
    in_flight: usize,
    /// Created disabled: [`Ring::enable`] must run first.
    disabled: bool,
    /// Send buffers the kernel reads, by slot, with their user data.
    sends: Vec<Option<(u64, Vec<u8>)>>,
    /// Receive buffers the kernel writes (leaked boxes), by slot.
    recvs: Vec<Option<(u64, NonNull<[u8]>)>>,
    provided: Option<Provided>,
    /// Accept address slots (a leaked boxed slice), written by the kernel.
    accept_addrs: NonNull<[AcceptAddr]>,
    /// Per accept slot, the user data of the accept in flight.
    accepts: Box<[Option<u64>]>,
}

// SAFETY: the raw pointers are the ring's own allocations, used only
// through `&mut self` (or `&self` for buffers the kernel no longer writes);
// nothing in the ring is tied to the thread that made it.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring as `setup` says.
    pub fn new(setup: Setup) -> io::Result<Ring> {
        // Deferred task work (completions run only when the owner waits)
        // needs a single issuer; kernels before 6.1 get a plain ring.
        let mut b = IoUring::builder();
        b.setup_cqsize(setup.cq_entries)
            .setup_single_issuer()
            .setup_defer_taskrun();
        if setup.start_disabled {
            b.setup_r_disabled();
        }
        let (ring, disabled) = match b.build(setup.sq_entries) {
            Ok(r) => (r, setup.start_disabled),
            Err(_) => (
                IoUring::builder()
                    .setup_cqsize(setup.cq_entries)
                    .build(setup.sq_entries)?,
                false,
            ),
        };
        let provided = match setup.recv_buffers {
            Some((n, size)) => {
                // Provided-buffer rings came in 5.19, multishot receives
                // into them in 6.0: a 5.19 kernel would set the ring up and
                // then refuse every receive (EINVAL), so refuse here, where
                // a caller can still choose epoll.
                if !kernel_at_least(&crate::host::kernel_release(), 6, 0) {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "multishot receives need Linux 6.0 or later",
                    ));
                }
                Some(Provided::new(n, size)?)
            }
            None => None,
        };
        // SAFETY: sockaddr_storage and socklen_t are plain data; all-zero is valid.
        let zero: AcceptAddr = unsafe { std::mem::zeroed() };
        let addrs = vec![zero; setup.accept_slots].into_boxed_slice();
        let mut r = Ring {
            ring,
            in_flight: 0,
            disabled,
            sends: Vec::new(),
            recvs: Vec::new(),
            provided,
            accept_addrs: NonNull::from(Box::leak(addrs)),
            accepts: vec![None; setup.accept_slots].into_boxed_slice(),
        };
        if let Some(p) = r.provided.as_mut() {
            // SAFETY: `entries` points at `nbufs` entries, page aligned, and
            // stays allocated until after the ring is dropped (see Drop: it
            // is unregistered first, or leaked).
            unsafe {
                r.ring.submitter().register_buf_ring_with_flags(
                    p.entries.as_ptr() as u64,
                    p.nbufs,
                    BGID,
                    0,
                )?;
            }
            p.registered = true;
            for bid in 0..p.nbufs {
                p.put(bid);
            }
            p.publish();
        }
        Ok(r)
    }

    /// Enables a ring made with [`Setup::start_disabled`] on the calling
    /// thread (the only one that may submit to it from now on).
    pub fn enable(&mut self) -> io::Result<()> {
        if self.disabled {
            self.ring.submitter().register_enable_rings()?;
            self.disabled = false;
        }
        Ok(())
    }

    /// Queues `e`; submits first when the submission queue is full.
    ///
    /// # Safety
    /// Every byte `e` points at is owned by this ring (its provided buffers,
    /// accept slots, or a lent buffer held in `sends`/`recvs`) and stays in
    /// place until the operation's final completion is reaped, or forever
    /// if the ring is dropped first.
    unsafe fn push(&mut self, e: &squeue::Entry) -> io::Result<()> {
        let counted = e.get_user_data() != UNCOUNTED;
        loop {
            // SAFETY: forwarded to the caller (see above).
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                if counted {
                    self.in_flight += 1;
                }
                return Ok(());
            }
            // The submission queue is full: hand it to the kernel now.
            self.ring.submit()?;
        }
    }

    /// Queues an operation that points at no memory.
    fn push_plain(&mut self, e: squeue::Entry) -> io::Result<()> {
        // SAFETY: the callers build entries that point at no memory (polls,
        // cancels, closes) or only at the provided buffers (`recv_multi`),
        // which the ring owns; their user data never carries a memory kind.
        unsafe { self.push(&e) }
    }

    /// User data from the caller, without the ring's own bits.
    #[inline]
    fn plain(ud: u64) -> u64 {
        ud & !KIND_MASK
    }

    /// Accepts one connection on `listener` (non-blocking, close-on-exec)
    /// into the accept slot named by `ud`'s slot (below
    /// [`Setup::accept_slots`], with no accept in flight). The connection
    /// and its peer come back as [`Lent::Accepted`].
    pub fn accept(&mut self, listener: RawFd, ud: u64) -> io::Result<()> {
        let ud = Self::plain(ud);
        let slot = slot_of(ud);
        if self.accepts.get(slot) != Some(&None) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "accept slot missing or busy",
            ));
        }
        let a = self.accept_addrs.as_ptr().cast::<AcceptAddr>();
        // SAFETY: slot < accept_slots, so the slot lies inside the
        // allocation; no accept is in flight on it, so the kernel does not
        // write it now.
        let (addr, len) = unsafe {
            let a = a.add(slot);
            std::ptr::addr_of_mut!((*a).len)
                .write(std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t);
            (
                std::ptr::addr_of_mut!((*a).addr),
                std::ptr::addr_of_mut!((*a).len),
            )
        };
        let ud = ud | KIND_ACCEPT;
        let e = opcode::Accept::new(Fd(listener), addr.cast(), len)
            .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
            .build()
            .user_data(ud);
        // SAFETY: the entry points only at accept slot `slot`, owned by the
        // ring and marked busy until the accept's completion is reaped.
        unsafe { self.push(&e) }?;
        self.accepts[slot] = Some(ud);
        Ok(())
    }

    /// Receives from `fd` until cancelled, the peer's end of input, an
    /// error or no free buffer (a completion without [`Completion::more`]):
    /// one multishot receive, each completion in a provided buffer the
    /// kernel picks ([`Completion::buffer`], read with [`Ring::buffer`],
    /// given back with [`Ring::recycle`]).
    pub fn recv_multi(&mut self, fd: RawFd, ud: u64) -> io::Result<()> {
        if self.provided.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no provided buffers",
            ));
        }
        let e = opcode::RecvMulti::new(Fd(fd), BGID)
            .build()
            .user_data(Self::plain(ud));
        self.push_plain(e)
    }

    /// The bytes a receive completion put into provided buffer `bid` (at
    /// most `len`); empty unless that completion was reaped and the buffer
    /// not recycled since.
    pub fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let Some(p) = self.provided.as_ref() else {
            return &[];
        };
        let Some(Some(n)) = p.held.get(usize::from(bid)) else {
            return &[];
        };
        let n = len.min(*n as usize).min(p.size);
        // SAFETY: bid < nbufs, so the `n <= size` bytes lie inside the
        // allocation; the application holds this buffer (its completion was
        // reaped, it was not recycled), so the kernel does not write it, and
        // `recycle` needs `&mut self`, so the slice ends before it can.
        unsafe { std::slice::from_raw_parts(p.buf_ptr(bid), n) }
    }

    /// Gives provided buffer `bid` back to the kernel (no-op unless held).
    pub fn recycle(&mut self, bid: u16) {
        let Some(p) = self.provided.as_mut() else {
            return;
        };
        if let Some(h) = p.held.get_mut(usize::from(bid)) {
            if h.take().is_some() {
                p.put(bid);
                p.publish();
            }
        }
    }

    /// Receives once from `fd` into `buf`, which comes back with the
    /// completion ([`Lent::Received`]). `poll_first`: skip the first
    /// receive attempt and wait for data at once (IORING_RECVSEND_POLL_FIRST,
    /// Linux 5.19; ignored before), for a receive armed before the data can
    /// be there. One receive per slot at a time; on error `buf` comes back.
    pub fn recv(
        &mut self,
        fd: RawFd,
        buf: Box<[u8]>,
        poll_first: bool,
        ud: u64,
    ) -> Result<(), (io::Error, Box<[u8]>)> {
        let ud = Self::plain(ud) | KIND_RECV;
        let slot = slot_of(ud);
        if slot >= MAX_SLOT || matches!(self.recvs.get(slot), Some(Some(_))) {
            return Err((io::ErrorKind::InvalidInput.into(), buf));
        }
        if slot >= self.recvs.len() {
            self.recvs.resize_with(slot + 1, || None);
        }
        let len = buf.len().min(u32::MAX as usize) as u32;
        let ptr = NonNull::from(Box::leak(buf));
        /// IORING_RECVSEND_POLL_FIRST (include/uapi/linux/io_uring.h).
        const RECVSEND_POLL_FIRST: u16 = 1;
        let e = opcode::Recv::new(Fd(fd), ptr.as_ptr().cast::<u8>(), len)
            .ioprio(if poll_first { RECVSEND_POLL_FIRST } else { 0 })
            .build()
            .user_data(ud);
        // SAFETY: the entry points at the leaked box `ptr`, which the ring
        // keeps in `recvs` (nobody reads or writes it) until the final
        // completion hands it back, or leaks at drop.
        match unsafe { self.push(&e) } {
            Ok(()) => {
                self.recvs[slot] = Some((ud, ptr));
                Ok(())
            }
            // SAFETY: not submitted: the box is ours again, as leaked above.
            Err(err) => Err((err, unsafe { Box::from_raw(ptr.as_ptr()) })),
        }
    }

    /// Sends `buf[start..]` on `fd` (MSG_NOSIGNAL; at most 4 GiB); `buf`
    /// comes back with the completion ([`Lent::Sent`]), unchanged. One send
    /// per slot at a time; on error `buf` comes back.
    pub fn send(
        &mut self,
        fd: RawFd,
        buf: Vec<u8>,
        start: usize,
        ud: u64,
    ) -> Result<(), (io::Error, Vec<u8>)> {
        let ud = Self::plain(ud) | KIND_SEND;
        let slot = slot_of(ud);
        if slot >= MAX_SLOT || start > buf.len() || matches!(self.sends.get(slot), Some(Some(_))) {
            return Err((io::ErrorKind::InvalidInput.into(), buf));
        }
        if slot >= self.sends.len() {
            self.sends.resize_with(slot + 1, || None);
        }
        let rest = &buf[start..];
        let e = opcode::Send::new(
            Fd(fd),
            rest.as_ptr(),
            rest.len().min(u32::MAX as usize) as u32,
        )
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data(ud);
        // SAFETY: the entry points into `buf`'s heap memory, which does not
        // move when the Vec is moved into `sends`, where nobody touches it
        // until the final completion hands it back (or it leaks at drop).
        match unsafe { self.push(&e) } {
            Ok(()) => {
                self.sends[slot] = Some((ud, buf));
                Ok(())
            }
            Err(err) => Err((err, buf)),
        }
    }

    /// One-shot readiness poll of `fd` for `events` (POLLIN, POLLOUT); the
    /// completion's result is the events seen.
    pub fn poll(&mut self, fd: RawFd, events: i16, ud: u64) -> io::Result<()> {
        let e = opcode::PollAdd::new(Fd(fd), events as u16 as u32)
            .build()
            .user_data(Self::plain(ud));
        self.push_plain(e)
    }

    /// The user data an operation was submitted with, from the caller's.
    fn resolve(&self, target: u64) -> u64 {
        let target = Self::plain(target);
        let slot = slot_of(target);
        let lent = [
            self.recvs.get(slot).and_then(|e| e.as_ref().map(|e| e.0)),
            self.sends.get(slot).and_then(|e| e.as_ref().map(|e| e.0)),
            self.accepts.get(slot).copied().flatten(),
        ];
        lent.into_iter()
            .flatten()
            .find(|&u| Self::plain(u) == target)
            .unwrap_or(target)
    }

    /// Cancels the operation submitted with user data `target`. With
    /// `ud: None` a success posts no completion of its own; with `Some`, a
    /// completion with that user data follows in any case.
    pub fn cancel(&mut self, target: u64, ud: Option<u64>) -> io::Result<()> {
        let e = opcode::AsyncCancel::new(self.resolve(target)).build();
        let e = match ud {
            Some(u) => e.user_data(Self::plain(u)),
            None => e.flags(squeue::Flags::SKIP_SUCCESS).user_data(UNCOUNTED),
        };
        self.push_plain(e)
    }

    /// Cancels every operation in flight on `fd` (no completion of its own
    /// on success).
    pub fn cancel_fd(&mut self, fd: RawFd) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(fd)).all())
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(UNCOUNTED);
        self.push_plain(e)
    }

    /// Cancels every operation in flight (one completion, `ud`).
    pub fn cancel_all(&mut self, ud: u64) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(Self::plain(ud));
        self.push_plain(e)
    }

    /// Closes `fd` through the ring (no completion on success); closes it at
    /// once if the ring cannot take the request. No operation of the
    /// caller's may still use it.
    pub fn close(&mut self, fd: OwnedFd) {
        let raw = fd.into_raw_fd();
        let e = opcode::Close::new(Fd(raw))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(UNCOUNTED);
        if self.push_plain(e).is_err() {
            // SAFETY: `raw` came from `into_raw_fd` just above and was not
            // handed to the kernel: it is still ours to close.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
        }
    }

    /// Submits everything queued and waits until a completion arrives or
    /// `timeout` passes: one `io_uring_enter` (ETIME, EINTR and EBUSY are
    /// not errors: the caller reaps what is there).
    ///
    /// A send to a socket with room completes during the submission, so its
    /// completion alone ends the wait and the next turn waits again. A wait
    /// for one event more than the sends, bounded by the kernel's minimum
    /// wait (6.12), saved that second entry but armed a timer that fired
    /// whenever the next request came later than the bound: below
    /// saturation that cost more CPU per request than the entry it saved
    /// (BENCHMARKS.md, "io_uring by default").
    pub fn submit_and_wait(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
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

    /// Moves every available completion into `out` (in order), each with
    /// the memory its operation used if it was the final one.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        let mut done = 0;
        let Ring {
            ring,
            sends,
            recvs,
            provided,
            accept_addrs,
            accepts,
            ..
        } = self;
        for c in ring.completion() {
            let ud = c.user_data();
            if ud == UNCOUNTED {
                // A close or cancel that failed (the operation it meant to
                // cancel had already ended): nothing to do.
                continue;
            }
            let (result, flags) = (c.result(), c.flags());
            let last = !cqueue::more(flags);
            if last {
                done += 1;
            }
            if let (Some(p), Some(bid)) = (provided.as_mut(), cqueue::buffer_select(flags)) {
                if let Some(h) = p.held.get_mut(usize::from(bid)) {
                    *h = Some(result.max(0) as u32);
                }
            }
            let slot = slot_of(ud);
            let lent = match ud & KIND_MASK {
                _ if !last => Lent::None,
                KIND_SEND => match sends.get_mut(slot) {
                    Some(e) if e.as_ref().is_some_and(|e| e.0 == ud) => {
                        e.take().map_or(Lent::None, |(_, b)| Lent::Sent(b))
                    }
                    _ => Lent::None,
                },
                KIND_RECV => match recvs.get_mut(slot) {
                    Some(e) if e.as_ref().is_some_and(|e| e.0 == ud) => match e.take() {
                        // SAFETY: leaked in `recv` for this operation, whose
                        // final completion this is: the kernel is done with it.
                        Some((_, p)) => Lent::Received(unsafe { Box::from_raw(p.as_ptr()) }),
                        None => Lent::None,
                    },
                    _ => Lent::None,
                },
                KIND_ACCEPT => match accepts.get_mut(slot) {
                    Some(e) if *e == Some(ud) => {
                        *e = None;
                        if result >= 0 {
                            // SAFETY: slot < accept_slots; the accept is
                            // complete, so the kernel no longer writes it.
                            let a = unsafe {
                                std::ptr::read(accept_addrs.as_ptr().cast::<AcceptAddr>().add(slot))
                            };
                            Lent::Accepted {
                                // SAFETY: a successful accept's result is a
                                // new descriptor that nothing else owns.
                                fd: unsafe { OwnedFd::from_raw_fd(result) },
                                peer: peer_of(&a.addr),
                            }
                        } else {
                            Lent::None
                        }
                    }
                    _ => Lent::None,
                },
                _ => Lent::None,
            };
            out.push(Completion {
                user_data: ud & !KIND_MASK,
                result,
                flags,
                lent,
            });
        }
        self.in_flight = self.in_flight.saturating_sub(done);
    }

    /// Operations whose final completion has not been reaped.
    #[inline]
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

/// The IP address in a socket address the kernel filled in.
fn peer_of(ss: &libc::sockaddr_storage) -> Option<IpAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which
            // is smaller than and alignment-compatible with sockaddr_storage.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.in_flight > 0 {
            // The kernel may still read or write lent buffers, provided
            // buffers or accept slots after the ring is closed: leak them
            // rather than free memory it can reach.
            std::mem::forget(std::mem::take(&mut self.sends));
            return;
        }
        for (_, p) in self.recvs.drain(..).flatten() {
            // SAFETY: leaked in `recv`; nothing is in flight, so the kernel
            // no longer references it.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
        // SAFETY: leaked in `new`; no accept is in flight.
        drop(unsafe { Box::from_raw(self.accept_addrs.as_ptr()) });
        if let Some(p) = self.provided.take() {
            if p.registered && self.ring.submitter().unregister_buf_ring(BGID).is_err() {
                // Still registered: the kernel keeps pointers to them.
                return;
            }
            // SAFETY: allocated in `Provided::new` with this layout and
            // leaked there; the kernel no longer references them
            // (unregistered, nothing in flight).
            unsafe {
                std::alloc::dealloc(p.entries.as_ptr().cast(), p.layout);
                drop(Box::from_raw(p.bufs.as_ptr()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pump(ring: &mut Ring, out: &mut Vec<Completion>) {
        ring.submit_and_wait(Duration::from_secs(5)).unwrap();
        ring.reap(out);
    }

    #[test]
    fn user_data_round_trips_and_keeps_clear_of_the_ring_bits() {
        let ud = user_data(MAX_OP, 123_456, 0x1ff_ffff);
        assert_eq!(split(ud), (MAX_OP, 123_456, 0xff_ffff));
        assert_eq!(ud & KIND_MASK, 0);
        assert_ne!(ud, UNCOUNTED);
        assert_eq!(split(user_data(3, u32::MAX, 0)), (3, u32::MAX, 0));
    }

    #[test]
    fn lent_buffers_come_back_with_their_completions() {
        if let Err(why) = probe() {
            return httplab_skip::skipped(&format!("io_uring is not available: {why}"));
        }
        let mut ring = Ring::new(Setup {
            sq_entries: 8,
            cq_entries: 32,
            start_disabled: false,
            recv_buffers: None,
            accept_slots: 0,
        })
        .unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let fd = client.as_raw_fd();
        ring.send(fd, b"xxping".to_vec(), 2, user_data(1, 4, 9))
            .unwrap();
        let (_, back) = ring
            .send(fd, b"again".to_vec(), 0, user_data(1, 4, 9))
            .unwrap_err();
        assert_eq!(back, b"again", "one send per slot; the buffer comes back");
        ring.recv(
            fd,
            vec![0u8; 64].into_boxed_slice(),
            true,
            user_data(2, 4, 9),
        )
        .unwrap();
        assert_eq!(ring.in_flight(), 2);
        // Submitted (and the send completed) by the first wait.
        let mut out = Vec::new();
        while out.is_empty() {
            pump(&mut ring, &mut out);
        }
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        server.write_all(b"pong").unwrap();
        while out.len() < 2 {
            pump(&mut ring, &mut out);
        }
        for c in out.drain(..) {
            match (split(c.user_data), c.lent) {
                ((1, 4, 9), Lent::Sent(b)) => {
                    assert_eq!(c.result, 4);
                    assert_eq!(b, b"xxping");
                }
                ((2, 4, 9), Lent::Received(b)) => assert_eq!(&b[..c.result as usize], b"pong"),
                (ud, lent) => panic!("{ud:?} {lent:?}"),
            }
        }
        assert_eq!(ring.in_flight(), 0);
        // A receive cancelled by the caller's user data.
        ring.recv(
            fd,
            vec![0u8; 8].into_boxed_slice(),
            false,
            user_data(2, 5, 1),
        )
        .unwrap();
        ring.cancel(user_data(2, 5, 1), Some(user_data(3, 5, 1)))
            .unwrap();
        while out.len() < 2 {
            pump(&mut ring, &mut out);
        }
        let recv = out.iter().find(|c| split(c.user_data).0 == 2).unwrap();
        assert_eq!(recv.result, -libc::ECANCELED);
        assert!(matches!(recv.lent, Lent::Received(ref b) if b.len() == 8));
        assert_eq!(ring.in_flight(), 0);
        // Dropped with a receive in flight: its buffer is leaked, not freed.
        ring.recv(
            fd,
            vec![0u8; 8].into_boxed_slice(),
            false,
            user_data(2, 6, 1),
        )
        .unwrap();
        drop(ring);
    }

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(kernel_at_least("6.18.44-fc-v857", 6, 0));
        assert!(kernel_at_least("6.0.0", 6, 0));
        assert!(kernel_at_least("10.1", 6, 0));
        assert!(kernel_at_least("6.1.0-13-amd64\n", 6, 1));
        assert!(!kernel_at_least("5.19.17", 6, 0));
        assert!(!kernel_at_least("5.15.0-91-generic", 6, 0));
        assert!(!kernel_at_least("", 6, 0));
        assert!(!kernel_at_least("six", 6, 0));
        assert!(!kernel_at_least("6", 6, 0));
    }

    #[test]
    fn accepts_and_multishot_receives_into_provided_buffers() {
        if let Err(why) = probe() {
            return httplab_skip::skipped(&format!("io_uring is not available: {why}"));
        }
        let mut ring = match Ring::new(Setup {
            sq_entries: 8,
            cq_entries: 32,
            start_disabled: true,
            recv_buffers: Some((4, 16)),
            accept_slots: 2,
        }) {
            Ok(r) => r,
            // Provided-buffer rings need 5.19.
            Err(e) => {
                return httplab_skip::skipped(&format!("no provided-buffer ring (Linux 5.19): {e}"))
            }
        };
        ring.enable().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        ring.accept(l.as_raw_fd(), user_data(1, 1, 0)).unwrap();
        assert!(ring.accept(l.as_raw_fd(), user_data(1, 1, 0)).is_err());
        assert!(ring.accept(l.as_raw_fd(), user_data(1, 2, 0)).is_err());
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            pump(&mut ring, &mut out);
        }
        let Some(Completion {
            lent: Lent::Accepted { fd, peer },
            ..
        }) = out.pop()
        else {
            panic!("no accept");
        };
        assert_eq!(peer, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        ring.recv_multi(fd.as_raw_fd(), user_data(2, 0, 0)).unwrap();
        client.write_all(b"0123456789abcdefXYZ").unwrap();
        let mut got = Vec::new();
        while got.len() < 19 {
            pump(&mut ring, &mut out);
            for c in out.drain(..) {
                let bid = c.buffer().unwrap();
                assert!(c.more());
                got.extend_from_slice(ring.buffer(bid, c.result as usize));
                ring.recycle(bid);
                assert!(ring.buffer(bid, 16).is_empty(), "recycled: not readable");
            }
        }
        assert_eq!(got, b"0123456789abcdefXYZ");
        drop(client);
        while ring.in_flight() > 0 {
            pump(&mut ring, &mut out);
            out.clear();
        }
        ring.close(fd);
    }
}
