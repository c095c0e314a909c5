//! Issue 28, the service boundary: a credential limited to some workspaces gets no byte of
//! another workspace — not through evidence previews, purge details, warnings or scores —
//! and the isolation sweep (`testkit::isolation`) proves it for every operation on SQLite and
//! PostgreSQL (and over `tls://` in `tests/remote.rs`).

use serde_json::{Value, json};

use crate::service::{Grant, Service};
use crate::testkit::isolation::{self, CANARIES, OWN_WORKSPACE, Planted};
use crate::testkit::postgres::FrontEnds;

fn exchange(service: &Service) -> impl Fn(&Value) -> Value + '_ {
    move |request: &Value| {
        let response = service.handle_value(request.clone(), "req_transport");
        serde_json::to_value(&response).unwrap()
    }
}

fn restricted(service: &Service) -> Service {
    service.with_grant(Grant::workspaces("alice", [OWN_WORKSPACE]))
}

fn sqlite() -> (tempfile::TempDir, Service) {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    (dir, service)
}

fn planted(service: &Service) -> Planted {
    isolation::plant(&exchange(service))
}

fn recall(service: &Service, query: &str) -> Value {
    let request = json!({"request_id": "r", "op": "memory.recall", "context": isolation::own_context(),
                         "input": {"query": query, "max_excerpt_bytes": 200}});
    exchange(service)(&request)
}

backend_test!(fn recall_shows_a_foreign_cited_revision_as_its_locator_and_a_warning_only(store) {
    let (admin, _keep) = store.into_parts();
    let p = planted(&admin);
    let alice = restricted(&admin);
    // The excerpt window follows the query words: `password` sits next to the content canary.
    let query = "billing exporter deployment password vault";
    let response = recall(&alice, query);
    assert_eq!(response["ok"], true, "{response}");
    let text = response.to_string();
    for canary in CANARIES {
        assert!(!text.contains(canary), "{canary} leaked: {response}");
    }
    let claims = response["result"]["claims"].as_array().unwrap();
    let citing = claims
        .iter()
        .find(|c| c["claim_id"] == json!(p.citing_claim))
        .unwrap_or_else(|| panic!("the citing claim is recalled: {response}"));
    let evidence = &citing["evidence"][0];
    assert_eq!(evidence["artifact_id"], json!(p.cited_artifact));
    assert_eq!(evidence["revision_id"], json!(p.cited_revision));
    assert_eq!((&evidence["title"], &evidence["media_type"]), (&json!(""), &json!("")));
    assert!(evidence.get("excerpt").is_none_or(Value::is_null), "{evidence}");
    let codes: Vec<&str> = response["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"EVIDENCE_OUTSIDE_GRANT"), "{codes:?}");
    // The admin still gets the preview.
    let whole = recall(&admin, "billing exporter deployment credentials");
    assert!(whole.to_string().contains(CANARIES[0]), "{whole}");
});

backend_test!(fn a_foreign_purged_id_is_outside_the_grant_before_it_is_purged(store) {
    let (admin, _keep) = store.into_parts();
    let p = planted(&admin);
    let alice = restricted(&admin);
    for input in [
        json!({"artifact_id": p.purged_artifact}),
        json!({"artifact_id": p.purged_artifact, "revision_id": p.purged_revision}),
    ] {
        let response = exchange(&alice)(&json!({"request_id": "r", "op": "artifact.get", "input": input}));
        assert_eq!(response["error"]["code"], "SCOPE_VIOLATION", "{response}");
        let text = response.to_string();
        assert!(!text.contains(CANARIES[3]) && !text.contains("purged"), "{text}");
        if input.get("revision_id").is_none() {
            assert!(!text.contains(&p.purged_revision), "{text}");
        }
    }
});

backend_test!(fn search_warns_only_about_purged_entities_the_grant_may_see(store) {
    let (admin, _keep) = store.into_parts();
    let p = planted(&admin);
    let alice = restricted(&admin);
    let request = json!({"request_id": "r", "op": "search", "context": isolation::own_context(),
                         "input": {"query": p.purged_revision}});
    let response = exchange(&alice)(&request);
    assert_eq!(response["ok"], true, "{response}");
    assert_eq!(response["warnings"], json!([]), "{response}");
    let whole = exchange(&admin)(&request);
    assert!(whole["warnings"].to_string().contains("PURGED"), "{whole}");
});

fn sweep(admin: &Service) {
    let p = planted(admin);
    let alice = restricted(admin);
    let ran = isolation::sweep(&exchange(&alice), &p);
    assert!(ran > 100, "{ran}");
}

backend_test!(fn the_isolation_sweep_finds_no_foreign_byte(store) {
    let (admin, _keep) = store.into_parts();
    sweep(&admin);
});

fn scores_with_and_without_foreign_rows(without: &Service, with: &Service) {
    isolation::plant_own(&exchange(without));
    isolation::plant_own(&exchange(with));
    isolation::plant_foreign_noise(&exchange(with));
    let alone = isolation::own_scores(&exchange(&restricted(without)));
    let shared = isolation::own_scores(&exchange(&restricted(with)));
    assert!(alone.iter().any(|(_, score)| !score.is_empty()), "{alone:?}");
    assert_eq!(alone, shared);
}

#[test]
fn restricted_scores_do_not_depend_on_foreign_rows_on_sqlite() {
    let ((_a, without), (_b, with)) = (sqlite(), sqlite());
    scores_with_and_without_foreign_rows(&without, &with);
}

#[test]
fn restricted_scores_do_not_depend_on_foreign_rows_on_postgresql() {
    let Some(f) = FrontEnds::start(1) else { return };
    let g = FrontEnds::start(1).unwrap();
    scores_with_and_without_foreign_rows(&f.services[0], &g.services[0]);
}
