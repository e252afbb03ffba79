//! HTTP/1.1 framing shared by the server and the load generator.
//!
//! - [`request`]: server side — parsing and validating requests (on httparse).
//! - [`response`]: client side — parsing response heads and body framing
//!   (Content-Length, chunked, close-delimited).

#![forbid(unsafe_code)]

pub mod request;
pub mod response;
