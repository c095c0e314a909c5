//! Turning SIGINT and SIGTERM into one graceful-stop future.

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Installed handlers for the stop signals. Once installed, the signals no longer kill the
/// process; [`Signals::recv`] completes when either arrives.
#[derive(Debug)]
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    /// Installs the handlers; must run inside a tokio runtime.
    pub fn install() -> io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Completes on the first SIGINT or SIGTERM.
    pub async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => tracing::info!("SIGINT received"),
            _ = self.terminate.recv() => tracing::info!("SIGTERM received"),
        }
    }
}
