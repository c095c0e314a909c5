//! Claims and their immutable revisions: typed assertions with evidence locators, a
//! validity window and a lifecycle (`active`, `superseded`, `retracted`).
//!
//! **Invariant:** `conflicted` is never stored. The presented status of a non-terminal claim
//! is `conflicted` exactly when an open conflict case references its current revision; the
//! [`columns`] projection derives it on every read.

use serde_json::Value;

use super::conflict;
use super::db::{Db, Row};
use super::error::{StoreError, StoreResult};
use super::revisioned::{self, RevisionRow, Revisioned};
use super::scope::{Owner, owner_from_db_row};
use super::{Tx, artifact};
use crate::protocol::Operation;
use crate::protocol::claim::{ClaimStatus, ClaimType, EvidenceLocator};
use crate::protocol::ids::{ClaimId, ClaimRevisionId};
use crate::protocol::relation::EntityType;

/// One evidence locator: an exact artifact revision and an optional `[start, end)` byte span.
pub type EvidenceRef = EvidenceLocator;

/// Serializes evidence for storage (keys sorted, a span only when both ends are set).
pub fn evidence_to_json(evidence: &[EvidenceRef]) -> String {
    let items = evidence.iter().map(|locator| {
        let mut item = serde_json::Map::new();
        item.insert("artifact_id".to_owned(), Value::from(locator.artifact_id.as_str()));
        item.insert("revision_id".to_owned(), Value::from(locator.revision_id.as_str()));
        if let (Some(start), Some(end)) = (locator.start_byte, locator.end_byte) {
            item.insert("start_byte".to_owned(), Value::from(start));
            item.insert("end_byte".to_owned(), Value::from(end));
        }
        Value::Object(item)
    });
    Value::Array(items.collect()).to_string()
}

/// Parses stored evidence; `None` when the stored JSON is malformed.
pub fn evidence_from_json(text: &str) -> Option<Vec<EvidenceRef>> {
    let value: Value = serde_json::from_str(text).ok()?;
    value
        .as_array()?
        .iter()
        .map(|item| {
            Some(EvidenceRef {
                artifact_id: item.get("artifact_id")?.as_str()?.into(),
                revision_id: item.get("revision_id")?.as_str()?.into(),
                start_byte: item.get("start_byte").and_then(Value::as_u64),
                end_byte: item.get("end_byte").and_then(Value::as_u64),
            })
        })
        .collect()
}

/// One claim revision joined with its claim's current lifecycle.
#[derive(Clone, Debug)]
pub struct ClaimRow {
    pub seq: i64,
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
    pub revision_number: i64,
    pub claim_type: ClaimType,
    /// The presented status: `conflicted` derived from open cases.
    pub status: ClaimStatus,
    /// The stored lifecycle: `active`, `superseded` or `retracted` (never `conflicted`).
    pub lifecycle: ClaimStatus,
    pub statement: String,
    pub confidence: Option<f64>,
    pub evidence_json: String,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub owner: Owner,
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    pub retraction_reason: Option<String>,
    pub current_revision_id: ClaimRevisionId,
    /// Whether `claim.purge` erased this revision's statement (see [`super::purge`]).
    pub purged: bool,
}

impl RevisionRow for ClaimRow {
    fn entity_id(&self) -> &str {
        &self.claim_id
    }

    fn revision_id(&self) -> &str {
        &self.revision_id
    }

    fn revision_number(&self) -> i64 {
        self.revision_number
    }

    fn owner(&self) -> &Owner {
        &self.owner
    }

    fn seq(&self) -> i64 {
        self.seq
    }

    fn current_revision_id(&self) -> &str {
        &self.current_revision_id
    }

    fn purged(&self) -> bool {
        self.purged
    }
}

impl ClaimRow {
    pub fn is_current_revision(&self) -> bool {
        self.revision_id == self.current_revision_id
    }

    pub fn is_terminal(&self) -> bool {
        self.lifecycle.is_terminal()
    }

    pub fn evidence(&self) -> Vec<EvidenceRef> {
        evidence_from_json(&self.evidence_json).unwrap_or_default()
    }
}

/// The SQL expression deriving the presented status of claim `c`.
pub const PRESENTED_STATUS: &str = "CASE WHEN c.status = 'active' AND EXISTS (
        SELECT 1 FROM conflict_cases cc WHERE cc.state = 'open' AND (
            (cc.source_claim_id = c.id AND cc.source_revision_id = c.current_revision_id) OR
            (cc.target_claim_id = c.id AND cc.target_revision_id = c.current_revision_id)))
     THEN 'conflicted' ELSE c.status END";

/// The columns [`row`] expects, with `r` = claim_revisions and `c` = claims.
pub fn columns() -> &'static str {
    static COLUMNS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "r.seq, c.id, r.id, r.revision_number, c.claim_type, {PRESENTED_STATUS}, c.status, r.statement, r.confidence, \
             r.evidence_json, c.valid_from, c.valid_until, c.workspace_id, c.project_id, c.task_id, c.component, r.actor, \
             c.created_at, r.created_at, r.commit_seq, c.retraction_reason, c.current_revision_id, r.purged"
        )
    });
    &COLUMNS
}

/// Maps a `rusqlite` row selected with [`columns`] (store code not yet written against
/// [`Db`]).
pub fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ClaimRow> {
    db_row(&Row::Sqlite(r)).map_err(super::db::into_rusqlite)
}

/// Maps a row selected with [`columns`].
pub fn db_row(r: &Row<'_>) -> StoreResult<ClaimRow> {
    Ok(ClaimRow {
        seq: r.get(0)?,
        claim_id: r.get(1)?,
        revision_id: r.get(2)?,
        revision_number: r.get(3)?,
        claim_type: r.get(4)?,
        status: r.get(5)?,
        lifecycle: r.get(6)?,
        statement: r.get(7)?,
        confidence: r.get(8)?,
        evidence_json: r.get(9)?,
        valid_from: r.get(10)?,
        valid_until: r.get(11)?,
        owner: owner_from_db_row(r, 12)?,
        actor: r.get(16)?,
        created_at: r.get(17)?,
        revision_created_at: r.get(18)?,
        revision_commit_seq: r.get(19)?,
        retraction_reason: r.get(20)?,
        current_revision_id: r.get(21)?,
        purged: r.get(22)?,
    })
}

/// A new claim revision, validated by the caller.
#[derive(Clone, Debug)]
pub struct NewClaimRevision {
    pub statement: String,
    pub confidence: Option<f64>,
    pub evidence: Vec<EvidenceRef>,
    pub actor: Option<String>,
    /// The semantic projection of this revision, when the service has a model.
    pub vectors: Option<super::vectors::Projection>,
}

/// Claims as a [`Revisioned`] entity.
pub struct Claims;

impl Revisioned for Claims {
    type Row = ClaimRow;
    type NewRevision = NewClaimRevision;

    const ENTITY: EntityType = EntityType::Claim;
    const TABLE: &'static str = "claims";
    const ALIAS: &'static str = "c";
    const REVISIONS: &'static str = "claim_revisions";
    const PARENT: &'static str = "claim_id";
    const CREATE: Operation = Operation::ClaimAssert;
    const REVISE: Operation = Operation::ClaimRevise;
    const CLOSE: Operation = Operation::ClaimRetract;
    const CLOSED_STATUS: &'static str = ClaimStatus::Retracted.as_str();
    const CLOSED_REASON: &'static str = "retraction_reason";

    fn columns() -> &'static str {
        columns()
    }

    fn row(r: &Row<'_>) -> StoreResult<ClaimRow> {
        db_row(r)
    }

    fn actor(new: &NewClaimRevision) -> Option<&str> {
        new.actor.as_deref()
    }

    fn insert_revision(
        tx: &Tx<'_>,
        claim_id: &str,
        number: i64,
        new: &NewClaimRevision,
        commit_seq: i64,
    ) -> StoreResult<String> {
        let revision_id = ClaimRevisionId::generate();
        let db = tx.db();
        let seq: i64 = db.query_one(
            "INSERT INTO claim_revisions (id, claim_id, revision_number, statement, confidence, evidence_json, actor, created_at, commit_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING seq",
            &[
                &revision_id,
                &claim_id,
                &number,
                &new.statement,
                &new.confidence,
                &evidence_to_json(&new.evidence),
                &new.actor,
                &tx.now_db(),
                &commit_seq,
            ],
            |r| r.get(0),
        )?;
        super::fts::insert_claim(db, seq, &new.statement)?;
        if let Some(vectors) = &new.vectors {
            super::vectors::write(db, EntityType::Claim, seq, vectors)?;
        }
        Ok(revision_id.into_string())
    }

    /// A revision makes the claim's open cases stale and opens new ones over the current
    /// revisions, atomically.
    fn after_revise(tx: &Tx<'_>, claim_id: &str, commit_seq: i64) -> StoreResult<()> {
        conflict::reassess_after_revision(tx, claim_id, commit_seq)
    }

    fn after_close(tx: &Tx<'_>, claim_id: &str, commit_seq: i64) -> StoreResult<()> {
        conflict::resolve_for_claim(tx, claim_id, "claim retracted", commit_seq)
    }
}

/// Loads one revision (the current one when `revision_id` is `None`).
pub fn get<'c>(db: impl Into<Db<'c>>, claim_id: &str, revision_id: Option<&str>) -> StoreResult<Option<ClaimRow>> {
    revisioned::get::<Claims>(db, claim_id, revision_id)
}

/// Loads a revision by revision id alone.
pub fn get_revision<'c>(db: impl Into<Db<'c>>, revision_id: &str) -> StoreResult<Option<ClaimRow>> {
    revisioned::get_revision::<Claims>(db, revision_id)
}

/// Loads the current revision or fails with `NOT_FOUND`.
pub fn head<'c>(db: impl Into<Db<'c>>, claim_id: &str) -> StoreResult<ClaimRow> {
    revisioned::head::<Claims>(db, claim_id)
}

/// Checks that every locator names an existing artifact revision and a span inside it.
pub fn validate_evidence<'c>(db: impl Into<Db<'c>>, evidence: &[EvidenceRef]) -> StoreResult<()> {
    let db = db.into();
    for (index, locator) in evidence.iter().enumerate() {
        let found: Option<(i64, bool)> = db.query_opt(
            "SELECT blob_size, purged FROM artifact_revisions WHERE artifact_id = ?1 AND id = ?2",
            &[&locator.artifact_id, &locator.revision_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let Some((size, purged)) = found else {
            return Err(StoreError::NotFound(format!(
                "evidence {} revision {}",
                locator.artifact_id, locator.revision_id
            )));
        };
        if purged {
            return Err(StoreError::Invalid(format!(
                "evidence[{index}] cites artifact {} revision {}, whose content was purged",
                locator.artifact_id, locator.revision_id
            )));
        }
        if let (Some(start), Some(end)) = (locator.start_byte, locator.end_byte)
            && start >= end
        {
            return Err(StoreError::Invalid(format!(
                "evidence[{index}] requires start_byte < end_byte, got {start}-{end}"
            )));
        }
        if let (Some(_), Some(end)) = (locator.start_byte, locator.end_byte)
            && end > size as u64
        {
            return Err(StoreError::Invalid(format!(
                "evidence[{index}].end_byte {end} is past the end of revision {} ({size} bytes)",
                locator.revision_id
            )));
        }
    }
    Ok(())
}

/// Records a new claim with its first revision.
pub fn assert(
    tx: &Tx<'_>,
    owner: &Owner,
    claim_type: ClaimType,
    new: &NewClaimRevision,
    valid_from: Option<&str>,
    valid_until: Option<&str>,
) -> StoreResult<(ClaimRow, i64)> {
    validate_evidence(tx.db(), &new.evidence)?;
    let claim_id = ClaimId::generate();
    revisioned::create::<Claims>(tx, &claim_id, new, |tx| {
        let now = tx.now_db();
        tx.db().execute(
            "INSERT INTO claims (id, workspace_id, project_id, task_id, component, claim_type, current_revision_id, status,
                 valid_from, valid_until, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, '', ?7, ?8, ?9, ?10, ?10)",
            &[
                &claim_id,
                &owner.workspace_id,
                &owner.project_id,
                &owner.task_id,
                &owner.component,
                &claim_type,
                &ClaimStatus::Active,
                &valid_from,
                &valid_until,
                &now,
            ],
        )?;
        Ok(())
    })
}

/// Marks a claim superseded (used by `relation.put supersedes`) and resolves its open cases.
pub fn supersede(tx: &Tx<'_>, claim_id: &str, commit_seq: i64) -> StoreResult<()> {
    tx.db().execute(
        "UPDATE claims SET status = ?1, updated_at = ?2 WHERE id = ?3 AND status = ?4",
        &[&ClaimStatus::Superseded, &tx.now_db(), &claim_id, &ClaimStatus::Active],
    )?;
    conflict::resolve_for_claim(tx, claim_id, "claim superseded", commit_seq)
}

/// The artifact revision a locator names, for previews and verification.
pub fn evidence_revision<'c>(
    db: impl Into<Db<'c>>,
    locator: &EvidenceRef,
) -> StoreResult<Option<artifact::ArtifactRow>> {
    artifact::get(db, &locator.artifact_id, Some(&locator.revision_id))
}
