//! The single writer: one thread owns the write connection and commits mutations in groups.
//!
//! Callers submit a closure; the writer drains every job that is already queued, runs each
//! inside its own `SAVEPOINT` of one `BEGIN IMMEDIATE` transaction, and issues one `COMMIT`
//! (one fsync with `synchronous=FULL`) for the whole group.
//!
//! **Invariant:** a job's result is delivered only after the `COMMIT` that made its changes
//! durable has returned. A failed job is rolled back to its savepoint and leaves nothing
//! behind; if the commit fails, or SQLite aborts the transaction under a job (disk full, I/O
//! error), every job of the group is told it failed, with that job's cause, and none is
//! acknowledged.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::error::{StoreError, StoreResult};
use super::{Db, Tx};
use crate::fault::DiskFullFlag;
use crate::timefmt;

/// Upper bound on mutations sharing one commit.
const MAX_GROUP: usize = 256;

type CommitOutcome = Result<(), Arc<rusqlite::Error>>;

trait Job: Send {
    /// Runs inside the group transaction; returns whether the job succeeded.
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// The SQLite failure the job ended with, if that is how it failed.
    fn sqlite_failure(&self) -> Option<rusqlite::Error>;
    /// Delivers the result once the group's fate is known.
    fn finish(self: Box<Self>, commit: CommitOutcome);
    /// Runs alone on the writer connection, outside any group transaction.
    fn run_exclusive(self: Box<Self>, conn: &Connection);
    fn is_exclusive(&self) -> bool;
}

struct GroupJob<T, F> {
    f: Option<F>,
    result: Option<StoreResult<T>>,
    reply: SyncSender<StoreResult<T>>,
}

impl<T, F> Job for GroupJob<T, F>
where
    T: Send,
    F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send,
{
    fn run(&mut self, tx: &Tx<'_>) -> bool {
        let Some(f) = self.f.take() else { return false };
        let result = catch_unwind(AssertUnwindSafe(|| f(tx)))
            .unwrap_or_else(|_| Err(StoreError::Internal("a mutation panicked inside the writer".to_owned())));
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn sqlite_failure(&self) -> Option<rusqlite::Error> {
        match &self.result {
            Some(Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(error, message)))) => {
                Some(rusqlite::Error::SqliteFailure(*error, message.clone()))
            }
            _ => None,
        }
    }

    fn finish(self: Box<Self>, commit: CommitOutcome) {
        let result = match (self.result, commit) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (Some(Ok(_)), Err(e)) => Err(StoreError::Commit(e)),
            (None, Err(e)) => Err(StoreError::Commit(e)),
            (None, Ok(())) => Err(StoreError::Internal("a mutation was dropped before it ran".to_owned())),
        };
        let _ = self.reply.send(result);
    }

    fn run_exclusive(self: Box<Self>, _conn: &Connection) {
        let _ = self
            .reply
            .send(Err(StoreError::Internal("group job run exclusively".to_owned())));
    }

    fn is_exclusive(&self) -> bool {
        false
    }
}

struct ExclusiveJob<T, F> {
    f: F,
    reply: SyncSender<StoreResult<T>>,
}

impl<T, F> Job for ExclusiveJob<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> StoreResult<T> + Send,
{
    fn run(&mut self, _tx: &Tx<'_>) -> bool {
        false
    }

    fn sqlite_failure(&self) -> Option<rusqlite::Error> {
        None
    }

    fn finish(self: Box<Self>, _commit: CommitOutcome) {
        let _ = self
            .reply
            .send(Err(StoreError::Internal("exclusive job run in a group".to_owned())));
    }

    fn run_exclusive(self: Box<Self>, conn: &Connection) {
        let f = self.f;
        let result = catch_unwind(AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| {
            Err(StoreError::Internal(
                "an exclusive job panicked inside the writer".to_owned(),
            ))
        });
        let _ = self.reply.send(result);
    }

    fn is_exclusive(&self) -> bool {
        true
    }
}

/// Handle to the writer thread.
pub(crate) struct Writer {
    queue: Mutex<Option<Sender<Box<dyn Job>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
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
        let (queue, jobs) = mpsc::channel::<Box<dyn Job>>();
        let thread = std::thread::Builder::new()
            .name("memoree-writer".to_owned())
            .spawn(move || writer_loop(conn, jobs, cap))?;
        Ok(Writer {
            queue: Mutex::new(Some(queue)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn submit<T: Send>(&self, job: Box<dyn Job>, reply: Receiver<StoreResult<T>>) -> StoreResult<T> {
        {
            let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            let Some(queue) = queue.as_ref() else {
                return Err(StoreError::WriterGone);
            };
            queue.send(job).map_err(|_| StoreError::WriterGone)?;
        }
        reply.recv().unwrap_or(Err(StoreError::WriterGone))
    }

    /// Runs `f` inside the next group commit and returns once it is durable (or failed).
    pub(crate) fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        self.submit(
            Box::new(GroupJob {
                f: Some(f),
                result: None,
                reply,
            }),
            result,
        )
    }

    /// Runs `f` alone on the writer connection: no other write runs meanwhile.
    pub(crate) fn exclusive<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        self.submit(Box::new(ExclusiveJob { f, reply }), result)
    }

    /// Stops accepting jobs, lets queued jobs finish and joins the thread.
    pub(crate) fn shutdown(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.shutdown();
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

fn writer_loop(conn: Connection, jobs: Receiver<Box<dyn Job>>, cap: Option<PageCap>) {
    let mut carried: Option<Box<dyn Job>> = None;
    loop {
        let first = match carried.take() {
            Some(job) => job,
            None => match jobs.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        if first.is_exclusive() {
            first.run_exclusive(&conn);
            continue;
        }
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) if job.is_exclusive() => {
                    carried = Some(job);
                    break;
                }
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        run_group(&conn, group, cap.as_ref());
    }
}

fn run_group(conn: &Connection, mut group: Vec<Box<dyn Job>>, cap: Option<&PageCap>) {
    let begun = run(conn, "BEGIN IMMEDIATE").and_then(|()| match cap {
        Some(cap) => cap.apply(conn),
        None => Ok(()),
    });
    if let Err(e) = begun {
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        let e = Arc::new(e);
        group.into_iter().for_each(|job| job.finish(Err(e.clone())));
        return;
    }
    let mut aborted: Option<Arc<rusqlite::Error>> = None;
    for job in group.iter_mut() {
        if let Err(e) = run(conn, "SAVEPOINT memoree_job") {
            aborted = Some(Arc::new(e));
            break;
        }
        let tx = Tx::new(Db::Sqlite(conn), timefmt::now());
        let ok = job.run(&tx);
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back under this job (on SQLITE_FULL or an
            // I/O error it does so unless the statement had its own journal): nothing of
            // this group is durable, so nothing may be acknowledged. Every job of the group
            // is told the job's own cause, so a full disk reads as a full disk (retryable)
            // for all of them rather than as "no such savepoint".
            aborted = Some(Arc::new(job.sqlite_failure().unwrap_or_else(rolled_back)));
            break;
        }
        let end = if ok {
            run(conn, "RELEASE memoree_job")
        } else {
            run(conn, "ROLLBACK TO memoree_job").and_then(|()| run(conn, "RELEASE memoree_job"))
        };
        if let Err(e) = end {
            aborted = Some(Arc::new(e));
            break;
        }
        if conn.is_autocommit() {
            aborted = Some(Arc::new(rolled_back()));
            break;
        }
    }
    let outcome = match aborted {
        Some(e) => Err(e),
        None => run(conn, "COMMIT").map_err(Arc::new),
    };
    if outcome.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    group.into_iter().for_each(|job| job.finish(outcome.clone()));
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
    use std::time::Duration;

    use super::*;

    fn insert(tx: &Tx<'_>, bytes: usize) -> StoreResult<()> {
        tx.db()
            .sqlite()?
            .execute("INSERT INTO t (v) VALUES (?1)", [vec![7u8; bytes]])?;
        Ok(())
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
