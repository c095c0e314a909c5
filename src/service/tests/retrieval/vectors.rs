//! The stored semantic projection (issue 27): with a model, every current revision holds its
//! vectors, a revise or a purge leaves none behind, a store filled without a model catches
//! up, and answers never depend on whether the vectors were stored or embedded at the query.

use std::sync::Arc;

use serde_json::{Value, json};

use super::support::*;
use crate::semantic::{Embedder, State};
use crate::service::Runtime;
use crate::store::Db;
use crate::testkit::parts;

/// potion-base-8M as a runtime, or `None` after a skip.
fn with_model(test: &str) -> Option<Runtime> {
    let model = parts::shared_file("models/potion-base-8M/model.safetensors", test)?;
    let embedder = Embedder::load(model.parent().unwrap(), None).unwrap();
    Some(Runtime {
        semantic: State::On(Arc::new(embedder)),
        ..Runtime::default()
    })
}

fn doctor_vectors(f: &Fixture) -> Value {
    let doctor = f.ok(json!({"request_id": "r", "op": "doctor", "input": {}}));
    doctor["semantic"]["vectors"].clone()
}

/// `(entity, rows)` of `semantic_vectors`, by entity.
fn rows(f: &Fixture) -> Vec<(String, i64)> {
    f.service
        .store()
        .read_db(|db: Db<'_>| {
            db.query_all(
                "SELECT entity, count(*) FROM semantic_vectors GROUP BY entity ORDER BY entity",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .unwrap()
}

/// A body of `n` sentences, several windows long.
fn long_text(n: usize) -> String {
    (0..n)
        .map(|i| format!("Paragraph {i} of the harbor logbook records the tides, the cargo and the crew on watch. "))
        .collect()
}

#[test]
fn with_a_model_every_current_revision_holds_vectors_and_a_revise_or_purge_leaves_none_behind() {
    let Some(runtime) = with_model(&parts::current_test()) else {
        return;
    };
    let f = fixture_with(runtime);
    let short = f.put(
        &main_ctx(),
        "note",
        "Museum trip",
        "Yesterday I took the kids to the museum.",
    );
    let long = f.put(&main_ctx(), "log", "Harbor logbook", &long_text(40));
    f.put_binary(&main_ctx(), "A picture", &[0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]);
    f.claim(&main_ctx(), "The museum opens at nine.", json!({}));
    assert_eq!(doctor_vectors(&f), json!({"covered": 4, "total": 4}));
    let windows = crate::semantic::project::body_windows(&long_text(40)).len() as i64;
    assert!(windows > 2, "{windows}");
    // One window each for the short note, the picture (its title) and the claim.
    assert_eq!(
        rows(&f),
        [("artifact".to_owned(), windows + 2), ("claim".to_owned(), 1)]
    );

    // A revise projects the new head and drops the old one's rows.
    f.revise(&main_ctx(), &long, "The logbook was rewritten in one line.");
    assert_eq!(doctor_vectors(&f), json!({"covered": 4, "total": 4}));
    assert_eq!(rows(&f), [("artifact".to_owned(), 3), ("claim".to_owned(), 1)]);

    // A purge erases the entity's rows and says so in its erasure report.
    let purged = f.mutate(
        &main_ctx(),
        "artifact.purge",
        json!({"artifact_id": short["artifact_id"], "reason": "test"}),
    );
    assert_eq!(purged["erasure"]["removed_vector_rows"], 1, "{purged:#}");
    assert_eq!(doctor_vectors(&f), json!({"covered": 3, "total": 3}));
    assert_eq!(rows(&f), [("artifact".to_owned(), 2), ("claim".to_owned(), 1)]);
    let verify = f.ok(json!({"request_id": "r", "op": "verify", "input": {}}));
    assert_eq!(verify["ok"], true, "{verify:#}");
    assert_eq!(verify["semantic_vectors"], json!({"covered": 3, "total": 3}));
    assert_eq!(verify["warnings"], json!([]), "{verify:#}");
}

#[test]
fn a_store_filled_without_a_model_answers_the_same_before_and_after_its_vectors_catch_up() {
    let Some(runtime) = with_model(&parts::current_test()) else {
        return;
    };
    let lexical = fixture();
    for (title, text) in [
        (
            "Melanie, session 1",
            "Melanie: Yesterday I took the kids to the museum, they loved the dinosaurs.",
        ),
        (
            "Melanie, session 1",
            "Melanie: I finally finished the pottery bowl I started last month.",
        ),
        (
            "Jon, session 2",
            "Jon: I lost my job at the bank, so I'm opening a dance studio.",
        ),
        (
            "Jon, session 2",
            "Jon: The studio needs new mirrors and a sound system before the opening.",
        ),
    ] {
        lexical.put(&main_ctx(), "note", title, text);
    }
    lexical.put(&main_ctx(), "log", "Harbor logbook", &long_text(30));
    lexical.claim(&main_ctx(), "Melanie took her kids to the museum.", json!({}));
    let semantic = lexical.sharing(runtime);
    assert_eq!(doctor_vectors(&semantic), json!({"covered": 0, "total": 6}));
    let verify = semantic.ok(json!({"request_id": "r", "op": "verify", "input": {}}));
    assert_eq!(verify["ok"], true);
    assert!(verify["warnings"][0].as_str().unwrap().contains("6 of 6"), "{verify:#}");

    let queries = [
        "When did Melanie take her kids to the museum?",
        "What is Jon opening after losing his job?",
        "who was on watch in the harbor?",
    ];
    let answers = |f: &Fixture| -> Vec<Value> {
        queries
            .iter()
            .map(|q| {
                let result = f.search(&main_ctx(), json!({ "query": q }));
                let hits: Vec<Value> = result["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        json!([
                            h["entity_id"],
                            h["ranking"]["qualification"]["semantic"],
                            h["ranking"]["fused_score"]
                        ])
                    })
                    .collect();
                json!(hits)
            })
            .collect()
    };
    let before = answers(&semantic);
    assert!(before.iter().any(|a| !a.as_array().unwrap().is_empty()), "{before:#?}");
    assert_eq!(semantic.service.catch_up_vectors().unwrap(), 6);
    assert_eq!(semantic.service.catch_up_vectors().unwrap(), 0);
    assert_eq!(doctor_vectors(&semantic), json!({"covered": 6, "total": 6}));
    assert_eq!(answers(&semantic), before);

    // The daemon's polls walk on from where the last one stopped: a revision written since
    // (here by a service without the model) is found without walking the others again.
    let mut cursors = [0, 0];
    assert_eq!(semantic.service.catch_up_vectors_after(&mut cursors).unwrap(), 0);
    let walked = cursors;
    assert!(walked[0] > 0 && walked[1] > 0, "{walked:?}");
    let added = lexical.put(&main_ctx(), "note", "Ferry timetable", "The ferry leaves at noon.");
    assert_eq!(semantic.service.catch_up_vectors_after(&mut cursors).unwrap(), 1);
    assert!(cursors[0] > walked[0] && cursors[1] == walked[1], "{cursors:?}");
    assert_eq!(semantic.service.catch_up_vectors_after(&mut cursors).unwrap(), 0);
    lexical.mutate(
        &main_ctx(),
        "artifact.purge",
        json!({"artifact_id": added["artifact_id"], "reason": "test"}),
    );

    // reindex rebuilds them all, and the answers still do not move.
    let reindex = semantic.ok(json!({"request_id": "r", "op": "reindex", "input": {}}));
    assert_eq!(reindex["projected_revisions"], 6, "{reindex:#}");
    assert_eq!(answers(&semantic), before);
    // Without a model, reindex reports no projection and leaves the vectors alone.
    let reindex = lexical.ok(json!({"request_id": "r", "op": "reindex", "input": {}}));
    assert!(reindex.get("projected_revisions").is_none(), "{reindex:#}");
    assert!(doctor_vectors(&lexical).is_null());
}

#[test]
fn postgresql_stores_the_vectors_too_and_a_front_end_with_a_model_catches_up_on_another_s_writes() {
    let Some(runtime) = with_model(&parts::current_test()) else {
        return;
    };
    let Some(cluster) = crate::testkit::postgres::FrontEnds::start(1) else {
        return;
    };
    let plain = Fixture::over(cluster.services[0].clone());
    let semantic = plain.sharing(runtime);
    let museum = semantic.put(
        &main_ctx(),
        "note",
        "Museum trip",
        "Yesterday I took the kids to the museum.",
    );
    semantic.claim(&main_ctx(), "The museum opens at nine.", json!({}));
    // Written by a front end without a model: no vectors until the catch-up.
    plain.put(&main_ctx(), "log", "Harbor logbook", &long_text(20));
    assert_eq!(doctor_vectors(&semantic), json!({"covered": 2, "total": 3}));
    let query = json!({"query": "who was on watch in the harbor?"});
    let before = semantic.search(&main_ctx(), query.clone());
    assert_eq!(semantic.service.catch_up_vectors().unwrap(), 1);
    assert_eq!(doctor_vectors(&semantic), json!({"covered": 3, "total": 3}));
    let after = semantic.search(&main_ctx(), query);
    let judged = |r: &Value| -> Vec<Value> {
        r["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| json!([h["entity_id"], h["ranking"]["qualification"], h["score"]]))
            .collect()
    };
    assert_eq!(judged(&before), judged(&after));

    semantic.revise(&main_ctx(), &museum, "The museum trip moved to Sunday.");
    let purged = semantic.mutate(
        &main_ctx(),
        "artifact.purge",
        json!({"artifact_id": museum["artifact_id"], "reason": "test"}),
    );
    assert_eq!(purged["erasure"]["removed_vector_rows"], 1, "{purged:#}");
    assert_eq!(doctor_vectors(&semantic), json!({"covered": 2, "total": 2}));
    let verify = semantic.ok(json!({"request_id": "r", "op": "verify", "input": {}}));
    assert_eq!(verify["ok"], true, "{verify:#}");
    let reindex = semantic.ok(json!({"request_id": "r", "op": "reindex", "input": {}}));
    assert_eq!(reindex["projected_revisions"], 2, "{reindex:#}");
    drop((plain, semantic));
}
