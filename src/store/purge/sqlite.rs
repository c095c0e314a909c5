//! The physical scrub of a purge on the embedded store (SQLite and the filesystem CAS), and the
//! transaction helpers the purge and `import` run on the writer connection.
//!
//! [`scrub`] runs after the logical purge committed, alone on the writer connection outside
//! any transaction: CAS objects that no live revision references are overwritten and
//! unlinked (unless a concurrent write pinned them), every FTS5 index is merged into one
//! segment (`optimize`, so deleted terms leave the index b-trees), `VACUUM` rewrites the
//! database (no free page or stale cell keeps old bytes, `secure_delete` on) and the WAL is
//! checkpointed and truncated to zero bytes.
//!
//! **Invariant:** the tombstone is marked `erased` only once the WAL was truncated and no
//! pinned object was left.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use crate::blob::{BlobStore, Digest};
use crate::store::Tx;
use crate::store::error::StoreResult;
use crate::store::tombstone::fts_tables;

/// Runs `f` in one `BEGIN IMMEDIATE` transaction on the writer connection (outside any
/// group), committing on success and rolling back on failure or panic.
pub fn in_transaction<T>(conn: &Connection, f: impl FnOnce(&Tx<'_>) -> StoreResult<T>) -> StoreResult<T> {
    struct Rollback<'c>(&'c Connection);
    impl Drop for Rollback<'_> {
        fn drop(&mut self) {
            if !self.0.is_autocommit() {
                let _ = self.0.execute_batch("ROLLBACK");
            }
        }
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let guard = Rollback(conn);
    let tx = Tx::new(crate::store::Db::Sqlite(conn), crate::timefmt::now());
    let value = f(&tx)?;
    conn.execute_batch("COMMIT")?;
    drop(guard);
    Ok(value)
}

/// Runs `f` with `PRAGMA secure_delete = ON`, restoring the previous setting afterwards.
pub fn with_secure_delete<T>(conn: &Connection, f: impl FnOnce() -> StoreResult<T>) -> StoreResult<T> {
    let previous: i64 = conn.query_row("PRAGMA secure_delete", [], |r| r.get(0))?;
    conn.query_row("PRAGMA secure_delete = ON", [], |r| r.get::<_, i64>(0))?;
    let result = f();
    let _ = conn.query_row(&format!("PRAGMA secure_delete = {previous}"), [], |r| {
        r.get::<_, i64>(0)
    });
    result
}

/// How long [`scrub`] waits for readers holding an older snapshot before it reports the
/// WAL as not yet truncated.
const CHECKPOINT_PATIENCE: std::time::Duration = if cfg!(test) {
    std::time::Duration::from_secs(1)
} else {
    std::time::Duration::from_secs(20)
};

/// Physically erases what [`super::purge`] made unreachable, on the writer connection outside any
/// transaction (see the module documentation). Returns the tombstone's final erasure
/// report; `erased` is set only when the WAL was truncated.
pub fn scrub(conn: &Connection, blobs: &BlobStore, entity_id: &str) -> StoreResult<Value> {
    with_secure_delete(conn, || {
        let mut erasure = conn
            .query_row(
                "SELECT erasure_json FROM purges WHERE entity_id = ?1",
                [entity_id],
                |r| r.get::<_, String>(0),
            )
            .optional()?
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .unwrap_or_else(|| json!({}));
        let (removed, shared, pinned) = erase_blobs(conn, blobs, entity_id)?;
        erasure["removed_blobs"] = json!(removed);
        erasure["retained_shared_blobs"] = json!(shared);
        erasure["retained_pinned_blobs"] = json!(pinned);
        in_transaction(conn, |_| {
            for fts in fts_tables(conn)? {
                conn.execute(&format!("INSERT INTO \"{fts}\" (\"{fts}\") VALUES ('optimize')"), [])?;
            }
            Ok(())
        })?;
        conn.execute_batch("VACUUM")?;
        erasure["database_rewritten"] = json!(true);
        let truncated = checkpoint_truncate(conn)?;
        erasure["wal_truncated"] = json!(truncated);
        conn.execute(
            "UPDATE purges SET erasure_json = ?1, erased = ?2 WHERE entity_id = ?3",
            params![erasure.to_string(), truncated && pinned == 0, entity_id],
        )?;
        // The update above is a small WAL frame without any erased byte; truncate again so
        // the WAL is empty when the purge is acknowledged.
        if truncated {
            checkpoint_truncate(conn)?;
        }
        Ok(erasure)
    })
}

/// Erases the CAS objects only purged revisions of `entity_id` referenced. Returns
/// `(removed, retained because a live revision shares them, retained because pinned)`.
fn erase_blobs(conn: &Connection, blobs: &BlobStore, entity_id: &str) -> StoreResult<(u64, u64, u64)> {
    let mut stmt = conn.prepare(
        "SELECT DISTINCT p.content_blake3, EXISTS (SELECT 1 FROM artifact_revisions r
                 WHERE r.blob_hash = p.content_blake3 AND r.purged = 0 AND r.inline_blob IS NULL)
         FROM purged_revisions p JOIN purges t ON t.entity_id = p.entity_id
         WHERE p.entity_id = ?1 AND t.entity_type = 'artifact' AND p.content_blake3 IS NOT NULL",
    )?;
    let candidates = stmt
        .query_map([entity_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (mut removed, mut shared, mut pinned) = (0, 0, 0);
    for (hex, live) in candidates {
        let Some(digest) = Digest::parse(&hex) else { continue };
        if !blobs.contains(&digest) {
            continue;
        }
        if live {
            shared += 1;
        } else if blobs.erase_unpinned(&digest)? {
            removed += 1;
        } else {
            pinned += 1;
        }
    }
    Ok((removed, shared, pinned))
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` until it completes or [`CHECKPOINT_PATIENCE`] passes
/// (a reader in another process, such as a running export, may hold an older snapshot).
fn checkpoint_truncate(conn: &Connection) -> StoreResult<bool> {
    let deadline = std::time::Instant::now() + CHECKPOINT_PATIENCE;
    loop {
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        if busy == 0 {
            return Ok(true);
        }
        if std::time::Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
