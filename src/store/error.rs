//! `StoreError`: everything a store operation can fail with, from domain refusals (not
//! found, revision conflict, scope) to SQLite and blob failures, each keeping its source.

use std::sync::Arc;

use crate::blob::BlobError;
use crate::protocol::ErrorCode;

/// A store failure. Domain variants carry the decision-relevant identifiers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{}: {}", ErrorCode::InvalidRequest.prefix(), .0)]
    Invalid(String),
    #[error("{}: {}", ErrorCode::NotFound.prefix(), .0)]
    NotFound(String),
    /// The entity (or the revision) was purged: its content is erased; a tombstone remains.
    #[error("{}: {entity_type} {entity_id}{} was purged (its content is erased){}", ErrorCode::NotFound.prefix(), revision_id.as_deref().map(|r| format!(" revision {r}")).unwrap_or_default(), purged_at.as_deref().map(|at| format!(" at {at}")).unwrap_or_default())]
    Purged {
        entity_type: &'static str,
        entity_id: String,
        revision_id: Option<String>,
        purged_at: Option<String>,
        reason: Option<String>,
    },
    /// An export archive that cannot be imported (see `store::portable`).
    #[error(transparent)]
    Archive(#[from] super::portable::ArchiveError),
    #[error("{}: {entity_type} {entity_id} is at revision {current}, not {requested}", ErrorCode::RevisionConflict.prefix())]
    RevisionConflict {
        entity_type: &'static str,
        entity_id: String,
        current: String,
        requested: String,
    },
    #[error("{} for key {scoped_key}", ErrorCode::IdempotencyConflict.prefix())]
    IdempotencyConflict { scoped_key: String },
    #[error("{}: {}", ErrorCode::ScopeViolation.prefix(), .0)]
    Scope(String),
    #[error("{} through commit sequence {requested}; current sequence is {current}", ErrorCode::IndexNotReady.prefix())]
    IndexNotReady { requested: i64, current: i64 },
    #[error("{}: {}", ErrorCode::IntegrityError.prefix(), .0)]
    Integrity(String),
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Config(String),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the batch this mutation belonged to failed to commit: {0}")]
    Commit(#[source] Arc<rusqlite::Error>),
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the store writer has shut down")]
    WriterGone,
    #[error("{}: {}", ErrorCode::InternalError.prefix(), .0)]
    Internal(String),
}

impl StoreError {
    /// Whether the failure is the disk (or quota) being full.
    pub fn is_storage_full(&self) -> bool {
        fn sqlite_full(e: &rusqlite::Error) -> bool {
            matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull)
        }
        match self {
            StoreError::Sqlite(e) => sqlite_full(e),
            StoreError::Commit(e) => sqlite_full(e),
            StoreError::Blob(e) => e.is_storage_full(),
            StoreError::Io(e) => crate::blob::is_storage_full(e),
            _ => false,
        }
    }
}

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;
