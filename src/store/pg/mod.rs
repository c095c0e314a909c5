//! The PostgreSQL backend: the same tables and rules as the SQLite store, in a database that
//! any number of front ends (`memoree serve` processes) share.
//!
//! [`PgStore::open`] connects, applies the numbered migrations (`migrate.rs`,
//! `migrations/*.sql`) and starts this front end's writer (`writer.rs`: group commit under the
//! database-wide `commit_state` row lock). Reads borrow a pooled connection (`conn.rs`,
//! `r2d2`) and run in one `REPEATABLE READ READ ONLY` transaction, the snapshot a SQLite read
//! gets. Blobs live in the database (`blob.rs`).
//!
//! **Status:** `crate::store::Store` runs on this backend through [`PgStore`] and the SQL
//! interface both backends share (`store::db::Db`): every protocol operation works on it
//! (entities, relations, conflicts, retrieval, browse listings, `verify`, `reindex`,
//! `backup.create`, `import`) as do local exports and imports, except purge, which still
//! answers `INTERNAL_ERROR` naming PostgreSQL (see ARCHITECTURE.md, *PostgreSQL*).
//!
//! **Invariants:** as for the SQLite store — `commit_seq` is taken inside the mutation's
//! transaction together with its one `events` row, and has no gaps among committed
//! mutations across every front end; a front end holds no state that another needs.

pub mod blob;
pub mod conn;
pub mod fts;
mod migrate;
mod writer;

use std::sync::Arc;
use std::time::Duration;

use postgres::Config;

pub use conn::PgConn;
pub use migrate::{SCHEMA_VERSION, schema_version};

use super::Tx;
use super::error::{StoreError, StoreResult};

/// Pooled read connections per front end.
const MAX_READERS: u32 = 8;
/// How long a session may wait for a lock or sit idle inside a transaction before the server
/// gives up on it, and how long a read waits for a pooled connection.
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// A handle to a PostgreSQL store; cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` only while being dropped.
    readers: Option<r2d2::Pool<conn::Manager>>,
    writer: writer::PgWriter,
}

impl Drop for Inner {
    /// Closing a connection blocks on the driver's runtime, which panics on a thread that
    /// drives async tasks (the daemon drops its store there): close the pool on a plain thread.
    fn drop(&mut self) {
        if let Some(pool) = self.readers.take() {
            std::thread::scope(|scope| {
                let _ = scope.spawn(move || drop(pool)).join();
            });
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

/// Whether `url` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// A PostgreSQL URL whose `Debug` and `Display` hide the password (in the user info or a
/// `password=` parameter), so a configuration can be logged.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl(pub String);

impl PgUrl {
    /// The URL with any password replaced by `***`.
    pub fn redacted(&self) -> String {
        let url = &self.0;
        let mut out = url.clone();
        if let Some(scheme_end) = url.find("://") {
            let rest = &url[scheme_end + 3..];
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            if let Some(at) = rest[..authority_end].rfind('@')
                && let Some(colon) = rest[..at].find(':')
            {
                let start = scheme_end + 3 + colon + 1;
                out.replace_range(start..scheme_end + 3 + at, "***");
            }
        }
        if let Some(query_start) = out.find('?') {
            let (base, query) = out.split_at(query_start + 1);
            let redacted: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key == "password" => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            out = format!("{base}{}", redacted.join("&"));
        }
        out
    }
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgUrl({})", self.redacted())
    }
}

impl std::fmt::Display for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl PgStore {
    /// Connects to the database at `url`, migrating it if needed, and starts the writer.
    pub fn open(url: &str) -> StoreResult<PgStore> {
        let config: Config = url
            .parse()
            .map_err(|e| StoreError::Config(format!("invalid PostgreSQL URL: {e}")))?;
        let setup = PgConn::connect(&config, SESSION_TIMEOUT)?;
        migrate::migrate(&setup)?;
        drop(setup);
        let readers = r2d2::Pool::builder()
            .max_size(MAX_READERS)
            .min_idle(Some(1))
            .connection_timeout(SESSION_TIMEOUT)
            .build(conn::Manager {
                config: config.clone(),
                timeout: SESSION_TIMEOUT,
            })?;
        let writer = writer::PgWriter::spawn(config, SESSION_TIMEOUT)?;
        Ok(PgStore {
            inner: Arc::new(Inner {
                readers: Some(readers),
                writer,
            }),
        })
    }

    /// A pooled connection outside any transaction (blob writes, tests).
    pub fn connection(&self) -> StoreResult<r2d2::PooledConnection<conn::Manager>> {
        match &self.inner.readers {
            Some(pool) => Ok(pool.get()?),
            None => Err(StoreError::WriterGone),
        }
    }

    /// Runs a read in one snapshot transaction on a pooled connection.
    pub fn read<T>(&self, f: impl FnOnce(&PgConn) -> StoreResult<T>) -> StoreResult<T> {
        let conn = self.connection()?;
        conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        let result = f(&conn);
        let ended = conn.batch("COMMIT");
        let value = result?;
        ended?;
        Ok(value)
    }

    /// Runs `f` in one `REPEATABLE READ` snapshot that may create and fill temporary tables
    /// (a scoped export's selection) and is always rolled back, so nothing it does persists.
    pub fn snapshot<T>(&self, f: impl FnOnce(&PgConn) -> StoreResult<T>) -> StoreResult<T> {
        let conn = self.connection()?;
        conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ")?;
        let result = f(&conn);
        let ended = conn.batch("ROLLBACK");
        let value = result?;
        ended?;
        Ok(value)
    }

    /// Runs a mutation in this front end's next group commit; returns once it is durable.
    pub fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.inner.writer.write(f)
    }

    /// The last committed sequence number.
    pub fn last_commit_seq(&self) -> StoreResult<i64> {
        self.read(last_commit_seq)
    }

    /// Stores blob content (deduplicated) before the mutation that cites it.
    pub fn put_blob(&self, bytes: &[u8]) -> StoreResult<crate::blob::Digest> {
        blob::put(&*self.connection()?, bytes)
    }

    /// Stops the writer after queued mutations finish.
    pub fn shutdown(&self) {
        self.inner.writer.shutdown();
    }
}

/// The last committed sequence number, read on `conn`.
pub fn last_commit_seq(conn: &PgConn) -> StoreResult<i64> {
    Ok(conn
        .query_one("SELECT commit_seq FROM commit_state WHERE id = 1", &[])?
        .get(0))
}

#[cfg(test)]
pub(crate) mod tests;
