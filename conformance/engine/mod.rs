//! The conformance engine, shared by the in-tree runner (`cargo test --test conformance`,
//! `conformance/main.rs`) and the `memoree-conformance` kit (`conformance/kit.rs`). It speaks
//! only the protocol — `call` on stdin/stdout and daemon frames — so it checks any v1
//! implementation; the in-process transport and the golden rewriter stay in the in-tree runner.
//!
//! Flow: [`catalog`] (the data files) → [`plan`] (trials with level and basis, one per file ×
//! transport) → [`runner`] (`--jobs` threads, a fresh store per trial) → [`report`].

pub mod case;
pub mod catalog;
pub mod daemon;
pub mod frames;
pub mod golden;
pub mod level;
pub mod matcher;
pub mod normalize;
pub mod plan;
pub mod report;
pub mod retrieval;
pub mod runner;
pub mod schema;
pub mod targets;
pub mod transport;
