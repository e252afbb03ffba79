//! HTTP/3 framing and QPACK (RFC 9114, RFC 9204), without I/O, for the
//! server's HTTP/3 engine (`httplab-server`'s `http3.rs`, on quinn's QUIC
//! streams).
//!
//! Why by hand: the `h3` crate's QPACK encoder Huffman-codes every value
//! bit by bit into fresh buffers (28 400 instructions per 87-byte
//! response, callgrind), its decoder took 8 900 more, and its request and
//! response types (`http::Request`, `HeaderMap`) cost the server another
//! 7 000 to convert, where quinn's whole packet path took about 6 400:
//! 76 000 instructions per request against ngtcp2's example server's
//! 21 700 (`bench/callgrind-h3 5000`). Announcing a QPACK dynamic table
//! of capacity 0 (as this server does) leaves a small codec: static-table
//! references and literals. With it, and the crate's own Huffman decoder,
//! the server costs about 20 200 instructions per request (BENCHMARKS.md,
//! "Where an HTTP/3 request's instructions go" and "HTTP/3 within 1.2× of
//! ngtcp2").
//!
//! - this module: error codes ([`Error`], [`code`]), stream types
//!   ([`stream`]), SETTINGS identifiers and decoding ([`Settings`]) and QUIC
//!   variable-length integers ([`varint`], [`put_varint`]);
//! - [`frame`]: the frame types, the frames the server writes (its control
//!   stream's SETTINGS, GOAWAY), a [`frame::FrameReader`] that hands over
//!   the frames a stream keeps whole (bounded) and skips the rest (DATA,
//!   unknown and reserved types) without buffering them, and the order
//!   rules of RFC 9114 §4.1 and §6.2.1 for a server's request and control
//!   streams;
//! - [`qpack`]: the static table (RFC 9204 Appendix A), the field-section
//!   decoder for a table of capacity 0 (Huffman strings through the
//!   decoder HTTP/2 uses: HPACK and QPACK share the code) with the decoded
//!   size bound of RFC 9114 §4.2.2, and the response encoder (static
//!   references, literals without Huffman, connection-specific fields
//!   dropped).
//!
//! A request's fields go to the same [`crate::h2::request::RequestFields`]
//! HTTP/2 uses: RFC 9114 §4.3 has RFC 9113 §8.3's rules.

pub mod frame;
pub mod qpack;

/// Error codes (RFC 9114 §8.1, RFC 9204 §6).
pub mod code {
    /// H3_NO_ERROR
    pub const NO_ERROR: u64 = 0x100;
    /// H3_GENERAL_PROTOCOL_ERROR
    pub const GENERAL_PROTOCOL_ERROR: u64 = 0x101;
    /// H3_INTERNAL_ERROR
    pub const INTERNAL_ERROR: u64 = 0x102;
    /// H3_STREAM_CREATION_ERROR
    pub const STREAM_CREATION_ERROR: u64 = 0x103;
    /// H3_CLOSED_CRITICAL_STREAM
    pub const CLOSED_CRITICAL_STREAM: u64 = 0x104;
    /// H3_FRAME_UNEXPECTED
    pub const FRAME_UNEXPECTED: u64 = 0x105;
    /// H3_FRAME_ERROR
    pub const FRAME_ERROR: u64 = 0x106;
    /// H3_EXCESSIVE_LOAD
    pub const EXCESSIVE_LOAD: u64 = 0x107;
    /// H3_ID_ERROR
    pub const ID_ERROR: u64 = 0x108;
    /// H3_SETTINGS_ERROR
    pub const SETTINGS_ERROR: u64 = 0x109;
    /// H3_MISSING_SETTINGS
    pub const MISSING_SETTINGS: u64 = 0x10a;
    /// H3_REQUEST_REJECTED
    pub const REQUEST_REJECTED: u64 = 0x10b;
    /// H3_REQUEST_CANCELLED
    pub const REQUEST_CANCELLED: u64 = 0x10c;
    /// H3_REQUEST_INCOMPLETE
    pub const REQUEST_INCOMPLETE: u64 = 0x10d;
    /// H3_MESSAGE_ERROR
    pub const MESSAGE_ERROR: u64 = 0x10e;
    /// QPACK_DECOMPRESSION_FAILED
    pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
    /// QPACK_ENCODER_STREAM_ERROR
    pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
    /// QPACK_DECODER_STREAM_ERROR
    pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub mod stream {
    /// The control stream.
    pub const CONTROL: u64 = 0x00;
    /// A push stream (server to client only).
    pub const PUSH: u64 = 0x01;
    /// The QPACK encoder stream.
    pub const QPACK_ENCODER: u64 = 0x02;
    /// The QPACK decoder stream.
    pub const QPACK_DECODER: u64 = 0x03;
}

/// SETTINGS identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub mod setting {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// SETTINGS_QPACK_BLOCKED_STREAMS
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
}

/// A connection error of HTTP/3 or QPACK: the connection is closed with
/// its [`Error::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A frame not allowed on its stream or at its place there.
    FrameUnexpected,
    /// A frame whose payload does not hold exactly its fields, or a stream
    /// ending inside a frame.
    FrameError,
    /// A frame or stream beyond the bounds this server keeps to.
    ExcessiveLoad,
    /// A push ID the server never used (it never pushes).
    IdError,
    /// A SETTINGS frame with an HTTP/2 identifier or a repeated one.
    SettingsError,
    /// A control stream whose first frame is not SETTINGS.
    MissingSettings,
    /// A stream the client may not open (a push stream, a second control
    /// or QPACK stream).
    StreamCreation,
    /// The control stream or a QPACK stream closed.
    ClosedCriticalStream,
    /// A field section QPACK cannot decode with a table of capacity 0.
    DecompressionFailed,
    /// An encoder-stream instruction beyond a table of capacity 0.
    EncoderStream,
}

impl Error {
    /// The error's code on the wire.
    pub fn code(self) -> u64 {
        match self {
            Error::FrameUnexpected => code::FRAME_UNEXPECTED,
            Error::FrameError => code::FRAME_ERROR,
            Error::ExcessiveLoad => code::EXCESSIVE_LOAD,
            Error::IdError => code::ID_ERROR,
            Error::SettingsError => code::SETTINGS_ERROR,
            Error::MissingSettings => code::MISSING_SETTINGS,
            Error::StreamCreation => code::STREAM_CREATION_ERROR,
            Error::ClosedCriticalStream => code::CLOSED_CRITICAL_STREAM,
            Error::DecompressionFailed => code::QPACK_DECOMPRESSION_FAILED,
            Error::EncoderStream => code::QPACK_ENCODER_STREAM_ERROR,
        }
    }
}

/// The largest QUIC variable-length integer (2^62 − 1).
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// The variable-length integer at the start of `b` (RFC 9000 §16) and the
/// octets it took; None when `b` holds only part of it.
#[inline]
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

/// Writes `v` (at most [`MAX_VARINT`]; larger values are written as it)
/// in the shortest variable-length encoding.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let v = v.min(MAX_VARINT);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// The SETTINGS a peer sent (RFC 9114 §7.2.4); unknown identifiers
/// ignored, as the RFC requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Settings {
    /// SETTINGS_MAX_FIELD_SECTION_SIZE; None: unlimited.
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (default 0).
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS (default 0).
    pub qpack_blocked_streams: u64,
}

impl Settings {
    /// A SETTINGS frame's payload: identifier and value pairs, each
    /// identifier at most once, none of HTTP/2's (0x00 and 0x02–0x05:
    /// H3_SETTINGS_ERROR); a cut pair is H3_FRAME_ERROR.
    pub fn decode(mut payload: &[u8]) -> Result<Settings, Error> {
        let mut s = Settings::default();
        // Identifiers seen among those with a meaning here or in HTTP/2
        // (bit i: identifier i); a repeat of any other is not tracked
        // beyond the last eight (unknown settings are ignored anyway).
        let mut seen = 0u64;
        let mut unknown = [u64::MAX; 8];
        let mut n_unknown = 0usize;
        while !payload.is_empty() {
            let (id, a) = varint(payload).ok_or(Error::FrameError)?;
            let (value, b) = varint(&payload[a..]).ok_or(Error::FrameError)?;
            payload = &payload[a + b..];
            if id < 64 {
                if seen & (1 << id) != 0 {
                    return Err(Error::SettingsError);
                }
                seen |= 1 << id;
            } else {
                if unknown.contains(&id) {
                    return Err(Error::SettingsError);
                }
                unknown[n_unknown % unknown.len()] = id;
                n_unknown += 1;
            }
            match id {
                0x00 | 0x02..=0x05 => return Err(Error::SettingsError),
                setting::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
                setting::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
                setting::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
                _ => {}
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_match_rfc_9000_examples() {
        // RFC 9000 §A.1's examples.
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (b, v) in cases {
            assert_eq!(varint(b), Some((v, b.len())));
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, b);
            // Cut short: not yet a value.
            assert_eq!(varint(&b[..b.len() - 1]), None);
        }
        // The two-octet encoding of 37 decodes too (not the shortest).
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(varint(&[]), None);
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            MAX_VARINT,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint(&out), Some((v, out.len())), "{v}");
        }
    }

    #[test]
    fn the_server_settings_decode_back() {
        let p = frame::control_preface(16 << 10);
        assert_eq!(p[0], stream::CONTROL as u8);
        let (kind, a) = varint(&p[1..]).unwrap();
        let (len, b) = varint(&p[1 + a..]).unwrap();
        assert_eq!(kind, frame::kind::SETTINGS);
        let payload = &p[1 + a + b..];
        assert_eq!(payload.len() as u64, len);
        let s = Settings::decode(payload).unwrap();
        assert_eq!(
            s,
            Settings {
                max_field_section_size: Some(16 << 10),
                qpack_max_table_capacity: 0,
                qpack_blocked_streams: 0,
            }
        );
    }

    #[test]
    fn settings_errors() {
        // HTTP/2 identifiers: H3_SETTINGS_ERROR.
        for id in [0x00u8, 0x02, 0x03, 0x04, 0x05] {
            assert_eq!(
                Settings::decode(&[id, 0]),
                Err(Error::SettingsError),
                "{id}"
            );
        }
        // A repeated identifier, known or not.
        assert_eq!(
            Settings::decode(&[0x06, 1, 0x06, 2]),
            Err(Error::SettingsError)
        );
        assert_eq!(
            Settings::decode(&[0x40, 0x21, 1, 0x40, 0x21, 2]),
            Err(Error::SettingsError)
        );
        // A cut pair.
        assert_eq!(Settings::decode(&[0x06]), Err(Error::FrameError));
        assert_eq!(Settings::decode(&[0x06, 0x40]), Err(Error::FrameError));
        // Unknown and reserved (0x1f * N + 0x21) identifiers are ignored.
        let s = Settings::decode(&[0x21, 5, 0x33, 1, 0x01, 0]).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(Settings::decode(&[]), Ok(Settings::default()));
    }

    #[test]
    fn goaway_names_the_stream() {
        let mut out = Vec::new();
        frame::goaway_frame(&mut out, 8);
        assert_eq!(out, [0x07, 0x01, 0x08]);
        out.clear();
        frame::goaway_frame(&mut out, 400);
        assert_eq!(out, [0x07, 0x02, 0x41, 0x90]);
    }

    #[test]
    fn every_error_has_its_code() {
        assert_eq!(Error::FrameUnexpected.code(), 0x105);
        assert_eq!(Error::FrameError.code(), 0x106);
        assert_eq!(Error::ExcessiveLoad.code(), 0x107);
        assert_eq!(Error::IdError.code(), 0x108);
        assert_eq!(Error::SettingsError.code(), 0x109);
        assert_eq!(Error::MissingSettings.code(), 0x10a);
        assert_eq!(Error::StreamCreation.code(), 0x103);
        assert_eq!(Error::ClosedCriticalStream.code(), 0x104);
        assert_eq!(Error::DecompressionFailed.code(), 0x200);
        assert_eq!(Error::EncoderStream.code(), 0x201);
    }
}
