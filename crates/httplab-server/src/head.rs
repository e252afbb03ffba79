//! The handler's answer head read back field by field. The handler writes
//! every answer in the HTTP/1.1 layout (status line, fields, empty line,
//! body); HTTP/2 and HTTP/3 re-encode that head as their own fields, and
//! both leave out the connection-specific fields their RFCs forbid
//! (RFC 9113 §8.2.2, RFC 9114 §4.2). One reader serves both, without
//! allocating.

use std::ops::Range;

/// Fields HTTP/2 and HTTP/3 responses must not carry.
const CONNECTION_FIELDS: [&[u8]; 4] = [
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"upgrade",
];

/// The status of the HTTP/1.1 head at the start of `answer` (500 when its
/// status line has none) and where its fields start; None when `answer`
/// holds no whole status line.
#[inline]
pub(crate) fn status(answer: &[u8]) -> Option<(u16, usize)> {
    let eol = memchr::memchr(b'\n', answer)?;
    let status = answer
        .get(9..12)
        .filter(|_| eol >= 12)
        .and_then(|d| std::str::from_utf8(d).ok())
        .and_then(|d| d.parse().ok())
        .unwrap_or(500);
    Some((status, eol + 1))
}

/// Calls `field` with each field of the head from `at` (where [`status`]
/// said its fields start) to its empty line: its name and the range of its
/// value in `answer` (after one optional space), connection-specific fields
/// left out. Returns the head's length, None when `answer` holds no whole
/// head. A closure rather than an iterator: inlined into each caller, it
/// costs what the loop written out in the caller did (callgrind).
#[inline]
pub(crate) fn each_field(
    answer: &[u8],
    mut at: usize,
    mut field: impl FnMut(&[u8], Range<usize>),
) -> Option<usize> {
    loop {
        let start = at;
        let rest = answer.get(start..)?;
        let eol = memchr::memchr(b'\n', rest)?;
        let line = &rest[..eol];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at += eol + 1;
        if line.is_empty() {
            return Some(at);
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = &line[..colon];
        if CONNECTION_FIELDS
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let from = start + colon + 1 + usize::from(line.get(colon + 1) == Some(&b' '));
        field(name, from..start + line.len());
    }
}

#[cfg(test)]
mod tests {
    use super::{each_field, status};

    #[test]
    fn fields_are_read_back_without_connection_fields() {
        let a = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nETag:\"x\"\r\nnocolon\r\n\r\nbody";
        let (code, at) = status(a).expect("a status line");
        assert_eq!(code, 206);
        let mut got: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let end = each_field(a, at, |n, v| got.push((n.to_vec(), a[v].to_vec())));
        assert_eq!(
            got,
            vec![
                (b"Content-Length".to_vec(), b"10".to_vec()),
                (b"ETag".to_vec(), b"\"x\"".to_vec()),
            ]
        );
        assert_eq!(end, Some(a.len() - 4));
    }

    #[test]
    fn a_cut_head_has_no_end_and_a_bad_status_is_500() {
        let a = b"HTTP/1.1 2x\r\nA: b\r\n";
        let (code, at) = status(a).expect("a status line");
        assert_eq!(code, 500);
        let mut n = 0;
        assert_eq!(each_field(a, at, |_, _| n += 1), None);
        assert_eq!(n, 1);
        assert!(status(b"HTTP/1.1 200 OK").is_none());
    }
}
