//! The peers: what the study knows about each kind of server, behind one
//! trait. A [`Peer`] decides everything that differs between kinds — its
//! binary and Debian package, the launch plan it writes for a run
//! (configuration files with the port, root, work dir, TLS, HTTP/2 and
//! workers; command line; environment), the log shown when it fails, which
//! HTTP versions it speaks here, and how it tells its version. Each kind is
//! one file of this module; [`peer`] is the registry that maps a
//! [`ServerKind`] to its implementation. Starting, readiness probing and
//! stopping are the same for every kind (the `servers` module).
//!
//! Adding a peer is a new file here implementing [`Peer`] and one line of
//! the registry (next to its `mod` line), plus the kind's word in
//! [`ServerKind`] for study files.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::spec::{Protocol, ServerInstance, ServerKind, ServerSpec};

mod launch;

mod apache;
mod caddy;
mod command;
mod h2o;
mod httplab;
mod lighttpd;
mod nginx;

#[cfg(test)]
mod testing;

pub use launch::{free_port, Context, LaunchPlan, Unavailable};

/// The registry: the peer of each server kind.
pub fn peer(kind: ServerKind) -> &'static dyn Peer {
    match kind {
        ServerKind::Httplab => &httplab::Httplab,
        ServerKind::Nginx => &nginx::Nginx,
        ServerKind::Apache => &apache::Apache,
        ServerKind::Lighttpd => &lighttpd::Lighttpd,
        ServerKind::H2o => &h2o::H2o,
        ServerKind::Caddy => &caddy::Caddy,
        ServerKind::Command => &command::UserCommand,
    }
}

/// One kind of server: everything the study needs to know to configure,
/// start and describe it. Implementations are unit structs, one per file.
pub trait Peer {
    /// Its binary and the Debian package providing it; None when there is
    /// nothing to look for (httplab itself, a command of the user's).
    fn binary(&self) -> Option<PeerBinary>;

    /// Writes its launch plan for one run into `p`: the configuration
    /// files (port, root, work dir, TLS, HTTP/2, workers), the command line
    /// and environment. `p` comes with the study-wide fields filled in.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable>;

    /// The log in its work dir whose last lines explain a failed start
    /// (next to stdout and stderr, always shown); None: it has none.
    fn error_log(&self) -> Option<&'static str> {
        Some("error.log")
    }

    /// Whether it speaks HTTP/2 here (over TLS by ALPN, in cleartext by
    /// prior knowledge); Err says why not.
    fn h2(&self, inst: &ServerInstance) -> Result<(), String>;

    /// Whether it speaks HTTP/3 here (asked only over TLS); Err says why not.
    fn h3(&self, inst: &ServerInstance) -> Result<(), String>;

    /// Whether the study starts it once alone before it runs, because it is
    /// the user's own and may well not start (a command server); the
    /// others are only looked for.
    fn checked_by_starting(&self) -> bool {
        false
    }

    /// The argument that makes its binary print its version.
    fn version_flag(&self) -> &'static str {
        "--version"
    }

    /// Its version, e.g. "nginx/1.22.1" (None if unknown): by default the
    /// first line its binary prints for [`Peer::version_flag`].
    fn version(&self, _inst: &ServerInstance, _httplab_exe: Option<&Path>) -> Option<String> {
        binary_version(&self.binary()?, self.version_flag())
    }
}

/// Where a peer lives and which Debian package provides it.
pub struct PeerBinary {
    /// Candidate paths, first existing wins; then `$PATH` lookup of `name`.
    pub paths: &'static [&'static str],
    /// Program name for a `$PATH` search.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
}

/// What a peer's launch plan is written from.
pub struct Inputs<'a> {
    /// The server (its entry and worker count).
    pub inst: &'a ServerInstance,
    /// Its entry in the study file.
    pub sv: &'a ServerSpec,
    /// The study-wide inputs.
    pub ctx: &'a Context,
    /// The port it listens on.
    pub port: u16,
    /// The document root.
    pub root: String,
    /// Its work dir (configuration, pid file, logs).
    pub dir: String,
    /// Keep-alive on (`keep_alive`, default true).
    pub keep_alive: bool,
    /// sendfile on (`sendfile`, default true).
    pub sendfile: bool,
    /// Certificate and key files, over TLS.
    pub tls: Option<(String, String)>,
    /// The peer's binary ("" for httplab and commands).
    pub bin: String,
}

/// The binary and package of a peer kind (None for httplab and commands).
pub fn peer_binary(k: ServerKind) -> Option<PeerBinary> {
    peer(k).binary()
}

/// Finds `name` on `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Environment variable: a `:`-separated list of directories; when set,
/// peers are looked for there only (e.g. servers built from source).
pub const ENV_PEER_DIRS: &str = "HTTPLAB_PEER_DIRS";

fn find_peer(b: &PeerBinary) -> Option<PathBuf> {
    if let Some(dirs) = std::env::var_os(ENV_PEER_DIRS) {
        return std::env::split_paths(&dirs)
            .map(|d| d.join(b.name))
            .find(|p| p.is_file());
    }
    b.paths
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| which(b.name))
}

/// Builds the launch plan of one server (config text, argv), or says why it cannot run.
pub fn plan(
    inst: &ServerInstance,
    ctx: &Context,
    port: u16,
) -> std::result::Result<LaunchPlan, Unavailable> {
    let peer = peer(inst.spec.kind);
    let sv = &inst.spec;
    let mut p = LaunchPlan {
        name: inst.name.clone(),
        argv: Vec::new(),
        env: Vec::new(),
        files: Vec::new(),
        error_log: peer.error_log().map(String::from),
        port,
        ready_path: sv
            .ready_path
            .clone()
            .unwrap_or_else(|| ctx.probe_path.clone()),
        ready_timeout: Duration::from_secs_f64(
            sv.ready_timeout_s.unwrap_or(15.0).clamp(0.1, 600.0),
        ),
        tls_ca: ctx.tls.as_ref().map(|t| t.cert.clone()),
        h2c_port: None,
        cwd: None,
    };
    let bin = match peer.binary() {
        Some(b) => match find_peer(&b) {
            Some(path) => path.to_string_lossy().into_owned(),
            None => {
                return Err(Unavailable::NotInstalled {
                    package: b.package.to_string(),
                })
            }
        },
        None => String::new(),
    };
    let i = Inputs {
        inst,
        sv,
        ctx,
        port,
        root: ctx.root.to_string_lossy().into_owned(),
        dir: ctx.work.to_string_lossy().into_owned(),
        keep_alive: sv.keep_alive.unwrap_or(true),
        sendfile: sv.sendfile.unwrap_or(true),
        tls: ctx.tls.as_ref().map(|t| {
            (
                t.cert.to_string_lossy().into_owned(),
                t.key.to_string_lossy().into_owned(),
            )
        }),
        bin,
    };
    peer.plan(i, &mut p)?;
    Ok(p)
}

/// Why a server cannot speak `protocol` in this study (Ok: it can). Over
/// TLS h2 is negotiated by ALPN, in cleartext it is h2c by prior knowledge;
/// HTTP/3 needs TLS.
pub fn speaks(
    inst: &ServerInstance,
    protocol: Protocol,
    tls: bool,
) -> std::result::Result<(), String> {
    let peer = peer(inst.spec.kind);
    match protocol {
        Protocol::H1 => Ok(()),
        Protocol::H2 => peer.h2(inst),
        Protocol::H3 if !tls => Err("HTTP/3 needs TLS (QUIC is always encrypted)".into()),
        Protocol::H3 => peer.h3(inst),
    }
}

/// The version string of a server, e.g. "nginx/1.22.1" (None if unknown).
pub fn version(inst: &ServerInstance, httplab_exe: Option<&Path>) -> Option<String> {
    peer(inst.spec.kind).version(inst, httplab_exe)
}

/// Whether the study starts this server alone before it runs (see
/// [`Peer::checked_by_starting`]).
pub fn checked_by_starting(inst: &ServerInstance) -> bool {
    peer(inst.spec.kind).checked_by_starting()
}

/// The version line `flag` makes a peer's binary print (None when it is
/// not installed or prints nothing).
fn binary_version(b: &PeerBinary, flag: &str) -> Option<String> {
    let path = find_peer(b)?;
    first_line_of(&path.to_string_lossy(), &[flag.to_string()])
}

/// The first non-empty line `prog args` prints (stdout, then stderr),
/// without nginx's and Apache's "… version: " prefixes.
fn first_line_of(prog: &str, args: &[String]) -> Option<String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?
        .trim_start_matches("nginx version: ")
        .trim_start_matches("Server version: ")
        .to_string();
    Some(line)
}

fn is_root() -> bool {
    httplab_sys::process::is_root()
}

/// `text` with each line prefixed and a final newline ("" for empty text).
fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use testing::inst;

    #[test]
    fn who_speaks_what() {
        let httplab = inst("kind = \"httplab\"");
        assert!(speaks(&httplab, Protocol::H1, false).is_ok());
        let why = speaks(&httplab, Protocol::H2, true).unwrap_err();
        assert!(why.contains("HTTP/1.1 only"), "{why}");
        let caddy = inst("kind = \"caddy\"");
        assert!(speaks(&caddy, Protocol::H2, false).is_ok());
        assert!(speaks(&caddy, Protocol::H3, true).is_ok());
        assert!(speaks(&caddy, Protocol::H3, false).is_err());
        let nginx = inst("kind = \"nginx\"");
        assert!(speaks(&nginx, Protocol::H2, true).is_ok());
        assert!(speaks(&nginx, Protocol::H3, true).is_err());
        for (k, says) in [
            ("nginx", "no QUIC"),
            ("h2o", "no QUIC"),
            ("lighttpd", "no HTTP/3"),
            ("apache", "no HTTP/3"),
            ("httplab", "HTTP/1.1 only"),
        ] {
            let why = speaks(&inst(&format!("kind = \"{k}\"")), Protocol::H3, true).unwrap_err();
            assert!(why.contains(says), "{k}: {why}");
        }
    }
}
