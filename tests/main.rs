//! The integration test binary: every topic module compiles into this one target.

mod daemon;
mod support;
