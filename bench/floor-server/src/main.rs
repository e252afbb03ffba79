//! The floor server: the least work an HTTP/1.1 server can do per request,
//! to measure how far `httplab serve` is from it. It answers every request
//! with one prebuilt reply (the head and the bytes of one file, read once at
//! start): no parsing beyond finding each request's end (`\r\n\r\n`), no
//! path lookup, no file system, no date, no log, no statistics. One thread,
//! epoll (mio), keep-alive; pipelined requests are answered together in one
//! write. New connections take the cheapest path an epoll loop has, the one
//! `httplab serve` takes by default: TCP_DEFER_ACCEPT on the listener (a
//! connection is accepted once its request is there), the request read at
//! once after accept, sockets registered for reading only (writable interest
//! only while a reply waits); a request carrying `Connection: close` is answered and the
//! connection closed, as a server must.
//!
//!
//! With `h2` it speaks HTTP/2 in cleartext (prior knowledge) instead, at
//! the same floor: it skips the client's preface, acknowledges its
//! SETTINGS, and answers every HEADERS frame with one prebuilt response
//! (a two-field HPACK block, `:status 200` and `content-length`, and one
//! DATA frame ending the stream) with the stream's id patched in; every
//! other frame is skipped unread. No HPACK decoding, no flow control (the
//! file must fit one 16 KiB frame), no request checks: the least an h2c
//! server can do per request on one epoll loop.
//!
//! Usage: floor-server ADDR FILE [SECONDS] [h2]
//! (listens on ADDR, e.g. 127.0.0.1:8080; stops by itself after SECONDS,
//! default 600, or at SIGTERM/SIGINT's default action). Prints `listening`
//! once it accepts, and at exit `requests N connections C`.
#![forbid(unsafe_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);
/// Replies prebuilt for one write of pipelined requests (more are answered
/// in several writes).
const BATCH: usize = 16;

struct Conn {
    sock: TcpStream,
    /// How much of a request's end the last read ended in (see [`count_ends`]).
    state: u8,
    /// Bytes of the current write not yet written (replies larger than the
    /// socket buffer).
    pending: usize,
    /// Replies owed before a write completes.
    owed: usize,
    close_after: bool,
    /// Registered for writable events too (once a reply had to wait).
    writable: bool,
    /// HTTP/2 only (empty otherwise, nothing allocated).
    h2: H2Conn,
}

struct Floor {
    /// BATCH replies back to back; a write of k replies takes the first k.
    replies: Vec<u8>,
    one: usize,
    requests: u64,
    connections: u64,
    /// HTTP/2 (cleartext, prior knowledge) instead of HTTP/1.1.
    h2: Option<H2>,
}

/// The HTTP/2 floor's prebuilt response.
struct H2 {
    /// HEADERS frame then DATA frame (END_STREAM), stream id 0 in both.
    reply: Vec<u8>,
    /// Offset of the DATA frame's header in `reply`.
    data_at: usize,
}

/// One HTTP/2 connection's state: the bytes of an incomplete frame (or of
/// the preface) carried to the next read, and the output not yet written.
#[derive(Default)]
struct H2Conn {
    /// Preface octets still to skip.
    skip: usize,
    carry: Vec<u8>,
    out: Vec<u8>,
    /// How much of `out` was written.
    sent: usize,
}

/// The client's connection preface (RFC 9113 §3.4).
const PREFACE_LEN: usize = 24;
const FRAME_HEADERS: u8 = 1;
const FRAME_SETTINGS: u8 = 4;
const FLAG_ACK: u8 = 1;
const MAX_FRAME: usize = 16384;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: floor-server ADDR FILE [SECONDS]");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("ADDR as ip:port");
    let body = std::fs::read(&args[2]).expect("FILE readable");
    let secs: f64 = args.get(3).map_or(600.0, |s| s.parse().expect("SECONDS"));
    let h2 = match args.get(4).map(String::as_str) {
        None => None,
        Some("h2") => Some(H2::new(&body)),
        Some(other) => {
            eprintln!("unknown mode {other:?}: the fourth argument is `h2` or nothing");
            std::process::exit(2);
        }
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: floor\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut one = head.into_bytes();
    one.extend_from_slice(&body);
    let n = if one.len() <= 4096 { BATCH } else { 1 };
    let mut f = Floor {
        replies: one.repeat(n),
        one: one.len(),
        requests: 0,
        connections: 0,
        h2,
    };
    f.run(addr, Duration::from_secs_f64(secs));
    println!("requests {} connections {}", f.requests, f.connections);
}

impl Floor {
    fn run(&mut self, addr: SocketAddr, limit: Duration) {
        let mut poll = Poll::new().expect("epoll");
        let mut listener = TcpListener::bind(addr).expect("bind");
        {
            use std::os::fd::AsRawFd;
            httplab_sys::net::set_defer_accept(listener.as_raw_fd(), 1).expect("TCP_DEFER_ACCEPT");
        }
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .expect("register");
        println!("listening");
        let mut events = Events::with_capacity(1024);
        let mut conns: Vec<Option<Conn>> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        let start = Instant::now();
        while start.elapsed() < limit {
            match poll.poll(&mut events, Some(Duration::from_millis(200))) {
                // A signal (strace attaching, for one) is no failure.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                r => r.expect("epoll_wait"),
            }
            for ev in events.iter() {
                if ev.token() == LISTENER {
                    self.accept(&poll, &listener, &mut conns, &mut free, &mut buf);
                    continue;
                }
                let i = ev.token().0;
                let Some(c) = conns.get_mut(i).and_then(Option::as_mut) else {
                    continue;
                };
                let keep = (!ev.is_writable() || self.flush(c)) && self.serve(c, &mut buf);
                if keep && c.pending > 0 && !c.writable {
                    // A reply larger than the socket buffer: wait for room.
                    c.writable = true;
                    poll.registry()
                        .reregister(
                            &mut c.sock,
                            ev.token(),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .expect("reregister");
                }
                if !keep {
                    if let Some(mut c) = conns[i].take() {
                        let _ = poll.registry().deregister(&mut c.sock);
                    }
                    free.push(i);
                }
            }
        }
    }

    fn accept(
        &mut self,
        poll: &Poll,
        listener: &TcpListener,
        conns: &mut Vec<Option<Conn>>,
        free: &mut Vec<usize>,
        buf: &mut [u8],
    ) {
        loop {
            match listener.accept() {
                Ok((sock, _)) => {
                    self.connections += 1;
                    let mut c = Conn {
                        sock,
                        state: 0,
                        pending: 0,
                        owed: 0,
                        close_after: false,
                        writable: false,
                        h2: H2Conn::default(),
                    };
                    if self.h2.is_some() {
                        // The server's SETTINGS (empty: every default)
                        // leave with the first replies.
                        c.h2.skip = PREFACE_LEN;
                        c.h2.out
                            .extend_from_slice(&frame_head(0, FRAME_SETTINGS, 0, 0));
                    }
                    // The request is there (deferred accept): answer it
                    // before the socket ever meets epoll.
                    if !self.serve(&mut c, buf) {
                        continue;
                    }
                    let i = free.pop().unwrap_or_else(|| {
                        conns.push(None);
                        conns.len() - 1
                    });
                    c.writable = c.pending > 0;
                    let interest = if c.writable {
                        Interest::READABLE | Interest::WRITABLE
                    } else {
                        Interest::READABLE
                    };
                    poll.registry()
                        .register(&mut c.sock, Token(i), interest)
                        .expect("register");
                    conns[i] = Some(c);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => return,
            }
        }
    }

    /// Reads every request there is and answers them; false: close.
    fn serve(&mut self, c: &mut Conn, buf: &mut [u8]) -> bool {
        if self.h2.is_some() {
            return self.serve_h2(c, buf);
        }
        loop {
            let n = match read_some(c, buf) {
                Got::Bytes(n) => n,
                Got::Wait => return true,
                Got::Close => return false,
            };
            let ends = count_ends(&mut c.state, &buf[..n]);
            if ends > 0 && contains(&buf[..n], b"\r\nConnection: close") {
                c.close_after = true;
            }
            c.owed += ends;
            if !self.flush(c) {
                return false;
            }
            if n < buf.len() {
                // Drained: see `serve_h2`.
                return true;
            }
        }
    }

    /// [`Floor::serve`] over HTTP/2: the frames read are answered in one
    /// write.
    fn serve_h2(&mut self, c: &mut Conn, buf: &mut [u8]) -> bool {
        let Some(h2) = &self.h2 else {
            return false;
        };
        loop {
            let n = match read_some(c, buf) {
                Got::Bytes(n) => n,
                Got::Wait => return true,
                Got::Close => return false,
            };
            let st = &mut c.h2;
            if st.carry.is_empty() {
                let used = h2.frames(st, &buf[..n], &mut self.requests);
                st.carry.extend_from_slice(&buf[used..n]);
            } else {
                let mut carry = std::mem::take(&mut st.carry);
                carry.extend_from_slice(&buf[..n]);
                let used = h2.frames(st, &carry, &mut self.requests);
                carry.drain(..used);
                st.carry = carry;
            }
            if !flush_h2(c) {
                return false;
            }
            if n < buf.len() {
                // A short read emptied the socket's queue: what arrives
                // next raises a new edge (mio's epoll is edge-triggered),
                // so the read that would only say EAGAIN is skipped, as
                // `httplab serve` skips it.
                return true;
            }
        }
    }

    /// Writes the replies owed; false: close (an error, or the last reply
    /// of a `Connection: close` request written).
    fn flush(&mut self, c: &mut Conn) -> bool {
        if self.h2.is_some() {
            return flush_h2(c);
        }
        loop {
            if c.pending == 0 {
                if c.owed == 0 {
                    return !c.close_after;
                }
                let k = c.owed.min(self.replies.len() / self.one);
                c.owed -= k;
                self.requests += k as u64;
                c.pending = k * self.one;
            }
            // Every copy is the same reply: the last `pending` bytes of the
            // batch are what is left to write.
            let from = self.replies.len() - c.pending;
            match c.sock.write(&self.replies[from..]) {
                Ok(n) => c.pending -= n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }
}

impl H2 {
    fn new(body: &[u8]) -> H2 {
        assert!(
            body.len() <= MAX_FRAME,
            "over HTTP/2 the file must fit one 16 KiB frame"
        );
        // `:status: 200` (static index 8), then `content-length` (static
        // name 28) as a literal without indexing.
        let cl = body.len().to_string();
        let mut block = vec![0x88, 0x0f, 28 - 15, cl.len() as u8];
        block.extend_from_slice(cl.as_bytes());
        let mut reply = frame_head(block.len(), FRAME_HEADERS, 0x4, 0).to_vec();
        reply.extend_from_slice(&block);
        let data_at = reply.len();
        reply.extend_from_slice(&frame_head(body.len(), 0, 0x1, 0));
        reply.extend_from_slice(body);
        H2 { reply, data_at }
    }

    /// Answers the whole frames at the start of `data` (after the preface
    /// still to skip) into `st.out`; returns the octets used.
    fn frames(&self, st: &mut H2Conn, data: &[u8], requests: &mut u64) -> usize {
        let mut at = st.skip.min(data.len());
        st.skip -= at;
        while data.len() - at >= 9 {
            let h = &data[at..at + 9];
            let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            if data.len() - at - 9 < len {
                break;
            }
            match (h[3], h[4] & FLAG_ACK) {
                (FRAME_HEADERS, _) => {
                    let id = &h[5..9];
                    let from = st.out.len();
                    st.out.extend_from_slice(&self.reply);
                    st.out[from + 5..from + 9].copy_from_slice(id);
                    let d = from + self.data_at;
                    st.out[d + 5..d + 9].copy_from_slice(id);
                    *requests += 1;
                }
                (FRAME_SETTINGS, 0) => {
                    st.out
                        .extend_from_slice(&frame_head(0, FRAME_SETTINGS, FLAG_ACK, 0));
                }
                _ => {}
            }
            at += 9 + len;
        }
        at
    }
}

/// What [`read_some`] brought.
enum Got {
    Bytes(usize),
    /// Nothing now (or a reply is still being written): wait for epoll.
    Wait,
    /// End of stream or an error: close.
    Close,
}

/// One read of what the client sent, unless a reply is still being
/// written (then more is read once it is out).
fn read_some(c: &mut Conn, buf: &mut [u8]) -> Got {
    if c.pending > 0 {
        return Got::Wait;
    }
    match c.sock.read(buf) {
        Ok(0) => Got::Close,
        Ok(n) => Got::Bytes(n),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Got::Wait,
        Err(_) => Got::Close,
    }
}

/// An HTTP/2 frame header.
fn frame_head(len: usize, kind: u8, flags: u8, id: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let i = id.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, i[0], i[1], i[2], i[3]]
}

/// Writes the HTTP/2 output owed; false: close.
fn flush_h2(c: &mut Conn) -> bool {
    let st = &mut c.h2;
    while st.sent < st.out.len() {
        match c.sock.write(&st.out[st.sent..]) {
            Ok(n) => st.sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(_) => return false,
        }
    }
    if st.sent == st.out.len() {
        st.out.clear();
        st.sent = 0;
    }
    c.pending = st.out.len() - st.sent;
    true
}

/// Request ends (`\r\n\r\n`) in `bytes`; `state` carries how much of one
/// was matched at the end of the last read (a head split across reads).
fn count_ends(state: &mut u8, bytes: &[u8]) -> usize {
    let mut n = 0;
    for &b in bytes {
        *state = match (*state, b) {
            (0 | 2, b'\r') => *state + 1,
            (1, b'\n') => 2,
            (3, b'\n') => {
                n += 1;
                0
            }
            (_, b'\r') => 1,
            _ => 0,
        };
    }
    n
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::count_ends;

    #[test]
    fn request_ends_are_counted_across_reads_and_pipelines() {
        let mut s = 0;
        assert_eq!(
            count_ends(
                &mut s,
                b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n"
            ),
            2
        );
        assert_eq!(s, 0);
        assert_eq!(count_ends(&mut s, b"GET / HTTP/1.1\r\n\r"), 0);
        assert_eq!(count_ends(&mut s, b"\n"), 1);
        assert_eq!(count_ends(&mut s, b"GET / HTTP/1.1\r\n\r\r\n\r\n"), 1);
    }
}
