//! Server-side request parsing and validation.
//!
//! [`parse_head`] takes the bytes a server has buffered for one connection and
//! returns either a validated [`Request`] (borrowing from those bytes), a
//! request for more input, or a [`RequestError`] that already knows its HTTP
//! status code. It performs no I/O, so every server model (and tests, and the
//! load generator's self-checks) share one implementation.
//!
//! What is checked, beyond what httparse checks (tokens, line syntax,
//! obs-fold, whitespace before the colon):
//! - request line longer than [`Limits::max_request_line`] → 414;
//! - header block larger than [`Limits::max_header_bytes`] or with more than
//!   [`Limits::max_headers`] fields → 431;
//! - versions other than HTTP/1.0 and HTTP/1.1 (including the HTTP/2
//!   connection preface) → 505;
//! - framing: Content-Length together with Transfer-Encoding, differing or
//!   malformed Content-Length values, Transfer-Encoding on HTTP/1.0 → 400;
//!   a Transfer-Encoding other than `chunked` → 501; `chunked` → 411 (this
//!   server accepts no request bodies, so it asks for a length instead);
//! - HTTP/1.1 without exactly one Host field, or several Host fields → 400;
//! - a request target that is neither origin-form, absolute-form nor `*`
//!   → 400.

use std::fmt;
use std::mem::MaybeUninit;

/// Size and count limits for one request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest accepted request line, CRLF excluded (default 8 KiB).
    pub max_request_line: usize,
    /// Largest accepted header block after the request line (default 16 KiB).
    pub max_header_bytes: usize,
    /// Most header fields accepted (default 100).
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8 * 1024,
            max_header_bytes: 16 * 1024,
            max_headers: 100,
        }
    }
}

impl Limits {
    /// Largest possible head (request line + header block + line ends).
    pub fn max_head(&self) -> usize {
        self.max_request_line + self.max_header_bytes + 4
    }
}

/// Request method, as far as a static server cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// OPTIONS
    Options,
    /// Any other syntactically valid method.
    Other,
}

/// Protocol version of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0
    Http10,
    /// HTTP/1.1
    Http11,
    /// HTTP/2 (a request decoded by [`crate::h2::request`]).
    Http2,
    /// HTTP/3 (a request decoded by an HTTP/3 server's QPACK layer and
    /// checked by [`crate::h2::request`], whose rules are HTTP/3's too).
    Http3,
}

/// A parsed, validated request head. Header values borrow the input buffer.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Method.
    pub method: Method,
    /// Method text as received.
    pub method_str: &'a str,
    /// Path component of the target (absolute-form is reduced to its path),
    /// still percent-encoded, query removed. `*` for asterisk-form.
    pub path: &'a str,
    /// Query string without the `?`, if any.
    pub query: Option<&'a str>,
    /// Target exactly as received (for logs).
    pub target: &'a str,
    /// Version.
    pub version: Version,
    /// Whether the client wants the connection kept open after this
    /// response (version default adjusted by the Connection header).
    pub keep_alive: bool,
    /// Declared body length (0 when absent).
    pub content_length: u64,
    /// `If-Match` value.
    pub if_match: Option<&'a [u8]>,
    /// `If-None-Match` value.
    pub if_none_match: Option<&'a [u8]>,
    /// `If-Modified-Since` value.
    pub if_modified_since: Option<&'a [u8]>,
    /// `If-Unmodified-Since` value.
    pub if_unmodified_since: Option<&'a [u8]>,
    /// `Range` value.
    pub range: Option<&'a [u8]>,
    /// `If-Range` value.
    pub if_range: Option<&'a [u8]>,
    /// Number of bytes the head occupied in the input (body not included).
    pub head_len: usize,
}

/// Why a request head was rejected; [`RequestError::status`] gives the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// 400 with a short reason (malformed syntax or framing).
    BadRequest(&'static str),
    /// 411: chunked request bodies are not accepted.
    LengthRequired,
    /// 413: declared body larger than the drain limit.
    PayloadTooLarge,
    /// 414: request line too long.
    UriTooLong,
    /// 431: too many or too large header fields.
    HeaderFieldsTooLarge,
    /// 501: unknown transfer coding.
    NotImplemented,
    /// 505: not HTTP/1.0 or HTTP/1.1.
    VersionNotSupported,
}

impl RequestError {
    /// The HTTP status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::BadRequest(_) => 400,
            RequestError::LengthRequired => 411,
            RequestError::PayloadTooLarge => 413,
            RequestError::UriTooLong => 414,
            RequestError::HeaderFieldsTooLarge => 431,
            RequestError::NotImplemented => 501,
            RequestError::VersionNotSupported => 505,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::BadRequest(why) => write!(f, "bad request: {why}"),
            RequestError::LengthRequired => f.write_str("chunked request body not accepted"),
            RequestError::PayloadTooLarge => f.write_str("request body too large"),
            RequestError::UriTooLong => f.write_str("request line too long"),
            RequestError::HeaderFieldsTooLarge => f.write_str("header block too large"),
            RequestError::NotImplemented => f.write_str("unknown transfer coding"),
            RequestError::VersionNotSupported => f.write_str("HTTP version not supported"),
        }
    }
}

impl std::error::Error for RequestError {}

/// Result of [`parse_head`].
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A complete, valid head.
    Complete(Request<'a>),
    /// More bytes are needed.
    Partial,
    /// The head is invalid; answer with `status()` and close.
    Error(RequestError),
}

/// Leading empty lines a server should ignore before a request line
/// (RFC 9112 §2.2); returns how many bytes they take.
pub fn leading_empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    while i < buf.len() {
        match buf[i] {
            b'\n' => i += 1,
            b'\r' if buf.get(i + 1) == Some(&b'\n') => i += 2,
            b'\r' if i + 1 == buf.len() => break,
            _ => break,
        }
    }
    i
}

fn find_byte(buf: &[u8], b: u8) -> Option<usize> {
    // memchr's word-at-a-time search: `position` looked at one octet at a
    // time, about a tenth of a keep-alive request's instructions.
    memchr::memchr(b, buf)
}

/// Finds the end of the head (index just past the empty line), if present.
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = find_byte(&buf[i..], b'\n') {
        let nl = i + p;
        // An empty line is "\n" right after a previous "\n" (optionally with
        // a CR in between).
        if nl >= 1 && buf[nl - 1] == b'\n' {
            return Some(nl + 1);
        }
        if nl >= 2 && buf[nl - 1] == b'\r' && buf[nl - 2] == b'\n' {
            return Some(nl + 1);
        }
        i = nl + 1;
    }
    None
}

/// Parses one request head at the start of `buf` (leading empty lines are
/// the caller's business, see [`leading_empty_lines`]).
///
/// `max_body` is the largest Content-Length accepted (bodies are drained,
/// not used); larger declarations give [`RequestError::PayloadTooLarge`].
///
/// The steps are `#[inline]` helpers: limits before parsing, httparse on the
/// bounded head, the request line, the header fields, then the framing
/// rules. Nothing allocates; the header storage lives on this frame.
pub fn parse_head<'a>(buf: &'a [u8], limits: &Limits, max_body: u64) -> Parsed<'a> {
    // Left uninitialised: httparse writes the fields it finds and hands
    // back only those. Filling 128 empty fields first cost about a fifth
    // of a keep-alive request's instructions (callgrind).
    let mut storage = [const { MaybeUninit::<httparse::Header<'a>>::uninit() }; 128];
    let cap = limits.max_headers.min(storage.len());
    let end = match bounded_head_end(buf, limits) {
        Ok(end) => end,
        Err(NoHead::Partial) => return Parsed::Partial,
        Err(NoHead::Error(e)) => return Parsed::Error(e),
        Err(NoHead::TooManyLines) => return Parsed::Error(lines_verdict(buf, &mut storage[..cap])),
    };
    let mut req = httparse::Request::new(&mut []);
    let head_len = match run_httparse(&mut req, buf, end, &mut storage[..cap]) {
        Ok(n) => n,
        Err(e) => return Parsed::Error(e),
    };
    let mut out = match request_line(&req, head_len) {
        Ok(r) => r,
        Err(e) => return Parsed::Error(e),
    };
    let fields = match read_fields(req.headers, &mut out) {
        Ok(f) => f,
        Err(e) => return Parsed::Error(e),
    };
    match fields.check_framing(out.version, max_body) {
        Ok((content_length, keep_alive)) => {
            out.content_length = content_length;
            out.keep_alive = keep_alive;
            Parsed::Complete(out)
        }
        Err(e) => Parsed::Error(e),
    }
}

/// Why [`bounded_head_end`] gave no head to parse.
enum NoHead {
    /// More bytes are needed.
    Partial,
    /// An incomplete head has more field lines than fields are allowed:
    /// it gets the answer the whole head would ([`lines_verdict`]).
    TooManyLines,
    /// The error to answer with.
    Error(RequestError),
}

/// Applies the size limits before httparse sees the bytes, so an endless
/// request line or header block is cut off with the right status. `Ok`:
/// the index just past the head's empty line.
#[inline]
fn bounded_head_end(buf: &[u8], limits: &Limits) -> Result<usize, NoHead> {
    let line_end = find_byte(buf, b'\n');
    match line_end {
        None if buf.len() > limits.max_request_line + 1 => {
            return Err(NoHead::Error(RequestError::UriTooLong))
        }
        None => {
            // Catch the HTTP/2 preface early: "PRI * HTTP/2.0".
            return Err(NoHead::Partial);
        }
        Some(n) => {
            let line_len = if n > 0 && buf[n - 1] == b'\r' {
                n - 1
            } else {
                n
            };
            if line_len > limits.max_request_line {
                return Err(NoHead::Error(RequestError::UriTooLong));
            }
        }
    }
    let line_end = line_end.unwrap_or(0) + 1;
    let end = match head_end(buf) {
        Some(e) => e,
        None => {
            // An empty request line followed by nothing yet is partial.
            if buf.len() - line_end > limits.max_header_bytes {
                return Err(NoHead::Error(RequestError::HeaderFieldsTooLarge));
            }
            if count_lines(&buf[line_end..]) > limits.max_headers {
                return Err(NoHead::TooManyLines);
            }
            return Err(NoHead::Partial);
        }
    };
    if end - line_end > limits.max_header_bytes + 2 {
        return Err(NoHead::Error(RequestError::HeaderFieldsTooLarge));
    }
    Ok(end)
}

/// The answer to an incomplete head with more complete field lines than
/// fields are allowed: the one the whole head will get, however it is cut.
/// httparse reads the lines in order, so an invalid one among the first
/// `fields.len()` is reported first (as when the head arrives whole), and
/// past them there are too many fields.
fn lines_verdict<'b>(
    buf: &'b [u8],
    fields: &mut [MaybeUninit<httparse::Header<'b>>],
) -> RequestError {
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(buf, fields) {
        Err(e) => httparse_error(e, buf),
        Ok(_) => RequestError::HeaderFieldsTooLarge,
    }
}

/// Runs httparse on `buf[..end]` (which ends with the empty line), its
/// fields written into `fields`, and maps its errors to statuses; returns
/// the head's length.
#[inline]
fn run_httparse<'h, 'b>(
    req: &mut httparse::Request<'h, 'b>,
    buf: &'b [u8],
    end: usize,
    fields: &'h mut [MaybeUninit<httparse::Header<'b>>],
) -> Result<usize, RequestError> {
    let status = req
        .parse_with_uninit_headers(&buf[..end], fields)
        .map_err(|e| httparse_error(e, buf))?;
    match status {
        httparse::Status::Complete(n) => Ok(n),
        // We handed httparse a buffer ending with an empty line.
        httparse::Status::Partial => Err(RequestError::BadRequest("malformed request")),
    }
}

/// The request from its parsed request line, with the version's default
/// keep-alive and no header fields read yet.
#[inline]
fn request_line<'a>(
    req: &httparse::Request<'_, 'a>,
    head_len: usize,
) -> Result<Request<'a>, RequestError> {
    let (Some(method_str), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(RequestError::BadRequest("incomplete request line"));
    };
    let version = if minor == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let method = match method_str {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        _ => Method::Other,
    };
    let (path, query) = split_target(target, method)?;
    Ok(Request {
        method,
        method_str,
        path,
        query,
        target,
        version,
        keep_alive: version == Version::Http11,
        content_length: 0,
        if_match: None,
        if_none_match: None,
        if_modified_since: None,
        if_unmodified_since: None,
        range: None,
        if_range: None,
        head_len,
    })
}

/// What the header fields say about framing and the connection, gathered
/// while the conditional and range fields go straight into the request.
#[derive(Default)]
struct FramingFields {
    content_length: Option<u64>,
    transfer_encoding: bool,
    te_chunked_last: bool,
    hosts: usize,
    conn_close: bool,
    conn_keep_alive: bool,
}

/// Reads every header field: framing and connection fields into the
/// returned [`FramingFields`], the others into `out`.
#[inline]
fn read_fields<'a>(
    headers: &[httparse::Header<'a>],
    out: &mut Request<'a>,
) -> Result<FramingFields, RequestError> {
    let mut f = FramingFields::default();
    for h in headers.iter() {
        let name = h.name;
        let value = trim_ows(h.value);
        if name.eq_ignore_ascii_case("host") {
            f.hosts += 1;
        } else if name.eq_ignore_ascii_case("content-length") {
            f.content_length = Some(parse_content_length(value, f.content_length)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            f.transfer_encoding = true;
            read_transfer_codings(value, &mut f.te_chunked_last)?;
        } else if name.eq_ignore_ascii_case("connection") {
            read_connection_tokens(value, &mut f);
        } else if name.eq_ignore_ascii_case("if-none-match") {
            out.if_none_match = Some(value);
        } else if name.eq_ignore_ascii_case("if-match") {
            out.if_match = Some(value);
        } else if name.eq_ignore_ascii_case("if-modified-since") {
            out.if_modified_since = Some(value);
        } else if name.eq_ignore_ascii_case("if-unmodified-since") {
            out.if_unmodified_since = Some(value);
        } else if name.eq_ignore_ascii_case("range") {
            if out.range.is_some() {
                return Err(RequestError::BadRequest("duplicate Range"));
            }
            out.range = Some(value);
        } else if name.eq_ignore_ascii_case("if-range") {
            out.if_range = Some(value);
        }
    }
    Ok(f)
}

/// One Transfer-Encoding field: the last coding decides whether the body is
/// chunked; any other coding is one we cannot decode.
#[inline]
fn read_transfer_codings(value: &[u8], te_chunked_last: &mut bool) -> Result<(), RequestError> {
    for coding in value.split(|&b| b == b',') {
        let c = trim_ows(coding);
        if c.is_empty() {
            continue;
        }
        if c.eq_ignore_ascii_case(b"chunked") {
            if *te_chunked_last {
                return Err(RequestError::BadRequest("chunked applied twice"));
            }
            *te_chunked_last = true;
        } else {
            return Err(RequestError::NotImplemented);
        }
    }
    Ok(())
}

/// One Connection field: notes `close` and `keep-alive`.
#[inline]
fn read_connection_tokens(value: &[u8], f: &mut FramingFields) {
    for tok in value.split(|&b| b == b',') {
        let t = trim_ows(tok);
        if t.eq_ignore_ascii_case(b"close") {
            f.conn_close = true;
        } else if t.eq_ignore_ascii_case(b"keep-alive") {
            f.conn_keep_alive = true;
        }
    }
}

impl FramingFields {
    /// The framing rules (Transfer-Encoding, Host, body size); returns the
    /// body length and whether the connection stays open.
    #[inline]
    fn check_framing(&self, version: Version, max_body: u64) -> Result<(u64, bool), RequestError> {
        if self.transfer_encoding {
            if self.content_length.is_some() {
                return Err(RequestError::BadRequest(
                    "both Content-Length and Transfer-Encoding",
                ));
            }
            if version == Version::Http10 {
                return Err(RequestError::BadRequest(
                    "Transfer-Encoding in an HTTP/1.0 request",
                ));
            }
            if !self.te_chunked_last {
                return Err(RequestError::BadRequest("empty Transfer-Encoding"));
            }
            return Err(RequestError::LengthRequired);
        }
        if version == Version::Http11 && self.hosts != 1 {
            return Err(RequestError::BadRequest(if self.hosts == 0 {
                "missing Host"
            } else {
                "several Host fields"
            }));
        }
        if self.hosts > 1 {
            return Err(RequestError::BadRequest("several Host fields"));
        }
        let cl = self.content_length.unwrap_or(0);
        if cl > max_body {
            return Err(RequestError::PayloadTooLarge);
        }
        let keep_alive = match version {
            Version::Http11 | Version::Http2 | Version::Http3 => !self.conn_close,
            Version::Http10 => self.conn_keep_alive && !self.conn_close,
        };
        Ok((cl, keep_alive))
    }
}

/// Complete lines in `bytes`.
fn count_lines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// The status httparse's error `e` on the head in `buf` is answered with.
fn httparse_error(e: httparse::Error, buf: &[u8]) -> RequestError {
    match e {
        httparse::Error::TooManyHeaders => RequestError::HeaderFieldsTooLarge,
        httparse::Error::Version => version_error(buf),
        httparse::Error::HeaderName => RequestError::BadRequest("invalid header name"),
        httparse::Error::HeaderValue => RequestError::BadRequest("invalid header value"),
        httparse::Error::Token => RequestError::BadRequest("invalid token"),
        httparse::Error::NewLine => RequestError::BadRequest("invalid line ending"),
        _ => RequestError::BadRequest("malformed request"),
    }
}

fn version_error(buf: &[u8]) -> RequestError {
    // httparse reports anything but HTTP/1.0 and HTTP/1.1 as a version error;
    // a line that does not even end in "HTTP/x.y" is plain malformed.
    let line = match find_byte(buf, b'\n') {
        Some(n) => &buf[..n],
        None => buf,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let last = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    let well_formed = last.len() == 8
        && last.starts_with(b"HTTP/")
        && last[5].is_ascii_digit()
        && last[6] == b'.'
        && last[7].is_ascii_digit();
    if well_formed {
        RequestError::VersionNotSupported
    } else {
        RequestError::BadRequest("malformed request line")
    }
}

fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |p| p + 1);
    &v[start..end.max(start)]
}

fn parse_content_length(value: &[u8], prev: Option<u64>) -> Result<u64, RequestError> {
    // A list of identical values ("5, 5") is tolerated as RFC 9110 §8.6
    // allows; anything else is a framing error.
    let mut seen = prev;
    let mut any = false;
    for part in value.split(|&b| b == b',') {
        let p = trim_ows(part);
        if p.is_empty() || p.len() > 19 || !p.iter().all(u8::is_ascii_digit) {
            return Err(RequestError::BadRequest("invalid Content-Length"));
        }
        let mut v: u64 = 0;
        for &d in p {
            v = v * 10 + u64::from(d - b'0');
        }
        if let Some(s) = seen {
            if s != v {
                return Err(RequestError::BadRequest("conflicting Content-Length"));
            }
        }
        seen = Some(v);
        any = true;
    }
    match (any, seen) {
        (true, Some(v)) => Ok(v),
        _ => Err(RequestError::BadRequest("invalid Content-Length")),
    }
}

pub(crate) fn split_target(
    target: &str,
    method: Method,
) -> Result<(&str, Option<&str>), RequestError> {
    if target == "*" {
        if method == Method::Options {
            return Ok(("*", None));
        }
        return Err(RequestError::BadRequest("asterisk-form outside OPTIONS"));
    }
    let origin = if target.starts_with('/') {
        target
    } else {
        // absolute-form: scheme "://" authority path. Compared as bytes: the
        // target may hold non-ASCII bytes, so no str slicing at fixed offsets.
        let b = target.as_bytes();
        let scheme_len = if b.len() > 7 && b[..7].eq_ignore_ascii_case(b"http://") {
            7
        } else if b.len() > 8 && b[..8].eq_ignore_ascii_case(b"https://") {
            8
        } else {
            return Err(RequestError::BadRequest("invalid request target"));
        };
        let after = &target[scheme_len..];
        match after.find(['/', '?']) {
            Some(p) if after.as_bytes()[p] == b'/' => &after[p..],
            Some(p) => {
                // "http://host?q" has an empty path, which means "/".
                return Ok(("/", Some(&after[p + 1..])));
            }
            None => "/",
        }
    };
    // Fragments are never sent; treat '#' as invalid. One pass finds the
    // first '?' or '#' (a plain loop: targets are mostly a few dozen
    // octets, shorter than the memchr crate's vector loops repay); only a
    // query is searched again.
    let b = origin.as_bytes();
    let fragment = Err(RequestError::BadRequest("fragment in request target"));
    match b.iter().position(|&c| c == b'?' || c == b'#') {
        None => Ok((origin, None)),
        Some(q) if b[q] == b'?' => match b[q + 1..].iter().position(|&c| c == b'#') {
            // '?' is ASCII, so both slices end and start on characters.
            None => Ok((&origin[..q], Some(&origin[q + 1..]))),
            Some(_) => fragment,
        },
        Some(_) => fragment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Request<'_>, u16> {
        match parse_head(s.as_bytes(), &Limits::default(), 1 << 20) {
            Parsed::Complete(r) => Ok(r),
            Parsed::Partial => Err(0),
            Parsed::Error(e) => Err(e.status()),
        }
    }

    /// The answer to a head does not depend on how much of it has
    /// arrived: every prefix is partial or gets the whole head's answer,
    /// also when an incomplete head already has more lines than fields are
    /// allowed (a fuzzer found 431 for a prefix of a head that gets 400).
    #[test]
    fn every_prefix_is_partial_or_gets_the_whole_heads_answer() {
        let bad_value = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}X-B: a\x7fb\r\n{}\r\n",
            "X-A: b\r\n".repeat(40),
            "X-A: b\r\n".repeat(70)
        );
        let bad_name = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}X(B: b\r\n{}\r\n",
            "X-A: b\r\n".repeat(90),
            "X-A: b\r\n".repeat(20)
        );
        let many = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}\r\n",
            "X-A: b\r\n".repeat(110)
        );
        let bad_version = format!("GET / HTTP/1.7\r\n{}\r\n", "X-A: b\r\n".repeat(110));
        for (head, status) in [
            (&bad_value, 400),
            (&bad_name, 400),
            (&many, 431),
            (&bad_version, 505),
        ] {
            assert_eq!(parse(head).err(), Some(status), "whole: {head:?}");
            for n in 1..head.len() {
                let got = parse(&head[..n]).err();
                assert!(
                    got == Some(0) || got == Some(status),
                    "prefix of {n} octets: {got:?}, the whole head: {status}"
                );
            }
        }
    }

    #[test]
    fn simple_get() {
        let r = parse("GET /a%20b?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.path, "/a%20b");
        assert_eq!(r.query, Some("x=1"));
        assert!(r.keep_alive);
        assert_eq!(r.head_len, 36);
    }

    #[test]
    fn table() {
        let long_line = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(9000));
        let many = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}\r\n",
            "X-A: b\r\n".repeat(101)
        );
        let big = format!(
            "GET / HTTP/1.1\r\nHost: x\r\nX-A: {}\r\n\r\n",
            "b".repeat(17000)
        );
        let cases: Vec<(&str, &str, i32)> = vec![
            ("ok", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 200),
            ("http10", "GET / HTTP/1.0\r\n\r\n", 200),
            ("partial", "GET / HTTP/1.1\r\nHost: x\r\n", 0),
            ("partial line", "GET / HT", 0),
            ("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
            ("http/1.2", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505),
            ("http/3.0", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505),
            ("garbage version", "GET / FOO\r\nHost: x\r\n\r\n", 400),
            ("no host", "GET / HTTP/1.1\r\n\r\n", 400),
            ("two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("cl+te", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("te chunked", "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
            ("te gzip", "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            ("te 1.0", "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("cl differ", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
            ("cl same", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", 200),
            ("cl list", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\n", 400),
            ("cl sign", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", 400),
            ("cl huge", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            ("cl too big", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413),
            ("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400),
            ("space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
            ("bad token", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("bad header name", "GET / HTTP/1.1\r\nHo\"st: x\r\n\r\n", 400),
            ("star not options", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("options star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 200),
            ("absolute form", "GET http://x/a?b HTTP/1.1\r\nHost: x\r\n\r\n", 200),
            ("relative", "GET a HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            (&long_line, "", 414),
            (&many, "", 431),
            (&big, "", 431),
        ];
        for (name, input, want) in cases {
            let (name, input) = if input.is_empty() {
                ("generated", name)
            } else {
                (name, input)
            };
            let got = match parse(input) {
                Ok(_) => 200,
                Err(s) => i32::from(s),
            };
            assert_eq!(got, want, "case {name}");
        }
    }

    #[test]
    fn keep_alive_rules() {
        assert!(!parse("GET / HTTP/1.0\r\n\r\n").unwrap().keep_alive);
        assert!(
            parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                .unwrap()
                .keep_alive
        );
        assert!(
            !parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap()
                .keep_alive
        );
    }

    #[test]
    fn absolute_form_path() {
        let r = parse("GET http://x HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(r.path, "/");
        let r = parse("GET http://x/a/b?q HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!((r.path, r.query), ("/a/b", Some("q")));
    }

    #[test]
    fn leading_lines() {
        assert_eq!(leading_empty_lines(b"\r\n\nGET"), 3);
        assert_eq!(leading_empty_lines(b"\r"), 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // Mutations of valid requests plus random bytes (xorshift, fixed
        // seed): parse_head must return, never panic.
        let seeds: [&[u8]; 3] = [
            b"GET http://h\xc3\xa9llo/a HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n",
            b"GET /\xe2\x82\xac?q HTTP/1.0\r\nContent-Length: 5\r\n\r\n",
            b"OPTIONS * HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let limits = Limits::default();
        for i in 0..20_000 {
            let mut buf = seeds[i % seeds.len()].to_vec();
            for _ in 0..(next() % 6) {
                let pos = (next() as usize) % buf.len();
                match next() % 3 {
                    0 => buf[pos] = next() as u8,
                    1 => buf.insert(pos, next() as u8),
                    _ => {
                        buf.remove(pos);
                    }
                }
            }
            let _ = parse_head(&buf, &limits, 1 << 20);
            let _ = leading_empty_lines(&buf);
        }
    }

    #[test]
    fn non_ascii_absolute_target() {
        // 'é' straddles byte 7: must not panic on a char boundary.
        let r = parse_head(
            "GET httpé://x/ HTTP/1.1\r\nHost: x\r\n\r\n".as_bytes(),
            &Limits::default(),
            0,
        );
        assert!(matches!(r, Parsed::Error(_)));
    }

    #[test]
    fn targets_split_at_the_first_question_mark_and_refuse_fragments() {
        let split = |t| split_target(t, Method::Get);
        assert_eq!(split("/a"), Ok(("/a", None)));
        assert_eq!(split("/a?"), Ok(("/a", Some(""))));
        assert_eq!(split("/é?x=é?y"), Ok(("/é", Some("x=é?y"))));
        assert_eq!(split("http://h?q"), Ok(("/", Some("q"))));
        for t in ["/a#b", "/a?b#c", "/#", "/a?#"] {
            assert!(matches!(split(t), Err(RequestError::BadRequest(_))), "{t}");
        }
    }

    #[test]
    fn endless_line_is_414_early() {
        let s = "GET /".to_string() + &"a".repeat(9000);
        assert_eq!(parse(&s).unwrap_err(), 414);
    }
}
