//! Protocol v1 daemon frames, spoken directly: a 4-byte unsigned big-endian length, then that
//! many bytes of UTF-8 JSON. One request per connection, as a reference client does; no retry,
//! no backoff, no autostart, so what the runner reports is what the implementation did.
//!
//! `tls://IP:PORT` endpoints carry the same frames inside TLS 1.3 (rustls), with the client
//! configuration given once per run by [`use_tls_client`].

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

/// The protocol's frame limit (`max_frame_bytes`, 24 MiB); a frame of exactly this size is allowed.
pub const MAX_FRAME_BYTES: usize = 24 * 1024 * 1024;

/// How long one exchange may wait for the daemon at each step.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// A daemon endpoint: `unix://PATH`, `tcp://IP:PORT` or `tls://IP:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    Tcp(SocketAddr),
    Tls(SocketAddr),
}

/// The TLS client configuration of `tls://` endpoints (server CA and client certificate).
static TLS_CLIENT: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();

/// Sets the TLS client configuration for every `tls://` exchange of this run (once).
pub fn use_tls_client(config: Arc<rustls::ClientConfig>) {
    let _ = TLS_CLIENT.set(config);
}

impl Endpoint {
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        if let Some(path) = text.strip_prefix("unix://") {
            if path.is_empty() {
                return Err("the Unix endpoint path is empty".to_owned());
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(address) = text.strip_prefix("tcp://") {
            return address
                .parse()
                .map(Endpoint::Tcp)
                .map_err(|e| format!("invalid TCP endpoint {address:?} (an IP literal and a port): {e}"));
        }
        if let Some(address) = text.strip_prefix("tls://") {
            return address
                .parse()
                .map(Endpoint::Tls)
                .map_err(|e| format!("invalid TLS endpoint {address:?} (an IP literal and a port): {e}"));
        }
        Err(format!(
            "an endpoint begins with unix://, tcp:// or tls://, not {text:?}"
        ))
    }
}

trait Stream: Read + Write + Send {
    fn finish_writing(&mut self);
    fn wait_at_most(&self, timeout: Duration);
}

impl Stream for UnixStream {
    fn finish_writing(&mut self) {
        let _ = self.shutdown(Shutdown::Write);
    }

    fn wait_at_most(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
    }
}

impl Stream for TcpStream {
    fn finish_writing(&mut self) {
        let _ = self.shutdown(Shutdown::Write);
    }

    fn wait_at_most(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
    }
}

/// TLS 1.3 keeps the reply direction open after the client's `close_notify`.
impl Stream for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn finish_writing(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
    }

    fn wait_at_most(&self, timeout: Duration) {
        let _ = self.sock.set_read_timeout(Some(timeout));
    }
}

fn connect_tcp(scheme: &str, address: &SocketAddr) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(address, Duration::from_secs(5))
        .map_err(|e| format!("cannot connect to {scheme}://{address}: {e}"))?;
    stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

fn connect(endpoint: &Endpoint) -> Result<Box<dyn Stream>, String> {
    match endpoint {
        Endpoint::Unix(path) => {
            let stream =
                UnixStream::connect(path).map_err(|e| format!("cannot connect to unix://{}: {e}", path.display()))?;
            stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
            stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
            Ok(Box::new(stream))
        }
        Endpoint::Tcp(address) => Ok(Box::new(connect_tcp("tcp", address)?)),
        Endpoint::Tls(address) => {
            let config = TLS_CLIENT
                .get()
                .ok_or_else(|| format!("tls://{address}: no TLS client configuration was given for this run"))?;
            let name = rustls::pki_types::ServerName::IpAddress(address.ip().into());
            let connection = rustls::ClientConnection::new(Arc::clone(config), name)
                .map_err(|e| format!("cannot start a TLS session with tls://{address}: {e}"))?;
            let mut stream = rustls::StreamOwned::new(connection, connect_tcp("tls", address)?);
            while stream.conn.is_handshaking() {
                stream
                    .conn
                    .complete_io(&mut stream.sock)
                    .map_err(|e| format!("the TLS handshake with tls://{address} failed: {e}"))?;
            }
            Ok(Box::new(stream))
        }
    }
}

/// Whether an I/O error means the peer closed or reset the connection.
fn closed(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        error.kind(),
        BrokenPipe | ConnectionAborted | ConnectionReset | UnexpectedEof
    )
}

/// Sends `body` as one frame on a new connection and reads the one response frame. A daemon
/// that closes the connection without replying (as the reference does for a connection over
/// its limit) yields `null`, which a case can expect; a timeout is an error.
pub fn exchange(endpoint: &Endpoint, body: &[u8]) -> Result<Value, String> {
    let length =
        u32::try_from(body.len()).map_err(|_| format!("a request of {} bytes cannot be framed", body.len()))?;
    let mut stream = connect(endpoint)?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&length.to_be_bytes());
    frame.extend_from_slice(body);
    match stream.write_all(&frame).and_then(|()| stream.flush()) {
        // An early reply may still be waiting; read it below.
        Err(e) if closed(&e) => {}
        Err(e) => return Err(format!("cannot send the request frame: {e}")),
        Ok(()) => stream.finish_writing(),
    }
    let mut first = [0u8; 1];
    match stream.read(&mut first) {
        Ok(0) => return Ok(Value::Null),
        Err(e) if closed(&e) => return Ok(Value::Null),
        Err(e) => return Err(format!("no response frame (timed out?): {e}")),
        Ok(_) => {}
    }
    let mut rest = [0u8; 3];
    stream
        .read_exact(&mut rest)
        .map_err(|e| format!("the response frame header ended early: {e}"))?;
    read_body(&mut stream, [first[0], rest[0], rest[1], rest[2]])
}

/// A connection kept open across several exchanges (`$same_connection` steps).
pub struct Connection {
    stream: Box<dyn Stream>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connection")
    }
}

impl Connection {
    pub fn open(endpoint: &Endpoint) -> Result<Connection, String> {
        Ok(Connection {
            stream: connect(endpoint)?,
        })
    }

    /// Sends one frame and reads one response frame, leaving the connection open.
    pub fn exchange(&mut self, body: &[u8]) -> Result<Value, String> {
        let length =
            u32::try_from(body.len()).map_err(|_| format!("a request of {} bytes cannot be framed", body.len()))?;
        let mut frame = Vec::with_capacity(4 + body.len());
        frame.extend_from_slice(&length.to_be_bytes());
        frame.extend_from_slice(body);
        self.stream
            .write_all(&frame)
            .map_err(|e| format!("cannot send on the kept connection: {e}"))?;
        read_response(&mut self.stream)
    }
}

/// Reads one response frame and parses its JSON.
fn read_response(stream: &mut Box<dyn Stream>) -> Result<Value, String> {
    let mut header = [0u8; 4];
    stream
        .read_exact(&mut header)
        .map_err(|e| format!("no response frame (the daemon closed the connection or timed out): {e}"))?;
    read_body(stream, header)
}

/// Reads the body announced by `header` and parses its JSON.
fn read_body(stream: &mut Box<dyn Stream>, header: [u8; 4]) -> Result<Value, String> {
    let length = u32::from_be_bytes(header) as usize;
    if length > MAX_FRAME_BYTES {
        return Err(format!(
            "the response frame declares {length} bytes, over the protocol's {MAX_FRAME_BYTES}-byte limit"
        ));
    }
    let mut response = vec![0u8; length];
    stream
        .read_exact(&mut response)
        .map_err(|e| format!("the response frame ended early: {e}"))?;
    let text = std::str::from_utf8(&response).map_err(|_| "the response frame is not UTF-8".to_owned())?;
    serde_json::from_str(text).map_err(|e| format!("the response frame is not JSON: {e}"))
}

/// How long a header-only exchange waits for a reply before it counts as "no reply".
const HEADER_ONLY_WAIT: Duration = Duration::from_secs(10);

/// Sends only a frame header declaring `length` body bytes (and no body) on a new connection.
/// Returns the reply envelope, or `null` when the daemon closes the connection without one.
pub fn header_only(endpoint: &Endpoint, length: u32) -> Result<Value, String> {
    let mut stream = connect(endpoint)?;
    stream
        .write_all(&length.to_be_bytes())
        .map_err(|e| format!("cannot send the frame header: {e}"))?;
    stream.finish_writing();
    stream.wait_at_most(HEADER_ONLY_WAIT);
    let mut header = [0u8; 4];
    let started = std::time::Instant::now();
    match stream.read_exact(&mut header) {
        Ok(()) => {}
        Err(_) if started.elapsed() < HEADER_ONLY_WAIT => return Ok(Value::Null),
        Err(e) => return Err(format!("no reply and no close within {HEADER_ONLY_WAIT:?}: {e}")),
    }
    let length = u32::from_be_bytes(header) as usize;
    if length > MAX_FRAME_BYTES {
        return Err(format!(
            "the response frame declares {length} bytes, over the protocol's limit"
        ));
    }
    let mut response = vec![0u8; length];
    stream
        .read_exact(&mut response)
        .map_err(|e| format!("the response frame ended early: {e}"))?;
    serde_json::from_slice(&response).map_err(|e| format!("the response frame is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_unix_paths_or_tcp_ip_literals() {
        assert_eq!(
            Endpoint::parse("unix:///run/m.sock"),
            Ok(Endpoint::Unix(PathBuf::from("/run/m.sock")))
        );
        assert!(matches!(Endpoint::parse("tcp://127.0.0.1:17878"), Ok(Endpoint::Tcp(_))));
        assert!(matches!(Endpoint::parse("tls://127.0.0.1:17878"), Ok(Endpoint::Tls(_))));
        assert!(Endpoint::parse("tls://localhost:17878").is_err());
        assert!(Endpoint::parse("tcp://localhost:17878").is_err());
        assert!(Endpoint::parse("unix://").is_err());
        assert!(Endpoint::parse("http://x").is_err());
    }
}
