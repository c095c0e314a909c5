//! Low-level socket helpers shared by the client and the daemon, on `rustix` (no `unsafe`):
//! owner-only Unix listeners, bounded Unix connects, peer credentials, a zero-timeout
//! readability poll and the wording of time limits in messages.

use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};

/// The longest usable Unix socket path in bytes (`sun_path` minus its terminating NUL).
pub const MAX_UNIX_PATH_BYTES: usize =
    std::mem::size_of::<libc::sockaddr_un>() - std::mem::offset_of!(libc::sockaddr_un, sun_path) - 1;

/// The address of a Unix socket path, refusing a path the kernel could not take.
fn unix_addr(path: &Path) -> io::Result<SocketAddrUnix> {
    use std::os::unix::ffi::OsStrExt;

    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.contains(&0) || bytes.len() > MAX_UNIX_PATH_BYTES {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a usable Unix socket path (at most {MAX_UNIX_PATH_BYTES} bytes)",
                path.display()
            ),
        ));
    }
    Ok(SocketAddrUnix::new(path)?)
}

/// A new close-on-exec `AF_UNIX` stream socket.
fn unix_socket() -> io::Result<OwnedFd> {
    #[cfg(not(any(target_os = "macos", target_os = "ios")))]
    {
        Ok(rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )?)
    }
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    {
        let fd = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None)?;
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
        Ok(fd)
    }
}

/// Connects to a Unix socket, giving up after `limit`.
///
/// A local connect completes at once unless the listener's backlog is full (a stopped or
/// wedged daemon); the send timeout set before `connect` bounds that wait on Linux.
pub fn connect_unix(path: &Path, limit: Duration) -> io::Result<UnixStream> {
    let addr = unix_addr(path)?;
    let stream = UnixStream::from(unix_socket()?);
    stream.set_write_timeout(Some(limit))?;
    loop {
        match rustix::net::connect(&stream, &addr) {
            Ok(()) => return Ok(stream),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN | Errno::INPROGRESS) => {
                return Err(io::Error::new(ErrorKind::TimedOut, "connect timed out"));
            }
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// Creates, binds and listens on a Unix socket whose file is owner-only from the start:
/// on Linux the socket file takes its mode from the socket inode, so setting it before
/// `bind` closes the window between bind and chmod (elsewhere that may fail, and the caller
/// sets the path's mode after binding). The listener is non-blocking.
pub fn listen_unix(path: &Path, mode: u32, backlog: i32) -> io::Result<UnixListener> {
    let addr = unix_addr(path)?;
    let fd = unix_socket()?;
    let _ = rustix::fs::fchmod(&fd, rustix::fs::Mode::from_raw_mode(mode as rustix::fs::RawMode));
    rustix::net::bind(&fd, &addr)?;
    rustix::net::listen(&fd, backlog)?;
    let listener = UnixListener::from(fd);
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Whether an error means the connection was refused (nothing listens on the path).
pub fn is_connection_refused(error: &io::Error) -> bool {
    error.kind() == ErrorKind::ConnectionRefused
}

/// The identity of the process on the other end of a Unix socket, as the kernel reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCredentials {
    pub uid: u32,
    /// Known on Linux; `None` where the platform does not report it.
    pub pid: Option<u32>,
}

/// The kernel's credentials of the peer of a connected Unix socket.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_credentials(stream: &UnixStream) -> io::Result<PeerCredentials> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    Ok(PeerCredentials {
        uid: cred.uid.as_raw(),
        pid: u32::try_from(cred.pid.as_raw_nonzero().get())
            .ok()
            .filter(|pid| *pid > 0),
    })
}

/// The kernel's credentials of the peer of a connected Unix socket.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_credentials(stream: &UnixStream) -> io::Result<PeerCredentials> {
    let uid = crate::sys::peer_uid(stream)?;
    Ok(PeerCredentials { uid, pid: None })
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether `fd` has something to read (or the peer hung up) right now, without sleeping.
pub fn readable_now(fd: impl AsFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};

    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
    matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(n) if n != 0)
}

/// `30 seconds`, `1 second`, or `250 ms` for a limit that is not a whole number of seconds.
pub fn describe(limit: Duration) -> String {
    match (limit.as_secs(), limit.subsec_nanos()) {
        (1, 0) => "1 second".to_owned(),
        (secs, 0) => format!("{secs} seconds"),
        _ => format!("{} ms", limit.as_millis()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_longer_than_sun_path_is_refused_with_its_limit() {
        let long = std::path::PathBuf::from(format!("/tmp/{}", "x".repeat(MAX_UNIX_PATH_BYTES)));
        let error = connect_unix(&long, Duration::from_secs(1)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.to_string().contains(&MAX_UNIX_PATH_BYTES.to_string()), "{error}");
        assert!(listen_unix(Path::new(""), 0o600, 1).is_err());
    }

    #[test]
    fn a_listener_is_owner_only_accepts_and_reports_its_peer() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = listen_unix(&path, 0o600, 8).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let client = connect_unix(&path, Duration::from_secs(1)).unwrap();
        assert!(!readable_now(&client));
        listener.set_nonblocking(false).unwrap();
        let (server, _) = listener.accept().unwrap();
        let peer = peer_credentials(&client).unwrap();
        assert_eq!(peer.uid, effective_uid());
        #[cfg(target_os = "linux")]
        assert_eq!(peer.pid, Some(std::process::id()));
        drop(server);
        assert!(readable_now(&client), "a hang-up is readable");
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        let refused = connect_unix(&path, Duration::from_secs(1)).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::NotFound);
    }

    #[test]
    fn limits_read_as_words() {
        assert_eq!(describe(Duration::from_secs(30)), "30 seconds");
        assert_eq!(describe(Duration::from_secs(1)), "1 second");
        assert_eq!(describe(Duration::from_millis(250)), "250 ms");
    }
}
