//! Applies seed records through ordinary mutations and remembers which ids got which
//! labels, so results can be judged by label.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::EvalError;
use super::corpus::{Context, Corpus, SeedAction};
use crate::client::Transport;
use crate::protocol::ErrorBody;
use crate::store::scope::Owner;
use crate::timefmt;

/// The actor recorded on every seeded mutation.
pub const ACTOR: &str = "memoree-eval";

/// Ids and owners of everything the seed created.
#[derive(Debug, Default)]
pub struct Seeded {
    /// Artifact revision id → label of the record that created the revision.
    pub revisions: HashMap<String, String>,
    /// Claim id → label.
    pub claims: HashMap<String, String>,
    /// Label → owner scope.
    pub owners: HashMap<String, Owner>,
    /// Artifact or revision label → (artifact id, that label's revision id, its text).
    artifacts: HashMap<String, (String, String, Option<String>)>,
    /// Artifact id → its current revision id.
    current: HashMap<String, String>,
    /// Claim label → claim id.
    claim_ids: HashMap<String, String>,
}

impl Seeded {
    /// The claim id of a claim label.
    pub fn claim_id(&self, label: &str) -> Option<&str> {
        self.claim_ids.get(label).map(String::as_str)
    }

    /// The artifact id behind an artifact or revision label.
    pub fn artifact_id(&self, label: &str) -> Option<&str> {
        self.artifacts.get(label).map(|(id, ..)| id.as_str())
    }

    /// The label of a claim id or an artifact revision id, if seeded.
    pub fn label_of(&self, entity_type: &str, entity_id: &str, revision_id: &str) -> Option<&str> {
        match entity_type {
            "claim" => self.claims.get(entity_id).map(String::as_str),
            _ => self.revisions.get(revision_id).map(String::as_str),
        }
    }
}

/// The wire context of a corpus context.
pub fn wire_context(context: &Context) -> Value {
    let mut value = json!({"workspace_id": context.workspace_id, "project_id": context.project_id});
    if let Some(task) = &context.task_id {
        value["task_id"] = json!(task);
    }
    if !context.pins.is_empty() {
        value["pins"] = json!(context.pins);
    }
    value
}

pub fn owner(context: &Context) -> Owner {
    Owner {
        workspace_id: context.workspace_id.clone(),
        project_id: context.project_id.clone(),
        task_id: context.task_id.clone(),
        component: None,
    }
}

/// Sends one request; `Ok(Err(_))` is a failure envelope.
pub fn exchange(transport: &dyn Transport, request: &Value) -> Result<Result<Value, ErrorBody>, EvalError> {
    let response = transport
        .exchange(request)
        .map_err(|e| EvalError::Request(e.to_string()))?;
    match (response.ok, response.result, response.error) {
        (true, Some(result), _) => Ok(Ok(result)),
        (_, _, Some(error)) => Ok(Err(error)),
        _ => Err(EvalError::Request("a response had neither result nor error".to_owned())),
    }
}

fn days_from_now(days: i64) -> String {
    timefmt::to_wire(&(timefmt::now() + chrono::Duration::days(days)))
}

/// Applies every seed record in file order.
pub fn apply(corpus: &Corpus, transport: &dyn Transport) -> Result<Seeded, EvalError> {
    let mut seeded = Seeded::default();
    for (index, record) in corpus.seed.iter().enumerate() {
        let label = record.label.as_str();
        let fail = |message: String| EvalError::Seed(format!("record {index} ({label}): {message}"));
        let (op, input) = match &record.action {
            SeedAction::Artifact(artifact) => {
                let content = match (artifact.full_text(), &artifact.base64) {
                    (Some(text), None) => json!({"type": "text", "data": text}),
                    (None, Some(data)) => json!({"type": "base64", "data": data}),
                    _ => return Err(fail("an artifact needs exactly one of text and base64".to_owned())),
                };
                (
                    "artifact.put",
                    json!({"kind": artifact.kind, "title": artifact.title, "media_type": artifact.media_type,
                           "content": content, "provenance": {"eval_label": label}, "actor": ACTOR}),
                )
            }
            SeedAction::Revise(revise) => {
                let (artifact_id, ..) = seeded
                    .artifacts
                    .get(&revise.artifact)
                    .ok_or_else(|| fail(format!("unknown artifact {}", revise.artifact)))?;
                let revision_id = &seeded.current[artifact_id];
                (
                    "artifact.revise",
                    json!({"artifact_id": artifact_id, "if_revision": revision_id,
                           "content": {"type": "text", "data": revise.text},
                           "provenance": {"eval_label": label}, "actor": ACTOR}),
                )
            }
            SeedAction::Forget(forget) => {
                let (artifact_id, ..) = seeded
                    .artifacts
                    .get(&forget.target)
                    .ok_or_else(|| fail(format!("unknown artifact {}", forget.target)))?;
                (
                    "artifact.forget",
                    json!({"artifact_id": artifact_id, "reason": forget.reason}),
                )
            }
            SeedAction::Retract(retract) => {
                let claim_id = seeded
                    .claim_ids
                    .get(&retract.target)
                    .ok_or_else(|| fail(format!("unknown claim {}", retract.target)))?;
                ("claim.retract", json!({"claim_id": claim_id, "reason": retract.reason}))
            }
            SeedAction::Claim(claim) => {
                let mut evidence = Vec::new();
                for locator in &claim.evidence {
                    let (artifact_id, revision_id, text) = seeded
                        .artifacts
                        .get(&locator.artifact)
                        .ok_or_else(|| fail(format!("unknown artifact {}", locator.artifact)))?;
                    let mut item = json!({"artifact_id": artifact_id, "revision_id": revision_id});
                    if let Some(quote) = &locator.quote {
                        let text = text.as_deref().unwrap_or_default();
                        let start = text
                            .find(quote.as_str())
                            .filter(|_| text.matches(quote.as_str()).count() == 1)
                            .ok_or_else(|| fail(format!("quote {quote:?} must occur exactly once")))?;
                        item["start_byte"] = json!(start);
                        item["end_byte"] = json!(start + quote.len());
                    }
                    evidence.push(item);
                }
                let mut input = json!({"claim_type": claim.claim_type, "statement": claim.statement,
                                       "evidence": evidence, "actor": ACTOR});
                if let Some(days) = claim.valid_from_days {
                    input["valid_from"] = json!(days_from_now(days));
                }
                if let Some(days) = claim.valid_until_days {
                    input["valid_until"] = json!(days_from_now(days));
                }
                ("claim.assert", input)
            }
            SeedAction::Relation(relation) => {
                let endpoint = |label: &str| -> Result<(&str, String), EvalError> {
                    if let Some(id) = seeded.claim_ids.get(label) {
                        return Ok(("claim", id.clone()));
                    }
                    if let Some((id, ..)) = seeded.artifacts.get(label) {
                        return Ok(("artifact", id.clone()));
                    }
                    Err(fail(format!("unknown endpoint {label}")))
                };
                let (source_type, source_id) = endpoint(&relation.source)?;
                let (target_type, target_id) = endpoint(&relation.target)?;
                (
                    "relation.put",
                    json!({"source_type": source_type, "source_id": source_id, "relation": relation.relation,
                           "target_type": target_type, "target_id": target_id, "metadata": {"eval_label": label}}),
                )
            }
        };
        let request = json!({
            "request_id": format!("eval-seed-{index}"), "op": op, "context": wire_context(&record.context),
            "context_source": "explicit", "idempotency_key": format!("eval:{index}:{label}"), "input": input,
        });
        let result = exchange(transport, &request)?.map_err(|e| fail(format!("{}: {}", e.code.as_str(), e.message)))?;
        record_result(&mut seeded, record, &result);
    }
    Ok(seeded)
}

fn record_result(seeded: &mut Seeded, record: &super::corpus::SeedRecord, result: &Value) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let label = record.label.clone();
    match &record.action {
        SeedAction::Artifact(artifact) => {
            seeded.revisions.insert(text(&result["revision_id"]), label.clone());
            seeded.owners.insert(label.clone(), owner(&record.context));
            seeded
                .current
                .insert(text(&result["artifact_id"]), text(&result["revision_id"]));
            seeded.artifacts.insert(
                label,
                (
                    text(&result["artifact_id"]),
                    text(&result["revision_id"]),
                    artifact.full_text(),
                ),
            );
        }
        SeedAction::Revise(revise) => {
            seeded
                .current
                .insert(text(&result["artifact_id"]), text(&result["revision_id"]));
            seeded.artifacts.insert(
                label.clone(),
                (
                    text(&result["artifact_id"]),
                    text(&result["revision_id"]),
                    Some(revise.text.clone()),
                ),
            );
            if let Some(original) = seeded.owners.get(&revise.artifact).cloned() {
                seeded.owners.insert(label.clone(), original);
            }
            seeded.revisions.insert(text(&result["revision_id"]), label);
        }
        SeedAction::Claim(_) => {
            seeded.claims.insert(text(&result["claim_id"]), label.clone());
            seeded.claim_ids.insert(label.clone(), text(&result["claim_id"]));
            seeded.owners.insert(label, owner(&record.context));
        }
        SeedAction::Forget(_) | SeedAction::Retract(_) | SeedAction::Relation(_) => {}
    }
}
