//! Command line of `httplab serve` (clap derive) and the signal-driven
//! foreground run.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::config::{
    check_cache_rules, parse_codings, AccessLog, CacheRule, Coding, FileIo, IoEngine, Model,
    ServerConfig, TlsFiles,
};
use crate::{sys, Server};

/// Serve a directory over HTTP/1.1.
#[derive(Debug, Parser)]
#[command(
    about = "Serve a directory over HTTP/1.1 or HTTPS (event, threads, fork or single model); with --http2 on, also HTTP/2 (h2c by prior knowledge, h2 by ALPN over TLS); with --http3 and TLS, also HTTP/3 over QUIC (served by quinn's async engine on its own thread, whatever --model)",
    long_about = None,
    after_help = "Durations accept ms, s, m suffixes (plain numbers are seconds); sizes accept k/KiB, m/MiB, g/GiB (powers of 1024) and KB/MB/GB (powers of 1000) suffixes.",
    args_override_self = true
)]
pub struct Args {
    /// Directory to serve
    #[arg(long, short = 'r', default_value = ".")]
    pub root: PathBuf,
    /// Address to listen on (port 0 picks a free port)
    #[arg(long, short = 'l', default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Concurrency model
    #[arg(long, value_enum, default_value_t = Model::Event)]
    pub model: Model,
    /// Event-model reactor threads (default: number of cores; with
    /// --processes, per process, default 1)
    #[arg(long, short = 'w')]
    pub workers: Option<usize>,
    /// Event model in N processes sharing nothing, each with its own
    /// SO_REUSEPORT listener on the one port and its own descriptor limit
    /// (RLIMIT_NOFILE is per process: several processes hold more
    /// connections than one may). The parent starts them, waits for
    /// SIGINT/SIGTERM and passes it on. Default 1: one process
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub processes: u32,
    /// Event-model I/O engine. epoll: readiness, then one system call per
    /// read, write, accept and close. uring: io_uring, one io_uring_enter
    /// per loop turn submits every accept, send and close and reaps their
    /// completions, with one multishot receive per connection (large files
    /// still go out with sendfile or pread; cleartext only, refused with
    /// --tls-*; Linux 6.0 or later). auto: io_uring for cleartext HTTP/1.1
    /// where the kernel has it (measured cheaper per keep-alive request and
    /// level per new connection: BENCHMARKS.md, "io_uring by default"),
    /// epoll otherwise (TLS, --http2 on, io_uring unavailable or disabled)
    #[arg(long, value_enum, default_value_t = IoEngine::Auto)]
    pub io: IoEngine,
    /// Worker threads of the threads model
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Queue length between acceptor and workers (threads model; default = --threads)
    #[arg(long)]
    pub queue: Option<usize>,
    /// Most concurrent child processes (fork model)
    #[arg(long, default_value_t = 256)]
    pub max_children: usize,
    /// Persistent connections (off: every response carries Connection: close)
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub keep_alive: OnOff,
    /// Batch the responses to all buffered requests into as few writes as possible
    /// (off: one request is answered and flushed before the next is parsed)
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub pipelining: OnOff,
    /// Per-connection read buffer, bounds pipelined input
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub pipeline_buffer: usize,
    /// Close keep-alive connections idle this long
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// A request head must arrive within this time (else 408)
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,
    /// Close connections whose peer reads nothing for this long
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub send_timeout: Duration,
    /// Requests per connection before closing it (default: no cap)
    #[arg(long)]
    pub max_requests_per_conn: Option<u64>,
    /// Most open connections
    #[arg(long, default_value_t = 100_000)]
    pub max_connections: usize,
    /// Files up to this size are cached in memory with pre-rendered heads
    /// (in cleartext, unless --file-io pread, HTTP/1.1 sends those above
    /// 16KiB from their open descriptor instead, which costs it less than
    /// copying them)
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub small_file_max: usize,
    /// Memory budget of each worker's file cache
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub cache_size: usize,
    /// How bodies of files larger than --small-file-max are sent in
    /// cleartext: auto (sendfile to peers on other machines; to loopback
    /// peers the event model copies a share of the writes, raised while the
    /// worker has idle CPU and lowered when it is saturated, because a
    /// receiver on the same machine reads copied bytes from the cache:
    /// BENCHMARKS.md, "Large files chosen by measurement"), sendfile
    /// (zero-copy), or pread (pread into a per-worker buffer, then sendmsg
    /// with the response head in front)
    #[arg(long, value_enum, default_value_t = FileIo::Auto)]
    pub file_io: FileIo,
    /// Most file bytes per system call (one sendfile, or one pread + sendmsg;
    /// for the copy it is also the size of each worker's buffer). Default:
    /// --file-turn for sendfile, 64KiB for a copy (fits the CPU cache)
    #[arg(long, value_parser = parse_size)]
    pub file_chunk: Option<usize>,
    /// With --file-io auto: the smallest file (segment) that may be copied
    /// to a loopback peer; smaller ones always go by sendfile, as their
    /// pages stay in the CPU cache anyway. Default: half the CPU's
    /// last-level cache (sysfs), at most 16MiB (virtual machines report
    /// their host's cache), 16MiB where unknown
    #[arg(long, value_parser = parse_size)]
    pub copy_min: Option<usize>,
    /// File bytes one connection sends before other connections get a turn
    #[arg(long, default_value = "2MiB", value_parser = parse_size)]
    pub file_turn: usize,
    /// SO_SNDBUF of every accepted connection (0: kernel autotuning)
    #[arg(long, default_value = "0", value_parser = parse_size)]
    pub sndbuf: usize,
    /// TCP_NOTSENT_LOWAT of every accepted connection (0: not set)
    #[arg(long, default_value = "0", value_parser = parse_size)]
    pub notsent_lowat: usize,
    /// HTML listing for directories without index.html
    #[arg(long)]
    pub list_dirs: bool,
    /// Serve precompressed siblings: for a request of file F, F.br, F.zst or
    /// F.gz (regular files in the root) to a client whose Accept-Encoding
    /// takes br, zstd or gzip (q-values, identity, *, x-gzip as RFC 9110
    /// says), with Content-Encoding, F's Content-Type, Vary:
    /// Accept-Encoding and an ETag of its own; ranges and conditional
    /// requests apply to the variant sent. The optional value lists the
    /// codings in server preference for equal weights (default
    /// br,zstd,gzip), e.g. --precompressed=gzip. Without it, or without
    /// siblings, files are served as they are. 406 only for a client that
    /// refuses identity explicitly (identity;q=0 or *;q=0) and every variant
    #[arg(
        long,
        value_name = "CODINGS",
        num_args = 0..=1,
        default_missing_value = "br,zstd,gzip",
        value_parser = parse_coding_list
    )]
    pub precompressed: Option<Codings>,
    /// Cache-Control of files by extension, repeatable: EXTS=VALUE, the
    /// extensions (comma-separated, case-insensitive; * = every file no other
    /// rule names) before the first =, the header value after it, sent as
    /// is on 200, 206 and 304 responses (a precompressed variant gets the rule
    /// of the file it encodes). E.g. --cache-control 'css,js,woff2=public,
    /// max-age=31536000, immutable' --cache-control 'html=no-cache'
    /// --cache-control '*=max-age=300'. Without rules no Cache-Control is sent
    #[arg(long, value_name = "EXTS=VALUE")]
    pub cache_control: Vec<CacheRule>,
    /// Common Log Format access log: a file, or - for standard output
    #[arg(long, value_name = "FILE|-")]
    pub access_log: Option<String>,
    /// No start-up or exit messages
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Longest graceful shutdown after SIGINT/SIGTERM
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Event model: accept a connection only once its first bytes arrived
    /// (TCP_DEFER_ACCEPT)
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub defer_accept: OnOff,
    /// Print a statistics line (connections, requests, bytes, RSS, CPU) every interval
    #[arg(long, value_parser = parse_duration)]
    pub stats_interval: Option<Duration>,
    /// Also write the statistics as JSON lines to FILE
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// HTTP/2 beside HTTP/1.1. In cleartext by prior knowledge (h2c): a
    /// connection whose first bytes are the HTTP/2 client preface speaks
    /// HTTP/2, any other HTTP/1.1. With --tls-*: ALPN offers h2, then
    /// http/1.1, and the handshake's choice decides. Every model and engine
    /// (the blocking ones answer a connection's streams in turn; io_uring
    /// serves h2c, as it serves cleartext only). Off: HTTP/1.1 only, the
    /// preface is answered 505 and ALPN offers http/1.1 alone
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub http2: OnOff,
    /// HTTP/3 over QUIC beside TCP (needs --tls-cert and --tls-key): UDP on
    /// the same address and port, ALPN h3, at most 100 concurrent request
    /// streams per connection, idle timeout --idle-timeout, 0-RTT accepted
    /// (every method served is safe), Retry only when over 256 handshakes
    /// are in progress. HTTP/3 is served by quinn's async engine on its own
    /// thread, whatever --model; HTTP/1.1 and HTTP/2 responses announce it
    /// with `Alt-Svc: h3=":PORT"; ma=86400`. Not with --processes
    #[arg(long)]
    pub http3: bool,
    /// Serve HTTPS (TLS 1.2 and 1.3, ALPN http/1.1) with this PEM certificate
    /// chain, leaf first (needs --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert (PKCS#8, RSA or EC)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Close a connection whose TLS handshake is not complete this long after
    /// it was accepted
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub tls_handshake_timeout: Duration,
    /// Serve live metrics (Prometheus text format) on http://ADDR/metrics: connections
    /// accepted and open, requests served, bytes sent, summed over the workers; port 0
    /// picks a free port (printed on stderr as `metrics: http://ADDR/metrics`)
    #[arg(long, value_name = "ADDR", value_parser = httplab_live::parse_addr)]
    pub prometheus: Option<SocketAddr>,
}

/// The codings of `--precompressed`, in server preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codings(pub Vec<Coding>);

fn parse_coding_list(s: &str) -> Result<Codings, String> {
    parse_codings(s).map(Codings)
}

/// `on` / `off` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl Args {
    /// The library configuration these arguments describe.
    pub fn to_config(&self) -> ServerConfig {
        let d = ServerConfig::default();
        ServerConfig {
            root: self.root.clone(),
            listen: self.listen,
            model: self.model,
            workers: self.workers.unwrap_or(0),
            io: self.io,
            threads: self.threads.max(1),
            queue: self.queue.unwrap_or(0),
            max_children: self.max_children.max(1),
            keep_alive: self.keep_alive == OnOff::On,
            pipelining: self.pipelining == OnOff::On,
            pipeline_buffer: self.pipeline_buffer,
            idle_timeout: self.idle_timeout,
            header_timeout: self.header_timeout,
            send_timeout: self.send_timeout,
            max_requests_per_conn: self.max_requests_per_conn.filter(|&n| n > 0),
            max_connections: self.max_connections.max(1),
            small_file_max: self.small_file_max as u64,
            cache_bytes: self.cache_size,
            file_io: self.file_io,
            file_chunk: self
                .file_chunk
                .unwrap_or(self.file_turn)
                .clamp(4096, 64 << 20),
            copy_chunk: self.file_chunk.unwrap_or(64 * 1024).clamp(4096, 64 << 20),
            copy_min: self.copy_min.map(|n| n as u64),
            sendfile_chunk: self.file_turn.max(4096),
            sndbuf: Some(self.sndbuf).filter(|&n| n > 0),
            notsent_lowat: Some(self.notsent_lowat).filter(|&n| n > 0),
            list_dirs: self.list_dirs,
            access_log: self.access_log.as_deref().map(|s| {
                if s == "-" {
                    AccessLog::Stdout
                } else {
                    AccessLog::File(PathBuf::from(s))
                }
            }),
            quiet: self.quiet,
            shutdown_timeout: self.shutdown_timeout,
            stats_interval: self.stats_interval,
            stats_json: self.stats_json.clone(),
            defer_accept: self.defer_accept == OnOff::On,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                }),
                _ => None,
            },
            tls_handshake_timeout: self.tls_handshake_timeout,
            precompressed: self
                .precompressed
                .as_ref()
                .map(|c| c.0.clone())
                .unwrap_or_default(),
            cache_control: self.cache_control.clone(),
            http2: self.http2 == OnOff::On,
            http3: self.http3,
            ..d
        }
    }
}

/// Parses `200ms`, `5s`, `1m`, `1.5s` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration '{s}' (use e.g. 200ms, 5s, 1m)"))?;
    if !v.is_finite() || v < 0.0 || v * mult > 1e9 {
        return Err(format!("invalid duration '{s}'"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// Parses `65536`, `64k`, `64KiB`, `50KB`, `1m`, `1MiB`, `1g`, `1GB`: the
/// bare letters and KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000 (a
/// study file's sizes read them the same way).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let n: usize = num
        .parse()
        .map_err(|_| format!("invalid size '{t}' (use e.g. 64KiB, 50KB, 1m)"))?;
    let mult = match unit.trim() {
        "" | "b" => 1,
        "k" | "kib" => 1024,
        "kb" => 1000,
        "m" | "mib" => 1024 * 1024,
        "mb" => 1_000_000,
        "g" | "gib" => 1024 * 1024 * 1024,
        "gb" => 1_000_000_000,
        _ => return Err(format!("invalid size unit in '{t}'")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{t}' too large"))
}

/// `--prometheus`: the server's counters on `http://ADDR/metrics`, read from
/// the shared statistics at each scrape (no counter of its own).
/// How large files leave, as the start-up line says it (`measured`: the
/// model's workers measure their idle time, so `auto` adapts).
fn file_io_line(io: FileIo, measured: bool) -> &'static str {
    match (io, measured) {
        (FileIo::Auto, true) => {
            "large files: sendfile to remote peers, to loopback peers a share copied while the worker has idle CPU"
        }
        (FileIo::Auto, false) | (FileIo::Sendfile, _) => "large files: sendfile",
        (FileIo::Pread, _) => "large files: pread + send",
    }
}

fn start_metrics(
    addr: SocketAddr,
    server: &crate::ServerHandle,
) -> anyhow::Result<httplab_live::Endpoint> {
    let stats = server.shared_stats();
    let mut registry = httplab_live::Registry::default();
    httplab_live::ServerLive::new(move || {
        let s = stats.snapshot();
        httplab_live::ServerCounters {
            accepted: s.accepted,
            open: s.open,
            requests: s.requests,
            bytes_sent: s.bytes_out,
            refused: s.refused,
        }
    })
    .register(&mut registry);
    Ok(httplab_live::start(addr, registry)?)
}

/// Spellings of other servers' command lines, and what `httplab serve` says instead.
const SERVE_HINTS: &[httplab_usage::Hint] = &[
    ("--port", "--listen ADDR:PORT (e.g. --listen 0.0.0.0:8080)"),
    ("-p", "--listen ADDR:PORT (e.g. --listen 0.0.0.0:8080)"),
    ("--bind", "--listen ADDR:PORT"),
    ("--dir", "--root DIR"),
    ("--docroot", "--root DIR"),
];

/// Entry point of `httplab serve`: `args[0]` is the program name. Runs the
/// server in the foreground until SIGINT or SIGTERM.
pub fn main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    run(args, &mut |_| {})
}

/// [`main`], telling `ready` the bound address once the server is up.
fn run(args: Vec<OsString>, ready: &mut dyn FnMut(SocketAddr)) -> anyhow::Result<ExitCode> {
    let raw_args = args.clone();
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => return Ok(httplab_usage::clap_exit("serve", &e, SERVE_HINTS)),
    };
    let checked = args.to_config();
    if let Err(e) = checked.check_http3() {
        eprintln!("httplab serve: error: {e}");
        return Ok(ExitCode::from(httplab_usage::USAGE));
    }
    if args.processes > 1 {
        if args.http3 {
            eprintln!(
                "httplab serve: error: --http3 serves QUIC from one process (one UDP socket); it does not combine with --processes"
            );
            return Ok(ExitCode::from(httplab_usage::USAGE));
        }
        if args.model != Model::Event {
            eprintln!(
                "httplab serve: error: --processes runs the event model in several processes; it does not apply to --model {}",
                args.model.name()
            );
            return Ok(ExitCode::from(httplab_usage::USAGE));
        }
        let mut a = args;
        a.workers = Some(a.workers.unwrap_or(1));
        if let Some(files) = &a.to_config().tls {
            if let Err(e) = crate::tls::load(files, a.http2 == OnOff::On) {
                eprintln!("httplab serve: error: {e}");
                return Ok(ExitCode::from(httplab_usage::USAGE));
            }
        }
        let mut raw: Vec<OsString> = raw_args.into_iter().skip(1).collect();
        raw.push("--workers".into());
        raw.push(a.workers.unwrap_or(1).to_string().into());
        return crate::processes::run(&raw, a.listen, a.processes as usize, a.quiet, ready);
    }
    let cfg = args.to_config();
    if let Err(e) = check_cache_rules(&cfg.cache_control) {
        eprintln!("httplab serve: error: {e}");
        return Ok(ExitCode::from(httplab_usage::USAGE));
    }
    if let Some(files) = &cfg.tls {
        // A certificate or key that cannot be used is a usage error: one
        // line, exit 2, before anything is bound.
        if let Err(e) = crate::tls::load(files, cfg.http2) {
            eprintln!("httplab serve: error: {e}");
            return Ok(ExitCode::from(httplab_usage::USAGE));
        }
    }
    // Block the termination signals before any thread exists, so every
    // thread inherits the mask and only the wait below receives them.
    sys::block_term_signals()?;
    let quiet = cfg.quiet;
    let tls_on = cfg.tls.is_some();
    let h2c = match (cfg.http2, cfg.tls.is_some()) {
        (false, _) => "",
        (true, false) => ", HTTP/1.1 and h2c by prior knowledge",
        (true, true) => ", HTTP/1.1 and HTTP/2 by ALPN (h2, http/1.1)",
    };
    let file_io = cfg.file_io;
    let server = Server::start(cfg)?;
    let metrics = args
        .prometheus
        .map(|addr| start_metrics(addr, &server))
        .transpose()?;
    if !quiet || crate::processes::is_child() {
        print_start(&server, tls_on, h2c, file_io);
    }
    ready(server.local_addr());
    let sig = loop {
        if let Some(s) = sys::wait_for_signal(Duration::from_secs(3600)) {
            break s;
        }
    };
    if !quiet {
        let name = if sig == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        eprintln!("httplab serve: {name} received, finishing responses in flight");
    }
    let stats = server.shutdown();
    drop(metrics);
    let (peak, _) = sys::rusage(false);
    let (peak_children, _) = sys::rusage(true);
    if !quiet {
        let children = if peak_children > 0 {
            format!(", largest child {} KiB", peak_children / 1024)
        } else {
            String::new()
        };
        eprintln!(
            "httplab serve: stopped after {} connections, {} requests; peak RSS {} KiB{children}",
            stats.accepted,
            stats.requests,
            peak / 1024
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The start-up lines: what is served where, by which model, and HTTP/3's.
fn print_start(server: &crate::ServerHandle, tls_on: bool, h2c: &str, file_io: FileIo) {
    let extra = match server.model() {
        Model::Event => format!(
            "event model, {} workers, {} I/O, {}{h2c}",
            server.workers(),
            server.io_engine().name(),
            file_io_line(file_io, true)
        ),
        Model::Threads => format!(
            "threads model, {} threads, {}{h2c}",
            server.workers(),
            file_io_line(file_io, false)
        ),
        m => format!("{} model, {}{h2c}", m.name(), file_io_line(file_io, false)),
    };
    let scheme = if tls_on { "https" } else { "http" };
    println!(
        "httplab serve: serving {} at {scheme}://{}/ ({extra})",
        server.root().display(),
        server.local_addr()
    );
    if let Some(udp) = server.http3_udp() {
        println!(
            "httplab serve: HTTP/3 at https://{}/ over QUIC (udp), quinn's engine on its own thread; {}",
            server.local_addr(),
            udp.line()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigterm_stops_the_foreground_server() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
        let root = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let tid = sys::current_tid();
            let args: Vec<OsString> = [
                "httplab serve",
                "--listen",
                "127.0.0.1:0",
                "--quiet",
                "--root",
            ]
            .iter()
            .map(OsString::from)
            .chain([root.into_os_string()])
            .collect();
            let tx2 = tx.clone();
            run(args, &mut |addr| {
                let _ = tx2.send((tid, addr));
            })
        });
        let (tid, addr) = rx.recv().expect("server came up");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(
            &mut s,
            b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut resp = String::new();
        std::io::Read::read_to_string(&mut s, &mut resp).unwrap();
        assert!(
            resp.starts_with("HTTP/1.1 200 OK\r\n") && resp.ends_with("hello\n"),
            "{resp}"
        );
        // Thread-directed, so only the blocked-and-waiting thread gets it.
        sys::signal_thread(tid, libc::SIGTERM).unwrap();
        let code = t.join().unwrap().unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
    }

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("httplab serve").chain(args.iter().copied()))
    }

    #[test]
    fn precompressed_and_cache_control_options() {
        let none = parse(&[]).unwrap().to_config();
        assert!(none.precompressed.is_empty() && none.cache_control.is_empty());
        let bare = parse(&["--precompressed", "--root", "."])
            .unwrap()
            .to_config();
        assert_eq!(bare.precompressed, Coding::DEFAULT_ORDER);
        let given = parse(&["--precompressed=gzip,br"]).unwrap().to_config();
        assert_eq!(given.precompressed, [Coding::Gzip, Coding::Br]);
        let spaced = parse(&["--precompressed", "zstd"]).unwrap().to_config();
        assert_eq!(spaced.precompressed, [Coding::Zstd]);
        let e = parse(&["--precompressed=gzip,deflate"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown content coding 'deflate'"), "{e}");
        let cfg = parse(&[
            "--cache-control",
            "css,js=public, max-age=31536000, immutable",
            "--cache-control",
            "*=max-age=300",
        ])
        .unwrap()
        .to_config();
        assert_eq!(cfg.cache_control.len(), 2);
        assert_eq!(
            cfg.cache_control[0].value,
            "public, max-age=31536000, immutable"
        );
        let e = parse(&["--cache-control", "max-age=300"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'*=max-age=300'"), "{e}");
        let e = parse(&["--cache-control", "css"]).unwrap_err().to_string();
        assert!(e.contains("no '='"), "{e}");
        let code = main(
            [
                "httplab serve",
                "--quiet",
                "--listen",
                "127.0.0.1:0",
                "--cache-control",
                "css=a",
                "--cache-control",
                "CSS=b",
            ]
            .iter()
            .map(OsString::from)
            .collect(),
        )
        .unwrap();
        assert_eq!(code, ExitCode::from(2));
    }

    #[test]
    fn start_up_errors_are_errors() {
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = busy.local_addr().unwrap().to_string();
        let e = main(
            ["httplab serve", "--quiet", "--listen", port.as_str()]
                .iter()
                .map(OsString::from)
                .collect(),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("address already in use"), "{e:#}");
        let e = main(
            [
                "httplab serve",
                "--quiet",
                "--root",
                "/nonexistent/httplab-root",
            ]
            .iter()
            .map(OsString::from)
            .collect(),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("/nonexistent/httplab-root"),
            "{e:#}"
        );
        // Bad flags: usage error, exit code 2, no panic.
        let code = main(
            ["httplab serve", "--workers", "x"]
                .iter()
                .map(OsString::from)
                .collect(),
        )
        .unwrap();
        assert_eq!(code, ExitCode::from(2));
    }

    #[test]
    fn http2_is_off_unless_asked_for() {
        let off = parse(&[]).unwrap().to_config();
        assert!(!off.http2);
        assert!(parse(&["--http2", "on"]).unwrap().to_config().http2);
        // Every engine serves it: io_uring too (h2c, cleartext as always).
        let c = parse(&["--http2", "on", "--io", "uring"])
            .unwrap()
            .to_config();
        assert!(c.http2);
    }

    #[test]
    fn http3_without_tls_or_with_processes_is_a_usage_error() {
        assert!(!parse(&[]).unwrap().to_config().http3);
        assert!(parse(&["--http3"]).unwrap().to_config().http3);
        let tls = ["--tls-cert", "/no/cert.pem", "--tls-key", "/no/key.pem"];
        for extra in [&[][..], &["--processes", "2"][..], &tls[..]] {
            let args = ["httplab serve", "--quiet", "--http3"]
                .iter()
                .chain(extra)
                .map(OsString::from)
                .collect();
            // Without TLS, with --processes, with files that cannot be read:
            // usage errors before anything is bound.
            assert_eq!(main(args).unwrap(), ExitCode::from(2), "{extra:?}");
        }
        let mut cfg = ServerConfig::for_root(".");
        cfg.http3 = true;
        let e = crate::Server::start(cfg).unwrap_err().to_string();
        assert!(e.contains("--http3") && e.contains("--tls-cert"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("50KB"), Ok(50_000));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("1x").is_err());
    }

    #[test]
    fn defaults_match_library() {
        let a = Args::try_parse_from(["serve"]).unwrap();
        let c = a.to_config();
        let d = ServerConfig::default();
        assert_eq!(c.listen, d.listen);
        assert_eq!(c.idle_timeout, d.idle_timeout);
        assert_eq!(c.header_timeout, d.header_timeout);
        assert_eq!(c.pipeline_buffer, d.pipeline_buffer);
        assert_eq!(c.max_connections, d.max_connections);
        assert!(c.keep_alive && c.pipelining && !c.quiet);
    }

    #[test]
    fn modes() {
        let a = Args::try_parse_from([
            "serve",
            "--model",
            "fork",
            "--keep-alive",
            "off",
            "--pipelining",
            "off",
            "--pipeline-buffer",
            "50KB",
            "--idle-timeout",
            "200ms",
        ])
        .unwrap();
        let c = a.to_config();
        assert_eq!(c.model, Model::Fork);
        assert!(!c.keep_alive && !c.pipelining);
        assert_eq!(c.pipeline_buffer, 50_000);
        assert_eq!(c.idle_timeout, Duration::from_millis(200));
    }
}
