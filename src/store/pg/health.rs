//! What a front end knows about its PostgreSQL server's availability, and the startup gate.
//!
//! - [`Health`] records the outage this front end currently sees: set when a connection
//!   attempt (pool, writer or startup) fails because the server is unreachable or restarting,
//!   cleared when one succeeds. It also keeps the last statistics `doctor` read, so a `doctor`
//!   during an outage can still report the last known commit sequence.
//! - [`Gate`] holds requests back until the store has connected and migrated once: a front end
//!   started before its database answers every request with
//!   [`StoreError::Unavailable`] (and `doctor` with the
//!   outage) while `start_loop` retries with bounded backoff, logging each attempt.
//! - [`Prober`] runs `doctor`'s statistics query on a thread of its own, one at a time, so a
//!   `doctor` waits for the database at most a fixed budget whatever the server does (down,
//!   restarting, or frozen mid-query).
//!
//! **Invariant:** nothing here blocks a caller longer than the budget it was given; at most
//! one probe thread is waited for at a time (a stuck one is abandoned after 30 s).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use postgres::Config;

use super::PgConn;
use super::PgStats;
use crate::store::error::{StoreError, StoreResult};
use crate::timefmt::{self, Timestamp};

/// First pause between startup attempts; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest pause between startup attempts, so a front end serves within about this long
/// after its database starts accepting connections.
pub(super) const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// How long a probe may run before the next `doctor` stops waiting for it and starts another.
const ABANDON_PROBE_AFTER: Duration = Duration::from_secs(30);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// An outage as `doctor` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outage {
    /// What the last attempt to reach the server said.
    pub message: String,
    /// When this front end first saw the server unreachable (RFC 3339).
    pub since: String,
    /// How long it has been unreachable so far.
    pub duration: Duration,
}

#[derive(Debug)]
struct Down {
    since: Instant,
    since_wall: Timestamp,
    message: String,
}

/// The availability this front end sees (see the module documentation).
#[derive(Debug, Default)]
pub struct Health {
    down: AtomicBool,
    state: Mutex<Option<Down>>,
    last_stats: Mutex<Option<PgStats>>,
}

impl Health {
    /// A connection was made: the server is reachable.
    pub fn up(&self) {
        if !self.down.load(Ordering::Acquire) {
            return;
        }
        if let Some(down) = lock(&self.state).take() {
            tracing::info!(
                unavailable_ms = down.since.elapsed().as_millis() as u64,
                "the PostgreSQL store is reachable again"
            );
        }
        self.down.store(false, Ordering::Release);
    }

    /// An attempt to reach the server failed with `error` (only store-unavailable errors
    /// count; anything else says nothing about reachability).
    pub fn failed(&self, error: &StoreError) {
        if !error.is_store_unavailable() {
            return;
        }
        let message = error.to_string();
        let mut state = lock(&self.state);
        match state.as_mut() {
            Some(down) => down.message = message,
            None => {
                tracing::warn!(error = %message, "the PostgreSQL store is unreachable");
                *state = Some(Down {
                    since: Instant::now(),
                    since_wall: timefmt::now(),
                    message,
                });
            }
        }
        self.down.store(true, Ordering::Release);
    }

    /// Whether the last connection attempt failed.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// The current outage, if the last connection attempt failed.
    pub fn outage(&self) -> Option<Outage> {
        if !self.is_down() {
            return None;
        }
        lock(&self.state).as_ref().map(|down| Outage {
            message: down.message.clone(),
            since: timefmt::to_wire(&down.since_wall),
            duration: down.since.elapsed(),
        })
    }

    pub(super) fn remember(&self, stats: PgStats) {
        *lock(&self.last_stats) = Some(stats);
    }

    /// The statistics of the last successful `doctor` probe.
    pub fn last_stats(&self) -> Option<PgStats> {
        *lock(&self.last_stats)
    }
}

#[derive(Debug)]
enum Phase {
    Starting,
    Ready,
    /// Startup gave up; the error is taken by the one waiter ([`Gate::wait`]).
    Failed(Option<StoreError>, String),
    Stopped,
}

/// Holds requests back until the store is ready (see the module documentation).
#[derive(Debug)]
pub struct Gate {
    ready: AtomicBool,
    waiting: bool,
    phase: Mutex<Phase>,
    changed: Condvar,
}

impl Gate {
    pub fn ready() -> Gate {
        Gate {
            ready: AtomicBool::new(true),
            waiting: false,
            phase: Mutex::new(Phase::Ready),
            changed: Condvar::new(),
        }
    }

    pub fn starting() -> Gate {
        Gate {
            ready: AtomicBool::new(false),
            waiting: true,
            phase: Mutex::new(Phase::Starting),
            changed: Condvar::new(),
        }
    }

    /// Whether the store was not ready when it was made (it started waiting for its server).
    pub fn was_waiting(&self) -> bool {
        self.waiting
    }

    /// `Ok` once the store is ready; otherwise the unavailability a request reports.
    pub fn check(&self, health: &Health) -> StoreResult<()> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let phase = lock(&self.phase);
        match &*phase {
            Phase::Ready => Ok(()),
            Phase::Starting => Err(StoreError::Unavailable(match health.outage() {
                Some(outage) => format!(
                    "waiting for PostgreSQL to accept connections (for {} ms; last attempt: {})",
                    outage.duration.as_millis(),
                    outage.message
                ),
                None => "waiting for PostgreSQL to accept connections".to_owned(),
            })),
            Phase::Failed(_, message) => Err(StoreError::Unavailable(format!(
                "the store could not be opened: {message}"
            ))),
            Phase::Stopped => Err(StoreError::WriterGone),
        }
    }

    fn set(&self, phase: Phase) {
        let mut current = lock(&self.phase);
        if matches!(*current, Phase::Starting) || matches!(phase, Phase::Stopped) {
            if matches!(phase, Phase::Ready) {
                self.ready.store(true, Ordering::Release);
            }
            *current = phase;
        }
        self.changed.notify_all();
    }

    /// Stops a startup still in progress (the store is shutting down).
    pub fn stop(&self) {
        let mut current = lock(&self.phase);
        if matches!(*current, Phase::Starting) {
            *current = Phase::Stopped;
        }
        self.changed.notify_all();
    }

    /// Sleeps `pause` unless stopped meanwhile; returns whether startup should go on.
    fn pause(&self, pause: Duration) -> bool {
        let deadline = Instant::now() + pause;
        let mut phase = lock(&self.phase);
        loop {
            if !matches!(*phase, Phase::Starting) {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            phase = self
                .changed
                .wait_timeout(phase, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Blocks until the store is ready (`Ok`), startup gave up (its error) or the store was
    /// shut down first.
    pub fn wait(&self) -> StoreResult<()> {
        let mut phase = lock(&self.phase);
        loop {
            match &mut *phase {
                Phase::Starting => phase = self.changed.wait(phase).unwrap_or_else(|e| e.into_inner()),
                Phase::Ready => return Ok(()),
                Phase::Failed(error, message) => {
                    return Err(error.take().unwrap_or_else(|| StoreError::Unavailable(message.clone())));
                }
                Phase::Stopped => return Err(StoreError::WriterGone),
            }
        }
    }
}

/// Connects and migrates until it works, the error is not an outage, `wait` has passed, or the
/// store is shut down: the startup of a front end whose database may not be there yet.
/// Every failed attempt is logged with the pause before the next one.
pub(super) fn start_loop(
    config: &Config,
    timeout: Duration,
    started: Instant,
    wait: Duration,
    gate: &Gate,
    health: &Health,
) {
    let mut backoff = FIRST_BACKOFF;
    // The caller made the first attempt.
    let mut attempt: u32 = 1;
    if !gate.pause(backoff) {
        return;
    }
    loop {
        attempt += 1;
        let result = PgConn::connect(config, timeout).and_then(|conn| super::migrate::migrate(&conn));
        match result {
            Ok(()) => {
                health.up();
                tracing::info!(
                    attempt,
                    waited_ms = started.elapsed().as_millis() as u64,
                    "the PostgreSQL store is ready"
                );
                gate.set(Phase::Ready);
                return;
            }
            Err(error) if error.is_store_unavailable() => {
                health.failed(&error);
                let elapsed = started.elapsed();
                if elapsed >= wait {
                    let message = format!(
                        "PostgreSQL did not accept connections within {} s ({attempt} attempts; last: {error})",
                        wait.as_secs()
                    );
                    tracing::error!(attempt, %error, "giving up waiting for the PostgreSQL store");
                    gate.set(Phase::Failed(Some(StoreError::Unavailable(message.clone())), message));
                    return;
                }
                let pause = backoff.min(wait - elapsed);
                tracing::warn!(
                    attempt,
                    %error,
                    retry_in_ms = pause.as_millis() as u64,
                    waited_ms = elapsed.as_millis() as u64,
                    "the PostgreSQL store is not reachable yet; retrying"
                );
                if !gate.pause(pause) {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(error) => {
                tracing::error!(attempt, %error, "cannot open the PostgreSQL store");
                let message = error.to_string();
                gate.set(Phase::Failed(Some(error), message));
                return;
            }
        }
    }
}

/// The outcome of a `doctor` probe that did not produce statistics.
#[derive(Debug)]
pub enum ProbeError {
    /// The server is unreachable, restarting or did not answer within the budget.
    Outage(Outage),
    /// Anything else (a bug, a damaged schema): reported as the error it is.
    Failed(String),
}

#[derive(Debug, Default)]
struct Slot {
    result: Mutex<Option<Result<PgStats, Arc<StoreError>>>>,
    done: Condvar,
}

/// One `doctor` probe in flight at a time (see the module documentation).
#[derive(Debug, Default)]
pub struct Prober {
    current: Mutex<Option<(Arc<Slot>, Instant, Timestamp)>>,
}

impl Prober {
    /// Runs `probe` on a thread (or joins the one in flight) and waits at most `budget`.
    pub fn run(
        &self,
        budget: Duration,
        health: &Health,
        probe: impl FnOnce() -> StoreResult<PgStats> + Send + 'static,
    ) -> Result<PgStats, ProbeError> {
        let deadline = Instant::now() + budget;
        let (slot, started, started_wall) = {
            let mut current = lock(&self.current);
            // A probe stuck longer than this (a connection to a server that vanished without
            // closing it) is left to itself and a new one started, so `doctor` sees the server
            // come back even then; at most one such thread is added per period.
            let stale = |slot: &Slot, started: &Instant| {
                lock(&slot.result).is_some() || started.elapsed() > ABANDON_PROBE_AFTER
            };
            let fresh_needed = current.as_ref().is_none_or(|(slot, started, _)| stale(slot, started));
            if fresh_needed {
                let slot = Arc::new(Slot::default());
                let filled = Arc::clone(&slot);
                let spawned = std::thread::Builder::new()
                    .name("memoree-pg-probe".to_owned())
                    .spawn(move || {
                        let result = probe().map_err(Arc::new);
                        *lock(&filled.result) = Some(result);
                        filled.done.notify_all();
                    });
                if let Err(error) = spawned {
                    return Err(ProbeError::Failed(format!("cannot start the health probe: {error}")));
                }
                *current = Some((slot, Instant::now(), timefmt::now()));
            }
            let (slot, started, wall) = current.as_ref().expect("a probe is in flight");
            (Arc::clone(slot), *started, *wall)
        };
        let mut result = lock(&slot.result);
        loop {
            if let Some(result) = result.as_ref() {
                return match result {
                    Ok(stats) => {
                        health.remember(*stats);
                        Ok(*stats)
                    }
                    Err(error) if error.is_store_unavailable() => {
                        health.failed(error);
                        Err(ProbeError::Outage(health.outage().unwrap_or_else(|| Outage {
                            message: error.to_string(),
                            since: timefmt::to_wire(&started_wall),
                            duration: started.elapsed(),
                        })))
                    }
                    Err(error) => Err(ProbeError::Failed(error.to_string())),
                };
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            result = slot
                .done
                .wait_timeout(result, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(result);
        // No answer within the budget: the server may be frozen, or every connection busy.
        let silent = format!(
            "no answer from PostgreSQL within {} ms (a probe has waited {} ms)",
            budget.as_millis(),
            started.elapsed().as_millis()
        );
        Err(ProbeError::Outage(match health.outage() {
            Some(outage) => outage,
            None => Outage {
                message: silent,
                since: timefmt::to_wire(&started_wall),
                duration: started.elapsed(),
            },
        }))
    }
}
