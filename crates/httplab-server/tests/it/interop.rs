//! Interoperability with real clients: curl, wrk, httperf, `openssl
//! s_client` and headless Chromium, over HTTP and HTTPS, and mnot's
//! httplint (PyPI `httplint`) judging the caching headers. Each test fails
//! when its client is missing under CI and prints a `SKIPPED` line
//! otherwise (`httplab_skip`). Every external run is bounded in count
//! and time (coreutils `timeout` around it, fixed request counts).

use crate::support;

use std::process::Command;

use support::*;

fn bounded(secs: u32, program: &str) -> Command {
    let mut c = Command::new("timeout");
    c.arg("-k").arg("5").arg(secs.to_string()).arg(program);
    c
}

#[test]
fn curl_fetches_byte_exact_on_every_model() {
    if !require_tool("curl") {
        return;
    }
    let site = site();
    let out_dir = tempfile::tempdir().unwrap();
    for v in variants() {
        let server = start(config(&v, &site.root));
        let base = format!("http://{}", server.local_addr());
        let big_out = out_dir.path().join("big.bin");
        let out = bounded(30, "curl")
            .args(["-sS", "--fail", "-o"])
            .arg(&big_out)
            .arg(format!("{base}/big.bin"))
            .output()
            .expect("run curl");
        assert!(
            out.status.success(),
            "[{}] curl: {}",
            v.name,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read(&big_out).unwrap() == site.big,
            "[{}] big.bin differs",
            v.name
        );
        // Two URLs in one invocation: curl reuses the connection when the
        // server keeps it open.
        let out = bounded(30, "curl")
            .args(["-sS", "-v", "--fail", "-o", "/dev/null", "-o", "/dev/null"])
            .arg(format!("{base}/small.html"))
            .arg(format!("{base}/4k.txt"))
            .output()
            .expect("run curl");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "[{}] curl: {err}", v.name);
        let reused = err.contains("Re-using existing") || err.contains("Reusing existing");
        assert_eq!(reused, v.keep_alive, "[{}] connection reuse: {err}", v.name);
        let out = bounded(30, "curl")
            .args(["-sS", "-r", "10-19"])
            .arg(format!("{base}/small.html"))
            .output()
            .expect("run curl");
        assert_eq!(out.stdout, &SMALL[10..20], "[{}] range", v.name);
        server.shutdown();
    }
}

#[test]
fn wrk_runs_without_errors() {
    if !require_tool("wrk") {
        return;
    }
    let site = site();
    for v in variants().into_iter().filter(|v| v.pipelining) {
        let server = start(config(&v, &site.root));
        let url = format!("http://{}/small.html", server.local_addr());
        let out = bounded(30, "wrk")
            .args(["-t1", "-c8", "-d1s", &url])
            .output()
            .expect("run wrk");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "[{}] wrk failed: {text}", v.name);
        assert!(!text.contains("Socket errors"), "[{}] {text}", v.name);
        assert!(!text.contains("Non-2xx"), "[{}] {text}", v.name);
        let requests: u64 = text
            .lines()
            .find(|l| l.contains("requests in"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(requests > 0, "[{}] {text}", v.name);
        server.shutdown();
    }
}

#[test]
fn httperf_runs_without_errors() {
    if !require_tool("httperf") {
        return;
    }
    let site = site();
    for v in variants() {
        let server = start(config(&v, &site.root));
        let port = server.local_addr().port().to_string();
        let calls = if v.keep_alive { "10" } else { "1" };
        let out = bounded(60, "httperf")
            .args([
                "--hog",
                "--server",
                "127.0.0.1",
                "--port",
                &port,
                "--uri",
                "/small.html",
                "--num-conns",
                "50",
                "--num-calls",
                calls,
                "--timeout",
                "5",
            ])
            .output()
            .expect("run httperf");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "[{}] httperf failed: {text}", v.name);
        assert!(text.contains("Errors: total 0 "), "[{}] {text}", v.name);
        let want = if v.keep_alive { "2xx=500 " } else { "2xx=50 " };
        assert!(text.contains(want), "[{}] expected {want}: {text}", v.name);
        server.shutdown();
    }
}

/// A valid 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[test]
fn chromium_loads_page_with_20_images() {
    chromium_gallery(Over::Http1);
}

#[test]
fn chromium_loads_page_with_20_images_over_https() {
    chromium_gallery(Over::Https);
}

#[test]
fn chromium_loads_page_with_20_images_over_h2() {
    chromium_gallery(Over::H2);
}

#[test]
fn chromium_loads_page_with_20_images_over_h3() {
    chromium_gallery(Over::H3);
}

/// How Chromium reaches the server in [`chromium_gallery`].
#[derive(Clone, Copy, PartialEq)]
enum Over {
    /// Cleartext HTTP/1.1.
    Http1,
    /// HTTP/1.1 over TLS.
    Https,
    /// `--http2 on`: ALPN chooses h2.
    H2,
    /// `--http3`: QUIC forced for the origin (`--origin-to-force-quic-on`),
    /// the self-signed certificate accepted by its key's hash.
    H3,
}

/// The base64 SHA-256 of `cert`'s public key (Chromium's
/// `--ignore-certificate-errors-spki-list`, which QUIC honours).
fn spki_hash(cert: &std::path::Path) -> String {
    let out = bounded(10, "sh")
        .arg("-c")
        .arg("openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64")
        .arg("sh")
        .arg(cert)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Headless Chromium loads a page with 20 images (over HTTPS with a
/// self-signed certificate, over h2 by ALPN or over HTTP/3, as `over`
/// says) and all 20 decode; the access log shows each in that protocol.
fn chromium_gallery(over: Over) {
    if !require_tool("chromium") || (over == Over::H3 && !require_tool("openssl")) {
        return;
    }
    let tls = over != Over::Http1;
    let site = site();
    let tc = test_cert();
    let gallery = site.root.join("gallery");
    std::fs::create_dir_all(&gallery).unwrap();
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gallery</title></head><body>\n",
    );
    for i in 0..20 {
        std::fs::write(gallery.join(format!("img{i}.png")), PNG).unwrap();
        html.push_str(&format!(
            "<img src=\"img{i}.png\" width=\"1\" height=\"1\">\n"
        ));
    }
    // After the load event, count the images that decoded and write the
    // number into the DOM that --dump-dom prints.
    html.push_str(
        "<div id=\"result\">pending</div>\n<script>window.addEventListener('load', function () {\
         var ok = 0; var imgs = document.images;\
         for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth === 1) ok++; }\
         document.getElementById('result').textContent = 'images-loaded=' + ok; });</script>\n</body></html>\n",
    );
    std::fs::write(gallery.join("index.html"), html).unwrap();
    let log = site.dir.path().join("chromium-access.log");
    let profile = tempfile::tempdir().unwrap();
    let mut cfg = config(&variants()[0], &site.root);
    cfg.access_log = Some(httplab_server::AccessLog::File(log.clone()));
    if tls {
        cfg = with_tls(cfg, &tc);
    }
    cfg.http2 = over == Over::H2;
    cfg.http3 = over == Over::H3;
    let server = start(cfg);
    let scheme = if tls { "https" } else { "http" };
    let quic: Vec<String> = if over == Over::H3 {
        vec![
            "--enable-quic".into(),
            format!("--origin-to-force-quic-on={}", server.local_addr()),
            format!(
                "--ignore-certificate-errors-spki-list={}",
                spki_hash(&tc.cert)
            ),
        ]
    } else {
        vec!["--disable-quic".into()]
    };
    let out = bounded(90, "chromium")
        .args(quic)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            // The test certificate is self-signed.
            "--ignore-certificate-errors",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("{scheme}://{}/gallery/", server.local_addr()))
        .output()
        .expect("run chromium");
    server.shutdown();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dom.contains("images-loaded=20"),
        "not every image decoded: {dom}"
    );
    // And the server's own log shows every image served with 200, in the
    // protocol ALPN chose.
    let text = std::fs::read_to_string(&log).unwrap();
    let version = match over {
        Over::H2 => "HTTP/2.0",
        Over::H3 => "HTTP/3",
        Over::Http1 | Over::Https => "HTTP/1.1",
    };
    for i in 0..20 {
        let needle = format!("\"GET /gallery/img{i}.png {version}\" 200 ");
        assert!(text.contains(&needle), "img{i}.png not served: {text}");
    }
}

#[test]
fn curl_fetches_over_https_on_every_model() {
    if !require_tool("curl") {
        return;
    }
    let site = site();
    let tc = test_cert();
    let out_dir = tempfile::tempdir().unwrap();
    for v in tls_variants() {
        let server = start(with_tls(config(&v, &site.root), &tc));
        // The certificate names localhost; --resolve keeps the connection on
        // 127.0.0.1 whatever /etc/hosts says.
        let port = server.local_addr().port();
        let resolve = format!("localhost:{port}:127.0.0.1");
        let base = format!("https://localhost:{port}");
        let big_out = out_dir.path().join("big.bin");
        let out = bounded(30, "curl")
            .args(["-sS", "-v", "--fail", "--resolve", &resolve, "--cacert"])
            .arg(&tc.cert)
            .arg("-o")
            .arg(&big_out)
            .arg(format!("{base}/big.bin"))
            .args(["-o", "/dev/null"])
            .arg(format!("{base}/small.html"))
            .output()
            .expect("run curl");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "[{}] curl: {err}", v.name);
        assert!(
            std::fs::read(&big_out).unwrap() == site.big,
            "[{}] big.bin differs",
            v.name
        );
        // curl offers h2 and http/1.1; the server picks http/1.1.
        assert!(
            err.contains("ALPN: server accepted http/1.1")
                || err.contains("ALPN, server accepted to use http/1.1"),
            "[{}] ALPN: {err}",
            v.name
        );
        let reused = err.contains("Re-using existing") || err.contains("Reusing existing");
        assert_eq!(reused, v.keep_alive, "[{}] connection reuse: {err}", v.name);
        server.shutdown();
    }
}

#[test]
fn openssl_s_client_handshakes_with_tls12_and_tls13() {
    if !require_tool("openssl") {
        return;
    }
    let site = site();
    let tc = test_cert();
    for model in [
        httplab_server::Model::Event,
        httplab_server::Model::Threads,
        httplab_server::Model::Fork,
        httplab_server::Model::Single,
    ] {
        let mut cfg = config(&variants()[0], &site.root);
        cfg.model = model;
        let server = start(with_tls(cfg, &tc));
        for (flag, name) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
            let mut child = bounded(30, "openssl")
                .args([
                    "s_client",
                    flag,
                    "-alpn",
                    "http/1.1",
                    "-servername",
                    "localhost",
                ])
                .arg("-connect")
                .arg(server.local_addr().to_string())
                .arg("-CAfile")
                .arg(&tc.cert)
                .args(["-verify_return_error", "-ign_eof"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run openssl");
            {
                use std::io::Write;
                let mut stdin = child.stdin.take().unwrap();
                stdin
                    .write_all(get("/small.html", "Connection: close\r\n").as_bytes())
                    .unwrap();
                // Dropped: EOF on stdin; -ign_eof keeps the session open
                // until the server closes it after the response.
            }
            let out = child.wait_with_output().expect("openssl output");
            let text = String::from_utf8_lossy(&out.stdout);
            let tag = format!("[{} {name}]", model.name());
            assert!(
                out.status.success(),
                "{tag} s_client failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(text.contains("ALPN protocol: http/1.1"), "{tag} {text}");
            assert!(
                text.contains(&format!("Protocol  : {name}")),
                "{tag} {text}"
            );
            assert!(text.contains("Verify return code: 0 (ok)"), "{tag} {text}");
            assert!(text.contains("HTTP/1.1 200 OK"), "{tag} {text}");
            assert!(text.contains("87 bytes</body></html>"), "{tag} {text}");
        }
        server.shutdown();
    }
}

/// The raw bytes of one response of `server` to `GET path` (the request
/// closes the connection, so the response ends at EOF).
fn raw_response(server: &httplab_server::ServerHandle, path: &str, extra: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = connect(server.local_addr());
    s.write_all(get(path, &format!("{extra}Connection: close\r\n")).as_bytes())
        .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response");
    raw
}

/// httplint's notes on a response, in English.
fn httplint(raw: &[u8]) -> String {
    use std::io::Write;
    let mut child = bounded(60, "httplint")
        .args(["--now", "--locale", "en"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run httplint");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(raw)
        .expect("feed httplint");
    let out = child.wait_with_output().expect("httplint finishes");
    assert!(
        out.status.success(),
        "httplint: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// httplint's FRESHNESS_HEURISTIC note: no explicit freshness, so caches
/// guess one from Last-Modified.
const HEURISTIC: &str = "allows caches to assign their own freshness lifetimes";

#[test]
fn httplint_sees_explicit_freshness_with_cache_control_rules() {
    if !require_tool("httplint") {
        return;
    }
    let site = site();
    std::fs::write(site.root.join("app.js"), b"let x = 1;\n").unwrap();
    // A real gzip member (httplint checks the coding): gzip is in every
    // Debian base system.
    let gz = Command::new("gzip")
        .args(["-9", "-n", "-c"])
        .arg(site.root.join("app.js"))
        .output()
        .expect("run gzip");
    assert!(gz.status.success());
    std::fs::write(site.root.join("app.js.gz"), gz.stdout).unwrap();
    let v = variants()[0];
    // Without rules httplint warns, which shows the test can see the note.
    let server = start(config(&v, &site.root));
    let notes = httplint(&raw_response(&server, "/app.js", ""));
    assert!(
        notes.contains(HEURISTIC),
        "no heuristic-freshness note without rules:\n{notes}"
    );
    server.shutdown();
    let mut cfg = config(&v, &site.root);
    cfg.precompressed = httplab_server::Coding::DEFAULT_ORDER.to_vec();
    cfg.cache_control = ["js=public, max-age=31536000, immutable", "*=max-age=300"]
        .iter()
        .map(|r| r.parse().expect("rule"))
        .collect();
    let server = start(cfg);
    for (path, extra) in [
        ("/app.js", ""),
        ("/app.js", "Accept-Encoding: gzip\r\n"),
        ("/small.html", ""),
    ] {
        let raw = raw_response(&server, path, extra);
        let notes = httplint(&raw);
        assert!(
            !notes.contains(HEURISTIC),
            "{path} {extra:?}: heuristic freshness despite a rule:\n{notes}"
        );
        assert!(!notes.contains("[BAD]"), "{path} {extra:?}:\n{notes}");
    }
    server.shutdown();
}
