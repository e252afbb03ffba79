//! Layers import one way only: no crate of the workspace has two modules that
//! reach each other, directly or through other modules.
//!
//! Written by hand because no maintained library answers "which modules of
//! this crate import each other" from source text without compiling it
//! (cargo-modules is a cargo plugin with its own rustc driver, not a library).
//!
//! The modules of a crate are its root (`lib.rs` or `main.rs`) and every file
//! module under `src/` compiled outside tests (a module declared behind
//! `#[cfg(test)]`, or a file under `#![cfg(test)]`, is left out with its
//! children; an inline `mod x { … }` counts as part of its file). Module A
//! uses module B, an edge A → B, when A's production code names an item that
//! B defines: by a path that starts with `crate::`, `super::`, `self::` or the
//! name of a module A declares, in a `use` or anywhere in the code, or by a
//! name that A re-exports (`pub use b::Item;` and `Item` in A's own code). A
//! path that reaches an item through a re-export (or an import) of another
//! module leads on to the module that defines the item: `crate::Better`,
//! where the root has `pub use better::Better`, is a use of `better`.
//! Parents and children are modules like any other: a child naming what its
//! parent defines is an edge child → parent, a parent naming what its child
//! defines is an edge parent → child, and both together are a cycle.
//!
//! Two things are not uses. Declaring `mod x;` is how the module tree is
//! built: every module is declared by its parent, so counting it would make a
//! cycle of every child that names anything of its parent (the crate root's
//! shared helpers first of all), though the parent's code needs nothing of
//! the child. A re-export `pub use x::Item;` only gives the item a second
//! name: the code that depends on `x` is the code naming `Item`, which this
//! checker follows to `x`; counting the re-export would make a cycle of every
//! child that names the crate's public façade, though nothing in the root
//! runs on it. Once the re-exporting module names `Item` in its own code, it
//! does use `x`.
//!
//! The scan is textual: comments and the contents of string and character
//! literals are blanked, the items behind `#[cfg(test)]` (or
//! `#[cfg(all(test, …))]`) are cut out up to their end and the code after
//! them is scanned (`source_scan.rs`, shared with `function_length.rs`). A
//! cycle is a strongly connected component of more than one module.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::source_scan::{code_only, drop_test_items, find, is_ident};

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
/// crate root, added by [`sources`]) and `src/bin/` (other crates) are left
/// out.
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

/// A module's code as the scan reads it.
struct Source {
    /// Comments, literals and test items blanked.
    code: String,
    /// The modules it declares behind `#[cfg(test)]` (`mod tests;`).
    test_children: Vec<String>,
    /// The whole file is test code (`#![cfg(test)]`).
    test_only: bool,
}

fn production_code(text: &str) -> Source {
    let mut code = code_only(text);
    let test_only = find(&code, b"#![cfg(test)]", 0).is_some();
    let test_children = drop_test_items(&mut code)
        .iter()
        .filter_map(|item| declared_module(item))
        .collect();
    Source {
        code: String::from_utf8_lossy(&code).into_owned(),
        test_children,
        test_only,
    }
}

/// The name `x` when `item` (attributes and visibility aside) is `mod x;`.
fn declared_module(item: &str) -> Option<String> {
    let mut s = item.trim_start();
    while s.starts_with("#[") {
        s = s[s.find(']')? + 1..].trim_start();
    }
    if let Some(r) = s.strip_prefix("pub") {
        s = r.trim_start();
        if s.starts_with('(') {
            s = s[s.find(')')? + 1..].trim_start();
        }
    }
    let s = s.strip_prefix("mod")?;
    let s = s.strip_prefix(|c: char| c.is_whitespace())?.trim_start();
    let n = ident_len(s);
    (n > 0 && s[n..].trim_start().starts_with(';')).then(|| s[..n].to_string())
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

/// A path a use-tree names, with the name it binds (`as` renames; `None` for
/// a glob or `as _`).
type Named = (Vec<String>, Option<String>);

/// Parses the use-tree or path at `s[i..]` (after `crate::`), appending every
/// full path it names to `out`; returns where it ended.
fn parse_tree(s: &str, mut i: usize, prefix: &[String], out: &mut Vec<Named>) -> usize {
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
            out.push((segs, None));
            return i;
        }
        segs.push(s[i..i + n].to_string());
        i = skip_space(s, i + n);
        if s[i..].starts_with("::") {
            i += 2;
            continue;
        }
        let rename = s[i..]
            .strip_prefix("as")
            .filter(|r| r.starts_with(char::is_whitespace));
        if rename.is_some() {
            let at = skip_space(s, i + 2);
            let n = ident_len(&s[at..]);
            out.push((segs, Some(s[at..at + n].to_string())));
            return at + n;
        }
        out.push((segs, None));
        return i;
    }
}

/// The paths a piece of code of module `me` names, as segment lists from the
/// crate root (not yet resolved to modules), each with the name it binds in
/// a `use`: `crate::…`, `super::…`, `self::…`, and `child::…` for a module
/// `child` declared by `me` (the crate root is `me = ""`).
fn named_refs(
    code: &str,
    me: &str,
    names: &BTreeSet<String>,
) -> Vec<(Vec<String>, Option<String>)> {
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
        for (mut p, rename) in paths {
            let glob = p.last().is_some_and(|s| s == "*");
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
            let bound = match rename {
                Some(r) => (r != "_").then_some(r),
                None => (!glob).then(|| base.last().cloned()).flatten(),
            };
            out.push((base, bound));
        }
    }
    out
}

/// The paths a piece of code of module `me` names (see [`named_refs`]).
fn crate_refs(code: &str, me: &str, names: &BTreeSet<String>) -> Vec<Vec<String>> {
    named_refs(code, me, names)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// The `use` statements of a piece of code, each with whether it is a
/// re-export (`pub use`, `pub(crate) use`, …), and the code without the
/// re-exports (a re-export is a second name for an item, not a use of it;
/// a private `use` stays: it is a use).
fn use_statements(code: &str) -> (Vec<(String, bool)>, String) {
    let bytes = code.as_bytes();
    let mut stmts = Vec::new();
    let mut kept = String::with_capacity(code.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(k) = code[from..].find("use") {
        let at = from + k;
        from = at + 3;
        let word = (at == 0 || !is_ident(bytes[at - 1]))
            && code[at + 3..].starts_with(|c: char| c.is_whitespace() || c == '{');
        if !word {
            continue;
        }
        let end = code[at..].find(';').map_or(code.len(), |e| at + e + 1);
        match reexport_start(&code[..at]) {
            Some(start) if start >= copied => {
                kept.push_str(&code[copied..start]);
                stmts.push((code[start..end].to_string(), true));
                copied = end;
            }
            _ => stmts.push((code[at..end].to_string(), false)),
        }
        from = end;
    }
    kept.push_str(&code[copied..]);
    (stmts, kept)
}

/// Where the visibility before a `use` starts (`head` is the code up to the
/// `use`), if it has one.
fn reexport_start(head: &str) -> Option<usize> {
    let h = head.trim_end();
    let start = if h.ends_with(')') {
        let open = h.rfind("pub(")?;
        if h[open + 4..h.len() - 1].contains(['(', ')']) {
            return None;
        }
        open
    } else {
        h.strip_suffix("pub")?.len()
    };
    let word = start == 0 || !is_ident(h.as_bytes()[start - 1]);
    word.then_some(start)
}

/// (module, name) → the path of the item a module binds to that name by a
/// `use` (a re-export or an import; descendants may name both).
type Bindings = BTreeMap<(String, String), Vec<String>>;

/// The module a path from the crate root reaches: the longest prefix that is
/// a module, following that module's bindings (`crate::Better` where the root
/// has `pub use better::Better` reaches `better`). `""` is the crate root.
fn resolve(segs: &[String], names: &BTreeSet<String>, b: &Bindings) -> String {
    let mut segs = segs.to_vec();
    let mut module = String::new();
    for _ in 0..16 {
        let k = (1..=segs.len())
            .rev()
            .find(|&k| names.contains(&segs[..k].join("/")))
            .unwrap_or(0);
        module = segs[..k].join("/");
        let Some(next) = segs.get(k) else { break };
        let Some(target) = b.get(&(module.clone(), next.clone())) else {
            break;
        };
        let mut n = target.clone();
        n.extend(segs[k + 1..].iter().cloned());
        if n == segs {
            break;
        }
        segs = n;
    }
    module
}

/// Whether `code` names `name` other than as the tail of a path or a field
/// (`x::name`, `x.name`) or in a module declaration (`mod name;`).
fn mentions(code: &str, name: &str) -> bool {
    let bytes = code.as_bytes();
    code.match_indices(name).any(|(at, _)| {
        let end = at + name.len();
        let head = code[..at].trim_end();
        let declared = head.ends_with("mod")
            && (head.len() == 3 || !is_ident(head.as_bytes()[head.len() - 4]));
        let before_ok =
            at == 0 || !(is_ident(bytes[at - 1]) || matches!(bytes[at - 1], b':' | b'.'));
        before_ok && !declared && bytes.get(end).map_or(true, |&b| !is_ident(b))
    })
}

/// Every module of the crate under `src` with its production code, the root
/// as `""`; test modules left out.
fn sources(src: &Path) -> BTreeMap<String, String> {
    let mut files = modules(src);
    if let Some(root) = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file())
    {
        files.push((String::new(), root));
    }
    let mut test_mods = BTreeSet::new();
    let mut out = BTreeMap::new();
    for (name, path) in files {
        let s = production_code(&fs::read_to_string(&path).expect("read module"));
        for child in &s.test_children {
            test_mods.insert(if name.is_empty() {
                child.clone()
            } else {
                format!("{name}/{child}")
            });
        }
        if s.test_only {
            test_mods.insert(name.clone());
        }
        out.insert(name, s.code);
    }
    out.retain(|name, _| {
        !test_mods
            .iter()
            .any(|t| name == t || name.starts_with(&format!("{t}/")))
    });
    out
}

/// Module → the modules it uses (see the rule at the top; `""` is the root).
fn graph_of(src: &Path) -> Graph {
    let texts = sources(src);
    let names: BTreeSet<String> = texts.keys().filter(|n| !n.is_empty()).cloned().collect();
    let mut bindings = Bindings::new();
    let mut split = Vec::new();
    for (me, code) in &texts {
        let (stmts, kept) = use_statements(code);
        for (st, _) in &stmts {
            for (path, bound) in named_refs(st, me, &names) {
                if let Some(name) = bound {
                    bindings.insert((me.clone(), name), path);
                }
            }
        }
        split.push((me, stmts, kept));
    }
    let mut g = Graph::new();
    for (me, stmts, kept) in split {
        let mut targets: Vec<Vec<String>> = crate_refs(&kept, me, &names);
        for (st, _) in stmts.iter().filter(|(_, reexport)| *reexport) {
            for (path, bound) in named_refs(st, me, &names) {
                if bound.is_some_and(|name| mentions(&kept, &name)) {
                    targets.push(path);
                }
            }
        }
        let edges = g.entry(me.clone()).or_default();
        for segs in targets {
            let t = resolve(&segs, &names, &bindings);
            if &t != me {
                edges.insert(t);
            }
        }
    }
    g
}

/// How a module is named in a report.
fn shown(module: &str) -> &str {
    if module.is_empty() {
        "(crate root)"
    } else {
        module
    }
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
fn the_scan_sees_plain_grouped_nested_renamed_and_relative_paths() {
    let code = "use crate::a::X;\nuse crate::{b, c::{D, e::F as G}, self};\nfn f() { crate::d::g(); }\nlet s = \"$crate::z\";\nuse super::h::I;\nfn k() { kid::run(); self::kid::Y; other::Z; }";
    let names: BTreeSet<String> = ["p", "p/q", "p/q/kid"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = production_code(code).code;
    let got: BTreeSet<String> = named_refs(&code, "p/q", &names)
        .iter()
        .map(|(p, bound)| format!("{} {}", p.join("/"), bound.as_deref().unwrap_or("-")))
        .collect();
    let want: BTreeSet<String> = [
        "a/X X",
        "b b",
        "c/D D",
        "c/e/F G",
        " -",
        "d/g g",
        "p/h/I I",
        "p/q/kid/run run",
        "p/q/kid/Y Y",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(got, want);
    let (stmts, kept) =
        use_statements("pub use a::B;\npub(crate) use c::{D, E};\nuse f::G;\nfn reuse() {}");
    assert_eq!(
        stmts,
        vec![
            ("pub use a::B;".to_string(), true),
            ("pub(crate) use c::{D, E};".to_string(), true),
            ("use f::G;".to_string(), false)
        ]
    );
    assert_eq!(kept, "\n\nuse f::G;\nfn reuse() {}");
    assert_eq!(
        declared_module(" #[allow(x)]\npub(crate) mod tests ;"),
        Some("tests".into())
    );
    assert_eq!(declared_module(" mod tests { }"), None);
}

/// The cycles of a synthetic crate: `files` are (path under `src/`, text).
fn cycles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().expect("a parent")).expect("create dirs");
        fs::write(&p, text).expect("write source");
    }
    cycles(&graph_of(dir.path()))
}

fn cycle(modules: &[&str]) -> Vec<Vec<String>> {
    vec![modules.iter().map(|m| m.to_string()).collect()]
}

/// Gap: the scan stopped at a file's first `#[cfg(test)]`, so a test item
/// early in a file (as in `h2proto.rs`) hid the production code after it.
#[test]
fn code_after_an_early_test_item_is_scanned() {
    let a = "#[cfg(test)]\nconst WINDOW: u32 = 1;\n#[cfg(test)]\nmod tests;\n\npub fn f() { crate::b::g(); }\n";
    let b = "pub fn g() {\n    let open = '{';\n    let s = \"}\";\n    crate::a::f();\n}\n#[cfg(test)]\nmod tests {\n    fn t() { crate::a::f(); }\n}\n";
    let tests = "use super::*;\nfn t() { crate::b::g(); }\n";
    let files = [
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", a),
        ("a/tests.rs", tests),
        ("b.rs", b),
    ];
    assert_eq!(cycles_of(&files), cycle(&["a", "b"]));
    // Test code alone makes no edge: the test module file is no module of
    // the graph, and the test items of `b` are cut out.
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("a")).expect("create dirs");
    for (path, text) in [
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "#[cfg(test)]\nmod tests;\npub fn f() {}\n"),
        ("a/tests.rs", tests),
        ("b.rs", b),
    ] {
        fs::write(dir.path().join(path), text).expect("write source");
    }
    let g = graph_of(dir.path());
    assert!(!g.contains_key("a/tests"), "{g:?}");
    assert_eq!(g["a"], BTreeSet::new());
    assert_eq!(g["b"], ["a".to_string()].into());
}

/// Gap: a name reached through a re-export (`crate::Better` where the root
/// has `pub use verdict::Better`) led to the crate root, which was no module
/// of the graph, so the edge to the module that defines the item was lost.
#[test]
fn a_re_exported_name_leads_to_the_module_that_defines_it() {
    let verdict = "pub enum Better { Lower }\npub struct Verdict;\npub fn v() { crate::decide::decide(Better::Lower); }\n";
    let files = [
        (
            "lib.rs",
            "mod decide;\nmod verdict;\npub use verdict::{Better as Direction, Verdict};\n",
        ),
        (
            "decide.rs",
            "use crate::Direction;\npub fn decide(d: Direction) {}\n",
        ),
        ("verdict.rs", verdict),
    ];
    assert_eq!(cycles_of(&files), cycle(&["decide", "verdict"]));
    // Through two re-exports, and through a module's private import that its
    // child names: still the module that defines the item.
    let files = [
        ("lib.rs", "mod stats;\nmod verdict;\npub use stats::Better;\n"),
        ("stats.rs", "mod decide;\npub(crate) use crate::verdict::Better;\n"),
        ("stats/decide.rs", "pub fn decide(d: super::Better) {}\n"),
        ("verdict.rs", "pub enum Better { Lower }\npub fn v() { crate::stats::decide::decide(crate::Better::Lower); }\n"),
    ];
    let g = {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::create_dir_all(dir.path().join("stats")).expect("create dirs");
        for (path, text) in files {
            fs::write(dir.path().join(path), text).expect("write source");
        }
        graph_of(dir.path())
    };
    assert_eq!(g["stats/decide"], ["verdict".to_string()].into());
    assert_eq!(g["verdict"], ["stats/decide".to_string()].into());
    assert_eq!(cycles(&g), cycle(&["stats/decide", "verdict"]));
}

/// Gap: a child's use of its parent was exempt, so a parent and a child
/// that use each other's items (the crate root included) passed.
#[test]
fn a_parent_and_a_child_that_use_each_other_are_a_cycle() {
    let receive = "use super::Slot;\npub fn read(s: &Slot) {}\n";
    let files = [
        ("lib.rs", "mod engine;\n"),
        (
            "engine.rs",
            "mod receive;\npub struct Slot;\npub fn run(s: &Slot) { receive::read(s); }\n",
        ),
        ("engine/receive.rs", receive),
    ];
    assert_eq!(cycles_of(&files), cycle(&["engine", "engine/receive"]));
    // The root is a module too: its code runs the child, the child reads the
    // root's constant.
    let files = [
        (
            "main.rs",
            "mod cli;\npub const VERSION: &str = \"1\";\nfn main() { cli::run(); }\n",
        ),
        ("cli.rs", "pub fn run() { let _ = crate::VERSION; }\n"),
    ];
    assert_eq!(cycles_of(&files), cycle(&["", "cli"]));
    // A re-export the parent's own code names is a use of the child.
    let files = [
        (
            "lib.rs",
            "mod kid;\npub use kid::Thing;\npub fn helper() {}\npub fn make() -> Thing { Thing }\n",
        ),
        ("kid.rs", "pub struct Thing;\nfn f() { crate::helper(); }\n"),
    ];
    assert_eq!(cycles_of(&files), cycle(&["", "kid"]));
    // Declaring a child and re-exporting its items is not a use of it.
    let files = [
        ("lib.rs", "mod run;\nmod engine;\npub use engine::Slot;\npub use run::run;\npub fn helper() {}\n"),
        ("engine.rs", "mod receive;\npub use receive::read;\npub struct Slot;\npub fn run() { crate::helper(); }\n"),
        ("engine/receive.rs", receive),
        ("run.rs", "pub fn run() { crate::helper(); }\n"),
    ];
    assert_eq!(cycles_of(&files), Vec::<Vec<String>>::new());
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
                        .map(move |b| format!("{} → {}", shown(a), shown(b)))
                })
                .collect();
            found.push(format!(
                "{name}: {} ({})",
                comp.iter().map(|m| shown(m)).collect::<Vec<_>>().join(", "),
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
