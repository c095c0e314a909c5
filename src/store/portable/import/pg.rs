//! What an import does differently on PostgreSQL: its temporary tables, the search rows of
//! the revisions it added, and which server errors mean an invalid record.

use crate::blob::Digest;
use crate::retrieval::text::folded_words;
use crate::store::artifact;
use crate::store::db::Db;
use crate::store::error::{StoreError, StoreResult};
use crate::store::pg::{self, PgConn};

/// The import's temporary tables (archive `commit_seq` → store `commit_seq`, and the store's
/// event ids), created in its transaction and dropped at its end (or rolled back with it).
pub(super) const TEMP_TABLES: &str = "
    CREATE TEMP TABLE IF NOT EXISTS import_seq (old BIGINT PRIMARY KEY, new BIGINT NOT NULL);
    DELETE FROM pg_temp.import_seq;
    CREATE TEMP TABLE IF NOT EXISTS import_events (event_id TEXT COLLATE \"C\" PRIMARY KEY, commit_seq BIGINT NOT NULL);
    DELETE FROM pg_temp.import_events;
    INSERT INTO pg_temp.import_events SELECT event_id, commit_seq FROM public.events;";

/// Live revisions read per page while indexing.
const PAGE: i64 = 256;

/// Whether a server error is about the data written (a constraint, a value the column
/// refuses): the archive's record is invalid, not the store.
pub(super) fn is_record_error(error: &postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| code.code().starts_with("23") || code.code().starts_with("22"))
}

/// Writes the search row of every live revision that has none (the ones the import added),
/// with the text the write path indexes.
pub(super) fn index_new_revisions(conn: &PgConn) -> StoreResult<()> {
    let db = Db::Postgres(conn);
    let mut after = 0i64;
    loop {
        let rows = db.query_all(
            "SELECT r.seq, r.id, r.title, r.body_indexed, r.blob_hash, r.blob_size, r.inline_blob, r.inline_encoding
             FROM artifact_revisions r
             WHERE r.purged = 0 AND r.seq > ?1 AND NOT EXISTS (SELECT 1 FROM artifact_search s WHERE s.seq = r.seq)
             ORDER BY r.seq LIMIT ?2",
            &[&after, &PAGE],
            |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                    r.get::<bool>(3)?,
                    r.get::<String>(4)?,
                    r.get::<i64>(5)?,
                    r.get::<Option<Vec<u8>>>(6)?,
                    r.get::<i64>(7)?,
                ))
            },
        )?;
        let Some(last) = rows.last() else { break };
        after = last.0;
        for (seq, revision, title, body_indexed, hash, size, inline, encoding) in rows {
            let body = if body_indexed {
                let digest = Digest::parse(&hash)
                    .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash on revision {revision}")))?;
                let size = size.max(0) as u64;
                let bytes = match inline {
                    Some(stored) => artifact::read_inline(&digest, size, &stored, encoding)?,
                    None => pg::blob::get(conn, &digest, size)?,
                };
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                String::new()
            };
            let title = folded_words(&title);
            let body = folded_words(&body);
            let title: Vec<&str> = title.iter().map(String::as_str).collect();
            let body: Vec<&str> = body.iter().map(String::as_str).collect();
            let document = pg::fts::document(&[('A', &title), ('D', &body)]);
            db.execute(
                "INSERT INTO artifact_search (seq, document) VALUES (?1, CAST(CAST(?2 AS text) AS tsvector))",
                &[&seq, &document],
            )?;
        }
    }
    let mut after = 0i64;
    loop {
        let rows = db.query_all(
            "SELECT r.seq, r.statement FROM claim_revisions r
             WHERE r.purged = 0 AND r.seq > ?1 AND NOT EXISTS (SELECT 1 FROM claim_search s WHERE s.seq = r.seq)
             ORDER BY r.seq LIMIT ?2",
            &[&after, &PAGE],
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        let Some(last) = rows.last() else { break };
        after = last.0;
        for (seq, statement) in rows {
            let words = folded_words(&statement);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let document = pg::fts::document(&[('D', &words)]);
            db.execute(
                "INSERT INTO claim_search (seq, document) VALUES (?1, CAST(CAST(?2 AS text) AS tsvector))",
                &[&seq, &document],
            )?;
        }
    }
    Ok(())
}
