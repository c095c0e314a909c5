//! Test support shared by unit tests, integration tests, the conformance runner and benches.
//! Not part of the product surface.

pub mod isolation;
pub mod parts;
pub mod postgres;
