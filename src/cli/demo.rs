//! `memoree demo`: an end-to-end session on a throw-away home, printed as one envelope.
//!
//! It stores an artifact and a claim grounded in an exact span of it, reads both back, then
//! recalls them (read-your-writes via `min_commit_seq`) and builds a cited context bundle,
//! so a fresh checkout can see the whole write/read path work with no configuration. Every
//! step is a typed request over the in-process transport, exactly as a program embedding
//! Memoree would send it.

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{CliError, CliResult};
use crate::protocol::artifact::{ArtifactContent, ArtifactGetInput, ArtifactPutInput};
use crate::protocol::claim::{ClaimAssertInput, ClaimGetInput, ClaimType, EvidenceLocator};
use crate::protocol::local::{DemoResult, DemoStep};
use crate::protocol::retrieval::{ContextBuildInput, RecallInput};
use crate::protocol::{AmbientContext, ContextSource, Input, Request, RequestId, Response};
use crate::service::{InProcess, Service};
use crate::transport::Exchange;

const NOTE: &str = "Memoree keeps SQLite authoritative; the BLAKE3 CAS only holds blob bytes.";

pub(crate) fn run() -> CliResult<Response> {
    let result = session()?;
    let result = serde_json::to_value(result).map_err(|e| CliError::Internal(e.to_string()))?;
    Ok(Response::success(RequestId::generate(), result))
}

/// The demo's exchanges, recorded as they happen.
struct Demo {
    transport: InProcess,
    steps: Vec<DemoStep>,
}

impl Demo {
    /// Sends one request and records it with its envelope; a failure envelope ends the demo
    /// and is printed as it came back.
    fn step<I: Input>(&mut self, request: Request<I>) -> CliResult<I::Output> {
        let response = self
            .transport
            .send(&request)
            .map_err(|e| CliError::from(e).at("req_demo"))?;
        self.steps.push(DemoStep {
            request: json_of(&request)?,
            response: json_of(&response)?,
        });
        if !response.ok {
            return Err(CliError::Envelope(Box::new(response)).into());
        }
        let result = response.decode::<I::Output>().map(|typed| typed.result);
        match result {
            Ok(Some(result)) => Ok(result),
            Ok(None) => Err(CliError::Internal(format!("{} returned no result", I::OP)).into()),
            Err(e) => Err(CliError::Internal(format!("{} returned an unexpected result: {e}", I::OP)).into()),
        }
    }
}

/// `request` with the demo's context, sent explicitly.
fn explicit<I>(context: &AmbientContext, request: Request<I>) -> Request<I> {
    request.with_context(context.clone(), ContextSource::Explicit)
}

fn json_of(value: &impl Serialize) -> Result<Value, CliError> {
    serde_json::to_value(value).map_err(|e| CliError::Internal(e.to_string()))
}

fn session() -> CliResult<DemoResult> {
    let home = tempfile::Builder::new()
        .prefix("memoree-demo-")
        .tempdir()
        .map_err(|e| CliError::io("creating the demo home", e))?;
    let service = Service::open(&home.path().join("data")).map_err(|e| CliError::Config(e.to_string()))?;
    let mut demo = Demo {
        transport: InProcess::new(service),
        steps: Vec::new(),
    };
    let context = AmbientContext::project("wsp_demo", "prj_demo");

    let put = ArtifactPutInput {
        kind: "decision".to_owned(),
        title: "Storage design".to_owned(),
        media_type: "text/markdown; charset=utf-8".to_owned(),
        content: ArtifactContent::Text(NOTE.to_owned()),
        provenance: Map::from_iter([("source".to_owned(), Value::from("memoree demo"))]),
        actor: None,
    };
    let put =
        demo.step(explicit(&context, Request::new("req_demo_put", put)).with_idempotency_key("demo:design-note"))?;
    let start = NOTE.find("SQLite").unwrap_or(0);
    let end = start + "SQLite authoritative".len();
    let assert = ClaimAssertInput {
        claim_type: ClaimType::Decision,
        statement: "SQLite is the authoritative store.".to_owned(),
        confidence: Some(0.9),
        evidence: vec![EvidenceLocator {
            artifact_id: put.record.artifact_id.clone(),
            revision_id: put.record.revision_id.clone(),
            start_byte: Some(start as u64),
            end_byte: Some(end as u64),
        }],
        valid_from: None,
        valid_until: None,
        actor: None,
    };
    let claim = demo.step(
        explicit(&context, Request::new("req_demo_assert", assert)).with_idempotency_key("demo:sqlite-authoritative"),
    )?;
    demo.step(Request::new(
        "req_demo_get",
        ArtifactGetInput::current(put.record.artifact_id),
    ))?;
    let get_claim = ClaimGetInput {
        claim_id: claim.record.claim_id,
        revision_id: None,
    };
    demo.step(Request::new("req_demo_claim", get_claim))?;
    // Retrieval: the read-your-writes recall an agent makes before acting, and the bounded,
    // cited context bundle it would hand to a model.
    let recall = RecallInput {
        min_commit_seq: Some(claim.commit_seq),
        ..RecallInput::new("which store is authoritative?")
    };
    demo.step(explicit(&context, Request::new("req_demo_recall", recall)))?;
    let build = ContextBuildInput {
        max_bytes: 2048,
        ..ContextBuildInput::new("authoritative store design")
    };
    demo.step(explicit(&context, Request::new("req_demo_context", build)))?;
    Ok(DemoResult {
        home: home.path().display().to_string(),
        home_removed: true,
        steps: demo.steps,
    })
}
