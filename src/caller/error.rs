//! The error type of the caller-side commands and its single mapping to the wire.

use std::path::PathBuf;

use crate::protocol::ErrorCode;

/// A failure of `remember`, `checkpoint` or `pending`. Each variant maps to exactly one wire
/// [`ErrorCode`]; see [`CallerError::code`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallerError {
    /// The caller's input is unusable as given.
    #[error("{}: {}", ErrorCode::InvalidRequest.prefix(), .0)]
    InvalidRequest(String),
    /// The input exceeds a size limit.
    #[error("{}: {}", ErrorCode::ContentTooLarge.prefix(), .0)]
    ContentTooLarge(String),
    /// A named local item does not exist.
    #[error("{}: {}", ErrorCode::NotFound.prefix(), .0)]
    NotFound(String),
    /// The environment or configuration cannot provide what the command needs.
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Config(String),
    /// The claim compiler failed or broke its output contract.
    #[error("{}: {message}", ErrorCode::ReasonerError.prefix())]
    Reasoner {
        message: String,
        retryable: bool,
        hint: Option<String>,
    },
    /// A local file could not be read or written.
    #[error("I/O error: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A pending checkpoint file exists but is not a valid checkpoint record.
    #[error("I/O error: pending checkpoint file {} is corrupt: {reason}", path.display())]
    CorruptCheckpoint { path: PathBuf, reason: String },
}

impl CallerError {
    /// Wraps an I/O error with a short description of what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> CallerError {
        CallerError::Io {
            context: context.into(),
            source,
        }
    }

    /// The wire error code for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            CallerError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            CallerError::ContentTooLarge(_) => ErrorCode::ContentTooLarge,
            CallerError::NotFound(_) => ErrorCode::NotFound,
            CallerError::Config(_) => ErrorCode::ConfigError,
            CallerError::Reasoner { .. } => ErrorCode::ReasonerError,
            CallerError::Io { .. } | CallerError::CorruptCheckpoint { .. } => ErrorCode::InternalError,
        }
    }

    /// Whether retrying the identical command may succeed. Only some compiler failures are.
    pub fn retryable(&self) -> bool {
        match self {
            CallerError::Reasoner { retryable, .. } => *retryable,
            other => other.code().default_retryable(),
        }
    }

    /// What to do about it, when there is more to say than the message.
    pub fn hint(&self) -> Option<String> {
        match self {
            CallerError::Reasoner { hint, .. } => hint.clone(),
            CallerError::CorruptCheckpoint { path, .. } => Some(format!(
                "inspect {} and delete it if it cannot be repaired; nothing else reads it",
                path.display()
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_its_wire_code_and_prefix() {
        let cases = [
            (
                CallerError::InvalidRequest("x".into()),
                ErrorCode::InvalidRequest,
                "invalid request: x",
            ),
            (
                CallerError::ContentTooLarge("x".into()),
                ErrorCode::ContentTooLarge,
                "content exceeds",
            ),
            (CallerError::NotFound("x".into()), ErrorCode::NotFound, "not found: x"),
            (
                CallerError::Config("x".into()),
                ErrorCode::ConfigError,
                "configuration error: x",
            ),
            (
                CallerError::io("reading x", std::io::Error::other("boom")),
                ErrorCode::InternalError,
                "I/O error: reading x: boom",
            ),
        ];
        for (error, code, prefix) in cases {
            assert_eq!(error.code(), code);
            assert!(error.to_string().starts_with(prefix), "{error}");
            assert!(!error.retryable());
            assert!(error.hint().is_none());
        }
    }

    #[test]
    fn reasoner_errors_carry_their_own_retryability_and_hint() {
        let error = CallerError::Reasoner {
            message: "timed out".into(),
            retryable: true,
            hint: Some("run `codex login`".into()),
        };
        assert_eq!(error.code(), ErrorCode::ReasonerError);
        assert_eq!(error.to_string(), "reasoning adapter error: timed out");
        assert!(error.retryable());
        assert_eq!(error.hint().as_deref(), Some("run `codex login`"));
    }
}
