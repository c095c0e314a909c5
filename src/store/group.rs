//! Group commit, once for both backends: one thread owns the write connection, drains every
//! job already queued (up to [`MAX_GROUP`]), runs each inside its own savepoint of one
//! transaction and commits the group once.
//!
//! A backend supplies only its specifics: how it gets the connection for the next group
//! ([`Backend`]: the SQLite writer's one connection, or a PostgreSQL connection made again
//! after a failure) and its transaction control ([`GroupConn`]: begin, savepoint, release,
//! roll back to the savepoint, commit, roll back, whether the backend aborted the
//! transaction under a job, and the error a failed group reports). Jobs run in submission
//! order; an exclusive job (the SQLite writer's backups and reindex) ends the group being
//! drained and runs alone, after it.
//!
//! **Invariants:** a job's result is delivered only after the `COMMIT` that made its changes
//! durable has returned. A failed or panicking job is rolled back to its savepoint and leaves
//! nothing behind. If the group cannot begin, a savepoint statement fails, the backend
//! aborts the transaction under a job, or the commit fails, every job of the group is told
//! it failed (a job that failed on its own keeps its own error) and none is acknowledged.
//! Shutdown stops taking jobs and lets the queued ones finish.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::error::{StoreError, StoreResult};
use super::{Db, Tx};
use crate::timefmt;

/// Upper bound on mutations sharing one commit.
pub(crate) const MAX_GROUP: usize = 256;

/// A connection's transaction control, as the group loop drives it.
pub(crate) trait GroupConn {
    /// What a group fails with; every job of a failed group shares it.
    type Error: Send + Sync + 'static;

    /// The statement interface a job's [`Tx`] sits on.
    fn db(&self) -> Db<'_>;
    /// Begins the group transaction (and takes whatever lock the backend writes under).
    fn begin(&self) -> Result<(), Self::Error>;
    /// Opens the savepoint of the next job.
    fn savepoint(&self) -> Result<(), Self::Error>;
    /// Keeps a successful job's changes: releases its savepoint.
    fn release(&self) -> Result<(), Self::Error>;
    /// Drops a failed job's changes: rolls back to its savepoint and releases it.
    fn roll_back_job(&self) -> Result<(), Self::Error>;
    /// Commits the group.
    fn commit(&self) -> Result<(), Self::Error>;
    /// Ends a failed group's transaction, if one is still open; errors are ignored.
    fn roll_back(&self);
    /// Whether the backend ended the whole transaction under a job (or its savepoint end),
    /// and with what cause; `failure` is the job's own error, if it failed.
    fn aborted(&self, failure: Option<&StoreError>) -> Option<Self::Error>;
    /// The error a job of a failed group is told.
    fn group_error(error: Arc<Self::Error>) -> StoreError;
}

/// Where the writer thread gets its connection from.
pub(crate) trait Backend: Send + 'static {
    type Conn: GroupConn;

    /// The connection for the next group; an error fails the group.
    fn connection(&mut self) -> Result<&Self::Conn, <Self::Conn as GroupConn>::Error>;
}

type Outcome<C> = Result<(), Arc<<C as GroupConn>::Error>>;

/// A job of a group.
trait Job<C: GroupConn>: Send {
    /// Runs inside the group transaction; returns whether the job succeeded.
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// The error the job ended with, if it failed.
    fn failure(&self) -> Option<&StoreError>;
    /// Delivers the result once the group's fate is known.
    fn finish(self: Box<Self>, outcome: Outcome<C>);
}

struct GroupJob<T, F> {
    f: Option<F>,
    result: Option<StoreResult<T>>,
    reply: SyncSender<StoreResult<T>>,
}

impl<C, T, F> Job<C> for GroupJob<T, F>
where
    C: GroupConn,
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

    fn failure(&self) -> Option<&StoreError> {
        self.result.as_ref()?.as_ref().err()
    }

    fn finish(self: Box<Self>, outcome: Outcome<C>) {
        let result = match (self.result, outcome) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(e)) => Err(C::group_error(e)),
            (None, Ok(())) => Err(StoreError::Internal("a mutation was dropped before it ran".to_owned())),
        };
        let _ = self.reply.send(result);
    }
}

/// What the queue carries.
enum Work<B: Backend> {
    Group(Box<dyn Job<B::Conn>>),
    /// Runs alone on the backend, outside any group transaction.
    Exclusive(Box<dyn FnOnce(&mut B) + Send>),
}

/// Handle to a writer thread.
pub(crate) struct GroupWriter<B: Backend> {
    queue: Mutex<Option<Sender<Work<B>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<B: Backend> GroupWriter<B> {
    /// Starts the writer thread `name` on `backend`.
    pub(crate) fn spawn(name: &str, backend: B) -> StoreResult<GroupWriter<B>> {
        let (queue, jobs) = mpsc::channel::<Work<B>>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || writer_loop(backend, jobs))?;
        Ok(GroupWriter {
            queue: Mutex::new(Some(queue)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn submit<T: Send>(&self, work: Work<B>, reply: Receiver<StoreResult<T>>) -> StoreResult<T> {
        {
            let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            let Some(queue) = queue.as_ref() else {
                return Err(StoreError::WriterGone);
            };
            queue.send(work).map_err(|_| StoreError::WriterGone)?;
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
        let job = GroupJob {
            f: Some(f),
            result: None,
            reply,
        };
        self.submit(Work::Group(Box::new(job)), result)
    }

    /// Runs `f` alone on the backend: no other write runs meanwhile.
    pub(crate) fn exclusive<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut B) -> StoreResult<T> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        let job = move |backend: &mut B| {
            let result = catch_unwind(AssertUnwindSafe(|| f(backend))).unwrap_or_else(|_| {
                Err(StoreError::Internal(
                    "an exclusive job panicked inside the writer".to_owned(),
                ))
            });
            let _ = reply.send(result);
        };
        self.submit(Work::Exclusive(Box::new(job)), result)
    }

    /// Stops accepting jobs, lets queued jobs finish and joins the thread.
    pub(crate) fn shutdown(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl<B: Backend> Drop for GroupWriter<B> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn writer_loop<B: Backend>(mut backend: B, jobs: Receiver<Work<B>>) {
    let mut carried: Option<Work<B>> = None;
    loop {
        let first = match carried.take() {
            Some(work) => work,
            None => match jobs.recv() {
                Ok(work) => work,
                Err(_) => return,
            },
        };
        let first = match first {
            Work::Exclusive(job) => {
                job(&mut backend);
                continue;
            }
            Work::Group(job) => job,
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(Work::Group(job)) => group.push(job),
                Ok(exclusive) => {
                    carried = Some(exclusive);
                    break;
                }
                Err(_) => break,
            }
        }
        match backend.connection() {
            Ok(conn) => run_group(conn, group),
            Err(e) => finish_all(group, Err(Arc::new(e))),
        }
    }
}

fn run_group<C: GroupConn>(conn: &C, mut group: Vec<Box<dyn Job<C>>>) {
    if let Err(e) = conn.begin() {
        conn.roll_back();
        finish_all(group, Err(Arc::new(e)));
        return;
    }
    let mut aborted: Option<C::Error> = None;
    for job in group.iter_mut() {
        if let Err(e) = run_job(conn, job.as_mut()) {
            aborted = Some(e);
            break;
        }
    }
    let outcome = match aborted {
        Some(e) => Err(Arc::new(e)),
        None => conn.commit().map_err(Arc::new),
    };
    if outcome.is_err() {
        conn.roll_back();
    }
    finish_all(group, outcome);
}

/// Runs one job in its savepoint; an error aborts the group.
fn run_job<C: GroupConn>(conn: &C, job: &mut dyn Job<C>) -> Result<(), C::Error> {
    conn.savepoint()?;
    let tx = Tx::new(conn.db(), timefmt::now());
    let ok = job.run(&tx);
    if let Some(e) = conn.aborted(job.failure()) {
        return Err(e);
    }
    if ok {
        conn.release()?;
    } else {
        conn.roll_back_job()?;
    }
    match conn.aborted(None) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn finish_all<C: GroupConn>(group: Vec<Box<dyn Job<C>>>, outcome: Outcome<C>) {
    group.into_iter().for_each(|job| job.finish(outcome.clone()));
}
