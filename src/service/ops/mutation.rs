//! The shared tail of every mutation: record the acknowledgement under its idempotency key,
//! or hand back the original acknowledgement on an identical replay.
//!
//! A replay record stores a compact recipe, not the acknowledgement JSON: the revision (or
//! relation) the mutation produced plus the lifecycle fields that may change later (status
//! and its reason). Revisions and relations are immutable, so the original acknowledgement
//! is rebuilt exactly from the recipe; this keeps a replay record under a hundred bytes
//! instead of a full copy of every acknowledgement.

use serde_json::{Value, json};

use crate::protocol::artifact::{ArtifactStatus, MutationResult};
use crate::protocol::claim::ClaimStatus;
use crate::service::Written;
use crate::service::convert::{artifact_record, claim_record, relation_record};
use crate::store::artifact::{self as store_artifact, ArtifactRow};
use crate::store::claim::{self as store_claim, ClaimRow};
use crate::store::idempotency::{self, IdempotencyKey};
use crate::store::relation::{self as store_relation, RelationRow};
use crate::store::{StoreError, StoreResult, Tx};

/// What a mutation acknowledged: the row its result record is built from.
pub(crate) enum Acknowledged {
    Artifact(ArtifactRow),
    Claim(ClaimRow),
    Relation(RelationRow),
}

impl Acknowledged {
    fn record(&self) -> StoreResult<Value> {
        let value = match self {
            Acknowledged::Artifact(row) => serde_json::to_value(artifact_record(row, None)),
            Acknowledged::Claim(row) => serde_json::to_value(claim_record(row)),
            Acknowledged::Relation(row) => serde_json::to_value(relation_record(row)),
        };
        value.map_err(StoreError::Json)
    }

    /// The compact recipe from which [`rebuild`] reproduces [`Acknowledged::record`].
    fn recipe(&self) -> Value {
        match self {
            Acknowledged::Artifact(row) => json!({
                "artifact_revision": row.revision_id, "status": row.status, "reason": row.forgotten_reason,
            }),
            Acknowledged::Claim(row) => json!({
                "claim_revision": row.revision_id, "status": row.status, "reason": row.retraction_reason,
            }),
            Acknowledged::Relation(row) => json!({"relation": row.relation_id}),
        }
    }
}

fn broken(recipe: &Value) -> StoreError {
    StoreError::Integrity(format!(
        "idempotency record {recipe} names no stored revision or relation"
    ))
}

/// Rebuilds the record an earlier mutation acknowledged, with its lifecycle as it was then.
fn rebuild(tx: &Tx<'_>, recipe: &Value) -> StoreResult<Value> {
    let text = |key: &str| recipe.get(key).and_then(Value::as_str).map(str::to_owned);
    let status = |key: &str| recipe.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let acknowledged = if let Some(revision) = text("artifact_revision") {
        let mut row = store_artifact::get_revision(tx.conn(), &revision)?.ok_or_else(|| broken(recipe))?;
        row.status = ArtifactStatus::parse(&status("status")).ok_or_else(|| broken(recipe))?;
        row.forgotten_reason = text("reason");
        Acknowledged::Artifact(row)
    } else if let Some(revision) = text("claim_revision") {
        let mut row = store_claim::get_revision(tx.conn(), &revision)?.ok_or_else(|| broken(recipe))?;
        row.status = ClaimStatus::parse(&status("status")).ok_or_else(|| broken(recipe))?;
        row.retraction_reason = text("reason");
        Acknowledged::Claim(row)
    } else if let Some(relation) = text("relation") {
        Acknowledged::Relation(store_relation::get(tx.conn(), &relation)?.ok_or_else(|| broken(recipe))?)
    } else {
        return Err(broken(recipe));
    };
    acknowledged.record()
}

fn result(record: Value, commit_seq: i64, created: bool) -> StoreResult<Written> {
    let result = serde_json::to_value(MutationResult {
        record,
        commit_seq,
        created,
    })
    .map_err(StoreError::Json)?;
    Ok(Written { result, commit_seq })
}

/// Records a fresh mutation's acknowledgement (`created: true`).
pub(crate) fn record(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    acknowledged: Acknowledged,
    commit_seq: i64,
) -> StoreResult<Written> {
    record_as(tx, key, acknowledged, commit_seq, true)
}

/// Records the acknowledgement of a request that found its effect already in place (an
/// identical relation re-put under a new key): the original record and `commit_seq`,
/// `created: false`. Binding the key keeps a later replay of it stable.
pub(crate) fn record_unchanged(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    acknowledged: Acknowledged,
    original_commit_seq: i64,
) -> StoreResult<Written> {
    record_as(tx, key, acknowledged, original_commit_seq, false)
}

fn record_as(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    acknowledged: Acknowledged,
    commit_seq: i64,
    created: bool,
) -> StoreResult<Written> {
    idempotency::record(tx, key, &acknowledged.recipe(), commit_seq)?;
    result(acknowledged.record()?, commit_seq, created)
}

/// Checks for a replay of `key` inside the mutation's transaction; a replay returns the
/// original acknowledgement with `created: false` and the original `commit_seq`.
pub(crate) fn check(tx: &Tx<'_>, key: &IdempotencyKey) -> StoreResult<Option<Written>> {
    match idempotency::check(tx.conn(), key)? {
        None => Ok(None),
        Some(replay) => Ok(Some(result(rebuild(tx, &replay.result)?, replay.commit_seq, false)?)),
    }
}
