//! Request and response envelopes, the ambient context they carry, and the error body.
//!
//! The envelope keeps its declared field order on the wire; every object inside `result` is
//! emitted with keys sorted (the service converts results to `serde_json::Value`, whose map
//! is ordered).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ErrorCode, Operation};

/// The only protocol version this implementation speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The `request_id` used when a daemon cannot read one from a malformed request.
pub const TRANSPORT_REQUEST_ID: &str = "req_transport";
/// The `request_id` used when the CLI fails before a request exists.
pub const CLI_REQUEST_ID: &str = "req_cli";

fn default_version() -> u64 {
    u64::from(PROTOCOL_VERSION)
}

/// One protocol request. Unknown envelope fields are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Protocol version; defaults to 1, anything else is `UNSUPPORTED_VERSION`.
    #[serde(default = "default_version")]
    pub v: u64,
    /// Correlates the response; required, 1..=256 bytes.
    pub request_id: String,
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
    pub input: Value,
}

impl Request {
    /// Builds a version-1 request with an empty context source.
    pub fn new(request_id: impl Into<String>, op: Operation, input: Value) -> Request {
        Request {
            v: default_version(),
            request_id: request_id.into(),
            op,
            idempotency_key: None,
            context: None,
            context_source: ContextSource::None,
            input,
        }
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
    /// The same scope without pins (the owner context recorded on entities).
    pub fn without_pins(&self) -> AmbientContext {
        AmbientContext {
            pins: Vec::new(),
            ..self.clone()
        }
    }
}

/// Where the ambient context came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextSource {
    Explicit,
    Session,
    Marker,
    Personal,
    #[default]
    None,
}

impl ContextSource {
    pub fn is_none(&self) -> bool {
        matches!(self, ContextSource::None)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContextSource::Explicit => "explicit",
            ContextSource::Session => "session",
            ContextSource::Marker => "marker",
            ContextSource::Personal => "personal",
            ContextSource::None => "none",
        }
    }
}

/// A retrieval horizon. Only `ambient` is a default; the others are one-request choices
/// that need a reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Horizon {
    #[default]
    Ambient,
    Workspace,
    Personal,
}

impl Horizon {
    pub fn as_str(self) -> &'static str {
        match self {
            Horizon::Ambient => "ambient",
            Horizon::Workspace => "workspace",
            Horizon::Personal => "personal",
        }
    }

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
pub struct Response {
    pub v: u32,
    pub request_id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ResolvedContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl Response {
    /// A success envelope.
    pub fn success(request_id: impl Into<String>, result: Value) -> Response {
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

    /// A failure envelope; failures never carry a context.
    pub fn failure(request_id: impl Into<String>, error: ErrorBody) -> Response {
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

    /// The error code of a failure envelope.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }
}

/// The `error` object of a failure envelope. `details` is always present (`null` when
/// there are none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(default)]
    pub details: Value,
}

impl ErrorBody {
    /// An error with the code's default retryability, no hint and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code,
            message: message.into(),
            retryable: code.default_retryable(),
            hint: None,
            details: Value::Null,
        }
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
}

/// A non-fatal note attached to a response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}
