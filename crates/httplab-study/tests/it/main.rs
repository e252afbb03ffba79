//! httplab-study's integration tests, one test binary: `cargo test -p httplab-study --test it`,
//! one module per topic (`… --test it MODULE::` runs one). One binary, not
//! one per file: each test binary links the whole dependency graph again.
//!
//! Tests that start servers and load them take a turn from
//! `httplab_skip::serial` (alone when they measure, else shared with their
//! module), as the modules' tests run in this one process at once.

mod common;
mod idle;
mod layers;
mod mine;
mod not_installed;
mod parse;
mod peers;
mod protocols;
mod study_e2e;
mod study_format;
mod tls;

/// Not a test: the helper server's entry point. The study tests run this
/// binary again as a `command` server with `--exact helper_http_server`
/// (see `common::helper_server_toml`), so it stays at the binary's root
/// under that name; without the helper's environment it returns at once.
#[test]
fn helper_http_server() {
    common::maybe_serve();
}
