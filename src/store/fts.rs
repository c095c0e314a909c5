//! The full-text projection's one writer: the rows that make a revision findable by its
//! words, on either backend. On SQLite they are the FTS5 tables `artifact_fts(body, title)` and
//! `claim_fts(statement)`, keyed by `rowid`; on PostgreSQL the `tsvector` rows of
//! `artifact_search` and `claim_search`, keyed by `seq`, whose documents
//! [`pg::fts::document`](super::pg::fts::document) makes from the retrieval pipeline's folded
//! words (title weight A, body and statement weight D). Both keys are the revision `seq`.
//!
//! The write path (`artifact` and `claim`: one row per new revision, in the revision's own
//! transaction) and `reindex` on both backends (which imports run too) index through
//! [`insert_artifact`] and [`insert_claim`] (`reindex` reads a stored artifact revision's
//! text back through its `StoredArtifact`), so every path indexes exactly the same text: an
//! artifact's title and, when its media type is indexable, its body; a claim's statement.
//! `reindex` empties the projection with [`clear`]. (A purge deletes an entity's rows itself,
//! from every FTS5 table of its kind; see `purge`.)
//!
//! **Invariants:** at most one row per revision, written in the transaction of its caller;
//! text travels only as parameters (on PostgreSQL inside a quoted `tsvector` literal cast from
//! a parameter), never spliced into SQL.

use super::db::Db;
use super::error::StoreResult;
use super::pg::fts::document;
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
