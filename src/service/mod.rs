//! Protocol semantics: `Service::handle(Request) -> Response`, synchronous and infallible.
//!
//! The daemon calls [`Service::handle`] from a blocking task; the in-process transport
//! calls it directly, so both exercise the same code. Envelope rules (version, ids,
//! idempotency-key presence, context and horizon requirements) are checked here in one
//! fixed order; operation semantics live in `ops/`, one file per operation family.
//!
//! **Invariant:** every request gets exactly one response envelope echoing its
//! `request_id`; no error escapes as a panic or an `Err`.

mod convert;
mod error;
mod grant;
pub mod idempotency;
mod in_process;
mod ops;
mod validate;
pub mod vectors;

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use error::{
    OUTSIDE_GRANT_REASON, STORE_UNAVAILABLE_REASON, STORE_UNAVAILABLE_RETRY_AFTER_MS, ServiceError, error_body,
};
pub use grant::Grant;
pub use in_process::InProcess;
pub(crate) use ops::portable::import_result;

use crate::protocol::document::{self, Document};
use crate::protocol::relation::HorizonInput;
use crate::protocol::{
    AmbientContext, ContextSource, Horizon, Operation, PROTOCOL_VERSION, Request, ResolvedContext, Response,
    TRANSPORT_REQUEST_ID, Warning,
};
use crate::protocol::{limits, schema};
use crate::store::Store;
use crate::store::idempotency::IdempotencyKey;

/// Facts about the process hosting the service, reported by `doctor`.
#[derive(Clone, Debug, Default)]
pub struct Runtime {
    /// The daemon's pid when served by `memoree serve`; `None` in process.
    pub daemon_pid: Option<u32>,
    /// The qualification policy retrieval answers with (`qualified_units_v2` unless an
    /// evaluation asks for another).
    pub qualification: crate::retrieval::qualify::PolicyVersion,
    /// What `doctor` says about the serving process beyond its health.
    pub discovery: Discovery,
    /// The semantic model the process loaded, or why it has none (lexical only).
    pub semantic: crate::semantic::State,
    /// A similarity requirement to use instead of the calibrated one (evaluations only:
    /// `memoree eval --semantic-threshold`).
    pub semantic_threshold: Option<f64>,
}

/// `doctor`'s `lifecycle_owner` of a daemon a client autostarted (and may stop).
pub const LIFECYCLE_MEMOREE: &str = "memoree";
/// `doctor`'s `lifecycle_owner` of a daemon a person or supervisor started, and in process.
pub const LIFECYCLE_EXTERNAL: &str = "external";

/// The discovery facts `doctor` reports (`binary_version`, `lifecycle_owner`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    /// A `binary_version` to report instead of this build's (`serve --report-binary-version`).
    pub binary_version: Option<String>,
    /// [`LIFECYCLE_MEMOREE`] or [`LIFECYCLE_EXTERNAL`].
    pub lifecycle_owner: &'static str,
}

impl Default for Discovery {
    fn default() -> Discovery {
        Discovery {
            binary_version: None,
            lifecycle_owner: LIFECYCLE_EXTERNAL,
        }
    }
}

/// The protocol service over one store.
#[derive(Clone, Debug)]
pub struct Service {
    store: Store,
    runtime: Runtime,
    /// The FTS vocabulary behind query expansion, shared by every request of this store.
    vocabulary: std::sync::Arc<crate::store::vocab::VocabularyCache>,
    /// The vocabularies of restricted grants' workspaces (`retrieval::corpus`).
    scoped_vocabularies: std::sync::Arc<crate::store::vocab::ScopedVocabularies>,
    /// What this view of the service may reach (unrestricted unless [`Service::with_grant`]).
    grant: Grant,
}

/// A successful operation's payload before it becomes an envelope.
#[derive(Debug)]
pub(crate) struct Output {
    result: Value,
    commit_seq: Option<i64>,
    warnings: Vec<Warning>,
    horizon: Horizon,
}

impl Output {
    pub(crate) fn read(value: impl Serialize) -> Result<Output, ServiceError> {
        Ok(Output {
            result: to_value(value)?,
            commit_seq: None,
            warnings: Vec::new(),
            horizon: Horizon::Ambient,
        })
    }

    pub(crate) fn mutation(written: Written) -> Output {
        Output {
            result: written.result,
            commit_seq: Some(written.commit_seq),
            warnings: Vec::new(),
            horizon: Horizon::Ambient,
        }
    }

    pub(crate) fn with_horizon(mut self, horizon: Horizon) -> Output {
        self.horizon = horizon;
        self
    }
}

/// A mutation result as recorded (or replayed) under its idempotency key.
#[derive(Debug)]
pub(crate) struct Written {
    result: Value,
    commit_seq: i64,
}

/// Serializes an output value; object keys come out sorted at every depth.
pub(crate) fn to_value(value: impl Serialize) -> Result<Value, ServiceError> {
    serde_json::to_value(value).map_err(|e| ServiceError::Internal(format!("could not encode result: {e}")))
}

/// One request being served: its envelope (the input travels separately, decoded once).
pub(crate) struct Call {
    pub envelope: Request<()>,
    /// The namespaced key of a mutation, fingerprinted before the input was decoded.
    key: Option<IdempotencyKey>,
}

impl Call {
    pub fn op(&self) -> Operation {
        self.envelope.op
    }

    pub fn context_source(&self) -> ContextSource {
        self.envelope.context_source
    }

    /// The ambient context, required by context-bearing operations (checked before dispatch).
    pub fn context(&self) -> Result<&AmbientContext, ServiceError> {
        self.envelope
            .context
            .as_ref()
            .ok_or(ServiceError::NoAmbientContext(self.envelope.op.wire_name()))
    }

    /// The namespaced idempotency key of a mutation.
    pub fn idempotency_key(&self) -> Result<IdempotencyKey, ServiceError> {
        self.context()?;
        self.key
            .clone()
            .ok_or(ServiceError::NoAmbientContext(self.envelope.op.wire_name()))
    }
}

/// Validates an operation input against its schema and decodes it, naming the failing
/// field. The value is consumed: strings move into the typed input, nothing is copied.
pub(crate) fn decode_input<T: DeserializeOwned>(op: Operation, input: Value) -> Result<T, ServiceError> {
    if !input.is_object() {
        return Err(ServiceError::invalid(format!(
            "invalid input for {op}: expected an object, found {}",
            kind_of(&input)
        )));
    }
    schema::validate_input(op, &input).map_err(|v| ServiceError::invalid(format!("invalid input for {op}: {v}")))?;
    serde_json::from_value(input).map_err(|e| ServiceError::invalid(format!("invalid input for {op}: {e}")))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null (send {} for an operation without parameters)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Service {
    /// Opens the store in `data_dir` and serves it.
    pub fn open(data_dir: &Path) -> Result<Service, ServiceError> {
        Ok(Service::new(Store::open(data_dir)?, Runtime::default()))
    }

    pub fn new(store: Store, runtime: Runtime) -> Service {
        Service {
            store,
            runtime,
            vocabulary: std::sync::Arc::default(),
            scoped_vocabularies: std::sync::Arc::default(),
            grant: Grant::unrestricted(),
        }
    }

    /// A view of the same service limited to `grant`: a remote connection serves its
    /// credential's requests through one (see [`Grant`]).
    pub fn with_grant(&self, grant: Grant) -> Service {
        Service { grant, ..self.clone() }
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The store's vocabulary cache (query expansion in `search`, `memory.recall`,
    /// `context.build`).
    pub fn vocabulary(&self) -> &crate::store::vocab::VocabularyCache {
        &self.vocabulary
    }

    /// The vocabularies of the workspace sets restricted grants read (`retrieval::corpus`).
    pub(crate) fn scoped_vocabularies(&self) -> &crate::store::vocab::ScopedVocabularies {
        &self.scoped_vocabularies
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Serves one raw request (a JSON document). Malformed JSON gets an `INVALID_REQUEST`
    /// envelope; when the document is an object with a string `request_id`, that id is
    /// echoed, otherwise `fallback_request_id` is used.
    ///
    /// A document that repeats an object key anywhere is refused with `INVALID_REQUEST`
    /// naming the key (see [`document`]), before anything else is checked.
    pub fn handle_json(&self, bytes: &[u8], fallback_request_id: &str) -> Response {
        self.handle_document(document::parse(bytes), fallback_request_id)
    }

    /// [`Service::handle_json`] for a request body the caller hands over: the bytes are freed
    /// as soon as they are parsed, so a large request is not held twice while it is served.
    pub fn handle_body(&self, body: Vec<u8>, fallback_request_id: &str) -> Response {
        let parsed = document::parse(&body);
        drop(body);
        self.handle_document(parsed, fallback_request_id)
    }

    fn handle_document(&self, parsed: Result<Document, serde_json::Error>, fallback_request_id: &str) -> Response {
        match parsed {
            Ok(Document { value, duplicate: None }) => self.handle_value(value, fallback_request_id),
            Ok(Document {
                value,
                duplicate: Some(duplicate),
            }) => {
                let request_id = if duplicate.is_request_id() {
                    fallback_request_id
                } else {
                    request_id_of(&value, fallback_request_id)
                };
                failure(
                    request_id,
                    ServiceError::invalid(format!("invalid request JSON: {duplicate}")),
                )
            }
            Err(e) => failure(
                fallback_request_id,
                ServiceError::invalid(format!("invalid request JSON: {e}")),
            ),
        }
    }

    /// Serves one request given as a JSON value (see [`Service::handle_json`]).
    pub fn handle_value(&self, value: Value, fallback_request_id: &str) -> Response {
        let request_id = request_id_of(&value, fallback_request_id).to_owned();
        if !value.is_object() {
            return failure(&request_id, ServiceError::invalid("the request must be a JSON object"));
        }
        // The version is checked before anything else so a newer client learns what we speak.
        // Only a non-negative integer is a version number; anything else is a type error below.
        if let Some(received) = value.get("v").and_then(Value::as_u64)
            && received != u64::from(PROTOCOL_VERSION)
        {
            return failure(&request_id, ServiceError::UnsupportedVersion(received));
        }
        if let Err(violation) = schema::validate_request(&value) {
            return failure(
                &request_id,
                ServiceError::invalid(format!("invalid request envelope: {violation}")),
            );
        }
        match serde_json::from_value::<Request>(value) {
            Ok(request) => self.respond(request, fallback_request_id),
            Err(e) => failure(
                &request_id,
                ServiceError::invalid(format!("invalid request envelope: {e}")),
            ),
        }
    }

    /// Serves one parsed request. Never fails: errors become failure envelopes.
    pub fn handle(&self, request: Request) -> Response {
        self.respond(request, TRANSPORT_REQUEST_ID)
    }

    /// [`Service::handle`]; a failure for a `request_id` outside 1..=256 bytes carries
    /// `fallback_request_id` instead, as for a malformed request, so an invalid id is
    /// never echoed.
    fn respond(&self, request: Request, fallback_request_id: &str) -> Response {
        let request_id = request.request_id.clone();
        let context = request.context.clone();
        let source = request.context_source;
        match self.serve(request) {
            Ok(output) => {
                let mut response = Response::success(request_id, output.result);
                response.commit_seq = output.commit_seq;
                response.warnings = output.warnings;
                response.context = context
                    .as_ref()
                    .map(|context| ResolvedContext::new(context, source, output.horizon));
                response
            }
            Err(error) => {
                let valid = !request_id.is_empty() && request_id.len() <= limits::MAX_REQUEST_ID_BYTES;
                failure(if valid { &request_id } else { fallback_request_id }, error)
            }
        }
    }

    /// The envelope rules in their fixed order, then the operation. The input is decoded
    /// exactly once: early for horizon operations (their input errors come before
    /// `NO_AMBIENT_CONTEXT`), after the context check for the others.
    fn serve(&self, request: Request) -> Result<Output, ServiceError> {
        check_envelope(&request)?;
        self.grant.check_request(self, &request)?;
        let key = match (&request.context, &request.idempotency_key) {
            (Some(context), Some(key)) if request.op.is_mutating() => {
                Some(idempotency::key_for(&request, context, key))
            }
            _ => None,
        };
        let (envelope, input) = request.split();
        let call = Call { envelope, key };
        ops::dispatch(self, &call, input)
    }
}

/// Runs a horizon operation: its input decoded (and the reason bounded) before the context
/// check, a broad horizon's reason required, and the horizon echoed in the response context.
pub(crate) fn with_horizon<I: DeserializeOwned + HorizonInput>(
    service: &Service,
    call: &Call,
    input: Value,
    run: impl FnOnce(I) -> Result<Output, ServiceError>,
) -> Result<Output, ServiceError> {
    let input: I = decode_input(call.op(), input)?;
    let horizon = input.horizon();
    let reason = input.reason().unwrap_or("");
    // A reason is bounded at every horizon, not only where it is required.
    if reason.len() > limits::MAX_REASON_BYTES {
        return Err(ServiceError::invalid(format!(
            "reason must not exceed {} bytes",
            limits::MAX_REASON_BYTES
        )));
    }
    call.context()?;
    if horizon.is_broad() && reason.trim().is_empty() {
        return Err(ServiceError::invalid(
            "workspace and personal horizons require a non-empty reason",
        ));
    }
    service.grant().check_horizon(horizon)?;
    Ok(run(input)?.with_horizon(horizon))
}

/// Runs an operation without a horizon: the context check (when it needs one), then its
/// input decoded.
pub(crate) fn plain<I: DeserializeOwned>(
    call: &Call,
    input: Value,
    run: impl FnOnce(I) -> Result<Output, ServiceError>,
) -> Result<Output, ServiceError> {
    if call.op().needs_context() {
        call.context()?;
    }
    run(decode_input(call.op(), input)?)
}

/// Envelope bounds in a fixed order: request id, context, idempotency key.
fn check_envelope(request: &Request) -> Result<(), ServiceError> {
    if request.v != u64::from(PROTOCOL_VERSION) {
        return Err(ServiceError::UnsupportedVersion(request.v));
    }
    if request.request_id.is_empty() || request.request_id.len() > limits::MAX_REQUEST_ID_BYTES {
        return Err(ServiceError::invalid(format!(
            "request_id must be between 1 and {} bytes",
            limits::MAX_REQUEST_ID_BYTES
        )));
    }
    if let Some(context) = &request.context {
        check_context(context)?;
    }
    if request.op.is_mutating() {
        match request.idempotency_key.as_deref() {
            None | Some("") => return Err(ServiceError::invalid("mutating operations require idempotency_key")),
            Some(key) if key.trim().is_empty() => {
                return Err(ServiceError::invalid("idempotency_key must not be blank"));
            }
            Some(key) if key.len() > limits::MAX_IDEMPOTENCY_KEY_BYTES => {
                return Err(ServiceError::invalid(format!(
                    "idempotency_key must not exceed {} bytes",
                    limits::MAX_IDEMPOTENCY_KEY_BYTES
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn check_context(context: &AmbientContext) -> Result<(), ServiceError> {
    let ids = [
        ("context.workspace_id", Some(context.workspace_id.as_str())),
        ("context.project_id", Some(context.project_id.as_str())),
        ("context.task_id", context.task_id.as_deref()),
        ("context.component", context.component.as_deref()),
    ];
    for (field, value) in ids {
        let Some(value) = value else { continue };
        validate::bounded(field, value, limits::MAX_CONTEXT_ID_BYTES)?;
        // The idempotency namespace joins the scope ids with NUL separators, so an id
        // containing NUL could alias another scope's namespace.
        if value.contains('\0') {
            return Err(ServiceError::invalid(format!(
                "{field} must not contain NUL characters"
            )));
        }
    }
    if context.pins.len() > limits::MAX_PINS {
        return Err(ServiceError::invalid(format!(
            "context.pins must not contain more than {} pins",
            limits::MAX_PINS
        )));
    }
    for pin in &context.pins {
        validate::bounded("context.pins[]", pin, limits::MAX_PIN_BYTES)?;
    }
    Ok(())
}

/// The document's own `request_id` when it is a string of 1..=256 bytes, else the fallback.
pub fn request_id_of<'a>(document: &'a Value, fallback_request_id: &'a str) -> &'a str {
    document
        .get("request_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && id.len() <= limits::MAX_REQUEST_ID_BYTES)
        .unwrap_or(fallback_request_id)
}

fn failure(request_id: &str, error: ServiceError) -> Response {
    Response::failure(request_id, error_body(&error))
}

#[cfg(test)]
mod tests;
