//! HTTPS: every model and protocol mode over TLS with a rustls client and a
//! certificate made at test time (rcgen). Byte-exact small and large files,
//! pipelining, keep-alive on and off, session resumption (TLS 1.2 and 1.3),
//! ALPN, garbage instead of a ClientHello, the handshake and header
//! deadlines, and start-up errors for unusable certificate files.

use crate::support;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use rustls::version::{TLS12, TLS13};
use rustls::HandshakeKind;
use support::*;

fn models() -> [httplab_server::Model; 4] {
    use httplab_server::Model::*;
    [Event, Threads, Fork, Single]
}

/// Reads until the server closes the connection; returns what arrived.
fn read_to_close(s: &mut std::net::TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("server did not close the connection: {e}"),
        }
    }
}

#[test]
fn every_variant_serves_https_pipelined_and_resumes() {
    let site = site();
    let tc = test_cert();
    for v in tls_variants() {
        let server = start(with_tls(config(&v, &site.root), &tc));
        let addr = server.local_addr();
        for (vname, version) in [("1.3", &TLS13), ("1.2", &TLS12)] {
            let client = tls_client(&tc, &[version], &[b"http/1.1"]);
            let mut c = tls_connect(addr, &client).expect("handshake");
            let tag = format!("[{} TLS {vname}]", v.name);
            assert_eq!(
                c.stream.conn.alpn_protocol(),
                Some(&b"http/1.1"[..]),
                "{tag}"
            );
            assert_eq!(
                c.stream.conn.handshake_kind(),
                Some(HandshakeKind::Full),
                "{tag}"
            );
            // Three requests in one write: a cached small file, a 4 KiB
            // file and a 3 MiB file (sent in bounded chunks).
            let reqs = format!(
                "{}{}{}",
                get("/small.html", ""),
                get("/4k.txt", ""),
                get("/big.bin", "Connection: close\r\n")
            );
            c.send(reqs.as_bytes());
            let r = c.read_response(false).expect("first response");
            assert_eq!(r.status, 200, "{tag}");
            assert_eq!(r.body, SMALL, "{tag}");
            if v.keep_alive {
                let r = c.read_response(false).expect("second response");
                assert_eq!(r.status, 200, "{tag}");
                assert_eq!(r.body.len(), 4096, "{tag}");
                let r = c.read_response(false).expect("third response");
                assert_eq!(r.status, 200, "{tag}");
                assert!(r.body == site.big, "{tag} big.bin differs");
                assert!(r.closes(), "{tag}");
            } else {
                assert!(r.closes(), "{tag}");
            }
            assert!(c.at_eof(), "{tag} connection not closed");
            // A second connection resumes the first one's session.
            let mut c = tls_connect(addr, &client).expect("second handshake");
            assert_eq!(
                c.stream.conn.handshake_kind(),
                Some(HandshakeKind::Resumed),
                "{tag} resumption"
            );
            c.send(get("/small.html", "Connection: close\r\n").as_bytes());
            let r = c.read_response(false).expect("response after resumption");
            assert_eq!(r.body, SMALL, "{tag}");
            assert!(c.at_eof(), "{tag}");
        }
        server.shutdown();
    }
}

#[test]
fn keep_alive_serves_many_requests_on_one_tls_connection() {
    let site = site();
    let tc = test_cert();
    for model in models() {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        let server = start(with_tls(cfg, &tc));
        let client = tls_client(&tc, &[&TLS13, &TLS12], &[b"http/1.1"]);
        let mut c = tls_connect(server.local_addr(), &client).expect("handshake");
        for i in 0..20 {
            let path = if i % 5 == 4 {
                "/big.bin"
            } else {
                "/small.html"
            };
            c.send(get(path, "").as_bytes());
            let r = c.read_response(false).expect("response");
            assert_eq!(r.status, 200, "[{}] request {i}", model.name());
            assert!(!r.closes(), "[{}] request {i}", model.name());
            if path == "/big.bin" {
                assert!(r.body == site.big, "[{}] big.bin differs", model.name());
            } else {
                assert_eq!(r.body, SMALL, "[{}]", model.name());
            }
        }
        drop(c);
        server.shutdown();
    }
}

/// `--precompressed` over TLS on every model: a small variant (from
/// memory) and a large one (read from its file), byte-exact, pipelined
/// with identity responses on one connection.
#[test]
fn precompressed_variants_over_tls() {
    let site = site();
    let tc = test_cert();
    let small_gz = pattern(700, 21);
    let big_gz = pattern(256 * 1024 + 9, 22);
    std::fs::write(site.root.join("small.html.gz"), &small_gz).unwrap();
    std::fs::write(site.root.join("big.bin.br"), &big_gz).unwrap();
    for model in models() {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        cfg.precompressed = httplab_server::Coding::DEFAULT_ORDER.to_vec();
        cfg.cache_control = vec!["*=max-age=60".parse().expect("rule")];
        let server = start(with_tls(cfg, &tc));
        let client = tls_client(&tc, &[&TLS13], &[b"http/1.1"]);
        let mut c = tls_connect(server.local_addr(), &client).expect("handshake");
        let ae = "Accept-Encoding: gzip, br\r\n";
        let reqs = format!(
            "{}{}{}{}",
            get("/small.html", ae),
            get("/big.bin", ae),
            get("/small.html", ""),
            get("/big.bin", &format!("{ae}Range: bytes=-10\r\n"))
        );
        c.send(reqs.as_bytes());
        let tag = model.name();
        let r = c.read_response(false).expect("small variant");
        assert_eq!(r.header("content-encoding"), Some("gzip"), "[{tag}]");
        assert_eq!(r.header("cache-control"), Some("max-age=60"), "[{tag}]");
        assert!(r.body == small_gz, "[{tag}] small variant differs");
        let r = c.read_response(false).expect("large variant");
        assert_eq!(r.header("content-encoding"), Some("br"), "[{tag}]");
        assert!(r.body == big_gz, "[{tag}] large variant differs");
        let r = c.read_response(false).expect("identity");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "[{tag}]");
        assert_eq!(r.body, SMALL, "[{tag}]");
        let r = c.read_response(false).expect("range of the large variant");
        assert_eq!(r.status, 206, "[{tag}]");
        assert!(r.body == big_gz[big_gz.len() - 10..], "[{tag}]");
        drop(c);
        server.shutdown();
    }
}

#[test]
fn garbage_instead_of_client_hello_is_closed_and_server_keeps_serving() {
    let site = site();
    let tc = test_cert();
    for model in models() {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        let server = start(with_tls(cfg, &tc));
        let addr = server.local_addr();
        let garbage: [&[u8]; 4] = [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            &[0u8; 1000],
            // A handshake record header announcing 16 KiB, then junk.
            &[0x16, 0x03, 0x01, 0x40, 0x00, 0xff, 0xff, 0xff, 0xff],
            &support::pattern(70_000, 3),
        ];
        for g in garbage {
            let mut s = connect(addr);
            // The server may close before it read everything: a failed
            // write is fine, the close is what is checked.
            let _ = s.write_all(g);
            let _ = s.shutdown(std::net::Shutdown::Write);
            let got = read_to_close(&mut s);
            // At most a TLS alert record comes back, never HTTP.
            assert!(
                got.len() <= 64,
                "[{}] got {} bytes",
                model.name(),
                got.len()
            );
            assert!(!got.starts_with(b"HTTP"), "[{}]", model.name());
        }
        let client = tls_client(&tc, &[&TLS13], &[b"http/1.1"]);
        let mut c = tls_connect(addr, &client).expect("handshake after garbage");
        c.send(get("/small.html", "Connection: close\r\n").as_bytes());
        assert_eq!(c.read_response(false).expect("response").body, SMALL);
        server.shutdown();
    }
}

#[test]
fn a_silent_or_stalled_handshake_is_closed_at_the_deadline() {
    let site = site();
    let tc = test_cert();
    for model in models() {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        cfg.tls_handshake_timeout = Duration::from_millis(300);
        // So the silent client is accepted at once (with TCP_DEFER_ACCEPT
        // the kernel holds it until data or its own timeout).
        cfg.defer_accept = false;
        let server = start(with_tls(cfg, &tc));
        let addr = server.local_addr();
        // Sends nothing at all.
        let mut s = connect(addr);
        assert!(read_to_close(&mut s).is_empty(), "[{}]", model.name());
        // Sends half a record header and stalls.
        let mut s = connect(addr);
        s.write_all(&[0x16, 0x03]).unwrap();
        assert!(read_to_close(&mut s).is_empty(), "[{}]", model.name());
        // The server still serves.
        let client = tls_client(&tc, &[&TLS13], &[b"http/1.1"]);
        let mut c = tls_connect(addr, &client).expect("handshake");
        c.send(get("/small.html", "Connection: close\r\n").as_bytes());
        assert_eq!(c.read_response(false).expect("response").body, SMALL);
        server.shutdown();
    }
}

#[test]
fn header_timeout_and_limits_apply_over_tls() {
    let site = site();
    let tc = test_cert();
    for model in models() {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        cfg.header_timeout = Duration::from_millis(300);
        let server = start(with_tls(cfg, &tc));
        let client = tls_client(&tc, &[&TLS13], &[b"http/1.1"]);
        // Half a request head, then nothing: 408 and close.
        let mut c = tls_connect(server.local_addr(), &client).expect("handshake");
        c.send(b"GET /small.html HTTP/1.1\r\nHost: x\r\n");
        let r = c.read_response(false).expect("408");
        assert_eq!(r.status, 408, "[{}]", model.name());
        assert!(c.at_eof(), "[{}]", model.name());
        // A request line over the limit: 414 and close.
        let mut c = tls_connect(server.local_addr(), &client).expect("handshake");
        let long = format!("/{}", "a".repeat(9000));
        c.send(get(&long, "").as_bytes());
        let r = c.read_response(false).expect("414");
        assert_eq!(r.status, 414, "[{}]", model.name());
        assert!(c.at_eof(), "[{}]", model.name());
        server.shutdown();
    }
}

#[test]
fn a_client_offering_only_h2_gets_no_application_protocol() {
    let site = site();
    let tc = test_cert();
    let server = start(with_tls(config(&variants()[0], &site.root), &tc));
    let client = tls_client(&tc, &[&TLS13], &[b"h2"]);
    match tls_connect(server.local_addr(), &client) {
        Err(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)) => {}
        Err(e) => panic!("unexpected error {e:?}"),
        Ok(_) => panic!("handshake succeeded without a common protocol"),
    }
    // No ALPN at all: served as HTTP/1.1.
    let client = tls_client(&tc, &[&TLS13], &[]);
    let mut c = tls_connect(server.local_addr(), &client).expect("handshake");
    assert_eq!(c.stream.conn.alpn_protocol(), None);
    c.send(get("/small.html", "Connection: close\r\n").as_bytes());
    assert_eq!(c.read_response(false).expect("response").body, SMALL);
    server.shutdown();
}

fn serve_exit(args: &[&std::ffi::OsStr]) -> ExitCode {
    let mut argv: Vec<std::ffi::OsString> = vec!["httplab serve".into(), "--quiet".into()];
    argv.extend(["--listen", "127.0.0.1:0"].iter().map(Into::into));
    argv.extend(args.iter().map(|a| a.to_os_string()));
    httplab_server::cli_main(argv).expect("usage errors are exit codes")
}

#[test]
fn unusable_certificate_files_are_start_up_errors() {
    let site = site();
    let tc = test_cert();
    let other = test_cert();
    let missing = tc.dir.path().join("missing.pem");
    let empty_cert = tc.dir.path().join("nocert.pem");
    // A PEM file with a key but no certificate.
    std::fs::copy(&tc.key, &empty_cert).unwrap();
    let cases: [(&std::path::Path, &std::path::Path, &str); 5] = [
        (&missing, &tc.key, "cannot read TLS certificate file"),
        (&tc.cert, &missing, "cannot read TLS key file"),
        (&empty_cert, &tc.key, "holds no certificate"),
        (&tc.cert, &tc.cert, "holds no private key"),
        (&tc.cert, &other.key, "does not match the certificate"),
    ];
    for (cert, key, want) in cases {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.tls = Some(httplab_server::TlsFiles {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        });
        let e = httplab_server::Server::start(cfg).expect_err(want);
        let msg = format!("{e:#}");
        assert!(msg.contains(want), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        let code = serve_exit(&[
            "--root".as_ref(),
            site.root.as_os_str(),
            "--tls-cert".as_ref(),
            cert.as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
        ]);
        assert_eq!(code, ExitCode::from(2), "{want}");
    }
    // --tls-cert without --tls-key is a usage error too.
    let code = serve_exit(&["--tls-cert".as_ref(), tc.cert.as_os_str()]);
    assert_eq!(code, ExitCode::from(2));
}

#[test]
fn tls_with_io_uring_is_a_clear_start_up_error() {
    let site = site();
    let tc = test_cert();
    let mut cfg = with_tls(config(&variants()[0], &site.root), &tc);
    cfg.io = httplab_server::IoEngine::Uring;
    let e = httplab_server::Server::start(cfg).expect_err("uring with TLS");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("--io uring serves cleartext HTTP only"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}
