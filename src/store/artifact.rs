//! Artifacts and their immutable revisions: rows, inserts, lifecycle and history.
//!
//! Content up to the inline threshold lives in `artifact_revisions.inline_blob` (compressed
//! when that pays, with its encoding in `inline_encoding`); larger content lives in the CAS
//! and is referenced by the digest of its raw bytes. Every revision gets exactly one
//! `artifact_fts` row (rowid = revision `seq`) in the same transaction.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::json;

use super::error::{StoreError, StoreResult};
use super::scope::{Owner, owner_from_row};
use super::{Tx, new_id};
use crate::blob::{self, BlobPin, BlobStore, Digest, Encoding, codec};

/// Where a revision's bytes live: the digest and size of the raw bytes and, when small, the
/// bytes as stored inline.
#[derive(Clone, Debug)]
pub struct BlobRef {
    pub digest: Digest,
    pub size: u64,
    pub inline: Option<InlineBlob>,
    /// Keeps a CAS object from being erased by a concurrent purge until the mutation that
    /// cites it has run (see [`BlobPin`]).
    pub pin: Option<std::sync::Arc<BlobPin>>,
}

/// Inline content as stored in `artifact_revisions.inline_blob`.
#[derive(Clone, Debug)]
pub struct InlineBlob {
    pub encoding: Encoding,
    pub stored: Vec<u8>,
}

impl BlobRef {
    /// Content stored inline: digests the raw bytes and encodes them (compressed when that
    /// pays).
    pub fn inline(raw: &[u8]) -> BlobRef {
        let (encoding, stored) = codec::encode(raw);
        BlobRef {
            digest: Digest::of(raw),
            size: raw.len() as u64,
            inline: Some(InlineBlob {
                encoding,
                stored: stored.into_owned(),
            }),
            pin: None,
        }
    }

    /// Content already published in the CAS.
    pub fn external(digest: Digest, size: u64) -> BlobRef {
        BlobRef {
            digest,
            size,
            inline: None,
            pin: None,
        }
    }

    /// Holds `pin` until this reference is dropped (after the mutation citing it has run).
    pub fn pinned(mut self, pin: BlobPin) -> BlobRef {
        self.pin = Some(std::sync::Arc::new(pin));
        self
    }
}

/// One artifact revision joined with its artifact's current lifecycle.
#[derive(Clone, Debug)]
pub struct ArtifactRow {
    pub seq: i64,
    pub artifact_id: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub kind: String,
    pub title: String,
    pub media_type: String,
    pub blob_hash: String,
    pub size_bytes: u64,
    /// The inline content as stored (see `inline_encoding`), `None` for CAS content.
    pub inline_blob: Option<Vec<u8>>,
    /// The persisted [`Encoding`] code of `inline_blob`.
    pub inline_encoding: i64,
    pub status: String,
    pub owner: Owner,
    pub provenance_json: String,
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    pub forgotten_reason: Option<String>,
    pub current_revision_id: String,
    /// Whether `artifact.purge` erased this revision's content (see [`super::purge`]).
    pub purged: bool,
}

impl ArtifactRow {
    pub fn is_current_revision(&self) -> bool {
        self.revision_id == self.current_revision_id
    }

    /// Reads, decodes and verifies the revision's raw bytes (inline or CAS); a purged
    /// revision is [`StoreError::Purged`].
    pub fn read_content(&self, blobs: &BlobStore) -> StoreResult<Vec<u8>> {
        if self.purged {
            return Err(super::tombstone::purged_error(
                "artifact",
                &self.artifact_id,
                Some(&self.revision_id),
            ));
        }
        let digest = Digest::parse(&self.blob_hash)
            .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash on {}", self.revision_id)))?;
        match &self.inline_blob {
            Some(stored) => Ok(read_inline(&digest, self.size_bytes, stored, self.inline_encoding)?),
            None => Ok(blobs.get(&digest, self.size_bytes)?),
        }
    }
}

/// Decodes and verifies inline content stored with the persisted encoding `code`.
pub fn read_inline(digest: &Digest, size: u64, stored: &[u8], code: i64) -> StoreResult<Vec<u8>> {
    let encoding = Encoding::from_code(code)
        .ok_or_else(|| StoreError::Integrity(format!("unknown inline encoding {code} for blob {digest}")))?;
    Ok(blob::decode_inline(encoding, stored, digest, size)?)
}

/// The columns [`row`] expects, with `r` = artifact_revisions and `a` = artifacts.
pub const COLUMNS: &str = "r.seq, a.id, r.id, r.revision_number, a.kind, r.title, r.media_type, r.blob_hash, r.blob_size, \
     r.inline_blob, a.status, a.workspace_id, a.project_id, a.task_id, a.component, r.provenance_json, r.actor, \
     a.created_at, r.created_at, r.commit_seq, a.forgotten_reason, a.current_revision_id, r.inline_encoding, r.purged";

/// Maps a row selected with [`COLUMNS`].
pub fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ArtifactRow> {
    Ok(ArtifactRow {
        seq: r.get(0)?,
        artifact_id: r.get(1)?,
        revision_id: r.get(2)?,
        revision_number: r.get(3)?,
        kind: r.get(4)?,
        title: r.get(5)?,
        media_type: r.get(6)?,
        blob_hash: r.get(7)?,
        size_bytes: r.get::<_, i64>(8)? as u64,
        inline_blob: r.get(9)?,
        status: r.get(10)?,
        owner: owner_from_row(r, 11)?,
        provenance_json: r.get(15)?,
        actor: r.get(16)?,
        created_at: r.get(17)?,
        revision_created_at: r.get(18)?,
        revision_commit_seq: r.get(19)?,
        forgotten_reason: r.get(20)?,
        current_revision_id: r.get(21)?,
        inline_encoding: r.get(22)?,
        purged: r.get(23)?,
    })
}

/// Whether the body of this media type is indexed as text (otherwise only the title is).
pub fn is_indexable_media_type(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/javascript"
                | "application/sql"
                | "application/x-sql"
                | "application/graphql"
        )
}

/// The text indexed for a revision body, or `None` when only the title is searchable.
pub fn body_text(media_type: &str, bytes: &[u8]) -> Option<String> {
    is_indexable_media_type(media_type).then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// A new artifact or revision, fully validated by the caller.
#[derive(Clone, Debug)]
pub struct NewRevision {
    pub title: String,
    pub media_type: String,
    pub blob: BlobRef,
    pub body_text: Option<String>,
    pub provenance_json: String,
    pub actor: Option<String>,
}

/// Loads one revision (the current one when `revision_id` is `None`).
pub fn get(conn: &Connection, artifact_id: &str, revision_id: Option<&str>) -> StoreResult<Option<ArtifactRow>> {
    let found = match revision_id {
        None => conn
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM artifacts a JOIN artifact_revisions r ON r.id = a.current_revision_id WHERE a.id = ?1"
                ),
                [artifact_id],
                row,
            )
            .optional()?,
        Some(rev) => conn
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM artifact_revisions r JOIN artifacts a ON a.id = r.artifact_id WHERE a.id = ?1 AND r.id = ?2"
                ),
                params![artifact_id, rev],
                row,
            )
            .optional()?,
    };
    Ok(found)
}

/// Loads the current revision or fails with `NOT_FOUND`.
pub fn head(conn: &Connection, artifact_id: &str) -> StoreResult<ArtifactRow> {
    get(conn, artifact_id, None)?.ok_or_else(|| StoreError::NotFound(format!("artifact {artifact_id}")))
}

/// Loads a revision by revision id alone.
pub fn get_revision(conn: &Connection, revision_id: &str) -> StoreResult<Option<ArtifactRow>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM artifact_revisions r JOIN artifacts a ON a.id = r.artifact_id WHERE r.id = ?1"
            ),
            [revision_id],
            row,
        )
        .optional()?)
}

fn insert_revision(
    tx: &Tx<'_>,
    artifact_id: &str,
    number: i64,
    new: &NewRevision,
    commit_seq: i64,
) -> StoreResult<String> {
    let revision_id = new_id("arev");
    tx.conn().execute(
        "INSERT INTO artifact_revisions (id, artifact_id, revision_number, title, media_type, blob_hash, blob_size,
             inline_blob, inline_encoding, body_indexed, provenance_json, actor, created_at, commit_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            revision_id,
            artifact_id,
            number,
            new.title,
            new.media_type,
            new.blob.digest.to_hex(),
            new.blob.size as i64,
            new.blob.inline.as_ref().map(|inline| inline.stored.as_slice()),
            new.blob.inline.as_ref().map_or(0, |inline| inline.encoding.code()),
            new.body_text.is_some(),
            new.provenance_json,
            new.actor,
            tx.now_db(),
            commit_seq
        ],
    )?;
    let seq = tx.conn().last_insert_rowid();
    tx.conn().execute(
        "INSERT INTO artifact_fts (rowid, title, body) VALUES (?1, ?2, ?3)",
        params![seq, new.title, new.body_text.as_deref().unwrap_or("")],
    )?;
    Ok(revision_id)
}

/// Creates an artifact with its first revision; returns the stored row and commit_seq.
pub fn put(tx: &Tx<'_>, owner: &Owner, kind: &str, new: &NewRevision) -> StoreResult<(ArtifactRow, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    let artifact_id = new_id("art");
    let now = tx.now_db();
    tx.conn().execute(
        "INSERT INTO artifacts (id, workspace_id, project_id, task_id, component, kind, current_revision_id, status, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, '', 'active', ?7, ?7)",
        params![artifact_id, owner.workspace_id, owner.project_id, owner.task_id, owner.component, kind, now],
    )?;
    let revision_id = insert_revision(tx, &artifact_id, 1, new, commit_seq)?;
    tx.conn().execute(
        "UPDATE artifacts SET current_revision_id = ?1 WHERE id = ?2",
        params![revision_id, artifact_id],
    )?;
    tx.append_event(
        commit_seq,
        "artifact.put",
        "artifact",
        &artifact_id,
        Some(&revision_id),
        new.actor.as_deref(),
        // The revision and artifact rows hold the blob, owner and kind: nothing to add.
        &json!({}),
    )?;
    Ok((head(tx.conn(), &artifact_id)?, commit_seq))
}

/// Appends a revision to `current` (already checked for scope, lifecycle and `if_revision`).
pub fn revise(tx: &Tx<'_>, current: &ArtifactRow, new: &NewRevision) -> StoreResult<(ArtifactRow, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    let revision_id = insert_revision(tx, &current.artifact_id, current.revision_number + 1, new, commit_seq)?;
    tx.conn().execute(
        "UPDATE artifacts SET current_revision_id = ?1, updated_at = ?2 WHERE id = ?3",
        params![revision_id, tx.now_db(), current.artifact_id],
    )?;
    tx.append_event(
        commit_seq,
        "artifact.revise",
        "artifact",
        &current.artifact_id,
        Some(&revision_id),
        new.actor.as_deref(),
        &json!({"previous_revision_id": current.revision_id}),
    )?;
    Ok((head(tx.conn(), &current.artifact_id)?, commit_seq))
}

/// Tombstones an artifact; its revisions and blobs stay readable by exact get.
pub fn forget(tx: &Tx<'_>, current: &ArtifactRow, reason: &str) -> StoreResult<(ArtifactRow, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    tx.conn().execute(
        "UPDATE artifacts SET status = 'forgotten', forgotten_reason = ?1, updated_at = ?2 WHERE id = ?3",
        params![reason, tx.now_db(), current.artifact_id],
    )?;
    tx.append_event(
        commit_seq,
        "artifact.forget",
        "artifact",
        &current.artifact_id,
        Some(&current.revision_id),
        None,
        &json!({"reason": reason}),
    )?;
    Ok((head(tx.conn(), &current.artifact_id)?, commit_seq))
}

/// One page of revisions, newest first, strictly below `before` when given.
pub fn history(
    conn: &Connection,
    artifact_id: &str,
    limit: usize,
    before: Option<i64>,
) -> StoreResult<(Vec<ArtifactRow>, bool)> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM artifact_revisions r JOIN artifacts a ON a.id = r.artifact_id
         WHERE a.id = ?1 AND r.revision_number < ?2 ORDER BY r.revision_number DESC LIMIT ?3"
    ))?;
    let mut rows = stmt
        .query_map(params![artifact_id, before.unwrap_or(i64::MAX), limit as i64 + 1], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    Ok((rows, truncated))
}

/// Whether an artifact exists.
pub fn exists(conn: &Connection, artifact_id: &str) -> StoreResult<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM artifacts WHERE id = ?1", [artifact_id], |_| Ok(()))
        .optional()?
        .is_some())
}
