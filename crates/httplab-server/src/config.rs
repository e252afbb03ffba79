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
    /// The engine measured cheapest where it can run: io_uring for
    /// cleartext HTTP/1.1 where the kernel has it, epoll otherwise (TLS,
    /// HTTP/2 on).
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
    /// Most file bytes per `sendfile` call.
    pub file_chunk: usize,
    /// Most file bytes per `pread` + `sendmsg` (the size of each worker's
    /// copy buffer).
    pub copy_chunk: usize,
    /// Smallest file segment `FileIo::Auto` may copy (None: half the CPU's
    /// last-level cache, read from sysfs).
    pub copy_min: Option<u64>,
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
    /// `--precompressed`: the content codings whose sibling files (`F.br`,
    /// `F.zst`, `F.gz`) are served for a request of `F`, in server
    /// preference; empty = off.
    pub precompressed: Vec<Coding>,
    /// `--cache-control` rules: which files' 200, 206 and 304 responses carry
    /// which `Cache-Control` value; empty = no Cache-Control.
    pub cache_control: Vec<CacheRule>,
    /// `--http2 on`: in cleartext, a connection whose first bytes are the
    /// HTTP/2 client preface is served by the HTTP/2 machine (h2c by prior
    /// knowledge); over TLS, one whose handshake chose ALPN `h2`. Any other
    /// speaks HTTP/1.1. Every model and engine (io_uring: h2c, as it
    /// serves cleartext only). Off: the preface gets a 505 and ALPN offers
    /// `http/1.1` alone.
    pub http2: bool,
    /// `--http3`: HTTP/3 over QUIC on UDP at the TLS listener's address and
    /// port, served by quinn's async engine on a thread of its own whatever
    /// the model, and announced with `Alt-Svc` on HTTP/1.1 and HTTP/2
    /// responses. Needs [`ServerConfig::tls`] ([`ServerConfig::check_http3`]).
    pub http3: bool,
}

/// A content coding of precompressed sibling files (`--precompressed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    /// Brotli, sibling `F.br`.
    Br,
    /// Zstandard, sibling `F.zst`.
    Zstd,
    /// gzip, sibling `F.gz`.
    Gzip,
}

impl Coding {
    /// The default server preference of `--precompressed`.
    pub const DEFAULT_ORDER: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The content-coding token (`Content-Encoding` value).
    pub fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The suffix of the sibling file, dot included.
    pub fn suffix(self) -> &'static str {
        match self {
            Coding::Br => ".br",
            Coding::Zstd => ".zst",
            Coding::Gzip => ".gz",
        }
    }

    fn from_token(t: &str) -> Option<Coding> {
        Coding::DEFAULT_ORDER
            .into_iter()
            .find(|c| c.token().eq_ignore_ascii_case(t))
    }
}

/// Parses the value of `--precompressed`: codings in server preference,
/// comma-separated (`br,zstd,gzip`).
pub fn parse_codings(s: &str) -> Result<Vec<Coding>, String> {
    let mut out = Vec::new();
    for t in s.split(',').map(str::trim) {
        let c = Coding::from_token(t).ok_or_else(|| {
            format!("unknown content coding '{t}' in '{s}' (known: br, zstd, gzip)")
        })?;
        if out.contains(&c) {
            return Err(format!("content coding '{t}' is listed twice in '{s}'"));
        }
        out.push(c);
    }
    Ok(out)
}

/// Which files a [`CacheRule`] applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheFiles {
    /// `*`: every file no other rule names.
    Other,
    /// Files with one of these extensions (lower case, without the dot).
    Extensions(Vec<String>),
}

/// One `--cache-control EXTS=VALUE` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheRule {
    /// The files it applies to.
    pub files: CacheFiles,
    /// The `Cache-Control` value, sent verbatim.
    pub value: String,
}

impl std::str::FromStr for CacheRule {
    type Err = String;

    /// `css,js=public, max-age=31536000` or `*=max-age=300`: extensions
    /// (case-insensitive) before the first `=`, the value after it.
    fn from_str(s: &str) -> Result<CacheRule, String> {
        let Some((exts, value)) = s.split_once('=') else {
            return Err(format!(
                "cache-control rule '{s}' has no '=' (write EXTS=VALUE, e.g. 'css,js=max-age=3600' or '*=no-cache')"
            ));
        };
        check_header_value(value).map_err(|e| format!("cache-control rule '{s}': {e}"))?;
        let exts = exts.trim();
        if exts == "*" {
            return Ok(CacheRule {
                files: CacheFiles::Other,
                value: value.to_string(),
            });
        }
        let mut list: Vec<String> = Vec::new();
        for e in exts.split(',').map(str::trim) {
            if e.is_empty() {
                return Err(format!(
                    "cache-control rule '{s}': empty extension before '=' (write e.g. 'css,js=...', or '*=...' for every other file)"
                ));
            }
            if e == "*" {
                return Err(format!(
                    "cache-control rule '{s}': '*' stands alone ('*=VALUE'), not in a list of extensions"
                ));
            }
            if !e
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'+')
            {
                return Err(format!(
                    "cache-control rule '{s}': '{e}' is not a file extension (letters, digits, '-', '_', '+'; no dot: write 'gz', not '.gz' or 'tar.gz')"
                ));
            }
            let e = e.to_ascii_lowercase();
            if DIRECTIVES.contains(&e.as_str()) {
                return Err(format!(
                    "cache-control rule '{s}': '{e}' is a Cache-Control directive, not a file extension; the extensions come first (e.g. '*={s}' for every file)"
                ));
            }
            if list.contains(&e) {
                return Err(format!(
                    "cache-control rule '{s}': extension '{e}' listed twice"
                ));
            }
            list.push(e);
        }
        Ok(CacheRule {
            files: CacheFiles::Extensions(list),
            value: value.to_string(),
        })
    }
}

/// Cache-Control directive names (RFC 9111 §5.2, RFC 5861, RFC 8246): one
/// of them before the `=` means the extensions were left out.
const DIRECTIVES: &[&str] = &[
    "max-age",
    "s-maxage",
    "no-cache",
    "no-store",
    "no-transform",
    "public",
    "private",
    "must-revalidate",
    "proxy-revalidate",
    "must-understand",
    "immutable",
    "stale-while-revalidate",
    "stale-if-error",
];

/// A `Cache-Control` value must be a valid field value: not empty, visible
/// ASCII, spaces and tabs inside but not at either end (no CR, LF or other
/// control bytes, which would split the response head).
fn check_header_value(v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        return Err("the value after '=' is empty".into());
    }
    if v.starts_with([' ', '\t']) || v.ends_with([' ', '\t']) {
        return Err("the value starts or ends with white space".into());
    }
    if let Some(c) = v
        .chars()
        .find(|&c| !(c == ' ' || c == '\t' || c.is_ascii_graphic()))
    {
        return Err(format!(
            "the value contains {c:?}, which a header field value cannot hold (visible ASCII, spaces and tabs only)"
        ));
    }
    Ok(())
}

/// Checks rules built in code as the command line checks them, and that no
/// extension (or `*`) is given two rules.
pub fn check_cache_rules(rules: &[CacheRule]) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    for r in rules {
        check_header_value(&r.value).map_err(|e| format!("cache-control rule: {e}"))?;
        let names: Vec<&str> = match &r.files {
            CacheFiles::Other => vec!["*"],
            CacheFiles::Extensions(v) => v.iter().map(String::as_str).collect(),
        };
        for n in names {
            if seen.contains(&n) {
                return Err(format!(
                    "cache-control: '{n}' is given two rules (each extension, and '*', at most once)"
                ));
            }
            seen.push(n);
        }
    }
    Ok(())
}

/// The `Cache-Control` value the rules give the file named `path`: the
/// rule naming its extension (case-insensitive), else the `*` rule.
pub fn cache_control_for<'r>(rules: &'r [CacheRule], path: &std::path::Path) -> Option<&'r str> {
    let ext = path.extension().and_then(|e| e.to_str());
    let named = ext.and_then(|ext| {
        rules.iter().find(|r| match &r.files {
            CacheFiles::Extensions(v) => v.iter().any(|x| x.eq_ignore_ascii_case(ext)),
            CacheFiles::Other => false,
        })
    });
    named
        .or_else(|| rules.iter().find(|r| r.files == CacheFiles::Other))
        .map(|r| r.value.as_str())
}

/// How large file bodies leave (cleartext; TLS always reads with pread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileIo {
    /// `sendfile` to peers on other machines; to loopback peers, each
    /// worker of the event model copies a share of the writes that it
    /// raises while it has idle CPU and lowers when it is saturated (see
    /// the `sendpath` module). The blocking models use `sendfile`.
    Auto,
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
            file_io: FileIo::Auto,
            file_chunk: 2 * 1024 * 1024,
            copy_chunk: 64 * 1024,
            copy_min: None,
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
            precompressed: Vec::new(),
            cache_control: Vec::new(),
            http2: false,
            http3: false,
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

    /// Whether `http3` can be served as configured: QUIC is TLS 1.3, so
    /// HTTP/3 needs the certificate and key of [`ServerConfig::tls`].
    pub fn check_http3(&self) -> Result<(), String> {
        if self.http3 && self.tls.is_none() {
            return Err(
                "--http3 runs over QUIC, which is always encrypted: give --tls-cert and --tls-key"
                    .to_string(),
            );
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codings_parse_in_order_and_refuse_unknown_or_repeated() {
        assert_eq!(
            parse_codings("gzip, BR").unwrap(),
            vec![Coding::Gzip, Coding::Br]
        );
        assert_eq!(
            parse_codings("br,zstd,gzip").unwrap(),
            Coding::DEFAULT_ORDER
        );
        assert!(parse_codings("gzip,deflate")
            .unwrap_err()
            .contains("deflate"));
        assert!(parse_codings("gzip,gzip").unwrap_err().contains("twice"));
        assert!(parse_codings("").unwrap_err().contains("unknown"));
    }

    #[test]
    fn cache_rules_parse_match_and_refuse_malformed() {
        let rules: Vec<CacheRule> = [
            "CSS, js,woff2=public, max-age=31536000, immutable",
            "html=no-cache",
            "*=max-age=300",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        check_cache_rules(&rules).unwrap();
        let at = |p: &str| cache_control_for(&rules, std::path::Path::new(p));
        assert_eq!(
            at("/a/app.min.JS"),
            Some("public, max-age=31536000, immutable")
        );
        assert_eq!(at("/index.html"), Some("no-cache"));
        assert_eq!(at("/README"), Some("max-age=300"));
        assert_eq!(at("/x.txt"), Some("max-age=300"));
        assert_eq!(
            cache_control_for(&rules[..2], std::path::Path::new("/x.txt")),
            None
        );
        for (bad, says) in [
            ("css", "no '='"),
            ("=max-age=1", "empty extension"),
            ("css,,js=max-age=1", "empty extension"),
            ("css=", "empty"),
            ("css= max-age=1", "white space"),
            ("css=max-age=1\r\nX-Evil: 1", "cannot hold"),
            ("css=caf\u{e9}", "cannot hold"),
            (".css=max-age=1", "no dot"),
            ("tar.gz=max-age=1", "no dot"),
            ("css,*=max-age=1", "stands alone"),
            ("css,CSS=max-age=1", "twice"),
            ("max-age=300", "directive"),
        ] {
            let e = bad.parse::<CacheRule>().unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        let twice: Vec<CacheRule> = ["css=a", "js,css=b"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert!(check_cache_rules(&twice).unwrap_err().contains("'css'"));
        let stars: Vec<CacheRule> = ["*=a", "*=b"].iter().map(|s| s.parse().unwrap()).collect();
        assert!(check_cache_rules(&stars).unwrap_err().contains("'*'"));
    }
}
