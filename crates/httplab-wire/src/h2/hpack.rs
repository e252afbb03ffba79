//! Header blocks (RFC 7541): the decoder both ends use, the client's
//! request blocks and the server's response encoder.

use super::unhuffman::{self, Malformed};
use super::{Error, DEFAULT_TABLE_SIZE};

/// Octets a field adds to a header list's size (RFC 9113 §6.5.2): name,
/// value and 32.
pub fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// Whether a decoded header list was handed on whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSize {
    /// Every field was handed on.
    Whole,
    /// The list is larger than the bound: the fields past it were decoded
    /// (the table stays in step) but not handed on.
    TooLarge,
}

/// A connection's HPACK decoder: the dynamic table (`loona-hpack`) and the
/// buffers of the Huffman pass (`unhuffman.rs`), all reused, so decoding a
/// block allocates only for fields entering the table.
pub struct Decoder {
    table: loona_hpack::Decoder<'static>,
    /// A block with its Huffman strings decoded, and the decoded string
    /// being written.
    raw: Vec<u8>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hpack::Decoder")
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder whose table holds at most the protocol's default 4096
    /// octets: a size update above it (the peer was never told more) is a
    /// COMPRESSION_ERROR, so the peer cannot grow the table's memory.
    pub fn new() -> Decoder {
        let mut table = loona_hpack::Decoder::new();
        table.set_max_allowed_table_size(DEFAULT_TABLE_SIZE);
        Decoder {
            table,
            raw: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Decodes a complete header block (every HEADERS and CONTINUATION
    /// fragment), handing each field to `on` in order while the decoded
    /// list stays within `max_list` octets ([`field_size`]); past that the
    /// rest of the block is still decoded, to keep the table in step, but
    /// handed on no more ([`ListSize::TooLarge`]). An HPACK bomb, a small
    /// block naming a large table entry many times, thus costs the time to
    /// read its block and no memory. Err: the block is malformed
    /// (COMPRESSION_ERROR; the connection cannot go on).
    pub fn decode(
        &mut self,
        block: &[u8],
        max_list: usize,
        mut on: impl FnMut(&[u8], &[u8]),
    ) -> Result<ListSize, Error> {
        let mut raw = std::mem::take(&mut self.raw);
        let block = match unhuffman::unhuffman(block, &mut raw, &mut self.scratch) {
            Ok(true) => &raw[..],
            Ok(false) => block,
            Err(Malformed) => {
                self.raw = raw;
                return Err(Error::Compression);
            }
        };
        let mut size = 0usize;
        let decoded = self.table.decode_with_cb(block, |name, value| {
            size = size.saturating_add(field_size(&name, &value));
            if size <= max_list {
                on(&name, &value);
            }
        });
        self.raw = raw;
        decoded.map_err(|_| Error::Compression)?;
        Ok(if size <= max_list {
            ListSize::Whole
        } else {
            ListSize::TooLarge
        })
    }
}

/// A connection's HPACK encoder for response blocks (`loona-hpack`'s, with
/// the dynamic table: fields whose name is in no table enter it; names of
/// the static table are sent as literals naming their index), and the
/// dynamic table size update owed to the peer when it announced a smaller
/// SETTINGS_HEADER_TABLE_SIZE.
pub struct Encoder {
    table: loona_hpack::Encoder<'static>,
    size: usize,
    /// A size update to send at the start of the next block.
    size_update: Option<usize>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hpack::Encoder")
    }
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder with the protocol's default table size.
    pub fn new() -> Encoder {
        Encoder {
            table: loona_hpack::Encoder::new(),
            size: DEFAULT_TABLE_SIZE,
            size_update: None,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the table never grows past it
    /// (nor past 4096 octets); a change is announced at the start of the
    /// next block (RFC 7541 §4.2).
    pub fn set_peer_table_size(&mut self, n: u32) {
        let n = (n as usize).min(DEFAULT_TABLE_SIZE);
        if n != self.size {
            self.size = n;
            self.table.set_max_table_size(n);
            // Several changes between blocks: the last one counts (a
            // smaller intermediate one was never used).
            self.size_update = Some(n);
        }
    }

    /// Starts a block in `out` (the owed size update, if any).
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some(n) = self.size_update.take() {
            integer(out, 5, 0x20, n);
        }
    }

    /// The `:status` field: indexed when the static table has it.
    pub fn status(&mut self, status: u16, out: &mut Vec<u8>) {
        let index = match status {
            200 => 8,
            204 => 9,
            206 => 10,
            304 => 11,
            400 => 12,
            404 => 13,
            500 => 14,
            _ => 0,
        };
        if index != 0 {
            out.push(0x80 | index);
        } else {
            let mut digits = [b'0'; 3];
            let s = status.min(999);
            digits[0] += (s / 100) as u8;
            digits[1] += (s / 10 % 10) as u8;
            digits[2] += (s % 10) as u8;
            // Literal without indexing, name `:status` (static index 8).
            integer(out, 4, 0x00, 8);
            string(out, &digits);
        }
    }

    /// A field (a lower-case name).
    pub fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = self.table.encode_header_into((name, value), out);
    }
}

/// The HPACK header block of a GET (or HEAD) request, encoded without the
/// dynamic table, so the same bytes serve every stream of every connection.
/// `extra` headers are (lower-case name, value) pairs.
pub fn request_block(
    method: &str,
    https: bool,
    authority: &str,
    path: &str,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + path.len() + authority.len());
    // Indexed fields of the static table: :method GET (2), :scheme http (6)
    // or https (7).
    match method {
        "GET" => b.push(0x80 | 2),
        m => literal(&mut b, 2, None, m),
    }
    b.push(0x80 | if https { 7 } else { 6 });
    match path {
        "/" => b.push(0x80 | 4),
        p => literal(&mut b, 4, None, p),
    }
    literal(&mut b, 1, None, authority);
    for (name, value) in extra {
        literal(&mut b, 0, Some(name), value);
    }
    b
}

/// A literal field without indexing (RFC 7541 §6.2.2): the name by its
/// static-table index, or (index 0) as a literal.
fn literal(b: &mut Vec<u8>, index: usize, name: Option<&str>, value: &str) {
    integer(b, 4, 0x00, index);
    if let Some(n) = name {
        string(b, n.as_bytes());
    }
    string(b, value.as_bytes());
}

/// A string literal without Huffman coding.
fn string(b: &mut Vec<u8>, s: &[u8]) {
    integer(b, 7, 0x00, s.len());
    b.extend_from_slice(s);
}

/// An HPACK integer with an N-bit prefix (RFC 7541 §5.1), the first octet's
/// other bits `first`.
pub fn integer(b: &mut Vec<u8>, prefix_bits: u8, first: u8, mut v: usize) {
    let max = (1usize << prefix_bits) - 1;
    if v < max {
        b.push(first | v as u8);
        return;
    }
    b.push(first | max as u8);
    v -= max;
    while v >= 128 {
        b.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    b.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(d: &mut Decoder, block: &[u8], max: usize) -> (Vec<(String, String)>, ListSize) {
        let mut v = Vec::new();
        let r = d
            .decode(block, max, |n, val| {
                v.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(val).into_owned(),
                ))
            })
            .unwrap();
        (v, r)
    }

    #[test]
    fn integers_match_rfc_7541_examples() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix.
        let mut b = Vec::new();
        integer(&mut b, 5, 0, 10);
        assert_eq!(b, [0x0a]);
        b.clear();
        integer(&mut b, 5, 0, 1337);
        assert_eq!(b, [0x1f, 0x9a, 0x0a]);
    }

    #[test]
    fn request_block_decodes_to_the_request() {
        let b = request_block(
            "GET",
            true,
            "127.0.0.1:8443",
            "/index.html",
            &[("user-agent", "httplab")],
        );
        let (h, whole) = decoded(&mut Decoder::new(), &b, usize::MAX);
        assert_eq!(whole, ListSize::Whole);
        let want = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "127.0.0.1:8443"),
            ("user-agent", "httplab"),
        ];
        assert_eq!(h.len(), want.len());
        for ((n, v), (wn, wv)) in h.iter().zip(want) {
            assert_eq!((n.as_str(), v.as_str()), (wn, wv));
        }
        // A long path needs a multi-byte length.
        let long = format!("/{}", "x".repeat(300));
        let b = request_block("HEAD", false, "h", &long, &[]);
        let (h, _) = decoded(&mut Decoder::new(), &b, usize::MAX);
        assert_eq!(h[0].1, "HEAD");
        assert_eq!(h[1].1, "http");
        assert_eq!(h[2].1, long);
    }

    #[test]
    fn response_blocks_round_trip_with_the_table() {
        let mut e = Encoder::new();
        let mut d = Decoder::new();
        for status in [200u16, 404, 301, 503] {
            let mut b = Vec::new();
            e.begin(&mut b);
            e.status(status, &mut b);
            e.field(b"server", b"httplab", &mut b);
            e.field(b"x-custom", b"v", &mut b);
            e.field(b"content-length", b"12", &mut b);
            let (h, _) = decoded(&mut d, &b, usize::MAX);
            let s = status.to_string();
            let want = [
                (":status", s.as_str()),
                ("server", "httplab"),
                ("x-custom", "v"),
                ("content-length", "12"),
            ];
            let got: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            assert_eq!(got, want);
        }
        // A smaller table announced by the peer: the next block says so.
        e.set_peer_table_size(0);
        let mut b = Vec::new();
        e.begin(&mut b);
        e.status(200, &mut b);
        assert_eq!(b, [0x20, 0x88]);
        let (h, _) = decoded(&mut d, &b, usize::MAX);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn an_hpack_bomb_is_decoded_but_not_handed_on() {
        // One 4000-octet value enters the table (literal with incremental
        // indexing, new name), then is named 2000 times by one octet each
        // (index 62): 8 MB of fields from a 6 KB block.
        let mut block = vec![0x40];
        string(&mut block, b"x-bomb");
        integer(&mut block, 7, 0, 4000);
        block.extend(std::iter::repeat(b'a').take(4000));
        block.extend(std::iter::repeat(0x80 | 62).take(2000));
        let mut d = Decoder::new();
        let mut handed = 0usize;
        let r = d.decode(&block, 16 * 1024, |n, v| handed += field_size(n, v));
        assert_eq!(r, Ok(ListSize::TooLarge));
        assert!(handed <= 16 * 1024, "{handed}");
        // The table stayed in step: the entry is still there.
        let (h, whole) = decoded(&mut d, &[0x80 | 62], 16 * 1024);
        assert_eq!(
            (h[0].0.as_str(), h[0].1.len(), whole),
            ("x-bomb", 4000, ListSize::Whole)
        );
    }

    #[test]
    fn a_table_size_update_above_the_default_is_refused() {
        let mut b = Vec::new();
        integer(&mut b, 5, 0x20, 1 << 20);
        b.push(0x82);
        let r = Decoder::new().decode(&b, usize::MAX, |_, _| {});
        assert_eq!(r, Err(Error::Compression));
        // Within it: fine.
        let mut b = Vec::new();
        integer(&mut b, 5, 0x20, 100);
        b.push(0x82);
        assert_eq!(
            Decoder::new().decode(&b, usize::MAX, |_, _| {}),
            Ok(ListSize::Whole)
        );
    }

    #[test]
    fn huffman_blocks_decode() {
        // RFC 7541 C.4.1: a request with Huffman strings.
        let block = [
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab,
            0x90, 0xf4, 0xff,
        ];
        let (h, _) = decoded(&mut Decoder::new(), &block, usize::MAX);
        assert_eq!(h[3], (":authority".into(), "www.example.com".into()));
    }
}
