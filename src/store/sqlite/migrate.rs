//! Embedded, numbered, append-only SQL migrations tracked in `PRAGMA user_version`.

use rusqlite::Connection;

use crate::blob::BlobStore;
use crate::store::error::{StoreError, StoreResult};
use crate::store::schema_tag;

/// The migrations in order; the schema version is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_purge_tombstones.sql"),
    include_str!("migrations/0003_keyed_tombstones.sql"),
    include_str!("migrations/0004_store_format.sql"),
    include_str!("migrations/0005_semantic_vectors.sql"),
    include_str!("migrations/0006_fts_body_first.sql"),
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The migration that keys tombstone digests; existing ones are rewritten after its SQL.
const KEYED_TOMBSTONES: i64 = 3;

/// The migration that recreates `artifact_fts` body first; its rows are written again after
/// its SQL, from the revisions and (for bodies outside the row) the CAS.
const FTS_BODY_FIRST: i64 = 6;

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

/// Applies every pending migration, each in its own transaction. `blobs` is the store's CAS,
/// which a migration that rebuilds the full-text index reads indexed bodies from.
pub fn migrate(conn: &mut Connection, blobs: &BlobStore) -> StoreResult<()> {
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
        if version == FTS_BODY_FIRST {
            rebuild_artifact_fts(&tx, blobs)?;
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

/// Writes the artifact full-text rows of every live revision into the (new, empty)
/// `artifact_fts` and merges them into one segment, as `reindex` does. Logs on stderr, as a
/// large store takes a while.
fn rebuild_artifact_fts(conn: &Connection, blobs: &BlobStore) -> StoreResult<()> {
    let started = std::time::Instant::now();
    let total: i64 = conn.query_row("SELECT count(*) FROM artifact_revisions WHERE purged = 0", [], |r| {
        r.get(0)
    })?;
    let mut progress = crate::progress::Progress::new("migration: artifact full-text index", total.max(0) as u64);
    let revisions = crate::store::reindex::sqlite::reindex_artifacts(conn, blobs, &mut progress)?;
    conn.execute_batch("INSERT INTO artifact_fts (artifact_fts) VALUES ('optimize');")?;
    if revisions > 0 {
        tracing::info!(
            revisions,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "rebuilt the artifact full-text index body first (schema {FTS_BODY_FIRST})"
        );
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

    /// What `search` returns for `query`: `(artifact id, score)` in order.
    fn search(service: &crate::service::Service, query: &str) -> Vec<(String, String)> {
        let response = service.handle_value(
            serde_json::json!({"request_id": "r", "op": "search",
                               "context": {"workspace_id": "wsp_test", "project_id": "prj_test"},
                               "input": {"query": query, "limit": 10}}),
            "test",
        );
        assert!(response.ok, "{:?}", response.error);
        response.result.unwrap()["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| (hit["id"].to_string(), hit["score"].to_string()))
            .collect()
    }

    #[test]
    fn a_schema_five_store_gets_its_full_text_index_rebuilt_body_first_with_the_same_answers() {
        use crate::service::Service;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let service = Service::open(&data).unwrap();
        let put = |key: &str, title: &str, text: &str| {
            let response = service.handle_value(
                serde_json::json!({"request_id": "r", "op": "artifact.put", "idempotency_key": key,
                                   "context": {"workspace_id": "wsp_test", "project_id": "prj_test"},
                                   "input": {"kind": "note", "title": title,
                                             "content": {"type": "text", "data": text}}}),
                "test",
            );
            assert!(response.ok, "{:?}", response.error);
        };
        put("k1", "Group commit", "the writer commits mutations in groups of many");
        put(
            "k2",
            "Pottery class",
            "Melanie took the kids to a pottery class on Sunday",
        );
        // Over the inline threshold: the body is read back from the CAS.
        let long = "the museum keeps a pottery wheel from the first dynasty. ".repeat(400);
        put("k3", "Museum notes", &long);
        let queries = ["pottery", "group commit writer", "museum dynasty", "Melanie kids"];
        let before: Vec<_> = queries.iter().map(|q| search(&service, q)).collect();
        assert!(before.iter().all(|hits| !hits.is_empty()), "{before:?}");
        let db = service.store().db_path().to_path_buf();
        service.store().shutdown();
        drop(service);
        // What a schema-5 binary left: the index title first (its rows do not matter, the
        // migration drops the table).
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "DROP TABLE artifact_fts;
             CREATE VIRTUAL TABLE artifact_fts USING fts5 (title, body, content = '', contentless_delete = 1,
                 tokenize = 'unicode61 remove_diacritics 2');
             PRAGMA user_version = 5;",
        )
        .unwrap();
        drop(conn);
        let service = Service::open(&data).unwrap();
        assert_eq!(service.store().schema_version().unwrap(), SCHEMA_VERSION);
        let after: Vec<_> = queries.iter().map(|q| search(&service, q)).collect();
        assert_eq!(after, before);
        assert!(service.store().verify().unwrap().is_ok());
        let columns: String = service
            .store()
            .read(|conn| {
                Ok(
                    conn.query_row("SELECT sql FROM sqlite_schema WHERE name = 'artifact_fts'", [], |r| {
                        r.get(0)
                    })?,
                )
            })
            .unwrap();
        assert!(columns.contains("body, title"), "{columns}");
        service.store().shutdown();
    }
}
