//! Service-level tests for `search`, `memory.recall` and `context.build` (issue 6). Every
//! response is checked against the hand-written result schemas.

mod context;
mod recall;
mod search;
pub(super) mod support;
