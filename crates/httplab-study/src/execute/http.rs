//! What the study reads of HTTP itself: the status code of a server's
//! answer to its readiness probe (cleartext or over TLS).

use anyhow::{bail, Context as _, Result};

/// The status code of the start of an HTTP/1.x response (at least 12 bytes).
pub fn status_code(buf: &[u8]) -> Result<u16> {
    if buf.len() < 12 || !buf.starts_with(b"HTTP/1.") {
        bail!("not an HTTP response: {:?}", String::from_utf8_lossy(buf));
    }
    std::str::from_utf8(&buf[9..12])
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
        .context("bad status code")
}
