//! Request and response envelopes, the ambient context they carry, and the error body.
//!
//! [`Request<I>`] is generic over its input: the service receives `Request<Value>` (the
//! input is validated against its schema before it is decoded), a client builds
//! `Request<ArtifactPutInput>` and so on from typed inputs ([`Input`]). [`Response<R>`] is
//! likewise `Response<Value>` as sent and `Response<R>` once a client decodes its result.
//!
//! The envelope keeps its declared field order on the wire; every object inside `result` is
//! emitted with keys sorted (the service converts results to `serde_json::Value`, whose map
//! is ordered).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::RequestId;
use super::{ErrorCode, Operation};

/// The only protocol version this implementation speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The `request_id` used when a daemon cannot read one from a malformed request.
pub const TRANSPORT_REQUEST_ID: &str = "req_transport";
/// The `request_id` used when the CLI fails before a request exists.
pub const CLI_REQUEST_ID: &str = "req_cli";
/// `error.details.reason` of the envelope a daemon sends when its connection limit is reached.
pub const CONNECTION_LIMIT_REASON: &str = "connection_limit";

fn default_version() -> u64 {
    u64::from(PROTOCOL_VERSION)
}

/// The input of one operation: which operation it belongs to and what it returns.
///
/// Every input type of `protocol::*` implements it, so a client can build
/// `Request::new(id, input)` without naming the operation and decode the result as
/// [`Input::Output`].
pub trait Input: Serialize + DeserializeOwned {
    /// The operation this input belongs to.
    const OP: Operation;
    /// The operation's `result`.
    type Output: Serialize + DeserializeOwned;
}

/// One protocol request. Unknown envelope fields are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request<I = Value> {
    /// Protocol version; defaults to 1, anything else is `UNSUPPORTED_VERSION`.
    #[serde(default = "default_version")]
    pub v: u64,
    /// Correlates the response; required, 1..=256 bytes.
    pub request_id: RequestId,
    pub op: Operation,
    /// Required for mutations; identifies the logical mutation, not a retry attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The ambient context the client resolved (or an explicit one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AmbientContext>,
    /// Where the client found the context; echoed as `resolved_from`.
    #[serde(default, skip_serializing_if = "ContextSource::is_none")]
    pub context_source: ContextSource,
    /// Operation-specific input; a missing input is `null`.
    #[serde(default)]
    pub input: I,
}

impl Request<Value> {
    /// A version-1 request for `op` with a raw input and an empty context source.
    pub fn raw(request_id: impl Into<RequestId>, op: Operation, input: Value) -> Request {
        Request::envelope(request_id.into(), op, input)
    }
}

impl<I: Input> Request<I> {
    /// A version-1 request for `input`'s operation, without key or context.
    pub fn new(request_id: impl Into<RequestId>, input: I) -> Request<I> {
        Request::envelope(request_id.into(), I::OP, input)
    }
}

impl<I> Request<I> {
    fn envelope(request_id: RequestId, op: Operation, input: I) -> Request<I> {
        Request {
            v: default_version(),
            request_id,
            op,
            idempotency_key: None,
            context: None,
            context_source: ContextSource::None,
            input,
        }
    }

    /// Sets the idempotency key (mutations require one).
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Request<I> {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets the ambient context and says where it came from.
    pub fn with_context(mut self, context: AmbientContext, source: ContextSource) -> Request<I> {
        self.context = Some(context);
        self.context_source = source;
        self
    }

    /// The envelope without its input, and the input.
    pub fn split(self) -> (Request<()>, I) {
        let Request {
            v,
            request_id,
            op,
            idempotency_key,
            context,
            context_source,
            input,
        } = self;
        let envelope = Request {
            v,
            request_id,
            op,
            idempotency_key,
            context,
            context_source,
            input: (),
        };
        (envelope, input)
    }
}

/// The ambient scope of a request: workspace, project, optional task and component, and
/// read-only pins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmbientContext {
    pub workspace_id: String,
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    #[serde(default)]
    pub pins: Vec<String>,
}

impl AmbientContext {
    /// A project-level context without component or pins.
    pub fn project(workspace_id: impl Into<String>, project_id: impl Into<String>) -> AmbientContext {
        AmbientContext {
            workspace_id: workspace_id.into(),
            project_id: project_id.into(),
            task_id: None,
            component: None,
            pins: Vec::new(),
        }
    }

    /// The same scope without pins (the owner context recorded on entities).
    pub fn without_pins(&self) -> AmbientContext {
        AmbientContext {
            pins: Vec::new(),
            ..self.clone()
        }
    }
}

crate::wire_enum! {
    /// Where the ambient context came from.
    #[derive(Default)]
    pub enum ContextSource {
        Explicit = "explicit",
        Session = "session",
        Marker = "marker",
        Personal = "personal",
        #[default]
        None = "none",
    }
}

impl ContextSource {
    pub fn is_none(&self) -> bool {
        matches!(self, ContextSource::None)
    }
}

crate::wire_enum! {
    /// A retrieval horizon. Only `ambient` is a default; the others are one-request choices
    /// that need a reason.
    #[derive(Default)]
    pub enum Horizon {
        #[default]
        Ambient = "ambient",
        Workspace = "workspace",
        Personal = "personal",
    }
}

impl Horizon {
    pub fn is_broad(self) -> bool {
        !matches!(self, Horizon::Ambient)
    }
}

/// The context echoed on a successful context-bearing response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedContext {
    pub workspace_id: String,
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    #[serde(default)]
    pub pins: Vec<String>,
    pub resolved_from: ContextSource,
    pub horizon: Horizon,
    pub broadened: bool,
}

impl ResolvedContext {
    pub fn new(context: &AmbientContext, source: ContextSource, horizon: Horizon) -> Self {
        ResolvedContext {
            workspace_id: context.workspace_id.clone(),
            project_id: context.project_id.clone(),
            task_id: context.task_id.clone(),
            component: context.component.clone(),
            pins: context.pins.clone(),
            resolved_from: source,
            horizon,
            broadened: horizon.is_broad(),
        }
    }

    pub fn ambient(&self) -> AmbientContext {
        AmbientContext {
            workspace_id: self.workspace_id.clone(),
            project_id: self.project_id.clone(),
            task_id: self.task_id.clone(),
            component: self.component.clone(),
            pins: self.pins.clone(),
        }
    }
}

/// One response envelope. Field order is the wire order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response<R = Value> {
    pub v: u32,
    pub request_id: RequestId,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ResolvedContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_seq: Option<i64>,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

fn none<R>() -> Option<R> {
    None
}

impl<R> Response<R> {
    /// A success envelope.
    pub fn success(request_id: impl Into<RequestId>, result: R) -> Response<R> {
        Response {
            v: PROTOCOL_VERSION,
            request_id: request_id.into(),
            ok: true,
            context: None,
            commit_seq: None,
            result: Some(result),
            error: None,
            warnings: Vec::new(),
        }
    }

    /// The error code of a failure envelope.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// The result of a success, or the error of a failure (`None` only for an envelope
    /// that has neither, which no conforming server sends).
    pub fn into_result(self) -> Option<Result<R, ErrorBody>> {
        match (self.ok, self.result, self.error) {
            (true, Some(result), _) => Some(Ok(result)),
            (_, _, Some(error)) => Some(Err(error)),
            _ => None,
        }
    }
}

impl Response<Value> {
    /// A failure envelope; failures never carry a context.
    pub fn failure(request_id: impl Into<RequestId>, error: ErrorBody) -> Response {
        Response {
            v: PROTOCOL_VERSION,
            request_id: request_id.into(),
            ok: false,
            context: None,
            commit_seq: None,
            result: None,
            error: Some(error),
            warnings: Vec::new(),
        }
    }

    /// The same envelope with its result decoded as `R`.
    pub fn decode<R: DeserializeOwned>(self) -> Result<Response<R>, serde_json::Error> {
        let result = self.result.map(serde_json::from_value).transpose()?;
        Ok(Response {
            v: self.v,
            request_id: self.request_id,
            ok: self.ok,
            context: self.context,
            commit_seq: self.commit_seq,
            result,
            error: self.error,
            warnings: self.warnings,
        })
    }
}

/// The `error` object of a failure envelope. `details` is always present (`null` when
/// there are none).
///
/// A code this binary does not know (a newer server's, say `FEEDBACK_ERROR`) is read, not
/// refused: `code` is then `INTERNAL_ERROR` (what a caller may rely on: not one of the
/// codes it handles, exit status 1) and [`ErrorBody::unrecognized_code`] keeps the code as
/// sent, which is what is written back out, so the envelope passes through unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireErrorBody", into = "WireErrorBody")]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    pub hint: Option<String>,
    pub details: Value,
    /// The code as received, when it is none of [`ErrorCode`].
    pub unrecognized_code: Option<String>,
}

/// [`ErrorBody`] as it is on the wire: the code as a string.
#[derive(Serialize, Deserialize)]
struct WireErrorBody {
    code: String,
    message: String,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(default)]
    details: Value,
}

impl From<WireErrorBody> for ErrorBody {
    fn from(wire: WireErrorBody) -> ErrorBody {
        let (code, unrecognized_code) = match ErrorCode::parse(&wire.code) {
            Some(code) => (code, None),
            None => (ErrorCode::InternalError, Some(wire.code)),
        };
        ErrorBody {
            code,
            message: wire.message,
            retryable: wire.retryable,
            hint: wire.hint,
            details: wire.details,
            unrecognized_code,
        }
    }
}

impl From<ErrorBody> for WireErrorBody {
    fn from(body: ErrorBody) -> WireErrorBody {
        WireErrorBody {
            code: body.unrecognized_code.unwrap_or_else(|| body.code.as_str().to_owned()),
            message: body.message,
            retryable: body.retryable,
            hint: body.hint,
            details: body.details,
        }
    }
}

impl ErrorBody {
    /// An error with the code's default retryability, no hint and no details. `message` is
    /// the complete text; see [`ErrorBody::prefixed`] for the usual `<code text>: …` form.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code,
            message: message.into(),
            retryable: code.default_retryable(),
            hint: None,
            details: Value::Null,
            unrecognized_code: None,
        }
    }

    /// The code as it is on the wire (see [`ErrorBody::unrecognized_code`]).
    pub fn wire_code(&self) -> &str {
        self.unrecognized_code.as_deref().unwrap_or(self.code.as_str())
    }

    /// An error whose message is the code's prefix and `detail`, for example
    /// `invalid request: title must not be empty`.
    pub fn prefixed(code: ErrorCode, detail: impl std::fmt::Display) -> ErrorBody {
        ErrorBody::new(code, format!("{}: {detail}", code.prefix()))
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> ErrorBody {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_details(mut self, details: Value) -> ErrorBody {
        self.details = details;
        self
    }

    pub fn with_retryable(mut self, retryable: bool) -> ErrorBody {
        self.retryable = retryable;
        self
    }

    /// Whether this is a daemon's retryable "connection limit reached" error.
    pub fn is_connection_limit(&self) -> bool {
        self.code == ErrorCode::TransportError
            && self.retryable
            && self.details.get("reason").and_then(Value::as_str) == Some(CONNECTION_LIMIT_REASON)
    }
}

/// A non-fatal note attached to a response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[cfg(test)]
mod error_body_tests {
    use super::*;

    #[test]
    fn an_unknown_error_code_is_read_as_internal_error_and_written_back_as_received() {
        let wire = serde_json::json!({"code": "FEEDBACK_ERROR", "message": "feedback error: x", "retryable": false, "details": null});
        let body: ErrorBody = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(body.code, ErrorCode::InternalError);
        assert_eq!(body.wire_code(), "FEEDBACK_ERROR");
        assert_eq!(serde_json::to_value(&body).unwrap(), wire);
        let known: ErrorBody = serde_json::from_value(
            serde_json::json!({"code": "NOT_FOUND", "message": "not found: x", "retryable": false}),
        )
        .unwrap();
        assert_eq!((known.code, known.unrecognized_code), (ErrorCode::NotFound, None));
    }
}
