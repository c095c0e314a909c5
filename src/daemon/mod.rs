//! The daemon: an async shell that moves frames between sockets and the synchronous
//! [`Service`]. It knows nothing about operations.
//!
//! - [`listener`] binds the endpoint: data-dir lock, endpoint lock, stale-socket handling
//!   and owner-only permissions.
//! - `connection` runs one connection: frames in, `spawn_blocking(Service::handle_json)`,
//!   frames out, every step under a timeout. A connection may carry several requests in
//!   sequence, and pipelined ones (up to eight in flight, replies in request order).
//! - [`shutdown`] turns SIGINT/SIGTERM into a graceful stop.
//!
//! This module owns the accept loop and the connection limit: at most
//! `max_connections` connections are served at once (capabilities reports the limit); a
//! connection over it is answered with a retryable `TRANSPORT_ERROR` envelope whose
//! `details.reason` is `connection_limit`, then closed.
//!
//! **Invariants:** the daemon never looks inside a request beyond its frame; every frame
//! that was read gets exactly one response frame (error envelopes included) unless the
//! connection broke; no SQLite call runs on the async reactor; on shutdown the socket file
//! is removed and queued writes finish before the process exits.

mod connection;
mod handshake;
pub mod listener;
mod memory;
pub mod remote;
pub mod shutdown;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{Semaphore, oneshot, watch};

use crate::fsutil::FsError;
use crate::paths::{Endpoint, LAYOUT_ENTRIES};
use crate::protocol::limits::{MAX_CONCURRENT_CONNECTIONS, MAX_FRAME_BYTES};
use crate::protocol::{CONNECTION_LIMIT_REASON, ErrorBody, ErrorCode, Response, TRANSPORT_REQUEST_ID};
use crate::service::{Runtime, Service, ServiceError, error_body};
use crate::store::Store;

/// Refused connections that may linger at once (busy envelope written, the peer's unread
/// request drained for `linger` so the reply survives). Beyond this a refused connection
/// still gets the envelope, written without waiting, and is closed at once.
const MAX_PENDING_REFUSALS: usize = 64;

/// Server-side time limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerTimeouts {
    /// Reading one whole frame, and waiting for a connection's first frame (30 s).
    pub read: Duration,
    /// Completing a TLS handshake, before the connection is authenticated or counted
    /// against the connection limit (5 s).
    pub handshake: Duration,
    /// Writing one response frame (30 s).
    pub write: Duration,
    /// Waiting for the next request on a connection that already carried one (5 s).
    pub idle: Duration,
    /// Draining what a peer still sends after an early error reply, so the reply is not
    /// lost to a connection reset (2 s).
    pub linger: Duration,
    /// Waiting for in-flight connections on shutdown (10 s).
    pub shutdown_grace: Duration,
}

impl Default for ServerTimeouts {
    fn default() -> ServerTimeouts {
        ServerTimeouts {
            read: Duration::from_secs(30),
            handshake: Duration::from_secs(5),
            write: Duration::from_secs(30),
            idle: Duration::from_secs(5),
            linger: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// What to serve and where.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    pub listen: Endpoint,
    pub data_dir: PathBuf,
    /// A runtime directory to create (or tighten) to 0700 before binding: the default
    /// runtime dir when no `--listen` was given.
    pub private_runtime_dir: Option<PathBuf>,
    /// Lifts the refusal to listen on a non-loopback plain TCP address.
    pub allow_non_loopback_tcp: bool,
    /// Server credentials and accepted clients of a `tls://` listener (the `[remote]`
    /// table of `config.toml`); required for one, ignored otherwise.
    pub remote: Option<remote::RemoteConfig>,
    pub max_connections: usize,
    pub max_frame_bytes: usize,
    pub timeouts: ServerTimeouts,
    /// A PostgreSQL database to serve instead of the embedded store in `data_dir` (which
    /// then holds only this daemon's lock and log).
    pub store_url: Option<crate::store::pg::PgUrl>,
    /// How long a daemon serving `store_url` waits for the database to accept connections
    /// (answering `doctor` and failing other requests with `store_unavailable` meanwhile)
    /// before it exits with an error; see [`DEFAULT_STORE_WAIT`].
    pub store_wait: Duration,
    /// What `doctor` reports about this process (`serve --lifecycle-owner`,
    /// `--report-binary-version`).
    pub discovery: crate::service::Discovery,
}

/// How long a front end waits for its PostgreSQL database at startup by default
/// (`memoree serve --store-wait SECONDS`, `[store] wait` in config.toml).
pub const DEFAULT_STORE_WAIT: Duration = Duration::from_secs(60);

impl DaemonConfig {
    pub fn new(listen: Endpoint, data_dir: impl Into<PathBuf>) -> DaemonConfig {
        DaemonConfig {
            listen,
            data_dir: data_dir.into(),
            private_runtime_dir: None,
            allow_non_loopback_tcp: false,
            remote: None,
            max_connections: MAX_CONCURRENT_CONNECTIONS,
            max_frame_bytes: MAX_FRAME_BYTES,
            timeouts: ServerTimeouts::default(),
            store_url: None,
            store_wait: DEFAULT_STORE_WAIT,
            discovery: crate::service::Discovery::default(),
        }
    }
}

/// Why the daemon could not start (or failed while stopping).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    #[error(
        "refusing to listen on non-loopback address {addr} without TLS: listen on tls://{addr} with a [remote] table in config.toml (server certificate and the client certificates it accepts), or pass --dangerously-allow-non-loopback-tcp to serve it unauthenticated and unencrypted"
    )]
    NonLoopback { addr: SocketAddr },
    #[error("cannot listen on {endpoint}: {problem}")]
    Remote { endpoint: Endpoint, problem: String },
    #[error("another Memoree daemon owns {}: the data-directory lock is held", path.display())]
    DataDirLocked { path: PathBuf },
    #[error("another daemon owns Unix endpoint {}: its lock {} is held", socket.display(), lock.display())]
    EndpointLocked { socket: PathBuf, lock: PathBuf },
    #[error("a daemon is already accepting connections on {}", path.display())]
    AlreadyServing { path: PathBuf },
    #[error("the socket {} neither accepted nor refused a connection within {} seconds; not replacing it", path.display(), limit.as_secs())]
    ProbeTimedOut { path: PathBuf, limit: Duration },
    #[error("refusing to replace {}: it exists and is not a socket", path.display())]
    NotASocket { path: PathBuf },
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error("cannot open the store: {0}")]
    Store(#[source] ServiceError),
    #[error("failed to {action} {target}: {source}")]
    Io {
        action: &'static str,
        target: String,
        #[source]
        source: std::io::Error,
    },
}

impl DaemonError {
    pub(crate) fn io(action: &'static str, target: impl std::fmt::Display, source: std::io::Error) -> DaemonError {
        DaemonError::Io {
            action,
            target: target.to_string(),
            source,
        }
    }

    /// The wire code reported for this failure (the message gets that code's prefix).
    pub fn code(&self) -> ErrorCode {
        match self {
            DaemonError::Store(error) => error_body(error).code,
            DaemonError::NonLoopback { .. }
            | DaemonError::Remote { .. }
            | DaemonError::NotASocket { .. }
            | DaemonError::Fs(_) => ErrorCode::ConfigError,
            DaemonError::DataDirLocked { .. }
            | DaemonError::EndpointLocked { .. }
            | DaemonError::AlreadyServing { .. }
            | DaemonError::ProbeTimedOut { .. }
            | DaemonError::Io { .. } => ErrorCode::TransportError,
        }
    }
}

/// The error body of the envelope a connection over the limit receives.
pub fn busy_error_body(max_connections: usize) -> ErrorBody {
    ErrorBody::prefixed(
        ErrorCode::TransportError,
        format_args!("connection limit reached: the daemon serves at most {max_connections} connections at once"),
    )
    .with_retryable(true)
    .with_hint("Retry the same request shortly, with backoff.")
    .with_details(json!({"reason": CONNECTION_LIMIT_REASON, "max_connections": max_connections}))
}

/// Everything acquired before serving; dropping it releases the locks and removes the
/// socket file.
struct Prepared {
    service: Service,
    bound: listener::Bound,
    tls: Option<remote::ServerTls>,
    _data_lock: listener::DataDirLock,
    config: DaemonConfig,
    /// The outcome of a PostgreSQL store's startup (see [`Store::start_postgres`]).
    startup: Option<oneshot::Receiver<Result<(), crate::store::StoreError>>>,
}

/// Checks the policy, locks the data dir, opens the store and binds, in that order.
fn prepare(config: &DaemonConfig) -> Result<Prepared, DaemonError> {
    if let Endpoint::Tcp(addr) = &config.listen
        && !config.listen.is_loopback()
        && !config.allow_non_loopback_tcp
    {
        return Err(DaemonError::NonLoopback { addr: *addr });
    }
    let tls = server_tls(config)?;
    crate::fsutil::ensure_private_dir(&config.data_dir, LAYOUT_ENTRIES)?;
    let data_lock = listener::DataDirLock::acquire(&config.data_dir)?;
    if let Some(runtime_dir) = &config.private_runtime_dir {
        crate::fsutil::ensure_private_dir(runtime_dir, LAYOUT_ENTRIES)?;
    }
    let mut startup = None;
    let store = match &config.store_url {
        // The PostgreSQL driver blocks on its own runtime, which may not happen on a thread
        // that drives this daemon's tasks: connect (and migrate) from plain threads. The
        // store answers at once; it connects in the background, and the daemon stops if it
        // cannot within `store_wait`.
        Some(url) => std::thread::scope(|scope| {
            scope
                .spawn(|| Store::start_postgres(&url.0, &config.data_dir, config.store_wait))
                .join()
                .unwrap_or_else(|_| {
                    Err(crate::store::StoreError::Internal(
                        "opening the PostgreSQL store panicked".to_owned(),
                    ))
                })
        })
        .and_then(|store| {
            let (done, outcome) = oneshot::channel();
            let waiting = store.clone();
            std::thread::Builder::new()
                .name("memoree-store-start".to_owned())
                .spawn(move || {
                    let _ = done.send(waiting.wait_postgres_ready());
                })?;
            startup = Some(outcome);
            Ok(store)
        }),
        None => Store::open(&config.data_dir),
    }
    .map_err(|e| DaemonError::Store(e.into()))?;
    let runtime = Runtime {
        daemon_pid: Some(std::process::id()),
        discovery: config.discovery.clone(),
        semantic: crate::semantic::State::load(&config.data_dir),
        ..Runtime::default()
    };
    let service = Service::new(store, runtime);
    let bound = listener::bind(&config.listen)?;
    tracing::info!(endpoint = %bound.endpoint(), pid = std::process::id(), "memoree daemon listening");
    Ok(Prepared {
        service,
        bound,
        tls,
        _data_lock: data_lock,
        config: config.clone(),
        startup,
    })
}

/// The acceptor of a `tls://` listener, built before anything is locked or opened so a
/// credential problem is reported at once.
fn server_tls(config: &DaemonConfig) -> Result<Option<remote::ServerTls>, DaemonError> {
    let Endpoint::Tls(addr) = &config.listen else {
        return Ok(None);
    };
    let refuse = |problem: String| DaemonError::Remote {
        endpoint: config.listen.clone(),
        problem,
    };
    if addr.ip().is_none() {
        return Err(refuse(format!(
            "a daemon listens on an IP address, not the host name {:?}",
            addr.host
        )));
    }
    let Some(remote) = &config.remote else {
        return Err(refuse(
            "a TLS listener needs a [remote] table in config.toml: cert, key, client_ca and [[remote.clients]] (see README, \"Remote access\")".to_owned(),
        ));
    };
    remote::ServerTls::build(remote).map(Some).map_err(refuse)
}

/// Serves until SIGINT or SIGTERM, then shuts down cleanly. This is `memoree serve`.
pub fn run(config: DaemonConfig) -> Result<(), DaemonError> {
    memory::tune();
    let runtime = build_runtime()?;
    let grace = config.timeouts.shutdown_grace;
    let result = runtime.block_on(async {
        // Handlers go in before the socket exists, so a signal can never skip the cleanup.
        let signals = shutdown::Signals::install().map_err(|e| DaemonError::io("install", "signal handlers", e))?;
        let prepared = prepare(&config)?;
        serve(prepared, signals.recv()).await
    });
    runtime.shutdown_timeout(grace);
    result
}

/// A daemon serving on a background thread: for tests, benches and embedding.
#[derive(Debug)]
pub struct DaemonHandle {
    endpoint: Endpoint,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), DaemonError>>>,
}

impl DaemonHandle {
    /// The bound endpoint (for `tcp://…:0`, the port actually chosen).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting, lets in-flight requests finish, removes the socket and waits.
    pub fn shutdown(mut self) -> Result<(), DaemonError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), DaemonError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(DaemonError::io(
                "run",
                "the daemon thread",
                std::io::Error::other("the daemon thread panicked"),
            )),
            None => Ok(()),
        }
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// Binds and serves on a background thread until [`DaemonHandle::shutdown`].
pub fn start(config: DaemonConfig) -> Result<DaemonHandle, DaemonError> {
    let prepared = prepare(&config)?;
    let endpoint = prepared.bound.endpoint().clone();
    let runtime = build_runtime()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let grace = config.timeouts.shutdown_grace;
    let thread = std::thread::Builder::new()
        .name("memoreed".to_owned())
        .spawn(move || {
            let result = runtime.block_on(serve(prepared, async {
                let _ = stopped.await;
            }));
            runtime.shutdown_timeout(grace);
            result
        })
        .map_err(|e| DaemonError::io("spawn", "the daemon thread", e))?;
    Ok(DaemonHandle {
        endpoint,
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// One thread runs all socket I/O; every request is served on the blocking pool. With
/// nothing blocking on the reactor a single I/O thread suffices, and it avoids the
/// cross-worker wakeups of a work-stealing runtime (measurably faster round trips on small
/// machines; see `benches/transport.rs`).
fn build_runtime() -> Result<tokio::runtime::Runtime, DaemonError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("memoreed-blocking")
        .build()
        .map_err(|e| DaemonError::io("start", "the async runtime", e))
}

/// The accept loop: admits connections under the limit until `shutdown` completes, then
/// drains them and stops the store.
async fn serve(prepared: Prepared, shutdown: impl Future<Output = ()>) -> Result<(), DaemonError> {
    let Prepared {
        service,
        bound,
        tls,
        _data_lock,
        config,
        startup,
    } = prepared;
    let (listener, socket_guard) = bound.into_async()?;
    let ctx = Arc::new(connection::Ctx {
        busy_frame: connection::encode_response(
            &Response::failure(TRANSPORT_REQUEST_ID, busy_error_body(config.max_connections)),
            config.max_frame_bytes,
        ),
        service: service.clone(),
        tls,
        timeouts: config.timeouts,
        max_frame_bytes: config.max_frame_bytes,
        max_connections: config.max_connections,
    });
    let catch_up = crate::service::vectors::spawn_catch_up(&service);
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let refusals = Arc::new(Semaphore::new(MAX_PENDING_REFUSALS));
    let handshakes = handshake::Handshakes::new();
    let (stop_tx, stop_rx) = watch::channel(false);
    // Resolves only if the store's startup fails (a store that started stays pending).
    let startup_failed = async move {
        match startup {
            Some(outcome) => match outcome.await {
                Ok(Err(error)) => error,
                _ => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    };
    let mut failure = None;
    tokio::pin!(shutdown);
    tokio::pin!(startup_failed);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            error = &mut startup_failed => {
                tracing::error!(%error, "the store did not start; stopping");
                failure = Some(error);
                break;
            }
            accepted = listener.accept() => match accepted {
                Ok(conn) => admit(conn, &ctx, &permits, &refusals, &handshakes, &stop_rx),
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    // Out of descriptors or memory: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    tracing::info!("shutting down");
    drop(listener);
    drop(socket_guard);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(config.timeouts.shutdown_grace, async {
        let _ = permits.acquire_many(config.max_connections as u32).await;
        let _ = refusals.acquire_many(MAX_PENDING_REFUSALS as u32).await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still busy after the shutdown grace period; stopping anyway");
    }
    drop(catch_up);
    // Queued mutations finish and commit before the writer stops.
    let _ = tokio::task::spawn_blocking(move || service.store().shutdown()).await;
    match failure {
        Some(error) => Err(DaemonError::Store(error.into())),
        None => Ok(()),
    }
}

fn admit(
    conn: listener::Conn,
    ctx: &Arc<connection::Ctx>,
    permits: &Arc<Semaphore>,
    refusals: &Arc<Semaphore>,
    handshakes: &Arc<handshake::Handshakes>,
    stop: &watch::Receiver<bool>,
) {
    let admission = Admission {
        ctx: Arc::clone(ctx),
        permits: Arc::clone(permits),
        refusals: Arc::clone(refusals),
        stop: stop.clone(),
    };
    match conn {
        listener::Conn::Unix(stream) => admission.plain(stream),
        listener::Conn::Tcp(stream) => admission.plain(stream),
        // No permit before authentication: the handshake holds only a pre-authentication slot.
        listener::Conn::Tls(stream, peer) => {
            let slot = handshakes.enter(peer.ip());
            tokio::spawn(admission.tls(stream, slot));
        }
    }
}

/// What admitting a connection needs.
struct Admission {
    ctx: Arc<connection::Ctx>,
    permits: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    stop: watch::Receiver<bool>,
}

impl Admission {
    /// A Unix or plain TCP connection: served under a permit, or over the limit answered
    /// with the busy envelope (lingering while fewer than `MAX_PENDING_REFUSALS` do).
    fn plain<S>(self, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + std::os::fd::AsFd + Send + Unpin + 'static,
    {
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(async move {
                    connection::serve_stream(stream, &self.ctx, &self.ctx.service, self.stop).await;
                    drop(permit);
                });
            }
            Err(_) => {
                tracing::warn!(
                    max_connections = self.ctx.max_connections,
                    "connection limit reached; refusing a connection"
                );
                match Arc::clone(&self.refusals).try_acquire_owned() {
                    Ok(permit) => {
                        tokio::spawn(async move {
                            let mut stream = stream;
                            connection::reply_and_close(&mut stream, &self.ctx.busy_frame, &self.ctx).await;
                            drop(permit);
                        });
                    }
                    Err(_) => connection::refuse_busy_now(&stream, &self.ctx.busy_frame),
                }
            }
        }
    }

    /// The handshake in its pre-authentication slot, then, for an authenticated client,
    /// the connection limit: served under a permit, or answered with the busy envelope
    /// inside its TLS session.
    async fn tls(self, stream: tokio::net::TcpStream, slot: handshake::Slot) {
        let Some((mut stream, service)) = slot.run(connection::handshake(stream, &self.ctx)).await else {
            return;
        };
        match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => {
                connection::serve_stream(stream, &self.ctx, &service, self.stop).await;
                drop(permit);
            }
            Err(_) => {
                tracing::warn!(
                    max_connections = self.ctx.max_connections,
                    "connection limit reached; refusing an authenticated TLS connection"
                );
                if let Ok(permit) = Arc::clone(&self.refusals).try_acquire_owned() {
                    connection::reply_and_close(&mut stream, &self.ctx.busy_frame, &self.ctx).await;
                    drop(permit);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
