//! Pipelined exchanges: a window of requests written on one connection before their replies
//! are read, for a daemon that lists `pipelined_requests` in `capabilities.extensions` (see
//! `spec/v1/DIVERGENCES.md`). Their writes can then share the daemon's group commit, which
//! one request at a time per connection cannot.
//!
//! **No deadlock.** A window is at most [`PIPELINE_WINDOW`] requests and [`WINDOW_BYTES`]:
//! within what the daemon reads ahead (eight requests, 1 MiB), so the daemon takes the whole
//! window while the client is still writing, and the client reads every reply after.
//!
//! **Failures.** A window that gets no reply at all (a connection the daemon had closed, or
//! its connection-limit envelope) is sent again one request at a time, with the usual
//! reconnect and busy retry; that is why every request must be safe to send twice. A
//! connection that breaks after some replies is a transport error.

use super::retry::is_busy;
use super::stream::{Step, Stream, Timed, decode_response, is_stale, too_large};
use super::{ClientTimeouts, SocketSession};
use crate::frame::{self, FrameError, MAX_FRAME_BYTES};
use crate::protocol::Response;
use crate::transport::ClientError;

/// Requests written before the first of their replies is read.
pub const PIPELINE_WINDOW: usize = 8;

/// Request bytes of one window; a request that would go over starts the next window (a
/// larger one goes alone, as an ordinary exchange).
const WINDOW_BYTES: usize = 256 * 1024;

/// Why a window failed.
enum WindowFailure {
    /// Nothing was answered: the window may be sent again.
    Unanswered,
    /// Some replies were read, then the connection failed.
    Broken(ClientError),
}

impl SocketSession {
    /// Sends `bodies` on this connection a window at a time and returns their responses in
    /// order (see the module docs). Only for a daemon that lists `pipelined_requests`;
    /// requests sent together must not depend on each other's effects, and each must be safe
    /// to send twice (a read, or a mutation with an idempotency key).
    pub fn exchange_pipelined(&mut self, bodies: &[Vec<u8>]) -> Result<Vec<Response>, ClientError> {
        if let Some(body) = bodies.iter().find(|body| body.len() > MAX_FRAME_BYTES) {
            return Err(too_large("request", body.len() as u64));
        }
        let mut responses = Vec::with_capacity(bodies.len());
        let mut rest = bodies;
        while !rest.is_empty() {
            let (window, later) = rest.split_at(window_len(rest));
            rest = later;
            if let [body] = window {
                responses.push(self.exchange_raw(body)?);
                continue;
            }
            let mut stream = match self.stream.take() {
                Some(stream) => stream,
                None => self.client.open()?,
            };
            match exchange_window(&mut stream, window, &self.client.timeouts) {
                Ok(replies) => {
                    self.stream = Some(stream);
                    self.used = true;
                    responses.extend(replies);
                }
                Err(WindowFailure::Unanswered) => {
                    for body in window {
                        responses.push(self.exchange_raw(body)?);
                    }
                }
                Err(WindowFailure::Broken(error)) => return Err(error),
            }
        }
        Ok(responses)
    }
}

/// How many of `bodies` go into the next window: at least one.
fn window_len(bodies: &[Vec<u8>]) -> usize {
    let mut bytes = 0;
    let mut len = 0;
    for body in bodies.iter().take(PIPELINE_WINDOW) {
        bytes += body.len();
        if len > 0 && bytes > WINDOW_BYTES {
            break;
        }
        len += 1;
    }
    len.max(1)
}

/// Writes every request of `window`, then reads their replies, each step under its
/// timeout and the whole window under the exchange timeout.
fn exchange_window(
    stream: &mut Stream,
    window: &[Vec<u8>],
    timeouts: &ClientTimeouts,
) -> Result<Vec<Response>, WindowFailure> {
    let mut timed = Timed::new(stream, timeouts);
    for body in window {
        timed.begin(Step::Write, timeouts.write);
        match frame::blocking::write(&mut timed, body, MAX_FRAME_BYTES) {
            Ok(()) => {}
            Err(error) if is_stale(&error) => return Err(WindowFailure::Unanswered),
            Err(error) => return Err(WindowFailure::Broken(timed.describe(Step::Write, error))),
        }
    }
    let mut replies = Vec::with_capacity(window.len());
    for _ in window {
        timed.begin(Step::Read, timeouts.read);
        let closed = match frame::blocking::read(&mut timed, MAX_FRAME_BYTES) {
            Ok(Some(bytes)) => match decode_response(&bytes) {
                // A daemon over its connection limit answers once and closes.
                Ok(response) if replies.is_empty() && is_busy(&response) => return Err(WindowFailure::Unanswered),
                Ok(response) => {
                    replies.push(response);
                    continue;
                }
                Err(error) => return Err(WindowFailure::Broken(error)),
            },
            Ok(None) => ClientError::Transport("the daemon closed the connection before replying".to_owned()),
            Err(FrameError::TooLarge { len, .. }) => return Err(WindowFailure::Broken(too_large("response", len))),
            Err(error) if is_stale(&error) => timed.describe(Step::Read, error),
            Err(error) => return Err(WindowFailure::Broken(timed.describe(Step::Read, error))),
        };
        // Closed or reset: before any reply, the daemon had closed the connection.
        return Err(match replies.is_empty() {
            true => WindowFailure::Unanswered,
            false => WindowFailure::Broken(closed),
        });
    }
    Ok(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_holds_at_most_eight_requests_and_256_kib_but_never_none() {
        let small = vec![vec![b'x'; 100]; 20];
        assert_eq!(window_len(&small), PIPELINE_WINDOW);
        let large = vec![vec![b'x'; 200 * 1024]; 3];
        assert_eq!(window_len(&large), 1);
        let huge = vec![vec![b'x'; 2 * WINDOW_BYTES]];
        assert_eq!(window_len(&huge), 1);
        let mixed = vec![vec![b'x'; 100], vec![b'x'; 100], vec![b'x'; WINDOW_BYTES]];
        assert_eq!(window_len(&mixed), 2);
    }
}
