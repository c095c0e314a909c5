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
mod migrate;
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
mod staging;
#[cfg(test)]
pub(crate) mod test_seed;
#[cfg(test)]
mod tests_cycles;
pub mod tombstone;
pub mod vectors;
pub mod verify;
pub mod vocab;
mod writer;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

pub use db::Db;
pub use error::{StoreError, StoreResult};
pub use migrate::{SCHEMA_VERSION, schema_version};

use crate::blob::BlobStore;
use crate::fault::DiskFullFlag;
use crate::protocol::Operation;
use crate::protocol::ids::EventId;
use crate::timefmt::{self, Timestamp};

pub use crate::paths::{BLOBS_DIR, DB_FILE};

/// Upper bound on idle pooled read connections.
const MAX_IDLE_READERS: usize = 8;
/// Page cache of the writer connection, in KiB. It holds the interior pages every
/// mutation walks; the OS page cache serves the rest, and the daemon's resident memory
/// grows by whatever is cached (SQLite's default is 2000 KiB per connection).
const WRITER_CACHE_KIB: u32 = 1024;
/// Page cache of each read connection, in KiB. Under writes a reader's cache is discarded
/// at each new snapshot anyway; several readers exist only under concurrent reads.
pub(crate) const READER_CACHE_KIB: u32 = 512;
/// Prepared statements kept per connection (`prepare_cached`): search, recall and
/// context.build together, or all the mutations, prepare more distinct statements than
/// rusqlite's default of 16.
const STATEMENT_CACHE: usize = 64;

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
    Sqlite {
        blobs: BlobStore,
        writer: writer::Writer,
        readers: Mutex<Vec<Connection>>,
    },
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
        ensure_private_dir(&data_dir)?;
        let db_path = data_dir.join(DB_FILE);
        let mut conn = Connection::open_with_flags(
            &db_path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate::preflight(&conn)?;
        // Only takes effect on a new, empty database (an existing store keeps its page size).
        // Every commit writes each page it touched to the WAL in full (a `claim.assert`
        // touches 13: its rows, their indexes, the FTS segment, the event, the replay record
        // and the commit sequence), so the page size sets the bytes written and checksummed
        // per commit: 4 KiB pages write a quarter of what 16 KiB pages did, and store text
        // artifacts more compactly too (see `benches/storage.rs`).
        conn.execute_batch("PRAGMA page_size = 4096;")?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        // Every job of a group runs in its own SAVEPOINT, so SQLite keeps the original of each
        // page a job modifies in a statement sub-journal until the job is released. On disk
        // that is a temporary file written page by page (as many bytes again as the WAL
        // frames of the commit); in memory it is a copy that is dropped at RELEASE. It is
        // never needed for crash recovery (the WAL is), so durability is unchanged.
        conn.execute_batch("PRAGMA temp_store = MEMORY;")?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{WRITER_CACHE_KIB};"))?;
        migrate::migrate(&mut conn)?;
        configure_statements(&conn)?;
        for suffix in ["", "-wal", "-shm"] {
            let path = PathBuf::from(format!("{}{suffix}", db_path.display()));
            if path.exists() {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
            }
        }
        let disk_full = DiskFullFlag::from_env();
        let blobs = BlobStore::open(data_dir.join(BLOBS_DIR))?.with_disk_full_flag(disk_full.clone());
        let has_purges = tombstone::any(&conn)?;
        let writer = writer::Writer::spawn(conn, disk_full)?;
        let store = Store {
            inner: Arc::new(Inner {
                data_dir,
                db_path,
                backend: Backend::Sqlite {
                    blobs,
                    writer,
                    readers: Mutex::new(Vec::new()),
                },
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
            Backend::Sqlite { .. } => None,
        }
    }

    /// How `capabilities` and `doctor` name this store: the authoritative store, the blob
    /// store and the full-text retrieval.
    pub fn kind(&self) -> StoreKind {
        match self.inner.backend {
            Backend::Sqlite { .. } => StoreKind::EMBEDDED,
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
        matches!(self.inner.backend, Backend::Sqlite { .. })
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
            Backend::Sqlite { blobs, .. } => Ok(blobs),
            Backend::Postgres(_) => Err(StoreError::Unsupported(
                "the filesystem CAS does not exist on the PostgreSQL store".to_owned(),
            )),
        }
    }

    /// Where revision content is read from.
    pub fn blob_source(&self) -> &dyn BlobSource {
        match &self.inner.backend {
            Backend::Sqlite { blobs, .. } => blobs,
            Backend::Postgres(pg) => pg,
        }
    }

    /// Stores content above the inline threshold before the mutation citing it, returning
    /// its digest and, on the embedded store, the pin that keeps a concurrent purge from
    /// erasing it until the mutation ran.
    pub fn put_blob_pinned(&self, bytes: &[u8]) -> StoreResult<(crate::blob::Digest, Option<crate::blob::BlobPin>)> {
        match &self.inner.backend {
            Backend::Sqlite { blobs, .. } => {
                let (digest, pin) = blobs.put_pinned(bytes)?;
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
            Backend::Sqlite { writer, .. } => writer.write(f),
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
            Backend::Sqlite { writer, .. } => writer.exclusive(f),
            Backend::Postgres(_) => Err(StoreError::Unsupported(
                "exclusive access is not available on the PostgreSQL store".to_owned(),
            )),
        }
    }

    /// Runs a read in one snapshot transaction (a pooled read-only SQLite connection, or a
    /// `REPEATABLE READ READ ONLY` PostgreSQL transaction).
    pub fn read_db<T>(&self, f: impl FnOnce(Db<'_>) -> StoreResult<T>) -> StoreResult<T> {
        match &self.inner.backend {
            Backend::Sqlite { .. } => self.read(|conn| f(Db::Sqlite(conn))),
            Backend::Postgres(pg) => pg.read(|conn| f(Db::Postgres(conn))),
        }
    }

    /// Runs a read in one snapshot transaction on a pooled read-only SQLite connection; on
    /// PostgreSQL it is [`StoreError::Unsupported`] (store code not yet written against
    /// [`Db`] reads through this).
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let Backend::Sqlite { readers, .. } = &self.inner.backend else {
            return Err(StoreError::Unsupported(
                "this read is not yet implemented on the PostgreSQL store".to_owned(),
            ));
        };
        let pooled = readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        conn.execute_batch("BEGIN DEFERRED")?;
        let result = f(&conn);
        let ended = conn.execute_batch("COMMIT");
        if ended.is_ok() {
            let mut readers = readers.lock().unwrap_or_else(|e| e.into_inner());
            if readers.len() < MAX_IDLE_READERS {
                readers.push(conn);
            }
        }
        let value = result?;
        ended?;
        Ok(value)
    }

    fn open_reader(&self) -> StoreResult<Connection> {
        let conn = Connection::open_with_flags(
            &self.inner.db_path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(&format!(
            "PRAGMA query_only = ON; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; \
             PRAGMA cache_size = -{READER_CACHE_KIB};"
        ))?;
        configure_statements(&conn)?;
        Ok(conn)
    }

    /// The last committed sequence number.
    pub fn last_commit_seq(&self) -> StoreResult<i64> {
        self.read_db(|db| last_commit_seq(db))
    }

    /// Stops the writer after queued mutations finish.
    pub fn shutdown(&self) {
        match &self.inner.backend {
            Backend::Sqlite { writer, .. } => writer.shutdown(),
            Backend::Postgres(pg) => pg.shutdown(),
        }
    }
}

/// How a connection keeps its statements: through a cache large enough for every statement
/// it runs, and planned without looking at bound values (SQLite's query planner stability
/// guarantee). Without it, SQLite compiled with STAT4 marks a join's bound parameters as
/// plan inputs and re-prepares the statement on every new binding, which showed up as SQL
/// parsing in the write path's profile (each `claim.assert` re-parsed its head query).
fn configure_statements(conn: &Connection) -> StoreResult<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
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

/// Creates the data directory owner-only, or tightens an existing one that holds only a
/// Memoree layout.
fn ensure_private_dir(dir: &Path) -> StoreResult<()> {
    use crate::paths::{
        CONFIG_FILE, DAEMON_LOCK, DAEMON_LOG, DB_SHM_FILE, DB_WAL_FILE, PENDING_DIR, RUN_DIR, SOCKET_LOCK_NAME,
        SOCKET_NAME,
    };
    // `paths::LAYOUT_ENTRIES` less `EXTENSIONS_FILE` and `SEMANTIC_DIR` (the daemon checks
    // the data dir with `LAYOUT_ENTRIES` before it opens the store).
    const LAYOUT: &[&str] = &[
        DB_FILE,
        DB_WAL_FILE,
        DB_SHM_FILE,
        DAEMON_LOCK,
        DAEMON_LOG,
        BLOBS_DIR,
        PENDING_DIR,
        RUN_DIR,
        CONFIG_FILE,
        SOCKET_NAME,
        SOCKET_LOCK_NAME,
    ];
    if !dir.exists() {
        fs::create_dir_all(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        return Ok(());
    }
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(StoreError::Config(format!(
            "data directory {} is not a directory",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        let foreign = fs::read_dir(dir)?
            .filter_map(Result::ok)
            .any(|entry| !LAYOUT.iter().any(|name| entry.file_name() == *name));
        if foreign {
            return Err(StoreError::Config(format!(
                "refusing to use non-private, non-empty directory {}; set it to 700",
                dir.display()
            )));
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}
