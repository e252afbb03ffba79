//! `httplab load --http2` against an HTTP/2 server written in the test (the
//! `h2` crate's server side on a tokio runtime in its own thread): stream and
//! connection counts, open-loop scheduling, RST_STREAM and GOAWAY counting,
//! and the errors for targets that do not speak HTTP/2.

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use common::load;
use httplab_model::{Http2Summary, RunResult};

/// What the test server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    streams: AtomicU64,
}

/// How the test server behaves.
#[derive(Clone, Copy)]
struct Behaviour {
    /// Streams served per connection before a graceful GOAWAY (NO_ERROR); 0: never.
    goaway_after: u64,
}

struct H2Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const BODY: &[u8] = b"hello, http/2\n";

impl H2Server {
    /// Paths: `/rst` is reset (RST_STREAM INTERNAL_ERROR) without an answer;
    /// `/calm` ends the connection with GOAWAY ENHANCE_YOUR_CALM; `/404` gets
    /// 404 with [`BODY`]; anything else 200 with [`BODY`].
    fn start(b: Behaviour) -> H2Server {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let seen = Arc::new(Seen::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let seen2 = seen.clone();
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
                            seen2.connections.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(serve_conn(sock, b, seen2.clone()));
                        }
                    }
                }
            });
        });
        H2Server {
            addr,
            seen,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve_conn(sock: tokio::net::TcpStream, b: Behaviour, seen: Arc<Seen>) {
    let Ok(mut conn) = h2::server::handshake(sock).await else {
        return;
    };
    let mut served = 0u64;
    while let Some(r) = conn.accept().await {
        let Ok((req, mut respond)) = r else { return };
        seen.streams.fetch_add(1, Ordering::SeqCst);
        served += 1;
        if req.uri().path() == "/rst" {
            respond.send_reset(h2::Reason::INTERNAL_ERROR);
        } else if req.uri().path() == "/calm" {
            // GOAWAY with an error: the connection ends now.
            conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
            drop(respond);
        } else {
            let status = if req.uri().path() == "/404" { 404 } else { 200 };
            let resp = http::Response::builder()
                .status(status)
                .header("content-length", BODY.len())
                .body(())
                .expect("response");
            if let Ok(mut s) = respond.send_response(resp, false) {
                let _ = s.send_data(Bytes::from_static(BODY), true);
            }
        }
        if b.goaway_after > 0 && served == b.goaway_after {
            conn.graceful_shutdown();
        }
    }
}

fn h2(r: &RunResult) -> &Http2Summary {
    r.http2
        .as_ref()
        .expect("an --http2 run has an HTTP/2 block")
}

fn target(s: &H2Server) -> String {
    format!("--http2 --server 127.0.0.1 --port {}", s.port())
}

#[test]
fn counts_streams_connections_and_bytes() {
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    let r = load(&format!(
        "{} --uri /ok --num-conns 3 --num-calls 20 --max-concurrent-streams 4 --timeout 10",
        target(&s)
    ));
    let h = h2(&r);
    assert_eq!(r.totals.connections, 3);
    assert_eq!(r.totals.requests, 60);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(r.reply.status.success, 60);
    assert_eq!(r.errors.total, 0);
    assert_eq!(h.connections, 3);
    assert_eq!(h.streams_started, 60);
    assert_eq!(h.streams_completed, 60);
    assert_eq!(h.streams_failed, 0);
    assert!(h.rst_stream_received.is_empty());
    assert_eq!(h.goaway_received, 0);
    assert!(h.cleartext);
    assert_eq!(h.max_concurrent_streams, 4);
    assert_eq!(s.seen.streams.load(Ordering::SeqCst), 60);
    assert_eq!(s.seen.connections.load(Ordering::SeqCst), 3);
    assert_eq!(r.accuracy.bytes_received, 60 * BODY.len() as u64);
    assert_eq!(r.latency.response.count, 60);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("HTTP/2: h2c, prior knowledge"), "{text}");
    assert!(
        text.contains("HTTP/2 streams: started 60 completed 60 failed 0"),
        "{text}"
    );
    // The JSON round-trips the block.
    let j = serde_json::to_string(&r).unwrap();
    let back: RunResult = serde_json::from_str(&j).unwrap();
    assert_eq!(back.http2, r.http2);
}

#[test]
fn open_loop_runs_the_schedule_and_closed_loop_users_keep_streams_busy() {
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    // Open loop: 20 connection arrivals at 200/s, 3 streams each.
    let r = load(&format!(
        "{} --uri /ok --rate 200 --num-conns 20 --num-calls 3 --max-concurrent-streams 2 --timeout 10",
        target(&s)
    ));
    assert_eq!(r.totals.connections, 20);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(h2(&r).streams_completed, 60);
    assert_eq!(r.config.rate, Some(200.0));
    // Every stream has its corrected (from the schedule) and uncorrected
    // latency; the corrected one never is the smaller.
    assert_eq!(r.latency.response.count, 60);
    assert_eq!(r.latency.response_uncorrected.count, 60);
    assert!(r.latency.response.max_ms >= r.latency.response_uncorrected.max_ms);
    // The same over two load threads (each its own runtime, its lane of the schedule).
    let r = load(&format!(
        "{} --uri /ok --rate 200 --num-conns 20 --num-calls 3 --max-concurrent-streams 2 --threads 2 --timeout 10",
        target(&s)
    ));
    assert_eq!(r.totals.connections, 20);
    assert_eq!(r.totals.replies, 60);
    assert_eq!(h2(&r).connections, 20);
    // Closed loop: 2 users, 25 requests each, 5 streams in flight per user.
    let r = load(&format!(
        "{} --uri /ok --users 2 --requests-per-user 25 --max-concurrent-streams 5 --timeout 10",
        target(&s)
    ));
    assert_eq!(r.totals.connections, 2);
    assert_eq!(r.totals.replies, 50);
    assert_eq!(h2(&r).streams_started, 50);
    assert_eq!(r.errors.total, 0);
}

#[test]
fn counts_rst_stream_by_reason() {
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    let r = load(&format!(
        "{} --uri /rst --num-conns 2 --num-calls 5 --timeout 10",
        target(&s)
    ));
    let h = h2(&r);
    assert_eq!(h.streams_started, 10);
    assert_eq!(h.streams_failed, 10);
    assert_eq!(h.streams_completed, 0);
    assert_eq!(h.rst_stream_received.get("INTERNAL_ERROR"), Some(&10));
    assert_eq!(r.errors.other, 10);
    assert_eq!(r.totals.replies, 0);
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("RST_STREAM 10 (INTERNAL_ERROR 10)"), "{text}");
}

#[test]
fn counts_goaway_and_users_reconnect() {
    // The server says GOAWAY (NO_ERROR) after 3 streams on each connection.
    let s = H2Server::start(Behaviour { goaway_after: 3 });
    let r = load(&format!(
        "{} --uri /ok --users 1 --requests-per-user 10 --timeout 10",
        target(&s)
    ));
    let h = h2(&r);
    assert_eq!(r.totals.replies, 10, "{h:?}");
    assert_eq!(r.errors.total, 0, "{:?}", r.errors);
    assert!(r.totals.connections >= 4, "{}", r.totals.connections);
    assert!(h.goaway_received >= 3, "{h:?}");
    assert_eq!(
        h.goaway_reasons.get("NO_ERROR").copied(),
        Some(h.goaway_received)
    );
    let text = httplab_load::render_httperf_report(&r);
    assert!(text.contains("GOAWAY"), "{text}");
}

#[test]
fn a_goaway_with_an_error_fails_the_connection() {
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    let r = load(&format!(
        "{} --uri /calm --num-conns 2 --num-calls 3 --timeout 10",
        target(&s)
    ));
    let h = h2(&r);
    assert_eq!(r.totals.connections, 2);
    assert_eq!(r.totals.replies, 0);
    assert_eq!(h.goaway_received, 2, "{h:?}");
    assert_eq!(h.goaway_reasons.get("ENHANCE_YOUR_CALM"), Some(&2), "{h:?}");
    assert!(r.errors.total >= 2, "{:?}", r.errors);
    // Each connection's first stream fails with it; no call is retried.
    assert_eq!(h.streams_started, 2, "{h:?}");
}

#[test]
fn request_oriented_connections_end_at_goaway_as_httperf() {
    let s = H2Server::start(Behaviour { goaway_after: 3 });
    let r = load(&format!(
        "{} --uri /ok --num-conns 2 --num-calls 5 --timeout 10",
        target(&s)
    ));
    assert_eq!(r.totals.connections, 2);
    assert_eq!(r.totals.replies, 6);
    assert_eq!(h2(&r).goaway_received, 2);
    assert_eq!(r.config.facts.unsent_calls, Some(4));
    // With --reconnect the remaining calls go on new connections.
    let r = load(&format!(
        "{} --uri /ok --num-conns 2 --num-calls 5 --reconnect --timeout 10",
        target(&s)
    ));
    assert_eq!(r.totals.replies, 10);
    assert_eq!(r.errors.total, 0);
}

#[test]
fn names_targets_that_do_not_speak_http2() {
    // An HTTP/1.1 server (httplab serve) answers the h2c preface in HTTP/1.1.
    let www = tempfile::tempdir().unwrap();
    std::fs::write(www.path().join("x.txt"), "x").unwrap();
    let handle = httplab_server::Server::start(httplab_server::ServerConfig::for_root(www.path()))
        .expect("httplab serve starts");
    let port = handle.local_addr().port();
    let spec = httplab_load::parse_args(
        format!("--http2 --server 127.0.0.1 --port {port} --uri /x.txt --num-conns 2 --timeout 5")
            .split_whitespace(),
    )
    .unwrap();
    let e = format!("{:#}", httplab_load::run(&spec, false).unwrap_err());
    assert!(e.contains("not an HTTP/2 server: got 'HTTP/1.1"), "{e}");
    drop(handle);
    // Nobody listening.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spec = httplab_load::parse_args(
        format!("--http2 --server 127.0.0.1 --port {dead} --num-conns 2 --timeout 5")
            .split_whitespace(),
    )
    .unwrap();
    let e = format!("{:#}", httplab_load::run(&spec, false).unwrap_err());
    assert!(e.contains("no connection succeeded"), "{e}");
}

#[test]
fn refuses_what_http2_does_not_do() {
    let bad = |a: &str| httplab_load::parse_args(a.split_whitespace()).is_err();
    assert!(bad("--server h --max-concurrent-streams 4"));
    assert!(bad("--server h --h2-window 1000"));
    assert!(bad("--server h --http2 --max-concurrent-streams 0"));
    assert!(bad("--server h --http2 --h2-window 0"));
    assert!(bad("--server h --http2 --burst-length 4 --num-calls 8"));
    assert!(bad("--server h --http2 --wsess 1,2,0"));
    assert!(bad("--server h --http2 --calibrate"));
    let s = httplab_load::parse_args(
        "--server h --http2 --max-concurrent-streams 16 --h2-window 65535".split_whitespace(),
    )
    .unwrap();
    let h = s.http2.unwrap();
    assert_eq!(h.max_concurrent_streams, 16);
    assert_eq!(h.stream_window, 65535);
    assert_eq!(h.conn_window, httplab_load::DEFAULT_H2_WINDOW);
    let d = httplab_load::parse_args("--server h --http2".split_whitespace()).unwrap();
    assert_eq!(d.http2.unwrap().max_concurrent_streams, 1);
}

#[test]
fn failure_status_and_retries_follow_the_http1_rules() {
    // --failure-status (and --retry-on-failure) judge httperf sessions,
    // which --http2 does not run: on connections' calls they change
    // nothing, over HTTP/2 as over HTTP/1.1 (one session machine for both).
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    let args = "--num-conns 2 --num-calls 3 --failure-status 404 --timeout 10";
    for extra in ["", "--retry-on-failure"] {
        let r = load(&format!("{} --uri /404 {args} {extra}", target(&s)));
        assert_eq!(r.totals.replies, 6, "{extra}");
        assert_eq!(r.reply.status.client_error, 6, "{extra}");
        assert_eq!(h2(&r).streams_started, 6, "{extra}");
        assert_eq!(r.errors.total, 0, "{extra}");
    }
    // HTTP/1.1 (httplab serve answers 404 for a missing file): the same counts.
    let www = tempfile::tempdir().unwrap();
    let handle = httplab_server::Server::start(httplab_server::ServerConfig::for_root(www.path()))
        .expect("httplab serve starts");
    let port = handle.local_addr().port();
    for extra in ["", "--retry-on-failure"] {
        let r = load(&format!(
            "--server 127.0.0.1 --port {port} --uri /missing {args} {extra}"
        ));
        assert_eq!(r.totals.replies, 6, "{extra}");
        assert_eq!(r.reply.status.client_error, 6, "{extra}");
        assert_eq!(r.errors.total, 0, "{extra}");
    }
}

#[test]
fn a_lost_connection_fails_the_session_with_reconnect_too() {
    // As over HTTP/1.1: --reconnect carries a session over the server's
    // close (a graceful GOAWAY), not over a failed connection.
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    let r = load(&format!(
        "{} --uri /calm --num-conns 2 --num-calls 3 --reconnect --timeout 10",
        target(&s)
    ));
    let h = h2(&r);
    assert_eq!(r.totals.connections, 2);
    assert_eq!(h.streams_started, 2, "{h:?}");
    assert_eq!(r.totals.replies, 0);
}

#[test]
fn stages_drive_http2_streams_too() {
    let s = H2Server::start(Behaviour { goaway_after: 0 });
    // 10 then 20 connection arrivals (a rate-0 tail lets late ones start),
    // 3 streams each; each stream's reply lands in its scheduled stage.
    let r = load(&format!(
        "{} --uri /ok --stages 200ms:50,200ms:100,1s:0 --num-calls 3 --max-concurrent-streams 2 --timeout 10",
        target(&s)
    ));
    let arrivals: Vec<u64> = r.stages.iter().map(|x| x.arrivals).collect();
    assert_eq!(arrivals, vec![10, 20, 0]);
    assert_eq!(r.totals.replies, 90);
    assert_eq!(r.stages.iter().map(|x| x.replies).sum::<u64>(), 90);
    assert_eq!(h2(&r).streams_completed, 90);
}
