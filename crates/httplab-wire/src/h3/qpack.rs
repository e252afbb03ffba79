//! QPACK (RFC 9204) with a dynamic table of capacity 0: this server
//! announces SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 and
//! SETTINGS_QPACK_BLOCKED_STREAMS 0, so a client's field sections can only
//! name the static table or carry literals, and its encoder stream can
//! only say "capacity 0". Nothing here keeps state between sections.
//!
//! **Decoding** ([`Decoder::decode`]): the prefix's Required Insert Count
//! must be 0; indexed field lines and literal field lines with a name
//! reference must name the static table; literal names and values may be
//! Huffman-coded (decoded by the crate's `huffman` module, as HTTP/2's
//! headers are: HPACK and QPACK share the code). Any dynamic or
//! post-base reference, a static index beyond the table, a string cut
//! short or a bad Huffman code is QPACK_DECOMPRESSION_FAILED
//! ([`DecodeError::Failed`], a connection error). Fields go to a callback
//! in order as they are decoded, without allocating once the two scratch
//! buffers (for Huffman strings) are warm. The decoded size of RFC 9114
//! §4.2.2 (each field's name and value lengths plus 32) is counted before
//! a field is handed on; beyond the bound the section is refused
//! ([`DecodeError::TooLarge`], answered 431).
//!
//! **Encoding** a response ([`status`], [`field`]): `:status` by static
//! index when the table has the code (else a literal with its name by
//! index), a field whose name and value the table has by index, one whose
//! name it has by name reference and a literal value, any other as literal
//! name and value; names lower-cased; no Huffman (a static server's values
//! are short and mostly not text the code shrinks much, and coding them
//! costs more than the few octets it saves); the connection-specific
//! fields of RFC 9114 §4.2 (`connection`, `keep-alive`,
//! `proxy-connection`, `transfer-encoding`, `upgrade`) left out.

use crate::{huffman, prefix_int};

/// A field section QPACK refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Not decodable with a table of capacity 0, or malformed:
    /// QPACK_DECOMPRESSION_FAILED, a connection error.
    Failed,
    /// Its decoded size is over the bound (HTTP status 431).
    TooLarge,
}

/// Each field's share of the decoded size beside its octets (RFC 9114
/// §4.2.2, after RFC 7541 §4.1).
pub const FIELD_OVERHEAD: u64 = 32;

/// Scratch buffers for Huffman-coded names and values; reused from one
/// field section to the next.
#[derive(Debug, Default)]
pub struct Decoder {
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// Decodes `block` (a HEADERS frame's payload), calling `field` with
    /// each name and value in order, the decoded size bounded by
    /// `max_size` (see the module docs).
    pub fn decode(
        &mut self,
        block: &[u8],
        max_size: u64,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let (required_insert_count, a) = integer(block, 8)?;
        if required_insert_count != 0 {
            return Err(DecodeError::Failed);
        }
        // Sign bit and Delta Base: the Base means nothing without a table.
        let (_, b) = integer(&block[a..], 7)?;
        let mut at = a + b;
        let mut size = 0u64;
        while at < block.len() {
            let rest = &block[at..];
            let (name, value, used) = line(rest, &mut self.name, &mut self.value)?;
            size += name.len() as u64 + value.len() as u64 + FIELD_OVERHEAD;
            if size > max_size {
                return Err(DecodeError::TooLarge);
            }
            field(name, value);
            at += used;
        }
        Ok(())
    }
}

/// One field line at the start of `b`: its name, value and length
/// (RFC 9204 §4.5.2–4.5.6).
#[inline]
fn line<'a>(
    b: &'a [u8],
    name_scratch: &'a mut Vec<u8>,
    value_scratch: &'a mut Vec<u8>,
) -> Result<(&'a [u8], &'a [u8], usize), DecodeError> {
    let first = b[0];
    if first & 0x80 != 0 {
        // Indexed field line: 1 T index(6); T = 1 is the static table.
        if first & 0x40 == 0 {
            return Err(DecodeError::Failed);
        }
        let (i, n) = integer(b, 6)?;
        let (name, value) = STATIC.get(i).ok_or(DecodeError::Failed)?;
        Ok((name, value, n))
    } else if first & 0x40 != 0 {
        // Literal field line with name reference: 0 1 N T index(4).
        if first & 0x10 == 0 {
            return Err(DecodeError::Failed);
        }
        let (i, n) = integer(b, 4)?;
        let (name, _) = STATIC.get(i).ok_or(DecodeError::Failed)?;
        let (value, m) = string(&b[n..], 7, value_scratch)?;
        Ok((name, value, n + m))
    } else if first & 0x20 != 0 {
        // Literal field line with literal name: 0 0 1 N H length(3).
        let (name, n) = string(b, 3, name_scratch)?;
        let (value, m) = string(&b[n..], 7, value_scratch)?;
        Ok((name, value, n + m))
    } else {
        // Post-base references (0001 index, 0000 N name index): the
        // dynamic table's.
        Err(DecodeError::Failed)
    }
}

/// The string literal at the start of `b` whose length has a `prefix`-bit
/// prefix and whose Huffman flag is the bit above it (RFC 9204 §4.1.2):
/// its octets (decoded into `scratch` when Huffman-coded) and the octets
/// it took.
#[inline]
fn string<'a>(
    b: &'a [u8],
    prefix: u8,
    scratch: &'a mut Vec<u8>,
) -> Result<(&'a [u8], usize), DecodeError> {
    let coded = b.first().ok_or(DecodeError::Failed)? & (1 << prefix) != 0;
    let (len, n) = integer(b, prefix)?;
    let end = n
        .checked_add(len)
        .filter(|e| *e <= b.len())
        .ok_or(DecodeError::Failed)?;
    let octets = &b[n..end];
    if !coded {
        return Ok((octets, end));
    }
    scratch.clear();
    huffman::decode(octets, scratch).map_err(|_| DecodeError::Failed)?;
    Ok((scratch.as_slice(), end))
}

/// The integer with a `prefix`-bit prefix at the start of `b` (RFC 9204
/// §4.1.1, RFC 7541 §5.1) and the octets it took.
#[inline]
fn integer(b: &[u8], prefix: u8) -> Result<(usize, usize), DecodeError> {
    prefix_int::read(b, prefix).ok_or(DecodeError::Failed)
}

/// The static index of `:status` `code`, if the table has it.
fn status_index(code: u16) -> Option<u8> {
    Some(match code {
        103 => 24,
        200 => 25,
        304 => 26,
        404 => 27,
        503 => 28,
        100 => 63,
        204 => 64,
        206 => 65,
        302 => 66,
        400 => 67,
        403 => 68,
        421 => 69,
        425 => 70,
        500 => 71,
        _ => return None,
    })
}

/// The static index of `:status` (the first of its entries).
const STATUS_NAME: usize = 24;

/// Starts a response field section in `out`: the prefix (Required Insert
/// Count 0, Base 0) and `:status`.
pub fn status(out: &mut Vec<u8>, code: u16) {
    out.extend_from_slice(&[0, 0]);
    if let Some(i) = status_index(code) {
        prefix_int::put(out, 6, 0xc0, usize::from(i));
        return;
    }
    prefix_int::put(out, 4, 0x50, STATUS_NAME);
    if (100..=999).contains(&code) {
        let d = |n: u16| b'0' + (n % 10) as u8;
        out.extend_from_slice(&[3, d(code / 100), d(code / 10), d(code)]);
        return;
    }
    let digits = code.to_string();
    prefix_int::put(out, 7, 0, digits.len());
    out.extend_from_slice(digits.as_bytes());
}

/// Fields a response must not carry (RFC 9114 §4.2), lower-case.
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// Names up to this long are looked up in the static table (its longest
/// is 32 octets).
const LOOKUP_MAX: usize = 40;

/// Appends one response field after [`status`] (see the module docs).
pub fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let mut low = [0u8; LOOKUP_MAX];
    let Some(low) = low.get_mut(..name.len()) else {
        literal(out, name, value);
        return;
    };
    low.copy_from_slice(name);
    low.make_ascii_lowercase();
    let low: &[u8] = low;
    if CONNECTION_SPECIFIC.contains(&low) {
        return;
    }
    let all = indices(low);
    let Some(&first) = all.first() else {
        literal(out, low, value);
        return;
    };
    if let Some(&i) = all.iter().find(|&&i| STATIC[usize::from(i)].1 == value) {
        prefix_int::put(out, 6, 0xc0, usize::from(i));
        return;
    }
    prefix_int::put(out, 4, 0x50, usize::from(first));
    prefix_int::put(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

/// A literal field line with a literal name (lower-cased here), no
/// Huffman.
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    prefix_int::put(out, 3, 0x20, name.len());
    out.extend(name.iter().map(u8::to_ascii_lowercase));
    prefix_int::put(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

/// The static table (RFC 9204 Appendix A): index, name, value.
pub static STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),                                    // 0
    (b":path", b"/"),                                        // 1
    (b"age", b"0"),                                          // 2
    (b"content-disposition", b""),                           // 3
    (b"content-length", b"0"),                               // 4
    (b"cookie", b""),                                        // 5
    (b"date", b""),                                          // 6
    (b"etag", b""),                                          // 7
    (b"if-modified-since", b""),                             // 8
    (b"if-none-match", b""),                                 // 9
    (b"last-modified", b""),                                 // 10
    (b"link", b""),                                          // 11
    (b"location", b""),                                      // 12
    (b"referer", b""),                                       // 13
    (b"set-cookie", b""),                                    // 14
    (b":method", b"CONNECT"),                                // 15
    (b":method", b"DELETE"),                                 // 16
    (b":method", b"GET"),                                    // 17
    (b":method", b"HEAD"),                                   // 18
    (b":method", b"OPTIONS"),                                // 19
    (b":method", b"POST"),                                   // 20
    (b":method", b"PUT"),                                    // 21
    (b":scheme", b"http"),                                   // 22
    (b":scheme", b"https"),                                  // 23
    (b":status", b"103"),                                    // 24
    (b":status", b"200"),                                    // 25
    (b":status", b"304"),                                    // 26
    (b":status", b"404"),                                    // 27
    (b":status", b"503"),                                    // 28
    (b"accept", b"*/*"),                                     // 29
    (b"accept", b"application/dns-message"),                 // 30
    (b"accept-encoding", b"gzip, deflate, br"),              // 31
    (b"accept-ranges", b"bytes"),                            // 32
    (b"access-control-allow-headers", b"cache-control"),     // 33
    (b"access-control-allow-headers", b"content-type"),      // 34
    (b"access-control-allow-origin", b"*"),                  // 35
    (b"cache-control", b"max-age=0"),                        // 36
    (b"cache-control", b"max-age=2592000"),                  // 37
    (b"cache-control", b"max-age=604800"),                   // 38
    (b"cache-control", b"no-cache"),                         // 39
    (b"cache-control", b"no-store"),                         // 40
    (b"cache-control", b"public, max-age=31536000"),         // 41
    (b"content-encoding", b"br"),                            // 42
    (b"content-encoding", b"gzip"),                          // 43
    (b"content-type", b"application/dns-message"),           // 44
    (b"content-type", b"application/javascript"),            // 45
    (b"content-type", b"application/json"),                  // 46
    (b"content-type", b"application/x-www-form-urlencoded"), // 47
    (b"content-type", b"image/gif"),                         // 48
    (b"content-type", b"image/jpeg"),                        // 49
    (b"content-type", b"image/png"),                         // 50
    (b"content-type", b"text/css"),                          // 51
    (b"content-type", b"text/html; charset=utf-8"),          // 52
    (b"content-type", b"text/plain"),                        // 53
    (b"content-type", b"text/plain;charset=utf-8"),          // 54
    (b"range", b"bytes=0-"),                                 // 55
    (b"strict-transport-security", b"max-age=31536000"),     // 56
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ), // 57
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ), // 58
    (b"vary", b"accept-encoding"),                           // 59
    (b"vary", b"origin"),                                    // 60
    (b"x-content-type-options", b"nosniff"),                 // 61
    (b"x-xss-protection", b"1; mode=block"),                 // 62
    (b":status", b"100"),                                    // 63
    (b":status", b"204"),                                    // 64
    (b":status", b"206"),                                    // 65
    (b":status", b"302"),                                    // 66
    (b":status", b"400"),                                    // 67
    (b":status", b"403"),                                    // 68
    (b":status", b"421"),                                    // 69
    (b":status", b"425"),                                    // 70
    (b":status", b"500"),                                    // 71
    (b"accept-language", b""),                               // 72
    (b"access-control-allow-credentials", b"FALSE"),         // 73
    (b"access-control-allow-credentials", b"TRUE"),          // 74
    (b"access-control-allow-headers", b"*"),                 // 75
    (b"access-control-allow-methods", b"get"),               // 76
    (b"access-control-allow-methods", b"get, post, options"), // 77
    (b"access-control-allow-methods", b"options"),           // 78
    (b"access-control-expose-headers", b"content-length"),   // 79
    (b"access-control-request-headers", b"content-type"),    // 80
    (b"access-control-request-method", b"get"),              // 81
    (b"access-control-request-method", b"post"),             // 82
    (b"alt-svc", b"clear"),                                  // 83
    (b"authorization", b""),                                 // 84
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ), // 85
    (b"early-data", b"1"),                                   // 86
    (b"expect-ct", b""),                                     // 87
    (b"forwarded", b""),                                     // 88
    (b"if-range", b""),                                      // 89
    (b"origin", b""),                                        // 90
    (b"purpose", b"prefetch"),                               // 91
    (b"server", b""),                                        // 92
    (b"timing-allow-origin", b"*"),                          // 93
    (b"upgrade-insecure-requests", b"1"),                    // 94
    (b"user-agent", b""),                                    // 95
    (b"x-forwarded-for", b""),                               // 96
    (b"x-frame-options", b"deny"),                           // 97
    (b"x-frame-options", b"sameorigin"),                     // 98
];

/// The static-table indices whose name is `name` (lower-case), in
/// table order; empty when the table does not have it.
#[inline]
fn indices(name: &[u8]) -> &'static [u8] {
    match name {
        b"age" => &[2],
        b"content-disposition" => &[3],
        b"content-length" => &[4],
        b"cookie" => &[5],
        b"date" => &[6],
        b"etag" => &[7],
        b"if-modified-since" => &[8],
        b"if-none-match" => &[9],
        b"last-modified" => &[10],
        b"link" => &[11],
        b"location" => &[12],
        b"referer" => &[13],
        b"set-cookie" => &[14],
        b"accept" => &[29, 30],
        b"accept-encoding" => &[31],
        b"accept-ranges" => &[32],
        b"access-control-allow-headers" => &[33, 34, 75],
        b"access-control-allow-origin" => &[35],
        b"cache-control" => &[36, 37, 38, 39, 40, 41],
        b"content-encoding" => &[42, 43],
        b"content-type" => &[44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54],
        b"range" => &[55],
        b"strict-transport-security" => &[56, 57, 58],
        b"vary" => &[59, 60],
        b"x-content-type-options" => &[61],
        b"x-xss-protection" => &[62],
        b"accept-language" => &[72],
        b"access-control-allow-credentials" => &[73, 74],
        b"access-control-allow-methods" => &[76, 77, 78],
        b"access-control-expose-headers" => &[79],
        b"access-control-request-headers" => &[80],
        b"access-control-request-method" => &[81, 82],
        b"alt-svc" => &[83],
        b"authorization" => &[84],
        b"content-security-policy" => &[85],
        b"early-data" => &[86],
        b"expect-ct" => &[87],
        b"forwarded" => &[88],
        b"if-range" => &[89],
        b"origin" => &[90],
        b"purpose" => &[91],
        b"server" => &[92],
        b"timing-allow-origin" => &[93],
        b"upgrade-insecure-requests" => &[94],
        b"user-agent" => &[95],
        b"x-forwarded-for" => &[96],
        b"x-frame-options" => &[97, 98],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decoded(block: &[u8], max: u64) -> Result<Fields, DecodeError> {
        let mut got = Vec::new();
        Decoder::default().decode(block, max, |n, v| got.push((n.to_vec(), v.to_vec())))?;
        Ok(got)
    }

    fn pairs(l: &[(&str, &str)]) -> Fields {
        l.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn the_static_table_is_rfc_9204_appendix_a() {
        assert_eq!(STATIC.len(), 99);
        assert_eq!(STATIC[0], (&b":authority"[..], &b""[..]));
        assert_eq!(STATIC[17], (&b":method"[..], &b"GET"[..]));
        assert_eq!(STATIC[25], (&b":status"[..], &b"200"[..]));
        assert_eq!(
            STATIC[52],
            (&b"content-type"[..], &b"text/html; charset=utf-8"[..])
        );
        assert_eq!(STATIC[98], (&b"x-frame-options"[..], &b"sameorigin"[..]));
        // Every regular name is found at each of its indices, in order;
        // every status with an entry has it.
        for (i, (name, value)) in STATIC.iter().enumerate() {
            if name.starts_with(b":") {
                if *name == b":status" {
                    let code: u16 = std::str::from_utf8(value).unwrap().parse().unwrap();
                    assert_eq!(status_index(code), Some(i as u8));
                }
                continue;
            }
            assert!(indices(name).contains(&(i as u8)), "{i}");
            assert!(indices(name)
                .iter()
                .all(|&j| STATIC[usize::from(j)].0 == *name));
            assert!(name.len() <= LOOKUP_MAX);
        }
    }

    #[test]
    fn rfc_9204_appendix_b_1_decodes() {
        // B.1: a literal field line with a static name reference.
        let block = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c");
        assert_eq!(
            decoded(&block, 1000),
            Ok(pairs(&[(":path", "/index.html")]))
        );
    }

    #[test]
    fn rfc_9204_appendix_b_dynamic_references_fail() {
        // B.2 (Required Insert Count 2, dynamic references), B.4 (post-base
        // and dynamic indices), B.5 (dynamic name reference): a table of
        // capacity 0 has none of them.
        for block in ["0381 10 11", "0500 80c1 81", "0200 80"] {
            let b = hex(block);
            assert_eq!(decoded(&b, 1000), Err(DecodeError::Failed), "{block}");
        }
    }

    #[test]
    fn huffman_strings_decode() {
        // :authority (index 0) with RFC 7541 C.4.1's Huffman-coded
        // "www.example.com"; a literal name and value both Huffman-coded.
        let mut block = hex("0000 508c f1e3 c2e5 f23a 6ba0 ab90 f4ff");
        let mut name = Vec::new();
        httlib_huffman::encode(b"x-custom", &mut name).unwrap();
        let mut value = Vec::new();
        httlib_huffman::encode(b"some value", &mut value).unwrap();
        prefix_int::put(&mut block, 3, 0x28, name.len());
        block.extend_from_slice(&name);
        prefix_int::put(&mut block, 7, 0x80, value.len());
        block.extend_from_slice(&value);
        assert_eq!(
            decoded(&block, 1000),
            Ok(pairs(&[
                (":authority", "www.example.com"),
                ("x-custom", "some value")
            ]))
        );
    }

    #[test]
    fn a_response_round_trips_without_connection_fields() {
        let mut out = Vec::new();
        status(&mut out, 200);
        field(&mut out, b"Content-Type", b"text/html; charset=utf-8");
        field(&mut out, b"Content-Length", b"87");
        field(&mut out, b"Connection", b"keep-alive");
        field(&mut out, b"Keep-Alive", b"timeout=5");
        field(&mut out, b"Proxy-Connection", b"x");
        field(&mut out, b"Transfer-Encoding", b"chunked");
        field(&mut out, b"Upgrade", b"h2c");
        field(&mut out, b"ETag", b"\"abc\"");
        field(&mut out, b"X-Mine", b"v");
        let long = "X-".to_string() + &"n".repeat(60);
        field(&mut out, long.as_bytes(), b"w");
        // Prefix, :status 200 indexed (25), content-type text/html indexed
        // (52), content-length by name reference (4).
        assert_eq!(&out[..5], &[0, 0, 0xc0 | 25, 0xc0 | 52, 0x50 | 4]);
        let want_long = long.to_ascii_lowercase();
        assert_eq!(
            decoded(&out, 10_000),
            Ok(pairs(&[
                (":status", "200"),
                ("content-type", "text/html; charset=utf-8"),
                ("content-length", "87"),
                ("etag", "\"abc\""),
                ("x-mine", "v"),
                (&want_long, "w"),
            ]))
        );
    }

    #[test]
    fn every_status_round_trips() {
        for code in [
            100u16, 103, 200, 204, 206, 301, 302, 304, 400, 404, 405, 416, 431, 500, 503, 999,
        ] {
            let mut out = Vec::new();
            status(&mut out, code);
            let s = code.to_string();
            assert_eq!(decoded(&out, 1000), Ok(pairs(&[(":status", &s)])), "{code}");
        }
    }

    #[test]
    fn the_decoded_size_is_bounded() {
        let mut out = Vec::new();
        status(&mut out, 200);
        field(&mut out, b"x-a", &[b'v'; 100]);
        // 7 + 3 + 32 for :status, 3 + 100 + 32 for x-a: 177.
        assert!(decoded(&out, 177).is_ok());
        assert_eq!(decoded(&out, 176), Err(DecodeError::TooLarge));
        // Many small static references count too (32 each).
        let mut bomb = vec![0, 0];
        bomb.extend(std::iter::repeat(0xc0 | 17).take(1000));
        assert_eq!(decoded(&bomb, 16 << 10), Err(DecodeError::TooLarge));
    }

    #[test]
    fn malformed_sections_fail() {
        for bad in [
            &[][..],                                   // no prefix
            &[0x00][..],                               // no Delta Base
            &[0x01, 0x00][..],                         // Required Insert Count 1
            &[0xff, 0x00][..],                         // a cut Required Insert Count
            &[0x00, 0x00, 0x80][..],                   // indexed, dynamic
            &[0x00, 0x00, 0xff, 0x24][..],             // static index 99: beyond the table
            &[0x00, 0x00, 0x10][..],                   // indexed post-base
            &[0x00, 0x00, 0x00][..],                   // name reference post-base
            &[0x00, 0x00, 0x41, 0x00][..],             // name reference, dynamic
            &[0x00, 0x00, 0x51][..],                   // name reference without a value
            &[0x00, 0x00, 0x51, 0x05, b'a'][..],       // value cut short
            &[0x00, 0x00, 0x23, b'a', b'b'][..],       // literal name cut short
            &[0x00, 0x00, 0x21, b'a'][..],             // literal name without a value
            &[0x00, 0x00, 0x51, 0x81, 0xff, 0x00][..], // Huffman: 8 bits of padding
            &[
                0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ][..], // an index past 2^62
        ] {
            assert_eq!(decoded(bad, 1000), Err(DecodeError::Failed), "{bad:02x?}");
        }
        // Every prefix of a valid section: decoded or refused, never a panic.
        let mut out = Vec::new();
        status(&mut out, 206);
        field(&mut out, b"content-range", b"bytes 0-1/9");
        for n in 0..out.len() {
            let _ = decoded(&out[..n], 1000);
        }
    }
}
