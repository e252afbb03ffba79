//! The study crate's modules form layers: spec → plan → execute → analyse →
//! render, then the runner and the command line. Each module may use only
//! modules of its own layer or of the layers before it, and no modules may
//! use each other in a circle. This test reads `src/`, collects every
//! `crate::…` path of each file (comments left out) and checks both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Layer of a module by its first path segment.
fn layer(module: &str) -> Option<u32> {
    Some(match module.split("::").next()? {
        "keys" => 0,
        "spec" | "studies" => 1,
        "plan" => 2,
        "execute" => 3,
        "analyse" => 4,
        "render" => 5,
        "runner" => 6,
        "cli" => 7,
        _ => return None,
    })
}

/// Every module of `src/` (but the crate root) and its file's text.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("reading src/") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().map_or(true, |x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).expect("under src/").with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            let name = parts.join("::");
            if name == "lib" {
                continue;
            }
            out.insert(
                name,
                std::fs::read_to_string(&p).expect("reading a source file"),
            );
        }
    }
    out
}

/// The text without `//` comments (doc comments included).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The full paths of a path that may end in a `{…}` group, from `s`
/// (just after `crate::`); `prefix` is what came before.
fn paths(s: &str, prefix: &str, out: &mut Vec<String>) {
    let mut path = prefix.to_string();
    let mut rest = s;
    loop {
        let n = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if n > 0 {
            if !path.is_empty() {
                path.push_str("::");
            }
            path.push_str(&rest[..n]);
            rest = &rest[n..];
        }
        if let Some(r) = rest.strip_prefix("::") {
            rest = r;
            if let Some(g) = rest.strip_prefix('{') {
                group(g, &path, out);
                return;
            }
            continue;
        }
        out.push(path);
        return;
    }
}

/// The items of a `{…}` group (`g` starts after its brace), each a path
/// under `prefix`.
fn group(g: &str, prefix: &str, out: &mut Vec<String>) {
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in g.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                item(&g[start..i], prefix, out);
                return;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                item(&g[start..i], prefix, out);
                start = i + 1;
            }
            _ => {}
        }
    }
}

fn item(text: &str, prefix: &str, out: &mut Vec<String>) {
    let t = text.trim();
    let t = t.split(" as ").next().unwrap_or(t).trim();
    if t.is_empty() || t == "self" || t == "*" {
        if !prefix.is_empty() {
            out.push(prefix.to_string());
        }
    } else {
        paths(t, prefix, out);
    }
}

/// The longest module that `path` starts with.
fn resolve<'a>(path: &str, mods: &'a BTreeMap<String, String>) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .find_map(|n| mods.get_key_value(&parts[..n].join("::")).map(|(k, _)| k))
}

fn graph(mods: &BTreeMap<String, String>) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut unresolved = Vec::new();
    for (m, text) in mods {
        let code = code(text);
        let deps = g.entry(m.clone()).or_default();
        let mut rest = code.as_str();
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().next_back();
            rest = &rest[i + "crate::".len()..];
            if before.is_some_and(is_ident) {
                continue; // e.g. `httplab_crate::`
            }
            let mut found = Vec::new();
            match rest.strip_prefix('{') {
                Some(g) => group(g, "", &mut found),
                None => paths(rest, "", &mut found),
            }
            for p in found {
                match resolve(&p, mods) {
                    Some(d) if d != m => {
                        deps.insert(d.clone());
                    }
                    Some(_) => {}
                    None => unresolved.push(format!("{m} -> crate::{p}")),
                }
            }
        }
    }
    (g, unresolved)
}

/// A cycle of `g`, if it has one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|x| x == m).unwrap_or(0);
                let mut c = path[from..].to_vec();
                c.push(m.to_string());
                return Some(c);
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    g.keys()
        .find_map(|m| visit(m, g, &mut state, &mut Vec::new()))
}

#[test]
fn modules_form_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    assert!(mods.len() > 20, "found only {} modules", mods.len());
    let (g, unresolved) = graph(&mods);
    assert!(unresolved.is_empty(), "paths to no module: {unresolved:#?}");
    let mut wrong = Vec::new();
    for (m, deps) in &g {
        let lm = layer(m);
        assert!(lm.is_some(), "module {m} is in no layer");
        for d in deps {
            if layer(d) > lm {
                wrong.push(format!("{m} uses {d}, a later layer"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(cycle(&g), None, "modules that use each other in a circle");
}

#[test]
fn the_checker_sees_uses_and_cycles() {
    let mut mods = BTreeMap::new();
    mods.insert(
        "a".to_string(),
        "use crate::b::{x, c::{y}};\nuse crate::{b, d as e};\n// crate::z\n".to_string(),
    );
    mods.insert("b".to_string(), "fn f() { crate::a::g(); }".to_string());
    mods.insert("b::c".to_string(), String::new());
    mods.insert("d".to_string(), String::new());
    let (g, unresolved) = graph(&mods);
    assert!(unresolved.is_empty(), "{unresolved:?}");
    assert_eq!(
        g["a"],
        BTreeSet::from(["b".to_string(), "b::c".to_string(), "d".to_string()])
    );
    assert!(cycle(&g).is_some());
}
