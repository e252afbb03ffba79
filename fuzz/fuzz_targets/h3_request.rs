//! The HTTP/3 engine's own part of a request (`http3.rs` through
//! `testkit::Harness::answer_h3`): a request's QPACK field section (a
//! HEADERS frame's payload) decoded by `httplab-wire`'s QPACK decoder with
//! the engine's size bound, checked by the HTTP/2 field rules into the
//! shared `Request`, answered by the handler over the fixture site, and the
//! answer's head encoded as the engine's HEADERS frame and decoded back.
//!
//! Input: a flags byte (bit 0 directory listings; bit 1 small files from
//! descriptors; bit 2 the rest is a raw field section), then either the raw
//! field section or field lines `NAME VALUE` separated by newlines, in any
//! order, with any duplicates, encoded as the server's encoder writes
//! fields (static references, literals; the prefix first).
//!
//! Checked: the engine answers, resets the stream (only for a malformed
//! request) or refuses the section as QPACK_DECOMPRESSION_FAILED — never
//! its internal-error reset; only the statuses the handler gives, none
//! 5xx; `:status` first; no connection-specific field (Connection,
//! Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade) in the
//! response; at most one Content-Length, and the body as long as it says
//! (empty for HEAD, 204 and 304); no byte from outside the root (unless
//! the request itself carries it: a redirect echoes the query).
#![no_main]
use std::time::Instant;

use httplab_fuzz::{contains, site, SECRET};
use httplab_server::testkit::{H3Reply, Harness};
use httplab_server::ServerConfig;
use httplab_wire::h3::qpack;
use libfuzzer_sys::fuzz_target;

const KNOWN: &[u16] = &[
    200, 206, 301, 304, 400, 403, 404, 405, 406, 411, 412, 413, 414, 416, 431,
];

/// Fields the response must not carry (RFC 9114 §4.2).
const CONNECTION_SPECIFIC: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// Field lines `NAME VALUE` as a QPACK field section.
fn section(lines: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0];
    for line in lines.split(|&b| b == b'\n') {
        let cut = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
        let (name, value) = (&line[..cut], line.get(cut + 1..).unwrap_or(b""));
        if !name.is_empty() {
            qpack::field(&mut out, name, value);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let section = if flags & 4 != 0 {
        rest.to_vec()
    } else {
        section(rest)
    };
    // What the request says, decoded: whether it is a HEAD (its one
    // `:method`, among the request pseudo-fields before any other field:
    // past a misplaced or repeated pseudo-field the request is malformed
    // and its method unknown), and all its octets (a redirect or an error
    // page may echo them).
    let (mut head, mut said) = (false, Vec::new());
    let (mut placed, mut seen) = (true, Vec::<Vec<u8>>::new());
    let _ = qpack::Decoder::default().decode(&section, u64::MAX, |n, v| {
        let pseudo = n.first() == Some(&b':');
        placed &= pseudo && n != b":status" && !seen.iter().any(|s| s == n);
        if placed {
            seen.push(n.to_vec());
            head |= n == b":method" && v == b"HEAD";
        }
        said.extend_from_slice(n);
        said.push(b' ');
        said.extend_from_slice(v);
        said.push(b'\n');
    });
    let mut cfg = ServerConfig::for_root(&site().root);
    cfg.list_dirs = flags & 1 != 0;
    if flags & 2 != 0 {
        cfg.small_file_max = 0;
    }
    let mut h = Harness::new(cfg).expect("harness");
    let (fields, body) = match h.answer_h3(&section, Instant::now()) {
        H3Reply::Malformed | H3Reply::Undecodable => return,
        H3Reply::NoHead => panic!("the handler's answer has no head: {said:?}"),
        H3Reply::Response(fields, body) => (fields, body),
    };
    let (name, status) = fields.first().expect("a :status");
    assert_eq!(name, b":status");
    let status: u16 = std::str::from_utf8(status)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a numeric :status");
    assert!(
        KNOWN.contains(&status),
        "unexpected status {status} for {:?}",
        String::from_utf8_lossy(&said)
    );
    let echoed = contains(&said, SECRET);
    assert!(
        echoed || !contains(&body, SECRET),
        "a byte from outside the root was sent"
    );
    for (n, v) in &fields[1..] {
        assert!(
            !CONNECTION_SPECIFIC.contains(&n.as_slice()),
            "connection-specific field {n:?} in an HTTP/3 response"
        );
        assert!(!n.starts_with(b":"), "a pseudo-field after :status");
        assert!(echoed || !contains(v, SECRET), "a secret in field {n:?}");
    }
    let lengths: Vec<&[u8]> = fields
        .iter()
        .filter(|(n, _)| n == b"content-length")
        .map(|(_, v)| v.as_slice())
        .collect();
    assert!(lengths.len() <= 1, "{} Content-Length fields", lengths.len());
    if head || status == 204 || status == 304 {
        assert!(
            body.is_empty(),
            "a body of {} bytes to HEAD, 204 or 304",
            body.len()
        );
    } else if let Some(l) = lengths.first() {
        let l: usize = std::str::from_utf8(l)
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
