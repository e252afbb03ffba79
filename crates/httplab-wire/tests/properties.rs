//! Property tests of the framing code:
//! - random response streams (Content-Length, chunked with extensions and
//!   trailers, interim 1xx, 204/304, HEAD, close-delimited last) cut at
//!   random points parse to the same responses as the stream fed whole,
//!   with exact byte accounting;
//! - random valid request heads parse with `head_len` equal to their length
//!   whatever follows them, and no strict prefix of a head is complete.

use httplab_wire::request::{parse_head, Limits, Method, Parsed};
use httplab_wire::response::ResponseParser;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};

fn check<S: Strategy>(cases: u32, strategy: S, f: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let cfg = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if let Err(e) = TestRunner::new(cfg).run(&strategy, f) {
        panic!("{e}");
    }
}

#[derive(Debug, Clone)]
enum Framing {
    Length,
    Chunked(Vec<usize>, bool, bool),
    NoBody(u16),
    Head,
}

#[derive(Debug, Clone)]
struct Resp {
    framing: Framing,
    body: Vec<u8>,
    interim: bool,
}

fn response() -> impl Strategy<Value = Resp> {
    let framing = prop_oneof![
        Just(Framing::Length),
        (
            prop::collection::vec(1usize..40, 0..5),
            prop::bool::ANY,
            prop::bool::ANY
        )
            .prop_map(|(c, e, t)| Framing::Chunked(c, e, t)),
        prop_oneof![Just(204u16), Just(304u16)].prop_map(Framing::NoBody),
        Just(Framing::Head),
    ];
    (
        framing,
        prop::collection::vec(any::<u8>(), 0..120),
        prop::bool::ANY,
    )
        .prop_map(|(framing, mut body, interim)| {
            match &framing {
                Framing::Chunked(sizes, _, _) => {
                    let n: usize = sizes.iter().sum();
                    body.resize(n, b'x');
                }
                Framing::NoBody(_) | Framing::Head => body.clear(),
                Framing::Length => {}
            }
            Resp {
                framing,
                body,
                interim,
            }
        })
}

/// Wire bytes of `r` (`close` makes it close-delimited: the stream's last).
fn encode(r: &Resp, close: bool) -> Vec<u8> {
    let mut w = Vec::new();
    if r.interim {
        w.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    match &r.framing {
        Framing::NoBody(s) => {
            w.extend_from_slice(format!("HTTP/1.1 {s} X\r\nContent-Length: 77\r\n\r\n").as_bytes())
        }
        Framing::Head => {
            w.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
        }
        Framing::Length if close => {
            w.extend_from_slice(b"HTTP/1.0 200 OK\r\nServer: t\r\n\r\n");
            w.extend_from_slice(&r.body);
        }
        Framing::Length => {
            w.extend_from_slice(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    r.body.len()
                )
                .as_bytes(),
            );
            w.extend_from_slice(&r.body);
        }
        Framing::Chunked(sizes, ext, trailer) => {
            w.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            let mut at = 0;
            for &n in sizes {
                let e = if *ext { ";name=\"v\"" } else { "" };
                w.extend_from_slice(format!("{n:X}{e}\r\n").as_bytes());
                w.extend_from_slice(&r.body[at..at + n]);
                w.extend_from_slice(b"\r\n");
                at += n;
            }
            w.extend_from_slice(b"0\r\n");
            if *trailer {
                w.extend_from_slice(b"X-Sum: 1\r\n");
            }
            w.extend_from_slice(b"\r\n");
        }
    }
    w
}

/// Parses `wire` fed in the pieces between `points`; returns (status, body,
/// wire bytes) per response.
fn parse(wire: &[u8], heads: &[bool], points: &[usize]) -> Vec<(u16, Vec<u8>, u64)> {
    let mut p = ResponseParser::new();
    let mut out = Vec::new();
    let mut body = Vec::new();
    p.start(heads[0]);
    for win in points.windows(2) {
        let piece = &wire[win[0]..win[1]];
        let mut pos = 0;
        while pos < piece.len() {
            let step = p.feed(&piece[pos..]).expect("valid stream parses");
            if let Some((o, l)) = step.body {
                body.extend_from_slice(&piece[pos + o..pos + o + l]);
            }
            pos += step.consumed;
            if step.complete {
                let i = p.info();
                out.push((i.status, std::mem::take(&mut body), i.wire_bytes()));
                p.start(heads.get(out.len()).copied().unwrap_or(false));
            }
        }
    }
    if p.eof() == Ok(true) {
        let i = p.info();
        out.push((i.status, body, i.wire_bytes()));
    }
    out
}

#[test]
fn response_stream_split_anywhere() {
    let strategy = (
        prop::collection::vec(response(), 1..6),
        prop::bool::ANY,
        prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    );
    check(512, strategy, |(resps, last_close, cuts)| {
        let mut wire = Vec::new();
        let mut sizes = Vec::new();
        for (i, r) in resps.iter().enumerate() {
            let close = last_close && i + 1 == resps.len() && matches!(r.framing, Framing::Length);
            let w = encode(r, close);
            sizes.push(w.len() as u64);
            wire.extend_from_slice(&w);
        }
        let heads: Vec<bool> = resps
            .iter()
            .map(|r| matches!(r.framing, Framing::Head))
            .collect();
        let whole = parse(&wire, &heads, &[0, wire.len()]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        points.extend([0, wire.len()]);
        points.sort_unstable();
        points.dedup();
        let split = parse(&wire, &heads, &points);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(whole.len(), resps.len());
        for ((got, want), size) in whole.iter().zip(&resps).zip(&sizes) {
            prop_assert_eq!(&got.1, &want.body);
            prop_assert_eq!(got.2, *size, "byte accounting");
        }
        Ok(())
    });
}

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9-]{0,12}"
}

#[test]
fn request_heads_parse_exactly() {
    let strategy = (
        prop_oneof![Just("GET"), Just("HEAD"), Just("OPTIONS"), Just("DELETE")],
        "/[a-z0-9%._~/-]{0,40}(\\?[a-z=&]{0,10})?",
        prop::collection::vec((token(), "[ -~]{0,30}"), 0..10),
        prop::bool::ANY,
        prop::bool::ANY,
        prop::collection::vec(any::<u8>(), 0..40),
    );
    check(
        512,
        strategy,
        |(method, target, fields, bare_lf, close, trailing)| {
            let nl = if bare_lf { "\n" } else { "\r\n" };
            let mut head = format!("{method} {target} HTTP/1.1{nl}Host: h{nl}");
            for (name, value) in &fields {
                // Fields that change framing or meaning are tested elsewhere.
                let lower = name.to_ascii_lowercase();
                if [
                    "host",
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "range",
                ]
                .contains(&lower.as_str())
                {
                    continue;
                }
                head.push_str(&format!("{name}: {}{nl}", value.trim()));
            }
            if close {
                head.push_str(&format!("Connection: close{nl}"));
            }
            head.push_str(nl);
            let mut input = head.clone().into_bytes();
            input.extend_from_slice(&trailing);
            let limits = Limits::default();
            match parse_head(&input, &limits, 0) {
                Parsed::Complete(r) => {
                    prop_assert_eq!(r.head_len, head.len());
                    prop_assert_eq!(r.keep_alive, !close);
                    prop_assert_eq!(r.method == Method::Head, method == "HEAD");
                    prop_assert!(target.starts_with(r.path));
                }
                other => prop_assert!(false, "{:?} for {:?}", other, head),
            }
            for cut in 0..head.len() {
                prop_assert!(
                    matches!(
                        parse_head(&head.as_bytes()[..cut], &limits, 0),
                        Parsed::Partial
                    ),
                    "prefix of {} bytes of {:?}",
                    cut,
                    head
                );
            }
            Ok(())
        },
    );
}
