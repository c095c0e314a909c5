//! Progress lines on stderr for long maintenance work (verify, backup, reindex).
//!
//! **Invariant:** nothing is ever written to stdout, and nothing at all is written unless
//! stderr is a terminal. A line appears only once the work has run for a moment, so small
//! stores stay silent, and it is redrawn at most a few times per second. In the daemon,
//! stderr is a log file, so progress only shows when the service runs in process.
#![allow(clippy::print_stderr)]

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Work shorter than this never draws anything.
const QUIET_PERIOD: Duration = Duration::from_millis(500);
/// Minimum time between two redraws.
const REDRAW_INTERVAL: Duration = Duration::from_millis(100);

/// One phase of counted work, e.g. "verify: hashing blobs" over N items.
#[derive(Debug)]
pub struct Progress {
    label: &'static str,
    total: u64,
    done: u64,
    enabled: bool,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// Starts a phase of `total` items; draws only when stderr is a terminal.
    pub fn new(label: &'static str, total: u64) -> Progress {
        Progress::with_output(label, total, std::io::stderr().is_terminal())
    }

    /// A phase that never draws (tests, benches, nested work).
    pub fn hidden(label: &'static str, total: u64) -> Progress {
        Progress::with_output(label, total, false)
    }

    fn with_output(label: &'static str, total: u64, enabled: bool) -> Progress {
        Progress {
            label,
            total,
            done: 0,
            enabled,
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// Items completed so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Records `n` more completed items and redraws when due.
    pub fn inc(&mut self, n: u64) {
        self.done = self.done.saturating_add(n);
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.started) < QUIET_PERIOD {
            return;
        }
        if self
            .last_draw
            .is_some_and(|last| now.duration_since(last) < REDRAW_INTERVAL)
        {
            return;
        }
        self.last_draw = Some(now);
        eprint!("\r{}", self.line());
    }

    fn line(&self) -> String {
        if self.total == 0 {
            return format!("{}: {}", self.label, self.done);
        }
        let percent = self.done.min(self.total) * 100 / self.total;
        format!("{}: {}/{} ({percent}%)", self.label, self.done, self.total)
    }

    /// Ends the phase, finishing the line if one was drawn.
    pub fn finish(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            eprintln!("\r{}", self.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_without_drawing_when_hidden() {
        let mut progress = Progress::hidden("verify", 10);
        progress.inc(3);
        progress.inc(4);
        assert_eq!(progress.done(), 7);
        assert_eq!(progress.line(), "verify: 7/10 (70%)");
        assert!(progress.last_draw.is_none());
    }

    #[test]
    fn an_unknown_total_shows_a_plain_count() {
        let mut progress = Progress::hidden("copy", 0);
        progress.inc(5);
        assert_eq!(progress.line(), "copy: 5");
    }
}
