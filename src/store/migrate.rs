//! Embedded, numbered, append-only SQL migrations tracked in `PRAGMA user_version`.

use rusqlite::Connection;

use super::error::{StoreError, StoreResult};

/// The migrations in order; the schema version is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_purge_tombstones.sql"),
    include_str!("migrations/0003_keyed_tombstones.sql"),
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The migration that keys tombstone digests; existing ones are rewritten after its SQL.
const KEYED_TOMBSTONES: i64 = 3;

/// Reads the schema version of an open database.
pub fn schema_version(conn: &Connection) -> StoreResult<i64> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

/// Refuses databases this binary cannot own, before anything is modified.
pub fn preflight(conn: &Connection) -> StoreResult<()> {
    let version = schema_version(conn)?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Config(format!(
            "database schema version {version} is newer than this binary supports ({SCHEMA_VERSION})"
        )));
    }
    if version == 0 {
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |r| {
            r.get(0)
        })?;
        if tables > 0 {
            return Err(StoreError::Config(
                "the database is not empty and is not a Memoree store".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Applies every pending migration, each in its own transaction.
pub fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let current = schema_version(conn)?;
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let version = index as i64 + 1;
        if version <= current {
            continue;
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)?;
        if version == KEYED_TOMBSTONES {
            super::tombstone::rekey_legacy(super::Db::Sqlite(&tx))?;
            tx.execute_batch(
                "CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
                 BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;",
            )?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {version}"))?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
            [version.to_string()],
        )?;
        tx.commit()?;
    }
    Ok(())
}
