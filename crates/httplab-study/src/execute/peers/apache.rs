//! Apache httpd 2.4 with its MPM (event, worker or prefork): a generated
//! `apache.conf` loading only the modules it needs, mod_ssl over TLS and
//! mod_http2 with a threaded MPM.

use std::path::PathBuf;

use super::kind::{indent, is_root, Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, Unavailable};
use crate::spec::{Mpm, ServerInstance};

/// Apache httpd (`kind = "apache"`, `mpm`).
pub struct Apache;

impl Peer for Apache {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/sbin/apache2", "/usr/sbin/httpd"],
            name: "apache2",
            package: "apache2",
        })
    }

    /// Its configuration file and command line, for its MPM.
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
        let mpm = sv.mpm.unwrap_or_default();
        let Some(mods) = apache_modules() else {
            return Err(Unavailable::NotInstalled {
                package: "apache2".into(),
            });
        };
        let mods = mods.to_string_lossy();
        let workers = inst.workers.unwrap_or(if mpm.threaded() { 2 } else { 8 });
        let tpc = sv.threads_per_child.unwrap_or(25).max(1);
        let mpm_conf = if !mpm.threaded() {
            let max = workers.max(1);
            format!(
                "StartServers {w}\nMinSpareServers {w}\nMaxSpareServers {w}\nServerLimit {max}\nMaxRequestWorkers {max}\n",
                w = workers.max(1)
            )
        } else {
            format!(
                "StartServers {w}\nServerLimit {w}\nThreadLimit {tpc}\nThreadsPerChild {tpc}\nMinSpareThreads {tpc}\nMaxSpareThreads {mx}\nMaxRequestWorkers {mx}\n",
                w = workers.max(1),
                mx = workers.max(1) * tpc
            )
        };
        // Apache refuses to serve as root, so as root it switches to
        // nobody; the corpus is world-readable for that reason.
        let user = if is_root() {
            "User nobody\nGroup nogroup\n"
        } else {
            ""
        };
        let conf = format!(
            "# written by httplab study\nServerRoot \"{dir}\"\nServerName 127.0.0.1\n\
             LoadModule mpm_{m}_module {mods}/mod_mpm_{m}.so\n\
             LoadModule authz_core_module {mods}/mod_authz_core.so\n\
             LoadModule mime_module {mods}/mod_mime.so\n\
             {user}Listen 127.0.0.1:{port}\nListenBacklog 4096\nPidFile \"{dir}/apache.pid\"\n\
             DefaultRuntimeDir \"{dir}\"\nMutex file:{dir} default\n\
             ErrorLog \"{dir}/error.log\"\nLogLevel warn\nDocumentRoot \"{root}\"\n\
             <Directory \"{root}\">\n  Require all granted\n  AllowOverride None\n</Directory>\n\
             TypesConfig \"{dir}/mime.types\"\nAddType text/html .html\nAddType text/plain .txt\nAddType image/gif .gif\nAddType image/jpeg .jpg\n\
             KeepAlive {ka}\nMaxKeepAliveRequests 0\nKeepAliveTimeout 5\nEnableSendfile {sf}\n{mpm_conf}",
            m = mpm.word(),
            ka = if keep_alive { "On" } else { "Off" },
            sf = if sendfile { "On" } else { "Off" },
        );
        let conf = match &tls {
            None => conf,
            Some((cert, key)) => {
                let base = PathBuf::from(mods.as_ref());
                for m in ["mod_ssl.so", "mod_socache_shmcb.so"] {
                    if !base.join(m).is_file() {
                        return Err(Unavailable::NoTls {
                            module: format!("Apache's {m}"),
                            package: "apache2".into(),
                        });
                    }
                }
                // A server-wide SSL engine on the one listener, both
                // versions, and a shared session cache (session IDs);
                // tickets are on by default.
                format!(
                    "{conf}LoadModule socache_shmcb_module {mods}/mod_socache_shmcb.so\n\
                     LoadModule ssl_module {mods}/mod_ssl.so\n\
                     SSLEngine on\nSSLCertificateFile \"{cert}\"\nSSLCertificateKeyFile \"{key}\"\n\
                     SSLProtocol -all +TLSv1.2 +TLSv1.3\n\
                     SSLSessionCache \"shmcb:{dir}/ssl_scache(512000)\"\nSSLSessionCacheTimeout 3600\n"
                )
            }
        };
        // HTTP/2 through mod_http2, with a threaded MPM only (prefork cannot:
        // see `speaks`): `h2` by ALPN over TLS, `h2c` by prior knowledge
        // (H2Direct) in cleartext, HTTP/1.1 next to it.
        let conf = if i.ctx.http2 && apache_h2(mpm).is_ok() {
            let (proto, direct) = if tls.is_some() {
                ("h2", "")
            } else {
                ("h2c", "H2Direct on\n")
            };
            format!(
                "{conf}LoadModule http2_module {mods}/mod_http2.so\nProtocols {proto} http/1.1\n{direct}"
            )
        } else {
            conf
        };
        let conf = format!("{conf}{}", indent(&sv.extra_config, ""));
        p.files.push(("apache.conf".into(), conf));
        p.files.push((
            "mime.types".into(),
            "# types are set with AddType in apache.conf\n".into(),
        ));
        p.argv = vec![
            bin,
            "-d".into(),
            dir.clone(),
            "-f".into(),
            format!("{dir}/apache.conf"),
            "-DFOREGROUND".into(),
        ];
        Ok(())
    }

    fn h2(&self, inst: &ServerInstance) -> Result<(), String> {
        apache_h2(inst.spec.mpm.unwrap_or_default())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err("Apache httpd has no HTTP/3 (no QUIC module)".into())
    }

    fn version_flag(&self) -> &'static str {
        "-v"
    }
}

/// Apache's module directory (Debian layout first).
fn apache_modules() -> Option<PathBuf> {
    [
        "/usr/lib/apache2/modules",
        "/usr/lib64/httpd/modules",
        "/usr/lib/httpd/modules",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.join("mod_authz_core.so").is_file())
}

/// Whether this Apache can serve HTTP/2 with `mpm`.
fn apache_h2(mpm: Mpm) -> std::result::Result<(), String> {
    if !mpm.threaded() {
        return Err(
            "Apache's prefork MPM cannot serve HTTP/2 (mod_http2 needs a threaded MPM: event or worker)"
                .into(),
        );
    }
    match apache_modules() {
        Some(m) if !m.join("mod_http2.so").is_file() => {
            Err("Apache's mod_http2 is missing (Debian package: apache2)".into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::speaks;
    use crate::execute::peers::testing::{file, inst, plan_of};
    use crate::spec::{Mpm, Protocol};

    #[test]
    fn apache_loads_mod_http2_with_a_threaded_mpm_only() {
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"event\"", true, true) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        assert!(
            conf.contains("/mod_http2.so\nProtocols h2 http/1.1\n"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"worker\"", false, true) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        assert!(
            conf.contains("Protocols h2c http/1.1\nH2Direct on\n"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"prefork\"", true, true) else {
            return;
        };
        assert!(!file(&p, "apache.conf").contains("http2"));
        let why = speaks(
            &inst("kind = \"apache\"\nmpm = \"prefork\""),
            Protocol::H2,
            true,
        )
        .unwrap_err();
        assert!(why.contains("prefork MPM cannot serve HTTP/2"), "{why}");
    }

    #[test]
    fn each_mpm_gets_its_module_and_its_limits() {
        let Some(p) = plan_of(
            "kind = \"apache\"\nmpm = \"prefork\"\nworkers = 5",
            false,
            false,
        ) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        assert!(conf.contains("/mod_mpm_prefork.so\n"), "{conf}");
        assert!(
            conf.contains("StartServers 5\nMinSpareServers 5\nMaxSpareServers 5\nServerLimit 5\nMaxRequestWorkers 5\n"),
            "{conf}"
        );
        let Some(p) = plan_of(
            "kind = \"apache\"\nmpm = \"worker\"\nworkers = 3\nthreads_per_child = 8\nkeep_alive = false\nsendfile = false",
            false,
            false,
        ) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        for want in [
            "/mod_mpm_worker.so\n",
            "StartServers 3\nServerLimit 3\nThreadLimit 8\nThreadsPerChild 8\nMinSpareThreads 8\nMaxSpareThreads 24\nMaxRequestWorkers 24\n",
            "KeepAlive Off\n",
            "EnableSendfile Off\n",
            "Listen 127.0.0.1:8443\n",
            "DocumentRoot \"/srv/root\"\n",
        ] {
            assert!(conf.contains(want), "{want:?} in\n{conf}");
        }
        assert!(!conf.contains("SSLEngine"), "{conf}");
        assert!(file(&p, "mime.types").starts_with("# types are set with AddType"));
        assert!(p.argv.ends_with(&[
            "-d".to_string(),
            "/srv/work".into(),
            "-f".into(),
            "/srv/work/apache.conf".into(),
            "-DFOREGROUND".into()
        ]));
    }

    #[test]
    fn the_mpm_is_read_once_from_the_study_file_and_others_are_refused() {
        for (word, mpm) in [
            ("event", Mpm::Event),
            ("worker", Mpm::Worker),
            ("prefork", Mpm::Prefork),
        ] {
            let i = inst(&format!("kind = \"apache\"\nmpm = \"{word}\""));
            assert_eq!(i.spec.mpm, Some(mpm));
            assert_eq!(mpm.word(), word);
        }
        let text = "name = \"t\"\n[[servers]]\nkind = \"apache\"\nmpm = \"fork\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a\"\n";
        let why = format!(
            "{:#}",
            crate::spec::parse(text, "t.toml").expect_err("mpm = \"fork\" is no MPM")
        );
        assert!(
            why.contains("fork") && why.contains("event") && why.contains("prefork"),
            "{why}"
        );
    }
}
