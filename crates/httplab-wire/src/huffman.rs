//! The HPACK Huffman code's decoder (RFC 7541 §5.2 and Appendix B), used
//! for HTTP/2's and QPACK's string literals (RFC 9204 §4.1.2 uses the same
//! code). Written here because the crates that decode it are slow for a
//! request's few short strings: `httlib-huffman` (the fastest found) walks a
//! bit-indexed table, computes a float per string and allocates a vector to
//! check the padding, about 200 instructions per octet; `loona-hpack` builds
//! hash maps per string. The code is canonical (codes of one length are
//! consecutive, in symbol order, and shorter codes sort first), so its 257
//! code lengths determine it, and a symbol's length is the first length whose
//! left-aligned upper bound lies above the next 32 bits. The symbols of at
//! most eight bits, which are most of what clients send (lower-case letters,
//! digits, `/`, `.`, `-`), are read from a 256-entry table; longer ones by
//! comparing those bounds. Nothing is allocated beyond `out`'s growth.

/// A string that is not a valid Huffman encoding: it holds the EOS symbol,
/// or its padding is longer than seven bits or not the EOS code's first
/// bits (RFC 7541 §5.2).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Invalid;

/// Appends the octets that `src` encodes to `out`.
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), Invalid> {
    // At most 8/5 octets per octet: the shortest code has five bits.
    out.reserve(src.len() + src.len() / 2 + src.len() / 8 + 1);
    // Unread bits, left-aligned in `bits`; `have` of them are valid.
    let mut bits = 0u64;
    let mut have = 0u32;
    let mut rest = src;
    loop {
        if have < MAX_LEN as u32 {
            // Refill four octets at once while they last, then one by one.
            if let Some((four, tail)) = rest.split_first_chunk::<4>() {
                bits |= u64::from(u32::from_be_bytes(*four)) << (32 - have);
                have += 32;
                rest = tail;
            } else {
                while let Some((&octet, tail)) = rest.split_first().filter(|_| have <= 56) {
                    bits |= u64::from(octet) << (56 - have);
                    have += 8;
                    rest = tail;
                }
            }
            if have < MAX_LEN as u32 {
                break; // the input is spent: the last codes and the padding
            }
        }
        // The window holds a whole code.
        let (symbol, len) = symbol((bits >> 32) as u32);
        out.push(u8::try_from(symbol).map_err(|_| Invalid)?); // EOS
        bits <<= len;
        have -= len;
    }
    while have > 0 {
        let (symbol, len) = symbol((bits >> 32) as u32);
        if len > have {
            break;
        }
        out.push(u8::try_from(symbol).map_err(|_| Invalid)?);
        bits <<= len;
        have -= len;
    }
    // What is left is less than a code: padding, which must be shorter
    // than an octet and all ones.
    if have == 0 || (have < 8 && bits >> (64 - have) == (1u64 << have) - 1) {
        Ok(())
    } else {
        Err(Invalid)
    }
}

/// The symbol whose code starts the left-aligned `window` and the code's
/// length in bits. Every window starts with a code: the code is complete.
#[inline]
fn symbol(window: u32) -> (u16, u32) {
    let fast = SHORT[(window >> (32 - SHORT_BITS)) as usize];
    if fast != 0 {
        return (fast & 0xff, u32::from(fast >> 8));
    }
    let (symbol, len) = CODE.code_at(window, SHORT_BITS + 1);
    (symbol, len as u32)
}

/// Each symbol's code length in bits (RFC 7541 Appendix B), symbols 0–255
/// and EOS (256).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0..
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16..
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 32..
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 48..
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 64..
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 80..
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 96..
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 112..
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128..
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144..
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160..
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176..
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192..
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208..
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224..
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240..
    30, // 256..
];

/// The longest code's length.
const MAX_LEN: usize = 30;

/// The canonical code, derived from [`LENGTHS`].
struct Canonical {
    /// Per length: the left-aligned (32-bit) exclusive upper bound of its
    /// codes, as u64 because the longest length's is 2^32.
    limit: [u64; MAX_LEN + 1],
    /// Per length: its first code.
    first: [u32; MAX_LEN + 1],
    /// Per length: where its symbols start in `sorted`.
    offset: [u16; MAX_LEN + 1],
    /// The symbols ordered by code length, then by value.
    sorted: [u16; 257],
}

const CODE: Canonical = canonical();

impl Canonical {
    /// The symbol whose code starts the left-aligned `window` and the
    /// code's length, trying lengths from `from` on (the window is at or
    /// above every shorter length's bound). The longest length's bound is
    /// 2^32, above every window: a window at or above every shorter bound
    /// holds a code of [`MAX_LEN`] bits.
    #[inline]
    const fn code_at(&self, window: u32, from: usize) -> (u16, usize) {
        let w = window as u64;
        let mut len = from;
        while len < MAX_LEN && w >= self.limit[len] {
            len += 1;
        }
        let rank = (window >> (32 - len)) - self.first[len];
        (self.sorted[self.offset[len] as usize + rank as usize], len)
    }
}

const fn canonical() -> Canonical {
    let mut count = [0u16; MAX_LEN + 1];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut offset = [0u16; MAX_LEN + 1];
    let mut first = [0u32; MAX_LEN + 1];
    let mut limit = [0u64; MAX_LEN + 1];
    let (mut at, mut code) = (0u16, 0u32);
    let mut len = 1;
    while len <= MAX_LEN {
        offset[len] = at;
        first[len] = code;
        let end = code + count[len] as u32;
        limit[len] = (end as u64) << (32 - len);
        at += count[len];
        code = end << 1;
        len += 1;
    }
    let mut sorted = [0u16; 257];
    let mut fill = offset;
    s = 0;
    while s < 257 {
        let len = LENGTHS[s] as usize;
        sorted[fill[len] as usize] = s as u16;
        fill[len] += 1;
        s += 1;
    }
    Canonical {
        limit,
        first,
        offset,
        sorted,
    }
}

/// The window bits [`SHORT`] is indexed by.
const SHORT_BITS: usize = 8;

/// For each first octet of a window: `length << 8 | symbol` when a code of
/// at most [`SHORT_BITS`] bits starts it, else 0.
const SHORT: [u16; 1 << SHORT_BITS] = short();

const fn short() -> [u16; 1 << SHORT_BITS] {
    let mut table = [0u16; 1 << SHORT_BITS];
    let mut i = 0;
    while i < table.len() {
        let (symbol, len) = CODE.code_at((i as u32) << (32 - SHORT_BITS), 1);
        if len <= SHORT_BITS {
            table[i] = (len as u16) << 8 | symbol;
        }
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;
    use proptest::prelude::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, Invalid> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    fn encoded(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        httlib_huffman::encode(raw, &mut out).unwrap();
        out
    }

    #[test]
    fn rfc_7541_examples_decode() {
        let cases = [
            ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
            ("a8eb 1064 9cbf", "no-cache"),
            ("25a8 49e9 5ba9 7d7f", "custom-key"),
            ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
            ("6402", "302"),
            ("aec3 771a 4b", "private"),
            (
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
                "https://www.example.com",
            ),
        ];
        for (code, raw) in cases {
            assert_eq!(decoded(&hex(code)), Ok(raw.as_bytes().to_vec()), "{raw}");
        }
    }

    #[test]
    fn the_derived_code_is_the_rfcs() {
        // Each symbol alone, and all of them in one string, against an
        // independent encoder built from the RFC's table of codes.
        let all: Vec<u8> = (0..=255u8).collect();
        for &b in &all {
            assert_eq!(decoded(&encoded(&[b])), Ok(vec![b]), "{b}");
        }
        assert_eq!(decoded(&encoded(&all)), Ok(all.clone()));
        // EOS is 30 ones, the last code.
        assert_eq!(CODE.first[30] + 3, (1 << 30) - 1);
        assert_eq!(CODE.sorted[256], 256);
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        assert_eq!(decoded(&[]), Ok(Vec::new()));
        // '0' is 00000: three ones of padding are fine, a zero is not.
        assert_eq!(decoded(&[0b0000_0111]), Ok(b"0".to_vec()));
        assert_eq!(decoded(&[0b0000_0110]), Err(Invalid));
        // A whole octet of padding is too long.
        assert_eq!(decoded(&[0b0000_0111, 0xff]), Err(Invalid));
        assert_eq!(decoded(&[0xff]), Err(Invalid));
        // EOS (30 ones) decoded as a symbol.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xfc]), Err(Invalid));
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), Err(Invalid));
    }

    proptest! {
        #[test]
        fn any_octets_round_trip(raw in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert_eq!(decoded(&encoded(&raw)), Ok(raw));
        }

        /// A valid encoding is the one an encoder writes for its octets
        /// (padding is all ones), so: ours accepts exactly what re-encodes
        /// to itself. (The reference decoder also accepts zero bits of
        /// padding, which RFC 7541 §5.2 makes an error.)
        #[test]
        fn any_input_is_accepted_exactly_when_it_is_an_encoding(
            src in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let mut theirs = Vec::new();
            let reference = httlib_huffman::decode(
                &src,
                &mut theirs,
                httlib_huffman::DecoderSpeed::OneBit,
            );
            match decoded(&src) {
                Ok(ours) => {
                    prop_assert_eq!(&encoded(&ours), &src);
                    prop_assert_eq!(ours, theirs);
                }
                Err(Invalid) => {
                    prop_assert!(reference.is_err() || encoded(&theirs) != src);
                }
            }
        }
    }
}
