//! "My server against nginx" on the command line: `--init FILE` (write the
//! commented study file), `--mine 'CMD {port} {root}'` (the same study, run
//! at once), and the checks before a run ([`preflight`]).

use std::io::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::args::Cli;
use crate::execute::preflight::{check_peers, Checks};
use crate::spec::{ServerKind, StudyFile};
use crate::studies::mine::{self, Mine};

/// `--init FILE`: writes the template (with `--mine`'s command, `--against`
/// and `--name` when given) to a new file; an existing file is never
/// overwritten.
pub fn init(cli: &Cli, path: &Path) -> Result<()> {
    if cli.study.is_some() {
        bail!(
            "--init writes a new study file; it takes no study name or file (got '{}')",
            cli.study.as_deref().unwrap_or("")
        );
    }
    let m = Mine::new(cli.mine.as_deref(), &cli.against, cli.name.as_deref())?;
    let text = mine::template(&m)?;
    // Never write a file that would not parse.
    crate::spec::parse(&text, &path.display().to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                anyhow::anyhow!(
                    "{} already exists: --init never overwrites a file (choose another name or remove it)",
                    path.display()
                )
            } else {
                anyhow::anyhow!("creating {}: {e}", path.display())
            }
        })?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let p = path.display();
    println!("Wrote {p}: {} against {}.", m.name, m.peers.join(", "));
    if cli.mine.is_none() {
        println!("Next: set `command` in it to your server's command line ({{port}} and {{root}} are filled in), then");
    } else {
        println!("Next:");
    }
    println!("  httplab study {p} --dry-run   # check it");
    println!("  httplab study {p}             # run it (add --quick for a first look)");
    Ok(())
}

/// `--mine CMD`: the study of the one-command form.
pub fn study(cli: &Cli, cmd: &str) -> Result<StudyFile> {
    if let Some(s) = &cli.study {
        bail!("--mine builds its own study; it takes no study name or file (got '{s}'): to edit the study, write it with `httplab study --init mine.toml --mine '…'`");
    }
    mine::study(&Mine::new(Some(cmd), &cli.against, cli.name.as_deref())?)
}

/// Refuses `--against` and `--name` outside `--mine` and `--init`.
pub fn check_flags(cli: &Cli) -> Result<()> {
    if cli.mine.is_none() && cli.init.is_none() {
        if !cli.against.is_empty() {
            bail!("--against goes with --mine or --init (the peers your server is compared with); a study file names its servers itself");
        }
        if cli.name.is_some() {
            bail!("--name goes with --mine or --init (the report name of your server)");
        }
    }
    Ok(())
}

/// Before a run of a study with `command` servers: each must start alone
/// (else the error, with its stderr's last lines), and the peers that
/// cannot run are printed (every peer missing from a study with a baseline
/// is an error: nothing would be compared).
pub fn preflight(study: &StudyFile, cli: &Cli) -> Result<()> {
    let has_command = study.servers.iter().any(|s| s.kind == ServerKind::Command);
    if !has_command {
        return Ok(());
    }
    let exe = cli
        .httplab_bin
        .clone()
        .or_else(crate::execute::servers::find_httplab_exe);
    let checks = Checks::new(study, cli.tls, exe)?;
    eprintln!("httplab study: checking that the command server(s) start …");
    checks.commands_start(study)?;
    let missing = checks.unavailable(study);
    for line in check_peers(study, &missing)? {
        eprintln!("httplab study: {line} (its rows say so in the report)");
    }
    Ok(())
}
