//! Whole-experiment runner: corpus, servers, workloads, report.
//!
//! `httplab study [NAME|FILE]` reads a study (a built-in by name, or a TOML
//! file, see `docs/study-format.md`), generates its corpus, starts every
//! server at once (httplab itself and the peers nginx, Apache, lighttpd and
//! h2o, each configured by httplab), runs every workload in rounds of random
//! server order while sampling the servers from /proc, decides every
//! comparison (`docs/statistics.md`), and writes `index.html`,
//! `results.json` and CSV tables.
//!
//! The crate is built in layers; each imports only the ones above it in
//! this list:
//!
//! 1. [`spec`], [`studies`]: the study file, the built-in studies and the
//!    "my server against nginx" template ([`studies::mine`], behind
//!    `--mine` and `--init`) ([`keys`], the words the results use as keys,
//!    imports nothing);
//! 2. [`plan`]: steps, estimates, protocol and round orders, each load run
//!    as a typed description, shards;
//! 3. [`execute`]: corpus, servers, measurements, rounds; typed events;
//! 4. [`analyse`]: cells, decisions, verdicts, answers;
//! 5. [`render`]: the plan as text, the report (HTML, markdown, CSV,
//!    terminal), which begins with the baseline's pairs ([`render::versus`]);
//!
//! then [`runner`], which runs a study through layers 2–4, and the command
//! line ([`cli_main`], with its progress bar).

#![forbid(unsafe_code)]

pub mod analyse;
mod cli;
pub mod execute;
pub mod plan;
pub mod render;
pub mod runner;
pub mod spec;
pub mod studies;

pub use cli::gate::run_paired;
pub use cli::{cli_main, write_run_files};
pub use studies::{builtin, load_study, restrict_servers, BUILTINS};

// The modules by their short names.
pub use analyse::{answers, decisions};
pub use execute::{corpus, cpu, env, sampler, servers, tls};
pub use plan::{rounds, shard};
pub use render::report;

/// The idle-connections workload (`kind = "idle"`) across the layers: its
/// study-file fields, its plan, the holder and its report tables.
pub mod idle {
    pub use crate::execute::idle::{annotate, Census, Holder, MAX_CONNECTING, PARTIAL_REQUEST};
    pub use crate::plan::idle::{conns_of, describe, HoldSpec};
    pub use crate::render::idle::{html_section, rows, summary_lines, Row};
    pub use crate::spec::{
        validate_idle as validate, IdleSend, DEFAULT_IDLE_CONNS, MAX_IDLE_CONNS,
    };
}
