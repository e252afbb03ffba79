//! No byte of a TLS connection outside TLS, on any reconnect path. A
//! TLS-only test server (HTTP/2 by the `h2` crate, HTTP/1.1 by hand, both
//! over tokio-rustls) looks at the first byte of every connection it accepts
//! before the handshake: anything but a TLS handshake record (content type
//! 22) is counted as cleartext and the connection dropped. The client is
//! driven through every way a connection ends — the server's graceful end
//! (GOAWAY, `Connection: close`), a silent close, a reset, the client's own
//! end of a session, a timeout — on both I/O engines (HTTPS runs on epoll
//! under `--io uring`: the test checks that, too), and each run must leave
//! the cleartext count at zero with every connection seen as TLS.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use httplab_model::RunResult;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

/// What the server saw of its connections.
#[derive(Default)]
struct Seen {
    /// Connections whose first byte began a TLS handshake record.
    tls: AtomicU64,
    /// Connections whose first byte did not (bytes in the clear).
    cleartext: AtomicU64,
}

/// How the server ends a connection after `n` answers.
#[derive(Clone, Copy, Debug)]
enum End {
    /// It does not.
    Never,
    /// HTTP/2: a graceful GOAWAY (two frames, the h2 crate's way);
    /// HTTP/1.1: `Connection: close` on the n-th answer, then close_notify.
    Polite(u64),
    /// TCP closed without a word (no GOAWAY, no `Connection: close`, no
    /// close_notify), at the first request after the n-th answer.
    Silent(u64),
    /// A TCP reset, at the first request after the n-th answer.
    Reset(u64),
}

impl End {
    fn after(self) -> u64 {
        match self {
            End::Never => u64::MAX,
            End::Polite(n) | End::Silent(n) | End::Reset(n) => n,
        }
    }
}

const BODY: &[u8] = b"hello over tls\n";

struct Guard {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn acceptor() -> tokio_rustls::TlsAcceptor {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("rcgen");
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        ck.signing_key.serialize_der(),
    ));
    let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .expect("certificate");
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
}

impl Guard {
    /// Paths: `/hang` is never answered; anything else gets 200 with [`BODY`].
    fn start(end: End) -> Guard {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let seen = Arc::new(Seen::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let seen2 = seen.clone();
        let acc = acceptor();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        a = listener.accept() => {
                            let Ok((sock, _)) = a else { continue };
                            tokio::spawn(connection(sock, acc.clone(), end, seen2.clone()));
                        }
                    }
                }
            });
        });
        Guard {
            addr,
            seen,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    fn cleartext(&self) -> u64 {
        self.seen.cleartext.load(Ordering::SeqCst)
    }

    fn tls(&self) -> u64 {
        self.seen.tls.load(Ordering::SeqCst)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn connection(
    sock: tokio::net::TcpStream,
    acc: tokio_rustls::TlsAcceptor,
    end: End,
    seen: Arc<Seen>,
) {
    let mut first = [0u8; 1];
    match sock.peek(&mut first).await {
        // Closed before a byte: nothing was sent in the clear.
        Ok(0) | Err(_) => return,
        Ok(_) if first[0] != 0x16 => {
            seen.cleartext.fetch_add(1, Ordering::SeqCst);
            return;
        }
        Ok(_) => {
            seen.tls.fetch_add(1, Ordering::SeqCst);
        }
    }
    if matches!(end, End::Reset(_)) {
        // Applies at close: the connection then ends with RST.
        let _ = socket2::SockRef::from(&sock).set_linger(Some(Duration::ZERO));
    }
    let Ok(tls) = acc.accept(sock).await else {
        return;
    };
    if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
        serve_h2(tls, end).await;
    } else {
        serve_h1(tls, end).await;
    }
}

async fn serve_h2(tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>, end: End) {
    let Ok(mut conn) = h2::server::handshake(tls).await else {
        return;
    };
    let mut served = 0u64;
    // Streams never answered (`/hang`) stay open until the connection ends.
    let mut hanging = Vec::new();
    while let Some(r) = conn.accept().await {
        let Ok((req, mut respond)) = r else { return };
        if served >= end.after() && matches!(end, End::Silent(_) | End::Reset(_)) {
            // The connection is dropped with this stream unanswered.
            return;
        }
        if req.uri().path() == "/hang" {
            hanging.push(respond);
            continue;
        }
        let resp = http::Response::builder()
            .status(200)
            .header("content-length", BODY.len())
            .body(())
            .expect("response");
        if let Ok(mut s) = respond.send_response(resp, false) {
            let _ = s.send_data(Bytes::from_static(BODY), true);
        }
        served += 1;
        if served == end.after() && matches!(end, End::Polite(_)) {
            conn.graceful_shutdown();
        }
    }
}

async fn serve_h1(mut tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>, end: End) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut served = 0u64;
    loop {
        let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match tls.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let hang = buf.starts_with(b"GET /hang ");
        buf.drain(..head_end + 4);
        if served >= end.after() && matches!(end, End::Silent(_) | End::Reset(_)) {
            // Dropped without close_notify (and, for Reset, with RST).
            return;
        }
        if hang {
            // Never answered: wait for the client to give up.
            let _ = tls.read(&mut chunk).await;
            return;
        }
        served += 1;
        let close = served == end.after() && matches!(end, End::Polite(_));
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n",
            BODY.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        let mut out = head.into_bytes();
        out.extend_from_slice(BODY);
        if tls.write_all(&out).await.is_err() {
            return;
        }
        if close {
            let _ = tls.shutdown().await;
            return;
        }
    }
}

fn load(args: &str) -> RunResult {
    let spec = httplab_load::parse_args(args.split_whitespace()).expect("parse args");
    httplab_load::run(&spec, false).unwrap_or_else(|e| panic!("{args}: {e:#}"))
}

/// Runs `args` against a fresh server that ends connections as `end` says,
/// on each I/O engine, and checks the wire: no connection began in the
/// clear, and the server saw every connection the client opened as TLS.
fn wire_clean(end: End, args: &str, check: impl Fn(&RunResult)) {
    for io in ["epoll", "uring"] {
        let g = Guard::start(end);
        let r = load(&format!(
            "--ssl --server 127.0.0.1 --port {} {args} --io {io}",
            g.addr.port()
        ));
        let what = format!("{end:?} {args} --io {io}");
        // The server has seen every connection by the time the run ends
        // (each one was answered or failed), so the counts are final.
        assert_eq!(g.cleartext(), 0, "{what}: a connection began in the clear");
        assert_eq!(
            g.tls(),
            r.totals.connections,
            "{what}: every connection the client opened began with TLS"
        );
        assert_eq!(
            r.config.facts.io_engine,
            Some(httplab_model::IoEngineUsed::Epoll),
            "{what}: HTTPS runs on the epoll engine"
        );
        check(&r);
    }
}

fn no_errors(replies: u64) -> impl Fn(&RunResult) {
    move |r: &RunResult| {
        assert_eq!(r.errors.total, 0, "{:?}", r.errors);
        assert_eq!(r.totals.replies, replies);
    }
}

#[test]
fn http1_never_writes_outside_tls() {
    // The server's `Connection: close` after 3 answers: users reconnect.
    wire_clean(
        End::Polite(3),
        "--uri /a --users 2 --requests-per-user 10 --timeout 5",
        |r| {
            no_errors(20)(r);
            assert_eq!(r.totals.connections, 8, "4 connections per user");
        },
    );
    // Closed without a word, and reset: the user's next call fails or is
    // made again; either way on a new TLS connection.
    for end in [End::Silent(3), End::Reset(3)] {
        wire_clean(
            end,
            "--uri /a --users 2 --requests-per-user 10 --timeout 5",
            |r| assert!(r.totals.connections >= 4, "{}", r.totals.connections),
        );
    }
    // The client's own end: a connection per session.
    wire_clean(
        End::Never,
        "--uri /a --num-conns 5 --num-calls 2 --timeout 5",
        no_errors(10),
    );
    // A reply that never comes: the client times out and reconnects.
    wire_clean(
        End::Never,
        "--uri /hang --num-conns 3 --num-calls 1 --timeout 0.3",
        |r| {
            assert_eq!(r.errors.client_timo, 3, "{:?}", r.errors);
            assert_eq!(r.totals.connections, 3);
        },
    );
}

#[test]
fn http2_never_writes_outside_tls() {
    for streams in [1, 16] {
        let h2 = format!("--http2 --max-concurrent-streams {streams}");
        // GOAWAY after 3 streams (the h2 crate sends two GOAWAY frames):
        // each connection counted once and nothing lost. One stream at a
        // time, every GOAWAY leaves work for a new connection: a user's
        // connections are its GOAWAYs plus one. With 16, a user's calls may
        // all be in flight when the GOAWAY comes: at most that many.
        wire_clean(
            End::Polite(3),
            &format!("{h2} --uri /a --users 4 --requests-per-user 10 --timeout 5"),
            |r| {
                no_errors(40)(r);
                let h = r.http2.as_ref().expect("an HTTP/2 block");
                let most = h.goaway_received + 4;
                if streams == 1 {
                    assert_eq!(r.totals.connections, most, "GOAWAYs + users: {h:?}");
                } else {
                    assert!(r.totals.connections <= most, "{h:?}");
                }
                assert_eq!(h.goaway_reasons.get("NO_ERROR"), Some(&h.goaway_received));
                assert_eq!(h.streams_completed, 40, "{h:?}");
                assert_eq!(h.streams_failed, 0, "{h:?}");
            },
        );
        // A lost connection, one stream at a time (the 4th request comes
        // after the 3rd answer reached the client: with more streams in
        // flight the server would drop answers it had not yet written).
        for end in [End::Silent(3), End::Reset(3)]
            .into_iter()
            .filter(|_| streams == 1)
        {
            wire_clean(
                end,
                &format!("{h2} --uri /a --users 2 --requests-per-user 10 --timeout 5"),
                |r| assert!(r.totals.connections >= 4, "{}", r.totals.connections),
            );
        }
        wire_clean(
            End::Never,
            &format!("{h2} --uri /a --num-conns 5 --num-calls 2 --timeout 5"),
            no_errors(10),
        );
        wire_clean(
            End::Never,
            &format!("{h2} --uri /hang --num-conns 3 --num-calls 1 --timeout 0.3"),
            |r| assert_eq!(r.errors.client_timo, 3, "{:?}", r.errors),
        );
    }
}
