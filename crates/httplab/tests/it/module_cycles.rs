//! Layers import one way only: no crate of the workspace has two modules that
//! reach each other through `crate::` or `super::` paths, directly or through
//! other modules.
//!
//! Written by hand because no maintained library answers "which modules of
//! this crate import each other" from source text without compiling it
//! (cargo-modules is a cargo plugin with its own rustc driver, not a library).
//! The scan is textual: every `crate::…` and `super::…` path and use-tree in a
//! module's non-test code names the longest module its path starts with; that
//! is an edge. A module's use of its own ancestors is not counted (the parent
//! declares its children and holds what they share). Unit tests
//! (`#[cfg(test)]` onward) are left out: a test may look anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

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

/// Every `.rs` file under `src` with its module path: `src/a.rs` and
/// `src/a/mod.rs` are `a`, `src/a/b.rs` is `a/b`; `lib.rs`/`main.rs` (the
/// crate root, which declares the modules) are left out.
fn modules(src: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut segs: Vec<String> = rel
                .components()
                .filter_map(|c| c.as_os_str().to_str().map(str::to_string))
                .collect();
            if segs.last().is_some_and(|s| s == "mod") {
                segs.pop();
            }
            if segs.is_empty() || segs == ["lib"] || segs == ["main"] || segs[0] == "bin" {
                continue;
            }
            out.push((segs.join("/"), path));
        }
    }
    out
}

/// The source up to the first `#[cfg(test)]`, with `//` comments removed.
fn production_code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..cut]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_len(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '*'))
        .unwrap_or(s.len())
}

fn skip_space(s: &str, mut i: usize) -> usize {
    while s[i..].starts_with(|c: char| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// Parses the use-tree or path at `s[i..]` (after `crate::`), appending every
/// full path it names to `out`; returns where it ended.
fn parse_tree(s: &str, mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        i = skip_space(s, i);
        if s[i..].starts_with('{') {
            i += 1;
            loop {
                while s[i..].starts_with(|c: char| c.is_whitespace() || c == ',') {
                    i += 1;
                }
                if i >= s.len() || s[i..].starts_with('}') {
                    return (i + 1).min(s.len());
                }
                let before = i;
                i = parse_tree(s, i, &segs, out);
                if i == before {
                    // not a path: step over one character
                    i += s[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        let n = ident_len(&s[i..]);
        if n == 0 {
            out.push(segs);
            return i;
        }
        segs.push(s[i..i + n].to_string());
        i = skip_space(s, i + n);
        if s[i..].starts_with("::") {
            i += 2;
            continue;
        }
        out.push(segs);
        return i;
    }
}

/// The module paths a piece of code (of module `me`) names through `crate::`
/// and `super::` paths, as segment lists (not yet resolved to modules).
fn crate_refs(code: &str, me: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("::") {
        let head_start = code[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |k| k + 1);
        let head = &code[head_start..i];
        let preceded = code[..head_start].ends_with([':', '$']);
        if preceded || (head != "crate" && head != "super") {
            continue;
        }
        let mut paths = Vec::new();
        parse_tree(code, i + 2, &[], &mut paths);
        for mut p in paths {
            let mut base: Vec<String> = Vec::new();
            if head == "super" {
                base = me.split('/').map(str::to_string).collect();
                base.pop();
                while p.first().is_some_and(|s| s == "super") {
                    base.pop();
                    p.remove(0);
                }
            }
            base.extend(p.into_iter().filter(|s| s != "self" && s != "*"));
            out.push(base);
        }
    }
    out
}

/// Module → the modules it uses. A path resolves to the longest prefix that
/// is a module; a module's use of its own ancestors is left out (a parent
/// module holds what its children share, and declares them).
fn graph_of(src: &Path) -> Graph {
    let mods = modules(src);
    let names: BTreeSet<String> = mods.iter().map(|(n, _)| n.clone()).collect();
    let mut g = Graph::new();
    for (me, path) in &mods {
        let text = fs::read_to_string(path).expect("read module");
        let edges = g.entry(me.clone()).or_default();
        for segs in crate_refs(&production_code(&text), me) {
            let target = (1..=segs.len())
                .rev()
                .map(|k| segs[..k].join("/"))
                .find(|c| names.contains(c));
            if let Some(t) = target {
                if &t != me && !me.starts_with(&format!("{t}/")) {
                    edges.insert(t);
                }
            }
        }
    }
    g
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_scan_sees_plain_grouped_nested_and_relative_paths() {
    let code = "use crate::a::X;\nuse crate::{b, c::{D, e::F}, self};\nfn f() { crate::d::g(); }\nlet s = \"$crate::z\";\nuse super::h::I;";
    let refs = crate_refs(code, "p/q");
    let got: BTreeSet<String> = refs.iter().map(|r| r.join("/")).collect();
    let want: BTreeSet<String> = ["a/X", "b", "c/D", "c/e/F", "", "d/g", "p/h/I"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        production_code("use crate::a;\n#[cfg(test)]\nmod tests { use crate::b; }"),
        "use crate::a;"
    );
}

#[test]
fn the_cycle_finder_finds_cycles_and_only_those() {
    let mut g = Graph::new();
    let edge = |g: &mut Graph, a: &str, b: &str| {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    };
    edge(&mut g, "a", "b");
    edge(&mut g, "b", "c");
    edge(&mut g, "c", "a");
    edge(&mut g, "c", "d");
    edge(&mut g, "e", "d");
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

#[test]
fn no_crate_has_modules_that_import_each_other() {
    let mut found = Vec::new();
    for krate in workspace_crates() {
        let g = graph_of(&krate.join("src"));
        for comp in cycles(&g) {
            let name = krate.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            let edges: Vec<String> = comp
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| comp.contains(b))
                        .map(move |b| format!("{a} → {b}"))
                })
                .collect();
            found.push(format!(
                "{name}: {} ({})",
                comp.join(", "),
                edges.join("; ")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (directly or through others):\n  {}",
        found.join("\n  ")
    );
}
