//! Retry storms: many clients re-send the same mutations with the same keys at the same
//! time, each exchange on its own connection (more clients than the daemon's connection
//! limit, so busy refusals and their retries are part of the storm). Each logical mutation
//! must apply exactly once, and every response for a key must be the original
//! acknowledgement: identical apart from `created`, which is `true` exactly once.

use std::collections::HashMap;

use memoree::protocol::Response;
use serde_json::{Value, json};

use crate::support::daemon::TestDaemon;
use crate::support::torture::{Counts, Db, Op, Rng, call, mutation_request, text, verify_issues, without_created};

const THREADS: usize = 8;
const ROUNDS: usize = 3;

fn put(key: &str, content: &str) -> Value {
    mutation_request(
        "artifact.put",
        key,
        json!({"kind": "note", "title": key, "media_type": "text/plain", "content": {"type": "text", "data": content}}),
    )
}

fn assert_claim(key: &str, artifact: &Value) -> Value {
    mutation_request(
        "claim.assert",
        key,
        json!({
            "claim_type": "fact", "statement": format!("storm claim {key}"),
            "evidence": [{"artifact_id": artifact["artifact_id"], "revision_id": artifact["revision_id"], "start_byte": 0, "end_byte": 12}],
        }),
    )
}

fn relation(key: &str, source: (&str, &Value, &str), relation: &str, target: (&str, &Value, &str)) -> Value {
    mutation_request(
        "relation.put",
        key,
        json!({
            "source_type": source.0, "source_id": source.1[source.2], "relation": relation,
            "target_type": target.0, "target_id": target.1[target.2],
        }),
    )
}

#[test]
fn concurrent_retries_of_the_same_mutations_apply_each_exactly_once() {
    let daemon = TestDaemon::start();
    let mut session = daemon.client().session();
    let mut rng = Rng::new(57_073);
    let mut setup = |request: Value| {
        let response = call(&mut session, &request);
        assert!(response.ok, "{response:?}");
        response.result.unwrap()
    };
    let base = setup(put("setup-a0", &text(&mut rng, "base", 400, 400)));
    let other = setup(put("setup-a1", &text(&mut rng, "other", 400, 400)));
    let claims: Vec<Value> = (0..4)
        .map(|i| setup(assert_claim(&format!("setup-c{i}"), &base)))
        .collect();
    let setup_mutations = 6;

    let shared_external = text(&mut rng, "shared", 20_000, 20_000);
    let mut storm: Vec<(Op, Value)> = Vec::new();
    for i in 0..6 {
        storm.push((
            Op::ArtifactPut,
            put(&format!("storm-inline-{i}"), &format!("inline body {i}")),
        ));
    }
    for i in 0..2 {
        let content = text(&mut rng, &format!("external {i}"), 17_000, 30_000);
        storm.push((Op::ArtifactPut, put(&format!("storm-external-{i}"), &content)));
    }
    // Two keys, one CAS object: both race to publish the same blob.
    storm.push((Op::ArtifactPut, put("storm-shared-0", &shared_external)));
    storm.push((Op::ArtifactPut, put("storm-shared-1", &shared_external)));
    storm.push((Op::ClaimAssert, assert_claim("storm-claim-0", &base)));
    storm.push((Op::ClaimAssert, assert_claim("storm-claim-1", &other)));
    storm.push((
        Op::ArtifactRevise,
        mutation_request(
            "artifact.revise",
            "storm-revise-a0",
            json!({"artifact_id": base["artifact_id"], "if_revision": base["revision_id"],
                   "content": {"type": "text", "data": "the revised base"}}),
        ),
    ));
    storm.push((
        Op::ClaimRevise,
        mutation_request(
            "claim.revise",
            "storm-revise-c0",
            json!({"claim_id": claims[0]["claim_id"], "if_revision": claims[0]["revision_id"],
                   "statement": "the revised claim"}),
        ),
    ));
    storm.push((
        Op::ClaimRetract,
        mutation_request(
            "claim.retract",
            "storm-retract-c1",
            json!({"claim_id": claims[1]["claim_id"], "reason": "storm"}),
        ),
    ));
    storm.push((
        Op::RelationPut,
        relation(
            "storm-contradicts",
            ("claim", &claims[2], "claim_id"),
            "contradicts",
            ("claim", &claims[3], "claim_id"),
        ),
    ));
    storm.push((
        Op::RelationPut,
        relation(
            "storm-supports",
            ("claim", &claims[3], "claim_id"),
            "supports",
            ("artifact", &base, "artifact_id"),
        ),
    ));
    storm.push((
        Op::RelationPut,
        relation(
            "storm-derived",
            ("artifact", &other, "artifact_id"),
            "derived_from",
            ("artifact", &base, "artifact_id"),
        ),
    ));

    // Every thread sends every mutation ROUNDS times, in its own order, one connection each.
    let responses: Vec<(usize, Response)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (storm, client) = (&storm, daemon.client());
                scope.spawn(move || {
                    let mut rng = Rng::new(t as u64 + 1);
                    let mut out = Vec::new();
                    for _ in 0..ROUNDS {
                        let mut order: Vec<usize> = (0..storm.len()).collect();
                        for i in (1..order.len()).rev() {
                            order.swap(i, rng.below(i + 1));
                        }
                        for i in order {
                            let response = client.exchange_json(&storm[i].1).unwrap();
                            out.push((i, response));
                        }
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });

    let mut by_key: HashMap<usize, Vec<Response>> = HashMap::new();
    for (i, response) in responses {
        assert!(response.ok, "{}: {response:?}", storm[i].1["idempotency_key"]);
        by_key.entry(i).or_default().push(response);
    }
    for (i, responses) in &by_key {
        let key = &storm[*i].1["idempotency_key"];
        assert_eq!(responses.len(), THREADS * ROUNDS);
        let created = responses
            .iter()
            .filter(|r| r.result.as_ref().unwrap()["created"] == true)
            .count();
        assert_eq!(created, 1, "{key}: {created} responses say created");
        let first = &responses[0];
        for response in responses {
            assert_eq!(without_created(response), without_created(first), "{key}");
            assert_eq!(response.commit_seq, first.commit_seq, "{key}");
        }
    }

    // Exactly one logical entity (and one event) per key.
    let mut ops: HashMap<Op, i64> = HashMap::new();
    for (op, _) in &storm {
        *ops.entry(*op).or_insert(0) += 1;
    }
    *ops.entry(Op::ArtifactPut).or_insert(0) += 2;
    *ops.entry(Op::ClaimAssert).or_insert(0) += 4;
    let db = Db::open(daemon.data_dir());
    let expected = Counts::expected(&ops);
    assert_eq!(db.counts(), expected);
    assert_eq!(expected.events, setup_mutations + storm.len() as i64);
    let shared: Vec<String> = by_key
        .iter()
        .filter(|(i, _)| {
            storm[**i].1["idempotency_key"]
                .as_str()
                .unwrap()
                .starts_with("storm-shared")
        })
        .map(|(_, responses)| {
            format!(
                "'{}'",
                responses[0].result.as_ref().unwrap()["artifact_id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(shared.len(), 2);
    let shared_blobs = db.count(&format!(
        "SELECT count(DISTINCT blob_hash) FROM artifact_revisions WHERE inline_blob IS NULL AND artifact_id IN ({})",
        shared.join(", ")
    ));
    assert_eq!(shared_blobs, 1);
    assert_eq!(db.count("SELECT count(*) FROM conflict_cases WHERE state = 'open'"), 1);
    assert!(db.conflict_violations().is_empty());
    drop(db);
    assert_eq!(verify_issues(&mut daemon.client().session()), Vec::<String>::new());
}
