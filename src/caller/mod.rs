//! Caller-side compositions that never reach the daemon as operations: `remember` (compile a
//! note into quoted claims, preview, then plan ordinary `artifact.put`/`claim.assert`
//! mutations), `checkpoint` (a private, last-write-wins note per session) and `pending`
//! (review of those notes).
//!
//! **Invariant:** nothing here talks to the daemon. The CLI resolves the ambient context,
//! calls into this module for a plan, and submits the planned protocol inputs itself.
//!
//! **Invariant:** the claim compiler only proposes typed statements with exact quotes. Byte
//! spans are computed here, in Rust, and scope, confidence, relations, lifecycle and the
//! decision to write are never the compiler's.

pub mod checkpoint;
pub mod compiler;
mod error;
pub mod findings;
pub mod proposal;
pub mod remember;
mod secrets;
#[cfg(test)]
mod test_support;

pub use error::CallerError;
