//! Packet loss on the loopback interface for a workload's runs
//! (`loss_pct`): `tc qdisc add dev lo root netem loss P%` just before each
//! load run, deleted as soon as it ends by the guard's drop — so also when
//! the run fails, panics or is stopped by Ctrl-C (the study's signal handler
//! ends the run, it does not kill the process). Should the study die while
//! the loss is on (a second Ctrl-C, a signal), a watcher it started with the
//! loss — a shell in its own process group, reading a pipe from the study —
//! sees the pipe close and deletes the qdisc. Only the qdisc the study
//! added is ever deleted: if `lo` already has a root qdisc, adding fails and
//! the workload is skipped with that reason. Needs root and `tc` (iproute2);
//! without them the workload is skipped, its rows saying why.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// Where `tc` is looked for.
const TC_PATHS: &[&str] = &["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"];

/// The interface the loss goes on: loopback only.
const DEV: &str = "lo";

/// The `tc` program the study may use.
#[derive(Debug, Clone)]
pub struct Tc {
    path: PathBuf,
}

impl Tc {
    /// `tc` when the study can set a qdisc on `lo`: running as root, the
    /// program installed, and netem accepted (a loss of 0 % added and
    /// removed). Err: why not, in words.
    pub fn usable() -> Result<Tc, String> {
        if !httplab_sys::process::is_root() {
            return Err("injecting packet loss needs root (tc qdisc on lo)".into());
        }
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
        self.run(&["qdisc", "add", "dev", DEV, "root", "netem", "loss", &p])?;
        // From here the guard exists, so the loss is removed however this ends.
        let mut loss = Loss {
            tc: self.clone(),
            watcher: None,
        };
        loss.watcher = Some(self.watcher()?);
        Ok(loss)
    }

    /// The watcher: `sh` waiting for end of file on its stdin (the study's
    /// end), then deleting the qdisc. In its own process group, so the
    /// terminal's Ctrl-C does not end it first.
    fn watcher(&self) -> Result<Child, String> {
        Command::new("/bin/sh")
            .args(["-c", "read x; exec \"$0\" qdisc del dev lo root netem"])
            .arg(&self.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting the packet-loss watcher (/bin/sh): {e}"))
    }

    fn run(&self, args: &[&str]) -> Result<(), String> {
        let out = Command::new(&self.path)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running {}: {e}", self.path.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`tc {}` failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

/// Packet loss in force on `lo` until dropped.
#[derive(Debug)]
pub struct Loss {
    tc: Tc,
    /// Deletes the qdisc if the study dies first (see the module's text).
    watcher: Option<Child>,
}

impl Drop for Loss {
    fn drop(&mut self) {
        // The watcher (ours, by its PID) ends first, so that it cannot
        // delete a qdisc a later run adds.
        if let Some(mut w) = self.watcher.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        if let Err(e) = self.tc.run(&["qdisc", "del", "dev", DEV, "root", "netem"]) {
            eprintln!(
                "httplab study: removing the packet loss from lo failed: {e}; remove it with `tc qdisc del dev lo root`"
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
        let script = dir.join("tc");
        let fail = if fail_add {
            "case \"$2\" in add) echo 'Exclusivity flag on' >&2; exit 2;; esac\n"
        } else {
            ""
        };
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n{fail}", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A process another test forks while the script is open for writing
        // keeps that descriptor until it execs, and running the script
        // meanwhile fails with ETXTBSY: run it once, until it runs, then
        // forget that call.
        for _ in 0..1000 {
            match std::process::Command::new(&script).status() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => std::thread::yield_now(),
                r => {
                    r.unwrap();
                    break;
                }
            }
        }
        let _ = std::fs::remove_file(&log);
        (Tc { path: script }, log)
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

    #[test]
    fn a_refused_add_deletes_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (tc, log) = fake(dir.path(), true);
        let e = tc.loss(1.0).unwrap_err();
        assert!(e.contains("Exclusivity flag on"), "{e}");
        assert_eq!(calls(&log), ["qdisc add dev lo root netem loss 1%"]);
    }
}
