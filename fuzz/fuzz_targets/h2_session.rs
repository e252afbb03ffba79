//! The server's HTTP/2 connection machine and handler, driven without
//! sockets over the fixture site: the client preface, then a byte stream a
//! client sends (frames or garbage), cut at points derived from its first
//! bytes, then time passing and a graceful shutdown. Checked: the output is
//! whole frames (a 9-octet head and its payload, nothing cut), it opens with
//! the server's SETTINGS, no byte from outside the root is sent, and the
//! machine stays within its bounds (no panic; the memory limit of the run).
#![no_main]
use std::time::{Duration, Instant};

use httplab_fuzz::{contains, site, SECRET};
use httplab_server::testkit::{H2Limits, Harness};
use httplab_server::ServerConfig;
use httplab_wire::h2::{HEAD, PREFACE};
use libfuzzer_sys::fuzz_target;

/// Frame type of SETTINGS.
const SETTINGS: u8 = 0x4;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (flags, cut, input) = (data[0], data[1], &data[2..]);
    let cfg = ServerConfig::for_root(&site().root);
    // Small limits reach the flood and size bounds with short inputs.
    let limits = if flags & 1 == 0 {
        H2Limits::default()
    } else {
        H2Limits {
            max_concurrent_streams: 2,
            max_header_block: 256,
            max_continuations: 2,
            max_resets: 3,
            max_settings: 2,
            max_pings: 2,
            max_empty: 2,
            max_refused: 2,
            ..H2Limits::default()
        }
    };
    let mut h = Harness::new(cfg).expect("harness");
    let now = Instant::now();
    let mut out = Vec::new();
    let mut c = h.connect_h2(now, limits);
    let mut stream = PREFACE.to_vec();
    stream.extend_from_slice(input);
    let step = usize::from(cut % 64) + 1;
    let mut open = true;
    for piece in stream.chunks(step) {
        if !h.send_h2(&mut c, piece, now, &mut out) {
            open = false;
            break;
        }
    }
    if open && flags & 2 != 0 {
        let later = now + Duration::from_secs(u64::from(flags >> 2) * 10);
        open = !h.tick_h2(&mut c, later, &mut out);
    }
    if open {
        h.shutdown_h2(&mut c, now, &mut out);
    }
    assert!(
        !contains(&out, SECRET),
        "a byte from outside the root was sent"
    );
    // Whole frames only, the first the server's SETTINGS.
    let mut at = 0;
    while at < out.len() {
        assert!(out.len() - at >= HEAD, "a cut frame head at {at}");
        let len =
            usize::from(out[at]) << 16 | usize::from(out[at + 1]) << 8 | usize::from(out[at + 2]);
        if at == 0 {
            assert_eq!(out[3], SETTINGS, "the server's first frame is SETTINGS");
        }
        at += HEAD + len;
        assert!(at <= out.len(), "a cut frame payload");
    }
});
