//! Purpose-built hostile servers: every run ends within its limits and
//! every failure lands in a named error class.

use crate::common;

use std::time::Instant;

use common::{load, Mode, TestServer};

fn run(mode: Mode, extra: &str) -> httplab_model::RunResult {
    let s = TestServer::start(mode);
    load(&format!(
        "--server 127.0.0.1 --port {} --num-conns 2 --timeout 2 {extra}",
        s.port()
    ))
}

#[test]
fn a_reply_that_streams_forever_is_cut_at_max_response_time() {
    let t = Instant::now();
    let r = run(Mode::EndlessChunked, "--max-response-time 1");
    // Generous bound: two 1 s limits in sequence, not the server's 60 s.
    assert!(t.elapsed().as_secs_f64() < 20.0, "{:?}", t.elapsed());
    assert_eq!(r.errors.response_timo, 2, "{:?}", r.errors);
    assert_eq!(r.errors.total, 2);
    assert_eq!(r.errors.client_timo, 0, "the bytes kept coming");
    assert_eq!(r.totals.replies, 0);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("Error detail: response-timo 2"), "{text}");
}

#[test]
fn a_duration_run_ends_at_its_drain_even_while_a_reply_streams() {
    let s = TestServer::start(Mode::EndlessChunked);
    let t = Instant::now();
    let r = load(&format!(
        "--server 127.0.0.1 --port {} --rate 2 --duration 0.5s --timeout 1",
        s.port()
    ));
    assert!(t.elapsed().as_secs_f64() < 20.0, "{:?}", t.elapsed());
    assert_eq!(r.totals.replies, 0);
    assert!(r.totals.connections >= 1);
}

#[test]
fn bytes_beyond_content_length_are_body_overrun() {
    let r = run(Mode::Overrun, "");
    assert_eq!(r.errors.body_overrun, 2, "{:?}", r.errors);
    assert_eq!(r.errors.other, 2);
    // The 10 announced bytes made a reply; the overrun is the error.
    assert_eq!(r.totals.replies, 2);
    assert_eq!(r.accuracy.framing_errors, 2);
}

#[test]
fn endless_headers_are_headers_too_large() {
    let r = run(Mode::EndlessHeaders, "");
    assert_eq!(r.errors.headers_too_large, 2, "{:?}", r.errors);
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn garbage_is_a_bad_status_line() {
    let r = run(Mode::Garbage, "");
    assert_eq!(r.errors.bad_status_line, 2, "{:?}", r.errors);
    assert_eq!(r.errors.other, 2);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("bad-status-line 2"), "{text}");
}

#[test]
fn broken_and_cut_chunks_are_named() {
    let r = run(Mode::BadChunk, "");
    assert_eq!(r.errors.bad_chunk, 2, "{:?}", r.errors);
    let r = run(Mode::CutChunk, "");
    assert_eq!(r.errors.truncated, 2, "{:?}", r.errors);
    let r = run(Mode::ShortBody, "");
    assert_eq!(r.errors.truncated, 2, "{:?}", r.errors);
}

#[test]
fn max_response_time_is_validated() {
    assert!(httplab_load::parse_args(["--max-response-time", "0"]).is_err());
    assert!(httplab_load::parse_args(["--max-response-time", "soon"]).is_err());
    let s = httplab_load::parse_args(["--max-response-time", "1.5"]).expect("parse");
    assert_eq!(s.max_response_time, Some(1.5));
}
