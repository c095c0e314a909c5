//! Service-level tests for `search`, `memory.recall` and `context.build` (issues 6 and 13). Every
//! response is checked against the hand-written result schemas.

mod agent;
mod candidates;
mod citation;
mod context;
mod qualification;
mod recall;
mod search;
mod semantic;
pub(super) mod support;
mod vectors;
