//! Checks before a study runs, for the command line: every `command`
//! server is started once alone, on the study's corpus, and stopped — one
//! that is not found, exits or never answers (within its `ready_timeout_s`)
//! stops the study at once with the reason and its stderr's last lines,
//! instead of minutes of rounds without it; and the peers that cannot run
//! here are listed (all of them missing stops the study too: nothing would
//! be compared).

use anyhow::{anyhow, bail, Context as _, Result};

use crate::execute::{corpus, servers, tls};
use crate::spec::{self, StudyFile};

/// Where the check starts its servers.
pub struct Checks {
    _dir: tempfile::TempDir,
    ctx: servers::Context,
}

impl Checks {
    /// A scratch directory with the study's corpus (and certificate, over TLS).
    pub fn new(
        study: &StudyFile,
        tls: bool,
        httplab_exe: Option<std::path::PathBuf>,
    ) -> Result<Checks> {
        let dir = tempfile::Builder::new()
            .prefix("httplab-preflight-")
            .tempdir()
            .context("creating a temporary directory")?;
        let root = dir.path().join("root");
        let idx = corpus::generate(&study.corpus, &root).context("generating the corpus")?;
        let cert = if tls || study.tls {
            Some(tls::generate(&dir.path().join("tls"))?)
        } else {
            None
        };
        let ctx = servers::Context {
            root,
            work: dir.path().join("work"),
            httplab_exe,
            probe_path: idx.probe_path(),
            tls: cert,
            http2: false,
            http3: false,
        };
        Ok(Checks { _dir: dir, ctx })
    }

    /// The servers that cannot run here, with the reason (`not installed
    /// (Debian package: nginx)`, `command 'x' not found`).
    pub fn unavailable(&self, study: &StudyFile) -> Vec<(String, String)> {
        spec::expand_servers(study)
            .iter()
            .filter_map(|inst| {
                servers::plan(inst, &self.ctx, 0)
                    .err()
                    .map(|u| (inst.name.clone(), u.reason()))
            })
            .collect()
    }

    /// Starts every `command` server alone and stops it; the first that
    /// cannot start is the error.
    pub fn commands_start(&self, study: &StudyFile) -> Result<()> {
        for inst in spec::expand_servers(study) {
            if !servers::checked_by_starting(&inst) {
                continue;
            }
            let port = servers::free_port()?;
            let plan = servers::plan(&inst, &self.ctx, port).map_err(|u| {
                anyhow!(
                    "server '{}': {} (its `command` runs in the directory httplab study was started from, \
                     a bare name is looked up on $PATH)",
                    inst.name,
                    u.reason()
                )
            })?;
            let work = self.ctx.work.join(format!("check-{port}"));
            let mut r = servers::start(&plan, &work, &[], Vec::new()).with_context(|| {
                format!(
                    "server '{}' ({}) did not start, so the study was not run",
                    inst.name,
                    plan.argv.join(" ")
                )
            })?;
            r.stop();
        }
        Ok(())
    }
}

/// The peers (servers not of `kind = "command"`, which
/// [`Checks::commands_start`] checks) that cannot run, as one line each; an error when every
/// server but those of `kind = "command"` is missing while the study has a
/// baseline (nothing would be compared).
pub fn check_peers(study: &StudyFile, missing: &[(String, String)]) -> Result<Vec<String>> {
    let peers: Vec<String> = spec::expand_servers(study)
        .into_iter()
        .filter(|i| !servers::checked_by_starting(i))
        .map(|i| i.name)
        .collect();
    let lines: Vec<String> = missing
        .iter()
        .filter(|(n, _)| peers.contains(n))
        .map(|(n, why)| format!("{n}: {why}"))
        .collect();
    let all_missing =
        !peers.is_empty() && peers.iter().all(|p| missing.iter().any(|(n, _)| n == p));
    if all_missing && study.compare.baseline.is_some() {
        bail!("no peer to compare with can run here: {}", lines.join("; "));
    }
    Ok(lines)
}
