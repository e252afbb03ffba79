//! Packet loss on the loopback interface for a workload's runs
//! (`loss_pct`), added just before each load run and removed as soon as it
//! ends by the guard's drop — so also when the run fails, panics or is
//! stopped by Ctrl-C (the study's signal handler ends the run, it does not
//! kill the process). Should the study die while the loss is on (a second
//! Ctrl-C, a signal), a watcher it started with the loss — a shell in its
//! own process group, reading a pipe from the study — sees the pipe close
//! and removes it.
//!
//! Two ways, tried in this order:
//! - **nftables** (`nft`): a table of the study's own (`inet
//!   httplab_loss_PID`) whose input chain drops P % of the TCP and UDP
//!   packets arriving on `lo` to and from the measured server's port
//!   (`numgen random`), so the rest of the machine's loopback traffic is
//!   untouched. On input, not output: a packet dropped on output fails the
//!   sender's `sendmsg` with EPERM, which no real network does, and a QUIC
//!   server (quic-go, in Caddy) then drops the whole connection;
//! - **netem** (`tc qdisc add dev lo root netem loss P%`), which drops P % of
//!   every packet on `lo`; only the qdisc the study added is ever deleted: if
//!   `lo` already has a root qdisc, adding fails and the workload is skipped.
//!
//! Both need root; without either program (or with a kernel that has
//! neither nf_tables nor netem) the workload is skipped, its rows saying why.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Where `tc` is looked for.
const TC_PATHS: &[&str] = &["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"];

/// Where `nft` is looked for.
const NFT_PATHS: &[&str] = &["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft", "/bin/nft"];

/// The interface the loss goes on: loopback only.
const DEV: &str = "lo";

/// How the study drops packets.
#[derive(Debug, Clone)]
pub enum Injector {
    /// nftables, scoped to the measured server's port.
    Nft(Nft),
    /// netem on every packet of `lo`.
    Netem(Tc),
}

impl Injector {
    /// The first way that works here: nftables, else netem. Err: why
    /// neither, in words.
    pub fn usable() -> Result<Injector, String> {
        if !httplab_sys::process::is_root() {
            return Err("injecting packet loss needs root (nftables or tc netem on lo)".into());
        }
        let nft = Nft::usable();
        let nft_err = match nft {
            Ok(n) => return Ok(Injector::Nft(n)),
            Err(e) => e,
        };
        Tc::usable()
            .map(Injector::Netem)
            .map_err(|tc_err| format!("{nft_err}; {tc_err}"))
    }

    /// Drops `pct` % of the packets to and from `port` (nftables) or of
    /// every packet on `lo` (netem) until the guard is dropped.
    pub fn loss(&self, pct: f64, port: u16) -> Result<Loss, String> {
        match self {
            Injector::Nft(n) => n.loss(pct, port),
            Injector::Netem(t) => t.loss(pct),
        }
    }

    /// How (recorded with every run; [`httplab_model::LossMethod::describe`]
    /// says it in words).
    pub fn method(&self) -> httplab_model::LossMethod {
        match self {
            Injector::Nft(_) => httplab_model::LossMethod::Nftables,
            Injector::Netem(_) => httplab_model::LossMethod::Netem,
        }
    }
}

/// The `nft` program and the study's table name.
#[derive(Debug, Clone)]
pub struct Nft {
    path: PathBuf,
    table: String,
}

impl Nft {
    /// `nft` when it can add the study's table with a random-drop rule
    /// (added and deleted once). Err: why not, in words.
    pub fn usable() -> Result<Nft, String> {
        let Some(path) = NFT_PATHS.iter().map(PathBuf::from).find(|p| p.is_file()) else {
            return Err("nft is not installed (Debian package: nftables)".into());
        };
        let nft = Nft {
            path,
            table: format!("httplab_loss_{}", std::process::id()),
        };
        nft.loss(0.0, 9).map(drop)?;
        Ok(nft)
    }

    /// The ruleset: drop `pct` % of the TCP and UDP packets arriving on
    /// `lo` to or from `port` (each packet meets one of the two rules: a
    /// client's port is never the server's). The input hook: the sender
    /// sees its packet sent, as on a lossy network.
    fn ruleset(&self, pct: f64, port: u16) -> String {
        // numgen draws 0..1_000_000: a resolution of 0.0001 %.
        let n = (pct * 10_000.0).round().clamp(0.0, 1_000_000.0) as u64;
        let rule = |dir: &str| {
            format!(
                "    iifname \"{DEV}\" meta l4proto {{ tcp, udp }} th {dir} {port} numgen random mod 1000000 < {n} drop\n"
            )
        };
        format!(
            "table inet {} {{\n  chain loss {{\n    type filter hook input priority 0; policy accept;\n{}{}  }}\n}}\n",
            self.table,
            rule("dport"),
            rule("sport")
        )
    }

    fn loss(&self, pct: f64, port: u16) -> Result<Loss, String> {
        run_with_input(&self.path, &["-f", "-"], &self.ruleset(pct, port))?;
        let undo = vec![
            "delete".to_string(),
            "table".to_string(),
            "inet".to_string(),
            self.table.clone(),
        ];
        Loss::guard(&self.path, undo)
    }
}

/// The `tc` program the study may use.
#[derive(Debug, Clone)]
pub struct Tc {
    path: PathBuf,
}

impl Tc {
    /// `tc` when the study can set a qdisc on `lo`: the program installed,
    /// and netem accepted (a loss of 0 % added and removed). Err: why not.
    pub fn usable() -> Result<Tc, String> {
        let Some(path) = TC_PATHS.iter().map(PathBuf::from).find(|p| p.is_file()) else {
            return Err("tc is not installed (Debian package: iproute2)".into());
        };
        let tc = Tc { path };
        tc.loss(0.0).map(drop).map_err(|e| {
            if e.contains("qdisc kind is unknown") {
                format!("{e} (this kernel has no netem: module sch_netem)")
            } else {
                e
            }
        })?;
        Ok(tc)
    }

    /// Adds `pct` % loss on `lo`; the returned guard removes it when dropped.
    pub fn loss(&self, pct: f64) -> Result<Loss, String> {
        let p = format!("{pct}%");
        run(
            &self.path,
            &["qdisc", "add", "dev", DEV, "root", "netem", "loss", &p],
        )?;
        let undo = ["qdisc", "del", "dev", DEV, "root", "netem"];
        Loss::guard(&self.path, undo.iter().map(|s| s.to_string()).collect())
    }
}

fn run(program: &Path, args: &[&str]) -> Result<(), String> {
    run_with_input(program, args, "")
}

/// Runs `program args`, writing `input` to its stdin; Err with its stderr.
fn run_with_input(program: &Path, args: &[&str], input: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running {}: {e}", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that does not read its input closes the pipe: not an error here.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("running {}: {e}", program.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let name = program
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Err(format!(
        "`{name} {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Packet loss in force until dropped.
#[derive(Debug)]
pub struct Loss {
    /// The program that removes it, and its arguments.
    program: PathBuf,
    undo: Vec<String>,
    /// Removes the loss if the study dies first (see the module's text).
    watcher: Option<Child>,
}

impl Loss {
    /// The guard of a loss just added: from here it is removed however
    /// this ends.
    fn guard(program: &Path, undo: Vec<String>) -> Result<Loss, String> {
        let mut loss = Loss {
            program: program.to_path_buf(),
            undo,
            watcher: None,
        };
        loss.watcher = Some(loss.watcher()?);
        Ok(loss)
    }

    /// The watcher: `sh` waiting for end of file on its stdin (the study's
    /// end), then running the undo command. In its own process group, so
    /// the terminal's Ctrl-C does not end it first.
    fn watcher(&self) -> Result<Child, String> {
        Command::new("/bin/sh")
            .args(["-c", "read x; exec \"$0\" \"$@\""])
            .arg(&self.program)
            .args(&self.undo)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting the packet-loss watcher (/bin/sh): {e}"))
    }
}

impl Drop for Loss {
    fn drop(&mut self) {
        // The watcher (ours, by its PID) ends first, so that it cannot
        // remove a loss a later run adds.
        if let Some(mut w) = self.watcher.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        let args: Vec<&str> = self.undo.iter().map(String::as_str).collect();
        if let Err(e) = run(&self.program, &args) {
            let name = self.program.display();
            eprintln!(
                "httplab study: removing the packet loss failed: {e}; remove it with `{name} {}`",
                self.undo.join(" ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in `tc` that logs its arguments and fails an `add` when
    /// told to, so the guard is tested without touching the interface.
    fn fake(dir: &std::path::Path, fail_add: bool) -> (Tc, PathBuf) {
        let log = dir.join("calls");
        let fail = if fail_add {
            "case \"$2\" in add) echo 'Exclusivity flag on' >&2; exit 2;; esac\n"
        } else {
            ""
        };
        let body = format!("echo \"$@\" >> '{}'\n{fail}", log.display());
        let script = stand_in(dir, "tc", &body, &log);
        (Tc { path: script }, log)
    }

    /// Writes the shell script `name` in `dir` and runs it once, until it
    /// runs, then deletes `log` (that call's trace): a process another test
    /// forks while the script is open for writing keeps that descriptor
    /// until it execs, and running the script meanwhile fails with ETXTBSY.
    fn stand_in(dir: &std::path::Path, name: &str, body: &str, log: &std::path::Path) -> PathBuf {
        let script = dir.join(name);
        std::fs::write(&script, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        for _ in 0..1000 {
            match std::process::Command::new(&script).status() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => std::thread::yield_now(),
                r => {
                    r.unwrap();
                    break;
                }
            }
        }
        let _ = std::fs::remove_file(log);
        script
    }

    fn calls(log: &std::path::Path) -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_loss_is_added_on_lo_and_removed_on_drop_also_by_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let (tc, log) = fake(dir.path(), false);
        {
            let _loss = tc.loss(1.0).unwrap();
            assert_eq!(calls(&log), ["qdisc add dev lo root netem loss 1%"]);
        }
        assert_eq!(calls(&log)[1], "qdisc del dev lo root netem");
        let r = std::panic::catch_unwind(|| {
            let _loss = tc.loss(2.5).unwrap();
            panic!("a run that fails");
        });
        assert!(r.is_err());
        assert_eq!(
            calls(&log)[2..],
            [
                "qdisc add dev lo root netem loss 2.5%",
                "qdisc del dev lo root netem"
            ]
        );
    }

    #[test]
    fn the_watcher_removes_the_loss_when_the_study_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (tc, log) = fake(dir.path(), false);
        let mut loss = tc.loss(1.0).unwrap();
        // The study's end, as the watcher sees it: its stdin closes.
        let mut w = loss.watcher.take().expect("a watcher");
        drop(w.stdin.take());
        assert!(w.wait().unwrap().success());
        assert_eq!(
            calls(&log),
            [
                "qdisc add dev lo root netem loss 1%",
                "qdisc del dev lo root netem"
            ]
        );
    }

    /// A stand-in `nft` that logs its arguments and its stdin.
    fn fake_nft(dir: &std::path::Path) -> (Nft, PathBuf) {
        let log = dir.join("nft-calls");
        let body = format!(
            "echo \"$@\" >> '{0}'\nif [ \"$1\" = -f ]; then cat >> '{0}'; fi\n",
            log.display()
        );
        let script = stand_in(dir, "nft", &body, &log);
        let nft = Nft {
            path: script,
            table: "httplab_loss_test".into(),
        };
        (nft, log)
    }

    #[test]
    fn nftables_drops_only_the_servers_port_on_lo_and_the_table_goes_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let (nft, log) = fake_nft(dir.path());
        {
            let _loss = Injector::Nft(nft.clone()).loss(1.5, 8443).unwrap();
            let c = calls(&log);
            assert_eq!(c[0], "-f -");
            assert_eq!(c[1], "table inet httplab_loss_test {");
            let rules: Vec<&String> = c.iter().filter(|l| l.contains(" drop")).collect();
            assert_eq!(rules.len(), 2, "{c:?}");
            for (rule, dir) in rules.iter().zip(["dport", "sport"]) {
                assert_eq!(
                    rule.trim(),
                    format!("iifname \"lo\" meta l4proto {{ tcp, udp }} th {dir} 8443 numgen random mod 1000000 < 15000 drop")
                );
            }
            assert!(!c.iter().any(|l| l.starts_with("delete")), "{c:?}");
        }
        assert_eq!(
            calls(&log).last().map(String::as_str),
            Some("delete table inet httplab_loss_test")
        );
    }

    #[test]
    fn loss_percentages_become_draws_out_of_a_million() {
        let nft = Nft {
            path: PathBuf::from("/bin/false"),
            table: "t".into(),
        };
        for (pct, n) in [(0.0, 0), (1.0, 10_000), (0.05, 500), (50.0, 500_000)] {
            let r = nft.ruleset(pct, 80);
            assert!(r.contains(&format!("mod 1000000 < {n} drop")), "{pct}: {r}");
        }
    }

    #[test]
    fn a_refused_add_deletes_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (tc, log) = fake(dir.path(), true);
        let e = tc.loss(1.0).unwrap_err();
        assert!(e.contains("Exclusivity flag on"), "{e}");
        assert_eq!(calls(&log), ["qdisc add dev lo root netem loss 1%"]);
    }
}
