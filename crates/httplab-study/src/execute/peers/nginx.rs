//! nginx: a generated `nginx.conf` (master and `workers` worker processes),
//! HTTP/2 by ALPN over TLS and h2c on a port of its own in cleartext.

use super::kind::{indent, is_root, Inputs, Peer, PeerBinary};
use super::launch::{free_port, LaunchPlan, Unavailable};
use crate::spec::ServerInstance;

/// nginx (`kind = "nginx"`).
pub struct Nginx;

impl Peer for Nginx {
    fn binary(&self) -> Option<PeerBinary> {
        Some(PeerBinary {
            paths: &["/usr/sbin/nginx"],
            name: "nginx",
            package: "nginx",
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
        let user = if is_root() { "user root root;\n" } else { "" };
        let ka = if keep_alive {
            "keepalive_timeout 75s;\n  keepalive_requests 1000000;"
        } else {
            "keepalive_timeout 0;"
        };
        // Over TLS: both versions, a shared session cache (session IDs,
        // TLS 1.2) and tickets (on by default) for resumption.
        let h2 = i.ctx.http2;
        let (ssl, ssl_conf) = match &tls {
            Some((cert, key)) => (
                if h2 { " ssl http2" } else { " ssl" },
                format!(
                    "    ssl_certificate {cert};\n    ssl_certificate_key {key};\n    ssl_protocols TLSv1.2 TLSv1.3;\n\
                     \x20   ssl_session_cache shared:httplab:10m;\n    ssl_session_timeout 1h;\n    ssl_session_tickets on;\n"
                ),
            ),
            None => ("", String::new()),
        };
        // h2c by prior knowledge: nginx 1.22's `listen … http2` without ssl
        // speaks only HTTP/2 on that port, so it gets a server of its own,
        // without sendfile: with it nginx 1.22 holds each h2c response's
        // DATA about 40 ms (h2load: 22 requests/s on one connection, 1 400/s
        // on 64), which would measure the stall, not the server.
        let h2c = if h2 && tls.is_none() {
            let port2 = free_port().map_err(|e| Unavailable::Other(format!("{e:#}")))?;
            p.h2c_port = Some(port2);
            format!(
                "  server {{\n    listen 127.0.0.1:{port2} http2 backlog=4096;\n    root {root};\n    sendfile off;\n  }}\n"
            )
        } else {
            String::new()
        };
        let conf = format!(
            "# written by httplab study\n\
             daemon off;\nmaster_process on;\n{user}worker_processes {workers};\n\
             worker_rlimit_nofile 65536;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
             events {{ worker_connections 16384; }}\n\
             http {{\n  access_log off;\n  sendfile {sf};\n  tcp_nopush off;\n  tcp_nodelay on;\n  {ka}\n\
             \x20 client_body_temp_path {dir}/client_body;\n  proxy_temp_path {dir}/proxy;\n\
             \x20 fastcgi_temp_path {dir}/fastcgi;\n  uwsgi_temp_path {dir}/uwsgi;\n  scgi_temp_path {dir}/scgi;\n\
             \x20 types {{ text/html html; text/plain txt; image/gif gif; image/jpeg jpg; }}\n\
             \x20 default_type application/octet-stream;\n\
             \x20 server {{\n    listen 127.0.0.1:{port}{ssl} backlog=4096;\n    root {root};\n{ssl_conf}  }}\n{h2c}{extra}}}\n",
            extra = indent(&sv.extra_config, "  "),
            sf = if sendfile { "on" } else { "off" },
        );
        p.files.push(("nginx.conf".into(), conf));
        p.argv = vec![
            bin,
            "-p".into(),
            format!("{dir}/"),
            "-c".into(),
            format!("{dir}/nginx.conf"),
            "-e".into(),
            format!("{dir}/error.log"),
        ];
        Ok(())
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err("the study's nginx has no QUIC (Debian's nginx 1.22 is built without the HTTP/3 module, which came with 1.25)".into())
    }

    fn version_flag(&self) -> &'static str {
        "-v"
    }
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::testing::{file, plan_of};

    #[test]
    fn nginx_speaks_h2_by_alpn_and_h2c_on_a_port_of_its_own() {
        let Some(p) = plan_of("kind = \"nginx\"", true, true) else {
            return;
        };
        let conf = file(&p, "nginx.conf");
        assert!(
            conf.contains("listen 127.0.0.1:8443 ssl http2 backlog"),
            "{conf}"
        );
        assert_eq!(p.h2c_port, None);
        let Some(p) = plan_of("kind = \"nginx\"", false, true) else {
            return;
        };
        let conf = file(&p, "nginx.conf");
        let h2c = p.h2c_port.expect("a port for h2c");
        assert_ne!(h2c, 8443);
        assert!(conf.contains("listen 127.0.0.1:8443 backlog"), "{conf}");
        assert!(
            conf.contains(&format!(
                "listen 127.0.0.1:{h2c} http2 backlog=4096;\n    root /srv/root;\n    sendfile off;"
            )),
            "{conf}"
        );
        // A study without h2 workloads: the configuration as before.
        let Some(p) = plan_of("kind = \"nginx\"", true, false) else {
            return;
        };
        assert!(!file(&p, "nginx.conf").contains("http2"));
    }

    #[test]
    fn workers_keep_alive_sendfile_and_extra_config_reach_nginx_conf() {
        let Some(p) = plan_of(
            "kind = \"nginx\"\nworkers = 3\nkeep_alive = false\nsendfile = false\nextra_config = \"gzip on;\"",
            false,
            false,
        ) else {
            return;
        };
        let conf = file(&p, "nginx.conf");
        for want in [
            "daemon off;\nmaster_process on;\n",
            "worker_processes 3;\n",
            "pid /srv/work/nginx.pid;\nerror_log /srv/work/error.log warn;\n",
            "  sendfile off;\n",
            "  keepalive_timeout 0;\n",
            "    listen 127.0.0.1:8443 backlog=4096;\n    root /srv/root;\n",
            "  gzip on;\n}\n",
        ] {
            assert!(conf.contains(want), "{want:?} in\n{conf}");
        }
        assert!(!conf.contains("ssl"), "{conf}");
        assert!(p.argv.ends_with(&[
            "-p".to_string(),
            "/srv/work/".into(),
            "-c".into(),
            "/srv/work/nginx.conf".into(),
            "-e".into(),
            "/srv/work/error.log".into()
        ]));
        assert_eq!(p.error_log.as_deref(), Some("error.log"));
    }
}
