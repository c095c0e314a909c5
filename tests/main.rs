//! The integration test binary: one target, topic modules.

mod support;

mod cli;
mod client_example;
mod compose;
mod context;
mod crash;
mod daemon;
mod erasure;
mod faults;
mod inspect;
mod inspect_browser;
mod inspect_cdp;
mod inspect_fixture;
mod mcp_errors;
mod mcp_protocol;
mod mcp_python;
mod mcp_session;
mod mcp_support;
mod portable;
mod postgres;
mod remember;
mod remote;
mod retry_storm;
mod sweep;
mod switching;
mod wrappers;
mod wrappers_more;
