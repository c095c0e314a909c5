//! The inspector's one door to memory: typed read calls sent to the daemon as ordinary
//! protocol requests.
//!
//! Every request the inspector makes is built here (v1 envelope, fresh `req_<ULID>`, the
//! ambient context resolved at start, sent as `explicit`), so moving to a typed client later
//! is a change to this file alone. Results are the raw `result` objects: views read the fields
//! they know and show the rest generically, so fields a newer daemon adds still appear.
//!
//! **Invariant:** only read operations leave this module; [`Memory::read`] refuses any
//! operation that mutates or has a side effect, so the inspector can never change memory.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::client::Transport;
use crate::protocol::{AmbientContext, ContextSource, ErrorBody, ErrorCode, Horizon, Operation, PROTOCOL_VERSION};

/// The horizon a page reads at, with the reason a broader horizon needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub horizon: Horizon,
    pub reason: Option<String>,
}

impl Scope {
    /// Adds `horizon` and, for a broad horizon, `reason` to an input object.
    fn insert_into(&self, input: &mut Map<String, Value>) {
        input.insert("horizon".to_owned(), Value::from(self.horizon.as_str()));
        if self.horizon.is_broad()
            && let Some(reason) = &self.reason
        {
            input.insert("reason".to_owned(), Value::from(reason.as_str()));
        }
    }
}

/// A read the daemon refused or could not answer, as its wire error.
pub type Failure = ErrorBody;

/// Filters of `claim.list`; `None` means any.
#[derive(Clone, Debug, Default)]
pub struct ClaimQuery<'a> {
    pub claim_type: Option<&'a str>,
    pub status: Option<&'a str>,
    pub temporal_state: Option<&'a str>,
    pub cites_artifact_id: Option<&'a str>,
    pub all_revisions: bool,
    pub limit: u32,
    pub before_commit_seq: Option<i64>,
}

/// Filters of `artifact.list`; `None` means any.
#[derive(Clone, Debug, Default)]
pub struct ArtifactQuery<'a> {
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
    pub limit: u32,
    pub before_commit_seq: Option<i64>,
}

/// A client of the daemon bound to one ambient context.
#[derive(Clone)]
pub struct Memory {
    transport: Arc<dyn Transport>,
    context: AmbientContext,
    source: ContextSource,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("context", &self.context)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn insert_opt(input: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        input.insert(key.to_owned(), value.into());
    }
}

impl Memory {
    /// Reads through `transport` as `context` (resolved by the caller from `source`).
    pub fn new(transport: Arc<dyn Transport>, context: AmbientContext, source: ContextSource) -> Memory {
        Memory {
            transport,
            context,
            source,
        }
    }

    pub fn context(&self) -> &AmbientContext {
        &self.context
    }

    pub fn context_source(&self) -> ContextSource {
        self.source
    }

    /// Sends one read request and returns its `result`.
    pub fn read(&self, op: Operation, input: Value) -> Result<Value, Failure> {
        if op.is_side_effecting() {
            return Err(ErrorBody::new(
                ErrorCode::InvalidRequest,
                format!("invalid request: the inspector is read-only and never sends {op}"),
            ));
        }
        let request_id = format!("req_{}", ulid::Ulid::new());
        let request = json!({
            "v": PROTOCOL_VERSION,
            "request_id": request_id,
            "op": op.wire_name(),
            "context": self.context,
            "context_source": "explicit",
            "input": input,
        });
        let response = self
            .transport
            .exchange(&request)
            .map_err(|error| error.to_error_body())?;
        match (response.ok, response.result, response.error) {
            (true, Some(result), _) => Ok(result),
            (_, _, Some(error)) => Err(error),
            _ => Err(ErrorBody::new(
                ErrorCode::InternalError,
                format!("internal error: {op} returned neither a result nor an error"),
            )),
        }
    }

    pub fn doctor(&self) -> Result<Value, Failure> {
        self.read(Operation::Doctor, json!({}))
    }

    pub fn verify(&self) -> Result<Value, Failure> {
        self.read(Operation::Verify, json!({}))
    }

    pub fn artifact_get(&self, artifact_id: &str, revision_id: Option<&str>, content: bool) -> Result<Value, Failure> {
        let mut input = Map::new();
        input.insert("artifact_id".to_owned(), Value::from(artifact_id));
        insert_opt(&mut input, "revision_id", revision_id);
        input.insert("include_content".to_owned(), Value::Bool(content));
        self.read(Operation::ArtifactGet, Value::Object(input))
    }

    pub fn artifact_history(&self, artifact_id: &str, limit: u32) -> Result<Value, Failure> {
        self.read(
            Operation::ArtifactHistory,
            json!({"artifact_id": artifact_id, "limit": limit}),
        )
    }

    pub fn claim_get(&self, claim_id: &str, revision_id: Option<&str>) -> Result<Value, Failure> {
        let mut input = Map::new();
        input.insert("claim_id".to_owned(), Value::from(claim_id));
        insert_opt(&mut input, "revision_id", revision_id);
        self.read(Operation::ClaimGet, Value::Object(input))
    }

    pub fn claim_history(&self, claim_id: &str, limit: u32) -> Result<Value, Failure> {
        self.read(Operation::ClaimHistory, json!({"claim_id": claim_id, "limit": limit}))
    }

    pub fn artifact_list(&self, scope: &Scope, query: &ArtifactQuery<'_>) -> Result<Value, Failure> {
        let mut input = Map::new();
        scope.insert_into(&mut input);
        insert_opt(&mut input, "kind", query.kind);
        insert_opt(&mut input, "status", query.status);
        input.insert("limit".to_owned(), Value::from(query.limit));
        insert_opt(&mut input, "before_commit_seq", query.before_commit_seq);
        self.read(Operation::ArtifactList, Value::Object(input))
    }

    pub fn claim_list(&self, scope: &Scope, query: &ClaimQuery<'_>) -> Result<Value, Failure> {
        let mut input = Map::new();
        scope.insert_into(&mut input);
        insert_opt(&mut input, "claim_type", query.claim_type);
        insert_opt(&mut input, "status", query.status);
        insert_opt(&mut input, "temporal_state", query.temporal_state);
        insert_opt(&mut input, "cites_artifact_id", query.cites_artifact_id);
        if query.all_revisions {
            input.insert("revisions".to_owned(), Value::from("all"));
        }
        input.insert("limit".to_owned(), Value::from(query.limit));
        insert_opt(&mut input, "before_commit_seq", query.before_commit_seq);
        self.read(Operation::ClaimList, Value::Object(input))
    }

    /// Events about one entity (`entity` = `(type, id)`) or about everything visible.
    pub fn event_list(
        &self,
        scope: &Scope,
        entity: Option<(&str, Option<&str>)>,
        limit: u32,
        before_commit_seq: Option<i64>,
    ) -> Result<Value, Failure> {
        let mut input = Map::new();
        scope.insert_into(&mut input);
        if let Some((entity_type, entity_id)) = entity {
            input.insert("entity_type".to_owned(), Value::from(entity_type));
            insert_opt(&mut input, "entity_id", entity_id);
        }
        input.insert("limit".to_owned(), Value::from(limit));
        insert_opt(&mut input, "before_commit_seq", before_commit_seq);
        self.read(Operation::EventList, Value::Object(input))
    }

    pub fn conflict_list(&self, scope: &Scope, include_stale: bool, before: Option<i64>) -> Result<Value, Failure> {
        let mut input = Map::new();
        scope.insert_into(&mut input);
        input.insert("include_stale".to_owned(), Value::Bool(include_stale));
        input.insert("limit".to_owned(), Value::from(50));
        insert_opt(&mut input, "before_case_sequence", before);
        self.read(Operation::ConflictList, Value::Object(input))
    }

    pub fn relation_list(&self, scope: &Scope, entity_type: &str, entity_id: &str) -> Result<Value, Failure> {
        let mut input = Map::new();
        scope.insert_into(&mut input);
        input.insert("entity_type".to_owned(), Value::from(entity_type));
        input.insert("entity_id".to_owned(), Value::from(entity_id));
        input.insert("limit".to_owned(), Value::from(100));
        self.read(Operation::RelationList, Value::Object(input))
    }

    pub fn search(&self, scope: &Scope, query: &str) -> Result<Value, Failure> {
        let mut input = Map::new();
        input.insert("query".to_owned(), Value::from(query));
        scope.insert_into(&mut input);
        input.insert("limit".to_owned(), Value::from(10));
        self.read(Operation::Search, Value::Object(input))
    }

    pub fn recall(&self, scope: &Scope, query: &str) -> Result<Value, Failure> {
        let mut input = Map::new();
        input.insert("query".to_owned(), Value::from(query));
        scope.insert_into(&mut input);
        self.read(Operation::MemoryRecall, Value::Object(input))
    }

    pub fn context_build(&self, scope: &Scope, query: &str, max_bytes: Option<u64>) -> Result<Value, Failure> {
        let mut input = Map::new();
        input.insert("query".to_owned(), Value::from(query));
        scope.insert_into(&mut input);
        insert_opt(&mut input, "max_bytes", max_bytes);
        self.read(Operation::ContextBuild, Value::Object(input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientError;
    use crate::protocol::Response;
    use std::sync::Mutex;

    /// Records requests and answers each with an empty success.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<Value>>);

    impl Transport for Recorder {
        fn exchange(&self, request: &Value) -> Result<Response, ClientError> {
            self.0.lock().unwrap().push(request.clone());
            Ok(Response::success(request["request_id"].as_str().unwrap(), json!({})))
        }
    }

    fn memory() -> (Arc<Recorder>, Memory) {
        let recorder = Arc::new(Recorder::default());
        let context = AmbientContext {
            workspace_id: "w".to_owned(),
            project_id: "p".to_owned(),
            task_id: None,
            component: None,
            pins: Vec::new(),
        };
        let memory = Memory::new(recorder.clone(), context, ContextSource::Marker);
        (recorder, memory)
    }

    #[test]
    fn the_inspector_never_sends_a_mutation_or_a_side_effect() {
        let (recorder, memory) = memory();
        for op in Operation::ALL.into_iter().filter(|op| op.is_side_effecting()) {
            let error = memory.read(op, json!({})).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest, "{op}");
        }
        assert!(recorder.0.lock().unwrap().is_empty());
    }

    #[test]
    fn reads_carry_the_ambient_context_and_a_reason_only_for_broad_horizons() {
        let (recorder, memory) = memory();
        let ambient = Scope {
            horizon: Horizon::Ambient,
            reason: Some("ignored".to_owned()),
        };
        memory.search(&ambient, "cache ttl").unwrap();
        let broad = Scope {
            horizon: Horizon::Workspace,
            reason: Some("audit".to_owned()),
        };
        memory.conflict_list(&broad, true, None).unwrap();
        let sent = recorder.0.lock().unwrap();
        assert_eq!(sent[0]["op"], "search");
        assert_eq!(sent[0]["context"]["workspace_id"], "w");
        assert_eq!(sent[0]["context_source"], "explicit");
        assert!(sent[0]["input"].get("reason").is_none());
        assert!(sent[0].get("idempotency_key").is_none());
        assert_eq!(sent[1]["input"]["horizon"], "workspace");
        assert_eq!(sent[1]["input"]["reason"], "audit");
        assert_ne!(sent[0]["request_id"], sent[1]["request_id"]);
    }
}
