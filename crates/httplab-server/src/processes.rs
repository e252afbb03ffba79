//! `httplab serve --processes N`: N copies of the event model, each its own
//! process with its own SO_REUSEPORT listener on the one port, sharing
//! nothing — so that together they hold more connections than one process
//! may (RLIMIT_NOFILE is per process), and no lock, cache line or allocator
//! is shared between them.
//!
//! The parent execs this same program once per process (`serve … --processes
//! 1 --listen ADDR`, the port fixed first), rather than forking itself: a
//! fresh process has no threads, locks or TLS state to be unsafe about. It
//! reserves the port with a SO_REUSEPORT socket that never listens (so it
//! receives no connection), waits for every child's "serving" line, then
//! waits for SIGINT/SIGTERM and passes it on. Children die with the parent
//! (PR_SET_PDEATHSIG); when one exits on its own the parent stops the rest
//! and fails. TLS session tickets are per process: a ticket from one process
//! resumes only there (clients that land elsewhere make a full handshake).

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::sys;

/// Environment variable telling a child it is one of several processes: it
/// prints its "serving" line even with `--quiet` (the parent waits for it).
pub const CHILD_ENV: &str = "HTTPLAB_SERVE_PROCESS";

/// Whether this process is a child of `--processes`.
pub fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Runs `n` serving processes with the user's arguments (`raw`, without the
/// program name) until a termination signal. `ready` gets the bound address.
pub fn run(
    raw: &[OsString],
    listen: SocketAddr,
    n: usize,
    quiet: bool,
    ready: &mut dyn FnMut(SocketAddr),
) -> anyhow::Result<ExitCode> {
    let (reserve, addr) = reserve_port(listen)?;
    let exe = std::env::current_exe().context("cannot find this program to start its processes")?;
    sys::block_term_signals()?;
    let mut children: Vec<Child> = Vec::with_capacity(n);
    let mut said = String::new();
    for i in 0..n {
        let mut cmd = Command::new(&exe);
        cmd.arg("serve")
            .args(raw)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--processes")
            .arg("1")
            .env(CHILD_ENV, i.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        httplab_sys::process::set_server_child_setup(
            &mut cmd,
            Vec::new(),
            httplab_sys::cpu::CpuSet::new([]),
        );
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop_all(&mut children);
                bail!("cannot start serving process {i}: {e}");
            }
        };
        match first_line(&mut child) {
            Some(line) => said = line,
            None => {
                let status = child.wait().ok();
                stop_all(&mut children);
                bail!(
                    "serving process {i} ended before it served{} (its error is above)",
                    status.map_or(String::new(), |s| format!(" ({s})"))
                );
            }
        }
        children.push(child);
    }
    drop(reserve);
    if !quiet {
        println!("{}", parent_line(&said, n));
    }
    ready(addr);
    let code = supervise(&mut children, quiet);
    Ok(code)
}

/// The port every process binds: the one asked for, or (port 0) one the
/// kernel picks now, held by a socket with SO_REUSEPORT that never listens.
fn reserve_port(listen: SocketAddr) -> anyhow::Result<(socket2::Socket, SocketAddr)> {
    use socket2::{Domain, Socket, Type};
    if listen.port() != 0 {
        // A port some other program holds is "in use", not silently shared.
        let probe = Socket::new(Domain::for_address(listen), Type::STREAM, None)
            .context("cannot create a socket")?;
        probe
            .set_reuse_address(true)
            .context("cannot set SO_REUSEADDR")?;
        probe
            .bind(&listen.into())
            .with_context(|| format!("cannot listen on {listen}"))?;
    }
    let s = Socket::new(Domain::for_address(listen), Type::STREAM, None)
        .context("cannot create a socket")?;
    s.set_reuse_port(true)
        .context("cannot set SO_REUSEPORT (needed by --processes)")?;
    s.bind(&listen.into())
        .with_context(|| format!("cannot bind {listen}"))?;
    let addr = s
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .context("cannot read the bound address")?;
    Ok((s, addr))
}

/// The child's first stdout line (its "serving" line); None if it ended first.
fn first_line(child: &mut Child) -> Option<String> {
    let out = child.stdout.take()?;
    let mut r = BufReader::new(out);
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        // The rest of its stdout is dropped: a serving process prints nothing more there.
        Ok(_) => Some(line.trim_end().to_string()),
    }
}

/// "serving ROOT at URL (event model, 1 workers, epoll I/O)" of one child
/// becomes the parent's line with the count of processes.
fn parent_line(child: &str, n: usize) -> String {
    // The details start at the first " (" after the URL (which has no
    // spaces): the root before it and the details may hold parentheses too.
    let split = child.find("://").and_then(|u| {
        child[u..]
            .find(" (")
            .map(|i| (&child[..u + i], &child[u + i + 2..]))
    });
    match split {
        Some((head, tail)) => format!(
            "{head} ({n} processes, each: {})",
            tail.strip_suffix(')').unwrap_or(tail)
        ),
        None => format!("{child} ({n} processes)"),
    }
}

/// Waits for SIGINT/SIGTERM and passes it to every child, or stops them all
/// when one ends on its own. Returns the exit code.
fn supervise(children: &mut [Child], quiet: bool) -> ExitCode {
    loop {
        if let Some(sig) = sys::wait_for_signal(Duration::from_millis(200)) {
            for c in children.iter() {
                let _ = httplab_sys::process::signal(c.id() as i32, sig);
            }
            let mut failed = false;
            for c in children.iter_mut() {
                failed |= !c.wait().is_ok_and(|s| s.success());
            }
            if !quiet {
                eprintln!("httplab serve: {} processes stopped", children.len());
            }
            return if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
        for (i, c) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = c.try_wait() {
                eprintln!(
                    "httplab serve: serving process {i} (pid {}) ended on its own ({status}); stopping the others",
                    c.id()
                );
                stop_all(children);
                return ExitCode::FAILURE;
            }
        }
    }
}

/// Ends every child (SIGTERM, then waits).
fn stop_all(children: &mut [Child]) {
    for c in children.iter() {
        let _ = httplab_sys::process::signal(c.id() as i32, libc::SIGTERM);
    }
    for c in children.iter_mut() {
        let _ = c.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_line_counts_the_processes() {
        let child = "httplab serve: serving /srv at http://127.0.0.1:8080/ (event model, 1 workers, epoll I/O)";
        assert_eq!(
            parent_line(child, 6),
            "httplab serve: serving /srv at http://127.0.0.1:8080/ (6 processes, each: event model, 1 workers, epoll I/O)"
        );
        assert_eq!(parent_line("odd", 2), "odd (2 processes)");
        let child = "httplab serve: serving /srv (a) at http://127.0.0.1:8080/ (event model, large files: x (y))";
        assert_eq!(
            parent_line(child, 2),
            "httplab serve: serving /srv (a) at http://127.0.0.1:8080/ (2 processes, each: event model, large files: x (y))"
        );
    }

    #[test]
    fn a_reserved_port_can_be_bound_again_with_reuseport() {
        let (held, addr) = reserve_port("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(addr.port(), 0);
        let again =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        again.set_reuse_port(true).unwrap();
        again.bind(&addr.into()).unwrap();
        again.listen(16).unwrap();
        drop(held);
    }
}
