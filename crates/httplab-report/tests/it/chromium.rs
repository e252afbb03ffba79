//! Headless Chromium opens the report's index.html: no console errors, no
//! file loaded but the page, the DOM has the figures (the page's picture,
//! Figure 1, first) and tables, and the screenshot has a sane size.
//!
//! Chromium missing: the test fails when CI=true and is skipped (with a
//! message) otherwise (`httplab_skip::chromium`). HTTPLAB_SCREENSHOT_DIR
//! keeps a copy of the screenshot.

use crate::common;

use httplab_skip::chromium;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn chromium_opens_report_without_console_errors() {
    let Some(bin) = chromium::find() else {
        return httplab_skip::skip(
            "chromium_opens_report_without_console_errors: chromium not found (set HTTPLAB_CHROMIUM or install the `chromium` package)",
        );
    };
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("report");
    let docs = common::fixture_docs();
    let files = httplab_report::render_report(&docs, &out).expect("render");
    let url = format!("file://{}", files.index.display());

    // The detector works: a page that logs an error and loads a missing image is caught.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><img src=\"missing.png\"><script>console.error('deliberate-error')</script></body></html>",
    )
    .expect("write");
    let o = chromium::run(
        &bin,
        &dir.path().join("profile0"),
        &["--dump-dom".to_string()],
        &format!("file://{}", bad.display()),
        LIMIT,
    )
    .expect("chromium");
    assert!(
        o.console().iter().any(|l| l.contains("deliberate-error")),
        "console detection does not work with this chromium; stderr:\n{}",
        o.stderr
    );
    assert!(
        o.loaded_files().iter().any(|u| u.ends_with("missing.png")),
        "resource detection does not work with this chromium; stderr:\n{}",
        o.stderr
    );

    // The report: DOM complete, no console messages, nothing loaded but the page.
    let o = chromium::run(
        &bin,
        &dir.path().join("profile1"),
        &["--dump-dom".to_string()],
        &url,
        LIMIT,
    )
    .expect("chromium");
    let console = o.console();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    assert_eq!(o.loaded_files(), std::slice::from_ref(&url), "files loaded");
    let dom = &o.stdout;
    assert!(dom.contains("Figure 1."), "DOM lacks figures");
    assert!(dom.matches("<svg").count() >= 7, "DOM lacks inline SVGs");
    assert!(dom.contains("<table"), "DOM lacks tables");
    // The page opens with its picture: Figure 1 before the findings.
    let fig = dom.find("<figure id=\"fig-1\"").expect("figure 1");
    assert!(
        dom.find("class=\"findings\"").is_some_and(|f| fig < f),
        "the page does not open with its picture"
    );

    // Screenshot of sane size.
    let shot = dir.path().join("shot.png");
    let o = chromium::run(
        &bin,
        &dir.path().join("profile2"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".to_string(),
            "--hide-scrollbars".to_string(),
        ],
        &url,
        LIMIT,
    )
    .expect("chromium");
    let console = o.console();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let bytes = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("no screenshot ({e}); stderr:\n{}", o.stderr));
    assert_eq!(
        chromium::png_size(&bytes),
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
