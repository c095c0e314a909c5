//! `doctor`: the health probe the CLI uses to find and identify the daemon.
//!
//! A minimal stand-in until the admin operations land: it reports the serving process and
//! the last commit sequence, nothing about disk usage.

use serde_json::json;

use crate::protocol::meta::EmptyInput;
use crate::service::{Call, Output, Service, ServiceError};

pub(super) fn doctor(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let _: EmptyInput = call.input()?;
    let last_commit_seq = service.store().last_commit_seq()?;
    Output::read(json!({
        "status": "ok",
        "running": true,
        "daemon_pid": service.runtime().daemon_pid.unwrap_or(0),
        "authoritative_store": "sqlite_wal",
        "retrieval_mode": "fts5",
        "last_commit_seq": last_commit_seq,
    }))
}
