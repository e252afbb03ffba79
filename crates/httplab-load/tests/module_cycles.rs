//! The modules of httplab-load import each other without cycles.
//!
//! Reads `src/`, takes every `crate::a` path (also inside `use crate::{a,
//! b::c}` groups) and `super::` path outside comments and test modules as
//! an edge "this module uses a", and looks for a cycle. A path to an item of
//! the crate root (`crate::run`) is an edge to the root (`lib`), which
//! itself uses every module it re-exports from, so such a path would close a
//! cycle through the root. A child module's file (`engine/receive.rs`) is
//! its own node; `super::` is an edge to its parent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment after each `crate::`, including the members of
/// `crate::{...}` groups.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            // Nested groups are not used in this crate; top-level members only.
            for member in group[..end].split(',') {
                let name = ident_at(member.trim());
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
        } else {
            out.push(ident_at(rest).to_string());
        }
    }
    out
}

/// `pub use x::...` and `use x::...` lines of the crate root (its edges).
fn root_uses(code: &str, modules: &BTreeSet<String>) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub use ")
                .or_else(|| l.strip_prefix("use "))?;
            let name = ident_at(l);
            modules.contains(name).then(|| name.to_string())
        })
        .collect()
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("src is readable") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let node = |p: &Path| -> String {
        let rel = p.strip_prefix(&src).expect("under src");
        let s = rel.with_extension("").to_string_lossy().replace('/', "::");
        s.strip_suffix("::mod").unwrap_or(&s).to_string()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| node(p))
        .filter(|n| !n.contains("::") && n != "lib")
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &files {
        let name = node(p);
        if name.ends_with("::tests") {
            continue;
        }
        let text = std::fs::read_to_string(p).expect("source is readable");
        let code = code(&text);
        let edges = g.entry(name.clone()).or_default();
        for m in crate_paths(&code) {
            let to = if modules.contains(&m) {
                m
            } else {
                "lib".into()
            };
            if to != name {
                edges.insert(to);
            }
        }
        if code.contains("super::") {
            if let Some((parent, _)) = name.rsplit_once("::") {
                edges.insert(parent.to_string());
            }
        }
        if name == "lib" {
            edges.extend(root_uses(&code, &modules));
        }
    }
    g
}

/// A cycle of `g`, if it has one.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let i = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut c = stack[i..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn modules_import_each_other_without_cycles() {
    let g = graph();
    assert!(
        g.contains_key("engine") && g.contains_key("session"),
        "{g:?}"
    );
    assert!(g["engine"].contains("session"), "{g:?}");
    if let Some(c) = find_cycle(&g) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        crate_paths("use crate::{a, b::c};\nx(crate::d::e)"),
        ["a", "b", "d"]
    );
}
