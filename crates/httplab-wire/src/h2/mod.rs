//! HTTP/2 framing and header compression (RFC 9113, RFC 7541), without I/O,
//! shared by the load generator's client connection (`httplab-load`'s
//! `h2proto.rs`) and the server's connection machine (`httplab-server`'s
//! `h2session.rs`): one codec for both ends.
//!
//! - this module: frame types, flags, error codes, SETTINGS identifiers, the
//!   connection preface, the 9-octet frame header ([`Head`]), padding
//!   ([`unpad`]), SETTINGS parameters ([`settings`]) and the connection
//!   errors ([`Error`]) with their codes;
//! - [`reader`]: [`FrameReader`], which cuts a byte stream into whole frames
//!   and refuses, before buffering it, any frame longer than the maximum
//!   frame size announced (FRAME_SIZE_ERROR): a connection's input costs at
//!   most one frame of memory;
//! - [`decode`]: [`decode::frame`], one whole frame as a typed [`Frame`]
//!   with the per-type rules of RFC 9113 §6 (lengths, stream 0 or not,
//!   padding) checked, for the server;
//! - [`hpack`]: header blocks. Decoding (`decoder.rs`, one pass over a
//!   block, Huffman strings decoded as met) keeps the dynamic table,
//!   refuses table size updates above
//!   the size announced, and stops handing fields on beyond a decoded
//!   header list size (the HPACK bomb: a small block naming a large table
//!   entry many times) while still reading the block to keep the table in
//!   step. Encoding: the client's request blocks, literal fields with
//!   static-table names and no compression state, encoded once per request
//!   ([`hpack::request_block`]); the server's response blocks with its
//!   own encoder ([`hpack::Encoder`]: static names by index, repeated
//!   values through the dynamic table, no Huffman);
//! - [`request`]: a server's typed [`crate::request::Request`] from a decoded
//!   request header list (pseudo-header rules of RFC 9113 §8.3), the same
//!   type the HTTP/1.1 parser produces, so one handler answers both.

pub mod decode;
mod decoder;
pub mod hpack;
pub mod reader;
pub mod request;
#[cfg(test)]
mod unhuffman;

pub use decode::Frame;
pub use reader::FrameReader;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame header length.
pub const HEAD: usize = 9;
/// The protocol's default (and smallest) SETTINGS_MAX_FRAME_SIZE.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE the protocol allows.
pub const MAX_MAX_FRAME: u32 = 16_777_215;
/// The protocol's initial flow-control window, before SETTINGS and
/// WINDOW_UPDATE.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest flow-control window (2^31 − 1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;
/// The protocol's default SETTINGS_HEADER_TABLE_SIZE.
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// Frame types (RFC 9113 §6).
pub mod frame {
    /// DATA
    pub const DATA: u8 = 0x0;
    /// HEADERS
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING
    pub const PING: u8 = 0x6;
    /// GOAWAY
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (RFC 9113 §6).
pub mod flag {
    /// END_STREAM (DATA, HEADERS).
    pub const END_STREAM: u8 = 0x1;
    /// ACK (SETTINGS, PING).
    pub const ACK: u8 = 0x1;
    /// END_HEADERS (HEADERS, PUSH_PROMISE, CONTINUATION).
    pub const END_HEADERS: u8 = 0x4;
    /// PADDED (DATA, HEADERS, PUSH_PROMISE).
    pub const PADDED: u8 = 0x8;
    /// PRIORITY (HEADERS).
    pub const PRIORITY: u8 = 0x20;
}

/// Error codes (RFC 9113 §7).
pub mod code {
    /// NO_ERROR
    pub const NO_ERROR: u32 = 0x0;
    /// PROTOCOL_ERROR
    pub const PROTOCOL_ERROR: u32 = 0x1;
    /// INTERNAL_ERROR
    pub const INTERNAL_ERROR: u32 = 0x2;
    /// FLOW_CONTROL_ERROR
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    /// SETTINGS_TIMEOUT
    pub const SETTINGS_TIMEOUT: u32 = 0x4;
    /// STREAM_CLOSED
    pub const STREAM_CLOSED: u32 = 0x5;
    /// FRAME_SIZE_ERROR
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    /// REFUSED_STREAM
    pub const REFUSED_STREAM: u32 = 0x7;
    /// CANCEL
    pub const CANCEL: u32 = 0x8;
    /// COMPRESSION_ERROR
    pub const COMPRESSION_ERROR: u32 = 0x9;
    /// CONNECT_ERROR
    pub const CONNECT_ERROR: u32 = 0xa;
    /// ENHANCE_YOUR_CALM
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
    /// INADEQUATE_SECURITY
    pub const INADEQUATE_SECURITY: u32 = 0xc;
    /// HTTP_1_1_REQUIRED
    pub const HTTP_1_1_REQUIRED: u32 = 0xd;
}

/// SETTINGS identifiers (RFC 9113 §6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// The names of HTTP/2 error codes, by code; codes beyond them count as the
/// last, UNKNOWN.
pub const REASONS: [&str; 15] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
    "UNKNOWN",
];

/// Index into [`REASONS`] of an error code.
pub fn reason_index(code: u32) -> usize {
    (code as usize).min(REASONS.len() - 1)
}

/// A connection error: input after which the connection cannot go on (the
/// machine queues a GOAWAY with [`Error::code`] and the driver closes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A frame or sequence of frames the protocol forbids (PROTOCOL_ERROR).
    Protocol(&'static str),
    /// A frame longer than announced, or of the wrong length for its type
    /// (FRAME_SIZE_ERROR).
    FrameSize,
    /// A header block the HPACK decoder refused, or one too large to keep
    /// (COMPRESSION_ERROR).
    Compression,
    /// More data than the windows allowed, or a window past 2^31 − 1
    /// (FLOW_CONTROL_ERROR).
    FlowControl,
    /// A stream id that was already closed (STREAM_CLOSED).
    StreamClosed(&'static str),
    /// The peer is abusing the protocol within its rules: floods of
    /// frames that cost the receiver work (ENHANCE_YOUR_CALM).
    Calm(&'static str),
}

impl Error {
    /// The error code a GOAWAY names.
    pub fn code(self) -> u32 {
        match self {
            Error::Protocol(_) => code::PROTOCOL_ERROR,
            Error::FrameSize => code::FRAME_SIZE_ERROR,
            Error::Compression => code::COMPRESSION_ERROR,
            Error::FlowControl => code::FLOW_CONTROL_ERROR,
            Error::StreamClosed(_) => code::STREAM_CLOSED,
            Error::Calm(_) => code::ENHANCE_YOUR_CALM,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Protocol(what) => write!(f, "HTTP/2 protocol error: {what}"),
            Error::FrameSize => write!(f, "HTTP/2 frame of a size not allowed"),
            Error::Compression => write!(f, "HTTP/2 header block could not be decoded"),
            Error::FlowControl => write!(f, "HTTP/2 flow-control window exceeded"),
            Error::StreamClosed(what) => write!(f, "HTTP/2 frame on a closed stream: {what}"),
            Error::Calm(what) => write!(f, "HTTP/2 peer abusing the protocol: {what}"),
        }
    }
}

impl std::error::Error for Error {}

/// A frame header (RFC 9113 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: usize,
    /// Frame type ([`frame`]).
    pub kind: u8,
    /// Flags ([`flag`]).
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// The header at the start of `f`; None when `f` is shorter than
    /// [`HEAD`].
    pub fn parse(f: &[u8]) -> Option<Head> {
        let h = f.get(..HEAD)?;
        Some(Head {
            len: frame_len(h),
            kind: h[3],
            flags: h[4],
            stream: be32(&h[5..]) & 0x7fff_ffff,
        })
    }

    /// Appends a frame header to `out`.
    pub fn write(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
        let l = (len as u32).to_be_bytes();
        out.extend_from_slice(&l[1..]);
        out.push(kind);
        out.push(flags);
        out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    }
}

/// Appends a whole frame (header and payload) to `out`.
pub fn write_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    Head::write(out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
}

/// Appends a WINDOW_UPDATE of `inc` octets for `stream` (0: the connection).
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, inc: u32) {
    Head::write(out, 4, frame::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&inc.to_be_bytes());
}

/// Appends a RST_STREAM with `code` for `stream`.
pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    Head::write(out, 4, frame::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a GOAWAY naming `last` (the last stream processed) and `code`.
pub fn write_goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    Head::write(out, 8, frame::GOAWAY, 0, 0);
    out.extend_from_slice(&(last & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a SETTINGS frame with `params` (identifier, value).
pub fn write_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    Head::write(out, 6 * params.len(), frame::SETTINGS, 0, 0);
    for (id, value) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// The big-endian 32-bit value at the start of `b` (at least 4 octets).
pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The payload length of the frame header at the start of `head` (at least
/// 3 octets).
pub fn frame_len(head: &[u8]) -> usize {
    (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2])
}

/// The payload without padding (and, with `priority`, for HEADERS, without
/// the priority fields).
pub fn unpad(flags: u8, payload: &[u8], priority: bool) -> Result<&[u8], Error> {
    let mut p = payload;
    let mut pad = 0usize;
    if flags & flag::PADDED != 0 {
        let (&n, rest) = p
            .split_first()
            .ok_or(Error::Protocol("padded frame without its length"))?;
        pad = n as usize;
        p = rest;
    }
    if priority && flags & flag::PRIORITY != 0 {
        p = p.get(5..).ok_or(Error::FrameSize)?;
    }
    if pad > p.len() {
        return Err(Error::Protocol("padding longer than the frame"));
    }
    Ok(&p[..p.len() - pad])
}

/// The parameters of a SETTINGS payload (identifier, value); FRAME_SIZE_ERROR
/// when its length is not a multiple of 6.
pub fn settings(payload: &[u8]) -> Result<impl Iterator<Item = (u16, u32)> + '_, Error> {
    if payload.len() % 6 != 0 {
        return Err(Error::FrameSize);
    }
    Ok(payload
        .chunks_exact(6)
        .map(|s| (u16::from_be_bytes([s[0], s[1]]), be32(&s[2..]))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip() {
        let mut out = Vec::new();
        Head::write(
            &mut out,
            70_000,
            frame::HEADERS,
            flag::END_HEADERS,
            0x8000_0003,
        );
        assert_eq!(out.len(), HEAD);
        let h = Head::parse(&out).unwrap();
        assert_eq!(
            h,
            Head {
                len: 70_000,
                kind: frame::HEADERS,
                flags: flag::END_HEADERS,
                stream: 3
            }
        );
        assert_eq!(Head::parse(&out[..8]), None);
    }

    #[test]
    fn padding_and_priority_are_removed() {
        assert_eq!(unpad(0, b"abc", true), Ok(&b"abc"[..]));
        assert_eq!(unpad(flag::PADDED, &[2, b'a', 0, 0], false), Ok(&b"a"[..]));
        let p = [1, 0, 0, 0, 3, 9, b'x', 0];
        assert_eq!(
            unpad(flag::PADDED | flag::PRIORITY, &p, true),
            Ok(&b"x"[..])
        );
        assert_eq!(
            unpad(flag::PADDED, &[3, 0], false),
            Err(Error::Protocol("padding longer than the frame"))
        );
        assert_eq!(
            unpad(flag::PADDED, &[], false),
            Err(Error::Protocol("padded frame without its length"))
        );
        assert_eq!(unpad(flag::PRIORITY, &[0, 0], true), Err(Error::FrameSize));
    }

    #[test]
    fn settings_are_read_in_sixes() {
        let mut out = Vec::new();
        write_settings(&mut out, &[(setting::MAX_CONCURRENT_STREAMS, 100), (9, 1)]);
        let v: Vec<_> = settings(&out[HEAD..]).unwrap().collect();
        assert_eq!(v, [(3, 100), (9, 1)]);
        assert!(settings(&[0; 7]).is_err());
    }

    #[test]
    fn reasons_name_codes() {
        assert_eq!(
            REASONS[reason_index(code::ENHANCE_YOUR_CALM)],
            "ENHANCE_YOUR_CALM"
        );
        assert_eq!(REASONS[reason_index(999)], "UNKNOWN");
        assert_eq!(Error::Calm("x").code(), code::ENHANCE_YOUR_CALM);
    }
}
