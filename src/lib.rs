//! Memoree: durable, cited, scoped local memory for AI agents, speaking protocol v1.
//!
//! See `ARCHITECTURE.md` for the code map and the invariants each module owns.

pub mod caller;
pub mod protocol;
