//! Headless Chromium for the tests that open a report: the one way to find
//! it, to run it bounded in time (killed by its PID when over), and to read
//! from its log the page's console messages and every file it loaded.
//!
//! Chromium missing is a missing prerequisite like any other: the caller
//! skips with [`crate::skip`] (a failure under CI). `HTTPLAB_CHROMIUM`
//! names the binary to use instead of the one found.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The Chromium binary: `HTTPLAB_CHROMIUM`, `/usr/bin/chromium`, or the
/// first of `chromium`, `chromium-browser`, `google-chrome`,
/// `google-chrome-stable` on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HTTPLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let fixed = Path::new("/usr/bin/chromium");
    if fixed.is_file() {
        return Some(fixed.to_path_buf());
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// What a headless run printed.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Standard output (the DOM with `--dump-dom`).
    pub stdout: String,
    /// Standard error: Chromium's log.
    pub stderr: String,
}

impl Output {
    /// The page's console messages (`…:CONSOLE(12)] "msg", source: …`) and
    /// uncaught errors.
    pub fn console(&self) -> Vec<String> {
        self.stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
            .map(String::from)
            .collect()
    }

    /// Every `file://` URL Chromium started loading, the page first (its
    /// file loader's log line, switched on by [`run`]).
    pub fn loaded_files(&self) -> Vec<String> {
        const MARK: &str = "FileURLLoader::Start: ";
        self.stderr
            .lines()
            .filter_map(|l| l.find(MARK).map(|i| l[i + MARK.len()..].trim().to_string()))
            .collect()
    }
}

/// Runs `bin` headless on `url` with a fresh profile in `profile` and the
/// `extra` arguments (`--dump-dom`, `--screenshot=…`), logging to standard
/// error with the file loader's lines on. Killed by its PID after `limit`:
/// then an error saying so, with what it logged.
pub fn run(
    bin: &Path,
    profile: &Path,
    extra: &[String],
    url: &str,
    limit: Duration,
) -> Result<Output, String> {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--vmodule=file_url_loader_factory=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let pid = child.id();
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let timed_out = rx.recv_timeout(limit).is_err();
    if timed_out {
        // Not reaped yet (the waiter still waits), so the PID is still Chromium's.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let _ = waiter.join();
    let output = Output {
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    if timed_out {
        return Err(format!(
            "chromium (PID {pid}) did not finish within {} s and was killed; its log:\n{}",
            limit.as_secs(),
            output.stderr
        ));
    }
    Ok(output)
}

/// Width and height of a PNG file's bytes (None: not a PNG).
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_and_loaded_files_are_read_from_the_log() {
        let o = Output {
            stdout: String::new(),
            stderr: "[1:2:INFO:CONSOLE(3)] \"boom\", source: file:///a.html (3)\n\
                     [1:2:VERBOSE1:content/browser/loader/file_url_loader_factory.cc:477] FileURLLoader::Start: file:///a.html\n\
                     [1:2:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n\
                     [1:2:VERBOSE1:content/browser/loader/file_url_loader_factory.cc:477] FileURLLoader::Start: file:///b.png\n"
                .into(),
        };
        assert_eq!(o.console().len(), 1);
        assert_eq!(o.loaded_files(), ["file:///a.html", "file:///b.png"]);
    }

    #[test]
    fn png_sizes() {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend([0, 0, 4, 176, 0, 0, 3, 132]);
        assert_eq!(png_size(&b), Some((1200, 900)));
        assert_eq!(png_size(b"GIF89a"), None);
    }
}
