//! A server's command line given as one option value (`--mine`, `--base-cmd`, `--new-cmd`):
//! split the way a shell would, and checked for the placeholders every such command needs.

use crate::UsageError;

/// The placeholders every server command must hold, and why.
const REQUIRED: [(&str, &str); 2] = [
    (
        "{port}",
        "httplab picks a free port for every server, and this one must listen on it (127.0.0.1)",
    ),
    (
        "{root}",
        "httplab generates the files to serve into a directory, and this server must serve it",
    ),
];

/// Splits `line`, the value of option `flag`, into words (shell quoting rules, no expansion)
/// and checks that it holds `{port}` and `{root}`. `more` names further placeholders the caller
/// fills in, for the message.
pub fn server_command(flag: &str, line: &str, more: &[&str]) -> Result<Vec<String>, UsageError> {
    let example = format!("{flag} './my-server --port {{port}} --root {{root}}'");
    let words = shlex::split(line).ok_or_else(|| {
        UsageError(format!(
            "{flag} '{line}': unbalanced quotes or a trailing backslash"
        ))
    })?;
    if words.is_empty() {
        return Err(UsageError(format!(
            "{flag}: empty command line; give the server's command, e.g. {example}"
        )));
    }
    for (p, why) in REQUIRED {
        if !words.iter().any(|w| w.contains(p)) {
            let all: Vec<&str> = REQUIRED
                .iter()
                .map(|(p, _)| *p)
                .chain(more.iter().copied())
                .collect();
            return Err(UsageError(format!(
                "{flag} '{line}': the command line has no {p}: {why}; e.g. {example} (placeholders: {})",
                all.join(", ")
            )));
        }
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell_and_needs_port_and_root() {
        let w = server_command("--x", "'./my server' --port {port} --root={root}", &[]).unwrap();
        assert_eq!(w, ["./my server", "--port", "{port}", "--root={root}"]);
        let e = server_command("--x", "./s --port {port}", &["{dir}"]).unwrap_err();
        assert!(
            e.0.contains("has no {root}") && e.0.contains("placeholders: {port}, {root}, {dir}"),
            "{e}"
        );
        let e = server_command("--x", "./s 'oops", &[]).unwrap_err();
        assert!(e.0.contains("unbalanced quotes"), "{e}");
        let e = server_command("--x", "  ", &[]).unwrap_err();
        assert!(e.0.starts_with("--x: empty command line"), "{e}");
    }
}
