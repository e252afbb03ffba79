//! The server's whole connection state machine and handler (request
//! parsing, keep-alive, pipelining, body draining, paths, ranges,
//! conditionals), driven without sockets over the fixture site. The input
//! is a byte stream a client sends, cut at points derived from its first
//! bytes. Checked: the output is a clean sequence of complete responses
//! (parsed back with the load generator's parser), a closing response is
//! the last, no byte from outside the root is sent, and the output does not
//! depend on how the input was cut.
#![no_main]
use std::time::{Duration, Instant};

use httplab_fuzz::{contains, head_flags, parse_responses, site, SECRET};
use httplab_server::testkit::Harness;
use httplab_server::ServerConfig;
use libfuzzer_sys::fuzz_target;

const KNOWN: &[u16] = &[
    200, 206, 301, 304, 400, 403, 404, 405, 408, 411, 412, 413, 414, 416, 431, 501, 505,
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (flags, cut, input) = (data[0], data[1], &data[2..]);
    let mut cfg = ServerConfig::for_root(&site().root);
    cfg.pipelining = flags & 1 == 0;
    cfg.keep_alive = flags & 2 == 0;
    cfg.list_dirs = flags & 4 != 0;
    cfg.pipeline_buffer = match (flags >> 3) & 3 {
        0 => 64 * 1024,
        1 => 4096,
        2 => 512,
        _ => 30_000,
    };
    cfg.max_requests_per_conn = if flags & 32 != 0 { Some(3) } else { None };
    cfg.max_body_drain = 4096;
    let limits = cfg.limits;
    let max_body = cfg.max_body_drain;
    let big_buffer = cfg.pipeline_buffer >= limits.max_head() + limits.max_headers + 2;
    let mut h = Harness::new(cfg).expect("harness");
    let now = Instant::now();

    // Whole.
    let mut whole = Vec::new();
    let mut c = h.connect(now);
    h.send(&mut c, input, now, &mut whole);
    h.close(&mut c, now, &mut whole);

    // Cut into pieces of 1..=cut+1 bytes (varying), same handler and Date.
    let mut split = Vec::new();
    let mut c = h.connect(now);
    let mut pos = 0usize;
    let mut k = usize::from(cut);
    while pos < input.len() {
        let n = (k % (usize::from(cut) + 1) + 1).min(input.len() - pos);
        h.send(&mut c, &input[pos..pos + n], now, &mut split);
        pos += n;
        k = k.wrapping_mul(31).wrapping_add(7);
    }
    h.close(&mut c, now, &mut split);
    assert!(whole == split, "output depends on how the input was cut");

    // A head still in progress at the header deadline gets a 408.
    let mut late = Vec::new();
    let mut c = h.connect(now);
    h.send(&mut c, input, now, &mut late);
    h.tick(&mut c, now + Duration::from_secs(3600), &mut late);

    for out in [&whole, &late] {
        assert!(
            !contains(out, SECRET),
            "a byte from outside the root was sent"
        );
        let heads = head_flags(input, &limits, max_body);
        let seen = parse_responses(out, &heads);
        for (i, r) in seen.iter().enumerate() {
            assert!(KNOWN.contains(&r.status), "unexpected status {}", r.status);
            if !r.keep_alive {
                assert_eq!(i + 1, seen.len(), "a response after Connection: close");
            }
        }
        if big_buffer {
            // Every response answers a request the client sent (or is the
            // one error/timeout response that ends the connection).
            assert!(
                seen.len() <= heads.len() + 1,
                "{} responses for {} requests",
                seen.len(),
                heads.len()
            );
        }
    }
});
