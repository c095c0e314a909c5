//! The protocol on a PostgreSQL store: the operations already written against both backends
//! behave as on SQLite, across two front ends (two `Service`s on one database).

mod browse;
mod outage;
mod purge;

use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use crate::protocol::ErrorCode;
use crate::service::Service;
use crate::service::tests::support::result_of;
use crate::testkit::postgres::FrontEnds;

fn context() -> Value {
    json!({"workspace_id": "wsp_test", "project_id": "prj_test"})
}

use super::support::checked as call;

fn ok(service: &Service, request: Value) -> Value {
    result_of(call(service, request.clone()), &request)
}

fn put(service: &Service, key: &str, text: &str) -> Value {
    ok(
        service,
        json!({"request_id": "r", "op": "artifact.put", "idempotency_key": key, "context": context(),
               "input": {"kind": "note", "title": "A note", "content": {"type": "text", "data": text}}}),
    )
}

fn assert_claim(service: &Service, key: &str, statement: &str) -> Value {
    ok(
        service,
        json!({"request_id": "r", "op": "claim.assert", "idempotency_key": key, "context": context(),
               "input": {"claim_type": "fact", "statement": statement}}),
    )
}

#[test]
fn artifacts_written_on_one_front_end_read_back_exactly_on_another_inline_and_chunked() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    let small = put(a, "k1", "PostgreSQL is the shared store.");
    assert_eq!(
        (small["commit_seq"].clone(), small["created"].clone()),
        (json!(1), json!(true))
    );
    let large_text = "x".repeat(3 << 20);
    let large = put(a, "k2", &large_text);
    for (written, text) in [
        (&small, "PostgreSQL is the shared store."),
        (&large, large_text.as_str()),
    ] {
        let got = ok(
            b,
            json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": written["artifact_id"]}}),
        );
        assert_eq!(got["content"], json!({"type": "text", "data": text}));
        assert_eq!(got["revision_id"], written["revision_id"]);
    }
    // The same content again is stored once.
    put(b, "k3", &large_text);
    let chunks: i64 = f.services[0]
        .store()
        .read_db(|db| db.query_one("SELECT count(*) FROM blob_chunks", &[], |r| r.get(0)))
        .unwrap();
    assert_eq!(chunks, 3);
}

#[test]
fn a_replayed_key_on_another_front_end_returns_the_original_acknowledgement() {
    let Some(f) = FrontEnds::start(2) else { return };
    let first = put(&f.services[0], "same", "once");
    let mut again = put(&f.services[1], "same", "once");
    assert_eq!(again["created"], json!(false), "a replay says it created nothing new");
    again["created"] = json!(true);
    assert_eq!(again, first);
    let conflict = call(
        &f.services[1],
        json!({"request_id": "r", "op": "artifact.put", "idempotency_key": "same", "context": context(),
               "input": {"kind": "note", "title": "A note", "content": {"type": "text", "data": "different"}}}),
    );
    assert_eq!(conflict.error.unwrap().code, ErrorCode::IdempotencyConflict);
}

#[test]
fn two_front_ends_racing_on_the_same_keys_apply_each_exactly_once() {
    let Some(f) = FrontEnds::start(2) else { return };
    let f = Arc::new(f);
    for round in 0..10 {
        let barrier = Arc::new(Barrier::new(4));
        let racers: Vec<_> = (0..4)
            .map(|racer| {
                let (f, barrier) = (Arc::clone(&f), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    put(
                        &f.services[racer % 2],
                        &format!("race-{round}"),
                        &format!("round {round}"),
                    )
                })
            })
            .collect();
        let acks: Vec<Value> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        assert!(
            acks.iter().all(|ack| ack["artifact_id"] == acks[0]["artifact_id"]),
            "{acks:?}"
        );
        assert!(acks.iter().all(|ack| ack["commit_seq"] == json!(round + 1)), "{acks:?}");
    }
    let artifacts: i64 = f.services[1]
        .store()
        .read_db(|db| db.query_one("SELECT count(*) FROM artifacts", &[], |r| r.get(0)))
        .unwrap();
    assert_eq!(artifacts, 10);
}

#[test]
fn a_stale_if_revision_on_another_front_end_is_a_revision_conflict() {
    let Some(f) = FrontEnds::start(2) else { return };
    let claim = assert_claim(&f.services[0], "c1", "The writer lock is a row lock.");
    let revise = |service: &Service, key: &str, if_revision: &Value, statement: &str| {
        call(
            service,
            json!({"request_id": "r", "op": "claim.revise", "idempotency_key": key, "context": context(),
                   "input": {"claim_id": claim["claim_id"], "if_revision": if_revision, "statement": statement}}),
        )
    };
    let first = revise(
        &f.services[0],
        "c2",
        &claim["revision_id"],
        "The writer lock is the commit_state row lock.",
    );
    assert!(first.ok, "{:?}", first.error);
    let stale = revise(&f.services[1], "c3", &claim["revision_id"], "A stale revision.");
    assert_eq!(stale.error.unwrap().code, ErrorCode::RevisionConflict);
    let history = ok(
        &f.services[1],
        json!({"request_id": "r", "op": "claim.history", "input": {"claim_id": claim["claim_id"]}}),
    );
    assert_eq!(history["revisions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_contradiction_opens_one_case_visible_from_every_front_end_and_a_revision_reopens_it() {
    let Some(f) = FrontEnds::start(2) else { return };
    let a = assert_claim(&f.services[0], "a", "Deploys happen on Fridays.");
    let b = assert_claim(&f.services[1], "b", "Deploys never happen on Fridays.");
    ok(
        &f.services[0],
        json!({"request_id": "r", "op": "relation.put", "idempotency_key": "rel", "context": context(),
               "input": {"source_type": "claim", "source_id": a["claim_id"], "relation": "contradicts",
                         "target_type": "claim", "target_id": b["claim_id"]}}),
    );
    let list = |service: &Service| {
        ok(
            service,
            json!({"request_id": "r", "op": "conflict.list", "context": context(), "input": {}}),
        )
    };
    let cases = list(&f.services[1]);
    assert_eq!(cases["conflicts"].as_array().unwrap().len(), 1, "{cases}");
    ok(
        &f.services[1],
        json!({"request_id": "r", "op": "claim.revise", "idempotency_key": "rev", "context": context(),
               "input": {"claim_id": a["claim_id"], "if_revision": a["revision_id"], "statement": "Deploys happen on Fridays only."}}),
    );
    let cases = list(&f.services[0]);
    assert_eq!(
        cases["conflicts"].as_array().unwrap().len(),
        1,
        "one open case per relation: {cases}"
    );
    let open: i64 = f.services[0]
        .store()
        .read_db(|db| {
            db.query_one("SELECT count(*) FROM conflict_cases WHERE state = 'open'", &[], |r| {
                r.get(0)
            })
        })
        .unwrap();
    assert_eq!(open, 1);
    let relations = ok(
        &f.services[1],
        json!({"request_id": "r", "op": "relation.list", "context": context(),
               "input": {"entity_type": "claim", "entity_id": a["claim_id"]}}),
    );
    assert_eq!(relations["relations"].as_array().unwrap().len(), 1);
}

#[test]
fn commit_seq_is_gapless_across_front_ends_and_every_mutation_has_one_event() {
    let Some(f) = FrontEnds::start(2) else { return };
    let f = Arc::new(f);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                (0..10)
                    .map(|i| {
                        put(&f.services[w % 2], &format!("w{w}-{i}"), &format!("note {w} {i}"))["commit_seq"]
                            .as_i64()
                            .unwrap()
                    })
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let mut seqs: Vec<i64> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, (1..=40).collect::<Vec<_>>());
    let events: Vec<i64> = f.services[0]
        .store()
        .read_db(|db| db.query_all("SELECT commit_seq FROM events ORDER BY commit_seq", &[], |r| r.get(0)))
        .unwrap();
    assert_eq!(events, (1..=40).collect::<Vec<_>>());
}

#[test]
fn search_recall_and_context_build_run_the_same_pipeline_on_postgresql_full_text_search() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    put(
        a,
        "n1",
        "The release train leaves every Tuesday; hotfixes ship any day.",
    );
    put(a, "n2", "Our favourite lunch place serves ramen.");
    let claim = assert_claim(a, "c1", "Hotfixes may ship on any day of the week.");
    // Read-your-write on the other front end.
    let hits = ok(
        b,
        json!({"request_id": "r", "op": "search", "context": context(),
               "input": {"query": "when do hotfixes ship", "min_commit_seq": claim["commit_seq"]}}),
    );
    let hits = hits["hits"].as_array().unwrap().clone();
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|hit| {
            let text = hit.to_string();
            !text.contains("ramen")
        }),
        "an unrelated artifact is never returned: {hits:?}"
    );
    assert!(
        hits.iter()
            .any(|hit| hit["excerpt"].as_str().is_some_and(|e| e.contains("hotfixes"))),
        "{hits:?}"
    );
    // Typo tolerance comes from the same vocabulary pipeline.
    let typo = ok(
        b,
        json!({"request_id": "r", "op": "search", "context": context(), "input": {"query": "hotfxes"}}),
    );
    assert!(!typo["hits"].as_array().unwrap().is_empty(), "{typo}");
    let recall = ok(
        b,
        json!({"request_id": "r", "op": "memory.recall", "context": context(), "input": {"query": "hotfixes ship"}}),
    );
    assert!(
        recall.to_string().contains(claim["claim_id"].as_str().unwrap()),
        "{recall}"
    );
    let bundle = ok(
        a,
        json!({"request_id": "r", "op": "context.build", "context": context(), "input": {"query": "release train"}}),
    );
    assert!(bundle.to_string().contains("Tuesday"), "{bundle}");
    let nothing = ok(
        b,
        json!({"request_id": "r", "op": "search", "context": context(), "input": {"query": "kubernetes"}}),
    );
    assert!(nothing["hits"].as_array().unwrap().is_empty(), "{nothing}");
}

#[test]
fn reindex_runs_on_postgresql_and_another_front_end_searches_the_rebuilt_projection() {
    let Some(f) = FrontEnds::start(2) else { return };
    put(&f.services[0], "k", "something to reindex");
    let reindexed = ok(&f.services[0], json!({"request_id": "r", "op": "reindex", "input": {}}));
    assert_eq!(reindexed["reindexed_artifact_revisions"], 1);
    assert_eq!(reindexed["last_commit_seq"], 1);
    let found = ok(
        &f.services[1],
        json!({"request_id": "r", "op": "search", "context": context(), "input": {"query": "reindex"}}),
    );
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
}

#[test]
fn a_remote_credential_reaches_only_its_workspaces_on_postgresql_too() {
    use crate::service::{Grant, OUTSIDE_GRANT_REASON};
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    let foreign = json!({"workspace_id": "wsp_other", "project_id": "prj_other"});
    let secret = ok(
        a,
        json!({"request_id": "r", "op": "artifact.put", "idempotency_key": "k1", "context": foreign,
               "input": {"kind": "note", "title": "Secret", "content": {"type": "text", "data": "hunter2"}}}),
    );
    let secret_id = secret["artifact_id"].as_str().unwrap().to_owned();
    let own = put(a, "k2", "our own note");
    let own_id = own["artifact_id"].as_str().unwrap().to_owned();
    // The owner of an entity written on one front end is checked on another.
    let view = b.with_grant(Grant::workspaces("alpha", ["wsp_test"]));
    let got = ok(
        &view,
        json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": own_id}}),
    );
    assert_eq!(got["artifact_id"], json!(own_id));
    let refusals = [
        json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": secret_id}}),
        json!({"request_id": "r", "op": "artifact.history", "input": {"artifact_id": secret_id}}),
        json!({"request_id": "r", "op": "relation.put", "idempotency_key": "k3", "context": context(),
               "input": {"source_type": "artifact", "source_id": own_id, "relation": "references",
                         "target_type": "artifact", "target_id": secret_id}}),
        json!({"request_id": "r", "op": "search", "context": foreign, "input": {"query": "hunter2"}}),
    ];
    for request in refusals {
        let response = call(&view, request.clone());
        let error = response
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("not refused: {request}"));
        assert_eq!(error.code, ErrorCode::ScopeViolation, "{request}: {error:?}");
        assert_eq!(error.details["reason"], OUTSIDE_GRANT_REASON);
        assert!(!serde_json::to_string(&response).unwrap().contains("hunter2"));
    }
    let doctor = ok(b, json!({"request_id": "r", "op": "doctor", "input": {}}));
    assert_eq!(
        doctor["last_commit_seq"],
        json!(2),
        "a refusal wrote something: {doctor}"
    );
}

#[test]
fn verify_backup_create_and_import_answer_on_postgresql_with_their_usual_results() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    put(a, "k1", &"a long line of team memory\n".repeat(1_000));
    let verified = ok(b, json!({"request_id": "r", "op": "verify", "input": {}}));
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["checked_external_blobs"], 1);
    let scratch = tempfile::tempdir().unwrap();
    let backup = scratch.path().join("backup");
    let created = ok(
        a,
        json!({"request_id": "r", "op": "backup.create", "input": {"destination": backup.to_str().unwrap()}}),
    );
    assert_eq!(created["commit_seq"], 1);
    assert!(backup.join("manifest.json").is_file());
    let again = call(
        a,
        json!({"request_id": "r", "op": "backup.create", "input": {"destination": backup.to_str().unwrap()}}),
    );
    assert_eq!(again.error.unwrap().code, ErrorCode::InvalidRequest);
    // Merging its own backup changes nothing; the other front end sees the same store.
    let merged = ok(
        b,
        json!({"request_id": "r", "op": "import", "input": {"source": backup.to_str().unwrap(), "mode": "merge"}}),
    );
    assert_eq!(merged["last_commit_seq"], 1, "{merged}");
    assert_eq!(merged["unchanged"]["artifact"], 1, "{merged}");
}
