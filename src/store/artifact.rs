//! Artifacts and their immutable revisions: rows, inserts, lifecycle and history.
//!
//! Content up to the inline threshold lives in `artifact_revisions.inline_blob` (compressed
//! when that pays, with its encoding in `inline_encoding`); larger content lives in the CAS
//! and is referenced by the digest of its raw bytes. Every revision gets exactly one
//! full-text row (`artifact_fts` on SQLite, `artifact_search` on PostgreSQL; keyed by the
//! revision `seq`), written by [`super::fts`] in the same transaction.

use super::Tx;
use super::db::{Db, Row};
use super::error::{StoreError, StoreResult};
use super::revisioned::{self, RevisionRow, Revisioned};
use super::scope::{Owner, owner_from_db_row};
use crate::blob::{self, BlobPin, Digest, Encoding, codec};
use crate::protocol::Operation;
use crate::protocol::artifact::ArtifactStatus;
use crate::protocol::ids::{ArtifactId, ArtifactRevisionId};
use crate::protocol::relation::EntityType;

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
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
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
    pub status: ArtifactStatus,
    pub owner: Owner,
    pub provenance_json: String,
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    pub forgotten_reason: Option<String>,
    pub current_revision_id: ArtifactRevisionId,
    /// Whether `artifact.purge` erased this revision's content (see [`super::purge`]).
    pub purged: bool,
}

impl RevisionRow for ArtifactRow {
    fn entity_id(&self) -> &str {
        &self.artifact_id
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

impl ArtifactRow {
    pub fn is_current_revision(&self) -> bool {
        self.revision_id == self.current_revision_id
    }

    pub fn is_forgotten(&self) -> bool {
        self.status == ArtifactStatus::Forgotten
    }

    /// Reads, decodes and verifies the revision's raw bytes (inline or CAS); a purged
    /// revision is [`StoreError::Purged`].
    pub fn read_content(&self, blobs: &dyn super::BlobSource) -> StoreResult<Vec<u8>> {
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
            None => blobs.get_blob(&digest, self.size_bytes),
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
/// A purged revision's `blob_hash` reads as its tombstone's keyed digest (`tombstone`), so
/// no read discloses the plain digest of erased content.
pub const COLUMNS: &str = "r.seq, a.id, r.id, r.revision_number, a.kind, r.title, r.media_type, \
     CASE WHEN r.purged = 1 THEN COALESCE((SELECT p.blake3 FROM purged_revisions p WHERE p.revision_id = r.id), r.blob_hash) ELSE r.blob_hash END, r.blob_size, \
     r.inline_blob, a.status, a.workspace_id, a.project_id, a.task_id, a.component, r.provenance_json, r.actor, \
     a.created_at, r.created_at, r.commit_seq, a.forgotten_reason, a.current_revision_id, r.inline_encoding, r.purged";

/// Maps a `rusqlite` row selected with [`COLUMNS`] (store code not yet written against
/// [`Db`]).
pub fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ArtifactRow> {
    db_row(&Row::Sqlite(r)).map_err(super::db::into_rusqlite)
}

/// Maps a row selected with [`COLUMNS`].
pub fn db_row(r: &Row<'_>) -> StoreResult<ArtifactRow> {
    Ok(ArtifactRow {
        seq: r.get(0)?,
        artifact_id: r.get(1)?,
        revision_id: r.get(2)?,
        revision_number: r.get(3)?,
        kind: r.get(4)?,
        title: r.get(5)?,
        media_type: r.get(6)?,
        blob_hash: r.get(7)?,
        size_bytes: r.get::<i64>(8)? as u64,
        inline_blob: r.get(9)?,
        status: r.get(10)?,
        owner: owner_from_db_row(r, 11)?,
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

/// A new artifact or revision, fully validated by the caller. The raw content travels
/// with it (moved, never copied): the FTS body is read from it inside the transaction.
#[derive(Clone, Debug)]
pub struct NewRevision {
    pub title: String,
    pub media_type: String,
    pub blob: BlobRef,
    /// The raw bytes, indexed as text when `media_type` is indexable.
    pub content: Vec<u8>,
    pub provenance_json: String,
    pub actor: Option<String>,
    /// The semantic projection of this revision, when the service has a model.
    pub vectors: Option<super::vectors::Projection>,
}

impl NewRevision {
    /// The text indexed for the body, or `None` when only the title is searchable.
    pub fn body_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        is_indexable_media_type(&self.media_type).then(|| String::from_utf8_lossy(&self.content))
    }
}

/// Artifacts as a [`Revisioned`] entity.
pub struct Artifacts;

impl Revisioned for Artifacts {
    type Row = ArtifactRow;
    type NewRevision = NewRevision;

    const ENTITY: EntityType = EntityType::Artifact;
    const TABLE: &'static str = "artifacts";
    const ALIAS: &'static str = "a";
    const REVISIONS: &'static str = "artifact_revisions";
    const PARENT: &'static str = "artifact_id";
    const CREATE: Operation = Operation::ArtifactPut;
    const REVISE: Operation = Operation::ArtifactRevise;
    const CLOSE: Operation = Operation::ArtifactForget;
    const CLOSED_STATUS: &'static str = ArtifactStatus::Forgotten.as_str();
    const CLOSED_REASON: &'static str = "forgotten_reason";

    fn columns() -> &'static str {
        COLUMNS
    }

    fn row(r: &Row<'_>) -> StoreResult<ArtifactRow> {
        db_row(r)
    }

    fn actor(new: &NewRevision) -> Option<&str> {
        new.actor.as_deref()
    }

    fn insert_revision(
        tx: &Tx<'_>,
        artifact_id: &str,
        number: i64,
        new: &NewRevision,
        commit_seq: i64,
    ) -> StoreResult<String> {
        let revision_id = ArtifactRevisionId::generate();
        let body = new.body_text();
        let db = tx.db();
        let seq: i64 = db.query_one(
            "INSERT INTO artifact_revisions (id, artifact_id, revision_number, title, media_type, blob_hash, blob_size,
                 inline_blob, inline_encoding, body_indexed, provenance_json, actor, created_at, commit_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING seq",
            &[
                &revision_id,
                &artifact_id,
                &number,
                &new.title,
                &new.media_type,
                &new.blob.digest.to_hex(),
                &(new.blob.size as i64),
                &new.blob.inline.as_ref().map(|inline| inline.stored.as_slice()),
                &new.blob
                    .inline
                    .as_ref()
                    .map_or(0, |inline| i64::from(inline.encoding.code())),
                &i64::from(body.is_some()),
                &new.provenance_json,
                &new.actor,
                &tx.now_db(),
                &commit_seq,
            ],
            |r| r.get(0),
        )?;
        // The blob was stored before this transaction; a purge on any front end may have
        // erased the same bytes since (its scrub deletes blobs no live revision cites, under
        // the commit lock this transaction holds now). On PostgreSQL, storing it again here is
        // a no-op unless that happened, and makes the citation safe.
        if let (None, Db::Postgres(conn)) = (&new.blob.inline, db) {
            super::pg::blob::insert(conn, &new.blob.digest, &new.content)?;
        }
        super::fts::insert_artifact(db, seq, &new.title, body.as_deref().unwrap_or(""))?;
        if let Some(vectors) = &new.vectors {
            super::vectors::write(db, EntityType::Artifact, seq, vectors)?;
        }
        Ok(revision_id.into_string())
    }
}

/// Loads one revision (the current one when `revision_id` is `None`).
pub fn get<'c>(
    db: impl Into<Db<'c>>,
    artifact_id: &str,
    revision_id: Option<&str>,
) -> StoreResult<Option<ArtifactRow>> {
    revisioned::get::<Artifacts>(db, artifact_id, revision_id)
}

/// Loads the current revision or fails with `NOT_FOUND`.
pub fn head<'c>(db: impl Into<Db<'c>>, artifact_id: &str) -> StoreResult<ArtifactRow> {
    revisioned::head::<Artifacts>(db, artifact_id)
}

/// Loads a revision by revision id alone.
pub fn get_revision<'c>(db: impl Into<Db<'c>>, revision_id: &str) -> StoreResult<Option<ArtifactRow>> {
    revisioned::get_revision::<Artifacts>(db, revision_id)
}

/// Creates an artifact with its first revision; returns the stored row and commit_seq.
pub fn put(tx: &Tx<'_>, owner: &Owner, kind: &str, new: &NewRevision) -> StoreResult<(ArtifactRow, i64)> {
    let artifact_id = ArtifactId::generate();
    revisioned::create::<Artifacts>(tx, &artifact_id, new, |tx| {
        let now = tx.now_db();
        tx.db().execute(
            "INSERT INTO artifacts (id, workspace_id, project_id, task_id, component, kind, current_revision_id, status, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, '', ?7, ?8, ?8)",
            &[
                &artifact_id,
                &owner.workspace_id,
                &owner.project_id,
                &owner.task_id,
                &owner.component,
                &kind,
                &ArtifactStatus::Active,
                &now,
            ],
        )?;
        Ok(())
    })
}
