//! The CLI's one error boundary: every failure of a command is a [`CliError`] (its source
//! kept), turned into the printed envelope exactly once, by [`Failure::into_response`].
//!
//! A failure belongs to a request: the one the command sent or was about to send, or
//! `req_cli` when the CLI failed before any request existed ([`CLI_REQUEST_ID`]).

use crate::ambient::AmbientError;
use crate::caller::CallerError;
use crate::cli::evidence::EvidenceSyntaxError;
use crate::daemon::DaemonError;
use crate::paths::PathsError;
use crate::protocol::{CLI_REQUEST_ID, ErrorBody, ErrorCode, RequestId, Response};
use crate::service::{ServiceError, error_body};
use crate::transport::ClientError;

/// Everything a command can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// No response could be obtained from the daemon.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Ambient context resolution, `init` or a session context failed.
    #[error(transparent)]
    Ambient(#[from] AmbientError),
    /// The default paths cannot be resolved.
    #[error(transparent)]
    Paths(#[from] PathsError),
    /// `remember`, `checkpoint` or `pending` failed.
    #[error(transparent)]
    Caller(#[from] CallerError),
    /// `memoree serve` could not start (or failed while stopping).
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    /// Work the CLI did with a service or store of its own (`demo`, `backup restore`), or a
    /// rule it shares with the service (`NO_AMBIENT_CONTEXT`).
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// `memoree inspect` could not start or stopped.
    #[error(transparent)]
    Inspect(#[from] crate::inspect::InspectError),
    /// A malformed `--evidence` locator.
    #[error("{}: {}", ErrorCode::InvalidRequest.prefix(), .0)]
    Evidence(#[from] EvidenceSyntaxError),
    /// An argument or input file the CLI itself refuses.
    #[error("{}: {}", ErrorCode::InvalidRequest.prefix(), .0)]
    Invalid(String),
    /// Local content over a size limit.
    #[error("{}: {}", ErrorCode::ContentTooLarge.prefix(), .0)]
    TooLarge(String),
    /// Unusable configuration (an endpoint, an environment variable).
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Config(String),
    /// A response whose content cannot be what it claims.
    #[error("{}: {}", ErrorCode::IntegrityError.prefix(), .0)]
    Integrity(String),
    /// Publishing a local file failed.
    #[error("I/O error: {0}")]
    Fs(#[from] crate::fsutil::FsError),
    /// A local file or process operation failed.
    #[error("I/O error: {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// Something that cannot happen did.
    #[error("{}: {}", ErrorCode::InternalError.prefix(), .0)]
    Internal(String),
    /// A failure envelope the daemon sent, passed on unchanged.
    #[error("{}", .0.error.as_ref().map_or("the daemon reported a failure", |e| e.message.as_str()))]
    Envelope(Box<Response>),
}

impl CliError {
    /// A local I/O failure while doing `what`.
    pub fn io(what: impl std::fmt::Display, source: std::io::Error) -> CliError {
        CliError::Io {
            what: what.to_string(),
            source,
        }
    }

    /// This failure, reported for `request_id`.
    pub fn at(self, request_id: impl Into<RequestId>) -> Failure {
        Failure {
            request_id: request_id.into(),
            error: Box::new(self),
        }
    }

    /// The wire error body of this failure: the one mapping from CLI failures to codes,
    /// retryability, hints and details.
    pub fn error_body(&self) -> ErrorBody {
        let plain = |code: ErrorCode| ErrorBody::new(code, self.to_string());
        match self {
            CliError::Client(error) => error.error_body(),
            CliError::Ambient(error) => plain(error.code()),
            CliError::Paths(error) => plain(error.code()),
            CliError::Inspect(error) => plain(error.code()),
            CliError::Caller(error) => {
                let body = plain(error.code()).with_retryable(error.retryable());
                match error.hint() {
                    Some(hint) => body.with_hint(hint),
                    None => body,
                }
            }
            CliError::Daemon(DaemonError::Store(error)) => error_body(error),
            CliError::Daemon(error) => ErrorBody::prefixed(error.code(), error),
            CliError::Service(error) => error_body(error),
            CliError::Evidence(_) | CliError::Invalid(_) => plain(ErrorCode::InvalidRequest),
            CliError::TooLarge(_) => plain(ErrorCode::ContentTooLarge),
            CliError::Config(_) => plain(ErrorCode::ConfigError),
            CliError::Integrity(_) => plain(ErrorCode::IntegrityError),
            CliError::Fs(_) | CliError::Io { .. } | CliError::Internal(_) => plain(ErrorCode::InternalError),
            CliError::Envelope(response) => response
                .error
                .clone()
                .unwrap_or_else(|| plain(ErrorCode::InternalError)),
        }
    }
}

/// A command's failure: the error and the request it belongs to.
#[derive(Debug)]
pub struct Failure {
    request_id: RequestId,
    error: Box<CliError>,
}

impl Failure {
    pub fn error(&self) -> &CliError {
        &self.error
    }

    /// The envelope printed for this failure. A daemon's own failure envelope is printed as
    /// it came back.
    pub fn into_response(self) -> Response {
        match *self.error {
            CliError::Envelope(response) => *response,
            error => Response::failure(self.request_id, error.error_body()),
        }
    }
}

/// Any error becomes a failure before a request existed (`req_cli`); use [`CliError::at`]
/// for one that belongs to a request.
impl<E: Into<CliError>> From<E> for Failure {
    fn from(error: E) -> Failure {
        error.into().at(CLI_REQUEST_ID)
    }
}

/// What a command returns.
pub type CliResult<T> = Result<T, Failure>;
