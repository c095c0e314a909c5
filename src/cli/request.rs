//! Builds and sends the typed requests of the human wrappers.
//!
//! Every CLI-built request is version 1 with a fresh `req_<ULID>` id. A mutation carries
//! `auto_<request_id>` as its idempotency key unless the caller chose one, so two identical
//! invocations are two logical mutations while a caller-supplied key makes a retry safe.
//! The ambient context is attached by [`super::transport::attach_context`] exactly as for
//! `memoree call`; which transport carries the request is [`super::transport::select`]'s
//! business alone.

use serde::Serialize;

use super::error::{CliError, CliResult};
use super::{GlobalArgs, transport};
use crate::protocol::{AmbientContext, ContextSource, Input, Request, RequestId, Response};
use crate::transport::{Exchange, Transport};

/// The variable whose value CLI-built writes send as `actor`.
pub(crate) const ACTOR_ENV: &str = "MEMOREE_ACTOR";

/// One request a wrapper is about to send.
#[derive(Clone, Debug)]
pub(crate) struct Call<I> {
    request: Request<I>,
}

impl<I: Input> Call<I> {
    /// A request for `input`'s operation; mutations get the automatic idempotency key.
    pub(crate) fn new(input: I) -> Call<I> {
        let request_id = RequestId::generate();
        let mut request = Request::new(request_id.clone(), input);
        if I::OP.is_mutating() {
            request = request.with_idempotency_key(format!("auto_{request_id}"));
        }
        Call { request }
    }
}

impl<I: Serialize> Call<I> {
    /// Replaces the automatic idempotency key when `key` is given.
    pub(crate) fn idempotency_key(mut self, key: Option<String>) -> Call<I> {
        if key.is_some() {
            self.request.idempotency_key = key;
        }
        self
    }

    /// Sends `context` explicitly instead of letting the transport layer resolve one.
    pub(crate) fn context(mut self, context: &AmbientContext, source: ContextSource) -> Call<I> {
        self.request = self.request.with_context(context.clone(), source);
        self
    }

    /// The request's id, for failures before it was sent.
    pub(crate) fn id(&self) -> &RequestId {
        &self.request.request_id
    }

    /// The request as built (before context attachment).
    #[cfg(test)]
    pub(crate) fn request(&self) -> &Request<I> {
        &self.request
    }

    /// Attaches the ambient context, picks the transport and exchanges the request. A
    /// failure envelope from the daemon is a success here: it is what gets printed.
    pub(crate) fn send(mut self, global: &GlobalArgs) -> CliResult<Response> {
        #[cfg(test)]
        if let Some(response) = capture::intercept(&self) {
            return Ok(response);
        }
        let request_id = self.request.request_id.clone();
        transport::attach_context(&mut self.request).map_err(|e| e.at(request_id.clone()))?;
        let transport = transport::select(global).map_err(|e| CliError::from(e).at(request_id.clone()))?;
        transport
            .send(&self.request)
            .map_err(|e| CliError::from(e).at(request_id))
    }

    /// Like [`Call::send`] over an already selected transport.
    pub(crate) fn send_via(mut self, transport: &dyn Transport) -> CliResult<Response> {
        let request_id = self.request.request_id.clone();
        transport::attach_context(&mut self.request).map_err(|e| e.at(request_id.clone()))?;
        transport
            .send(&self.request)
            .map_err(|e| CliError::from(e).at(request_id))
    }
}

/// `MEMOREE_ACTOR`, sent as `actor` when it is set, even when it is empty (the service
/// rejects an empty actor rather than the CLI hiding it).
pub(crate) fn actor_from_env() -> Result<Option<String>, CliError> {
    match std::env::var_os(ACTOR_ENV) {
        None => Ok(None),
        Some(value) => value
            .into_string()
            .map(Some)
            .map_err(|_| CliError::Config(format!("{ACTOR_ENV} is not valid UTF-8"))),
    }
}

/// Unit tests record the requests wrappers build instead of sending them.
#[cfg(test)]
pub(crate) mod capture {
    use std::cell::RefCell;

    use serde::Serialize;
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

    pub(super) fn intercept<I: Serialize>(call: &Call<I>) -> Option<Response> {
        CAPTURED.with_borrow_mut(|captured| {
            let captured = captured.as_mut()?;
            captured.push(serde_json::to_value(call.request()).expect("requests serialize"));
            Some(Response::success(call.id().clone(), json!({})))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::artifact::{ArtifactForgetInput, ArtifactGetInput, ArtifactPutInput};
    use crate::protocol::claim::ClaimRetractInput;
    use crate::protocol::retrieval::SearchInput;

    fn value<I: Serialize>(call: &Call<I>) -> serde_json::Value {
        serde_json::to_value(call.request()).unwrap()
    }

    fn forget() -> ArtifactForgetInput {
        ArtifactForgetInput {
            artifact_id: "art_1".into(),
            reason: "r".into(),
        }
    }

    #[test]
    fn mutations_get_an_automatic_key_derived_from_their_request_id() {
        let request = value(&Call::new(forget()));
        assert_eq!(request["v"], 1);
        let id = request["request_id"].as_str().unwrap();
        assert!(id.starts_with("req_") && id.len() == 30, "{id}");
        assert_eq!(request["idempotency_key"], format!("auto_{id}"));
        assert!(request.get("context").is_none());
    }

    #[test]
    fn a_caller_key_replaces_the_automatic_one_and_reads_get_none() {
        let retract = ClaimRetractInput {
            claim_id: "clm_1".into(),
            reason: "r".into(),
        };
        let call = Call::new(retract).idempotency_key(Some("k1".to_owned()));
        assert_eq!(value(&call)["idempotency_key"], "k1");
        let read = Call::new(ArtifactGetInput::current("art_1")).idempotency_key(None);
        assert!(value(&read).get("idempotency_key").is_none());
    }

    #[test]
    fn two_calls_never_share_a_request_id() {
        let put = || ArtifactPutInput {
            kind: "k".into(),
            title: "t".into(),
            media_type: "text/plain".into(),
            content: crate::protocol::artifact::ArtifactContent::Text("x".into()),
            provenance: Default::default(),
            actor: None,
        };
        assert_ne!(Call::new(put()).id(), Call::new(put()).id());
    }

    #[test]
    fn an_explicit_context_is_sent_with_its_source() {
        let context = AmbientContext::project("w", "p");
        let request = value(&Call::new(SearchInput::new("q")).context(&context, ContextSource::Marker));
        assert_eq!(
            request["context"],
            serde_json::json!({"workspace_id": "w", "project_id": "p", "pins": []})
        );
        assert_eq!(request["context_source"], "marker");
    }
}
