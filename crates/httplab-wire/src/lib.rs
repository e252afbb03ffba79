//! HTTP framing shared by the server and the load generator, without I/O.
//!
//! - [`request`]: HTTP/1.1 server side — parsing and validating requests
//!   (on httparse).
//! - [`response`]: HTTP/1.1 client side — parsing response heads and body
//!   framing (Content-Length, chunked, close-delimited).
//! - [`h2`]: HTTP/2 for both ends — frames, a bounded frame reader, HPACK
//!   (the crate's own decoder and encoder) with a decoded-size bound, and the server's typed request from a decoded header list.
//! - [`h3`]: HTTP/3 for the server — frames, a bounded frame reader, the
//!   frame-order rules of a request and a control stream, SETTINGS, and
//!   QPACK with a table of capacity 0 (decoder with a decoded-size bound,
//!   response encoder).
//! - `huffman` (HPACK's and QPACK's Huffman decoder) and `prefix_int`
//!   (their prefix integers) serve both.

#![forbid(unsafe_code)]

pub mod h2;
pub mod h3;
mod huffman;
mod prefix_int;
pub mod request;
pub mod response;

/// Helpers for this crate's unit tests.
#[cfg(test)]
mod testutil {
    /// The octets a hex string spells, spaces ignored.
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
