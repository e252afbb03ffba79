//! The study files: the built-in studies, loading one by name or path, and
//! keeping only some of its servers.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::spec;

pub mod gate;
pub mod mine;

/// Built-in studies: (name, one-line summary, TOML text).
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "default",
        "Short tour of all four seed studies with httplab, nginx, Apache, lighttpd and h2o (about 4.5 minutes on 2 cores)",
        include_str!("../../../studies/default.toml"),
    ),
    (
        "architectures",
        "Seed 000: simple / persistent / pipelined servers and Apache on a page with embedded objects, test-1..3",
        include_str!("../../../studies/architectures.toml"),
    ),
    (
        "file-sizes",
        "Seed 001: 87 B, 12.9 KB and 2.9 MB files at 10 and 150 connections, httplab vs Apache",
        include_str!("../../../studies/file-sizes.toml"),
    ),
    (
        "capacity",
        "Seed 002: reply rate and response time vs request rate, simultaneous clients, 32 MB transfer, memory",
        include_str!("../../../studies/capacity.toml"),
    ),
    (
        "worker-threads",
        "Seed 004: server threads, client load, file size and file-set size; MB/s and accuracy",
        include_str!("../../../studies/worker-threads.toml"),
    ),
    (
        "https",
        "httplab vs nginx, Apache, lighttpd and h2o over TLS: full and resumed handshakes per second, keep-alive requests",
        include_str!("../../../studies/https.toml"),
    ),
    (
        "idle",
        "100, 1 000 and 10 000 idle connections held while a client measures, on httplab's models and every peer (about 3 minutes)",
        include_str!("../../../studies/idle.toml"),
    ),
    (
        "protocols",
        "HTTP/1.1, HTTP/2 and HTTP/3 over TLS on httplab, nginx, h2o, lighttpd and Caddy: a page of 20 objects, one large file, the page under 1 % packet loss (about 5 minutes)",
        include_str!("../../../studies/protocols.toml"),
    ),
    (
        "multiplexing",
        "httplab's event model, thread pool and process per connection over HTTP/1.1 and HTTP/2 (one stream, then 20 per connection): server CPU per request at equal work (about 3 minutes)",
        include_str!("../../../studies/multiplexing.toml"),
    ),
];

/// Looks up a built-in study by name.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
}

/// Loads a study: a built-in name or a path to a TOML file.
pub fn load_study(which: &str) -> Result<spec::StudyFile> {
    if let Some(text) = builtin(which) {
        return spec::parse(text, &format!("built-in study '{which}'"));
    }
    let path = PathBuf::from(which);
    if !path.exists() {
        let names: Vec<&str> = BUILTINS.iter().map(|(n, _, _)| *n).collect();
        anyhow::bail!(
            "'{which}' is neither a built-in study ({}) nor a file",
            names.join(", ")
        );
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    spec::parse(&text, &path.display().to_string())
}

/// Keeps only the named servers (report names after expansion).
pub fn restrict_servers(mut s: spec::StudyFile, keep: &[String]) -> spec::StudyFile {
    let expanded = spec::expand_servers(&s);
    let mut servers = Vec::new();
    for inst in expanded {
        if keep.contains(&inst.name) {
            let mut sv = inst.spec.clone();
            sv.name = Some(inst.name.clone());
            sv.workers = inst.workers.map(spec::OneOrMany::One);
            servers.push(sv);
        }
    }
    s.servers = servers;
    s.workloads.retain_mut(|w| {
        if w.servers.is_empty() {
            return true;
        }
        w.servers.retain(|n| keep.contains(n));
        !w.servers.is_empty()
    });
    s
}
