//! Applies seed records through ordinary mutations and remembers which ids got which
//! labels, so results can be judged by label.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::EvalError;
use super::corpus::{Context, Corpus, SeedAction};
use crate::client::{Exchange, Transport};
use crate::protocol::artifact::{ArtifactContent, ArtifactForgetInput, ArtifactPutInput, ArtifactReviseInput};
use crate::protocol::claim::{ClaimAssertInput, ClaimRetractInput, ClaimType, EvidenceLocator};
use crate::protocol::relation::{EntityType, RelationPutInput, RelationType};
use crate::protocol::{AmbientContext, ContextSource, ErrorBody, Input, Request};
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
pub fn wire_context(context: &Context) -> AmbientContext {
    AmbientContext {
        task_id: context.task_id.clone(),
        pins: context.pins.clone(),
        ..AmbientContext::project(context.workspace_id.clone(), context.project_id.clone())
    }
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
pub fn exchange<I: Input>(
    transport: &dyn Transport,
    request: &Request<I>,
) -> Result<Result<Value, ErrorBody>, EvalError> {
    let response = transport.send(request).map_err(|e| EvalError::Request(e.to_string()))?;
    response
        .into_result()
        .ok_or_else(|| EvalError::Request("a response had neither result nor error".to_owned()))
}

/// The provenance every seeded artifact revision carries.
fn provenance(label: &str) -> Map<String, Value> {
    Map::from_iter([("eval_label".to_owned(), Value::from(label))])
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
        let result = match &record.action {
            SeedAction::Artifact(artifact) => {
                let content = match (artifact.full_text(), &artifact.base64) {
                    (Some(text), None) => ArtifactContent::Text(text),
                    (None, Some(data)) => ArtifactContent::Base64(data.clone()),
                    _ => return Err(fail("an artifact needs exactly one of text and base64".to_owned())),
                };
                let input = ArtifactPutInput {
                    kind: artifact.kind.clone(),
                    title: artifact.title.clone(),
                    media_type: artifact.media_type.clone(),
                    content,
                    provenance: provenance(label),
                    actor: Some(ACTOR.to_owned()),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
            SeedAction::Revise(revise) => {
                let (artifact_id, ..) = seeded
                    .artifacts
                    .get(&revise.artifact)
                    .ok_or_else(|| fail(format!("unknown artifact {}", revise.artifact)))?;
                let input = ArtifactReviseInput {
                    artifact_id: artifact_id.as_str().into(),
                    if_revision: seeded.current[artifact_id].as_str().into(),
                    title: None,
                    media_type: None,
                    content: ArtifactContent::Text(revise.text.clone()),
                    provenance: provenance(label),
                    actor: Some(ACTOR.to_owned()),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
            SeedAction::Forget(forget) => {
                let (artifact_id, ..) = seeded
                    .artifacts
                    .get(&forget.target)
                    .ok_or_else(|| fail(format!("unknown artifact {}", forget.target)))?;
                let input = ArtifactForgetInput {
                    artifact_id: artifact_id.as_str().into(),
                    reason: forget.reason.clone(),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
            SeedAction::Retract(retract) => {
                let claim_id = seeded
                    .claim_ids
                    .get(&retract.target)
                    .ok_or_else(|| fail(format!("unknown claim {}", retract.target)))?;
                let input = ClaimRetractInput {
                    claim_id: claim_id.as_str().into(),
                    reason: retract.reason.clone(),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
            SeedAction::Claim(claim) => {
                let mut evidence = Vec::new();
                for locator in &claim.evidence {
                    let (artifact_id, revision_id, text) = seeded
                        .artifacts
                        .get(&locator.artifact)
                        .ok_or_else(|| fail(format!("unknown artifact {}", locator.artifact)))?;
                    let mut item = EvidenceLocator {
                        artifact_id: artifact_id.as_str().into(),
                        revision_id: revision_id.as_str().into(),
                        start_byte: None,
                        end_byte: None,
                    };
                    if let Some(quote) = &locator.quote {
                        let text = text.as_deref().unwrap_or_default();
                        let start = text
                            .find(quote.as_str())
                            .filter(|_| text.matches(quote.as_str()).count() == 1)
                            .ok_or_else(|| fail(format!("quote {quote:?} must occur exactly once")))?;
                        item.start_byte = Some(start as u64);
                        item.end_byte = Some((start + quote.len()) as u64);
                    }
                    evidence.push(item);
                }
                let input = ClaimAssertInput {
                    claim_type: ClaimType::parse(&claim.claim_type)
                        .ok_or_else(|| fail(format!("unknown claim type {:?}", claim.claim_type)))?,
                    statement: claim.statement.clone(),
                    confidence: None,
                    evidence,
                    valid_from: claim.valid_from_days.map(days_from_now),
                    valid_until: claim.valid_until_days.map(days_from_now),
                    actor: Some(ACTOR.to_owned()),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
            SeedAction::Relation(relation) => {
                let endpoint = |label: &str| -> Result<(EntityType, String), EvalError> {
                    if let Some(id) = seeded.claim_ids.get(label) {
                        return Ok((EntityType::Claim, id.clone()));
                    }
                    if let Some((id, ..)) = seeded.artifacts.get(label) {
                        return Ok((EntityType::Artifact, id.clone()));
                    }
                    Err(fail(format!("unknown endpoint {label}")))
                };
                let (source_type, source_id) = endpoint(&relation.source)?;
                let (target_type, target_id) = endpoint(&relation.target)?;
                let input = RelationPutInput {
                    source_type,
                    source_id,
                    relation: RelationType::parse(&relation.relation)
                        .ok_or_else(|| fail(format!("unknown relation {:?}", relation.relation)))?,
                    target_type,
                    target_id,
                    metadata: provenance(label),
                };
                exchange(transport, &seed_request(index, record, input))?
            }
        };
        let result = result.map_err(|e| fail(format!("{}: {}", e.code, e.message)))?;
        record_result(&mut seeded, record, &result);
    }
    Ok(seeded)
}

/// The request that applies one seed record: its own key, and the record's context sent
/// explicitly.
fn seed_request<I: Input>(index: usize, record: &super::corpus::SeedRecord, input: I) -> Request<I> {
    Request::new(format!("eval-seed-{index}"), input)
        .with_idempotency_key(format!("eval:{index}:{}", record.label))
        .with_context(wire_context(&record.context), ContextSource::Explicit)
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
