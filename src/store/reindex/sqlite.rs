//! `reindex` on the embedded (SQLite) store: the FTS5 tables `artifact_fts`/`claim_fts`
//! (keyed by `rowid` = revision `seq`) rebuilt from the authoritative revisions and the
//! filesystem CAS.
//!
//! [`rebuild`] runs on the writer connection inside [`Store::exclusive`](crate::store::Store::exclusive),
//! so no write interleaves, and opens its own `BEGIN IMMEDIATE` transaction:
//! every FTS row is dropped (the ones of no live revision are counted as orphans), one row per
//! live revision is written again through [`crate::store::fts`] and [`StoredArtifact`], and
//! both tables are optimized. An import calls `rebuild_in_transaction` as its last step,
//! inside its own transaction.
//!
//! **Invariants:** authoritative tables are never written and `commit_seq` does not move; a
//! purged revision gets no row; any error (a blob that cannot be read verified) rolls the
//! whole transaction back and leaves the old projection.

use std::collections::HashSet;

use rusqlite::Connection;

use super::{ReindexReport, StoredArtifact};
use crate::blob::BlobStore;
use crate::progress::Progress;
use crate::store::db::{Db, Row};
use crate::store::error::StoreResult;
use crate::store::fts;
use crate::store::last_commit_seq;

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

pub(crate) fn reindex_artifacts(conn: &Connection, blobs: &BlobStore, progress: &mut Progress) -> StoreResult<u64> {
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
