//! Embedded, numbered, append-only PostgreSQL migrations, tracked in `memoree_schema`.
//!
//! Several front ends may start against one database at the same instant: all of the
//! migration work runs in one transaction under a transaction-scoped advisory lock, so exactly
//! one of them applies a pending migration and the others then find it applied. DDL is
//! transactional in PostgreSQL, so a failed migration leaves the previous schema untouched.

use super::PgConn;
use crate::store::error::{StoreError, StoreResult};

/// The migrations in order; the schema version is the number applied.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("migrations/0001_init.sql")),
    (
        "0002_keyed_tombstones",
        include_str!("migrations/0002_keyed_tombstones.sql"),
    ),
    ("0003_store_format", include_str!("migrations/0003_store_format.sql")),
    (
        "0004_semantic_vectors",
        include_str!("migrations/0004_semantic_vectors.sql"),
    ),
];

/// The migration that keys tombstone digests; existing ones are rewritten after its SQL.
const KEYED_TOMBSTONES: i64 = 2;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key that serializes migrations (ASCII "memoree!" as a big-endian i64).
const MIGRATION_LOCK: i64 = 0x6d65_6d6f_7265_6521;

/// Reads the schema version (0 for a database Memoree never migrated).
pub fn schema_version(conn: &PgConn) -> StoreResult<i64> {
    let tracked: bool = conn
        .query_one("SELECT to_regclass('memoree_schema') IS NOT NULL", &[])?
        .get(0);
    if !tracked {
        return Ok(0);
    }
    Ok(conn
        .query_one("SELECT coalesce(max(version), 0) FROM memoree_schema", &[])?
        .get(0))
}

/// Refuses a database this binary cannot own, then applies every pending migration.
pub fn migrate(conn: &PgConn) -> StoreResult<()> {
    conn.batch("BEGIN")?;
    let result = migrate_locked(conn);
    match result {
        Ok(()) => conn.batch("COMMIT"),
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}

fn migrate_locked(conn: &PgConn) -> StoreResult<()> {
    conn.execute("SELECT pg_advisory_xact_lock(?1)", &[&MIGRATION_LOCK])?;
    let current = schema_version(conn)?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::Config(format!(
            "database schema version {current} is newer than this binary supports ({SCHEMA_VERSION})"
        )));
    }
    if current == 0 {
        let tables: i64 = conn
            .query_one(
                "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                &[],
            )?
            .get(0);
        if tables > 0 {
            return Err(StoreError::Config(
                "the database is not empty and is not a Memoree store".to_owned(),
            ));
        }
        conn.batch(
            "CREATE TABLE memoree_schema (
                 version    BIGINT PRIMARY KEY,
                 name       TEXT COLLATE \"C\" NOT NULL,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )?;
    }
    for (index, (name, sql)) in MIGRATIONS.iter().enumerate() {
        let version = index as i64 + 1;
        if version <= current {
            continue;
        }
        conn.batch(sql)?;
        if version == KEYED_TOMBSTONES {
            crate::store::tombstone::rekey_legacy(crate::store::Db::Postgres(conn))?;
            conn.batch(
                "CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
                     FOR EACH ROW EXECUTE FUNCTION memoree_refuse('purge tombstones are permanent')",
            )?;
        }
        conn.execute(
            "INSERT INTO memoree_schema (version, name) VALUES (?1, ?2)",
            &[&version, name],
        )?;
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&crate::store::schema_tag(version)],
        )?;
    }
    Ok(())
}
