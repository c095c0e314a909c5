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
pub mod idempotency;
mod ops;
mod validate;

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use error::{ServiceError, error_body};
pub(crate) use ops::portable::import_result;

use crate::protocol::{
    AmbientContext, Horizon, Operation, PROTOCOL_VERSION, Request, ResolvedContext, Response, TRANSPORT_REQUEST_ID,
    Warning,
};
use crate::protocol::{limits, schema};
use crate::store::Store;
use crate::store::idempotency::IdempotencyKey;

/// Facts about the process hosting the service, reported by `doctor`.
#[derive(Clone, Debug, Default)]
pub struct Runtime {
    /// The daemon's pid when served by `memoree serve`; `None` in process.
    pub daemon_pid: Option<u32>,
}

/// The protocol service over one store.
#[derive(Clone, Debug)]
pub struct Service {
    store: Store,
    runtime: Runtime,
    /// The FTS vocabulary behind query expansion, shared by every request of this store.
    vocabulary: std::sync::Arc<crate::store::vocab::VocabularyCache>,
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

/// One request being served.
pub(crate) struct Call<'a> {
    pub request: &'a Request,
}

impl Call<'_> {
    pub fn op(&self) -> Operation {
        self.request.op
    }

    /// The ambient context, required by context-bearing operations (checked before dispatch).
    pub fn context(&self) -> Result<&AmbientContext, ServiceError> {
        self.request
            .context
            .as_ref()
            .ok_or(ServiceError::NoAmbientContext(self.request.op.wire_name()))
    }

    /// The namespaced idempotency key of a mutation.
    pub fn idempotency_key(&self) -> Result<IdempotencyKey, ServiceError> {
        let context = self.context()?;
        let key = self.request.idempotency_key.as_deref().unwrap_or_default();
        Ok(idempotency::key_for(self.request, context, key))
    }

    /// Decodes the typed input of this operation.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, ServiceError> {
        decode_input(self.request.op, &self.request.input)
    }
}

/// Validates and decodes an operation input, naming the failing field.
pub(crate) fn decode_input<T: DeserializeOwned>(op: Operation, input: &Value) -> Result<T, ServiceError> {
    schema::validate_input(op, input).map_err(|v| ServiceError::invalid(format!("invalid input for {op}: {v}")))?;
    serde_json::from_value(input.clone()).map_err(|e| ServiceError::invalid(format!("invalid input for {op}: {e}")))
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
        }
    }

    /// The store's vocabulary cache (query expansion in `search`, `memory.recall`,
    /// `context.build`).
    pub fn vocabulary(&self) -> &crate::store::vocab::VocabularyCache {
        &self.vocabulary
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
    pub fn handle_json(&self, bytes: &[u8], fallback_request_id: &str) -> Response {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => self.handle_value(value, fallback_request_id),
            Err(e) => failure(
                fallback_request_id,
                ServiceError::invalid(format!("invalid request JSON: {e}")),
            ),
        }
    }

    /// Serves one request given as a JSON value (see [`Service::handle_json`]).
    pub fn handle_value(&self, value: Value, fallback_request_id: &str) -> Response {
        let request_id = value
            .get("request_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && id.len() <= limits::MAX_REQUEST_ID_BYTES)
            .unwrap_or(fallback_request_id)
            .to_owned();
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
        match self.serve(&request) {
            Ok(output) => {
                let mut response = Response::success(&request.request_id, output.result);
                response.commit_seq = output.commit_seq;
                response.warnings = output.warnings;
                response.context = request
                    .context
                    .as_ref()
                    .map(|context| ResolvedContext::new(context, request.context_source, output.horizon));
                response
            }
            Err(error) => {
                let id = &request.request_id;
                let valid = !id.is_empty() && id.len() <= limits::MAX_REQUEST_ID_BYTES;
                failure(if valid { id } else { fallback_request_id }, error)
            }
        }
    }

    fn serve(&self, request: &Request) -> Result<Output, ServiceError> {
        check_envelope(request)?;
        let op = request.op;
        let mut horizon = Horizon::Ambient;
        if op.supports_explicit_horizon() {
            ops::precheck_input(op, &request.input)?;
            horizon = request_horizon(&request.input)?;
            // A reason is bounded at every horizon, not only where it is required.
            let reason = request.input.get("reason").and_then(Value::as_str).unwrap_or("");
            if reason.len() > limits::MAX_REASON_BYTES {
                return Err(ServiceError::invalid(format!(
                    "reason must not exceed {} bytes",
                    limits::MAX_REASON_BYTES
                )));
            }
        }
        if op.needs_context() && request.context.is_none() {
            return Err(ServiceError::NoAmbientContext(op.wire_name()));
        }
        if horizon.is_broad() {
            let reason = request.input.get("reason").and_then(Value::as_str).unwrap_or("");
            if reason.trim().is_empty() {
                return Err(ServiceError::invalid(
                    "workspace and personal horizons require a non-empty reason",
                ));
            }
        }
        let call = Call { request };
        let output = ops::dispatch(self, &call)?;
        Ok(output.with_horizon(horizon))
    }
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

fn request_horizon(input: &Value) -> Result<Horizon, ServiceError> {
    match input.get("horizon") {
        None | Some(Value::Null) => Ok(Horizon::Ambient),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| ServiceError::invalid("horizon must be one of ambient, workspace, personal")),
    }
}

fn failure(request_id: &str, error: ServiceError) -> Response {
    Response::failure(request_id, error_body(&error))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_admin;
#[cfg(test)]
mod tests_graph;
#[cfg(test)]
mod tests_purge;
#[cfg(test)]
mod tests_retrieval;
#[cfg(test)]
mod tests_sweep;
