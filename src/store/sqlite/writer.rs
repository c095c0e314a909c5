//! The single writer of the embedded store: one thread owns the write connection and commits
//! mutations in groups ([`crate::store::group`]).
//!
//! Each group is one `BEGIN IMMEDIATE` transaction: every job runs inside its own
//! `SAVEPOINT`, and one `COMMIT` (one fsync with `synchronous=FULL`) makes the whole group
//! durable. What is SQLite's own here: the transaction statements (run through the statement
//! cache), the injected disk-full cap applied as each group begins, exclusive jobs on the bare
//! connection (backups, reindex), and noticing that SQLite rolled the transaction back under
//! a job (`SQLITE_FULL`, an I/O error).
//!
//! **Invariant:** a job's result is delivered only after the `COMMIT` that made its changes
//! durable has returned. A failed job is rolled back to its savepoint and leaves nothing
//! behind; if the commit fails, or SQLite aborts the transaction under a job (disk full, I/O
//! error), every job of the group is told it failed, with that job's cause, and none is
//! acknowledged.

use std::sync::Arc;

use rusqlite::Connection;

use crate::fault::DiskFullFlag;
use crate::store::error::{StoreError, StoreResult};
use crate::store::group::{Backend, GroupConn, GroupWriter};
use crate::store::{Db, Tx};

/// Handle to the writer thread.
pub(crate) struct Writer {
    group: GroupWriter<SqliteWriter>,
}

impl Writer {
    /// Starts the writer thread on `conn`. An armed `disk_full` flag caps the database at
    /// its current size while the flag is up (see [`crate::fault`]).
    pub(crate) fn spawn(conn: Connection, disk_full: DiskFullFlag) -> StoreResult<Writer> {
        let cap = if disk_full.is_armed() {
            let unlimited = conn.query_row("PRAGMA max_page_count", [], |row| row.get(0))?;
            Some(PageCap { disk_full, unlimited })
        } else {
            None
        };
        let group = GroupWriter::spawn("memoree-writer", SqliteWriter { conn, cap })?;
        Ok(Writer { group })
    }

    /// Runs `f` inside the next group commit and returns once it is durable (or failed).
    pub(crate) fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.group.write(f)
    }

    /// Runs `f` alone on the writer connection: no other write runs meanwhile.
    pub(crate) fn exclusive<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        self.group.exclusive(move |writer: &mut SqliteWriter| f(&writer.conn))
    }

    /// Stops accepting jobs, lets queued jobs finish and joins the thread.
    pub(crate) fn shutdown(&self) {
        self.group.shutdown();
    }
}

/// The writer connection and the disk-full fault it may be under.
struct SqliteWriter {
    conn: Connection,
    cap: Option<PageCap>,
}

impl Backend for SqliteWriter {
    type Conn = SqliteWriter;

    fn connection(&mut self) -> rusqlite::Result<&SqliteWriter> {
        Ok(self)
    }
}

impl GroupConn for SqliteWriter {
    type Error = rusqlite::Error;

    fn db(&self) -> Db<'_> {
        Db::Sqlite(&self.conn)
    }

    fn begin(&self) -> rusqlite::Result<()> {
        run(&self.conn, "BEGIN IMMEDIATE")?;
        match &self.cap {
            Some(cap) => cap.apply(&self.conn),
            None => Ok(()),
        }
    }

    fn savepoint(&self) -> rusqlite::Result<()> {
        run(&self.conn, "SAVEPOINT memoree_job")
    }

    fn release(&self) -> rusqlite::Result<()> {
        run(&self.conn, "RELEASE memoree_job")
    }

    fn roll_back_job(&self) -> rusqlite::Result<()> {
        run(&self.conn, "ROLLBACK TO memoree_job")?;
        run(&self.conn, "RELEASE memoree_job")
    }

    fn commit(&self) -> rusqlite::Result<()> {
        run(&self.conn, "COMMIT")
    }

    fn roll_back(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    /// SQLite rolled the whole transaction back under a job when the connection is back in
    /// autocommit mode (on `SQLITE_FULL` or an I/O error it does so unless the statement had
    /// its own journal): nothing of this group is durable, so nothing may be acknowledged.
    /// Every job of the group is told the job's own SQLite cause, so a full disk reads as a
    /// full disk (retryable) for all of them rather than as "no such savepoint".
    fn aborted(&self, failure: Option<&StoreError>) -> Option<rusqlite::Error> {
        if !self.conn.is_autocommit() {
            return None;
        }
        Some(match failure {
            Some(StoreError::Sqlite(rusqlite::Error::SqliteFailure(error, message))) => {
                rusqlite::Error::SqliteFailure(*error, message.clone())
            }
            _ => rolled_back(),
        })
    }

    fn group_error(error: Arc<rusqlite::Error>) -> StoreError {
        StoreError::Commit(error)
    }
}

/// The injected disk-full fault: while the flag is up, a group may not grow the database.
struct PageCap {
    disk_full: DiskFullFlag,
    /// The connection's own `max_page_count`, restored when the flag is down.
    unlimited: i64,
}

impl PageCap {
    /// Sets `max_page_count` for the group that just began. SQLite raises a cap below the
    /// database's current size to that size, so `1` means "no new pages".
    fn apply(&self, conn: &Connection) -> rusqlite::Result<()> {
        let limit = if self.disk_full.is_full() { 1 } else { self.unlimited };
        conn.query_row(&format!("PRAGMA max_page_count = {limit}"), [], |row| {
            row.get::<_, i64>(0)
        })?;
        Ok(())
    }
}

/// Runs one transaction-control statement through the statement cache (each group runs
/// several; parsing them every time showed up in profiles).
fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// The abort reported when SQLite ended the group transaction without a known cause.
fn rolled_back() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("the group transaction was rolled back by SQLite".to_owned()),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    fn insert(tx: &Tx<'_>, bytes: usize) -> StoreResult<()> {
        tx.db().execute("INSERT INTO t (v) VALUES (?1)", &[&vec![7u8; bytes]])?;
        Ok(())
    }

    /// A job that panics inside a group fails alone: its own writes are rolled back to its
    /// savepoint, and the jobs before and after it in the same group commit.
    #[test]
    fn a_panicking_job_fails_alone_and_the_rest_of_its_group_commits() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v BLOB);")
            .unwrap();
        let writer = Arc::new(Writer::spawn(conn, DiskFullFlag::default()).unwrap());

        let (held, is_held) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let hold = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                writer.exclusive(move |_| {
                    held.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(())
                })
            })
        };
        is_held.recv().unwrap();
        let mut jobs = Vec::new();
        for panics in [false, true, false] {
            let writer = Arc::clone(&writer);
            jobs.push(std::thread::spawn(move || {
                writer.write(move |tx| {
                    insert(tx, 16)?;
                    assert!(!panics, "this job panics after its insert");
                    Ok(())
                })
            }));
            std::thread::sleep(Duration::from_millis(50));
        }
        release.send(()).unwrap();
        hold.join().unwrap().unwrap();
        let results: Vec<StoreResult<()>> = jobs.into_iter().map(|job| job.join().unwrap()).collect();
        assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
        assert!(matches!(&results[1], Err(StoreError::Internal(_))), "{results:?}");
        let rows: i64 = writer
            .exclusive(|conn| Ok(conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(rows, 2);
    }

    /// A job that makes SQLite roll the whole group transaction back on `SQLITE_FULL` takes
    /// the jobs before and after it down too; each of them must hear that the disk is full
    /// (retryable, nothing stored), not an unrelated "failed to commit" error.
    #[test]
    fn a_group_rolled_back_by_sqlite_full_reports_storage_full_to_every_job() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v BLOB);")
            .unwrap();
        let flag = DiskFullFlag::at(dir.path().join("full"));
        let writer = Arc::new(Writer::spawn(conn, flag).unwrap());
        std::fs::write(dir.path().join("full"), b"").unwrap();

        // Hold the writer so the next three jobs are drained as one group.
        let (held, is_held) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let hold = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                writer.exclusive(move |_| {
                    held.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(())
                })
            })
        };
        is_held.recv().unwrap();
        let mut jobs = Vec::new();
        for bytes in [16, 1 << 20, 16] {
            let writer = Arc::clone(&writer);
            jobs.push(std::thread::spawn(move || writer.write(move |tx| insert(tx, bytes))));
            std::thread::sleep(Duration::from_millis(50));
        }
        release.send(()).unwrap();
        hold.join().unwrap().unwrap();
        for (index, job) in jobs.into_iter().enumerate() {
            match job.join().unwrap() {
                Err(e) => assert!(e.is_storage_full(), "job {index}: {e}"),
                Ok(()) => panic!("job {index} was acknowledged from a rolled-back group"),
            }
        }
        let rows: i64 = writer
            .exclusive(|conn| Ok(conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(rows, 0);

        // Space is back: the same writes succeed.
        std::fs::remove_file(dir.path().join("full")).unwrap();
        writer.write(|tx| insert(tx, 1 << 20)).unwrap();
    }
}
