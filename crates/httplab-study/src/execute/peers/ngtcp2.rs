//! ngtcp2's example HTTP/3 server (`gtlsserver` from Debian's
//! `ngtcp2-server`: ngtcp2 with GnuTLS, nghttp3 for HTTP/3). It serves a
//! directory over QUIC only, one thread, so it is a second HTTP/3 peer
//! beside Caddy and no peer for HTTP/1.1 or HTTP/2: a study over TLS
//! starts it for its h3 workloads and leaves it out of the others with that
//! reason. Readiness is an HTTP/3 GET (it has no TCP listener).

use std::path::Path;

use super::kind::{Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, ReadyOver, Unavailable};
use crate::spec::ServerInstance;

/// ngtcp2's example server (`kind = "ngtcp2"`).
pub struct Ngtcp2;

/// Why it is left out of an HTTP/1.1 or HTTP/2 workload.
const QUIC_ONLY: &str = "ngtcp2's example server speaks only HTTP/3";

impl Peer for Ngtcp2 {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/sbin/gtlsserver", "/usr/bin/gtlsserver"],
            name: "gtlsserver",
            package: "ngtcp2-server",
        })
    }

    /// `gtlsserver -q -d ROOT --timeout=30s 127.0.0.1 PORT KEY CERT`.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable> {
        let Inputs {
            port,
            root,
            tls,
            bin,
            ..
        } = i;
        let Some((cert, key)) = tls else {
            return Err(Unavailable::Other(format!(
                "{QUIC_ONLY}, which needs TLS (a study with tls = true)"
            )));
        };
        p.argv = vec![
            bin,
            // Without -q it prints every frame it sends and receives.
            "-q".into(),
            format!("--htdocs={root}"),
            "--timeout=30s".into(),
            "127.0.0.1".into(),
            port.to_string(),
            key,
            cert,
        ];
        p.ready_over = ReadyOver::Quic;
        Ok(())
    }

    fn error_log(&self) -> Option<&'static str> {
        None
    }

    fn h1(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err(QUIC_ONLY.into())
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err(QUIC_ONLY.into())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    /// It has no version flag: the Debian package's version.
    fn version(&self, _inst: &ServerInstance, _httplab_exe: Option<&Path>) -> Option<String> {
        let out = std::process::Command::new("dpkg-query")
            .args(["-W", "-f=${Version}", "ngtcp2-server"])
            .stdin(std::process::Stdio::null())
            .output()
            .ok()?;
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !v.is_empty()).then(|| format!("ngtcp2 example server {v}"))
    }
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::launch::ReadyOver;
    use crate::execute::peers::speaks;
    use crate::execute::peers::testing::{inst, plan_of};
    use crate::spec::Protocol;

    #[test]
    fn ngtcp2_serves_the_root_over_quic_only_and_is_probed_over_http3() {
        let n = inst("kind = \"ngtcp2\"");
        assert!(speaks(&n, Protocol::H3, true).is_ok());
        assert!(speaks(&n, Protocol::H3, false).is_err());
        for p in [Protocol::H1, Protocol::H2] {
            let why = speaks(&n, p, true).expect_err("QUIC only");
            assert!(why.contains("only HTTP/3"), "{why}");
        }
        let Some(p) = plan_of("kind = \"ngtcp2\"", true, false) else {
            return; // not installed here
        };
        assert_eq!(p.ready_over, ReadyOver::Quic);
        let a = &p.argv;
        assert!(a.contains(&"-q".to_string()), "{a:?}");
        assert!(a.contains(&"--htdocs=/srv/root".to_string()), "{a:?}");
        assert_eq!(
            a[a.len() - 4..],
            ["127.0.0.1", "8443", "/srv/tls/key.pem", "/srv/tls/cert.pem"]
        );
    }
}
