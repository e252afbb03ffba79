//! What every peer kind implements ([`Peer`]), what its launch plan is
//! written from ([`Inputs`]), and the lookups the kinds share: a binary on
//! the machine, its version line, indentation of a log.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::launch::{Context, LaunchPlan, Unavailable};
use crate::spec::{ServerInstance, ServerSpec};

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

    /// Whether it speaks HTTP/1.1 here (every kind but a QUIC-only one);
    /// Err says why not.
    fn h1(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
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

pub(super) fn find_peer(b: &PeerBinary) -> Option<PathBuf> {
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

/// The version line `flag` makes a peer's binary print (None when it is
/// not installed or prints nothing).
pub(super) fn binary_version(b: &PeerBinary, flag: &str) -> Option<String> {
    let path = find_peer(b)?;
    first_line_of(&path.to_string_lossy(), &[flag.to_string()])
}

/// The first non-empty line `prog args` prints (stdout, then stderr),
/// without nginx's and Apache's "… version: " prefixes.
pub(super) fn first_line_of(prog: &str, args: &[String]) -> Option<String> {
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

pub(super) fn is_root() -> bool {
    httplab_sys::process::is_root()
}

/// `text` with each line prefixed and a final newline ("" for empty text).
pub(super) fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}
