//! Store rows to wire records: the one place rows of `store::{artifact, claim, relation}`
//! become their protocol records, and owners become contexts. (Retrieval results are
//! assembled from rows in `ops/search.rs`, `ops/recall.rs` and `ops/context_build.rs`.)

use serde_json::Value;

use crate::protocol::AmbientContext;
use crate::protocol::artifact::{ArtifactContent, ArtifactRecord};
use crate::protocol::claim::{ClaimRecord, EvidenceLocator};
use crate::protocol::relation::RelationRecord;
use crate::store::artifact::ArtifactRow;
use crate::store::claim::{ClaimRow, EvidenceRef};
use crate::store::relation::RelationRow;
use crate::store::scope::Owner;
use crate::timefmt::db_to_wire;

/// The owner context of an entity as it appears in records (no pins).
pub fn owner_context(owner: &Owner) -> AmbientContext {
    AmbientContext {
        workspace_id: owner.workspace_id.clone(),
        project_id: owner.project_id.clone(),
        task_id: owner.task_id.clone(),
        component: owner.component.clone(),
        pins: Vec::new(),
    }
}

/// The owner scope of an ambient context.
pub fn context_owner(context: &AmbientContext) -> Owner {
    Owner {
        workspace_id: context.workspace_id.clone(),
        project_id: context.project_id.clone(),
        task_id: context.task_id.clone(),
        component: context.component.clone(),
    }
}

pub fn artifact_record(row: &ArtifactRow, content: Option<ArtifactContent>) -> ArtifactRecord {
    ArtifactRecord {
        artifact_id: row.artifact_id.clone(),
        revision_id: row.revision_id.clone(),
        revision_number: row.revision_number,
        kind: row.kind.clone(),
        title: row.title.clone(),
        media_type: row.media_type.clone(),
        content,
        blob_hash: row.blob_hash.clone(),
        size_bytes: row.size_bytes,
        status: row.status,
        context: owner_context(&row.owner),
        provenance: serde_json::from_str(&row.provenance_json).unwrap_or(Value::Object(Default::default())),
        actor: row.actor.clone(),
        created_at: db_to_wire(&row.created_at),
        revision_created_at: db_to_wire(&row.revision_created_at),
        revision_commit_seq: row.revision_commit_seq,
        forgotten_reason: row.forgotten_reason.clone(),
    }
}

/// An evidence locator as stored, for the wire (the two are one type).
pub fn evidence_locator(evidence: &EvidenceRef) -> EvidenceLocator {
    evidence.clone()
}

pub fn claim_record(row: &ClaimRow) -> ClaimRecord {
    ClaimRecord {
        claim_id: row.claim_id.clone(),
        revision_id: row.revision_id.clone(),
        revision_number: row.revision_number,
        claim_type: row.claim_type,
        status: row.status,
        statement: row.statement.clone(),
        confidence: row.confidence,
        evidence: row.evidence(),
        valid_from: row.valid_from.as_deref().map(db_to_wire),
        valid_until: row.valid_until.as_deref().map(db_to_wire),
        context: owner_context(&row.owner),
        actor: row.actor.clone(),
        created_at: db_to_wire(&row.created_at),
        revision_created_at: db_to_wire(&row.revision_created_at),
        revision_commit_seq: row.revision_commit_seq,
        retraction_reason: row.retraction_reason.clone(),
    }
}

/// Stored metadata or provenance JSON as a value; a malformed row reads as `{}`.
pub fn stored_object(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::Object(Default::default()))
}

pub fn relation_record(row: &RelationRow) -> RelationRecord {
    RelationRecord {
        relation_id: row.relation_id.clone(),
        source_type: row.source_type,
        source_id: row.source_id.clone(),
        relation: row.relation,
        target_type: row.target_type,
        target_id: row.target_id.clone(),
        metadata: stored_object(&row.metadata_json),
        context: owner_context(&row.owner),
        created_at: db_to_wire(&row.created_at),
        relation_commit_seq: row.commit_seq,
    }
}
