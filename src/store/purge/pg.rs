//! The physical scrub of a purge on PostgreSQL: what [`super::purge`] made unreachable leaves
//! the database's files.
//!
//! The logical purge blanked rows and deleted search rows, but PostgreSQL's MVCC keeps the old
//! row versions (with the erased bytes, in the heap, its TOAST table and its indexes) until
//! they are vacuumed, and a plain `VACUUM` only marks their space free. [`scrub`] therefore:
//! 1. deletes the `blobs` rows and `blob_chunks` of content only purged revisions referenced,
//!    as a mutation of this front end's writer (under the database-wide commit lock, so no
//!    other front end's mutation can cite the blob in between; a later mutation citing the
//!    same bytes stores them again inside its own transaction, see `artifact::insert_revision`);
//! 2. waits (at most [`HORIZON_PATIENCE`]) until no other session, prepared transaction or
//!    replication slot of the cluster still holds a snapshot from before the scrub began: a
//!    row version such a snapshot can see is kept by any rewrite;
//! 3. rewrites exactly the tables that held the erased bytes with one `VACUUM (FULL,
//!    ANALYZE)` (new files for heap, TOAST and indexes; the statistics re-sampled from the
//!    blanked rows), then `pg_statistic` itself with `VACUUM (FULL)` (the old statistics
//!    could hold sampled values), and checks through `pg_relation_filenode` that every table
//!    was really rewritten (a role that does not own a table gets only a warning from
//!    `VACUUM`);
//! 4. only then marks the tombstone `erased` (again through the writer).
//!
//! `VACUUM (FULL)` cannot run inside a transaction and takes an `ACCESS EXCLUSIVE` lock on each
//! table while it copies it: on a shared team database every front end's reads and writes of
//! those tables wait for it (time proportional to the table sizes), and it waits itself for
//! running transactions, giving up after the session's `lock_timeout`. A scrub that cannot
//! finish leaves the tombstone not `erased`: the purge is acknowledged with
//! `erasure_complete: false`, and the next purge of the entity or the next start of any front
//! end ([`crate::store::Store::resume_purges`]) finishes it.
//!
//! **Out of reach** (the acknowledgement's `EARLIER_COPIES_RETAIN_CONTENT` warning says so):
//! WAL segments not yet recycled (and recycled ones are overwritten, not zeroed), WAL archives,
//! base backups and PITR, streaming and logical replicas (each needs its own rewrite),
//! server logs that recorded statement parameters, and the file system's free blocks that held
//! the old table files.
//!
//! **Invariant:** `erased` is set only after the rewrite of every table was observed and
//! after no snapshot older than the scrub could keep an erased row version alive.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::EntityKind;
use crate::store::error::{StoreError, StoreResult};
use crate::store::pg::{PgConn, PgStore};
use crate::store::{Db, tombstone};

/// How long [`scrub`] waits for sessions holding a snapshot older than the scrub.
pub const HORIZON_PATIENCE: Duration = if cfg!(test) {
    Duration::from_secs(2)
} else {
    Duration::from_secs(20)
};

/// The tables whose old row versions may hold the erased bytes of a purged `kind`: the
/// revisions, the entity row (its lifecycle reason), the search rows, events and replay
/// records (reasons), the semantic vectors (their meaning) and, for artifacts, the blobs.
pub fn tables(kind: EntityKind) -> &'static [&'static str] {
    match kind {
        EntityKind::Artifact => &[
            "artifact_revisions",
            "artifacts",
            "artifact_search",
            "semantic_vectors",
            "events",
            "idempotency",
            "blobs",
            "blob_chunks",
        ],
        EntityKind::Claim => &[
            "claim_revisions",
            "claims",
            "claim_search",
            "semantic_vectors",
            "events",
            "idempotency",
        ],
    }
}

/// Physically erases what the purge of `entity_id` made unreachable (see the module
/// documentation). Returns the tombstone's final erasure report.
pub fn scrub(store: &PgStore, entity_id: &str) -> StoreResult<Value> {
    let id = entity_id.to_owned();
    let (kind, mut erasure, removed, shared) = store.write(move |tx| {
        let db = tx.db();
        let Some(tombstone) = tombstone::load(db, &id)? else {
            return Err(StoreError::NotFound(format!("the tombstone of {id}")));
        };
        let (removed, shared) = erase_blobs(db, &id)?;
        Ok((tombstone.entity_type, tombstone.erasure, removed, shared))
    })?;
    if !erasure.is_object() {
        erasure = json!({});
    }
    erasure["removed_blobs"] = json!(removed);
    erasure["retained_shared_blobs"] = json!(shared);
    erasure["retained_pinned_blobs"] = json!(0);
    let conn = store.connection()?;
    let quiet = wait_for_older_snapshots(&conn)?;
    erasure["older_snapshots_released"] = json!(quiet);
    let rewritten = quiet && rewrite(&conn, tables(kind))?;
    erasure["database_rewritten"] = json!(rewritten);
    drop(conn);
    let id = entity_id.to_owned();
    let report = erasure.to_string();
    store.write(move |tx| {
        tx.db().execute(
            "UPDATE purges SET erasure_json = ?1, erased = ?2 WHERE entity_id = ?3",
            &[&report, &i64::from(rewritten), &id],
        )
    })?;
    Ok(erasure)
}

/// Deletes the blobs only purged revisions of `entity_id` referenced, inside the caller's
/// transaction. Returns `(removed, retained because a live revision shares them)`.
fn erase_blobs(db: Db<'_>, entity_id: &str) -> StoreResult<(u64, u64)> {
    let candidates: Vec<(String, bool)> = db.query_all(
        "SELECT DISTINCT p.content_blake3, EXISTS (SELECT 1 FROM artifact_revisions r
                 WHERE r.blob_hash = p.content_blake3 AND r.purged = 0 AND r.inline_blob IS NULL)
         FROM purged_revisions p JOIN purges t ON t.entity_id = p.entity_id
         WHERE p.entity_id = ?1 AND t.entity_type = 'artifact' AND EXISTS (SELECT 1 FROM blobs b WHERE b.hash = p.content_blake3)",
        &[&entity_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (mut removed, mut shared) = (0, 0);
    for (hash, live) in candidates {
        if live {
            shared += 1;
            continue;
        }
        db.execute("DELETE FROM blob_chunks WHERE hash = ?1", &[&hash])?;
        removed += db.execute("DELETE FROM blobs WHERE hash = ?1", &[&hash])?;
    }
    Ok((removed, shared))
}

/// Waits until no other session of this database (or without one: WAL senders), no prepared
/// transaction and no replication slot holds a snapshot taken before now; `false` if one
/// still does after [`HORIZON_PATIENCE`]. Conservative: a transaction that merely started
/// earlier and has moved on to a newer snapshot is waited for only while its `backend_xmin`
/// is older.
fn wait_for_older_snapshots(conn: &PgConn) -> StoreResult<bool> {
    // Every transaction that committed before this statement, the purge included, has an id
    // below the snapshot's xmax; a snapshot whose xmin is at least that sees them all.
    let horizon: i64 = conn
        .query_one(
            "SELECT CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS bigint) % 4294967296",
            &[],
        )?
        .get(0);
    let deadline = Instant::now() + HORIZON_PATIENCE;
    loop {
        let older: i64 = conn
            .query_one(
                "WITH h(x) AS (SELECT CAST(CAST(CAST(?1 AS bigint) AS text) AS xid))
                 SELECT (SELECT count(*) FROM pg_stat_activity, h
                         WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
                           AND (datname = current_database() OR datname IS NULL) AND age(backend_xmin) > age(h.x))
                      + (SELECT count(*) FROM pg_prepared_xacts, h
                         WHERE database = current_database() AND age(transaction) > age(h.x))
                      + (SELECT count(*) FROM pg_replication_slots, h
                         WHERE xmin IS NOT NULL AND age(xmin) > age(h.x))",
                &[&horizon],
            )?
            .get(0);
        if older == 0 {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `VACUUM (FULL, ANALYZE)` of `tables`, then `VACUUM (FULL)` of `pg_statistic`; whether every
/// one of them got a new file (`pg_relation_filenode` changed).
fn rewrite(conn: &PgConn, tables: &[&str]) -> StoreResult<bool> {
    let filenodes = |conn: &PgConn| -> StoreResult<Vec<Option<i64>>> {
        tables
            .iter()
            .chain(&["pg_catalog.pg_statistic"])
            .map(|table| {
                let row = conn.query_one(
                    "SELECT CAST(pg_relation_filenode(CAST(CAST(?1 AS text) AS regclass)) AS bigint)",
                    &[table],
                )?;
                Ok(row.get(0))
            })
            .collect()
    };
    let before = filenodes(conn)?;
    conn.batch(&format!("VACUUM (FULL, ANALYZE) {}", tables.join(", ")))?;
    // The statistics just sampled hold only blanked rows; their previous versions may have
    // held sampled values of the erased content.
    conn.batch("VACUUM (FULL) pg_catalog.pg_statistic")?;
    let after = filenodes(conn)?;
    Ok(before.iter().zip(&after).all(|(old, new)| old.is_some() && old != new))
}
