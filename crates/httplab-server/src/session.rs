//! One connection's HTTP/1.1 state machine, without I/O.
//!
//! A driver (the event reactor, or a blocking thread/process) moves bytes:
//! it reads into [`Session::read_slot`], reports them with
//! [`Session::filled`], calls [`Session::process`] to turn complete request
//! heads into queued responses, writes [`Session::out`] to the socket, and
//! asks [`Session::deadline`] when to call [`Session::on_timeout`]. All
//! protocol rules (keep-alive, pipelining on/off, body draining, limits,
//! timeouts) live here once, for every concurrency model.

use std::net::IpAddr;
use std::time::Instant;

use httplab_wire::request::{leading_empty_lines, parse_head, Parsed, Version};

use crate::handler::{ConnHeader, Handler};
use crate::out::OutQueue;

/// Stop turning requests into responses while more than this many response
/// bytes wait in memory (the client is not reading).
const OUT_HIGH_WATER: usize = 256 * 1024;
/// Same, for queued file segments.
const FILES_HIGH_WATER: usize = 16;

/// Why a connection should be closed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Idle or write timeout: close without a response.
    Timeout,
}

/// Per-connection protocol state.
#[derive(Debug)]
pub struct Session {
    rbuf: Vec<u8>,
    /// Size of a full read buffer (the shrunk leftover buffer is smaller).
    rcap: usize,
    rstart: usize,
    rend: usize,
    /// Responses waiting to be written.
    pub out: OutQueue,
    skip: u64,
    served: u64,
    closing: bool,
    eof: bool,
    head_started: Option<Instant>,
    last_activity: Instant,
    peer: Option<IpAddr>,
    failed: bool,
}

impl Session {
    /// A new connection from `peer`, accepted at `now`.
    pub fn new(peer: Option<IpAddr>, now: Instant) -> Self {
        Session {
            rbuf: Vec::new(),
            rcap: 0,
            rstart: 0,
            rend: 0,
            out: OutQueue::default(),
            skip: 0,
            served: 0,
            closing: false,
            eof: false,
            head_started: None,
            last_activity: now,
            peer,
            failed: false,
        }
    }

    /// Whether the peer is on this machine (a loopback address): the file
    /// send path may then be chosen by measurement (see `sendpath`).
    pub fn peer_is_loopback(&self) -> bool {
        self.peer.is_some_and(|p| match p {
            IpAddr::V4(a) => a.is_loopback(),
            IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|m| m.is_loopback()),
        })
    }

    /// The peer's address.
    pub fn peer(&self) -> Option<IpAddr> {
        self.peer
    }

    /// The bytes read and not yet processed.
    pub fn unread(&self) -> &[u8] {
        &self.rbuf[self.rstart..self.rend]
    }

    /// Drops the unread bytes (a driver that handed them to another
    /// machine, the HTTP/2 one, which then only borrows this session's read
    /// buffer).
    pub fn consume_unread(&mut self) {
        self.rstart = 0;
        self.rend = 0;
    }

    /// Whether the peer's input ended (end of file read).
    pub fn input_ended(&self) -> bool {
        self.eof
    }

    /// Whether closing should drain the peer's input first (it may still be
    /// sending: unread request bytes, an undrained body, or an error), so
    /// that the close does not turn into a reset that destroys the response.
    pub fn needs_linger(&self) -> bool {
        self.rstart < self.rend || self.skip > 0 || self.failed
    }

    /// Gives the session a read buffer (zero-filled, its length is the
    /// capacity used) if it has none.
    pub fn attach_rbuf(&mut self, buf: Vec<u8>) -> Option<Vec<u8>> {
        if self.rbuf.is_empty() {
            self.rcap = buf.len();
            self.rbuf = buf;
            self.rstart = 0;
            self.rend = 0;
            None
        } else {
            Some(buf)
        }
    }

    /// An idle connection's buffers back to its worker's spare lists (both
    /// I/O engines share this): the read buffer when empty, or shrunk around
    /// a small leftover, and only full-size ones (`rbuf_size`); the output
    /// buffer only when its queue is empty (never one a send still points
    /// at) and not grown past 1 MiB. At most `spare` of each are kept.
    pub(crate) fn return_buffers(
        &mut self,
        rbufs: &mut Vec<Vec<u8>>,
        wbufs: &mut Vec<Vec<u8>>,
        rbuf_size: usize,
        spare: usize,
    ) {
        // Unread bytes up to this size are moved out of the full-size read
        // buffer between turns, so the buffer can serve another connection.
        const SMALL_LEFTOVER: usize = 4096;
        if let Some(b) = self
            .detach_rbuf()
            .or_else(|| self.shrink_rbuf(SMALL_LEFTOVER))
        {
            if rbufs.len() < spare && b.len() == rbuf_size {
                rbufs.push(b);
            }
        }
        if let Some(mut b) = self.detach_wbuf() {
            if wbufs.len() < spare && b.capacity() <= 1 << 20 {
                b.clear();
                wbufs.push(b);
            }
        }
    }

    /// Takes the read buffer back when it holds no unread bytes (so idle
    /// connections hold no buffer).
    pub fn detach_rbuf(&mut self) -> Option<Vec<u8>> {
        if self.rstart == self.rend && !self.rbuf.is_empty() {
            self.rstart = 0;
            self.rend = 0;
            Some(std::mem::take(&mut self.rbuf))
        } else {
            None
        }
    }

    /// When at most `small` unread bytes remain in a larger buffer, moves
    /// them into an exact-size buffer and returns the large one (so a slow
    /// client holding a partial request costs its bytes, not a whole read
    /// buffer).
    pub fn shrink_rbuf(&mut self, small: usize) -> Option<Vec<u8>> {
        let unread = self.rend - self.rstart;
        if unread == 0 || unread > small || self.rbuf.len() <= small {
            return None;
        }
        let kept = self.rbuf[self.rstart..self.rend].to_vec();
        self.rstart = 0;
        self.rend = kept.len();
        Some(std::mem::replace(&mut self.rbuf, kept))
    }

    /// Whether the read buffer is smaller than `size` (after a shrink).
    pub fn rbuf_smaller_than(&self, size: usize) -> bool {
        self.rbuf.len() < size
    }

    /// Moves the unread bytes into `big` (a full-size buffer) and uses it;
    /// returns the previous buffer.
    pub fn grow_rbuf(&mut self, mut big: Vec<u8>) -> Vec<u8> {
        let unread = self.rend - self.rstart;
        if unread > big.len() {
            return big;
        }
        big[..unread].copy_from_slice(&self.rbuf[self.rstart..self.rend]);
        self.rcap = big.len();
        self.rstart = 0;
        self.rend = unread;
        std::mem::replace(&mut self.rbuf, big)
    }

    /// Gives the session an output buffer if its queue is empty.
    pub fn attach_wbuf(&mut self, buf: Vec<u8>) -> Option<Vec<u8>> {
        if self.out.is_empty() && self.out.buf.capacity() < buf.capacity() {
            Some(std::mem::replace(&mut self.out.buf, buf))
        } else {
            Some(buf)
        }
    }

    /// Takes the output buffer back when everything was written.
    pub fn detach_wbuf(&mut self) -> Option<Vec<u8>> {
        if self.out.is_empty() && self.out.buf.capacity() > 0 {
            Some(std::mem::take(&mut self.out.buf))
        } else {
            None
        }
    }

    /// Whether the session has a read buffer.
    pub fn has_rbuf(&self) -> bool {
        !self.rbuf.is_empty()
    }

    /// Space to read into, or None when the session must not read now
    /// (closing, output backed up, or buffer full of unanswered requests).
    pub fn read_slot(&mut self) -> Option<&mut [u8]> {
        if self.closing || self.eof || self.backed_up() {
            return None;
        }
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        } else if self.rend == self.rbuf.len() && self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        if self.rend == self.rbuf.len() {
            return None;
        }
        Some(&mut self.rbuf[self.rend..])
    }

    /// How many bytes the session takes now (after compaction), counting a
    /// detached read buffer as `full` bytes of room; None when it must not
    /// read now (closing, end of input, output backed up). For drivers
    /// that read into their own buffers and copy with
    /// [`Session::take_input`].
    pub fn room(&self, full: usize) -> Option<usize> {
        if self.closing || self.eof || self.backed_up() {
            return None;
        }
        if self.rbuf.is_empty() {
            return Some(full);
        }
        Some(self.rbuf.len() - (self.rend - self.rstart))
    }

    /// Appends `data` (read by the driver) to the unread input, compacting
    /// first; returns false, taking nothing, when it does not fit. Unlike
    /// [`Session::read_slot`] it ignores back-pressure: the driver asked
    /// [`Session::room`] before the read and must not lose what arrived.
    pub fn take_input(&mut self, data: &[u8], now: Instant) -> bool {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        }
        if self.rbuf.len() - self.rend < data.len() && self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        if self.rbuf.len() - self.rend < data.len() {
            return false;
        }
        self.rbuf[self.rend..self.rend + data.len()].copy_from_slice(data);
        self.rend += data.len();
        self.last_activity = now;
        true
    }

    /// Whether the session stopped reading for good (closing after a
    /// response, or the peer's input ended).
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// Records `n` bytes read into the slot.
    pub fn filled(&mut self, n: usize, now: Instant) {
        self.rend = (self.rend + n).min(self.rbuf.len());
        self.last_activity = now;
    }

    /// The peer closed its sending side.
    pub fn on_eof(&mut self) {
        self.eof = true;
    }

    /// Records write progress (for the send timeout).
    pub fn wrote(&mut self, now: Instant) {
        self.last_activity = now;
    }

    /// Nothing buffered, nothing to write, no request in progress.
    pub fn is_idle(&self) -> bool {
        self.rstart == self.rend && self.out.is_empty() && self.skip == 0
    }

    /// The connection is done: close it (after a lingering drain).
    pub fn finished(&self) -> bool {
        self.out.is_empty() && (self.closing || (self.eof && !self.can_progress()))
    }

    fn can_progress(&self) -> bool {
        !self.closing && self.rstart < self.rend
    }

    fn backed_up(&self) -> bool {
        self.out.mem_pending() > OUT_HIGH_WATER || self.out.files_pending() > FILES_HIGH_WATER
    }

    /// Asks the session to stop after what is in flight (graceful shutdown):
    /// an idle connection finishes at once.
    pub fn begin_shutdown(&mut self) {
        if self.is_idle() {
            self.closing = true;
        }
    }

    /// When the driver must call [`Session::on_timeout`].
    pub fn deadline(&self, h: &Handler) -> Instant {
        let cfg = h.config();
        if !self.out.is_empty() {
            self.last_activity + cfg.send_timeout
        } else if let Some(t) = self.head_started {
            t + cfg.header_timeout
        } else if self.skip > 0 {
            self.last_activity + cfg.header_timeout
        } else {
            self.last_activity + cfg.idle_timeout
        }
    }

    /// A deadline passed. Returns `Some` when the connection must be closed
    /// at once; otherwise a 408 was queued and the connection closes after
    /// writing it.
    pub fn on_timeout(&mut self, h: &mut Handler, now: Instant) -> Option<CloseReason> {
        if now < self.deadline(h) {
            return None;
        }
        if self.out.is_empty() && !self.closing && self.head_started.is_some() {
            self.head_started = None;
            self.rstart = self.rend;
            self.closing = true;
            self.failed = true;
            h.respond_error(408, false, self.peer, &mut self.out);
            self.last_activity = now;
            return None;
        }
        Some(CloseReason::Timeout)
    }

    /// Turns complete buffered requests into queued responses. With
    /// pipelining on, all of them (up to the output high-water mark); with
    /// pipelining off, at most one, and only when the previous response has
    /// been written. `shutting_down` makes the next response the last.
    pub fn process(&mut self, h: &mut Handler, now: Instant, shutting_down: bool) {
        let pipelining = h.config().pipelining;
        loop {
            if self.closing || self.backed_up() {
                return;
            }
            if !pipelining && !self.out.is_empty() {
                return;
            }
            if self.skip > 0 {
                let n = (self.skip.min((self.rend - self.rstart) as u64)) as usize;
                self.rstart += n;
                self.skip -= n as u64;
                if self.skip > 0 {
                    return;
                }
            }
            let skip = leading_empty_lines(&self.rbuf[self.rstart..self.rend]);
            self.rstart += skip;
            if self.rstart == self.rend {
                // Empty lines count as the start of a request head, so a
                // peer sending nothing but CRLFs still meets the header
                // deadline instead of staying idle forever.
                if skip > 0 && self.head_started.is_none() {
                    self.head_started = Some(now);
                }
                if shutting_down {
                    self.closing = true;
                }
                return;
            }
            let cfg = h.config();
            let limits = cfg.limits;
            let max_body = cfg.max_body_drain;
            let keep_alive_cfg = cfg.keep_alive;
            let max_req = cfg.max_requests_per_conn;
            let full = self.rend - self.rstart >= self.rcap;
            match parse_head(&self.rbuf[self.rstart..self.rend], &limits, max_body) {
                Parsed::Partial => {
                    if self.head_started.is_none() {
                        self.head_started = Some(now);
                    }
                    if full {
                        // The configured buffer is smaller than the head.
                        let has_line = self.rbuf[self.rstart..self.rend].contains(&b'\n');
                        let st = if has_line { 431 } else { 414 };
                        self.fail(h, st);
                    } else if self.eof {
                        // Incomplete request and the peer stopped sending.
                        self.rstart = self.rend;
                        self.closing = true;
                    }
                    return;
                }
                Parsed::Error(e) => {
                    self.fail(h, e.status());
                    return;
                }
                Parsed::Complete(req) => {
                    self.head_started = None;
                    self.served += 1;
                    let cap_hit = max_req.is_some_and(|m| self.served >= m);
                    let keep = keep_alive_cfg && req.keep_alive && !cap_hit && !shutting_down;
                    let conn = if !keep {
                        ConnHeader::Close
                    } else if req.version == Version::Http10 {
                        ConnHeader::KeepAlive
                    } else {
                        ConnHeader::None
                    };
                    let head = &self.rbuf[self.rstart..self.rstart + req.head_len];
                    let answer = h.respond(&req, head, conn, self.peer, &mut self.out, now);
                    self.rstart += req.head_len;
                    self.skip = req.content_length;
                    if !keep || answer.status == 400 {
                        self.closing = true;
                        return;
                    }
                    if !pipelining {
                        return;
                    }
                }
            }
        }
    }

    fn fail(&mut self, h: &mut Handler, status: u16) {
        self.failed = true;
        self.head_started = None;
        self.rstart = self.rend;
        self.closing = true;
        h.respond_error(status, false, self.peer, &mut self.out);
    }
}
