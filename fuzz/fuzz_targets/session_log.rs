//! The httperf `--wsesslog` parser of the load generator.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sessions) = httplab_load::parse_session_log(text) {
        // Every session has a burst, every burst a call; think times are
        // usable durations; no call has an empty URI.
        for s in &sessions {
            assert!(!s.is_empty());
            for b in s {
                assert!(!b.calls.is_empty());
                if let Some(t) = b.think {
                    assert!(t.is_finite() && t >= 0.0);
                }
                for c in &b.calls {
                    assert!(!c.uri.is_empty(), "empty URI accepted from {text:?}");
                }
            }
        }
    }
});
