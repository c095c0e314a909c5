//! A temporary service whose every response is schema-checked (against ours, and against
//! the reference's v0.7.1 bundle when `../shared` holds it), plus terse builders for seeding
//! artifacts and claims and for the retrieval reads.

use base64::Engine as _;
use serde_json::{Value, json};

pub use crate::service::tests::support::{Fixture, field, fixture, fixture_with};

/// A context in workspace `wsp_r`.
pub fn ctx(project: &str, task: Option<&str>) -> Value {
    let mut context = json!({"workspace_id": "wsp_r", "project_id": project});
    if let Some(task) = task {
        context["task_id"] = json!(task);
    }
    context
}

pub fn main_ctx() -> Value {
    ctx("prj_main", None)
}

pub fn sibling_ctx() -> Value {
    ctx("prj_sibling", None)
}

/// An RFC 3339 instant `days` from now (negative for the past).
pub fn days_from_now(days: i64) -> String {
    crate::timefmt::to_wire(&(crate::timefmt::now() + chrono::Duration::days(days)))
}

impl Fixture {
    pub fn mutate(&self, context: &Value, op: &str, input: Value) -> Value {
        self.ok(
            json!({"request_id": "req_m", "op": op, "idempotency_key": self.key(), "context": context, "input": input}),
        )
    }

    pub fn read_request(context: &Value, op: &str, input: Value) -> Value {
        json!({"request_id": "req_r", "op": op, "context": context, "input": input})
    }

    pub fn put(&self, context: &Value, kind: &str, title: &str, text: &str) -> Value {
        self.mutate(
            context,
            "artifact.put",
            json!({"kind": kind, "title": title, "content": {"type": "text", "data": text}}),
        )
    }

    pub fn put_binary(&self, context: &Value, title: &str, bytes: &[u8]) -> Value {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.mutate(
            context,
            "artifact.put",
            json!({"kind": "image", "title": title, "media_type": "image/png", "content": {"type": "base64", "data": data}}),
        )
    }

    pub fn revise(&self, context: &Value, artifact: &Value, text: &str) -> Value {
        self.mutate(
            context,
            "artifact.revise",
            json!({"artifact_id": artifact["artifact_id"], "if_revision": artifact["revision_id"],
                   "content": {"type": "text", "data": text}}),
        )
    }

    /// Asserts a claim; `extra` is merged into the input (evidence, validity, type).
    pub fn claim(&self, context: &Value, statement: &str, extra: Value) -> Value {
        let mut input = json!({"claim_type": "fact", "statement": statement});
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        self.mutate(context, "claim.assert", input)
    }

    /// A relation between two claims (results of [`Fixture::claim`]).
    pub fn relate_claims(&self, context: &Value, source: &Value, relation: &str, target: &Value) -> Value {
        self.mutate(
            context,
            "relation.put",
            json!({"source_type": "claim", "source_id": source["claim_id"], "relation": relation,
                   "target_type": "claim", "target_id": target["claim_id"]}),
        )
    }

    pub fn search(&self, context: &Value, input: Value) -> Value {
        self.ok(Fixture::read_request(context, "search", input))
    }

    pub fn recall(&self, context: &Value, input: Value) -> Value {
        self.ok(Fixture::read_request(context, "memory.recall", input))
    }

    pub fn build(&self, context: &Value, input: Value) -> Value {
        self.ok(Fixture::read_request(context, "context.build", input))
    }
}

/// The hit of `entity_id` in a search result, if any.
pub fn hit<'a>(result: &'a Value, entity_id: &Value) -> Option<&'a Value> {
    result["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| &h["entity_id"] == entity_id)
}
