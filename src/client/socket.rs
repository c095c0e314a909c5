//! The framed socket client: one request frame out, one response frame back, over a Unix
//! socket, loopback TCP or TLS (`tls://`, see [`super::tls`]), with every step under a
//! timeout.
//!
//! [`SocketClient`] opens one connection per exchange (exactly what a reference-style client
//! does) and half-closes its side after sending, so the daemon sees a clean end of stream
//! once it has replied; [`SocketClient::keep_alive`] reuses one connection instead.
//! [`SocketSession`] keeps one connection for several requests in sequence (the daemon
//! allows that; see `spec/v1/DIVERGENCES.md`). All retry the daemon's connection-limit
//! envelope with a capped exponential backoff.
//!
//! This file connects: it turns an [`Endpoint`] into an open connection (a Unix socket,
//! TCP with `TCP_NODELAY`, or TLS through the endpoint's [`Connector`]) and owns the
//! clients and sessions. The rest is split by concern: `stream.rs` (the connection, its
//! deadlines, and one framed request/response attempt), `retry.rs` (busy backoff and the
//! one reconnect of a stale session) and `pipeline.rs` (windows of pipelined requests).
//!
//! Every failure to obtain a response envelope is a [`ClientError::Transport`]
//! (`TRANSPORT_ERROR`, retryable) — including the daemon closing or resetting the
//! connection before replying — except a response over the frame limit, which is
//! [`ClientError::TooLarge`], a TLS trust or credential refusal, which is
//! [`ClientError::Tls`] (not retryable), and an unusable socket path, which is
//! [`ClientError::Config`].
//!
//! **Invariants:** a connection serves one caller at a time: concurrent exchanges of one
//! client each get their own (only an idle one is shared, by handing it over); a `tls://`
//! endpoint's credentials are read from the environment at most once, on first use.
//!
//! The client is synchronous (no async runtime) so a short-lived CLI pays nothing for it.

use std::io::{self, ErrorKind};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::tls::{Connector, TlsCredentials};
use crate::net::{self, describe};
use crate::paths::Endpoint;
use crate::protocol::{Input, Request, Response};
use crate::transport::{self, ClientError, Transport};

pub use crate::net::PeerCredentials;
pub use pipeline::PIPELINE_WINDOW;
pub use retry::is_busy;

mod pipeline;
mod retry;
mod stream;

use stream::{REPLY_SPIN, Stream, is_timeout};

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

/// A client for one daemon endpoint; cheap to clone, safe to share between threads.
///
/// By default every exchange uses a fresh connection and half-closes it after sending, as a
/// reference client does (the CLI sends one request per process). [`SocketClient::keep_alive`]
/// makes exchanges reuse one idle connection instead, for long-running callers: a request
/// that finds its connection closed by the daemon's idle timeout is sent again, once, on a
/// new one (the daemon never read it), and concurrent exchanges each use their own.
#[derive(Clone, Debug)]
pub struct SocketClient {
    endpoint: Endpoint,
    timeouts: ClientTimeouts,
    /// The idle connection kept between exchanges, in keep-alive mode.
    idle: Option<Arc<Mutex<Option<SocketSession>>>>,
    /// The TLS connector of a `tls://` endpoint: given, or loaded from the environment and
    /// `config.toml` on first use (see [`TlsCredentials::from_env`]).
    tls: Arc<Mutex<Option<Connector>>>,
    /// How long an exchange polls for the reply before it sleeps in `read` (see
    /// [`REPLY_SPIN`]).
    reply_spin: Duration,
}

impl SocketClient {
    pub fn new(endpoint: Endpoint) -> SocketClient {
        SocketClient {
            endpoint,
            timeouts: ClientTimeouts::default(),
            idle: None,
            tls: Arc::new(Mutex::new(None)),
            reply_spin: REPLY_SPIN,
        }
    }

    /// Sleeps in `read` as soon as a request is sent, instead of polling for the reply first.
    /// For a caller that runs several exchanges at once (the parallel workers of
    /// `import --from`): there, polling takes the CPU the daemon needs to answer. On two
    /// cores, a 10 000-item import ran 14% faster and its client used a seventh of the CPU.
    pub fn without_reply_spin(mut self) -> SocketClient {
        self.reply_spin = Duration::ZERO;
        self
    }

    /// Uses `connector` for a `tls://` endpoint instead of the credentials of the
    /// environment and `config.toml`.
    pub fn with_tls(self, connector: Connector) -> SocketClient {
        *self.tls.lock().unwrap_or_else(|e| e.into_inner()) = Some(connector);
        self
    }

    /// The connector of a `tls://` endpoint, loaded on first use.
    fn connector(&self) -> Result<Connector, ClientError> {
        let mut slot = self.tls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connector) = slot.as_ref() {
            return Ok(connector.clone());
        }
        let connector = TlsCredentials::from_env()?.connector()?;
        *slot = Some(connector.clone());
        Ok(connector)
    }

    /// The TLS refusal an I/O error of this client's connection carries, if any.
    fn tls_failure(&self, error: &io::Error) -> Option<ClientError> {
        let Endpoint::Tls(addr) = &self.endpoint else {
            return None;
        };
        let connector = self.tls.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        connector.classify(error, addr)
    }

    pub fn with_timeouts(mut self, timeouts: ClientTimeouts) -> SocketClient {
        self.timeouts = timeouts;
        self
    }

    /// Reuses one connection across exchanges instead of one connection per exchange.
    pub fn keep_alive(mut self) -> SocketClient {
        self.idle = Some(Arc::new(Mutex::new(None)));
        self
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn timeouts(&self) -> &ClientTimeouts {
        &self.timeouts
    }

    /// Sends one request document and returns the response envelope.
    pub fn exchange_json(&self, request: &Value) -> Result<Response, ClientError> {
        transport::Exchange::send_value(self, request)
    }

    /// A session that keeps its connection open between exchanges. Nothing is connected
    /// until the first exchange.
    pub fn session(&self) -> SocketSession {
        SocketSession {
            client: SocketClient {
                idle: None,
                ..self.clone()
            },
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
        if let Endpoint::Tls(addr) = &self.endpoint {
            let stream = self.connector()?.connect(addr, limit)?;
            return Ok(Stream::Tls(Box::new(stream)));
        }
        let stream = match &self.endpoint {
            Endpoint::Unix(path) => net::connect_unix(path, limit).map(Stream::Unix),
            Endpoint::Tcp(addr) => TcpStream::connect_timeout(addr, limit).and_then(|stream| {
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }),
            Endpoint::Tls(_) => unreachable!("connected above"),
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

impl SocketClient {
    /// Runs `exchange` on the kept idle connection (or a new one, kept afterwards) in
    /// keep-alive mode, else on a connection of its own, half-closed after sending when
    /// `one_shot`.
    fn on_session<T>(
        &self,
        one_shot: bool,
        exchange: impl FnOnce(&mut SocketSession) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let Some(idle) = &self.idle else {
            let mut session = self.session();
            session.one_shot = one_shot;
            return exchange(&mut session);
        };
        let pooled = idle.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut session = pooled.unwrap_or_else(|| self.session());
        let answered = exchange(&mut session)?;
        let mut slot = idle.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(session);
        }
        Ok(answered)
    }
}

impl Transport for SocketClient {
    /// Sends `body` verbatim as one frame (it need not be valid JSON) and returns the
    /// response envelope.
    fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
        self.on_session(true, |session| session.exchange_raw(body))
    }

    fn exchange_pipelined(&self, bodies: &[Vec<u8>]) -> Result<Vec<Response>, ClientError> {
        self.on_session(false, |session| session.exchange_pipelined(bodies))
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

impl SocketSession {
    /// Sends a typed request and decodes its result (see [`transport::Exchange::exchange`]).
    pub fn exchange<I: Input>(&mut self, request: &Request<I>) -> Result<Response<I::Output>, ClientError> {
        self.send(request)?
            .decode()
            .map_err(|source| ClientError::UnexpectedResult { op: I::OP, source })
    }

    /// Sends a typed request and returns the envelope as received.
    pub fn send<I: Serialize>(&mut self, request: &Request<I>) -> Result<Response, ClientError> {
        self.exchange_raw(&transport::encode(request)?)
    }

    /// Sends one raw request document.
    pub fn exchange_json(&mut self, request: &Value) -> Result<Response, ClientError> {
        let body = serde_json::to_vec(request)
            .map_err(|e| ClientError::Config(format!("the request cannot be encoded as JSON: {e}")))?;
        self.exchange_raw(&body)
    }

    /// The credentials of the peer of the current Unix connection (connecting if needed).
    pub fn peer_credentials(&mut self) -> Result<Option<PeerCredentials>, ClientError> {
        if self.stream.is_none() {
            self.stream = Some(self.client.open()?);
        }
        match &self.stream {
            Some(Stream::Unix(stream)) => net::peer_credentials(stream)
                .map(Some)
                .map_err(|e| ClientError::Transport(format!("cannot read the peer credentials: {e}"))),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
