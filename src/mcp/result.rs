//! v1 envelopes as MCP tool results.
//!
//! Success: `structuredContent` is the operation's `result` exactly (it matches the tool's
//! output schema), `content` is a one-line summary followed by that JSON as text (for hosts
//! that show models only text), and `_meta["memoree/envelope"]` carries the rest of the
//! envelope (`request_id`, `commit_seq`, `context`, `warnings`) and the idempotency key used.
//!
//! Failure: `isError: true`, `structuredContent` is the whole v1 failure envelope (so
//! `error.code`, `message`, `retryable`, `hint` and `details` are all there), and `content`
//! is a one-line summary with the hint, followed by that JSON. A failed operation is never a
//! JSON-RPC error.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

use super::tools::ToolSpec;
use crate::protocol::{Operation, Response};

/// The `_meta` key holding the envelope fields that are not the result.
pub const ENVELOPE_META: &str = "memoree/envelope";

/// The MCP result of `response` to a call of `tool` sent with `idempotency_key`.
pub fn tool_result(tool: &ToolSpec, response: &Response, idempotency_key: Option<&str>) -> CallToolResult {
    let envelope = serde_json::to_value(response).unwrap_or(Value::Null);
    match (&response.error, &response.result) {
        (None, Some(result)) => success(tool, response, result, idempotency_key),
        _ => failure(tool, response, envelope),
    }
}

fn success(tool: &ToolSpec, response: &Response, result: &Value, idempotency_key: Option<&str>) -> CallToolResult {
    let mut summary = format!("{}: {}", tool.name, describe(tool.op, result));
    if let Some(key) = idempotency_key {
        summary.push_str(&format!(" (idempotency_key {key})"));
    }
    if !response.warnings.is_empty() {
        let codes: Vec<&str> = response.warnings.iter().map(|w| w.code.as_str()).collect();
        summary.push_str(&format!("; warnings: {}", codes.join(", ")));
    }
    let mut meta = Map::new();
    meta.insert("request_id".to_owned(), Value::from(response.request_id.as_str()));
    if let Some(seq) = response.commit_seq {
        meta.insert("commit_seq".to_owned(), Value::from(seq));
    }
    if let Some(context) = &response.context {
        meta.insert(
            "context".to_owned(),
            serde_json::to_value(context).unwrap_or(Value::Null),
        );
    }
    meta.insert(
        "warnings".to_owned(),
        serde_json::to_value(&response.warnings).unwrap_or(Value::Null),
    );
    if let Some(key) = idempotency_key {
        meta.insert("idempotency_key".to_owned(), Value::from(key));
    }
    let mut out = CallToolResult::structured(result.clone());
    out.content = vec![ContentBlock::text(summary), ContentBlock::text(result.to_string())];
    out.meta = Some(envelope_meta(Value::Object(meta)));
    out
}

fn failure(tool: &ToolSpec, response: &Response, envelope: Value) -> CallToolResult {
    let mut summary = match &response.error {
        Some(error) => format!("{} failed: {}: {}", tool.name, error.code.as_str(), error.message),
        None => format!("{} failed: the daemon returned no result", tool.name),
    };
    if let Some(hint) = response.error.as_ref().and_then(|error| error.hint.as_deref()) {
        summary.push_str(&format!(" Hint: {hint}"));
    }
    if response.error.as_ref().is_some_and(|error| error.retryable) {
        summary.push_str(" (retryable: the identical call may be retried)");
    }
    let mut out = CallToolResult::structured_error(envelope.clone());
    out.content = vec![ContentBlock::text(summary), ContentBlock::text(envelope.to_string())];
    out
}

fn envelope_meta(envelope: Value) -> MetaObject {
    let mut meta = MetaObject::default();
    meta.0.insert(ENVELOPE_META.to_owned(), envelope);
    meta
}

fn count(result: &Value, key: &str) -> usize {
    result[key].as_array().map_or(0, Vec::len)
}

fn text<'a>(result: &'a Value, key: &str) -> &'a str {
    result[key].as_str().unwrap_or("?")
}

fn more(result: &Value, key: &str) -> &'static str {
    if result[key] == true {
        " (truncated: more exist)"
    } else {
        ""
    }
}

/// One line saying what a successful result holds.
pub fn describe(op: Operation, result: &Value) -> String {
    match op {
        Operation::MemoryRecall => format!(
            "presence {}; {} claim(s){}, {} artifact reference(s){}, {} conflict(s)",
            text(result, "presence"),
            count(result, "claims"),
            more(result, "claims_truncated"),
            count(result, "artifact_refs"),
            more(result, "artifact_refs_truncated"),
            count(result, "conflicts"),
        ),
        Operation::MemoryRetrieve => {
            let qualified = format!(
                "presence {}; {} claim(s){}, {} artifact reference(s), {} conflict(s)",
                text(result, "presence"),
                count(result, "claims"),
                more(result, "claims_truncated"),
                count(result, "artifact_refs"),
                count(result, "conflicts"),
            );
            match result.get("recovery") {
                Some(recovery) => format!(
                    "{qualified}; recovery: {} unqualified evidence span(s) to check, not answers{}",
                    count(recovery, "evidence"),
                    more(recovery, "references_truncated"),
                ),
                None => qualified,
            }
        }
        Operation::MemoryProbe => format!(
            "{} lead(s) of {} available, unqualified candidates, not answers{}",
            count(result, "leads"),
            result["available_count"],
            more(result, "truncated")
        ),
        Operation::CitationGet => format!(
            "{} byte(s) of {}{}",
            result["byte_count"],
            text(result, "citation"),
            more(result, "truncated")
        ),
        Operation::Search => format!(
            "{} hit(s) at horizon {}{}",
            count(result, "hits"),
            text(result, "horizon"),
            more(result, "truncated")
        ),
        Operation::ContextBuild => format!(
            "bundle of {} of {} bytes, {} item(s) omitted{}",
            result["used_bytes"],
            result["max_bytes"],
            result["omitted_count"],
            if result["retrieval_truncated"] == true {
                ", retrieval truncated"
            } else {
                ""
            }
        ),
        Operation::ArtifactPut | Operation::ArtifactRevise | Operation::ArtifactForget => format!(
            "{} artifact {} revision {} (#{}, status {}, commit_seq {})",
            if result["created"] == false {
                "replayed"
            } else {
                "wrote"
            },
            text(result, "artifact_id"),
            text(result, "revision_id"),
            result["revision_number"],
            text(result, "status"),
            result["commit_seq"],
        ),
        Operation::ClaimAssert | Operation::ClaimRevise | Operation::ClaimRetract => format!(
            "{} claim {} revision {} (#{}, status {}, commit_seq {})",
            if result["created"] == false {
                "replayed"
            } else {
                "wrote"
            },
            text(result, "claim_id"),
            text(result, "revision_id"),
            result["revision_number"],
            text(result, "status"),
            result["commit_seq"],
        ),
        Operation::RelationPut => format!(
            "{} relation {} ({}:{} {} {}:{}, commit_seq {})",
            if result["created"] == false {
                "existing"
            } else {
                "wrote"
            },
            text(result, "relation_id"),
            text(result, "source_type"),
            text(result, "source_id"),
            text(result, "relation"),
            text(result, "target_type"),
            text(result, "target_id"),
            result["commit_seq"],
        ),
        Operation::ArtifactGet => format!(
            "artifact {} revision {} {:?} ({}, {} bytes, status {})",
            text(result, "artifact_id"),
            text(result, "revision_id"),
            text(result, "title"),
            text(result, "media_type"),
            result["size_bytes"],
            text(result, "status"),
        ),
        Operation::ClaimGet => format!(
            "claim {} revision {} ({}, status {}, {} evidence item(s))",
            text(result, "claim_id"),
            text(result, "revision_id"),
            text(result, "claim_type"),
            text(result, "status"),
            count(result, "evidence"),
        ),
        Operation::ArtifactHistory | Operation::ClaimHistory => {
            format!(
                "{} revision(s){}",
                count(result, "revisions"),
                more(result, "truncated")
            )
        }
        Operation::RelationList => format!(
            "{} relation(s){}",
            count(result, "relations"),
            more(result, "truncated")
        ),
        Operation::ConflictList => format!(
            "{} conflict case(s) at horizon {}{}",
            count(result, "conflicts"),
            text(result, "horizon"),
            more(result, "truncated")
        ),
        Operation::Capabilities => format!(
            "{} protocol v{}, {} operation(s)",
            text(result, "product"),
            result["protocol_version"],
            count(result, "operations")
        ),
        Operation::Doctor => format!(
            "status {}, daemon running {}, last commit_seq {}",
            text(result, "status"),
            result["running"],
            result["last_commit_seq"]
        ),
        _ => "ok".to_owned(),
    }
}

/// A failure result for a call that never reached the daemon (bad tool arguments).
pub fn local_failure(tool: &ToolSpec, response: &Response) -> CallToolResult {
    failure(tool, response, serde_json::to_value(response).unwrap_or(json!(null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tools;
    use crate::protocol::{ErrorBody, ErrorCode};

    #[test]
    fn a_success_carries_the_result_as_structured_content_and_the_envelope_in_meta() {
        let spec = tools::find("artifact_put").unwrap();
        let result = json!({"artifact_id": "art_1", "revision_id": "arev_1", "revision_number": 1, "status": "active", "commit_seq": 4, "created": false});
        let mut response = Response::success("req_1", result.clone());
        response.commit_seq = Some(4);
        let out = tool_result(spec, &response, Some("k1"));
        assert_eq!(out.structured_content, Some(result));
        assert_eq!(out.is_error, Some(false));
        let summary = out.content[0].as_text().unwrap().text.clone();
        assert!(
            summary.starts_with("artifact_put: replayed artifact art_1"),
            "{summary}"
        );
        assert!(summary.contains("idempotency_key k1"), "{summary}");
        let meta = &out.meta.unwrap().0[ENVELOPE_META];
        assert_eq!(meta["commit_seq"], 4);
        assert_eq!(meta["request_id"], "req_1");
    }

    #[test]
    fn retrieve_and_probe_summaries_say_recovery_and_leads_are_not_answers() {
        let qualified = json!({"presence": "claims", "claims": [{}], "claims_truncated": false,
                               "artifact_refs": [], "conflicts": []});
        assert_eq!(
            describe(Operation::MemoryRetrieve, &qualified),
            "presence claims; 1 claim(s), 0 artifact reference(s), 0 conflict(s)"
        );
        let recovered = json!({"presence": "none", "claims": [], "artifact_refs": [], "conflicts": [],
                               "recovery": {"evidence": [{}, {}], "references_truncated": true}});
        assert_eq!(
            describe(Operation::MemoryRetrieve, &recovered),
            "presence none; 0 claim(s), 0 artifact reference(s), 0 conflict(s); recovery: 2 unqualified \
             evidence span(s) to check, not answers (truncated: more exist)"
        );
        let probe = json!({"leads": [{}], "available_count": 1, "truncated": false});
        assert_eq!(
            describe(Operation::MemoryProbe, &probe),
            "1 lead(s) of 1 available, unqualified candidates, not answers"
        );
    }

    #[test]
    fn a_failure_is_a_tool_error_carrying_the_whole_v1_envelope() {
        let spec = tools::find("artifact_get").unwrap();
        let response = Response::failure(
            "req_2",
            ErrorBody::new(ErrorCode::NotFound, "artifact art_x not found").with_hint("check the id"),
        );
        let out = tool_result(spec, &response, None);
        assert_eq!(out.is_error, Some(true));
        let envelope = out.structured_content.unwrap();
        assert_eq!(envelope["ok"], false);
        assert_eq!(envelope["error"]["code"], "NOT_FOUND");
        assert_eq!(envelope["error"]["hint"], "check the id");
        let summary = out.content[0].as_text().unwrap().text.clone();
        assert!(
            summary.contains("NOT_FOUND: artifact art_x not found Hint: check the id"),
            "{summary}"
        );
    }
}
