//! Remote credentials (`service::Grant`): a view of the service limited to listed workspaces
//! serves them exactly like the unrestricted service, and refuses everything that reaches
//! another workspace with `SCOPE_VIOLATION` before reading or writing it.

use serde_json::{Value, json};

use super::support::{Fixture, artifact, claim, main_ctx};
use crate::protocol::{ErrorCode, Response};
use crate::service::{Grant, OUTSIDE_GRANT_REASON, Service};

const SECRET: &str = "the foreign deploy password is hunter2";

fn foreign_ctx() -> Value {
    json!({"workspace_id": "wsp_other", "project_id": "prj_other"})
}

fn restricted(f: &Fixture) -> Service {
    f.service.with_grant(Grant::workspaces("alpha", ["wsp_test"]))
}

fn last_commit_seq(f: &Fixture) -> Value {
    f.ok(json!({"request_id": "req_d", "op": "doctor", "input": {}}))["last_commit_seq"].clone()
}

fn assert_refused(response: &Response) {
    let error = response
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("not refused: {response:?}"));
    assert_eq!(error.code, ErrorCode::ScopeViolation, "{error:?}");
    assert_eq!(error.details["reason"], OUTSIDE_GRANT_REASON);
    let text = serde_json::to_string(response).unwrap();
    assert!(!text.contains("hunter2") && !text.contains("prj_other"), "{text}");
}

/// A result without its evaluation instants, which differ between two runs.
fn timeless(result: Option<Value>) -> Option<Value> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("evaluated_at");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    result.map(|mut value| {
        strip(&mut value);
        value
    })
}

/// Every entity id in a result, sorted.
fn ids(result: &Option<Value>) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(text) if text.starts_with("art_") || text.starts_with("clm_") => out.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(result) = result {
        walk(result, &mut out);
    }
    out.sort();
    out
}

backend_test!(fn a_restricted_view_serves_its_own_workspace_like_the_whole_service(store) {
    let f = Fixture::on(store);
    let view = restricted(&f);
    let call = |request: Value| view.handle_value(request, "req_transport");
    let put = call(f.mutation(&main_ctx(), "artifact.put", json!({"kind": "note", "title": "Framing", "content": {"type": "text", "data": "frames carry a length prefix"}})));
    assert!(put.ok, "{put:?}");
    let art = put.result.unwrap()["artifact_id"].clone();
    let clm = f.assert_claim(&main_ctx(), "frames carry a length prefix");
    let linked = call(f.relate_request(
        &main_ctx(),
        claim(&clm["claim_id"]),
        "derived_from",
        artifact(&art),
        json!({}),
    ));
    assert!(linked.ok, "{linked:?}");
    for request in [
        json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": art, "include_content": true}}),
        json!({"request_id": "r", "op": "claim.history", "input": {"claim_id": clm["claim_id"]}}),
        json!({"request_id": "r", "op": "capabilities", "input": {}}),
        f.read(
            &main_ctx(),
            "search",
            json!({"query": "length prefix", "horizon": "workspace", "reason": "team"}),
        ),
        f.read(&main_ctx(), "memory.recall", json!({"query": "length prefix"})),
        f.read(&main_ctx(), "context.build", json!({"query": "length prefix"})),
        f.read(
            &main_ctx(),
            "relation.list",
            json!({"entity_type": "artifact", "entity_id": art}),
        ),
        f.read(
            &main_ctx(),
            "conflict.list",
            json!({"horizon": "workspace", "reason": "team"}),
        ),
        f.read(&main_ctx(), "context.resolve", json!({})),
    ] {
        let restricted = call(request.clone());
        let whole = f.call(request.clone());
        assert!(restricted.ok, "{request}: {restricted:?}");
        if ["search", "memory.recall", "context.build"].contains(&request["op"].as_str().unwrap()) {
            // A restricted grant's scores (and so their order) come from its own corpus
            // (`retrieval::corpus`), not FTS5's whole-store `bm25()`: the same items, though.
            assert_eq!(ids(&restricted.result), ids(&whole.result), "{request}");
            continue;
        }
        assert_eq!(timeless(restricted.result), timeless(whole.result), "{request}");
    }
});

backend_test!(fn a_restricted_view_refuses_what_reaches_another_workspace_and_writes_nothing(store) {
    let f = Fixture::on(store);
    let art = f.put_artifact(&foreign_ctx(), SECRET);
    let clm = f.assert_claim(&foreign_ctx(), SECRET);
    let (art_id, art_rev, clm_id) = (&art["artifact_id"], &art["revision_id"], &clm["claim_id"]);
    let own = f.put_artifact(&main_ctx(), "our own note");
    let before = last_commit_seq(&f);
    let view = restricted(&f);
    let pinned = json!({"workspace_id": "wsp_test", "project_id": "prj_main", "pins": [format!("memoree://artifact/{}@{}", art_id.as_str().unwrap(), art_rev.as_str().unwrap())]});
    let evidence = json!([{"artifact_id": art_id, "revision_id": art_rev}]);
    for request in [
        f.mutation(
            &foreign_ctx(),
            "claim.assert",
            json!({"claim_type": "fact", "statement": "x"}),
        ),
        f.mutation(
            &main_ctx(),
            "claim.revise",
            json!({"claim_id": clm_id, "if_revision": clm["revision_id"], "statement": "x"}),
        ),
        f.mutation(&main_ctx(), "claim.retract", json!({"claim_id": clm_id, "reason": "x"})),
        f.mutation(
            &main_ctx(),
            "claim.assert",
            json!({"claim_type": "fact", "statement": "x", "evidence": evidence}),
        ),
        f.relate_request(
            &main_ctx(),
            artifact(&own["artifact_id"]),
            "references",
            artifact(art_id),
            json!({}),
        ),
        f.read(
            &pinned,
            "relation.list",
            json!({"entity_type": "artifact", "entity_id": art_id}),
        ),
        f.read(&pinned, "context.build", json!({"query": "deploy password"})),
        f.read(
            &main_ctx(),
            "context.build",
            json!({"query": "deploy password", "horizon": "personal", "reason": "probe"}),
        ),
        f.read(
            &main_ctx(),
            "conflict.list",
            json!({"horizon": "personal", "reason": "probe"}),
        ),
        f.read(&foreign_ctx(), "context.resolve", json!({})),
        json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": art_id, "revision_id": art_rev}}),
        json!({"request_id": "r", "op": "claim.get", "input": {"claim_id": clm_id}}),
        json!({"request_id": "r", "op": "reindex", "input": {}}),
    ] {
        assert_refused(&view.handle_value(request, "req_transport"));
    }
    assert_eq!(last_commit_seq(&f), before);
    // The unrestricted service is unaffected by the view.
    assert!(
        f.call(json!({"request_id": "r", "op": "claim.get", "input": {"claim_id": clm_id}}))
            .ok
    );
});
