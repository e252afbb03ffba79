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

use std::path::Path;
use std::time::Duration;

use crate::spec::{Protocol, ServerInstance, ServerKind};

mod kind;
mod launch;

mod apache;
mod caddy;
mod command;
mod h2o;
mod httplab;
mod lighttpd;
mod nginx;
mod ngtcp2;

#[cfg(test)]
mod testing;

use kind::find_peer;
pub use kind::{which, Inputs, Peer, PeerBinary, ENV_PEER_DIRS};
pub use launch::{free_port, Context, LaunchPlan, ReadyOver, Unavailable};

/// The registry: the peer of each server kind.
pub fn peer(kind: ServerKind) -> &'static dyn Peer {
    match kind {
        ServerKind::Httplab => &httplab::Httplab,
        ServerKind::Nginx => &nginx::Nginx,
        ServerKind::Apache => &apache::Apache,
        ServerKind::Lighttpd => &lighttpd::Lighttpd,
        ServerKind::H2o => &h2o::H2o,
        ServerKind::Caddy => &caddy::Caddy,
        ServerKind::Ngtcp2 => &ngtcp2::Ngtcp2,
        ServerKind::Command => &command::UserCommand,
    }
}

/// The binary and package of a peer kind (None for httplab and commands).
pub fn peer_binary(k: ServerKind) -> Option<PeerBinary> {
    peer(k).binary()
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
        ready_over: ReadyOver::Tcp,
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
        Protocol::H1 => peer.h1(inst),
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

#[cfg(test)]
mod tests {
    use super::*;
    use testing::inst;

    #[test]
    fn who_speaks_what() {
        let httplab = inst("kind = \"httplab\"");
        assert!(speaks(&httplab, Protocol::H1, false).is_ok());
        assert!(speaks(&httplab, Protocol::H2, true).is_ok());
        let threads = inst("kind = \"httplab\"\nmodel = \"threads\"");
        assert!(speaks(&threads, Protocol::H2, false).is_ok());
        let caddy = inst("kind = \"caddy\"");
        assert!(speaks(&caddy, Protocol::H2, false).is_ok());
        assert!(speaks(&caddy, Protocol::H3, true).is_ok());
        assert!(speaks(&caddy, Protocol::H3, false).is_err());
        assert!(speaks(&threads, Protocol::H3, true).is_ok());
        assert!(speaks(&threads, Protocol::H3, false).is_err());
        let nginx = inst("kind = \"nginx\"");
        assert!(speaks(&nginx, Protocol::H2, true).is_ok());
        assert!(speaks(&nginx, Protocol::H3, true).is_err());
        for (k, says) in [
            ("nginx", "no QUIC"),
            ("h2o", "no QUIC"),
            ("lighttpd", "no HTTP/3"),
            ("apache", "no HTTP/3"),
        ] {
            let why = speaks(&inst(&format!("kind = \"{k}\"")), Protocol::H3, true).unwrap_err();
            assert!(why.contains(says), "{k}: {why}");
        }
    }
}
