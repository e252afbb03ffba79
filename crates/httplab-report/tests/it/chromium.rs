//! Headless Chromium opens the report's index.html: no console errors, the
//! DOM has the figures and tables, and the screenshot has a sane size.
//!
//! Chromium missing: the test fails when CI=true and is skipped (with a
//! message) otherwise. HTTPLAB_CHROMIUM overrides the binary;
//! HTTPLAB_SCREENSHOT_DIR keeps a copy of the screenshot.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HTTPLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    let fixed = Path::new("/usr/bin/chromium");
    if fixed.is_file() {
        return Some(fixed.to_path_buf());
    }
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

/// Runs chromium headless on `url` with `extra` arguments; returns (stdout, stderr).
fn chromium(bin: &Path, profile: &Path, extra: &[String], url: &str) -> (String, String) {
    let mut cmd = Command::new(bin);
    cmd.args([
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
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait().expect("wait chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 120 s");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    (
        t_out.join().unwrap_or_default(),
        t_err.join().unwrap_or_default(),
    )
}

/// Console messages in chromium's log ("...:CONSOLE(12)] \"msg\", source: ...").
fn console_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(String::from)
        .collect()
}

fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Some((w, h))
}

#[test]
fn chromium_opens_report_without_console_errors() {
    let Some(bin) = find_chromium() else {
        return httplab_skip::skip(
            "chromium_opens_report_without_console_errors: chromium not found (set HTTPLAB_CHROMIUM or install the `chromium` package)",
        );
    };
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("report");
    let docs = common::fixture_docs();
    let files = httplab_report::render_report(&docs, &out).expect("render");
    let url = format!("file://{}", files.index.display());

    // The detector works: a page that logs an error is caught.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><script>console.error('deliberate-error')</script></body></html>",
    )
    .expect("write");
    let (_, err) = chromium(
        &bin,
        &dir.path().join("profile0"),
        &["--dump-dom".to_string()],
        &format!("file://{}", bad.display()),
    );
    assert!(
        console_lines(&err)
            .iter()
            .any(|l| l.contains("deliberate-error")),
        "console detection does not work with this chromium; stderr:\n{err}"
    );

    // The report: DOM complete, no console messages.
    let (dom, err) = chromium(
        &bin,
        &dir.path().join("profile1"),
        &["--dump-dom".to_string()],
        &url,
    );
    let console = console_lines(&err);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    assert!(dom.contains("Figure 1."), "DOM lacks figures");
    assert!(dom.matches("<svg").count() >= 7, "DOM lacks inline SVGs");
    assert!(dom.contains("<table"), "DOM lacks tables");

    // Screenshot of sane size.
    let shot = dir.path().join("shot.png");
    let (_, err) = chromium(
        &bin,
        &dir.path().join("profile2"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".to_string(),
            "--hide-scrollbars".to_string(),
        ],
        &url,
    );
    let console = console_lines(&err);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let bytes =
        std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}); stderr:\n{err}"));
    assert_eq!(
        png_size(&bytes),
        Some((1280, 2000)),
        "screenshot dimensions"
    );
    assert!(
        bytes.len() > 40_000,
        "screenshot is only {} bytes: blank page?",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("HTTPLAB_SCREENSHOT_DIR") {
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::copy(&shot, Path::new(&keep).join("report.png"));
    }
}
