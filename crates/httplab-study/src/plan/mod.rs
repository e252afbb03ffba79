//! Layer 2, the plan: what a study will run, decided from the study file
//! and the command line's choices, computed once as a value
//! ([`study_plan::StudyPlan`]: servers, every workload's steps, rounds and
//! metric, budget, pinning, run and time estimates) that `--dry-run` prints
//! and execution runs. Its steps and their offered load ([`steps`]), the protocol and the seeded round orders
//! ([`rounds`]), each load run as a typed description that becomes an
//! `httplab_load::LoadSpec` ([`load_run`]), pinning ([`pinning`]), client
//! shards ([`shard`]) and idle holds ([`idle`]). Nothing here starts a
//! process or opens a socket.

pub mod idle;
pub mod load_run;
pub mod pinning;
pub mod rounds;
pub mod shard;
pub mod steps;
pub mod study_plan;
pub mod text;
