//! docs/study-format.md documents the study file the parser reads: every
//! key `spec::parse` accepts (found from the serde types themselves by
//! `spec::key_tables`) is in the doc's key table of its table, with a type
//! and a default; the doc lists no key the parser refuses; its examples use
//! only real keys, and its complete example parses.
//!
//! The other docs name study keys too, in inline code: every `[TABLE] key`
//! (`[protocol] delta`, `[[workloads]] vary`) in any Markdown file of the
//! repository is a key of that table, and every `key = value` in docs/*.md
//! or the README is a key of some table (BENCHMARKS.md, a history, may name
//! keys that are gone).

use std::collections::BTreeMap;

use httplab_study::spec::{self, KeyTable, ProtocolSpec};

const DOC: &str = include_str!("../../../../docs/study-format.md");

/// One row of a key table: its keys (several when a row documents two),
/// type and default cells.
#[derive(Debug)]
struct Row {
    keys: Vec<String>,
    ty: String,
    default: String,
}

/// Cells of a Markdown table line (`\|` inside a cell kept as `|`).
fn cells(line: &str) -> Vec<String> {
    let t = line.trim().trim_start_matches('|').trim_end_matches('|');
    t.replace("\\|", "\u{1}")
        .split('|')
        .map(|c| c.trim().replace('\u{1}', "|"))
        .collect()
}

/// Backticked words of a cell: "`a`, `b`" → ["a", "b"].
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The doc's key tables by label: a table whose header's first cell is
/// "LABEL key" (backticks dropped), with "type" and "default" columns.
fn doc_tables() -> BTreeMap<String, Vec<Row>> {
    let lines: Vec<&str> = DOC.lines().collect();
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let head = cells(lines[i]);
        let is_table =
            lines[i].trim_start().starts_with('|') && lines[i + 1].trim_start().starts_with("|---");
        let first = head.first().map(|c| c.replace('`', "")).unwrap_or_default();
        if !(is_table && first.ends_with(" key")) {
            i += 1;
            continue;
        }
        let label = first.trim_end_matches(" key").trim().to_string();
        let col = |name: &str| {
            head.iter()
                .position(|c| c == name)
                .unwrap_or_else(|| panic!("key table `{label}` has no `{name}` column"))
        };
        let (ty, default) = (col("type"), col("default"));
        let mut rows = Vec::new();
        i += 2;
        while i < lines.len() && lines[i].trim_start().starts_with('|') {
            let c = cells(lines[i]);
            rows.push(Row {
                keys: ticked(&c[0]),
                ty: c.get(ty).cloned().unwrap_or_default(),
                default: c.get(default).cloned().unwrap_or_default(),
            });
            i += 1;
        }
        assert!(
            out.insert(label.clone(), rows).is_none(),
            "two key tables for `{label}`"
        );
    }
    out
}

/// What a type cell may start with.
const TYPES: [&str; 8] = [
    "string", "integer", "number", "boolean", "size", "metric", "table", "array of",
];

#[test]
fn the_parser_finds_every_table() {
    let tables = spec::key_tables();
    let labels: Vec<&str> = tables.iter().map(|t| t.label.as_str()).collect();
    for want in [
        "top-level",
        "[protocol]",
        "[corpus]",
        "[corpus] files",
        "[corpus] sets",
        "[corpus] pages",
        "[pinning]",
        "[[servers]]",
        "[[workloads]]",
        "[[workloads]] vary",
        "[compare]",
        "[[questions]]",
        "[[questions]] evidence",
    ] {
        assert!(labels.contains(&want), "{want} missing from {labels:?}");
    }
    assert_eq!(labels.len(), 13, "{labels:?}");
    let keys = |label: &str| -> Vec<&str> {
        tables
            .iter()
            .find(|t| t.label == label)
            .map(|t| t.keys.clone())
            .unwrap_or_default()
    };
    // Aliases are accepted keys too.
    for k in ["delta", "min_effect", "budget_s", "seed"] {
        assert!(keys("[protocol]").contains(&k), "{k}");
    }
    for gone in ["high_rate", "rate_step", "step_s", "driver"] {
        assert!(!keys("[[workloads]]").contains(&gone), "{gone}");
    }
    assert!(!keys("[protocol]").contains(&"precision"));
    assert!(!keys("top-level").contains(&"driver"));
}

#[test]
fn every_accepted_key_is_documented_with_type_and_default() {
    let doc = doc_tables();
    let mut missing = Vec::new();
    for KeyTable { label, keys, .. } in spec::key_tables() {
        let Some(rows) = doc.get(&label) else {
            missing.push(format!(
                "no key table headed `| {label} key | type | default | … |`"
            ));
            continue;
        };
        for key in keys {
            match rows.iter().find(|r| r.keys.iter().any(|k| k == key)) {
                None => missing.push(format!("{label}: `{key}` is not in its key table")),
                Some(r) => {
                    if !TYPES.iter().any(|t| r.ty.starts_with(t)) {
                        missing.push(format!("{label}: `{key}` has type {:?}", r.ty));
                    }
                    if r.default.is_empty() {
                        missing.push(format!("{label}: `{key}` has no default"));
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/study-format.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_documented_key_is_accepted() {
    let tables = spec::key_tables();
    for (label, rows) in doc_tables() {
        let t = tables
            .iter()
            .find(|t| t.label == label)
            .unwrap_or_else(|| panic!("the doc has a key table `{label}` the parser does not"));
        for r in rows {
            assert!(!r.keys.is_empty(), "{label}: a row without a key");
            for k in &r.keys {
                assert!(
                    t.keys.contains(&k.as_str()),
                    "{label}: the doc lists `{k}`, which the parser refuses"
                );
            }
        }
    }
}

#[test]
fn documented_tables_and_arrays_are_tables_to_the_parser() {
    // A key documented as a table or an array of tables has a key table of
    // its own (the free-form `env` excepted), and the other way round.
    let tables = spec::key_tables();
    let doc = doc_tables();
    for t in &tables {
        for r in &doc[&t.label] {
            let nested = r.ty == "table" || r.ty == "array of tables";
            for k in &r.keys {
                let child = tables.iter().any(|c| {
                    c.path.len() == t.path.len() + 1
                        && c.path.starts_with(&t.path)
                        && c.path.last() == Some(&k.as_str())
                });
                assert_eq!(nested, child, "{} `{k}`: type {:?}", t.label, r.ty);
            }
        }
    }
}

#[test]
fn protocol_defaults_match_the_doc() {
    let d = ProtocolSpec::default();
    let doc = doc_tables();
    let rows = &doc["[protocol]"];
    let default_of = |key: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r.keys.iter().any(|k| k == key))
            .unwrap_or_else(|| panic!("{key}"));
        r.default
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{key}: default {:?} is not a number", r.default))
    };
    assert_eq!(default_of("warmup_s"), d.warmup_s);
    assert_eq!(default_of("window_s"), d.window_s);
    assert_eq!(default_of("min_repetitions"), f64::from(d.min_repetitions));
    assert_eq!(default_of("max_repetitions"), f64::from(d.max_repetitions));
    assert_eq!(default_of("alpha"), d.alpha);
    assert_eq!(default_of("delta"), d.min_effect);
    assert_eq!(default_of("min_effect"), d.min_effect);
    assert_eq!(d.budget_s, None);
    assert_eq!(d.seed, None);
}

/// Checks every key of a parsed TOML table against the parser's tables.
fn check_keys(table: &toml::Table, path: &[&str], tables: &[KeyTable], block: &str) {
    let t = tables
        .iter()
        .find(|t| t.path == path)
        .unwrap_or_else(|| panic!("no table at {path:?} in\n{block}"));
    for (k, v) in table {
        assert!(
            t.keys.contains(&k.as_str()),
            "the doc's example uses `{k}`, not a key of {}:\n{block}",
            t.label
        );
        let mut p = path.to_vec();
        p.push(k.as_str());
        if !tables.iter().any(|c| c.path == p) {
            continue;
        }
        match v {
            toml::Value::Table(sub) => check_keys(sub, &p, tables, block),
            toml::Value::Array(items) => {
                for it in items {
                    if let toml::Value::Table(sub) = it {
                        check_keys(sub, &p, tables, block);
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_docs_examples_use_only_real_keys() {
    let tables = spec::key_tables();
    let mut blocks = 0;
    let mut complete = 0;
    for (i, part) in DOC.split("```toml\n").enumerate().skip(1) {
        let block = part.split("```").next().unwrap_or_default();
        let parsed: toml::Table = toml::from_str(block)
            .unwrap_or_else(|e| panic!("example {i} is not TOML: {e}\n{block}"));
        check_keys(&parsed, &[], &tables, block);
        blocks += 1;
        if parsed.contains_key("name")
            && parsed.contains_key("servers")
            && parsed.contains_key("workloads")
        {
            spec::parse(block, "docs/study-format.md example")
                .unwrap_or_else(|e| panic!("{e:#}\n{block}"));
            complete += 1;
        }
    }
    assert!(blocks >= 8, "{blocks} examples");
    assert!(complete >= 1, "the complete example");
}

/// Markdown files of the repository (not under hidden folders, `target*`,
/// `bench/out`), with their paths relative to the root.
fn markdown_files() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a folder").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name.starts_with("target") || rel == "bench/out") {
                    dirs.push(path);
                }
            } else if name.ends_with(".md") {
                out.push((rel, std::fs::read_to_string(&path).expect("read a file")));
            }
        }
    }
    out
}

/// Inline code spans of `text` outside fenced code blocks.
fn inline_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let pieces: Vec<&str> = line.split('`').collect();
        for (k, piece) in pieces.iter().enumerate() {
            if k % 2 == 1 && k + 1 < pieces.len() {
                out.push(piece.to_string());
            }
        }
    }
    out
}

/// `("[TABLE]", key)` of a span `[TABLE] key` (`[[TABLE]] key`), else None.
fn table_key(span: &str) -> Option<(String, String)> {
    let close = span.rfind(']')?;
    let label = &span[..=close];
    if !label.starts_with('[') {
        return None;
    }
    let key: String = span[close + 1..]
        .strip_prefix(' ')?
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    (!key.is_empty()).then(|| (label.to_string(), key))
}

/// `key` of a span `key = value` (a snake_case word), else None.
fn assigned_key(span: &str) -> Option<String> {
    let (key, _) = span.split_once(" = ")?;
    let ok = key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    ok.then(|| key.to_string())
}

#[test]
fn study_keys_named_in_the_docs_are_the_parsers() {
    let tables = spec::key_tables();
    let mut wrong = Vec::new();
    for (file, text) in markdown_files() {
        let study_doc = file.starts_with("docs/") || file == "README.md";
        for span in inline_spans(&text) {
            if let Some((label, key)) = table_key(&span) {
                if let Some(t) = tables.iter().find(|t| t.label == label) {
                    if !t.keys.contains(&key.as_str()) {
                        wrong.push(format!("{file}: `{span}`: {label} has no key {key}"));
                    }
                }
            }
            if let Some(key) = assigned_key(&span).filter(|_| study_doc) {
                if !tables.iter().any(|t| t.keys.contains(&key.as_str())) {
                    wrong.push(format!("{file}: `{span}`: no table has a key {key}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_key_readers_read_what_they_should() {
    assert_eq!(
        table_key("[protocol] delta"),
        Some(("[protocol]".into(), "delta".into()))
    );
    assert_eq!(
        table_key("[[workloads]] vary"),
        Some(("[[workloads]]".into(), "vary".into()))
    );
    assert_eq!(table_key("[protocol]"), None);
    assert_eq!(table_key("a[0] b"), None);
    assert_eq!(
        assigned_key("check_client = true"),
        Some("check_client".into())
    );
    assert_eq!(assigned_key("RATE = 5"), None);
    assert_eq!(assigned_key("1073741823 = 2^30-1"), None);
    assert_eq!(
        inline_spans("a `x` b\n```\n`y`\n```\n`z`"),
        vec!["x".to_string(), "z".to_string()]
    );
}
