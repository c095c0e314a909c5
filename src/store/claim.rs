//! Claims and their immutable revisions: typed assertions with evidence locators, a
//! validity window and a lifecycle (`active`, `superseded`, `retracted`).
//!
//! **Invariant:** `conflicted` is never stored. The presented status of a non-terminal claim
//! is `conflicted` exactly when an open conflict case references its current revision; the
//! [`COLUMNS`] projection derives it on every read.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::conflict;
use super::error::{StoreError, StoreResult};
use super::scope::{Owner, owner_from_row};
use super::{Tx, artifact, new_id};

/// One evidence locator: an exact artifact revision and an optional `[start, end)` byte span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceRef {
    pub artifact_id: String,
    pub revision_id: String,
    pub start_byte: Option<u64>,
    pub end_byte: Option<u64>,
}

impl EvidenceRef {
    fn to_json(&self) -> Value {
        let mut obj = json!({"artifact_id": self.artifact_id, "revision_id": self.revision_id});
        if let (Some(start), Some(end)) = (self.start_byte, self.end_byte) {
            obj["start_byte"] = json!(start);
            obj["end_byte"] = json!(end);
        }
        obj
    }

    fn from_json(value: &Value) -> Option<EvidenceRef> {
        Some(EvidenceRef {
            artifact_id: value.get("artifact_id")?.as_str()?.to_owned(),
            revision_id: value.get("revision_id")?.as_str()?.to_owned(),
            start_byte: value.get("start_byte").and_then(Value::as_u64),
            end_byte: value.get("end_byte").and_then(Value::as_u64),
        })
    }
}

/// Serializes evidence for storage.
pub fn evidence_to_json(evidence: &[EvidenceRef]) -> String {
    Value::Array(evidence.iter().map(EvidenceRef::to_json).collect()).to_string()
}

/// Parses stored evidence; `None` when the stored JSON is malformed.
pub fn evidence_from_json(text: &str) -> Option<Vec<EvidenceRef>> {
    let value: Value = serde_json::from_str(text).ok()?;
    value.as_array()?.iter().map(EvidenceRef::from_json).collect()
}

/// One claim revision joined with its claim's current lifecycle.
#[derive(Clone, Debug)]
pub struct ClaimRow {
    pub seq: i64,
    pub claim_id: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub claim_type: String,
    /// The presented status: `conflicted` derived from open cases.
    pub status: String,
    /// The stored lifecycle: `active`, `superseded` or `retracted`.
    pub lifecycle: String,
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
    pub current_revision_id: String,
    /// Whether `claim.purge` erased this revision's statement (see [`super::purge`]).
    pub purged: bool,
}

impl ClaimRow {
    pub fn is_current_revision(&self) -> bool {
        self.revision_id == self.current_revision_id
    }

    pub fn is_terminal(&self) -> bool {
        self.lifecycle != "active"
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
pub fn columns() -> String {
    format!(
        "r.seq, c.id, r.id, r.revision_number, c.claim_type, {PRESENTED_STATUS}, c.status, r.statement, r.confidence, \
         r.evidence_json, c.valid_from, c.valid_until, c.workspace_id, c.project_id, c.task_id, c.component, r.actor, \
         c.created_at, r.created_at, r.commit_seq, c.retraction_reason, c.current_revision_id, r.purged"
    )
}

/// Maps a row selected with [`columns`].
pub fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ClaimRow> {
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
        owner: owner_from_row(r, 12)?,
        actor: r.get(16)?,
        created_at: r.get(17)?,
        revision_created_at: r.get(18)?,
        revision_commit_seq: r.get(19)?,
        retraction_reason: r.get(20)?,
        current_revision_id: r.get(21)?,
        purged: r.get(22)?,
    })
}

/// Loads one revision (the current one when `revision_id` is `None`).
pub fn get(conn: &Connection, claim_id: &str, revision_id: Option<&str>) -> StoreResult<Option<ClaimRow>> {
    let columns = columns();
    Ok(match revision_id {
        None => conn
            .query_row(
                &format!("SELECT {columns} FROM claims c JOIN claim_revisions r ON r.id = c.current_revision_id WHERE c.id = ?1"),
                [claim_id],
                row,
            )
            .optional()?,
        Some(rev) => conn
            .query_row(
                &format!("SELECT {columns} FROM claim_revisions r JOIN claims c ON c.id = r.claim_id WHERE c.id = ?1 AND r.id = ?2"),
                params![claim_id, rev],
                row,
            )
            .optional()?,
    })
}

/// Loads a revision by revision id alone.
pub fn get_revision(conn: &Connection, revision_id: &str) -> StoreResult<Option<ClaimRow>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {} FROM claim_revisions r JOIN claims c ON c.id = r.claim_id WHERE r.id = ?1",
                columns()
            ),
            [revision_id],
            row,
        )
        .optional()?)
}

/// Loads the current revision or fails with `NOT_FOUND`.
pub fn head(conn: &Connection, claim_id: &str) -> StoreResult<ClaimRow> {
    get(conn, claim_id, None)?.ok_or_else(|| StoreError::NotFound(format!("claim {claim_id}")))
}

/// Checks that every locator names an existing artifact revision and a span inside it.
pub fn validate_evidence(conn: &Connection, evidence: &[EvidenceRef]) -> StoreResult<()> {
    for (index, locator) in evidence.iter().enumerate() {
        let found: Option<(i64, bool)> = conn
            .query_row(
                "SELECT blob_size, purged FROM artifact_revisions WHERE artifact_id = ?1 AND id = ?2",
                params![locator.artifact_id, locator.revision_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
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

/// A new claim revision, validated by the caller.
#[derive(Clone, Debug)]
pub struct NewClaimRevision {
    pub statement: String,
    pub confidence: Option<f64>,
    pub evidence: Vec<EvidenceRef>,
    pub actor: Option<String>,
}

fn insert_revision(
    tx: &Tx<'_>,
    claim_id: &str,
    number: i64,
    new: &NewClaimRevision,
    commit_seq: i64,
) -> StoreResult<String> {
    let revision_id = new_id("crev");
    tx.conn().execute(
        "INSERT INTO claim_revisions (id, claim_id, revision_number, statement, confidence, evidence_json, actor, created_at, commit_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            revision_id,
            claim_id,
            number,
            new.statement,
            new.confidence,
            evidence_to_json(&new.evidence),
            new.actor,
            tx.now_db(),
            commit_seq
        ],
    )?;
    let seq = tx.conn().last_insert_rowid();
    tx.conn().execute(
        "INSERT INTO claim_fts (rowid, statement) VALUES (?1, ?2)",
        params![seq, new.statement],
    )?;
    Ok(revision_id)
}

/// Records a new claim with its first revision.
pub fn assert(
    tx: &Tx<'_>,
    owner: &Owner,
    claim_type: &str,
    new: &NewClaimRevision,
    valid_from: Option<&str>,
    valid_until: Option<&str>,
) -> StoreResult<(ClaimRow, i64)> {
    validate_evidence(tx.conn(), &new.evidence)?;
    let commit_seq = tx.next_commit_seq()?;
    let claim_id = new_id("clm");
    let now = tx.now_db();
    tx.conn().execute(
        "INSERT INTO claims (id, workspace_id, project_id, task_id, component, claim_type, current_revision_id, status,
             valid_from, valid_until, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, '', 'active', ?7, ?8, ?9, ?9)",
        params![
            claim_id,
            owner.workspace_id,
            owner.project_id,
            owner.task_id,
            owner.component,
            claim_type,
            valid_from,
            valid_until,
            now
        ],
    )?;
    let revision_id = insert_revision(tx, &claim_id, 1, new, commit_seq)?;
    tx.conn().execute(
        "UPDATE claims SET current_revision_id = ?1 WHERE id = ?2",
        params![revision_id, claim_id],
    )?;
    tx.append_event(
        commit_seq,
        "claim.assert",
        "claim",
        &claim_id,
        Some(&revision_id),
        new.actor.as_deref(),
        // The claim and revision rows hold the type and the evidence: nothing to add.
        &json!({}),
    )?;
    Ok((head(tx.conn(), &claim_id)?, commit_seq))
}

/// Appends a revision (scope, `if_revision` and lifecycle already checked) and reassesses
/// the claim's contradictions atomically.
pub fn revise(tx: &Tx<'_>, current: &ClaimRow, new: &NewClaimRevision) -> StoreResult<(ClaimRow, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    let revision_id = insert_revision(tx, &current.claim_id, current.revision_number + 1, new, commit_seq)?;
    tx.conn().execute(
        "UPDATE claims SET current_revision_id = ?1, updated_at = ?2 WHERE id = ?3",
        params![revision_id, tx.now_db(), current.claim_id],
    )?;
    tx.append_event(
        commit_seq,
        "claim.revise",
        "claim",
        &current.claim_id,
        Some(&revision_id),
        new.actor.as_deref(),
        &json!({"previous_revision_id": current.revision_id}),
    )?;
    conflict::reassess_after_revision(tx, &current.claim_id, commit_seq)?;
    Ok((head(tx.conn(), &current.claim_id)?, commit_seq))
}

/// Retracts a claim (history kept) and resolves its open conflict cases.
pub fn retract(tx: &Tx<'_>, current: &ClaimRow, reason: &str) -> StoreResult<(ClaimRow, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    tx.conn().execute(
        "UPDATE claims SET status = 'retracted', retraction_reason = ?1, updated_at = ?2 WHERE id = ?3",
        params![reason, tx.now_db(), current.claim_id],
    )?;
    tx.append_event(
        commit_seq,
        "claim.retract",
        "claim",
        &current.claim_id,
        Some(&current.revision_id),
        None,
        &json!({"reason": reason}),
    )?;
    conflict::resolve_for_claim(tx, &current.claim_id, "claim retracted", commit_seq)?;
    Ok((head(tx.conn(), &current.claim_id)?, commit_seq))
}

/// Marks a claim superseded (used by `relation.put supersedes`) and resolves its open cases.
pub fn supersede(tx: &Tx<'_>, claim_id: &str, commit_seq: i64) -> StoreResult<()> {
    tx.conn().execute(
        "UPDATE claims SET status = 'superseded', updated_at = ?1 WHERE id = ?2 AND status = 'active'",
        params![tx.now_db(), claim_id],
    )?;
    conflict::resolve_for_claim(tx, claim_id, "claim superseded", commit_seq)
}

/// One page of revisions, newest first, strictly below `before` when given.
pub fn history(
    conn: &Connection,
    claim_id: &str,
    limit: usize,
    before: Option<i64>,
) -> StoreResult<(Vec<ClaimRow>, bool)> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM claim_revisions r JOIN claims c ON c.id = r.claim_id
         WHERE c.id = ?1 AND r.revision_number < ?2 ORDER BY r.revision_number DESC LIMIT ?3",
        columns()
    ))?;
    let mut rows = stmt
        .query_map(params![claim_id, before.unwrap_or(i64::MAX), limit as i64 + 1], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    Ok((rows, truncated))
}

/// Whether a claim exists.
pub fn exists(conn: &Connection, claim_id: &str) -> StoreResult<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM claims WHERE id = ?1", [claim_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The artifact revision a locator names, for previews and verification.
pub fn evidence_revision(conn: &Connection, locator: &EvidenceRef) -> StoreResult<Option<artifact::ArtifactRow>> {
    artifact::get(conn, &locator.artifact_id, Some(&locator.revision_id))
}
