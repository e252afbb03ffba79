//! lighttpd 1.4: a generated `lighttpd.conf`, mod_openssl over TLS, and
//! HTTP/2 (h2 and h2c) from 1.4.59, where mod_h2 is built in.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::kind::{find_peer, indent, Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, Unavailable};
use crate::spec::ServerInstance;

/// lighttpd (`kind = "lighttpd"`).
pub struct Lighttpd;

impl Peer for Lighttpd {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/sbin/lighttpd"],
            name: "lighttpd",
            package: "lighttpd",
        })
    }

    /// Its configuration file and command line.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable> {
        let Inputs {
            inst,
            sv,
            port,
            root,
            dir,
            keep_alive,
            sendfile,
            tls,
            bin,
            ..
        } = i;
        let workers = inst.workers.unwrap_or(1);
        let mut conf = format!(
            "# written by httplab study\nserver.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\n\
             server.port = {port}\nserver.pid-file = \"{dir}/lighttpd.pid\"\nserver.errorlog = \"{dir}/error.log\"\n\
             server.max-connections = 8192\nserver.max-fds = 16384\n\
             server.max-keep-alive-requests = {kar}\nserver.max-keep-alive-idle = 5\n\
             server.network-backend = \"{nb}\"\n\
             mimetype.assign = ( \".html\" => \"text/html\", \".txt\" => \"text/plain\", \".gif\" => \"image/gif\", \".jpg\" => \"image/jpeg\", \"\" => \"application/octet-stream\" )\n",
            kar = if keep_alive { 1_000_000 } else { 0 },
            nb = if sendfile { "sendfile" } else { "writev" },
        );
        if workers > 1 {
            conf.push_str(&format!("server.max-worker = {workers}\n"));
        }
        if let Some((cert, key)) = &tls {
            if !lighttpd_has_tls() {
                return Err(Unavailable::NoTls {
                    module: "lighttpd's mod_openssl".into(),
                    package: "lighttpd-mod-openssl".into(),
                });
            }
            conf.push_str(&format!(
                "server.modules = ( \"mod_openssl\" )\nssl.engine = \"enable\"\n\
                 ssl.pemfile = \"{cert}\"\nssl.privkey = \"{key}\"\n\
                 ssl.openssl.ssl-conf-cmd = ( \"MinProtocol\" => \"TLSv1.2\" )\n"
            ));
        }
        if i.ctx.http2 {
            // mod_h2 is built into lighttpd from 1.4.59 (see `speaks`): HTTP/2
            // by ALPN over TLS, h2c by prior knowledge in cleartext.
            conf.push_str(
                "server.feature-flags += ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )\n",
            );
        }
        conf.push_str(&indent(&sv.extra_config, ""));
        p.files.push(("lighttpd.conf".into(), conf));
        p.argv = vec![
            bin,
            "-D".into(),
            "-f".into(),
            format!("{dir}/lighttpd.conf"),
        ];
        Ok(())
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        lighttpd_h2()
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err("lighttpd has no HTTP/3 (no QUIC support)".into())
    }

    fn version_flag(&self) -> &'static str {
        "-v"
    }
}

/// lighttpd's module directories (Debian layout first).
const LIGHTTPD_MODULE_DIRS: &[&str] = &[
    "/usr/lib/lighttpd",
    "/usr/lib64/lighttpd",
    "/usr/local/lib/lighttpd",
    "/usr/local/lib64/lighttpd",
];

/// Whether lighttpd can load its TLS module: false only when a module
/// directory exists here and holds no `mod_openssl.so` (a lighttpd built
/// elsewhere, e.g. under `HTTPLAB_PEER_DIRS`, is given the benefit of the
/// doubt: its start-up error says so if it cannot).
fn lighttpd_has_tls() -> bool {
    let dirs: Vec<PathBuf> = LIGHTTPD_MODULE_DIRS
        .iter()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .collect();
    dirs.is_empty() || dirs.iter().any(|d| d.join("mod_openssl.so").is_file())
}

/// Whether this lighttpd serves HTTP/2 (mod_h2 is built in from 1.4.59).
fn lighttpd_h2() -> std::result::Result<(), String> {
    match lighttpd_version() {
        Some(v) if v < (1, 4, 59) => Err(format!(
            "lighttpd {}.{}.{} has no HTTP/2 (mod_h2 is built in from 1.4.59)",
            v.0, v.1, v.2
        )),
        _ => Ok(()),
    }
}

/// lighttpd's version as (major, minor, patch), from `lighttpd -v`.
fn lighttpd_version() -> Option<(u32, u32, u32)> {
    let path = find_peer(&Lighttpd.binary()?)?;
    let out = Command::new(path)
        .arg("-v")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    parse_lighttpd_version(&String::from_utf8_lossy(&out.stdout))
}

/// `lighttpd/1.4.69 (ssl) - a light and fast webserver` → (1, 4, 69).
fn parse_lighttpd_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.trim().strip_prefix("lighttpd/")?;
    let v = v.split_whitespace().next()?;
    let mut it = v.split('.').map(|x| x.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::peers::testing::{file, plan_of};

    #[test]
    fn lighttpd_enables_h2proto_and_h2c() {
        let Some(p) = plan_of("kind = \"lighttpd\"", false, true) else {
            return;
        };
        let conf = file(&p, "lighttpd.conf");
        assert!(
            conf.contains("server.feature-flags += ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"lighttpd\"", false, false) else {
            return;
        };
        assert!(!file(&p, "lighttpd.conf").contains("h2proto"));
        assert_eq!(
            parse_lighttpd_version("lighttpd/1.4.69 (ssl) - a light and fast webserver\n"),
            Some((1, 4, 69))
        );
        assert_eq!(parse_lighttpd_version("nginx/1.22.1"), None);
    }

    #[test]
    fn workers_tls_and_switches_reach_lighttpd_conf() {
        let Some(p) = plan_of(
            "kind = \"lighttpd\"\nworkers = 3\nkeep_alive = false\nsendfile = false",
            true,
            false,
        ) else {
            return;
        };
        let conf = file(&p, "lighttpd.conf");
        for want in [
            "server.document-root = \"/srv/root\"\n",
            "server.port = 8443\n",
            "server.max-keep-alive-requests = 0\n",
            "server.network-backend = \"writev\"\n",
            "server.max-worker = 3\n",
            "ssl.pemfile = \"/srv/tls/cert.pem\"\nssl.privkey = \"/srv/tls/key.pem\"\n",
        ] {
            assert!(conf.contains(want), "{want:?} in\n{conf}");
        }
        assert_eq!(
            p.argv[1..],
            [
                "-D".to_string(),
                "-f".into(),
                "/srv/work/lighttpd.conf".into()
            ]
        );
        let Some(p) = plan_of("kind = \"lighttpd\"", false, false) else {
            return;
        };
        let conf = file(&p, "lighttpd.conf");
        assert!(
            !conf.contains("max-worker") && !conf.contains("ssl."),
            "{conf}"
        );
        assert!(
            conf.contains("server.network-backend = \"sendfile\"\n"),
            "{conf}"
        );
    }
}
