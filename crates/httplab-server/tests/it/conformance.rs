//! The conformance suite: every protocol rule of the server (its README,
//! "Protocol behaviour", and RFC 9110/9112), as raw-socket
//! exchanges, run against every model and protocol mode (see
//! `support::variants`).

use crate::support;

use std::io::{Read, Write};
use std::time::Duration;

use support::*;

/// Extra assertions on a response.
type Check = Box<dyn Fn(&Resp, &Site)>;

/// Expected response to one request sent on a fresh connection.
struct Case {
    name: &'static str,
    request: String,
    status: u16,
    /// The server must close the connection after this response (in every
    /// mode, not only with keep-alive off).
    closes: bool,
    /// Request was HEAD.
    head: bool,
    check: Option<Check>,
}

fn case(name: &'static str, request: String, status: u16) -> Case {
    Case {
        name,
        request,
        status,
        closes: false,
        head: false,
        check: None,
    }
}

impl Case {
    fn closing(mut self) -> Self {
        self.closes = true;
        self
    }
    fn head(mut self) -> Self {
        self.head = true;
        self
    }
    fn check(mut self, f: impl Fn(&Resp, &Site) + 'static) -> Self {
        self.check = Some(Box::new(f));
        self
    }
}

fn body_is(want: &'static [u8]) -> impl Fn(&Resp, &Site) {
    move |r, _| assert_eq!(r.body, want)
}

fn cases() -> Vec<Case> {
    let far_future = "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n";
    let long_ago = "Sat, 01 Jan 1994 00:00:00 GMT";
    vec![
        case("get small", get("/small.html", ""), 200).check(|r, _| {
            assert_eq!(r.body, SMALL);
            assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
            assert_eq!(r.header("content-length"), Some("87"));
            assert_eq!(r.header("accept-ranges"), Some("bytes"));
            assert_eq!(r.header("server"), Some("httplab"));
            assert!(r
                .header("etag")
                .is_some_and(|e| e.starts_with('"') && e.ends_with('"')));
            assert!(r
                .header("last-modified")
                .is_some_and(|d| d.ends_with(" GMT")));
            assert!(r
                .header("date")
                .is_some_and(|d| d.ends_with(" GMT") && d.len() == 29));
        }),
        case("get 4k text", get("/4k.txt", ""), 200).check(|r, _| {
            assert_eq!(r.body.len(), 4096);
            assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        }),
        case("json type", get("/data.json", ""), 200).check(|r, _| {
            assert_eq!(
                r.header("content-type"),
                Some("application/json; charset=utf-8")
            )
        }),
        case("unknown type", get("/blob.unknownext", ""), 200)
            .check(|r, _| assert_eq!(r.header("content-type"), Some("application/octet-stream"))),
        case(
            "head small",
            "HEAD /small.html HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            200,
        )
        .head()
        .check(|r, _| {
            assert_eq!(r.header("content-length"), Some("87"));
            assert!(r.body.is_empty());
        }),
        case("missing", get("/nope.html", ""), 404),
        case(
            "head missing",
            "HEAD /nope HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            404,
        )
        .head(),
        case(
            "post",
            "POST /small.html HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n".into(),
            405,
        )
        .check(|r, _| assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"))),
        case(
            "delete",
            "DELETE /small.html HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            405,
        )
        .check(|r, _| assert!(r.header("allow").is_some())),
        case(
            "post with body drained",
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello".into(),
            405,
        ),
        case(
            "options star",
            "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            200,
        )
        .check(|r, _| assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"))),
        case(
            "options path",
            "OPTIONS /small.html HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            200,
        ),
        case(
            "unknown transfer-encoding",
            get("/", "Transfer-Encoding: gzip\r\n"),
            501,
        )
        .closing(),
        case(
            "chunked body refused",
            get("/", "Transfer-Encoding: chunked\r\n"),
            411,
        )
        .closing(),
        case(
            "http2 preface",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".into(),
            505,
        )
        .closing(),
        case("http/1.2", "GET / HTTP/1.2\r\nHost: t\r\n\r\n".into(), 505).closing(),
        case(
            "http/2.0 line",
            "GET / HTTP/2.0\r\nHost: t\r\n\r\n".into(),
            505,
        )
        .closing(),
        case(
            "garbage version",
            "GET / HTTX/1.1\r\nHost: t\r\n\r\n".into(),
            400,
        )
        .closing(),
        case("dir redirect", get("/sub", ""), 301)
            .check(|r, _| assert_eq!(r.header("location"), Some("/sub/"))),
        case("dir redirect keeps query", get("/sub?x=1", ""), 301)
            .check(|r, _| assert_eq!(r.header("location"), Some("/sub/?x=1"))),
        case("dir index", get("/sub/", ""), 200).check(body_is(b"<h1>sub index</h1>\n")),
        case("root index", get("/", ""), 200).check(body_is(b"<h1>root</h1>\n")),
        case("dir without index", get("/noindex/", ""), 404),
        case("percent-decoded path", get("/a%20b/c%20d.txt", ""), 200).check(body_is(b"spaces\n")),
        case("get mid", get("/mid.bin", ""), 200).check(|r, _| assert!(r.body == mid())),
        case(
            "range mid",
            get("/mid.bin", "Range: bytes=100-30000\r\n"),
            206,
        )
        .check(|r, _| assert!(r.body == mid()[100..=30000])),
        case("query ignored", get("/small.html?v=1&x", ""), 200),
        case(
            "absolute form",
            "GET http://test/small.html HTTP/1.1\r\nHost: test\r\n\r\n".into(),
            200,
        ),
        case("symlink inside root", get("/inside-link.html", ""), 200),
        case("dot segments inside", get("/sub/../small.html", ""), 200)
            .check(|r, _| assert_eq!(r.body, SMALL)),
        case("single dot", get("/./small.html", ""), 200),
        case("traversal", get("/../outside/secret.txt", ""), 404),
        case(
            "deep traversal",
            get("/sub/../../outside/secret.txt", ""),
            404,
        ),
        case(
            "encoded traversal",
            get("/%2e%2e/outside/secret.txt", ""),
            404,
        ),
        case(
            "encoded slash traversal",
            get("/sub%2f..%2f..%2foutside%2fsecret.txt", ""),
            404,
        ),
        case(
            "double-encoded traversal",
            get("/%252e%252e/outside/secret.txt", ""),
            404,
        ),
        case("symlink escape file", get("/escape.txt", ""), 404),
        case("symlink escape dir", get("/escape-dir/secret.txt", ""), 404),
        case(
            "backslash is a name",
            get("/..\\outside\\secret.txt", ""),
            404,
        ),
        case("nul byte", get("/small.html%00.txt", ""), 400).closing(),
        case("trailing slash on file", get("/small.html/", ""), 404),
        case(
            "if-none-match star",
            get("/small.html", "If-None-Match: *\r\n"),
            304,
        )
        .check(|r, _| {
            assert!(r.body.is_empty());
            assert!(r.header("etag").is_some());
        }),
        case(
            "if-none-match other",
            get("/small.html", "If-None-Match: \"nope\"\r\n"),
            200,
        ),
        case(
            "if-modified-since future",
            get("/small.html", far_future),
            304,
        ),
        case(
            "if-modified-since past",
            get("/small.html", &format!("If-Modified-Since: {long_ago}\r\n")),
            200,
        ),
        case(
            "if-modified-since garbage",
            get("/small.html", "If-Modified-Since: yesterday\r\n"),
            200,
        ),
        case(
            "if-match other",
            get("/small.html", "If-Match: \"nope\"\r\n"),
            412,
        ),
        case("if-match star", get("/small.html", "If-Match: *\r\n"), 200),
        case(
            "if-unmodified-since past",
            get(
                "/small.html",
                &format!("If-Unmodified-Since: {long_ago}\r\n"),
            ),
            412,
        ),
        case(
            "range first bytes",
            get("/small.html", "Range: bytes=0-8\r\n"),
            206,
        )
        .check(|r, _| {
            assert_eq!(r.body, &SMALL[..9]);
            assert_eq!(r.header("content-range"), Some("bytes 0-8/87"));
        }),
        case(
            "range suffix",
            get("/small.html", "Range: bytes=-4\r\n"),
            206,
        )
        .check(|r, _| {
            assert_eq!(r.body, &SMALL[83..]);
            assert_eq!(r.header("content-range"), Some("bytes 83-86/87"));
        }),
        case(
            "range open end",
            get("/small.html", "Range: bytes=80-\r\n"),
            206,
        )
        .check(|r, _| assert_eq!(r.body, &SMALL[80..])),
        case(
            "range unsatisfiable",
            get("/small.html", "Range: bytes=1000-2000\r\n"),
            416,
        )
        .check(|r, _| assert_eq!(r.header("content-range"), Some("bytes */87"))),
        case(
            "range bad unit ignored",
            get("/small.html", "Range: lines=1-2\r\n"),
            200,
        ),
        case(
            "multiple ranges",
            get("/small.html", "Range: bytes=0-1,10-11\r\n"),
            206,
        )
        .check(|r, _| {
            let ct = r.header("content-type").unwrap_or_default();
            assert!(ct.starts_with("multipart/byteranges; boundary="), "{ct}");
            let boundary = &ct["multipart/byteranges; boundary=".len()..];
            let body = String::from_utf8_lossy(&r.body);
            assert!(
                body.contains("Content-Range: bytes 0-1/87\r\n\r\n<!\r\n"),
                "{body}"
            );
            assert!(
                body.contains("Content-Range: bytes 10-11/87\r\n\r\nht\r\n"),
                "{body}"
            );
            assert!(body.ends_with(&format!("--{boundary}--\r\n")));
        }),
        case(
            "if-range mismatch gives full",
            get("/small.html", "Range: bytes=0-1\r\nIf-Range: \"old\"\r\n"),
            200,
        )
        .check(|r, _| assert_eq!(r.body, SMALL)),
        case(
            "range on head ignored",
            "HEAD /small.html HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\n\r\n".into(),
            200,
        )
        .head(),
        case(
            "big range in file",
            get("/big.bin", "Range: bytes=1000000-1000099\r\n"),
            206,
        )
        .check(|r, s| assert_eq!(r.body, &s.big[1_000_000..1_000_100])),
        case(
            "big multiple ranges",
            get("/big.bin", "Range: bytes=0-9,-10\r\n"),
            206,
        )
        .check(|r, s| {
            assert!(find(&r.body, &s.big[..10]).is_some());
            assert!(find(&r.body, &s.big[s.big.len() - 10..]).is_some());
        }),
        case(
            "request line too long",
            get(&format!("/{}", "a".repeat(9000)), ""),
            414,
        )
        .closing(),
        case("too many fields", get("/", &"X-A: b\r\n".repeat(101)), 431).closing(),
        case(
            "header block too large",
            get("/", &format!("X-Big: {}\r\n", "b".repeat(17 * 1024))),
            431,
        )
        .closing(),
        case(
            "cl and te",
            get("/", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"),
            400,
        )
        .closing(),
        case(
            "differing content-length",
            get("/", "Content-Length: 1\r\nContent-Length: 2\r\n"),
            400,
        )
        .closing(),
        case("obs-fold", get("/", "X-A: b\r\n  folded\r\n"), 400).closing(),
        case("space before colon", get("/", "X-A : b\r\n"), 400).closing(),
        case(
            "invalid method token",
            "G@T / HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            400,
        )
        .closing(),
        case("invalid header name", get("/", "X(A): b\r\n"), 400).closing(),
        case("missing host", "GET / HTTP/1.1\r\n\r\n".into(), 400).closing(),
        case("two hosts", get("/", "Host: other\r\n"), 400).closing(),
        case(
            "relative target",
            "GET small.html HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            400,
        )
        .closing(),
        case(
            "body too large",
            get("/", "Content-Length: 2000000\r\n"),
            413,
        )
        .closing(),
        case(
            "http/1.0 closes",
            "GET /small.html HTTP/1.0\r\n\r\n".into(),
            200,
        )
        .closing(),
        case(
            "connection close",
            get("/small.html", "Connection: close\r\n"),
            200,
        )
        .closing(),
        case(
            "leading empty lines",
            format!("\r\n\r\n{}", get("/small.html", "")),
            200,
        ),
    ]
}

/// One case on a fresh connection: status, checks, and whether the
/// connection stays usable (verified by a second request) or closes.
fn run_case(c: &Case, v: &Variant, addr: std::net::SocketAddr, site: &Site) {
    let mut cl = Client::new(addr);
    cl.send(c.request.as_bytes());
    let r = cl
        .read_response(c.head)
        .unwrap_or_else(|| panic!("[{}] {}: no response", v.name, c.name));
    assert_eq!(
        r.status, c.status,
        "[{}] {}: status ({:?})",
        v.name, c.name, r.headers
    );
    if let Some(check) = &c.check {
        check(&r, site);
    }
    assert!(
        find(&r.body, b"TOP-SECRET").is_none(),
        "[{}] {}: leaked a byte from outside the root",
        v.name,
        c.name
    );
    let must_close = c.closes || !v.keep_alive;
    if must_close {
        assert!(
            r.closes(),
            "[{}] {}: Connection: close expected",
            v.name,
            c.name
        );
        assert!(cl.at_eof(), "[{}] {}: server must close", v.name, c.name);
    } else {
        assert!(
            !r.closes(),
            "[{}] {}: unexpected Connection: close",
            v.name,
            c.name
        );
        cl.send(get("/small.html", "").as_bytes());
        let again = cl
            .read_response(false)
            .unwrap_or_else(|| panic!("[{}] {}: connection not reusable", v.name, c.name));
        assert_eq!(again.status, 200, "[{}] {}: follow-up", v.name, c.name);
        assert_eq!(again.body, SMALL);
    }
}

#[test]
fn every_rule_on_every_variant() {
    let site = site();
    let cases = cases();
    for v in variants() {
        let server = start(config(&v, &site.root));
        for c in &cases {
            run_case(c, &v, server.local_addr(), &site);
        }
        server.shutdown();
    }
}

#[test]
fn pipeline_depth_100_byte_exact_in_order() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let server = start(config(&v, &site.root));
        let paths = ["/small.html", "/4k.txt", "/sub/", "/nope", "/data.json"];
        let mut req = Vec::new();
        for i in 0..100 {
            let method = if i % 7 == 3 { "HEAD" } else { "GET" };
            req.extend_from_slice(
                format!(
                    "{method} {}?i={i} HTTP/1.1\r\nHost: t\r\n\r\n",
                    paths[i % paths.len()]
                )
                .as_bytes(),
            );
        }
        // Expected answers first, one request at a time on a connection of
        // its own (closed before the pipeline starts, so the single model
        // can serve the next connection).
        let mut expected = Vec::new();
        let mut one = Client::new(server.local_addr());
        for i in 0..100 {
            let method = if i % 7 == 3 { "HEAD" } else { "GET" };
            one.send(
                format!(
                    "{method} {}?i={i} HTTP/1.1\r\nHost: t\r\n\r\n",
                    paths[i % paths.len()]
                )
                .as_bytes(),
            );
            expected.push(one.read_response(i % 7 == 3).expect("single response"));
        }
        drop(one);
        let mut cl = Client::new(server.local_addr());
        cl.send(&req);
        for (i, e) in expected.iter().enumerate() {
            let r = cl.read_response(i % 7 == 3).expect("pipelined response");
            assert_eq!(r.status, e.status, "[{}] response {i} out of order", v.name);
            assert_eq!(r.body, e.body, "[{}] response {i} body", v.name);
            assert_eq!(
                r.header("etag"),
                e.header("etag"),
                "[{}] response {i}",
                v.name
            );
        }
        server.shutdown();
    }
}

#[test]
fn pipelined_requests_split_across_reads() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let server = start(config(&v, &site.root));
        let mut cl = Client::new(server.local_addr());
        let req = get("/small.html", "").repeat(3);
        // One byte at a time: every partial-head path is exercised.
        for b in req.as_bytes() {
            cl.send(&[*b]);
        }
        for _ in 0..3 {
            assert_eq!(
                cl.read_response(false).expect("response").body,
                SMALL,
                "[{}]",
                v.name
            );
        }
        server.shutdown();
    }
}

#[test]
fn keep_alive_reuses_one_connection() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let server = start(config(&v, &site.root));
        let mut cl = Client::new(server.local_addr());
        for i in 0..20 {
            cl.send(get(&format!("/small.html?{i}"), "").as_bytes());
            let r = cl.read_response(false).expect("response");
            assert_eq!(r.status, 200);
        }
        cl.send(get("/small.html", "Connection: close\r\n").as_bytes());
        assert!(cl.read_response(false).expect("last").closes());
        assert!(cl.at_eof());
        assert_eq!(server.stats().accepted, 1, "[{}]", v.name);
        server.shutdown();
    }
}

#[test]
fn http10_keep_alive_on_request() {
    let site = site();
    let server = start(config(&variants()[0], &site.root));
    let mut cl = Client::new(server.local_addr());
    cl.send(b"GET /small.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = cl.read_response(false).unwrap();
    assert_eq!(r.header("connection"), Some("keep-alive"));
    cl.send(b"GET /small.html HTTP/1.0\r\n\r\n");
    let r = cl.read_response(false).unwrap();
    assert!(r.closes());
    assert!(cl.at_eof());
}

#[test]
fn keep_alive_off_one_response_per_connection() {
    let site = site();
    for v in variants().into_iter().filter(|v| !v.keep_alive) {
        let server = start(config(&v, &site.root));
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").repeat(3).as_bytes());
        let r = cl.read_response(false).expect("one response");
        assert!(r.closes(), "[{}]", v.name);
        assert!(cl.at_eof(), "[{}] exactly one response, then close", v.name);
        server.shutdown();
    }
}

#[test]
fn pipelining_off_answers_ten_requests_in_ten_writes() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let server = start(config(&v, &site.root));
        let mut req = get("/small.html", "").repeat(9);
        req.push_str(&get("/small.html", "Connection: close\r\n"));
        let mut cl = Client::new(server.local_addr());
        let before = server.stats().writes;
        cl.send(req.as_bytes());
        for _ in 0..10 {
            assert_eq!(cl.read_response(false).expect("response").body, SMALL);
        }
        assert!(cl.at_eof());
        let writes = server.stats().writes - before;
        if v.pipelining {
            assert!(
                writes < 10,
                "[{}] batched: {writes} writes for 10 responses",
                v.name
            );
        } else {
            assert_eq!(writes, 10, "[{}] one write per response", v.name);
        }
        server.shutdown();
    }
}

#[test]
fn large_file_byte_exact() {
    let site = site();
    for v in variants() {
        let mut cfg = config(&v, &site.root);
        // Small chunks: the transfer needs many sendfile turns.
        cfg.sendfile_chunk = 64 * 1024;
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/big.bin", "").as_bytes());
        let r = cl.read_response(false).expect("big response");
        assert_eq!(r.body.len(), site.big.len(), "[{}]", v.name);
        assert!(r.body == site.big, "[{}] big file differs", v.name);
        if v.keep_alive {
            // Head of the next response follows the file directly.
            cl.send(get("/small.html", "").as_bytes());
            assert_eq!(cl.read_response(false).unwrap().body, SMALL);
        }
        server.shutdown();
    }
}

#[test]
fn large_file_auto_mixes_both_paths_byte_exact() {
    // `--file-io auto` on a loopback peer: the event engines send a share
    // of the writes by copy and the rest by sendfile (half and half until
    // the worker has measured itself), so one transfer alternates paths
    // mid-file; the blocking models stay on sendfile. Small turns and
    // chunks give the transfer many writes.
    let site = site();
    for v in variants() {
        let mut cfg = config(&v, &site.root);
        cfg.file_io = httplab_server::FileIo::Auto;
        cfg.sendfile_chunk = 40 * 1024;
        cfg.file_chunk = 24 * 1024;
        cfg.copy_chunk = 16 * 1024 + 3;
        cfg.copy_min = Some(0);
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/big.bin", "").as_bytes());
        let r = cl.read_response(false).expect("big response");
        assert!(r.body == site.big, "[{}] big file differs", v.name);
        if v.keep_alive {
            cl.send(get("/big.bin", "Range: bytes=1000-2000000\r\n").as_bytes());
            let r = cl.read_response(false).expect("range response");
            assert!(
                r.body == site.big[1000..=2000000],
                "[{}] range differs",
                v.name
            );
        }
        drop(cl);
        let snap = server.shutdown();
        // The per-path counts hold file bytes only, not response heads.
        let range = if v.keep_alive { 2000000 - 1000 + 1 } else { 0 };
        let files = snap.file_copy_bytes + snap.file_sendfile_bytes;
        assert_eq!(
            files,
            site.big.len() as u64 + range,
            "[{}] {snap:?}",
            v.name
        );
        if v.model == httplab_server::Model::Event {
            assert!(
                snap.file_copy_bytes > 0 && snap.file_sendfile_bytes > 0,
                "[{}] both paths: {snap:?}",
                v.name
            );
        } else {
            assert_eq!(snap.file_copy_bytes, 0, "[{}] sendfile only", v.name);
        }
    }
}

#[test]
fn large_file_byte_exact_with_pread() {
    // pread + sendmsg: the head goes out in front of the first chunk, a
    // short write resumes mid-chunk, ranges start mid-file; odd chunk sizes
    // so no boundary lines up with the file's.
    let site = site();
    let big = &site.big;
    for v in variants() {
        for chunk in [4096usize, 64 * 1024 + 7] {
            let mut cfg = config(&v, &site.root);
            cfg.file_io = httplab_server::FileIo::Pread;
            cfg.copy_chunk = chunk;
            cfg.sendfile_chunk = 48 * 1024;
            let server = start(cfg);
            let mut cl = Client::new(server.local_addr());
            let mut reqs = get("/big.bin", "");
            if v.keep_alive {
                reqs.push_str(&get("/big.bin", "Range: bytes=1000-200000\r\n"));
                reqs.push_str(&get("/big.bin", "Range: bytes=5-9,70000-140001\r\n"));
                reqs.push_str(&get("/small.html", ""));
            }
            if v.pipelining {
                cl.send(reqs.as_bytes());
            } else {
                cl.send(get("/big.bin", "").as_bytes());
            }
            let r = cl.read_response(false).expect("big response");
            assert_eq!(r.body.len(), big.len(), "[{}] chunk {chunk}", v.name);
            assert!(
                r.body == *big,
                "[{}] chunk {chunk}: big file differs",
                v.name
            );
            if !v.keep_alive {
                server.shutdown();
                continue;
            }
            if !v.pipelining {
                cl.send(get("/big.bin", "Range: bytes=1000-200000\r\n").as_bytes());
            }
            let r = cl.read_response(false).expect("range response");
            assert_eq!(r.status, 206, "[{}]", v.name);
            assert!(r.body == big[1000..=200000], "[{}] range differs", v.name);
            if !v.pipelining {
                cl.send(get("/big.bin", "Range: bytes=5-9,70000-140001\r\n").as_bytes());
            }
            let r = cl.read_response(false).expect("multipart response");
            assert_eq!(r.status, 206, "[{}]", v.name);
            assert!(
                find(&r.body, &big[5..=9]).is_some()
                    && find(&r.body, &big[70000..=140001]).is_some(),
                "[{}] multipart parts differ",
                v.name
            );
            if !v.pipelining {
                cl.send(get("/small.html", "").as_bytes());
            }
            assert_eq!(cl.read_response(false).unwrap().body, SMALL, "[{}]", v.name);
            server.shutdown();
        }
    }
}

#[test]
fn client_that_does_not_read_is_not_buffered_without_bound() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let server = start(config(&v, &site.root));
        let mut s = connect(server.local_addr());
        s.set_write_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        // Keep sending requests for the big file without reading: the
        // server must stop reading (our writes eventually block) rather
        // than queue gigabytes of responses.
        let req = get("/big.bin", "");
        let mut sent = 0usize;
        for _ in 0..200_000 {
            match s.write(req.as_bytes()) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        assert!(
            sent < 200_000 * req.len(),
            "[{}] server kept reading",
            v.name
        );
        // Reading now gets complete responses in order.
        s.set_read_timeout(Some(READ_GUARD)).unwrap();
        let mut cl = Client::wrap(s);
        let r = cl.read_response(false).expect("first response");
        assert!(r.body == site.big);
        drop(cl);
        server.shutdown();
    }
}

#[test]
fn idle_timeout_closes_quiet_connections() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let mut cfg = config(&v, &site.root);
        cfg.idle_timeout = Duration::from_millis(200);
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").as_bytes());
        assert_eq!(cl.read_response(false).unwrap().status, 200);
        // No further request: the server closes, sending nothing.
        assert!(cl.at_eof(), "[{}] idle connection closed", v.name);
        server.shutdown();
    }
}

#[test]
fn header_timeout_gives_408() {
    let site = site();
    for v in variants() {
        let mut cfg = config(&v, &site.root);
        cfg.header_timeout = Duration::from_millis(200);
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(b"GET /small.html HTTP/1.1\r\nHost: t\r\n");
        let r = cl.read_response(false).expect("408");
        assert_eq!(r.status, 408, "[{}]", v.name);
        assert!(r.closes());
        assert!(cl.at_eof());
        server.shutdown();
    }
}

#[test]
fn empty_lines_alone_meet_the_header_deadline() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let mut cfg = config(&v, &site.root);
        cfg.header_timeout = Duration::from_millis(200);
        cfg.idle_timeout = Duration::from_secs(60);
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(b"\r\n\r\n");
        // Not an idle connection: the header deadline applies (408).
        let r = cl.read_response(false).expect("408");
        assert_eq!(r.status, 408, "[{}]", v.name);
        assert!(cl.at_eof());
        server.shutdown();
    }
}

#[test]
fn get_with_body_is_drained_and_connection_kept() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let server = start(config(&v, &site.root));
        let mut cl = Client::new(server.local_addr());
        let body = "x".repeat(100_000);
        cl.send(
            format!(
                "GET /small.html HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        cl.send(get("/4k.txt", "").as_bytes());
        assert_eq!(cl.read_response(false).unwrap().body, SMALL, "[{}]", v.name);
        assert_eq!(
            cl.read_response(false).unwrap().body.len(),
            4096,
            "[{}]",
            v.name
        );
        server.shutdown();
    }
}

#[test]
fn max_requests_per_connection() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let mut cfg = config(&v, &site.root);
        cfg.max_requests_per_conn = Some(3);
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").repeat(5).as_bytes());
        for i in 0..3 {
            let r = cl.read_response(false).expect("response");
            assert_eq!(r.closes(), i == 2, "[{}] response {i}", v.name);
        }
        assert!(cl.at_eof(), "[{}]", v.name);
        server.shutdown();
    }
}

#[test]
fn small_pipeline_buffer_limits_head() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let mut cfg = config(&v, &site.root);
        cfg.pipeline_buffer = 2048;
        let server = start(cfg);
        // Many small pipelined requests still work with a small buffer.
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").repeat(200).as_bytes());
        for _ in 0..200 {
            assert_eq!(cl.read_response(false).unwrap().status, 200);
        }
        // A head larger than the buffer is refused.
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/", &format!("X-A: {}\r\n", "b".repeat(3000))).as_bytes());
        assert_eq!(cl.read_response(false).unwrap().status, 431, "[{}]", v.name);
        server.shutdown();
    }
}

#[test]
fn changed_file_is_served_fresh() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let mut cfg = config(&v, &site.root);
        cfg.revalidate = Duration::ZERO;
        let server = start(cfg);
        let path = site.root.join("changing.txt");
        std::fs::write(&path, b"one\n").unwrap();
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/changing.txt", "").as_bytes());
        assert_eq!(cl.read_response(false).unwrap().body, b"one\n");
        std::fs::write(&path, b"second\n").unwrap();
        cl.send(get("/changing.txt", "").as_bytes());
        assert_eq!(
            cl.read_response(false).unwrap().body,
            b"second\n",
            "[{}]",
            v.name
        );
        std::fs::remove_file(&path).unwrap();
        cl.send(get("/changing.txt", "").as_bytes());
        assert_eq!(cl.read_response(false).unwrap().status, 404, "[{}]", v.name);
        server.shutdown();
    }
}

#[test]
fn directory_listing_when_enabled() {
    let site = site();
    let mut cfg = config(&variants()[0], &site.root);
    cfg.list_dirs = true;
    let server = start(cfg);
    let mut cl = Client::new(server.local_addr());
    cl.send(get("/noindex/", "").as_bytes());
    let r = cl.read_response(false).unwrap();
    assert_eq!(r.status, 200);
    assert!(find(&r.body, b"href=\"file.txt\"").is_some());
}

#[test]
fn access_log_common_format() {
    let site = site();
    let log = site.dir.path().join("access.log");
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let _ = std::fs::remove_file(&log);
        let mut cfg = config(&v, &site.root);
        cfg.access_log = Some(httplab_server::AccessLog::File(log.clone()));
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "Connection: close\r\n").as_bytes());
        cl.read_response(false).unwrap();
        assert!(cl.at_eof());
        server.shutdown();
        let text = std::fs::read_to_string(&log).unwrap();
        let line = text.lines().next().unwrap_or_default();
        assert!(line.starts_with("127.0.0.1 - - ["), "[{}] {line}", v.name);
        assert!(
            line.ends_with("\"GET /small.html HTTP/1.1\" 200 87"),
            "[{}] {line}",
            v.name
        );
    }
}

#[test]
fn graceful_shutdown_finishes_response_in_flight() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let mut cfg = config(&v, &site.root);
        cfg.sendfile_chunk = 16 * 1024;
        let server = start(cfg);
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/big.bin", "").as_bytes());
        // Read the first bytes so the response is in flight, then stop.
        let mut first = [0u8; 16];
        cl.stream.read_exact(&mut first).unwrap();
        let t = std::thread::spawn(move || server.shutdown());
        let mut rest = Vec::new();
        cl.stream.read_to_end(&mut rest).unwrap();
        let mut all = first.to_vec();
        all.extend_from_slice(&rest);
        let body_at = find(&all, b"\r\n\r\n").unwrap() + 4;
        assert!(
            all[body_at..] == site.big[..],
            "[{}] in-flight response completed",
            v.name
        );
        // (Whether the port still answers is not checked: another test may
        // already have been given the freed port.)
        let last = t.join().unwrap();
        assert_eq!(last.open, 0, "[{}] every connection closed", v.name);
    }
}

#[test]
fn startup_errors_are_clear() {
    let site = site();
    let mut cfg = httplab_server::ServerConfig::for_root(site.root.join("does-not-exist"));
    let e = httplab_server::Server::start(cfg.clone()).unwrap_err();
    assert!(format!("{e:#}").contains("does-not-exist"), "{e:#}");
    cfg.root = site.root.clone();
    let first = start(cfg.clone());
    for model in [httplab_server::Model::Event, httplab_server::Model::Threads] {
        cfg.listen = first.local_addr();
        cfg.model = model;
        let e = httplab_server::Server::start(cfg.clone()).unwrap_err();
        assert!(format!("{e:#}").contains("address already in use"), "{e:#}");
    }
    cfg.root = site.root.join("small.html");
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    assert!(httplab_server::Server::start(cfg).is_err());
}

#[test]
fn stats_json_lines_parse() {
    let site = site();
    let path = site.dir.path().join("stats.jsonl");
    let mut cfg = config(&variants()[0], &site.root);
    cfg.stats_interval = Some(Duration::from_secs(3600));
    cfg.stats_json = Some(path.clone());
    let server = start(cfg);
    let mut cl = Client::new(server.local_addr());
    for _ in 0..5 {
        cl.send(get("/small.html", "").as_bytes());
        cl.read_response(false).unwrap();
    }
    drop(cl);
    server.shutdown();
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().last().expect("a stats line at shutdown");
    for key in [
        "\"t\":",
        "\"open\":",
        "\"accepted\":",
        "\"requests\":",
        "\"bytes_out\":",
        "\"rss\":",
        "\"cpu_pct\":",
    ] {
        assert!(line.contains(key), "{key} missing in {line}");
    }
    let requests: u64 = line
        .split("\"requests\":")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .expect("requests number");
    assert_eq!(requests, 5);
}

fn peer_has_nothing_yet(cl: &mut Client) -> bool {
    // Non-blocking peek: a correct server has sent nothing, so this never
    // fails spuriously (a wrong server might slip through, never the
    // reverse).
    cl.stream.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let r = cl.stream.peek(&mut b);
    cl.stream.set_nonblocking(false).unwrap();
    matches!(r, Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn threads_model_with_one_thread_serves_clients_in_turn() {
    let site = site();
    let v = variants()
        .into_iter()
        .find(|v| v.model == httplab_server::Model::Threads)
        .unwrap();
    let mut cfg = config(&v, &site.root);
    cfg.threads = 1;
    cfg.queue = 1;
    let server = start(cfg);
    let mut a = Client::new(server.local_addr());
    a.send(get("/small.html", "").as_bytes());
    assert_eq!(a.read_response(false).unwrap().status, 200);
    let mut b = Client::new(server.local_addr());
    b.send(get("/4k.txt", "").as_bytes());
    // The only thread is still busy with A's keep-alive connection.
    assert!(peer_has_nothing_yet(&mut b));
    a.send(get("/small.html", "Connection: close\r\n").as_bytes());
    assert!(a.read_response(false).unwrap().closes());
    assert!(a.at_eof());
    // Now B is served.
    assert_eq!(b.read_response(false).unwrap().body.len(), 4096);
}

#[test]
fn max_connections_pauses_accepting_until_one_closes() {
    let site = site();
    for v in variants()
        .into_iter()
        .filter(|v| v.model == httplab_server::Model::Event && v.keep_alive)
    {
        let mut cfg = config(&v, &site.root);
        cfg.workers = 1;
        cfg.max_connections = 2;
        let server = start(cfg);
        let mut a = Client::new(server.local_addr());
        let mut b = Client::new(server.local_addr());
        for c in [&mut a, &mut b] {
            c.send(get("/small.html", "").as_bytes());
            assert_eq!(c.read_response(false).unwrap().status, 200);
        }
        // The third connection completes the handshake (backlog) but is not
        // accepted while two are open.
        let mut c = Client::new(server.local_addr());
        c.send(get("/small.html", "").as_bytes());
        assert!(peer_has_nothing_yet(&mut c));
        drop(a);
        assert_eq!(c.read_response(false).unwrap().status, 200, "[{}]", v.name);
        assert_eq!(server.stats().accepted, 3);
        server.shutdown();
    }
}

#[test]
fn fork_model_reaps_every_child() {
    let site = site();
    let v = variants()
        .into_iter()
        .find(|v| v.model == httplab_server::Model::Fork && !v.keep_alive)
        .unwrap();
    let mut cfg = config(&v, &site.root);
    cfg.max_children = 8;
    let server = start(cfg);
    let mut max_unreaped = 0;
    for _ in 0..1000 {
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").as_bytes());
        assert_eq!(cl.read_response(false).unwrap().status, 200);
        assert!(cl.at_eof());
        let st = server.stats();
        max_unreaped = max_unreaped.max(st.forked - st.reaped);
    }
    // Children exit after their connection; the parent reaps them as they
    // go, so unreaped children never exceed the cap.
    assert!(
        max_unreaped <= 8,
        "{max_unreaped} unreaped children at once"
    );
    let st = server.stats();
    assert_eq!((st.accepted, st.forked), (1000, 1000));
    // Whatever the process-wide picture (other tests fork too), this
    // server reaped every child it made.
    let last = server.shutdown();
    assert_eq!(last.reaped, 1000, "children reaped");
}

#[test]
fn random_garbage_never_kills_the_server() {
    let site = site();
    let seeds = [
        get("/small.html", "Range: bytes=0-1,3-4\r\nIf-None-Match: \"x\"\r\n"),
        get("/sub/../%2e%2e/%00/", "Content-Length: 3\r\n\r\nabc"),
        "GET http://x/big.bin HTTP/1.0\r\nRange: bytes=-5\r\nIf-Range: Sat, 01 Jan 2000 00:00:00 GMT\r\n\r\n".to_string(),
    ];
    for v in variants()
        .into_iter()
        .filter(|v| v.keep_alive && v.pipelining)
    {
        let mut cfg = config(&v, &site.root);
        cfg.header_timeout = Duration::from_millis(300);
        cfg.idle_timeout = Duration::from_millis(300);
        let server = start(cfg);
        let mut rng = 0x2545_f491_4f6c_dd1d_u64 ^ v.name.len() as u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for i in 0..60 {
            let mut buf = seeds[i % seeds.len()].as_bytes().to_vec();
            for _ in 0..(1 + next() % 8) {
                let pos = (next() as usize) % buf.len();
                buf[pos] = next() as u8;
            }
            let mut s = connect(server.local_addr());
            let _ = s.write_all(&buf);
            let _ = s.shutdown(std::net::Shutdown::Write);
            // Whatever the answer, the server ends the exchange.
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
        let mut cl = Client::new(server.local_addr());
        cl.send(get("/small.html", "").as_bytes());
        assert_eq!(
            cl.read_response(false).unwrap().body,
            SMALL,
            "[{}] still serving",
            v.name
        );
        server.shutdown();
    }
}

/// A pipeline far larger than the read buffer, sent in one write: the
/// server takes what fits, answers, and reads on (the io_uring engine parks
/// what its multishot receive delivered beyond the buffer and pauses the
/// receive); every answer arrives, in order, and the connection stays open.
#[test]
fn pipeline_larger_than_the_read_buffer_is_answered_in_order() {
    let site = site();
    for v in variants().into_iter().filter(|v| v.keep_alive) {
        let mut cfg = config(&v, &site.root);
        cfg.pipeline_buffer = 1024;
        let server = start(cfg);
        let mut req = Vec::new();
        for i in 0..400 {
            req.extend_from_slice(
                format!("GET /small.html?i={i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            );
        }
        assert!(req.len() > 16 * 1024);
        let mut cl = Client::new(server.local_addr());
        cl.send(&req);
        for i in 0..400 {
            let r = cl
                .read_response(false)
                .unwrap_or_else(|| panic!("[{}] response {i} missing", v.name));
            assert_eq!(r.status, 200, "[{}] response {i}", v.name);
            assert_eq!(r.body, SMALL, "[{}] response {i}", v.name);
        }
        cl.send(get("/small.html", "").as_bytes());
        let again = cl
            .read_response(false)
            .unwrap_or_else(|| panic!("[{}] connection not reusable", v.name));
        assert_eq!(again.status, 200, "[{}] follow-up", v.name);
        server.shutdown();
    }
}

/// Adds `--precompressed` fixtures to a site: `app.js` with `.gz`, `.br`
/// and `.zst` siblings, a large `big.css` with a large `.gz` (sent from
/// a descriptor), a directory index with a `.gz`, and siblings that must
/// not count: a directory, a symlink out of the root, and none at all.
struct Precompressed {
    app: Vec<u8>,
    app_gz: Vec<u8>,
    app_br: Vec<u8>,
    app_zst: Vec<u8>,
    big_gz: Vec<u8>,
    sub_gz: Vec<u8>,
}

fn add_precompressed(site: &Site) -> Precompressed {
    let r = &site.root;
    let p = Precompressed {
        app: pattern(3000, 11).iter().map(|b| b'a' + b % 26).collect(),
        app_gz: pattern(1200, 12),
        app_br: pattern(900, 13),
        app_zst: pattern(1000, 14),
        big_gz: pattern(200 * 1024 + 3, 15),
        sub_gz: pattern(40, 16),
    };
    std::fs::write(r.join("app.js"), &p.app).unwrap();
    std::fs::write(r.join("app.js.gz"), &p.app_gz).unwrap();
    std::fs::write(r.join("app.js.br"), &p.app_br).unwrap();
    std::fs::write(r.join("app.js.zst"), &p.app_zst).unwrap();
    std::fs::write(r.join("big.css"), pattern(300 * 1024, 17)).unwrap();
    std::fs::write(r.join("big.css.gz"), &p.big_gz).unwrap();
    std::fs::write(r.join("sub/index.html.gz"), &p.sub_gz).unwrap();
    std::fs::write(r.join("plain.txt"), b"no siblings\n").unwrap();
    std::fs::write(r.join("dir.html"), b"<p>dir</p>\n").unwrap();
    std::fs::create_dir(r.join("dir.html.gz")).unwrap();
    std::fs::write(r.join("escape.js"), b"inside\n").unwrap();
    std::os::unix::fs::symlink(&site.secret, r.join("escape.js.gz")).unwrap();
    p
}

fn precompressed_config(v: &Variant, site: &Site) -> httplab_server::ServerConfig {
    let mut cfg = config(v, &site.root);
    cfg.precompressed = httplab_server::Coding::DEFAULT_ORDER.to_vec();
    cfg.small_file_max = 64 * 1024;
    cfg.cache_control = [
        "css,JS,woff2=public, max-age=31536000, immutable",
        "html=no-cache",
        "*=max-age=300",
    ]
    .iter()
    .map(|s| s.parse().expect("rule"))
    .collect();
    cfg
}

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// What a coded variant response must carry.
fn coded(r: &Resp, coding: &str, body: &[u8], ctype: &str) {
    assert_eq!(
        r.header("content-encoding"),
        Some(coding),
        "{:?}",
        r.headers
    );
    assert_eq!(r.header("content-type"), Some(ctype));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(
        r.header("content-length"),
        Some(body.len().to_string().as_str())
    );
    assert!(r.body == body, "variant body differs");
}

fn identity(r: &Resp, body: &[u8], vary: bool) {
    assert_eq!(r.header("content-encoding"), None, "{:?}", r.headers);
    assert_eq!(r.header("vary").is_some(), vary, "{:?}", r.headers);
    assert!(r.body == body, "identity body differs");
}

fn precompressed_cases(p: &Precompressed, etags: &[(String, String)]) -> Vec<Case> {
    let js = "text/javascript; charset=utf-8";
    let tag = |name: &str| {
        etags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
            .expect("etag fetched")
    };
    let (id_tag, gz_tag, br_tag) = (tag("identity"), tag("gzip"), tag("br"));
    let ae = |v: &str| format!("Accept-Encoding: {v}\r\n");
    let far_future = "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n";
    let (app, gz, br, zst) = (
        p.app.clone(),
        p.app_gz.clone(),
        p.app_br.clone(),
        p.app_zst.clone(),
    );
    let big_gz = p.big_gz.clone();
    let sub_gz = p.sub_gz.clone();
    let gz_len = gz.len();
    let mut cases = vec![];
    let mut add = |name, headers: String, status, f: Box<dyn Fn(&Resp)>| {
        cases.push(case(name, get("/app.js", &headers), status).check(move |r, _| f(r)));
    };
    let g = gz.clone();
    add(
        "gzip",
        ae("gzip"),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let b = br.clone();
    add(
        "br preferred on a tie",
        ae("gzip, deflate, br, zstd"),
        200,
        Box::new(move |r| coded(r, "br", &b, js)),
    );
    let g = gz.clone();
    add(
        "q-values",
        ae("br;q=0.5, zstd;q=0.4, gzip"),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let z = zst.clone();
    add(
        "zstd by q",
        ae("br;q=0.5, zstd;q=0.9, gzip;q=0.8"),
        200,
        Box::new(move |r| coded(r, "zstd", &z, js)),
    );
    let g = gz.clone();
    add(
        "x-gzip, case-insensitive",
        ae("X-GZIP"),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let b = br.clone();
    add(
        "star",
        ae("*"),
        200,
        Box::new(move |r| coded(r, "br", &b, js)),
    );
    let z = zst.clone();
    add(
        "star with refusals",
        ae("*;q=0.5, br;q=0"),
        200,
        Box::new(move |r| coded(r, "zstd", &z, js)),
    );
    let g = gz.clone();
    add(
        "two fields",
        format!("{}{}", ae("deflate"), ae("gzip")),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let a = app.clone();
    add(
        "no accept-encoding",
        String::new(),
        200,
        Box::new(move |r| {
            identity(r, &a, true);
            assert_eq!(r.header("content-type"), Some(js));
        }),
    );
    let a = app.clone();
    add(
        "identity only",
        ae("identity"),
        200,
        Box::new(move |r| identity(r, &a, true)),
    );
    let a = app.clone();
    add(
        "unknown coding",
        ae("deflate, compress"),
        200,
        Box::new(move |r| identity(r, &a, true)),
    );
    let a = app.clone();
    add(
        "identity weighted higher",
        ae("gzip;q=0.5, identity"),
        200,
        Box::new(move |r| identity(r, &a, true)),
    );
    let a = app.clone();
    add(
        "every coding refused, identity not",
        ae("br;q=0, zstd;q=0, gzip;q=0"),
        200,
        Box::new(move |r| identity(r, &a, true)),
    );
    add(
        "identity;q=0 and codings refused",
        ae("identity;q=0, br;q=0, zstd;q=0, gzip;q=0"),
        406,
        Box::new(|r| {
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
            assert_eq!(r.header("cache-control"), None);
        }),
    );
    add("star;q=0", ae("*;q=0"), 406, Box::new(|_| {}));
    let g = gz.clone();
    add(
        "identity;q=0, gzip accepted",
        ae("identity;q=0, gzip"),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let g = gz.clone();
    add(
        "range on a variant",
        format!("{}Range: bytes=10-19\r\n", ae("gzip")),
        206,
        Box::new(move |r| {
            assert_eq!(r.header("content-encoding"), Some("gzip"));
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
            assert_eq!(
                r.header("content-range"),
                Some(format!("bytes 10-19/{gz_len}").as_str())
            );
            assert_eq!(r.header("cache-control"), Some(IMMUTABLE));
            assert!(r.body == g[10..20]);
        }),
    );
    add(
        "unsatisfiable range on a variant",
        format!("{}Range: bytes={gz_len}-\r\n", ae("gzip")),
        416,
        Box::new(move |r| {
            assert_eq!(
                r.header("content-range"),
                Some(format!("bytes */{gz_len}").as_str())
            );
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        }),
    );
    let g = gz.clone();
    add(
        "several ranges of a variant: the whole variant",
        format!("{}Range: bytes=0-1,5-6\r\n", ae("gzip")),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    add(
        "if-match with the identity ETag fails for the variant",
        format!("{}If-Match: {id_tag}\r\n", ae("gzip")),
        412,
        Box::new(|r| {
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        }),
    );
    let g = gz.clone();
    add(
        "if-match with the variant's ETag",
        format!("{}If-Match: {gz_tag}\r\n", ae("gzip")),
        200,
        Box::new(move |r| coded(r, "gzip", &g, js)),
    );
    let (gt, it) = (gz_tag.clone(), id_tag.clone());
    add(
        "304 for the variant's ETag",
        format!("{}If-None-Match: {gz_tag}\r\n", ae("gzip")),
        304,
        Box::new(move |r| {
            assert_eq!(r.header("etag"), Some(gt.as_str()));
            assert_ne!(gt, it);
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
            assert_eq!(r.header("cache-control"), Some(IMMUTABLE));
            assert!(r.header("last-modified").is_some());
        }),
    );
    let g = gz.clone();
    let gt = gz_tag.clone();
    add(
        "identity ETag does not validate the variant",
        format!("{}If-None-Match: {id_tag}\r\n", ae("gzip")),
        200,
        Box::new(move |r| {
            coded(r, "gzip", &g, js);
            assert_eq!(r.header("etag"), Some(gt.as_str()));
        }),
    );
    let a = app.clone();
    add(
        "variant ETag does not validate identity",
        format!("If-None-Match: {gz_tag}\r\n"),
        200,
        Box::new(move |r| identity(r, &a, true)),
    );
    add(
        "304 for the br ETag",
        format!("{}If-None-Match: \"x\", {br_tag}\r\n", ae("br")),
        304,
        Box::new(|_| {}),
    );
    add(
        "if-modified-since per variant",
        format!("{}{far_future}", ae("gzip")),
        304,
        Box::new(|r| {
            assert_eq!(r.header("content-encoding"), None);
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        }),
    );
    let gt = gz_tag.clone();
    add(
        "if-range with the variant's ETag",
        format!("{}Range: bytes=0-0\r\nIf-Range: {gz_tag}\r\n", ae("gzip")),
        206,
        Box::new(move |r| {
            assert_eq!(r.header("etag"), Some(gt.as_str()));
        }),
    );
    cases.push(
        case(
            "head of a variant",
            format!("HEAD /app.js HTTP/1.1\r\nHost: t\r\n{}\r\n", ae("gzip")),
            200,
        )
        .head()
        .check(move |r, _| {
            assert_eq!(r.header("content-encoding"), Some("gzip"));
            assert_eq!(
                r.header("content-length"),
                Some(gz_len.to_string().as_str())
            );
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
            assert!(r.body.is_empty());
        }),
    );
    let g = gz.clone();
    cases.push(
        case("the .gz itself", get("/app.js.gz", &ae("gzip")), 200).check(move |r, _| {
            assert_eq!(r.header("content-type"), Some("application/gzip"));
            assert_eq!(r.header("content-encoding"), None);
            assert_eq!(r.header("vary"), None);
            assert_eq!(r.header("cache-control"), Some("max-age=300"));
            assert!(r.body == g);
        }),
    );
    cases.push(
        case("no siblings", get("/plain.txt", &ae("gzip, br")), 200).check(|r, _| {
            identity(r, b"no siblings\n", false);
            assert_eq!(r.header("cache-control"), Some("max-age=300"));
        }),
    );
    cases.push(
        case(
            "a directory is no variant",
            get("/dir.html", &ae("gzip")),
            200,
        )
        .check(|r, _| {
            identity(r, b"<p>dir</p>\n", false);
            assert_eq!(r.header("cache-control"), Some("no-cache"));
        }),
    );
    cases.push(
        case(
            "a sibling outside the root is no variant",
            get("/escape.js", &ae("gzip")),
            200,
        )
        .check(|r, _| identity(r, b"inside\n", false)),
    );
    let bg = big_gz.clone();
    cases.push(
        case("large variant", get("/big.css", &ae("gzip")), 200).check(move |r, _| {
            coded(r, "gzip", &bg, "text/css; charset=utf-8");
            assert_eq!(r.header("cache-control"), Some(IMMUTABLE));
        }),
    );
    let bg = big_gz.clone();
    cases.push(
        case(
            "range of a large variant",
            get("/big.css", &format!("{}Range: bytes=-100\r\n", ae("gzip"))),
            206,
        )
        .check(move |r, _| {
            assert_eq!(r.header("content-encoding"), Some("gzip"));
            assert!(r.body == bg[bg.len() - 100..]);
        }),
    );
    cases.push(
        case("large identity", get("/big.css", ""), 200).check(|r, _| {
            assert_eq!(r.body.len(), 300 * 1024);
            assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        }),
    );
    cases.push(
        case("directory index variant", get("/sub/", &ae("gzip")), 200).check(move |r, _| {
            coded(r, "gzip", &sub_gz, "text/html; charset=utf-8");
            assert_eq!(r.header("cache-control"), Some("no-cache"));
        }),
    );
    cases.push(
        case("cache-control on identity", get("/app.js", ""), 200).check(|r, _| {
            assert_eq!(r.header("cache-control"), Some(IMMUTABLE));
        }),
    );
    cases.push(
        case("no cache-control on a 404", get("/nope.js", ""), 404).check(|r, _| {
            assert_eq!(r.header("cache-control"), None);
        }),
    );
    cases
}

/// The ETags of `/app.js` as identity, gzip and br.
fn app_etags(addr: std::net::SocketAddr) -> Vec<(String, String)> {
    ["identity", "gzip", "br"]
        .iter()
        .map(|c| {
            let mut cl = Client::new(addr);
            cl.send(get("/app.js", &format!("Accept-Encoding: {c}\r\n")).as_bytes());
            let r = cl.read_response(false).expect("response");
            (c.to_string(), r.header("etag").expect("etag").to_string())
        })
        .collect()
}

#[test]
fn precompressed_variants_and_cache_control_on_every_variant() {
    let site = site();
    let p = add_precompressed(&site);
    for v in variants() {
        let server = start(precompressed_config(&v, &site));
        let etags = app_etags(server.local_addr());
        for c in &precompressed_cases(&p, &etags) {
            run_case(c, &v, server.local_addr(), &site);
        }
        server.shutdown();
    }
}

/// Without `--precompressed` siblings are plain files; without rules no
/// Cache-Control is sent.
#[test]
fn without_the_options_nothing_changes() {
    let site = site();
    let p = add_precompressed(&site);
    let server = start(config(&variants()[0], &site.root));
    let mut cl = Client::new(server.local_addr());
    cl.send(get("/app.js", "Accept-Encoding: gzip, br\r\n").as_bytes());
    let r = cl.read_response(false).expect("response");
    identity(&r, &p.app, false);
    assert_eq!(r.header("cache-control"), None);
    cl.send(
        get(
            "/app.js",
            "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n",
        )
        .as_bytes(),
    );
    let r = cl.read_response(false).expect("response");
    assert_eq!(r.status, 304);
    assert_eq!(r.header("cache-control"), None);
    server.shutdown();
}

/// A sibling that appears, changes or goes away is seen at the next
/// revalidation, and the cache never serves one variant for another.
#[test]
fn variants_follow_the_files() {
    let site = site();
    let p = add_precompressed(&site);
    let v = variants()[0];
    let mut cfg = precompressed_config(&v, &site);
    cfg.revalidate = Duration::ZERO;
    let server = start(cfg);
    let mut cl = Client::new(server.local_addr());
    let mut fetch = |path: &str, ae: &str| {
        cl.send(get(path, &format!("Accept-Encoding: {ae}\r\n")).as_bytes());
        cl.read_response(false).expect("response")
    };
    // Interleaved codings on one cached path: each gets its own bytes.
    for _ in 0..3 {
        assert!(fetch("/app.js", "gzip").body == p.app_gz);
        assert!(fetch("/app.js", "br").body == p.app_br);
        assert!(fetch("/app.js", "identity").body == p.app);
    }
    let r = fetch("/plain.txt", "gzip");
    assert_eq!(r.header("content-encoding"), None);
    std::fs::write(site.root.join("plain.txt.gz"), b"GZ-NOW").unwrap();
    let r = fetch("/plain.txt", "gzip");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, b"GZ-NOW");
    std::fs::write(site.root.join("plain.txt.gz"), b"GZ-CHANGED!").unwrap();
    assert_eq!(fetch("/plain.txt", "gzip").body, b"GZ-CHANGED!");
    std::fs::remove_file(site.root.join("plain.txt.gz")).unwrap();
    let r = fetch("/plain.txt", "gzip");
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), None);
    assert_eq!(r.body, b"no siblings\n");
    server.shutdown();
}

/// Malformed rules built in code are refused at start-up, as on the
/// command line.
#[test]
fn conflicting_cache_rules_are_a_start_up_error() {
    let site = site();
    let mut cfg = config(&variants()[0], &site.root);
    cfg.cache_control = ["css=a", "js,CSS=b"]
        .iter()
        .map(|s| s.parse().expect("rule"))
        .collect();
    let e = httplab_server::Server::start(cfg).unwrap_err();
    assert!(
        format!("{e:#}").contains("'css' is given two rules"),
        "{e:#}"
    );
}
