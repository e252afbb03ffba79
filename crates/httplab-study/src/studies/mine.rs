//! "My server against nginx": the study that compares a user's own server
//! (a `kind = "command"` server) with peers, written from one template
//! (`mine.toml` beside this file) both for `httplab study --init FILE` (the
//! commented file to edit) and for the one-command form `httplab study
//! --mine 'CMD {port} {root}'` (the same text, parsed at once), so the two
//! never drift apart.

use anyhow::{bail, Context, Result};

use crate::spec::{self, StudyFile};

/// The template, with `@…@` markers filled in by [`template`].
const TEMPLATE: &str = include_str!("mine.toml");

/// The report name of the user's server unless `--name` says otherwise.
pub const DEFAULT_NAME: &str = "mine";

/// The peer compared with when `--against` is not given.
pub const DEFAULT_PEER: &str = "nginx";

/// The command line `--init` writes when no `--mine` is given: a placeholder
/// to edit.
pub const PLACEHOLDER_COMMAND: &[&str] = &["./my-server", "--port", "{port}", "--root", "{root}"];

/// Placeholders a `command` server's argv and environment may use, with
/// their meaning (in a cleartext study; docs/study-format.md lists the TLS
/// ones).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "{port}",
        "the TCP port to listen on, on 127.0.0.1 (required)",
    ),
    ("{root}", "the directory of the files to serve (required)"),
    ("{dir}", "a scratch directory of its own"),
    (
        "{workers}",
        "the server's `workers` value (1 in the one-command form)",
    ),
];

/// The peers `--against` takes: (name, the `[[servers]]` lines that
/// configure it with one worker where it has such a setting, as the
/// built-in studies do).
pub const PEERS: &[(&str, &str)] = &[
    ("nginx", "kind = \"nginx\"\nworkers = 1\n"),
    (
        "apache",
        "kind = \"apache\"\nmpm = \"event\"\nworkers = 1\n",
    ),
    ("lighttpd", "kind = \"lighttpd\"\n"),
    ("h2o", "kind = \"h2o\"\nworkers = 1\n"),
    ("caddy", "kind = \"caddy\"\n"),
];

/// What the template is filled with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mine {
    /// Report name of the user's server.
    pub name: String,
    /// Its argv, placeholders unsubstituted.
    pub command: Vec<String>,
    /// The peers, the first of them the baseline.
    pub peers: Vec<String>,
}

impl Mine {
    /// From the command line's words: `--mine` (None: the placeholder
    /// command), `--against` (empty: nginx) and `--name`.
    pub fn new(command: Option<&str>, against: &[String], name: Option<&str>) -> Result<Mine> {
        let command = match command {
            Some(c) => split_command(c)?,
            None => PLACEHOLDER_COMMAND.iter().map(|s| s.to_string()).collect(),
        };
        let peers = peers(against)?;
        let name = name.unwrap_or(DEFAULT_NAME).trim().to_string();
        if name.is_empty() || name.chars().any(char::is_control) {
            bail!("--name {name:?}: the report name of your server must be non-empty, on one line");
        }
        if peers.contains(&name) {
            bail!("--name {name}: that is the name of a peer it is compared with; choose another");
        }
        Ok(Mine {
            name,
            command,
            peers,
        })
    }

    /// The baseline: the first peer.
    pub fn baseline(&self) -> &str {
        self.peers.first().map_or(DEFAULT_PEER, String::as_str)
    }
}

/// Splits `--mine`'s command line into words as a POSIX shell would (quotes
/// and backslashes; no variables, globs or pipes: shlex, not hand-written)
/// and checks its placeholders.
pub fn split_command(line: &str) -> Result<Vec<String>> {
    let more: Vec<&str> = PLACEHOLDERS.iter().map(|(p, _)| *p).skip(2).collect();
    Ok(httplab_usage::server_command("--mine", line, &more)?)
}

/// `--against`'s peers (comma-separated or repeated), checked, each once, in
/// order; nginx when none is given.
pub fn peers(against: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for word in against.iter().flat_map(|a| a.split(',')) {
        let p = word.trim().to_ascii_lowercase();
        if p.is_empty() {
            continue;
        }
        let p = if p == "apache2" {
            "apache".to_string()
        } else {
            p
        };
        if !PEERS.iter().any(|(n, _)| *n == p) {
            bail!(
                "--against {word}: not a peer httplab can configure (have: {})",
                PEERS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            );
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        out.push(DEFAULT_PEER.to_string());
    }
    Ok(out)
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The study file's text: the commented template filled in.
pub fn template(m: &Mine) -> Result<String> {
    let command = toml::Value::Array(
        m.command
            .iter()
            .map(|w| toml::Value::String(w.clone()))
            .collect(),
    )
    .to_string();
    let uses_workers = m.command.iter().any(|w| w.contains("{workers}"));
    let workers = if uses_workers {
        "workers = 1          # {workers} in the command; one worker, as the peers get\n"
    } else {
        "# workers = 1        # only when the command uses {workers}\n"
    };
    let mut peers = String::new();
    for p in &m.peers {
        let lines = PEERS
            .iter()
            .find(|(n, _)| n == p)
            .map(|(_, l)| *l)
            .with_context(|| format!("unknown peer {p}"))?;
        peers.push_str(&format!("[[servers]]\nname = {}\n{lines}\n", quoted(p)));
    }
    let mut text = TEMPLATE
        .replace("@NAME_TEXT@", &m.name.replace(['"', '\\'], ""))
        .replace("@PEERS_TEXT@", &m.peers.join(", "))
        .replace("@NAME@", &quoted(&m.name))
        .replace("@COMMAND@", &command)
        .replace("@WORKERS@", workers)
        .replace("@PEERS@", &peers)
        .replace("@BASELINE@", &quoted(m.baseline()));
    // The baseline pairs compare every server with the first peer; a
    // question per further peer adds the user's server against it.
    let base = spec::parse(&text, "the mine template")?;
    for p in m.peers.iter().skip(1) {
        text.push_str(&format!(
            "\n# {} against {p} (every server is compared with the baseline above; this adds the pair).\n[[questions]]\nask = {}\nevidence = [\n",
            m.name,
            quoted(&format!("Is {} faster or cheaper than {p}?", m.name)),
        ));
        for w in &base.workloads {
            text.push_str(&format!(
                "  {{ workload = {}, server = {}, versus = {} }},\n",
                quoted(&w.name),
                quoted(&m.name),
                quoted(p)
            ));
        }
        text.push_str("]\n");
    }
    Ok(text)
}

/// The study itself (the template's text, parsed).
pub fn study(m: &Mine) -> Result<StudyFile> {
    spec::parse(&template(m)?, "the --mine study")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mine(cmd: &str, against: &[&str]) -> Result<Mine> {
        let a: Vec<String> = against.iter().map(|s| s.to_string()).collect();
        Mine::new(Some(cmd), &a, None)
    }

    #[test]
    fn the_placeholder_template_parses_with_nginx_as_baseline() {
        let m = Mine::new(None, &[], None).unwrap();
        let s = study(&m).unwrap();
        assert_eq!(s.compare.baseline.as_deref(), Some("nginx"));
        let names: Vec<String> = spec::expand_servers(&s)
            .into_iter()
            .map(|x| x.name)
            .collect();
        assert_eq!(names, ["mine", "nginx"]);
        assert!(s.questions.is_empty());
        assert_eq!(s.workloads.len(), 6);
    }

    #[test]
    fn more_peers_add_a_question_per_peer_over_every_workload() {
        let m = mine(
            "srv -p {port} -r {root} -t {workers}",
            &["h2o,nginx", "h2o"],
        )
        .unwrap();
        assert_eq!(m.peers, ["h2o", "nginx"]);
        let s = study(&m).unwrap();
        assert_eq!(s.compare.baseline.as_deref(), Some("h2o"));
        assert_eq!(s.questions.len(), 1);
        assert_eq!(s.questions[0].evidence.len(), s.workloads.len());
        assert!(s.questions[0]
            .evidence
            .iter()
            .all(|e| e.server == "mine" && e.versus == "nginx"));
        assert!(s.servers[0].workers.is_some());
    }

    #[test]
    fn every_peer_can_be_named() {
        let all: Vec<String> = PEERS.iter().map(|(n, _)| n.to_string()).collect();
        let m = Mine::new(Some("x {port} {root}"), &all, Some("my \"server\"")).unwrap();
        let s = study(&m).unwrap();
        assert_eq!(s.servers.len(), 1 + PEERS.len());
        assert_eq!(s.servers[0].name.as_deref(), Some("my \"server\""));
    }

    #[test]
    fn the_command_is_split_as_a_shell_would() {
        let m = mine("'/opt/my server/bin' --port={port} \"{root}\"", &[]).unwrap();
        assert_eq!(m.command, ["/opt/my server/bin", "--port={port}", "{root}"]);
    }

    #[test]
    fn missing_placeholders_and_bad_peers_are_refused_with_the_reason() {
        let e = mine("srv --root {root}", &[]).unwrap_err().to_string();
        assert!(e.contains("{port}") && e.contains("free port"), "{e}");
        let e = mine("srv --port {port}", &[]).unwrap_err().to_string();
        assert!(e.contains("{root}"), "{e}");
        let e = mine("", &[]).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = mine("srv '{port} {root}", &[]).unwrap_err().to_string();
        assert!(e.contains("quotes"), "{e}");
        let e = mine("srv {port} {root}", &["iis"]).unwrap_err().to_string();
        assert!(e.contains("iis") && e.contains("nginx, apache"), "{e}");
        let e = Mine::new(Some("s {port} {root}"), &[], Some("nginx"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("peer"), "{e}");
    }
}
