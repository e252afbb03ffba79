//! The io_uring side of the HTTP/1.1 engine (`--io uring`): socket I/O as
//! completions instead of readiness.
//!
//! The epoll engine costs one `send`, one `recv` and a share of `epoll_wait`
//! per request, and on loopback about 85 % of the client's CPU is that
//! kernel time. Here the event loop makes ONE `io_uring_enter` per turn: it
//! submits every send, receive and connect-wait queued during the turn and
//! waits (with the turn's next timer as its timeout) for completions.
//!
//! Everything the engine needs stays in `engine.rs` (schedules, timers,
//! sessions, statistics, `H1Conn`); this module owns only the sockets'
//! kernel-side operations and the memory the kernel reads and writes:
//!
//! - one outstanding RECV per connection, into that connection's own buffer;
//!   on completion the filled buffer is swapped with a spare one, so the
//!   engine parses the bytes while the next RECV already has a buffer, and
//!   nothing is copied or allocated;
//! - a per-connection send buffer that holds the bytes of an in-flight SEND:
//!   `H1Conn`'s output may grow (pipelining) while a send is in flight, so
//!   the kernel is never pointed at a Vec that may reallocate; a short send
//!   is resubmitted from here, and the engine hears of a send only when all
//!   of it went out (or it failed);
//! - while an operation is in flight its buffer is lent to the ring
//!   (`httplab_sys::uring`, which owns all memory the kernel uses and hands
//!   it back with the operation's completion), so this module is safe code;
//! - connects stay non-blocking `connect(2)` calls in the engine (binding to
//!   a source address and retrying another on EADDRNOTAVAIL stay one code
//!   path for both engines); the wait for their end is a POLL_ADD(POLLOUT);
//! - user_data = connection index | generation | operation, and a connection
//!   entry (its descriptor and buffers) is reused only when none of its
//!   operations is in flight, so a late completion can never touch a reused
//!   buffer or descriptor: closing a connection with operations in flight
//!   cancels them (ASYNC_CANCEL) and the descriptor is closed when the last
//!   completion arrives; dropping the ring first waits them out.
//!
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use httplab_sys::uring::{self as ur, Completion, Lent, Setup};

/// Bytes one RECV may fill. Smaller than the epoll engine's 64 KiB shared
/// buffer because each connection has its own (256 connections: 4 MiB).
const RECV_BUF: usize = 16 * 1024;
/// Submission queue entries (a full queue is submitted early, never lost).
const SQ_ENTRIES: u32 = 1024;
/// Completion queue entries; the kernel buffers overflow (FEAT_NODROP).
const CQ_ENTRIES: u32 = 8192;
/// Longest the ring's drop waits for cancelled operations to complete.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

const OP_RECV: u8 = 1;
const OP_SEND: u8 = 2;
const OP_CONNECT: u8 = 3;
const OP_CANCEL: u8 = 4;

fn user_data(id: u32, gen: u16, op: u8) -> u64 {
    ur::user_data(op, id, u32::from(gen))
}

fn split(ud: u64) -> (u32, u16, u8) {
    let (op, id, gen) = ur::split(ud);
    (id, gen as u16, op)
}

/// Whether this kernel lets us use io_uring with what the engine needs
/// (the timeout argument to the wait: IORING_FEAT_EXT_ARG, Linux 5.11;
/// buffered CQ overflow: FEAT_NODROP). `Err` says why not, in a few words.
/// The one probe of the workspace (`httplab_sys::uring::probe`), also
/// behind `httplab serve --io uring`.
pub(crate) fn probe() -> Result<(), String> {
    ur::probe()
}

/// What a completion means for the engine.
#[derive(Debug)]
pub(crate) enum Done {
    /// The connect of slot `slot` ended: `Ok` connected (a RECV is now armed).
    Connected { slot: usize, res: io::Result<()> },
    /// A RECV of connection `id` (slot `slot`) completed: `Ok(0)` is the peer's
    /// end of stream; `Ok(n)`: the bytes are in [`Ring::spare`]`[..n]`.
    Recv {
        slot: usize,
        id: u32,
        res: io::Result<usize>,
    },
    /// Everything handed to [`Ring::send`] went out (`Ok`), or the send failed.
    Sent {
        slot: usize,
        id: u32,
        res: io::Result<()>,
    },
}

#[derive(Debug)]
struct Conn {
    /// The socket; `None` while the entry is free.
    fd: Option<OwnedFd>,
    gen: u16,
    slot: usize,
    /// RECV target; lent to the ring (empty here) while `recv_on`.
    rbuf: Box<[u8]>,
    /// SEND source; lent to the ring (empty here) while `send_on`.
    sbuf: Vec<u8>,
    spos: usize,
    recv_on: bool,
    send_on: bool,
    connect_on: bool,
    /// Operations in flight (including cancels).
    ops: u32,
    /// The engine let go of it; completions are dropped until `ops` is 0.
    closing: bool,
}

/// One worker thread's ring and its connections' kernel-side state.
pub(crate) struct Ring {
    ring: ur::Ring,
    conns: Vec<Conn>,
    free: Vec<u32>,
    /// The bytes of the last RECV completion (swapped with that connection's buffer).
    spare: Box<[u8]>,
    cqes: Vec<Completion>,
}

impl Ring {
    /// A ring for one worker thread. It must be used only by the thread
    /// that created it (SINGLE_ISSUER, DEFER_TASKRUN where the kernel has them).
    pub fn new() -> io::Result<Ring> {
        let ring = ur::Ring::new(Setup {
            sq_entries: SQ_ENTRIES,
            cq_entries: CQ_ENTRIES,
            start_disabled: false,
            recv_buffers: None,
            accept_slots: 0,
        })?;
        Ok(Ring {
            ring,
            conns: Vec::new(),
            free: Vec::new(),
            spare: vec![0u8; RECV_BUF].into_boxed_slice(),
            cqes: Vec::with_capacity(CQ_ENTRIES as usize),
        })
    }

    /// Takes a connected (or connecting) socket for slot `slot`; returns its id.
    /// `connecting`: its non-blocking connect returned EINPROGRESS.
    pub fn open(&mut self, slot: usize, fd: OwnedFd, connecting: bool) -> io::Result<u32> {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.conns.push(Conn {
                    fd: None,
                    gen: 0,
                    slot,
                    rbuf: vec![0u8; RECV_BUF].into_boxed_slice(),
                    sbuf: Vec::new(),
                    spos: 0,
                    recv_on: false,
                    send_on: false,
                    connect_on: false,
                    ops: 0,
                    closing: false,
                });
                (self.conns.len() - 1) as u32
            }
        };
        let c = &mut self.conns[id as usize];
        c.fd = Some(fd);
        c.slot = slot;
        c.closing = false;
        c.sbuf.clear();
        c.spos = 0;
        let r = if connecting {
            self.arm_connect(id)
        } else {
            self.arm_recv(id)
        };
        if let Err(e) = r {
            self.close(id);
            return Err(e);
        }
        Ok(id)
    }

    fn arm_connect(&mut self, id: u32) -> io::Result<()> {
        let c = &mut self.conns[id as usize];
        let Some(fd) = c.fd.as_ref() else {
            return Ok(());
        };
        // The descriptor stays open until this operation completes (`close`
        // defers it while `ops` > 0).
        self.ring.poll(
            fd.as_raw_fd(),
            libc::POLLOUT,
            user_data(id, c.gen, OP_CONNECT),
        )?;
        c.connect_on = true;
        c.ops += 1;
        Ok(())
    }

    /// Arms the connection's one RECV (no-op when one is in flight or it is closing).
    pub fn arm_recv(&mut self, id: u32) -> io::Result<()> {
        let c = &mut self.conns[id as usize];
        if c.recv_on || c.closing {
            return Ok(());
        }
        let Some(fd) = c.fd.as_ref() else {
            return Ok(());
        };
        let fd = fd.as_raw_fd();
        let mut buf = std::mem::take(&mut c.rbuf);
        if buf.is_empty() {
            // Not seen: the buffer comes back with every RECV completion.
            buf = vec![0u8; RECV_BUF].into_boxed_slice();
        }
        // POLL_FIRST: the RECV is armed right after the turn's send, before
        // the reply can be there, so skip the receive attempt that would only
        // find nothing, and wait for data at once (Linux 5.19; ignored before).
        // The buffer is the ring's until the completion brings it back; the
        // entry is neither reused nor freed while `ops` > 0 (see `close`), so
        // the descriptor stays open as long.
        match self.ring.recv(fd, buf, true, user_data(id, c.gen, OP_RECV)) {
            Ok(()) => {
                c.recv_on = true;
                c.ops += 1;
                Ok(())
            }
            Err((e, buf)) => {
                c.rbuf = buf;
                Err(e)
            }
        }
    }

    /// Sends `data` on connection `id`: copies it into the connection's send
    /// buffer and queues a SEND. Returns false (nothing taken) while an earlier
    /// send is in flight; the engine sends the rest when [`Done::Sent`] comes.
    pub fn send(&mut self, id: u32, data: &[u8]) -> io::Result<bool> {
        let c = &mut self.conns[id as usize];
        if c.send_on || c.closing || data.is_empty() {
            return Ok(false);
        }
        c.sbuf.clear();
        c.sbuf.extend_from_slice(data);
        c.spos = 0;
        self.arm_send(id)?;
        Ok(true)
    }

    fn arm_send(&mut self, id: u32) -> io::Result<()> {
        let c = &mut self.conns[id as usize];
        let Some(fd) = c.fd.as_ref() else {
            return Ok(());
        };
        let fd = fd.as_raw_fd();
        // The buffer is the ring's until the completion brings it back
        // (`send` refuses while `send_on`).
        let buf = std::mem::take(&mut c.sbuf);
        match self
            .ring
            .send(fd, buf, c.spos, user_data(id, c.gen, OP_SEND))
        {
            Ok(()) => {
                c.send_on = true;
                c.ops += 1;
                Ok(())
            }
            Err((e, buf)) => {
                c.sbuf = buf;
                Err(e)
            }
        }
    }

    /// The engine is done with connection `id`: cancel what is in flight and
    /// close the socket once nothing refers to it any more.
    pub fn close(&mut self, id: u32) {
        let c = &mut self.conns[id as usize];
        if c.closing {
            return;
        }
        c.closing = true;
        if c.ops == 0 {
            self.release(id);
            return;
        }
        // Cancel the operations that may wait for ever (a RECV on an idle
        // connection, a connect); a SEND on a socket completes by itself.
        let gen = c.gen;
        let mut targets = [0u64; 2];
        let mut n = 0;
        if c.recv_on {
            targets[n] = user_data(id, gen, OP_RECV);
            n += 1;
        }
        if c.connect_on {
            targets[n] = user_data(id, gen, OP_CONNECT);
            n += 1;
        }
        for &t in &targets[..n] {
            // If the ring failed, the operation ends when the ring is dropped.
            if self
                .ring
                .cancel(t, Some(user_data(id, gen, OP_CANCEL)))
                .is_ok()
            {
                self.conns[id as usize].ops += 1;
            }
        }
    }

    /// Closes the socket and frees the entry (no operation in flight).
    fn release(&mut self, id: u32) {
        let c = &mut self.conns[id as usize];
        debug_assert_eq!(c.ops, 0);
        c.fd = None;
        c.gen = c.gen.wrapping_add(1);
        c.recv_on = false;
        c.send_on = false;
        c.connect_on = false;
        self.free.push(id);
    }

    /// Submits what the turn queued and waits up to `timeout` for at least
    /// one completion (`None`: do not wait). Returns the completions reaped,
    /// to be given to [`Ring::complete`] one by one and handed back with
    /// [`Ring::give_back`].
    pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Completion>> {
        // Always an enter that gets events (want 1), with a zero timeout when
        // the turn must not sleep: under DEFER_TASKRUN the kernel posts
        // completions only in such an enter, so a plain submit would leave
        // them pending while the schedule keeps the loop busy.
        self.ring
            .submit_and_wait(timeout.unwrap_or(Duration::ZERO))?;
        let mut out = std::mem::take(&mut self.cqes);
        out.clear();
        self.ring.reap(&mut out);
        Ok(out)
    }

    /// Returns the completion list (keeps its capacity: no allocation per turn).
    pub fn give_back(&mut self, v: Vec<Completion>) {
        self.cqes = v;
    }

    /// The bytes of the last [`Done::Recv`]; take them with `std::mem::take`
    /// and put them back after use.
    pub fn spare(&mut self) -> &mut Box<[u8]> {
        &mut self.spare
    }

    /// What completion `cqe` means; `None` when it is internal (a resubmitted
    /// short send, a cancel, anything of a closed connection).
    pub fn complete(&mut self, cqe: Completion) -> Option<Done> {
        let (id, gen, op) = split(cqe.user_data);
        let res = cqe.result;
        let c = self.conns.get_mut(id as usize)?;
        if c.gen != gen || c.fd.is_none() {
            // Cannot happen (an entry is not reused while ops are in flight);
            // ignore rather than misattribute.
            return None;
        }
        // The buffer the operation used is back from the kernel.
        match cqe.lent {
            Lent::Received(b) => c.rbuf = b,
            Lent::Sent(b) => c.sbuf = b,
            _ => {}
        }
        c.ops = c.ops.saturating_sub(1);
        match op {
            OP_RECV => c.recv_on = false,
            OP_SEND => c.send_on = false,
            OP_CONNECT => c.connect_on = false,
            _ => {}
        }
        if c.closing {
            if c.ops == 0 {
                self.release(id);
            }
            return None;
        }
        let slot = c.slot;
        let err = |res: i32| io::Error::from_raw_os_error(-res);
        match op {
            OP_RECV => {
                if res > 0 {
                    // The kernel is done with `rbuf`: hand its bytes over and
                    // give the connection the spare buffer for its next RECV.
                    std::mem::swap(&mut c.rbuf, &mut self.spare);
                }
                let res = if res >= 0 {
                    Ok(res as usize)
                } else {
                    Err(err(res))
                };
                Some(Done::Recv { slot, id, res })
            }
            OP_SEND => {
                if res < 0 {
                    return Some(Done::Sent {
                        slot,
                        id,
                        res: Err(err(res)),
                    });
                }
                c.spos += res as usize;
                if c.spos < c.sbuf.len() && res > 0 {
                    // A short send: the rest goes from here.
                    if let Err(e) = self.arm_send(id) {
                        return Some(Done::Sent {
                            slot,
                            id,
                            res: Err(e),
                        });
                    }
                    return None;
                }
                let res = if c.spos < c.sbuf.len() {
                    Err(io::Error::from(io::ErrorKind::WriteZero))
                } else {
                    Ok(())
                };
                Some(Done::Sent { slot, id, res })
            }
            OP_CONNECT => {
                let res = if res < 0 {
                    Err(err(res))
                } else if res & i32::from(libc::POLLERR | libc::POLLHUP) != 0 {
                    // The connect failed: SO_ERROR names why.
                    let sock = c.fd.as_ref().map(socket2::SockRef::from);
                    match sock.map(|s| s.take_error()) {
                        Some(Ok(Some(e))) | Some(Err(e)) => Err(e),
                        _ => Err(io::Error::from(io::ErrorKind::ConnectionRefused)),
                    }
                } else {
                    self.arm_recv(id)
                };
                Some(Done::Connected { slot, res })
            }
            _ => None,
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // The kernel may still write into buffers of operations in flight:
        // cancel them all and wait for their completions before the buffers
        // are freed.
        let ids: Vec<u32> = (0..self.conns.len() as u32)
            .filter(|&i| self.conns[i as usize].fd.is_some())
            .collect();
        for id in ids {
            self.close(id);
        }
        let until = Instant::now() + DRAIN_LIMIT;
        while self.conns.iter().any(|c| c.ops > 0) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            let Ok(done) = self.turn(Some((until - now).min(Duration::from_millis(100)))) else {
                break;
            };
            let mut done = done;
            for c in done.drain(..) {
                let _ = self.complete(c);
            }
            self.give_back(done);
        }
        if self.conns.iter().any(|c| c.ops > 0) {
            // Something never completed: leave its descriptors open (the
            // ring leaks the buffers it still lends when it is dropped).
            std::mem::forget(std::mem::take(&mut self.conns));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn user_data_round_trips() {
        let ud = user_data(123_456, 65_535, OP_CANCEL);
        assert_eq!(split(ud), (123_456, 65_535, OP_CANCEL));
    }

    /// Send, receive, peer close and close-with-a-RECV-in-flight on a real
    /// loopback socket (skipped where io_uring is unavailable).
    #[test]
    fn send_recv_eof_and_cancel() {
        if let Err(why) = probe() {
            // Visible past the harness's capture; never a failure, also under
            // CI: the kernel may have io_uring disabled (as in httplab-sys).
            return httplab_skip::skipped(&format!("io_uring is not available: {why}"));
        }
        let mut ring = Ring::new().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let id = ring.open(7, OwnedFd::from(client), false).unwrap();
        assert!(ring.send(id, b"ping").unwrap());
        assert!(
            !ring.send(id, b"again").unwrap(),
            "one send in flight at a time"
        );
        let mut got = Vec::new();
        let mut sent = false;
        while !sent {
            let mut done = ring.turn(Some(Duration::from_secs(5))).unwrap();
            for c in done.drain(..) {
                if let Some(Done::Sent { slot, res, .. }) = ring.complete(c) {
                    assert_eq!(slot, 7);
                    res.unwrap();
                    sent = true;
                }
            }
            ring.give_back(done);
        }
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        server.write_all(b"pong").unwrap();
        drop(server);
        let mut eof = false;
        while !eof {
            let mut done = ring.turn(Some(Duration::from_secs(5))).unwrap();
            for c in done.drain(..) {
                match ring.complete(c) {
                    Some(Done::Recv { res: Ok(0), .. }) => eof = true,
                    Some(Done::Recv { id, res: Ok(n), .. }) => {
                        got.extend_from_slice(&ring.spare()[..n]);
                        ring.arm_recv(id).unwrap();
                    }
                    other => panic!("{other:?}"),
                }
            }
            ring.give_back(done);
        }
        assert_eq!(got, b"pong");
        ring.close(id);
        // An idle connection closed with its RECV in flight: cancelled, and
        // the entry is reused only after the cancellation completed.
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_server, _) = l.accept().unwrap();
        let id2 = ring.open(8, OwnedFd::from(client), false).unwrap();
        assert_eq!(id2, id, "the free entry is reused");
        ring.close(id2);
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let id3 = ring.open(9, OwnedFd::from(client), false).unwrap();
        assert_ne!(id3, id2, "an entry with operations in flight is not reused");
        while ring.conns[id2 as usize].fd.is_some() {
            let mut done = ring.turn(Some(Duration::from_secs(5))).unwrap();
            for c in done.drain(..) {
                assert!(ring.complete(c).is_none());
            }
            ring.give_back(done);
        }
        drop(ring);
    }
}
