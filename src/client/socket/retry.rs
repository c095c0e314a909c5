//! When the client tries again: [`SocketSession::exchange_raw`] runs one framed exchange
//! ([`super::stream::attempt`]) and decides what a busy envelope or a failure means.
//!
//! - A daemon at its connection limit answers with a retryable busy envelope ([`is_busy`])
//!   and closes the connection. The request is sent again on a new connection after a
//!   jittered, capped exponential backoff (10 ms doubling to 250 ms) until
//!   [`super::ClientTimeouts::busy_retry`] runs out; the last busy envelope is then returned,
//!   re-addressed to the caller's `request_id`.
//! - A reused connection the daemon had already closed (its idle timeout) is replaced once,
//!   and the request sent again on the new one.
//!
//! **Invariant:** a request is sent again only when the daemon cannot have acted on it: it
//! refused the connection (busy), or the connection was closed or reset before the request
//! reached it. Every other failure is returned as it is, never retried here.

use std::io;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::SocketSession;
use super::stream::{attempt, too_large};
use crate::frame::MAX_FRAME_BYTES;
use crate::protocol::{Response, TRANSPORT_REQUEST_ID};
use crate::transport::ClientError;

/// Whether `response` is a daemon's retryable "connection limit reached" envelope.
pub fn is_busy(response: &Response) -> bool {
    response.error.as_ref().is_some_and(|error| error.is_connection_limit())
}

impl SocketSession {
    /// Sends `body` verbatim as one frame (it need not be valid JSON) and returns the
    /// response envelope, retrying busy envelopes and a stale reused connection (see the
    /// module docs).
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
            let tls_failure = |error: &io::Error| self.client.tls_failure(error);
            match attempt(&mut stream, body, &self.client, self.one_shot, &tls_failure) {
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
}

/// A busy envelope that outlasted the retry budget, re-addressed to the caller's request.
fn readdress(mut response: Response, body: &[u8]) -> Response {
    if response.request_id == TRANSPORT_REQUEST_ID
        && let Ok(request) = serde_json::from_slice::<Value>(body)
        && let Some(id) = request.get("request_id").and_then(Value::as_str)
    {
        response.request_id = id.into();
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
