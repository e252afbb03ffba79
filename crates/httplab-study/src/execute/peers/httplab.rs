//! `httplab serve` itself, started as a separate process like any peer,
//! with the study's model, workers, keep-alive and pipelining.

use std::path::Path;

use super::{Inputs, LaunchPlan, Peer, PeerBinary, Unavailable};
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
                "httplab binary not found (run inside `httplab study`, or set HTTPLAB_BIN)".into(),
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

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err(
            "httplab serve speaks HTTP/1.1 only (its TLS offers ALPN http/1.1; no HTTP/2 framing)"
                .into(),
        )
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Err("httplab serve speaks HTTP/1.1 only (no QUIC listener, no HTTP/3 framing)".into())
    }

    /// This build's version, when the httplab binary was found.
    fn version(&self, _inst: &ServerInstance, httplab_exe: Option<&Path>) -> Option<String> {
        httplab_exe.map(|_| format!("httplab {}", env!("CARGO_PKG_VERSION")))
    }
}
