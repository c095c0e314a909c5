//! `memoree demo`: an end-to-end session on a throw-away home, printed as one envelope.
//!
//! It stores an artifact and a claim grounded in an exact span of it, reads both back, then
//! recalls them (read-your-writes via `min_commit_seq`) and builds a cited context bundle,
//! so a fresh checkout can see the whole write/read path work with no configuration.

use serde_json::{Value, json};

use crate::client::{InProcess, Transport};
use crate::protocol::{ErrorCode, Response};
use crate::service::Service;

const NOTE: &str = "Memoree keeps SQLite authoritative; the BLAKE3 CAS only holds blob bytes.";

pub(crate) fn run() -> Response {
    match session() {
        Ok(result) => Response::success(format!("req_{}", ulid::Ulid::new()), result),
        Err(response) => response,
    }
}

fn session() -> Result<Value, Response> {
    let home = tempfile::Builder::new()
        .prefix("memoree-demo-")
        .tempdir()
        .map_err(|e| super::cli_failure(ErrorCode::InternalError, format!("I/O error: {e}")))?;
    let service = Service::open(&home.path().join("data"))
        .map_err(|e| super::cli_failure(ErrorCode::ConfigError, e.to_string()))?;
    let transport = InProcess::new(service);
    let context = json!({"workspace_id": "wsp_demo", "project_id": "prj_demo"});
    let mut steps = Vec::new();
    let mut step = |request: Value| -> Result<Value, Response> {
        let response = transport.exchange(&request).map_err(|e| e.to_response("req_demo"))?;
        let ok = response.ok;
        let value = serde_json::to_value(&response).unwrap_or(Value::Null);
        steps.push(json!({"request": request, "response": value}));
        if ok {
            Ok(response.result.unwrap_or(Value::Null))
        } else {
            Err(response)
        }
    };
    let put = step(json!({
        "v": 1, "request_id": "req_demo_put", "op": "artifact.put", "idempotency_key": "demo:design-note",
        "context": context, "context_source": "explicit",
        "input": {"kind": "decision", "title": "Storage design", "media_type": "text/markdown; charset=utf-8",
                  "content": {"type": "text", "data": NOTE}, "provenance": {"source": "memoree demo"}}
    }))?;
    let start = NOTE.find("SQLite").unwrap_or(0);
    let end = start + "SQLite authoritative".len();
    let claim = step(json!({
        "v": 1, "request_id": "req_demo_assert", "op": "claim.assert", "idempotency_key": "demo:sqlite-authoritative",
        "context": context, "context_source": "explicit",
        "input": {"claim_type": "decision", "statement": "SQLite is the authoritative store.", "confidence": 0.9,
                  "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"],
                                "start_byte": start, "end_byte": end}]}
    }))?;
    step(
        json!({"v": 1, "request_id": "req_demo_get", "op": "artifact.get", "input": {"artifact_id": put["artifact_id"]}}),
    )?;
    step(json!({"v": 1, "request_id": "req_demo_claim", "op": "claim.get", "input": {"claim_id": claim["claim_id"]}}))?;
    // Retrieval: the read-your-writes recall an agent makes before acting, and the bounded,
    // cited context bundle it would hand to a model.
    step(json!({
        "v": 1, "request_id": "req_demo_recall", "op": "memory.recall", "context": context, "context_source": "explicit",
        "input": {"query": "which store is authoritative?", "min_commit_seq": claim["commit_seq"]}
    }))?;
    step(json!({
        "v": 1, "request_id": "req_demo_context", "op": "context.build", "context": context, "context_source": "explicit",
        "input": {"query": "authoritative store design", "max_bytes": 2048}
    }))?;
    Ok(json!({"home": home.path().display().to_string(), "home_removed": true, "steps": steps}))
}
