//! The server's request-head parser (`httplab_wire::request::parse_head`).
#![no_main]
use httplab_wire::request::{leading_empty_lines, parse_head, Limits, Method, Parsed};
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8], limits: &Limits, max_body: u64) {
    let skip = leading_empty_lines(data);
    assert!(skip <= data.len());
    let data = &data[skip..];
    match parse_head(data, limits, max_body) {
        Parsed::Complete(r) => {
            // The head lies inside the input and ends with an empty line.
            assert!(r.head_len > 0 && r.head_len <= data.len());
            let head = &data[..r.head_len];
            assert!(head.ends_with(b"\n\n") || head.ends_with(b"\n\r\n"));
            // The request line respects its limit; the whole head its own.
            let line = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
            assert!(line <= limits.max_request_line + 1);
            assert!(r.head_len <= limits.max_head() + 2);
            assert!(r.content_length <= max_body);
            // A target is origin-form after reduction, or `*` for OPTIONS.
            assert!(r.path.starts_with('/') || (r.path == "*" && r.method == Method::Options));
            assert!(!r.path.contains('?') && !r.path.contains('#'));
            // The same head alone parses the same; any shorter prefix is not complete.
            match parse_head(head, limits, max_body) {
                Parsed::Complete(again) => {
                    assert_eq!(again.head_len, r.head_len);
                    assert_eq!(again.path, r.path);
                    assert_eq!(again.keep_alive, r.keep_alive);
                    assert_eq!(again.content_length, r.content_length);
                }
                other => panic!("head alone parses differently: {other:?}"),
            }
            for cut in [r.head_len - 1, r.head_len / 2] {
                assert!(
                    !matches!(
                        parse_head(&head[..cut], limits, max_body),
                        Parsed::Complete(_)
                    ),
                    "a strict prefix of a head parsed as complete"
                );
            }
        }
        Parsed::Error(e) => {
            assert!(matches!(
                e.status(),
                400 | 411 | 413 | 414 | 431 | 501 | 505
            ));
        }
        Parsed::Partial => {
            // Partial input never exceeds what a complete head may hold
            // (the session bounds its buffer by the same limits).
            assert!(data.len() <= limits.max_head() + limits.max_headers + 2);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data, &Limits::default(), 1 << 20);
    // Tight limits reach the limit paths with short inputs.
    let tight = Limits {
        max_request_line: 32,
        max_header_bytes: 64,
        max_headers: 4,
    };
    check(data, &tight, 16);
});
