//! Every integration test of httplab in one test binary: each module is one
//! former test file (one binary per crate: each extra binary relinks the whole
//! dependency graph). Shared helpers are modules too.

mod compare;
mod exit_status;
mod function_length;
mod live;
mod merge;
mod module_cycles;
mod netns;
mod processes;
mod readme_options;
