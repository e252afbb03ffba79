//! Server side: a typed [`Request`] from a decoded HTTP/2 request header
//! list, the same type [`crate::request::parse_head`] makes of an HTTP/1.1
//! head, so one handler answers both.
//!
//! The fields are given one by one as the HPACK decoder hands them on
//! ([`RequestFields::field`]); the values a static server reads are copied
//! into one reused buffer, the others only checked. Then
//! [`RequestFields::request`] applies RFC 9113 §8.2–8.3 and the size limits:
//! - malformed (a request the stream must be reset for, PROTOCOL_ERROR):
//!   upper-case or empty field names, CR, LF or NUL in a value, a pseudo-header
//!   after a regular field, an unknown or repeated pseudo-header, a response
//!   pseudo-header, connection-specific fields (`connection`, `keep-alive`,
//!   `proxy-connection`, `transfer-encoding`, `upgrade`), `te` other than
//!   `trailers`, a missing `:method`, a missing or empty `:scheme` or `:path`
//!   (but for CONNECT), a `:path` neither origin-form nor `*`, differing
//!   `content-length` values — returned as [`RequestError::BadRequest`];
//! - too large (answered with a status, as HTTP/1.1 would): a `:path` longer
//!   than [`Limits::max_request_line`] (414), more fields than
//!   [`Limits::max_headers`] (431); the decoded list size is bounded by the
//!   HPACK decoder before any field arrives here (431 as well).

use std::ops::Range;

use super::hpack::Known;
use crate::request::{split_target, Limits, Method, Request, RequestError, Version};

/// A request's fields as they are decoded (see the module docs); reused
/// from one request to the next.
#[derive(Debug, Default)]
pub struct RequestFields {
    /// The copied values.
    buf: Vec<u8>,
    method: Option<Range<usize>>,
    path: Option<Range<usize>>,
    /// `:scheme` seen: whether it is not empty.
    scheme: Option<bool>,
    authority: bool,
    if_match: Option<Range<usize>>,
    if_none_match: Option<Range<usize>>,
    if_modified_since: Option<Range<usize>>,
    if_unmodified_since: Option<Range<usize>>,
    range: Option<Range<usize>>,
    if_range: Option<Range<usize>>,
    /// The `accept-encoding` fields in the HTTP/1.1 head layout.
    head: Vec<u8>,
    content_length: Option<u64>,
    fields: usize,
    regular: bool,
    malformed: Option<&'static str>,
}

impl RequestFields {
    /// Forgets the previous request (buffers kept).
    pub fn clear(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        let mut head = std::mem::take(&mut self.head);
        buf.clear();
        head.clear();
        *self = RequestFields {
            buf,
            head,
            ..RequestFields::default()
        };
    }

    /// One decoded field, in order.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.field_known(name, value, Known::default());
    }

    /// One decoded field, in order, its strings the decoder vouches for
    /// not checked again ([`Known`]).
    pub fn field_known(&mut self, name: &[u8], value: &[u8], known: Known) {
        if self.malformed.is_some() {
            return;
        }
        if let Err(e) = self.check(name, value, known) {
            self.malformed = Some(e);
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8], known: Known) -> Result<(), &'static str> {
        self.fields += 1;
        if !known.name && !valid_name(name) {
            return Err("field name empty or not lower-case");
        }
        if !known.value && !valid_value(value) {
            return Err("CR, LF or NUL in a field value");
        }
        if name[0] == b':' {
            if self.regular {
                return Err("pseudo-header after a regular field");
            }
            // Pseudo-header fields are not counted against the field limit
            // (HTTP/1.1 counts none of the request line either).
            self.fields -= 1;
            return self.pseudo(name, value);
        }
        self.regular = true;
        let slot = match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => return Err("connection-specific field"),
            b"te" if value != b"trailers" => return Err("te other than trailers"),
            b"content-length" => {
                let n = parse_u64(value).ok_or("invalid content-length")?;
                if self.content_length.is_some_and(|m| m != n) {
                    return Err("differing content-length values");
                }
                self.content_length = Some(n);
                return Ok(());
            }
            b"accept-encoding" => {
                if self.head.is_empty() {
                    // The first line (the request line's place), empty:
                    // a head's reader skips it.
                    self.head.extend_from_slice(b"\r\n");
                }
                self.head.extend_from_slice(b"accept-encoding:");
                self.head.extend_from_slice(value);
                self.head.extend_from_slice(b"\r\n");
                return Ok(());
            }
            b"if-match" => &mut self.if_match,
            b"if-none-match" => &mut self.if_none_match,
            b"if-modified-since" => &mut self.if_modified_since,
            b"if-unmodified-since" => &mut self.if_unmodified_since,
            b"range" => &mut self.range,
            b"if-range" => &mut self.if_range,
            _ => return Ok(()),
        };
        let at = self.buf.len();
        self.buf.extend_from_slice(trim(value));
        // A repeated conditional field: the last one counts, as in the
        // HTTP/1.1 parser.
        *slot = Some(at..self.buf.len());
        Ok(())
    }

    fn pseudo(&mut self, name: &[u8], value: &[u8]) -> Result<(), &'static str> {
        // One comparison of the name: the two copied values are :method and
        // :path; :scheme and :authority are only noted.
        let slot = match name {
            b":method" => &mut self.method,
            b":path" => &mut self.path,
            b":scheme" if self.scheme.is_none() => {
                self.scheme = Some(!value.is_empty());
                return Ok(());
            }
            b":authority" if !self.authority => {
                self.authority = true;
                return Ok(());
            }
            b":scheme" | b":authority" => return Err("repeated pseudo-header"),
            _ => return Err("unknown pseudo-header"),
        };
        if slot.is_some() {
            return Err("repeated pseudo-header");
        }
        let at = self.buf.len();
        self.buf.extend_from_slice(value);
        *slot = Some(at..self.buf.len());
        Ok(())
    }

    /// The `accept-encoding` fields in the layout of an HTTP/1.1 head (a
    /// first line, here empty, then `name:value` lines), for a handler that
    /// reads them again from the head it was given.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Whether the decoded `:method` is `HEAD` (known even when the request
    /// is then refused: an error answered to HEAD carries no content).
    pub fn is_head(&self) -> bool {
        self.method.clone().is_some_and(|r| &self.buf[r] == b"HEAD")
    }

    /// The declared `content-length`, if any.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The request (see the module docs for what is refused and how).
    pub fn request(&self, limits: &Limits) -> Result<Request<'_>, RequestError> {
        if let Some(e) = self.malformed {
            return Err(RequestError::BadRequest(e));
        }
        let text = |r: &Option<Range<usize>>| r.clone().map(|r| &self.buf[r]);
        let method_str = text(&self.method).ok_or(RequestError::BadRequest("no :method"))?;
        // The usual methods by one comparison, before the general check.
        let (method, method_str) = match method_str {
            b"GET" => (Method::Get, "GET"),
            b"HEAD" => (Method::Head, "HEAD"),
            m => {
                let m = std::str::from_utf8(m)
                    .ok()
                    .filter(|m| !m.is_empty() && m.bytes().all(is_tchar))
                    .ok_or(RequestError::BadRequest("invalid :method"))?;
                let method = match m {
                    "OPTIONS" => Method::Options,
                    _ => Method::Other,
                };
                (method, m)
            }
        };
        let target = match text(&self.path) {
            Some(p) if self.scheme == Some(true) && !p.is_empty() => p,
            None if method_str == "CONNECT" => b"",
            _ => return Err(RequestError::BadRequest("no :scheme or :path")),
        };
        if self.fields > limits.max_headers {
            return Err(RequestError::HeaderFieldsTooLarge);
        }
        if target.len() > limits.max_request_line {
            return Err(RequestError::UriTooLong);
        }
        let target = std::str::from_utf8(target)
            .ok()
            .filter(|t| t.bytes().all(|b| b > b' ' && b != 0x7f))
            .ok_or(RequestError::BadRequest("invalid :path"))?;
        let (path, query) = if target.is_empty() {
            ("", None)
        } else if target.starts_with('/') || target == "*" {
            split_target(target, method)?
        } else {
            return Err(RequestError::BadRequest(":path neither origin-form nor *"));
        };
        Ok(Request {
            method,
            method_str,
            path,
            query,
            target,
            version: Version::Http2,
            keep_alive: true,
            content_length: self.content_length.unwrap_or(0),
            if_match: text(&self.if_match),
            if_none_match: text(&self.if_none_match),
            if_modified_since: text(&self.if_modified_since),
            if_unmodified_since: text(&self.if_unmodified_since),
            range: text(&self.range),
            if_range: text(&self.if_range),
            head_len: 0,
        })
    }
}

/// A field name as RFC 9113 §8.2.1 lets a request carry it: not empty, no
/// upper case.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && !name.iter().any(u8::is_ascii_uppercase)
}

/// A field value without CR, LF or NUL (RFC 9113 §8.2.1).
fn valid_value(value: &[u8]) -> bool {
    !value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(s, |p| p + 1);
    &v[s..e.max(s)]
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> RequestFields {
        let mut f = RequestFields::default();
        for (n, v) in list {
            f.field(n.as_bytes(), v.as_bytes());
        }
        f
    }

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "h"),
        (":path", "/a/b?x=1"),
    ];

    #[test]
    fn a_head_is_known_even_when_the_request_is_refused() {
        let mut list = vec![(":method", "HEAD"), (":scheme", "http"), (":path", "/")];
        assert!(fields(&list).is_head());
        let many: Vec<String> = (0..=Limits::default().max_headers)
            .map(|i| format!("x-{i}"))
            .collect();
        list.extend(many.iter().map(|n| (n.as_str(), "v")));
        let f = fields(&list);
        assert!(f.is_head());
        assert_eq!(
            f.request(&Limits::default()).err(),
            Some(RequestError::HeaderFieldsTooLarge)
        );
        assert!(!fields(&GET).is_head());
        assert!(!fields(&[(":method", "HEADX")]).is_head());
    }

    #[test]
    fn a_get_becomes_the_typed_request() {
        let mut list = GET.to_vec();
        list.extend([
            ("range", " bytes=0-1 "),
            ("if-none-match", "\"e\""),
            ("accept-encoding", "gzip, br"),
            ("user-agent", "x"),
        ]);
        let f = fields(&list);
        let r = f.request(&Limits::default()).unwrap();
        assert_eq!((r.method, r.method_str), (Method::Get, "GET"));
        assert_eq!(
            (r.path, r.query, r.target),
            ("/a/b", Some("x=1"), "/a/b?x=1")
        );
        assert_eq!(r.version, Version::Http2);
        assert_eq!(r.range, Some(&b"bytes=0-1"[..]));
        assert_eq!(r.if_none_match, Some(&b"\"e\""[..]));
        assert_eq!(f.head(), b"\r\naccept-encoding:gzip, br\r\n");
        // Reused: nothing of the previous request remains.
        let mut f = f;
        f.clear();
        for (n, v) in GET {
            f.field(n.as_bytes(), v.as_bytes());
        }
        let r = f.request(&Limits::default()).unwrap();
        assert_eq!((r.range, f.head().len()), (None, 0));
        // OPTIONS *.
        let f = fields(&[(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")]);
        assert_eq!(f.request(&Limits::default()).unwrap().path, "*");
    }

    #[test]
    fn the_static_table_is_valid() {
        // What `Known` lets the checks skip.
        for (n, v) in super::super::hpack::STATIC {
            assert!(valid_name(n), "{n:?}");
            assert!(valid_value(v), "{v:?}");
        }
    }

    /// The fields of `blocks`, decoded in order on one connection, as the
    /// server hands them on; the verdict of the last block's request.
    fn decoded_verdict(blocks: &[&[u8]]) -> Result<(), RequestError> {
        let mut d = super::super::hpack::Decoder::new();
        let mut f = RequestFields::default();
        for b in blocks {
            f.clear();
            d.decode_known(b, usize::MAX, |n, v, k| f.field_known(n, v, k))
                .unwrap();
        }
        f.request(&Limits::default()).map(|_| ())
    }

    #[test]
    fn strings_not_from_the_static_table_are_still_checked() {
        // :method GET, :scheme http (indexed); :path by its static name
        // with a literal value.
        let good: &[u8] = b"\x82\x86\x04\x02/a";
        assert_eq!(decoded_verdict(&[good]), Ok(()));
        // A literal value with a LF under a static name.
        let lf: &[u8] = b"\x82\x86\x04\x03/\na";
        assert!(matches!(
            decoded_verdict(&[lf]),
            Err(RequestError::BadRequest(_))
        ));
        // An upper-case name entered into the dynamic table by the first
        // block, then named by its index (62) alone in the second.
        let enter: &[u8] = b"\x82\x86\x84\x40\x01X\x01v";
        let again: &[u8] = b"\x82\x86\x84\xbe";
        assert!(matches!(
            decoded_verdict(&[enter]),
            Err(RequestError::BadRequest(_))
        ));
        assert!(matches!(
            decoded_verdict(&[enter, again]),
            Err(RequestError::BadRequest(_))
        ));
    }

    #[test]
    fn malformed_requests_are_bad_requests() {
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![(":method", "GET"), (":scheme", "http")],
            vec![(":method", "GET"), (":path", "/")],
            vec![(":scheme", "http"), (":path", "/")],
            vec![(":method", "GET"), (":scheme", "http"), (":path", "")],
            vec![
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":path", "/"),
            ],
            vec![
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":status", "200"),
            ],
            vec![
                (":method", "GET"),
                (":scheme", "http"),
                ("a", "b"),
                (":path", "/"),
            ],
            [&GET[..], &[("Upper", "x")]].concat(),
            [&GET[..], &[("connection", "close")]].concat(),
            [&GET[..], &[("te", "gzip")]].concat(),
            [&GET[..], &[("x", "a\r\nb")]].concat(),
            [
                &GET[..],
                &[("content-length", "1"), ("content-length", "2")],
            ]
            .concat(),
            vec![
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "relative"),
            ],
            vec![(":method", "GET"), (":scheme", "http"), (":path", "/a b")],
            vec![(":method", "G T"), (":scheme", "http"), (":path", "/")],
        ];
        for list in cases {
            let f = fields(&list);
            assert!(
                matches!(
                    f.request(&Limits::default()),
                    Err(RequestError::BadRequest(_))
                ),
                "{list:?}"
            );
        }
        // CONNECT needs no :scheme nor :path.
        let f = fields(&[(":method", "CONNECT"), (":authority", "h:443")]);
        assert_eq!(f.request(&Limits::default()).unwrap().method, Method::Other);
    }

    #[test]
    fn limits_map_to_their_statuses() {
        let limits = Limits {
            max_request_line: 10,
            max_header_bytes: 100,
            max_headers: 2,
        };
        let f = fields(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/0123456789"),
        ]);
        assert_eq!(f.request(&limits).unwrap_err().status(), 414);
        let list = [&GET[..], &[("a", "1"), ("b", "2"), ("c", "3")]].concat();
        assert_eq!(fields(&list).request(&limits).unwrap_err().status(), 431);
    }
}
