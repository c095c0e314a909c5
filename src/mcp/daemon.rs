//! The MCP server's one seam to the daemon: it exchanges typed v1 requests
//! ([`Request<I>`], encoded by `transport::encode`) over pooled socket sessions, starting
//! the default daemon on demand exactly as the CLI does. Nothing else in `mcp/` touches the
//! client API.
//!
//! Sessions are reused while they are fresh: a session returns to the pool after each
//! exchange and is closed once it has been idle for [`LINGER`], so a burst of tool calls
//! shares one connection while an idle MCP server holds none of the daemon's few
//! connection slots (many MCP servers share one daemon). Concurrent calls each take their
//! own session.
//!
//! **Invariant:** [`Daemon::send`] never fails: every failure to obtain a response is a v1
//! failure envelope for the request's own id.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::autostart::{Launcher, retry_started};
use crate::client::socket::{SocketClient, SocketSession};
use crate::client::{ClientError, encode};
use crate::paths::{Endpoint, Paths};
use crate::protocol::{ErrorBody, Request, Response};

/// How long an idle session stays open for the next call.
pub const LINGER: Duration = Duration::from_secs(1);
/// At most this many idle sessions are kept (the daemon's default connection limit).
const MAX_IDLE: usize = crate::protocol::limits::MAX_CONCURRENT_CONNECTIONS;

/// The daemon this MCP server forwards to.
#[derive(Debug)]
pub struct Daemon {
    /// `Err` when the endpoint or the paths are unusable: every call reports it.
    link: Result<Link, ErrorBody>,
}

#[derive(Debug)]
struct Link {
    client: SocketClient,
    launcher: Option<Launcher>,
    idle: Mutex<Vec<(SocketSession, Instant)>>,
}

impl Daemon {
    /// The daemon at `endpoint` (never autostarted), or the default daemon of this user,
    /// started on demand unless `no_autostart`; the same rule as the CLI's.
    pub fn select(endpoint: Option<&str>, no_autostart: bool) -> Daemon {
        Daemon {
            link: Link::select(endpoint, no_autostart).map_err(|error| error.error_body()),
        }
    }

    /// Sends `request` and returns its envelope (blocking).
    pub fn send<I: Serialize>(&self, request: &Request<I>) -> Response {
        let link = match &self.link {
            Ok(link) => link,
            Err(error) => return Response::failure(request.request_id.clone(), error.clone()),
        };
        match encode(request).and_then(|body| link.exchange(&body)) {
            Ok(response) => response,
            Err(error) => Response::failure(request.request_id.clone(), error.error_body()),
        }
    }

    /// Closes sessions that have been idle for [`LINGER`].
    pub fn close_idle(&self) {
        if let Ok(link) = &self.link {
            link.prune(Instant::now());
        }
    }
}

impl Link {
    fn select(endpoint: Option<&str>, no_autostart: bool) -> Result<Link, ClientError> {
        let (endpoint, launcher) = match endpoint {
            Some(text) => (
                Endpoint::parse(text).map_err(|e| ClientError::Config(e.to_string()))?,
                None,
            ),
            None => {
                let paths = Paths::from_env().map_err(|e| ClientError::Config(e.to_string()))?;
                let launcher = (!no_autostart).then(|| Launcher::for_paths(&paths)).transpose()?;
                (paths.default_endpoint(), launcher)
            }
        };
        Ok(Link {
            client: SocketClient::new(endpoint),
            launcher,
            idle: Mutex::new(Vec::new()),
        })
    }

    fn exchange(&self, body: &[u8]) -> Result<Response, ClientError> {
        let mut session = self.take_fresh(Instant::now()).unwrap_or_else(|| self.client.session());
        match session.exchange_raw(body) {
            Ok(response) => {
                self.put_back(session);
                Ok(response)
            }
            Err(ClientError::Transport(reason)) if self.launcher.is_some() => {
                tracing::info!(%reason, "no daemon answered; starting one");
                self.start_and_retry(body)
            }
            Err(error) => Err(error),
        }
    }

    /// Starts the default daemon and retries on fresh sessions while nothing answers, as
    /// [`crate::client::autostart::Autostart`] does.
    fn start_and_retry(&self, body: &[u8]) -> Result<Response, ClientError> {
        let Some(launcher) = &self.launcher else {
            return Err(ClientError::Transport("no daemon answered".to_owned()));
        };
        let pid = launcher.spawn()?;
        retry_started(pid, || {
            let mut session = self.client.session();
            let response = session.exchange_raw(body)?;
            self.put_back(session);
            Ok(response)
        })
    }

    /// The most recently used session if it is still fresh; closes every stale one.
    fn take_fresh(&self, now: Instant) -> Option<SocketSession> {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        idle.retain(|(_, since)| now.duration_since(*since) < LINGER);
        idle.pop().map(|(session, _)| session)
    }

    /// Closes every session idle for [`LINGER`] or longer.
    fn prune(&self, now: Instant) {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        idle.retain(|(_, since)| now.duration_since(*since) < LINGER);
    }

    fn put_back(&self, session: SocketSession) {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push((session, Instant::now()));
        }
    }
}
