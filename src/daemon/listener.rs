//! Binding the daemon's endpoint, and the locks that keep two daemons apart.
//!
//! - `<data>/memoreed.lock` (0600) is held exclusively for the daemon's lifetime, so two
//!   daemons never share a store, whatever endpoints they listen on.
//! - A Unix endpoint is guarded by `<socket>.lock` (0600). With that lock held, an existing
//!   socket file is probed: one that accepts belongs to a live daemon and is left alone,
//!   one that refuses is stale and is replaced, anything that is not a socket is refused.
//! - The socket is created with mode 0600 from the start (its mode is set on the socket
//!   before `bind` where the platform allows, and again on the path after it).
//!
//! **Invariant:** the socket file is removed on shutdown only if it is still the one this
//! process bound; the lock files stay on disk and are released by closing them.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use super::DaemonError;
use crate::fsutil::PRIVATE_FILE_MODE;
use crate::net::{self, connect_unix};
use crate::paths::{DAEMON_LOCK, Endpoint, TlsAddr, socket_lock_path};

/// How long an existing socket may take to accept or refuse a probe connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The listen backlog.
const BACKLOG: i32 = 128;

/// The exclusive lock on a data directory, held while the value lives.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Takes `<data_dir>/memoreed.lock` without waiting.
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, DaemonError> {
        let path = data_dir.join(DAEMON_LOCK);
        let file = try_lock(&path).map_err(|e| match e {
            LockError::Held => DaemonError::DataDirLocked { path: path.clone() },
            LockError::Io(e) => DaemonError::io("lock", path.display(), e),
        })?;
        Ok(DataDirLock { _file: file })
    }
}

enum LockError {
    Held,
    Io(io::Error),
}

/// Opens (creating 0600, never through a symbolic link) and exclusively locks `path`.
fn try_lock(path: &Path) -> Result<File, LockError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(LockError::Io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Held),
        Err(std::fs::TryLockError::Error(e)) => Err(LockError::Io(e)),
    }
}

/// A bound listener that has not been handed to the async runtime yet.
#[derive(Debug)]
pub(super) struct Bound {
    listener: StdListener,
    endpoint: Endpoint,
    socket: Option<SocketGuard>,
}

#[derive(Debug)]
enum StdListener {
    Unix(StdUnixListener),
    Tcp(StdTcpListener),
    Tls(StdTcpListener),
}

impl Bound {
    /// The endpoint actually bound (a TCP port 0 resolved).
    pub(super) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Registers the listener with the current tokio runtime.
    pub(super) fn into_async(self) -> Result<(Listener, Option<SocketGuard>), DaemonError> {
        let endpoint = self.endpoint;
        let listener = match self.listener {
            StdListener::Unix(l) => UnixListener::from_std(l).map(Listener::Unix),
            StdListener::Tcp(l) => TcpListener::from_std(l).map(Listener::Tcp),
            StdListener::Tls(l) => TcpListener::from_std(l).map(Listener::Tls),
        }
        .map_err(|e| DaemonError::io("listen on", &endpoint, e))?;
        Ok((listener, self.socket))
    }
}

/// The async listener.
pub(super) enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
    /// TCP whose connections speak TLS (the handshake runs in the connection's task).
    Tls(TcpListener),
}

/// One accepted connection.
pub(super) enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// A TCP connection of a TLS listener, before its handshake, and its peer's address.
    Tls(TcpStream, SocketAddr),
}

impl Listener {
    pub(super) async fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Unix(l) => l.accept().await.map(|(s, _)| Conn::Unix(s)),
            Listener::Tcp(l) => {
                let (stream, _) = l.accept().await?;
                stream.set_nodelay(true)?;
                Ok(Conn::Tcp(stream))
            }
            Listener::Tls(l) => {
                let (stream, peer) = l.accept().await?;
                stream.set_nodelay(true)?;
                Ok(Conn::Tls(stream, peer))
            }
        }
    }
}

/// Owns a bound Unix socket path: holds its lock and removes the socket file on drop.
#[derive(Debug)]
pub(super) struct SocketGuard {
    path: PathBuf,
    identity: (u64, u64),
    _lock: File,
}

impl Drop for SocketGuard {
    fn drop(&mut self) {
        // Remove the path only if it is still the socket we bound.
        if let Ok(meta) = std::fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.identity
            && let Err(error) = std::fs::remove_file(&self.path)
        {
            tracing::warn!(%error, path = %self.path.display(), "could not remove the socket file");
        }
    }
}

/// Binds `endpoint`: a Unix socket with its lock and stale-socket handling, or TCP.
pub(super) fn bind(endpoint: &Endpoint) -> Result<Bound, DaemonError> {
    match endpoint {
        Endpoint::Unix(path) => bind_unix(path),
        Endpoint::Tcp(addr) => {
            let (listener, local) = bind_tcp(endpoint, addr)?;
            Ok(Bound {
                listener: StdListener::Tcp(listener),
                endpoint: Endpoint::Tcp(local),
                socket: None,
            })
        }
        Endpoint::Tls(tls) => {
            let addr = tls.socket_addr().ok_or_else(|| DaemonError::Remote {
                endpoint: endpoint.clone(),
                problem: "a daemon listens on an IP address, not a host name".to_owned(),
            })?;
            let (listener, local) = bind_tcp(endpoint, &addr)?;
            Ok(Bound {
                listener: StdListener::Tls(listener),
                endpoint: Endpoint::Tls(TlsAddr {
                    host: local.ip().to_string(),
                    port: local.port(),
                }),
                socket: None,
            })
        }
    }
}

/// A non-blocking TCP listener and the address it got (the port of `:0`).
fn bind_tcp(endpoint: &Endpoint, addr: &SocketAddr) -> Result<(StdTcpListener, SocketAddr), DaemonError> {
    let listener = StdTcpListener::bind(addr).map_err(|e| DaemonError::io("bind", endpoint, e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DaemonError::io("configure", endpoint, e))?;
    let local = listener
        .local_addr()
        .map_err(|e| DaemonError::io("inspect", endpoint, e))?;
    Ok((listener, local))
}

fn bind_unix(path: &Path) -> Result<Bound, DaemonError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| DaemonError::io("create directory", parent.display(), e))?;
    }
    let lock_path = socket_lock_path(path);
    let lock = try_lock(&lock_path).map_err(|e| match e {
        LockError::Held => DaemonError::EndpointLocked {
            socket: path.to_path_buf(),
            lock: lock_path.clone(),
        },
        LockError::Io(e) => DaemonError::io("lock", lock_path.display(), e),
    })?;
    clear_stale_socket(path)?;
    let listener = listen_unix(path).map_err(|e| DaemonError::io("bind", path.display(), e))?;
    std::fs::set_permissions(path, Permissions::from_mode(PRIVATE_FILE_MODE))
        .map_err(|e| DaemonError::io("set permissions on", path.display(), e))?;
    let meta = std::fs::symlink_metadata(path).map_err(|e| DaemonError::io("inspect", path.display(), e))?;
    Ok(Bound {
        listener: StdListener::Unix(listener),
        endpoint: Endpoint::Unix(path.to_path_buf()),
        socket: Some(SocketGuard {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            _lock: lock,
        }),
    })
}

/// Leaves the path free for `bind`, or explains why it cannot be.
fn clear_stale_socket(path: &Path) -> Result<(), DaemonError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(DaemonError::io("inspect", path.display(), e)),
    };
    if !meta.file_type().is_socket() {
        return Err(DaemonError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    match connect_unix(path, PROBE_TIMEOUT) {
        Ok(_) => Err(DaemonError::AlreadyServing {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(DaemonError::ProbeTimedOut {
            path: path.to_path_buf(),
            limit: PROBE_TIMEOUT,
        }),
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
            tracing::info!(path = %path.display(), "removing a stale socket");
            match std::fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(DaemonError::io("remove the stale socket", path.display(), e)),
            }
        }
        Err(e) => Err(DaemonError::io("probe", path.display(), e)),
    }
}

/// Creates, binds and listens on a Unix socket whose file is owner-only from the start.
fn listen_unix(path: &Path) -> io::Result<StdUnixListener> {
    net::listen_unix(path, PRIVATE_FILE_MODE, BACKLOG)
}
