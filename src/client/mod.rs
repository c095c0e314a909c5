//! How a caller reaches a service: one request document in, one response envelope out.
//!
//! [`Transport`] is the seam between the CLI (or the conformance runner) and a service:
//! [`InProcess`] calls [`Service::handle_value`] directly; [`socket::SocketClient`] speaks
//! framed JSON to a daemon, and [`autostart::Autostart`] starts the default daemon when it
//! is not running; [`control`] implements `daemon status|stop|restart`. Both yield identical envelopes for identical requests.

pub mod autostart;
pub mod control;
pub mod socket;

use serde_json::Value;

use crate::protocol::{CLI_REQUEST_ID, ErrorBody, ErrorCode, Response};
use crate::service::Service;

/// A client-side failure to obtain a response envelope at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting, sending or receiving failed; retryable.
    #[error("transport error: {0}")]
    Transport(String),
    /// The request or the response exceeds the frame limit.
    #[error("content exceeds the configured size limit: {0}")]
    TooLarge(String),
    /// The endpoint or local configuration is unusable.
    #[error("configuration error: {0}")]
    Config(String),
}

impl ClientError {
    /// The wire error body describing this failure.
    pub fn to_error_body(&self) -> ErrorBody {
        let code = match self {
            ClientError::Transport(_) => ErrorCode::TransportError,
            ClientError::TooLarge(_) => ErrorCode::ContentTooLarge,
            ClientError::Config(_) => ErrorCode::ConfigError,
        };
        ErrorBody::new(code, self.to_string())
    }

    /// A failure envelope for `request_id` describing this failure.
    pub fn to_response(&self, request_id: &str) -> Response {
        Response::failure(request_id, self.to_error_body())
    }
}

/// Sends one request document and returns its response envelope.
pub trait Transport: Send + Sync {
    fn exchange(&self, request: &Value) -> Result<Response, ClientError>;
}

/// Serves requests by calling a [`Service`] in this process.
#[derive(Debug, Clone)]
pub struct InProcess {
    service: Service,
}

impl InProcess {
    pub fn new(service: Service) -> InProcess {
        InProcess { service }
    }

    pub fn service(&self) -> &Service {
        &self.service
    }
}

impl Transport for InProcess {
    fn exchange(&self, request: &Value) -> Result<Response, ClientError> {
        Ok(self.service.handle_value(request.clone(), CLI_REQUEST_ID))
    }
}
