//! The framed socket client: one request frame out, one response frame back, over a Unix
//! socket or loopback TCP, with every step under a timeout.
//!
//! [`SocketClient`] opens one connection per exchange (exactly what a reference-style client
//! does) and half-closes its side after sending, so the daemon sees a clean end of stream
//! once it has replied. [`SocketSession`] keeps one connection for several requests in
//! sequence (the daemon allows that; see `spec/v1/DIVERGENCES.md`). Both retry the daemon's
//! connection-limit envelope with a capped exponential backoff.
//!
//! Every failure to obtain a response envelope is a [`ClientError::Transport`]
//! (`TRANSPORT_ERROR`, retryable) — including the daemon closing or resetting the
//! connection before replying — except a response over the frame limit, which is
//! [`ClientError::TooLarge`].
//!
//! The client is synchronous (no async runtime) so a short-lived CLI pays nothing for it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ClientError, Transport};
use crate::frame::{self, FrameError, MAX_FRAME_BYTES};
use crate::paths::Endpoint;
use crate::protocol::{ErrorCode, Response, TRANSPORT_REQUEST_ID};

/// `error.details.reason` of the envelope a daemon sends when its connection limit is reached.
pub const CONNECTION_LIMIT_REASON: &str = "connection_limit";

/// Client-side time limits. The defaults are the protocol's: connect 5 s, frame write and
/// frame read 30 s each, 60 s for a whole request/response exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientTimeouts {
    pub connect: Duration,
    pub write: Duration,
    pub read: Duration,
    pub exchange: Duration,
    /// How long to keep retrying while the daemon answers "connection limit reached".
    pub busy_retry: Duration,
}

impl Default for ClientTimeouts {
    fn default() -> ClientTimeouts {
        ClientTimeouts {
            connect: Duration::from_secs(5),
            write: Duration::from_secs(30),
            read: Duration::from_secs(30),
            exchange: Duration::from_secs(60),
            busy_retry: Duration::from_secs(10),
        }
    }
}

/// Whether `response` is a daemon's retryable "connection limit reached" envelope.
pub fn is_busy(response: &Response) -> bool {
    response.error.as_ref().is_some_and(|error| {
        error.code == ErrorCode::TransportError
            && error.retryable
            && error.details.get("reason").and_then(Value::as_str) == Some(CONNECTION_LIMIT_REASON)
    })
}

/// A client for one daemon endpoint; cheap to clone, safe to share between threads.
#[derive(Clone, Debug)]
pub struct SocketClient {
    endpoint: Endpoint,
    timeouts: ClientTimeouts,
}

impl SocketClient {
    pub fn new(endpoint: Endpoint) -> SocketClient {
        SocketClient {
            endpoint,
            timeouts: ClientTimeouts::default(),
        }
    }

    pub fn with_timeouts(mut self, timeouts: ClientTimeouts) -> SocketClient {
        self.timeouts = timeouts;
        self
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn timeouts(&self) -> &ClientTimeouts {
        &self.timeouts
    }

    /// Sends one request document on a fresh connection and returns the response envelope.
    pub fn exchange_json(&self, request: &Value) -> Result<Response, ClientError> {
        let body = encode_request(request)?;
        self.exchange_raw(&body)
    }

    /// Sends `body` verbatim as one frame (it need not be valid JSON) on a fresh connection
    /// and returns the response envelope.
    pub fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
        let mut session = self.session();
        session.one_shot = true;
        session.exchange_raw(body)
    }

    /// A session that keeps its connection open between exchanges. Nothing is connected
    /// until the first exchange.
    pub fn session(&self) -> SocketSession {
        SocketSession {
            client: self.clone(),
            stream: None,
            used: false,
            one_shot: false,
        }
    }

    /// Opens a session and connects it right away.
    pub fn connect(&self) -> Result<SocketSession, ClientError> {
        let mut session = self.session();
        session.stream = Some(self.open()?);
        Ok(session)
    }

    fn open(&self) -> Result<Stream, ClientError> {
        let limit = self.timeouts.connect;
        let stream = match &self.endpoint {
            Endpoint::Unix(path) => connect_unix(path, limit).map(Stream::Unix),
            Endpoint::Tcp(addr) => TcpStream::connect_timeout(addr, limit).and_then(|stream| {
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }),
        };
        stream.map_err(|e| {
            if e.kind() == ErrorKind::InvalidInput {
                // An unusable path will not start working on retry.
                ClientError::Config(format!("cannot connect to {}: {e}", self.endpoint))
            } else if is_timeout(&e) {
                ClientError::Transport(format!(
                    "connect to {} timed out after {}",
                    self.endpoint,
                    describe(limit)
                ))
            } else {
                ClientError::Transport(format!("cannot connect to {}: {e}", self.endpoint))
            }
        })
    }
}

impl Transport for SocketClient {
    fn exchange(&self, request: &Value) -> Result<Response, ClientError> {
        self.exchange_json(request)
    }
}

/// A connection carrying several requests in sequence.
///
/// When the daemon has closed a reused connection in the meantime (its idle timeout), the
/// next exchange reconnects once, transparently: a request the daemon never read is safe to
/// send again.
#[derive(Debug)]
pub struct SocketSession {
    client: SocketClient,
    stream: Option<Stream>,
    used: bool,
    one_shot: bool,
}

/// The identity of the process on the other end of a Unix socket, as the kernel reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCredentials {
    pub uid: u32,
    /// Known on Linux; `None` where the platform does not report it.
    pub pid: Option<u32>,
}

impl SocketSession {
    pub fn exchange_json(&mut self, request: &Value) -> Result<Response, ClientError> {
        let body = encode_request(request)?;
        self.exchange_raw(&body)
    }

    pub fn exchange_raw(&mut self, body: &[u8]) -> Result<Response, ClientError> {
        if body.len() > MAX_FRAME_BYTES {
            return Err(too_large("request", body.len() as u64));
        }
        let busy_deadline = Instant::now() + self.client.timeouts.busy_retry;
        let mut backoff = Duration::from_millis(10);
        let mut reconnected = false;
        loop {
            let reused = self.used && self.stream.is_some();
            let mut stream = match self.stream.take() {
                Some(stream) => stream,
                None => self.client.open()?,
            };
            match attempt(&mut stream, body, &self.client.timeouts, self.one_shot) {
                Ok(response) if is_busy(&response) => {
                    // The daemon closes a connection it refused; retry on a new one.
                    let now = Instant::now();
                    if now >= busy_deadline {
                        return Ok(readdress(response, body));
                    }
                    std::thread::sleep(jitter(backoff).min(busy_deadline - now));
                    backoff = (backoff * 2).min(Duration::from_millis(250));
                }
                Ok(response) => {
                    if !self.one_shot {
                        self.stream = Some(stream);
                        self.used = true;
                    }
                    return Ok(response);
                }
                Err(failure) if failure.before_request && reused && !reconnected => reconnected = true,
                Err(failure) => return Err(failure.error),
            }
        }
    }

    /// The credentials of the peer of the current Unix connection (connecting if needed).
    pub fn peer_credentials(&mut self) -> Result<Option<PeerCredentials>, ClientError> {
        if self.stream.is_none() {
            self.stream = Some(self.client.open()?);
        }
        match &self.stream {
            Some(Stream::Unix(stream)) => peer_credentials(stream)
                .map(Some)
                .map_err(|e| ClientError::Transport(format!("cannot read the peer credentials: {e}"))),
            _ => Ok(None),
        }
    }
}

fn encode_request(request: &Value) -> Result<Vec<u8>, ClientError> {
    let body = serde_json::to_vec(request)
        .map_err(|e| ClientError::Config(format!("the request cannot be encoded as JSON: {e}")))?;
    if body.len() > MAX_FRAME_BYTES {
        return Err(too_large("request", body.len() as u64));
    }
    Ok(body)
}

fn too_large(what: &str, len: u64) -> ClientError {
    ClientError::TooLarge(format!(
        "the {what} frame of {len} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit"
    ))
}

/// A busy envelope that outlasted the retry budget, re-addressed to the caller's request.
fn readdress(mut response: Response, body: &[u8]) -> Response {
    if response.request_id == TRANSPORT_REQUEST_ID
        && let Ok(request) = serde_json::from_slice::<Value>(body)
        && let Some(id) = request.get("request_id").and_then(Value::as_str)
    {
        response.request_id = id.to_owned();
    }
    response
}

fn jitter(base: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    base + base.mul_f64(f64::from(nanos % 1000) / 2000.0)
}

/// Why one attempt failed, and whether the request can be known not to have been read.
struct Failure {
    error: ClientError,
    /// The connection was already closed by the peer before this request reached it.
    before_request: bool,
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Failure {
        Failure {
            error,
            before_request: false,
        }
    }
}

/// One request/response exchange on an open connection.
fn attempt(stream: &mut Stream, body: &[u8], timeouts: &ClientTimeouts, one_shot: bool) -> Result<Response, Failure> {
    let exchange_deadline = Instant::now() + timeouts.exchange;
    let mut timed = Timed {
        stream,
        exchange_deadline,
        exchange_limit: timeouts.exchange,
        step_deadline: exchange_deadline,
        step_limit: timeouts.write,
        step: Step::Write,
        read_armed: None,
        write_armed: None,
    };
    timed.begin(Step::Write, timeouts.write);
    let written = frame::blocking::write(&mut timed, body, MAX_FRAME_BYTES);
    if let Err(FrameError::Io(e)) = &written
        && is_timeout(e)
    {
        let error = written.err().map(|e| timed.describe(Step::Write, e));
        return Err(error
            .unwrap_or_else(|| ClientError::Transport("frame write failed".to_owned()))
            .into());
    }
    if one_shot && written.is_ok() {
        // Tell the daemon no second request follows; it may close right after replying.
        let _ = timed.stream.shutdown_write();
    }
    timed.begin(Step::Read, timeouts.read);
    if written.is_ok() {
        spin_until_readable(timed.stream, REPLY_SPIN);
    }
    let response = frame::blocking::read(&mut timed, MAX_FRAME_BYTES);
    match (written, response) {
        (_, Ok(Some(bytes))) => decode_response(&bytes).map_err(Failure::from),
        // The daemon may answer early (connection limit, oversized frame) and stop
        // reading; its reply, if any, matters more than our write error.
        (Err(write), Ok(None) | Err(FrameError::Io(_))) => Err(Failure {
            before_request: is_stale(&write),
            error: timed.describe(Step::Write, write),
        }),
        (_, Err(FrameError::TooLarge { len, .. })) => Err(too_large("response", len).into()),
        (Ok(()), Ok(None)) => Err(Failure {
            before_request: true,
            error: ClientError::Transport("the daemon closed the connection before replying".to_owned()),
        }),
        (Ok(()), Err(read)) => Err(Failure {
            before_request: matches!(&read, FrameError::Io(e) if e.kind() == ErrorKind::ConnectionReset),
            error: timed.describe(Step::Read, read),
        }),
        (Err(write), Err(_)) => Err(timed.describe(Step::Write, write).into()),
    }
}

/// How long a client polls for a reply before it sleeps in `read`. Waking a thread that
/// sleeps costs tens of microseconds on a virtual machine (a cross-CPU pipe round trip is
/// about 60 µs on the two-core reference machine, `perf bench sched pipe`), as much as a
/// small read takes to serve; a reply within this window is picked up without that wake-up.
/// Longer requests pay at most this much spinning, once.
const REPLY_SPIN: Duration = Duration::from_micros(150);

/// Polls (without sleeping) until the stream has something to read, the peer hung up, or
/// `limit` passed.
fn spin_until_readable(stream: &Stream, limit: Duration) {
    let mut fds = libc::pollfd {
        fd: stream.raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let start = Instant::now();
    while start.elapsed() < limit {
        // SAFETY: `fds` is one valid pollfd for an open descriptor; a zero timeout never blocks.
        let ready = unsafe { libc::poll(&mut fds, 1, 0) };
        if ready != 0 {
            return;
        }
        std::hint::spin_loop();
    }
}

fn decode_response(bytes: &[u8]) -> Result<Response, ClientError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ClientError::Transport(format!("the daemon sent an invalid response frame: {e}")))
}

fn is_stale(error: &FrameError) -> bool {
    matches!(error, FrameError::Io(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Write,
    Read,
}

/// A stream whose every read and write is bounded by the current step's deadline and the
/// whole exchange's deadline, whichever comes first.
struct Timed<'a> {
    stream: &'a mut Stream,
    exchange_deadline: Instant,
    exchange_limit: Duration,
    step_deadline: Instant,
    step_limit: Duration,
    step: Step,
    /// When the socket's read or write timeout was last set for the current deadline.
    read_armed: Option<Instant>,
    write_armed: Option<Instant>,
}

/// How far a syscall may overrun the deadline before the socket timeout is set again.
/// Re-arming on every call would cost a `setsockopt` per read; small frames need one.
const REARM_SLACK: Duration = Duration::from_millis(10);

impl Timed<'_> {
    fn begin(&mut self, step: Step, limit: Duration) {
        self.step = step;
        self.step_limit = limit;
        self.step_deadline = Instant::now() + limit;
        self.read_armed = None;
        self.write_armed = None;
    }

    /// Sets the socket timeout to the time left, unless the one set recently still ends
    /// within [`REARM_SLACK`] of the deadline.
    fn arm(&mut self, step: Step) -> io::Result<()> {
        let armed = if step == Step::Read {
            self.read_armed
        } else {
            self.write_armed
        };
        let now = Instant::now();
        if armed.is_some_and(|at| now.duration_since(at) <= REARM_SLACK) {
            // Still bounded by the deadline: reject outright once it has passed.
            return self.remaining().map(|_| ());
        }
        let left = self.remaining()?;
        if step == Step::Read {
            self.stream.set_read_timeout(left)?;
            self.read_armed = Some(now);
        } else {
            self.stream.set_write_timeout(left)?;
            self.write_armed = Some(now);
        }
        Ok(())
    }

    fn remaining(&self) -> io::Result<Duration> {
        let deadline = self.step_deadline.min(self.exchange_deadline);
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::new(ErrorKind::TimedOut, "deadline passed"))
        } else {
            Ok(left)
        }
    }

    fn describe(&self, step: Step, error: FrameError) -> ClientError {
        let timed_out = matches!(&error, FrameError::Io(e) if is_timeout(e));
        if !timed_out {
            let verb = if step == Step::Write { "write" } else { "read" };
            return ClientError::Transport(format!("frame {verb} failed: {error}"));
        }
        if self.exchange_deadline <= self.step_deadline {
            ClientError::Transport(format!("request timed out after {}", describe(self.exchange_limit)))
        } else {
            let verb = if self.step == Step::Write { "write" } else { "read" };
            ClientError::Transport(format!("frame {verb} timed out after {}", describe(self.step_limit)))
        }
    }
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm(Step::Read)?;
        self.stream.read(buf)
    }
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm(Step::Write)?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

/// `30 seconds`, `1 second`, or `250 ms` for a limit that is not a whole number of seconds.
pub(crate) fn describe(limit: Duration) -> String {
    match (limit.as_secs(), limit.subsec_nanos()) {
        (1, 0) => "1 second".to_owned(),
        (secs, 0) => format!("{secs} seconds"),
        _ => format!("{} ms", limit.as_millis()),
    }
}

#[derive(Debug)]
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    fn set_read_timeout(&self, limit: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(limit)),
            Stream::Tcp(s) => s.set_read_timeout(Some(limit)),
        }
    }

    fn set_write_timeout(&self, limit: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(Some(limit)),
            Stream::Tcp(s) => s.set_write_timeout(Some(limit)),
        }
    }

    fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Connects to a Unix socket, giving up after `limit`.
///
/// A local connect completes at once unless the listener's backlog is full (a stopped or
/// wedged daemon); the send timeout set before `connect` bounds that wait on Linux.
pub(crate) fn connect_unix(path: &Path, limit: Duration) -> io::Result<UnixStream> {
    let (addr, len) = unix_addr(path)?;
    let stream = UnixStream::from(unix_socket()?);
    stream.set_write_timeout(Some(limit))?;
    loop {
        // SAFETY: `addr` is an initialised `sockaddr_un` and `len` does not exceed its size.
        let rc = unsafe { libc::connect(stream.as_raw_fd(), (&raw const addr).cast::<libc::sockaddr>(), len) };
        if rc == 0 {
            return Ok(stream);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN | libc::EINPROGRESS) => {
                return Err(io::Error::new(ErrorKind::TimedOut, "connect timed out"));
            }
            _ => return Err(error),
        }
    }
}

/// The socket address of a Unix socket path, and its length.
pub(crate) fn unix_addr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    use std::os::unix::ffi::OsStrExt;

    let bytes = path.as_os_str().as_bytes();
    // SAFETY: `sockaddr_un` is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.contains(&0) || bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a usable Unix socket path (at most {} bytes)",
                path.display(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (slot, byte) in addr.sun_path.iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd", target_os = "openbsd"))]
    {
        addr.sun_len = len as u8;
    }
    Ok((addr, len as libc::socklen_t))
}

/// A new close-on-exec `AF_UNIX` stream socket.
pub(crate) fn unix_socket() -> io::Result<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let kind = libc::SOCK_STREAM;
    // SAFETY: plain system call with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_UNIX, kind, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        // SAFETY: `fd` is a valid open descriptor.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer_credentials(stream: &UnixStream) -> io::Result<PeerCredentials> {
    // SAFETY: `ucred` is plain old data; all-zero is a valid value.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are writable and `len` holds the size of `cred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCredentials {
        uid: cred.uid,
        pid: u32::try_from(cred.pid).ok().filter(|pid| *pid > 0),
    })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer_credentials(stream: &UnixStream) -> io::Result<PeerCredentials> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: `uid` and `gid` are writable locals.
    if unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCredentials { uid, pid: None })
}

#[cfg(test)]
mod tests;
