//! The connection under the client: [`Stream`] (Unix, TCP or TLS) and [`Timed`], which
//! bounds every read and write by its step's timeout and the whole exchange's.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::ClientTimeouts;
use crate::client::tls::TlsStream;
use crate::frame::FrameError;
use crate::net::describe;
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
