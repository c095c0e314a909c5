//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod context;
mod remember;
mod sweep;
mod wrappers;
