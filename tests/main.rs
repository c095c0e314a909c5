//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod context;
mod daemon;
mod remember;
mod sweep;
mod wrappers;
mod wrappers_more;
