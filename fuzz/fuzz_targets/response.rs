//! The load generator's response parser (`httplab_wire::response`), chunked
//! included, fed in pieces whose sizes come from the input.
#![no_main]
use httplab_wire::response::{ResponseError, ResponseParser};
use libfuzzer_sys::fuzz_target;

/// (status, de-chunked body, wire bytes) of one complete response.
type Parsed = (u16, Vec<u8>, u64);

/// Parses `wire` as the responses of one connection, feeding at most
/// `piece` bytes per call. Returns (status, body, wire bytes) per complete
/// response and the error that stopped parsing, if any.
fn run(wire: &[u8], piece: usize, heads: u8) -> (Vec<Parsed>, Option<ResponseError>) {
    let mut p = ResponseParser::new();
    let mut out = Vec::new();
    let mut idx = 0u32;
    p.start(heads & 1 == 1);
    let mut body = Vec::new();
    let mut start = 0usize;
    let mut pos = 0usize;
    while pos < wire.len() {
        let end = wire.len().min(pos + piece);
        let chunk = &wire[pos..end];
        let step = match p.feed(chunk) {
            Ok(s) => s,
            Err(e) => return (out, Some(e)),
        };
        assert!(step.consumed <= chunk.len());
        if let Some((o, l)) = step.body {
            assert!(
                o + l <= step.consumed,
                "body segment outside consumed bytes"
            );
            body.extend_from_slice(&chunk[o..o + l]);
        }
        if step.consumed == 0 && !step.complete {
            panic!("no progress on non-empty input");
        }
        pos += step.consumed;
        if step.complete {
            let info = p.info();
            assert_eq!(info.wire_bytes(), (pos - start) as u64, "byte accounting");
            assert_eq!(info.body_bytes, body.len() as u64);
            if let Some(cl) = info.content_length {
                if info.framing == httplab_wire::response::Framing::Length {
                    assert_eq!(info.body_bytes, cl);
                }
            }
            out.push((info.status, std::mem::take(&mut body), info.wire_bytes()));
            idx += 1;
            start = pos;
            p.start(heads >> (idx % 8) & 1 == 1);
        }
    }
    match p.eof() {
        Ok(true) => {
            let info = p.info();
            assert_eq!(
                info.wire_bytes(),
                (pos - start) as u64,
                "byte accounting at eof"
            );
            out.push((info.status, body, info.wire_bytes()));
        }
        Ok(false) => {}
        Err(e) => return (out, Some(e)),
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let piece = usize::from(data[0]) + 1;
    let heads = data[1];
    let wire = &data[2..];
    let (a, ea) = run(wire, piece, heads);
    // Feeding in different pieces must not change what is parsed.
    let (b, eb) = run(wire, wire.len().max(1), heads);
    assert_eq!(a, b, "responses depend on how the input was split");
    assert_eq!(
        ea.is_some(),
        eb.is_some(),
        "errors depend on the split: {ea:?} vs {eb:?}"
    );
    let total: u64 = a.iter().map(|r| r.2).sum();
    assert!(total <= wire.len() as u64);
});
