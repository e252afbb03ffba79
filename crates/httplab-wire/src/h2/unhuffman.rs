//! An HPACK header block rewritten with its Huffman-coded string literals
//! replaced by their raw octets, before the `loona-hpack` decoder (which
//! keeps the dynamic table) reads it. That decoder builds a Huffman table of
//! hash maps for every coded string and reads it one bit at a time: against
//! nginx, which Huffman-codes its header values, the client spent about 1.8
//! million instructions per response there and was client-bound at a fifth of
//! h2o's rate. `httlib-huffman` decodes five bits at a time (its fastest
//! table; 4 % fewer instructions per HTTP/3 request than four bits) from a table
//! built once. Only the framing of each field representation is read here
//! (RFC 7541 §6: prefix integers and string literals); indices and the
//! table stay the decoder's business.

/// Rewrites `block` into `out` when it holds a Huffman-coded string (true),
/// using `scratch` for one decoded string; leaves `out` alone and returns
/// false when it holds none, so the block can be decoded as it is. Both
/// buffers keep their capacity: nothing is allocated once they are warm.
/// Err: the block's framing or a Huffman string is malformed.
pub(crate) fn unhuffman(
    block: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<bool, Malformed> {
    let Some(mut at) = first_huffman(block)? else {
        return Ok(false);
    };
    // Everything before the first coded string's representation is copied
    // as it is, without being walked again.
    out.clear();
    out.extend_from_slice(&block[..at]);
    while at < block.len() {
        let first = block[at];
        let (prefix, strings) = representation(first);
        let (index, used) = integer(&block[at..], prefix)?;
        out.extend_from_slice(&block[at..at + used]);
        at += used;
        for _ in 0..strings.count(index) {
            at += string(&block[at..], out, scratch)?;
        }
    }
    Ok(true)
}

/// A malformed header block (the connection's COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// What follows a representation's prefix integer.
enum Strings {
    /// Nothing: an indexed field or a table size update.
    None,
    /// A value string (and a name string when the name index is 0).
    Value,
}

impl Strings {
    /// How many string literals follow a prefix integer of `index`: a
    /// literal whose name is not indexed (0) has the name's string first.
    fn count(&self, index: usize) -> usize {
        match self {
            Strings::None => 0,
            Strings::Value if index == 0 => 2,
            Strings::Value => 1,
        }
    }
}

/// The prefix width of the representation starting with `first` and what
/// follows it (RFC 7541 §6.1–6.3).
fn representation(first: u8) -> (u8, Strings) {
    if first & 0x80 != 0 {
        (7, Strings::None) // indexed header field
    } else if first & 0xc0 == 0x40 {
        (6, Strings::Value) // literal with incremental indexing
    } else if first & 0xe0 == 0x20 {
        (5, Strings::None) // dynamic table size update
    } else {
        (4, Strings::Value) // literal without indexing, or never indexed
    }
}

/// Where the first field representation holding a Huffman-coded string
/// literal starts, if any does.
fn first_huffman(block: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut at = 0;
    while at < block.len() {
        let start = at;
        let (prefix, strings) = representation(block[at]);
        let (index, used) = integer(&block[at..], prefix)?;
        at += used;
        for _ in 0..strings.count(index) {
            let s = block.get(at).ok_or(Malformed)?;
            if s & 0x80 != 0 {
                return Ok(Some(start));
            }
            let (len, used) = integer(&block[at..], 7)?;
            at = at
                .checked_add(used)
                .and_then(|a| a.checked_add(len))
                .filter(|a| *a <= block.len())
                .ok_or(Malformed)?;
        }
    }
    Ok(None)
}

/// Copies the string literal at the start of `b` into `out`, raw; returns
/// the octets it took in `b`.
fn string(b: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> Result<usize, Malformed> {
    let first = *b.first().ok_or(Malformed)?;
    let (len, used) = integer(b, 7)?;
    let end = used
        .checked_add(len)
        .filter(|e| *e <= b.len())
        .ok_or(Malformed)?;
    let octets = &b[used..end];
    if first & 0x80 == 0 {
        out.extend_from_slice(&b[..end]);
    } else {
        scratch.clear();
        httlib_huffman::decode(octets, scratch, httlib_huffman::DecoderSpeed::FiveBits)
            .map_err(|_| Malformed)?;
        put_integer(out, 0x00, 7, scratch.len());
        out.extend_from_slice(scratch);
    }
    Ok(end)
}

/// The integer with an N-bit prefix at the start of `b` (RFC 7541 §5.1)
/// and the octets it took; at most 2^28 (a header block is far smaller).
fn integer(b: &[u8], prefix: u8) -> Result<(usize, usize), Malformed> {
    let mask = (1usize << prefix) - 1;
    let mut value = usize::from(*b.first().ok_or(Malformed)?) & mask;
    if value < mask {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (i, &byte) in b.iter().enumerate().skip(1) {
        if shift > 21 {
            return Err(Malformed);
        }
        value += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(Malformed)
}

/// Writes `value` with an N-bit prefix, the first octet's other bits `flags`
/// (its own, not `hpack::integer`: `hpack` uses this module, and modules
/// do not import each other).
fn put_integer(out: &mut Vec<u8>, flags: u8, prefix: u8, value: usize) {
    let mask = (1usize << prefix) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decoded(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut d = loona_hpack::Decoder::new();
        d.decode(block).unwrap()
    }

    #[test]
    fn integers_round_trip_at_every_prefix() {
        for prefix in 1..=8u8 {
            for v in [
                0usize,
                1,
                9,
                30,
                31,
                126,
                127,
                128,
                254,
                255,
                1337,
                70_000,
                1 << 20,
            ] {
                let mut out = Vec::new();
                put_integer(&mut out, 0, prefix, v);
                assert_eq!(integer(&out, prefix), Ok((v, out.len())), "{prefix} {v}");
            }
        }
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        assert_eq!(integer(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
        assert_eq!(integer(&[0x1f, 0x9a], 5), Err(Malformed));
        assert_eq!(
            integer(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff], 5),
            Err(Malformed)
        );
    }

    #[test]
    fn rfc_7541_huffman_responses_decode_the_same_raw() {
        // C.6.1: a response with Huffman-coded literals, incremental indexing.
        let block = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        assert_eq!(unhuffman(&block, &mut out, &mut scratch), Ok(true));
        assert_eq!(decoded(&out), decoded(&block));
        assert!(out.len() > block.len(), "raw strings are longer");
        // C.4.1: a request with Huffman strings and an indexed name.
        let block = hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff");
        assert_eq!(unhuffman(&block, &mut out, &mut scratch), Ok(true));
        assert_eq!(decoded(&out), decoded(&block));
    }

    #[test]
    fn a_block_without_huffman_is_left_as_it_is() {
        // C.3.1: raw literals only.
        let block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
        let mut out = vec![1, 2, 3];
        assert_eq!(unhuffman(&block, &mut out, &mut Vec::new()), Ok(false));
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn malformed_blocks_are_refused_without_panicking() {
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for bad in [
            &[0x40][..],                   // literal name expected
            &[0x40, 0x85, 0xff][..],       // Huffman string shorter than said
            &[0x00, 0x03, b'a'][..],       // raw name shorter than said
            &[0x0f][..],                   // integer continuation missing
            &[0x40, 0x81, 0xff, 0x00][..], // EOS-only Huffman padding of 8 bits
        ] {
            assert_eq!(
                unhuffman(bad, &mut out, &mut scratch),
                Err(Malformed),
                "{bad:?}"
            );
        }
        // Every prefix of a valid block: refused or rewritten, never a panic.
        let block = hex("4882 6402 5885 aec3 771a 4b61");
        for n in 0..block.len() {
            let _ = unhuffman(&block[..n], &mut out, &mut scratch);
        }
    }
}
