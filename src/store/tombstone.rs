//! Purge tombstones: what remains of a purged artifact or claim (`purges` and
//! `purged_revisions`, migration 0002), and the checks `verify` runs on them.
//!
//! A tombstone records who purged the entity (the request's ambient context and actor),
//! when, why, and for every erased revision its number, size and a keyed digest of the
//! erased bytes, so history, citations and verification stay coherent without the content.
//!
//! The digest is BLAKE3 keyed with the store's own secret (`store_secrets.tombstone_key`,
//! made by the migration that introduced it and never exported) over the hex BLAKE3 digest of
//! the erased bytes ([`keyed_digest`]). Without the key, a guess cannot be checked against a
//! tombstone: storing the guessed text again yields its plain `blob_hash`, which matches
//! nothing. The plain digest stays inside the database (`content_blake3`) for the scrub and
//! `verify`, which check the tombstone against it under the key; whoever reads the database
//! holds the key too, so it reveals nothing more there. A purged artifact revision reads (on
//! the wire and in exports) with the keyed digest as its `blob_hash`.
//!
//! **Invariant:** nothing here writes; tombstones are written only by [`super::purge`] and by
//! an import that reproduces them.

use crate::protocol::relation::EntityType;
use std::path::Path;

use super::Db;
use rusqlite::Connection;
use serde_json::Value;

use super::error::{StoreError, StoreResult};
use super::scope::{Owner, owner_from_db_row};
use crate::blob::Digest;

/// Issue kinds `verify` reports about tombstones.
pub mod kind {
    /// A purged revision and its tombstone disagree (missing rows, content left in a column).
    pub const TOMBSTONE: &str = "tombstone";
    /// Erased content is still present: an index row or a CAS object of a purged revision.
    pub const PURGED_CONTENT_PRESENT: &str = "purged_content_present";
    /// The physical erasure of a purge has not completed (database not yet rewritten).
    pub const PURGE_INCOMPLETE: &str = "purge_incomplete";
}

/// The columns blanked on a purged artifact revision.
pub const ARTIFACT_ERASED_FIELDS: &str = "content,title,provenance";
/// The columns blanked on a purged claim revision.
pub const CLAIM_ERASED_FIELDS: &str = "statement";
/// The lifecycle reason a purge leaves on the entity row.
pub const PURGED_REASON: &str = "purged";

/// One erased revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurgedRevision {
    pub revision_id: String,
    pub revision_number: i64,
    /// Size of the erased content (artifact bytes, or the statement as UTF-8).
    pub size_bytes: u64,
    /// The keyed digest of the erased content ([`keyed_digest`]), lowercase hex (an
    /// imported tombstone keeps the digest its source store gave it).
    pub blake3: String,
    pub erased_fields: String,
}

/// The name of the tombstone key in `store_secrets`.
const TOMBSTONE_KEY: &str = "tombstone_key";

/// The store's tombstone key.
pub fn key(db: Db<'_>) -> StoreResult<[u8; 32]> {
    let hex: Option<String> = db.query_opt(
        "SELECT value FROM store_secrets WHERE name = ?1",
        &[&TOMBSTONE_KEY],
        |r| r.get(0),
    )?;
    let hex = hex.ok_or_else(|| StoreError::Internal("the store has no tombstone key".to_owned()))?;
    let mut key = [0u8; 32];
    let valid = hex.len() == 64
        && key.iter_mut().enumerate().all(|(i, byte)| {
            u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map(|value| *byte = value)
                .is_ok()
        });
    if !valid {
        return Err(StoreError::Internal(
            "the store's tombstone key is malformed".to_owned(),
        ));
    }
    Ok(key)
}

/// The tombstone digest of content whose BLAKE3 is `plain_hex`: BLAKE3 keyed with `key` over
/// the hex digest, lowercase hex.
pub fn keyed_digest(key: &[u8; 32], plain_hex: &str) -> String {
    blake3::keyed_hash(key, plain_hex.as_bytes()).to_hex().to_string()
}

/// Rewrites tombstones written before digests were keyed (`blake3` still equal to
/// `content_blake3`) to their keyed form. Run by the migration that adds the key, while the
/// immutability trigger is lifted, in the migration's transaction.
pub(crate) fn rekey_legacy(db: Db<'_>) -> StoreResult<()> {
    let key = key(db)?;
    let legacy: Vec<(String, String)> = db.query_all(
        "SELECT revision_id, content_blake3 FROM purged_revisions WHERE content_blake3 = blake3",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    for (revision_id, plain) in legacy {
        db.execute(
            "UPDATE purged_revisions SET blake3 = ?1 WHERE revision_id = ?2",
            &[&keyed_digest(&key, &plain), &revision_id],
        )?;
    }
    Ok(())
}

/// The `verify` check of tombstone digests against the store's key: every tombstone this
/// store wrote (it has the plain digest) holds the keyed digest of it.
pub fn key_checks(db: Db<'_>) -> StoreResult<Vec<Finding>> {
    let key = key(db)?;
    let rows: Vec<(String, String, String)> = db.query_all(
        "SELECT revision_id, blake3, content_blake3 FROM purged_revisions WHERE content_blake3 IS NOT NULL ORDER BY revision_id",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(rows
        .into_iter()
        .filter(|(_, keyed, plain)| *keyed != keyed_digest(&key, plain))
        .map(|(revision_id, _, _)| {
            (
                kind::TOMBSTONE,
                revision_id,
                "the tombstone's digest is not the keyed digest of the erased content under this store's key"
                    .to_owned(),
            )
        })
        .collect())
}

/// The tombstone of one purged entity.
#[derive(Clone, Debug, PartialEq)]
pub struct Tombstone {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub reason: String,
    pub actor: Option<String>,
    /// The purging request's ambient context.
    pub purged_by: Owner,
    pub purged_at: String,
    pub commit_seq: i64,
    /// `[{claim_id, revision_id}]` of the claim revisions that cited a purged artifact.
    pub citing: Value,
    /// What the physical erasure removed (see `purge::Erasure`).
    pub erasure: Value,
    /// Whether the physical erasure completed.
    pub erased: bool,
    pub revisions: Vec<PurgedRevision>,
}

/// Whether the store holds any tombstone.
pub fn any(conn: &Connection) -> StoreResult<bool> {
    any_db(Db::Sqlite(conn))
}

/// [`any`] on either backend.
pub fn any_db(db: Db<'_>) -> StoreResult<bool> {
    Ok(db.query_opt("SELECT 1 FROM purges LIMIT 1", &[], |_| Ok(()))?.is_some())
}

/// Loads the tombstone of `entity_id`, if it was purged (either backend).
pub fn load<'c>(db: impl Into<Db<'c>>, entity_id: &str) -> StoreResult<Option<Tombstone>> {
    let db = db.into();
    let found = db.query_opt(
        "SELECT entity_type, entity_id, reason, actor, workspace_id, project_id, task_id, component, purged_at,
                commit_seq, citing_json, erasure_json, erased
         FROM purges WHERE entity_id = ?1",
        &[&entity_id],
        |r| {
            Ok(Tombstone {
                entity_type: r.get(0)?,
                entity_id: r.get(1)?,
                reason: r.get(2)?,
                actor: r.get(3)?,
                purged_by: owner_from_db_row(r, 4)?,
                purged_at: r.get(8)?,
                commit_seq: r.get(9)?,
                citing: json_or_null(r.get::<String>(10)?),
                erasure: json_or_null(r.get::<String>(11)?),
                erased: r.get(12)?,
                revisions: Vec::new(),
            })
        },
    )?;
    let Some(mut tombstone) = found else {
        return Ok(None);
    };
    tombstone.revisions = revisions(db, entity_id)?;
    Ok(Some(tombstone))
}

fn json_or_null(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The erased revisions of `entity_id`, oldest first.
pub fn revisions<'c>(db: impl Into<Db<'c>>, entity_id: &str) -> StoreResult<Vec<PurgedRevision>> {
    db.into().query_all(
        "SELECT revision_id, revision_number, size_bytes, blake3, erased_fields FROM purged_revisions
         WHERE entity_id = ?1 ORDER BY revision_number",
        &[&entity_id],
        |r| {
            Ok(PurgedRevision {
                revision_id: r.get(0)?,
                revision_number: r.get(1)?,
                size_bytes: r.get::<i64>(2)?.max(0) as u64,
                blake3: r.get(3)?,
                erased_fields: r.get(4)?,
            })
        },
    )
}

/// The error a read of purged content gets (`NOT_FOUND` with `details.state = "purged"`).
pub fn purged_error(entity_type: &'static str, entity_id: &str, revision_id: Option<&str>) -> StoreError {
    StoreError::Purged {
        entity_type,
        entity_id: entity_id.to_owned(),
        revision_id: revision_id.map(str::to_owned),
        purged_at: None,
        reason: None,
    }
}

/// [`purged_error`] with the tombstone's time and reason.
pub fn purged_error_from(
    db: Db<'_>,
    entity_type: &'static str,
    entity_id: &str,
    revision_id: Option<&str>,
) -> StoreError {
    match load(db, entity_id) {
        Ok(Some(tombstone)) => StoreError::Purged {
            entity_type,
            entity_id: entity_id.to_owned(),
            revision_id: revision_id.map(str::to_owned),
            purged_at: Some(crate::timefmt::db_to_wire(&tombstone.purged_at)),
            reason: Some(tombstone.reason),
        },
        _ => purged_error(entity_type, entity_id, revision_id),
    }
}

/// A purged entity or revision named by a read result, for its warnings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurgedMention {
    /// The id as it appeared (an entity id or a revision id).
    pub id: String,
    pub entity_type: String,
    pub entity_id: String,
    pub purged_at: String,
}

/// Which of `ids` (entity or revision ids) belong to purged entities. The ids travel as one
/// JSON array parameter, unpacked by `json_each` or `jsonb_array_elements_text`.
pub fn mentions<'c>(db: impl Into<Db<'c>>, ids: &[String]) -> StoreResult<Vec<PurgedMention>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let db = db.into();
    let wanted = Value::Array(ids.iter().cloned().map(Value::String).collect()).to_string();
    let sql = db.pick(
        "WITH wanted(id) AS (SELECT DISTINCT value FROM json_each(?1))
         SELECT w.id, p.entity_type, p.entity_id, p.purged_at FROM wanted w JOIN purges p ON p.entity_id = w.id
         UNION ALL
         SELECT w.id, p.entity_type, p.entity_id, p.purged_at
         FROM wanted w JOIN purged_revisions r ON r.revision_id = w.id JOIN purges p ON p.entity_id = r.entity_id",
        "WITH wanted(id) AS (SELECT DISTINCT value COLLATE \"C\" FROM jsonb_array_elements_text(CAST(CAST(?1 AS text) AS jsonb)))
         SELECT w.id, p.entity_type, p.entity_id, p.purged_at FROM wanted w JOIN purges p ON p.entity_id = w.id
         UNION ALL
         SELECT w.id, p.entity_type, p.entity_id, p.purged_at
         FROM wanted w JOIN purged_revisions r ON r.revision_id = w.id JOIN purges p ON p.entity_id = r.entity_id",
    );
    db.query_all(sql, &[&wanted], |r| {
        Ok(PurgedMention {
            id: r.get(0)?,
            entity_type: r.get(1)?,
            entity_id: r.get(2)?,
            purged_at: r.get(3)?,
        })
    })
}

/// Entities whose physical erasure has not completed, oldest purge first.
pub fn incomplete<'c>(db: impl Into<Db<'c>>) -> StoreResult<Vec<String>> {
    db.into().query_all(
        "SELECT entity_id FROM purges WHERE erased = 0 ORDER BY commit_seq",
        &[],
        |r| r.get(0),
    )
}

/// One tombstone problem: `(kind, entity, detail)`.
pub type Finding = (&'static str, String, String);

/// Adds one finding of `kind` with `detail` for each id `sql` selects.
fn findings_of(
    db: Db<'_>,
    findings: &mut Vec<Finding>,
    sql: &str,
    kind: &'static str,
    detail: &str,
) -> StoreResult<()> {
    let ids: Vec<String> = db.query_all(sql, &[], |r| r.get(0))?;
    findings.extend(ids.into_iter().map(|id| (kind, id, detail.to_owned())));
    Ok(())
}

/// The tombstone checks on rows alone, which both backends make: every purged revision has
/// its tombstone and blank content, and every tombstone row names a purged revision of its
/// entity.
pub fn row_checks(db: Db<'_>) -> StoreResult<Vec<Finding>> {
    let mut findings: Vec<Finding> = key_checks(db)?;
    let mut pairs = |sql: &str, kind: &'static str, detail: &str| findings_of(db, &mut findings, sql, kind, detail);
    pairs(
        "SELECT r.id FROM artifact_revisions r WHERE r.purged = 1
           AND NOT EXISTS (SELECT 1 FROM purged_revisions p WHERE p.revision_id = r.id AND p.entity_id = r.artifact_id)
         UNION ALL
         SELECT r.id FROM claim_revisions r WHERE r.purged = 1
           AND NOT EXISTS (SELECT 1 FROM purged_revisions p WHERE p.revision_id = r.id AND p.entity_id = r.claim_id)",
        kind::TOMBSTONE,
        "the revision is marked purged but has no tombstone",
    )?;
    pairs(
        "SELECT p.revision_id FROM purged_revisions p
         WHERE NOT EXISTS (SELECT 1 FROM artifact_revisions r WHERE r.id = p.revision_id AND r.artifact_id = p.entity_id
                             AND r.purged = 1 AND r.blob_hash = COALESCE(p.content_blake3, p.blake3)
                             AND r.blob_size = p.size_bytes)
           AND NOT EXISTS (SELECT 1 FROM claim_revisions r WHERE r.id = p.revision_id AND r.claim_id = p.entity_id
                             AND r.purged = 1)",
        kind::TOMBSTONE,
        "the tombstone names no purged revision of its entity with the recorded size and digest",
    )?;
    pairs(
        "SELECT p.entity_id FROM purges p WHERE NOT EXISTS (SELECT 1 FROM purged_revisions r WHERE r.entity_id = p.entity_id)
            OR (p.entity_type = 'artifact' AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.id = p.entity_id))
            OR (p.entity_type = 'claim' AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.id = p.entity_id))",
        kind::TOMBSTONE,
        "the tombstone names no existing entity or no erased revision",
    )?;
    pairs(
        "SELECT r.id FROM artifact_revisions r WHERE r.purged = 1
           AND (r.title != '' OR r.inline_blob IS NOT NULL OR r.provenance_json != '{}')
         UNION ALL
         SELECT r.id FROM claim_revisions r WHERE r.purged = 1 AND r.statement != ''",
        kind::TOMBSTONE,
        "a purged revision still holds content in its row",
    )?;
    Ok(findings)
}

/// The tombstone checks of a PostgreSQL `verify` beyond [`row_checks`]: no search row of a
/// purged revision, no blob that only purged revisions referenced, and every erasure
/// completed (the rewrite of old row versions cannot be observed through SQL; `erased` records
/// that the scrub saw it happen).
pub fn pg_content_checks(db: Db<'_>) -> StoreResult<Vec<Finding>> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut pairs = |sql: &str, kind: &'static str, detail: &str| findings_of(db, &mut findings, sql, kind, detail);
    pairs(
        "SELECT r.id FROM artifact_revisions r JOIN artifact_search s ON s.seq = r.seq WHERE r.purged = 1
         UNION ALL
         SELECT r.id FROM claim_revisions r JOIN claim_search s ON s.seq = r.seq WHERE r.purged = 1",
        kind::PURGED_CONTENT_PRESENT,
        "the full-text projection still indexes the erased content",
    )?;
    pairs(
        "SELECT DISTINCT p.content_blake3 FROM purged_revisions p JOIN purges t ON t.entity_id = p.entity_id
         WHERE t.entity_type = 'artifact' AND EXISTS (SELECT 1 FROM blobs b WHERE b.hash = p.content_blake3)
           AND NOT EXISTS (SELECT 1 FROM artifact_revisions r WHERE r.blob_hash = p.content_blake3 AND r.purged = 0 AND r.inline_blob IS NULL)",
        kind::PURGED_CONTENT_PRESENT,
        "the database still holds a blob only purged revisions referenced",
    )?;
    pairs(
        "SELECT entity_id FROM purges WHERE erased = 0 ORDER BY commit_seq",
        kind::PURGE_INCOMPLETE,
        "the tables that held the erased bytes have not been rewritten since the purge; purge again (or start a front end) to finish",
    )?;
    Ok(findings)
}

/// The FTS5 tables of the database (every full-text projection, whoever added it): where a
/// purge deletes a revision's index rows and where `check` looks for them.
pub fn fts_tables(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql IS NOT NULL ORDER BY name")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter(|(_, sql)| virtual_module(sql).is_some_and(|module| module.eq_ignore_ascii_case("fts5")))
        .map(|(name, _)| name)
        .collect())
}

/// The module name of a `CREATE VIRTUAL TABLE … USING module(…)` statement.
fn virtual_module(sql: &str) -> Option<&str> {
    let upper = sql.to_ascii_uppercase();
    if !upper.trim_start().starts_with("CREATE VIRTUAL TABLE") {
        return None;
    }
    let at = upper.find(" USING ")? + " USING ".len();
    let rest = sql[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The tombstone checks of `verify` (read-only): every purged revision has its tombstone and
/// blank content, every tombstone row names a purged revision of its entity, no index row
/// or CAS object of a purged revision remains, and every erasure completed. Also returns
/// warnings for claim revisions whose evidence cites erased content.
pub fn check(conn: &Connection, blobs_root: &Path) -> StoreResult<(Vec<Finding>, Vec<String>)> {
    let mut findings = row_checks(Db::Sqlite(conn))?;
    let mut pairs = |sql: &str, kind: &'static str, detail: &str| -> StoreResult<()> {
        let mut stmt = conn.prepare(sql)?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        findings.extend(ids.into_iter().map(|id| (kind, id, detail.to_owned())));
        Ok(())
    };
    for (revisions, prefix) in [("artifact_revisions", "artifact_"), ("claim_revisions", "claim_")] {
        for table in fts_tables(conn)?.into_iter().filter(|t| t.starts_with(prefix)) {
            pairs(
                &format!(
                    "SELECT r.id FROM {revisions} r WHERE r.purged = 1 AND EXISTS (SELECT 1 FROM \"{table}\" f WHERE f.rowid = r.seq)"
                ),
                kind::PURGED_CONTENT_PRESENT,
                &format!("the full-text table {table} still indexes the erased content"),
            )?;
        }
    }
    let mut stmt = conn.prepare(
        "SELECT DISTINCT p.content_blake3 FROM purged_revisions p JOIN purges t ON t.entity_id = p.entity_id
         WHERE t.entity_type = 'artifact' AND p.content_blake3 IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM artifact_revisions r WHERE r.blob_hash = p.content_blake3 AND r.purged = 0 AND r.inline_blob IS NULL)",
    )?;
    let digests = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for hex in digests {
        if let Some(digest) = Digest::parse(&hex)
            && blobs_root.join(digest.relative_path()).exists()
        {
            findings.push((
                kind::PURGED_CONTENT_PRESENT,
                hex,
                "the CAS still holds an object only purged revisions referenced".to_owned(),
            ));
        }
    }
    for entity in incomplete(conn)? {
        findings.push((
            kind::PURGE_INCOMPLETE,
            entity,
            "the database has not been rewritten since the purge; purge again (or restart the daemon) to finish"
                .to_owned(),
        ));
    }
    let citing: i64 = conn.query_row(
        "SELECT count(DISTINCT r.id) FROM claim_revisions r, json_each(CASE WHEN json_valid(r.evidence_json) THEN r.evidence_json ELSE '[]' END) e
         WHERE r.purged = 0 AND json_extract(e.value, '$.revision_id') IN (SELECT revision_id FROM purged_revisions)",
        [],
        |r| r.get(0),
    )?;
    let mut warnings = Vec::new();
    if citing > 0 {
        warnings.push(format!(
            "{citing} claim revisions cite evidence whose content was purged; their spans can no longer be checked against the source"
        ));
    }
    Ok((findings, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_seed::TestStore;

    #[test]
    fn fts_tables_lists_every_fts5_table_and_no_vocabulary_table() {
        let t = TestStore::new();
        let raw = t.raw();
        raw.execute_batch("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, claim_fts, 'row')")
            .unwrap();
        assert_eq!(fts_tables(&raw).unwrap(), ["artifact_fts", "claim_fts"]);
        assert_eq!(
            virtual_module("CREATE VIRTUAL TABLE x USING fts5vocab(a, b, 'row')"),
            Some("fts5vocab")
        );
        assert_eq!(virtual_module("create virtual table x using fts5 (a)"), Some("fts5"));
        assert_eq!(virtual_module("CREATE TABLE x (a)"), None);
    }
}
