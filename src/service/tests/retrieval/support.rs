//! A temporary service whose every response is schema-checked (against ours, and against
//! the reference's v0.7.1 bundle when `../shared` holds it), plus terse builders for seeding
//! artifacts and claims and for the retrieval reads.

use std::cell::Cell;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::protocol::{ErrorBody, Response};
use crate::service::Service;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub service: Service,
    next_key: Cell<u64>,
    /// The store of a fixture made [`Fixture::on`] a `backend_test!` store (after `service`:
    /// it outlives it).
    _keep: Option<crate::service::tests::support::Keep>,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    Fixture {
        _dir: dir,
        service,
        next_key: Cell::new(0),
        _keep: None,
    }
}

/// A fixture whose service runs as `runtime` says (a semantic model, say).
pub fn fixture_with(runtime: crate::service::Runtime) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(&dir.path().join("data")).unwrap();
    Fixture {
        _dir: dir,
        service: Service::new(store, runtime),
        next_key: Cell::new(0),
        _keep: None,
    }
}

impl Fixture {
    /// A fixture on a `backend_test!` store.
    pub fn on(store: crate::service::tests::support::TestStore) -> Fixture {
        let (service, keep) = store.into_parts();
        Fixture {
            _dir: tempfile::tempdir().unwrap(),
            service,
            next_key: Cell::new(0),
            _keep: Some(keep),
        }
    }

    /// A fixture over an existing service (a PostgreSQL front end, say).
    pub fn over(service: Service) -> Fixture {
        Fixture {
            _dir: tempfile::tempdir().unwrap(),
            service,
            next_key: Cell::new(0),
            _keep: None,
        }
    }

    /// Another service on this fixture's store, running as `runtime` says (the same data
    /// served with and without a model, say).
    pub fn sharing(&self, runtime: crate::service::Runtime) -> Fixture {
        Fixture {
            _dir: tempfile::tempdir().unwrap(),
            service: Service::new(self.service.store().clone(), runtime),
            next_key: Cell::new(1_000_000),
            _keep: None,
        }
    }
}

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
    pub fn key(&self) -> String {
        let n = self.next_key.get() + 1;
        self.next_key.set(n);
        format!("key-{n}")
    }

    /// Serves a request and validates the envelope and the result against the schemas.
    pub fn call(&self, request: Value) -> Response {
        crate::service::tests::support::checked(&self.service, request)
    }

    pub fn ok(&self, request: Value) -> Value {
        let response = self.call(request.clone());
        assert!(response.ok, "request {request} failed: {:?}", response.error);
        response.result.unwrap()
    }

    pub fn err(&self, request: Value) -> ErrorBody {
        let response = self.call(request.clone());
        assert!(!response.ok, "request {request} unexpectedly succeeded");
        response.error.unwrap()
    }

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

    pub fn relate(&self, context: &Value, source: &Value, relation: &str, target: &Value) -> Value {
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

    pub fn last_commit_seq(&self) -> i64 {
        self.service.store().last_commit_seq().unwrap()
    }
}

/// The values of `field` across the items of an array.
pub fn field(items: &Value, name: &str) -> Vec<Value> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[name].clone())
        .collect()
}

/// The hit of `entity_id` in a search result, if any.
pub fn hit<'a>(result: &'a Value, entity_id: &Value) -> Option<&'a Value> {
    result["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| &h["entity_id"] == entity_id)
}
