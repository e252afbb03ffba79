//! Test only: the first half of the HPACK decoding `decoder.rs` replaced,
//! kept as its reference. A header block is rewritten with its Huffman-coded
//! string literals replaced by their raw octets (the crate's `huffman`
//! decoder), so that `loona-hpack`'s decoder, which builds a table of hash
//! maps for every coded string, reads raw strings only. Only the framing of
//! each field representation is read here (RFC 7541 §6: prefix integers and
//! string literals); indices and the table are the decoder's business.

use crate::{huffman, prefix_int};

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
        huffman::decode(octets, scratch).map_err(|_| Malformed)?;
        prefix_int::put(out, 7, 0x00, scratch.len());
        out.extend_from_slice(scratch);
    }
    Ok(end)
}

/// The integer with an N-bit prefix at the start of `b` (RFC 7541 §5.1)
/// and the octets it took.
fn integer(b: &[u8], prefix: u8) -> Result<(usize, usize), Malformed> {
    prefix_int::read(b, prefix).ok_or(Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;

    fn decoded(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut d = loona_hpack::Decoder::new();
        d.decode(block).unwrap()
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
