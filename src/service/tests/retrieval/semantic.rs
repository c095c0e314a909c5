//! Semantic evidence (issue 27): with a model, a partial lexical match can qualify through
//! its meaning, every judged candidate discloses its similarity, and a question about a name
//! memory never saw is still answered by nothing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::support::*;
use crate::semantic::{Embedder, State};
use crate::service::Runtime;
use crate::testkit::parts;

/// A lexical fixture and the same seed served with potion-base-8M, or `None` after a skip.
fn pair(test: &str) -> Option<(Fixture, Fixture)> {
    let model = parts::shared_file("models/potion-base-8M/model.safetensors", test)?;
    let embedder = Embedder::load(model.parent().unwrap(), None).unwrap();
    let semantic = fixture_with(Runtime {
        semantic: State::On(Arc::new(embedder)),
        ..Runtime::default()
    });
    let lexical = fixture();
    for f in [&lexical, &semantic] {
        seed(f);
    }
    Some((lexical, semantic))
}

/// Turns of one conversation, one artifact each, as `memoree eval --locomo` seeds them.
const TURNS: &[(&str, &str)] = &[
    (
        "Melanie",
        "Melanie: Yesterday I took the kids to the museum, they loved the dinosaurs.",
    ),
    (
        "Melanie",
        "Melanie: I finally finished the pottery bowl I started last month.",
    ),
    (
        "Melanie",
        "Melanie: We went camping by the lake last weekend and roasted marshmallows.",
    ),
    ("Melanie", "Melanie: My daughter started violin lessons this week."),
    ("Jon", "Jon: I lost my job at the bank, so I'm opening a dance studio."),
    (
        "Jon",
        "Jon: The studio needs new mirrors and a sound system before the opening.",
    ),
    ("Jon", "Jon: I ran a marathon in the rain on Sunday."),
    ("Jon", "Jon: My dog Pixel learned to fetch the newspaper."),
];

fn seed(f: &Fixture) {
    for (index, (speaker, text)) in TURNS.iter().enumerate() {
        let title = format!("{speaker}, session {}", index / 2 + 1);
        f.put(&main_ctx(), "note", &title, text);
    }
}

fn hits(result: &Value) -> &Vec<Value> {
    result["hits"].as_array().unwrap()
}

#[test]
fn a_question_about_someone_memory_never_met_is_answered_by_nothing_even_with_a_model() {
    let Some((lexical, semantic)) = pair(&parts::current_test()) else {
        return;
    };
    for query in [
        "When did Caroline go to the museum?",
        "What did Gina paint for the art show?",
    ] {
        for f in [&lexical, &semantic] {
            let result = f.search(&main_ctx(), json!({ "query": query }));
            assert_eq!(hits(&result), &Vec::<Value>::new(), "{query}: {result:#}");
            let recall = f.recall(&main_ctx(), json!({ "query": query }));
            assert_eq!(recall["presence"], "none", "{query}: {recall:#}");
        }
    }
}

#[test]
fn with_a_model_every_hit_discloses_its_similarity_and_fused_score_and_without_one_nothing_changes() {
    let Some((lexical, semantic)) = pair(&parts::current_test()) else {
        return;
    };
    let query = "When did Melanie take her kids to the museum?";
    let plain = lexical.search(&main_ctx(), json!({ "query": query }));
    for hit in hits(&plain) {
        assert!(hit["ranking"].get("fused_score").is_none(), "{hit:#}");
        assert!(hit["ranking"]["qualification"].get("semantic").is_none(), "{hit:#}");
    }
    let result = semantic.search(&main_ctx(), json!({ "query": query }));
    let found = hits(&result);
    assert!(!found.is_empty(), "{result:#}");
    assert!(found[0]["excerpt"].as_str().unwrap().contains("museum"), "{result:#}");
    for hit in found {
        let ranking = &hit["ranking"];
        assert!(ranking["fused_score"].as_f64().unwrap() > 0.0, "{hit:#}");
        let qualification = &ranking["qualification"];
        let evidence = &qualification["semantic"];
        let similarity = evidence["similarity"].as_f64().unwrap();
        assert!((-1.0..=1.0).contains(&similarity), "{hit:#}");
        assert_eq!(
            evidence["required_similarity"].as_f64().unwrap(),
            crate::service::ops::semantic::PARTIAL_THRESHOLD
        );
        if evidence["qualified_by_meaning"] == true {
            assert!(similarity >= evidence["required_similarity"].as_f64().unwrap());
            assert!(qualification["matched_weight"].as_f64() < qualification["required_weight"].as_f64());
        }
    }
    // The same request answers the same way.
    let again = semantic.search(&main_ctx(), json!({ "query": query }));
    let ids = |r: &Value| hits(r).iter().map(|h| h["entity_id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&result), ids(&again));
}

#[test]
fn with_a_model_partial_matches_are_judged_only_while_fewer_than_the_limit_qualified_on_their_words() {
    let Some((_, semantic)) = pair(&parts::current_test()) else {
        return;
    };
    // `think` is generic, so only `pottery` drives the candidate query: the pottery bowl turn
    // is fetched, and it is a partial match of the question.
    semantic.put(
        &main_ctx(),
        "note",
        "Jon, session 5",
        "Jon: I think my pottery class made clay cups and plates this week.",
    );
    let query = "I think about pottery";
    // For the bowl turn, wherever it is (hit or near miss): whether its meaning was judged.
    let bowl_judged = |result: &Value| -> Vec<bool> {
        let near_misses = result["near_misses"].as_array().unwrap().iter();
        hits(result)
            .iter()
            .chain(near_misses)
            .filter(|h| h["excerpt"].as_str().unwrap().contains("bowl"))
            .map(|h| {
                let hit = &h["ranking"]["qualification"]["semantic"];
                let near_miss = &h["qualification"]["semantic"];
                !hit.is_null() || !near_miss.is_null()
            })
            .collect()
    };
    // Room for more than the one full match: the partial one is judged by its meaning.
    let wide = semantic.search(&main_ctx(), json!({ "query": query, "limit": 10 }));
    assert_eq!(bowl_judged(&wide), [true], "{wide:#}");
    // One hit asked and one full match: the partial match stays a near miss, unjudged.
    let narrow = semantic.search(&main_ctx(), json!({ "query": query, "limit": 1 }));
    assert_eq!(hits(&narrow).len(), 1, "{narrow:#}");
    assert!(
        hits(&narrow)[0]["excerpt"].as_str().unwrap().contains("clay"),
        "{narrow:#}"
    );
    assert_eq!(bowl_judged(&narrow), [false], "{narrow:#}");
}
