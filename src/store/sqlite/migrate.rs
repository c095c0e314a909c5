//! Embedded, numbered, append-only SQL migrations tracked in `PRAGMA user_version`.

use rusqlite::Connection;

use crate::store::error::{StoreError, StoreResult};
use crate::store::schema_tag;

/// The migrations in order; the schema version is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_purge_tombstones.sql"),
    include_str!("migrations/0003_keyed_tombstones.sql"),
    include_str!("migrations/0004_store_format.sql"),
    include_str!("migrations/0005_semantic_vectors.sql"),
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
            crate::store::tombstone::rekey_legacy(crate::store::Db::Sqlite(&tx))?;
            tx.execute_batch(
                "CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
                 BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;",
            )?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {version}"))?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
            [schema_tag(version)],
        )?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::SCHEMA_VERSION;
    use crate::store::Store;
    use crate::store::{STORE_FORMAT, schema_tag};

    fn meta(path: &std::path::Path, key: &str) -> Option<String> {
        let conn = Connection::open(path).unwrap();
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .ok()
    }

    #[test]
    fn a_store_never_records_a_bare_integer_schema_version_that_the_reference_would_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("data")).unwrap();
        let db = store.db_path().to_path_buf();
        assert!(store.verify().unwrap().is_ok());
        store.shutdown();
        let recorded = meta(&db, "schema_version").unwrap();
        assert_eq!(recorded, schema_tag(SCHEMA_VERSION));
        // The reference parses the value as an i64 and migrates 1..=5: ours does not parse.
        assert!(recorded.parse::<i64>().is_err(), "{recorded}");
        assert_eq!(meta(&db, "store_format").as_deref(), Some(STORE_FORMAT));
        // verify notices a store that lost its identity.
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("DELETE FROM meta WHERE key = 'store_format'")
            .unwrap();
        drop(conn);
        let store = Store::open(&dir.path().join("data")).unwrap();
        let report = store.verify().unwrap();
        assert!(
            report.has(crate::store::verify::kind::SCHEMA_VERSION),
            "{:?}",
            report.issues
        );
        store.shutdown();
    }

    #[test]
    fn a_store_of_schema_three_is_migrated_to_the_tagged_version_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let store = Store::open(&data).unwrap();
        let db = store.db_path().to_path_buf();
        store.shutdown();
        // What a schema-3 binary left: the version as a bare integer and no format marker.
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "PRAGMA user_version = 3;
             UPDATE meta SET value = '3' WHERE key = 'schema_version';
             DELETE FROM meta WHERE key = 'store_format';",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&data).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(store.verify().unwrap().is_ok());
        store.shutdown();
        assert_eq!(meta(&db, "schema_version"), Some(schema_tag(SCHEMA_VERSION)));
        assert_eq!(meta(&db, "store_format").as_deref(), Some(STORE_FORMAT));
    }
}
