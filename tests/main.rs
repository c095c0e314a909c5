//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod context;
mod crash;
mod daemon;
mod erasure;
mod faults;
mod portable;
mod remember;
mod retry_storm;
mod sweep;
mod wrappers;
mod wrappers_more;
