//! `relation.put` and `relation.list`.

use serde_json::{Value, json};

use super::support::{Fixture, artifact, claim, ctx, ids, main_ctx};
use crate::protocol::ErrorCode;

backend_test!(fn put_records_the_edge_with_its_creator_context_and_one_event_carrying_the_record(store) {
    let f = Fixture::on(store);
    let context = json!({"workspace_id": "wsp_test", "project_id": "prj_main", "component": "api", "pins": ["art_x"]});
    let note = f.put_artifact(&context, "source");
    let fact = f.assert_claim(&context, "derived");
    let put = f.ok(f.relate_request(
        &context,
        claim(&fact["claim_id"]),
        "derived_from",
        artifact(&note["artifact_id"]),
        json!({"why": "quoted", "n": 1}),
    ));
    assert_eq!(put["created"], json!(true));
    assert_eq!(put["commit_seq"], json!(3));
    assert_eq!(put["relation_commit_seq"], json!(3));
    assert!(put["relation_id"].as_str().unwrap().starts_with("rel_"));
    assert_eq!(put["source_type"], json!("claim"));
    assert_eq!(put["target_type"], json!("artifact"));
    assert_eq!(put["metadata"], json!({"why": "quoted", "n": 1}));
    assert_eq!(
        put["context"],
        json!({"workspace_id": "wsp_test", "project_id": "prj_main", "component": "api", "pins": []})
    );
    let payload: String = f
        .service
        .store()
        .read_db(|db| {
            db.query_one(
                "SELECT payload_json FROM events WHERE event_type = 'relation.put' AND entity_type = 'relation' AND actor IS NULL",
                &[],
                |r| r.get(0),
            )
        })
        .unwrap();
    let mut record = put.clone();
    record.as_object_mut().unwrap().remove("created");
    record.as_object_mut().unwrap().remove("commit_seq");
    assert_eq!(serde_json::from_str::<Value>(&payload).unwrap(), record);
});

backend_test!(fn every_relation_type_connects_the_endpoints_it_allows(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let a1 = f.put_artifact(&c, "one")["artifact_id"].clone();
    let a2 = f.put_artifact(&c, "two")["artifact_id"].clone();
    let old = f.assert_claim(&c, "old")["claim_id"].clone();
    let new = f.assert_claim(&c, "new")["claim_id"].clone();
    for relation in ["derived_from", "supports", "references", "duplicates"] {
        f.relate(&c, artifact(&a1), relation, artifact(&a2));
        f.relate(&c, claim(&new), relation, artifact(&a1));
    }
    f.relate(&c, claim(&new), "contradicts", claim(&old));
    f.relate(&c, claim(&new), "supersedes", claim(&old));
    assert_eq!(f.count("SELECT count(*) FROM relations"), 10);
    for relation in ["contradicts", "supersedes"] {
        let error = f.err(f.relate_request(&c, artifact(&a1), relation, claim(&new), json!({})));
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(
            error
                .message
                .ends_with(&format!("{relation} relations require claim-to-claim endpoints"))
        );
    }
});

backend_test!(fn re_putting_an_identical_edge_under_a_new_key_returns_the_original_and_writes_nothing(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let a = f.put_artifact(&c, "a")["artifact_id"].clone();
    let b = f.put_artifact(&c, "b")["artifact_id"].clone();
    let meta = json!({"x": 1, "y": [true]});
    let first = f.ok(f.relate_request(&c, artifact(&a), "references", artifact(&b), meta));
    f.put_artifact(&c, "unrelated write");
    let before = f.last_commit_seq();
    let events = f.count("SELECT count(*) FROM events");
    // Same edge, key order shuffled in the metadata, new idempotency key.
    let again = f.relate_request(
        &c,
        artifact(&a),
        "references",
        artifact(&b),
        json!({"y": [true], "x": 1}),
    );
    let response = f.call(again.clone());
    assert!(response.ok);
    assert_eq!(response.commit_seq, Some(3));
    let result = response.result.unwrap();
    assert_eq!(result["created"], json!(false));
    assert_eq!(result["commit_seq"], json!(3));
    assert_eq!(result["relation_id"], first["relation_id"]);
    assert_eq!(f.last_commit_seq(), before);
    assert_eq!(f.count("SELECT count(*) FROM events"), events);
    assert_eq!(f.count("SELECT count(*) FROM relations"), 1);
    // The new key is bound: replaying it is stable, reusing it for another request conflicts.
    let replay = f.call(again.clone());
    assert_eq!(replay.result.unwrap()["relation_id"], first["relation_id"]);
    let mut reused = again;
    reused["input"]["relation"] = json!("supports");
    assert_eq!(f.err(reused).code, ErrorCode::IdempotencyConflict);
    // Different metadata on the same 5-tuple is refused.
    let error = f.err(f.relate_request(&c, artifact(&a), "references", artifact(&b), json!({"x": 2})));
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(error.message.ends_with(&format!(
        "relation {} already exists with different metadata",
        first["relation_id"].as_str().unwrap()
    )));
});

backend_test!(fn shape_and_lifecycle_rules_refuse_without_writing(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let a = f.assert_claim(&c, "a")["claim_id"].clone();
    let b = f.assert_claim(&c, "b")["claim_id"].clone();
    let art = f.put_artifact(&c, "x")["artifact_id"].clone();
    let before = f.last_commit_seq();
    let self_loop = f.err(f.relate_request(&c, claim(&a), "supports", claim(&a), json!({})));
    assert_eq!(self_loop.code, ErrorCode::InvalidRequest);
    let missing = f.err(f.relate_request(&c, claim(&a), "supports", claim(&json!("clm_missing")), json!({})));
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert_eq!(missing.message, "not found: claim clm_missing");
    let missing_art = f.err(f.relate_request(&c, artifact(&json!("art_missing")), "supports", claim(&a), json!({})));
    assert_eq!(missing_art.message, "not found: artifact art_missing");
    let big = json!({"blob": "x".repeat(64 * 1024)});
    assert_eq!(
        f.err(f.relate_request(&c, claim(&a), "supports", artifact(&art), big))
            .code,
        ErrorCode::InvalidRequest
    );
    f.retract_claim(&c, &b);
    let before_terminal = f.last_commit_seq();
    assert_eq!(before_terminal, before + 1);
    for relation in ["contradicts", "supersedes"] {
        let error = f.err(f.relate_request(&c, claim(&a), relation, claim(&b), json!({})));
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(
            error.message.ends_with(&format!(
                "cannot relate terminal retracted claim {} as {relation}",
                b.as_str().unwrap()
            )),
            "{}",
            error.message
        );
    }
    // Non-lifecycle edges may still point at a terminal claim.
    f.relate(&c, claim(&a), "references", claim(&b));
    assert_eq!(f.last_commit_seq(), before_terminal + 1);
    assert_eq!(f.count("SELECT count(*) FROM relations"), 1);
});

backend_test!(fn supersedes_marks_the_target_superseded_and_resolves_its_open_cases(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let old = f.assert_claim(&c, "TTL is 30s")["claim_id"].clone();
    let rival = f.assert_claim(&c, "TTL is 60s")["claim_id"].clone();
    let new = f.assert_claim(&c, "TTL is 45s")["claim_id"].clone();
    f.relate(&c, claim(&rival), "contradicts", claim(&old));
    assert_eq!(f.get_claim(&old)["status"], json!("conflicted"));
    let put = f.relate(&c, claim(&new), "supersedes", claim(&old));
    assert_eq!(f.get_claim(&old)["status"], json!("superseded"));
    assert_eq!(f.get_claim(&new)["status"], json!("active"));
    assert_eq!(f.get_claim(&rival)["status"], json!("active"));
    assert_eq!(
        f.count("SELECT count(*) FROM conflict_cases WHERE state = 'resolved' AND state_reason = 'claim superseded'"),
        1
    );
    assert_eq!(
        f.count("SELECT count(*) FROM conflict_events WHERE event_type = 'resolved'"),
        1
    );
    let resolved_at: i64 = f.count("SELECT operation_commit_seq FROM conflict_events WHERE event_type = 'resolved'");
    assert_eq!(json!(resolved_at), put["commit_seq"]);
});

backend_test!(fn list_filters_by_direction_and_relation_newest_first(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let hub = f.assert_claim(&c, "hub")["claim_id"].clone();
    let x = f.put_artifact(&c, "x")["artifact_id"].clone();
    let y = f.assert_claim(&c, "y")["claim_id"].clone();
    let out1 = f.relate(&c, claim(&hub), "derived_from", artifact(&x))["relation_id"].clone();
    let inc = f.relate(&c, claim(&y), "supports", claim(&hub))["relation_id"].clone();
    let out2 = f.relate(&c, claim(&hub), "references", claim(&y))["relation_id"].clone();
    let list = |input: Value| f.relations(&c, input);
    let both = list(json!({"entity_type": "claim", "entity_id": hub}));
    assert_eq!(
        ids(&both["relations"], "relation_id"),
        vec![out2.clone(), inc.clone(), out1.clone()]
    );
    assert_eq!(both["direction"], json!("both"));
    assert_eq!(both["horizon"], json!("ambient"));
    assert_eq!(both["truncated"], json!(false));
    assert!(both.get("relation").is_none() && both.get("next_before_commit_seq").is_none());
    assert!(both.get("broaden_hint").is_none());
    let outgoing = list(json!({"entity_type": "claim", "entity_id": hub, "direction": "outgoing"}));
    assert_eq!(
        ids(&outgoing["relations"], "relation_id"),
        vec![out2.clone(), out1.clone()]
    );
    let incoming = list(json!({"entity_type": "claim", "entity_id": hub, "direction": "incoming"}));
    assert_eq!(ids(&incoming["relations"], "relation_id"), vec![inc.clone()]);
    let supports = list(json!({"entity_type": "claim", "entity_id": hub, "relation": "supports"}));
    assert_eq!(ids(&supports["relations"], "relation_id"), vec![inc]);
    assert_eq!(supports["relation"], json!("supports"));
    // The entity type is part of the anchor: an artifact anchor sees only its own edges.
    let art = list(json!({"entity_type": "artifact", "entity_id": x}));
    assert_eq!(ids(&art["relations"], "relation_id"), vec![out1]);
});

backend_test!(fn list_pages_with_an_exclusive_cursor_including_exact_boundaries_and_an_empty_final_page(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let hub = f.put_artifact(&c, "hub")["artifact_id"].clone();
    let mut seqs = Vec::new();
    for n in 0..3 {
        let other = f.put_artifact(&c, &format!("leaf {n}"))["artifact_id"].clone();
        seqs.push(f.relate(&c, artifact(&hub), "references", artifact(&other))["relation_commit_seq"].clone());
    }
    let page = |limit: i64, before: Option<&Value>| {
        let mut input = json!({"entity_type": "artifact", "entity_id": hub, "limit": limit});
        if let Some(before) = before {
            input["before_commit_seq"] = before.clone();
        }
        f.relations(&c, input)
    };
    let exact = page(3, None);
    assert_eq!(exact["relations"].as_array().unwrap().len(), 3);
    assert_eq!(exact["truncated"], json!(false));
    assert!(exact.get("next_before_commit_seq").is_none());
    let first = page(2, None);
    assert_eq!(
        ids(&first["relations"], "relation_commit_seq"),
        vec![seqs[2].clone(), seqs[1].clone()]
    );
    assert_eq!(first["truncated"], json!(true));
    assert_eq!(first["next_before_commit_seq"], seqs[1]);
    let second = page(2, Some(&first["next_before_commit_seq"]));
    assert_eq!(ids(&second["relations"], "relation_commit_seq"), vec![seqs[0].clone()]);
    assert_eq!(second["truncated"], json!(false));
    let empty = page(2, Some(&seqs[0]));
    assert_eq!(empty["relations"], json!([]));
    assert_eq!(empty["truncated"], json!(false));
    assert!(empty["broaden_hint"].as_str().unwrap().contains("\"workspace\""));
});

backend_test!(fn list_input_errors_come_before_missing_context_and_bounds_are_checked(store) {
    let f = Fixture::on(store);
    let no_context = |op: &str, input: Value| f.err(json!({"request_id": "r", "op": op, "input": input})).code;
    assert_eq!(
        no_context("relation.list", json!({"entity_type": "claim"})),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        no_context("relation.list", json!({"entity_type": "node", "entity_id": "x"})),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        no_context("conflict.list", json!({"include_stale": "yes"})),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        no_context("conflict.list", json!({"unknown": 1})),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        no_context("relation.list", json!({"entity_type": "claim", "entity_id": "x"})),
        ErrorCode::NoAmbientContext
    );
    assert_eq!(no_context("conflict.list", json!({})), ErrorCode::NoAmbientContext);
    let c = main_ctx();
    let a = f.assert_claim(&c, "a")["claim_id"].clone();
    for bad in [
        json!({"entity_type": "claim", "entity_id": a, "limit": 0}),
        json!({"entity_type": "claim", "entity_id": a, "limit": 101}),
        json!({"entity_type": "claim", "entity_id": a, "before_commit_seq": 0}),
        json!({"entity_type": "claim", "entity_id": "  "}),
    ] {
        assert_eq!(f.err(f.read(&c, "relation.list", bad)).code, ErrorCode::InvalidRequest);
    }
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"before_case_sequence": -1}),
    ] {
        assert_eq!(f.err(f.read(&c, "conflict.list", bad)).code, ErrorCode::InvalidRequest);
    }
    let missing = f.err(f.read(
        &c,
        "relation.list",
        json!({"entity_type": "artifact", "entity_id": "art_missing"}),
    ));
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert_eq!(missing.message, "not found: artifact art_missing");
    let limit_100 = f.relations(&c, json!({"entity_type": "claim", "entity_id": a, "limit": 100}));
    assert_eq!(limit_100["relations"], json!([]));
});

backend_test!(fn relation_rows_are_filtered_by_their_creator_context_not_their_endpoints(store) {
    let f = Fixture::on(store);
    let project = main_ctx();
    let t1 = ctx("prj_main", Some("tsk_1"));
    let t2 = ctx("prj_main", Some("tsk_2"));
    let a = f.assert_claim(&project, "a")["claim_id"].clone();
    let b = f.assert_claim(&project, "b")["claim_id"].clone();
    let by_t1 = f.relate(&t1, claim(&a), "supports", claim(&b))["relation_id"].clone();
    let by_project = f.relate(&project, claim(&b), "references", claim(&a))["relation_id"].clone();
    let anchor = json!({"entity_type": "claim", "entity_id": a});
    let seen = |context: &Value| ids(&f.relations(context, anchor.clone())["relations"], "relation_id");
    assert_eq!(seen(&project), vec![by_project.clone(), by_t1.clone()]);
    assert_eq!(seen(&t1), vec![by_project.clone(), by_t1.clone()]);
    assert_eq!(seen(&t2), vec![by_project]);
    let mut broad = anchor.clone();
    broad["horizon"] = json!("workspace");
    broad["reason"] = json!("audit sibling task edges");
    let response = f.call(f.read(&t2, "relation.list", broad));
    let context = response.context.unwrap();
    assert!(context.broadened);
    assert_eq!(response.result.unwrap()["relations"].as_array().unwrap().len(), 2);
});

backend_test!(fn a_foreign_anchor_is_a_scope_violation_unless_pinned_and_pins_never_expose_its_graph(store) {
    let f = Fixture::on(store);
    let home = main_ctx();
    let other = ctx("prj_other", None);
    let foreign = f.put_artifact(&other, "foreign secret text")["artifact_id"].clone();
    let foreign_rev = f.artifact_revision(&foreign);
    let peer = f.put_artifact(&other, "peer")["artifact_id"].clone();
    let edge = f.relate(&other, artifact(&peer), "references", artifact(&foreign))["relation_id"].clone();
    let anchor = json!({"entity_type": "artifact", "entity_id": foreign});
    let error = f.err(f.read(&home, "relation.list", anchor.clone()));
    assert_eq!(error.code, ErrorCode::ScopeViolation);
    assert!(!error.retryable);
    assert!(
        error
            .message
            .contains("Ambient relation-read scope starts at workspace=wsp_test/project=prj_main")
    );
    assert!(!error.message.contains("secret"));
    let f_id = foreign.as_str().unwrap();
    for pin in [
        f_id.to_owned(),
        format!("{f_id}@{foreign_rev}"),
        format!("memoree://artifact/{f_id}@{foreign_rev}"),
    ] {
        let mut pinned = home.clone();
        pinned["pins"] = json!([pin]);
        let page = f.relations(&pinned, anchor.clone());
        assert_eq!(page["relations"], json!([]), "pin {pin}");
        assert!(page["broaden_hint"].as_str().unwrap().contains("\"workspace\""));
        let mut broad = anchor.clone();
        broad["horizon"] = json!("workspace");
        broad["reason"] = json!("inspect the pinned source's graph");
        let wide = f.relations(&pinned, broad);
        assert_eq!(ids(&wide["relations"], "relation_id"), vec![edge.clone()]);
    }
    let mut workspace = anchor;
    workspace["horizon"] = json!("workspace");
    assert_eq!(
        f.err(f.read(&home, "relation.list", workspace.clone())).code,
        ErrorCode::InvalidRequest
    );
    workspace["reason"] = json!("   ");
    assert_eq!(
        f.err(f.read(&home, "relation.list", workspace.clone())).code,
        ErrorCode::InvalidRequest
    );
    workspace["reason"] = json!("cross-project audit");
    let page = f.relations(&home, workspace);
    assert_eq!(page["horizon"], json!("workspace"));
    assert_eq!(ids(&page["relations"], "relation_id"), vec![edge]);
});
