//! The embedded backend: SQLite in the data directory (WAL, FTS5), one writer thread with
//! group commit (`writer`), a small pool of read-only connections, each read in its own
//! snapshot transaction, and the filesystem CAS beside it; the numbered migrations of its
//! schema are [`migrate`]'s. `store/pg/` is the same for PostgreSQL.
//!
//! **Invariants:** the data directory is owner-only and holds only a Memoree layout before
//! anything is opened in it; a database is migrated only after [`migrate::preflight`]
//! accepted it; the database files are owner-only; readers never write (`query_only`).

pub mod migrate;
pub(super) mod writer;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::error::{StoreError, StoreResult};
use super::tombstone;
use crate::blob::BlobStore;
use crate::fault::DiskFullFlag;
use crate::paths::{BLOBS_DIR, DB_FILE};

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

/// The embedded store's parts.
pub(super) struct SqliteStore {
    pub blobs: BlobStore,
    pub writer: writer::Writer,
    readers: Mutex<Vec<Connection>>,
    db_path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating and migrating if needed) the database at `db_path` in `data_dir`, and
    /// says whether it holds any purge tombstone.
    pub(super) fn open(data_dir: &Path, db_path: &Path) -> StoreResult<(SqliteStore, bool)> {
        ensure_private_dir(data_dir)?;
        let mut conn = Connection::open_with_flags(
            db_path,
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
        let disk_full = DiskFullFlag::from_env();
        let blobs = BlobStore::open(data_dir.join(BLOBS_DIR))?.with_disk_full_flag(disk_full.clone());
        migrate::migrate(&mut conn, &blobs)?;
        configure_statements(&conn)?;
        for suffix in ["", "-wal", "-shm"] {
            let path = PathBuf::from(format!("{}{suffix}", db_path.display()));
            if path.exists() {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
            }
        }
        let has_purges = tombstone::any(&conn)?;
        let writer = writer::Writer::spawn(conn, disk_full)?;
        let store = SqliteStore {
            blobs,
            writer,
            readers: Mutex::new(Vec::new()),
            db_path: db_path.to_path_buf(),
        };
        Ok((store, has_purges))
    }

    /// Runs a read in one snapshot transaction on a pooled read-only connection.
    pub(super) fn read<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        conn.execute_batch("BEGIN DEFERRED")?;
        let result = f(&conn);
        let ended = conn.execute_batch("COMMIT");
        if ended.is_ok() {
            let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
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
            &self.db_path,
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
