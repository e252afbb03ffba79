//! Header blocks (RFC 7541): the decoder both ends use, the client's
//! request blocks and the server's response encoder.

use super::DEFAULT_TABLE_SIZE;
/// An HPACK integer with an N-bit prefix (RFC 7541 §5.1), shared with QPACK.
pub use crate::prefix_int::put as integer;

/// Octets a field adds to a header list's size (RFC 9113 §6.5.2): name,
/// value and 32.
pub fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// RFC 7541 Appendix A: the static table, index 1 first (the decoder's,
/// and the encoder's source of its names' lengths).
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What the decoder vouches for in a field it hands on. A string taken
/// from the static table is valid (a non-empty lower-case name, a value
/// without CR, LF or NUL: the test `the_static_table_is_valid` proves it),
/// so a consumer need not check it again; a literal or a dynamic-table
/// entry it must (an entry entered the table with the request that sent
/// it, valid or not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known {
    /// The name is the static table's.
    pub name: bool,
    /// The value is the static table's.
    pub value: bool,
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

pub use super::decoder::Decoder;

/// A connection's HPACK encoder for response blocks, written here rather
/// than taken from `loona-hpack`: its encoder looks every field up in the
/// whole static and dynamic table by comparing bytes (measured by
/// callgrind: 43 % of the server's instructions per HTTP/2 request), while
/// a server's response fields are few and known. Names of the static table
/// are sent by index (found by length, then one case-insensitive compare;
/// the handler's canonical case is lowered on the way); the fields whose
/// values repeat from response to response (server, content-type,
/// accept-ranges, cache-control, vary, content-encoding, date) enter the
/// dynamic table and are then sent as one index; every other field is a
/// literal without indexing. No Huffman coding (CPU before octets). The
/// table never grows past the peer's SETTINGS_HEADER_TABLE_SIZE (nor past
/// 4096 octets); a change is announced at the start of the next block.
#[derive(Debug)]
pub struct Encoder {
    /// The dynamic table, newest first (HPACK index 62 is `table[0]`).
    table: std::collections::VecDeque<Entry>,
    /// Octets in the table (RFC 7541 §4.1: name + value + 32 per entry).
    used: usize,
    size: usize,
    /// A size update to send at the start of the next block.
    size_update: Option<usize>,
    /// Counts the changes of the state above ([`Encoder::generation`]).
    generation: u64,
}

/// A dynamic-table entry: its name by static index, and its value.
#[derive(Debug)]
struct Entry {
    name: u8,
    value: Vec<u8>,
    size: usize,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

/// The static table's names (RFC 7541 Appendix A) from index 15 on, by
/// length: the index of `name` (any case), or 0.
fn static_name(name: &[u8]) -> u8 {
    // The spellings httplab's handler writes, by plain compares first.
    match name {
        b"Content-Length" => return 28,
        b"Content-Type" => return 31,
        b"Date" => return 33,
        b"Server" => return 54,
        b"Last-Modified" => return 44,
        b"ETag" => return 34,
        b"Accept-Ranges" => return 18,
        b"Vary" => return 59,
        b"Cache-Control" => return 24,
        b"Content-Range" => return 30,
        b"Content-Encoding" => return 26,
        b"Location" => return 46,
        b"Allow" => return 22,
        _ => {}
    }
    let candidates: &[(&[u8], u8)] = match name.len() {
        3 => &[(b"age", 21), (b"via", 60)],
        4 => &[
            (b"date", 33),
            (b"etag", 34),
            (b"from", 37),
            (b"host", 38),
            (b"link", 45),
            (b"vary", 59),
        ],
        5 => &[(b"allow", 22), (b"range", 50)],
        6 => &[
            (b"accept", 19),
            (b"cookie", 32),
            (b"expect", 35),
            (b"server", 54),
        ],
        7 => &[(b"expires", 36), (b"referer", 51), (b"refresh", 52)],
        8 => &[(b"if-match", 39), (b"if-range", 42), (b"location", 46)],
        10 => &[(b"set-cookie", 55), (b"user-agent", 58)],
        11 => &[(b"retry-after", 53)],
        12 => &[(b"content-type", 31), (b"max-forwards", 47)],
        13 => &[
            (b"accept-ranges", 18),
            (b"authorization", 23),
            (b"cache-control", 24),
            (b"content-range", 30),
            (b"if-none-match", 41),
            (b"last-modified", 44),
        ],
        14 => &[(b"accept-charset", 15), (b"content-length", 28)],
        15 => &[(b"accept-encoding", 16), (b"accept-language", 17)],
        16 => &[
            (b"content-encoding", 26),
            (b"content-language", 27),
            (b"content-location", 29),
            (b"www-authenticate", 61),
        ],
        17 => &[(b"if-modified-since", 40), (b"transfer-encoding", 57)],
        18 => &[(b"proxy-authenticate", 48)],
        19 => &[
            (b"content-disposition", 25),
            (b"if-unmodified-since", 43),
            (b"proxy-authorization", 49),
        ],
        25 => &[(b"strict-transport-security", 56)],
        27 => &[(b"access-control-allow-origin", 20)],
        _ => &[],
    };
    // Any other case: the case-insensitive compare, of the candidates
    // with the same first letter.
    let first = name.first().map_or(0, u8::to_ascii_lowercase);
    candidates
        .iter()
        .filter(|(n, _)| n[0] == first)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(0, |&(_, i)| i)
}

/// Name of static-table entry `index` (1–61), for an entry's size.
fn static_name_of(index: u8) -> &'static [u8] {
    usize::from(index)
        .checked_sub(1)
        .and_then(|i| STATIC.get(i))
        .map_or(b"", |(name, _)| name)
}

/// Whether a field with static name `index` enters the dynamic table:
/// the response fields whose values repeat across responses.
fn indexed(index: u8) -> bool {
    matches!(index, 18 | 24 | 26 | 31 | 33 | 54 | 59)
}

impl Encoder {
    /// An encoder with the protocol's default table size.
    pub fn new() -> Encoder {
        Encoder {
            table: std::collections::VecDeque::new(),
            used: 0,
            size: DEFAULT_TABLE_SIZE,
            size_update: None,
            generation: 0,
        }
    }

    /// Changes whenever the encoder's state changes (an entry added, the
    /// table resized, a size update owed or sent). Encoding is a function of
    /// the state and the fields, so a block encoded without changing the
    /// generation is what the same fields encode to for as long as the
    /// generation stays the same: a caller may keep and reuse it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the table never grows past it
    /// (nor past 4096 octets); a change is announced at the start of the
    /// next block (RFC 7541 §4.2).
    pub fn set_peer_table_size(&mut self, n: u32) {
        let n = (n as usize).min(DEFAULT_TABLE_SIZE);
        if n != self.size {
            self.generation += 1;
            self.size = n;
            self.evict(0);
            // Several changes between blocks: the last one counts (a
            // smaller intermediate one was never used).
            self.size_update = Some(n);
        }
    }

    /// Drops the oldest entries until `room` more octets fit.
    fn evict(&mut self, room: usize) {
        while self.used + room > self.size {
            match self.table.pop_back() {
                Some(e) => self.used -= e.size,
                None => break,
            }
        }
    }

    /// Starts a block in `out` (the owed size update, if any).
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some(n) = self.size_update.take() {
            self.generation += 1;
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

    /// A field; `name` in any case (sent in lower case, as HTTP/2 requires).
    pub fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let index = static_name(name);
        if index == 0 {
            // Literal without indexing, new name.
            out.push(0x00);
            integer(out, 7, 0x00, name.len());
            out.extend(name.iter().map(u8::to_ascii_lowercase));
            string(out, value);
            return;
        }
        if indexed(index) {
            if let Some(i) = self
                .table
                .iter()
                .position(|e| e.name == index && e.value == value)
            {
                // Indexed field of the dynamic table.
                integer(out, 7, 0x80, 62 + i);
                return;
            }
            let size = field_size(static_name_of(index), value);
            if size <= self.size {
                // Literal with incremental indexing, indexed name.
                self.generation += 1;
                self.evict(size);
                self.table.push_front(Entry {
                    name: index,
                    value: value.to_vec(),
                    size,
                });
                self.used += size;
                integer(out, 6, 0x40, index as usize);
                string(out, value);
                return;
            }
        }
        // Literal without indexing, indexed name.
        integer(out, 4, 0x00, index as usize);
        string(out, value);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::Error;

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

    /// The encoder's name lookup agrees with the static table for every
    /// name it covers (index 15 on), in lower case and in the handler's
    /// canonical case.
    #[test]
    fn static_names_are_the_static_tables() {
        for (i, (name, _)) in STATIC.iter().enumerate().skip(14) {
            let index = u8::try_from(i + 1).unwrap();
            assert_eq!(
                static_name(name),
                index,
                "{}",
                String::from_utf8_lossy(name)
            );
            let canonical: Vec<u8> = name
                .split(|&b| b == b'-')
                .map(|w| {
                    let mut w = w.to_vec();
                    w[0] = w[0].to_ascii_uppercase();
                    w
                })
                .collect::<Vec<_>>()
                .join(&b'-');
            assert_eq!(static_name(&canonical), index);
            assert_eq!(static_name_of(index), *name);
        }
        assert_eq!(static_name(b"ETag"), 34);
        assert_eq!(static_name(b"x-custom"), 0);
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
        // The repeated fields are one index each once in the table.
        let mut b = Vec::new();
        e.begin(&mut b);
        e.status(200, &mut b);
        e.field(b"Server", b"httplab", &mut b);
        e.field(b"Content-Type", b"text/plain", &mut b);
        let first = b.len();
        decoded(&mut d, &b, usize::MAX);
        b.clear();
        e.begin(&mut b);
        e.status(200, &mut b);
        e.field(b"Server", b"httplab", &mut b);
        e.field(b"Content-Type", b"text/plain", &mut b);
        assert_eq!(b.len(), 3, "{first} octets, then {b:?}");
        let (h, _) = decoded(&mut d, &b, usize::MAX);
        assert_eq!(h[2], ("content-type".to_string(), "text/plain".to_string()));
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
    fn response_blocks_decode_alike_under_table_pressure() {
        // Many distinct values of indexed fields (the table evicts), custom
        // names in any case, and table sizes changed between blocks: every
        // block decodes to the fields given, in lower case.
        let mut e = Encoder::new();
        let mut d = Decoder::new();
        for i in 0..400u32 {
            if i % 97 == 50 {
                e.set_peer_table_size([0, 100, 4096, 1000][(i / 97) as usize % 4]);
            }
            let date = format!("Sun, 29 Nov 2026 00:{:02}:{:02} GMT", i / 60 % 60, i % 60);
            let ctype = format!("type/{}", i % 13);
            let custom = "v".repeat((i % 200) as usize);
            let fields: [(&str, &str); 6] = [
                ("Date", &date),
                ("Content-Type", &ctype),
                ("Server", "httplab"),
                ("X-Test", &custom),
                ("ETag", "\"abc\""),
                ("Content-Length", "87"),
            ];
            let mut b = Vec::new();
            e.begin(&mut b);
            e.status(200, &mut b);
            for (n, v) in fields {
                e.field(n.as_bytes(), v.as_bytes(), &mut b);
            }
            let (h, size) = decoded(&mut d, &b, usize::MAX);
            assert_eq!(size, ListSize::Whole);
            assert_eq!(h[0], (":status".to_string(), "200".to_string()));
            for (got, (n, v)) in h[1..].iter().zip(fields) {
                assert_eq!(got, &(n.to_ascii_lowercase(), v.to_string()), "block {i}");
            }
            assert!(e.used <= e.size, "table {} over {}", e.used, e.size);
        }
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
