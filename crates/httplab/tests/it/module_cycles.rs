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

/// The source without `//` comments and without the items behind a
/// `#[cfg(test)]` (each such item is cut out up to its end, the `;` or the
/// brace that closes it; the code after it is kept).
fn production_code(text: &str) -> String {
    let code = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        rest = &after[item_end(after)..];
    }
    out.push_str(rest);
    out.trim_end().to_string()
}

/// Where the item at the start of `s` ends: after its `;` when one comes
/// before any `{`, else after the brace matching its first `{`.
fn item_end(s: &str) -> usize {
    let semi = s.find(';');
    let brace = s.find('{');
    match (semi, brace) {
        (Some(i), b) if b.map_or(true, |b| i < b) => i + 1,
        (_, Some(b)) => {
            let mut depth = 0usize;
            for (i, c) in s[b..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            return b + i + 1;
                        }
                    }
                    _ => {}
                }
            }
            s.len()
        }
        _ => s.len(),
    }
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

/// The paths a piece of code of module `me` names, as segment lists from the
/// crate root (not yet resolved to modules): `crate::…`, `super::…`,
/// `self::…`, and `child::…` for a module `child` declared by `me` (the
/// crate root is `me = ""`).
fn crate_refs(code: &str, me: &str, names: &BTreeSet<String>) -> Vec<Vec<String>> {
    let here: Vec<String> = me
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("::") {
        let head_start = code[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |k| k + 1);
        let head = &code[head_start..i];
        let preceded = code[..head_start].ends_with([':', '$']);
        let child = {
            let mut c = here.clone();
            c.push(head.to_string());
            names.contains(&c.join("/"))
        };
        if preceded || !(matches!(head, "crate" | "super" | "self") || child) {
            continue;
        }
        let mut paths = Vec::new();
        parse_tree(code, i + 2, &[], &mut paths);
        for mut p in paths {
            let mut base: Vec<String> = match head {
                "crate" => Vec::new(),
                "super" => {
                    let mut b = here.clone();
                    b.pop();
                    while p.first().is_some_and(|s| s == "super") {
                        b.pop();
                        p.remove(0);
                    }
                    b
                }
                "self" => here.clone(),
                _ => {
                    let mut b = here.clone();
                    b.push(head.to_string());
                    b
                }
            };
            base.extend(p.into_iter().filter(|s| s != "self" && s != "*"));
            out.push(base);
        }
    }
    out
}

/// The `pub use` and `pub(crate) use` statements of a piece of code, and the
/// code without them (a re-export is a name for another module's item, not
/// a use of it).
fn split_reexports(code: &str) -> (Vec<String>, String) {
    let mut stmts = Vec::new();
    let mut rest_code = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let at = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .filter_map(|k| rest.find(k))
            .min();
        let Some(at) = at else { break };
        rest_code.push_str(&rest[..at]);
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e + 1);
        stmts.push(rest[at..end].to_string());
        rest = &rest[end..];
    }
    rest_code.push_str(rest);
    (stmts, rest_code)
}

/// (module, name) → the path of the item a module re-exports under that name.
type Reexports = BTreeMap<(String, String), Vec<String>>;

/// The module a path from the crate root reaches: the longest prefix that is
/// a module, following re-exports (`crate::Better` where the root has `pub
/// use verdict::Better` reaches `verdict`). None: the crate root's own items.
fn resolve(segs: &[String], names: &BTreeSet<String>, re: &Reexports) -> Option<String> {
    let mut segs = segs.to_vec();
    for _ in 0..16 {
        let k = (1..=segs.len())
            .rev()
            .find(|&k| names.contains(&segs[..k].join("/")))
            .unwrap_or(0);
        let module = segs[..k].join("/");
        if let Some(next) = segs.get(k) {
            if let Some(target) = re.get(&(module.clone(), next.clone())) {
                let mut n = target.clone();
                n.extend(segs[k + 1..].iter().cloned());
                if n != segs {
                    segs = n;
                    continue;
                }
            }
        }
        return (k > 0).then_some(module);
    }
    None
}

/// Module → the modules it uses. A path resolves to the module that holds
/// the item, through re-exports; a child's use of what its parent defines
/// is an edge like any other, and so is a parent's use of its child (its
/// `mod` declarations and re-exports are not).
fn graph_of(src: &Path) -> Graph {
    let mods = modules(src);
    let names: BTreeSet<String> = mods.iter().map(|(n, _)| n.clone()).collect();
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file());
    let mut texts: Vec<(String, String)> = mods
        .iter()
        .map(|(n, p)| {
            let text = fs::read_to_string(p).expect("read module");
            (n.clone(), production_code(&text))
        })
        .collect();
    if let Some(r) = root {
        let text = fs::read_to_string(r).expect("read crate root");
        texts.push((String::new(), production_code(&text)));
    }
    let mut re = Reexports::new();
    let mut uses = Vec::new();
    for (me, code) in &texts {
        let (stmts, rest) = split_reexports(code);
        for st in stmts {
            for path in crate_refs(&st, me, &names) {
                if let Some(name) = path.last() {
                    re.insert((me.clone(), name.clone()), path.clone());
                }
            }
        }
        uses.push((me.clone(), rest));
    }
    let mut g = Graph::new();
    for (me, code) in &uses {
        if me.is_empty() {
            continue;
        }
        let edges = g.entry(me.clone()).or_default();
        for segs in crate_refs(code, me, &names) {
            if let Some(t) = resolve(&segs, &names, &re) {
                if &t != me {
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
    let code = "use crate::a::X;\nuse crate::{b, c::{D, e::F}, self};\nfn f() { crate::d::g(); }\nlet s = \"$crate::z\";\nuse super::h::I;\nfn k() { kid::run(); self::kid::Y; other::Z; }";
    let names: BTreeSet<String> = ["p", "p/q", "p/q/kid"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let refs = crate_refs(code, "p/q", &names);
    let got: BTreeSet<String> = refs.iter().map(|r| r.join("/")).collect();
    let want: BTreeSet<String> = [
        "a/X",
        "b",
        "c/D",
        "c/e/F",
        "",
        "d/g",
        "p/h/I",
        "p/q/kid/run",
        "p/q/kid/Y",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        production_code("use crate::a;\n#[cfg(test)]\nmod tests { use crate::b; }"),
        "use crate::a;"
    );
    // Only the item behind `#[cfg(test)]` is cut: code after it is scanned.
    assert_eq!(
        production_code(
            "use crate::a;\n#[cfg(test)]\nuse crate::t;\n#[cfg(test)]\nfn h() { if x { crate::u(); } }\nfn g() { crate::b::f(); } // crate::c"
        ),
        "use crate::a;\n\n\nfn g() { crate::b::f(); }"
    );
}

#[test]
fn re_exports_lead_to_the_module_that_defines_the_item() {
    let names: BTreeSet<String> = ["verdict", "decide", "a", "a/b"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut re = Reexports::new();
    let (stmts, rest) = split_reexports("pub use verdict::{Better, Verdict};\nuse decide::x;");
    assert_eq!(rest.trim(), "use decide::x;");
    for st in stmts {
        for path in crate_refs(&st, "", &names) {
            re.insert((String::new(), path.last().unwrap().clone()), path);
        }
    }
    let (stmts, _) = split_reexports("pub(crate) use self::b::Inner;");
    for st in stmts {
        for path in crate_refs(&st, "a", &names) {
            re.insert(("a".into(), path.last().unwrap().clone()), path);
        }
    }
    let r = |p: &str| {
        let segs: Vec<String> = p.split('/').map(str::to_string).collect();
        resolve(&segs, &names, &re)
    };
    assert_eq!(r("Better").as_deref(), Some("verdict"));
    assert_eq!(r("decide/f").as_deref(), Some("decide"));
    assert_eq!(r("a/Inner").as_deref(), Some("a/b"));
    assert_eq!(r("a/own").as_deref(), Some("a"));
    assert_eq!(r("RootItem"), None);
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
