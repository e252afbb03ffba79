//! `httplab serve` itself, started as a separate process like any peer,
//! with the study's model, workers, keep-alive and pipelining, and HTTP/2
//! (`--http2 on`: h2c by prior knowledge, h2 by ALPN over TLS) when a
//! workload of the study speaks it: every model serves it (a blocking one
//! answers a connection's streams in turn); and HTTP/3 (`--http3`) in a
//! study over TLS with an h3 workload, served by quinn's engine on its own
//! thread beside whichever model serves TCP.

use std::path::Path;

use super::kind::{Inputs, Peer, PeerBinary};
use super::launch::{LaunchPlan, Unavailable};
use crate::spec::{Mode, ServerInstance};

/// `httplab serve` (`kind = "httplab"`).
pub struct Httplab;

impl Peer for Httplab {
    fn binary(&self) -> Option<PeerBinary> {
        None
    }

    /// `httplab serve` with the study's model, workers and keep-alive.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable> {
        let Inputs {
            inst,
            sv,
            ctx,
            port,
            root,
            keep_alive,
            tls,
            ..
        } = i;
        let exe = ctx.httplab_exe.as_ref().ok_or_else(|| {
            Unavailable::Other(
                "httplab binary not found: this program is not named httplab and no httplab is beside it; pass --httplab-bin PATH or set HTTPLAB_BIN".into(),
            )
        })?;
        let model = sv.model.unwrap_or_default();
        let mut argv = vec![
            exe.to_string_lossy().into_owned(),
            "serve".into(),
            "--root".into(),
            root.clone(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--model".into(),
            model.word().into(),
            "--quiet".into(),
        ];
        if let Some(w) = inst.workers {
            argv.push(model.workers_flag().into());
            argv.push(w.to_string());
        }
        let (ka, pipe) = match sv.mode {
            Some(Mode::Close) => ("off", "off"),
            Some(Mode::KeepAlive) => ("on", "off"),
            Some(Mode::Pipeline) => ("on", "on"),
            None if !keep_alive => ("off", "off"),
            None => ("on", "on"),
        };
        argv.extend([
            "--keep-alive".to_string(),
            ka.into(),
            "--pipelining".into(),
            pipe.into(),
        ]);
        if ctx.http2 {
            argv.extend(["--http2".to_string(), "on".into()]);
        }
        if ctx.http3 && tls.is_some() {
            argv.push("--http3".into());
        }
        if let Some((cert, key)) = &tls {
            argv.extend([
                "--tls-cert".to_string(),
                cert.clone(),
                "--tls-key".into(),
                key.clone(),
            ]);
        }
        argv.extend(sv.args.iter().cloned());
        p.argv = argv;
        Ok(())
    }

    fn error_log(&self) -> Option<&'static str> {
        None
    }

    /// HTTP/2 on every model (`--http2 on` is added to its command line).
    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    /// HTTP/3 with every model (`--http3` is added to its command line in
    /// a study over TLS): served by quinn's engine on its own thread beside
    /// the model, so over HTTP/3 the models differ only in what serves TCP.
    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    /// This build's version, when the httplab binary was found.
    fn version(&self, _inst: &ServerInstance, httplab_exe: Option<&Path>) -> Option<String> {
        httplab_exe.map(|_| format!("httplab {}", env!("CARGO_PKG_VERSION")))
    }
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::plan;
    use crate::execute::peers::testing::{ctx, inst, plan_of};

    #[test]
    fn serve_gets_the_model_workers_mode_and_tls() {
        let p = plan_of(
            "kind = \"httplab\"\nmodel = \"threads\"\nworkers = 4\nmode = \"keep-alive\"\nargs = [\"--x\"]",
            true,
            false,
        )
        .expect("httplab needs no installed binary");
        let want: Vec<String> = [
            "/bin/httplab",
            "serve",
            "--root",
            "/srv/root",
            "--listen",
            "127.0.0.1:8443",
            "--model",
            "threads",
            "--quiet",
            "--threads",
            "4",
            "--keep-alive",
            "on",
            "--pipelining",
            "off",
            "--http3",
            "--tls-cert",
            "/srv/tls/cert.pem",
            "--tls-key",
            "/srv/tls/key.pem",
            "--x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(p.argv, want);
        assert_eq!(p.error_log, None);
        assert!(p.files.is_empty());
        let p = plan_of("kind = \"httplab\"\nkeep_alive = false", false, false)
            .expect("httplab needs no installed binary");
        assert!(p.argv.ends_with(&[
            "--keep-alive".to_string(),
            "off".into(),
            "--pipelining".into(),
            "off".into()
        ]));
        // A study with an HTTP/2 workload: every model gets --http2 on.
        for model in ["event", "fork"] {
            let toml = format!("kind = \"httplab\"\nmodel = \"{model}\"");
            let p = plan_of(&toml, true, true).expect("a plan");
            assert!(
                p.argv.windows(2).any(|w| w == ["--http2", "on"]),
                "{:?}",
                p.argv
            );
            let p = plan_of(&toml, true, false).expect("a plan");
            assert!(!p.argv.iter().any(|a| a == "--http2"), "{:?}", p.argv);
            // Over TLS with an h3 workload (the testing context's `http3`
            // follows TLS): --http3; in cleartext never.
            assert!(p.argv.iter().any(|a| a == "--http3"), "{:?}", p.argv);
            let p = plan_of(&toml, false, false).expect("a plan");
            assert!(!p.argv.iter().any(|a| a == "--http3"), "{:?}", p.argv);
        }
        let mut c = ctx(false, false);
        c.httplab_exe = None;
        let why = plan(&inst("kind = \"httplab\""), &c, 1).expect_err("no binary");
        assert!(
            why.reason().contains("httplab binary not found"),
            "{}",
            why.reason()
        );
    }
}
