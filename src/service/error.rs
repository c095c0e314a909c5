//! `ServiceError` and the one function that turns any failure into a wire error body.

use serde_json::json;

use crate::protocol::citation::CitationErrorKind;
use crate::protocol::{ErrorBody, ErrorCode, PROTOCOL_VERSION};
use crate::store::StoreError;
use crate::store::portable::ArchiveError;

/// Everything an operation can fail with. Store failures keep their source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    #[error("{}: {}", ErrorCode::InvalidRequest.prefix(), .0)]
    InvalidRequest(String),
    #[error("{}: {}", ErrorCode::ContentTooLarge.prefix(), .0)]
    ContentTooLarge(String),
    #[error("{}: {} needs a workspace and project", ErrorCode::NoAmbientContext.prefix(), .0)]
    NoAmbientContext(&'static str),
    #[error("{} {}", ErrorCode::UnsupportedVersion.prefix(), .0)]
    UnsupportedVersion(u64),
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Config(String),
    #[error("{}: {}", ErrorCode::IntegrityError.prefix(), .0)]
    Integrity(String),
    /// `citation.get` cannot return the cited bytes. `details` holds the kind's own fields
    /// (ids, offsets, sizes); `citation_error` and `next_action` are added by `error_body`.
    #[error("{} ({kind}): {text}", ErrorCode::CitationError.prefix())]
    Citation {
        kind: CitationErrorKind,
        text: String,
        details: serde_json::Map<String, serde_json::Value>,
    },
    /// Outside the workspaces of the caller's credential (see `service::Grant`).
    #[error("{}: {}", ErrorCode::ScopeViolation.prefix(), .0)]
    OutsideGrant(String),
    #[error("{}: {}", ErrorCode::InternalError.prefix(), .0)]
    Internal(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ServiceError {
    pub fn invalid(message: impl Into<String>) -> ServiceError {
        ServiceError::InvalidRequest(message.into())
    }
}

/// `details.reason` of a refusal outside a remote credential's workspaces.
pub const OUTSIDE_GRANT_REASON: &str = "outside_credential_workspaces";

/// `details.reason` of a failure caused by the PostgreSQL store being unreachable or
/// restarting (`INTERNAL_ERROR`, `retryable: true`); never given to an internal bug.
pub const STORE_UNAVAILABLE_REASON: &str = "store_unavailable";

/// How long a client should wait before retrying a `store_unavailable` failure
/// (`details.retry_after_ms`): about as long as a front end takes to notice the database again.
pub const STORE_UNAVAILABLE_RETRY_AFTER_MS: u64 = 1000;

/// The single mapping from failures to wire codes, retryability, hints and details.
pub fn error_body(error: &ServiceError) -> ErrorBody {
    let message = error.to_string();
    match error {
        ServiceError::InvalidRequest(_) => ErrorBody::new(ErrorCode::InvalidRequest, message),
        ServiceError::ContentTooLarge(_) => ErrorBody::new(ErrorCode::ContentTooLarge, message),
        ServiceError::NoAmbientContext(_) => ErrorBody::new(ErrorCode::NoAmbientContext, message).with_hint(
            "Run `memoree init` in the project directory, or start the agent with `memoree session exec --task NAME -- CMD`.",
        ),
        ServiceError::UnsupportedVersion(received) => ErrorBody::new(ErrorCode::UnsupportedVersion, message)
            .with_details(json!({"received_version": received, "supported_version": PROTOCOL_VERSION})),
        ServiceError::Config(_) => ErrorBody::new(ErrorCode::ConfigError, message),
        ServiceError::Integrity(_) => ErrorBody::new(ErrorCode::IntegrityError, message),
        ServiceError::OutsideGrant(_) => ErrorBody::new(ErrorCode::ScopeViolation, message)
            .with_hint("Use a context in one of this credential's workspaces, or ask the daemon's operator to list the workspace for this client in [[remote.clients]].")
            .with_details(json!({"reason": OUTSIDE_GRANT_REASON})),
        ServiceError::Citation { kind, details, .. } => {
            let mut details = details.clone();
            details.insert("citation_error".into(), json!(kind));
            details.insert("next_action".into(), json!(kind.next_action()));
            ErrorBody::new(ErrorCode::CitationError, message).with_details(details.into())
        }
        ServiceError::Internal(_) => ErrorBody::new(ErrorCode::InternalError, message),
        ServiceError::Store(store) => store_error_body(store, message),
    }
}

fn store_error_body(error: &StoreError, message: String) -> ErrorBody {
    if error.is_storage_full() {
        return ErrorBody::new(ErrorCode::InternalError, message)
            .with_retryable(true)
            .with_hint("The data directory is out of space. Nothing from this request was stored; free space and retry with the same idempotency key.")
            .with_details(json!({"reason": "storage_full"}));
    }
    if error.is_store_unavailable() {
        return ErrorBody::new(ErrorCode::InternalError, message)
            .with_retryable(true)
            .with_hint("The PostgreSQL store is unreachable or restarting. Retry the same request after a short wait (details.retry_after_ms), with the same idempotency key: a mutation whose reply was lost is applied at most once.")
            .with_details(json!({"reason": STORE_UNAVAILABLE_REASON, "retry_after_ms": STORE_UNAVAILABLE_RETRY_AFTER_MS}));
    }
    match error {
        StoreError::Invalid(_) => ErrorBody::new(ErrorCode::InvalidRequest, message),
        StoreError::NotFound(_) => ErrorBody::new(ErrorCode::NotFound, message),
        StoreError::Purged { entity_type, entity_id, revision_id, purged_at, reason } => {
            ErrorBody::new(ErrorCode::NotFound, message)
                .with_hint("The content was erased by a purge; history keeps only its tombstone (ids, sizes, digests).")
                .with_details(json!({
                    "state": "purged",
                    "entity_type": entity_type,
                    "entity_id": entity_id,
                    "revision_id": revision_id,
                    "purged_at": purged_at,
                    "reason": reason,
                }))
        }
        StoreError::Archive(archive) => archive_error_body(archive, message),
        StoreError::RevisionConflict { entity_type, entity_id, current, requested } => {
            ErrorBody::new(ErrorCode::RevisionConflict, message)
                .with_hint("Fetch the current revision and retry with its revision id.")
                .with_details(json!({
                    "entity_type": entity_type,
                    "entity_id": entity_id,
                    "current_revision": current,
                    "requested_revision": requested,
                }))
        }
        StoreError::IdempotencyConflict { scoped_key } => ErrorBody::new(ErrorCode::IdempotencyConflict, message)
            .with_hint("Reuse an idempotency key only for an exact retry of the same request; use a new key for a new mutation.")
            .with_details(json!({"idempotency_key": scoped_key})),
        StoreError::Scope(_) => ErrorBody::new(ErrorCode::ScopeViolation, message).with_hint(
            "Run the write from the owning project/task context; pins and exact gets are read-only and never grant write scope.",
        ),
        StoreError::IndexNotReady { requested, current } => ErrorBody::new(ErrorCode::IndexNotReady, message)
            .with_hint("Retry the same request with the same min_commit_seq shortly.")
            .with_details(json!({"requested_commit_seq": requested, "current_commit_seq": current})),
        StoreError::Integrity(_) | StoreError::Blob(_) => ErrorBody::new(ErrorCode::IntegrityError, message),
        StoreError::Config(_) => ErrorBody::new(ErrorCode::ConfigError, message),
        _ if is_busy(error) => ErrorBody::new(ErrorCode::InternalError, message).with_retryable(true),
        _ => ErrorBody::new(ErrorCode::InternalError, message),
    }
}

/// Archive refusals: a newer format is `UNSUPPORTED_VERSION`, damage (truncation, digest or
/// count mismatch) is `INTEGRITY_ERROR`, colliding ids and malformed records are
/// `INVALID_REQUEST`; `details.reason` names the case.
fn archive_error_body(error: &ArchiveError, message: String) -> ErrorBody {
    let code = match error {
        ArchiveError::FutureVersion { .. } => ErrorCode::UnsupportedVersion,
        ArchiveError::Damaged(_) => ErrorCode::IntegrityError,
        ArchiveError::NotAnArchive(_) | ArchiveError::Malformed(_) | ArchiveError::Collision { .. } => {
            ErrorCode::InvalidRequest
        }
        ArchiveError::TargetNotEmpty(_) => ErrorCode::InvalidRequest,
    };
    ErrorBody::new(code, message)
        .with_hint(error.hint())
        .with_details(error.details())
}

fn is_busy(error: &StoreError) -> bool {
    if error.is_transient_postgres() {
        return true;
    }
    let sqlite = match error {
        StoreError::Sqlite(e) => e,
        StoreError::Commit(e) => e.as_ref(),
        _ => return false,
    };
    matches!(sqlite, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}
