//! The browsing extensions `artifact.list`, `claim.list` and `event.list`: horizons, filters,
//! paging, totals, and results that match their schemas.

use serde_json::{Value, json};

use super::support::*;
use crate::protocol::{Operation, schema};

impl Fixture {
    /// A browsing read that must succeed and match its result schema.
    fn browse(&self, context: &Value, op: &str, input: Value) -> Value {
        let result = self.ok(self.read(context, op, input));
        let operation = Operation::from_wire_name(op).unwrap();
        schema::validate_result(operation, &result).unwrap_or_else(|v| panic!("{op} result: {v}\n{result}"));
        result
    }
}

fn ids(list: &Value, key: &str, id: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[id].as_str().unwrap().to_owned())
        .collect()
}

backend_test!(fn artifact_list_shows_current_revisions_newest_first_without_content_and_pages_with_a_total(store) {
    let f = Fixture::on(store);
    let main = main_ctx();
    let first = f.put_artifact(&main, "first");
    let second = f.put_artifact(&main, "second");
    let third = f.put_artifact(&main, "third");
    f.ok(f.mutation(
        &main,
        "artifact.revise",
        json!({"artifact_id": first["artifact_id"], "if_revision": first["revision_id"],
               "content": {"type": "text", "data": "first, revised"}}),
    ));
    let page = f.browse(&main, "artifact.list", json!({"limit": 2}));
    assert_eq!(page["total"], 3);
    assert_eq!(page["truncated"], true);
    assert_eq!(
        ids(&page, "artifacts", "artifact_id"),
        [
            first["artifact_id"].as_str().unwrap(),
            third["artifact_id"].as_str().unwrap()
        ]
    );
    assert_eq!(page["artifacts"][0]["revision_number"], 2);
    assert!(page["artifacts"][0].get("content").is_none());
    let cursor = page["next_before_commit_seq"].clone();
    let rest = f.browse(&main, "artifact.list", json!({"limit": 2, "before_commit_seq": cursor}));
    assert_eq!(
        ids(&rest, "artifacts", "artifact_id"),
        [second["artifact_id"].as_str().unwrap()]
    );
    assert_eq!(rest["truncated"], false);
    assert!(rest.get("next_before_commit_seq").is_none());
});

backend_test!(fn artifact_list_filters_by_status_and_kind_and_respects_the_horizon(store) {
    let f = Fixture::on(store);
    let main = main_ctx();
    let kept = f.put_artifact(&main, "kept");
    let gone = f.put_artifact(&main, "gone");
    f.put_artifact(&ctx("prj_other", None), "elsewhere");
    f.ok(f.mutation(
        &main,
        "artifact.forget",
        json!({"artifact_id": gone["artifact_id"], "reason": "obsolete"}),
    ));
    let forgotten = f.browse(&main, "artifact.list", json!({"status": "forgotten"}));
    assert_eq!(
        ids(&forgotten, "artifacts", "artifact_id"),
        [gone["artifact_id"].as_str().unwrap()]
    );
    assert_eq!(forgotten["artifacts"][0]["forgotten_reason"], "obsolete");
    let active = f.browse(&main, "artifact.list", json!({"status": "active", "kind": "note"}));
    assert_eq!(
        ids(&active, "artifacts", "artifact_id"),
        [kept["artifact_id"].as_str().unwrap()]
    );
    assert_eq!(f.browse(&main, "artifact.list", json!({"kind": "design"}))["total"], 0);
    let wide = f.browse(
        &main,
        "artifact.list",
        json!({"horizon": "workspace", "reason": "audit the workspace"}),
    );
    assert_eq!(wide["total"], 3);
    let refused = f.err(f.read(&main, "artifact.list", json!({"horizon": "workspace"})));
    assert_eq!(refused.code.as_str(), "INVALID_REQUEST");
});

backend_test!(fn claim_list_filters_by_type_status_and_validity_and_reports_the_temporal_state(store) {
    let f = Fixture::on(store);
    let main = main_ctx();
    let assert = |input: Value| f.ok(f.mutation(&main, "claim.assert", input));
    let current = assert(json!({"claim_type": "fact", "statement": "current fact"}));
    let future = assert(json!({"claim_type": "decision", "statement": "future decision",
                               "valid_from": "2999-01-01T00:00:00Z"}));
    let expired = assert(json!({"claim_type": "fact", "statement": "expired fact",
                                "valid_until": "2000-01-01T00:00:00Z"}));
    let retracted = assert(json!({"claim_type": "fact", "statement": "retracted fact"}));
    f.retract_claim(&main, &retracted["claim_id"]);
    let left = f.assert_claim(&main, "left side");
    let right = f.assert_claim(&main, "right side");
    f.relate(
        &main,
        claim(&left["claim_id"]),
        "contradicts",
        claim(&right["claim_id"]),
    );

    let all = f.browse(&main, "claim.list", json!({}));
    assert_eq!(all["total"], 6);
    let by = |input: Value| {
        let mut got = ids(&f.browse(&main, "claim.list", input), "claims", "claim_id");
        got.sort();
        got
    };
    let sorted = |values: &[&Value]| {
        let mut ids: Vec<String> = values
            .iter()
            .map(|v| v["claim_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(by(json!({"temporal_state": "future"})), sorted(&[&future]));
    assert_eq!(by(json!({"temporal_state": "expired"})), sorted(&[&expired]));
    assert_eq!(by(json!({"claim_type": "decision"})), sorted(&[&future]));
    assert_eq!(by(json!({"status": "retracted"})), sorted(&[&retracted]));
    assert_eq!(by(json!({"status": "conflicted"})), sorted(&[&left, &right]));
    assert_eq!(
        by(json!({"status": "active", "temporal_state": "current"})),
        sorted(&[&current])
    );
    let listed = f.browse(&main, "claim.list", json!({"temporal_state": "future"}));
    assert_eq!(listed["claims"][0]["temporal_state"], "future");
    assert_eq!(listed["claims"][0]["is_current_revision"], true);
});

backend_test!(fn claim_list_finds_every_revision_citing_an_artifact_revision(store) {
    let f = Fixture::on(store);
    let main = main_ctx();
    let source = f.put_artifact(&main, "The cache TTL is 30 seconds.");
    let other = f.put_artifact(&main, "unrelated");
    let span = json!({"artifact_id": source["artifact_id"], "revision_id": source["revision_id"],
                      "start_byte": 4, "end_byte": 13});
    let citing = f.ok(f.mutation(
        &main,
        "claim.assert",
        json!({"claim_type": "fact", "statement": "TTL is 30 s", "evidence": [span]}),
    ));
    f.ok(f.mutation(
        &main,
        "claim.assert",
        json!({"claim_type": "fact", "statement": "unrelated",
               "evidence": [{"artifact_id": other["artifact_id"], "revision_id": other["revision_id"]}]}),
    ));
    // The revision drops the evidence: only the first revision still cites the artifact.
    f.revise_claim(&main, &citing["claim_id"], "TTL is thirty seconds");
    let current = f.browse(&main, "claim.list", json!({"cites_artifact_id": source["artifact_id"]}));
    assert_eq!(current["total"], 0);
    let history = f.browse(
        &main,
        "claim.list",
        json!({"cites_revision_id": source["revision_id"], "revisions": "all"}),
    );
    assert_eq!(history["total"], 1);
    let item = &history["claims"][0];
    assert_eq!(item["claim_id"], citing["claim_id"]);
    assert_eq!(item["revision_id"], citing["revision_id"]);
    assert_eq!(item["is_current_revision"], false);
    assert_eq!(item["evidence"][0]["start_byte"], 4);
});

backend_test!(fn event_list_shows_visible_mutations_newest_first_and_filters_by_entity(store) {
    let f = Fixture::on(store);
    let main = main_ctx();
    let note = f.put_artifact(&main, "note");
    let fact = f.assert_claim(&main, "a fact");
    f.relate(
        &main,
        claim(&fact["claim_id"]),
        "references",
        artifact(&note["artifact_id"]),
    );
    f.retract_claim(&main, &fact["claim_id"]);
    f.put_artifact(&ctx("prj_other", None), "elsewhere");

    let events = f.browse(&main, "event.list", json!({}));
    let types: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["claim.retract", "relation.put", "claim.assert", "artifact.put"]);
    assert_eq!(events["events"][0]["payload"], json!({"reason": "wrong"}));
    assert_eq!(events["events"][0]["context"]["project_id"], "prj_main");

    let about = f.browse(
        &main,
        "event.list",
        json!({"entity_type": "claim", "entity_id": fact["claim_id"], "limit": 1}),
    );
    assert_eq!(about["events"].as_array().unwrap().len(), 1);
    assert_eq!(about["truncated"], true);
    let older = f.browse(
        &main,
        "event.list",
        json!({"entity_id": fact["claim_id"], "before_commit_seq": about["next_before_commit_seq"]}),
    );
    assert_eq!(older["events"][0]["event_type"], "claim.assert");
    let everywhere = f.browse(&main, "event.list", json!({"horizon": "personal", "reason": "audit"}));
    assert_eq!(everywhere["events"].as_array().unwrap().len(), 5);
});
