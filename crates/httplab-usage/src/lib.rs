//! The exit statuses every `httplab` subcommand keeps, so that scripts can
//! rely on them (docs/cli.md, "Exit status", says the same):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done: measured (or rendered, merged), and for `compare` no regression |
//! | 1 | the run failed (no server answered, a peer did not start, a write failed) or `compare` found a regression |
//! | 2 | usage error: a bad command line, option value or input file; nothing was run |
//! | 130 | interrupted (Ctrl-C): what was measured so far is written |
//!
//! A crate reports a usage error by returning a [`UsageError`] (alone or
//! inside an `anyhow` chain); the binary maps it to status 2. Command-line
//! errors found by clap go through [`clap_exit`], which prints them as
//! `httplab SUB: error: …` and points at the right option where a user
//! spelled one the way another tool does.

#![forbid(unsafe_code)]

mod command;
pub use command::server_command;

use std::fmt;
use std::process::ExitCode;

/// The run failed, or `compare` found a regression.
pub const FAILED: u8 = 1;
/// A usage error: nothing was run.
pub const USAGE: u8 = 2;
/// Interrupted by SIGINT.
pub const INTERRUPTED: u8 = 130;

/// A usage error: the command line, an option's value or an input file is
/// wrong. Its text is the whole message (the binary adds the
/// `httplab SUB: error:` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A usage error with `e`'s message, its causes included (`{:#}` of an
/// `anyhow::Error` gives them).
pub fn usage(e: impl fmt::Display) -> UsageError {
    UsageError(e.to_string())
}

/// Whether an error chain holds a usage error.
pub fn is_usage<'a>(
    mut chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> bool {
    chain.any(|c| c.is::<UsageError>())
}

/// An option another tool spells differently, and what to use instead:
/// (`--port`, `--listen ADDR:PORT`).
pub type Hint = (&'static str, &'static str);

/// Prints clap's help or version (status 0) or its error as
/// `httplab SUB: error: …` (status 2), with `hints` for a known foreign
/// spelling in place of clap's guess.
pub fn clap_exit(sub: &str, e: &clap::Error, hints: &[Hint]) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    eprint!("{}", clap_message(sub, e, hints));
    ExitCode::from(USAGE)
}

/// The text [`clap_exit`] prints for a usage error.
pub fn clap_message(sub: &str, e: &clap::Error, hints: &[Hint]) -> String {
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let hint = e
        .get(clap::error::ContextKind::InvalidArg)
        .and_then(|v| match v {
            clap::error::ContextValue::String(s) => Some(s.as_str()),
            _ => None,
        })
        .and_then(|arg| {
            let name = arg.split('=').next().unwrap_or(arg);
            hints.iter().find(|(h, _)| *h == name)
        });
    let mut out = format!("httplab {sub}: error: ");
    match hint {
        Some((_, instead)) => {
            // clap's own guess (a similar spelling) would mislead: drop
            // its tip lines and name the option that does it.
            // clap's usage line shows the guessed option: left out too.
            out.push_str(text.lines().next().unwrap_or(""));
            out.push_str(&format!(
                "\n\n  tip: use {instead}\n\nFor more information, try '--help'.\n"
            ));
        }
        None => out.push_str(text),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    fn cmd() -> Command {
        Command::new("httplab serve")
            .arg(Arg::new("listen").long("listen"))
            .arg(Arg::new("prometheus").long("prometheus"))
    }

    #[test]
    fn a_foreign_spelling_points_at_the_right_option() {
        let e = cmd()
            .try_get_matches_from(["serve", "--port", "99999"])
            .unwrap_err();
        let m = clap_message("serve", &e, &[("--port", "--listen ADDR:PORT")]);
        assert!(
            m.starts_with("httplab serve: error: unexpected argument '--port'"),
            "{m}"
        );
        assert!(m.contains("tip: use --listen ADDR:PORT"), "{m}");
        assert!(!m.contains("--prometheus"), "{m}");
        assert!(m.contains("try '--help'"), "{m}");
        let e = cmd()
            .try_get_matches_from(["serve", "--port=8080"])
            .unwrap_err();
        let m = clap_message("serve", &e, &[("--port", "--listen ADDR:PORT")]);
        assert!(m.contains("tip: use --listen ADDR:PORT"), "{m}");
    }

    #[test]
    fn other_errors_keep_clap_s_words_with_the_prefix() {
        let e = cmd()
            .try_get_matches_from(["serve", "--bogus"])
            .unwrap_err();
        let m = clap_message("serve", &e, &[("--port", "--listen ADDR:PORT")]);
        assert!(
            m.starts_with("httplab serve: error: unexpected argument '--bogus'"),
            "{m}"
        );
        assert!(!m.contains("error: error:"), "{m}");
    }

    #[test]
    fn usage_errors_are_found_in_a_chain() {
        let e: Box<dyn std::error::Error> = Box::new(usage("bad --rate"));
        assert!(is_usage(std::iter::once(e.as_ref())));
        let io = std::io::Error::other("disk");
        assert!(!is_usage(std::iter::once(&io as &dyn std::error::Error)));
    }
}
