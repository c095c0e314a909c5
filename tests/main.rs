//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod context;
mod crash;
mod daemon;
mod faults;
mod remember;
mod remote;
mod retry_storm;
mod sweep;
mod wrappers;
mod wrappers_more;
