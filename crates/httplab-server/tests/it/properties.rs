//! Property tests of the server without sockets (the session driven through
//! `httplab_server::testkit`), so they are fast and deterministic:
//! - random request paths (percent-encodings, dot segments, double slashes,
//!   backslashes, NULs, symlinks inside and out of the root, a FIFO, a
//!   socket, a link to /dev/zero) never yield a byte from outside the root;
//! - a random pipelined request stream cut at random points gives
//!   byte-identical output to the same stream sent whole, and that output
//!   is exactly one complete response per request.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Instant;

use httplab_server::testkit::{Harness, Lookup, Resolver};
use httplab_server::ServerConfig;
use httplab_wire::response::ResponseParser;
use proptest::prelude::*;

const SECRET: &[u8] = b"OUTSIDE-THE-ROOT-SECRET";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path();
    let root = base.join("www");
    for d in ["www/dir/sub", "www/empty", "secret", "www2"] {
        std::fs::create_dir_all(base.join(d)).expect("mkdir");
    }
    let mut secret = SECRET.to_vec();
    secret.push(b'\n');
    std::fs::write(base.join("secret/s.txt"), &secret).expect("write");
    // A sibling whose name starts like the root's ("www2" vs "www").
    std::fs::write(base.join("www2/a.txt"), &secret).expect("write");
    std::fs::write(root.join("index.html"), b"<h1>i</h1>\n").expect("write");
    std::fs::write(root.join("a.txt"), b"alpha\n").expect("write");
    std::fs::write(root.join("dir/b.txt"), b"beta\n").expect("write");
    std::fs::write(root.join("dir/sub/c.txt"), b"gamma\n").expect("write");
    std::fs::write(root.join("back\\slash"), b"bs\n").expect("write");
    let big: Vec<u8> = (0..70_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("big.bin"), big).expect("write");
    symlink("a.txt", root.join("in-link")).expect("symlink");
    symlink("dir/sub", root.join("in-dir")).expect("symlink");
    symlink("../secret/s.txt", root.join("out-link")).expect("symlink");
    symlink(base.join("secret"), root.join("out-dir")).expect("symlink");
    symlink("../www2", root.join("sibling")).expect("symlink");
    symlink("/dev/zero", root.join("zero")).expect("symlink");
    symlink("/etc", root.join("etc")).expect("symlink");
    symlink("self-loop", root.join("self-loop")).expect("symlink");
    let fifo = std::ffi::CString::new(root.join("fifo").into_os_string().into_encoded_bytes())
        .expect("path without NUL");
    httplab_sys::file::mkfifo(&fifo, 0o644).expect("mkfifo");
    let _sock = std::os::unix::net::UnixListener::bind(root.join("sock")).expect("socket");
    let root = std::fs::canonicalize(&root).expect("canonical root");
    Fixture { _dir: dir, root }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Path segments an attacker would combine.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        Just("%2e%2e".to_string()),
        Just("%2E.".to_string()),
        Just(".%2e".to_string()),
        Just("..%2f..".to_string()),
        Just("..%5c..".to_string()),
        Just("..\\..".to_string()),
        Just("%00".to_string()),
        Just("a.txt%00.html".to_string()),
        Just("%252e%252e".to_string()),
        Just("%c0%ae%c0%ae".to_string()),
        Just("a.txt".to_string()),
        Just("dir".to_string()),
        Just("sub".to_string()),
        Just("b.txt".to_string()),
        Just("c.txt".to_string()),
        Just("big.bin".to_string()),
        Just("back\\slash".to_string()),
        Just("in-link".to_string()),
        Just("in-dir".to_string()),
        Just("out-link".to_string()),
        Just("out-dir".to_string()),
        Just("s.txt".to_string()),
        Just("secret".to_string()),
        Just("sibling".to_string()),
        Just("www".to_string()),
        Just("www2".to_string()),
        Just("zero".to_string()),
        Just("etc".to_string()),
        Just("passwd".to_string()),
        Just("self-loop".to_string()),
        Just("fifo".to_string()),
        Just("sock".to_string()),
        Just("empty".to_string()),
        "[a-z.%/\\\\]{1,6}",
    ]
}

/// Percent-encodes some bytes of `s` (chosen by `mask`), so the same
/// traversal appears raw and encoded.
fn encode_some(s: &str, mask: u64) -> String {
    let mut out = String::new();
    for (i, b) in s.bytes().enumerate() {
        if mask >> (i % 64) & 1 == 1 {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

fn random_path() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(segment(), 1..8),
        prop::bool::ANY,
        any::<u64>(),
        prop::bool::ANY,
    )
        .prop_map(|(segs, double, mask, encode)| {
            let sep = if double { "//" } else { "/" };
            let p = format!("/{}", segs.join(sep));
            if encode {
                // Keep the leading slash raw: the request parser requires it.
                format!("/{}", encode_some(&p[1..], mask))
            } else {
                p
            }
        })
}

fn check_lookup(root: &Path, raw: &str, l: &Lookup) {
    match l {
        Lookup::File { path, body } => {
            assert!(path.starts_with(root), "{raw:?} resolved outside: {path:?}");
            assert!(
                !contains(body, SECRET),
                "{raw:?} served a byte from outside"
            );
            let meta = std::fs::symlink_metadata(path).expect("resolved path exists");
            assert!(meta.is_file(), "{raw:?} resolved to a non-regular file");
        }
        Lookup::Listing(p) => assert!(p.starts_with(root), "{raw:?} lists {p:?}"),
        Lookup::Redirect(loc) => assert!(loc.starts_with('/')),
        Lookup::Miss(s) => assert!(matches!(s, 400 | 403 | 404), "{raw:?}: {s}"),
    }
}

/// Runs `f` on `cases` values of `strategy` (shrinking on failure), with no
/// failure-persistence files.
fn check<S: Strategy>(cases: u32, strategy: S, f: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let cfg = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(cfg);
    if let Err(e) = runner.run(&strategy, f) {
        panic!("{e}");
    }
}

#[test]
fn paths_never_leave_the_root() {
    let fx = fixture();
    let mem = Resolver::new(&fx.root, 64 * 1024, true).expect("resolver");
    let fd = Resolver::new(&fx.root, 0, false).expect("resolver");
    let h =
        std::cell::RefCell::new(Harness::new(ServerConfig::for_root(&fx.root)).expect("harness"));
    check(256, prop::collection::vec(random_path(), 1..8), |paths| {
        for raw in &paths {
            check_lookup(&fx.root, raw, &mem.lookup(raw));
            check_lookup(&fx.root, raw, &fd.lookup(raw));
        }
        // The same paths through the whole server (request parsing, cache,
        // handler): no response carries a byte from outside.
        let mut h = h.borrow_mut();
        let now = Instant::now();
        let mut c = h.connect(now);
        let mut out = Vec::new();
        for raw in &paths {
            let req = format!("GET {raw} HTTP/1.1\r\nHost: x\r\n\r\n");
            h.send(&mut c, req.as_bytes(), now, &mut out);
            if h.finished(&c) {
                c = h.connect(now);
            }
        }
        prop_assert!(!contains(&out, SECRET));
        Ok(())
    });
}

/// One request of a pipelined stream, and whether it is a HEAD.
fn request() -> impl Strategy<Value = (String, bool)> {
    let path = prop_oneof![
        Just("/a.txt"),
        Just("/"),
        Just("/dir"),
        Just("/dir/"),
        Just("/dir/b.txt"),
        Just("/in-link"),
        Just("/out-link"),
        Just("/missing"),
        Just("/big.bin"),
        Just("/fifo"),
        Just("/%2e%2e/secret/s.txt"),
    ];
    let extra = prop_oneof![
        Just(String::new()),
        Just("Range: bytes=0-3\r\n".to_string()),
        Just("Range: bytes=1-2,-3,60000-\r\n".to_string()),
        Just("Range: bytes=999999-\r\n".to_string()),
        Just("If-None-Match: *\r\n".to_string()),
        Just("If-Match: \"nope\"\r\n".to_string()),
        Just("If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n".to_string()),
        Just("If-Unmodified-Since: Sat, 01 Jan 1994 00:00:00 GMT\r\n".to_string()),
        Just("Content-Length: 7\r\n\r\nabcdefg".to_string()),
        Just("X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".to_string()),
    ];
    let method = prop_oneof![
        Just("GET"),
        Just("GET"),
        Just("HEAD"),
        Just("POST"),
        Just("OPTIONS")
    ];
    (method, path, extra, prop::bool::ANY, prop::bool::ANY).prop_map(
        |(m, p, extra, http10, leading_crlf)| {
            let target = if m == "OPTIONS" { "*" } else { p };
            let (version, host, conn) = if http10 {
                ("HTTP/1.0", "", "Connection: keep-alive\r\n")
            } else {
                ("HTTP/1.1", "Host: x\r\n", "")
            };
            // A body goes after the blank line that ends the head.
            let (fields, body) = match extra.split_once("\r\n\r\n") {
                Some((f, b)) => (format!("{f}\r\n"), b.to_string()),
                None => (extra, String::new()),
            };
            let lead = if leading_crlf { "\r\n" } else { "" };
            (
                format!("{lead}{m} {target} {version}\r\n{host}{conn}{fields}\r\n{body}"),
                m == "HEAD",
            )
        },
    )
}

/// Parses `wire` into complete responses (answering HEAD per `heads`);
/// panics unless it is a clean sequence of them. Returns the status codes.
fn parse_all(wire: &[u8], heads: &[bool]) -> Vec<u16> {
    let mut p = ResponseParser::new();
    let mut statuses = Vec::new();
    let mut pos = 0;
    while pos < wire.len() {
        p.start(heads.get(statuses.len()).copied().unwrap_or(false));
        loop {
            let step = p.feed(&wire[pos..]).expect("server output parses");
            pos += step.consumed;
            if step.complete {
                break;
            }
            assert!(pos < wire.len(), "server output ends inside a response");
        }
        statuses.push(p.info().status);
    }
    statuses
}

#[test]
fn split_stream_gives_identical_output() {
    let fx = fixture();
    let strategy = (
        prop::collection::vec(request(), 1..12),
        prop::collection::vec(any::<prop::sample::Index>(), 0..16),
        prop::bool::ANY,
        prop::bool::ANY,
    );
    check(256, strategy, |(reqs, cuts, pipelining, small_buffer)| {
        let mut cfg = ServerConfig::for_root(&fx.root);
        cfg.pipelining = pipelining;
        if small_buffer {
            cfg.pipeline_buffer = 1024;
        }
        let mut h = Harness::new(cfg).expect("harness");
        let stream: Vec<u8> = reqs.iter().flat_map(|(r, _)| r.bytes()).collect();
        let heads: Vec<bool> = reqs.iter().map(|r| r.1).collect();
        let now = Instant::now();

        let mut whole = Vec::new();
        let mut c = h.connect(now);
        let taken = h.send(&mut c, &stream, now, &mut whole);
        prop_assert_eq!(taken, stream.len());
        h.close(&mut c, now, &mut whole);

        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        points.push(0);
        points.push(stream.len());
        points.sort_unstable();
        points.dedup();
        let mut split = Vec::new();
        let mut c = h.connect(now);
        for w in points.windows(2) {
            h.send(&mut c, &stream[w[0]..w[1]], now, &mut split);
        }
        h.close(&mut c, now, &mut split);

        prop_assert!(
            whole == split,
            "output differs when the stream is cut at {:?}",
            points
        );
        let statuses = parse_all(&whole, &heads);
        // Every request is answered exactly once: none of these requests is
        // malformed, and none closes the connection.
        prop_assert_eq!(statuses.len(), reqs.len(), "statuses {:?}", statuses);
        prop_assert!(!contains(&whole, SECRET));
        Ok(())
    });
}
