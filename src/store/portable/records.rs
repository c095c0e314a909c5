//! The record types of the export format and the one mapping between them and store rows.
//!
//! Each record is one JSON object per line; field order is declaration order, every field
//! is always present (absent values are `null`), timestamps are RFC 3339 UTC with `Z`, and
//! stored JSON (provenance, metadata, evidence, payloads, replay recipes) is embedded as
//! JSON. Readers here select by id or stream a whole table in the export order; the
//! importer writes rows back with the same columns.
//!
//! **Invariant:** a row read here and written back by the importer reads identically.

use crate::store::db::{Db, Param, Row};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::StoreResult;
use crate::store::scope::Owner;
use crate::timefmt;

use super::ArchiveError;

/// The owner (or creator) context of an entity, relation or purge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerRecord {
    pub workspace_id: String,
    pub project_id: String,
    pub task_id: Option<String>,
    pub component: Option<String>,
}

impl OwnerRecord {
    pub fn from_owner(owner: &Owner) -> OwnerRecord {
        OwnerRecord {
            workspace_id: owner.workspace_id.clone(),
            project_id: owner.project_id.clone(),
            task_id: owner.task_id.clone(),
            component: owner.component.clone(),
        }
    }

    fn read(r: &Row<'_>, first: usize) -> StoreResult<OwnerRecord> {
        Ok(OwnerRecord {
            workspace_id: r.get(first)?,
            project_id: r.get(first + 1)?,
            task_id: r.get(first + 2)?,
            component: r.get(first + 3)?,
        })
    }
}

/// `events.jsonl`: one logical mutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRecord {
    pub commit_seq: i64,
    pub event_id: String,
    pub event_type: String,
    pub entity_type: String,
    pub entity_id: String,
    pub revision_id: Option<String>,
    pub actor: Option<String>,
    pub payload: Value,
    pub created_at: String,
}

/// `artifacts.jsonl`: an artifact's identity, owner and current lifecycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRecord {
    pub artifact_id: String,
    pub context: OwnerRecord,
    pub kind: String,
    pub current_revision_id: String,
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
    pub forgotten_reason: Option<String>,
}

/// `artifact_revisions.jsonl`: one immutable revision; its bytes are the blob file named by
/// `blob_hash` (none for a purged revision).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRevisionRecord {
    pub revision_id: String,
    pub artifact_id: String,
    pub revision_number: i64,
    pub title: String,
    pub media_type: String,
    pub blob_hash: String,
    pub size_bytes: u64,
    pub body_indexed: bool,
    pub provenance: Value,
    pub actor: Option<String>,
    pub created_at: String,
    pub commit_seq: i64,
    pub purged: bool,
}

/// `claims.jsonl`: a claim's identity, type, owner, validity and current lifecycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRecord {
    pub claim_id: String,
    pub context: OwnerRecord,
    pub claim_type: String,
    pub current_revision_id: String,
    pub status: String,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub retraction_reason: Option<String>,
}

/// `claim_revisions.jsonl`: one immutable claim revision with its evidence locators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRevisionRecord {
    pub revision_id: String,
    pub claim_id: String,
    pub revision_number: i64,
    pub statement: String,
    pub confidence: Option<f64>,
    pub evidence: Value,
    pub actor: Option<String>,
    pub created_at: String,
    pub commit_seq: i64,
    pub purged: bool,
}

/// `relations.jsonl`: one typed edge with its creator context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationRecord {
    pub relation_id: String,
    pub source_type: String,
    pub source_id: String,
    pub relation: String,
    pub target_type: String,
    pub target_id: String,
    pub metadata: Value,
    pub context: OwnerRecord,
    pub created_at: String,
    pub commit_seq: i64,
}

/// `conflict_cases.jsonl`: one revision-bound conflict case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConflictCaseRecord {
    pub case_id: String,
    pub relation_id: String,
    pub source_claim_id: String,
    pub source_revision_id: String,
    pub target_claim_id: String,
    pub target_revision_id: String,
    pub state: String,
    pub state_reason: Option<String>,
    pub opened_at: String,
    pub updated_at: String,
    pub opened_commit_seq: i64,
}

/// `conflict_events.jsonl`: one transition of a conflict case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConflictEventRecord {
    pub event_id: String,
    pub case_id: String,
    pub event_type: String,
    pub source_revision_id: String,
    pub target_revision_id: String,
    pub reason: String,
    pub operation_commit_seq: i64,
    pub created_at: String,
}

/// `replays.jsonl`: one idempotency record (the namespaced key, the request fingerprint
/// and the recipe its acknowledgement is rebuilt from).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRecord {
    pub scoped_key: String,
    pub request_hash: String,
    pub operation: String,
    pub recipe: Value,
    pub commit_seq: i64,
    pub created_at: String,
}

/// One erased revision inside a tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgedRevisionRecord {
    pub revision_id: String,
    pub revision_number: i64,
    pub size_bytes: u64,
    pub blake3: String,
    pub erased_fields: String,
}

/// `tombstones.jsonl`: what remains of one purged entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TombstoneRecord {
    pub entity_type: String,
    pub entity_id: String,
    pub reason: String,
    pub actor: Option<String>,
    pub purged_by: OwnerRecord,
    pub purged_at: String,
    pub commit_seq: i64,
    pub citing: Value,
    pub erasure: Value,
    pub revisions: Vec<PurgedRevisionRecord>,
}

/// A database timestamp in the archive's form.
pub fn wire_time(db: String) -> String {
    timefmt::db_to_wire(&db)
}

/// An archive timestamp in the database's form.
pub fn db_time(wire: &str, what: &str) -> Result<String, ArchiveError> {
    timefmt::parse_rfc3339(wire)
        .filter(|_| wire.ends_with('Z'))
        .map(|t| timefmt::to_db(&t))
        .ok_or_else(|| ArchiveError::Malformed(format!("{what}: {wire:?} is not an RFC 3339 UTC timestamp")))
}

/// An optional archive timestamp in the database's form.
pub fn db_time_opt(wire: Option<&str>, what: &str) -> Result<Option<String>, ArchiveError> {
    wire.map(|w| db_time(w, what)).transpose()
}

/// Stored JSON text as a value (malformed text is carried as a string, never dropped).
fn stored_json(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

pub const EVENT_SELECT: &str = "SELECT e.commit_seq, e.event_id, e.event_type, e.entity_type, e.entity_id, e.revision_id, \
     e.actor, e.payload_json, e.created_at FROM events e";

pub fn event(r: &Row<'_>) -> StoreResult<EventRecord> {
    Ok(EventRecord {
        commit_seq: r.get(0)?,
        event_id: r.get(1)?,
        event_type: r.get(2)?,
        entity_type: r.get(3)?,
        entity_id: r.get(4)?,
        revision_id: r.get(5)?,
        actor: r.get(6)?,
        payload: stored_json(r.get(7)?),
        created_at: wire_time(r.get(8)?),
    })
}

pub const ARTIFACT_SELECT: &str = "SELECT a.id, a.workspace_id, a.project_id, a.task_id, a.component, a.kind, \
     a.current_revision_id, a.status, a.created_at, a.updated_at, a.forgotten_reason FROM artifacts a";

pub fn artifact(r: &Row<'_>) -> StoreResult<ArtifactRecord> {
    Ok(ArtifactRecord {
        artifact_id: r.get(0)?,
        context: OwnerRecord::read(r, 1)?,
        kind: r.get(5)?,
        current_revision_id: r.get(6)?,
        status: r.get(7)?,
        created_at: wire_time(r.get(8)?),
        updated_at: wire_time(r.get(9)?),
        forgotten_reason: r.get(10)?,
    })
}

/// Also selects `inline_blob` and `inline_encoding` (columns 13 and 14) for the exporter.
pub const ARTIFACT_REVISION_SELECT: &str = "SELECT r.id, r.artifact_id, r.revision_number, r.title, r.media_type, \
     CASE WHEN r.purged = 1 THEN COALESCE((SELECT p.blake3 FROM purged_revisions p WHERE p.revision_id = r.id), r.blob_hash) ELSE r.blob_hash END, \
     r.blob_size, r.body_indexed, r.provenance_json, r.actor, r.created_at, r.commit_seq, r.purged, \
     r.inline_blob, r.inline_encoding FROM artifact_revisions r";

pub fn artifact_revision(r: &Row<'_>) -> StoreResult<ArtifactRevisionRecord> {
    Ok(ArtifactRevisionRecord {
        revision_id: r.get(0)?,
        artifact_id: r.get(1)?,
        revision_number: r.get(2)?,
        title: r.get(3)?,
        media_type: r.get(4)?,
        blob_hash: r.get(5)?,
        size_bytes: r.get::<i64>(6)?.max(0) as u64,
        body_indexed: r.get(7)?,
        provenance: stored_json(r.get(8)?),
        actor: r.get(9)?,
        created_at: wire_time(r.get(10)?),
        commit_seq: r.get(11)?,
        purged: r.get(12)?,
    })
}

pub const CLAIM_SELECT: &str = "SELECT c.id, c.workspace_id, c.project_id, c.task_id, c.component, c.claim_type, \
     c.current_revision_id, c.status, c.valid_from, c.valid_until, c.created_at, c.updated_at, c.retraction_reason \
     FROM claims c";

pub fn claim(r: &Row<'_>) -> StoreResult<ClaimRecord> {
    Ok(ClaimRecord {
        claim_id: r.get(0)?,
        context: OwnerRecord::read(r, 1)?,
        claim_type: r.get(5)?,
        current_revision_id: r.get(6)?,
        status: r.get(7)?,
        valid_from: r.get::<Option<String>>(8)?.map(wire_time),
        valid_until: r.get::<Option<String>>(9)?.map(wire_time),
        created_at: wire_time(r.get(10)?),
        updated_at: wire_time(r.get(11)?),
        retraction_reason: r.get(12)?,
    })
}

pub const CLAIM_REVISION_SELECT: &str = "SELECT r.id, r.claim_id, r.revision_number, r.statement, r.confidence, \
     r.evidence_json, r.actor, r.created_at, r.commit_seq, r.purged FROM claim_revisions r";

pub fn claim_revision(r: &Row<'_>) -> StoreResult<ClaimRevisionRecord> {
    Ok(ClaimRevisionRecord {
        revision_id: r.get(0)?,
        claim_id: r.get(1)?,
        revision_number: r.get(2)?,
        statement: r.get(3)?,
        confidence: r.get(4)?,
        evidence: stored_json(r.get(5)?),
        actor: r.get(6)?,
        created_at: wire_time(r.get(7)?),
        commit_seq: r.get(8)?,
        purged: r.get(9)?,
    })
}

pub const RELATION_SELECT: &str = "SELECT rel.id, rel.source_type, rel.source_id, rel.relation, rel.target_type, \
     rel.target_id, rel.metadata_json, rel.workspace_id, rel.project_id, rel.task_id, rel.component, rel.created_at, \
     rel.commit_seq FROM relations rel";

pub fn relation(r: &Row<'_>) -> StoreResult<RelationRecord> {
    Ok(RelationRecord {
        relation_id: r.get(0)?,
        source_type: r.get(1)?,
        source_id: r.get(2)?,
        relation: r.get(3)?,
        target_type: r.get(4)?,
        target_id: r.get(5)?,
        metadata: stored_json(r.get(6)?),
        context: OwnerRecord::read(r, 7)?,
        created_at: wire_time(r.get(11)?),
        commit_seq: r.get(12)?,
    })
}

pub const CONFLICT_CASE_SELECT: &str = "SELECT cc.case_id, cc.relation_id, cc.source_claim_id, cc.source_revision_id, \
     cc.target_claim_id, cc.target_revision_id, cc.state, cc.state_reason, cc.opened_at, cc.updated_at, \
     cc.opened_commit_seq FROM conflict_cases cc";

pub fn conflict_case(r: &Row<'_>) -> StoreResult<ConflictCaseRecord> {
    Ok(ConflictCaseRecord {
        case_id: r.get(0)?,
        relation_id: r.get(1)?,
        source_claim_id: r.get(2)?,
        source_revision_id: r.get(3)?,
        target_claim_id: r.get(4)?,
        target_revision_id: r.get(5)?,
        state: r.get(6)?,
        state_reason: r.get(7)?,
        opened_at: wire_time(r.get(8)?),
        updated_at: wire_time(r.get(9)?),
        opened_commit_seq: r.get(10)?,
    })
}

pub const CONFLICT_EVENT_SELECT: &str = "SELECT ce.event_id, ce.case_id, ce.event_type, ce.source_revision_id, \
     ce.target_revision_id, ce.reason, ce.operation_commit_seq, ce.created_at FROM conflict_events ce";

pub fn conflict_event(r: &Row<'_>) -> StoreResult<ConflictEventRecord> {
    Ok(ConflictEventRecord {
        event_id: r.get(0)?,
        case_id: r.get(1)?,
        event_type: r.get(2)?,
        source_revision_id: r.get(3)?,
        target_revision_id: r.get(4)?,
        reason: r.get(5)?,
        operation_commit_seq: r.get(6)?,
        created_at: wire_time(r.get(7)?),
    })
}

pub const REPLAY_SELECT: &str =
    "SELECT i.scoped_key, i.request_hash, i.operation, i.replay_json, i.commit_seq, i.created_at FROM idempotency i";

pub fn replay(r: &Row<'_>) -> StoreResult<ReplayRecord> {
    Ok(ReplayRecord {
        scoped_key: r.get(0)?,
        request_hash: r.get(1)?,
        operation: r.get(2)?,
        recipe: stored_json(r.get(3)?),
        commit_seq: r.get(4)?,
        created_at: wire_time(r.get(5)?),
    })
}

pub const TOMBSTONE_SELECT: &str = "SELECT p.entity_type, p.entity_id, p.reason, p.actor, p.workspace_id, p.project_id, \
     p.task_id, p.component, p.purged_at, p.commit_seq, p.citing_json, p.erasure_json FROM purges p";

/// A tombstone row without its revisions (see [`tombstone_revisions`]).
pub fn tombstone(r: &Row<'_>) -> StoreResult<TombstoneRecord> {
    Ok(TombstoneRecord {
        entity_type: r.get(0)?,
        entity_id: r.get(1)?,
        reason: r.get(2)?,
        actor: r.get(3)?,
        purged_by: OwnerRecord::read(r, 4)?,
        purged_at: wire_time(r.get(8)?),
        commit_seq: r.get(9)?,
        citing: stored_json(r.get(10)?),
        erasure: stored_json(r.get(11)?),
        revisions: Vec::new(),
    })
}

/// The erased revisions of one tombstone, oldest first.
pub fn tombstone_revisions(db: Db<'_>, entity_id: &str) -> StoreResult<Vec<PurgedRevisionRecord>> {
    db.query_all(
        "SELECT revision_id, revision_number, size_bytes, blake3, erased_fields FROM purged_revisions
         WHERE entity_id = ?1 ORDER BY revision_number",
        &[&entity_id],
        |r| {
            Ok(PurgedRevisionRecord {
                revision_id: r.get(0)?,
                revision_number: r.get(1)?,
                size_bytes: r.get::<i64>(2)?.max(0) as u64,
                blake3: r.get(3)?,
                erased_fields: r.get(4)?,
            })
        },
    )
}

/// Reads one record by its key with `select` + `WHERE <key> = ?1`.
pub fn one<T>(
    db: Db<'_>,
    select: &str,
    key: &str,
    id: &dyn Param,
    map: fn(&Row<'_>) -> StoreResult<T>,
) -> StoreResult<Option<T>> {
    db.query_opt(&format!("{select} WHERE {key} = ?1"), &[id], map)
}
