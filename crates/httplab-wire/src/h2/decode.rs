//! One whole frame as a typed value, with the per-type rules of RFC 9113 §6
//! checked: what a frame may carry on stream 0 or on a stream, the lengths
//! fixed by its type, padding. What the frame means for the connection's
//! state (streams, windows, limits) is the machine's business.

use super::{be32, flag, frame, unpad, Error, Head};

/// A frame (the payload borrows the bytes it was decoded from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA: `data` without padding; `flow_len`, the whole payload, is what
    /// flow control counts.
    Data {
        /// Stream.
        stream: u32,
        /// END_STREAM.
        end_stream: bool,
        /// The data, padding removed.
        data: &'a [u8],
        /// Octets counted against the windows (padding included).
        flow_len: u32,
    },
    /// HEADERS: a header block fragment.
    Headers {
        /// Stream.
        stream: u32,
        /// END_STREAM.
        end_stream: bool,
        /// END_HEADERS: the block is complete.
        end_headers: bool,
        /// The fragment, padding and priority fields removed.
        fragment: &'a [u8],
        /// The stream it depends on, with the PRIORITY flag.
        depends_on: Option<u32>,
    },
    /// PRIORITY (deprecated by RFC 9113; read and ignored).
    Priority {
        /// Stream.
        stream: u32,
        /// The stream it depends on.
        depends_on: u32,
    },
    /// RST_STREAM.
    RstStream {
        /// Stream.
        stream: u32,
        /// Error code.
        code: u32,
    },
    /// SETTINGS: read the parameters with [`super::settings`] (the length
    /// is checked).
    Settings {
        /// ACK.
        ack: bool,
        /// The parameters, six octets each.
        payload: &'a [u8],
    },
    /// PUSH_PROMISE (only a server may send it).
    PushPromise {
        /// Stream.
        stream: u32,
    },
    /// PING.
    Ping {
        /// ACK.
        ack: bool,
        /// Opaque data, echoed in the ACK.
        data: [u8; 8],
    },
    /// GOAWAY.
    GoAway {
        /// The last stream the sender processed.
        last: u32,
        /// Error code.
        code: u32,
    },
    /// WINDOW_UPDATE (an increment of 0 is the machine's to refuse: a
    /// stream error on a stream, a connection error on stream 0).
    WindowUpdate {
        /// Stream (0: the connection).
        stream: u32,
        /// Increment.
        increment: u32,
    },
    /// CONTINUATION: the next fragment of a header block.
    Continuation {
        /// Stream.
        stream: u32,
        /// END_HEADERS.
        end_headers: bool,
        /// The fragment.
        fragment: &'a [u8],
    },
    /// A type this implementation does not know: ignored (RFC 9113 §4.1).
    Unknown {
        /// Its type.
        kind: u8,
    },
}

/// Decodes one whole frame `f` (header and payload, as [`super::FrameReader`]
/// hands it on). Every error is a connection error.
pub fn frame(f: &[u8]) -> Result<Frame<'_>, Error> {
    let head = Head::parse(f).ok_or(Error::FrameSize)?;
    let payload = f.get(super::HEAD..).ok_or(Error::FrameSize)?;
    if payload.len() != head.len {
        return Err(Error::FrameSize);
    }
    let Head {
        kind,
        flags,
        stream,
        ..
    } = head;
    let on_stream = |what: &'static str| {
        if stream == 0 {
            Err(Error::Protocol(what))
        } else {
            Ok(())
        }
    };
    let on_connection = |what: &'static str| {
        if stream != 0 {
            Err(Error::Protocol(what))
        } else {
            Ok(())
        }
    };
    Ok(match kind {
        frame::DATA => {
            on_stream("DATA on stream 0")?;
            Frame::Data {
                stream,
                end_stream: flags & flag::END_STREAM != 0,
                data: unpad(flags, payload, false)?,
                flow_len: payload.len() as u32,
            }
        }
        frame::HEADERS => {
            on_stream("HEADERS on stream 0")?;
            let depends_on = if flags & flag::PRIORITY != 0 {
                let at = usize::from(flags & flag::PADDED != 0);
                let p = payload.get(at..at + 4).ok_or(Error::FrameSize)?;
                Some(be32(p) & 0x7fff_ffff)
            } else {
                None
            };
            Frame::Headers {
                stream,
                end_stream: flags & flag::END_STREAM != 0,
                end_headers: flags & flag::END_HEADERS != 0,
                fragment: unpad(flags, payload, true)?,
                depends_on,
            }
        }
        frame::PRIORITY => {
            on_stream("PRIORITY on stream 0")?;
            if payload.len() != 5 {
                return Err(Error::FrameSize);
            }
            Frame::Priority {
                stream,
                depends_on: be32(payload) & 0x7fff_ffff,
            }
        }
        frame::RST_STREAM => {
            on_stream("RST_STREAM on stream 0")?;
            if payload.len() != 4 {
                return Err(Error::FrameSize);
            }
            Frame::RstStream {
                stream,
                code: be32(payload),
            }
        }
        frame::SETTINGS => {
            on_connection("SETTINGS on a stream")?;
            let ack = flags & flag::ACK != 0;
            if (ack && !payload.is_empty()) || payload.len() % 6 != 0 {
                return Err(Error::FrameSize);
            }
            Frame::Settings { ack, payload }
        }
        frame::PUSH_PROMISE => Frame::PushPromise { stream },
        frame::PING => {
            on_connection("PING on a stream")?;
            let data: [u8; 8] = payload.try_into().map_err(|_| Error::FrameSize)?;
            Frame::Ping {
                ack: flags & flag::ACK != 0,
                data,
            }
        }
        frame::GOAWAY => {
            on_connection("GOAWAY on a stream")?;
            if payload.len() < 8 {
                return Err(Error::FrameSize);
            }
            Frame::GoAway {
                last: be32(payload) & 0x7fff_ffff,
                code: be32(&payload[4..]),
            }
        }
        frame::WINDOW_UPDATE => {
            if payload.len() != 4 {
                return Err(Error::FrameSize);
            }
            Frame::WindowUpdate {
                stream,
                increment: be32(payload) & 0x7fff_ffff,
            }
        }
        frame::CONTINUATION => {
            on_stream("CONTINUATION on stream 0")?;
            Frame::Continuation {
                stream,
                end_headers: flags & flag::END_HEADERS != 0,
                fragment: payload,
            }
        }
        kind => Frame::Unknown { kind },
    })
}

#[cfg(test)]
mod tests {
    use super::super::{code, write_frame};
    use super::*;

    fn f(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        write_frame(&mut v, kind, flags, stream, payload);
        v
    }

    #[test]
    fn well_formed_frames_decode() {
        let d = f(
            frame::DATA,
            flag::PADDED | flag::END_STREAM,
            1,
            &[1, b'a', 0],
        );
        assert_eq!(
            frame(&d),
            Ok(Frame::Data {
                stream: 1,
                end_stream: true,
                data: b"a",
                flow_len: 3
            })
        );
        let h = f(
            frame::HEADERS,
            flag::PRIORITY | flag::END_HEADERS,
            3,
            &[0, 0, 0, 1, 16, 0x82],
        );
        assert_eq!(
            frame(&h),
            Ok(Frame::Headers {
                stream: 3,
                end_stream: false,
                end_headers: true,
                fragment: &[0x82],
                depends_on: Some(1)
            })
        );
        let p = f(frame::PING, flag::ACK, 0, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            frame(&p),
            Ok(Frame::Ping {
                ack: true,
                data: [1, 2, 3, 4, 5, 6, 7, 8]
            })
        );
        let g = f(frame::GOAWAY, 0, 0, &[0, 0, 0, 5, 0, 0, 0, 0xb, b'x']);
        assert_eq!(
            frame(&g),
            Ok(Frame::GoAway {
                last: 5,
                code: code::ENHANCE_YOUR_CALM
            })
        );
        assert_eq!(
            frame(&f(0xee, 0, 7, b"?")),
            Ok(Frame::Unknown { kind: 0xee })
        );
    }

    #[test]
    fn malformed_frames_are_connection_errors() {
        let proto = |s| Err(Error::Protocol(s));
        let cases: Vec<(Vec<u8>, Result<Frame<'static>, Error>)> = vec![
            (f(frame::DATA, 0, 0, b"x"), proto("DATA on stream 0")),
            (f(frame::HEADERS, 0, 0, b"x"), proto("HEADERS on stream 0")),
            (f(frame::PRIORITY, 0, 1, &[0; 4]), Err(Error::FrameSize)),
            (
                f(frame::PRIORITY, 0, 0, &[0; 5]),
                proto("PRIORITY on stream 0"),
            ),
            (f(frame::RST_STREAM, 0, 1, &[0; 5]), Err(Error::FrameSize)),
            (
                f(frame::RST_STREAM, 0, 0, &[0; 4]),
                proto("RST_STREAM on stream 0"),
            ),
            (f(frame::SETTINGS, 0, 1, &[]), proto("SETTINGS on a stream")),
            (
                f(frame::SETTINGS, flag::ACK, 0, &[0; 6]),
                Err(Error::FrameSize),
            ),
            (f(frame::SETTINGS, 0, 0, &[0; 5]), Err(Error::FrameSize)),
            (f(frame::PING, 0, 0, &[0; 7]), Err(Error::FrameSize)),
            (f(frame::PING, 0, 1, &[0; 8]), proto("PING on a stream")),
            (f(frame::GOAWAY, 0, 0, &[0; 7]), Err(Error::FrameSize)),
            (
                f(frame::WINDOW_UPDATE, 0, 0, &[0; 3]),
                Err(Error::FrameSize),
            ),
            (
                f(frame::CONTINUATION, 0, 0, b"x"),
                proto("CONTINUATION on stream 0"),
            ),
            (
                f(frame::DATA, flag::PADDED, 1, &[5, 0]),
                proto("padding longer than the frame"),
            ),
            (
                f(frame::HEADERS, flag::PRIORITY, 1, &[0, 0]),
                Err(Error::FrameSize),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(frame(&bytes), want, "{bytes:02x?}");
        }
        // A truncated frame (the reader never hands one on).
        let mut d = f(frame::DATA, 0, 1, b"xy");
        d.pop();
        assert_eq!(frame(&d), Err(Error::FrameSize));
    }
}
