//! HTTP/3 frames (RFC 9114 §7): their types, the frames the server writes
//! on its control stream ([`control_preface`], [`goaway_frame`]), a bounded
//! reader, and the rules of where each may appear on a server's request
//! and control streams.
//!
//! [`FrameReader`] cuts a stream's octets into frames. The frames a stream
//! keeps whole (HEADERS on a request stream; SETTINGS, GOAWAY, MAX_PUSH_ID
//! and CANCEL_PUSH on the control stream) are handed over once complete, up
//! to a bound: a longer one is reported ([`Frame::TooLong`]) and skipped,
//! never buffered. Every other frame (DATA, unknown and reserved types) is
//! skipped as its octets arrive. So a stream's input costs at most one kept
//! frame of memory.
//!
//! Where frames may appear (RFC 9114 §4.1, §6.2.1, §7.2), for a server:
//! - request stream ([`RequestFrames`]): HEADERS, then DATA, then at most
//!   one trailing HEADERS; DATA before HEADERS or anything but unknown
//!   frames after the trailers is H3_FRAME_UNEXPECTED;
//! - control stream ([`ControlFrames`]): SETTINGS first (else
//!   H3_MISSING_SETTINGS) and only once; GOAWAY and MAX_PUSH_ID read;
//!   CANCEL_PUSH names a push this server never promised (H3_ID_ERROR);
//!   DATA and HEADERS are H3_FRAME_UNEXPECTED there;
//! - anywhere: PUSH_PROMISE (a client must not send it), SETTINGS, GOAWAY,
//!   MAX_PUSH_ID and CANCEL_PUSH on a request stream, and the types
//!   reserved for HTTP/2's frames (0x02, 0x06, 0x08, 0x09) are
//!   H3_FRAME_UNEXPECTED; unknown types (the reserved 0x1f·N + 0x21
//!   included) are ignored.

use super::{put_varint, setting, stream, varint, Error};

/// Frame types (RFC 9114 §7.2).
pub mod kind {
    /// DATA
    pub const DATA: u64 = 0x00;
    /// HEADERS
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID
    pub const MAX_PUSH_ID: u64 = 0x0d;
}

/// Writes a frame header: `kind` and the payload length `len`.
#[inline]
pub fn put_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    put_varint(out, kind);
    put_varint(out, len);
}

/// Whether `kind` is one of HTTP/2's frame types with no HTTP/3 meaning
/// (RFC 9114 §7.2.8: H3_FRAME_UNEXPECTED).
fn http2_only(kind: u64) -> bool {
    matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
}

/// The server's control stream opening: its type, then a SETTINGS frame
/// announcing a QPACK table of capacity 0, no blocked streams and
/// `max_field_section_size`.
pub fn control_preface(max_field_section_size: u64) -> Vec<u8> {
    let mut payload = Vec::with_capacity(16);
    for (id, v) in [
        (setting::QPACK_MAX_TABLE_CAPACITY, 0),
        (setting::QPACK_BLOCKED_STREAMS, 0),
        (setting::MAX_FIELD_SECTION_SIZE, max_field_section_size),
    ] {
        put_varint(&mut payload, id);
        put_varint(&mut payload, v);
    }
    let mut out = Vec::with_capacity(payload.len() + 4);
    put_varint(&mut out, stream::CONTROL);
    settings_frame(&mut out, &payload);
    out
}

/// A SETTINGS frame around `payload` (identifier and value pairs).
pub fn settings_frame(out: &mut Vec<u8>, payload: &[u8]) {
    put_head(out, kind::SETTINGS, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A GOAWAY frame naming `id` (RFC 9114 §5.2: the first request stream
/// not processed).
pub fn goaway_frame(out: &mut Vec<u8>, id: u64) {
    let mut p = Vec::with_capacity(8);
    put_varint(&mut p, id);
    put_head(out, kind::GOAWAY, p.len() as u64);
    out.extend_from_slice(&p);
}

/// A frame out of [`FrameReader::next`].
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A kept frame, whole.
    Whole {
        /// Its type.
        kind: u64,
        /// Its payload.
        payload: &'a [u8],
    },
    /// A skipped frame's header (its payload is skipped as it arrives).
    Skipped {
        /// Its type.
        kind: u64,
        /// Its payload's length.
        len: u64,
    },
    /// A kept frame longer than the bound (its payload is skipped).
    TooLong {
        /// Its type.
        kind: u64,
        /// Its payload's length.
        len: u64,
    },
}

/// See the module docs. The buffer keeps its capacity across
/// [`FrameReader::reset`], so a reader can serve stream after stream.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Where the unread octets start in `buf`.
    at: usize,
    /// Octets of a skipped payload still to come.
    skip: u64,
}

impl FrameReader {
    /// Forgets everything read (the buffer's capacity kept).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.at = 0;
        self.skip = 0;
    }

    /// Adds the stream's next octets (those of a skipped payload dropped).
    pub fn push(&mut self, mut chunk: &[u8]) {
        if self.skip > 0 {
            let n = (chunk.len() as u64).min(self.skip) as usize;
            self.skip -= n as u64;
            chunk = &chunk[n..];
        }
        if chunk.is_empty() {
            return;
        }
        if self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        } else if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Whether the stream may end here: no frame begun and not finished.
    pub fn at_boundary(&self) -> bool {
        self.at == self.buf.len() && self.skip == 0
    }

    /// The next frame: whole when `keep(kind)` and its payload is at most
    /// `max` octets, else its header only. None: more octets are needed.
    pub fn next(&mut self, keep: impl Fn(u64) -> bool, max: u64) -> Option<Frame<'_>> {
        let rest = &self.buf[self.at..];
        let (kind, a) = varint(rest)?;
        let (len, b) = varint(&rest[a..])?;
        let head = a + b;
        let avail = (rest.len() - head) as u64;
        if keep(kind) && len <= max {
            if avail < len {
                return None;
            }
            let from = self.at + head;
            self.at = from + len as usize;
            return Some(Frame::Whole {
                kind,
                payload: &self.buf[from..self.at],
            });
        }
        let taken = avail.min(len);
        self.at += head + taken as usize;
        self.skip = len - taken;
        Some(if keep(kind) {
            Frame::TooLong { kind, len }
        } else {
            Frame::Skipped { kind, len }
        })
    }
}

/// What a request-stream frame is, in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The request's HEADERS.
    Headers,
    /// A DATA frame of its body.
    Data,
    /// The trailing HEADERS.
    Trailers,
    /// An unknown frame, ignored.
    Ignored,
}

/// The frame order of a request stream (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestFrames {
    /// Nothing yet.
    #[default]
    Start,
    /// After the HEADERS.
    Body,
    /// After the trailers.
    Done,
}

impl RequestFrames {
    /// The frame of `kind` at this point; an error is a connection error.
    pub fn frame(&mut self, kind: u64) -> Result<Request, Error> {
        let next = match (kind, *self) {
            (kind::HEADERS, RequestFrames::Start) => (RequestFrames::Body, Request::Headers),
            (kind::HEADERS, RequestFrames::Body) => (RequestFrames::Done, Request::Trailers),
            (kind::DATA, RequestFrames::Body) => (RequestFrames::Body, Request::Data),
            (kind::HEADERS | kind::DATA, _) => return Err(Error::FrameUnexpected),
            (
                kind::CANCEL_PUSH
                | kind::SETTINGS
                | kind::PUSH_PROMISE
                | kind::GOAWAY
                | kind::MAX_PUSH_ID,
                _,
            ) => return Err(Error::FrameUnexpected),
            (k, _) if http2_only(k) => return Err(Error::FrameUnexpected),
            (_, s) => (s, Request::Ignored),
        };
        *self = next.0;
        Ok(next.1)
    }
}

/// What a control-stream frame is, in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The SETTINGS (first frame).
    Settings,
    /// A GOAWAY: the client will not accept pushes beyond an ID (this
    /// server never pushes).
    Goaway,
    /// A MAX_PUSH_ID (this server never pushes).
    MaxPushId,
    /// An unknown frame, ignored.
    Ignored,
}

/// The frame order of the peer's control stream (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControlFrames {
    settings_seen: bool,
}

impl ControlFrames {
    /// Whether the control stream's frames keep `kind` whole.
    pub fn keeps(kind: u64) -> bool {
        matches!(
            kind,
            kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH
        )
    }

    /// The frame of `kind` at this point; an error is a connection error.
    pub fn frame(&mut self, kind: u64) -> Result<Control, Error> {
        if !self.settings_seen {
            if kind != kind::SETTINGS {
                return Err(Error::MissingSettings);
            }
            self.settings_seen = true;
            return Ok(Control::Settings);
        }
        match kind {
            kind::GOAWAY => Ok(Control::Goaway),
            kind::MAX_PUSH_ID => Ok(Control::MaxPushId),
            kind::CANCEL_PUSH => Err(Error::IdError),
            kind::SETTINGS | kind::DATA | kind::HEADERS | kind::PUSH_PROMISE => {
                Err(Error::FrameUnexpected)
            }
            k if http2_only(k) => Err(Error::FrameUnexpected),
            _ => Ok(Control::Ignored),
        }
    }
}

/// A payload holding exactly one variable-length integer (GOAWAY,
/// MAX_PUSH_ID, CANCEL_PUSH); else H3_FRAME_ERROR.
pub fn single_varint(payload: &[u8]) -> Result<u64, Error> {
    match varint(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(Error::FrameError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_only(k: u64) -> bool {
        k == kind::HEADERS
    }

    #[test]
    fn kept_frames_come_whole_across_chunks() {
        let mut wire = Vec::new();
        put_head(&mut wire, kind::HEADERS, 3);
        wire.extend_from_slice(b"abc");
        put_head(&mut wire, 0x21, 2); // reserved type: skipped
        wire.extend_from_slice(b"zz");
        put_head(&mut wire, kind::DATA, 4);
        wire.extend_from_slice(b"body");
        // Every split of the input gives the same frames.
        for cut in 0..wire.len() {
            let mut r = FrameReader::default();
            let mut got = Vec::new();
            for part in [&wire[..cut], &wire[cut..]] {
                r.push(part);
                while let Some(f) = r.next(headers_only, 16) {
                    got.push(match f {
                        Frame::Whole { kind, payload } => (kind, payload.to_vec()),
                        Frame::Skipped { kind, len } => (kind, vec![len as u8]),
                        Frame::TooLong { .. } => panic!("too long"),
                    });
                }
            }
            assert!(r.at_boundary(), "{cut}");
            assert_eq!(
                got,
                vec![(1, b"abc".to_vec()), (0x21, vec![2]), (0, vec![4])],
                "{cut}"
            );
        }
    }

    #[test]
    fn a_kept_frame_over_the_bound_is_skipped_not_buffered() {
        let mut r = FrameReader::default();
        let mut wire = Vec::new();
        put_head(&mut wire, kind::HEADERS, 100_000);
        r.push(&wire);
        assert_eq!(
            r.next(headers_only, 1000),
            Some(Frame::TooLong {
                kind: kind::HEADERS,
                len: 100_000
            })
        );
        assert!(!r.at_boundary());
        r.push(&vec![0u8; 99_999]);
        assert!(r.buf.capacity() < 1000, "the payload was not kept");
        assert!(!r.at_boundary());
        r.push(&[0, 0x21, 0]);
        assert_eq!(
            r.next(headers_only, 1000),
            Some(Frame::Skipped { kind: 0x21, len: 0 })
        );
        assert!(r.at_boundary());
        r.reset();
        r.push(&[0x01]);
        assert_eq!(r.next(headers_only, 1000), None, "a cut header waits");
        assert!(!r.at_boundary());
    }

    #[test]
    fn request_frame_order() {
        let mut s = RequestFrames::default();
        assert_eq!(s.frame(0x21), Ok(Request::Ignored));
        assert_eq!(s.frame(kind::HEADERS), Ok(Request::Headers));
        assert_eq!(s.frame(kind::DATA), Ok(Request::Data));
        assert_eq!(s.frame(0xff), Ok(Request::Ignored));
        assert_eq!(s.frame(kind::DATA), Ok(Request::Data));
        assert_eq!(s.frame(kind::HEADERS), Ok(Request::Trailers));
        assert_eq!(s.frame(kind::DATA), Err(Error::FrameUnexpected));
        let mut s = RequestFrames::default();
        assert_eq!(s.frame(kind::DATA), Err(Error::FrameUnexpected));
        let mut s = RequestFrames::default();
        s.frame(kind::HEADERS).unwrap();
        s.frame(kind::HEADERS).unwrap();
        assert_eq!(s.frame(kind::HEADERS), Err(Error::FrameUnexpected));
        for k in [
            kind::CANCEL_PUSH,
            kind::SETTINGS,
            kind::PUSH_PROMISE,
            kind::GOAWAY,
            kind::MAX_PUSH_ID,
            0x02,
            0x06,
            0x08,
            0x09,
        ] {
            assert_eq!(
                RequestFrames::default().frame(k),
                Err(Error::FrameUnexpected),
                "{k}"
            );
        }
    }

    #[test]
    fn control_frame_order() {
        let mut c = ControlFrames::default();
        assert_eq!(c.frame(kind::GOAWAY), Err(Error::MissingSettings));
        let mut c = ControlFrames::default();
        assert_eq!(c.frame(0x21), Err(Error::MissingSettings));
        let mut c = ControlFrames::default();
        assert_eq!(c.frame(kind::SETTINGS), Ok(Control::Settings));
        assert_eq!(c.frame(kind::SETTINGS), Err(Error::FrameUnexpected));
        assert_eq!(c.frame(kind::GOAWAY), Ok(Control::Goaway));
        assert_eq!(c.frame(kind::MAX_PUSH_ID), Ok(Control::MaxPushId));
        assert_eq!(c.frame(0x21), Ok(Control::Ignored));
        assert_eq!(c.frame(kind::CANCEL_PUSH), Err(Error::IdError));
        for k in [
            kind::DATA,
            kind::HEADERS,
            kind::PUSH_PROMISE,
            0x02,
            0x06,
            0x08,
            0x09,
        ] {
            assert_eq!(c.frame(k), Err(Error::FrameUnexpected), "{k}");
        }
        assert!(ControlFrames::keeps(kind::SETTINGS) && !ControlFrames::keeps(kind::DATA));
    }

    #[test]
    fn single_varint_payloads() {
        assert_eq!(single_varint(&[0x04]), Ok(4));
        assert_eq!(single_varint(&[0x40, 0x04]), Ok(4));
        assert_eq!(single_varint(&[]), Err(Error::FrameError));
        assert_eq!(single_varint(&[0x04, 0x00]), Err(Error::FrameError));
        assert_eq!(single_varint(&[0x40]), Err(Error::FrameError));
    }
}
