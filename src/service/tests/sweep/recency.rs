//! `bounded_recency_v1` at the service: over a corpus of claims and artifacts of every
//! decay class, ages, terminal states and future validity, the rerank never changes which
//! hits a search returns, moves a hit up at most `max_promotion` places, gives ineligible
//! hits no bonus, and with recency disabled keeps the lexical order.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::service::tests::retrieval::support::{Fixture, days_from_now, fixture, main_ctx};

const WORDS: [&str; 5] = ["heron", "otter", "lichen", "basalt", "quince"];

/// Claims of every type with validity starting from years ago to the future, a few
/// superseded or retracted, and artifacts of several kinds.
fn seeded() -> Fixture {
    let f = fixture();
    let types = [
        "fact",
        "decision",
        "constraint",
        "preference",
        "procedure",
        "observation",
    ];
    let mut previous: Option<Value> = None;
    for i in 0..36usize {
        let words: Vec<&str> = (0..1 + i % 4).map(|k| WORDS[(i + k * 2) % WORDS.len()]).collect();
        let statement = format!("{} note {i}", words.join(" "));
        let ago = [-2000, -400, -90, -30, -3, 0, 20][i % 7];
        let claim = f.claim(
            &main_ctx(),
            &statement,
            json!({"claim_type": types[i % types.len()], "valid_from": days_from_now(ago)}),
        );
        if let Some(old) = previous.take().filter(|_| i % 5 == 0) {
            f.relate_claims(&main_ctx(), &claim, "supersedes", &old);
        }
        if i % 11 == 3 {
            f.mutate(
                &main_ctx(),
                "claim.retract",
                json!({"claim_id": claim["claim_id"], "reason": "gone"}),
            );
        } else {
            previous = Some(claim);
        }
        let kinds = ["session-log", "decision", "runbook", "policy", "note"];
        f.put(
            &main_ctx(),
            kinds[i % kinds.len()],
            &format!("Doc {i}"),
            &format!("{statement} in a document"),
        );
    }
    f
}

thread_local! {
    static CORPUS: Fixture = seeded();
}

fn hits(f: &Fixture, query: &str, limit: usize, historical: bool, recency: bool) -> Vec<Value> {
    let input = json!({"query": query, "limit": limit, "include_historical": historical,
                       "recency": {"enabled": recency}});
    f.search(&main_ctx(), input)["hits"].as_array().unwrap().clone()
}

fn ids(hits: &[Value]) -> BTreeSet<String> {
    hits.iter()
        .map(|h| h["entity_id"].as_str().unwrap().to_owned())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn recency_reorders_a_fixed_membership_within_its_bounds(
        words in prop::sample::subsequence(WORDS.to_vec(), 1..3),
        limit in 1usize..15,
        historical in any::<bool>(),
    ) {
        let query = words.join(" ");
        CORPUS.with(|f| {
            let reranked = hits(f, &query, limit, historical, true);
            let lexical = hits(f, &query, limit, historical, false);
            prop_assert_eq!(ids(&reranked), ids(&lexical), "membership is fixed before the rerank");
            for (i, hit) in lexical.iter().enumerate() {
                let ranking = &hit["ranking"];
                prop_assert_eq!(ranking["lexical_position"].as_u64(), Some(i as u64 + 1));
                prop_assert_eq!(ranking["final_position"].as_u64(), Some(i as u64 + 1));
                prop_assert_eq!(ranking["recency_bonus"].as_f64(), Some(0.0));
            }
            for (i, hit) in reranked.iter().enumerate() {
                let ranking = &hit["ranking"];
                let lexical_position = ranking["lexical_position"].as_u64().unwrap();
                let final_position = ranking["final_position"].as_u64().unwrap();
                prop_assert_eq!(final_position, i as u64 + 1);
                prop_assert!(final_position + ranking["max_promotion"].as_u64().unwrap() >= lexical_position);
                let twin = lexical.iter().find(|h| h["entity_id"] == hit["entity_id"]).unwrap();
                prop_assert_eq!(twin["ranking"]["lexical_position"].as_u64(), Some(lexical_position));
                if ranking["recency_eligible"] == json!(false) {
                    prop_assert_eq!(ranking["recency_bonus"].as_f64(), Some(0.0));
                    prop_assert!(final_position >= lexical_position, "an ineligible hit never rises");
                }
            }
            Ok(())
        })?;
    }
}
