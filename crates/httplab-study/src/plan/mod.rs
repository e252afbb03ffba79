//! Layer 2, the plan: what a study will run, decided from the study file
//! alone. Its steps and their offered load ([`steps`]), run counts and time
//! estimates ([`estimate`]), the protocol and the seeded round orders
//! ([`rounds`]), each load run as a typed description that becomes an
//! `httplab_load::LoadSpec` ([`load_run`]), pinning ([`pinning`]), client
//! shards ([`shard`]) and idle holds ([`idle`]). Nothing here starts a
//! process or opens a socket.

pub mod estimate;
pub mod idle;
pub mod load_run;
pub mod pinning;
pub mod rounds;
pub mod shard;
pub mod steps;
pub mod text;
