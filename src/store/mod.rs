//! The authoritative store: SQLite (WAL, FTS5) plus the blob CAS.
//!
//! Writes go through one writer thread with group commit (`writer`, on the loop both backends
//! share, `group`); reads use a small pool of read-only connections, each read in its own
//! snapshot transaction. Entity modules own their SQL and return plain row structs.
//!
//! **Invariants:** the store knows nothing about envelopes or JSON requests; `commit_seq` is
//! taken inside the same transaction as the change and its `events` row; revision rows are
//! immutable (enforced by triggers); the FTS tables are a rebuildable projection.

pub mod artifact;
pub mod backup;
pub mod browse;
pub mod claim;
pub mod conflict;
pub mod db;
mod error;
pub mod fts;
mod group;
pub mod idempotency;
pub mod pg;
pub mod portable;
pub mod purge;
pub mod reindex;
pub mod relation;
pub mod restore;
pub mod revisioned;
pub mod scope;
pub mod search;
pub(crate) mod sql;
pub mod sqlite;
mod staging;
#[cfg(test)]
pub(crate) mod test_seed;
#[cfg(test)]
mod tests_cycles;
pub mod tombstone;
pub mod vectors;
pub mod verify;
pub mod vocab;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use serde_json::Value;

pub use db::Db;
pub use error::{StoreError, StoreResult};
pub use sqlite::migrate::{SCHEMA_VERSION, schema_version};

use crate::blob::BlobStore;
use crate::protocol::Operation;
use crate::protocol::ids::EventId;
use crate::timefmt::{self, Timestamp};

pub use crate::paths::{BLOBS_DIR, DB_FILE};

/// What `meta.schema_version` holds at schema `version`: never a bare integer, which the
/// reference implementation would take for one of its own schema versions and migrate
/// (`sqlite/migrations/0004_store_format.sql`).
pub fn schema_tag(version: i64) -> String {
    format!("memoree-{version}")
}

/// `meta.store_format` of every Memoree store (from schema 4; 3 on PostgreSQL).
pub const STORE_FORMAT: &str = "memoree";

/// A handle to an open store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    db_path: PathBuf,
    backend: Backend,
    /// Whether any purge tombstone exists (reads annotate purged mentions only then).
    has_purges: AtomicBool,
}

/// Where the data lives.
enum Backend {
    /// The embedded store: SQLite in the data directory, one writer thread, pooled readers,
    /// and the filesystem CAS.
    Sqlite(sqlite::SqliteStore),
    /// A PostgreSQL database shared by any number of front ends; blobs live in it too.
    Postgres(pg::PgStore),
}

/// How a store describes itself on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreKind {
    pub authoritative: &'static str,
    pub blobs: &'static str,
    pub retrieval: &'static str,
    pub retrieval_mode: &'static str,
}

impl StoreKind {
    /// The embedded SQLite store with its filesystem CAS.
    pub const EMBEDDED: StoreKind = StoreKind {
        authoritative: "sqlite_wal",
        blobs: "filesystem",
        retrieval: "sqlite_fts5",
        retrieval_mode: "fts5",
    };
    /// A PostgreSQL database holding blobs too.
    pub const POSTGRES: StoreKind = StoreKind {
        authoritative: "postgresql",
        blobs: "postgresql",
        retrieval: "postgresql_fts",
        retrieval_mode: "postgresql_fts",
    };
}

/// Where a revision's external content is read from: the filesystem CAS or the database.
pub trait BlobSource {
    /// The raw bytes of `digest`, checked against it and `size`.
    fn get_blob(&self, digest: &crate::blob::Digest, size: u64) -> StoreResult<Vec<u8>>;
}

impl BlobSource for BlobStore {
    fn get_blob(&self, digest: &crate::blob::Digest, size: u64) -> StoreResult<Vec<u8>> {
        Ok(self.get(digest, size)?)
    }
}

impl BlobSource for pg::PgStore {
    fn get_blob(&self, digest: &crate::blob::Digest, size: u64) -> StoreResult<Vec<u8>> {
        pg::blob::get(&*self.connection()?, digest, size)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("data_dir", &self.inner.data_dir).finish()
    }
}

/// A mutation's view of the group transaction, positioned inside its own savepoint, on
/// either backend.
pub struct Tx<'c> {
    db: Db<'c>,
    now: Timestamp,
    /// `now` in the database form, formatted once per mutation.
    now_db: String,
}

impl<'c> Tx<'c> {
    pub(crate) fn new(db: Db<'c>, now: Timestamp) -> Tx<'c> {
        Tx {
            db,
            now,
            now_db: timefmt::to_db(&now),
        }
    }

    /// The connection, inside the job's savepoint.
    pub fn db(&self) -> Db<'c> {
        self.db
    }

    /// The instant this mutation is recorded at.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The database form of [`Tx::now`].
    pub fn now_db(&self) -> &str {
        &self.now_db
    }

    /// Takes the next commit sequence value.
    pub fn next_commit_seq(&self) -> StoreResult<i64> {
        self.db.query_one(
            "UPDATE commit_state SET commit_seq = commit_seq + 1 WHERE id = 1 RETURNING commit_seq",
            &[],
            |r| r.get(0),
        )
    }

    /// Appends the one `events` row of a logical mutation.
    pub fn append_event(&self, event: &Event<'_>) -> StoreResult<()> {
        self.db.execute(
            "INSERT INTO events (commit_seq, event_id, event_type, entity_type, entity_id, revision_id, actor, payload_json, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            &[
                &event.commit_seq,
                &EventId::generate(),
                &event.operation,
                &event.entity.as_str(),
                &event.entity_id,
                &event.revision_id,
                &event.actor,
                &event.payload.to_string(),
                &self.now_db(),
            ],
        )?;
        Ok(())
    }
}

/// What an `events` row names (the wire enum of `event.list`).
pub use crate::protocol::browse::EventEntityType as EventEntity;

/// The one `events` row of a logical mutation (see ARCHITECTURE.md, *Events*).
#[derive(Clone, Debug)]
pub struct Event<'a> {
    pub commit_seq: i64,
    /// The operation, recorded as `event_type`.
    pub operation: Operation,
    pub entity: EventEntity,
    pub entity_id: &'a str,
    /// The revision written or, for forget and retract, the head it applied to.
    pub revision_id: Option<&'a str>,
    pub actor: Option<&'a str>,
    /// Only what the entity rows do not already record.
    pub payload: Value,
}

impl Store {
    /// Opens (creating and migrating if needed) the store in `data_dir`.
    pub fn open(data_dir: &Path) -> StoreResult<Store> {
        let data_dir = data_dir.to_path_buf();
        let db_path = data_dir.join(DB_FILE);
        let (sqlite, has_purges) = sqlite::SqliteStore::open(&data_dir, &db_path)?;
        let store = Store {
            inner: Arc::new(Inner {
                data_dir,
                db_path,
                backend: Backend::Sqlite(sqlite),
                has_purges: AtomicBool::new(has_purges),
            }),
        };
        if has_purges && let Err(error) = store.resume_purges() {
            tracing::warn!(%error, "could not finish an interrupted purge; purge again to complete it");
        }
        Ok(store)
    }

    /// Whether reads must look for purged mentions: whether this store holds any purge
    /// tombstone. The embedded store has one writer, so its flag is exact; a PostgreSQL
    /// database is shared by front ends that do not tell each other about their purges, so
    /// there the answer is always yes and every read with ids asks the database (one indexed
    /// query), which makes a purge on any front end visible to the next read on every other.
    pub fn has_purges(&self) -> bool {
        !self.is_embedded() || self.inner.has_purges.load(Ordering::Relaxed)
    }

    /// Records that a purge (or an import of tombstones) happened.
    pub(crate) fn note_purges(&self) {
        self.inner.has_purges.store(true, Ordering::Relaxed);
    }

    /// Connects to the PostgreSQL store at `url` (migrating it if needed). `data_dir` is this
    /// front end's own directory (its lock and log); it holds no data.
    pub fn open_postgres(url: &str, data_dir: &Path) -> StoreResult<Store> {
        let store = Store::postgres_store(pg::PgStore::open(url)?, data_dir);
        store.finish_postgres_open()?;
        Ok(store)
    }

    /// Opens the PostgreSQL store at `url` like [`Store::open_postgres`] when the database is
    /// there; when it is unreachable or restarting, returns at once with a store that connects
    /// in the background, retrying for up to `wait` (see `PgStore::start`). Until then every
    /// request fails with `StoreError::Unavailable` (`doctor` reports the outage).
    /// [`Store::wait_postgres_ready`] waits for the outcome and finishes the open.
    pub fn start_postgres(url: &str, data_dir: &Path, wait: std::time::Duration) -> StoreResult<Store> {
        let store = Store::postgres_store(pg::PgStore::start(url, wait)?, data_dir);
        if !store.postgres().is_some_and(pg::PgStore::was_waiting) {
            store.finish_postgres_open()?;
        }
        Ok(store)
    }

    /// Blocks until a store from [`Store::start_postgres`] is ready and finishes opening it
    /// (interrupted purges are resumed), or returns why it never will be. `Ok` at once for a
    /// store that was ready when it was opened.
    pub fn wait_postgres_ready(&self) -> StoreResult<()> {
        let Some(pg) = self.postgres().filter(|pg| pg.was_waiting()) else {
            return Ok(());
        };
        pg.wait_ready()?;
        self.finish_postgres_open()
    }

    fn postgres_store(pg: pg::PgStore, data_dir: &Path) -> Store {
        Store {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_path_buf(),
                db_path: PathBuf::new(),
                backend: Backend::Postgres(pg),
                has_purges: AtomicBool::new(false),
            }),
        }
    }

    fn finish_postgres_open(&self) -> StoreResult<()> {
        let has_purges = self.read_db(tombstone::any_db)?;
        self.inner.has_purges.store(has_purges, Ordering::Relaxed);
        if has_purges && let Err(error) = self.resume_purges() {
            tracing::warn!(%error, "could not finish an interrupted purge; purge again to complete it");
        }
        Ok(())
    }

    /// The PostgreSQL backend, if this store is one.
    pub(crate) fn postgres(&self) -> Option<&pg::PgStore> {
        match &self.inner.backend {
            Backend::Postgres(pg) => Some(pg),
            Backend::Sqlite(_) => None,
        }
    }

    /// How `capabilities` and `doctor` name this store: the authoritative store, the blob
    /// store and the full-text retrieval.
    pub fn kind(&self) -> StoreKind {
        match self.inner.backend {
            Backend::Sqlite(_) => StoreKind::EMBEDDED,
            Backend::Postgres(_) => StoreKind::POSTGRES,
        }
    }

    /// The schema version of the store's database.
    pub fn schema_version(&self) -> StoreResult<i64> {
        self.read_db(|db| match db {
            Db::Sqlite(conn) => schema_version(conn),
            Db::Postgres(conn) => pg::schema_version(conn),
        })
    }

    /// Whether this store is the embedded SQLite store.
    pub fn is_embedded(&self) -> bool {
        matches!(self.inner.backend, Backend::Sqlite(_))
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The database file (embedded store only; empty on PostgreSQL).
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// The filesystem CAS of the embedded store.
    pub fn blobs(&self) -> StoreResult<&BlobStore> {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => Ok(&sqlite.blobs),
            Backend::Postgres(_) => Err(StoreError::Unsupported(
                "the filesystem CAS does not exist on the PostgreSQL store".to_owned(),
            )),
        }
    }

    /// Where revision content is read from.
    pub fn blob_source(&self) -> &dyn BlobSource {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => &sqlite.blobs,
            Backend::Postgres(pg) => pg,
        }
    }

    /// Stores content above the inline threshold before the mutation citing it, returning
    /// its digest and, on the embedded store, the pin that keeps a concurrent purge from
    /// erasing it until the mutation ran.
    pub fn put_blob_pinned(&self, bytes: &[u8]) -> StoreResult<(crate::blob::Digest, Option<crate::blob::BlobPin>)> {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => {
                let (digest, pin) = sqlite.blobs.put_pinned(bytes)?;
                Ok((digest, Some(pin)))
            }
            Backend::Postgres(pg) => Ok((pg.put_blob(bytes)?, None)),
        }
    }

    /// Runs a mutation in the next group commit; returns once it is durable.
    pub fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => sqlite.writer.write(f),
            Backend::Postgres(pg) => pg.write(f),
        }
    }

    /// Runs `f` on the writer connection while no write can happen (backups, reindex);
    /// embedded store only.
    pub fn exclusive<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => sqlite.writer.exclusive(f),
            Backend::Postgres(_) => Err(StoreError::Unsupported(
                "exclusive access is not available on the PostgreSQL store".to_owned(),
            )),
        }
    }

    /// Runs a read in one snapshot transaction (a pooled read-only SQLite connection, or a
    /// `REPEATABLE READ READ ONLY` PostgreSQL transaction).
    pub fn read_db<T>(&self, f: impl FnOnce(Db<'_>) -> StoreResult<T>) -> StoreResult<T> {
        match &self.inner.backend {
            Backend::Sqlite(_) => self.read(|conn| f(Db::Sqlite(conn))),
            Backend::Postgres(pg) => pg.read(|conn| f(Db::Postgres(conn))),
        }
    }

    /// Runs a read in one snapshot transaction on a pooled read-only SQLite connection; on
    /// PostgreSQL it is [`StoreError::Unsupported`] (store code not yet written against
    /// [`Db`] reads through this).
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let Backend::Sqlite(sqlite) = &self.inner.backend else {
            return Err(StoreError::Unsupported(
                "this read is not yet implemented on the PostgreSQL store".to_owned(),
            ));
        };
        sqlite.read(f)
    }

    /// The last committed sequence number.
    pub fn last_commit_seq(&self) -> StoreResult<i64> {
        self.read_db(|db| last_commit_seq(db))
    }

    /// Stops the writer after queued mutations finish.
    pub fn shutdown(&self) {
        match &self.inner.backend {
            Backend::Sqlite(sqlite) => sqlite.writer.shutdown(),
            Backend::Postgres(pg) => pg.shutdown(),
        }
    }
}

/// The last committed sequence number, read on `conn`.
pub fn last_commit_seq<'c>(db: impl Into<Db<'c>>) -> StoreResult<i64> {
    Ok(db
        .into()
        .query_opt("SELECT commit_seq FROM commit_state WHERE id = 1", &[], |row| {
            row.get(0)
        })?
        .unwrap_or(0))
}
