//! Frames on the wire: [`attempt`] writes one request frame and reads one response frame on
//! an open connection; [`Stream`] is that connection (Unix, TCP or TLS) and [`Timed`] bounds
//! every read and write by its step's timeout and the whole exchange's.
//!
//! After the request is written, a one-shot exchange half-closes its side (a TLS
//! `close_notify`), and the client polls briefly for the reply ([`REPLY_SPIN`]) before it
//! sleeps in `read`.
//!
//! **Invariants:** no frame over [`MAX_FRAME_BYTES`] is sent or read (a response header
//! over it is refused before anything is allocated); every read and write is bounded by its
//! step's deadline and the exchange's (give or take [`REARM_SLACK`]); an attempt reports a
//! TLS refusal before any other failure, prefers the daemon's reply to its own write error,
//! and marks a failure [`Failure::before_request`] only when the connection was closed or
//! reset before the request reached the daemon (what makes resending safe, see
//! [`super::retry`]). This module never retries.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::{ClientTimeouts, SocketClient};
use crate::client::tls::TlsStream;
use crate::frame::{self, FrameError, MAX_FRAME_BYTES};
use crate::net::{self, describe};
use crate::protocol::Response;
use crate::transport::ClientError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Write,
    Read,
}

/// A stream whose every read and write is bounded by the current step's deadline and the
/// whole exchange's deadline, whichever comes first.
pub(super) struct Timed<'a> {
    pub(super) stream: &'a mut Stream,
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

impl<'a> Timed<'a> {
    /// A new exchange on `stream`: its deadline starts now.
    pub(super) fn new(stream: &'a mut Stream, timeouts: &ClientTimeouts) -> Timed<'a> {
        let exchange_deadline = Instant::now() + timeouts.exchange;
        Timed {
            stream,
            exchange_deadline,
            exchange_limit: timeouts.exchange,
            step_deadline: exchange_deadline,
            step_limit: timeouts.write,
            step: Step::Write,
            read_armed: None,
            write_armed: None,
        }
    }

    pub(super) fn begin(&mut self, step: Step, limit: Duration) {
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

    pub(super) fn describe(&self, step: Step, error: FrameError) -> ClientError {
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

pub(super) fn is_timeout(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

pub(super) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(Box<TlsStream>),
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stream::Unix(s) => f.debug_tuple("Unix").field(s).finish(),
            Stream::Tcp(s) => f.debug_tuple("Tcp").field(s).finish(),
            Stream::Tls(s) => f.debug_tuple("Tls").field(&s.sock).finish(),
        }
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Unix(s) => s.as_fd(),
            Stream::Tcp(s) => s.as_fd(),
            Stream::Tls(s) => s.sock.as_fd(),
        }
    }
}

impl Stream {
    pub(super) fn set_read_timeout(&self, limit: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(limit)),
            Stream::Tcp(s) => s.set_read_timeout(Some(limit)),
            Stream::Tls(s) => s.sock.set_read_timeout(Some(limit)),
        }
    }

    pub(super) fn set_write_timeout(&self, limit: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(Some(limit)),
            Stream::Tcp(s) => s.set_write_timeout(Some(limit)),
            Stream::Tls(s) => s.sock.set_write_timeout(Some(limit)),
        }
    }

    /// Tells the daemon no request follows: a half-close, or for TLS a `close_notify`
    /// (TLS 1.3 keeps the other direction open for the reply).
    pub(super) fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Tls(s) => {
                s.conn.send_close_notify();
                s.flush()
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}

pub(super) fn too_large(what: &str, len: u64) -> ClientError {
    ClientError::TooLarge(format!(
        "the {what} frame of {len} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit"
    ))
}

/// Why one attempt failed, and whether the request can be known not to have been read.
pub(super) struct Failure {
    pub(super) error: ClientError,
    /// The connection was already closed by the peer before this request reached it.
    pub(super) before_request: bool,
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
///
/// `tls_failure` recognises a TLS refusal in an I/O error (a server's alert arrives at the
/// first read after a TLS 1.3 handshake); it is reported before any other failure.
pub(super) fn attempt(
    stream: &mut Stream,
    body: &[u8],
    client: &SocketClient,
    one_shot: bool,
    tls_failure: &dyn Fn(&io::Error) -> Option<ClientError>,
) -> Result<Response, Failure> {
    let timeouts = &client.timeouts;
    let mut timed = Timed::new(stream, timeouts);
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
        spin_until_readable(timed.stream, client.reply_spin);
    }
    let response = frame::blocking::read(&mut timed, MAX_FRAME_BYTES);
    let refusal = [response.as_ref().err(), written.as_ref().err()]
        .into_iter()
        .flatten()
        .find_map(|error| match error {
            FrameError::Io(e) => tls_failure(e),
            _ => None,
        });
    if let Some(refusal) = refusal {
        return Err(refusal.into());
    }
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
pub(super) const REPLY_SPIN: Duration = Duration::from_micros(150);

/// Polls (without sleeping) until the stream has something to read, the peer hung up, or
/// `limit` passed.
fn spin_until_readable(stream: &Stream, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if net::readable_now(stream.as_fd()) {
            return;
        }
        std::hint::spin_loop();
    }
}

pub(super) fn decode_response(bytes: &[u8]) -> Result<Response, ClientError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ClientError::Transport(format!("the daemon sent an invalid response frame: {e}")))
}

pub(super) fn is_stale(error: &FrameError) -> bool {
    matches!(error, FrameError::Io(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset))
}
