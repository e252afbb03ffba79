//! The option tables of docs/cli.md agree with the commands' `--help`:
//! every long option a command prints has a row in its table, and every row
//! names an option the command has.
//!
//! A table belongs to the section headed "## `httplab <command>` options";
//! its first column names the option (`-r, --root DIR`). `--help` and
//! `--version` need no row. Every command's table is required.
//!
//! Beside the tables, the docs are checked against the code:
//!
//! - **Options in commands.** Every `httplab COMMAND … --option` written in
//!   docs/cli.md or the README (inline code, or a line of a code block) names
//!   an option COMMAND's `--help` has. A span followed on its line by `→` is
//!   an example of a usage error and is not checked.
//! - **Schema tags.** Every `httplab.KIND/VERSION` in a Markdown file of the
//!   repository is one the code writes or still reads: a kind of the code's
//!   schema constants, a major version the code knows, and no newer minor
//!   version than the code writes for that major.
//! - **Seeds.** A paragraph of a Markdown file (lines between blank lines; a
//!   table or a code block without blank lines is one paragraph) that names a
//!   seed report ("seed 000" … "seed 004", "seeds 00N", any case) also names
//!   `seeds.md` (a link to docs/seeds.md, or the path in a code block); and
//!   `httplab study --list` and the file `httplab study --init` writes name
//!   `docs/seeds.md` when they name a seed. docs/seeds.md itself is exempt.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const CLI_DOC: &str = include_str!("../../../../docs/cli.md");

/// The long options named in `text` (`--name`, letters, digits, hyphens).
fn long_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("--") {
        let after = &rest[i + 2..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let starts_word = i == 0 || !rest[..i].ends_with(|c: char| c.is_ascii_alphanumeric());
        if starts_word && name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            out.push(name.clone());
        }
        rest = &after[name.len()..];
    }
    out
}

/// The options a command's `--help` defines: clap prints each on a line of
/// its own, indented by two (`-r, --root`) or six (`--model`) spaces;
/// descriptions are indented further.
fn help_options(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        if !(2..=6).contains(&indent) || !t.starts_with('-') {
            continue;
        }
        // `-r, --root <DIR>`, `--model <MODEL>`: the option is the first
        // long name, before any description on the same line.
        let head = t.split("  ").next().unwrap_or(t);
        if let Some(name) = long_options(head).into_iter().next() {
            out.insert(name);
        }
    }
    out.remove("help");
    out.remove("version");
    out
}

/// The options in the first column of the table in the docs/cli.md section
/// headed "## `httplab <command>` options", or None without such a section.
fn doc_options(command: &str) -> Option<BTreeSet<String>> {
    let heading = format!("## `httplab {command}` options");
    let start = CLI_DOC.find(&heading)? + heading.len();
    let section = &CLI_DOC[start..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut out = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let first = row[1..].split(" | ").next().unwrap_or("");
        // `--model event\|threads`: the cell's own options, not values.
        for name in long_options(first) {
            out.insert(name);
        }
    }
    Some(out)
}

fn help_of(command: &str) -> String {
    let exe = Path::new(env!("CARGO_BIN_EXE_httplab"));
    let out = Command::new(exe)
        .args([command, "--help"])
        .env("COLUMNS", "200")
        .output()
        .expect("run httplab");
    assert!(
        out.status.success(),
        "httplab {command} --help failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn check(command: &str) {
    let Some(table) = doc_options(command) else {
        panic!("docs/cli.md has no \"## `httplab {command}` options\" section");
    };
    let help = help_options(&help_of(command));
    assert!(
        !help.is_empty(),
        "no options parsed from `httplab {command} --help`"
    );
    let missing: Vec<_> = help.difference(&table).collect();
    let stale: Vec<_> = table.difference(&help).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/cli.md table of `httplab {command}`: options without a row: {missing:?}; rows naming no option of the command: {stale:?}"
    );
}

/// The commands documented in docs/cli.md, each with an option table.
const COMMANDS: [&str; 7] = [
    "serve", "load", "sweep", "report", "study", "merge", "compare",
];

#[test]
fn serve_table_matches_help() {
    check("serve");
}

#[test]
fn other_tables_match_help() {
    for command in &COMMANDS[1..] {
        check(command);
    }
}

#[test]
fn parsers_read_what_they_should() {
    let help = "Options:\n  -r, --root <DIR>\n          Directory (see --listen)\n      --model <MODEL>\n          [default: event]\n  -h, --help\n";
    let got = help_options(help);
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        vec!["model".to_string(), "root".to_string()]
    );
    assert_eq!(
        long_options("`--model event\\|threads` and --tls-key, not x--y"),
        vec!["model".to_string(), "tls-key".to_string()]
    );
}

/// The repository's root (two levels above this crate).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Every Markdown file of the repository with its path relative to the root,
/// leaving out hidden folders, build output (`target*`), `bench/out` and
/// `fuzz/artifacts`.
fn markdown_files() -> Vec<(String, String)> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).expect("read a folder of the repository");
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let skip = name.starts_with('.')
                    || name.starts_with("target")
                    || rel == "bench/out"
                    || rel == "fuzz/artifacts";
                if !skip {
                    dirs.push(path);
                }
            } else if name.ends_with(".md") {
                let text = std::fs::read_to_string(&path).expect("read a Markdown file");
                out.push((rel, text));
            }
        }
    }
    out.sort();
    out
}

/// The spans of `text` to read as code: inline code spans, and whole lines
/// inside fenced code blocks; each with its line number and whether the rest
/// of its line holds a `→` (an example of a usage error).
fn code_spans(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push((i + 1, line.to_string(), false));
            continue;
        }
        let pieces: Vec<&str> = line.split('`').collect();
        for (k, piece) in pieces.iter().enumerate() {
            if k % 2 == 1 && k + 1 < pieces.len() {
                let after = pieces[k + 1..].join("`");
                out.push((i + 1, piece.to_string(), after.contains('→')));
            }
        }
    }
    out
}

/// `text` without its quoted parts (`'…'`, `"…"`): a command line inside
/// quotes is another program's (`--mine './my-server --port {port}'`).
fn unquoted(text: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// `(command, option)` for every `httplab COMMAND … --option` in `span`:
/// the options from the command to the next `httplab`, a comment (` #`) or
/// a shell operator (`|`, `;`, `&`), leaving out quoted parts.
fn command_options(span: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let span = unquoted(span);
    for part in span.split("httplab ").skip(1) {
        let Some(cmd) = COMMANDS.iter().find(|c| {
            part.strip_prefix(**c)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '`']))
        }) else {
            continue;
        };
        let rest = &part[cmd.len()..];
        let end = [" #", "|", ";", "&"]
            .iter()
            .filter_map(|s| rest.find(s))
            .min()
            .unwrap_or(rest.len());
        for option in long_options(&rest[..end]) {
            out.push((cmd.to_string(), option));
        }
    }
    out
}

#[test]
fn options_written_in_the_docs_are_the_commands_own() {
    let mut helps = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    let root = repo_root();
    for file in ["docs/cli.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(file)).expect("read the doc");
        for (line, span, usage_error) in code_spans(&text) {
            if usage_error {
                continue;
            }
            for (cmd, option) in command_options(&span) {
                let have = helps
                    .entry(cmd.clone())
                    .or_insert_with(|| help_options(&help_of(&cmd)));
                if option != "help" && !have.contains(&option) {
                    wrong.push(format!("{file}:{line}: `httplab {cmd}` has no --{option}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `(kind, major, minor)` of a schema tag `httplab.KIND/MAJOR[.MINOR]`.
fn parse_schema(tag: &str) -> Option<(String, u32, u32)> {
    let (kind, version) = tag.strip_prefix("httplab.")?.split_once('/')?;
    let (major, minor) = match version.split_once('.') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => (version.parse().ok()?, 0),
    };
    Some((kind.to_string(), major, minor))
}

/// Every `httplab.KIND/VERSION` tag in `text` (KIND letters, VERSION digits
/// and dots, not ending in a dot).
fn schema_tags(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("httplab.") {
        let rest = &text[i + "httplab.".len()..];
        let kind: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase())
            .collect();
        let Some(version) = rest[kind.len()..].strip_prefix('/') else {
            continue;
        };
        let version: String = version
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let version = version.trim_end_matches('.');
        if !kind.is_empty() && !version.is_empty() {
            out.push(format!("httplab.{kind}/{version}"));
        }
    }
    out
}

/// The schema tags the code writes, and the older majors it still reads.
const CODE_SCHEMAS: [&str; 6] = [
    httplab_model::RUN_SCHEMA,
    httplab_model::SWEEP_SCHEMA,
    httplab_model::STUDY_SCHEMA,
    httplab_model::STUDY_SCHEMA_V2,
    httplab_model::STUDY_SCHEMA_V1,
    httplab_compare::render::COMPARE_SCHEMA,
];

/// Whether the code knows `tag`: same kind and major as one of
/// [`CODE_SCHEMAS`], with no newer minor version.
fn schema_known(tag: &str) -> bool {
    let Some((kind, major, minor)) = parse_schema(tag) else {
        return false;
    };
    CODE_SCHEMAS
        .iter()
        .filter_map(|s| parse_schema(s))
        .any(|(k, ma, mi)| k == kind && ma == major && minor <= mi)
}

#[test]
fn schema_tags_in_the_docs_are_the_codes() {
    let mut wrong = Vec::new();
    for (file, text) in markdown_files() {
        for tag in schema_tags(&text) {
            if !schema_known(&tag) {
                wrong.push(format!("{file}: {tag}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "schema tags the code neither writes nor reads (its tags: {CODE_SCHEMAS:?}):\n{}",
        wrong.join("\n")
    );
}

/// Whether `text` names a seed report: "seed 00N" or "seeds 00N", any case.
fn names_a_seed(text: &str) -> bool {
    let lower = text.to_lowercase();
    ["seed 00", "seeds 00"].iter().any(|pat| {
        lower.match_indices(pat).any(|(i, _)| {
            lower[i + pat.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    })
}

/// The paragraphs of `text`: runs of lines between blank lines, with the
/// line number of each one's first line.
fn paragraphs(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            out.extend(current.take());
            continue;
        }
        let p = current.get_or_insert_with(|| (i + 1, String::new()));
        p.1.push_str(line);
        p.1.push('\n');
    }
    out.extend(current);
    out
}

#[test]
fn every_seed_named_in_the_docs_links_the_seeds_page() {
    let mut wrong = Vec::new();
    for (file, text) in markdown_files() {
        if file == "docs/seeds.md" {
            continue;
        }
        for (line, para) in paragraphs(&text) {
            if names_a_seed(&para) && !para.contains("seeds.md") {
                wrong.push(format!("{file}:{line}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "paragraphs that name a seed report without a link to docs/seeds.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn study_list_and_init_point_at_the_seeds_page() {
    let exe = Path::new(env!("CARGO_BIN_EXE_httplab"));
    let list = Command::new(exe)
        .args(["study", "--list"])
        .output()
        .expect("run httplab study --list");
    assert!(list.status.success());
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("mine.toml");
    let init = Command::new(exe)
        .args(["study", "--init"])
        .arg(&file)
        .output()
        .expect("run httplab study --init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let init = std::fs::read_to_string(&file).expect("the file --init wrote");
    for (what, text) in [("study --list", &list), ("study --init", &init)] {
        assert!(
            !names_a_seed(text) || text.contains("docs/seeds.md"),
            "`httplab {what}` names a seed report without pointing at docs/seeds.md:\n{text}"
        );
    }
    assert!(
        names_a_seed(&list),
        "the list names the seeds of its studies"
    );
}

#[test]
fn the_docs_checks_read_what_they_should() {
    assert_eq!(
        command_options(
            "httplab load URL --rate 10 | tee x --nope; httplab serve --root . --x '--y'"
        ),
        vec![
            ("load".to_string(), "rate".to_string()),
            ("serve".to_string(), "root".to_string()),
            ("serve".to_string(), "x".to_string())
        ]
    );
    assert_eq!(
        schema_tags("`httplab.run/1.1`, httplab.study/3.2. and httplab.study/… not"),
        vec![
            "httplab.run/1.1".to_string(),
            "httplab.study/3.2".to_string()
        ]
    );
    assert!(schema_known("httplab.run/1"));
    assert!(schema_known("httplab.study/3.1"));
    assert!(schema_known("httplab.study/2"));
    assert!(!schema_known("httplab.study/3.9"));
    assert!(!schema_known("httplab.study/4"));
    assert!(!schema_known("httplab.runs/1"));
    assert!(names_a_seed("as Seed 004 did"));
    assert!(names_a_seed("seeds 000 and 001"));
    assert!(!names_a_seed("seed 42, seed 1194"));
    let paras = paragraphs("a\nb seed 001\n\n\nc [x](docs/seeds.md)\n");
    assert_eq!(paras.len(), 2);
    assert_eq!(paras[1].0, 5);
    let spans = code_spans("x `httplab serve --port 1` → tip\n```\nhttplab load --rate 1\n```\n");
    assert_eq!(spans.len(), 2);
    assert!(spans[0].2 && !spans[1].2);
}
