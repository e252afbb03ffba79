//! What a peer's launch is made of: the study-wide inputs ([`Context`]),
//! the plan one server is started from ([`LaunchPlan`]), why a server
//! cannot run here ([`Unavailable`]), and a free port to serve on.

use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

/// Why a server cannot run here.
#[derive(Debug, Clone)]
pub enum Unavailable {
    /// The peer binary is missing.
    NotInstalled {
        /// Debian package to install.
        package: String,
    },
    /// Something else (e.g. the httplab binary cannot be found).
    Other(String),
    /// The server is installed but cannot serve HTTPS here (a study over
    /// TLS): its TLS module is missing.
    NoTls {
        /// The missing module.
        module: String,
        /// Debian package that provides it.
        package: String,
    },
}

impl Unavailable {
    /// Text for the report's reason column.
    pub fn reason(&self) -> String {
        match self {
            Unavailable::NotInstalled { package } => {
                format!("not installed (Debian package: {package})")
            }
            Unavailable::Other(s) => s.clone(),
            Unavailable::NoTls { module, package } => {
                format!("cannot serve HTTPS here: {module} is missing (Debian package: {package})")
            }
        }
    }
}

/// How a started server's readiness is probed ([`LaunchPlan::ready_over`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadyOver {
    /// An HTTP/1.1 GET over TCP (over TLS in a study over TLS).
    #[default]
    Tcp,
    /// An HTTP/3 GET over QUIC (a server that listens on UDP only).
    Quic,
}

/// Everything needed to start one server.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    /// Report label.
    pub name: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Configuration files to write: (file name in the work dir, content).
    pub files: Vec<(String, String)>,
    /// Error log to show when it fails (relative to the work dir).
    pub error_log: Option<String>,
    /// Port it will listen on.
    pub port: u16,
    /// Readiness probe path.
    pub ready_path: String,
    /// Readiness deadline.
    pub ready_timeout: Duration,
    /// Serves HTTPS: the readiness probe speaks TLS and trusts this
    /// certificate (PEM) only.
    pub tls_ca: Option<PathBuf>,
    /// A second port for h2c by prior knowledge, where the server cannot
    /// serve it next to HTTP/1.1 on `port` (nginx before 1.25).
    pub h2c_port: Option<u16>,
    /// How readiness is probed: an HTTP/1.1 GET over TCP (TLS in a study
    /// over TLS), or an HTTP/3 GET for a server with no TCP listener.
    pub ready_over: ReadyOver,
    /// Working directory when not the server's work dir: a `command`
    /// server runs where `httplab study` was started, so that its command
    /// line works as typed in that shell (`./my-server`, `python3 srv.py`).
    pub cwd: Option<PathBuf>,
}

/// Inputs shared by every server of a study.
#[derive(Debug, Clone)]
pub struct Context {
    /// Document root.
    pub root: PathBuf,
    /// Per-server working directory (configs, pid files, logs).
    pub work: PathBuf,
    /// The httplab binary (for `kind = "httplab"`).
    pub httplab_exe: Option<PathBuf>,
    /// Default readiness path.
    pub probe_path: String,
    /// Serve HTTPS with this certificate and key (a study over TLS).
    pub tls: Option<crate::execute::tls::CertFiles>,
    /// Some workload speaks HTTP/2: the peers are configured for it (h2 by
    /// ALPN over TLS, h2c by prior knowledge in cleartext) next to HTTP/1.1.
    pub http2: bool,
    /// Some workload speaks HTTP/3 (a study over TLS): `httplab serve` is
    /// started with `--http3` (the peers that speak it always serve it).
    pub http3: bool,
}

/// Picks a free loopback port (the kernel's choice; released before use),
/// free for UDP too: Caddy serves HTTP/3 on the same port number as HTTPS.
pub fn free_port() -> Result<u16> {
    let mut last = None;
    for _ in 0..32 {
        let l =
            TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
        let port = l.local_addr()?.port();
        match UdpSocket::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(String::new, |e| format!(": {e}"));
    bail!("no loopback port free for both TCP and UDP after 32 tries{why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_free_for_udp_too() {
        let port = free_port().unwrap();
        let t = TcpListener::bind(("127.0.0.1", port));
        let u = UdpSocket::bind(("127.0.0.1", port));
        assert!(t.is_ok() && u.is_ok(), "{port}: {t:?} {u:?}");
    }
}
