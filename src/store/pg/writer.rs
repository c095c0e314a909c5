//! The PostgreSQL writer of one front end: one thread owns a write connection and commits
//! mutations in groups, as the SQLite writer does.
//!
//! A group is one transaction: `BEGIN`, then the `commit_state` row is locked (`SELECT … FOR
//! UPDATE`), then each job runs in its own `SAVEPOINT`, then one `COMMIT`. The row lock is the
//! database-wide write lock: a group of another front end waits for it, and because the lock
//! is held until `COMMIT` (and every statement after it sees what committed before it, in
//! `READ COMMITTED`), all writers of all front ends see one serial history: `commit_seq` has
//! no gaps among committed mutations and increases in commit order, replay and `if_revision`
//! checks see every earlier commit, and an idempotency key is applied at most once. (The
//! `idempotency` primary key backs that up.)
//!
//! The loop itself is [`crate::store::group`]; what is PostgreSQL's own here: the lock taken
//! as each group begins, and the connection, made again before the next group whenever the
//! last one was closed under it (the outage is recorded in [`Health`]).
//!
//! **Invariant:** a job's result is delivered only after the `COMMIT` that made it durable
//! returned; a failed job is rolled back to its savepoint; if the transaction or the
//! connection fails, no job of the group is acknowledged, and the next group reconnects.

use std::sync::Arc;
use std::time::Duration;

use postgres::Config;

use super::PgConn;
use super::health::Health;
use crate::store::error::{StoreError, StoreResult};
use crate::store::group::{Backend, GroupConn, GroupWriter};
use crate::store::{Db, Tx};

/// Handle to the writer thread.
pub(crate) struct PgWriter {
    group: GroupWriter<Connector>,
}

impl PgWriter {
    /// Starts the writer thread; it connects with `config` and reconnects after a failure.
    pub(crate) fn spawn(config: Config, timeout: Duration, health: Arc<Health>) -> StoreResult<PgWriter> {
        let connector = Connector {
            config,
            timeout,
            health,
            conn: None,
        };
        let group = GroupWriter::spawn("memoree-pg-writer", connector)?;
        Ok(PgWriter { group })
    }

    /// Runs `f` inside the next group commit and returns once it is durable (or failed).
    pub(crate) fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.group.write(f)
    }

    /// Stops accepting jobs, lets queued jobs finish and joins the thread.
    pub(crate) fn shutdown(&self) {
        self.group.shutdown();
    }
}

/// The writer's connection, made when the first group needs it and again after it closed.
struct Connector {
    config: Config,
    timeout: Duration,
    health: Arc<Health>,
    conn: Option<PgConn>,
}

impl Backend for Connector {
    type Conn = PgConn;

    fn connection(&mut self) -> StoreResult<&PgConn> {
        let conn = match self.conn.take() {
            Some(conn) if !conn.is_closed() => conn,
            closed => {
                drop(closed);
                match PgConn::connect(&self.config, self.timeout) {
                    Ok(fresh) => {
                        self.health.up();
                        fresh
                    }
                    Err(e) => {
                        self.health.failed(&e);
                        return Err(e);
                    }
                }
            }
        };
        Ok(self.conn.insert(conn))
    }
}

impl GroupConn for PgConn {
    type Error = StoreError;

    fn db(&self) -> Db<'_> {
        Db::Postgres(self)
    }

    fn begin(&self) -> StoreResult<()> {
        self.batch("BEGIN")?;
        self.query_one("SELECT commit_seq FROM commit_state WHERE id = 1 FOR UPDATE", &[])
            .map(drop)
    }

    fn savepoint(&self) -> StoreResult<()> {
        self.batch("SAVEPOINT memoree_job")
    }

    fn release(&self) -> StoreResult<()> {
        self.batch("RELEASE memoree_job")
    }

    fn roll_back_job(&self) -> StoreResult<()> {
        self.batch("ROLLBACK TO memoree_job; RELEASE memoree_job")
    }

    fn commit(&self) -> StoreResult<()> {
        self.batch("COMMIT")
    }

    fn roll_back(&self) {
        let _ = self.batch("ROLLBACK");
    }

    /// A failed statement leaves the transaction open (aborted until the savepoint is rolled
    /// back), so nothing is noticed here: a dead connection fails the savepoint's end.
    fn aborted(&self, _failure: Option<&StoreError>) -> Option<StoreError> {
        None
    }

    fn group_error(error: Arc<StoreError>) -> StoreError {
        StoreError::PostgresGroup(error)
    }
}
