//! Stable wire error codes and their default retryability.

use serde::{Deserialize, Serialize};

/// The stable `error.code` values of protocol v1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    NoAmbientContext,
    InvalidRequest,
    NotFound,
    RevisionConflict,
    IdempotencyConflict,
    IndexNotReady,
    ScopeViolation,
    ConfigError,
    ContentTooLarge,
    IntegrityError,
    UnsupportedVersion,
    TransportError,
    ReasonerError,
    InternalError,
}

impl ErrorCode {
    /// Every code, in the order the protocol lists them.
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::NoAmbientContext,
        ErrorCode::InvalidRequest,
        ErrorCode::NotFound,
        ErrorCode::RevisionConflict,
        ErrorCode::IdempotencyConflict,
        ErrorCode::IndexNotReady,
        ErrorCode::ScopeViolation,
        ErrorCode::ConfigError,
        ErrorCode::ContentTooLarge,
        ErrorCode::IntegrityError,
        ErrorCode::UnsupportedVersion,
        ErrorCode::TransportError,
        ErrorCode::ReasonerError,
        ErrorCode::InternalError,
    ];

    /// The wire spelling, for example `REVISION_CONFLICT`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NoAmbientContext => "NO_AMBIENT_CONTEXT",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::RevisionConflict => "REVISION_CONFLICT",
            ErrorCode::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ErrorCode::IndexNotReady => "INDEX_NOT_READY",
            ErrorCode::ScopeViolation => "SCOPE_VIOLATION",
            ErrorCode::ConfigError => "CONFIG_ERROR",
            ErrorCode::ContentTooLarge => "CONTENT_TOO_LARGE",
            ErrorCode::IntegrityError => "INTEGRITY_ERROR",
            ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorCode::TransportError => "TRANSPORT_ERROR",
            ErrorCode::ReasonerError => "REASONER_ERROR",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }

    /// Whether a caller may retry the identical request automatically. `REASONER_ERROR`
    /// decides per case; this is its conservative default.
    pub fn default_retryable(self) -> bool {
        matches!(self, ErrorCode::IndexNotReady | ErrorCode::TransportError)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
