//! Every integration test of httplab-merge in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.

mod common;
mod exact;
mod refusals;
mod stages;
