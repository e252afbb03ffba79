//! The HTTP/3 engine's own part of a request (`http3.rs` through
//! `testkit::Harness::answer_h3`): a decoded field section, as `h3` hands
//! it over, checked by `httplab-wire`'s HTTP/2 field rules into the shared
//! `Request`, answered by the handler over the fixture site, and the
//! answer's head turned into HTTP/3 response fields.
//!
//! Input: a flags byte (directory listings; small files from descriptors),
//! then field lines `NAME VALUE` separated by newlines, in any order, with
//! any duplicates. They become an `http::Request` as `h3` 0.0.8 builds one
//! (its `Header::try_from` and `into_request_parts`, not public, followed
//! here): names lowercase, pseudo-fields parsed by `http`'s types, the last
//! of a repeated pseudo-field kept, `:authority` or `host` required and
//! equal when both are given. A field section `h3` would refuse never
//! reaches the server, so it ends the input.
//!
//! Checked: the engine answers or resets the stream (a reset only for a
//! malformed request; never its internal-error reset); only the statuses
//! the handler gives, none 5xx; no connection-specific field (Connection,
//! Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade) in the
//! response; at most one Content-Length, and the body as long as it says
//! (empty for HEAD, 204 and 304); no byte from outside the root (unless
//! the request itself carries it: a redirect echoes the query).
#![no_main]
use std::time::Instant;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme, Uri};
use http::{Method, Request};
use httplab_fuzz::{contains, site, SECRET};
use httplab_server::testkit::{H3Reply, Harness};
use httplab_server::ServerConfig;
use libfuzzer_sys::fuzz_target;

const KNOWN: &[u16] = &[
    200, 206, 301, 304, 400, 403, 404, 405, 406, 411, 412, 413, 414, 416, 431,
];

/// Fields the response must not carry (RFC 9114 §4.2).
const CONNECTION_SPECIFIC: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The request `h3` would hand over for these field lines; None when it
/// would refuse them.
fn request(lines: &[u8]) -> Option<Request<()>> {
    let (mut method, mut scheme, mut authority, mut path) = (None, None, None, None);
    let mut fields = HeaderMap::new();
    for line in lines.split(|&b| b == b'\n') {
        let cut = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
        let (name, value) = (&line[..cut], line.get(cut + 1..).unwrap_or(b""));
        match name {
            b"" => continue,
            b":method" => method = Some(Method::from_bytes(value).ok()?),
            b":scheme" => scheme = Some(Scheme::try_from(value).ok()?),
            b":authority" => authority = Some(Authority::try_from(value).ok()?),
            b":path" => path = Some(PathAndQuery::try_from(value).ok()?),
            n if n[0] == b':' => return None,
            n => {
                let n = HeaderName::from_lowercase(n).ok()?;
                fields.append(n, HeaderValue::from_bytes(value).ok()?);
            }
        }
    }
    let mut uri = Uri::builder();
    if let Some(p) = path {
        uri = uri.path_and_query(p);
    }
    if let Some(s) = scheme {
        uri = uri.scheme(s);
    }
    uri = match (authority, fields.get("host")) {
        (None, None) => return None,
        (Some(a), None) => uri.authority(a),
        (None, Some(h)) => uri.authority(h.as_bytes()),
        (Some(a), Some(h)) if a.as_str() != h => return None,
        (Some(_), Some(h)) => uri.authority(h.as_bytes()),
    };
    let mut req = Request::new(());
    *req.method_mut() = method?;
    *req.uri_mut() = uri.build().ok()?;
    *req.headers_mut() = fields;
    Some(req)
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, lines)) = data.split_first() else {
        return;
    };
    let Some(req) = request(lines) else {
        return;
    };
    let mut cfg = ServerConfig::for_root(&site().root);
    cfg.list_dirs = flags & 1 != 0;
    if flags & 2 != 0 {
        cfg.small_file_max = 0;
    }
    let mut h = Harness::new(cfg).expect("harness");
    let (resp, body) = match h.answer_h3(&req, Instant::now()) {
        H3Reply::Malformed => return,
        H3Reply::NoHead => panic!("the handler's answer has no head: {req:?}"),
        H3Reply::Response(resp, body) => (resp, body),
    };
    let status = resp.status().as_u16();
    assert!(
        KNOWN.contains(&status),
        "unexpected status {status} for {req:?}"
    );
    // A redirect or an error page may echo what the request carries.
    let echoed = contains(lines, SECRET);
    assert!(
        echoed || !contains(&body, SECRET),
        "a byte from outside the root was sent"
    );
    for (n, v) in resp.headers() {
        assert!(
            !CONNECTION_SPECIFIC.contains(&n.as_str()),
            "connection-specific field {n} in an HTTP/3 response"
        );
        assert!(
            echoed || !contains(v.as_bytes(), SECRET),
            "a secret in field {n}"
        );
    }
    let lengths: Vec<_> = resp.headers().get_all("content-length").iter().collect();
    assert!(
        lengths.len() <= 1,
        "{} Content-Length fields",
        lengths.len()
    );
    if req.method() == Method::HEAD || status == 204 || status == 304 {
        assert!(
            body.is_empty(),
            "{req:?} {resp:?} {:?}: a body of {} bytes to HEAD, 204 or 304",
            String::from_utf8_lossy(&body),
            body.len()
        );
    } else if let Some(l) = lengths.first() {
        let l: usize = l
            .to_str()
            .ok()
            .and_then(|s| s.parse().ok())
            .expect("a numeric Content-Length");
        assert_eq!(
            body.len(),
            l,
            "the body is not as long as its Content-Length"
        );
    }
});
