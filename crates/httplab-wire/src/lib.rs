//! HTTP framing shared by the server and the load generator, without I/O.
//!
//! - [`request`]: HTTP/1.1 server side — parsing and validating requests
//!   (on httparse).
//! - [`response`]: HTTP/1.1 client side — parsing response heads and body
//!   framing (Content-Length, chunked, close-delimited).
//! - [`h2`]: HTTP/2 for both ends — frames, a bounded frame reader, HPACK
//!   (loona-hpack with a faster Huffman pass) with a decoded-size bound, and
//!   the server's typed request from a decoded header list.
//! - [`h3`]: HTTP/3 for the server — frames, a bounded frame reader, the
//!   frame-order rules of a request and a control stream, SETTINGS, and
//!   QPACK with a table of capacity 0 (decoder with a decoded-size bound,
//!   response encoder).

#![forbid(unsafe_code)]

pub mod h2;
pub mod h3;
pub mod request;
pub mod response;
