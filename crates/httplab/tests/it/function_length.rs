//! No production function of the workspace is longer than [`MAX_LINES`]
//! lines, counted from the line of its `fn` to the line of its closing brace,
//! except the table-like ones named in [`ALLOWED`], each with its reason.
//!
//! Written by hand, like `module_cycles.rs`: a textual scan without compiling.
//! Comments and the contents of string and character literals are blanked
//! first (so braces inside them do not count), `#[cfg(test)]` items are left
//! out, then every `fn` with a body is measured by counting braces. Files
//! named `tests.rs` and folders named `tests` under `src/` are test code and
//! are left out too.

use std::fs;
use std::path::{Path, PathBuf};

use crate::source_scan::{body_start, code_only, drop_test_items, find, is_ident, matching_brace};

/// Longest production function allowed, in lines.
const MAX_LINES: usize = 120;

/// Functions allowed to be longer: `(file under crates/, fn name, reason)`.
/// Only table-like functions belong here (one arm or one row per case, where
/// splitting would only scatter the table).
const ALLOWED: &[(&str, &str, &str)] = &[];

fn workspace_crates() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/ directory")
        .to_path_buf();
    let mut out: Vec<PathBuf> = fs::read_dir(&crates)
        .expect("read crates/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("src").is_dir())
        .collect();
    out.sort();
    out
}

/// Every production `.rs` file under `src`.
fn source_files(src: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src").flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "tests" {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) == Some("rs") && name != "tests.rs" {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every function with a body: `(name, first line (1-based), lines)`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let mut code = code_only(text);
    if find(&code, b"#![cfg(test)]", 0).is_some() {
        return Vec::new();
    }
    drop_test_items(&mut code);
    let line_of = |i: usize| code[..i].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = find(&code, b"fn", from) {
        from = p + 2;
        let word = (p == 0 || !is_ident(code[p - 1]))
            && code.get(p + 2).is_some_and(|b| b.is_ascii_whitespace());
        if !word {
            continue;
        }
        let name_start = p
            + 2
            + code[p + 2..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        let name_len = code[name_start..]
            .iter()
            .take_while(|&&b| is_ident(b))
            .count();
        if name_len == 0 {
            continue; // a function pointer type
        }
        let name = String::from_utf8_lossy(&code[name_start..name_start + name_len]).into_owned();
        if let Some(open) = body_start(&code, name_start + name_len) {
            let end = matching_brace(&code, open);
            let first = line_of(p);
            out.push((name, first, line_of(end.saturating_sub(1)) - first + 1));
        }
    }
    out
}

#[test]
fn the_scan_skips_literals_comments_and_tests() {
    let text = r####"
fn a() {
    let s = "}}}";
    let c = '}';
    let r = r#"{"#;
    // }
    /* { /* } */ */
    x::<'a>();
}
fn ptr(f: fn(u8) -> u8) -> [u8; 2] { [f(0), 1] }
trait T { fn decl(&self); }
#[cfg(test)]
mod tests {
    fn hidden() {}
}
fn b() {}
"####;
    let got: Vec<(String, usize, usize)> = functions(text);
    let want = vec![
        ("a".to_string(), 2, 8),
        ("ptr".to_string(), 10, 1),
        ("b".to_string(), 16, 1),
    ];
    assert_eq!(got, want);
}

#[test]
fn no_production_function_is_longer_than_the_limit() {
    let crates_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/ directory")
        .to_path_buf();
    let mut too_long = Vec::new();
    let mut allowed_seen = Vec::new();
    for krate in workspace_crates() {
        for file in source_files(&krate.join("src")) {
            let text = fs::read_to_string(&file).expect("read source");
            let rel = file
                .strip_prefix(&crates_dir)
                .expect("under crates/")
                .to_string_lossy()
                .replace('\\', "/");
            for (name, line, lines) in functions(&text) {
                if lines <= MAX_LINES {
                    continue;
                }
                if ALLOWED.iter().any(|(f, n, _)| *f == rel && *n == name) {
                    allowed_seen.push((rel.clone(), name));
                    continue;
                }
                too_long.push(format!("{rel}:{line} fn {name}: {lines} lines"));
            }
        }
    }
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(f, n, _)| !allowed_seen.iter().any(|(sf, sn)| sf == f && sn == n))
        .map(|(f, n, _)| format!("{f} fn {n}"))
        .collect();
    assert!(
        too_long.is_empty(),
        "functions over {MAX_LINES} lines (split them, or allow a table-like one with its reason):\n  {}",
        too_long.join("\n  ")
    );
    assert!(
        stale.is_empty(),
        "allowed functions no longer over {MAX_LINES} lines (remove them from ALLOWED):\n  {}",
        stale.join("\n  ")
    );
}
