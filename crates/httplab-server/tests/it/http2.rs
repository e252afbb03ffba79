//! HTTP/2 (`--http2 on`, event model on epoll): the server on 127.0.0.1
//! port 0 answers h2c by prior knowledge and HTTP/1.1 on one port, driven
//! by frames written here (404, ranges, the access log, the statistics, the
//! GOAWAY of a graceful shutdown), by curl (`--http2-prior-knowledge`;
//! skipped with the reason when curl is missing or lacks HTTP/2, a failure
//! under CI) and by httplab's own load client in process, several streams
//! per connection. Over TLS, ALPN chooses h2 or http/1.1: curl, nghttp,
//! h2load and httplab's client, and a rustls client offering no ALPN.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;

use httplab_server::{IoEngine, Model, ServerConfig};
use httplab_wire::h2::hpack::{request_block, Decoder};
use httplab_wire::h2::{self as wire, code, flag, frame, Frame, HEAD, PREFACE};
use support::*;

/// The event model on epoll with `--http2 on`.
fn h2c_config(root: &std::path::Path) -> ServerConfig {
    let v = Variant {
        name: "event/h2c",
        model: Model::Event,
        io: IoEngine::Epoll,
        keep_alive: true,
        pipelining: true,
    };
    let mut c = config(&v, root);
    c.http2 = true;
    c
}

/// One response as a client sees it.
#[derive(Debug)]
struct H2Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl H2Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A minimal HTTP/2 client over one blocking socket: one request at a
/// time, frames read whole, the server's SETTINGS acknowledged.
struct H2Raw {
    s: TcpStream,
    dec: Decoder,
    next_id: u32,
}

impl H2Raw {
    fn open(addr: SocketAddr) -> H2Raw {
        let mut s = connect(addr);
        let mut hello = PREFACE.to_vec();
        wire::write_settings(&mut hello, &[]);
        // Room for large bodies on the connection; streams keep the
        // default 65,535-octet window and get more as they read.
        wire::write_window_update(&mut hello, 0, 16 << 20);
        s.write_all(&hello).expect("send preface");
        H2Raw {
            s,
            dec: Decoder::new(),
            next_id: 1,
        }
    }

    /// The next frame (head and payload), or None at the end of input.
    fn frame(&mut self) -> Option<Vec<u8>> {
        let mut f = vec![0u8; HEAD];
        if self.s.read_exact(&mut f).is_err() {
            return None;
        }
        let len = wire::frame_len(&f);
        f.resize(HEAD + len, 0);
        self.s.read_exact(&mut f[HEAD..]).expect("a whole frame");
        Some(f)
    }

    /// GET `path` with `extra` fields on a new stream, read to its end.
    fn get(&mut self, path: &str, extra: &[(&str, &str)]) -> H2Resp {
        self.request("GET", path, extra)
    }

    /// `method` `path` with `extra` fields on a new stream, read to its end.
    fn request(&mut self, method: &str, path: &str, extra: &[(&str, &str)]) -> H2Resp {
        let id = self.next_id;
        self.next_id += 2;
        let block = request_block(method, false, "localhost", path, extra);
        let mut out = Vec::new();
        wire::write_frame(
            &mut out,
            frame::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
            &block,
        );
        self.s.write_all(&out).expect("send request");
        let mut r = H2Resp {
            status: 0,
            headers: Vec::new(),
            body: Vec::new(),
        };
        loop {
            let f = self.frame().expect("the response before the end of input");
            let end = match wire::decode::frame(&f).expect("a valid frame") {
                Frame::Settings { ack: false, .. } => {
                    let mut ack = Vec::new();
                    wire::write_frame(&mut ack, frame::SETTINGS, flag::ACK, 0, &[]);
                    self.s.write_all(&ack).expect("send SETTINGS ack");
                    false
                }
                Frame::Headers {
                    stream,
                    end_stream,
                    fragment,
                    ..
                } if stream == id => {
                    let headers = &mut r.headers;
                    self.dec
                        .decode(fragment, 1 << 20, |n, v| {
                            headers.push((
                                String::from_utf8_lossy(n).into_owned(),
                                String::from_utf8_lossy(v).into_owned(),
                            ))
                        })
                        .expect("a valid header block");
                    end_stream
                }
                Frame::Data {
                    stream,
                    end_stream,
                    data,
                    flow_len,
                } if stream == id => {
                    r.body.extend_from_slice(data);
                    if flow_len > 0 && !end_stream {
                        let mut wu = Vec::new();
                        wire::write_window_update(&mut wu, id, flow_len);
                        self.s.write_all(&wu).expect("send WINDOW_UPDATE");
                    }
                    end_stream
                }
                Frame::RstStream { stream, code } if stream == id => {
                    panic!("stream {id} reset with {code}")
                }
                Frame::GoAway { code, .. } => panic!("GOAWAY {code} before the response"),
                _ => false,
            };
            if end {
                break;
            }
        }
        r.status = r
            .header(":status")
            .and_then(|s| s.parse().ok())
            .expect("a :status");
        r
    }
}

/// The HTTP/1.1 answer to GET `path` with `extra` header lines.
#[test]
fn h2c_and_http1_share_the_port_with_the_same_answers() {
    let site = site();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("access.log");
    let mut cfg = h2c_config(&site.root);
    cfg.access_log = Some(httplab_server::AccessLog::File(log.clone()));
    let server = start(cfg);
    let addr = server.local_addr();
    let mut c = H2Raw::open(addr);
    let small = c.get("/small.html", &[]);
    assert_eq!((small.status, small.body.as_slice()), (200, SMALL));
    assert_eq!(small.header("content-length"), Some("87"));
    // A 404 and a range: what HTTP/1.1 answers, in HTTP/2.
    let miss = c.get("/no-such-file", &[]);
    let miss1 = h1_get(addr, "/no-such-file", "");
    assert_eq!((miss.status, miss1.status), (404, 404));
    assert_eq!(miss.body, miss1.body);
    assert_eq!(miss.header("content-type"), miss1.header("content-type"));
    let four_k = std::fs::read(site.root.join("4k.txt")).unwrap();
    let part = c.get("/4k.txt", &[("range", "bytes=10-19")]);
    let part1 = h1_get(addr, "/4k.txt", "Range: bytes=10-19\r\n");
    assert_eq!((part.status, part1.status), (206, 206));
    assert_eq!(part.body, &four_k[10..20]);
    assert_eq!(part.body, part1.body);
    assert_eq!(part.header("content-range"), Some("bytes 10-19/4096"));
    assert_eq!(part.header("content-range"), part1.header("content-range"));
    // A file larger than the windows and the cache, byte-exact.
    let big = c.get("/big.bin", &[]);
    assert_eq!(big.status, 200);
    assert!(big.body == site.big, "big.bin differs over h2c");
    // Graceful shutdown: GOAWAY NO_ERROR naming the last stream (7), then
    // the end of the connection.
    let stopper = std::thread::spawn(move || server.shutdown());
    let mut goaway = None;
    while let Some(f) = c.frame() {
        if let Ok(Frame::GoAway { last, code, .. }) = wire::decode::frame(&f) {
            goaway = Some((last, code));
        }
    }
    assert_eq!(goaway, Some((7, code::NO_ERROR)));
    drop(c);
    let stats = stopper.join().expect("shutdown");
    // 4 over h2c, 2 over HTTP/1.1; 1 + 2 connections.
    assert_eq!((stats.requests, stats.accepted), (6, 3));
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("\"GET /small.html HTTP/2.0\" 200 87"), "{log}");
    assert!(log.contains("\"GET /no-such-file HTTP/2.0\" 404"), "{log}");
    assert!(log.contains("\"GET /4k.txt HTTP/2.0\" 206 10"), "{log}");
    assert!(log.contains("\"GET /no-such-file HTTP/1.1\" 404"), "{log}");
}

#[test]
fn every_http1_feature_answers_alike_over_h2c() {
    let site = site();
    let cfg = with_every_feature(&site.root, h2c_config(&site.root));
    let server = start(cfg);
    let addr = server.local_addr();
    let mut c = H2Raw::open(addr);
    let first = c.get("/small.html", &[]);
    let etag = first.header("etag").expect("an ETag").to_string();
    let modified = first.header("last-modified").expect("a date").to_string();
    let cases = feature_cases(&etag, &modified);
    let secret = std::fs::read(&site.secret).unwrap();
    for (path, extra) in &cases {
        let two = c.get(path, extra);
        let lines: String = extra.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
        let one = h1_get(addr, path, &lines);
        let what = format!("h2 {path} {extra:?}");
        assert_answers_alike(
            &what,
            two.status,
            &two.body,
            |n| two.header(n),
            &two.headers,
            &one,
            &secret,
        );
    }
    let statuses: Vec<u16> = cases.iter().map(|(p, e)| c.get(p, e).status).collect();
    assert_eq!(statuses[..4], [304, 304, 200, 200]);
    server.shutdown();
}

#[test]
fn http2_off_answers_the_preface_in_http1() {
    let site = site();
    let mut cfg = h2c_config(&site.root);
    cfg.http2 = false;
    let server = start(cfg);
    let mut c = Client::new(server.local_addr());
    c.send(PREFACE);
    let r = c.read_response(false).expect("an HTTP/1.1 response");
    assert_eq!(r.status, 505);
}

#[test]
fn a_partial_preface_then_the_end_of_input_is_http1() {
    let site = site();
    let server = start(h2c_config(&site.root));
    // The preface's first 18 octets are a whole HTTP/1.1 head: once the
    // peer ends its input, HTTP/1.1 answers it.
    let mut c = Client::new(server.local_addr());
    c.send(&PREFACE[..18]);
    c.stream.shutdown(std::net::Shutdown::Write).unwrap();
    let r = c.read_response(false).expect("an HTTP/1.1 response");
    assert_eq!(r.status, 505);
}

#[test]
fn graceful_shutdown_closes_a_connection_that_sent_nothing() {
    let site = site();
    let mut cfg = h2c_config(&site.root);
    cfg.workers = 1;
    cfg.defer_accept = false;
    // Far beyond the clients' read guard: only a graceful close ends the
    // silent connection in time.
    cfg.shutdown_timeout = std::time::Duration::from_secs(3600);
    cfg.idle_timeout = std::time::Duration::from_secs(3600);
    let server = start(cfg);
    let mut silent = connect(server.local_addr());
    // Answered after the silent one was accepted (one worker, accepted in
    // order), so the silent one is open, undecided, at shutdown.
    let r = h1_get(server.local_addr(), "/small.html", "");
    assert_eq!(r.status, 200);
    let stopper = std::thread::spawn(move || server.shutdown());
    let mut rest = Vec::new();
    silent
        .read_to_end(&mut rest)
        .expect("closed before the read guard");
    assert!(rest.is_empty());
    stopper.join().expect("shutdown");
}

#[test]
fn the_blocking_models_serve_h2c_and_h2_one_connection_each() {
    let site = site();
    let tc = test_cert();
    for model in [Model::Threads, Model::Fork, Model::Single] {
        for tls in [false, true] {
            let mut cfg = h2c_config(&site.root);
            cfg.model = model;
            if tls {
                cfg = with_tls(cfg, &tc);
            }
            let server = start(cfg);
            let what = format!("{model:?} tls={tls}");
            let served = if model == Model::Fork {
                // A forked child inherits the test process's descriptors,
                // an in-process client's sockets among them, so it would
                // never see that client close: a client in its own process.
                if !curl_with_http2() {
                    server.shutdown();
                    return;
                }
                curl_three_over_h2(&server, &tc, tls, &what);
                3
            } else {
                load_over_h2(server.local_addr().port(), tls, &what);
                120
            };
            // HTTP/1.1 on the same port still.
            if !tls {
                let resp = h1_get(server.local_addr(), "/small.html", "");
                assert_eq!((resp.status, resp.body.as_slice()), (200, SMALL), "{what}");
            }
            let stats = server.shutdown();
            assert_eq!(stats.requests, served + u64::from(!tls), "{what}");
        }
    }
}

/// `httplab load --http2` in process: 3 connections of 40 calls, 8 streams
/// in flight each, every reply whole.
fn load_over_h2(port: u16, tls: bool, what: &str) {
    let ssl = if tls { "--ssl " } else { "" };
    let spec = httplab_load::parse_args(
        format!(
            "--http2 {ssl}--server 127.0.0.1 --port {port} --uri /4k.txt --num-conns 3 \
             --num-calls 40 --max-concurrent-streams 8 --timeout 10"
        )
        .split_whitespace(),
    )
    .expect("a valid load spec");
    let r = httplab_load::run(&spec, false).expect("the load run");
    let h2 = r.http2.as_ref().expect("an HTTP/2 block");
    assert_eq!(r.totals.replies, 120, "{what}");
    assert_eq!(r.errors.total, 0, "{what}: {:?}", r.errors);
    assert_eq!(
        (h2.streams_completed, h2.streams_failed),
        (120, 0),
        "{what}"
    );
    assert_eq!(r.accuracy.bytes_received, 120 * 4096, "{what}");
}

/// curl fetches three files over HTTP/2 (h2 by ALPN: one connection; h2c
/// by prior knowledge: one connection each, since curl 7.88 fails the
/// second transfer of a reused h2c connection with "Error in the HTTP2
/// framing layer" against nginx and h2o too), byte for byte.
fn curl_three_over_h2(server: &httplab_server::ServerHandle, tc: &TestCert, tls: bool, what: &str) {
    let port = server.local_addr().port();
    let (scheme, mode) = if tls {
        ("https", "--http2")
    } else {
        ("http", "--http2-prior-knowledge")
    };
    let resolve = format!("localhost:{port}:127.0.0.1");
    let url = |p: &str| format!("{scheme}://localhost:{port}{p}");
    let urls = [url("/small.html"), url("/4k.txt"), url("/small.html")];
    let batches: Vec<&[String]> = if tls {
        vec![&urls[..]]
    } else {
        urls.chunks(1).collect()
    };
    let mut got = Vec::new();
    for batch in batches {
        let out = Command::new("timeout")
            .args([
                "-k",
                "5",
                "30",
                "curl",
                "-sS",
                "--fail",
                mode,
                "--resolve",
                &resolve,
            ])
            .arg("--cacert")
            .arg(&tc.cert)
            .args(batch)
            .output()
            .expect("run curl");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        got.extend_from_slice(&out.stdout);
    }
    assert_eq!(got.len(), 2 * SMALL.len() + 4096, "{what}");
    assert!(got.starts_with(SMALL) && got.ends_with(SMALL), "{what}");
}

/// The io_uring engine serves h2c too: a small file, a range and a file
/// larger than the windows on one raw connection, many streams per
/// connection with `httplab load`, HTTP/1.1 on the same port, and a
/// graceful shutdown that sends GOAWAY naming the last stream.
#[test]
fn io_uring_serves_h2c_and_http1_on_one_port() {
    if !httplab_server::testkit::uring_available() {
        // Not a failure under CI either: the kernel decides, not the packages.
        httplab_skip::skipped("io_uring is not available here");
        return;
    }
    let site = site();
    let mut cfg = h2c_config(&site.root);
    cfg.io = IoEngine::Uring;
    let server = start(cfg);
    let addr = server.local_addr();
    load_over_h2(addr.port(), false, "io_uring");
    let resp = h1_get(addr, "/small.html", "");
    assert_eq!((resp.status, resp.body.as_slice()), (200, SMALL));
    let mut c = H2Raw::open(addr);
    let small = c.get("/small.html", &[]);
    assert_eq!((small.status, small.body.as_slice()), (200, SMALL));
    let four_k = std::fs::read(site.root.join("4k.txt")).unwrap();
    let part = c.get("/4k.txt", &[("range", "bytes=10-19")]);
    assert_eq!((part.status, part.body.as_slice()), (206, &four_k[10..20]));
    let big = c.get("/big.bin", &[]);
    assert_eq!(big.status, 200);
    assert!(big.body == site.big, "big.bin differs over h2c on io_uring");
    let stopper = std::thread::spawn(move || server.shutdown());
    let mut goaway = None;
    while let Some(f) = c.frame() {
        if let Ok(Frame::GoAway { last, code, .. }) = wire::decode::frame(&f) {
            goaway = Some((last, code));
        }
    }
    assert_eq!(goaway, Some((5, code::NO_ERROR)));
    drop(c);
    let stats = stopper.join().expect("shutdown");
    assert_eq!((stats.requests, stats.accepted), (120 + 1 + 3, 3 + 1 + 1));
}

/// Whether curl is here and speaks HTTP/2 (else a visible skip, a failure
/// under CI).
fn curl_with_http2() -> bool {
    if !require_tool("curl") {
        return false;
    }
    let v = Command::new("curl").arg("-V").output().expect("curl -V");
    let text = String::from_utf8_lossy(&v.stdout);
    let h2 = text
        .lines()
        .any(|l| l.starts_with("Features:") && l.split_whitespace().any(|f| f == "HTTP2"));
    if !h2 {
        httplab_skip::skip("curl lacks HTTP/2 (no HTTP2 in `curl -V` Features)");
    }
    h2
}

#[test]
fn curl_fetches_small_and_large_files_over_h2c() {
    if !curl_with_http2() {
        return;
    }
    let site = site();
    let server = start(h2c_config(&site.root));
    let base = format!("http://{}", server.local_addr());
    let out_dir = tempfile::tempdir().unwrap();
    let curl = |args: &[&str], url: &str| {
        let out = Command::new("timeout")
            .args(["-k", "5", "30", "curl", "-sS", "--http2-prior-knowledge"])
            .args(args)
            .arg(format!("{base}{url}"))
            .output()
            .expect("run curl");
        assert!(
            out.status.success(),
            "curl {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let small = out_dir.path().join("small.html");
    let big = out_dir.path().join("big.bin");
    for (url, file, want) in [
        ("/small.html", &small, SMALL),
        ("/big.bin", &big, site.big.as_slice()),
    ] {
        let w = curl(
            &[
                "--fail",
                "-o",
                file.to_str().unwrap(),
                "-w",
                "%{http_version} %{http_code}",
            ],
            url,
        );
        assert_eq!(String::from_utf8_lossy(&w), "2 200", "{url}");
        assert!(std::fs::read(file).unwrap() == want, "{url} differs");
    }
    let w = curl(
        &["-o", "/dev/null", "-w", "%{http_version} %{http_code}"],
        "/nope",
    );
    assert_eq!(String::from_utf8_lossy(&w), "2 404");
    assert_eq!(curl(&["-r", "10-19"], "/small.html"), &SMALL[10..20]);
    let stats = server.shutdown();
    assert_eq!(stats.requests, 4);
}

#[test]
fn httplab_load_runs_many_streams_per_connection_over_h2c() {
    let site = site();
    let server = start(h2c_config(&site.root));
    let port = server.local_addr().port();
    let spec = httplab_load::parse_args(
        format!(
            "--http2 --server 127.0.0.1 --port {port} --uri /4k.txt --num-conns 4 \
             --num-calls 50 --max-concurrent-streams 8 --timeout 10"
        )
        .split_whitespace(),
    )
    .expect("a valid load spec");
    let r = httplab_load::run(&spec, false).expect("the load run");
    let h2 = r.http2.as_ref().expect("an HTTP/2 block");
    assert_eq!(r.totals.connections, 4);
    assert_eq!(r.totals.requests, 200);
    assert_eq!(r.totals.replies, 200);
    assert_eq!(r.reply.status.success, 200);
    assert_eq!(r.errors.total, 0);
    assert_eq!((h2.streams_completed, h2.streams_failed), (200, 0));
    assert!(h2.cleartext && h2.rst_stream_received.is_empty());
    assert_eq!(r.accuracy.bytes_received, 200 * 4096);
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted), (200, 4));
}

/// The event model on epoll with `--http2 on` over TLS (ALPN h2, http/1.1).
fn h2_tls_config(root: &std::path::Path, tc: &TestCert) -> ServerConfig {
    with_tls(h2c_config(root), tc)
}

#[test]
fn curl_negotiates_h2_or_http1_by_alpn_over_tls() {
    if !curl_with_http2() {
        return;
    }
    let site = site();
    let tc = test_cert();
    let server = start(h2_tls_config(&site.root, &tc));
    let port = server.local_addr().port();
    // The certificate names localhost; --resolve keeps it on 127.0.0.1.
    let resolve = format!("localhost:{port}:127.0.0.1");
    let base = format!("https://localhost:{port}");
    let out_dir = tempfile::tempdir().unwrap();
    let big = out_dir.path().join("big.bin");
    let curl = |args: &[&str], url: &str| {
        let out = Command::new("timeout")
            .args(["-k", "5", "30", "curl", "-sS", "-v", "--resolve", &resolve])
            .arg("--cacert")
            .arg(&tc.cert)
            .args(args)
            .arg(format!("{base}{url}"))
            .output()
            .expect("run curl");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "curl {url}: {err}");
        (out.stdout, err)
    };
    let (w, err) = curl(
        &[
            "--http2",
            "--fail",
            "-o",
            big.to_str().unwrap(),
            "-w",
            "%{http_version} %{http_code}",
        ],
        "/big.bin",
    );
    assert_eq!(String::from_utf8_lossy(&w), "2 200", "{err}");
    assert!(err.contains("ALPN: server accepted h2"), "{err}");
    assert!(std::fs::read(&big).unwrap() == site.big, "big.bin differs");
    let (w, _) = curl(
        &[
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ],
        "/nope",
    );
    assert_eq!(String::from_utf8_lossy(&w), "2 404");
    let (body, _) = curl(&["--http2", "-r", "10-19"], "/small.html");
    assert_eq!(body, &SMALL[10..20]);
    // A client offering only http/1.1 gets it on the same port.
    let (w, err) = curl(
        &[
            "--http1.1",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ],
        "/small.html",
    );
    assert_eq!(String::from_utf8_lossy(&w), "1.1 200", "{err}");
    assert!(err.contains("ALPN: server accepted http/1.1"), "{err}");
    let stats = server.shutdown();
    assert_eq!(stats.requests, 4);
}

#[test]
fn a_tls_client_without_alpn_speaks_http1() {
    let site = site();
    let tc = test_cert();
    let server = start(h2_tls_config(&site.root, &tc));
    let cfg = tls_client(&tc, &[&rustls::version::TLS13], &[]);
    let mut c = tls_connect(server.local_addr(), &cfg).expect("handshake");
    assert_eq!(c.stream.conn.alpn_protocol(), None);
    c.send(get("/small.html", "").as_bytes());
    let r = c.read_response(false).expect("a response");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, SMALL);
    drop(c);
    // Offering h2 alone: h2 is chosen and the server's SETTINGS come first.
    let cfg = tls_client(&tc, &[&rustls::version::TLS13], &[b"h2"]);
    let mut c = tls_connect(server.local_addr(), &cfg).expect("handshake");
    assert_eq!(c.stream.conn.alpn_protocol(), Some(&b"h2"[..]));
    let mut hello = PREFACE.to_vec();
    wire::write_settings(&mut hello, &[]);
    c.send(&hello);
    let mut head = [0u8; HEAD];
    c.stream.read_exact(&mut head).expect("a frame");
    assert_eq!(head[3], frame::SETTINGS, "first frame: {head:?}");
    drop(c);
    server.shutdown();
}

#[test]
fn httplab_load_runs_many_streams_per_connection_over_tls() {
    let site = site();
    let tc = test_cert();
    let server = start(h2_tls_config(&site.root, &tc));
    let port = server.local_addr().port();
    let spec = httplab_load::parse_args(
        format!(
            "--http2 --ssl --server 127.0.0.1 --port {port} --uri /4k.txt --num-conns 4 \
             --num-calls 50 --max-concurrent-streams 8 --timeout 10"
        )
        .split_whitespace(),
    )
    .expect("a valid load spec");
    let r = httplab_load::run(&spec, false).expect("the load run");
    let h2 = r.http2.as_ref().expect("an HTTP/2 block");
    assert_eq!(r.totals.requests, 200);
    assert_eq!(r.totals.replies, 200);
    assert_eq!(r.reply.status.success, 200);
    assert_eq!(r.errors.total, 0);
    assert_eq!((h2.streams_completed, h2.streams_failed), (200, 0));
    assert!(!h2.cleartext);
    assert_eq!(r.accuracy.bytes_received, 200 * 4096);
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted), (200, 4));
}

#[test]
fn h2load_and_nghttp_over_tls() {
    if !require_tool("h2load") || !require_tool("nghttp") {
        return;
    }
    let site = site();
    let tc = test_cert();
    let server = start(h2_tls_config(&site.root, &tc));
    let url = format!("https://127.0.0.1:{}/4k.txt", server.local_addr().port());
    let out = Command::new("timeout")
        .args([
            "-k", "5", "60", "h2load", "-n", "2000", "-c", "4", "-m", "10",
        ])
        .arg(&url)
        .output()
        .expect("run h2load");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "h2load: {text}");
    assert!(text.contains("Application protocol: h2"), "{text}");
    assert!(
        text.contains("2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed"),
        "{text}"
    );
    assert!(text.contains("status codes: 2000 2xx"), "{text}");
    // nghttp prints the body; -s its statistics are not needed.
    let out = Command::new("timeout")
        .args(["-k", "5", "30", "nghttp"])
        .arg(format!(
            "https://127.0.0.1:{}/small.html",
            server.local_addr().port()
        ))
        .output()
        .expect("run nghttp");
    assert!(
        out.status.success(),
        "nghttp: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, SMALL);
    let stats = server.shutdown();
    assert_eq!(stats.requests, 2001);
}

/// An error answered to a HEAD request (here 431, too many fields) is its
/// head only, as a HEAD's answer must be; to GET it carries its page.
#[test]
fn an_error_answered_to_head_has_no_content_over_h2c() {
    let site = site();
    let server = start(h2c_config(&site.root));
    let many: Vec<String> = (0..120).map(|i| format!("x-field-{i}")).collect();
    let extra: Vec<(&str, &str)> = many.iter().map(|n| (n.as_str(), "v")).collect();
    for (method, content) in [("HEAD", false), ("GET", true)] {
        let mut c = H2Raw::open(server.local_addr());
        let r = c.request(method, "/small.html", &extra);
        assert_eq!(r.status, 431, "{method}");
        assert_eq!(!r.body.is_empty(), content, "{method}");
        assert!(r.header("content-length").is_some(), "{method}");
    }
    server.shutdown();
}
