//! HTTPS in `httplab load`: against `httplab serve --tls-*` (in process) and
//! against nginx over TLS, cross-checked with `httperf --ssl` on the same
//! nginx. nginx and httperf tests print why and pass when the peer is
//! missing, except under CI=true, where they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use common::{ci, is_root, load, which};
use httplab_model::RunResult;

fn need(bin: &str) -> Option<PathBuf> {
    match which(bin) {
        Some(p) => Some(p),
        None if ci() => panic!("{bin} is required under CI=true but was not found"),
        None => {
            httplab_skip::skipped(&format!("{bin} not installed"));
            None
        }
    }
}

/// A self-signed certificate for `localhost` and 127.0.0.1, as PEM files.
struct Cert {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

fn cert() -> Cert {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    Cert {
        _dir: dir,
        cert,
        key,
    }
}

fn site(root: &Path) {
    let page: Vec<u8> = (0..4148).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("index.html"), page).unwrap();
}

struct Serve {
    handle: httplab_server::ServerHandle,
    _www: tempfile::TempDir,
    root: PathBuf,
}

fn serve_tls(c: &Cert) -> Serve {
    let www = tempfile::tempdir().unwrap();
    site(www.path());
    let mut cfg = httplab_server::ServerConfig::for_root(www.path());
    cfg.tls = Some(httplab_server::TlsFiles {
        cert: c.cert.clone(),
        key: c.key.clone(),
    });
    let handle = httplab_server::Server::start(cfg).expect("httplab serve --tls-* starts");
    Serve {
        handle,
        root: www.path().to_path_buf(),
        _www: www,
    }
}

fn tls(r: &RunResult) -> &httplab_model::TlsSummary {
    r.tls.as_ref().expect("an HTTPS run has a TLS block")
}

#[test]
fn ssl_against_httplab_serve_counts_resumes_and_reports() {
    let c = cert();
    let s = serve_tls(&c);
    let port = s.handle.local_addr().port();
    let r = load(&format!(
        "--ssl --server 127.0.0.1 --port {port} --uri /index.html --rate 200 --num-conns 30 --num-calls 3 --timeout 5 --verify-root {}",
        s.root.display()
    ));
    assert_eq!(r.totals.connections, 30);
    assert_eq!(r.totals.replies, 90);
    assert_eq!(r.reply.status.success, 90);
    assert_eq!(r.errors.total, 0);
    assert_eq!((r.accuracy.verified, r.accuracy.mismatches), (90, 0));
    let t = tls(&r);
    assert!(!t.verified, "--ssl does not verify, as httperf");
    assert_eq!(t.handshakes, 30);
    assert_eq!(t.full + t.resumed, 30);
    assert!(t.full >= 1);
    // Connections start 5 ms apart: every one after the first ticket resumes.
    assert!(t.resumed >= 1, "no resumption: {t:?}");
    assert_eq!(t.handshake.count, 30);
    assert_eq!(t.versions.get("TLSv1_3"), Some(&30));
    assert_eq!(t.alpn.get("http/1.1"), Some(&30));
    assert_eq!(t.failures, 0);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("TLS handshake"), "{text}");
    assert!(text.contains("NOT VERIFIED"), "{text}");
    // The JSON carries the block and reads back.
    let j = serde_json::to_string(&r).unwrap();
    let back: RunResult = serde_json::from_str(&j).unwrap();
    assert_eq!(back.tls, r.tls);

    // --ssl-no-reuse: every handshake is full. TLS 1.2 pinned, one cipher.
    let r = load(&format!(
        "--ssl --ssl-no-reuse --tls-version 1.2 --ssl-ciphers ECDHE-ECDSA-AES128-GCM-SHA256 --server 127.0.0.1 --port {port} --uri /index.html --rate 200 --num-conns 10 --timeout 5"
    ));
    assert_eq!(r.totals.replies, 10);
    let t = tls(&r);
    assert_eq!((t.full, t.resumed), (10, 0));
    assert!(!t.resumption);
    assert_eq!(t.versions.get("TLSv1_2"), Some(&10));
    assert_eq!(
        t.cipher_suites
            .get("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        Some(&10)
    );
    // Closed loop over TLS: one handshake per user, keep-alive after it.
    let r = load(&format!(
        "https://127.0.0.1:{port}/index.html --insecure --users 4 --requests-per-user 25 --timeout 5"
    ));
    assert_eq!(r.totals.replies, 100);
    assert_eq!(tls(&r).handshakes, 4);
    s.handle.shutdown();
}

#[test]
fn https_verifies_certificates_and_names_the_reason() {
    let c = cert();
    let s = serve_tls(&c);
    let port = s.handle.local_addr().port();
    // Trusted through --cacert, for the IP address and for the name.
    for host in ["127.0.0.1", "localhost"] {
        let r = load(&format!(
            "https://{host}:{port}/index.html --cacert {} --rate 100 --num-conns 5 --timeout 5",
            c.cert.display()
        ));
        assert_eq!(r.totals.replies, 5, "{host}");
        let t = tls(&r);
        assert!(t.verified);
        let want_sni = if host == "localhost" { "localhost" } else { "" };
        assert_eq!(t.sni, want_sni);
    }
    // Not trusted: a self-signed certificate fails verification, with the reason.
    let mut spec = httplab_load::parse_args(
        format!("https://127.0.0.1:{port}/ --num-conns 3 --timeout 5").split_whitespace(),
    )
    .unwrap();
    let t = spec.tls.as_mut().unwrap();
    // The system's roots may be missing on a minimal machine; an empty CA
    // file is refused, so trust a different self-signed certificate instead.
    let other = cert();
    t.cacert = Some(other.cert.clone());
    let r = httplab_load::run(&spec, false).unwrap();
    assert_eq!(r.totals.replies, 0);
    let t = tls(&r);
    assert_eq!(t.failures, 3);
    let why = t.first_error.as_deref().unwrap_or("");
    assert!(why.contains("certificate verification failed"), "{why}");
    assert!(
        httplab_load::render_httperf_report(&r).contains("certificate verification failed"),
        "the report names the reason"
    );
    // A certificate for other names: --server-name sets SNI and the name checked.
    let r = load(&format!(
        "https://127.0.0.1:{port}/ --server-name www.example.org --cacert {} --num-conns 2 --timeout 5",
        c.cert.display()
    ));
    assert_eq!(r.totals.replies, 0);
    let why = tls(&r).first_error.clone().unwrap_or_default();
    assert!(why.contains("not valid for the server name"), "{why}");
    // Wrong ALPN: httplab serve speaks only http/1.1 and refuses h2-only clients.
    let mut spec = httplab_load::parse_args(
        format!("--ssl --server 127.0.0.1 --port {port} --num-conns 2 --timeout 5")
            .split_whitespace(),
    )
    .unwrap();
    spec.tls.as_mut().unwrap().alpn = vec!["h2".into()];
    let r = httplab_load::run(&spec, false).unwrap();
    assert_eq!(r.totals.replies, 0);
    let why = tls(&r).first_error.clone().unwrap_or_default();
    assert!(why.contains("ALPN"), "{why}");
    drop(other);
    s.handle.shutdown();
}

#[test]
fn tls_against_cleartext_and_closed_ports() {
    // A cleartext HTTP server answers the ClientHello with an HTTP error.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for _ in 0..2 {
            let Ok((mut c, _)) = l.accept() else { return };
            let mut b = [0u8; 512];
            let _ = c.read(&mut b);
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let r = load(&format!(
        "--ssl --server 127.0.0.1 --port {port} --num-conns 2 --timeout 5"
    ));
    assert_eq!(r.totals.replies, 0);
    let t = tls(&r);
    assert_eq!(t.failures, 2);
    let why = t.first_error.clone().unwrap_or_default();
    assert!(why.contains("did not speak TLS"), "{why}");
    peer.join().unwrap();
    // Nothing listens: refused connections, and the report says so.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = l.local_addr().unwrap().port();
    drop(l);
    let r = load(&format!(
        "--ssl --server 127.0.0.1 --port {dead} --num-conns 2 --timeout 5"
    ));
    assert_eq!(r.errors.connrefused, 2);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("no connection succeeded"), "{text}");
}

struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start_tls(c: &Cert) -> Option<Nginx> {
        let bin = need("nginx")?;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir_all(&root).unwrap();
        site(&root);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let d = dir.path().display();
        let user = if is_root() { "user root root;\n" } else { "" };
        let conf = format!(
            "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             keepalive_requests 100000;\n\
             server {{ listen 127.0.0.1:{port} ssl; root {};\n\
               ssl_certificate {}; ssl_certificate_key {};\n\
               ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:S:1m; }}\n}}\n",
            root.display(),
            c.cert.display(),
            c.key.display()
        );
        let child = common::spawn_nginx(&bin, dir.path(), &conf);
        let n = Nginx {
            child,
            port,
            _dir: dir,
        };
        common::wait_listening(port, "nginx");
        Some(n)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        common::stop_peer(&mut self.child);
    }
}

/// (connections, requests, replies, 2xx) from an httperf report.
fn httperf_counts(out: &str) -> (u64, u64, u64, u64) {
    let nums = |line: &str| -> Vec<u64> {
        line.split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    let t = nums(
        out.lines()
            .find(|l| l.starts_with("Total: connections"))
            .expect("Total line"),
    );
    let s = nums(
        out.lines()
            .find(|l| l.starts_with("Reply status:"))
            .expect("status line"),
    );
    (t[0], t[1], t[2], s[3])
}

#[test]
fn ssl_and_https_against_nginx_match_httperf() {
    let c = cert();
    let Some(ng) = Nginx::start_tls(&c) else {
        return;
    };
    let Some(httperf) = need("httperf") else {
        return;
    };
    let args = format!(
        "--ssl --server 127.0.0.1 --port {} --uri /index.html --rate 200 --num-conns 40 --num-calls 3 --timeout 5",
        ng.port
    );
    let out = Command::new(&httperf)
        .args(args.split_whitespace())
        .output()
        .expect("run httperf");
    let text = String::from_utf8_lossy(&out.stdout);
    let theirs = httperf_counts(&text);
    let ours = load(&args);
    assert_eq!(
        (
            ours.totals.connections,
            ours.totals.requests,
            ours.totals.replies,
            ours.reply.status.success
        ),
        theirs,
        "httperf --ssl said:\n{text}"
    );
    assert_eq!(theirs, (40, 120, 120, 120), "httperf --ssl said:\n{text}");
    let t = tls(&ours);
    assert_eq!(t.handshakes, 40);
    assert!(t.resumed >= 1, "nginx resumes sessions: {t:?}");
    // https:// with the certificate trusted, TLS 1.2 and 1.3.
    for v in ["1.2", "1.3"] {
        let r = load(&format!(
            "https://localhost:{}/index.html --cacert {} --tls-version {v} --rate 200 --num-conns 20 --num-calls 2 --timeout 5",
            ng.port,
            c.cert.display()
        ));
        assert_eq!(r.totals.replies, 40, "TLS {v}");
        assert_eq!(r.reply.content_bytes, 4148.0);
        let t = tls(&r);
        assert!(t.verified);
        let key = if v == "1.2" { "TLSv1_2" } else { "TLSv1_3" };
        assert_eq!(t.versions.get(key), Some(&20), "{t:?}");
    }
}

/// Responses far larger than rustls' plaintext buffer (16 KiB): the client
/// reads the socket up to 64 KiB at a time and keeps what rustls cannot take
/// yet for the next read. Every byte arrives, in order: HTTP/1.1 replies are
/// checked against the file, HTTP/2 ones counted, with many streams at once.
#[test]
fn large_tls_responses_arrive_whole_over_h1_and_h2() {
    let c = cert();
    let www = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..3_000_017u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(www.path().join("big.bin"), &big).unwrap();
    let mut cfg = httplab_server::ServerConfig::for_root(www.path());
    cfg.http2 = true;
    cfg.tls = Some(httplab_server::TlsFiles {
        cert: c.cert.clone(),
        key: c.key.clone(),
    });
    let handle = httplab_server::Server::start(cfg).expect("httplab serve --tls-* starts");
    let port = handle.local_addr().port();
    let r = load(&format!(
        "https://127.0.0.1:{port}/big.bin --insecure --users 2 --requests-per-user 4 --timeout 20 --verify-root {}",
        www.path().display()
    ));
    assert_eq!((r.totals.replies, r.errors.total), (8, 0), "{:?}", r.errors);
    assert_eq!((r.accuracy.verified, r.accuracy.mismatches), (8, 0));
    let r = load(&format!(
        "https://127.0.0.1:{port}/big.bin --insecure --http2 --max-concurrent-streams 8 --users 2 --requests-per-user 16 --timeout 20"
    ));
    assert_eq!(
        (r.totals.replies, r.errors.total),
        (32, 0),
        "{:?}",
        r.errors
    );
    let whole = 32 * big.len() as u64;
    assert_eq!(
        (
            r.accuracy.bytes_expected,
            r.accuracy.bytes_received,
            r.accuracy.framing_errors
        ),
        (whole, whole, 0)
    );
    assert_eq!(tls(&r).alpn.get("h2"), Some(&2));
    handle.shutdown();
}
