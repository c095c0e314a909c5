//! The full-text projection's one writer: the rows that make a revision findable by its
//! words, on either backend. On SQLite they are the FTS5 tables `artifact_fts(title, body)` and
//! `claim_fts(statement)`, keyed by `rowid`; on PostgreSQL the `tsvector` rows of
//! `artifact_search` and `claim_search`, keyed by `seq`, whose documents
//! [`pg::fts::document`](super::pg::fts::document) makes from the retrieval pipeline's folded
//! words (title weight A, body and statement weight D). Both keys are the revision `seq`.
//!
//! The write path (`artifact` and `claim`: one row per new revision, in the revision's own
//! transaction) and `reindex` on both backends (which imports run too) index through
//! [`insert_artifact`] and [`insert_claim`], and `reindex` reads a stored artifact revision's
//! text through [`StoredArtifact`], so every path indexes exactly the same text: an
//! artifact's title and, when its media type is indexable, its body; a claim's statement.
//! `reindex` empties the projection with [`clear`]. (A purge deletes an entity's rows itself,
//! from every FTS5 table of its kind; see `purge`.)
//!
//! **Invariants:** at most one row per revision, written in the transaction of its caller;
//! text travels only as parameters (on PostgreSQL inside a quoted `tsvector` literal cast from
//! a parameter), never spliced into SQL.

use super::artifact;
use super::db::{Db, Row};
use super::error::{StoreError, StoreResult};
use super::pg::fts::document;
use crate::blob::Digest;
use crate::retrieval::text::folded_words;

/// Writes the full-text row of artifact revision `seq`: its title and the indexed body text
/// (empty when the media type is not indexed).
pub fn insert_artifact(db: Db<'_>, seq: i64, title: &str, body: &str) -> StoreResult<()> {
    match db {
        Db::Sqlite(_) => db.execute(
            "INSERT INTO artifact_fts (rowid, title, body) VALUES (?1, ?2, ?3)",
            &[&seq, &title, &body],
        )?,
        Db::Postgres(_) => {
            let title = folded_words(title);
            let body = folded_words(body);
            let title: Vec<&str> = title.iter().map(String::as_str).collect();
            let body: Vec<&str> = body.iter().map(String::as_str).collect();
            let document = document(&[('A', &title), ('D', &body)]);
            db.execute(
                "INSERT INTO artifact_search (seq, document) VALUES (?1, CAST(CAST(?2 AS text) AS tsvector))",
                &[&seq, &document],
            )?
        }
    };
    Ok(())
}

/// Writes the full-text row of claim revision `seq`: its statement.
pub fn insert_claim(db: Db<'_>, seq: i64, statement: &str) -> StoreResult<()> {
    match db {
        Db::Sqlite(_) => db.execute(
            "INSERT INTO claim_fts (rowid, statement) VALUES (?1, ?2)",
            &[&seq, &statement],
        )?,
        Db::Postgres(_) => {
            let words = folded_words(statement);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let document = document(&[('D', &words)]);
            db.execute(
                "INSERT INTO claim_search (seq, document) VALUES (?1, CAST(CAST(?2 AS text) AS tsvector))",
                &[&seq, &document],
            )?
        }
    };
    Ok(())
}

/// Deletes every full-text row of both kinds (orphans included).
pub fn clear(db: Db<'_>) -> StoreResult<()> {
    db.batch(db.pick(
        "INSERT INTO artifact_fts (artifact_fts) VALUES ('delete-all');
         INSERT INTO claim_fts (claim_fts) VALUES ('delete-all');",
        "DELETE FROM artifact_search; DELETE FROM claim_search;",
    ))
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
        insert_artifact(db, self.seq, &self.title, &self.body(external)?)
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
