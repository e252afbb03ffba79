//! Cutting a received byte stream into whole frames, bounded.

use super::{frame_len, Error, DEFAULT_MAX_FRAME, HEAD};

/// Cuts received bytes into whole frames (header and payload). A frame that
/// arrives in one piece is handed on from the caller's bytes without a copy;
/// only a frame split across reads is gathered, and a frame whose announced
/// length exceeds the maximum frame size is refused as soon as its header is
/// known (FRAME_SIZE_ERROR), before any of its payload is kept: a
/// connection's pending input never exceeds one frame.
#[derive(Debug)]
pub struct FrameReader {
    /// Bytes of a frame not yet complete (capacity kept).
    partial: Vec<u8>,
    max_frame: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameReader {
    /// A reader accepting frames with payloads of at most `max_frame` octets
    /// (the SETTINGS_MAX_FRAME_SIZE its connection announced).
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader {
            partial: Vec::new(),
            max_frame,
        }
    }

    /// Forgets a partial frame (the connection started over); keeps the
    /// buffer.
    pub fn clear(&mut self) {
        self.partial.clear();
    }

    /// Octets of an incomplete frame held.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Hands every complete frame in `data` (after the one an earlier call
    /// left incomplete) to `on`, in order, and keeps an incomplete one for
    /// the next call. Stops at the first error, `on`'s or a frame longer
    /// than the maximum ([`Error::FrameSize`]); the connection then ends.
    pub fn feed<E: From<Error>>(
        &mut self,
        mut data: &[u8],
        mut on: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        // Finish a frame started in an earlier read.
        while !self.partial.is_empty() {
            let take = (self.needed() - self.partial.len()).min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.needed() - HEAD > self.max_frame {
                return Err(Error::FrameSize.into());
            }
            if self.partial.len() < self.needed() {
                if data.is_empty() {
                    return Ok(());
                }
                continue;
            }
            let r = on(&self.partial);
            self.partial.clear();
            r?;
        }
        while data.len() >= HEAD {
            let len = frame_len(data);
            if len > self.max_frame {
                return Err(Error::FrameSize.into());
            }
            if data.len() < HEAD + len {
                break;
            }
            on(&data[..HEAD + len])?;
            data = &data[HEAD + len..];
        }
        self.partial.extend_from_slice(data);
        if self.partial.len() >= HEAD && frame_len(&self.partial) > self.max_frame {
            return Err(Error::FrameSize.into());
        }
        Ok(())
    }

    /// How long the frame in `partial` is (header included), once its
    /// header is known.
    fn needed(&self) -> usize {
        if self.partial.len() < HEAD {
            HEAD
        } else {
            HEAD + frame_len(&self.partial)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{frame, write_frame};
    use super::*;

    fn frames(r: &mut FrameReader, data: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
        let mut v = Vec::new();
        r.feed(data, |f| {
            v.push(f.to_vec());
            Ok::<_, Error>(())
        })?;
        Ok(v)
    }

    #[test]
    fn frames_are_cut_whatever_the_reads() {
        let mut stream = Vec::new();
        write_frame(&mut stream, frame::PING, 0, 0, &[7; 8]);
        write_frame(&mut stream, frame::DATA, 0, 1, &[1; 300]);
        write_frame(&mut stream, frame::SETTINGS, 0, 0, &[]);
        for step in [1, 2, 8, 9, 10, 17, 100, stream.len()] {
            let mut r = FrameReader::default();
            let mut got = Vec::new();
            for piece in stream.chunks(step) {
                got.extend(frames(&mut r, piece).unwrap());
            }
            assert_eq!(got.concat(), stream, "step {step}");
            assert_eq!(got.len(), 3, "step {step}");
            assert_eq!(r.buffered(), 0);
        }
    }

    #[test]
    fn an_oversized_frame_is_refused_from_its_header() {
        let mut f = Vec::new();
        write_frame(&mut f, frame::DATA, 0, 1, &[0; 101]);
        // Whole, and with only its header (nothing of the payload is kept).
        let mut r = FrameReader::new(100);
        assert_eq!(frames(&mut r, &f), Err(Error::FrameSize));
        let mut r = FrameReader::new(100);
        assert_eq!(frames(&mut r, &f[..HEAD]), Err(Error::FrameSize));
        let mut r = FrameReader::new(100);
        assert_eq!(frames(&mut r, &f[..4]).map(|v| v.len()), Ok(0));
        assert_eq!(frames(&mut r, &f[4..HEAD]), Err(Error::FrameSize));
        // The default maximum: 16 384 octets.
        let mut big = vec![0u8; HEAD];
        big[..3].copy_from_slice(&[0x00, 0x40, 0x01]);
        assert_eq!(
            frames(&mut FrameReader::default(), &big),
            Err(Error::FrameSize)
        );
    }

    #[test]
    fn an_error_of_the_callee_stops_the_cut() {
        let mut stream = Vec::new();
        write_frame(&mut stream, frame::PING, 0, 0, &[7; 8]);
        write_frame(&mut stream, frame::PING, 0, 0, &[8; 8]);
        let mut r = FrameReader::default();
        let mut n = 0;
        let e = r.feed(&stream, |_| {
            n += 1;
            Err(Error::Protocol("no"))
        });
        assert_eq!((e, n), (Err(Error::Protocol("no")), 1));
    }
}
