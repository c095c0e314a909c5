//! `reindex` on PostgreSQL: the `artifact_search`/`claim_search` projection rebuilt from the
//! authoritative revisions and the blobs in the database.
//!
//! [`rebuild`] runs as one job of the PostgreSQL writer ([`crate::store::Store::reindex`]):
//! its group transaction holds the `commit_state` row lock, the database-wide write lock
//! every front end's mutations take first, so no write of any front end interleaves, and the
//! job's savepoint makes the rebuild all or nothing. Every search row is dropped (the ones of
//! no live revision are counted as orphans) and [`index_missing`] writes one row per live
//! revision through [`crate::store::fts`], the functions the write path indexes with. Imports
//! call [`index_missing`] too, for the revisions they added.
//!
//! **Invariants:** authoritative tables are never written and `commit_seq` does not move; a
//! purged revision gets no row; a blob that cannot be read verified fails the job, which is
//! rolled back to its savepoint and leaves the old projection.

use super::ReindexReport;
use super::StoredArtifact;
use crate::progress::Progress;
use crate::store::db::Db;
use crate::store::error::StoreResult;
use crate::store::fts;
use crate::store::pg::{self, PgConn};

/// Live revisions read per page while indexing.
const PAGE: i64 = 256;

/// Rebuilds the projection inside the caller's transaction (the writer's job savepoint).
pub fn rebuild(conn: &PgConn) -> StoreResult<ReindexReport> {
    let db = Db::Postgres(conn);
    let orphans = |search: &str, revisions: &str| -> StoreResult<u64> {
        let sql = format!(
            "SELECT count(*) FROM {search} s
             WHERE NOT EXISTS (SELECT 1 FROM {revisions} r WHERE r.seq = s.seq AND r.purged = 0)"
        );
        Ok(db.query_one(&sql, &[], |r| r.get::<i64>(0))?.max(0) as u64)
    };
    let removed_orphan_rows =
        orphans("artifact_search", "artifact_revisions")? + orphans("claim_search", "claim_revisions")?;
    fts::clear(db)?;
    let total: i64 = db.query_one(
        "SELECT (SELECT count(*) FROM artifact_revisions WHERE purged = 0) + (SELECT count(*) FROM claim_revisions WHERE purged = 0)",
        &[],
        |r| r.get(0),
    )?;
    let mut progress = Progress::new("reindex: revisions", total.max(0) as u64);
    let (artifact_revisions, claim_revisions) = index_missing(conn, &mut progress)?;
    Ok(ReindexReport {
        artifact_revisions,
        claim_revisions,
        removed_orphan_rows,
        last_commit_seq: pg::last_commit_seq(conn)?,
    })
}

/// Writes the search row of every live revision that has none, with the text the write path
/// indexes (the title and, for indexable media types, the body; the statement of a claim).
/// Returns how many artifact and claim revisions it indexed.
pub fn index_missing(conn: &PgConn, progress: &mut Progress) -> StoreResult<(u64, u64)> {
    let db = Db::Postgres(conn);
    let mut artifacts = 0;
    let mut after = 0i64;
    let sql = format!(
        "SELECT {} FROM artifact_revisions r
         WHERE r.purged = 0 AND r.seq > ?1 AND NOT EXISTS (SELECT 1 FROM artifact_search s WHERE s.seq = r.seq)
         ORDER BY r.seq LIMIT ?2",
        StoredArtifact::COLUMNS
    );
    loop {
        let rows = db.query_all(&sql, &[&after, &PAGE], StoredArtifact::from_row)?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        for revision in rows {
            revision.index(db, |digest, size| pg::blob::get(conn, digest, size))?;
            artifacts += 1;
            progress.inc(1);
        }
    }
    let mut claims = 0;
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
            fts::insert_claim(db, seq, &statement)?;
            claims += 1;
            progress.inc(1);
        }
    }
    Ok((artifacts, claims))
}
