//! Layer 5, rendering: the plan as text (`--dry-run`, [`plan_text`]), and
//! the results as `results.json`, CSV tables, the self-contained
//! `index.html` and the terminal summary ([`report`], with the idle
//! workloads' tables in [`idle`]). Runs nothing.

pub mod idle;
pub mod plan_text;
pub mod report;
