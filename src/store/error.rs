//! `StoreError`: everything a store operation can fail with, from domain refusals (not
//! found, revision conflict, scope) to SQLite and blob failures, each keeping its source.

use std::sync::Arc;

use serde_json::{Value, json};

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
    Archive(#[from] ArchiveError),
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
    #[error("PostgreSQL error: {}", pg_message(.0))]
    Postgres(#[from] postgres::Error),
    #[error("the PostgreSQL transaction this mutation belonged to failed: {0}")]
    PostgresGroup(#[source] Arc<StoreError>),
    #[error("no PostgreSQL connection available: {0}")]
    PostgresPool(#[from] r2d2::Error),
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    /// Store code that exists for one backend only, reached on the other.
    #[error("{}: {}", ErrorCode::InternalError.prefix(), .0)]
    Unsupported(String),
    /// The PostgreSQL store cannot be reached: not started yet, stopped, restarting, or no
    /// connection could be made (see [`StoreError::is_store_unavailable`]).
    #[error("{}: the PostgreSQL store is unavailable: {}", ErrorCode::InternalError.prefix(), .0)]
    Unavailable(String),
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

impl StoreError {
    /// Whether the failure is transient on PostgreSQL: the store is unavailable (see
    /// [`StoreError::is_store_unavailable`]), no connection was available, or the server
    /// refused the transaction for concurrency reasons (serialization failure, deadlock, lock
    /// or idle timeout, too many connections). Nothing of the failed mutation was
    /// acknowledged; retrying it with the same idempotency key is safe.
    pub fn is_transient_postgres(&self) -> bool {
        fn concurrency(e: &postgres::Error) -> bool {
            use postgres::error::SqlState;
            e.code().is_some_and(|code| {
                [
                    SqlState::T_R_SERIALIZATION_FAILURE,
                    SqlState::T_R_DEADLOCK_DETECTED,
                    SqlState::LOCK_NOT_AVAILABLE,
                    SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                    SqlState::QUERY_CANCELED,
                    SqlState::TOO_MANY_CONNECTIONS,
                ]
                .contains(code)
            })
        }
        if self.is_store_unavailable() {
            return true;
        }
        match self {
            StoreError::Postgres(e) => concurrency(e),
            StoreError::PostgresGroup(e) => e.is_transient_postgres(),
            StoreError::PostgresPool(_) => true,
            _ => false,
        }
    }

    /// Whether the failure is the PostgreSQL server being unreachable or restarting, not
    /// anything about the request: a connection could not be made or was closed (refused,
    /// reset, broken pipe, I/O), the server is starting up or shutting down (`57P03`), it
    /// terminated the session (`57P01`, `pg_terminate_backend` or a fast/immediate shutdown;
    /// `57P02` after a crash of another backend), any connection exception (class `08`), or
    /// the front end has not reached it yet ([`StoreError::Unavailable`]). The wire reports these
    /// with `details.reason: "store_unavailable"` (see `service::error`).
    pub fn is_store_unavailable(&self) -> bool {
        fn unavailable(e: &postgres::Error) -> bool {
            use postgres::error::SqlState;
            if e.is_closed() {
                return true;
            }
            match e.code() {
                Some(code) => {
                    [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code)
                        // Class 08: connection exceptions.
                        || code.code().starts_with("08")
                }
                // No SQLSTATE: unavailable only when talking to the server failed (I/O), not
                // when a value could not be converted.
                None => std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>()),
            }
        }
        match self {
            StoreError::Unavailable(_) => true,
            StoreError::Postgres(e) => unavailable(e),
            StoreError::PostgresGroup(e) => e.is_store_unavailable(),
            _ => false,
        }
    }
}

/// The server's own message (with its SQLSTATE) when there is one: the driver's `Display`
/// says only "db error".
fn pg_message(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    }
}

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why an archive cannot be imported. The service maps each case to a wire code (see
/// `service::error_body`); the export format itself is `store::portable`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The path holds no manifest, or not one of this format.
    #[error("not a Memoree export: {0}")]
    NotAnArchive(String),
    /// The archive was written by a newer format version.
    #[error("archive format version {found} is newer than this binary reads ({supported}); upgrade memoree")]
    FutureVersion { found: u64, supported: u32 },
    /// Truncated or tampered: a digest, count or size does not match the manifest.
    #[error("the archive is damaged: {0}")]
    Damaged(String),
    /// A record is not valid for its type or contradicts another record.
    #[error("the archive holds an invalid record: {0}")]
    Malformed(String),
    /// Ids in the archive exist in the target with different content.
    #[error("the archive collides with this store: {count} records have ids that exist here with different content; first: {}", first.join("; "))]
    Collision { count: usize, first: Vec<String> },
    /// `--into-empty` aimed at a store that holds memory.
    #[error("the target store is not empty: {0}")]
    TargetNotEmpty(String),
}

impl ArchiveError {
    /// The hint sent with the error.
    pub fn hint(&self) -> &'static str {
        match self {
            ArchiveError::NotAnArchive(_) => "Pass the directory written by `memoree export` (it holds manifest.json).",
            ArchiveError::FutureVersion { .. } => "Import it with the memoree version that wrote it, or a newer one.",
            ArchiveError::Damaged(_) => {
                "Nothing was imported. Copy the archive again from its source, or export again; a partial copy is refused."
            }
            ArchiveError::Malformed(_) => {
                "Nothing was imported. The archive was not written by a compatible memoree export."
            }
            ArchiveError::Collision { .. } => {
                "Nothing was imported. Those ids already hold different memory here; import into another store, or remove the conflicting source records before exporting."
            }
            ArchiveError::TargetNotEmpty(_) => {
                "Use --merge to bring the archive into a store that holds memory, or import into a new data directory."
            }
        }
    }

    /// `details` of the error body: `reason` plus the case's facts.
    pub fn details(&self) -> Value {
        match self {
            ArchiveError::NotAnArchive(_) => json!({"reason": "not_an_archive"}),
            ArchiveError::FutureVersion { found, supported } => json!({
                "reason": "archive_version_unsupported", "archive_format_version": found, "supported_format_version": supported,
            }),
            ArchiveError::Damaged(_) => json!({"reason": "archive_damaged"}),
            ArchiveError::Malformed(_) => json!({"reason": "archive_record_invalid"}),
            ArchiveError::Collision { count, first } => {
                json!({"reason": "import_collision", "collisions": count, "first_collisions": first})
            }
            ArchiveError::TargetNotEmpty(_) => json!({"reason": "target_not_empty"}),
        }
    }
}
