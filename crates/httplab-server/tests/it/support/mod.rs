//! Shared helpers for the integration tests: a fixture site, the list of
//! server variants (model × protocol mode) every conformance test runs
//! against, and a small raw-socket HTTP/1.1 client.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use httplab_server::{IoEngine, Model, Server, ServerConfig, ServerHandle};

/// Safety net for reads: a broken server fails the test instead of hanging
/// it. Never used to wait for something to happen.
pub const READ_GUARD: Duration = Duration::from_secs(10);

/// The 87-byte file of the benchmarks.
pub const SMALL: &[u8] =
    b"<!DOCTYPE html><html><head><title>small</title></head><body>87 bytes</body></html>\n\n\n\n\n";

/// A cached file above 16 KiB: HTTP/1.1 in cleartext sends it from its
/// descriptor, every other protocol from memory.
pub fn mid() -> Vec<u8> {
    pattern(40 * 1024 + 3, 11)
}

/// A fixture site in a temporary directory, plus a secret file outside it.
pub struct Site {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub secret: PathBuf,
    pub big: Vec<u8>,
}

/// Deterministic pseudo-random bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn site() -> Site {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("www");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("noindex")).unwrap();
    std::fs::create_dir_all(root.join("a b")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, b"TOP-SECRET-DO-NOT-SERVE\n").unwrap();
    std::fs::write(root.join("small.html"), SMALL).unwrap();
    assert_eq!(SMALL.len(), 87);
    std::fs::write(
        root.join("4k.txt"),
        pattern(4096, 7)
            .iter()
            .map(|b| b'a' + b % 26)
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    std::fs::write(root.join("sub/index.html"), b"<h1>sub index</h1>\n").unwrap();
    std::fs::write(root.join("noindex/file.txt"), b"x\n").unwrap();
    std::fs::write(root.join("a b/c d.txt"), b"spaces\n").unwrap();
    std::fs::write(root.join("index.html"), b"<h1>root</h1>\n").unwrap();
    std::fs::write(root.join("data.json"), b"{}\n").unwrap();
    std::fs::write(root.join("blob.unknownext"), b"??\n").unwrap();
    std::fs::write(root.join("mid.bin"), mid()).unwrap();
    let big = pattern(3 * 1024 * 1024 + 17, 42);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::os::unix::fs::symlink(&secret, root.join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape-dir")).unwrap();
    std::os::unix::fs::symlink(root.join("small.html"), root.join("inside-link.html")).unwrap();
    Site {
        root,
        secret,
        big,
        dir,
    }
}

/// One server configuration the suite runs against.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    pub name: &'static str,
    pub model: Model,
    /// I/O engine of the event model (epoll for the others).
    pub io: IoEngine,
    pub keep_alive: bool,
    pub pipelining: bool,
}

/// Every model in every protocol mode.
pub fn variants() -> Vec<Variant> {
    let mut v = Vec::new();
    let mut models = vec![
        (Model::Event, IoEngine::Epoll, "event"),
        (Model::Threads, IoEngine::Epoll, "threads"),
        (Model::Fork, IoEngine::Epoll, "fork"),
        (Model::Single, IoEngine::Epoll, "single"),
    ];
    if httplab_server::testkit::uring_available() {
        models.insert(1, (Model::Event, IoEngine::Uring, "event-uring"));
    } else {
        // Not a failure under CI either: the kernel decides, not the packages.
        httplab_skip::skipped("io_uring is not available here: the event-uring variants");
    }
    for (model, io, mname) in models {
        for (ka, pl, mode) in [
            (true, true, "default"),
            (false, true, "keep-alive-off"),
            (true, false, "pipelining-off"),
        ] {
            v.push(Variant {
                name: Box::leak(format!("{mname}/{mode}").into_boxed_str()),
                model,
                io,
                keep_alive: ka,
                pipelining: pl,
            });
        }
    }
    v
}

/// The variants that serve HTTPS: every one but the io_uring engine, which
/// is cleartext only (TLS stays on epoll; `--io uring` with a certificate
/// is refused at start-up).
pub fn tls_variants() -> Vec<Variant> {
    variants()
        .into_iter()
        .filter(|v| v.io != IoEngine::Uring)
        .collect()
}

/// Test configuration for `v` serving `root`: short timeouts, two workers.
pub fn config(v: &Variant, root: &Path) -> ServerConfig {
    let mut c = ServerConfig::for_root(root);
    c.model = v.model;
    c.io = v.io;
    c.keep_alive = v.keep_alive;
    c.pipelining = v.pipelining;
    c.workers = 2;
    c.threads = 4;
    c.max_children = 64;
    c.idle_timeout = Duration::from_secs(5);
    c.header_timeout = Duration::from_secs(5);
    c.shutdown_timeout = Duration::from_secs(2);
    c
}

pub fn start(cfg: ServerConfig) -> ServerHandle {
    Server::start(cfg).expect("server starts")
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(READ_GUARD)).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A buffered reader of responses on one connection (a TCP stream, or a
/// TLS stream over one).
pub struct Client<S = TcpStream> {
    pub stream: S,
    buf: Vec<u8>,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Self {
        Client {
            stream: connect(addr),
            buf: Vec::new(),
        }
    }
}

impl<S: Read + Write> Client<S> {
    pub fn wrap(stream: S) -> Self {
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, data: &[u8]) {
        self.stream.write_all(data).expect("send");
    }

    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 65536];
        match self.stream.read(&mut tmp) {
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n
            }
            // A reset, or (TLS) a TCP close without close_notify.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof
                ) =>
            {
                0
            }
            Err(e) => panic!("read failed (server hung?): {e}"),
        }
    }

    /// Reads one response; `head` says the request was HEAD (no body).
    /// Returns None on a clean EOF before any byte of a response.
    pub fn read_response(&mut self, head: bool) -> Option<Resp> {
        let end = loop {
            if let Some(p) = find(&self.buf, b"\r\n\r\n") {
                break p + 4;
            }
            if self.fill() == 0 {
                assert!(
                    self.buf.is_empty(),
                    "EOF inside a response head: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return None;
            }
        };
        let text = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        assert!(
            status_line.starts_with("HTTP/1.1 "),
            "bad status line {status_line:?}"
        );
        let status: u16 = status_line[9..12].parse().expect("status code");
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').expect("header colon");
                (n.to_string(), v.trim().to_string())
            })
            .collect();
        self.buf.drain(..end);
        let mut r = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        let len: usize = if head || status == 304 || status == 204 {
            0
        } else {
            r.header("content-length")
                .expect("every response has Content-Length")
                .parse()
                .expect("numeric Content-Length")
        };
        while self.buf.len() < len {
            if self.fill() == 0 {
                panic!("EOF inside a body: have {} of {len}", self.buf.len());
            }
        }
        r.body = self.buf.drain(..len).collect();
        Some(r)
    }

    /// True when the server closes the connection with nothing more sent.
    pub fn at_eof(&mut self) -> bool {
        self.buf.is_empty() && self.fill() == 0
    }
}

pub fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// `GET path` with a Host header and optional extra header lines.
pub fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n")
}

/// Whether a peer binary is usable; under CI a missing one fails.
pub fn require_tool(name: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false);
    if found {
        return true;
    }
    httplab_skip::skip(&format!(
        "{name} not found in PATH (install it, or set CI=true to make this a failure)"
    ));
    false
}

/// A self-signed certificate for `localhost` and 127.0.0.1 (made with
/// rcgen at test time) written as PEM files.
pub struct TestCert {
    pub dir: tempfile::TempDir,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub der: rustls::pki_types::CertificateDer<'static>,
}

pub fn test_cert() -> TestCert {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    TestCert {
        dir,
        cert,
        key,
        der: ck.cert.der().clone(),
    }
}

/// `cfg` serving HTTPS with `tc`.
pub fn with_tls(mut cfg: ServerConfig, tc: &TestCert) -> ServerConfig {
    cfg.tls = Some(httplab_server::TlsFiles {
        cert: tc.cert.clone(),
        key: tc.key.clone(),
    });
    cfg
}

/// A rustls client trusting only `tc`, limited to `versions`, offering
/// `alpn`. Keep one per test to get session resumption between
/// connections.
pub fn tls_client(
    tc: &TestCert,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> std::sync::Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(tc.der.clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    std::sync::Arc::new(cfg)
}

pub type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Connects and completes the TLS handshake (errors are returned, e.g. an
/// alert from the server).
pub fn tls_connect(
    addr: SocketAddr,
    cfg: &std::sync::Arc<rustls::ClientConfig>,
) -> Result<Client<TlsStream>, rustls::Error> {
    let mut tcp = connect(addr);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::clone(cfg), name)?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            let inner = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .cloned();
            return Err(inner.unwrap_or_else(|| rustls::Error::General(e.to_string())));
        }
    }
    Ok(Client::wrap(rustls::StreamOwned::new(conn, tcp)))
}

/// The HTTP/1.1 answer to GET `path` (with `extra` header lines) on a new
/// connection to `addr`.
pub fn h1_get(addr: SocketAddr, path: &str, extra: &str) -> Resp {
    let mut c = Client::new(addr);
    c.send(get(path, extra).as_bytes());
    c.read_response(false).expect("an HTTP/1.1 response")
}

/// `cfg` with every feature the protocol comparisons check switched on
/// (precompressed variants, Cache-Control rules, directory listings), and
/// the files they need written under `root`.
pub fn with_every_feature(root: &Path, mut cfg: ServerConfig) -> ServerConfig {
    std::fs::write(root.join("app.js"), vec![b'a'; 3000]).unwrap();
    std::fs::write(root.join("app.js.gz"), vec![7u8; 1200]).unwrap();
    std::fs::create_dir_all(root.join("listing")).unwrap();
    std::fs::write(root.join("listing/one.txt"), b"1").unwrap();
    cfg.precompressed = httplab_server::Coding::DEFAULT_ORDER.to_vec();
    cfg.cache_control = ["js=public, max-age=60", "*=no-cache"]
        .iter()
        .map(|s| s.parse().expect("a rule"))
        .collect();
    cfg.list_dirs = true;
    cfg
}

/// The requests of the protocol comparisons, given `/small.html`'s ETag
/// and Last-Modified: conditionals (the first two answer 304), a
/// precompressed variant and its plain file, a listing and its redirect,
/// unsatisfiable and multiple ranges, a 404 and two path-traversal tries.
pub fn feature_cases<'a>(
    etag: &'a str,
    modified: &'a str,
) -> Vec<(&'static str, Vec<(&'static str, &'a str)>)> {
    vec![
        ("/small.html", vec![("if-none-match", etag)]),
        ("/small.html", vec![("if-modified-since", modified)]),
        ("/app.js", vec![("accept-encoding", "gzip")]),
        ("/app.js", vec![]),
        ("/listing/", vec![]),
        ("/listing", vec![]),
        ("/4k.txt", vec![("range", "bytes=5000-")]),
        ("/4k.txt", vec![("range", "bytes=0-1,3-4")]),
        ("/no-such-file", vec![]),
        ("/%2e%2e/outside/secret.txt", vec![]),
        ("/sub/../../outside/secret.txt", vec![]),
    ]
}

/// The fields whose values must be the same over every protocol.
const FIELDS_ALIKE: [&str; 9] = [
    "content-type",
    "content-encoding",
    "content-length",
    "content-range",
    "cache-control",
    "etag",
    "last-modified",
    "vary",
    "location",
];

/// Another protocol's answer (`status`, `body`, its `header` lookup and
/// its `headers` for messages) is HTTP/1.1's `one`: the same status, body
/// and [`FIELDS_ALIKE`], and no byte of `secret` (a file outside the root).
pub fn assert_answers_alike<'a>(
    what: &str,
    status: u16,
    body: &[u8],
    header: impl Fn(&str) -> Option<&'a str>,
    headers: &dyn std::fmt::Debug,
    one: &Resp,
    secret: &[u8],
) {
    assert_eq!(status, one.status, "{what}");
    assert!(
        body == one.body,
        "{what}: bodies differ: {} octets {headers:?}, HTTP/1.1 {} octets {:?}",
        body.len(),
        one.body.len(),
        one.headers
    );
    for name in FIELDS_ALIKE {
        assert_eq!(header(name), one.header(name), "{what}: {name}");
    }
    assert!(
        !body.windows(secret.len()).any(|w| w == secret),
        "{what}: served a file outside the root"
    );
}
