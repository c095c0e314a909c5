//! Provable erasure: the logical purge of an artifact or claim and the physical scrub that
//! removes its bytes from the store's files, on either backend.
//!
//! A purge runs in two steps ([`Store::run_purge`]):
//! 1. [`purge`], one implementation over [`Db`] inside one transaction (on the embedded store
//!    alone on the writer connection with `secure_delete` on; on PostgreSQL as a mutation of
//!    the front end's writer, under the database-wide commit lock): the tombstone rows are
//!    written, every revision's content columns are blanked (the immutability triggers allow
//!    exactly that update once the tombstone exists), the revisions' full-text rows are
//!    deleted (every FTS5 table, or `artifact_search` / `claim_search`) with their semantic
//!    vectors (`store::vectors`), forget/retract
//!    reasons are removed from the entity row, its event payloads and the replay records
//!    naming its revisions, the entity becomes `forgotten` / `retracted` (a claim's open
//!    conflict cases are resolved) and one `artifact.purge` / `claim.purge` event takes the
//!    next `commit_seq`. Only the SQL text of the JSON edits and the claim size differs.
//! 2. the scrub, after the commit: [`scrub`] (`sqlite.rs`: CAS objects, FTS5 `optimize`,
//!    `VACUUM`, WAL truncation) or [`pg::scrub`] (blob rows and chunks, `VACUUM (FULL)` of the
//!    tables that held the bytes). Only then is the tombstone marked `erased`; an interrupted
//!    scrub is finished by [`Store::resume_purges`] when the store is next opened, or by
//!    purging again.
//!
//! **Invariants:** a purge never deletes a revision, event or replay row (history stays
//! coherent and `commit_seq` dense); content shared with a live revision stays (it is that
//! revision's content) and is reported; nothing here can un-purge.

use serde_json::{Value, json};

use super::error::{StoreError, StoreResult};
use super::scope::{Owner, owner_from_db_row};
use super::tombstone::{self, ARTIFACT_ERASED_FIELDS, CLAIM_ERASED_FIELDS, PURGED_REASON, Tombstone};
use super::{Db, Event, EventEntity, Store, Tx, conflict};
use crate::blob::Digest;
use crate::protocol::Operation;

/// The kind of entity a purge erases (the protocol's entity type).
pub use crate::protocol::relation::EntityType as EntityKind;

/// What a purge needs to know about its entity's event and full-text tables (the entity's
/// tables are named in `sql.rs`).
impl EntityKind {
    /// The operation recorded on the purge's event.
    fn purge_operation(self) -> Operation {
        match self {
            EntityKind::Artifact => Operation::ArtifactPurge,
            EntityKind::Claim => Operation::ClaimPurge,
        }
    }

    fn event_entity(self) -> EventEntity {
        match self {
            EntityKind::Artifact => EventEntity::Artifact,
            EntityKind::Claim => EventEntity::Claim,
        }
    }

    /// FTS5 projections of this kind's revisions are named `<kind>_…` and keyed by the
    /// revision's `seq`.
    fn fts_prefix(self) -> &'static str {
        match self {
            EntityKind::Artifact => "artifact_",
            EntityKind::Claim => "claim_",
        }
    }
}

/// One purge as requested.
#[derive(Clone, Debug)]
pub struct PurgeRequest {
    pub kind: EntityKind,
    pub entity_id: String,
    pub reason: String,
    pub actor: Option<String>,
    /// The purging request's ambient context (recorded as "who").
    pub purged_by: Owner,
}

/// Logically purges one entity inside the caller's transaction (either backend): writes the
/// tombstone, blanks every revision, drops its index rows and scrubs the reasons that may
/// quote it. Returns the tombstone; an entity purged before is returned as it is (`false`).
/// Existence and write scope are the caller's to check first.
pub fn purge(tx: &Tx<'_>, request: &PurgeRequest) -> StoreResult<(Tombstone, bool)> {
    let db = tx.db();
    if let Some(existing) = tombstone::load(db, &request.entity_id)? {
        return Ok((existing, false));
    }
    let kind = request.kind;
    let entity_id = request.entity_id.as_str();
    let head_revision = current_revision(db, kind, entity_id)?;
    let commit_seq = tx.next_commit_seq()?;
    let now = tx.now_db();
    let revisions = erased_revisions(db, kind, entity_id)?;
    let citing = match kind {
        EntityKind::Artifact => citing_claims(db, entity_id)?,
        EntityKind::Claim => json!([]),
    };
    let owner = &request.purged_by;
    db.execute(
        "INSERT INTO purges (entity_id, entity_type, reason, actor, workspace_id, project_id, task_id, component,
             purged_at, commit_seq, citing_json, erasure_json, erased)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, '{}', 0)",
        &[
            &entity_id,
            &kind.as_str(),
            &request.reason,
            &request.actor,
            &owner.workspace_id,
            &owner.project_id,
            &owner.task_id,
            &owner.component,
            &now,
            &commit_seq,
            &citing.to_string(),
        ],
    )?;
    let fields = match kind {
        EntityKind::Artifact => ARTIFACT_ERASED_FIELDS,
        EntityKind::Claim => CLAIM_ERASED_FIELDS,
    };
    let key = tombstone::key(db)?;
    for revision in &revisions {
        db.execute(
            "INSERT INTO purged_revisions (revision_id, entity_id, revision_number, size_bytes, blake3, erased_fields, content_blake3)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                &revision.id,
                &entity_id,
                &revision.number,
                &(revision.size as i64),
                &tombstone::keyed_digest(&key, &revision.blake3),
                &fields,
                &revision.blake3,
            ],
        )?;
    }
    match kind {
        EntityKind::Artifact => db.execute(
            "UPDATE artifact_revisions SET title = '', inline_blob = NULL, inline_encoding = 0, provenance_json = '{}', purged = 1
             WHERE artifact_id = ?1 AND purged = 0",
            &[&entity_id],
        )?,
        EntityKind::Claim => db.execute(
            "UPDATE claim_revisions SET statement = '', purged = 1 WHERE claim_id = ?1 AND purged = 0",
            &[&entity_id],
        )?,
    };
    let removed_index_rows = delete_index_rows(db, kind, entity_id)?;
    let removed_vector_rows = super::vectors::drop_entity(db, kind, entity_id)?;
    match kind {
        EntityKind::Artifact => {
            db.execute(
                "UPDATE artifacts SET status = 'forgotten', forgotten_reason = ?1, updated_at = ?2 WHERE id = ?3",
                &[&PURGED_REASON, &now, &entity_id],
            )?;
        }
        EntityKind::Claim => {
            db.execute(
                "UPDATE claims SET
                     retraction_reason = CASE WHEN status = 'superseded' THEN NULL ELSE ?1 END,
                     status = CASE WHEN status = 'active' THEN 'retracted' ELSE status END,
                     updated_at = ?2
                 WHERE id = ?3",
                &[&PURGED_REASON, &now, &entity_id],
            )?;
            conflict::resolve_for_claim(tx, entity_id, "claim purged", commit_seq)?;
        }
    }
    let scrubbed_event_payloads = db.execute(
        db.pick(
            "UPDATE events SET payload_json = json_remove(payload_json, '$.reason')
             WHERE entity_type = ?1 AND entity_id = ?2 AND json_extract(payload_json, '$.reason') IS NOT NULL",
            "UPDATE events SET payload_json = CAST(CAST(payload_json AS jsonb) - 'reason' AS text)
             WHERE entity_type = ?1 AND entity_id = ?2 AND CAST(payload_json AS jsonb) ->> 'reason' IS NOT NULL",
        ),
        &[&kind.as_str(), &entity_id],
    )?;
    let scrubbed_replay_records = db.execute(
        db.pick(
            "UPDATE idempotency SET replay_json = json_remove(replay_json, '$.reason')
             WHERE json_extract(replay_json, '$.reason') IS NOT NULL
               AND (json_extract(replay_json, '$.artifact_revision') IN (SELECT revision_id FROM purged_revisions WHERE entity_id = ?1)
                 OR json_extract(replay_json, '$.claim_revision') IN (SELECT revision_id FROM purged_revisions WHERE entity_id = ?1))",
            "UPDATE idempotency SET replay_json = CAST(CAST(replay_json AS jsonb) - 'reason' AS text)
             WHERE CAST(replay_json AS jsonb) ->> 'reason' IS NOT NULL
               AND ((CAST(replay_json AS jsonb) ->> 'artifact_revision') COLLATE \"C\" IN (SELECT revision_id FROM purged_revisions WHERE entity_id = ?1)
                 OR (CAST(replay_json AS jsonb) ->> 'claim_revision') COLLATE \"C\" IN (SELECT revision_id FROM purged_revisions WHERE entity_id = ?1))",
        ),
        &[&entity_id],
    )?;
    tx.append_event(&Event {
        commit_seq,
        operation: kind.purge_operation(),
        entity: kind.event_entity(),
        entity_id,
        revision_id: Some(&head_revision),
        actor: request.actor.as_deref(),
        payload: json!({}),
    })?;
    let shared_content_revisions: i64 = match kind {
        EntityKind::Artifact => db.query_one(
            "SELECT count(*) FROM artifact_revisions r WHERE r.purged = 0
               AND r.blob_hash IN (SELECT content_blake3 FROM purged_revisions WHERE entity_id = ?1)",
            &[&entity_id],
            |r| r.get(0),
        )?,
        EntityKind::Claim => 0,
    };
    let erasure = json!({
        "removed_index_rows": removed_index_rows,
        "removed_vector_rows": removed_vector_rows,
        "scrubbed_event_payloads": scrubbed_event_payloads,
        "scrubbed_replay_records": scrubbed_replay_records,
        "shared_content_revisions": shared_content_revisions,
    });
    db.execute(
        "UPDATE purges SET erasure_json = ?1 WHERE entity_id = ?2",
        &[&erasure.to_string(), &entity_id],
    )?;
    let tombstone = tombstone::load(db, entity_id)?
        .ok_or_else(|| StoreError::Internal(format!("the tombstone of {entity_id} vanished")))?;
    Ok((tombstone, true))
}

/// Deletes the full-text rows of the entity's revisions: its rows in every FTS5 table of
/// its kind (whoever added the table), or in `artifact_search` / `claim_search`.
fn delete_index_rows(db: Db<'_>, kind: EntityKind, entity_id: &str) -> StoreResult<u64> {
    let table = kind.revisions_table();
    let owner_column = kind.owner_column();
    let tables = match db {
        Db::Sqlite(conn) => tombstone::fts_tables(conn)?
            .into_iter()
            .filter(|fts| fts.starts_with(kind.fts_prefix()))
            .map(|fts| (fts, "rowid"))
            .collect(),
        Db::Postgres(_) => vec![(format!("{}search", kind.fts_prefix()), "seq")],
    };
    let mut removed = 0;
    for (fts, key) in tables {
        removed += db.execute(
            &format!("DELETE FROM \"{fts}\" WHERE {key} IN (SELECT seq FROM {table} WHERE {owner_column} = ?1)"),
            &[&entity_id],
        )?;
    }
    Ok(removed)
}

fn current_revision(db: Db<'_>, kind: EntityKind, entity_id: &str) -> StoreResult<String> {
    let sql = match kind {
        EntityKind::Artifact => "SELECT current_revision_id FROM artifacts WHERE id = ?1",
        EntityKind::Claim => "SELECT current_revision_id FROM claims WHERE id = ?1",
    };
    db.query_opt(sql, &[&entity_id], |r| r.get(0))?
        .ok_or_else(|| StoreError::NotFound(format!("{} {entity_id}", kind.as_str())))
}

/// The owner of an artifact or claim, or `NOT_FOUND`.
pub fn owner_of(db: Db<'_>, kind: EntityKind, entity_id: &str) -> StoreResult<Owner> {
    let sql = match kind {
        EntityKind::Artifact => "SELECT workspace_id, project_id, task_id, component FROM artifacts WHERE id = ?1",
        EntityKind::Claim => "SELECT workspace_id, project_id, task_id, component FROM claims WHERE id = ?1",
    };
    db.query_opt(sql, &[&entity_id], |r| owner_from_db_row(r, 0))?
        .ok_or_else(|| StoreError::NotFound(format!("{} {entity_id}", kind.as_str())))
}

struct ErasedRevision {
    id: String,
    number: i64,
    size: u64,
    blake3: String,
}

fn erased_revisions(db: Db<'_>, kind: EntityKind, entity_id: &str) -> StoreResult<Vec<ErasedRevision>> {
    let sql = match kind {
        EntityKind::Artifact => {
            "SELECT id, revision_number, blob_size, blob_hash FROM artifact_revisions WHERE artifact_id = ?1 ORDER BY revision_number"
        }
        EntityKind::Claim => db.pick(
            "SELECT id, revision_number, length(CAST(statement AS BLOB)), statement FROM claim_revisions WHERE claim_id = ?1 ORDER BY revision_number",
            "SELECT id, revision_number, octet_length(statement), statement FROM claim_revisions WHERE claim_id = ?1 ORDER BY revision_number",
        ),
    };
    db.query_all(sql, &[&entity_id], |r| {
        let fourth: String = r.get(3)?;
        Ok(ErasedRevision {
            id: r.get(0)?,
            number: r.get(1)?,
            size: r.get::<i64>(2)?.max(0) as u64,
            blake3: match kind {
                EntityKind::Artifact => fourth,
                EntityKind::Claim => Digest::of(fourth.as_bytes()).to_hex(),
            },
        })
    })
}

/// The (unpurged) claim revisions whose evidence cites any revision of `artifact_id`.
fn citing_claims(db: Db<'_>, artifact_id: &str) -> StoreResult<Value> {
    let sql = db.pick(
        "SELECT DISTINCT r.claim_id, r.id, r.seq FROM claim_revisions r, json_each(CASE WHEN json_valid(r.evidence_json) THEN r.evidence_json ELSE '[]' END) e
         WHERE r.purged = 0 AND json_extract(e.value, '$.artifact_id') = ?1 ORDER BY r.seq",
        "SELECT DISTINCT r.claim_id, r.id, r.seq FROM claim_revisions r, jsonb_array_elements(CAST(r.evidence_json AS jsonb)) e(value)
         WHERE r.purged = 0 AND e.value ->> 'artifact_id' = ?1 ORDER BY r.seq",
    );
    let rows = db.query_all(sql, &[&artifact_id], |r| {
        Ok(json!({"claim_id": r.get::<String>(0)?, "revision_id": r.get::<String>(1)?}))
    })?;
    Ok(Value::Array(rows))
}

/// A purge as the store ran it: what the caller's transaction returned, the tombstone after
/// the scrub, and why the scrub failed, if it did (the purge itself is committed then).
#[derive(Debug)]
pub struct Purged<T> {
    pub outcome: T,
    pub tombstone: Tombstone,
    pub scrub_failure: Option<String>,
}

impl Store {
    /// Runs a purge of `entity_id`: `logical` (the checks, [`purge`] and the replay record)
    /// in one transaction, then the physical scrub unless the tombstone is already erased.
    /// On the embedded store both run alone on the writer connection (`secure_delete` on);
    /// on PostgreSQL `logical` is an ordinary mutation of this front end's writer (under the
    /// database-wide commit lock) and the scrub is [`pg::scrub`]. The tombstone must exist
    /// once `logical` succeeded.
    pub fn run_purge<T, F>(&self, entity_id: String, logical: F) -> StoreResult<Purged<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let missing =
            |entity_id: &str| StoreError::Internal(format!("the tombstone of {entity_id} is missing after its purge"));
        if let Some(pg_store) = self.postgres() {
            let outcome = pg_store.write(logical)?;
            let load = |store: &Store| {
                store
                    .read_db(|db| tombstone::load(db, &entity_id))?
                    .ok_or_else(|| missing(&entity_id))
            };
            let mut tombstone = load(self)?;
            let mut scrub_failure = None;
            if !tombstone.erased {
                if let Err(error) = pg::scrub(pg_store, &entity_id) {
                    scrub_failure = Some(error.to_string());
                }
                tombstone = load(self)?;
            }
            return Ok(Purged {
                outcome,
                tombstone,
                scrub_failure,
            });
        }
        let blobs = self.blobs()?.clone();
        self.exclusive(move |conn| {
            let outcome = with_secure_delete(conn, || in_transaction(conn, logical))?;
            let mut tombstone = tombstone::load(conn, &entity_id)?.ok_or_else(|| missing(&entity_id))?;
            let mut scrub_failure = None;
            if !tombstone.erased {
                // The purge is committed: a failing scrub (a full disk during VACUUM) leaves
                // the tombstone incomplete and is reported, not turned into an error that
                // would hide the committed purge from the caller.
                if let Err(error) = scrub(conn, &blobs, &entity_id) {
                    scrub_failure = Some(error.to_string());
                }
                tombstone = tombstone::load(conn, &entity_id)?.ok_or_else(|| missing(&entity_id))?;
            }
            Ok(Purged {
                outcome,
                tombstone,
                scrub_failure,
            })
        })
    }

    /// Finishes the physical erasure of every purge that was interrupted before it
    /// completed (run when the store is opened, on either backend). Returns the entities
    /// scrubbed.
    pub fn resume_purges(&self) -> StoreResult<Vec<String>> {
        let pending = self.read_db(|db| tombstone::incomplete(db))?;
        if pending.is_empty() {
            return Ok(pending);
        }
        if let Some(pg_store) = self.postgres() {
            for entity in &pending {
                pg::scrub(pg_store, entity)?;
            }
            return Ok(pending);
        }
        let blobs = self.blobs()?.clone();
        self.exclusive(move |conn| {
            for entity in &pending {
                scrub(conn, &blobs, entity)?;
            }
            Ok(pending)
        })
    }
}

pub mod pg;
mod sqlite;

pub use sqlite::{in_transaction, scrub, with_secure_delete};

#[cfg(test)]
mod tests;
