//! The inspector's one door to memory: typed read requests sent to the daemon.
//!
//! Every request the inspector makes is built here as a typed [`Request<I>`] (fresh request
//! id, the ambient context resolved at start, sent as `explicit`). Results stay the raw
//! `result` objects: views read the fields they know and show the rest generically, so
//! fields a newer daemon adds still appear. Filters arrive as page query strings; an unknown
//! spelling is refused here with the same `INVALID_REQUEST` the daemon would give.
//!
//! **Invariant:** only read operations leave this module; [`Memory::read`] refuses any
//! operation that mutates or has a side effect, so the inspector can never change memory.

use std::sync::Arc;

use serde_json::Value;

use crate::client::{Exchange, Transport};
use crate::protocol::admin::{DoctorInput, VerifyInput};
use crate::protocol::artifact::{ArtifactGetInput, ArtifactHistoryInput};
use crate::protocol::browse::{ArtifactListInput, ClaimListInput, EventListInput, RevisionSelection};
use crate::protocol::claim::{ClaimGetInput, ClaimHistoryInput};
use crate::protocol::relation::{ConflictListInput, EntityType, RelationDirection, RelationListInput};
use crate::protocol::retrieval::{ContextBuildInput, RecallInput, SearchInput};
use crate::protocol::{
    AmbientContext, ContextSource, ErrorBody, ErrorCode, Horizon, Input, Operation, Request, RequestId, UnknownVariant,
};

/// The horizon a page reads at, with the reason a broader horizon needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub horizon: Horizon,
    pub reason: Option<String>,
}

impl Scope {
    /// The reason sent: only a broad horizon carries one.
    fn reason(&self) -> Option<String> {
        self.reason.clone().filter(|_| self.horizon.is_broad())
    }
}

/// A filter spelled in a page's query string, as its wire enum.
fn filter<T: std::str::FromStr<Err = UnknownVariant>>(field: &str, text: Option<&str>) -> Result<Option<T>, Failure> {
    text.map(|text| {
        text.parse()
            .map_err(|e: UnknownVariant| ErrorBody::prefixed(ErrorCode::InvalidRequest, format_args!("{field}: {e}")))
    })
    .transpose()
}

/// Refuses an operation that could change memory or the machine.
fn read_only(op: Operation) -> Result<(), Failure> {
    if op.is_side_effecting() {
        return Err(ErrorBody::prefixed(
            ErrorCode::InvalidRequest,
            format_args!("the inspector is read-only and never sends {op}"),
        ));
    }
    Ok(())
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
    pub fn read<I: Input>(&self, input: I) -> Result<Value, Failure> {
        read_only(I::OP)?;
        let request =
            Request::new(RequestId::generate(), input).with_context(self.context.clone(), ContextSource::Explicit);
        let response = self.transport.send(&request).map_err(|error| error.error_body())?;
        match (response.ok, response.result, response.error) {
            (true, Some(result), _) => Ok(result),
            (_, _, Some(error)) => Err(error),
            _ => Err(ErrorBody::prefixed(
                ErrorCode::InternalError,
                format_args!("{} returned neither a result nor an error", I::OP),
            )),
        }
    }

    pub fn doctor(&self) -> Result<Value, Failure> {
        self.read(DoctorInput {})
    }

    pub fn verify(&self) -> Result<Value, Failure> {
        self.read(VerifyInput {})
    }

    pub fn artifact_get(&self, artifact_id: &str, revision_id: Option<&str>, content: bool) -> Result<Value, Failure> {
        self.read(ArtifactGetInput {
            artifact_id: artifact_id.into(),
            revision_id: revision_id.map(Into::into),
            include_content: content,
        })
    }

    pub fn artifact_history(&self, artifact_id: &str, limit: u32) -> Result<Value, Failure> {
        self.read(ArtifactHistoryInput {
            artifact_id: artifact_id.into(),
            limit: limit.into(),
            before_revision_number: None,
        })
    }

    pub fn claim_get(&self, claim_id: &str, revision_id: Option<&str>) -> Result<Value, Failure> {
        self.read(ClaimGetInput {
            claim_id: claim_id.into(),
            revision_id: revision_id.map(Into::into),
        })
    }

    pub fn claim_history(&self, claim_id: &str, limit: u32) -> Result<Value, Failure> {
        self.read(ClaimHistoryInput {
            claim_id: claim_id.into(),
            limit: limit.into(),
            before_revision_number: None,
        })
    }

    pub fn artifact_list(&self, scope: &Scope, query: &ArtifactQuery<'_>) -> Result<Value, Failure> {
        self.read(ArtifactListInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            kind: query.kind.map(str::to_owned),
            status: filter("status", query.status)?,
            limit: query.limit.into(),
            before_commit_seq: query.before_commit_seq,
        })
    }

    pub fn claim_list(&self, scope: &Scope, query: &ClaimQuery<'_>) -> Result<Value, Failure> {
        self.read(ClaimListInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            claim_type: filter("claim_type", query.claim_type)?,
            status: filter("status", query.status)?,
            temporal_state: filter("temporal_state", query.temporal_state)?,
            cites_artifact_id: query.cites_artifact_id.map(Into::into),
            cites_revision_id: None,
            revisions: if query.all_revisions {
                RevisionSelection::All
            } else {
                RevisionSelection::Current
            },
            limit: query.limit.into(),
            before_commit_seq: query.before_commit_seq,
        })
    }

    /// Events about one entity (`entity` = `(type, id)`) or about everything visible.
    pub fn event_list(
        &self,
        scope: &Scope,
        entity: Option<(&str, Option<&str>)>,
        limit: u32,
        before_commit_seq: Option<i64>,
    ) -> Result<Value, Failure> {
        self.read(EventListInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            entity_type: filter("entity_type", entity.map(|(entity_type, _)| entity_type))?,
            entity_id: entity.and_then(|(_, id)| id).map(str::to_owned),
            limit: limit.into(),
            before_commit_seq,
        })
    }

    pub fn conflict_list(&self, scope: &Scope, include_stale: bool, before: Option<i64>) -> Result<Value, Failure> {
        self.read(ConflictListInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            include_stale,
            limit: 50,
            before_case_sequence: before,
        })
    }

    pub fn relation_list(&self, scope: &Scope, entity_type: &str, entity_id: &str) -> Result<Value, Failure> {
        let entity_type: Option<EntityType> = filter("entity_type", Some(entity_type))?;
        self.read(RelationListInput {
            entity_type: entity_type.unwrap_or(EntityType::Artifact),
            entity_id: entity_id.to_owned(),
            direction: RelationDirection::default(),
            relation: None,
            horizon: scope.horizon,
            reason: scope.reason(),
            limit: 100,
            before_commit_seq: None,
        })
    }

    pub fn search(&self, scope: &Scope, query: &str) -> Result<Value, Failure> {
        self.read(SearchInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            limit: 10,
            ..SearchInput::new(query)
        })
    }

    pub fn recall(&self, scope: &Scope, query: &str) -> Result<Value, Failure> {
        self.read(RecallInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            ..RecallInput::new(query)
        })
    }

    pub fn context_build(&self, scope: &Scope, query: &str, max_bytes: Option<u64>) -> Result<Value, Failure> {
        let defaults = ContextBuildInput::new(query);
        self.read(ContextBuildInput {
            horizon: scope.horizon,
            reason: scope.reason(),
            max_bytes: max_bytes.unwrap_or(defaults.max_bytes),
            ..defaults
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::ClientError;
    use crate::protocol::Response;
    use std::sync::Mutex;

    /// Records requests and answers each with an empty success.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<Value>>);

    impl Transport for Recorder {
        fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
            let request: Value = serde_json::from_slice(body).unwrap();
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
            let error = read_only(op).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest, "{op}");
        }
        let put = crate::protocol::artifact::ArtifactForgetInput {
            artifact_id: "art_1".into(),
            reason: "no".to_owned(),
        };
        assert_eq!(memory.read(put).unwrap_err().code, ErrorCode::InvalidRequest);
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
