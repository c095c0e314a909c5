//! `memoree inspect`: a local, read-only web view of what the agents remembered.
//!
//! An axum server on loopback renders server-side HTML pages (overview, claims with their
//! highlighted evidence, artifacts with revisions and diffs, conflicts, a relation graph, and
//! what recall and context building return for a question). It is a client of the daemon
//! like any CLI command: every read goes through [`memory::Memory`] as an ordinary protocol
//! request; it never opens the store.
//!
//! **Invariants:** it listens on loopback only; every request passes [`guard::Gate`] (GET or
//! HEAD, this listener's `Host`, no foreign `Origin`, the token or its cookie) before any page
//! runs; it sends no mutating or side-effecting operation; all stored content is untrusted and
//! is rendered as escaped text under a strict Content-Security-Policy with no inline script.

pub mod guard;
mod links;
pub mod memory;
mod pages;
mod server;
mod view;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

pub use memory::Memory;
use server::App;

use crate::protocol::ErrorCode;

/// The default `--listen`: an ephemeral port on 127.0.0.1.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// Why the inspector could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// `--listen` is malformed or not a loopback address.
    #[error("{}: {}", ErrorCode::ConfigError.prefix(), .0)]
    Listen(String),
    /// Binding or serving failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// No randomness for the token.
    #[error("{}: no randomness for the access token: {}", ErrorCode::InternalError.prefix(), .0)]
    Random(getrandom::Error),
}

impl InspectError {
    /// The wire code of this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            InspectError::Listen(_) => ErrorCode::ConfigError,
            InspectError::Io(_) | InspectError::Random(_) => ErrorCode::InternalError,
        }
    }
}

/// Parses `--listen`: `IP:PORT` or `localhost:PORT`, loopback only.
pub fn parse_listen(text: &str) -> Result<SocketAddr, InspectError> {
    let text = text.trim();
    let addr = match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
            .map_err(|_| InspectError::Listen(format!("invalid port in --listen {text:?}")))?,
        None => text.parse::<SocketAddr>().map_err(|_| {
            InspectError::Listen(format!(
                "--listen must be IP:PORT on loopback, e.g. 127.0.0.1:8765, got {text:?}"
            ))
        })?,
    };
    if !addr.ip().is_loopback() {
        return Err(InspectError::Listen(format!(
            "--listen {addr} is not a loopback address; the inspector only serves this machine"
        )));
    }
    Ok(addr)
}

/// A bound inspector: its address and the URL that grants access.
#[derive(Debug, Clone)]
pub struct Ready {
    pub addr: SocketAddr,
    /// `http://ADDR/?token=…`; whoever has it can read memory until the inspector stops.
    pub url: String,
}

/// Binds `addr` and builds the application.
fn bind(addr: SocketAddr, memory: Memory) -> Result<(TcpListener, Arc<App>, Ready), InspectError> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let token = guard::Gate::new_token().map_err(InspectError::Random)?;
    let url = format!("http://{addr}/?{}={token}", guard::TOKEN_PARAM);
    let app = Arc::new(App {
        memory,
        gate: guard::Gate::new(addr, token),
    });
    Ok((listener, app, Ready { addr, url }))
}

fn runtime() -> Result<tokio::runtime::Runtime, InspectError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(4)
        .thread_name("memoree-inspect")
        .build()?)
}

async fn run_until(
    listener: TcpListener,
    app: Arc<App>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), InspectError> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    axum::serve(listener, server::router(app))
        .with_graceful_shutdown(stop)
        .await?;
    Ok(())
}

/// Serves in the foreground until SIGINT or SIGTERM; `ready` runs once the listener is bound.
pub fn serve(addr: SocketAddr, memory: Memory, ready: impl FnOnce(&Ready)) -> Result<(), InspectError> {
    let runtime = runtime()?;
    let (listener, app, bound) = bind(addr, memory)?;
    ready(&bound);
    runtime.block_on(async move {
        let stop = async {
            use tokio::signal::unix::{SignalKind, signal};
            match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                _ => std::future::pending::<()>().await,
            }
        };
        run_until(listener, app, stop).await
    })
}

/// An inspector serving on a background thread (benches and in-process tests); stops when
/// dropped.
#[derive(Debug)]
pub struct Running {
    pub ready: Ready,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), InspectError>>>,
}

impl Running {
    /// Stops serving and waits for the thread.
    pub fn stop(mut self) -> Result<(), InspectError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), InspectError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(InspectError::Io(std::io::Error::other("the inspector thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Binds `addr` and serves on a background thread.
pub fn spawn(addr: SocketAddr, memory: Memory) -> Result<Running, InspectError> {
    let runtime = runtime()?;
    let (listener, app, ready) = bind(addr, memory)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("memoree-inspect".to_owned())
        .spawn(move || {
            runtime.block_on(run_until(listener, app, async move {
                let _ = stopped.await;
            }))
        })?;
    Ok(Running {
        ready,
        stop: Some(stop),
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert_eq!(parse_listen("127.0.0.1:8765").unwrap().port(), 8765);
        assert!(parse_listen("[::1]:0").unwrap().ip().is_loopback());
        assert_eq!(parse_listen("localhost:9").unwrap(), "127.0.0.1:9".parse().unwrap());
        for bad in [
            "0.0.0.0:8765",
            "192.168.1.2:80",
            "[::]:1",
            "example.com:80",
            "8765",
            "localhost:x",
        ] {
            let error = parse_listen(bad).unwrap_err();
            assert_eq!(error.code(), ErrorCode::ConfigError, "{bad}");
        }
    }
}
