//! Every integration test of httplab-load in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.
//! Kept apart, as binaries of their own: allocations (see each file).

mod common;
mod determinism;
mod hostile;
mod http2;
mod http2_interop;
mod http3;
mod http3_interop;
mod interop;
mod io_engines;
mod lifecycle;
mod live;
mod load;
mod overload;
mod self_check;
mod stages;
mod tls;
mod tls_wire;
mod window;
