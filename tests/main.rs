//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod context;
mod crash;
mod daemon;
mod faults;
mod inspect;
mod inspect_browser;
mod inspect_cdp;
mod inspect_fixture;
mod remember;
mod retry_storm;
mod sweep;
mod wrappers;
mod wrappers_more;
