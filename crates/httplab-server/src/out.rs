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
}

/// Result of [`OutQueue::write_to`].
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

    /// What is queued, in order, as memory bytes and file ranges: how a
    /// protocol that frames its output (HTTP/2) reads a response the
    /// handler queued on a scratch queue. [`OutQueue::clear`] empties it.
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> + '_ {
        let mut pos = self.pos;
        let mut files = self.files.iter();
        let mut file = None;
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
                None => return None,
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
    }

    /// Queues `file[off..end]` after the bytes queued so far.
    pub fn push_file(&mut self, file: &Arc<File>, off: u64, end: u64) {
        if end > off {
            self.files.push_back(FileSeg {
                at: self.buf.len(),
                file: Arc::clone(file),
                off,
                end,
                len: end - off,
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
        let mut sent = 0usize;
        // Bytes of the front file segment already read into `scratch`
        // (scratch[held.0..held.1], starting at that segment's `off`) but not
        // yet sent: after a short write they are sent from here instead of
        // being read again. Only valid within this call (the buffer is
        // shared by the worker's connections).
        let mut held: (usize, usize) = (0, 0);
        loop {
            let next_at = self.files.front().map_or(self.buf.len(), |f| f.at);
            if opts.pread {
                if let Some(f) = self.files.front_mut() {
                    if held.0 == held.1 && f.off < f.end && sent < budget {
                        let want = (f.end - f.off).min(opts.chunk as u64) as usize;
                        if scratch.len() < want {
                            scratch.resize(opts.chunk.max(want), 0);
                        }
                        match f.file.read_at(&mut scratch[..want], f.off) {
                            // The file shrank under us: the promised length
                            // cannot be delivered, so the connection must end.
                            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                            Ok(n) => held = (0, n),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(e),
                        }
                    }
                    if held.0 < held.1 {
                        // Memory bytes up to the file (the head), then the
                        // file bytes read, in one sendmsg.
                        let mem = &self.buf[self.pos..next_at];
                        let file = &scratch[held.0..held.1];
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
                                held.0 += from_file;
                                f.off += from_file as u64;
                                self.file_bytes += from_file as u64;
                                sent += n;
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                                return Ok(Flush::Blocked)
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                        continue;
                    }
                }
            }
            if self.pos < next_at {
                let chunk = &self.buf[self.pos..next_at];
                let more = !self.files.is_empty();
                match sys::send(fd, chunk, more) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.writes += 1;
                        self.pos += n;
                        sent += n;
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
                        sent += n;
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
    /// queued records to the socket. Memory bytes up to the next file
    /// segment (a cached file's head and body, or a batch of pipelined
    /// responses) go into the TLS writer in one piece, so they leave as one
    /// record sequence in one `sendmsg`; file segments are read with
    /// `pread` in [`TLS_FILE_CHUNK`] pieces into `scratch`, encrypted and
    /// sent before the next piece is read (never the whole file in memory).
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
            let next_at = self.files.front().map_or(self.buf.len(), |f| f.at);
            if self.pos < next_at {
                let n = tls.writer().write(&self.buf[self.pos..next_at])?;
                if n == 0 {
                    // Only before the handshake ends or after close_notify;
                    // the session queues nothing then.
                    return Err(io::ErrorKind::WriteZero.into());
                }
                self.pos += n;
                continue;
            }
            if let Some(f) = self.files.front_mut() {
                if f.off >= f.end {
                    self.files.pop_front();
                    continue;
                }
                if fed >= budget {
                    return Ok(Flush::Yield);
                }
                if scratch.len() < TLS_FILE_CHUNK {
                    scratch.resize(TLS_FILE_CHUNK, 0);
                }
                let want = (f.end - f.off).min(TLS_FILE_CHUNK as u64) as usize;
                let n = match f.file.read_at(&mut scratch[..want], f.off) {
                    // The file shrank under us: the promised length cannot
                    // be delivered, so the connection must end.
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                tls.writer().write_all(&scratch[..n])?;
                f.off += n as u64;
                fed += n;
                continue;
            }
            self.buf.clear();
            self.pos = 0;
            return Ok(Flush::Done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
