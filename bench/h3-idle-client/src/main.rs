//! The idle HTTP/3 connection holder of bench/h3-idle (built there, not
//! shipped): opens CONNS QUIC connections to one server, at most IN_FLIGHT
//! handshakes at a time, completes the handshake and ONE HTTP/3 request on
//! each (so the server holds a whole HTTP/3 connection: control and QPACK
//! streams, one finished request stream), then holds them all without
//! traffic for HOLD seconds and closes them with H3_NO_ERROR.
//!
//! Connections are spread over endpoints (one UDP socket each) of at most
//! PER_ENDPOINT connections, with 4 MiB socket buffers. The QUIC idle timeout asked is 300 s (the
//! server's own may be shorter: the shorter one applies); no keep-alive
//! unless `--keep-alive SECS`. A connection must finish its handshake and
//! request within `--timeout` (default 30 s).
//!
//! Usage: h3-idle-client ADDR SERVER_NAME PATH CONNS HOLD_SECS
//!          [--in-flight K] [--per-endpoint M] [--timeout S] [--keep-alive S]
//!
//! Prints, one line each, as they happen (the script waits for `holding`):
//!   opened ok N failed F seconds T          (then `failed CLASS COUNT` lines)
//!   holding N
//!   held-at-end N closed-early M            (then `closed CLASS COUNT` lines)

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use socket2::{Domain, Protocol, Socket, Type};

const H3_NO_ERROR: u32 = 0x100;
const IDLE: Duration = Duration::from_secs(300);
/// Requested UDP socket buffer size, each way.
const UDP_BUFFER: usize = 4 << 20;

/// Why a connection failed to open, or ended while held.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Handshake and request not done within `--timeout`.
    Timeout,
    /// The endpoint refused to start the connection.
    NotStarted,
    /// QUIC: how quinn says the connection ended.
    Quic(&'static str),
    /// QUIC: the peer closed it with this transport error (its name).
    PeerClosed(String),
    /// The HTTP/3 connection did not start.
    H3Setup,
    /// The request failed.
    Request,
    /// A reply other than 200.
    Status(u16),
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Class::Timeout => f.write_str("timeout"),
            Class::NotStarted => f.write_str("not-started"),
            Class::Quic(k) => write!(f, "quic-{k}"),
            Class::PeerClosed(c) => write!(f, "quic-closed-by-peer-{c}"),
            Class::H3Setup => f.write_str("h3-setup"),
            Class::Request => f.write_str("request"),
            Class::Status(s) => write!(f, "status-{s}"),
        }
    }
}

fn quic_class(e: &quinn::ConnectionError) -> Class {
    use quinn::ConnectionError as E;
    Class::Quic(match e {
        E::ConnectionClosed(c) => {
            return Class::PeerClosed(format!("{:?}", c.error_code).replace(' ', "_"))
        }
        E::VersionMismatch => "version-mismatch",
        E::TransportError(_) => "transport-error",
        E::ApplicationClosed(_) => "application-closed",
        E::Reset => "reset",
        E::TimedOut => "idle-timeout",
        E::LocallyClosed => "locally-closed",
        E::CidsExhausted => "cids-exhausted",
    })
}

/// An open, idle HTTP/3 connection: its request side and driver are kept
/// (dropping the last `SendRequest` would close the connection).
struct Held {
    quic: quinn::Connection,
    _send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    driver: tokio::task::JoinHandle<()>,
}

struct Args {
    addr: SocketAddr,
    name: String,
    path: String,
    conns: usize,
    hold: Duration,
    in_flight: usize,
    per_endpoint: usize,
    timeout: Duration,
    keep_alive: Option<Duration>,
}

fn parse() -> Result<Args, String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        return Err("usage: h3-idle-client ADDR SERVER_NAME PATH CONNS HOLD_SECS [--in-flight K] [--per-endpoint M] [--timeout S] [--keep-alive S]".into());
    }
    let num = |s: &str, what: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("{what}: not a whole number: {s}"))
    };
    let mut args = Args {
        addr: a[0]
            .parse()
            .map_err(|_| format!("ADDR: not an address: {}", a[0]))?,
        name: a[1].clone(),
        path: a[2].clone(),
        conns: num(&a[3], "CONNS")? as usize,
        hold: Duration::from_secs(num(&a[4], "HOLD_SECS")?),
        in_flight: 200,
        per_endpoint: 1000,
        timeout: Duration::from_secs(30),
        keep_alive: None,
    };
    let mut rest = a[5..].iter();
    while let Some(opt) = rest.next() {
        let v = rest.next().ok_or_else(|| format!("{opt} needs a value"))?;
        let n = num(v, opt)?;
        match opt.as_str() {
            "--in-flight" => args.in_flight = n.max(1) as usize,
            "--per-endpoint" => args.per_endpoint = n.max(1) as usize,
            "--timeout" => args.timeout = Duration::from_secs(n.max(1)),
            "--keep-alive" => args.keep_alive = (n > 0).then(|| Duration::from_secs(n)),
            _ => return Err(format!("unknown option {opt}")),
        }
    }
    if args.conns == 0 || args.conns > 100_000 {
        return Err("CONNS must be 1..100000".into());
    }
    if args.hold > Duration::from_secs(3600) {
        return Err("HOLD_SECS must be at most 3600".into());
    }
    Ok(args)
}

fn client_config(keep_alive: Option<Duration>) -> Result<quinn::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algs = provider.signature_verification_algorithms;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(algs)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(tls))
        .map_err(|e| e.to_string())?;
    let mut qc = quinn::ClientConfig::new(Arc::new(quic));
    let mut tr = quinn::TransportConfig::default();
    tr.max_idle_timeout(quinn::IdleTimeout::try_from(IDLE).ok())
        .keep_alive_interval(keep_alive);
    qc.transport_config(Arc::new(tr));
    Ok(qc)
}

/// Handshake, HTTP/3 set-up and one GET of `path`, read to its end.
async fn open(ep: quinn::Endpoint, a: &Args, uri: &http::Uri) -> Result<Held, Class> {
    let connecting = ep.connect(a.addr, &a.name).map_err(|_| Class::NotStarted)?;
    let quic = connecting.await.map_err(|e| quic_class(&e))?;
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|_| {
            quic.close_reason()
                .map_or(Class::H3Setup, |e| quic_class(&e))
        })?;
    let driver = tokio::spawn(async move {
        let _ = futures_util::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let req = http::Request::get(uri.clone())
        .body(())
        .map_err(|_| Class::Request)?;
    let mut stream = send.send_request(req).await.map_err(|_| Class::Request)?;
    stream.finish().await.map_err(|_| Class::Request)?;
    let resp = stream.recv_response().await.map_err(|_| Class::Request)?;
    while stream
        .recv_data()
        .await
        .map_err(|_| Class::Request)?
        .is_some()
    {}
    if resp.status() != http::StatusCode::OK {
        return Err(Class::Status(resp.status().as_u16()));
    }
    Ok(Held {
        quic,
        _send: send,
        driver,
    })
}

/// A UDP socket with [`UDP_BUFFER`] each way (the kernel may clamp it):
/// the default receive buffer drops the servers' handshake flights when
/// hundreds arrive at once, and their retransmissions would be measured.
fn udp_socket(bind: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_recv_buffer_size(UDP_BUFFER);
    let _ = s.set_send_buffer_size(UDP_BUFFER);
    s.bind(&bind.into())?;
    Ok(s.into())
}

fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn count_lines(word: &str, counts: &BTreeMap<Class, u64>) {
    for (c, n) in counts {
        say(&format!("{word} {c} {n}"));
    }
}

async fn run(a: Args) -> Result<(), String> {
    let config = client_config(a.keep_alive)?;
    let endpoints = a.conns.div_ceil(a.per_endpoint);
    let mut eps = Vec::with_capacity(endpoints);
    for _ in 0..endpoints {
        let bind: SocketAddr = if a.addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        }
        .parse()
        .map_err(|_| "bind address".to_string())?;
        let mut ep = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            None,
            udp_socket(bind).map_err(|e| format!("UDP socket: {e}"))?,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(|e| format!("endpoint: {e}"))?;
        ep.set_default_client_config(config.clone());
        eps.push(ep);
    }
    let uri: http::Uri = format!("https://{}{}", a.name, a.path)
        .parse()
        .map_err(|_| format!("not a path: {}", a.path))?;
    let start = Instant::now();
    let results: Vec<Result<Held, Class>> = futures_util::stream::iter(0..a.conns)
        .map(|i| {
            let ep = eps[i % endpoints].clone();
            let (a, uri) = (&a, &uri);
            async move {
                tokio::time::timeout(a.timeout, open(ep, a, uri))
                    .await
                    .unwrap_or(Err(Class::Timeout))
            }
        })
        .buffer_unordered(a.in_flight)
        .collect()
        .await;
    let took = start.elapsed().as_secs_f64();
    let mut failed = BTreeMap::new();
    let mut held = Vec::with_capacity(a.conns);
    for r in results {
        match r {
            Ok(h) => held.push(h),
            Err(c) => *failed.entry(c).or_insert(0u64) += 1,
        }
    }
    let nfail: u64 = failed.values().sum();
    say(&format!(
        "opened ok {} failed {nfail} seconds {took:.2}",
        held.len()
    ));
    count_lines("failed", &failed);
    say(&format!("holding {}", held.len()));
    tokio::time::sleep(a.hold).await;
    let mut closed = BTreeMap::new();
    for h in &held {
        if let Some(e) = h.quic.close_reason() {
            *closed.entry(quic_class(&e)).or_insert(0u64) += 1;
        }
    }
    let early: u64 = closed.values().sum();
    say(&format!(
        "held-at-end {} closed-early {early}",
        held.len() as u64 - early
    ));
    count_lines("closed", &closed);
    for h in &held {
        h.quic.close(H3_NO_ERROR.into(), b"");
    }
    for ep in &eps {
        let _ = tokio::time::timeout(Duration::from_secs(5), ep.wait_idle()).await;
    }
    for h in held {
        h.driver.abort();
    }
    Ok(())
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("h3-idle-client: {e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("h3-idle-client: runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("h3-idle-client: {e}");
        std::process::exit(1);
    }
}

/// Any certificate is accepted (the benchmark's own, self-signed); the
/// handshake's signatures are still checked.
#[derive(Debug)]
struct AnyCert(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}
