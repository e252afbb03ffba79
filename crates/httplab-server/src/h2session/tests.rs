//! The HTTP/2 machine driven by raw frames: requests answered by the real
//! handler over a temporary root, flow control, stream states, and every
//! bound against hostile input.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use httplab_wire::h2::hpack::request_block;
use httplab_wire::h2::{be32, write_frame};

use super::*;
use crate::config::ServerConfig;

struct Fixture {
    _dir: tempfile::TempDir,
    h: Handler,
    small: Vec<u8>,
    big: Vec<u8>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let small = b"hello over h2\n".to_vec();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.path().join("small.txt"), &small).unwrap();
    std::fs::write(dir.path().join("big.bin"), &big).unwrap();
    let mut cfg = ServerConfig::for_root(dir.path());
    cfg.small_file_max = 4096;
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let stats = crate::stats::shared().unwrap();
    Fixture {
        h: Handler::new(Arc::new(cfg), root, None, stats),
        _dir: dir,
        small,
        big,
    }
}

fn f(kind: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    write_frame(&mut v, kind, flags, id, payload);
    v
}

fn settings_frame(params: &[(u16, u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    wire::write_settings(&mut v, params);
    v
}

fn window_update(id: u32, inc: u32) -> Vec<u8> {
    let mut v = Vec::new();
    wire::write_window_update(&mut v, id, inc);
    v
}

fn get(id: u32, path: &str) -> Vec<u8> {
    let block = request_block("GET", false, "h", path, &[]);
    f(
        frame::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        id,
        &block,
    )
}

/// The client's side: what the server sent, decoded.
#[derive(Default)]
struct Seen {
    kinds: Vec<u8>,
    heads: HashMap<u32, Vec<(String, String)>>,
    bodies: HashMap<u32, Vec<u8>>,
    ended: HashSet<u32>,
    resets: Vec<(u32, u32)>,
    goaway: Option<(u32, u32)>,
    settings: Vec<(u16, u32)>,
    acks: usize,
    pings: Vec<[u8; 8]>,
}

impl Seen {
    fn status(&self, id: u32) -> Option<u16> {
        let h = self.heads.get(&id)?;
        h.iter().find(|(n, _)| n == ":status")?.1.parse().ok()
    }

    fn field(&self, id: u32, name: &str) -> Option<&str> {
        let h = self.heads.get(&id)?;
        h.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A test connection: the server machine and a client decoder.
struct Conn {
    fx: Fixture,
    s: H2Session,
    now: Instant,
    decoder: hpack::Decoder,
    seen: Seen,
}

impl Conn {
    /// A connection with `limits`, its preface and client SETTINGS sent.
    fn new(limits: H2Limits, client_settings: &[(u16, u32)]) -> Conn {
        let fx = fixture();
        let now = Instant::now();
        let s = H2Session::new(None, now, &fx.h, limits);
        let mut c = Conn {
            fx,
            s,
            now,
            decoder: hpack::Decoder::new(),
            seen: Seen::default(),
        };
        let mut first = PREFACE.to_vec();
        first.extend(settings_frame(client_settings));
        c.send(&first);
        c
    }

    fn send(&mut self, input: &[u8]) {
        self.s.feed(input, &mut self.fx.h, self.now);
        self.read();
    }

    /// Reads everything the server queued (as a socket that always takes
    /// it), frames more as it goes.
    fn read(&mut self) {
        let mut bytes = Vec::new();
        while !self.s.out.is_empty() {
            self.s.out.drain_into(&mut bytes);
            self.s.wrote(self.now);
        }
        let mut reader = FrameReader::new(1 << 24);
        let seen = &mut self.seen;
        let decoder = &mut self.decoder;
        reader
            .feed(&bytes, |fr| {
                let head = Head::parse(fr).unwrap();
                let p = &fr[wire::HEAD..];
                seen.kinds.push(head.kind);
                let end = head.flags & flag::END_STREAM != 0;
                match head.kind {
                    frame::HEADERS => {
                        assert!(head.flags & flag::END_HEADERS != 0);
                        let mut v = Vec::new();
                        decoder.decode(p, usize::MAX, |n, val| {
                            v.push((
                                String::from_utf8(n.to_vec()).unwrap(),
                                String::from_utf8(val.to_vec()).unwrap(),
                            ))
                        })?;
                        seen.heads.insert(head.stream, v);
                    }
                    frame::DATA => {
                        seen.bodies
                            .entry(head.stream)
                            .or_default()
                            .extend_from_slice(p);
                    }
                    frame::RST_STREAM => seen.resets.push((head.stream, be32(p))),
                    frame::GOAWAY => seen.goaway = Some((be32(p), be32(&p[4..]))),
                    frame::SETTINGS if head.flags & flag::ACK != 0 => seen.acks += 1,
                    frame::SETTINGS => seen.settings.extend(wire::settings(p)?),
                    frame::PING => seen.pings.push(p.try_into().unwrap()),
                    _ => {}
                }
                if end && matches!(head.kind, frame::HEADERS | frame::DATA) {
                    assert!(seen.ended.insert(head.stream), "END_STREAM twice");
                }
                Ok::<_, Error>(())
            })
            .unwrap();
        assert_eq!(reader.buffered(), 0);
    }

    fn goaway_code(&self) -> Option<u32> {
        self.seen.goaway.map(|g| g.1)
    }
}

fn default_conn() -> Conn {
    Conn::new(H2Limits::default(), &[])
}

#[test]
fn a_small_file_is_served_with_settings_exchanged() {
    let mut c = default_conn();
    assert!(c
        .seen
        .settings
        .contains(&(setting::MAX_CONCURRENT_STREAMS, 128)));
    assert_eq!(c.seen.acks, 1, "the client's SETTINGS acknowledged");
    c.send(&get(1, "/small.txt"));
    assert_eq!(c.seen.status(1), Some(200));
    let len = c.fx.small.len().to_string();
    assert_eq!(c.seen.field(1, "content-length"), Some(len.as_str()));
    assert_eq!(
        c.seen.field(1, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(c.seen.field(1, "connection").is_none());
    assert!(c.seen.field(1, "date").is_some());
    assert_eq!(c.seen.bodies[&1], c.fx.small);
    assert!(c.seen.ended.contains(&1));
    assert_eq!((c.s.open_streams(), c.s.served()), (0, 1));
    // A second request on the same connection, and a missing file.
    c.send(&get(3, "/nope"));
    assert_eq!(c.seen.status(3), Some(404));
    assert!(c.seen.ended.contains(&3));
    assert!(c.s.error().is_none());
}

#[test]
fn head_requests_and_ranges_use_the_handler() {
    let mut c = default_conn();
    let block = request_block("HEAD", false, "h", "/big.bin", &[]);
    c.send(&f(
        frame::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &block,
    ));
    assert_eq!(c.seen.status(1), Some(200));
    assert_eq!(c.seen.field(1, "content-length"), Some("300000"));
    assert!(!c.seen.bodies.contains_key(&1), "no DATA for HEAD");
    assert!(c.seen.ended.contains(&1), "END_STREAM on HEADERS");
    let block = request_block("GET", false, "h", "/big.bin", &[("range", "bytes=10-19")]);
    c.send(&f(
        frame::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &block,
    ));
    assert_eq!(c.seen.status(3), Some(206));
    assert_eq!(c.seen.bodies[&3], c.fx.big[10..20]);
}

#[test]
fn a_large_file_waits_for_window_updates() {
    let mut c = default_conn();
    c.send(&get(1, "/big.bin"));
    assert_eq!(c.seen.status(1), Some(200));
    // The protocol's initial windows: 65 535 octets, then nothing.
    assert_eq!(c.seen.bodies[&1].len(), 65_535);
    assert_eq!(c.s.open_streams(), 1);
    assert!(!c.seen.ended.contains(&1));
    // The stream's window alone is not enough: the connection's is shut.
    c.send(&window_update(1, 100_000));
    assert_eq!(c.seen.bodies[&1].len(), 65_535);
    c.send(&window_update(0, 50_000));
    assert_eq!(c.seen.bodies[&1].len(), 65_535 + 50_000);
    c.send(&window_update(0, 1 << 30));
    c.send(&window_update(1, 1 << 30));
    assert_eq!(c.seen.bodies[&1], c.fx.big, "byte-exact");
    assert!(c.seen.ended.contains(&1));
    assert_eq!(c.s.open_streams(), 0);
}

#[test]
fn a_larger_initial_window_and_frame_size_are_used() {
    let mut c = Conn::new(
        H2Limits::default(),
        &[
            (setting::INITIAL_WINDOW_SIZE, 1 << 20),
            (setting::MAX_FRAME_SIZE, 65_536),
        ],
    );
    c.send(&window_update(0, 1 << 20));
    c.send(&get(1, "/big.bin"));
    assert_eq!(c.seen.bodies[&1], c.fx.big);
    // 300 000 octets in frames of at most 64 KiB: 5 DATA frames.
    let data = c.seen.kinds.iter().filter(|k| **k == frame::DATA).count();
    assert_eq!(data, 5);
}

#[test]
fn a_window_shrunk_by_settings_goes_negative_and_recovers() {
    let mut c = default_conn();
    c.send(&get(1, "/big.bin"));
    assert_eq!(c.seen.bodies[&1].len(), 65_535);
    // The stream's window drops 65 535 - 1 000 below zero: 64 535 + 10 more
    // must be given before data flows again.
    c.send(&settings_frame(&[(setting::INITIAL_WINDOW_SIZE, 1_000)]));
    c.send(&window_update(0, 1 << 30));
    c.send(&window_update(1, 64_535));
    assert_eq!(c.seen.bodies[&1].len(), 65_535);
    c.send(&window_update(1, 10));
    assert_eq!(c.seen.bodies[&1].len(), 65_545);
}

#[test]
fn ping_is_answered_priority_and_unknown_frames_ignored() {
    let mut c = default_conn();
    c.send(&f(frame::PING, 0, 0, b"12345678"));
    assert_eq!(c.seen.pings, [*b"12345678"]);
    c.send(&f(frame::PING, flag::ACK, 0, b"abcdefgh"));
    assert_eq!(c.seen.pings.len(), 1, "an ACK is not answered");
    c.send(&f(frame::PRIORITY, 0, 5, &[0, 0, 0, 3, 16]));
    c.send(&f(0xfa, 0, 0, b"whatever"));
    c.send(&get(7, "/small.txt"));
    assert_eq!(c.seen.status(7), Some(200));
    assert!(c.s.error().is_none());
}

#[test]
fn continuation_frames_complete_a_header_block() {
    let mut c = default_conn();
    let block = request_block(
        "GET",
        false,
        "h",
        "/small.txt",
        &[("x-pad", &"p".repeat(100))],
    );
    let (a, b) = block.split_at(10);
    let (b, d) = b.split_at(50);
    let mut input = f(frame::HEADERS, flag::END_STREAM, 1, a);
    input.extend(f(frame::CONTINUATION, 0, 1, b));
    input.extend(f(frame::CONTINUATION, flag::END_HEADERS, 1, d));
    c.send(&input);
    assert_eq!(c.seen.bodies[&1], c.fx.small);
}

#[test]
fn request_bodies_are_dropped_and_their_windows_topped_up() {
    let mut c = default_conn();
    let block = request_block("GET", false, "h", "/small.txt", &[]);
    c.send(&f(frame::HEADERS, flag::END_HEADERS, 1, &block));
    // Answered at once; the request still open is cut short with NO_ERROR.
    assert_eq!(c.seen.status(1), Some(200));
    assert!(c.seen.resets.contains(&(1, code::NO_ERROR)));
    // Its late DATA counts against the connection window, topped up.
    for _ in 0..3 {
        c.send(&f(frame::DATA, 0, 1, &[0; 16_384]));
    }
    assert!(c.seen.kinds.contains(&frame::WINDOW_UPDATE));
    assert!(c.s.error().is_none());
    // More than the connection window without top-up reading would be an
    // error; the server topped up, so more goes through.
    for _ in 0..8 {
        c.send(&f(frame::DATA, 0, 1, &[0; 16_384]));
    }
    assert!(c.s.error().is_none());
}

#[test]
fn malformed_requests_are_reset_and_limits_answered() {
    let mut c = default_conn();
    let block = request_block("GET", false, "h", "/small.txt", &[("Upper", "x")]);
    c.send(&f(
        frame::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &block,
    ));
    assert_eq!(c.seen.resets, [(1, code::PROTOCOL_ERROR)]);
    let long = format!("/{}", "a".repeat(9000));
    c.send(&get(3, &long));
    assert_eq!(c.seen.status(3), Some(414));
    // The connection goes on.
    c.send(&get(5, "/small.txt"));
    assert_eq!(c.seen.status(5), Some(200));
}

#[test]
fn streams_beyond_the_limit_are_refused() {
    let limits = H2Limits {
        max_concurrent_streams: 2,
        ..H2Limits::default()
    };
    // A window of 0: every response waits, its stream stays open.
    let mut c = Conn::new(limits, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    assert!(c
        .seen
        .settings
        .contains(&(setting::MAX_CONCURRENT_STREAMS, 2)));
    for id in [1, 3, 5] {
        c.send(&get(id, "/small.txt"));
    }
    assert_eq!(c.s.open_streams(), 2);
    assert_eq!(c.seen.resets, [(5, code::REFUSED_STREAM)]);
    assert!(!c.seen.heads.contains_key(&5));
    // A window opens: both answered, and a new stream fits again.
    c.send(&settings_frame(&[(setting::INITIAL_WINDOW_SIZE, 65_535)]));
    assert!(c.seen.ended.contains(&1) && c.seen.ended.contains(&3));
    c.send(&get(7, "/small.txt"));
    assert_eq!(c.seen.bodies[&7], c.fx.small);
}

#[test]
fn stream_limit_abuse_is_calmed() {
    let limits = H2Limits {
        max_concurrent_streams: 1,
        max_refused: 10,
        ..H2Limits::default()
    };
    let mut c = Conn::new(limits, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    let mut input = Vec::new();
    for i in 0..12 {
        input.extend(get(1 + 2 * i, "/small.txt"));
    }
    c.send(&input);
    assert_eq!(c.goaway_code(), Some(code::ENHANCE_YOUR_CALM));
    assert_eq!(
        c.s.error(),
        Some(Error::Calm("too many streams beyond the limit"))
    );
}

#[test]
fn rapid_reset_is_calmed() {
    let limits = H2Limits {
        max_resets: 50,
        ..H2Limits::default()
    };
    let mut c = Conn::new(limits, &[]);
    let mut input = Vec::new();
    for i in 0..60u32 {
        let id = 1 + 2 * i;
        input.extend(get(id, "/big.bin"));
        let mut rst = Vec::new();
        wire::write_rst_stream(&mut rst, id, code::CANCEL);
        input.extend(rst);
    }
    c.send(&input);
    assert_eq!(c.goaway_code(), Some(code::ENHANCE_YOUR_CALM));
    // The GOAWAY names the last stream the server saw.
    assert_eq!(c.seen.goaway.map(|g| g.0), Some(101));
    assert!(c.s.finished());
    // Resets spread over time are fine: the budget is per window.
    let mut c = Conn::new(limits, &[]);
    for i in 0..120u32 {
        let id = 1 + 2 * i;
        let mut input = get(id, "/small.txt");
        wire::write_rst_stream(&mut input, id, code::CANCEL);
        c.now += Duration::from_millis(100);
        c.send(&input);
    }
    assert!(c.s.error().is_none());
}

#[test]
fn a_continuation_flood_is_refused() {
    // Octets: past the header block bound, a COMPRESSION_ERROR.
    let mut c = default_conn();
    let mut input = f(frame::HEADERS, 0, 1, &[0x82]);
    for _ in 0..5 {
        input.extend(f(frame::CONTINUATION, 0, 1, &[0x82; 16_384]));
    }
    c.send(&input);
    assert_eq!(c.s.error(), Some(Error::Compression));
    assert_eq!(c.goaway_code(), Some(code::COMPRESSION_ERROR));
    // Frames: many small (or empty) CONTINUATIONs, ENHANCE_YOUR_CALM.
    let mut c = default_conn();
    let mut input = f(frame::HEADERS, 0, 1, &[0x82]);
    for _ in 0..40 {
        input.extend(f(frame::CONTINUATION, 0, 1, &[0x82]));
    }
    c.send(&input);
    assert_eq!(
        c.s.error(),
        Some(Error::Calm("too many CONTINUATION frames"))
    );
    let limits = H2Limits {
        max_empty: 10,
        ..H2Limits::default()
    };
    let mut c = Conn::new(limits, &[]);
    let mut input = f(frame::HEADERS, 0, 1, &[0x82]);
    for _ in 0..30 {
        input.extend(f(frame::CONTINUATION, 0, 1, &[]));
    }
    c.send(&input);
    assert_eq!(c.s.error(), Some(Error::Calm("too many empty frames")));
    // A block interrupted by another frame.
    let mut c = default_conn();
    let mut input = f(frame::HEADERS, 0, 1, &[0x82]);
    input.extend(f(frame::PING, 0, 0, b"12345678"));
    c.send(&input);
    assert_eq!(c.goaway_code(), Some(code::PROTOCOL_ERROR));
}

#[test]
fn an_hpack_bomb_is_answered_431_without_memory() {
    let mut c = default_conn();
    // A 4 000-octet field enters the table, then is named 3 000 times:
    // 12 MB decoded from a 7 KB block.
    let mut block = request_block("GET", false, "h", "/small.txt", &[]);
    block.push(0x40);
    hpack::integer(&mut block, 7, 0, 6);
    block.extend_from_slice(b"x-bomb");
    hpack::integer(&mut block, 7, 0, 4000);
    block.extend(std::iter::repeat(b'a').take(4000));
    block.extend(std::iter::repeat(0x80 | 62).take(3000));
    let mut input = f(frame::HEADERS, flag::END_STREAM, 1, &block[..3_000]);
    input.extend(f(
        frame::CONTINUATION,
        flag::END_HEADERS,
        1,
        &block[3_000..],
    ));
    c.send(&input);
    assert_eq!(c.seen.status(1), Some(431));
    assert!(c.s.error().is_none());
    // What was kept: the block (7 KB), nothing of the 12 MB.
    assert!(c.s.block.capacity() < 16 * 1024);
    // The table stayed in step: the next request decodes.
    c.send(&get(3, "/small.txt"));
    assert_eq!(c.seen.status(3), Some(200));
}

#[test]
fn control_frame_floods_are_calmed() {
    let limits = H2Limits::default();
    let cases: [(Vec<u8>, u32, &str); 3] = [
        (
            settings_frame(&[]),
            limits.max_settings,
            "too many SETTINGS",
        ),
        (
            f(frame::PING, 0, 0, b"12345678"),
            limits.max_pings,
            "too many PINGs",
        ),
        (
            f(frame::DATA, 0, 1, &[]),
            limits.max_empty,
            "too many empty frames",
        ),
    ];
    for (one, limit, what) in cases {
        let mut c = default_conn();
        // Stream 1 open with a waiting body, for the empty DATA frames.
        let block = request_block("GET", false, "h", "/big.bin", &[]);
        c.send(&f(frame::HEADERS, flag::END_HEADERS, 1, &block));
        let input: Vec<u8> = (0..=limit).flat_map(|_| one.clone()).collect();
        c.send(&input);
        assert_eq!(c.s.error(), Some(Error::Calm(what)), "{what}");
        assert_eq!(c.goaway_code(), Some(code::ENHANCE_YOUR_CALM));
        // Within the budget is fine.
        let mut c = default_conn();
        let input: Vec<u8> = (0..limit / 2).flat_map(|_| one.clone()).collect();
        let block = request_block("GET", false, "h", "/big.bin", &[]);
        c.send(&f(frame::HEADERS, flag::END_HEADERS, 1, &block));
        c.send(&input);
        assert!(c.s.error().is_none(), "{what}");
    }
}

#[test]
fn a_zero_window_slow_reader_is_cut_off_at_the_send_timeout() {
    let mut c = Conn::new(H2Limits::default(), &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    c.send(&get(1, "/big.bin"));
    assert_eq!(c.seen.status(1), Some(200));
    assert!(!c.seen.bodies.contains_key(&1));
    let send_timeout = c.fx.h.config().send_timeout;
    assert_eq!(c.s.deadline(&c.fx.h), c.now + send_timeout);
    assert!(c.s.on_timeout(&c.fx.h, c.now + send_timeout / 2).is_none());
    assert_eq!(
        c.s.on_timeout(&c.fx.h, c.now + send_timeout),
        Some(CloseReason::Timeout)
    );
    // What waits is the file range, not its bytes.
    assert!(matches!(c.s.streams[0].body[0], Waiting::File(..)));
}

#[test]
fn a_large_files_frames_carry_the_bodys_length_for_the_send_path() {
    let mut c = default_conn();
    let body = c.fx.big.len() as u64;
    // Fed, not read: the first DATA frames wait in the output queue.
    c.s.feed(&get(1, "/big.bin"), &mut c.fx.h, c.now);
    assert!(c.s.out.files_pending() > 0);
    // Each frame carries at most 16 KiB, but the send path must see the
    // 300 000-octet body it belongs to.
    assert_eq!(c.s.out.front_file_len(), Some(body));
    // So do the frames framed later, when the window opens.
    c.read();
    c.s.feed(&window_update(0, 1 << 20), &mut c.fx.h, c.now);
    c.s.feed(&window_update(1, 1 << 20), &mut c.fx.h, c.now);
    assert!(c.s.out.files_pending() > 0);
    assert_eq!(c.s.out.front_file_len(), Some(body));
}

#[test]
fn output_backed_up_stops_reading() {
    let mut c = default_conn();
    c.send(&window_update(0, 1 << 30));
    // Responses queued but never written: past the high-water mark the
    // session asks not to be read.
    let mut id = 1;
    while c.s.wants_input() {
        assert!(id < 20_000, "never backed up");
        let block = request_block("GET", false, "h", "/nope", &[]);
        let input = f(
            frame::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
            &block,
        );
        c.s.feed(&input, &mut c.fx.h, c.now);
        id += 2;
    }
    assert!(c.s.error().is_none());
    assert!(c.s.out.mem_pending() > OUT_HIGH_WATER);
    assert!(c.s.out.mem_pending() < OUT_HIGH_WATER + 4096);
}

#[test]
fn graceful_shutdown_names_the_last_stream() {
    let mut c = default_conn();
    c.send(&get(1, "/big.bin"));
    c.s.begin_shutdown();
    c.read();
    assert_eq!(c.seen.goaway, Some((1, code::NO_ERROR)));
    assert!(!c.s.finished(), "stream 1 still sending");
    // A stream opened after the GOAWAY is not processed.
    c.send(&get(3, "/small.txt"));
    assert!(!c.seen.heads.contains_key(&3));
    c.send(&window_update(0, 1 << 30));
    c.send(&window_update(1, 1 << 30));
    assert_eq!(c.seen.bodies[&1], c.fx.big);
    assert!(c.s.finished());
}

#[test]
fn the_idle_timeout_sends_goaway() {
    let mut c = default_conn();
    c.send(&get(1, "/small.txt"));
    let idle = c.fx.h.config().idle_timeout;
    let at = c.s.deadline(&c.fx.h);
    assert_eq!(at, c.now + idle);
    assert!(c.s.on_timeout(&c.fx.h, at).is_none());
    c.read();
    assert_eq!(c.seen.goaway, Some((1, code::NO_ERROR)));
    assert!(c.s.finished());
}

#[test]
fn protocol_errors_end_the_connection_with_their_code() {
    let cases: Vec<(Vec<u8>, u32)> = vec![
        // Oversized frame.
        (
            {
                let mut v = f(frame::DATA, 0, 1, &[]);
                v[0] = 1;
                v
            },
            code::FRAME_SIZE_ERROR,
        ),
        (get(2, "/small.txt"), code::PROTOCOL_ERROR),
        (f(frame::DATA, 0, 9, b"x"), code::PROTOCOL_ERROR),
        (window_update(9, 1), code::PROTOCOL_ERROR),
        (window_update(0, 0), code::PROTOCOL_ERROR),
        (window_update(0, MAX_WINDOW), code::FLOW_CONTROL_ERROR),
        (
            f(frame::RST_STREAM, 0, 9, &[0, 0, 0, 8]),
            code::PROTOCOL_ERROR,
        ),
        (
            f(frame::PUSH_PROMISE, flag::END_HEADERS, 1, &[0, 0, 0, 2]),
            code::PROTOCOL_ERROR,
        ),
        (
            settings_frame(&[(setting::ENABLE_PUSH, 2)]),
            code::PROTOCOL_ERROR,
        ),
        (
            settings_frame(&[(setting::MAX_FRAME_SIZE, 100)]),
            code::PROTOCOL_ERROR,
        ),
        (
            settings_frame(&[(setting::INITIAL_WINDOW_SIZE, 1 << 31)]),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            f(frame::CONTINUATION, flag::END_HEADERS, 1, &[0x82]),
            code::PROTOCOL_ERROR,
        ),
        (
            f(frame::HEADERS, flag::END_HEADERS, 1, &[0xff, 0xff]),
            code::COMPRESSION_ERROR,
        ),
    ];
    for (input, want) in cases {
        let mut c = default_conn();
        c.send(&input);
        assert_eq!(c.goaway_code(), Some(want), "{input:02x?}");
        assert!(c.s.finished());
        // Nothing more is read.
        c.send(&get(11, "/small.txt"));
        assert!(!c.seen.heads.contains_key(&11));
    }
    // A stream reused after it closed.
    let mut c = default_conn();
    c.send(&get(1, "/small.txt"));
    c.send(&get(1, "/small.txt"));
    assert_eq!(c.goaway_code(), Some(code::STREAM_CLOSED));
}

#[test]
fn the_preface_is_checked() {
    let fx = fixture();
    let now = Instant::now();
    let mut h = fx.h;
    // An HTTP/1.1 request instead of the preface.
    let mut s = H2Session::new(None, now, &h, H2Limits::default());
    s.feed(b"GET / HTTP/1.1\r\n\r\n", &mut h, now);
    assert_eq!(
        s.error(),
        Some(Error::Protocol("not the HTTP/2 client preface"))
    );
    // The preface in pieces, then a frame other than SETTINGS.
    let mut s = H2Session::new(None, now, &h, H2Limits::default());
    for b in PREFACE.chunks(5) {
        s.feed(b, &mut h, now);
    }
    assert!(s.error().is_none());
    s.feed(&f(frame::PING, 0, 0, b"12345678"), &mut h, now);
    assert_eq!(
        s.error(),
        Some(Error::Protocol("the client preface lacks its SETTINGS"))
    );
}

#[test]
fn frames_split_across_reads_are_reassembled() {
    let mut c = default_conn();
    let mut input = get(1, "/small.txt");
    input.extend(get(3, "/big.bin"));
    input.extend(window_update(0, 1 << 30));
    input.extend(window_update(3, 1 << 30));
    for piece in input.chunks(3) {
        c.send(piece);
    }
    assert_eq!(c.seen.bodies[&1], c.fx.small);
    assert_eq!(c.seen.bodies[&3], c.fx.big);
}

#[test]
fn the_first_bytes_pick_the_protocol() {
    assert_eq!(sniff(b"", false), Sniffed::Wait);
    assert_eq!(sniff(&PREFACE[..1], false), Sniffed::Wait);
    assert_eq!(sniff(&PREFACE[..23], false), Sniffed::Wait);
    assert_eq!(sniff(PREFACE, false), Sniffed::Http2);
    let mut more = PREFACE.to_vec();
    more.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    assert_eq!(sniff(&more, false), Sniffed::Http2);
    assert_eq!(sniff(&more, true), Sniffed::Http2);
    // The HTTP/1.1 head the preface starts with, and anything else, is
    // HTTP/1.1 as soon as a byte differs.
    assert_eq!(sniff(b"GET / HTTP/1.1\r\n", false), Sniffed::Http1);
    assert_eq!(sniff(b"G", false), Sniffed::Http1);
    assert_eq!(
        sniff(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", false),
        Sniffed::Http1
    );
    assert_eq!(sniff(b"PRI * HTTP/1.1\r\n", false), Sniffed::Http1);
    // A partial preface and then the end of input: HTTP/1.1 answers it.
    assert_eq!(sniff(&PREFACE[..18], true), Sniffed::Http1);
    assert_eq!(sniff(b"", true), Sniffed::Http1);
}

/// The memo of `encode_head` gives, for every head, the block an encoder
/// without memo gives for the same sequence: repeats (reused), a changed
/// Date (a new entry), a field that is never indexed, a cut head, a
/// table-size change from the client between responses.
#[test]
fn a_reused_head_block_is_the_block_encoding_would_give() {
    let fx = fixture();
    let now = Instant::now();
    let mut s = H2Session::new(None, now, &fx.h, H2Limits::default());
    let mut plain = hpack::Encoder::new();
    let head = |date: &str, etag: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nServer: httplab\r\nDate: {date}\r\nContent-Type: text/plain\r\nETag: \"{etag}\"\r\nContent-Length: 5\r\n\r\nhello"
        )
        .into_bytes()
    };
    let a = head("Sun, 29 Nov 2026 13:00:00 GMT", "a");
    let b = head("Sun, 29 Nov 2026 13:00:01 GMT", "a");
    let c = head("Sun, 29 Nov 2026 13:00:01 GMT", "c");
    let cut = b"HTTP/1.1 200 OK\r\nServer: httplab\r\n".to_vec();
    let seq: Vec<(&[u8], Option<u32>)> = vec![
        (&a, None),
        (&a, None),
        (&a, None),
        (&b, None),
        (&b, None),
        (&c, None),
        (&c, None),
        (&cut, None),
        (&c, None),
        (&c, Some(64)),
        (&c, None),
        (&c, None),
        (&a, Some(4096)),
        (&a, None),
        (&a, None),
    ];
    let mut reused = 0;
    for (i, (answer, resize)) in seq.into_iter().enumerate() {
        if let Some(n) = resize {
            s.encoder.set_peer_table_size(n);
            plain.set_peer_table_size(n);
        }
        let memo_before = !s.memo_head.is_empty()
            && s.memo_generation == s.encoder.generation()
            && answer.starts_with(&s.memo_head);
        let end = s.encode_head(answer);
        let mut want = Vec::new();
        plain.begin(&mut want);
        let want_end = crate::head::status(answer).and_then(|(status, at)| {
            plain.status(status, &mut want);
            crate::head::each_field(answer, at, |n, v| plain.field(n, &answer[v], &mut want))
        });
        assert_eq!(end, want_end, "head {i}: its length");
        if end.is_some() {
            assert_eq!(s.hblock, want, "head {i}: its block");
            if memo_before {
                reused += 1;
            }
        }
    }
    // The third `a`, the second `c` and the last `a`: every other head
    // either differs from the one before or changed the table (a new Date,
    // the first use of each field, a 64-octet table where each entry
    // evicts another).
    assert_eq!(reused, 3, "the heads the memo served");
}
