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
//! **Invariant:** a job's result is delivered only after the `COMMIT` that made it durable
//! returned; a failed job is rolled back to its savepoint; if the transaction or the
//! connection fails, no job of the group is acknowledged, and the next group reconnects.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::Config;

use super::PgConn;
use super::health::Health;
use crate::store::error::{StoreError, StoreResult};
use crate::store::{Db, Tx};
use crate::timefmt;

/// Upper bound on mutations sharing one commit.
const MAX_GROUP: usize = 256;

trait Job: Send {
    /// Runs inside the group transaction; returns whether the job succeeded.
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// Delivers the result once the group's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), Arc<StoreError>>);
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

    fn finish(self: Box<Self>, commit: Result<(), Arc<StoreError>>) {
        let result = match (self.result, commit) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(e)) => Err(StoreError::PostgresGroup(e)),
            (None, Ok(())) => Err(StoreError::Internal("a mutation was dropped before it ran".to_owned())),
        };
        let _ = self.reply.send(result);
    }
}

/// Handle to the writer thread.
pub(crate) struct PgWriter {
    queue: Mutex<Option<Sender<Box<dyn Job>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PgWriter {
    /// Starts the writer thread; it connects with `config` and reconnects after a failure.
    pub(crate) fn spawn(config: Config, timeout: Duration, health: Arc<Health>) -> StoreResult<PgWriter> {
        let (queue, jobs) = mpsc::channel::<Box<dyn Job>>();
        let thread = std::thread::Builder::new()
            .name("memoree-pg-writer".to_owned())
            .spawn(move || writer_loop(&config, timeout, &health, jobs))?;
        Ok(PgWriter {
            queue: Mutex::new(Some(queue)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Runs `f` inside the next group commit and returns once it is durable (or failed).
    pub(crate) fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        {
            let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            let Some(queue) = queue.as_ref() else {
                return Err(StoreError::WriterGone);
            };
            let job = GroupJob {
                f: Some(f),
                result: None,
                reply,
            };
            queue.send(Box::new(job)).map_err(|_| StoreError::WriterGone)?;
        }
        result.recv().unwrap_or(Err(StoreError::WriterGone))
    }

    /// Stops accepting jobs, lets queued jobs finish and joins the thread.
    pub(crate) fn shutdown(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for PgWriter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn writer_loop(config: &Config, timeout: Duration, health: &Health, jobs: Receiver<Box<dyn Job>>) {
    let mut conn: Option<PgConn> = None;
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        if conn.as_ref().is_none_or(PgConn::is_closed) {
            conn = None;
            match PgConn::connect(config, timeout) {
                Ok(fresh) => {
                    health.up();
                    conn = Some(fresh);
                }
                Err(e) => {
                    health.failed(&e);
                    let e = Arc::new(e);
                    group.into_iter().for_each(|job| job.finish(Err(e.clone())));
                    continue;
                }
            }
        }
        if let Some(conn) = &conn {
            run_group(conn, group);
        }
    }
}

fn run_group(conn: &PgConn, mut group: Vec<Box<dyn Job>>) {
    let begun = conn
        .batch("BEGIN")
        .and_then(|()| conn.query_one("SELECT commit_seq FROM commit_state WHERE id = 1 FOR UPDATE", &[]))
        .map(drop);
    if let Err(e) = begun {
        let _ = conn.batch("ROLLBACK");
        let e = Arc::new(e);
        group.into_iter().for_each(|job| job.finish(Err(e.clone())));
        return;
    }
    let mut aborted: Option<Arc<StoreError>> = None;
    for job in group.iter_mut() {
        if let Err(e) = conn.batch("SAVEPOINT memoree_job") {
            aborted = Some(Arc::new(e));
            break;
        }
        let tx = Tx::new(Db::Postgres(conn), timefmt::now());
        let ok = job.run(&tx);
        let end = if ok {
            conn.batch("RELEASE memoree_job")
        } else {
            conn.batch("ROLLBACK TO memoree_job; RELEASE memoree_job")
        };
        if let Err(e) = end {
            aborted = Some(Arc::new(e));
            break;
        }
    }
    let outcome = match aborted {
        Some(e) => Err(e),
        None => conn.batch("COMMIT").map_err(Arc::new),
    };
    if outcome.is_err() {
        let _ = conn.batch("ROLLBACK");
    }
    group.into_iter().for_each(|job| job.finish(outcome.clone()));
}
