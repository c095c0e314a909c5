//! Runs trials on `jobs` worker threads. Trials are independent (each has its own store,
//! daemon and temporary directory), so they run in any order; results come back in plan
//! order. A panicking trial is a failed trial, never a crashed run.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::plan::Trial;

/// How one trial ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Passed,
    Failed(String),
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub duration: Duration,
}

/// Runs one trial, turning a panic into a failure.
pub fn run_one(trial: &Trial) -> Outcome {
    if let Some(reason) = &trial.skip {
        return Outcome {
            status: Status::Skipped(reason.clone()),
            duration: Duration::ZERO,
        };
    }
    let started = Instant::now();
    let status = match catch_unwind(AssertUnwindSafe(|| trial.run())) {
        Ok(Ok(())) => Status::Passed,
        Ok(Err(message)) => Status::Failed(message),
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Status::Failed(format!("the runner panicked: {text}"))
        }
    };
    Outcome {
        status,
        duration: started.elapsed(),
    }
}

/// Runs every trial on `jobs` threads (at least one) and calls `progress` as each finishes.
pub fn run_all(trials: &[Trial], jobs: usize, progress: &(dyn Fn(&Trial, &Outcome) + Sync)) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; trials.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, trials.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(trial) = trials.get(index) else { break };
                    let outcome = run_one(trial);
                    progress(trial, &outcome);
                    results.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(outcome);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| {
            o.unwrap_or(Outcome {
                status: Status::Failed("the trial did not run".to_owned()),
                duration: Duration::ZERO,
            })
        })
        .collect()
}
