//! HTTP/3 (`--http3`, TLS): the server on 127.0.0.1 port 0 (TCP and UDP on
//! one port number) answers over QUIC with the handler every protocol
//! shares. Driven by httplab's own load client in process (many streams on
//! a connection, the statistics and the access log), by a small h3 client
//! here (quinn + h3: bodies byte for byte, every HTTP/1.1 feature alike, a
//! graceful shutdown with a connection open), by ngtcp2's example client
//! `gtlsclient` (interop; skipped with the reason when missing, a failure
//! under CI) and by hostile datagrams (garbage, Initial-looking packets,
//! unknown versions, unknown connection IDs), after which it still answers;
//! beside the event model and each blocking model alike. A raw client
//! (quinn, frames written by hand) breaks HTTP/3's and QPACK's rules one at
//! a time: each is answered as RFC 9114 and RFC 9204 say.

use crate::support;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use httplab_server::{IoEngine, Model, ServerConfig, ServerHandle};
use support::*;

/// The event model on epoll over TLS with `--http3`.
fn h3_config(root: &std::path::Path, tc: &TestCert) -> ServerConfig {
    let v = Variant {
        name: "event/h3",
        model: Model::Event,
        io: IoEngine::Epoll,
        keep_alive: true,
        pipelining: true,
    };
    let mut c = with_tls(config(&v, root), tc);
    c.http3 = true;
    c
}

/// One HTTP/3 response.
#[derive(Debug)]
struct H3Resp {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl H3Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

type SendReq = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// A runtime of its own and a QUIC connection (ALPN h3) to `addr`.
fn quic_connect(
    addr: SocketAddr,
    tc: &TestCert,
) -> (tokio::runtime::Runtime, quinn::Endpoint, quinn::Connection) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let tls = tls_client(tc, &[&rustls::version::TLS13], &[b"h3"]);
    let (ep, quic) = rt.block_on(async {
        let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("endpoint");
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
        ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let quic = ep
            .connect(addr, "localhost")
            .expect("connect")
            .await
            .expect("a QUIC handshake");
        (ep, quic)
    });
    (rt, ep, quic)
}

/// A minimal HTTP/3 client: one connection, requests one at a time, on a
/// current-thread runtime of its own.
struct H3Client {
    rt: tokio::runtime::Runtime,
    quic: quinn::Connection,
    send: SendReq,
    _ep: quinn::Endpoint,
}

impl H3Client {
    fn open(addr: SocketAddr, tc: &TestCert) -> H3Client {
        let (rt, ep, quic) = quic_connect(addr, tc);
        let send = rt.block_on(async {
            let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
                .await
                .expect("HTTP/3 SETTINGS");
            tokio::spawn(async move {
                let _ = futures_poll_close(&mut driver).await;
            });
            send
        });
        H3Client {
            rt,
            quic,
            send,
            _ep: ep,
        }
    }

    fn get(&mut self, path: &str, extra: &[(&str, &str)]) -> H3Resp {
        self.request("GET", path, extra)
    }

    fn request(&mut self, method: &str, path: &str, extra: &[(&str, &str)]) -> H3Resp {
        self.try_request(method, path, extra)
            .expect("an HTTP/3 exchange")
    }

    fn try_request(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
    ) -> Result<H3Resp, h3::error::StreamError> {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"));
        for (n, v) in extra {
            b = b.header(*n, *v);
        }
        let req = b.body(()).expect("a request");
        let send = &mut self.send;
        self.rt.block_on(async {
            let mut s = send.send_request(req).await?;
            s.finish().await?;
            let resp = s.recv_response().await?;
            let mut body = Vec::new();
            while let Some(mut c) = s.recv_data().await? {
                while c.has_remaining() {
                    let n = c.chunk().len();
                    body.extend_from_slice(c.chunk());
                    c.advance(n);
                }
            }
            Ok(H3Resp {
                status: resp.status().as_u16(),
                headers: resp.headers().clone(),
                body,
            })
        })
    }

    /// Waits until the server closes the connection; its reason.
    fn closed(&self) -> quinn::ConnectionError {
        let quic = self.quic.clone();
        self.rt.block_on(async move { quic.closed().await })
    }
}

async fn futures_poll_close(
    driver: &mut h3::client::Connection<h3_quinn::Connection, Bytes>,
) -> h3::error::ConnectionError {
    std::future::poll_fn(|cx| driver.poll_close(cx)).await
}

/// The HTTP/1.1 answer to GET `path` (cleartext).
/// The HTTPS answer to GET `path` (ALPN http/1.1).
fn https_get(addr: SocketAddr, tc: &TestCert, path: &str) -> Resp {
    let cfg = tls_client(tc, &[&rustls::version::TLS13], &[b"http/1.1"]);
    let mut c = tls_connect(addr, &cfg).expect("a TLS handshake");
    c.send(get(path, "").as_bytes());
    c.read_response(false).expect("an HTTPS response")
}

fn start_h3(cfg: ServerConfig) -> ServerHandle {
    let s = start(cfg);
    let udp = s.http3_udp().expect("HTTP/3 is on");
    assert!(udp.send_buffer > 0 && udp.recv_buffer > 0, "{udp:?}");
    s
}

#[test]
fn httplab_load_runs_many_streams_over_h3_counted_and_logged() {
    let site = site();
    let tc = test_cert();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("access.log");
    let mut cfg = h3_config(&site.root, &tc);
    cfg.access_log = Some(httplab_server::AccessLog::File(log.clone()));
    let server = start_h3(cfg);
    let port = server.local_addr().port();
    let spec = httplab_load::parse_args(
        format!(
            "--http3 --ssl --server 127.0.0.1 --port {port} --uri /4k.txt --num-conns 2 \
             --num-calls 50 --max-concurrent-streams 8 --timeout 10"
        )
        .split_whitespace(),
    )
    .expect("a valid load spec");
    let r = httplab_load::run(&spec, false).expect("the load run");
    assert_eq!(r.totals.replies, 100, "{:?}", r.errors);
    assert_eq!(r.reply.status.success, 100);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    assert_eq!(r.accuracy.bytes_received, 100 * 4096);
    let h3 = r.http3.as_ref().expect("an HTTP/3 block");
    assert_eq!(
        (h3.streams_completed, h3.failed_connections),
        (100, 0),
        "{h3:?}"
    );
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted, stats.open), (100, 2, 0));
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        log.matches("\"GET /4k.txt HTTP/3\" 200 4096").count(),
        100,
        "{log}"
    );
}

#[test]
fn files_come_byte_exact_over_h3() {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let mut c = H3Client::open(server.local_addr(), &tc);
    let small = c.get("/small.html", &[]);
    assert_eq!((small.status, small.body.as_slice()), (200, SMALL));
    assert_eq!(small.header("content-length"), Some("87"));
    assert!(small.header("alt-svc").is_none(), "no Alt-Svc over HTTP/3");
    let four_k = std::fs::read(site.root.join("4k.txt")).unwrap();
    assert_eq!(c.get("/4k.txt", &[]).body, four_k);
    let big = c.get("/big.bin", &[]);
    assert_eq!(big.status, 200);
    assert!(big.body == site.big, "big.bin differs over h3");
    let part = c.get("/big.bin", &[("range", "bytes=100000-300000")]);
    assert_eq!(part.status, 206);
    assert!(part.body == site.big[100_000..=300_000]);
    let head = c.request("HEAD", "/big.bin", &[]);
    assert_eq!((head.status, head.body.len()), (200, 0));
    let len = site.big.len().to_string();
    assert_eq!(head.header("content-length"), Some(len.as_str()));
    drop(c);
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted), (5, 1));
}

#[test]
fn every_http1_feature_answers_alike_over_h3() {
    let site = site();
    let tc = test_cert();
    let cfg = with_every_feature(&site.root, h3_config(&site.root, &tc));
    // The HTTP/1.1 twin: the same settings in cleartext.
    let mut plain = cfg.clone();
    plain.tls = None;
    plain.http3 = false;
    let twin = start(plain);
    let server = start_h3(cfg);
    let mut c = H3Client::open(server.local_addr(), &tc);
    let first = c.get("/small.html", &[]);
    let etag = first.header("etag").expect("an ETag").to_string();
    let modified = first.header("last-modified").expect("a date").to_string();
    let cases = feature_cases(&etag, &modified);
    let secret = std::fs::read(&site.secret).unwrap();
    for (path, extra) in &cases {
        let three = c.get(path, extra);
        let lines: String = extra.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
        let one = h1_get(twin.local_addr(), path, &lines);
        let what = format!("h3 {path} {extra:?}");
        assert_answers_alike(
            &what,
            three.status,
            &three.body,
            |n| three.header(n),
            &three.headers,
            &one,
            &secret,
        );
    }
    let statuses: Vec<u16> = cases.iter().map(|(p, e)| c.get(p, e).status).collect();
    assert_eq!(statuses[..4], [304, 304, 200, 200]);
    assert_eq!(c.request("DELETE", "/small.html", &[]).status, 405);
    assert_eq!(c.request("OPTIONS", "/small.html", &[]).status, 200);
    drop(c);
    server.shutdown();
    twin.shutdown();
}

#[test]
fn alt_svc_announces_h3_on_http1_and_http2_only_with_http3() {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let addr = server.local_addr();
    let want = format!("h3=\":{}\"; ma=86400", addr.port());
    let one = https_get(addr, &tc, "/small.html");
    assert_eq!(one.header("alt-svc"), Some(want.as_str()));
    for path in ["/4k.txt", "/no-such-file"] {
        assert_eq!(
            https_get(addr, &tc, path).header("alt-svc"),
            Some(want.as_str())
        );
    }
    let mut without = h3_config(&site.root, &tc);
    without.http3 = false;
    let plain = start(without);
    assert!(plain.http3_udp().is_none());
    let r = https_get(plain.local_addr(), &tc, "/small.html");
    assert_eq!((r.status, r.header("alt-svc")), (200, None));
    drop(plain);
    // HTTP/2 (ALPN h2) carries it too: the HTTP/2 adaptor passes the
    // handler's fields through.
    let mut h2 = h3_config(&site.root, &tc);
    h2.http2 = true;
    let h2 = start_h3(h2);
    if require_tool("curl") {
        let out = std::process::Command::new("curl")
            .args([
                "-sk",
                "--http2",
                "-D",
                "-",
                "-o",
                "/dev/null",
                "--max-time",
                "10",
            ])
            .arg(format!(
                "https://localhost:{}/small.html",
                h2.local_addr().port()
            ))
            .args([
                "--resolve",
                &format!("localhost:{}:127.0.0.1", h2.local_addr().port()),
            ])
            .output()
            .expect("run curl");
        let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(head.starts_with("http/2 200"), "{head}");
        let want = format!("alt-svc: h3=\":{}\"; ma=86400", h2.local_addr().port());
        assert!(head.contains(&want), "{head}");
    }
    server.shutdown();
}

#[test]
fn gtlsclient_downloads_a_file_byte_exact() {
    if !require_tool("gtlsclient") {
        return;
    }
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let port = server.local_addr().port();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("timeout")
        .arg("30")
        .arg("gtlsclient")
        .args(["--quiet", "--exit-on-all-streams-close"])
        .arg(format!("--download={}", dir.path().display()))
        .arg("127.0.0.1")
        .arg(port.to_string())
        .arg(format!("https://127.0.0.1:{port}/big.bin"))
        .arg(format!("https://127.0.0.1:{port}/small.html"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run gtlsclient");
    let got = std::fs::read(dir.path().join("big.bin")).unwrap_or_default();
    assert!(
        got == site.big,
        "gtlsclient got {} octets of big.bin (want {}); status {:?}, stderr {}",
        got.len(),
        site.big.len(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let small = std::fs::read(dir.path().join("small.html")).unwrap_or_default();
    assert_eq!(small, SMALL);
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted), (2, 1));
}

#[test]
fn graceful_shutdown_closes_an_open_h3_connection() {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let mut c = H3Client::open(server.local_addr(), &tc);
    assert_eq!(c.get("/small.html", &[]).status, 200);
    // The connection stays open (idle) until the server shuts down: GOAWAY,
    // then an application close with H3_NO_ERROR.
    let stopper = std::thread::spawn(move || server.shutdown());
    match c.closed() {
        quinn::ConnectionError::ApplicationClosed(a) => {
            assert_eq!(a.error_code, quinn::VarInt::from_u32(0x100), "{a:?}");
        }
        e => panic!("closed otherwise: {e:?}"),
    }
    let stats = stopper.join().expect("shutdown");
    assert_eq!((stats.requests, stats.accepted, stats.open), (1, 1, 0));
}

/// Resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// A long-header packet of `len` octets with `version`, random connection
/// IDs and a random rest: an Initial by its type bits when `version` is 1.
fn long_header(version: u32, len: usize, seed: u64) -> Vec<u8> {
    let mut p = vec![0xc0 | (seed as u8 & 0x03)];
    p.extend_from_slice(&version.to_be_bytes());
    p.push(8);
    p.extend_from_slice(&pattern(8, seed));
    p.push(8);
    p.extend_from_slice(&pattern(8, seed + 1));
    p.push(0); // token length
    let rest = len - p.len() - 2;
    p.extend_from_slice(&(0x4000u16 | rest as u16).to_be_bytes());
    p.extend_from_slice(&pattern(rest, seed + 2));
    p
}

#[test]
fn hostile_datagrams_are_dropped_or_answered_statelessly() {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(READ_GUARD)).unwrap();
    // An unknown version: a Version Negotiation packet (version 0) naming
    // version 1, and no state.
    s.send(&long_header(0x0a1a_2a3a, 1200, 1)).unwrap();
    let mut buf = [0u8; 1500];
    let n = s.recv(&mut buf).expect("a Version Negotiation packet");
    assert_eq!(&buf[1..5], &[0, 0, 0, 0], "{:?}", &buf[..n]);
    assert!(buf[..n].windows(4).any(|w| w == [0, 0, 0, 1]));
    let before = rss_kib();
    // Bounded floods: garbage of every size, Initial-looking packets that
    // fail authentication, short-header packets for unknown connections.
    for i in 0..4000u64 {
        let len = 1 + (i as usize * 37) % 1400;
        let _ = s.send(&pattern(len, i));
        let _ = s.send(&long_header(1, 1200, i * 3));
        let mut short = pattern(1200, i * 5);
        short[0] = 0x40 | (short[0] & 0x3f);
        let _ = s.send(&short);
    }
    // Whatever came back (stateless resets, version negotiation) is never
    // larger than what triggered it: no amplification.
    s.set_nonblocking(true).unwrap();
    while let Ok(n) = s.recv(&mut buf) {
        assert!(n < 1200, "a {n}-octet answer to a hostile datagram");
    }
    let mut c = H3Client::open(server.local_addr(), &tc);
    assert_eq!(c.get("/small.html", &[]).body, SMALL);
    let grown = rss_kib().saturating_sub(before);
    assert!(grown < 64 << 10, "resident memory grew {grown} KiB");
    drop(c);
    let stats = server.shutdown();
    assert_eq!((stats.requests, stats.accepted), (1, 1));
}

#[test]
fn request_field_sections_are_bounded() {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let mut c = H3Client::open(server.local_addr(), &tc);
    // More fields than `Limits::max_headers` (100): 431, as over HTTP/1.1.
    let names: Vec<String> = (0..150).map(|i| format!("x-f{i}")).collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    assert_eq!(c.get("/small.html", &many).status, 431);
    // A section over `Limits::max_header_bytes` (16 KiB): the server's
    // SETTINGS_MAX_FIELD_SECTION_SIZE says so, and the client's h3 keeps to it.
    let big = "v".repeat(20 << 10);
    match c.try_request("GET", "/small.html", &[("x-big", big.as_str())]) {
        Err(h3::error::StreamError::HeaderTooBig { max_size, .. }) => {
            assert_eq!(max_size, 16 << 10);
        }
        other => panic!("a 20 KiB field section: {other:?}"),
    }
    // The connection still serves.
    assert_eq!(c.get("/small.html", &[]).body, SMALL);
    drop(c);
    server.shutdown();
}

#[test]
fn http3_is_served_beside_every_model() {
    let site = site();
    let tc = test_cert();
    for model in [Model::Threads, Model::Fork, Model::Single] {
        let mut cfg = h3_config(&site.root, &tc);
        cfg.model = model;
        let server = start_h3(cfg);
        let addr = server.local_addr();
        let mut c = H3Client::open(addr, &tc);
        assert_eq!(c.get("/small.html", &[]).body, SMALL, "{model:?}");
        let want = format!("h3=\":{}\"; ma=86400", addr.port());
        let one = https_get(addr, &tc, "/small.html");
        assert_eq!(one.header("alt-svc"), Some(want.as_str()), "{model:?}");
        drop(c);
        server.shutdown();
    }
}

/// The test site served over HTTP/3, and a raw client connected to it.
fn raw_case() -> (Site, ServerHandle, Raw) {
    let site = site();
    let tc = test_cert();
    let server = start_h3(h3_config(&site.root, &tc));
    let c = Raw::open(server.local_addr(), &tc);
    (site, server, c)
}

/// A raw HTTP/3 client over quinn: frames and field sections written by
/// hand (httplab-wire's codec), to break the rules on purpose.
struct Raw {
    rt: tokio::runtime::Runtime,
    quic: quinn::Connection,
    _control: quinn::SendStream,
    _ep: quinn::Endpoint,
}

/// A client's control stream opening: its type and an empty SETTINGS.
const CONTROL_OPENING: [u8; 3] = [0x00, 0x04, 0x00];

impl Raw {
    fn open(addr: SocketAddr, tc: &TestCert) -> Raw {
        let (rt, ep, quic) = quic_connect(addr, tc);
        let control = rt.block_on(async {
            let mut control = quic.open_uni().await.expect("a control stream");
            control.write_all(&CONTROL_OPENING).await.expect("SETTINGS");
            control
        });
        Raw {
            rt,
            quic,
            _control: control,
            _ep: ep,
        }
    }

    /// Sends `wire` on a new request stream, finished; what comes back.
    fn exchange(&self, wire: &[u8]) -> Result<Vec<u8>, quinn::ReadToEndError> {
        let quic = self.quic.clone();
        self.rt.block_on(async move {
            let (mut send, mut recv) = quic.open_bi().await.expect("a request stream");
            let _ = send.write_all(wire).await;
            let _ = send.finish();
            recv.read_to_end(1 << 20).await
        })
    }

    /// Opens a unidirectional stream with `wire` on it (not finished).
    fn uni(&self, wire: &[u8]) -> quinn::SendStream {
        let quic = self.quic.clone();
        self.rt.block_on(async move {
            let mut s = quic.open_uni().await.expect("a unidirectional stream");
            s.write_all(wire).await.expect("written");
            s
        })
    }

    /// The code the server closes the connection with.
    fn closed_with(&self) -> u64 {
        let quic = self.quic.clone();
        match self.rt.block_on(async move { quic.closed().await }) {
            quinn::ConnectionError::ApplicationClosed(a) => a.error_code.into_inner(),
            e => panic!("closed otherwise: {e:?}"),
        }
    }
}

/// The QPACK field section of a `method` request of `path` with `extra`
/// fields: the prefix (Required Insert Count 0, Base 0), `:method GET` by
/// static index (17), the rest by static name reference or as literals.
fn request_section(method: &str, path: &str, extra: &[(String, &str)]) -> Vec<u8> {
    use httplab_wire::h3::qpack;
    let mut section = vec![0x00, 0x00];
    if method == "GET" {
        section.push(0xc0 | 17);
    } else {
        qpack::field(&mut section, b":method", method.as_bytes());
    }
    for (n, v) in [
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
        ("user-agent", "raw"),
    ] {
        qpack::field(&mut section, n.as_bytes(), v.as_bytes());
    }
    for (n, v) in extra {
        qpack::field(&mut section, n.as_bytes(), v.as_bytes());
    }
    section
}

/// A HEADERS frame holding a GET of `path`.
fn get_headers(path: &str) -> Vec<u8> {
    use httplab_wire::h3::frame;
    let section = request_section("GET", path, &[]);
    let mut wire = Vec::new();
    frame::put_head(&mut wire, frame::kind::HEADERS, section.len() as u64);
    wire.extend_from_slice(&section);
    wire
}

/// A response stream's status and body (its DATA frames joined).
fn parse_response(wire: &[u8]) -> (u16, Vec<u8>) {
    use httplab_wire::h3::frame::{Frame, FrameReader};
    let mut r = FrameReader::default();
    r.push(wire);
    let (mut status, mut body) = (0u16, Vec::new());
    while let Some(f) = r.next(|_| true, 1 << 20) {
        match f {
            Frame::Whole {
                kind: 0x01,
                payload,
            } => {
                httplab_wire::h3::qpack::Decoder::default()
                    .decode(payload, 1 << 20, |n, v| {
                        if n == b":status" {
                            status = std::str::from_utf8(v).unwrap().parse().unwrap();
                        }
                    })
                    .expect("a response section");
            }
            Frame::Whole {
                kind: 0x00,
                payload,
            } => body.extend_from_slice(payload),
            f => panic!("unexpected {f:?}"),
        }
    }
    assert!(r.at_boundary());
    (status, body)
}

#[test]
fn an_unknown_frame_before_headers_is_ignored() {
    let (_site, server, c) = raw_case();
    // A reserved frame type (0x1f * 1 + 0x21), then the request.
    let mut wire = vec![0x40, 0x40, 0x03, 1, 2, 3];
    wire.extend_from_slice(&get_headers("/small.html"));
    let (status, body) = parse_response(&c.exchange(&wire).expect("a response"));
    assert_eq!((status, body.as_slice()), (200, SMALL));
    // A request body (DATA) and trailers are read and dropped.
    let mut wire = get_headers("/small.html");
    wire.extend_from_slice(&[0x00, 0x02, b'h', b'i']);
    wire.extend_from_slice(&get_headers("/ignored"));
    let (status, body) = parse_response(&c.exchange(&wire).expect("a response"));
    assert_eq!((status, body.as_slice()), (200, SMALL));
    drop(c);
    server.shutdown();
}

#[test]
fn data_before_headers_is_frame_unexpected() {
    let (_site, server, c) = raw_case();
    let mut wire = vec![0x00, 0x02, b'h', b'i'];
    wire.extend_from_slice(&get_headers("/small.html"));
    let _ = c.exchange(&wire);
    assert_eq!(c.closed_with(), 0x105, "H3_FRAME_UNEXPECTED");
    server.shutdown();
}

#[test]
fn a_dynamic_table_reference_is_qpack_decompression_failed() {
    let (_site, server, c) = raw_case();
    // Required Insert Count 0, then an indexed field line of the dynamic
    // table (T = 0): there is no table.
    let _ = c.exchange(&[0x01, 0x03, 0x00, 0x00, 0x80]);
    assert_eq!(c.closed_with(), 0x200, "QPACK_DECOMPRESSION_FAILED");
    server.shutdown();
}

#[test]
fn a_headers_frame_over_the_limit_is_answered_431() {
    let (_site, server, c) = raw_case();
    // A 20 KiB field section, over `--max-header-bytes` (16 KiB).
    let mut section = get_headers("/small.html")[2..].to_vec();
    httplab_wire::h3::qpack::field(&mut section, b"x-big", &[b'v'; 20 << 10]);
    let mut wire = Vec::new();
    httplab_wire::h3::frame::put_head(&mut wire, 0x01, section.len() as u64);
    wire.extend_from_slice(&section);
    let (status, _) = parse_response(&c.exchange(&wire).expect("a response"));
    assert_eq!(status, 431);
    // The connection still serves.
    let (status, _) = parse_response(&c.exchange(&get_headers("/small.html")).unwrap());
    assert_eq!(status, 200);
    drop(c);
    server.shutdown();
}

#[test]
fn a_second_control_stream_is_stream_creation_error() {
    let (_site, server, c) = raw_case();
    let (status, _) = parse_response(&c.exchange(&get_headers("/small.html")).unwrap());
    assert_eq!(status, 200);
    let _second = c.uni(&CONTROL_OPENING);
    assert_eq!(c.closed_with(), 0x103, "H3_STREAM_CREATION_ERROR");
    server.shutdown();
}

#[test]
fn an_unknown_unidirectional_stream_is_stopped() {
    let (_site, server, c) = raw_case();
    // A reserved stream type (0x1f * 1 + 0x21): the server stops reading
    // it with H3_STREAM_CREATION_ERROR and the connection goes on.
    let s = c.uni(&[0x40, 0x40, 1, 2, 3]);
    let stopped = c.rt.block_on(s.stopped()).expect("stopped");
    assert_eq!(stopped, Some(quinn::VarInt::from_u32(0x103)));
    let (status, body) = parse_response(&c.exchange(&get_headers("/small.html")).unwrap());
    assert_eq!((status, body.as_slice()), (200, SMALL));
    drop(c);
    server.shutdown();
}

/// The engine's own part of a request, without sockets
/// (`testkit::Harness::answer_h3`): a GET answered as over HTTP/1.1, and an
/// error answered to HEAD (here 431, too many fields) is its head only, as
/// a HEAD's answer must be, while to GET it carries its page.
#[test]
fn requests_are_answered_and_an_error_to_head_has_no_content() {
    use httplab_server::testkit::{H3Reply, Harness};
    let site = site();
    let mut h = Harness::new(ServerConfig::for_root(&site.root)).expect("harness");
    let now = std::time::Instant::now();
    let status = |fields: &[(Vec<u8>, Vec<u8>)]| fields[0].clone();
    let get = request_section("GET", "/small.html", &[]);
    let H3Reply::Response(fields, body) = h.answer_h3(&get, now) else {
        panic!("no response to a GET");
    };
    assert_eq!(status(&fields), (b":status".to_vec(), b"200".to_vec()));
    assert_eq!(body.as_slice(), SMALL);
    let many: Vec<(String, &str)> = (0..120).map(|i| (format!("x-field-{i}"), "v")).collect();
    for (method, content) in [("HEAD", false), ("GET", true)] {
        let req = request_section(method, "/small.html", &many);
        let H3Reply::Response(fields, body) = h.answer_h3(&req, now) else {
            panic!("no response to {method}");
        };
        assert_eq!(status(&fields).1, b"431", "{method}");
        assert_eq!(!body.is_empty(), content, "{method}");
        assert!(
            fields.iter().any(|(n, _)| n == b"content-length"),
            "{method}"
        );
    }
    // A dynamic-table reference: the connection error, no answer.
    assert!(matches!(
        h.answer_h3(&[0x00, 0x00, 0x80], now),
        H3Reply::Undecodable
    ));
}
