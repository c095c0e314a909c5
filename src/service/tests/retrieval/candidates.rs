//! `memory.recall`'s unqualified candidates (issue 29, item 2): the reference's
//! `max_candidate_claims` / `max_candidate_artifact_refs` and `candidate_*` fields, served by
//! the near-miss channel.

use serde_json::{Value, json};

use super::support::*;

/// Two artifacts and two claims that each match part of "release keys vendor audit", and
/// one of each that matches every word.
fn seeded(f: Fixture) -> (Fixture, Value, Value) {
    let answer = f.put(
        &main_ctx(),
        "note",
        "Keys",
        "The release keys audit is done by the build vendor.",
    );
    f.put(&main_ctx(), "note", "Builds", "Release builds run nightly.");
    f.put(
        &main_ctx(),
        "note",
        "Vendors",
        "The vendor list is reviewed each quarter.",
    );
    let claim = f.claim(
        &main_ctx(),
        "The release keys audit is done by the build vendor",
        json!({}),
    );
    f.claim(&main_ctx(), "Release builds run nightly on the build farm", json!({}));
    f.claim(&main_ctx(), "The vendor list is reviewed every quarter", json!({}));
    (f, answer, claim)
}

backend_test!(fn recall_shows_no_candidates_unless_asked_but_counts_them_and_says_how_to_see_them(store) {
    let (f, answer, claim) = seeded(Fixture::on(store));
    let recall = f.recall(&main_ctx(), json!({"query": "release keys vendor audit"}));
    assert_eq!(recall["presence"], "claims", "{recall:#}");
    assert_eq!(field(&recall["claims"], "claim_id"), [claim["claim_id"].clone()]);
    assert_eq!(
        field(&recall["artifact_refs"], "artifact_id"),
        [answer["artifact_id"].clone()]
    );
    assert_eq!(recall["candidate_claims"], json!([]));
    assert_eq!(recall["candidate_artifact_refs"], json!([]));
    assert_eq!(recall["candidate_claims_truncated"], false);
    assert_eq!(recall["candidate_artifact_refs_truncated"], false);
    // Unasked, only what the searches examined anyway is counted (here every examined
    // candidate qualified), and the hint appears exactly when something was.
    for kind in ["claim", "artifact"] {
        assert!(recall[format!("unqualified_{kind}_candidates")].is_u64(), "{recall:#}");
    }
    let counted = recall["unqualified_claim_candidates"].as_u64().unwrap()
        + recall["unqualified_artifact_candidates"].as_u64().unwrap();
    assert_eq!(recall.get("candidates_hint").is_some(), counted > 0, "{recall:#}");
    // Asked, the near misses are looked for even though the query was answered.
    let asked = f.recall(
        &main_ctx(),
        json!({"query": "release keys vendor audit", "max_candidate_claims": 16, "max_candidate_artifact_refs": 16}),
    );
    assert_eq!(asked["unqualified_claim_candidates"], 2, "{asked:#}");
    assert_eq!(asked["unqualified_artifact_candidates"], 2, "{asked:#}");
    assert_eq!(asked["candidate_claims"].as_array().unwrap().len(), 2);
    assert_eq!(asked["candidate_claims_truncated"], false);
    let best = asked["best_unqualified_artifact_coverage"].as_f64().unwrap();
    assert!(best > 0.0 && best < 1.0, "{asked:#}");
    assert!(
        asked["candidates_hint"]
            .as_str()
            .unwrap()
            .contains("suggestions, not memory")
    );
});

backend_test!(fn recall_candidates_are_the_unqualified_matches_labelled_bounded_and_never_answers(store) {
    let (f, answer, claim) = seeded(Fixture::on(store));
    let asked = f.recall(
        &main_ctx(),
        json!({"query": "release keys vendor audit", "max_candidate_claims": 1,
               "max_candidate_artifact_refs": 16, "max_excerpt_bytes": 16}),
    );
    // The answer is unchanged by asking for candidates.
    assert_eq!(asked["presence"], "claims");
    assert_eq!(field(&asked["claims"], "claim_id"), [claim["claim_id"].clone()]);
    let claims = asked["candidate_claims"].as_array().unwrap();
    assert_eq!(claims.len(), 1, "{asked:#}");
    assert_eq!(asked["candidate_claims_truncated"], true, "two existed, one was shown");
    let candidate = &claims[0];
    assert_eq!(candidate["retrieval_tier"], "unqualified_candidate");
    assert_eq!(candidate["claim_type"], "fact");
    assert_ne!(candidate["claim_id"], claim["claim_id"]);
    assert!(candidate["statement"].as_str().unwrap().len() <= 16);
    assert_eq!(candidate["statement_truncated"], true);
    assert!(candidate["citation"].as_str().unwrap().starts_with("memoree://claim/"));
    assert_eq!(candidate["matched_by"], json!(["fts5_bm25"]));
    let coverage = candidate["ranking_signals"]["lexical_coverage"].as_f64().unwrap();
    assert!(coverage > 0.0 && coverage < 1.0, "{candidate:#}");
    assert_eq!(candidate["ranking_signals"]["trigram_similarity"], Value::Null);

    let refs = asked["candidate_artifact_refs"].as_array().unwrap();
    assert_eq!(refs.len(), 2, "{asked:#}");
    assert_eq!(asked["candidate_artifact_refs_truncated"], false);
    assert!(!field(&asked["candidate_artifact_refs"], "artifact_id").contains(&answer["artifact_id"]));
    for candidate in refs {
        assert_eq!(candidate["retrieval_tier"], "unqualified_candidate");
        let excerpt = candidate["excerpt"].as_str().unwrap();
        assert!(excerpt.len() <= 16, "{candidate:#}");
        // The excerpt citation names exactly the bytes shown.
        let citation = candidate["excerpt_citation"].as_str().unwrap();
        let (_, range) = citation.rsplit_once('#').unwrap();
        let (start, end) = range.split_once('-').unwrap();
        let (start, end): (usize, usize) = (start.parse().unwrap(), end.parse().unwrap());
        assert_eq!(end - start, excerpt.len(), "{candidate:#}");
    }
    // context.build is unaffected by the candidates a recall shows.
    let build = f.build(&main_ctx(), json!({"query": "release keys vendor audit"}));
    let included: Vec<&str> = build["manifest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["entity_id"].as_str().unwrap())
        .collect();
    for candidate in refs {
        assert!(
            !included.contains(&candidate["artifact_id"].as_str().unwrap()),
            "{build:#}"
        );
    }
});

backend_test!(fn recall_candidates_never_change_presence_none(store) {
    let (f, _, _) = seeded(Fixture::on(store));
    let recall = f.recall(
        &main_ctx(),
        json!({"query": "release vendor telescope orbit astronauts",
               "max_candidate_claims": 16, "max_candidate_artifact_refs": 16}),
    );
    assert_eq!(recall["presence"], "none", "{recall:#}");
    assert_eq!(recall["claims"], json!([]));
    assert_eq!(recall["artifact_refs"], json!([]));
    assert!(!recall["candidate_claims"].as_array().unwrap().is_empty(), "{recall:#}");
    assert!(
        !recall["candidate_artifact_refs"].as_array().unwrap().is_empty(),
        "{recall:#}"
    );
});

backend_test!(fn recall_refuses_candidate_counts_outside_zero_to_sixteen(store) {
    let f = Fixture::on(store);
    for (field, value) in [
        ("max_candidate_claims", json!(17)),
        ("max_candidate_artifact_refs", json!(-1)),
    ] {
        let error = f.err(json!({"request_id": "r", "op": "memory.recall", "context": main_ctx(),
                                 "input": {"query": "release keys", field: value}}));
        assert_eq!(error.code.as_str(), "INVALID_REQUEST", "{field}");
        assert!(error.message.contains(field), "{}", error.message);
    }
});
