//! h2o: a generated `h2o.conf` (`workers` threads); HTTP/2 as it is.

use super::kind::{indent, is_root, Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, Unavailable};
use crate::spec::ServerInstance;

/// h2o (`kind = "h2o"`).
pub struct H2o;

impl Peer for H2o {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/bin/h2o", "/usr/sbin/h2o"],
            name: "h2o",
            package: "h2o",
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
            tls,
            bin,
            ..
        } = i;
        let workers = inst.workers.unwrap_or(1);
        let user = if is_root() { "user: root\n" } else { "" };
        let ssl = match &tls {
            Some((cert, key)) => format!(
                "  ssl:\n    certificate-file: {cert}\n    key-file: {key}\n    minimum-version: TLSv1.2\n"
            ),
            None => String::new(),
        };
        let conf = format!(
            "# written by httplab study\nlisten:\n  host: 127.0.0.1\n  port: {port}\n{ssl}\
             num-threads: {workers}\nmax-connections: 16384\n{user}pid-file: {dir}/h2o.pid\n\
             error-log: {dir}/error.log\nhttp1-request-timeout: 75\n\
             file.send-gzip: OFF\n\
             {extra}hosts:\n  default:\n    paths:\n      /:\n        file.dir: {root}\n{ka}",
            extra = indent(&sv.extra_config, ""),
            ka = if keep_alive {
                ""
            } else {
                "        header.set: \"Connection: close\"\n"
            },
        );
        p.files.push(("h2o.conf".into(), conf));
        p.argv = vec![bin, "-c".into(), format!("{dir}/h2o.conf")];
        Ok(())
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err("the study's h2o has no QUIC (Debian's h2o 2.2 predates its HTTP/3 support)".into())
    }
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::speaks;
    use crate::execute::peers::testing::{file, inst, plan_of};
    use crate::spec::Protocol;

    #[test]
    fn h2o_serves_h2_as_it_is() {
        let Some(p) = plan_of("kind = \"h2o\"", true, true) else {
            return;
        };
        let conf = file(&p, "h2o.conf");
        assert!(
            conf.contains("  ssl:\n    certificate-file: /srv/tls/cert.pem"),
            "{conf}"
        );
        assert!(speaks(&inst("kind = \"h2o\""), Protocol::H2, false).is_ok());
    }

    #[test]
    fn workers_and_keep_alive_reach_h2o_conf() {
        let Some(p) = plan_of(
            "kind = \"h2o\"\nworkers = 2\nkeep_alive = false\nextra_config = \"k: v\"",
            false,
            false,
        ) else {
            return;
        };
        let conf = file(&p, "h2o.conf");
        for want in [
            "listen:\n  host: 127.0.0.1\n  port: 8443\nnum-threads: 2\n",
            "pid-file: /srv/work/h2o.pid\n",
            "k: v\nhosts:\n",
            "        file.dir: /srv/root\n        header.set: \"Connection: close\"\n",
        ] {
            assert!(conf.contains(want), "{want:?} in\n{conf}");
        }
        assert!(!conf.contains("ssl:"), "{conf}");
        assert_eq!(p.argv[1..], ["-c".to_string(), "/srv/work/h2o.conf".into()]);
    }
}
