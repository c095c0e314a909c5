//! `reindex`: rebuilds the derived full-text projection from the authoritative revisions and
//! their content, on both backends.
//!
//! This module holds what both backends share: the report ([`ReindexReport`]),
//! [`StoredArtifact`] (an artifact revision as stored, and the text its row is made from:
//! the title plus the body of indexable media types, read verified), and
//! [`Store::reindex`], which picks the backend. The embedded store's rebuild is
//! [`sqlite`]: on the writer connection inside [`Store::exclusive`], in one transaction, every
//! FTS5 row is dropped (orphans included) and one row per live revision is written again.
//! PostgreSQL's is [`pg`]: one job of the PostgreSQL writer. Both write through
//! [`super::fts`], with the same text the write path indexes (statement for claims).
//!
//! **Invariants:** authoritative tables are never written, and `commit_seq` does not move; a
//! purged revision gets no row; a blob that cannot be read verified fails the whole rebuild
//! and leaves the old projection untouched (run `verify` to locate it).

use super::Store;
use super::artifact;
use super::db::{Db, Row};
use super::error::StoreResult;
use super::fts;
use crate::blob::Digest;
use crate::store::StoreError;

pub mod pg;
pub mod sqlite;
#[cfg(test)]
mod tests;

pub use sqlite::rebuild;
pub(crate) use sqlite::rebuild_in_transaction;

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
        self.exclusive(move |conn| sqlite::rebuild(conn, &blobs))
    }
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
