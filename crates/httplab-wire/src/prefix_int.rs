//! Prefix integers (RFC 7541 §5.1): an integer that fills the low bits of
//! an octet whose high bits carry flags, continued in 7-bit groups when it
//! does not fit. HPACK and QPACK (RFC 9204 §4.1.1) share them.

/// Writes `value` with a `prefix`-bit prefix (1–8), the first octet's
/// other bits `flags`.
#[inline]
pub fn put(out: &mut Vec<u8>, prefix: u8, flags: u8, value: usize) {
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

/// The integer with a `prefix`-bit prefix (1–8) at the start of `b` and
/// the octets it took; None when `b` ends inside it or it has more than
/// nine continuation octets (2^63: far above any length or index a block
/// can hold; QUIC's own integers stop at 2^62).
#[inline]
pub(crate) fn read(b: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let mask = (1u64 << prefix) - 1;
    let mut value = u64::from(*b.first()?) & mask;
    if value < mask {
        return Some((value as usize, 1));
    }
    let mut shift = 0u32;
    for (i, &byte) in b.iter().enumerate().skip(1) {
        if shift > 56 {
            return None;
        }
        value += u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Some((usize::try_from(value).ok()?, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_at_every_prefix() {
        let values = [
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
            1 << 40,
        ];
        for prefix in 1..=8u8 {
            for v in values {
                let mut out = Vec::new();
                put(&mut out, prefix, 0, v);
                assert_eq!(read(&out, prefix), Some((v, out.len())), "{prefix} {v}");
            }
        }
    }

    #[test]
    fn rfc_7541_examples() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix;
        // C.1.3: 42 at an octet boundary.
        let mut b = Vec::new();
        put(&mut b, 5, 0, 10);
        assert_eq!(b, [0x0a]);
        b.clear();
        put(&mut b, 5, 0xe0, 1337);
        assert_eq!(b, [0xff, 0x9a, 0x0a]);
        b.clear();
        put(&mut b, 8, 0, 42);
        assert_eq!(b, [42]);
        assert_eq!(read(&[0x1f, 0x9a, 0x0a], 5), Some((1337, 3)));
    }

    #[test]
    fn cut_and_overlong_integers_are_refused() {
        assert_eq!(read(&[], 5), None);
        assert_eq!(read(&[0x1f, 0x9a], 5), None);
        assert_eq!(read(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff], 5), None);
        let mut long = vec![0x1f];
        long.extend([0xff; 9]);
        long.push(0x01);
        assert_eq!(read(&long, 5), None);
    }
}
