//! Layer 5, rendering: the plan as text (`--dry-run`, [`plan_text`]), and
//! the results as `results.json`, CSV tables, the self-contained
//! `index.html`, `summary.md` and the terminal summary ([`report`], with the idle
//! workloads' tables in [`idle`]), which begin with the answer for the
//! baseline's pairs ([`versus`]: "mine vs nginx: …"); index.html opens
//! with the forest plot of every verdict and the table of every server's
//! figures ([`overview`]; numbers written by [`numbers`]). Runs nothing.

pub mod idle;
pub mod numbers;
pub mod overview;
pub mod plan_text;
pub mod report;
pub mod versus;
