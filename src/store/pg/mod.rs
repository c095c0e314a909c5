//! The PostgreSQL backend: the same tables and rules as the SQLite store, in a database that
//! any number of front ends (`memoree serve` processes) share.
//!
//! [`PgStore::open`] connects, applies the numbered migrations (`migrate.rs`,
//! `migrations/*.sql`) and starts this front end's writer (`writer.rs`: group commit under the
//! database-wide `commit_state` row lock). Reads borrow a pooled connection (`pool.rs`,
//! `r2d2`) and run in one `REPEATABLE READ READ ONLY` transaction, the snapshot a SQLite read
//! gets. Blobs live in the database (`blob.rs`).
//!
//! Outages (`health.rs`): [`PgStore::start`] (the daemon) opens the same way when the database
//! is there and otherwise returns a store that waits for it in the background; while the
//! server is unreachable or restarting, requests fail fast with errors for which
//! [`StoreError::is_store_unavailable`] holds, and [`PgStore::stats_within`] (`doctor`) answers
//! within its budget whatever the server does.
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
pub mod fts;
pub mod health;
mod migrate;
mod pool;
mod writer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::Config;

pub use crate::store::db::PgConn;
pub use health::{Outage, ProbeError};
pub use migrate::{SCHEMA_VERSION, schema_version};

use super::Tx;
use super::error::{StoreError, StoreResult};

/// Pooled read connections per front end.
const MAX_READERS: u32 = 8;
/// How long a session may wait for a lock or sit idle inside a transaction before the server
/// gives up on it, and how long a read waits for a pooled connection.
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a read waits for a pooled connection in one go before it checks whether the
/// server is unreachable (then it fails at once instead of waiting [`SESSION_TIMEOUT`]).
const POOL_SLICE: Duration = Duration::from_millis(250);
/// The pool's own connection timeout: `r2d2` waits at most half of it between attempts to
/// reconnect, so after an outage reads find the server again within about a second.
const POOL_RECONNECT: Duration = Duration::from_secs(2);
/// How long one connection attempt may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What `doctor` reads from a PostgreSQL store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PgStats {
    pub last_commit_seq: i64,
    pub schema_version: i64,
    pub database_bytes: u64,
    pub blob_bytes: u64,
    pub blob_count: u64,
}

/// A handle to a PostgreSQL store; cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` only while being dropped.
    readers: Option<r2d2::Pool<pool::Manager>>,
    writer: writer::PgWriter,
    health: Arc<health::Health>,
    gate: Arc<health::Gate>,
    prober: health::Prober,
    config: Config,
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
    /// Connects to the database at `url`, migrating it if needed, and starts the writer; fails
    /// at once if the database is not there.
    pub fn open(url: &str) -> StoreResult<PgStore> {
        let config = parse_config(url)?;
        let setup = PgConn::connect(&config, SESSION_TIMEOUT)?;
        migrate::migrate(&setup)?;
        drop(setup);
        let store = PgStore::assemble(config, Arc::new(health::Gate::ready()))?;
        Ok(store)
    }

    /// Connects and migrates like [`PgStore::open`] when the database is there. When it is
    /// unreachable or restarting (and `wait` is not zero), returns at once with a store that
    /// answers every request with [`StoreError::Unavailable`] until it has connected and
    /// migrated: a thread retries with backoff (100 ms doubling to 500 ms, each attempt logged)
    /// for up to `wait`, then gives up; [`PgStore::wait_ready`] tells which. Any other failure
    /// (authentication, a refused schema) is returned at once.
    pub fn start(url: &str, wait: Duration) -> StoreResult<PgStore> {
        let config = parse_config(url)?;
        let started = Instant::now();
        let first = PgConn::connect(&config, SESSION_TIMEOUT).and_then(|conn| migrate::migrate(&conn));
        match first {
            Ok(()) => return PgStore::assemble(config, Arc::new(health::Gate::ready())),
            Err(error) if error.is_store_unavailable() && !wait.is_zero() => {
                tracing::warn!(%error, wait_s = wait.as_secs(), "the PostgreSQL store is not reachable yet; serving and retrying");
            }
            Err(error) => return Err(error),
        }
        let gate = Arc::new(health::Gate::starting());
        let store = PgStore::assemble(config.clone(), Arc::clone(&gate))?;
        let health = Arc::clone(&store.inner.health);
        std::thread::Builder::new()
            .name("memoree-pg-start".to_owned())
            .spawn(move || health::start_loop(&config, SESSION_TIMEOUT, started, wait, &gate, &health))?;
        Ok(store)
    }

    /// Whether this store was still starting when [`PgStore::start`] returned.
    pub fn was_waiting(&self) -> bool {
        self.inner.gate.was_waiting()
    }

    fn assemble(config: Config, gate: Arc<health::Gate>) -> StoreResult<PgStore> {
        let health = Arc::new(health::Health::default());
        let builder = r2d2::Pool::builder()
            .max_size(MAX_READERS)
            .min_idle(Some(1))
            .connection_timeout(POOL_RECONNECT)
            .error_handler(Box::new(r2d2::NopErrorHandler));
        let manager = pool::Manager {
            config: config.clone(),
            timeout: SESSION_TIMEOUT,
            health: Arc::clone(&health),
        };
        // A store that is still starting must not wait here: the pool fills once the server
        // answers. A store opened synchronously has just connected, so this is quick.
        let readers = if gate.check(&health).is_ok() {
            builder.build(manager)?
        } else {
            builder.build_unchecked(manager)
        };
        let writer = writer::PgWriter::spawn(config.clone(), SESSION_TIMEOUT, Arc::clone(&health))?;
        Ok(PgStore {
            inner: Arc::new(Inner {
                readers: Some(readers),
                writer,
                health,
                gate,
                prober: health::Prober::default(),
                config,
            }),
        })
    }

    /// Blocks until a store made by [`PgStore::start`] is ready, or returns why it never will
    /// be (startup gave up, or the store was shut down first).
    pub fn wait_ready(&self) -> StoreResult<()> {
        self.inner.gate.wait()
    }

    /// The availability this front end sees.
    pub fn health(&self) -> &health::Health {
        &self.inner.health
    }

    /// `doctor`'s statistics, within `budget` whatever the server does: an unreachable,
    /// restarting or silent server is an [`Outage`] (with the last statistics read before it
    /// in [`health::Health::last_stats`]).
    pub fn stats_within(&self, budget: Duration) -> Result<PgStats, ProbeError> {
        if let Err(error) = self.inner.gate.check(&self.inner.health) {
            return Err(match self.inner.health.outage() {
                Some(outage) => ProbeError::Outage(outage),
                None => ProbeError::Outage(Outage {
                    message: error.to_string(),
                    since: crate::timefmt::to_wire(&crate::timefmt::now()),
                    duration: Duration::ZERO,
                }),
            });
        }
        let store = self.clone();
        self.inner
            .prober
            .run(budget, &self.inner.health, move || store.probe_stats())
    }

    /// `doctor`'s statistics on a pooled connection; while the server is known to be
    /// unreachable, on a fresh connection instead, so a refused connection answers at once and
    /// a server that is back is seen at once (the pool retries on its own schedule).
    fn probe_stats(&self) -> StoreResult<PgStats> {
        if !self.inner.health.is_down() {
            return self.read(read_stats);
        }
        let conn = PgConn::connect(&self.inner.config, SESSION_TIMEOUT);
        match &conn {
            Ok(_) => self.inner.health.up(),
            Err(error) => self.inner.health.failed(error),
        }
        let conn = conn?;
        conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        let stats = read_stats(&conn)?;
        conn.batch("COMMIT")?;
        Ok(stats)
    }

    /// A pooled connection outside any transaction (blob writes, tests). While the server is
    /// unreachable this fails within about a second with [`StoreError::Unavailable`] rather
    /// than waiting out the pool's timeout.
    pub fn connection(&self) -> StoreResult<r2d2::PooledConnection<pool::Manager>> {
        self.inner.gate.check(&self.inner.health)?;
        let Some(pool) = &self.inner.readers else {
            return Err(StoreError::WriterGone);
        };
        let deadline = Instant::now() + SESSION_TIMEOUT;
        loop {
            let slice = if self.inner.health.is_down() {
                POOL_RECONNECT / 2
            } else {
                POOL_SLICE
            };
            let now = Instant::now();
            match pool.get_timeout(slice.min(deadline.saturating_duration_since(now))) {
                Ok(conn) => return Ok(conn),
                Err(error) => {
                    if let Some(outage) = self.inner.health.outage() {
                        return Err(StoreError::Unavailable(outage.message));
                    }
                    if Instant::now() >= deadline {
                        return Err(error.into());
                    }
                }
            }
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
        self.inner.gate.check(&self.inner.health)?;
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

    /// Stops the writer after queued mutations finish (and a startup still in progress).
    pub fn shutdown(&self) {
        self.inner.gate.stop();
        self.inner.writer.shutdown();
    }
}

/// Parses a PostgreSQL URL, bounding each connection attempt when the URL does not.
fn parse_config(url: &str) -> StoreResult<Config> {
    let mut config: Config = url
        .parse()
        .map_err(|e| StoreError::Config(format!("invalid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok(config)
}

/// `doctor`'s statistics, read on `conn` (inside a read snapshot).
fn read_stats(conn: &PgConn) -> StoreResult<PgStats> {
    let row = conn.query_one(
        "SELECT (SELECT commit_seq FROM commit_state WHERE id = 1),
                pg_database_size(current_database()),
                (SELECT coalesce(sum(size), 0)::bigint FROM blobs), (SELECT count(*) FROM blobs)",
        &[],
    )?;
    let bytes = |i: usize| row.get::<_, i64>(i).max(0) as u64;
    Ok(PgStats {
        last_commit_seq: row.get::<_, i64>(0),
        schema_version: schema_version(conn)?,
        database_bytes: bytes(1),
        blob_bytes: bytes(2),
        blob_count: bytes(3),
    })
}

/// The last committed sequence number, read on `conn`.
pub fn last_commit_seq(conn: &PgConn) -> StoreResult<i64> {
    Ok(conn
        .query_one("SELECT commit_seq FROM commit_state WHERE id = 1", &[])?
        .get(0))
}

#[cfg(test)]
pub(crate) mod tests;
