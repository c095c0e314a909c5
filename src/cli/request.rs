//! Builds and sends the requests of the human wrappers.
//!
//! Every CLI-built request is version 1 with a fresh `req_<ULID>` id. A mutation carries
//! `auto_<request_id>` as its idempotency key unless the caller chose one, so two identical
//! invocations are two logical mutations while a caller-supplied key makes a retry safe.
//! The ambient context is attached by [`super::transport::attach_context`] exactly as for
//! `memoree call`; which transport carries the request is [`super::transport::select`]'s
//! business alone.

use std::fmt::Display;

use serde_json::{Map, Value};

use super::{GlobalArgs, cli_failure, transport};
use crate::client::Transport;
use crate::protocol::{AmbientContext, ContextSource, ErrorBody, ErrorCode, Operation, PROTOCOL_VERSION, Response};

/// The variable whose value CLI-built writes send as `actor`.
pub(crate) const ACTOR_ENV: &str = "MEMOREE_ACTOR";

/// A fresh `req_<ULID>`.
pub(crate) fn new_request_id() -> String {
    format!("req_{}", ulid::Ulid::new())
}

/// One request a wrapper is about to send.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    request_id: String,
    op: Operation,
    idempotency_key: Option<String>,
    context: Option<(AmbientContext, ContextSource)>,
    input: Value,
}

impl Call {
    /// A request for `op`; mutations get the automatic idempotency key.
    pub(crate) fn new(op: Operation, input: impl Into<Value>) -> Call {
        let request_id = new_request_id();
        let idempotency_key = op.is_mutating().then(|| format!("auto_{request_id}"));
        Call {
            request_id,
            op,
            idempotency_key,
            context: None,
            input: input.into(),
        }
    }

    /// Replaces the automatic idempotency key when `key` is given.
    pub(crate) fn idempotency_key(mut self, key: Option<String>) -> Call {
        if key.is_some() {
            self.idempotency_key = key;
        }
        self
    }

    /// Sends `context` explicitly instead of letting the transport layer resolve one.
    pub(crate) fn context(mut self, context: &AmbientContext, source: ContextSource) -> Call {
        self.context = Some((context.clone(), source));
        self
    }

    /// The request document.
    pub(crate) fn to_value(&self) -> Value {
        let mut request = Map::new();
        request.insert("v".to_owned(), Value::from(PROTOCOL_VERSION));
        request.insert("request_id".to_owned(), Value::from(self.request_id.as_str()));
        request.insert("op".to_owned(), Value::from(self.op.wire_name()));
        if let Some(key) = &self.idempotency_key {
            request.insert("idempotency_key".to_owned(), Value::from(key.as_str()));
        }
        if let Some((context, source)) = &self.context {
            request.insert(
                "context".to_owned(),
                serde_json::to_value(context).unwrap_or(Value::Null),
            );
            request.insert("context_source".to_owned(), Value::from(source.as_str()));
        }
        request.insert("input".to_owned(), self.input.clone());
        Value::Object(request)
    }

    /// Attaches the ambient context, picks the transport and exchanges the request.
    pub(crate) fn send(&self, global: &GlobalArgs) -> Response {
        #[cfg(test)]
        if let Some(response) = capture::intercept(self) {
            return response;
        }
        let mut request = self.to_value();
        if let Err(response) = transport::attach_context(&mut request, &self.request_id) {
            return response;
        }
        match connect(global, &self.request_id) {
            Ok(transport) => exchange(transport.as_ref(), &request, &self.request_id),
            Err(response) => response,
        }
    }

    /// Like [`Call::send`] over an already selected transport.
    pub(crate) fn send_via(&self, transport: &dyn Transport) -> Response {
        let mut request = self.to_value();
        if let Err(response) = transport::attach_context(&mut request, &self.request_id) {
            return response;
        }
        exchange(transport, &request, &self.request_id)
    }
}

fn exchange(transport: &dyn Transport, request: &Value, request_id: &str) -> Response {
    match transport.exchange(request) {
        Ok(response) => response,
        Err(error) => error.to_response(request_id),
    }
}

/// The transport for this invocation; a failure is an envelope for `request_id`.
pub(crate) fn connect(global: &GlobalArgs, request_id: &str) -> Result<Box<dyn Transport>, Response> {
    transport::select(global).map_err(|error| error.to_response(request_id))
}

/// Sends `MEMOREE_ACTOR` as `actor` when it is set, even when it is empty (the service
/// rejects an empty actor rather than the CLI hiding it).
pub(crate) fn insert_actor(input: &mut Map<String, Value>) -> Result<(), Response> {
    match std::env::var_os(ACTOR_ENV) {
        None => Ok(()),
        Some(value) => {
            let actor = value.into_string().map_err(|_| {
                cli_failure(
                    ErrorCode::ConfigError,
                    format!("configuration error: {ACTOR_ENV} is not valid UTF-8"),
                )
            })?;
            input.insert("actor".to_owned(), Value::from(actor));
            Ok(())
        }
    }
}

/// Inserts `key` only when `value` is present.
pub(crate) fn insert_opt(input: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        input.insert(key.to_owned(), value.into());
    }
}

/// An `INVALID_REQUEST` raised by the CLI before a request existed.
pub(crate) fn invalid(message: impl Display) -> Response {
    cli_failure(ErrorCode::InvalidRequest, format!("invalid request: {message}"))
}

/// A `CONTENT_TOO_LARGE` raised by the CLI before a request existed.
pub(crate) fn too_large(message: impl Display) -> Response {
    cli_failure(
        ErrorCode::ContentTooLarge,
        format!("content exceeds the configured size limit: {message}"),
    )
}

/// An `INTERNAL_ERROR` for a local I/O failure, reported for `request_id`.
pub(crate) fn io_failure(request_id: &str, what: impl Display, error: impl Display) -> Response {
    Response::failure(
        request_id,
        ErrorBody::new(ErrorCode::InternalError, format!("I/O error: {what}: {error}")),
    )
}

/// Turns a command body written with `?` into its envelope.
pub(crate) fn settle(result: Result<Response, Response>) -> Response {
    result.unwrap_or_else(|failure| failure)
}

/// Unit tests record the requests wrappers build instead of sending them.
#[cfg(test)]
pub(crate) mod capture {
    use std::cell::RefCell;

    use serde_json::{Value, json};

    use super::Call;
    use crate::protocol::Response;

    thread_local! {
        static CAPTURED: RefCell<Option<Vec<Value>>> = const { RefCell::new(None) };
    }

    /// Runs `f` and returns the requests it tried to send (before context attachment).
    pub(crate) fn requests(f: impl FnOnce()) -> Vec<Value> {
        CAPTURED.with_borrow_mut(|captured| *captured = Some(Vec::new()));
        f();
        CAPTURED.with_borrow_mut(|captured| captured.take().unwrap_or_default())
    }

    pub(super) fn intercept(call: &Call) -> Option<Response> {
        CAPTURED.with_borrow_mut(|captured| {
            let captured = captured.as_mut()?;
            captured.push(call.to_value());
            Some(Response::success(call.request_id.clone(), json!({})))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mutations_get_an_automatic_key_derived_from_their_request_id() {
        let call = Call::new(Operation::ArtifactForget, json!({}));
        let request = call.to_value();
        assert_eq!(request["v"], 1);
        let id = request["request_id"].as_str().unwrap();
        assert!(id.starts_with("req_") && id.len() == 30, "{id}");
        assert_eq!(request["idempotency_key"], format!("auto_{id}"));
        assert!(request.get("context").is_none());
    }

    #[test]
    fn a_caller_key_replaces_the_automatic_one_and_reads_get_none() {
        let call = Call::new(Operation::ClaimRetract, json!({})).idempotency_key(Some("k1".to_owned()));
        assert_eq!(call.to_value()["idempotency_key"], "k1");
        let read = Call::new(Operation::ArtifactGet, json!({})).idempotency_key(None);
        assert!(read.to_value().get("idempotency_key").is_none());
    }

    #[test]
    fn two_calls_never_share_a_request_id() {
        let a = Call::new(Operation::ArtifactPut, json!({}));
        let b = Call::new(Operation::ArtifactPut, json!({}));
        assert_ne!(a.to_value()["request_id"], b.to_value()["request_id"]);
    }

    #[test]
    fn an_explicit_context_is_sent_with_its_source() {
        let context = AmbientContext {
            workspace_id: "w".to_owned(),
            project_id: "p".to_owned(),
            task_id: None,
            component: None,
            pins: Vec::new(),
        };
        let request = Call::new(Operation::Search, json!({}))
            .context(&context, ContextSource::Marker)
            .to_value();
        assert_eq!(
            request["context"],
            json!({"workspace_id": "w", "project_id": "p", "pins": []})
        );
        assert_eq!(request["context_source"], "marker");
    }
}
