//! Memoree: durable, cited, scoped local memory for AI agents, speaking protocol v1.
//!
//! See `ARCHITECTURE.md` for the code map and the invariants each module owns.

pub mod ambient;
pub mod blob;
pub mod caller;
pub mod cli;
pub mod client;
pub mod daemon;
pub mod eval;
pub mod fault;
pub mod frame;
pub mod fsutil;
pub mod import_tools;
pub mod inspect;
pub mod instructions;
pub mod mcp;
pub mod net;
pub mod paths;
pub mod progress;
pub mod protocol;
pub mod retrieval;
pub mod semantic;
pub mod service;
pub mod setup;
pub mod store;
pub mod sys;
#[doc(hidden)]
pub mod testkit;
pub mod timefmt;
pub mod tls;
pub mod transport;
