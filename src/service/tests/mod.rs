//! The service's tests, one file or folder per topic, over temporary stores: every request
//! goes through [`Service::handle_value`](crate::service::Service) and every response is
//! checked against the hand-written schemas.
//!
//! - `envelope`: envelope rules and the artifact/claim lifecycle, including the promise that a
//!   failed mutation leaves nothing behind.
//! - `admin`: doctor, verify, reindex, backup and restore, instructions, capabilities, schema.
//! - `purge`: erasure through the service (the store's own purge tests live in `store`).
//! - `graph/`: relations, conflict cases, write scope, horizons and grants.
//! - `retrieval/`: search, recall, context.build, the agent path and semantics.
//! - `sweep/`: every operation swept with generated invalid input.
//! - `postgres/`: the same protocol on a PostgreSQL store across two front ends.

#[macro_use]
mod support;

mod admin;
mod envelope;
mod graph;
mod postgres;
mod purge;
mod retrieval;
mod sweep;
