//! Caddy 2: a Caddyfile serving the corpus as static files on the study's
//! port. No admin API, no automatic HTTPS (no redirects, no certificate
//! management: over TLS it serves the study's certificate), nothing written
//! outside its work dir (its data and config homes point there; its log goes
//! to stderr, kept in the work dir). HTTP/1.1 and HTTP/2 over TLS (h2 by
//! ALPN) with HTTP/3 on the same port; h1 and h2c by prior knowledge in
//! cleartext. `workers` is GOMAXPROCS.

use std::path::Path;

use super::kind::{binary_version, indent, Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, Unavailable};
use crate::spec::ServerInstance;

/// Caddy (`kind = "caddy"`).
pub struct Caddy;

impl Peer for Caddy {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/bin/caddy", "/usr/sbin/caddy"],
            name: "caddy",
            package: "caddy",
        })
    }

    /// Its Caddyfile, command line and environment.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable> {
        let Inputs {
            inst,
            sv,
            port,
            root,
            dir,
            keep_alive,
            tls,
            bin,
            ..
        } = i;
        p.files.push((
            "Caddyfile".into(),
            caddyfile(port, &root, tls.as_ref(), keep_alive, &sv.extra_config),
        ));
        p.argv = vec![
            bin,
            "run".into(),
            "--config".into(),
            format!("{dir}/Caddyfile"),
            "--adapter".into(),
            "caddyfile".into(),
        ];
        p.env = vec![
            ("HOME".into(), dir.clone()),
            ("XDG_DATA_HOME".into(), format!("{dir}/data")),
            ("XDG_CONFIG_HOME".into(), format!("{dir}/config")),
        ];
        if let Some(w) = inst.workers {
            p.env.push(("GOMAXPROCS".into(), w.max(1).to_string()));
        }
        Ok(())
    }

    fn error_log(&self) -> Option<&'static str> {
        None
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn version_flag(&self) -> &'static str {
        "version"
    }

    /// "caddy 2.6.2": `caddy version` prints the bare version, "v2.6.2 h1:…" or "2.6.2".
    fn version(&self, _inst: &ServerInstance, _httplab_exe: Option<&Path>) -> Option<String> {
        let line = binary_version(&self.binary()?, self.version_flag())?;
        let v = line.split_whitespace().next().unwrap_or_default();
        Some(format!("caddy {}", v.trim_start_matches('v')))
    }
}

/// The Caddyfile of a study's Caddy (see [`Caddy`]`::plan`).
fn caddyfile(
    port: u16,
    root: &str,
    tls: Option<&(String, String)>,
    keep_alive: bool,
    extra: &str,
) -> String {
    let (scheme, protocols, tls_line) = match tls {
        Some((cert, key)) => (
            "https",
            "h1 h2 h3",
            format!("\ttls {cert} {key} {{\n\t\tprotocols tls1.2 tls1.3\n\t}}\n"),
        ),
        None => ("http", "h1 h2c", String::new()),
    };
    let close = if keep_alive {
        ""
    } else {
        "\theader Connection close\n"
    };
    format!(
        "# written by httplab study\n{{\n\tadmin off\n\tauto_https off\n\
         \tgrace_period 1s\n\tservers {{\n\t\tprotocols {protocols}\n\t}}\n\
         \tlog {{\n\t\toutput stderr\n\t\tlevel WARN\n\t}}\n}}\n\
         {scheme}://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n{tls_line}\troot * {root}\n\tfile_server\n{close}{extra}}}\n",
        extra = indent(extra, "\t"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::peers::testing::{file, plan_of};

    #[test]
    fn caddy_serves_the_corpus_without_admin_or_automatic_https() {
        let tls = ("/c.pem".to_string(), "/k.pem".to_string());
        let t = caddyfile(8443, "/srv/root", Some(&tls), true, "encode gzip");
        for want in [
            "\tadmin off\n",
            "\tauto_https off\n",
            "\t\tprotocols h1 h2 h3\n",
            "https://127.0.0.1:8443 {\n",
            "\tbind 127.0.0.1\n",
            "\ttls /c.pem /k.pem {",
            "\troot * /srv/root\n\tfile_server\n",
            "\tencode gzip\n}",
            "\t\toutput stderr\n",
        ] {
            assert!(t.contains(want), "{want:?} in\n{t}");
        }
        assert!(!t.contains("Connection close"));
        let t = caddyfile(8080, "/srv/root", None, false, "");
        for want in [
            "\t\tprotocols h1 h2c\n",
            "http://127.0.0.1:8080 {\n",
            "\theader Connection close\n",
        ] {
            assert!(t.contains(want), "{want:?} in\n{t}");
        }
        assert!(!t.contains("tls "), "{t}");
        let Some(p) = plan_of("kind = \"caddy\"\nworkers = 2", true, true) else {
            return;
        };
        assert!(p.argv.ends_with(&[
            "run".to_string(),
            "--config".into(),
            "/srv/work/Caddyfile".into(),
            "--adapter".into(),
            "caddyfile".into()
        ]));
        for (k, v) in [
            ("XDG_DATA_HOME", "/srv/work/data"),
            ("XDG_CONFIG_HOME", "/srv/work/config"),
            ("GOMAXPROCS", "2"),
        ] {
            assert!(
                p.env.iter().any(|(a, b)| a == k && b == v),
                "{k}={v} in {:?}",
                p.env
            );
        }
        assert!(file(&p, "Caddyfile").contains("tls /srv/tls/cert.pem /srv/tls/key.pem"));
    }
}
