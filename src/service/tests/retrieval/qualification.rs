//! Retrieval v2 (issue 13): qualification, near misses, forgiving wording, match windows
//! with exact excerpt citations, and diversity.

use serde_json::{Value, json};

use super::support::*;
use crate::retrieval::snippet::excerpt_round_trips;

fn content(f: &Fixture, artifact: &Value) -> Vec<u8> {
    let got = f.ok(json!({"request_id": "r", "op": "artifact.get",
                          "input": {"artifact_id": artifact["artifact_id"]}}));
    got["content"]["data"].as_str().unwrap().as_bytes().to_vec()
}

/// `(start, end)` of an `…#START-END` citation.
fn span(citation: &str) -> (usize, usize) {
    let (_, range) = citation.rsplit_once('#').unwrap();
    let (start, end) = range.split_once('-').unwrap();
    (start.parse().unwrap(), end.parse().unwrap())
}

backend_test!(fn recall_never_returns_a_claim_for_an_unrelated_question_that_shares_function_words(store) {
    let f = Fixture::on(store);
    f.claim(
        &main_ctx(),
        "The release build is tagged from the main branch",
        json!({}),
    );
    f.claim(
        &main_ctx(),
        "Which of the dashboards are public is decided by the owner",
        json!({}),
    );
    let recall = f.recall(&main_ctx(), json!({"query": "Which vendor signs the release keys?"}));
    assert_eq!(recall["presence"], "none", "{recall:#}");
    assert_eq!(recall["claims"], json!([]));
    let analysis = &recall["query_analysis"];
    assert_eq!(analysis["question"], true);
    assert_eq!(analysis["ignored_words"], json!(["which", "the"]));
    assert!(analysis["advice"].is_string());
    // What almost matched is listed apart, labelled, never counted.
    let misses = recall["near_misses"].as_array().unwrap();
    assert!(!misses.is_empty());
    for miss in misses {
        assert_eq!(miss["qualification"]["qualified"], false);
        assert_eq!(miss["qualification"]["shortfall"], "too_few_units");
    }
});

backend_test!(fn search_hits_are_qualified_and_near_misses_are_never_hits(store) {
    let f = Fixture::on(store);
    let both = f.put(
        &main_ctx(),
        "note",
        "Keys",
        "The release keys are signed by the build vendor.",
    );
    let one = f.put(&main_ctx(), "note", "Builds", "Release builds run nightly.");
    let result = f.search(&main_ctx(), json!({"query": "release keys vendor"}));
    assert_eq!(field(&result["hits"], "entity_id"), [both["artifact_id"].clone()]);
    assert!(!field(&result["near_misses"], "entity_id").contains(&both["artifact_id"]));
    assert_eq!(result["truncated"], false);
    let qualification = &result["hits"][0]["ranking"]["qualification"];
    assert_eq!(qualification["policy_version"], "qualified_units_v2");
    // Every unit matched: the matched weight is the query's whole information, and 45% of it
    // is required.
    let weights: f64 = qualification["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|unit| unit["weight"].as_f64().unwrap())
        .sum();
    let matched = qualification["matched_weight"].as_f64().unwrap();
    assert!((matched - weights).abs() < 0.02, "{qualification:#}");
    let required = qualification["required_weight"].as_f64().unwrap();
    assert!((required - matched * 0.45).abs() < 0.02, "{qualification:#}");
    assert_eq!(
        field(&qualification["matched"], "how"),
        [json!("exact"), json!("exact"), json!("exact")]
    );
    // When nothing qualifies, what matched some units is listed apart.
    let none = f.search(&main_ctx(), json!({"query": "release nightly vendor audit"}));
    assert_eq!(none["hits"], json!([]));
    let mut misses = field(&none["near_misses"], "entity_id");
    misses.sort_by_key(|v| v.as_str().unwrap().to_owned());
    let mut expected = vec![both["artifact_id"].clone(), one["artifact_id"].clone()];
    expected.sort_by_key(|v| v.as_str().unwrap().to_owned());
    assert_eq!(misses, expected);
    for miss in none["near_misses"].as_array().unwrap() {
        let qualification = &miss["qualification"];
        assert_eq!(qualification["qualified"], false);
        assert_eq!(qualification["matched"].as_array().unwrap().len(), 2, "{miss:#}");
        let (matched, required) = (&qualification["matched_weight"], &qualification["required_weight"]);
        assert!(matched.as_f64() < required.as_f64(), "{miss:#}");
    }
});

backend_test!(fn inflections_typos_and_abbreviations_match_and_say_how(store) {
    let f = Fixture::on(store);
    f.claim(&main_ctx(), "Debug logging is disabled in production", json!({}));
    f.claim(
        &main_ctx(),
        "Convert old configuration files with the migrate tool",
        json!({}),
    );
    let hows = |query: &str| -> Vec<Value> {
        let recall = f.recall(&main_ctx(), json!({"query": query}));
        assert_eq!(recall["presence"], "claims", "{query}: {recall:#}");
        field(&recall["claims"][0]["qualification"]["matched"], "how")
    };
    assert!(hows("disable debug logs").contains(&json!("inflection")));
    assert!(hows("debug loging disabld").contains(&json!("fuzzy")));
    let abbreviated = hows("cfg migr");
    assert!(abbreviated.contains(&json!("abbreviation")) && abbreviated.contains(&json!("prefix")));
    // A question spells its words out: no prefix completion there.
    let question = f.recall(&main_ctx(), json!({"query": "what does migr do with cfg?"}));
    assert_eq!(question["presence"], "none");
});

backend_test!(fn identifiers_are_exact_and_never_corrected(store) {
    let f = Fixture::on(store);
    f.claim(&main_ctx(), "OPS-RUNBOOK-42 covers rollbacks", json!({}));
    let exact = f.recall(&main_ctx(), json!({"query": "OPS-RUNBOOK-42"}));
    assert_eq!(exact["presence"], "claims");
    let typo = f.recall(&main_ctx(), json!({"query": "OPS-RUNBOK-42"}));
    assert_eq!(typo["presence"], "none");
});

backend_test!(fn a_deep_match_gets_its_window_and_an_exact_excerpt_citation(store) {
    let f = Fixture::on(store);
    let filler = "Routine operations are reviewed every quarter by the owning team. ".repeat(900);
    let needle = "To replay a dead-letter topic run the replay tool at 200 events per second. ";
    let text = format!("{filler}{needle}{filler}");
    assert!(text.len() > 100_000);
    let art = f.put(&main_ctx(), "manual", "Operations manual", &text);
    let bytes = content(&f, &art);
    let result = f.search(&main_ctx(), json!({"query": "replay dead-letter topic"}));
    let hit = &result["hits"][0];
    assert!(
        hit["excerpt"].as_str().unwrap().contains("‹replay›"),
        "{}",
        hit["excerpt"]
    );
    let citation = hit["excerpt_citation"].as_str().unwrap();
    let (start, end) = span(citation);
    assert!(start > 50_000, "the window is deep inside, not the head: {start}");
    // A text this long is cited by the passage around the window, not as a whole.
    let (passage_start, passage_end) = span(hit["citation"].as_str().unwrap());
    assert!(passage_start <= start && end <= passage_end, "{hit:#}");
    assert!(passage_end - passage_start <= 4096);
    assert!(excerpt_round_trips(
        hit["excerpt"].as_str().unwrap(),
        &bytes,
        start,
        end
    ));
    // Recall refits the same window to its byte budget, still exactly cited.
    let recall = f.recall(
        &main_ctx(),
        json!({"query": "replay dead-letter topic", "max_excerpt_bytes": 60}),
    );
    let reference = &recall["artifact_refs"][0];
    let excerpt = reference["excerpt"].as_str().unwrap();
    assert!(excerpt.len() <= 60 && excerpt.contains("replay"), "{excerpt:?}");
    let (start, end) = span(reference["excerpt_citation"].as_str().unwrap());
    assert!(excerpt_round_trips(excerpt, &bytes, start, end));
    assert_eq!(reference["citation"], hit["citation"]);
    assert!(passage_start <= start && end <= passage_end, "{reference:#}");
});

backend_test!(fn a_long_artifact_is_cited_by_the_paragraph_that_matched_and_a_short_one_whole(store) {
    let f = Fixture::on(store);
    let filler = "Routine operations are reviewed every quarter by the owning team.\n".repeat(40);
    let paragraph = "The billing exporter is deployed from the ops runbook.\nIts signing key rotates every month.";
    let text = format!("{filler}\n{paragraph}\n\n{filler}");
    assert!(text.len() > 4096);
    let long = f.put(&main_ctx(), "runbook", "Operations runbook", &text);
    let short = f.put(
        &main_ctx(),
        "note",
        "Exporter note",
        "The billing exporter signing key is in the vault.",
    );
    let query = json!({"query": "billing exporter signing key"});
    let result = f.search(&main_ctx(), query.clone());
    let long_hit = hit(&result, &long["artifact_id"]).expect("the runbook is a hit");
    // The paragraph that matched, and what of the next one the window shows.
    let (start, end) = span(long_hit["citation"].as_str().unwrap());
    let (shown_start, shown_end) = span(long_hit["excerpt_citation"].as_str().unwrap());
    assert_eq!(start, text.find(paragraph).unwrap(), "{long_hit:#}");
    assert_eq!(end, shown_end.max(start + paragraph.len()), "{long_hit:#}");
    assert!(start <= shown_start, "{long_hit:#}");
    let short_hit = hit(&result, &short["artifact_id"]).expect("the note is a hit");
    assert_eq!(
        short_hit["citation"].as_str().unwrap(),
        format!(
            "memoree://artifact/{}@{}",
            short["artifact_id"].as_str().unwrap(),
            short["revision_id"].as_str().unwrap()
        )
    );
    // Recall and context.build cite what search cites.
    let recall = f.recall(&main_ctx(), query.clone());
    let reference = recall["artifact_refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["artifact_id"] == long["artifact_id"])
        .expect("the runbook is referenced");
    assert_eq!(reference["citation"], long_hit["citation"]);
    let bundle = f.build(
        &main_ctx(),
        json!({"query": "billing exporter signing key", "max_bytes": 8000}),
    );
    let item = bundle["manifest"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["entity_id"] == long["artifact_id"])
        .expect("the runbook is in the bundle");
    assert_eq!(item["citation"], long_hit["citation"]);
});

backend_test!(fn evidence_previews_show_the_window_around_the_match_inside_the_span(store) {
    let f = Fixture::on(store);
    let text = format!(
        "{}The ingest batch size is 500 events.",
        "Unrelated preamble words. ".repeat(40)
    );
    let art = f.put(&main_ctx(), "design", "Ingest", &text);
    f.claim(
        &main_ctx(),
        "The ingest batch size is 500 events",
        json!({"evidence": [{"artifact_id": art["artifact_id"], "revision_id": art["revision_id"]}]}),
    );
    let recall = f.recall(
        &main_ctx(),
        json!({"query": "ingest batch size", "max_excerpt_bytes": 48}),
    );
    let evidence = &recall["claims"][0]["evidence"][0];
    let excerpt = evidence["excerpt"].as_str().unwrap();
    assert_eq!(evidence["excerpt_truncated"], true);
    assert!(excerpt.contains("batch size"), "{excerpt:?}");
    let (start, end) = span(evidence["excerpt_citation"].as_str().unwrap());
    assert_eq!(&text.as_bytes()[start..end], excerpt.as_bytes());
});

backend_test!(fn near_identical_claims_collapse_unless_a_number_or_a_contradiction_separates_them(store) {
    let f = Fixture::on(store);
    let first = f.claim(&main_ctx(), "The query cache is disabled since v0.14.2", json!({}));
    let dup = f.claim(&main_ctx(), "The query cache is disabled since v0.14.2.", json!({}));
    let recall = f.recall(&main_ctx(), json!({"query": "query cache disabled"}));
    assert_eq!(recall["claims"].as_array().unwrap().len(), 1, "{recall:#}");
    let kept = &recall["claims"][0];
    assert!(kept["claim_id"] == first["claim_id"] || kept["claim_id"] == dup["claim_id"]);
    assert_eq!(kept["collapsed_duplicates"].as_array().unwrap().len(), 1);

    let thirty = f.claim(&main_ctx(), "Raw events are retained for 30 days", json!({}));
    let ninety = f.claim(&main_ctx(), "Raw events are retained for 90 days", json!({}));
    let recall = f.recall(&main_ctx(), json!({"query": "raw events retained"}));
    assert_eq!(recall["claims"].as_array().unwrap().len(), 2);
    let a = f.claim(&main_ctx(), "Backups run nightly at two", json!({}));
    let b = f.claim(&main_ctx(), "Backups run nightly at two.", json!({}));
    f.relate_claims(&main_ctx(), &a, "contradicts", &b);
    let recall = f.recall(&main_ctx(), json!({"query": "backups nightly"}));
    assert_eq!(
        recall["claims"].as_array().unwrap().len(),
        2,
        "never across a contradiction"
    );
    let _ = (thirty, ninety);
});

backend_test!(fn one_source_artifact_fills_at_most_two_recall_slots_while_others_qualify(store) {
    let f = Fixture::on(store);
    let source = f.put(
        &main_ctx(),
        "design",
        "Gateway",
        "gateway limits gateway limits gateway limits",
    );
    let evidence = json!({"evidence": [{"artifact_id": source["artifact_id"], "revision_id": source["revision_id"]}]});
    for i in 0..4 {
        f.claim(
            &main_ctx(),
            &format!("Gateway limits rule number {i} applies"),
            evidence.clone(),
        );
    }
    let other = f.claim(
        &main_ctx(),
        "Gateway limits are reviewed yearly by the platform group",
        json!({}),
    );
    let recall = f.recall(&main_ctx(), json!({"query": "gateway limits", "max_claims": 3}));
    let ids = field(&recall["claims"], "claim_id");
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&other["claim_id"]), "{recall:#}");
    assert_eq!(recall["claims_truncated"], true);
});

backend_test!(fn a_query_of_function_words_only_still_searches_and_says_so(store) {
    let f = Fixture::on(store);
    f.put(&main_ctx(), "note", "Note", "what is it and how does it work");
    let result = f.search(&main_ctx(), json!({"query": "what is it"}));
    assert_eq!(result["query_analysis"]["stop_words_only"], true);
    assert_eq!(result["hits"].as_array().unwrap().len(), 1);
});
