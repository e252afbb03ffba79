//! `httplab serve`: a static-file HTTP/1.1 server (cleartext or HTTPS) with
//! several concurrency models sharing one request handler; HTTP/2 beside it
//! (`--http2 on`), and HTTP/3 over QUIC with TLS (`--http3`, see `http3`).
//!
//! HTTP/3 is served by quinn's async engine on its own thread, whatever
//! `--model`: the model serves TCP (HTTP/1.1, HTTP/2), the `http3` engine
//! the UDP socket of the same port, both with the same handler.
//!
//! # Library use
//!
//! ```no_run
//! use httplab_server::{Model, Server, ServerConfig};
//! use std::time::Duration;
//!
//! let mut cfg = ServerConfig::for_root("site"); // 127.0.0.1, port 0
//! cfg.model = Model::Event;
//! cfg.workers = 1;
//! cfg.idle_timeout = Duration::from_millis(200);
//! let server = Server::start(cfg)?;
//! println!("listening on http://{}/", server.local_addr());
//! // ... drive load against it ...
//! let stats = server.stats();
//! println!("{} requests", stats.requests);
//! server.shutdown(); // graceful; dropping the handle does the same
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! # Layout
//!
//! - [`config`]: [`ServerConfig`] (public fields, `Default`) and [`Model`].
//! - `session`: one connection's protocol state machine, without I/O;
//!   `h2session`: its HTTP/2 twin on `httplab-wire`'s `h2` codec (requests
//!   to the same handler, responses framed within the peer's windows,
//!   hostile input bounded; driven by `event` for h2c by prior knowledge
//!   with `--http2 on`).
//! - `handler`: request → response (files, ranges, conditionals, errors);
//!   `negotiate`: `Accept-Encoding` against a file's precompressed variants.
//! - `files`: safe path resolution and the per-worker file cache (with the
//!   `--precompressed` variants and the `--cache-control` value of a file).
//! - `event`: the mio reactor (default model); `uring`: the io_uring
//!   engine of the event model; `lifecycle`: the worker lifecycle both
//!   share (turn clock, buffer pool, accept gate, shutdown clock, sweep,
//!   the loop itself); `blocking`: `single`, `threads` and `fork`.
//! - `tls`: the transport between socket and session, plain or TLS
//!   (rustls), driven by every model through the same calls; `tickets`:
//!   fork-safe TLS session tickets.
//! - `http3`: HTTP/3 over QUIC (quinn; framing and QPACK `httplab-wire`'s
//!   `h3` codec) on a current-thread tokio
//!   runtime in a thread of its own, beside whichever model serves TCP;
//!   requests to the same handler, its answers sent as HTTP/3 responses.
//! - `cli`: the clap parser behind [`cli_main`].

#![forbid(unsafe_code)]

pub mod config;
pub mod stats;

mod blocking;
mod cli;
mod event;
mod files;
mod h2session;
mod handler;
mod head;
mod http3;
mod lifecycle;
mod log;
mod negotiate;
mod out;
mod processes;
mod sendpath;
mod session;
mod sys;
#[doc(hidden)]
pub mod testkit;
mod tickets;
mod tls;
mod uring;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

pub use cli::main as cli_main;
pub use config::{
    AccessLog, CacheFiles, CacheRule, Coding, FileIo, IoEngine, Limits, Model, ServerConfig,
    TlsFiles,
};
pub use http3::UdpFacts;
pub use stats::Snapshot;

use blocking::Stop;
use handler::Handler;
use stats::SharedStats;

/// Whether `--io auto` picks io_uring where it is available (cleartext
/// HTTP/1.1 only). On: with a new connection's first turn answered by
/// direct system calls, as epoll answers before it registers, the io_uring
/// engine cost 0.75-0.83x epoll's CPU per keep-alive request and 0.96-1.0x
/// per new connection on the 2-core benchmark machine; with `--http2 on` it
/// was level with epoll (0.92-1.0x) and a 32 MiB file moved no faster, so
/// HTTP/2 stays on epoll. BENCHMARKS.md, "io_uring by default".
const AUTO_PREFERS_URING: bool = true;

/// A way to start a server.
#[derive(Debug)]
pub struct Server;

/// A running server. Dropping it shuts the server down gracefully (as
/// [`ServerHandle::shutdown`] does) and waits for its threads.
pub struct ServerHandle {
    addr: SocketAddr,
    root: PathBuf,
    model: Model,
    workers: usize,
    io: IoEngine,
    stop: Stop,
    wakers: Vec<Arc<mio::Waker>>,
    threads: Vec<JoinHandle<()>>,
    /// The statistics reporter and the sender that stops it; it is stopped
    /// after the workers so its last line has their final counts.
    reporter: Option<Reporter>,
    stats: SharedStats,
    /// `--http3`: the QUIC engine.
    h3: Option<http3::H3Server>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("addr", &self.addr)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds, starts the configured model and returns at once. Errors
    /// (root missing, port in use, permission denied) are reported here.
    pub fn start(mut cfg: ServerConfig) -> anyhow::Result<ServerHandle> {
        let root = std::fs::canonicalize(&cfg.root)
            .with_context(|| format!("root directory {} is not usable", cfg.root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("root {} is not a directory", root.display());
        }
        std::fs::read_dir(&root)
            .with_context(|| format!("cannot read root directory {}", root.display()))?;
        config::check_cache_rules(&cfg.cache_control).map_err(anyhow::Error::msg)?;
        cfg.check_http3().map_err(anyhow::Error::msg)?;
        let tls = match &cfg.tls {
            Some(files) => Some(tls::load(files, cfg.http2)?),
            None => None,
        };
        // HTTP/3 first: its UDP port, free for TCP too, fixes the port
        // number the TCP listeners take and `Alt-Svc` names.
        let quic = match (&cfg.tls, cfg.http3) {
            (Some(files), true) => {
                let crypto = tls::load_quic(files)?;
                let (udp, at) = http3::bind(cfg.listen)?;
                cfg.listen = at;
                Some((udp, crypto))
            }
            _ => None,
        };
        let alt_svc = quic.as_ref().map(|_| http3::alt_svc(cfg.listen.port()));
        let _ = sys::raise_nofile_limit();
        let log_sink = match &cfg.access_log {
            Some(t) => {
                Some(log::Sink::open(t).with_context(|| format!("cannot open access log {t:?}"))?)
            }
            None => None,
        };
        let stats = stats::shared().context("cannot map shared statistics")?;
        let stop = Stop {
            flag: Arc::new(AtomicBool::new(false)),
            wake: Arc::new(sys::WakePipe::new().context("cannot create wake pipe")?),
        };
        let cfg = Arc::new(cfg);
        let make_handler = {
            let cfg = Arc::clone(&cfg);
            let root = root.clone();
            let stats = Arc::clone(&stats);
            move || {
                let mut h = Handler::new(
                    Arc::clone(&cfg),
                    root.clone(),
                    log_sink.clone().map(log::AccessLog::new),
                    Arc::clone(&stats),
                );
                h.set_alt_svc(alt_svc.clone());
                h
            }
        };
        let mut handle = ServerHandle {
            addr: cfg.listen,
            root,
            model: cfg.model,
            workers: 1,
            io: IoEngine::Epoll,
            stop: stop.clone(),
            wakers: Vec::new(),
            threads: Vec::new(),
            reporter: None,
            stats: Arc::clone(&stats),
            h3: None,
        };
        match cfg.model {
            Model::Event => start_event(&cfg, &mut handle, &make_handler, tls)?,
            Model::Threads => {
                let l = bind_listeners(cfg.listen, 1, false)?.remove(0);
                handle.addr = l.local_addr()?;
                handle.workers = cfg.threads.max(1);
                let queue = if cfg.queue == 0 {
                    cfg.threads
                } else {
                    cfg.queue
                };
                handle.threads = blocking::spawn_threads(
                    l,
                    &make_handler,
                    cfg.threads,
                    queue,
                    stop.clone(),
                    tls.clone(),
                )
                .context("cannot spawn worker threads")?;
            }
            Model::Fork | Model::Single => {
                let l = bind_listeners(cfg.listen, 1, false)?.remove(0);
                handle.addr = l.local_addr()?;
                let h = make_handler();
                let stop2 = stop.clone();
                let model = cfg.model;
                let max_children = cfg.max_children;
                handle.threads.push(
                    std::thread::Builder::new()
                        .name(format!("httplab-{}", model.name()))
                        .spawn(move || {
                            if model == Model::Fork {
                                blocking::run_fork(l, h, max_children, stop2, tls)
                            } else {
                                blocking::run_single(l, h, stop2, tls)
                            }
                        })
                        .context("cannot spawn acceptor thread")?,
                );
            }
        }
        if let Some((udp, crypto)) = quic {
            let mut h = make_handler();
            h.set_alt_svc(None);
            handle.h3 = Some(http3::H3Server::start(Arc::clone(&cfg), udp, crypto, h)?);
        }
        if let Some(period) = cfg.stats_interval.filter(|d| !d.is_zero()) {
            handle.reporter = Some(start_reporter(&cfg, &stats, period)?);
        }
        Ok(handle)
    }
}

/// The event model: one listener (SO_REUSEPORT) and one worker thread per
/// worker, each an epoll reactor or an io_uring engine.
fn start_event(
    cfg: &ServerConfig,
    handle: &mut ServerHandle,
    make_handler: &dyn Fn() -> Handler,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> anyhow::Result<()> {
    let n = cfg.effective_workers();
    let listeners = bind_listeners(cfg.listen, n, true)?;
    set_listener_options(cfg, &listeners);
    handle.addr = listeners[0].local_addr()?;
    handle.workers = n;
    let per_worker = cfg.max_connections.div_ceil(n);
    let mut uring = wants_uring(cfg.io, tls.is_some(), cfg.http2)?;
    for (i, l) in listeners.into_iter().enumerate() {
        if uring {
            let h = make_handler();
            match spawn_uring_worker(i, &l, h, per_worker, &handle.stop.flag)? {
                Ok((waker, t)) => {
                    drop(l);
                    handle.wakers.push(waker);
                    handle.threads.push(t);
                    continue;
                }
                Err(e) if cfg.io == IoEngine::Uring => {
                    return Err(
                        anyhow::Error::new(e).context("--io uring: cannot set up an io_uring ring")
                    );
                }
                Err(_) => {
                    // auto: this kernel lacks a feature the ring needs
                    // (provided-buffer rings: 5.19); epoll.
                    uring = false;
                }
            }
        }
        let (w, waker) = event::Worker::new(
            l,
            make_handler(),
            per_worker,
            Arc::clone(&handle.stop.flag),
            tls.clone(),
        )
        .context("cannot create event loop")?;
        handle.wakers.push(waker);
        handle.threads.push(
            std::thread::Builder::new()
                .name(format!("httplab-ev-{i}"))
                .spawn(move || w.run())
                .context("cannot spawn worker thread")?,
        );
    }
    handle.io = if uring {
        IoEngine::Uring
    } else {
        IoEngine::Epoll
    };
    Ok(())
}

/// Socket options set once on each listener: Linux copies these to every
/// accepted socket, saving a setsockopt per connection (the worker checks
/// TCP_NODELAY on its first accept and sets it per connection if it was
/// not inherited). All best effort.
fn set_listener_options(cfg: &ServerConfig, listeners: &[TcpListener]) {
    use std::os::fd::AsRawFd;
    for l in listeners {
        let fd = l.as_raw_fd();
        if cfg.defer_accept {
            // A kernel without it just accepts earlier.
            let _ = sys::set_defer_accept(fd, 1);
        }
        let _ = sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
        if let Some(b) = cfg.sndbuf {
            let _ = sys::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b);
        }
        if let Some(b) = cfg.notsent_lowat {
            let _ = sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, b);
        }
    }
}

/// Whether the event model starts on io_uring (`auto` may still fall back
/// to epoll when a ring cannot be set up; `auto` with HTTP/2 on stays on
/// epoll, see [`AUTO_PREFERS_URING`]).
fn wants_uring(io: IoEngine, tls: bool, http2: bool) -> anyhow::Result<bool> {
    Ok(match io {
        IoEngine::Epoll => false,
        IoEngine::Uring => {
            if tls {
                anyhow::bail!(
                    "--io uring serves cleartext HTTP only; use --io epoll (or auto) with --tls-cert/--tls-key"
                );
            }
            if httplab_sys::uring::probe().is_err() {
                anyhow::bail!(
                    "--io uring: io_uring is not available here (kernel without it, /proc/sys/kernel/io_uring_disabled set, or blocked by a sandbox); use --io epoll or auto"
                );
            }
            true
        }
        IoEngine::Auto => {
            AUTO_PREFERS_URING && !tls && !http2 && httplab_sys::uring::probe().is_ok()
        }
    })
}

type UringStarted = (Arc<mio::Waker>, JoinHandle<()>);

/// Starts io_uring worker `i` on a duplicate of listener `l`. The ring is
/// made on the worker's own thread (a thread that made a ring may see
/// EINTR later). The inner error: the ring could not be set up (the
/// thread has ended).
fn spawn_uring_worker(
    i: usize,
    l: &TcpListener,
    h: Handler,
    per_worker: usize,
    flag: &Arc<AtomicBool>,
) -> anyhow::Result<Result<UringStarted, std::io::Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let lc = l.try_clone().context("cannot duplicate listener")?;
    let flag = Arc::clone(flag);
    let t = std::thread::Builder::new()
        .name(format!("httplab-ur-{i}"))
        .spawn(move || match uring::Worker::new(lc, h, per_worker, flag) {
            Ok((w, waker)) => {
                let _ = tx.send(Ok(waker));
                w.run();
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        })
        .context("cannot spawn worker thread")?;
    let made = rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("worker thread died")));
    Ok(match made {
        Ok(waker) => Ok((waker, t)),
        Err(e) => {
            let _ = t.join();
            Err(e)
        }
    })
}

type Reporter = (std::sync::mpsc::Sender<()>, JoinHandle<()>);

/// The statistics thread (`--stats-interval`): prints and/or appends JSON
/// lines every `period` until told to stop.
fn start_reporter(
    cfg: &ServerConfig,
    stats: &SharedStats,
    period: Duration,
) -> anyhow::Result<Reporter> {
    let json = match &cfg.stats_json {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open stats file {}", p.display()))?,
        ),
        None => None,
    };
    let stats = Arc::clone(stats);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let print = !cfg.quiet || cfg.stats_json.is_none();
    let children = cfg.model == Model::Fork;
    let t = std::thread::Builder::new()
        .name("httplab-stats".into())
        .spawn(move || stats_loop(&stats, &rx, period, print, json, children))
        .context("cannot spawn stats thread")?;
    Ok((tx, t))
}

fn stats_loop(
    stats: &SharedStats,
    stop: &std::sync::mpsc::Receiver<()>,
    period: Duration,
    print: bool,
    mut json: Option<std::fs::File>,
    children: bool,
) {
    use std::io::Write;
    use std::sync::mpsc::RecvTimeoutError;
    let mut rep = stats::Reporter::new(children);
    let mut next = std::time::Instant::now() + period;
    loop {
        let left = next.saturating_duration_since(std::time::Instant::now());
        let stopping = !matches!(stop.recv_timeout(left), Err(RecvTimeoutError::Timeout));
        if !stopping && std::time::Instant::now() < next {
            continue;
        }
        next += period;
        let r = rep.report(stats.snapshot());
        if print {
            println!("{}", r.line());
        }
        if let Some(f) = &mut json {
            let _ = writeln!(f, "{}", r.json());
        }
        if stopping {
            // One last report at shutdown, so a run always leaves a line.
            return;
        }
    }
}

/// Binds `n` listeners on `addr` (SO_REUSEPORT when `reuseport`), all on the
/// same port (the first one's when `addr` has port 0).
fn bind_listeners(addr: SocketAddr, n: usize, reuseport: bool) -> anyhow::Result<Vec<TcpListener>> {
    use socket2::{Domain, Protocol, Socket, Type};
    // With SO_REUSEPORT a second server of the same user could silently
    // share the port; probe it without the option first so "port in use"
    // is reported as such. (Not in one of `--processes`' serving processes:
    // they share the port on purpose, and their parent probed it.)
    if addr.port() != 0 && reuseport && !processes::is_child() {
        let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        probe.set_reuse_address(true)?;
        probe.bind(&addr.into()).map_err(|e| bind_error(addr, e))?;
    }
    let mut out = Vec::with_capacity(n);
    let mut target = addr;
    for _ in 0..n.max(1) {
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        s.set_reuse_address(true)?;
        if reuseport {
            s.set_reuse_port(true)?;
        }
        s.set_nonblocking(true)?;
        s.bind(&target.into()).map_err(|e| bind_error(target, e))?;
        s.listen(4096).map_err(|e| bind_error(target, e))?;
        let l: TcpListener = s.into();
        if target.port() == 0 {
            target = l.local_addr()?;
        }
        out.push(l);
    }
    Ok(out)
}

fn bind_error(addr: SocketAddr, e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            anyhow::anyhow!("cannot listen on {addr}: address already in use")
        }
        std::io::ErrorKind::PermissionDenied => {
            anyhow::anyhow!(
                "cannot listen on {addr}: permission denied (ports below 1024 need privileges)"
            )
        }
        std::io::ErrorKind::AddrNotAvailable => {
            anyhow::anyhow!("cannot listen on {addr}: address not available on this host")
        }
        _ => anyhow::anyhow!("cannot listen on {addr}: {e}"),
    }
}

impl ServerHandle {
    /// The address actually listened on (port resolved when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Canonical root directory.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Model in use.
    pub fn model(&self) -> Model {
        self.model
    }

    /// I/O engine of the event model after resolving `auto` (epoll for the
    /// other models).
    pub fn io_engine(&self) -> IoEngine {
        self.io
    }

    /// Event workers, or worker threads for the threads model (1 otherwise).
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Current counters. Request and byte counts are flushed by workers once
    /// per loop iteration (blocking models: per connection), so they may lag
    /// slightly behind the wire.
    pub fn stats(&self) -> Snapshot {
        self.stats.snapshot()
    }

    /// The shared counters themselves, to read later (the `--prometheus`
    /// endpoint reads them at each scrape).
    pub fn shared_stats(&self) -> SharedStats {
        std::sync::Arc::clone(&self.stats)
    }

    /// `--http3`: what the QUIC engine's UDP socket was granted (buffers,
    /// GSO and GRO segments); None without HTTP/3.
    pub fn http3_udp(&self) -> Option<UdpFacts> {
        self.h3.as_ref().map(|h| h.facts)
    }

    fn stop_and_join(&mut self) {
        self.stop.flag.store(true, Ordering::Release);
        self.stop.wake.wake();
        for w in &self.wakers {
            let _ = w.wake();
        }
        if let Some(h3) = &self.h3 {
            h3.stop();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(h3) = &mut self.h3 {
            h3.join();
        }
        if let Some((tx, t)) = self.reporter.take() {
            let _ = tx.send(());
            let _ = t.join();
        }
    }

    /// Stops accepting, lets in-flight responses finish (up to the
    /// configured shutdown timeout), joins every thread (and, for the fork
    /// model, reaps every child) and returns the final counters.
    pub fn shutdown(mut self) -> Snapshot {
        self.stop_and_join();
        self.stats.snapshot()
    }

    /// Waits until shutdown was requested by another path (used by the CLI
    /// together with signals); returns immediately if it already was.
    pub fn is_stopping(&self) -> bool {
        self.stop.flag.load(Ordering::Acquire)
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
