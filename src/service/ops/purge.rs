//! `artifact.purge` and `claim.purge` (extensions), and the purge notes on every read.
//!
//! A purge is a mutation (idempotency key, ambient context, one `commit_seq`) that runs
//! alone on the writer: existence, write scope and replay are checked, the logical purge
//! committed, then the physical scrub run before the acknowledgement (see
//! `store::purge`). Purging an entity that is already purged, under any key, acknowledges
//! the original purge (`created: false`, its `commit_seq`) and binds the new key to it.
//!
//! Reads never fail because something they mention was purged: [`annotate`] adds a
//! `PURGED` warning for each purged entity a result names and an `EVIDENCE_SOURCE_PURGED`
//! warning for each claim revision whose evidence cites erased content (exact gets of the
//! erased revisions themselves are `NOT_FOUND` with `details.state = "purged"`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::protocol::purge::{
    ArtifactPurgeInput, CitingClaim, ClaimPurgeInput, EARLIER_COPIES_NOTICE, EARLIER_COPIES_NOTICE_POSTGRES,
    PurgeResult, PurgedRevisionRecord,
};
use crate::protocol::relation::EntityType;
use crate::protocol::{Operation, Warning, limits};
use crate::service::convert::{context_owner, owner_context};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError, Written};
use crate::store::idempotency;
use crate::store::purge::{self as store_purge, EntityKind, PurgeRequest};
use crate::store::scope;
use crate::store::tombstone::{self, Tombstone};
use crate::timefmt::db_to_wire;

/// Warning code: a purged entity or revision is named by this result.
pub const PURGED: &str = "PURGED";
/// Warning code: evidence in this result cites content that was purged.
pub const EVIDENCE_SOURCE_PURGED: &str = "EVIDENCE_SOURCE_PURGED";
/// Warning code: the purge is committed but its physical erasure has not completed.
pub const PURGE_INCOMPLETE: &str = "PURGE_INCOMPLETE";
/// Warning code on every purge acknowledgement: earlier copies still hold the bytes.
pub const EARLIER_COPIES_RETAIN_CONTENT: &str = "EARLIER_COPIES_RETAIN_CONTENT";

pub(super) fn artifact_purge(
    service: &Service,
    call: &Call,
    input: ArtifactPurgeInput,
) -> Result<Output, ServiceError> {
    validate::id("artifact_id", &input.artifact_id)?;
    purge(
        service,
        call,
        EntityKind::Artifact,
        input.artifact_id.into(),
        input.reason,
        input.actor,
    )
}

pub(super) fn claim_purge(service: &Service, call: &Call, input: ClaimPurgeInput) -> Result<Output, ServiceError> {
    validate::id("claim_id", &input.claim_id)?;
    purge(
        service,
        call,
        EntityKind::Claim,
        input.claim_id.into(),
        input.reason,
        input.actor,
    )
}

/// How the transaction ended.
enum Step {
    Purged,
    Replayed,
    AlreadyPurged,
}

fn purge(
    service: &Service,
    call: &Call,
    kind: EntityKind,
    entity_id: String,
    reason: String,
    actor: Option<String>,
) -> Result<Output, ServiceError> {
    validate::bounded("reason", &reason, limits::MAX_REASON_BYTES)?;
    validate::optional_bounded("actor", actor.as_deref(), limits::MAX_ACTOR_BYTES)?;
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    let entity_type = match kind {
        EntityKind::Artifact => EntityType::Artifact,
        EntityKind::Claim => EntityType::Claim,
    };
    service.grant().check_entity(service, entity_type, &entity_id)?;
    let request = PurgeRequest {
        kind,
        entity_id: entity_id.clone(),
        reason,
        actor,
        purged_by: ambient.clone(),
    };
    let purged = service.store().run_purge(entity_id.clone(), move |tx| {
        let owner = store_purge::owner_of(tx.db(), kind, &request.entity_id)?;
        scope::check_write(kind.as_str(), &request.entity_id, &owner, &ambient)?;
        if idempotency::check(tx.db(), &key)?.is_some() {
            return Ok(Step::Replayed);
        }
        let (tombstone, fresh) = store_purge::purge(tx, &request)?;
        idempotency::record(tx, &key, &json!({"purge": request.entity_id}), tombstone.commit_seq)?;
        Ok(if fresh { Step::Purged } else { Step::AlreadyPurged })
    })?;
    let (tombstone, step, failure) = (purged.tombstone, purged.outcome, purged.scrub_failure);
    service.store().note_purges();
    // The in-memory vocabulary may hold erased terms: rebuild it from the scrubbed index.
    service.vocabulary().invalidate();
    let commit_seq = tombstone.commit_seq;
    let notice = if service.store().is_embedded() {
        EARLIER_COPIES_NOTICE
    } else {
        EARLIER_COPIES_NOTICE_POSTGRES
    };
    let result = crate::service::to_value(purge_result(&tombstone, matches!(step, Step::Purged), notice))?;
    let mut output = Output::mutation(Written { result, commit_seq });
    output.warnings.push(Warning {
        code: EARLIER_COPIES_RETAIN_CONTENT.to_owned(),
        message: notice.to_owned(),
    });
    if !tombstone.erased {
        let waiting = if service.store().is_embedded() {
            "a reader (such as a running export) held an older snapshot, or a concurrent write pinned shared content"
        } else {
            "another session, prepared transaction or replication slot held a snapshot from before the purge, or the tables could not be rewritten"
        };
        let cause = failure.map_or_else(
            || waiting.to_owned(),
            |error| format!("the physical erasure failed: {error}"),
        );
        output.warnings.push(Warning {
            code: PURGE_INCOMPLETE.to_owned(),
            message: format!(
                "{} {entity_id} is purged, but its bytes may remain in the database files until the erasure completes ({cause}). Purge again, or restart the daemon, to finish.",
                kind.as_str()
            ),
        });
    }
    Ok(output)
}

/// The wire acknowledgement of a tombstone.
fn purge_result(tombstone: &Tombstone, created: bool, earlier_copies: &'static str) -> PurgeResult {
    let citing = tombstone
        .citing
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(CitingClaim {
                        claim_id: item.get("claim_id")?.as_str()?.into(),
                        revision_id: item.get("revision_id")?.as_str()?.into(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    PurgeResult {
        entity_type: tombstone.entity_type,
        entity_id: tombstone.entity_id.clone(),
        state: "purged".into(),
        reason: tombstone.reason.clone(),
        actor: tombstone.actor.clone(),
        purged_by: owner_context(&tombstone.purged_by),
        purged_at: db_to_wire(&tombstone.purged_at),
        purge_commit_seq: tombstone.commit_seq,
        revisions: tombstone
            .revisions
            .iter()
            .map(|r| PurgedRevisionRecord {
                revision_id: r.revision_id.as_str().into(),
                revision_number: r.revision_number,
                size_bytes: r.size_bytes,
                blake3: r.blake3.clone(),
                erased_fields: r.erased_fields.split(',').map(str::to_owned).collect(),
            })
            .collect(),
        citing_claims: citing,
        erasure: tombstone.erasure.clone(),
        erasure_complete: tombstone.erased,
        earlier_copies: earlier_copies.into(),
        commit_seq: tombstone.commit_seq,
        created,
    }
}

/// Adds the purge warnings to an operation's output (a no-op while the store has no
/// tombstone, and for the purges themselves, which say what they erased). Mutations get
/// them too: a replayed acknowledgement of a purged revision shows its erased fields.
pub(super) fn annotate(service: &Service, op: Operation, mut output: Output) -> Output {
    if !service.store().has_purges() || matches!(op, Operation::ArtifactPurge | Operation::ClaimPurge) {
        return output;
    }
    let mut ids = BTreeSet::new();
    collect_ids(&output.result, &mut ids);
    if ids.is_empty() {
        return output;
    }
    let ids: Vec<String> = ids.into_iter().collect();
    // Warnings name only entities the grant may see (an echoed query may hold any id).
    let grant = service.grant();
    let Ok(mentions) = service.store().read_db(|db| {
        let mut mentions = tombstone::mentions(db, &ids)?;
        if grant.is_restricted() {
            let mut seen = Vec::with_capacity(mentions.len());
            for mention in mentions {
                let visible = match EntityType::parse(&mention.entity_type) {
                    Some(entity_type) => grant.sees_entity(db, entity_type, &mention.entity_id)?,
                    None => false,
                };
                if visible {
                    seen.push(mention);
                }
            }
            mentions = seen;
        }
        Ok(mentions)
    }) else {
        return output;
    };
    if mentions.is_empty() {
        return output;
    }
    let purged: BTreeSet<&str> = mentions.iter().map(|m| m.id.as_str()).collect();
    let mut citing = Vec::new();
    collect_citations(&output.result, &purged, &mut citing);
    for (claim, revision, artifact, artifact_revision) in citing {
        output.warnings.push(Warning {
            code: EVIDENCE_SOURCE_PURGED.to_owned(),
            message: format!(
                "claim {claim} revision {revision} cites artifact {artifact} revision {artifact_revision}, whose content was purged; the source is erased and the span can no longer be checked"
            ),
        });
    }
    let mut entities = BTreeSet::new();
    for mention in &mentions {
        if entities.insert(mention.entity_id.as_str()) {
            output.warnings.push(Warning {
                code: PURGED.to_owned(),
                message: format!(
                    "{} {} was purged at {}; its content is erased and only its tombstone remains",
                    mention.entity_type,
                    mention.entity_id,
                    db_to_wire(&mention.purged_at)
                ),
            });
        }
    }
    output
}

/// Every string in `value` shaped like an entity or revision id.
fn collect_ids(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(text) => {
            for prefix in ["art_", "arev_", "clm_", "crev_"] {
                if text.starts_with(prefix) && text.len() <= 64 {
                    out.insert(text.clone());
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_ids(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_ids(item, out)),
        _ => {}
    }
}

/// `(claim, claim revision, artifact, artifact revision)` for every evidence locator of a
/// claim record in `value` that names a purged artifact revision.
fn collect_citations(value: &Value, purged: &BTreeSet<&str>, out: &mut Vec<(String, String, String, String)>) {
    match value {
        Value::Object(map) => {
            if let (Some(Value::String(claim)), Some(Value::String(revision)), Some(Value::Array(evidence))) =
                (map.get("claim_id"), map.get("revision_id"), map.get("evidence"))
            {
                for locator in evidence {
                    let (Some(artifact), Some(artifact_revision)) = (
                        locator.get("artifact_id").and_then(Value::as_str),
                        locator.get("revision_id").and_then(Value::as_str),
                    ) else {
                        continue;
                    };
                    let entry = (
                        claim.clone(),
                        revision.clone(),
                        artifact.to_owned(),
                        artifact_revision.to_owned(),
                    );
                    if purged.contains(artifact_revision) && !out.contains(&entry) {
                        out.push(entry);
                    }
                }
            }
            map.values().for_each(|item| collect_citations(item, purged, out));
        }
        Value::Array(items) => items.iter().for_each(|item| collect_citations(item, purged, out)),
        _ => {}
    }
}
