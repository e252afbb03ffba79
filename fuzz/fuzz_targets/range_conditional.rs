//! The Range, conditional-header and Accept-Encoding parsers of the
//! server's handler.
#![no_main]
use httplab_server::testkit::{
    choose_encoding, etag_matches, if_range_matches, parse_http_date, parse_ranges, RangeSpec,
};
use httplab_server::Coding;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let len = u64::from_le_bytes(data[..8].try_into().unwrap_or([0; 8])) % (1 << 40);
    let v = &data[8..];
    match parse_ranges(v, len) {
        RangeSpec::Ranges(r) => {
            assert!(!r.is_empty() && r.len() <= 64);
            for &(a, b) in &r {
                assert!(a <= b && b < len, "range {a}-{b} of {len} from {v:?}");
            }
        }
        RangeSpec::Unsatisfiable | RangeSpec::Ignore => {}
    }
    // Small lengths, where saturating arithmetic is at its edges.
    for small in 0..3 {
        if let RangeSpec::Ranges(r) = parse_ranges(v, small) {
            assert!(r.iter().all(|&(a, b)| a <= b && b < small));
        }
    }
    let etag = "\"5f1.2a-10\"";
    let strong = etag_matches(v, etag, true);
    let weak = etag_matches(v, etag, false);
    assert!(!strong || weak, "strong match without weak match");
    if let Some(t) = parse_http_date(v) {
        // A date that parses formats back to a date that parses to the same.
        let back = httpdate_fmt(t);
        assert_eq!(parse_http_date(back.as_bytes()), Some(t));
        assert!(if_range_matches(back.as_bytes(), etag, t));
    }
    if if_range_matches(v, etag, 0) {
        assert!(v.contains(&b'"') || parse_http_date(v).is_some());
    }
    // Accept-Encoding: whatever the bytes, the choice is identity, 406 or
    // one of the codings offered.
    for offered in [&Coding::DEFAULT_ORDER[..], &[Coding::Gzip][..], &[][..]] {
        match choose_encoding(&[v], offered) {
            Ok(Some(t)) => assert!(offered.iter().any(|c| c.token() == t), "{t} not offered"),
            Ok(None) | Err(406) => {}
            Err(s) => panic!("status {s}"),
        }
    }
});

fn httpdate_fmt(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    httpdate::fmt_http_date(t)
}
