//! Every integration test of httplab-server in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.

mod conformance;
mod http2;
mod http3;
mod interop;
mod properties;
mod support;
mod tls;
