//! The generated store of the export round trip: `MEMOREE_ROUNDTRIP_ARTIFACTS` artifacts
//! (10 000 by default) over three projects and a task, inline and CAS content, revisions,
//! cited claims (one per ten artifacts), relations of every kind, open, stale and resolved
//! conflict cases, forgets, retractions, purges and replay records.
//!
//! Bulk rows go through the store's own write path in batches (no per-row fsync); the
//! lifecycle operations go through the service, so replay records and events are real.

use memoree::protocol::claim::ClaimType;
use memoree::service::Service;
use memoree::store::artifact::{self, BlobRef, NewRevision};
use memoree::store::claim::{self, EvidenceRef, NewClaimRevision};
use memoree::store::scope::Owner;
use serde_json::{Value, json};

const BATCH: usize = 500;
const WORDS: [&str; 12] = [
    "harbor",
    "ledger",
    "sqlite",
    "revision",
    "evidence",
    "gateway",
    "migration",
    "queue",
    "tombstone",
    "export",
    "cluster",
    "latency",
];

fn owner(index: usize) -> Owner {
    Owner {
        workspace_id: "wsp_gen".to_owned(),
        project_id: format!("prj_gen{}", index % 3),
        task_id: index.is_multiple_of(7).then(|| "tsk_gen".to_owned()),
        component: index.is_multiple_of(5).then(|| "api".to_owned()),
    }
}

fn context(owner: &Owner) -> Value {
    json!({"workspace_id": owner.workspace_id, "project_id": owner.project_id, "task_id": owner.task_id})
}

fn text(index: usize, bytes: usize) -> Vec<u8> {
    let mut out = format!("Generated note {index}. ");
    let mut i = index;
    while out.len() < bytes {
        out.push_str(WORDS[i % WORDS.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(bytes);
    out.into_bytes()
}

fn new_revision(service: &Service, index: usize, bytes: Vec<u8>) -> Result<NewRevision, String> {
    let blob = if bytes.len() <= memoree::protocol::limits::INLINE_BLOB_MAX_BYTES {
        BlobRef::inline(&bytes)
    } else {
        let digest = service
            .store()
            .blobs()
            .map_err(|e| e.to_string())?
            .put(&bytes)
            .map_err(|e| e.to_string())?;
        BlobRef::external(digest, bytes.len() as u64)
    };
    Ok(NewRevision {
        title: format!("Generated note {index}"),
        media_type: "text/markdown".to_owned(),
        blob,
        content: bytes,
        provenance_json: json!({"generator": "roundtrip", "index": index}).to_string(),
        actor: index.is_multiple_of(4).then(|| "generator".to_owned()),
        vectors: None,
    })
}

/// What the seed produced, for the service-level lifecycle steps.
struct Seeded {
    artifacts: Vec<(String, String, Owner)>,
    claims: Vec<(String, String, Owner)>,
}

fn seed(service: &Service, count: usize) -> Result<Seeded, String> {
    let mut seeded = Seeded {
        artifacts: Vec::new(),
        claims: Vec::new(),
    };
    for start in (0..count).step_by(BATCH) {
        let end = (start + BATCH).min(count);
        let mut revisions = Vec::new();
        for index in start..end {
            let size = if index % 200 == 7 {
                20_000
            } else {
                600 + (index * 37) % 1800
            };
            revisions.push((index, new_revision(service, index, text(index, size))?));
        }
        let made = service
            .store()
            .write(move |tx| {
                let mut made = Vec::new();
                for (index, new) in revisions {
                    let owner = owner(index);
                    let (row, _) = artifact::put(tx, &owner, "note", &new)?;
                    let mut claim = None;
                    if index % 10 == 0 {
                        let statement = format!("Note {index} says {} matters", WORDS[index % WORDS.len()]);
                        let evidence = vec![EvidenceRef {
                            artifact_id: row.artifact_id.clone(),
                            revision_id: row.revision_id.clone(),
                            start_byte: Some(0),
                            end_byte: Some(14),
                        }];
                        let new = NewClaimRevision {
                            statement,
                            confidence: Some(0.5 + (index % 5) as f64 / 10.0),
                            evidence,
                            actor: None,
                            vectors: None,
                        };
                        let (c, _) = claim::assert(tx, &owner, ClaimType::Fact, &new, None, None)?;
                        claim = Some((c.claim_id, c.revision_id));
                    }
                    made.push((index, row.artifact_id, row.revision_id, claim));
                }
                Ok(made)
            })
            .map_err(|e| e.to_string())?;
        for (index, artifact_id, revision_id, claim) in made {
            seeded
                .artifacts
                .push((artifact_id.to_string(), revision_id.to_string(), owner(index)));
            if let Some((claim_id, claim_revision)) = claim {
                seeded
                    .claims
                    .push((claim_id.to_string(), claim_revision.to_string(), owner(index)));
            }
        }
    }
    Ok(seeded)
}

fn mutate(service: &Service, op: &str, owner: &Owner, input: Value, key: &str) -> Result<Value, String> {
    let request = json!({"v": 1, "request_id": format!("req_{key}"), "op": op, "idempotency_key": key,
                         "context": context(owner), "input": input});
    let response = service.handle_value(request.clone(), "req_transport");
    if !response.ok {
        return Err(format!("{request} failed: {:?}", response.error));
    }
    Ok(response.result.unwrap_or(Value::Null))
}

/// Lifecycle traffic through the service: revisions, relations, conflicts, forgets,
/// retractions and purges (a purge rewrites the database, so only a few).
fn lifecycle(service: &Service, seeded: &Seeded) -> Result<(), String> {
    for (n, (artifact_id, revision_id, owner)) in seeded.artifacts.iter().enumerate().step_by(97).take(40) {
        let body = String::from_utf8_lossy(&text(n + 1_000_000, 900)).into_owned();
        let input = json!({"artifact_id": artifact_id, "if_revision": revision_id,
                           "content": {"type": "text", "data": body}});
        mutate(service, "artifact.revise", owner, input, &format!("revise-a{n}"))?;
    }
    let claims = &seeded.claims;
    let same_scope = |i: usize, j: usize| {
        claims[i].2.project_id == claims[j].2.project_id && claims[i].2.task_id == claims[j].2.task_id
    };
    let pairs: Vec<(usize, usize)> = (0..claims.len().saturating_sub(30))
        .step_by(23)
        .filter_map(|i| ((i + 1)..(i + 30)).find(|&j| same_scope(i, j)).map(|j| (i, j)))
        .take(30)
        .collect();
    for (k, &(i, j)) in pairs.iter().enumerate() {
        let relation = match k % 3 {
            0 => "contradicts",
            1 => "supports",
            _ => "supersedes",
        };
        let input = json!({"source_type": "claim", "source_id": claims[i].0, "relation": relation,
                           "target_type": "claim", "target_id": claims[j].0, "metadata": {"k": k}});
        mutate(service, "relation.put", &claims[i].2, input, &format!("rel-{k}"))?;
        let input = json!({"source_type": "claim", "source_id": claims[i].0, "relation": "references",
                           "target_type": "artifact", "target_id": seeded.artifacts[i * 10].0, "metadata": {}});
        mutate(service, "relation.put", &claims[i].2, input, &format!("ref-{k}"))?;
    }
    for (k, &(i, _)) in pairs.iter().enumerate().filter(|(k, _)| k % 3 == 0) {
        match k % 9 {
            0 => {
                let input = json!({"claim_id": claims[i].0, "if_revision": claims[i].1,
                                   "statement": format!("Revised claim {k} keeps the contradiction alive")});
                mutate(service, "claim.revise", &claims[i].2, input, &format!("crev-{k}"))?;
            }
            3 => {
                let input = json!({"claim_id": claims[i].0, "reason": format!("wrong {k}")});
                mutate(service, "claim.retract", &claims[i].2, input, &format!("retract-{k}"))?;
            }
            _ => {}
        }
    }
    for (n, (artifact_id, _, owner)) in seeded.artifacts.iter().enumerate().skip(5).step_by(211).take(10) {
        let input = json!({"artifact_id": artifact_id, "reason": format!("obsolete {n}")});
        mutate(service, "artifact.forget", owner, input, &format!("forget-{n}"))?;
    }
    let (artifact_id, _, owner) = &seeded.artifacts[7];
    mutate(
        service,
        "artifact.purge",
        owner,
        json!({"artifact_id": artifact_id, "reason": "leak"}),
        "purge-a7",
    )?;
    let (artifact_id, _, owner) = &seeded.artifacts[11];
    mutate(
        service,
        "artifact.purge",
        owner,
        json!({"artifact_id": artifact_id, "reason": "leak"}),
        "purge-a11",
    )?;
    let (claim_id, _, owner) = &claims[claims.len() - 1];
    mutate(
        service,
        "claim.purge",
        owner,
        json!({"claim_id": claim_id, "reason": "pii"}),
        "purge-c",
    )?;
    Ok(())
}

/// Builds the generated store and round-trips it.
pub fn run() -> Result<(), String> {
    let count = std::env::var("MEMOREE_ROUNDTRIP_ARTIFACTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000usize)
        .max(300);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let service = Service::open(&home.path().join("data")).map_err(|e| e.to_string())?;
    let outcome = (|| {
        let seeded = seed(&service, count)?;
        lifecycle(&service, &seeded)?;
        let mut reads = Vec::new();
        for project in 0..3 {
            let ctx = json!({"workspace_id": "wsp_gen", "project_id": format!("prj_gen{project}")});
            for (n, word) in WORDS.iter().enumerate() {
                let query = format!("{word} {}", WORDS[(n + 5) % WORDS.len()]);
                for op in ["search", "memory.recall", "context.build"] {
                    let input = json!({"query": query, "recency": {"enabled": false}});
                    reads.push(json!({"v": 1, "request_id": "req_gen", "op": op, "context": ctx, "input": input}));
                }
            }
        }
        crate::roundtrip::round_trip(&service, &reads)
    })();
    service.store().shutdown();
    outcome.map(drop)
}
