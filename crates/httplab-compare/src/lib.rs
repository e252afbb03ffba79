//! `httplab compare BASE NEW`: a regression gate over saved results. Did my change make it
//! slower?
//!
//! Each side is one or more result documents of one kind — load results (`httplab load`,
//! possibly `--repeat N`), sweep results or study results — read into cells (the one load; a
//! sweep's steps and targets; a study's workload steps per server), each with one value per
//! run and metric, the errors as counts over the runs' calls ([`input`], [`metric`]). Every
//! (cell, metric) on both sides is one comparison of NEW against BASE: the ratio of geometric
//! means with Welch's interval on the log values (the runs of two builds share no rounds, so
//! they are not paired), or for the errors the exact test of the two error rates (no errors on
//! either side is not judged at all). All are decided as one family by the study's own rules
//! in `httplab-stats` (docs/statistics.md) — regression or improvement (the interval at the
//! level of every comparison of the invocation together is clear of 1), equivalent (that
//! interval within ±δ) or inconclusive (with the change these runs could have seen, or "no spread" with
//! fewer than two runs on a side) ([`judge`]). The answer comes first, then a table
//! ([`render`], through httplab-report's tables and charts); a regression worse than
//! `--threshold` gives exit status 1. Named baselines are kept in a directory ([`baseline`]).
//!
//! Sweeps are compared per step (matched by demanded rate, one value per sweep file) and by
//! their highest sustained rate, not paired across steps: a change rarely scales every step
//! alike (latency near the knee moves far more than below it), so the steps are not
//! replicates of one ratio.
//!
//! Runs no load and depends on no crate that does.

#![forbid(unsafe_code)]

pub mod baseline;
mod cli;
pub mod input;
pub mod judge;
pub mod metric;
pub mod paired;
pub mod render;

pub use cli::{cli_main, cli_main_with};
pub use judge::{judge, Judgement, Options, Row, Verdict};
