//! The request handler: a validated request in, a response queued on an
//! [`OutQueue`] out. No I/O on sockets happens here (only file-system
//! look-ups through the cache), so every concurrency model shares it.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use httplab_wire::request::{Method, Request, Version};

use crate::config::ServerConfig;
use crate::files::{render_listing, Body, FileCache, FileInfo, Miss, Resolved};
use crate::log::AccessLog;
use crate::negotiate::{AcceptEncoding, Choice};
use crate::out::OutQueue;
use crate::stats::SharedStats;

const ALLOW: &str = "GET, HEAD, OPTIONS";
/// More ranges than this in one request are ignored (full 200 instead).
const MAX_RANGES: usize = 64;

/// What was answered (for logs and statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Body bytes queued.
    pub body_bytes: u64,
}

/// `Date` header value, formatted at most once per second. The wall clock
/// is read only when the monotonic clock says the second may have changed
/// (`next`), so a loop turn costs one clock read (the caller's), not two.
struct DateCache {
    secs: u64,
    text: [u8; 29],
    next: Option<Instant>,
}

impl DateCache {
    fn new() -> Self {
        let mut d = DateCache {
            secs: u64::MAX,
            text: [b' '; 29],
            next: None,
        };
        d.refresh(Instant::now());
        d
    }

    fn refresh(&mut self, mono: Instant) {
        if self.next.is_some_and(|t| mono < t) {
            return;
        }
        let now = SystemTime::now();
        let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        // Next look: at the next whole second of the wall clock.
        self.next = Some(
            mono + std::time::Duration::from_nanos(1_000_000_000 - u64::from(since.subsec_nanos())),
        );
        if secs != self.secs {
            let s = httpdate::fmt_http_date(now);
            if s.len() == 29 {
                self.text.copy_from_slice(s.as_bytes());
            }
            self.secs = secs;
        }
    }
}

/// Per-worker handler state: config, file cache, Date cache, access log and
/// local counters (flushed to the shared [`Stats`] now and then).
pub struct Handler {
    cfg: Arc<ServerConfig>,
    files: FileCache,
    date: DateCache,
    log: Option<AccessLog>,
    stats: SharedStats,
    local_requests: u64,
    local_bytes: u64,
    local_writes: u64,
    /// `--http3`: the `Alt-Svc` field line sent on every response (HTTP/1.1
    /// and HTTP/2), rendered once at start; None without HTTP/3 and on the
    /// HTTP/3 engine's own handler.
    alt_svc: Option<Arc<[u8]>>,
}

/// How the connection is to be labelled in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnHeader {
    /// No Connection field (HTTP/1.1 persistent default).
    None,
    /// `Connection: keep-alive` (HTTP/1.0 client that asked for it).
    KeepAlive,
    /// `Connection: close`.
    Close,
}

impl Handler {
    /// A handler for one worker. `root` must be canonical.
    pub fn new(
        cfg: Arc<ServerConfig>,
        root: std::path::PathBuf,
        log: Option<AccessLog>,
        stats: SharedStats,
    ) -> Self {
        let files = FileCache::new(root, &cfg);
        Handler {
            cfg,
            files,
            date: DateCache::new(),
            log,
            stats,
            local_requests: 0,
            local_bytes: 0,
            local_writes: 0,
            alt_svc: None,
        }
    }

    /// Sends `line` (a whole `Alt-Svc: ...\r\n` field line) on every
    /// response from now on (None: none).
    pub fn set_alt_svc(&mut self, line: Option<Arc<[u8]>>) {
        self.alt_svc = line;
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Refreshes the cached Date (cheap; call once per loop iteration).
    pub fn tick(&mut self) {
        self.date.refresh(Instant::now());
    }

    /// Like [`Handler::tick`], with the caller's clock reading.
    pub fn tick_at(&mut self, now: Instant) {
        self.date.refresh(now);
    }

    /// Adds bytes written and write calls made to the local counters.
    pub fn count_io(&mut self, bytes: u64, writes: u64) {
        self.local_bytes += bytes;
        self.local_writes += writes;
    }

    /// Moves local counters into the shared statistics and flushes the log.
    pub fn flush(&mut self) {
        self.flush_stats();
        if let Some(l) = &mut self.log {
            l.flush();
        }
    }

    /// Moves local counters into the shared statistics.
    pub fn flush_stats(&mut self) {
        if self.local_requests > 0 || self.local_bytes > 0 || self.local_writes > 0 {
            self.stats
                .add_io(self.local_requests, self.local_bytes, self.local_writes);
            self.local_requests = 0;
            self.local_bytes = 0;
            self.local_writes = 0;
        }
    }

    /// Shared statistics.
    pub fn stats(&self) -> &SharedStats {
        &self.stats
    }

    fn log(&mut self, peer: Option<std::net::IpAddr>, line: &str, a: Answer) {
        self.local_requests += 1;
        if let Some(l) = &mut self.log {
            l.record(peer, line, a.status, a.body_bytes);
        }
    }

    /// Answers a valid request head; `head` is its bytes (`req.head_len`
    /// of them), read again only for `Accept-Encoding` of a file with
    /// precompressed variants. `conn` says how to label the connection
    /// (decided by the session: keep-alive rules, caps).
    pub fn respond(
        &mut self,
        req: &Request<'_>,
        head: &[u8],
        conn: ConnHeader,
        peer: Option<std::net::IpAddr>,
        out: &mut OutQueue,
        now: Instant,
    ) -> Answer {
        let a = self.respond_inner(req, head, conn, out, now);
        if self.log.is_some() {
            let version = match req.version {
                Version::Http10 => "HTTP/1.0",
                Version::Http11 => "HTTP/1.1",
                Version::Http2 => "HTTP/2.0",
                Version::Http3 => "HTTP/3",
            };
            let line = format!("{} {} {version}", req.method_str, req.target);
            self.log(peer, &line, a);
        } else {
            self.local_requests += 1;
        }
        a
    }

    /// Answers a request that could not be parsed (always closes).
    /// `head_only`: the request is known to be HEAD, so the error carries
    /// no content (RFC 9110 §9.3.2), only its head.
    pub fn respond_error(
        &mut self,
        status: u16,
        head_only: bool,
        peer: Option<std::net::IpAddr>,
        out: &mut OutQueue,
    ) -> Answer {
        let extra = if status == 405 {
            "Allow: GET, HEAD, OPTIONS\r\n"
        } else {
            ""
        };
        let a = self.error(status, extra, ConnHeader::Close, head_only, out);
        self.log(peer, "-", a);
        a
    }

    fn respond_inner(
        &mut self,
        req: &Request<'_>,
        head: &[u8],
        conn: ConnHeader,
        out: &mut OutQueue,
        now: Instant,
    ) -> Answer {
        let head_only = req.method == Method::Head;
        match req.method {
            Method::Options => {
                let buf = &mut out.buf;
                self.status_line(buf, 200);
                buf.extend_from_slice(b"Allow: ");
                buf.extend_from_slice(ALLOW.as_bytes());
                buf.extend_from_slice(b"\r\nContent-Length: 0\r\n");
                end_head(buf, conn);
                Answer {
                    status: 200,
                    body_bytes: 0,
                }
            }
            Method::Other => self.error(405, "Allow: GET, HEAD, OPTIONS\r\n", conn, false, out),
            Method::Get | Method::Head => match self.files.lookup(req.path, now) {
                Err(m) => {
                    let st = m.status();
                    let conn = if m == Miss::BadPath {
                        ConnHeader::Close
                    } else {
                        conn
                    };
                    self.error(st, "", conn, head_only, out)
                }
                Ok(Resolved::Redirect(loc)) => {
                    let mut extra = format!("Location: {loc}");
                    if let Some(q) = req.query {
                        extra.push('?');
                        extra.push_str(q);
                    }
                    extra.push_str("\r\n");
                    self.error(301, &extra, conn, head_only, out)
                }
                Ok(Resolved::Listing(dir)) => {
                    let body = render_listing(&dir, req.path);
                    let buf = &mut out.buf;
                    self.status_line(buf, 200);
                    buf.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
                    content_length(buf, body.len() as u64);
                    end_head(buf, conn);
                    if !head_only {
                        buf.extend_from_slice(&body);
                    }
                    Answer {
                        status: 200,
                        body_bytes: if head_only { 0 } else { body.len() as u64 },
                    }
                }
                Ok(Resolved::File(info)) => {
                    // One call site for every file, so that the compiler
                    // keeps inlining it on the hot path (a second one, for
                    // files with variants, cost 70 instructions a request).
                    let variant = match self.variant_of(&info, head) {
                        Ok(v) => v,
                        Err(()) => {
                            let vary = "Vary: Accept-Encoding\r\n";
                            return self.error(406, vary, conn, head_only, out);
                        }
                    };
                    self.serve_file(req, variant.unwrap_or(&info), conn, head_only, out)
                }
            },
        }
    }

    /// The precompressed variant of `info` to send for the request head
    /// `head` (None: the file itself); Err: every acceptable coding is
    /// refused (406). Files without variants never read the head.
    fn variant_of<'a>(&self, info: &'a FileInfo, head: &[u8]) -> Result<Option<&'a FileInfo>, ()> {
        if info.variants.is_empty() {
            return Ok(None);
        }
        let accept = AcceptEncoding::from_head(head);
        match accept.choose(info.variants.iter().filter_map(|v| v.coding)) {
            Choice::Identity => Ok(None),
            Choice::Coded(c) => Ok(info
                .variants
                .iter()
                .find(|v| v.coding == Some(c))
                .map(|v| &**v)),
            Choice::NotAcceptable => Err(()),
        }
    }

    fn serve_file(
        &mut self,
        req: &Request<'_>,
        info: &FileInfo,
        conn: ConnHeader,
        head_only: bool,
        out: &mut OutQueue,
    ) -> Answer {
        let vary = if info.vary {
            "Vary: Accept-Encoding\r\n"
        } else {
            ""
        };
        // Preconditions, in RFC 9110 §13.2.2 order.
        if let Some(v) = req.if_match {
            if !etag_matches(v, &info.etag, true) {
                return self.error(412, vary, conn, head_only, out);
            }
        } else if let Some(v) = req.if_unmodified_since {
            if let Some(t) = parse_date(v) {
                if info.mtime_secs > t {
                    return self.error(412, vary, conn, head_only, out);
                }
            }
        }
        let not_modified = if let Some(v) = req.if_none_match {
            etag_matches(v, &info.etag, false)
        } else if let Some(v) = req.if_modified_since {
            parse_date(v).is_some_and(|t| info.mtime_secs <= t)
        } else {
            false
        };
        if not_modified {
            let buf = &mut out.buf;
            self.status_line(buf, 304);
            buf.extend_from_slice(&info.fields_304);
            end_head(buf, conn);
            return Answer {
                status: 304,
                body_bytes: 0,
            };
        }
        if let (Some(range), Method::Get) = (req.range, req.method) {
            let applies = match req.if_range {
                None => true,
                Some(v) => if_range_matches(v, info),
            };
            if applies {
                match parse_ranges(range, info.len) {
                    RangeSpec::Ignore => {}
                    RangeSpec::Unsatisfiable => {
                        let extra = format!("Content-Range: bytes */{}\r\n{vary}", info.len);
                        return self.error(416, &extra, conn, false, out);
                    }
                    RangeSpec::Ranges(r) if r.len() == 1 => {
                        let (a, b) = r[0];
                        let buf = &mut out.buf;
                        self.status_line(buf, 206);
                        buf.extend_from_slice(&info.fields);
                        buf.extend_from_slice(
                            format!("Content-Range: bytes {a}-{b}/{}\r\n", info.len).as_bytes(),
                        );
                        content_length(buf, b + 1 - a);
                        end_head(buf, conn);
                        push_last_body(out, info, a, b + 1);
                        return Answer {
                            status: 206,
                            body_bytes: b + 1 - a,
                        };
                    }
                    // Several ranges of a coded variant: the whole variant
                    // instead (a part cannot say its bytes are coded).
                    RangeSpec::Ranges(_) if info.coding.is_some() => {}
                    RangeSpec::Ranges(r) => return self.multipart(info, &r, conn, out),
                }
            }
        }
        // The fast path: pre-rendered head, cached Date, then the body.
        let buf = &mut out.buf;
        buf.extend_from_slice(&info.head_200);
        buf.extend_from_slice(&self.date.text);
        buf.extend_from_slice(b"\r\n");
        if let Some(a) = &self.alt_svc {
            buf.extend_from_slice(a);
        }
        end_head(buf, conn);
        if head_only {
            return Answer {
                status: 200,
                body_bytes: 0,
            };
        }
        push_last_body(out, info, 0, info.len);
        Answer {
            status: 200,
            body_bytes: info.len,
        }
    }

    fn multipart(
        &mut self,
        info: &FileInfo,
        ranges: &[(u64, u64)],
        conn: ConnHeader,
        out: &mut OutQueue,
    ) -> Answer {
        let boundary = format!("httplab-{:016x}", fnv(info.etag.as_bytes()));
        let part_heads: Vec<String> = ranges
            .iter()
            .map(|(a, b)| {
                format!(
                    "--{boundary}\r\nContent-Type: {}\r\nContent-Range: bytes {a}-{b}/{}\r\n\r\n",
                    info.content_type, info.len
                )
            })
            .collect();
        let tail = format!("--{boundary}--\r\n");
        let total: u64 = ranges
            .iter()
            .zip(&part_heads)
            .map(|((a, b), h)| h.len() as u64 + (b + 1 - a) + 2)
            .sum::<u64>()
            + tail.len() as u64;
        let buf = &mut out.buf;
        self.status_line(buf, 206);
        buf.extend_from_slice(
            format!("Content-Type: multipart/byteranges; boundary={boundary}\r\n").as_bytes(),
        );
        buf.extend_from_slice(&info.fields_304);
        content_length(buf, total);
        end_head(buf, conn);
        for ((a, b), h) in ranges.iter().zip(&part_heads) {
            out.buf.extend_from_slice(h.as_bytes());
            push_body(out, info, *a, b + 1);
            out.buf.extend_from_slice(b"\r\n");
        }
        out.buf.extend_from_slice(tail.as_bytes());
        Answer {
            status: 206,
            body_bytes: total,
        }
    }

    /// Status line, Server and Date.
    fn status_line(&self, buf: &mut Vec<u8>, status: u16) {
        buf.extend_from_slice(b"HTTP/1.1 ");
        buf.extend_from_slice(status.to_string().as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(reason(status).as_bytes());
        buf.extend_from_slice(b"\r\nServer: ");
        buf.extend_from_slice(self.cfg.server_name.as_bytes());
        buf.extend_from_slice(b"\r\nDate: ");
        buf.extend_from_slice(&self.date.text);
        buf.extend_from_slice(b"\r\n");
        if let Some(a) = &self.alt_svc {
            buf.extend_from_slice(a);
        }
    }

    /// A response with a small HTML body explaining the status.
    fn error(
        &self,
        status: u16,
        extra: &str,
        conn: ConnHeader,
        head_only: bool,
        out: &mut OutQueue,
    ) -> Answer {
        let buf = &mut out.buf;
        self.status_line(buf, status);
        buf.extend_from_slice(extra.as_bytes());
        let r = reason(status);
        let body = format!(
            "<!DOCTYPE html>\n<html><head><title>{status} {r}</title></head><body><h1>{status} {r}</h1></body></html>\n"
        );
        buf.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
        content_length(buf, body.len() as u64);
        end_head(buf, conn);
        if !head_only {
            buf.extend_from_slice(body.as_bytes());
        }
        Answer {
            status,
            body_bytes: if head_only { 0 } else { body.len() as u64 },
        }
    }
}

/// [`push_body`] for an answer's last bytes: a scratch queue (HTTP/2,
/// HTTP/3) may take a cached body by reference
/// ([`OutQueue::push_last_shared`]).
fn push_last_body(out: &mut OutQueue, info: &FileInfo, a: u64, end: u64) {
    match &info.body {
        Body::Mem(m) => out.push_last_shared(m, a as usize, end as usize),
        Body::Both(m, _) if out.is_scratch() => out.push_last_shared(m, a as usize, end as usize),
        Body::Fd(f) | Body::Both(_, f) => out.push_file(f, a, end),
    }
}

/// Queues `info`'s body bytes `[a..end]`: from memory, or from the file
/// (a large file, or [`Body::Both`] on a connection's own queue, which is
/// HTTP/1.1's).
fn push_body(out: &mut OutQueue, info: &FileInfo, a: u64, end: u64) {
    match &info.body {
        Body::Mem(m) => push_mem(out, m, a, end),
        Body::Both(m, _) if out.is_scratch() => push_mem(out, m, a, end),
        Body::Fd(f) | Body::Both(_, f) => out.push_file(f, a, end),
    }
}

fn push_mem(out: &mut OutQueue, m: &[u8], a: u64, end: u64) {
    let (a, end) = (a as usize, (end as usize).min(m.len()));
    if a < end {
        out.buf.extend_from_slice(&m[a..end]);
    }
}

fn content_length(buf: &mut Vec<u8>, n: u64) {
    buf.extend_from_slice(b"Content-Length: ");
    buf.extend_from_slice(n.to_string().as_bytes());
    buf.extend_from_slice(b"\r\n");
}

fn end_head(buf: &mut Vec<u8>, conn: ConnHeader) {
    match conn {
        ConnHeader::None => buf.extend_from_slice(b"\r\n"),
        ConnHeader::KeepAlive => buf.extend_from_slice(b"Connection: keep-alive\r\n\r\n"),
        ConnHeader::Close => buf.extend_from_slice(b"Connection: close\r\n\r\n"),
    }
}

/// Reason phrase for the codes this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

pub(crate) fn parse_date(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let t = httpdate::parse_http_date(s).ok()?;
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// Does the If-Match / If-None-Match list `v` match `etag`? `strong`
/// selects strong comparison (weak tags never match then).
pub(crate) fn etag_matches(v: &[u8], etag: &str, strong: bool) -> bool {
    let v = trim(v);
    if v == b"*" {
        return true;
    }
    for item in v.split(|&b| b == b',') {
        let item = trim(item);
        let (weak, tag) = match item.strip_prefix(b"W/") {
            Some(t) => (true, t),
            None => (false, item),
        };
        if strong && weak {
            continue;
        }
        if tag == etag.as_bytes() {
            return true;
        }
    }
    false
}

fn if_range_matches(v: &[u8], info: &FileInfo) -> bool {
    if_range_value_matches(v, &info.etag, info.mtime_secs)
}

/// `If-Range`: a strong entity tag must equal `etag`, a date must equal the
/// modification time; weak tags never match.
pub(crate) fn if_range_value_matches(v: &[u8], etag: &str, mtime_secs: u64) -> bool {
    let v = trim(v);
    if v.starts_with(b"\"") {
        v == etag.as_bytes()
    } else if v.starts_with(b"W/") {
        false
    } else {
        parse_date(v) == Some(mtime_secs)
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(s, |p| p + 1);
    &v[s..e.max(s)]
}

/// Parsed Range header.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// Invalid or unsupported: serve the whole representation.
    Ignore,
    /// No range overlaps the representation: 416.
    Unsatisfiable,
    /// Satisfiable ranges as inclusive (first, last) byte positions.
    Ranges(Vec<(u64, u64)>),
}

/// Parses a `Range` value against a representation of `len` bytes.
pub fn parse_ranges(v: &[u8], len: u64) -> RangeSpec {
    let v = trim(v);
    let Some(set) = v.strip_prefix(b"bytes=") else {
        return RangeSpec::Ignore;
    };
    let mut out = Vec::new();
    let mut count = 0usize;
    for spec in set.split(|&b| b == b',') {
        let spec = trim(spec);
        if spec.is_empty() {
            continue;
        }
        count += 1;
        if count > MAX_RANGES {
            return RangeSpec::Ignore;
        }
        let Some(dash) = spec.iter().position(|&b| b == b'-') else {
            return RangeSpec::Ignore;
        };
        let (first, last) = (&spec[..dash], &spec[dash + 1..]);
        if first.is_empty() {
            let Some(n) = num(last) else {
                return RangeSpec::Ignore;
            };
            if n > 0 && len > 0 {
                out.push((len.saturating_sub(n), len - 1));
            }
        } else {
            let Some(a) = num(first) else {
                return RangeSpec::Ignore;
            };
            let b = if last.is_empty() {
                u64::MAX
            } else {
                match num(last) {
                    Some(b) if b >= a => b,
                    _ => return RangeSpec::Ignore,
                }
            };
            if a < len {
                out.push((a, b.min(len - 1)));
            }
        }
    }
    if count == 0 {
        RangeSpec::Ignore
    } else if out.is_empty() {
        RangeSpec::Unsatisfiable
    } else {
        RangeSpec::Ranges(out)
    }
}

fn num(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeSpec::*;
        let cases: &[(&str, u64, RangeSpec)] = &[
            ("bytes=0-9", 100, Ranges(vec![(0, 9)])),
            ("bytes=90-", 100, Ranges(vec![(90, 99)])),
            ("bytes=-10", 100, Ranges(vec![(90, 99)])),
            ("bytes=-200", 100, Ranges(vec![(0, 99)])),
            ("bytes=50-500", 100, Ranges(vec![(50, 99)])),
            ("bytes=0-0,5-6", 100, Ranges(vec![(0, 0), (5, 6)])),
            ("bytes=100-", 100, Unsatisfiable),
            ("bytes=-0", 100, Unsatisfiable),
            ("bytes=5-1", 100, Ignore),
            ("items=0-1", 100, Ignore),
            ("bytes=a-b", 100, Ignore),
            ("bytes=", 100, Ignore),
        ];
        for (v, len, want) in cases {
            assert_eq!(&parse_ranges(v.as_bytes(), *len), want, "{v}");
        }
    }

    #[test]
    fn etags() {
        assert!(etag_matches(b"\"a\", \"b\"", "\"b\"", true));
        assert!(etag_matches(b"W/\"b\"", "\"b\"", false));
        assert!(!etag_matches(b"W/\"b\"", "\"b\"", true));
        assert!(etag_matches(b"*", "\"b\"", true));
        assert!(!etag_matches(b"\"c\"", "\"b\"", false));
    }
}
