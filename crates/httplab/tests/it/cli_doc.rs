//! The option tables of docs/cli.md agree with the commands' `--help`:
//! every long option a command prints has a row in its table, and every row
//! names an option the command has.
//!
//! A table belongs to the section headed "## `httplab <command>` options";
//! its first column names the option (`-r, --root DIR`). `--help` and
//! `--version` need no row. Every command's table is required.

use std::collections::BTreeSet;
use std::path::Path;
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
