//! The seam between a caller and a service: one request document in, one response
//! envelope out.
//!
//! [`Transport`] is implemented by the socket client (`client::SocketClient`, a daemon over
//! a Unix socket or loopback TCP), by `client::Autostart` (the default daemon, started on
//! demand) and by `service::InProcess` (a service in this process). Neither side depends on
//! the other: both depend on this trait.
//!
//! Callers use [`Exchange`], implemented for every transport:
//! - [`Exchange::exchange`] sends a typed [`Request<I>`] and decodes the result as the
//!   operation's output type, for programs that read fields (`eval`, `demo`, an MCP server);
//! - [`Exchange::send`] sends a typed request and keeps the result as JSON, for callers that
//!   pass the envelope on unchanged (the CLI prints it);
//! - [`Exchange::send_value`] sends a raw document (`memoree call`).
//!
//! A request becomes bytes in exactly one place, [`encode`].

use serde::Serialize;
use serde_json::Value;

use crate::protocol::limits::MAX_FRAME_BYTES;
use crate::protocol::{ErrorBody, ErrorCode, Input, Request, Response, TlsFailure};

/// A client-side failure to obtain a usable response envelope at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting, sending or receiving failed; retryable.
    #[error("{}: {}", ErrorCode::TransportError.prefix(), .0)]
    Transport(String),
    /// A TLS session could not be established: a trust or credential problem, reported as
    /// a `TRANSPORT_ERROR` that is not retryable, with `details.reason` naming it.
    #[error("{}: {message}", ErrorCode::TransportError.prefix())]
    Tls { failure: TlsFailure, message: String },
    /// The request or the response exceeds the frame limit.
    #[error("{}: {}", ErrorCode::ContentTooLarge.prefix(), .0)]
    TooLarge(String),
    /// The endpoint or local configuration is unusable.
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Config(String),
    /// A response arrived but its result is not what the operation returns.
    #[error("{}: the {op} result could not be decoded: {source}", ErrorCode::InternalError.prefix())]
    UnexpectedResult {
        op: crate::protocol::Operation,
        #[source]
        source: serde_json::Error,
    },
}

impl ClientError {
    /// The wire code reported for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            ClientError::Transport(_) | ClientError::Tls { .. } => ErrorCode::TransportError,
            ClientError::TooLarge(_) => ErrorCode::ContentTooLarge,
            ClientError::Config(_) => ErrorCode::ConfigError,
            ClientError::UnexpectedResult { .. } => ErrorCode::InternalError,
        }
    }

    /// Whether the same request may be retried as is: the code's default, except for TLS
    /// failures, which need a setting changed first.
    pub fn retryable(&self) -> bool {
        match self {
            ClientError::Tls { .. } => false,
            other => other.code().default_retryable(),
        }
    }

    /// What to change, for failures a user can fix.
    pub fn hint(&self) -> Option<&'static str> {
        let ClientError::Tls { failure, .. } = self else {
            return None;
        };
        Some(match failure {
            TlsFailure::ServerUntrusted => {
                "Point MEMOREE_TLS_CA (or [tls] ca in config.toml) at the CA certificate that issued the server's certificate."
            }
            TlsFailure::ServerNameMismatch => {
                "Connect with the host name the server certificate carries, or set MEMOREE_TLS_SERVER_NAME (or [tls] server_name) to it."
            }
            TlsFailure::ServerCertificateExpired => "The server's certificate has expired; its operator must renew it.",
            TlsFailure::ClientCertificateMissing => {
                "Set MEMOREE_TLS_CERT and MEMOREE_TLS_KEY (or [tls] cert and key in config.toml) to this client's certificate and private key."
            }
            TlsFailure::ClientCertificateExpired => {
                "This client's certificate has expired: get a new one issued and its fingerprint listed in the server's [[remote.clients]]."
            }
            TlsFailure::ClientCertificateUntrusted => {
                "This client's certificate was not issued by the CA the server trusts for clients (its [remote] client_ca)."
            }
            TlsFailure::ClientCertificateNotListed => {
                "Ask the server's operator to list this certificate's fingerprint (shown in the message) in [[remote.clients]]."
            }
            TlsFailure::HandshakeFailed => {
                "Check that the endpoint is a memoree daemon listening on tls:// (TLS 1.3), not tcp://."
            }
        })
    }

    /// `details` of the failure envelope, when the failure has any.
    pub fn details(&self) -> Option<serde_json::Value> {
        match self {
            ClientError::Tls { failure, .. } => Some(serde_json::json!({"reason": failure})),
            _ => None,
        }
    }

    /// The wire error body of this failure: its code and its message, prefixed by the code,
    /// its retryability, and for a TLS refusal a hint and `details.reason`.
    pub fn error_body(&self) -> ErrorBody {
        let mut body = ErrorBody::new(self.code(), self.to_string()).with_retryable(self.retryable());
        if let Some(hint) = self.hint() {
            body = body.with_hint(hint);
        }
        match self.details() {
            Some(details) => body.with_details(details),
            None => body,
        }
    }
}

/// Sends one request document and returns its response envelope.
pub trait Transport: Send + Sync {
    /// Sends `body` verbatim as one request document (it need not be valid JSON) and
    /// returns the response envelope.
    fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError>;

    /// Sends several request documents and returns their responses in request order. The
    /// default sends them one after another; a socket client pipelines them on one
    /// connection ([`crate::client::socket::SocketSession::exchange_pipelined`]), which only
    /// a daemon listing `pipelined_requests` in `capabilities.extensions` supports. Requests
    /// sent together must not depend on each other's effects, and each must be safe to send
    /// twice (a read, or a mutation with an idempotency key).
    fn exchange_pipelined(&self, bodies: &[Vec<u8>]) -> Result<Vec<Response>, ClientError> {
        bodies.iter().map(|body| self.exchange_raw(body)).collect()
    }
}

/// The one place a request becomes the bytes of a request document: compact JSON, at most
/// the frame limit.
pub fn encode<I: Serialize>(request: &Request<I>) -> Result<Vec<u8>, ClientError> {
    encode_document(request)
}

fn encode_document<T: Serialize + ?Sized>(document: &T) -> Result<Vec<u8>, ClientError> {
    let body = serde_json::to_vec(document)
        .map_err(|e| ClientError::Config(format!("the request cannot be encoded as JSON: {e}")))?;
    if body.len() > MAX_FRAME_BYTES {
        return Err(ClientError::TooLarge(format!(
            "the request frame of {} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit",
            body.len()
        )));
    }
    Ok(body)
}

/// Typed and raw exchanges over any [`Transport`].
pub trait Exchange {
    /// Sends a typed request and decodes the result as its operation's output.
    fn exchange<I: Input>(&self, request: &Request<I>) -> Result<Response<I::Output>, ClientError>;

    /// Sends a typed request and returns the envelope as received.
    fn send<I: Serialize>(&self, request: &Request<I>) -> Result<Response, ClientError>;

    /// Sends a raw request document.
    fn send_value(&self, request: &Value) -> Result<Response, ClientError>;
}

impl<T: Transport + ?Sized> Exchange for T {
    fn exchange<I: Input>(&self, request: &Request<I>) -> Result<Response<I::Output>, ClientError> {
        self.send(request)?
            .decode()
            .map_err(|source| ClientError::UnexpectedResult { op: I::OP, source })
    }

    fn send<I: Serialize>(&self, request: &Request<I>) -> Result<Response, ClientError> {
        self.exchange_raw(&encode(request)?)
    }

    fn send_value(&self, request: &Value) -> Result<Response, ClientError> {
        self.exchange_raw(&encode_document(request)?)
    }
}
