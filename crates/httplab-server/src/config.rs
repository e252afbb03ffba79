//! Server configuration: one plain struct with public fields and defaults,
//! shared by the CLI and by in-process users (tests, the study runner).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use httplab_wire::request::Limits;

/// Concurrency model (`--model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Model {
    /// One mio reactor thread per worker, each with its own SO_REUSEPORT
    /// listener.
    #[default]
    Event,
    /// Boss-worker: one acceptor thread, a bounded queue, N blocking worker
    /// threads each serving one connection at a time.
    Threads,
    /// The parent accepts; one child process per connection.
    Fork,
    /// One thread, one connection at a time.
    Single,
}

impl Model {
    /// Lower-case name, as on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Model::Event => "event",
            Model::Threads => "threads",
            Model::Fork => "fork",
            Model::Single => "single",
        }
    }
}

/// I/O engine of the event model (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum IoEngine {
    /// The engine measured cheapest where it can run: epoll for now
    /// (io_uring was not cheaper per request on the benchmark machine).
    #[default]
    Auto,
    /// mio/epoll readiness and one system call per read or write.
    Epoll,
    /// io_uring: one `io_uring_enter` per loop turn submits every send,
    /// receive, accept and close and reaps their completions.
    Uring,
}

impl IoEngine {
    /// Lower-case name, as on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            IoEngine::Auto => "auto",
            IoEngine::Epoll => "epoll",
            IoEngine::Uring => "uring",
        }
    }
}

/// Where access-log lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLog {
    /// Standard output.
    Stdout,
    /// Appended to a file.
    File(PathBuf),
}

/// Certificate chain and private key of `--tls-cert` / `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM file with the certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM file with the private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: PathBuf,
}

/// Everything `httplab serve` can be told. `Default` gives the CLI defaults
/// except `quiet` (library users usually want silence: default `true` here,
/// the CLI sets it from `--quiet`).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Directory to serve.
    pub root: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Concurrency model.
    pub model: Model,
    /// Reactor threads for the event model (0 = number of cores).
    pub workers: usize,
    /// I/O engine of the event model.
    pub io: IoEngine,
    /// Worker threads for the threads model.
    pub threads: usize,
    /// Queue length between acceptor and workers in the threads model
    /// (0 = same as `threads`).
    pub queue: usize,
    /// Most concurrent children in the fork model.
    pub max_children: usize,
    /// Keep connections open between requests.
    pub keep_alive: bool,
    /// Answer all buffered requests before flushing (batched writes); when
    /// off, each response is written before the next request is parsed.
    pub pipelining: bool,
    /// Per-connection read buffer (bounds pipelined input).
    pub pipeline_buffer: usize,
    /// Close a connection idle this long between requests.
    pub idle_timeout: Duration,
    /// A request head must be complete this long after its first byte
    /// (else 408 and close).
    pub header_timeout: Duration,
    /// Close a connection whose peer makes no progress reading a response
    /// for this long.
    pub send_timeout: Duration,
    /// Requests served per connection before it is closed (None = no cap).
    pub max_requests_per_conn: Option<u64>,
    /// Most open connections (whole server).
    pub max_connections: usize,
    /// Request head limits.
    pub limits: Limits,
    /// Largest Content-Length drained from a GET (bigger → 413).
    pub max_body_drain: u64,
    /// Files up to this size are cached in memory with a pre-rendered head.
    pub small_file_max: u64,
    /// Memory budget of each file cache (bytes of cached bodies).
    pub cache_bytes: usize,
    /// How often a cached entry is revalidated with stat.
    pub revalidate: Duration,
    /// Bytes sent from one large file before yielding to other connections.
    pub sendfile_chunk: usize,
    /// How large (non-cached) file bodies are sent in cleartext.
    pub file_io: FileIo,
    /// Most file bytes per system call (one sendfile, or one pread + sendmsg).
    pub file_chunk: usize,
    /// SO_SNDBUF of accepted connections (None: kernel autotuning).
    pub sndbuf: Option<usize>,
    /// TCP_NOTSENT_LOWAT of accepted connections (None: not set).
    pub notsent_lowat: Option<usize>,
    /// HTML listing for directories without index.html.
    pub list_dirs: bool,
    /// Common-log-format access log.
    pub access_log: Option<AccessLog>,
    /// Suppress start-up and shutdown messages.
    pub quiet: bool,
    /// How long a graceful shutdown may take before connections are cut.
    pub shutdown_timeout: Duration,
    /// Print a statistics line every interval (None = off).
    pub stats_interval: Option<Duration>,
    /// Write statistics as JSON lines to this file (each interval).
    pub stats_json: Option<PathBuf>,
    /// Value of the Server header.
    pub server_name: String,
    /// Event model: TCP_DEFER_ACCEPT on the listeners, so a connection is
    /// accepted once its first request bytes are there and is answered in
    /// the same loop turn.
    pub defer_accept: bool,
    /// Serve HTTPS (TLS 1.2 and 1.3, ALPN http/1.1) with these files; None
    /// serves cleartext HTTP.
    pub tls: Option<TlsFiles>,
    /// A TLS handshake must be complete this long after the connection was
    /// accepted, else the connection is closed.
    pub tls_handshake_timeout: Duration,
}

/// How large file bodies leave (cleartext; TLS always reads with pread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileIo {
    /// `sendfile(2)` from the page cache (zero-copy on real NICs).
    Sendfile,
    /// `pread(2)` into a per-worker buffer, then `sendmsg(2)` with the
    /// response head in front (one copy, fewer and larger TCP writes).
    Pread,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            root: PathBuf::from("."),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            model: Model::Event,
            workers: 0,
            io: IoEngine::Auto,
            threads: 8,
            queue: 0,
            max_children: 256,
            keep_alive: true,
            pipelining: true,
            pipeline_buffer: 64 * 1024,
            idle_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            max_requests_per_conn: None,
            max_connections: 100_000,
            limits: Limits::default(),
            max_body_drain: 1024 * 1024,
            small_file_max: 64 * 1024,
            cache_bytes: 64 * 1024 * 1024,
            revalidate: Duration::from_secs(1),
            sendfile_chunk: 2 * 1024 * 1024,
            file_io: FileIo::Sendfile,
            file_chunk: 2 * 1024 * 1024,
            sndbuf: None,
            notsent_lowat: None,
            list_dirs: false,
            access_log: None,
            quiet: true,
            shutdown_timeout: Duration::from_secs(5),
            stats_interval: None,
            stats_json: None,
            server_name: "httplab".to_string(),
            defer_accept: true,
            tls: None,
            tls_handshake_timeout: Duration::from_secs(10),
        }
    }
}

impl ServerConfig {
    /// Config serving `root` on 127.0.0.1 with a kernel-chosen port.
    pub fn for_root(root: impl Into<PathBuf>) -> Self {
        ServerConfig {
            root: root.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..ServerConfig::default()
        }
    }

    /// Number of event-model workers after resolving 0 to the core count.
    pub fn effective_workers(&self) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}
