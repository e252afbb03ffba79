//! The per-connection output queue: response bytes in one contiguous buffer
//! (so pipelined responses leave in as few `send` calls as possible), with
//! file segments (sent by `sendfile`) spliced in at recorded positions.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use rustls::ServerConnection;

use crate::sys;

/// Plaintext read from a large file and encrypted per step over TLS (four
/// full TLS records).
pub const TLS_FILE_CHUNK: usize = 64 * 1024;

/// How [`OutQueue::write_to`] sends file segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOpts {
    /// `pread` + `sendmsg` instead of `sendfile`.
    pub pread: bool,
    /// Most file bytes per system call.
    pub chunk: usize,
}

/// A file range to send after `at` bytes of the memory buffer.
#[derive(Debug)]
pub struct FileSeg {
    at: usize,
    file: Arc<File>,
    off: u64,
    end: u64,
    /// The segment's whole length (what the send path is chosen by).
    len: u64,
}

/// One piece of queued output, in order ([`OutQueue::pieces`]).
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// Memory bytes.
    Mem(&'a [u8]),
    /// A file range: the file, its first offset and its end.
    File(&'a Arc<File>, u64, u64),
}

/// Queued output of one connection.
#[derive(Debug, Default)]
pub struct OutQueue {
    /// Memory bytes (heads and small bodies).
    pub buf: Vec<u8>,
    pos: usize,
    files: VecDeque<FileSeg>,
    /// Successful send/sendfile calls so far (taken by the driver).
    pub writes: u64,
    /// File bytes (not heads) [`OutQueue::write_to`] has sent so far, taken
    /// by the driver for the per-path counts of `--stats`.
    pub file_bytes: u64,
    /// Length of `buf` while it is lent to an asynchronous send
    /// ([`OutQueue::lend_mem_only`]; `buf` is then empty), else 0: the
    /// queue reads as holding those bytes until [`OutQueue::restore`].
    lent: usize,
    /// A scratch queue read only by [`OutQueue::pieces`] (HTTP/2's and
    /// HTTP/3's answers): a cached body may be queued as a reference
    /// ([`OutQueue::push_last_shared`]) instead of copied, since the
    /// protocol copies it into its frames anyway.
    share: bool,
    /// The body queued by reference: the bytes `[a..end]`, after
    /// everything else.
    tail: Option<(Arc<[u8]>, usize, usize)>,
}

/// Smallest cached body a scratch queue takes by reference: below it, the
/// copy costs less than the reference count's two atomic operations.
const SHARE_MIN: usize = 1024;

/// Result of [`OutQueue::write_to`].
/// Most file bytes one gathered copy reads and sends
/// ([`OutQueue::write_gathered`]).
const GATHER_BYTES: usize = 64 * 1024;
/// Most file segments (HTTP/2 DATA frames) in one gathered `sendmsg`.
const GATHER_SEGMENTS: usize = 32;

/// [`OutQueue::write_to`]'s progress within one call.
#[derive(Default)]
struct Progress {
    /// Bytes sent.
    sent: usize,
    /// Bytes of the front file segment already read into `scratch`
    /// (`scratch[held.0..held.1]`, starting at that segment's `off`) but not
    /// yet sent: after a short write they are sent from there instead of
    /// being read again. Only valid within one call (the buffer is shared by
    /// the worker's connections).
    held: (usize, usize),
}

/// What [`OutQueue::copy_step`] did.
enum Step {
    /// Bytes moved: go round again.
    Again,
    /// No file bytes to copy now: go on to the memory and sendfile paths.
    On,
    /// Stop with this result.
    Stop(Flush),
}

/// What [`OutQueue::write_gathered`] did.
enum Gathered {
    /// The front of the queue is not a run of one file's segments.
    No,
    /// `n` bytes left (memory and file bytes).
    Sent(usize),
    /// The socket takes nothing now.
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// Everything queued was written.
    Done,
    /// The socket would block; wait for writability.
    Blocked,
    /// The byte budget for this turn was used up; come back later.
    Yield,
}

impl OutQueue {
    /// Nothing left to write.
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len() + self.lent && self.files.is_empty()
    }

    /// Memory bytes not yet written.
    pub fn mem_pending(&self) -> usize {
        self.buf.len() + self.lent - self.pos
    }

    /// The whole length of the front file segment, if any.
    pub fn front_file_len(&self) -> Option<u64> {
        self.files.front().map(|f| f.len)
    }

    /// Number of queued file segments.
    pub fn files_pending(&self) -> usize {
        self.files.len()
    }

    /// Lends the memory buffer to an asynchronous send (the io_uring
    /// engine sends the memory bytes with one SEND when no file segment is
    /// queued; with file segments queued it uses [`OutQueue::write_to`]
    /// instead): the buffer, and where its unsent bytes start. Until [`OutQueue::restore`] gives it back the
    /// queue reads as before (not empty, the same bytes pending) but must
    /// not be written to.
    pub fn lend_mem_only(&mut self) -> Option<(Vec<u8>, usize)> {
        if self.lent == 0 && self.files.is_empty() && self.pos < self.buf.len() {
            self.lent = self.buf.len();
            Some((std::mem::take(&mut self.buf), self.pos))
        } else {
            None
        }
    }

    /// Takes back the buffer of [`OutQueue::lend_mem_only`] (unchanged).
    pub fn restore(&mut self, buf: Vec<u8>) {
        debug_assert_eq!(buf.len(), self.lent);
        self.buf = buf;
        self.lent = 0;
    }

    /// Records that `n` bytes of the memory buffer were sent (after
    /// [`OutQueue::restore`], for a lent buffer);
    /// resets the buffer once everything was.
    pub fn mem_sent(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
        self.writes += 1;
        if self.pos == self.buf.len() && self.files.is_empty() {
            self.buf.clear();
            self.pos = 0;
        }
    }

    /// A scratch queue, read only by [`OutQueue::pieces`]: a large cached
    /// body may be queued by reference.
    pub fn scratch() -> OutQueue {
        OutQueue {
            share: true,
            ..OutQueue::default()
        }
    }

    /// A scratch queue ([`OutQueue::scratch`]): HTTP/2's or HTTP/3's
    /// answer, read by [`OutQueue::pieces`] and framed.
    pub fn is_scratch(&self) -> bool {
        self.share
    }

    /// Queues `body[a..end]` as the answer's last bytes: by reference on
    /// a scratch queue ([`OutQueue::scratch`]) when it is large, else
    /// copied. Nothing may be queued after it.
    pub fn push_last_shared(&mut self, body: &Arc<[u8]>, a: usize, end: usize) {
        let end = end.min(body.len());
        if a >= end {
            return;
        }
        if self.share && end - a >= SHARE_MIN && self.files.is_empty() && self.tail.is_none() {
            self.tail = Some((Arc::clone(body), a, end));
        } else {
            self.buf.extend_from_slice(&body[a..end]);
        }
    }

    /// What is queued, in order, as memory bytes and file ranges: how a
    /// protocol that frames its output (HTTP/2) reads a response the
    /// handler queued on a scratch queue. [`OutQueue::clear`] empties it.
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> + '_ {
        let mut pos = self.pos;
        let mut files = self.files.iter();
        let mut file = None;
        let mut tail = self.tail.as_ref().map(|(b, a, e)| &b[*a..*e]);
        std::iter::from_fn(move || loop {
            if let Some(f) = file.take() {
                let f: &FileSeg = f;
                return Some(Piece::File(&f.file, f.off, f.end));
            }
            match files.next() {
                Some(f) if pos < f.at => {
                    let mem = &self.buf[pos..f.at];
                    pos = f.at;
                    file = Some(f);
                    return Some(Piece::Mem(mem));
                }
                Some(f) => file = Some(f),
                None if pos < self.buf.len() => {
                    let mem = &self.buf[pos..];
                    pos = self.buf.len();
                    return Some(Piece::Mem(mem));
                }
                None => return tail.take().map(Piece::Mem),
            }
        })
    }

    /// Forgets everything queued (a scratch queue, once read with
    /// [`OutQueue::pieces`]); the buffer keeps its capacity.
    pub fn clear(&mut self) {
        debug_assert_eq!(self.lent, 0);
        self.buf.clear();
        self.pos = 0;
        self.files.clear();
        self.tail = None;
    }

    /// Queues `file[off..end]` after the bytes queued so far.
    pub fn push_file(&mut self, file: &Arc<File>, off: u64, end: u64) {
        self.push_file_part(file, off, end, end.saturating_sub(off));
    }

    /// Queues `file[off..end]`, one part of a body of `whole` file bytes
    /// (an HTTP/2 DATA frame's payload): the send path is chosen by the
    /// body's length, not the frame's, so a large file framed in 16 KiB
    /// pieces is treated as the large file it is.
    pub fn push_file_part(&mut self, file: &Arc<File>, off: u64, end: u64, whole: u64) {
        if end > off {
            self.files.push_back(FileSeg {
                at: self.buf.len(),
                file: Arc::clone(file),
                off,
                end,
                len: whole.max(end - off),
            });
        }
    }

    /// Moves everything queued into `sink` (file segments read from their
    /// files), as if it had been written; for tests and fuzz targets, which
    /// drive a session without a socket.
    pub fn drain_into(&mut self, sink: &mut Vec<u8>) {
        use std::os::unix::fs::FileExt;
        for f in std::mem::take(&mut self.files) {
            if self.pos < f.at {
                sink.extend_from_slice(&self.buf[self.pos..f.at]);
                self.pos = f.at;
            }
            let mut off = f.off;
            let mut chunk = [0u8; 8192];
            while off < f.end {
                let want = ((f.end - off) as usize).min(chunk.len());
                match f.file.read_at(&mut chunk[..want], off) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        sink.extend_from_slice(&chunk[..n]);
                        off += n as u64;
                    }
                }
            }
        }
        sink.extend_from_slice(&self.buf[self.pos..]);
        self.buf.clear();
        self.pos = 0;
    }

    /// The copy path for a run of file segments of one file, back to back
    /// in it, each behind a few memory bytes: HTTP/2's DATA frames (a
    /// 9-octet header, then at most 16 KiB of the file). Sent one frame at a
    /// time that is two system calls per 16 KiB (sendfile after a corked
    /// header, or pread then sendmsg); here one `pread` reads the run (at
    /// most [`GATHER_BYTES`] and [`GATHER_SEGMENTS`] segments) and one
    /// `sendmsg` sends headers and file bytes interleaved. A short write
    /// keeps nothing read (the rest is read again). `No`: the queue's front
    /// is not such a run.
    fn write_gathered(
        &mut self,
        fd: RawFd,
        limit: usize,
        scratch: &mut Vec<u8>,
    ) -> io::Result<Gathered> {
        let Some(f0) = self.files.front() else {
            return Ok(Gathered::No);
        };
        let limit = limit.min(GATHER_BYTES) as u64;
        let (start, mut end, mut k) = (f0.off, f0.end, 1);
        while let Some(g) = self.files.get(k) {
            if k == GATHER_SEGMENTS
                || !Arc::ptr_eq(&g.file, &f0.file)
                || g.off != end
                || g.end - start > limit
            {
                break;
            }
            end = g.end;
            k += 1;
        }
        if k < 2 {
            return Ok(Gathered::No);
        }
        let total = (end - start) as usize;
        if scratch.len() < total {
            scratch.resize(total, 0);
        }
        let got = loop {
            match f0.file.read_at(&mut scratch[..total], start) {
                // The file shrank under us: the promised length cannot be
                // delivered, so the connection must end.
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => break n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let mut iov = [io::IoSlice::new(&[]); 2 * GATHER_SEGMENTS];
        let mut used = 0;
        let mut pos = self.pos;
        for f in self.files.iter().take(k) {
            if f.off - start >= got {
                break;
            }
            if pos < f.at {
                iov[used] = io::IoSlice::new(&self.buf[pos..f.at]);
                used += 1;
                pos = f.at;
            }
            let (a, b) = ((f.off - start) as usize, (f.end - start).min(got) as usize);
            iov[used] = io::IoSlice::new(&scratch[a..b]);
            used += 1;
        }
        let n = loop {
            match sys::send_vectored(fd, &iov[..used]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Gathered::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.writes += 1;
        // Account the bytes sent piece by piece: memory up to the front
        // segment, then its file bytes (popped when whole).
        let mut left = n;
        while left > 0 {
            let Some(f) = self.files.front_mut() else {
                break;
            };
            let mem = (f.at - self.pos).min(left);
            self.pos += mem;
            left -= mem;
            let file = ((f.end - f.off) as usize).min(left);
            f.off += file as u64;
            self.file_bytes += file as u64;
            left -= file;
            if f.off == f.end {
                self.files.pop_front();
            }
        }
        Ok(Gathered::Sent(n))
    }

    /// One step of the copy path ([`FileOpts::pread`]) of
    /// [`OutQueue::write_to`]: a gathered run of one file's segments
    /// ([`OutQueue::write_gathered`]), else the front segment read into
    /// `scratch` (at most `opts.chunk` bytes, kept in `p.held` across a
    /// short write) and sent behind the memory bytes queued in front of it
    /// in one `sendmsg`. `On`: nothing of a file's to copy now.
    fn copy_step(
        &mut self,
        fd: RawFd,
        opts: FileOpts,
        budget: usize,
        p: &mut Progress,
        scratch: &mut Vec<u8>,
        written: &mut u64,
    ) -> io::Result<Step> {
        if p.held.0 == p.held.1 && p.sent < budget {
            match self.write_gathered(fd, budget - p.sent, scratch)? {
                Gathered::No => {}
                Gathered::Sent(n) => {
                    p.sent += n;
                    *written += n as u64;
                    return Ok(Step::Again);
                }
                Gathered::Blocked => return Ok(Step::Stop(Flush::Blocked)),
            }
        }
        let next_at = self.files.front().map_or(self.buf.len(), |f| f.at);
        let Some(f) = self.files.front_mut() else {
            return Ok(Step::On);
        };
        if p.held.0 == p.held.1 && f.off < f.end && p.sent < budget {
            let want = (f.end - f.off).min(opts.chunk as u64) as usize;
            if scratch.len() < want {
                scratch.resize(opts.chunk.max(want), 0);
            }
            match f.file.read_at(&mut scratch[..want], f.off) {
                // The file shrank under us: the promised length cannot be
                // delivered, so the connection must end.
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => p.held = (0, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(Step::Again),
                Err(e) => return Err(e),
            }
        }
        if p.held.0 == p.held.1 {
            return Ok(Step::On);
        }
        // Memory bytes up to the file (the head), then the file bytes
        // read, in one sendmsg.
        let mem = &self.buf[self.pos..next_at];
        let file = &scratch[p.held.0..p.held.1];
        let r = if mem.is_empty() {
            sys::send(fd, file, false)
        } else {
            sys::send_vectored(fd, &[io::IoSlice::new(mem), io::IoSlice::new(file)])
        };
        match r {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                self.writes += 1;
                *written += n as u64;
                let from_mem = n.min(mem.len());
                self.pos += from_mem;
                let from_file = n - from_mem;
                p.held.0 += from_file;
                f.off += from_file as u64;
                self.file_bytes += from_file as u64;
                p.sent += n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Ok(Step::Stop(Flush::Blocked))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(Step::Again)
    }

    /// Writes to socket `fd` until done, blocked, or `budget` bytes were
    /// sent; `written` is increased by the bytes sent. File segments go out
    /// as `opts` says: `sendfile` calls of at most `opts.chunk` bytes, or
    /// `pread` of at most `opts.chunk` bytes into `scratch` (one buffer per
    /// worker, allocated once) followed by one `sendmsg` that also carries
    /// the memory bytes queued in front (the response head).
    pub fn write_to(
        &mut self,
        fd: RawFd,
        budget: usize,
        opts: FileOpts,
        scratch: &mut Vec<u8>,
        written: &mut u64,
    ) -> io::Result<Flush> {
        debug_assert!(self.tail.is_none(), "a scratch queue is read by pieces()");
        // Bytes sent so far, and the front segment's bytes read ahead.
        let mut p = Progress::default();
        loop {
            if opts.pread {
                match self.copy_step(fd, opts, budget, &mut p, scratch, written)? {
                    Step::Again => continue,
                    Step::On => {}
                    Step::Stop(f) => return Ok(f),
                }
            }
            let sent = p.sent;
            let next_at = self.files.front().map_or(self.buf.len(), |f| f.at);
            if self.pos < next_at {
                let chunk = &self.buf[self.pos..next_at];
                let more = !self.files.is_empty();
                match sys::send(fd, chunk, more) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.writes += 1;
                        self.pos += n;
                        p.sent += n;
                        *written += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flush::Blocked),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            if let Some(f) = self.files.front_mut() {
                if f.off >= f.end {
                    self.files.pop_front();
                    continue;
                }
                if sent >= budget {
                    return Ok(Flush::Yield);
                }
                let want = (f.end - f.off)
                    .min((budget - sent) as u64)
                    .min(opts.chunk as u64) as usize;
                match sys::sendfile(fd, f.file.as_raw_fd(), &mut f.off, want) {
                    // The file shrank under us: the promised length cannot be
                    // delivered, so the connection must end.
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => {
                        self.writes += 1;
                        self.file_bytes += n as u64;
                        p.sent += n;
                        *written += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flush::Blocked),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            self.buf.clear();
            self.pos = 0;
            return Ok(Flush::Done);
        }
    }

    /// Like [`OutQueue::write_to`], through TLS: `flush` sends rustls'
    /// queued records to the socket. A queue of memory bytes only (a cached
    /// file's head and body, or a batch of pipelined responses) goes into
    /// the TLS writer in one piece, so it leaves as one record sequence in
    /// one `sendmsg`; with file segments queued, memory and file bytes are
    /// gathered in order into `scratch` ([`OutQueue::gather_plain`], at most
    /// [`TLS_FILE_CHUNK`] bytes), encrypted and sent before the next piece
    /// is read (never the whole file in memory).
    /// New plaintext is fed only once everything before it was sent, which
    /// bounds what rustls holds. `budget` bounds file bytes per call.
    pub fn write_tls(
        &mut self,
        tls: &mut ServerConnection,
        flush: &mut dyn FnMut(&mut ServerConnection) -> io::Result<usize>,
        scratch: &mut Vec<u8>,
        budget: usize,
        written: &mut u64,
    ) -> io::Result<Flush> {
        let mut fed = 0usize;
        loop {
            while tls.wants_write() {
                match flush(tls) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.writes += 1;
                        *written += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flush::Blocked),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if self.files.is_empty() {
                if self.pos < self.buf.len() {
                    let n = tls.writer().write(&self.buf[self.pos..])?;
                    if n == 0 {
                        // Only before the handshake ends or after
                        // close_notify; the session queues nothing then.
                        return Err(io::ErrorKind::WriteZero.into());
                    }
                    self.pos += n;
                    continue;
                }
                self.buf.clear();
                self.pos = 0;
                return Ok(Flush::Done);
            }
            if fed >= budget {
                return Ok(Flush::Yield);
            }
            let n = self.gather_plain(scratch)?;
            tls.writer().write_all(&scratch[..n])?;
            fed += n;
        }
    }

    /// Copies the front of the queue, memory bytes and file bytes (read
    /// with `pread`) in order, into `scratch`, at most [`TLS_FILE_CHUNK`]
    /// bytes: TLS then seals full records of it, so a response head or an
    /// HTTP/2 frame header shares a record (and a `sendmsg`) with the file
    /// bytes after it instead of leaving as a record of its own.
    fn gather_plain(&mut self, scratch: &mut Vec<u8>) -> io::Result<usize> {
        if scratch.len() < TLS_FILE_CHUNK {
            scratch.resize(TLS_FILE_CHUNK, 0);
        }
        let mut len = 0;
        while len < TLS_FILE_CHUNK {
            let next_at = self.files.front().map_or(self.buf.len(), |f| f.at);
            if self.pos < next_at {
                let c = (next_at - self.pos).min(TLS_FILE_CHUNK - len);
                scratch[len..len + c].copy_from_slice(&self.buf[self.pos..self.pos + c]);
                self.pos += c;
                len += c;
                continue;
            }
            let Some(f) = self.files.front_mut() else {
                break;
            };
            if f.off >= f.end {
                self.files.pop_front();
                continue;
            }
            let want = ((f.end - f.off) as usize).min(TLS_FILE_CHUNK - len);
            match f.file.read_at(&mut scratch[len..len + want], f.off) {
                // The file shrank under us: the promised length cannot be
                // delivered, so the connection must end.
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    f.off += n as u64;
                    len += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_queue_reads_a_large_body_by_reference_and_last() {
        let body: Arc<[u8]> = (0..5000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
        let mem = |q: &OutQueue| -> Vec<Vec<u8>> {
            q.pieces()
                .map(|p| match p {
                    Piece::Mem(m) => m.to_vec(),
                    Piece::File(..) => panic!("no file queued"),
                })
                .collect()
        };
        let mut q = OutQueue::scratch();
        q.buf.extend_from_slice(b"head");
        q.push_last_shared(&body, 100, 4200);
        assert_eq!(q.buf, b"head", "taken by reference, not copied");
        assert_eq!(mem(&q), vec![b"head".to_vec(), body[100..4200].to_vec()]);
        q.clear();
        assert!(q.pieces().next().is_none());
        // A small body, and any body on a queue that is written to a
        // socket, is copied.
        q.push_last_shared(&body, 0, 100);
        assert_eq!(q.buf, &body[..100]);
        let mut plain = OutQueue::default();
        plain.push_last_shared(&body, 0, 5000);
        assert_eq!(plain.buf, &body[..]);
        // A range past the body's end is cut at it.
        let mut q = OutQueue::scratch();
        q.push_last_shared(&body, 3000, 9000);
        assert_eq!(mem(&q), vec![body[3000..].to_vec()]);
    }

    #[test]
    fn pieces_come_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = Arc::new(File::open(&path).unwrap());
        let mut q = OutQueue::default();
        q.buf.extend_from_slice(b"head");
        q.push_file(&f, 0, 4);
        q.push_file(&f, 6, 8);
        q.buf.extend_from_slice(b"mid");
        q.push_file(&f, 8, 10);
        let got: Vec<String> = q
            .pieces()
            .map(|p| match p {
                Piece::Mem(m) => String::from_utf8_lossy(m).into_owned(),
                Piece::File(_, a, b) => format!("[{a}..{b}]"),
            })
            .collect();
        assert_eq!(got, ["head", "[0..4]", "[6..8]", "mid", "[8..10]"]);
        q.clear();
        assert!(q.is_empty() && q.pieces().next().is_none());
    }

    /// A queue laid out as HTTP/2 frames of `file`: `frames` 9-octet
    /// headers, each followed by a file segment of `seg` bytes, back to
    /// back in the file, then a trailing memory tail; and the bytes a peer
    /// must receive for it.
    fn h2_like(file: &Arc<File>, data: &[u8], seg: usize) -> (OutQueue, Vec<u8>) {
        let mut q = OutQueue::default();
        let mut want = Vec::new();
        for (i, chunk) in data.chunks(seg).enumerate() {
            let head = [b'H', i as u8, 0, 0, 0, 0, 0, 0, 0];
            q.buf.extend_from_slice(&head);
            want.extend_from_slice(&head);
            let off = (i * seg) as u64;
            q.push_file(file, off, off + chunk.len() as u64);
            want.extend_from_slice(chunk);
        }
        q.buf.extend_from_slice(b"tail");
        want.extend_from_slice(b"tail");
        (q, want)
    }

    fn data_file(len: usize) -> (tempfile::TempDir, Arc<File>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = Arc::new(File::open(&path).unwrap());
        (dir, f, data)
    }

    /// Drains `q` into a connected TCP socket read by another thread,
    /// with `opts`, in calls of `budget`; the bytes the peer received.
    fn drain_tcp(q: &mut OutQueue, opts: FileOpts, budget: usize) -> Vec<u8> {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut s, &mut got).unwrap();
            got
        });
        let s = std::net::TcpStream::connect(addr).unwrap();
        let mut scratch = Vec::new();
        let mut written = 0u64;
        loop {
            // A blocking socket: Blocked never happens; Yield is a budget.
            match q.write_to(s.as_raw_fd(), budget, opts, &mut scratch, &mut written) {
                Ok(Flush::Done) => break,
                Ok(_) => {}
                Err(e) => panic!("write: {e}"),
            }
        }
        drop(s);
        let got = reader.join().unwrap();
        assert_eq!(written, got.len() as u64);
        got
    }

    #[test]
    fn gathered_copy_sends_frames_in_order_in_few_writes() {
        let (_d, f, data) = data_file(300_000);
        for (seg, budget) in [(16_384, usize::MAX), (16_384, 40_000), (1000, 7777)] {
            let (mut q, want) = h2_like(&f, &data, seg);
            let opts = FileOpts {
                pread: true,
                chunk: 64 * 1024,
            };
            let got = drain_tcp(&mut q, opts, budget);
            assert!(got == want, "seg {seg} budget {budget}: bytes differ");
            assert!(q.is_empty());
            if budget == usize::MAX {
                // One write per GATHER_BYTES of file (and the tail), not
                // one or two per frame.
                let frames = data.len().div_ceil(seg) as u64;
                assert!(
                    q.writes < frames / 2,
                    "{} writes for {frames} frames",
                    q.writes
                );
            }
        }
        // sendfile keeps its own path, byte for byte the same.
        let (mut q, want) = h2_like(&f, &data, 16_384);
        let opts = FileOpts {
            pread: false,
            chunk: 2 << 20,
        };
        assert!(drain_tcp(&mut q, opts, usize::MAX) == want);
    }

    #[test]
    fn gather_plain_interleaves_heads_and_file_bytes() {
        let (_d, f, data) = data_file(150_000);
        let (mut q, want) = h2_like(&f, &data, 16_384);
        let mut scratch = Vec::new();
        let mut got = Vec::new();
        while !q.files.is_empty() {
            let n = q.gather_plain(&mut scratch).unwrap();
            assert!(n <= TLS_FILE_CHUNK);
            got.extend_from_slice(&scratch[..n]);
        }
        got.extend_from_slice(&q.buf[q.pos..]);
        assert!(got == want);
    }

    #[test]
    fn a_file_that_shrank_ends_the_gathered_write() {
        let (d, f, data) = data_file(100_000);
        let (mut q, _) = h2_like(&f, &data, 16_384);
        std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join("f"))
            .unwrap()
            .set_len(10)
            .unwrap();
        let mut scratch = Vec::new();
        let mut got = 0;
        let e = loop {
            match q.gather_plain(&mut scratch) {
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "after {got} bytes");
    }
}
