//! A passive tap on the bytes an HTTP/2 server sends: it reads only frame
//! headers (9 bytes) and the error code of RST_STREAM and GOAWAY frames, so
//! the report can count them exactly, by reason.
//!
//! Written by hand because the `h2` crate does not report them: a GOAWAY with
//! NO_ERROR (a server's graceful close) ends the connection as `Ok(())`, and a
//! RST_STREAM on a stream whose handle was already dropped is not surfaced at
//! all. This decodes no frame payload, no HPACK and no state: framing and
//! HPACK stay in `h2`. It also keeps the first bytes received, so a cleartext
//! target that answers in HTTP/1.1 can be named in the error.

/// Frame type of RST_STREAM (RFC 9113, 6.4).
const RST_STREAM: u8 = 0x3;
/// Frame type of SETTINGS (RFC 9113, 6.5).
const SETTINGS: u8 = 0x4;
/// Frame type of GOAWAY (RFC 9113, 6.8).
const GOAWAY: u8 = 0x7;

/// Error codes with a name (RFC 9113, 7); others count as `UNKNOWN`.
pub(crate) const REASONS: [&str; 15] = [
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
pub(crate) fn reason_index(code: u32) -> usize {
    (code as usize).min(REASONS.len() - 1)
}

/// What the tap saw on one connection.
#[derive(Debug, Clone)]
pub(crate) struct TapCounts {
    /// RST_STREAM frames received, by error code ([`REASONS`] index).
    pub rst: [u64; 15],
    /// GOAWAY frames received.
    pub goaway: u64,
    /// Error code of the last GOAWAY received.
    pub goaway_reason: u32,
    /// The server's first frame was SETTINGS: it speaks HTTP/2.
    pub spoke_h2: bool,
    /// The first bytes received (for "not an HTTP/2 server: got ...").
    pub first: [u8; 64],
    pub first_len: usize,
}

impl Default for TapCounts {
    fn default() -> TapCounts {
        TapCounts {
            rst: [0; 15],
            goaway: 0,
            goaway_reason: 0,
            spoke_h2: false,
            first: [0; 64],
            first_len: 0,
        }
    }
}

impl TapCounts {
    /// When the peer answered in HTTP/1.x: its first line.
    pub fn http1_line(&self) -> Option<String> {
        let b = &self.first[..self.first_len];
        if !b.starts_with(b"HTTP/") {
            return None;
        }
        let end = b
            .iter()
            .position(|&c| c == b'\r' || c == b'\n')
            .unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// The frame-header scanner.
#[derive(Debug, Default)]
pub(crate) struct FrameTap {
    /// Header (9 bytes) and the first payload bytes we read (up to 8).
    buf: [u8; 17],
    have: usize,
    /// Bytes wanted in `buf` before the current step completes (9, or 9 + k).
    need: usize,
    /// Payload bytes still to skip.
    skip: u64,
    frames: u64,
    pub counts: TapCounts,
}

impl FrameTap {
    pub fn new() -> FrameTap {
        FrameTap {
            need: 9,
            ..FrameTap::default()
        }
    }

    /// Feeds bytes received from the server, in order.
    pub fn feed(&mut self, mut data: &[u8]) {
        let c = &mut self.counts;
        if c.first_len < c.first.len() {
            let n = (c.first.len() - c.first_len).min(data.len());
            c.first[c.first_len..c.first_len + n].copy_from_slice(&data[..n]);
            c.first_len += n;
        }
        while !data.is_empty() {
            if self.skip > 0 {
                let n = (self.skip.min(data.len() as u64)) as usize;
                self.skip -= n as u64;
                data = &data[n..];
                continue;
            }
            let n = (self.need - self.have).min(data.len());
            self.buf[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have < self.need {
                break;
            }
            let len = u64::from(u32::from_be_bytes([
                0,
                self.buf[0],
                self.buf[1],
                self.buf[2],
            ]));
            let kind = self.buf[3];
            let want = match kind {
                RST_STREAM => 4,
                GOAWAY => 8,
                _ => 0,
            }
            .min(len as usize);
            if self.need == 9 && want > 0 {
                self.need = 9 + want;
                continue;
            }
            let got = self.need - 9;
            self.frame(kind, got);
            self.skip = len - got as u64;
            self.have = 0;
            self.need = 9;
        }
    }

    fn frame(&mut self, kind: u8, got: usize) {
        let c = &mut self.counts;
        if self.frames == 0 && kind == SETTINGS {
            c.spoke_h2 = true;
        }
        self.frames += 1;
        let b = &self.buf;
        match kind {
            RST_STREAM if got == 4 => {
                let code = u32::from_be_bytes([b[9], b[10], b[11], b[12]]);
                c.rst[reason_index(code)] += 1;
            }
            GOAWAY if got == 8 => {
                c.goaway += 1;
                c.goaway_reason = u32::from_be_bytes([b[13], b[14], b[15], b[16]]);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, 0];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn wire() -> Vec<u8> {
        let mut w = frame(SETTINGS, 0, &[0, 3, 0, 0, 0, 100]);
        w.extend(frame(0x1, 1, &[0x88; 20])); // HEADERS
        w.extend(frame(0x0, 1, &vec![b'x'; 70_000][..16_384])); // DATA
        w.extend(frame(RST_STREAM, 3, &8u32.to_be_bytes())); // CANCEL
        w.extend(frame(RST_STREAM, 5, &7u32.to_be_bytes())); // REFUSED_STREAM
        w.extend(frame(RST_STREAM, 7, &0x99u32.to_be_bytes())); // unknown
        let mut ga = 5u32.to_be_bytes().to_vec();
        ga.extend(0u32.to_be_bytes());
        ga.extend(b"bye");
        w.extend(frame(GOAWAY, 0, &ga));
        w
    }

    fn check(t: &FrameTap) {
        let c = &t.counts;
        assert!(c.spoke_h2);
        assert_eq!(c.rst[8], 1);
        assert_eq!(c.rst[7], 1);
        assert_eq!(c.rst[14], 1);
        assert_eq!(c.rst.iter().sum::<u64>(), 3);
        assert_eq!(c.goaway, 1);
        assert_eq!(c.goaway_reason, 0);
        assert_eq!(t.frames, 7);
        assert_eq!(c.http1_line(), None);
    }

    #[test]
    fn counts_frames_whole() {
        let mut t = FrameTap::new();
        t.feed(&wire());
        check(&t);
    }

    #[test]
    fn counts_frames_in_any_split() {
        let w = wire();
        for step in [1usize, 2, 3, 5, 7, 9, 13, 4096] {
            let mut t = FrameTap::new();
            for chunk in w.chunks(step) {
                t.feed(chunk);
            }
            check(&t);
        }
    }

    #[test]
    fn names_an_http1_answer() {
        let mut t = FrameTap::new();
        t.feed(b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\n\r\n");
        assert_eq!(
            t.counts.http1_line().as_deref(),
            Some("HTTP/1.1 400 Bad Request")
        );
        assert!(!t.counts.spoke_h2);
    }

    #[test]
    fn short_payloads_do_not_panic() {
        let mut t = FrameTap::new();
        t.feed(&frame(RST_STREAM, 1, &[0, 0]));
        t.feed(&frame(GOAWAY, 0, &[]));
        assert_eq!(t.counts.rst.iter().sum::<u64>(), 0);
        assert_eq!(t.counts.goaway, 0);
        assert_eq!(t.frames, 2);
    }
}
