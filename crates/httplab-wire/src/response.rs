//! Client-side HTTP/1.1 response parsing (owned by the load-generator work).
//!
//! [`ResponseParser`] is an incremental, allocation-free (after warm-up)
//! parser for a stream of responses on one connection, pipelined or not. The
//! caller feeds whatever bytes arrived; the parser reports when the head is
//! complete, hands back body data segments (offsets into the caller's buffer,
//! so bodies are never copied), and says when the response is complete. It
//! accounts for every byte: `header_bytes + body_bytes + chunk_overhead_bytes
//! + footer_bytes` equals the bytes the response occupied on the wire.
//!
//! Body framing follows RFC 9112 §6.3: no body for HEAD requests and for
//! 1xx/204/304 replies; otherwise chunked when `Transfer-Encoding` ends in
//! `chunked`; otherwise `Content-Length`; otherwise the body runs until the
//! server closes the connection ([`ResponseParser::eof`]). Interim 1xx replies
//! (other than 101) are folded into the header bytes of the final reply.
//!
//! ```
//! use httplab_wire::response::ResponseParser;
//! let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
//! let mut p = ResponseParser::new();
//! p.start(false);
//! let mut pos = 0;
//! loop {
//!     let step = p.feed(&wire[pos..]).unwrap();
//!     pos += step.consumed;
//!     if step.complete { break; }
//! }
//! let info = p.info();
//! assert_eq!((info.status, info.body_bytes, pos), (200, 5, wire.len()));
//! ```

use std::fmt;

/// Largest response head accepted (status line + headers), bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most header fields accepted in one head.
pub const MAX_HEADERS: usize = 128;
/// Longest chunk-size line (size, extensions, CRLF) accepted, bytes. A
/// server that streams an endless chunk extension fails here instead of
/// holding the response open without sending data.
pub const MAX_CHUNK_LINE: u32 = 4096;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, 1xx, 204, 304).
    #[default]
    None,
    /// `Content-Length: n`.
    Length,
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Body runs until the server closes the connection.
    Close,
}

/// What a response head and body amounted to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseInfo {
    /// Status code of the final (non-1xx) reply.
    pub status: u16,
    /// HTTP minor version (0 or 1).
    pub minor_version: u8,
    /// Bytes of status line(s), headers and blank line(s), including interim 1xx heads.
    pub header_bytes: u64,
    /// Body payload bytes (chunked: de-chunked data).
    pub body_bytes: u64,
    /// Chunk-size lines and CRLFs after chunk data (chunked only).
    pub chunk_overhead_bytes: u64,
    /// Trailer section after the last chunk, final CRLF included (chunked only).
    pub footer_bytes: u64,
    /// Announced `Content-Length`, if any.
    pub content_length: Option<u64>,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request after this reply.
    pub keep_alive: bool,
}

impl ResponseInfo {
    /// Bytes the response occupied on the wire.
    pub fn wire_bytes(&self) -> u64 {
        self.header_bytes + self.body_bytes + self.chunk_overhead_bytes + self.footer_bytes
    }
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseError {
    /// The status line is not HTTP/1.x (garbage, bad version, no code).
    BadStatusLine(&'static str),
    /// A header field is malformed (bad or conflicting Content-Length ...).
    Malformed(&'static str),
    /// The head is larger than [`MAX_HEAD_BYTES`] or has too many fields.
    HeadTooLarge,
    /// Chunked framing is broken.
    BadChunk(&'static str),
    /// The connection ended before the response was complete.
    Truncated,
    /// Data arrived where no response was expected.
    Unexpected,
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResponseError::BadStatusLine(m) => write!(f, "bad status line: {m}"),
            ResponseError::Malformed(m) => write!(f, "malformed response head: {m}"),
            ResponseError::HeadTooLarge => write!(f, "response head too large"),
            ResponseError::BadChunk(m) => write!(f, "bad chunked framing: {m}"),
            ResponseError::Truncated => {
                write!(f, "connection closed before the response was complete")
            }
            ResponseError::Unexpected => write!(f, "data received with no request outstanding"),
        }
    }
}

impl std::error::Error for ResponseError {}

/// Result of one [`ResponseParser::feed`] call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Step {
    /// Bytes of the input consumed.
    pub consumed: usize,
    /// The head became complete during this call.
    pub head_done: bool,
    /// Body data found in this call: `(offset, len)` into the input slice.
    pub body: Option<(usize, usize)>,
    /// The response is complete; call [`ResponseParser::start`] before the next.
    pub complete: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Head,
    Length {
        remaining: u64,
    },
    ChunkSize {
        value: u64,
        digits: u32,
        in_ext: bool,
        saw_cr: bool,
        line_len: u32,
    },
    ChunkData {
        remaining: u64,
    },
    ChunkDataEnd {
        seen: u8,
    },
    Trailer {
        line_len: u64,
    },
    UntilClose,
    Done,
}

/// The state at the start of a chunk-size line.
const CHUNK_SIZE_START: State = State::ChunkSize {
    value: 0,
    digits: 0,
    in_ext: false,
    saw_cr: false,
    line_len: 0,
};

/// Whether [`ResponseParser::feed`] goes on with the next state or returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Return,
}

/// Incremental parser of the responses on one connection. Reuse it for every
/// response: [`start`](Self::start), [`feed`](Self::feed) until `complete`,
/// read [`info`](Self::info), repeat.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    head_request: bool,
    head: Vec<u8>,
    info: ResponseInfo,
    started: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    /// A parser waiting for [`start`](Self::start).
    pub fn new() -> Self {
        ResponseParser {
            state: State::Idle,
            head_request: false,
            head: Vec::new(),
            info: ResponseInfo::default(),
            started: false,
        }
    }

    /// Expects the next response; `head_request` says it answers a HEAD
    /// (so it has no body whatever its headers say).
    pub fn start(&mut self, head_request: bool) {
        self.state = State::Head;
        self.head_request = head_request;
        self.head.clear();
        self.info = ResponseInfo::default();
        self.started = false;
    }

    /// True once any byte of the current response has been consumed.
    pub fn in_progress(&self) -> bool {
        self.started && self.state != State::Done
    }

    /// True when the current response is complete.
    pub fn is_complete(&self) -> bool {
        self.state == State::Done
    }

    /// Counters of the current (or just completed) response.
    pub fn info(&self) -> ResponseInfo {
        self.info
    }

    /// Bytes of a partial head buffered so far (for --print-reply style use).
    pub fn partial_head(&self) -> &[u8] {
        &self.head
    }

    /// The peer closed the connection. Completes a close-delimited body
    /// (`Ok(true)`); `Ok(false)` when no byte of a response had arrived (a
    /// clean close between responses); an error when a response was cut short.
    pub fn eof(&mut self) -> Result<bool, ResponseError> {
        match self.state {
            State::UntilClose => {
                self.state = State::Done;
                Ok(true)
            }
            State::Done => Ok(true),
            State::Idle => Ok(false),
            State::Head if !self.started => Ok(false),
            _ => Err(ResponseError::Truncated),
        }
    }

    /// Hands the caller up to `remaining` body bytes from `input[*pos..]`
    /// (as `step.body`), counts them, and returns how many are still owed.
    fn take_body(&mut self, input: &[u8], pos: &mut usize, remaining: u64, step: &mut Step) -> u64 {
        let take = ((input.len() - *pos) as u64).min(remaining);
        step.body = Some((*pos, take as usize));
        *pos += take as usize;
        self.info.body_bytes += take;
        remaining - take
    }

    /// Consumes bytes of the current response from `input`. Stops after the
    /// head, after each body data segment, at completion, or when `input` is
    /// used up; call again with the rest of the input.
    ///
    /// Each state's work is an `#[inline]` helper that advances `pos` and
    /// says whether this call goes on (`Flow::Next`) or returns
    /// (`Flow::Return`); nothing allocates once the head buffer is warm.
    pub fn feed(&mut self, input: &[u8]) -> Result<Step, ResponseError> {
        let mut step = Step::default();
        if input.is_empty() {
            step.complete = self.state == State::Done;
            return Ok(step);
        }
        match self.state {
            State::Idle => return Err(ResponseError::Unexpected),
            State::Done => {
                step.complete = true;
                return Ok(step);
            }
            _ => {}
        }
        self.started = true;
        let mut pos = 0usize;
        loop {
            if pos >= input.len() && !matches!(self.state, State::Done) {
                break;
            }
            let flow = match self.state {
                State::Idle | State::Done => Flow::Return,
                State::Head => self.feed_head(input, &mut pos, &mut step)?,
                State::Length { remaining } => {
                    let left = self.take_body(input, &mut pos, remaining, &mut step);
                    if left == 0 {
                        self.state = State::Done;
                        step.complete = true;
                    } else {
                        self.state = State::Length { remaining: left };
                    }
                    Flow::Return
                }
                State::UntilClose => {
                    let take = input.len() - pos;
                    step.body = Some((pos, take));
                    self.info.body_bytes += take as u64;
                    pos += take;
                    Flow::Return
                }
                State::ChunkData { remaining } => {
                    let left = self.take_body(input, &mut pos, remaining, &mut step);
                    self.state = if left == 0 {
                        State::ChunkDataEnd { seen: 0 }
                    } else {
                        State::ChunkData { remaining: left }
                    };
                    Flow::Return
                }
                State::ChunkDataEnd { seen } => self.feed_chunk_data_end(input, &mut pos, seen)?,
                State::ChunkSize { .. } => self.feed_chunk_size(input, &mut pos)?,
                State::Trailer { line_len } => {
                    self.feed_trailer(input, &mut pos, line_len, &mut step)?
                }
            };
            if flow == Flow::Return {
                break;
            }
        }
        step.consumed = pos;
        Ok(step)
    }

    /// The head state: parses (or buffers) a head from `input[*pos..]`.
    /// Returns once the final head is done so the caller sees it before any
    /// body data; an interim 1xx reply goes on to the next head.
    #[inline]
    fn feed_head(
        &mut self,
        input: &[u8],
        pos: &mut usize,
        step: &mut Step,
    ) -> Result<Flow, ResponseError> {
        match self.parse_head(&input[*pos..])? {
            Some(n) => {
                *pos += n;
                step.head_done = self.state != State::Head;
                if step.head_done {
                    if self.state == State::Done {
                        step.complete = true;
                    }
                    return Ok(Flow::Return);
                }
                Ok(Flow::Next)
            }
            None => {
                *pos = input.len();
                Ok(Flow::Return)
            }
        }
    }

    /// The CRLF after a chunk's data, one byte at a time (a bare LF is
    /// accepted); then the next chunk-size line.
    #[inline]
    fn feed_chunk_data_end(
        &mut self,
        input: &[u8],
        pos: &mut usize,
        seen: u8,
    ) -> Result<Flow, ResponseError> {
        let b = input[*pos];
        *pos += 1;
        self.info.chunk_overhead_bytes += 1;
        match (seen, b) {
            (0, b'\r') => self.state = State::ChunkDataEnd { seen: 1 },
            (_, b'\n') => self.state = CHUNK_SIZE_START,
            _ => return Err(ResponseError::BadChunk("missing CRLF after chunk data")),
        }
        Ok(Flow::Next)
    }

    /// A chunk-size line (hex size, ignored extensions, CRLF), resumable at
    /// any byte. At its end: the chunk's data, or the trailer after the last
    /// chunk (size 0).
    #[inline]
    fn feed_chunk_size(&mut self, input: &[u8], pos: &mut usize) -> Result<Flow, ResponseError> {
        let State::ChunkSize {
            mut value,
            mut digits,
            mut in_ext,
            mut saw_cr,
            mut line_len,
        } = self.state
        else {
            return Ok(Flow::Return);
        };
        let mut done_line = false;
        while *pos < input.len() {
            let b = input[*pos];
            *pos += 1;
            self.info.chunk_overhead_bytes += 1;
            line_len += 1;
            if line_len > MAX_CHUNK_LINE {
                return Err(ResponseError::BadChunk("chunk-size line too long"));
            }
            if b == b'\n' {
                done_line = true;
                break;
            }
            if saw_cr {
                return Err(ResponseError::BadChunk("CR not followed by LF"));
            }
            if b == b'\r' {
                saw_cr = true;
                continue;
            }
            if in_ext {
                continue;
            }
            match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                    digits += 1;
                    if digits > 15 {
                        return Err(ResponseError::BadChunk("chunk size too large"));
                    }
                    value = value * 16 + d;
                }
                b';' | b' ' | b'\t' => in_ext = true,
                _ => return Err(ResponseError::BadChunk("invalid chunk size")),
            }
        }
        if !done_line {
            self.state = State::ChunkSize {
                value,
                digits,
                in_ext,
                saw_cr,
                line_len,
            };
            return Ok(Flow::Return);
        }
        if digits == 0 {
            return Err(ResponseError::BadChunk("empty chunk size"));
        }
        self.state = if value == 0 {
            State::Trailer { line_len: 0 }
        } else {
            State::ChunkData { remaining: value }
        };
        Ok(Flow::Next)
    }

    /// The trailer section after the last chunk, up to its empty line, which
    /// completes the response.
    #[inline]
    fn feed_trailer(
        &mut self,
        input: &[u8],
        pos: &mut usize,
        mut line_len: u64,
        step: &mut Step,
    ) -> Result<Flow, ResponseError> {
        while *pos < input.len() {
            let b = input[*pos];
            *pos += 1;
            self.info.footer_bytes += 1;
            // Every byte counts, CRs included: a trailer of
            // endless CRs must fail too.
            if self.info.footer_bytes > MAX_HEAD_BYTES as u64 {
                return Err(ResponseError::BadChunk("trailer too large"));
            }
            if b == b'\n' {
                if line_len == 0 {
                    self.state = State::Done;
                    step.complete = true;
                    return Ok(Flow::Return);
                }
                line_len = 0;
            } else if b != b'\r' {
                line_len += 1;
            }
        }
        self.state = State::Trailer { line_len };
        Ok(Flow::Return)
    }

    /// Tries to parse a head from buffered + new bytes. `Some(n)`: n bytes of
    /// `input` consumed (the head and possibly interim replies are done or the
    /// whole input was an interim reply). `None`: all of `input` buffered.
    fn parse_head(&mut self, input: &[u8]) -> Result<Option<usize>, ResponseError> {
        let buffered = self.head.len();
        let (len, parsed) = if buffered == 0 {
            match parse_head_bytes(input)? {
                Some(p) => p,
                None => {
                    if input.len() > MAX_HEAD_BYTES {
                        return Err(ResponseError::HeadTooLarge);
                    }
                    self.head.extend_from_slice(input);
                    return Ok(None);
                }
            }
        } else {
            self.head.extend_from_slice(input);
            match parse_head_bytes(&self.head)? {
                Some(p) => p,
                None => {
                    if self.head.len() > MAX_HEAD_BYTES {
                        return Err(ResponseError::HeadTooLarge);
                    }
                    return Ok(None);
                }
            }
        };
        let consumed = len - buffered;
        self.head.clear();
        self.info.header_bytes += len as u64;
        self.info.status = parsed.status;
        self.info.minor_version = parsed.minor;
        if (100..200).contains(&parsed.status) && parsed.status != 101 {
            // Interim reply: the final head follows.
            return Ok(Some(consumed));
        }
        self.info.keep_alive = match parsed.conn {
            ConnToken::Close => false,
            ConnToken::KeepAlive => true,
            ConnToken::None => parsed.minor >= 1,
        };
        self.info.content_length = parsed.content_length;
        let no_body = self.head_request
            || (100..200).contains(&parsed.status)
            || parsed.status == 204
            || parsed.status == 304;
        if no_body {
            self.info.framing = Framing::None;
            self.state = State::Done;
        } else if parsed.chunked {
            self.info.framing = Framing::Chunked;
            self.state = CHUNK_SIZE_START;
        } else if let Some(n) = parsed.content_length {
            self.info.framing = Framing::Length;
            self.state = if n == 0 {
                State::Done
            } else {
                State::Length { remaining: n }
            };
        } else {
            self.info.framing = Framing::Close;
            self.info.keep_alive = false;
            self.state = State::UntilClose;
        }
        Ok(Some(consumed))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnToken {
    None,
    Close,
    KeepAlive,
}

struct ParsedHead {
    status: u16,
    minor: u8,
    content_length: Option<u64>,
    chunked: bool,
    conn: ConnToken,
}

/// Header fields tried first: most responses have fewer. httparse's
/// response parser wants its field slots initialised, and filling all
/// [`MAX_HEADERS`] of them for every response cost more than the parse of a
/// small head (callgrind); a head with more fields is parsed again with
/// all of them.
const FEW_HEADERS: usize = 24;

fn parse_head_bytes(buf: &[u8]) -> Result<Option<(usize, ParsedHead)>, ResponseError> {
    let mut few = [httparse::EMPTY_HEADER; FEW_HEADERS];
    match parse_head_in(buf, &mut few) {
        Err(ResponseError::HeadTooLarge) => {
            let mut all = [httparse::EMPTY_HEADER; MAX_HEADERS];
            parse_head_in(buf, &mut all)
        }
        r => r,
    }
}

/// [`parse_head_bytes`] with `headers` as httparse's field slots (too few
/// of them: [`ResponseError::HeadTooLarge`]).
fn parse_head_in<'b>(
    buf: &'b [u8],
    headers: &mut [httparse::Header<'b>],
) -> Result<Option<(usize, ParsedHead)>, ResponseError> {
    let mut resp = httparse::Response::new(headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ResponseError::HeadTooLarge),
        Err(httparse::Error::Status) => {
            return Err(ResponseError::BadStatusLine("bad status code"))
        }
        Err(httparse::Error::Version) => {
            return Err(ResponseError::BadStatusLine("not an HTTP/1.x version"))
        }
        Err(_) => return Err(ResponseError::Malformed("bad header")),
    };
    let status = resp
        .code
        .ok_or(ResponseError::BadStatusLine("no status code"))?;
    let minor = resp.version.unwrap_or(1);
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut conn = ConnToken::None;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                // Digits only: `u64::from_str` would also take "+5".
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or(ResponseError::Malformed("bad Content-Length"))?;
            if let Some(prev) = content_length {
                if prev != v {
                    return Err(ResponseError::Malformed("conflicting Content-Length"));
                }
            }
            content_length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = h
                .value
                .split(|&b| b == b',')
                .next_back()
                .map(trim_ascii)
                .unwrap_or(&[]);
            chunked = last.eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            for tok in h.value.split(|&b| b == b',') {
                let tok = trim_ascii(tok);
                if tok.eq_ignore_ascii_case(b"close") {
                    conn = ConnToken::Close;
                } else if tok.eq_ignore_ascii_case(b"keep-alive") && conn != ConnToken::Close {
                    conn = ConnToken::KeepAlive;
                }
            }
        }
    }
    Ok(Some((
        len,
        ParsedHead {
            status,
            minor,
            content_length,
            chunked,
            conn,
        },
    )))
}

fn trim_ascii(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `piece` bytes; returns infos of complete
    /// responses and the concatenated bodies.
    fn run(wire: &[u8], piece: usize, heads: &[bool]) -> (Vec<ResponseInfo>, Vec<u8>, usize) {
        let mut p = ResponseParser::new();
        let mut out = Vec::new();
        let mut body = Vec::new();
        let mut idx = 0;
        p.start(heads.first().copied().unwrap_or(false));
        let mut consumed_total = 0;
        for chunk in wire.chunks(piece.max(1)) {
            let mut pos = 0;
            while pos < chunk.len() {
                let s = p.feed(&chunk[pos..]).unwrap();
                if let Some((o, l)) = s.body {
                    body.extend_from_slice(&chunk[pos + o..pos + o + l]);
                }
                pos += s.consumed;
                consumed_total += s.consumed;
                if s.complete {
                    out.push(p.info());
                    idx += 1;
                    p.start(heads.get(idx).copied().unwrap_or(false));
                }
            }
        }
        if p.eof() == Ok(true) {
            out.push(p.info());
        }
        (out, body, consumed_total)
    }

    #[test]
    fn content_length_all_split_points() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX: y\r\n\r\nhello world";
        for piece in 1..=wire.len() {
            let (infos, body, n) = run(wire, piece, &[]);
            assert_eq!(infos.len(), 1, "piece {piece}");
            assert_eq!(body, b"hello world");
            assert_eq!(infos[0].header_bytes, 45);
            assert_eq!(infos[0].wire_bytes(), wire.len() as u64);
            assert_eq!(n, wire.len());
            assert!(infos[0].keep_alive);
        }
    }

    #[test]
    fn chunked_with_trailer_byte_exact() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n";
        for piece in 1..=wire.len() {
            let (infos, body, _) = run(wire, piece, &[]);
            assert_eq!(infos.len(), 1);
            assert_eq!(body, b"hello world");
            let i = infos[0];
            assert_eq!(i.framing, Framing::Chunked);
            assert_eq!(i.body_bytes, 11);
            assert_eq!(i.footer_bytes, 10);
            assert_eq!(i.wire_bytes(), wire.len() as u64);
        }
    }

    #[test]
    fn pipelined_and_no_body_cases() {
        let wire = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n";
        // second answers a HEAD
        let (infos, body, n) = run(wire, 7, &[false, true, false, false]);
        assert_eq!(infos.len(), 4);
        assert_eq!(body, b"ok");
        assert_eq!(infos[0].status, 204);
        assert_eq!(infos[1].body_bytes, 0);
        assert_eq!(infos[2].status, 200);
        assert_eq!(infos[2].header_bytes, 25 + 38);
        assert_eq!(infos[3].status, 304);
        assert_eq!(n, wire.len());
    }

    #[test]
    fn close_delimited_and_truncation() {
        let wire = b"HTTP/1.0 200 OK\r\n\r\nabcdef";
        let (infos, body, _) = run(wire, 4, &[]);
        assert_eq!(infos.len(), 1);
        assert_eq!(body, b"abcdef");
        assert_eq!(infos[0].framing, Framing::Close);
        assert!(!infos[0].keep_alive);

        let mut p = ResponseParser::new();
        p.start(false);
        let s = p
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        assert!(s.head_done);
        let s2 = p.feed(&b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"[s.consumed..]);
        assert!(!s2.unwrap().complete);
        assert_eq!(p.eof(), Err(ResponseError::Truncated));

        let mut p = ResponseParser::new();
        p.start(false);
        assert_eq!(p.eof(), Ok(false));
    }

    #[test]
    fn garbage_and_limits() {
        let mut p = ResponseParser::new();
        p.start(false);
        assert!(matches!(
            p.feed(b"GARBAGE GARBAGE\r\n\r\n"),
            Err(ResponseError::BadStatusLine(_))
        ));
        p.start(false);
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"),
            Err(ResponseError::Malformed(_))
        ));
        p.start(false);
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Err(ResponseError::Malformed(_))
        ));
        p.start(false);
        let w = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        let s = p.feed(w).unwrap();
        assert!(p.feed(&w[s.consumed..]).is_err());
        p.start(false);
        let big = vec![b'a'; MAX_HEAD_BYTES + 10];
        let _ = p.feed(b"HTTP/1.1 200 OK\r\nX: ");
        assert_eq!(p.feed(&big), Err(ResponseError::HeadTooLarge));
        let mut idle = ResponseParser::new();
        assert_eq!(idle.feed(b"x"), Err(ResponseError::Unexpected));
    }

    #[test]
    fn heads_with_many_fields_parse_up_to_the_limit() {
        let head = |n: usize| {
            format!(
                "HTTP/1.1 200 OK\r\n{}Content-Length: 2\r\nConnection: close\r\n\r\nok",
                "X-A: b\r\n".repeat(n)
            )
        };
        // More fields than the first try's slots, and exactly the limit.
        for n in [FEW_HEADERS - 2, FEW_HEADERS + 10, MAX_HEADERS - 2] {
            let mut p = ResponseParser::new();
            p.start(false);
            let w = head(n);
            let (mut at, mut done) = (0, false);
            while at < w.len() && !done {
                let s = p.feed(&w.as_bytes()[at..]).unwrap();
                at += s.consumed;
                done = s.complete;
            }
            assert!(done && at == w.len(), "{n} fields");
        }
        let mut p = ResponseParser::new();
        p.start(false);
        assert_eq!(
            p.feed(head(MAX_HEADERS - 1).as_bytes()),
            Err(ResponseError::HeadTooLarge)
        );
    }

    #[test]
    fn endless_chunk_extension_and_trailer_fail() {
        // Found while writing the response fuzz target (its inputs are too
        // short to reach these limits): a chunk extension or a trailer of
        // CRs could stream forever without an error before.
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut p = ResponseParser::new();
        p.start(false);
        let s = p.feed(head).unwrap();
        assert_eq!(s.consumed, head.len());
        let _ = p.feed(b"5;").unwrap();
        let ext = vec![b'a'; 1024];
        let mut failed = None;
        for _ in 0..8 {
            if let Err(e) = p.feed(&ext) {
                failed = Some(e);
                break;
            }
        }
        assert_eq!(
            failed,
            Some(ResponseError::BadChunk("chunk-size line too long"))
        );

        let mut p = ResponseParser::new();
        p.start(false);
        let _ = p.feed(head).unwrap();
        let _ = p.feed(b"0\r\n").unwrap();
        let crs = vec![b'\r'; 4096];
        let mut failed = None;
        for _ in 0..(MAX_HEAD_BYTES / 4096 + 2) {
            if let Err(e) = p.feed(&crs) {
                failed = Some(e);
                break;
            }
        }
        assert_eq!(failed, Some(ResponseError::BadChunk("trailer too large")));
    }

    #[test]
    fn connection_tokens() {
        let (i, _, _) = run(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            100,
            &[],
        );
        assert!(!i[0].keep_alive);
        let (i, _, _) = run(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            100,
            &[],
        );
        assert!(i[0].keep_alive);
        let (i, _, _) = run(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 100, &[]);
        assert!(!i[0].keep_alive);
    }
}
