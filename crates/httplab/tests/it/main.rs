//! Every integration test of httplab in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.
//!
//! Tests that start servers and load them take a turn from
//! `httplab_skip::serial` (shared with their module's, the network-namespace
//! run alone): the modules' tests run in this one process at once, and a
//! test that measures must not share the cores with another module's load.

mod cli_doc;
mod compare;
mod exit_status;
mod function_length;
mod live;
mod merge;
mod module_cycles;
mod netns;
mod processes;
mod reports_chromium;
mod source_scan;
