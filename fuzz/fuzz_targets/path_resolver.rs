//! The server's path resolver: whatever the request path, nothing outside
//! the root is ever served.
#![no_main]
use httplab_fuzz::{contains, inside, site, SECRET};
use httplab_server::testkit::{Lookup, Resolver};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Request paths arrive as str (httparse checked the bytes); build one
    // from arbitrary bytes by percent-encoding what is not printable, so
    // NULs, slashes and dots appear both raw and encoded.
    let mut raw = String::from("/");
    for &b in data {
        if b.is_ascii_graphic() {
            raw.push(b as char);
        } else {
            raw.push_str(&format!("%{b:02X}"));
        }
    }
    let site = site();
    for small in [64 * 1024, 0] {
        let r = Resolver::new(&site.root, small, true).expect("resolver");
        match r.lookup(&raw) {
            Lookup::File { path, body } => {
                assert!(
                    inside(&path, r.root()),
                    "{raw:?} resolved outside: {path:?}"
                );
                assert!(
                    !contains(&body, SECRET),
                    "{raw:?} served a byte from outside the root"
                );
                let meta = std::fs::symlink_metadata(&path).expect("resolved file exists");
                assert!(meta.is_file(), "{raw:?} resolved to a non-regular file");
            }
            Lookup::Listing(p) => assert!(inside(&p, r.root()), "{raw:?} lists {p:?}"),
            Lookup::Redirect(loc) => assert!(loc.starts_with('/') && loc.ends_with('/')),
            Lookup::Miss(s) => assert!(matches!(s, 400 | 403 | 404)),
        }
    }
});
