//! Service-level tests of `artifact.purge` / `claim.purge` and the purge notes on reads:
//! every envelope and result is checked against the schemas.

use serde_json::{Value, json};

use crate::protocol::Response;
use crate::service::Service;
use crate::service::tests::support::{Backend, TestStore, checked, envelope, result_of, warning_codes};

fn context() -> Value {
    json!({"workspace_id": "wsp_purge", "project_id": "prj_purge"})
}

fn call(service: &Service, op: &str, input: Value) -> Response {
    checked(service, envelope(op, input, Some(&context()), None))
}

fn ok(service: &Service, op: &str, input: Value) -> (Value, Vec<String>) {
    let request = json!({"op": op, "input": input});
    let response = call(service, op, input);
    let codes = warning_codes(&response);
    (result_of(response, &request), codes)
}

/// An artifact whose text a claim cites, on any store.
struct Fixture {
    store: TestStore,
    artifact: String,
    revision: String,
}

impl std::ops::Deref for Fixture {
    type Target = TestStore;

    fn deref(&self) -> &TestStore {
        &self.store
    }
}

fn seeded(store: TestStore) -> Fixture {
    let service = &store.service;
    let text = "Harbor keeps the ledger in SQLite and rotates the signing key weekly.";
    let (put, _) = ok(
        service,
        "artifact.put",
        json!({"kind": "note", "title": "Ledger notes", "content": {"type": "text", "data": text}}),
    );
    let artifact = put["artifact_id"].as_str().unwrap().to_owned();
    let revision = put["revision_id"].as_str().unwrap().to_owned();
    let evidence = json!([{"artifact_id": artifact, "revision_id": revision, "start_byte": 0, "end_byte": 25}]);
    ok(
        service,
        "claim.assert",
        json!({"claim_type": "fact", "statement": "Harbor keeps the ledger in SQLite", "evidence": evidence}),
    );
    Fixture {
        store,
        artifact,
        revision,
    }
}

/// The fixture on SQLite (a test that holds a SQLite reader open).
fn fixture() -> Fixture {
    seeded(TestStore::open(Backend::Sqlite).unwrap())
}

backend_test!(fn recall_keeps_a_claim_whose_evidence_was_purged_but_shows_no_excerpt_and_warns(store) {
    let f = seeded(store);
    let (before, _) = ok(&f.service, "memory.recall", json!({"query": "ledger SQLite"}));
    assert!(before["claims"][0]["evidence"][0]["excerpt"].is_string(), "{before}");
    ok(
        &f.service,
        "artifact.purge",
        json!({"artifact_id": f.artifact, "reason": "leaked key"}),
    );
    let (after, warnings) = ok(&f.service, "memory.recall", json!({"query": "ledger SQLite"}));
    let evidence = &after["claims"][0]["evidence"][0];
    assert_eq!(evidence["revision_id"], f.revision.as_str());
    assert!(evidence.get("excerpt").is_none(), "{evidence}");
    assert!(warnings.contains(&"EVIDENCE_SOURCE_PURGED".to_owned()), "{warnings:?}");
    let (search, _) = ok(&f.service, "search", json!({"query": "rotates signing key"}));
    assert!(
        !search.to_string().contains(&f.artifact),
        "a purged artifact is never retrieved: {search}"
    );
});

#[test]
fn an_incomplete_erasure_is_acknowledged_with_a_warning_and_finished_by_purging_again() {
    let f = fixture();
    let reader = rusqlite::Connection::open(f.service.store().db_path()).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM artifacts", [], |r| r.get(0))
        .unwrap();
    let (first, warnings) = ok(
        &f.service,
        "artifact.purge",
        json!({"artifact_id": f.artifact, "reason": "leak"}),
    );
    assert_eq!(
        (first["erasure_complete"].as_bool(), first["created"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(warnings.contains(&"PURGE_INCOMPLETE".to_owned()), "{warnings:?}");
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let (again, warnings) = ok(
        &f.service,
        "artifact.purge",
        json!({"artifact_id": f.artifact, "reason": "leak"}),
    );
    assert_eq!(
        (again["erasure_complete"].as_bool(), again["created"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(again["commit_seq"], first["commit_seq"]);
    assert!(!warnings.contains(&"PURGE_INCOMPLETE".to_owned()), "{warnings:?}");
    let (verify, _) = ok(&f.service, "verify", json!({}));
    assert_eq!(verify["ok"], true, "{verify}");
}

backend_test!(fn a_replayed_acknowledgement_of_a_purged_artifact_says_it_was_purged(store) {
    let f = seeded(store);
    let request = json!({"request_id": "r", "op": "artifact.revise", "idempotency_key": "rev-1", "context": context(),
        "input": {"artifact_id": f.artifact, "if_revision": f.revision, "content": {"type": "text", "data": "v2"}}});
    assert!(f.service.handle_value(request.clone(), "t").ok);
    ok(
        &f.service,
        "artifact.purge",
        json!({"artifact_id": f.artifact, "reason": "leak"}),
    );
    let replay = f.service.handle_value(request, "t");
    assert!(replay.ok, "{:?}", replay.error);
    assert_eq!(replay.result.as_ref().unwrap()["created"], false);
    assert!(
        replay.warnings.iter().any(|w| w.code == "PURGED"),
        "{:?}",
        replay.warnings
    );
});

/// The browsing, purge and export/import extensions decode into their typed outputs through
/// the typed client, so an in-crate client (MCP, inspector, CLI) never reads them as loose JSON.
mod typed {
    use crate::client::Exchange;
    use crate::protocol::artifact::{ArtifactContent, ArtifactPutInput, ArtifactStatus};
    use crate::protocol::browse::{ArtifactListInput, ClaimListInput, EventEntityType, EventListInput, TemporalState};
    use crate::protocol::claim::{ClaimAssertInput, ClaimType};
    use crate::protocol::purge::{ArtifactPurgeInput, ImportInput, ImportMode};
    use crate::protocol::relation::EntityType;
    use crate::protocol::{AmbientContext, ContextSource, Horizon, Input, Request, RequestId};
    use crate::service::{InProcess, Service};

    fn request<I: Input>(input: I) -> Request<I> {
        let request = Request::new(RequestId::generate(), input).with_context(
            AmbientContext::project("wsp_typed", "prj_typed"),
            ContextSource::Explicit,
        );
        if I::OP.is_mutating() {
            request.with_idempotency_key(format!("key-{}", RequestId::generate()))
        } else {
            request
        }
    }

    #[test]
    fn the_extensions_decode_into_their_typed_outputs_through_the_typed_client() {
        let dir = tempfile::tempdir().unwrap();
        let client = InProcess::new(Service::open(&dir.path().join("data")).unwrap());
        let put = ArtifactPutInput {
            kind: "note".to_owned(),
            title: "Typed notes".to_owned(),
            media_type: "text/plain".to_owned(),
            content: ArtifactContent::Text("The ledger lives in SQLite.".to_owned()),
            provenance: Default::default(),
            actor: None,
        };
        let put = client.exchange(&request(put)).unwrap().result.unwrap();
        let assert = ClaimAssertInput {
            claim_type: ClaimType::Fact,
            statement: "The ledger lives in SQLite".to_owned(),
            confidence: None,
            evidence: Vec::new(),
            valid_from: None,
            valid_until: None,
            actor: None,
        };
        client.exchange(&request(assert)).unwrap().result.unwrap();

        let artifacts = ArtifactListInput {
            horizon: Horizon::Ambient,
            reason: None,
            kind: None,
            status: Some(ArtifactStatus::Active),
            limit: 10,
            before_commit_seq: None,
        };
        let artifacts = client.exchange(&request(artifacts)).unwrap().result.unwrap();
        assert_eq!(artifacts.total, 1);
        assert_eq!(artifacts.artifacts[0].artifact_id, put.record.artifact_id);

        let claims = ClaimListInput {
            horizon: Horizon::Ambient,
            reason: None,
            claim_type: Some(ClaimType::Fact),
            status: None,
            temporal_state: Some(TemporalState::Current),
            cites_artifact_id: None,
            cites_revision_id: None,
            revisions: Default::default(),
            limit: 10,
            before_commit_seq: None,
        };
        let claims = client.exchange(&request(claims)).unwrap().result.unwrap();
        assert_eq!(claims.claims.len(), 1);
        assert_eq!(claims.claims[0].temporal_state, TemporalState::Current);
        assert!(claims.claims[0].is_current_revision);

        let events = EventListInput {
            horizon: Horizon::Ambient,
            reason: None,
            entity_type: Some(EventEntityType::Artifact),
            entity_id: None,
            limit: 10,
            before_commit_seq: None,
        };
        let events = client.exchange(&request(events)).unwrap().result.unwrap();
        assert_eq!(events.events.len(), 1);
        assert_eq!(events.events[0].entity_type, EventEntityType::Artifact);

        let purge = ArtifactPurgeInput {
            artifact_id: put.record.artifact_id.clone(),
            reason: "typed test".to_owned(),
            actor: None,
        };
        let purged = client.exchange(&request(purge)).unwrap().result.unwrap();
        assert_eq!(purged.entity_type, EntityType::Artifact);
        assert_eq!(purged.state, "purged");
        assert!(purged.created);

        let import = ImportInput {
            source: dir.path().join("no-such-archive").display().to_string(),
            mode: ImportMode::Merge,
        };
        let refused = client.send(&request(import)).unwrap();
        assert!(!refused.ok, "importing a missing archive must fail");
    }
}
