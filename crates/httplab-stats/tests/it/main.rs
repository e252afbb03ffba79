//! Every integration test of httplab-stats in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.

mod counts;
mod draws;
mod reference;
mod session_simulation;
mod simulation;
mod unpaired;
mod unpaired_simulation;
mod verdict;
