//! Servers under test: starts each peer from its launch plan (written by
//! its [`peers`](crate::execute::peers) implementation) pinned in its own
//! process group on a free loopback port, waits until it answers, and stops
//! it by PID afterwards. Which HTTP versions each can speak here is
//! [`speaks`]; a study with `h2` workloads configures the peers for HTTP/2
//! next to HTTP/1.1; Caddy over TLS serves HTTP/3 too, on the same port
//! number over UDP.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::execute::peers::ReadyOver;
use crate::spec::Protocol;

pub use crate::execute::peers::{
    checked_by_starting, free_port, peer_binary, plan, speaks, version, which, Context, LaunchPlan,
    PeerBinary, Unavailable, ENV_PEER_DIRS,
};

/// A started server.
pub struct Running {
    /// Report label.
    pub name: String,
    /// Root PID (also its process group).
    pub pid: i32,
    /// Listening address.
    pub addr: SocketAddr,
    child: Child,
    work: PathBuf,
    error_log: Option<String>,
    stopped: bool,
    /// HTTPS: the probe's client configuration (trusting the study's certificate).
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// HTTPS: the version and cipher suite the readiness probe's handshake chose.
    pub tls_seen: Option<String>,
    /// Where h2c by prior knowledge is served when not at `addr` (nginx).
    pub h2c_addr: Option<SocketAddr>,
    /// A server with no TCP listener: readiness is an HTTP/3 GET trusting
    /// this certificate.
    quic_ca: Option<PathBuf>,
}

impl Running {
    /// The address a client speaking `protocol` connects to.
    pub fn addr_for(&self, protocol: Protocol) -> SocketAddr {
        match (protocol, self.h2c_addr) {
            (Protocol::H2, Some(a)) => a,
            _ => self.addr,
        }
    }
}

/// Pins the calling thread to `cores` (no-op when empty).
pub fn pin_current_thread(cores: &[usize]) -> Result<()> {
    httplab_sys::cpu::pin_current_thread(cores)
        .map_err(|e| anyhow::anyhow!("sched_setaffinity({cores:?}): {e}"))
}

pub use crate::plan::pinning::allowed_cores;

/// Writes the plan's files and starts the server pinned to `cores`, in its own
/// process group, then waits (bounded) until it answers `ready_path`.
pub fn start(
    p: &LaunchPlan,
    work: &Path,
    cores: &[usize],
    cgroup_procs: Vec<std::ffi::CString>,
) -> Result<Running> {
    fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    crate::execute::corpus::make_world_readable(work)?;
    for (name, text) in &p.files {
        fs::write(work.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    let out = fs::File::create(work.join("stdout.log"))?;
    let err = fs::File::create(work.join("stderr.log"))?;
    let Some((prog, args)) = p.argv.split_first() else {
        bail!("{}: empty command line", p.name);
    };
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .current_dir(p.cwd.as_deref().unwrap_or(work))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    for (k, v) in &p.env {
        cmd.env(k, v);
    }
    // Between fork and exec the server dies with us (no orphans), joins its
    // cgroups (CPU accounting, CPU limit: `execute::cpu`), so every process it
    // will ever start is counted and limited, and is pinned to `cores`.
    httplab_sys::process::set_server_child_setup(
        &mut cmd,
        cgroup_procs,
        httplab_sys::cpu::CpuSet::new(cores.iter().copied()),
    );
    let tls = match &p.tls_ca {
        Some(ca) => Some(crate::execute::tls::client_config(ca)?),
        None => None,
    };
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", p.argv.join(" ")))?;
    let mut r = Running {
        name: p.name.clone(),
        pid: child.id() as i32,
        addr: SocketAddr::from(([127, 0, 0, 1], p.port)),
        child,
        work: work.to_path_buf(),
        error_log: p.error_log.clone(),
        stopped: false,
        tls,
        tls_seen: None,
        h2c_addr: p
            .h2c_port
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port))),
        quic_ca: match p.ready_over {
            ReadyOver::Quic => p.tls_ca.clone(),
            ReadyOver::Tcp => None,
        },
    };
    if let Err(e) = r.wait_ready(&p.ready_path, p.ready_timeout) {
        r.stop();
        return Err(e);
    }
    Ok(r)
}

/// One GET; Ok(status) when an HTTP response head arrived.
pub fn probe(addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        let k = s.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    crate::execute::http::status_code(&buf[..n])
}

/// One HTTP/3 GET with httplab's own client (one connection, one request,
/// the certificate `ca` the only trust anchor); Ok(200) when it was
/// answered with a 2xx status, Ok(0) when it was answered otherwise.
pub fn quic_probe(addr: SocketAddr, path: &str, timeout: Duration, ca: &Path) -> Result<u16> {
    use httplab_load::{Length, Load, LoadSpec, Offer, Protocol, TlsSpec};
    let mut s = LoadSpec::target(&addr.ip().to_string(), addr.port(), path)
        .with_load(Load::new(Offer::BackToBack, Length::Count(1)))
        .with_protocol(Protocol::Http3 { streams: 1 })
        .with_tls(Some(TlsSpec::verified_by(ca.to_path_buf())));
    s.timeout = Some(timeout.as_secs_f64());
    s.no_progress = true;
    s.threads = 1;
    let s = s.checked().context("HTTP/3 readiness probe")?;
    let r = httplab_load::run(&s, false)?;
    let st = &r.reply.status;
    if st.total() == 0 {
        bail!("no HTTP/3 reply ({} errors)", r.errors.total);
    }
    Ok(if st.success > 0 { 200 } else { 0 })
}

impl Running {
    /// Polls until `path` answers 200, the process exits, or `timeout` passes.
    pub fn wait_ready(&mut self, path: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last;
        loop {
            if let Some(why) = self.exited() {
                bail!(
                    "{} exited at start-up ({why}){}",
                    self.name,
                    self.log_tail()
                );
            }
            let t = Duration::from_millis(500);
            let got = match (&self.quic_ca, &self.tls) {
                (Some(ca), _) => quic_probe(self.addr, path, t, ca),
                (None, Some(cfg)) => {
                    crate::execute::tls::probe(self.addr, path, t, cfg).map(|(code, seen)| {
                        self.tls_seen = Some(seen);
                        code
                    })
                }
                (None, None) => probe(self.addr, path, t),
            };
            match got {
                Ok(200) => return Ok(()),
                Ok(code) => last = format!("GET {path} answered {code}"),
                Err(e) => last = format!("{e:#}"),
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not answer GET {path} on {} within {:.1} s (last: {last}){}",
                    self.name,
                    self.addr,
                    timeout.as_secs_f64(),
                    self.log_tail()
                );
            }
            // Bounded readiness poll: the deadline above ends it.
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// `Some(description)` once the root process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(describe_exit(st)),
            Ok(None) => None,
            Err(e) => Some(format!("cannot wait: {e}")),
        }
    }

    /// Last lines of the server's logs, for error messages.
    pub fn log_tail(&self) -> String {
        let mut names = vec!["stderr.log".to_string(), "stdout.log".to_string()];
        if let Some(e) = &self.error_log {
            names.push(e.clone());
        }
        let mut out = String::new();
        for n in names {
            if let Ok(t) = fs::read_to_string(self.work.join(&n)) {
                let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = &lines[lines.len().saturating_sub(3)..];
                if !tail.is_empty() {
                    out.push_str(&format!("; {n}: {}", tail.join(" | ")));
                }
            }
        }
        out
    }

    /// Stops the server: SIGTERM to its process group, then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let pg = self.pid;
        // The process group this runner created for the server
        // (process_group(0) at spawn).
        let _ = httplab_sys::process::signal_group(pg, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Whatever is left of the group (workers, stuck children) goes now.
        // ESRCH when the group is already gone is fine.
        let _ = httplab_sys::process::signal_group(pg, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

fn describe_exit(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!(
            "killed by signal {s}{}",
            if s == 9 { " (SIGKILL)" } else { "" }
        ),
        _ => "exited".into(),
    }
}

/// The httplab binary: `$HTTPLAB_BIN`, this executable if it is httplab, or
/// `httplab` next to (or one level above) this executable (cargo's target layout).
pub fn find_httplab_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HTTPLAB_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_stem().is_some_and(|n| n == "httplab") {
        return Some(exe);
    }
    let dir = exe.parent()?;
    [dir.join("httplab"), dir.parent()?.join("httplab")]
        .into_iter()
        .find(|p| p.is_file())
}
