//! `reindex`: rebuilds the derived FTS projection from the authoritative revisions and CAS.
//!
//! On the embedded store it runs on the writer connection inside [`Store::exclusive`], in
//! one transaction: every FTS row is dropped (orphans included) and one row per revision is
//! written again through [`super::fts`], with the same text the write path indexes (title
//! plus the body of indexable media types, statement for claims). A blob that cannot be read
//! verified fails the whole rebuild and leaves the old projection untouched; run `verify` to
//! locate it. Purged revisions get no row. On PostgreSQL ([`pg`]) the same rebuild is one job
//! of the PostgreSQL writer.
//!
//! **Invariant:** authoritative tables are never written, and `commit_seq` does not move.

use std::collections::HashSet;

use rusqlite::Connection;

use super::artifact;
use super::db::{Db, Row};
use super::error::StoreResult;
use super::fts;
use super::{Store, last_commit_seq};
use crate::blob::{BlobStore, Digest};
use crate::progress::Progress;
use crate::store::StoreError;

pub mod pg;
#[cfg(test)]
mod tests;

/// What a rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReindexReport {
    pub artifact_revisions: u64,
    pub claim_revisions: u64,
    /// FTS rows that belonged to no revision before the rebuild.
    pub removed_orphan_rows: u64,
    pub last_commit_seq: i64,
}

impl Store {
    /// Rebuilds both FTS tables while no write can run.
    pub fn reindex(&self) -> StoreResult<ReindexReport> {
        if let super::Backend::Postgres(store) = &self.inner.backend {
            return store.write(|tx| match tx.db() {
                super::Db::Postgres(conn) => pg::rebuild(conn),
                super::Db::Sqlite(_) => Err(StoreError::Internal(
                    "the PostgreSQL writer handed a SQLite connection".to_owned(),
                )),
            });
        }
        let blobs = self.blobs()?.clone();
        self.exclusive(move |conn| rebuild(conn, &blobs))
    }
}

/// Rebuilds the projection on `conn` (the writer connection, outside any transaction).
pub fn rebuild(conn: &Connection, blobs: &BlobStore) -> StoreResult<ReindexReport> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match rebuild_in_transaction(conn, blobs) {
        Ok(report) => {
            conn.execute_batch("COMMIT")?;
            Ok(report)
        }
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}

/// The rebuild inside the caller's transaction (also the last step of an import).
pub(crate) fn rebuild_in_transaction(conn: &Connection, blobs: &BlobStore) -> StoreResult<ReindexReport> {
    let removed_orphan_rows =
        orphans(conn, "artifact_revisions", "artifact_fts")? + orphans(conn, "claim_revisions", "claim_fts")?;
    fts::clear(Db::Sqlite(conn))?;
    let total: i64 = conn.query_row(
        "SELECT (SELECT count(*) FROM artifact_revisions WHERE purged = 0) + (SELECT count(*) FROM claim_revisions WHERE purged = 0)",
        [],
        |r| r.get(0),
    )?;
    let mut progress = Progress::new("reindex: revisions", total.max(0) as u64);
    let artifact_revisions = reindex_artifacts(conn, blobs, &mut progress)?;
    let claim_revisions = reindex_claims(conn, &mut progress)?;
    conn.execute_batch(
        "INSERT INTO artifact_fts (artifact_fts) VALUES ('optimize');
         INSERT INTO claim_fts (claim_fts) VALUES ('optimize');",
    )?;
    Ok(ReindexReport {
        artifact_revisions,
        claim_revisions,
        removed_orphan_rows,
        last_commit_seq: last_commit_seq(conn)?,
    })
}

/// FTS rowids with no revision of that seq.
fn orphans(conn: &Connection, revisions: &str, fts: &str) -> StoreResult<u64> {
    let seqs: HashSet<i64> = {
        // A purged revision has no index row: any row it still has is an orphan.
        let mut stmt = conn.prepare(&format!("SELECT seq FROM {revisions} WHERE purged = 0"))?;
        stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    let mut stmt = conn.prepare(&format!("SELECT rowid FROM {fts}"))?;
    let mut rows = stmt.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        if !seqs.contains(&row.get::<_, i64>(0)?) {
            count += 1;
        }
    }
    Ok(count)
}

fn reindex_artifacts(conn: &Connection, blobs: &BlobStore, progress: &mut Progress) -> StoreResult<u64> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {} FROM artifact_revisions r WHERE r.purged = 0 ORDER BY r.seq",
        StoredArtifact::COLUMNS
    ))?;
    let mut rows = stmt.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        let revision = StoredArtifact::from_row(&Row::Sqlite(row))?;
        revision.index(Db::Sqlite(conn), |digest, size| Ok(blobs.get(digest, size)?))?;
        count += 1;
        progress.inc(1);
    }
    Ok(count)
}

fn reindex_claims(conn: &Connection, progress: &mut Progress) -> StoreResult<u64> {
    let mut stmt = conn.prepare("SELECT seq, statement FROM claim_revisions WHERE purged = 0 ORDER BY seq")?;
    let mut rows = stmt.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        fts::insert_claim(Db::Sqlite(conn), row.get(0)?, &row.get::<_, String>(1)?)?;
        count += 1;
        progress.inc(1);
    }
    Ok(count)
}

/// An artifact revision as stored, with what its full-text row is made from.
pub struct StoredArtifact {
    pub seq: i64,
    revision_id: String,
    title: String,
    body_indexed: bool,
    blob_hash: String,
    blob_size: u64,
    inline_blob: Option<Vec<u8>>,
    inline_encoding: i64,
}

impl StoredArtifact {
    /// The columns [`StoredArtifact::from_row`] expects, with `r` = artifact_revisions.
    pub const COLUMNS: &'static str =
        "r.seq, r.id, r.title, r.body_indexed, r.blob_hash, r.blob_size, r.inline_blob, r.inline_encoding";

    /// Maps a row selected with [`StoredArtifact::COLUMNS`].
    pub fn from_row(r: &Row<'_>) -> StoreResult<StoredArtifact> {
        Ok(StoredArtifact {
            seq: r.get(0)?,
            revision_id: r.get(1)?,
            title: r.get(2)?,
            body_indexed: r.get(3)?,
            blob_hash: r.get(4)?,
            blob_size: r.get::<i64>(5)?.max(0) as u64,
            inline_blob: r.get(6)?,
            inline_encoding: r.get(7)?,
        })
    }

    /// Writes the revision's full-text row, reading an indexed body stored outside the row
    /// with `external` (digest and size of the raw bytes; the CAS or the database's blobs).
    pub fn index(&self, db: Db<'_>, external: impl FnOnce(&Digest, u64) -> StoreResult<Vec<u8>>) -> StoreResult<()> {
        fts::insert_artifact(db, self.seq, &self.title, &self.body(external)?)
    }

    /// The indexed body: the content read verified, as text, when the media type is indexed;
    /// empty otherwise.
    fn body(&self, external: impl FnOnce(&Digest, u64) -> StoreResult<Vec<u8>>) -> StoreResult<String> {
        if !self.body_indexed {
            return Ok(String::new());
        }
        let digest = Digest::parse(&self.blob_hash)
            .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash on revision {}", self.revision_id)))?;
        let bytes = match &self.inline_blob {
            Some(stored) => artifact::read_inline(&digest, self.blob_size, stored, self.inline_encoding)?,
            None => external(&digest, self.blob_size)?,
        };
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
