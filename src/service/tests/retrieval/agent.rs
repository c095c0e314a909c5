//! `memory.probe` and `memory.retrieve` (issue 29, items 4 and 5): leads of unqualified
//! candidates only, recovery of exact claim evidence only when no claim qualified, and
//! nothing unqualified ever shown as an answer.

use serde_json::{Value, json};

use super::support::*;
use crate::protocol::ErrorCode;

const RUNBOOK: &str = "Deploys go out on Tuesdays after the smoke tests pass.";
const QUERY: &str = "deploys rollback window friday";

fn locator(artifact: &Value, quote: &str) -> Value {
    let start = RUNBOOK.find(quote).unwrap();
    json!({"artifact_id": artifact["artifact_id"], "revision_id": artifact["revision_id"],
           "start_byte": start, "end_byte": start + quote.len()})
}

fn cite(artifact: &Value, quote: &str) -> String {
    let start = RUNBOOK.find(quote).unwrap();
    format!(
        "memoree://artifact/{}@{}#{start}-{}",
        artifact["artifact_id"].as_str().unwrap(),
        artifact["revision_id"].as_str().unwrap(),
        start + quote.len()
    )
}

const FREEZE: &str = "No changes on friday afternoons.";

/// A runbook, a claim it is evidence of, a freeze note (each matches one unit of [`QUERY`]),
/// and an artifact that matches every unit.
fn seeded(f: Fixture) -> (Fixture, Value, Value, Value) {
    let runbook = f.put(&main_ctx(), "note", "Deploy runbook", RUNBOOK);
    let claim = f.claim(
        &main_ctx(),
        "Deploys go out on Tuesdays",
        json!({"evidence": [locator(&runbook, "Deploys go out on Tuesdays")]}),
    );
    let answer = f.put(
        &main_ctx(),
        "note",
        "Rollback window",
        "The rollback window of friday deploys is one hour.",
    );
    f.put(&main_ctx(), "note", "Freeze", FREEZE);
    (f, runbook, claim, answer)
}

fn probe(f: &Fixture, input: Value) -> Value {
    f.ok(Fixture::read_request(&main_ctx(), "memory.probe", input))
}

fn retrieve(f: &Fixture, input: Value) -> Value {
    f.ok(Fixture::read_request(&main_ctx(), "memory.retrieve", input))
}

backend_test!(fn a_probe_leads_to_the_sources_of_unqualified_candidates_and_never_to_a_qualified_hit(store) {
    let (f, runbook, _claim, answer) = seeded(Fixture::on(store));
    let result = probe(&f, json!({"query": QUERY}));
    assert_eq!(result["content_is_untrusted"], true);
    assert_eq!(result["retrieval_tier"], "unqualified_candidate");
    assert_eq!(result["original_query"], QUERY);
    assert_eq!(result["probe_query"], QUERY);
    assert_eq!(result["reformulation_applied"], false);
    // The claim lead first, titled by its evidence revision and pointing at exactly the
    // cited bytes; the runbook's own lead overlaps that evidence and is dropped; then the
    // freeze note, cited by all its bytes (it is short).
    let leads = result["leads"].as_array().unwrap();
    assert_eq!(leads.len(), 2, "{result:#}");
    assert_eq!(leads[0]["title"], "Deploy runbook");
    assert_eq!(
        leads[0]["sources"],
        json!([{"citation": cite(&runbook, "Deploys go out on Tuesdays"), "locator_origin": "claim_exact"}])
    );
    assert_eq!(leads[0]["evidence_locator_set_complete"], true);
    assert_eq!(leads[1]["title"], "Freeze");
    assert_eq!(leads[1]["sources"][0]["locator_origin"], "artifact_exact");
    let citation = leads[1]["sources"][0]["citation"].as_str().unwrap();
    assert!(citation.ends_with(&format!("#0-{}", FREEZE.len())), "{citation}");
    assert_eq!(result["available_count"], 2);
    assert_eq!(result["truncated"], false);
    // The qualified answer is recall's, not a lead.
    let text = result.to_string();
    assert!(!text.contains(answer["artifact_id"].as_str().unwrap()), "{result:#}");
    // One lead asked for: the artifact side's share (up to two leads) is served first, and
    // the cut is reported.
    let one = probe(
        &f,
        json!({"query": QUERY, "max_leads": 1, "original_query": "when do we deploy?"}),
    );
    assert_eq!(one["leads"].as_array().unwrap().len(), 1);
    assert_eq!(one["leads"][0]["title"], "Freeze");
    assert_eq!(
        (one["available_count"].clone(), one["truncated"].clone()),
        (json!(2), json!(true))
    );
    assert_eq!(one["reformulation_applied"], true);
    assert_eq!(one["original_query"], "when do we deploy?");
});

backend_test!(fn retrieve_recovers_exact_claim_evidence_only_while_no_claim_qualifies(store) {
    let (f, runbook, _claim, answer) = seeded(Fixture::on(store));
    let result = retrieve(&f, json!({"query": QUERY, "profile": true}));
    assert_eq!(result["presence"], "artifacts_only", "{result:#}");
    assert_eq!(result["claims"], json!([]));
    assert_eq!(
        field(&result["artifact_refs"], "artifact_id"),
        [answer["artifact_id"].clone()]
    );
    assert_eq!(result["searched_horizon"], "ambient");
    assert_eq!(result["authority"]["memory_snapshot_commit_seq"], f.last_commit_seq());
    assert_eq!(result["query_analysis"]["normalized_query"], QUERY);
    assert_eq!(
        result["query_analysis"]["retrieval_profile"]["intent_hint"],
        "ambiguous"
    );
    let next = &result["next_action"];
    assert_eq!(next["reason"], "artifacts_without_claims");
    assert_eq!(
        next["unmatched_units"],
        json!(["deploys", "rollback", "window", "friday"])
    );
    let recovery = &result["recovery"];
    assert_eq!(
        recovery["evidence"],
        json!([{
            "retrieval_tier": "unqualified_evidence",
            "title": "Deploy runbook",
            "citation": cite(&runbook, "Deploys go out on Tuesdays"),
            "content": "Deploys go out on Tuesdays",
            "media_type": "text/plain; charset=utf-8",
            "truncated": false,
        }])
    );
    assert_eq!(recovery["returned_references"], 1);
    assert_eq!(recovery["returned_content_bytes"], 26);
    assert_eq!(recovery["suppressed_references"], 0);
    assert_eq!(result["profile"]["recovery_reference_count"], 1);

    // Once a claim qualifies, it is the answer: no recovery and no next action.
    f.claim(
        &main_ctx(),
        "The rollback window of friday deploys is one hour",
        json!({}),
    );
    let answered = retrieve(&f, json!({"query": QUERY}));
    assert_eq!(answered["presence"], "claims");
    assert!(
        answered.get("recovery").is_none() && answered.get("next_action").is_none(),
        "{answered:#}"
    );
    assert!(answered.get("profile").is_none());
});

backend_test!(fn recovery_withholds_evidence_that_shares_no_word_with_the_question_and_keeps_to_its_budget(store) {
    let f = Fixture::on(store);
    let runbook = f.put(&main_ctx(), "note", "Deploy runbook", RUNBOOK);
    // The claim matches "deploys"; its evidence span does not.
    f.claim(
        &main_ctx(),
        "Deploys go out on Tuesdays",
        json!({"evidence": [locator(&runbook, "after the smoke tests pass")]}),
    );
    let result = retrieve(&f, json!({"query": QUERY}));
    assert_eq!(result["presence"], "none", "{result:#}");
    assert_eq!(result["next_action"]["reason"], "no_qualified_match");
    let recovery = &result["recovery"];
    assert_eq!(recovery["evidence"], json!([]));
    assert_eq!(recovery["suppressed_references"], 1);
    // A reformulation that names the span's words routes it through, narrowed to the budget.
    let routed = retrieve(
        &f,
        json!({"query": QUERY, "reformulation": "deploys after smoke tests", "max_recovery_bytes": 15}),
    );
    let recovery = &routed["recovery"];
    assert_eq!(recovery["reformulation_applied"], true);
    assert_eq!(recovery["evidence"][0]["content"], "after the smoke");
    assert_eq!(recovery["evidence"][0]["truncated"], true);
    assert_eq!(recovery["returned_content_bytes"], 15);
    // Presence still comes from the question alone.
    assert_eq!(routed["presence"], "none");
});

backend_test!(fn a_question_about_the_current_source_gets_a_next_action_but_no_recovery(store) {
    let (f, ..) = seeded(Fixture::on(store));
    let result = retrieve(&f, json!({"query": "current implementation of deploys rollback"}));
    assert_eq!(
        result["query_analysis"]["retrieval_profile"]["intent_hint"],
        "current_source"
    );
    assert_eq!(
        result["query_analysis"]["retrieval_profile"]["authority_hint"],
        "repository_authoritative"
    );
    assert!(result.get("recovery").is_none(), "{result:#}");
    assert!(result["next_action"].is_object());
});

backend_test!(fn probe_and_retrieve_refuse_out_of_range_bounds_and_a_reformulation_equal_to_the_query(store) {
    let (f, ..) = seeded(Fixture::on(store));
    let refused = |op: &str, input: Value| {
        let error = f.err(Fixture::read_request(&main_ctx(), op, input));
        assert_eq!(error.code, ErrorCode::InvalidRequest, "{error:?}");
        error.message
    };
    for leads in [0, 9] {
        let message = refused("memory.probe", json!({"query": QUERY, "max_leads": leads}));
        assert!(message.contains("max_leads"), "{message}");
        refused("memory.retrieve", json!({"query": QUERY, "max_recovery_leads": leads}));
    }
    refused("memory.probe", json!({"query": QUERY, "original_query": "  "}));
    for bytes in [0, 12289] {
        refused("memory.retrieve", json!({"query": QUERY, "max_recovery_bytes": bytes}));
    }
    let message = refused("memory.retrieve", json!({"query": QUERY, "reformulation": QUERY}));
    assert!(message.contains("reformulation"), "{message}");
    refused("memory.retrieve", json!({"query": QUERY, "max_claims": 0}));
    // Broader horizons need a reason, as for recall.
    let error = f.err(Fixture::read_request(
        &main_ctx(),
        "memory.probe",
        json!({"query": QUERY, "horizon": "workspace"}),
    ));
    assert_eq!(error.code, ErrorCode::InvalidRequest);
});

backend_test!(fn a_retrieve_that_routes_its_own_question_recovers_through_the_leads_a_probe_of_it_finds(store) {
    let f = Fixture::on(store);
    // Twelve claims over their own notes, each matching one word of the question (more
    // than a probe's leads), and notes of their own that match one word too.
    let words = ["deploys", "rollback", "window", "friday"];
    for n in 0..12 {
        let word = words[n % words.len()];
        let text = format!("Note {n}: the {word} entry of team {n}.");
        let note = f.put(&main_ctx(), "note", &format!("Team {n} note"), &text);
        let quote = format!("the {word} entry");
        let start = text.find(&quote).unwrap();
        f.claim(
            &main_ctx(),
            &format!("Team {n} keeps a {word} entry"),
            json!({"evidence": [{"artifact_id": note["artifact_id"], "revision_id": note["revision_id"],
                                 "start_byte": start, "end_byte": start + quote.len()}]}),
        );
    }
    for n in 0..5 {
        let word = words[n % words.len()];
        f.put(
            &main_ctx(),
            "note",
            &format!("Loose {n}"),
            &format!("A loose {word} remark {n}."),
        );
    }
    for leads in [8, 3, 1] {
        let probed = probe(&f, json!({"query": QUERY, "max_leads": leads}));
        let retrieved = retrieve(&f, json!({"query": QUERY, "max_recovery_leads": leads}));
        assert_eq!(retrieved["presence"], "none", "{retrieved:#}");
        let recovery = &retrieved["recovery"];
        assert_eq!(recovery["available_leads"], probed["available_count"], "{leads}");
        assert_eq!(recovery["references_truncated"], probed["truncated"], "{leads}");
        // Every claim lead's exact evidence is fetched (each shares its word), in lead order.
        let expected: Vec<Value> = probed["leads"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|lead| lead["sources"].as_array().unwrap().first().cloned())
            .filter(|source| source["locator_origin"] == "claim_exact")
            .map(|source| source["citation"].clone())
            .collect();
        // Two leads are the artifact side's share: one lead is an artifact's and fetches nothing.
        assert_eq!(expected.is_empty(), leads <= 2, "{probed:#}");
        assert_eq!(field(&recovery["evidence"], "citation"), expected, "{leads}");
    }
});
