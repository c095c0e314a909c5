//! Service-level tests for relations, conflict cases, write scope and horizons (issue 5).

mod browse;
mod conflict;
mod grant;
mod isolation;
mod property;
mod relation;
mod scope;
mod support;
