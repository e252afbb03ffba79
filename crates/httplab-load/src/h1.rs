//! The HTTP/1.1 client connection as a state machine without I/O.
//!
//! [`H1Conn`] knows requests and responses and nothing else: the engine
//! queues requests ([`H1Conn::queue`]), takes the bytes to write
//! ([`H1Conn::output`], [`H1Conn::wrote`]), and feeds the bytes it received
//! ([`H1Conn::feed`], [`H1Conn::eof`]), getting back what happened: how far
//! the input was consumed, a response head, body bytes, a complete reply with
//! the call it answers. Sockets, TLS, timers, schedules and statistics stay
//! in the engine (`engine.rs`), which moves bytes for every connection; the
//! transport below (plain, or TLS in `tls.rs`) only transforms them. A later
//! driver (io_uring, a blocking one for tests) can drive the same machine.
//!
//! Everything here is per connection and reused across its requests: the
//! output buffer, the queue of outstanding calls and the response parser
//! allocate nothing per request once warm.

use std::collections::VecDeque;
use std::time::Instant;

use httplab_wire::response::{Framing, ResponseError, ResponseInfo, ResponseParser};

/// One call sent and not yet answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    /// Index of the request in the plan.
    pub req: u32,
    /// A HEAD request (its reply has no body).
    pub is_head: bool,
    /// When it was handed to the connection.
    pub sent: Instant,
    /// When it was scheduled (coordinated-omission corrected latency).
    pub intended: Instant,
    /// Serial number (for --print-request/--print-reply).
    pub serial: u64,
    /// Scheduled inside the measurement window (not in the warm-up).
    pub measured: bool,
}

/// A complete reply and the call it answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply {
    pub call: Pending,
    pub info: ResponseInfo,
    /// When its first byte arrived.
    pub first: Instant,
}

/// What one [`H1Conn::feed`] step found.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fed {
    /// Input bytes used; feed the rest again (0 with no reply: need more input).
    pub consumed: usize,
    /// A response head was completed in this step.
    pub head_done: bool,
    /// Body payload in the input: (offset, length), relative to the input given.
    pub body: Option<(usize, usize)>,
    /// The reply completed in this step.
    pub reply: Option<Reply>,
}

/// Input the connection cannot accept; the connection must be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FeedError {
    /// Bytes arrived while no call was outstanding.
    Unsolicited,
    /// The response is malformed; `measured` says whose it was.
    Malformed {
        measured: bool,
        error: ResponseError,
    },
}

/// How the peer's end of stream (FIN, TLS close) left the connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Eof {
    /// No call was outstanding: an idle keep-alive connection closed.
    Idle,
    /// A close-delimited body ended: its reply is complete.
    Reply(Reply),
    /// The connection closed before the outstanding reply was complete.
    Truncated,
    /// The reply was malformed or cut inside its framing.
    Malformed {
        measured: bool,
        info: ResponseInfo,
        error: ResponseError,
    },
}

/// The HTTP/1.1 client side of one connection (see the module docs).
#[derive(Debug)]
pub(crate) struct H1Conn {
    out: Vec<u8>,
    out_pos: usize,
    /// The bytes in `out` belong to measured requests.
    out_measured: bool,
    pending: VecDeque<Pending>,
    parser: ResponseParser,
    resp_first: Option<Instant>,
    /// Raw reply bytes kept for --print-reply (only when `capture`).
    capture: bool,
    captured: Vec<u8>,
}

impl H1Conn {
    /// A connection; `capture` keeps each reply's raw bytes (for printing).
    pub fn new(capture: bool) -> H1Conn {
        H1Conn {
            out: Vec::new(),
            out_pos: 0,
            out_measured: true,
            pending: VecDeque::new(),
            parser: ResponseParser::new(),
            resp_first: None,
            capture,
            captured: Vec::new(),
        }
    }

    /// Forgets everything outstanding (the connection was closed); buffers are kept.
    pub fn reset(&mut self) {
        self.out.clear();
        self.out_pos = 0;
        self.pending.clear();
        self.resp_first = None;
        self.captured.clear();
    }

    /// Queues request `bytes` for `call`.
    pub fn queue(&mut self, bytes: &[u8], call: Pending) {
        if self.pending.is_empty() {
            self.parser.start(call.is_head);
            self.resp_first = None;
        }
        self.out.extend_from_slice(bytes);
        self.out_measured = call.measured;
        self.pending.push_back(call);
    }

    /// Bytes waiting to be written.
    pub fn output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// Whether the bytes waiting to be written belong to measured requests.
    pub fn output_measured(&self) -> bool {
        self.out_measured
    }

    /// `n` bytes of [`H1Conn::output`] were written.
    pub fn wrote(&mut self, n: usize) {
        self.out_pos = (self.out_pos + n).min(self.out.len());
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
    }

    /// Calls sent and not answered.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// The oldest unanswered call.
    pub fn oldest(&self) -> Option<&Pending> {
        self.pending.front()
    }

    /// The calls sent and not answered, oldest first.
    pub fn calls(&self) -> impl Iterator<Item = &Pending> + '_ {
        self.pending.iter()
    }

    /// Bytes of the oldest unanswered call's reply have arrived.
    pub fn answering(&self) -> bool {
        !self.pending.is_empty() && self.resp_first.is_some()
    }

    /// Status of the response whose head was just parsed.
    pub fn head_status(&self) -> u16 {
        self.parser.info().status
    }

    /// The raw bytes of the reply just completed (with capture on); cleared by the caller.
    pub fn captured(&mut self) -> &mut Vec<u8> {
        &mut self.captured
    }

    /// Feeds received bytes; call again with the unconsumed rest.
    pub fn feed(&mut self, data: &[u8], now: Instant) -> Result<Fed, FeedError> {
        let Some(front) = self.pending.front() else {
            return Err(FeedError::Unsolicited);
        };
        let measured = front.measured;
        if self.resp_first.is_none() {
            self.resp_first = Some(now);
        }
        let step = self
            .parser
            .feed(data)
            .map_err(|error| FeedError::Malformed { measured, error })?;
        if self.capture {
            self.captured.extend_from_slice(&data[..step.consumed]);
        }
        let mut fed = Fed {
            consumed: step.consumed,
            head_done: step.head_done,
            body: step.body,
            reply: None,
        };
        if step.complete {
            fed.reply = self.complete(now);
        }
        Ok(fed)
    }

    /// The peer ended the stream.
    pub fn eof(&mut self, now: Instant) -> Eof {
        let Some(front) = self.pending.front() else {
            return Eof::Idle;
        };
        let measured = front.measured;
        match self.parser.eof() {
            Ok(true) => match self.complete(now) {
                Some(r) => Eof::Reply(r),
                None => Eof::Truncated,
            },
            Ok(false) => Eof::Truncated,
            Err(error) => Eof::Malformed {
                measured,
                info: self.parser.info(),
                error,
            },
        }
    }

    /// The reply to the oldest call is complete: pop it, start the next.
    fn complete(&mut self, now: Instant) -> Option<Reply> {
        let call = self.pending.pop_front()?;
        let info = self.parser.info();
        let first = self.resp_first.take().unwrap_or(now);
        if let Some(next) = self.pending.front() {
            self.parser.start(next.is_head);
        }
        Some(Reply { call, info, first })
    }

    /// Bytes a malformed reply was expected to carry and did carry (for accuracy).
    pub fn expected_received(info: &ResponseInfo) -> Option<(u64, u64)> {
        (info.framing == Framing::Length)
            .then(|| (info.content_length.unwrap_or(0), info.body_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(req: u32, now: Instant) -> Pending {
        Pending {
            req,
            is_head: false,
            sent: now,
            intended: now,
            serial: u64::from(req),
            measured: true,
        }
    }

    #[test]
    fn pipelined_replies_in_pieces() {
        let now = Instant::now();
        let mut c = H1Conn::new(false);
        c.queue(b"GET /a HTTP/1.1\r\n\r\n", call(0, now));
        c.queue(b"GET /b HTTP/1.1\r\n\r\n", call(1, now));
        assert_eq!(c.output().len(), 38);
        c.wrote(10);
        assert_eq!(c.output().len(), 28);
        c.wrote(28);
        assert!(c.output().is_empty());
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 404 NF\r\nContent-Length: 0\r\n\r\n";
        let mut replies = Vec::new();
        // One byte at a time: the machine must not care how bytes arrive.
        let mut buf: Vec<u8> = Vec::new();
        for &b in wire.iter() {
            buf.push(b);
            loop {
                let fed = c.feed(&buf, now).unwrap();
                buf.drain(..fed.consumed);
                if let Some(r) = fed.reply {
                    replies.push((r.call.req, r.info.status, r.info.body_bytes));
                }
                if fed.consumed == 0 || buf.is_empty() {
                    break;
                }
            }
        }
        assert_eq!(replies, vec![(0, 200, 2), (1, 404, 0)]);
        assert_eq!(c.outstanding(), 0);
        assert!(matches!(c.eof(now), Eof::Idle));
    }

    #[test]
    fn unsolicited_and_malformed_and_truncated() {
        let now = Instant::now();
        let mut c = H1Conn::new(true);
        assert_eq!(
            c.feed(b"HTTP/1.1", now).unwrap_err(),
            FeedError::Unsolicited
        );
        c.queue(b"GET / HTTP/1.1\r\n\r\n", call(0, now));
        assert!(matches!(
            c.feed(b"garbage\r\n\r\n", now),
            Err(FeedError::Malformed {
                measured: true,
                error: ResponseError::BadStatusLine(_)
            })
        ));
        c.reset();
        c.queue(b"GET / HTTP/1.1\r\n\r\n", call(0, now));
        let fed = c
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", now)
            .unwrap();
        assert!(fed.head_done && fed.reply.is_none());
        assert!(matches!(c.eof(now), Eof::Malformed { .. } | Eof::Truncated));
        // A close-delimited body completes at EOF.
        c.reset();
        c.queue(b"GET / HTTP/1.1\r\n\r\n", call(0, now));
        let wire = b"HTTP/1.0 200 OK\r\n\r\nabc";
        let mut pos = 0;
        while pos < wire.len() {
            let fed = c.feed(&wire[pos..], now).unwrap();
            assert!(fed.consumed > 0);
            pos += fed.consumed;
        }
        match c.eof(now) {
            Eof::Reply(r) => {
                assert_eq!(r.info.body_bytes, 3);
                assert!(!r.info.keep_alive);
            }
            other => panic!("{other:?}"),
        }
        assert!(!c.captured().is_empty());
    }

    #[test]
    fn answering_says_whether_the_oldest_reply_has_begun() {
        let now = Instant::now();
        let mut c = H1Conn::new(false);
        assert!(!c.answering());
        c.queue(b"GET /a HTTP/1.1\r\n\r\n", call(0, now));
        c.queue(b"GET /b HTTP/1.1\r\n\r\n", call(1, now));
        assert!(!c.answering());
        let fed = c
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", now)
            .unwrap();
        assert!(fed.reply.is_some());
        // The first is answered; not a byte of the second's reply yet: a
        // close now leaves /b unprocessed.
        assert!(!c.answering());
        assert_eq!(c.calls().map(|p| p.req).collect::<Vec<_>>(), [1]);
        assert!(matches!(c.eof(now), Eof::Truncated));
        c.reset();
        c.queue(b"GET /c HTTP/1.1\r\n\r\n", call(2, now));
        c.feed(b"HTTP/1.1 2", now).unwrap();
        assert!(c.answering());
        assert!(matches!(c.eof(now), Eof::Truncated | Eof::Malformed { .. }));
    }
}
