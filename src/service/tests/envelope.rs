//! Service-level tests over a temporary store: envelope rules and the artifact/claim
//! lifecycle, including the promise that a failed mutation leaves nothing behind.

use serde_json::{Value, json};

use crate::protocol::{ErrorCode, Response};
use crate::service::Service;
use crate::service::tests::support::{Keep, TestStore, checked};

struct Fixture {
    service: Service,
    _keep: Keep,
}

impl Fixture {
    fn on(store: TestStore) -> Fixture {
        let (service, keep) = store.into_parts();
        Fixture { service, _keep: keep }
    }
}

fn context() -> Value {
    json!({"workspace_id": "wsp_test", "project_id": "prj_test"})
}

impl Fixture {
    /// Serves a request and checks the response against our hand-written schemas.
    fn call(&self, request: Value) -> Response {
        checked(&self.service, request)
    }

    fn ok(&self, request: Value) -> Response {
        let response = self.call(request.clone());
        assert!(response.ok, "request {request} failed: {:?}", response.error);
        response
    }

    fn put_text(&self, key: &str, text: &str) -> Value {
        self.ok(json!({
            "request_id": "req_put", "op": "artifact.put", "idempotency_key": key, "context": context(),
            "input": {"kind": "note", "title": "A note", "content": {"type": "text", "data": text}}
        }))
        .result
        .unwrap()
    }

    fn count(&self, table: &str) -> i64 {
        self.service
            .store()
            .read_db(|db| db.query_one(&format!("SELECT count(*) FROM {table}"), &[], |r| r.get(0)))
            .unwrap()
    }
}

backend_test!(fn put_then_get_round_trips_text_and_acknowledgements_omit_content(store) {
    let f = Fixture::on(store);
    let put = f.put_text("k1", "SQLite is authoritative.");
    assert!(put.get("content").is_none());
    assert_eq!(put["created"], json!(true));
    assert_eq!(put["commit_seq"], json!(1));
    let get = f.ok(json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": put["artifact_id"]}}));
    let result = get.result.unwrap();
    assert_eq!(
        result["content"],
        json!({"type": "text", "data": "SQLite is authoritative."})
    );
    assert_eq!(result["revision_id"], put["revision_id"]);
});

backend_test!(fn an_identical_replay_returns_the_original_acknowledgement_and_creates_nothing(store) {
    let f = Fixture::on(store);
    let first = f.put_text("same-key", "once");
    let second = f.put_text("same-key", "once");
    assert_eq!(first["artifact_id"], second["artifact_id"]);
    assert_eq!(second["created"], json!(false));
    assert_eq!(f.count("artifacts"), 1);
    assert_eq!(f.count("events"), 1);
    let conflict = f.call(json!({
        "request_id": "req_x", "op": "artifact.put", "idempotency_key": "same-key", "context": context(),
        "input": {"kind": "note", "title": "A note", "content": {"type": "text", "data": "different"}}
    }));
    let error = conflict.error.unwrap();
    assert_eq!(error.code, ErrorCode::IdempotencyConflict);
    assert_eq!(conflict.request_id, "req_x");
    assert!(
        error.details["idempotency_key"]
            .as_str()
            .unwrap()
            .ends_with(":same-key")
    );
});

backend_test!(fn a_stale_if_revision_is_a_revision_conflict_with_details(store) {
    let f = Fixture::on(store);
    let put = f.put_text("k", "v1");
    let revise = |key: &str, rev: &Value| {
        f.call(json!({
            "request_id": "r", "op": "artifact.revise", "idempotency_key": key, "context": context(),
            "input": {"artifact_id": put["artifact_id"], "if_revision": rev, "content": {"type": "text", "data": "v2"}}
        }))
    };
    let ok = revise("k2", &put["revision_id"]);
    assert!(ok.ok);
    let stale = revise("k3", &put["revision_id"]);
    let error = stale.error.unwrap();
    assert_eq!(error.code, ErrorCode::RevisionConflict);
    assert_eq!(error.details["requested_revision"], put["revision_id"]);
    assert_eq!(error.details["current_revision"], ok.result.unwrap()["revision_id"]);
});

backend_test!(fn a_failed_mutation_leaves_no_row_no_event_and_no_commit(store) {
    let f = Fixture::on(store);
    let response = f.call(json!({
        "request_id": "r", "op": "claim.assert", "idempotency_key": "k", "context": context(),
        "input": {"claim_type": "fact", "statement": "x", "evidence": [{"artifact_id": "art_missing", "revision_id": "arev_missing"}]}
    }));
    assert_eq!(response.error.unwrap().code, ErrorCode::NotFound);
    assert_eq!(f.count("claims"), 0);
    assert_eq!(f.count("claim_revisions"), 0);
    assert_eq!(f.count("events"), 0);
    assert_eq!(f.count("idempotency"), 0);
    assert_eq!(f.service.store().last_commit_seq().unwrap(), 0);
});

backend_test!(fn envelope_failures_echo_the_request_id_and_use_stable_codes(store) {
    let f = Fixture::on(store);
    let version = f.call(json!({"v": 2, "request_id": "req_v", "op": "capabilities", "input": {}}));
    let error = version.error.unwrap();
    assert_eq!(version.request_id, "req_v");
    assert_eq!(error.code, ErrorCode::UnsupportedVersion);
    assert_eq!(error.details, json!({"received_version": 2, "supported_version": 1}));
    let unknown = f.call(json!({"request_id": "req_u", "op": "capabilities", "input": {}, "extra": 1}));
    assert_eq!(unknown.request_id, "req_u");
    assert_eq!(unknown.error.unwrap().code, ErrorCode::InvalidRequest);
    let no_key = f.call(json!({"request_id": "req_k", "op": "artifact.put", "context": context(), "input": {}}));
    assert_eq!(
        no_key.error.unwrap().message,
        "invalid request: mutating operations require idempotency_key"
    );
    let no_context = f.call(json!({"request_id": "req_c", "op": "claim.assert", "idempotency_key": "k", "input": {}}));
    assert_eq!(no_context.error.unwrap().code, ErrorCode::NoAmbientContext);
    let garbage = f.service.handle_json(b"{not json", "req_transport");
    assert_eq!(garbage.request_id, "req_transport");
    assert_eq!(garbage.error.unwrap().code, ErrorCode::InvalidRequest);
});

backend_test!(fn claims_revise_retract_and_page_through_history(store) {
    let f = Fixture::on(store);
    let artifact = f.put_text("a", "The cache TTL is 30 seconds.");
    let assert = f
        .ok(json!({
            "request_id": "r", "op": "claim.assert", "idempotency_key": "c1", "context": context(),
            "input": {"claim_type": "fact", "statement": "TTL is 30s", "confidence": 0.9,
                      "evidence": [{"artifact_id": artifact["artifact_id"], "revision_id": artifact["revision_id"], "start_byte": 4, "end_byte": 9}]}
        }))
        .result
        .unwrap();
    let mut rev = assert["revision_id"].clone();
    for n in 2..=4 {
        let revised = f
            .ok(json!({
                "request_id": "r", "op": "claim.revise", "idempotency_key": format!("rev{n}"), "context": context(),
                "input": {"claim_id": assert["claim_id"], "if_revision": rev, "statement": format!("TTL v{n}")}
            }))
            .result
            .unwrap();
        rev = revised["revision_id"].clone();
    }
    let page = f
        .ok(json!({"request_id": "r", "op": "claim.history", "input": {"claim_id": assert["claim_id"], "limit": 3}}))
        .result
        .unwrap();
    assert_eq!(page["revisions"].as_array().unwrap().len(), 3);
    assert_eq!(page["truncated"], json!(true));
    assert_eq!(page["next_before_revision_number"], json!(2));
    let last = f
        .ok(json!({"request_id": "r", "op": "claim.history", "input": {"claim_id": assert["claim_id"], "before_revision_number": 2}}))
        .result
        .unwrap();
    assert_eq!(last["revisions"][0]["revision_number"], json!(1));
    assert_eq!(last["truncated"], json!(false));
    let retracted = f
        .ok(json!({
            "request_id": "r", "op": "claim.retract", "idempotency_key": "ret", "context": context(),
            "input": {"claim_id": assert["claim_id"], "reason": "superseded by measurement"}
        }))
        .result
        .unwrap();
    assert_eq!(retracted["status"], json!("retracted"));
    let again = f.call(json!({
        "request_id": "r", "op": "claim.retract", "idempotency_key": "ret2", "context": context(),
        "input": {"claim_id": assert["claim_id"], "reason": "again"}
    }));
    assert_eq!(again.error.unwrap().code, ErrorCode::InvalidRequest);
});

backend_test!(fn replays_rebuild_the_original_acknowledgement_exactly_after_later_lifecycle_changes(store) {
    let f = Fixture::on(store);
    let put_request = json!({
        "request_id": "req_put", "op": "artifact.put", "idempotency_key": "put", "context": context(),
        "input": {"kind": "note", "title": "A note", "content": {"type": "text", "data": "evidence text here"},
                  "provenance": {"source": "test"}, "actor": "tester"}
    });
    let put = f.ok(put_request.clone()).result.unwrap();
    let assert_request = json!({
        "request_id": "r", "op": "claim.assert", "idempotency_key": "assert", "context": context(),
        "input": {"claim_type": "fact", "statement": "evidence is here", "confidence": 0.5,
                  "valid_from": "2020-01-01T00:00:00Z",
                  "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 8}]}
    });
    let claim = f.ok(assert_request.clone()).result.unwrap();
    let other = f
        .ok(json!({
            "request_id": "r", "op": "claim.assert", "idempotency_key": "other", "context": context(),
            "input": {"claim_type": "fact", "statement": "evidence is not here"}
        }))
        .result
        .unwrap();
    let relation_request = json!({
        "request_id": "r", "op": "relation.put", "idempotency_key": "rel", "context": context(),
        "input": {"source_type": "claim", "source_id": claim["claim_id"], "relation": "contradicts",
                  "target_type": "claim", "target_id": other["claim_id"], "metadata": {"why": "test"}}
    });
    let relation = f.ok(relation_request.clone()).result.unwrap();
    // Later lifecycle changes must not leak into replays of earlier acknowledgements.
    f.ok(json!({
        "request_id": "r", "op": "artifact.forget", "idempotency_key": "forget", "context": context(),
        "input": {"artifact_id": put["artifact_id"], "reason": "obsolete"}
    }));
    f.ok(json!({
        "request_id": "r", "op": "claim.retract", "idempotency_key": "retract", "context": context(),
        "input": {"claim_id": claim["claim_id"], "reason": "wrong"}
    }));
    for (request, original) in [
        (put_request, put),
        (assert_request, claim),
        (relation_request, relation),
    ] {
        let mut replay = f.ok(request).result.unwrap();
        assert_eq!(replay["created"], json!(false));
        replay["created"] = json!(true);
        assert_eq!(replay, original, "a replay must return the original acknowledgement");
    }
});
