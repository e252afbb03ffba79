//! `httplab load --http3` against an HTTP/3 server written in the test
//! (quinn and the `h3` crate's server side on a tokio runtime in its own
//! thread, a self-signed certificate from rcgen): exact counts, the
//! corrected latency of a stalled reply, closed-loop users, streams per
//! connection, certificate verification, and hostile servers (silent,
//! garbage datagrams, a request never answered, a connection closed with an
//! error, a stream reset) that end the run by themselves with named errors.

use crate::common;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::load;
use httplab_model::RunResult;

const BODY: &[u8] = b"hello, http/3\n";

/// What the test server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    streams: AtomicU64,
    /// Most request streams of one connection in the handler at once.
    max_inflight: AtomicU64,
}

/// The test server's certificate, its key and the CA file a client trusts.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

fn pki() -> Pki {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ck.cert.pem()).expect("write ca");
    Pki {
        ca,
        cert: ck.cert.der().clone(),
        key: ck.signing_key.serialize_der(),
        _dir: dir,
    }
}

/// How requests are held: each waits (at most 5 s) until `hold` requests of
/// its connection have arrived in its group, so a client that opens fewer
/// streams at once is seen as such.
#[derive(Clone, Copy, Default)]
struct Behaviour {
    hold: u64,
    /// Requests served per connection before a graceful GOAWAY; 0: never.
    goaway_after: u64,
}

struct H3Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pki: Pki,
}

impl H3Server {
    /// Paths: `/x` 200 with [`BODY`]; `/404` 404 with [`BODY`]; `/stall`
    /// answers the connection-wide first such request after 1 s, the others
    /// at once; `/hang` is never answered; `/close` closes the connection
    /// with H3_INTERNAL_ERROR; `/reset` resets the stream with
    /// H3_INTERNAL_ERROR.
    fn start(b: Behaviour) -> H3Server {
        let pki = pki();
        let config = server_config(&pki);
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let addr = sock.local_addr().expect("addr");
        let seen = Arc::new(Seen::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let seen2 = seen.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let ep = quinn::Endpoint::new(
                    quinn::EndpointConfig::default(),
                    Some(config),
                    sock,
                    Arc::new(quinn::TokioRuntime),
                )
                .expect("endpoint");
                let stalled = Arc::new(AtomicBool::new(false));
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        i = ep.accept() => {
                            let Some(i) = i else { break };
                            seen2.connections.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(serve_conn(i, b, seen2.clone(), stalled.clone()));
                        }
                    }
                }
                ep.close(0u32.into(), b"");
            });
        });
        H3Server {
            addr,
            seen,
            stop: Some(tx),
            thread: Some(thread),
            pki,
        }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn ca(&self) -> String {
        self.pki.ca.display().to_string()
    }
}

/// The QUIC server configuration: TLS 1.3 with the test certificate, ALPN
/// h3, 0-RTT accepted.
fn server_config(pki: &Pki) -> quinn::ServerConfig {
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .expect("tls13")
    .with_no_client_auth()
    .with_single_cert(
        vec![pki.cert.clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(pki.key.clone().into()),
    )
    .expect("server cert");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = u32::MAX;
    let qc = quinn::crypto::rustls::QuicServerConfig::try_from(Arc::new(tls)).expect("quic");
    quinn::ServerConfig::with_crypto(Arc::new(qc))
}

impl Drop for H3Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve_conn(i: quinn::Incoming, b: Behaviour, seen: Arc<Seen>, stalled: Arc<AtomicBool>) {
    let Ok(quic) = i.await else { return };
    let Ok(mut conn) =
        h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(quic.clone())).await
    else {
        return;
    };
    // Requests of this connection that arrived, and how many are in the handler.
    let (arrived_tx, arrived_rx) = tokio::sync::watch::channel(0u64);
    let inflight = Arc::new(AtomicU64::new(0));
    while let Ok(Some(resolver)) = conn.accept().await {
        let Ok((req, mut stream)) = resolver.resolve_request().await else {
            continue;
        };
        seen.streams.fetch_add(1, Ordering::SeqCst);
        let path = req.uri().path().to_string();
        if b.goaway_after > 0 && *arrived_rx.borrow() + 1 == b.goaway_after {
            // This one is still served; later ones are refused.
            let _ = conn.shutdown(1).await;
        }
        let mut k = 0;
        arrived_tx.send_modify(|v| {
            k = *v;
            *v += 1;
        });
        let now = inflight.fetch_add(1, Ordering::SeqCst) + 1;
        seen.max_inflight.fetch_max(now, Ordering::SeqCst);
        let mut rx = arrived_rx.clone();
        let (inflight, stalled, quic) = (inflight.clone(), stalled.clone(), quic.clone());
        tokio::spawn(async move {
            if b.hold > 1 {
                let group_end = (k / b.hold + 1) * b.hold;
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|v| *v >= group_end))
                        .await;
            }
            match path.as_str() {
                "/hang" => {
                    // Never answered: the client's --timeout ends it.
                    std::future::pending::<()>().await;
                }
                "/close" => quic.close(0x102u32.into(), b"closing"),
                "/reset" => stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR),
                _ => {
                    if path == "/stall" && !stalled.swap(true, Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    let status = if path == "/404" { 404 } else { 200 };
                    let resp = http::Response::builder()
                        .status(status)
                        .header("content-length", BODY.len())
                        .body(())
                        .expect("response");
                    inflight.fetch_sub(1, Ordering::SeqCst);
                    if stream.send_response(resp).await.is_ok()
                        && stream.send_data(Bytes::from_static(BODY)).await.is_ok()
                    {
                        let _ = stream.finish().await;
                    }
                }
            }
        });
    }
}

fn h3(r: &RunResult) -> &httplab_model::Http3Summary {
    r.http3.as_ref().expect("an http3 block")
}

#[test]
fn counts_requests_replies_streams_and_bytes_exactly() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --rate 50 --num-conns 4 --num-calls 5 --cacert {} --timeout 10",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.requests, 20);
    assert_eq!(r.totals.replies, 20);
    assert_eq!(r.reply.status.as_array(), [0, 20, 0, 0, 0]);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    assert_eq!(r.totals.connections, 4);
    assert_eq!(r.reply.content_bytes, BODY.len() as f64);
    assert_eq!(r.accuracy.bytes_received, 20 * BODY.len() as u64);
    assert_eq!(r.accuracy.bytes_expected, 20 * BODY.len() as u64);
    assert!(r.reply.header_bytes > 0.0);
    assert!(r.resources.bytes_sent > 0 && r.resources.bytes_received > 0);
    let h = h3(&r);
    assert_eq!(h.connections, 4);
    assert_eq!(
        (h.streams_started, h.streams_completed, h.streams_failed),
        (20, 20, 0)
    );
    assert_eq!(h.handshakes_1rtt + h.handshakes_0rtt, 4);
    assert_eq!(h.handshake.count, 4);
    assert_eq!(h.failed_connections, 0);
    assert!(h.datagrams_sent > 0 && h.datagrams_received > 0);
    assert_eq!(s.seen.streams.load(Ordering::SeqCst), 20);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 4);
    // Every stream has its corrected and uncorrected latency.
    assert_eq!(r.latency.response.count, 20);
    assert_eq!(r.latency.response_uncorrected.count, 20);
    let tls = r.tls.as_ref().expect("tls block");
    assert!(tls.verified);
    assert_eq!(tls.alpn.get("h3"), Some(&4));
    // The JSON document carries the block and reads back.
    let json = serde_json::to_string(&r).expect("json");
    let back: RunResult = serde_json::from_str(&json).expect("read back");
    assert_eq!(back.http3, r.http3);
    let text = httplab_load::render_httperf_report(&r);
    assert!(
        text.contains("HTTP/3 streams: started 20 completed 20 failed 0"),
        "{text}"
    );
    assert!(text.contains("QUIC handshake"), "{text}");
}

#[test]
fn threads_split_the_schedule_and_the_counts_add_up() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --rate 100 --num-conns 6 --num-calls 2 --threads 2 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 12);
    assert_eq!(h3(&r).connections, 6);
    assert_eq!(h3(&r).handshake.count, 6);
    assert_eq!(s.seen.streams.load(Ordering::SeqCst), 12);
}

#[test]
fn status_classes_and_the_url_form() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "https://127.0.0.1:{}/404 --http3 --cacert {} --num-conns 2 --num-calls 3",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 6);
    assert_eq!(r.reply.status.as_array(), [0, 0, 0, 6, 0]);
}

#[test]
fn a_stalled_reply_counts_from_the_scheduled_instant() {
    // One connection in setup at a time: while the first reply stalls 1 s,
    // the later arrivals wait; their corrected latency counts from their
    // scheduled instant (at most 150 ms after the first), so it includes
    // the wait: every corrected value is at least 1 s - 150 ms.
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /stall --rate 20 --num-conns 4 --max-connecting 1 --cacert {} --timeout 10",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 4);
    assert_eq!(r.latency.response.count, 4);
    assert!(
        r.latency.response.min_ms >= 850.0,
        "corrected latency must include the wait: {:?}",
        r.latency.response
    );
    assert!(r.latency.response.min_ms >= r.latency.response_uncorrected.min_ms);
}

#[test]
fn closed_loop_users_keep_their_streams_busy() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --users 3 --requests-per-user 7 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 21);
    assert_eq!(h3(&r).streams_completed, 21);
    assert_eq!(h3(&r).connections, 3);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 3);
}

#[test]
fn a_duration_run_ends_and_every_request_is_answered() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --rate 40 --duration 0.5s --num-calls 2 --cacert {} --timeout 5",
        s.port(),
        s.ca()
    ));
    assert!(r.totals.replies > 0);
    assert_eq!(r.totals.replies, r.totals.requests);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    assert_eq!(h3(&r).streams_completed, r.totals.replies);
    assert_eq!(s.seen.streams.load(Ordering::SeqCst), r.totals.requests);
}

#[test]
fn users_carry_on_on_a_new_connection_after_goaway() {
    let s = H3Server::start(Behaviour {
        goaway_after: 3,
        ..Behaviour::default()
    });
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --users 1 --requests-per-user 9 --cacert {} --timeout 10",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 9);
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    let h = h3(&r);
    assert_eq!(h.streams_completed, 9);
    assert!(h.connections >= 3, "{h:?}");
    assert_eq!(h.connections, s.seen.connections.load(Ordering::SeqCst));
}

#[test]
fn streams_per_connection_are_concurrent_up_to_the_limit() {
    let s = H3Server::start(Behaviour {
        hold: 4,
        ..Behaviour::default()
    });
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 1 --num-calls 8 --max-concurrent-streams 4 --cacert {} --timeout 20",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 8);
    assert_eq!(h3(&r).max_concurrent_streams, 4);
    assert_eq!(s.seen.max_inflight.load(Ordering::SeqCst), 4);
}

#[test]
fn certificates_are_verified_unless_insecure() {
    let s = H3Server::start(Behaviour::default());
    // The system's roots do not know the test's self-signed certificate.
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 2 --timeout 5",
        s.port()
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(h3(&r).errors.handshake_failed, 2, "{:?}", h3(&r));
    assert_eq!(r.errors.total, 2);
    let why = h3(&r).first_error.clone().unwrap_or_default();
    assert!(
        why.contains("certificate") || why.contains("Certificate"),
        "{why}"
    );
    let r = load(&format!(
        "https://127.0.0.1:{}/x --http3 --insecure --num-conns 2",
        s.port()
    ));
    assert_eq!(r.totals.replies, 2);
    assert!(!r.tls.as_ref().expect("tls").verified);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("NOT VERIFIED"), "{text}");
    let r = load(&format!(
        "https://127.0.0.1:{}/x --http3 --cacert {} --num-conns 2",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 2);
    assert!(r.tls.as_ref().expect("tls").verified);
}

#[test]
fn later_connections_resume_with_0rtt() {
    let s = H3Server::start(Behaviour::default());
    // Sequential connections: each starts after the previous one's reply,
    // by when its session ticket has arrived.
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 3 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 3);
    let h = h3(&r);
    assert_eq!(h.handshakes_1rtt + h.handshakes_0rtt, 3);
    assert!(h.handshakes_0rtt >= 1, "{h:?}");
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 3 --ssl-no-reuse --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(h3(&r).handshakes_1rtt, 3);
}

// ---------------------------------------------------------------- hostile

/// A UDP peer that answers every datagram with `reply(datagram)` (nothing
/// when it returns None), until dropped.
struct UdpPeer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl UdpPeer {
    fn start(reply: fn(&[u8]) -> Option<Vec<u8>>) -> UdpPeer {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let port = sock.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            // Bounded: at most 10 000 datagrams answered.
            for _ in 0..10_000 {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(out) = reply(&buf[..n]) {
                    let _ = sock.send_to(&out, from);
                }
            }
        });
        UdpPeer {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for UdpPeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_silent_server_ends_in_handshake_timeouts() {
    let p = UdpPeer::start(|_| None);
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 2 --timeout 1 --insecure",
        p.port
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.client_timo, 2, "{:?}", r.errors);
    assert_eq!(h3(&r).errors.handshake_failed, 2);
    assert_eq!(h3(&r).failed_connections, 2);
}

#[test]
fn garbage_datagrams_are_dropped_and_the_handshake_times_out() {
    // Mirrors each datagram with its bytes scrambled: never valid QUIC.
    let p = UdpPeer::start(|d| Some(d.iter().map(|b| b ^ 0x5a).collect()));
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 2 --timeout 1 --insecure",
        p.port
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.total, 2, "{:?}", r.errors);
    assert_eq!(h3(&r).errors.handshake_failed, 2);
}

/// A Version Negotiation packet (RFC 9000, 17.2.1) answering a client's
/// long-header packet `d`, offering only a version nobody speaks.
fn version_negotiation(d: &[u8]) -> Option<Vec<u8>> {
    let dcid_len = *d.get(5)? as usize;
    let dcid = d.get(6..6 + dcid_len)?;
    let scid_len = *d.get(6 + dcid_len)? as usize;
    let scid = d.get(7 + dcid_len..7 + dcid_len + scid_len)?;
    let mut out = vec![0xc0, 0, 0, 0, 0];
    // Our connection ids are the client's, swapped.
    out.push(scid.len() as u8);
    out.extend_from_slice(scid);
    out.push(dcid.len() as u8);
    out.extend_from_slice(dcid);
    out.extend_from_slice(&[0x0a, 0x1a, 0x2a, 0x3a]);
    Some(out)
}

#[test]
fn a_server_without_a_common_version_is_version_negotiation() {
    let p = UdpPeer::start(version_negotiation);
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 2 --timeout 5 --insecure",
        p.port
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.total, 2, "{:?}", r.errors);
    let h = h3(&r);
    assert_eq!(h.errors.version_negotiation, 2, "{h:?}");
    assert_eq!(h.errors.handshake_failed, 0);
    let why = h.first_error.clone().unwrap_or_default();
    assert!(why.contains("version"), "{why}");
}

#[test]
fn a_request_never_answered_ends_at_the_timeout() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /hang --num-conns 2 --timeout 1 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.client_timo, 2, "{:?}", r.errors);
    assert_eq!(h3(&r).streams_failed, 2);
    assert_eq!(h3(&r).connections, 2);
}

#[test]
fn a_duration_run_ends_at_its_drain_while_requests_hang() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /hang --rate 10 --duration 0.3s --timeout 1 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 0);
    assert!(r.totals.requests > 0);
    assert_eq!(r.errors.client_timo, r.totals.requests, "{:?}", r.errors);
    assert_eq!(h3(&r).streams_failed, r.totals.requests);
}

#[test]
fn a_connection_closed_with_an_error_is_named_by_its_code() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /close --num-conns 2 --timeout 5 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.total, 2, "{:?}", r.errors);
    let h = h3(&r);
    assert_eq!(h.streams_failed, 2);
    let by_code: HashMap<_, _> = h.errors.closed_by_peer.iter().collect();
    assert_eq!(
        by_code.get(&"H3_INTERNAL_ERROR".to_string()),
        Some(&&2),
        "{h:?}"
    );
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("H3_INTERNAL_ERROR 2"), "{text}");
}

/// A QUIC server whose HTTP/3 is broken: its control stream starts with a
/// DATA frame instead of SETTINGS; it never answers a request.
struct BrokenH3 {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pki: Pki,
}

impl BrokenH3 {
    fn start() -> BrokenH3 {
        let pki = pki();
        let config = server_config(&pki);
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = sock.local_addr().expect("addr").port();
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let ep = quinn::Endpoint::new(
                    quinn::EndpointConfig::default(),
                    Some(config),
                    sock,
                    Arc::new(quinn::TokioRuntime),
                )
                .expect("endpoint");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        i = ep.accept() => {
                            let Some(i) = i else { break };
                            tokio::spawn(async move {
                                let Ok(c) = i.await else { return };
                                if let Ok(mut u) = c.open_uni().await {
                                    // Stream type 0x00 (control), then DATA (0x00) of length 0.
                                    let _ = u.write_all(&[0x00, 0x00, 0x00]).await;
                                }
                                c.closed().await;
                            });
                        }
                    }
                }
                ep.close(0u32.into(), b"");
            });
        });
        BrokenH3 {
            port,
            stop: Some(tx),
            thread: Some(thread),
            pki,
        }
    }
}

impl Drop for BrokenH3 {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_server_that_breaks_http3_is_a_protocol_error() {
    let s = BrokenH3::start();
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --num-conns 2 --timeout 5 --cacert {}",
        s.port,
        s.pki.ca.display()
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.total, 2, "{:?}", r.errors);
    let h = h3(&r);
    assert_eq!(h.errors.protocol_error, 2, "{h:?}");
}

#[test]
fn a_reset_stream_is_counted_by_its_code() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /reset --num-conns 2 --timeout 5 --cacert {}",
        s.port(),
        s.ca()
    ));
    assert_eq!(r.totals.replies, 0);
    assert_eq!(r.errors.total, 2, "{:?}", r.errors);
    let h = h3(&r);
    assert_eq!(h.streams_failed, 2);
    assert_eq!(
        h.errors.stream_reset.get("H3_INTERNAL_ERROR"),
        Some(&2),
        "{h:?}"
    );
}

#[test]
fn refuses_what_http3_does_not_do() {
    let bad = |args: &str| httplab_load::parse_args(args.split_whitespace()).is_err();
    assert!(bad("--http3 --server h --http2"));
    assert!(bad("--http3 --server h --tls-version 1.2"));
    assert!(bad("--http3 --server h --burst-length 2 --num-calls 4"));
    assert!(bad("--http3 --server h --wsess 1,1,0"));
}

#[test]
fn stages_drive_http3_streams_too() {
    let s = H3Server::start(Behaviour::default());
    let r = load(&format!(
        "--http3 --server 127.0.0.1 --port {} --uri /x --stages 200ms:20,200ms:40,1s:0 --num-calls 2 --threads 2 --cacert {} --timeout 10",
        s.port(),
        s.ca()
    ));
    let arrivals: Vec<u64> = r.stages.iter().map(|x| x.arrivals).collect();
    assert_eq!(arrivals, vec![4, 8, 0]);
    assert_eq!(r.totals.replies, 24);
    assert_eq!(r.stages.iter().map(|x| x.replies).sum::<u64>(), 24);
    assert_eq!(r.stages.iter().map(|x| x.sent).sum::<u64>(), 24);
}
