//! Terse request builders for the graph tests, on the shared [`Fixture`].

use serde_json::{Value, json};

pub use crate::service::tests::support::{Fixture, field as ids, fixture};

/// An ambient context in workspace `wsp_test`.
pub fn ctx(project: &str, task: Option<&str>) -> Value {
    let mut context = json!({"workspace_id": "wsp_test", "project_id": project});
    if let Some(task) = task {
        context["task_id"] = json!(task);
    }
    context
}

/// The default project-level context.
pub fn main_ctx() -> Value {
    ctx("prj_main", None)
}

/// An entity reference for `relate`.
pub fn claim(id: &Value) -> (&'static str, Value) {
    ("claim", id.clone())
}

pub fn artifact(id: &Value) -> (&'static str, Value) {
    ("artifact", id.clone())
}

impl Fixture {
    pub fn mutation(&self, context: &Value, op: &str, input: Value) -> Value {
        json!({"request_id": "req_m", "op": op, "idempotency_key": self.key(), "context": context, "input": input})
    }

    pub fn read(&self, context: &Value, op: &str, input: Value) -> Value {
        json!({"request_id": "req_r", "op": op, "context": context, "input": input})
    }

    pub fn put_artifact(&self, context: &Value, text: &str) -> Value {
        self.ok(self.mutation(
            context,
            "artifact.put",
            json!({"kind": "note", "title": "Note", "content": {"type": "text", "data": text}}),
        ))
    }

    pub fn assert_claim(&self, context: &Value, statement: &str) -> Value {
        self.ok(self.mutation(
            context,
            "claim.assert",
            json!({"claim_type": "fact", "statement": statement}),
        ))
    }

    pub fn relate_request(
        &self,
        context: &Value,
        source: (&str, Value),
        relation: &str,
        target: (&str, Value),
        metadata: Value,
    ) -> Value {
        self.mutation(
            context,
            "relation.put",
            json!({"source_type": source.0, "source_id": source.1, "relation": relation,
                   "target_type": target.0, "target_id": target.1, "metadata": metadata}),
        )
    }

    pub fn relate(&self, context: &Value, source: (&str, Value), relation: &str, target: (&str, Value)) -> Value {
        self.ok(self.relate_request(context, source, relation, target, json!({})))
    }

    pub fn get_claim(&self, claim_id: &Value) -> Value {
        self.ok(json!({"request_id": "req_g", "op": "claim.get", "input": {"claim_id": claim_id}}))
    }

    pub fn artifact_revision(&self, artifact_id: &Value) -> String {
        let got = self.ok(json!({"request_id": "req_g", "op": "artifact.get",
                                 "input": {"artifact_id": artifact_id, "include_content": false}}));
        got["revision_id"].as_str().unwrap().to_owned()
    }

    pub fn revise_claim(&self, context: &Value, claim_id: &Value, statement: &str) -> Value {
        let current = self.get_claim(claim_id);
        self.ok(self.mutation(
            context,
            "claim.revise",
            json!({"claim_id": claim_id, "if_revision": current["revision_id"], "statement": statement}),
        ))
    }

    pub fn retract_claim(&self, context: &Value, claim_id: &Value) -> Value {
        self.ok(self.mutation(
            context,
            "claim.retract",
            json!({"claim_id": claim_id, "reason": "wrong"}),
        ))
    }

    pub fn conflicts(&self, context: &Value, input: Value) -> Value {
        self.ok(self.read(context, "conflict.list", input))
    }

    pub fn relations(&self, context: &Value, input: Value) -> Value {
        self.ok(self.read(context, "relation.list", input))
    }
}
