//! One connection: read a frame, serve it off the reactor, write the reply; repeat until
//! the peer is done, goes idle or the daemon shuts down.
//!
//! A client may pipeline: send further requests before the replies to earlier ones. Up to
//! [`PIPELINE_DEPTH`] requests (and [`PIPELINE_BYTES`] of them) are read ahead and served
//! concurrently, so their writes can share a group commit; replies are written in request
//! order. Requests in flight together have no order among their effects: a client that
//! needs one request's effect before another's waits for its reply.
//!
//! Failures that still leave a way to answer are answered:
//! - a declared length over the frame limit gets a `CONTENT_TOO_LARGE` envelope, before
//!   any of the body is read or allocated;
//! - a body that does not arrive in time gets a `TRANSPORT_ERROR` envelope;
//! - malformed JSON gets an `INVALID_REQUEST` envelope from the service, and the connection
//!   stays usable because the frame boundary is intact.
//!
//! After an early reply the connection is half-closed and what the peer still sends is
//! drained for a short while, so the reply is not destroyed by a reset while the peer is
//! still writing. A truncated frame or a broken stream just closes the connection.

use std::os::fd::AsFd;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::{timeout, timeout_at};

use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::remote::ServerTls;
use super::{ServerTimeouts, memory};
use crate::frame::{self, FrameError};
use crate::net::describe as seconds;
use crate::protocol::{ErrorBody, ErrorCode, Response, TRANSPORT_REQUEST_ID};
use crate::service::{Service, ServiceError, error_body};

/// What every connection task shares.
pub(super) struct Ctx {
    /// The unrestricted service; a TLS connection serves a view limited to its client.
    pub service: Service,
    /// The acceptor and client grants of a `tls://` listener.
    pub tls: Option<ServerTls>,
    /// The encoded busy envelope a connection over the limit receives.
    pub busy_frame: Vec<u8>,
    pub timeouts: ServerTimeouts,
    pub max_frame_bytes: usize,
    pub max_connections: usize,
}

/// The TLS handshake of a connection, under the handshake timeout, and the service view of
/// the client it authenticated. A refused client was already sent its alert by rustls; it is
/// logged here with its address. The caller runs this in a pre-authentication slot
/// (`handshake::Slot`), before any connection permit is taken.
pub(super) async fn handshake(stream: TcpStream, ctx: &Ctx) -> Option<(TlsStream<TcpStream>, Service)> {
    let tls = ctx.tls.as_ref()?;
    let peer = stream.peer_addr().ok();
    // One deadline for the handshake and the lingering after a refused one.
    let limit = ctx.timeouts.handshake;
    let deadline = tokio::time::Instant::now() + limit;
    let stream = match timeout_at(deadline, tls.acceptor().accept(stream).into_fallible()).await {
        Ok(Ok(stream)) => stream,
        Ok(Err((error, mut tcp))) => {
            tracing::warn!(?peer, %error, "TLS handshake refused");
            // The alert is sent; drain what the client still sends (in TLS 1.3 its first
            // request may already be on its way) so the alert is not lost to a reset.
            let _ = timeout_at(deadline, linger(&mut tcp, ctx)).await;
            return None;
        }
        Err(_) => {
            tracing::debug!(?peer, "no TLS handshake within {}; closing", seconds(limit));
            return None;
        }
    };
    let Some((client, grant)) = tls.client_of(stream.get_ref().1.peer_certificates()) else {
        // The verifier admits listed certificates only; this is a configuration race at most.
        tracing::warn!(?peer, "a TLS client without a listed certificate; closing");
        return None;
    };
    tracing::debug!(?peer, client, "TLS client connected");
    Some((stream, ctx.service.with_grant(grant.clone())))
}

/// Answers a connection over the limit without waiting for anything: one non-blocking
/// write of the busy frame (a few hundred bytes, which an accepted socket's empty send
/// buffer always takes), a half-close, and the connection is closed. Used when even the
/// lingering refusals are at their bound; a peer still writing its request over TCP may see
/// a reset after the reply instead of a clean close.
///
/// A TLS connection never comes here: it is refused inside its session, or closed.
pub(super) fn refuse_busy_now(stream: &impl AsFd, busy_frame: &[u8]) {
    let fd = stream.as_fd();
    let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
    match rustix::net::send(fd, busy_frame, flags) {
        Ok(sent) if sent == busy_frame.len() => {
            let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Write);
        }
        Ok(sent) => tracing::debug!(sent, "a refused connection took only part of the busy frame"),
        Err(error) => tracing::debug!(%error, "could not answer a refused connection"),
    }
}

/// Requests one connection may have in flight: a client may send its next request before
/// the reply to the last one (pipelining). Requests in flight together are served
/// concurrently, and their replies are written in request order.
pub(super) const PIPELINE_DEPTH: usize = 8;

/// Request bytes one connection may have in flight: a request that would go over waits,
/// before its body is read, until those before it are answered (a single request of any
/// size up to the frame limit is always read).
const PIPELINE_BYTES: usize = 1024 * 1024;

/// What a connection's reader and writer share: the requests read but not yet answered.
#[derive(Default)]
struct Flight {
    requests: AtomicUsize,
    bytes: AtomicUsize,
    /// The writer could not write a reply; the connection is done.
    broken: AtomicBool,
    /// Signalled after every reply written (and when the writer gives up).
    changed: Notify,
}

impl Flight {
    fn idle(&self) -> bool {
        self.requests.load(Ordering::Acquire) == 0
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Whether a request of `len` bytes must wait for earlier ones to be answered.
    fn full(&self, len: usize) -> bool {
        let requests = self.requests.load(Ordering::Acquire);
        requests >= PIPELINE_DEPTH || (requests > 0 && self.bytes.load(Ordering::Acquire) + len > PIPELINE_BYTES)
    }

    fn begin(&self, len: usize) {
        self.bytes.fetch_add(len, Ordering::AcqRel);
        self.requests.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self, len: usize) {
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        self.requests.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_one();
    }

    fn fail(&self) {
        self.broken.store(true, Ordering::Release);
        self.changed.notify_one();
    }
}

/// A request being served: its reply frame, once encoded, and its size.
struct Pending {
    reply: tokio::task::JoinHandle<Vec<u8>>,
    len: usize,
}

/// How the reading side of a connection ended.
enum End {
    /// The peer is done, the stream broke, or the writer gave up: close once the replies
    /// owed are written.
    Closed,
    /// No request within the idle (or first-request) timeout: close cleanly.
    Idle,
    /// The daemon is shutting down and nothing is in flight.
    Stop,
    /// A last reply (oversized frame, stalled body), then half-close and linger.
    Reply(Vec<u8>),
}

pub(super) async fn serve_stream<S>(stream: S, ctx: &Ctx, service: &Service, mut stop: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let flight = Flight::default();
    let (queue, replies) = mpsc::channel(PIPELINE_DEPTH);
    let (end, ()) = tokio::join!(
        read_requests(&mut reader, ctx, service, &mut stop, &flight, queue),
        write_replies(&mut writer, ctx, &flight, replies),
    );
    if flight.is_broken() {
        return;
    }
    let mut stream = reader.unsplit(writer);
    match end {
        End::Reply(reply) => reply_and_close(&mut stream, &reply, ctx).await,
        // A clean close (for TLS a close_notify), so a client reusing the connection knows
        // its next request was never read.
        End::Idle => {
            let _ = timeout(ctx.timeouts.linger, stream.shutdown()).await;
        }
        End::Closed | End::Stop => {}
    }
}

/// Reads requests and hands each to the blocking pool, queueing its reply for the writer,
/// while fewer than [`PIPELINE_DEPTH`] are in flight.
async fn read_requests<R>(
    reader: &mut R,
    ctx: &Ctx,
    service: &Service,
    stop: &mut watch::Receiver<bool>,
    flight: &Flight,
    queue: mpsc::Sender<Pending>,
) -> End
where
    R: AsyncRead + Unpin,
{
    let mut read = 0u64;
    loop {
        let header = {
            let next = frame::read_header(reader, ctx.max_frame_bytes);
            tokio::pin!(next);
            loop {
                if flight.is_broken() {
                    return End::Closed;
                }
                // The idle clock runs only while nothing is in flight: from the last reply.
                let idle = flight.idle();
                let wait = if read == 0 {
                    ctx.timeouts.read
                } else {
                    ctx.timeouts.idle
                };
                tokio::select! {
                    biased;
                    _ = stop.wait_for(|stopping| *stopping), if idle => return End::Stop,
                    header = &mut next => break header,
                    _ = flight.changed.notified(), if !idle => {}
                    _ = tokio::time::sleep(wait), if idle => {
                        tracing::debug!(read, "no request within {:?}; closing", wait);
                        return End::Idle;
                    }
                }
            }
        };
        let len = match header {
            Ok(Some(len)) => len,
            Ok(None) => return End::Closed,
            Err(FrameError::TooLarge { len, max }) => {
                tracing::warn!(len, max, "refusing an oversized request frame");
                let response = Response::failure(TRANSPORT_REQUEST_ID, oversized(len, max));
                return End::Reply(encode_response(&response, ctx.max_frame_bytes));
            }
            Err(error) => {
                tracing::debug!(%error, "connection ended inside a frame header");
                return End::Closed;
            }
        };
        while flight.full(len) {
            if flight.is_broken() {
                return End::Closed;
            }
            flight.changed.notified().await;
        }
        let body = match timeout(ctx.timeouts.read, frame::read_body(reader, len)).await {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => {
                tracing::debug!(%error, "connection ended inside a frame body");
                return End::Closed;
            }
            Err(_) => {
                let response = Response::failure(
                    TRANSPORT_REQUEST_ID,
                    ErrorBody::prefixed(
                        ErrorCode::TransportError,
                        format_args!("frame read timed out after {}", seconds(ctx.timeouts.read)),
                    ),
                );
                return End::Reply(encode_response(&response, ctx.max_frame_bytes));
            }
        };
        read += 1;
        flight.begin(len);
        let reply = respond(service, body, ctx.max_frame_bytes);
        if queue.send(Pending { reply, len }).await.is_err() {
            return End::Closed;
        }
    }
}

/// Writes the replies in request order as they are ready; on a failed write, marks the
/// connection broken and stops.
async fn write_replies<W>(writer: &mut W, ctx: &Ctx, flight: &Flight, mut replies: mpsc::Receiver<Pending>)
where
    W: AsyncWrite + Unpin,
{
    while let Some(Pending { reply, len }) = replies.recv().await {
        let reply = reply.await.unwrap_or_else(|_| {
            let error = ServiceError::Internal("the request handler panicked".to_owned());
            encode_response(
                &Response::failure(TRANSPORT_REQUEST_ID, error_body(&error)),
                ctx.max_frame_bytes,
            )
        });
        // Sizes only: the daemon never looks inside a frame, and bodies are memory content.
        tracing::debug!(request_bytes = len, response_bytes = reply.len(), "served a request");
        let large = len.max(reply.len()) >= memory::LARGE_FRAME_BYTES;
        match timeout(ctx.timeouts.write, frame::write_encoded(writer, &reply)).await {
            Ok(Ok(())) => {
                flight.end(len);
                if large {
                    drop(reply);
                    tokio::task::spawn_blocking(memory::release);
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "could not write a response frame");
                flight.fail();
                return;
            }
            Err(_) => {
                tracing::warn!("response frame write timed out after {}", seconds(ctx.timeouts.write));
                flight.fail();
                return;
            }
        }
    }
}

/// Serves one request body on the blocking pool and encodes the reply frame there too.
fn respond(service: &Service, body: Vec<u8>, max_frame_bytes: usize) -> tokio::task::JoinHandle<Vec<u8>> {
    let service = service.clone();
    tokio::task::spawn_blocking(move || {
        let response = service.handle_body(body, TRANSPORT_REQUEST_ID);
        encode_response(&response, max_frame_bytes)
    })
}

/// Encodes a response frame; a response over the limit is replaced by a
/// `CONTENT_TOO_LARGE` envelope for the same request.
pub(super) fn encode_response(response: &Response, max_frame_bytes: usize) -> Vec<u8> {
    let replacement = match frame::encode_json(response, max_frame_bytes) {
        Ok(frame) => return frame,
        Err(FrameError::TooLarge { max, .. }) => {
            tracing::warn!(max, "replacing an oversized response");
            let error = ServiceError::ContentTooLarge(format!("the response exceeds the {max}-byte frame limit"));
            Response::failure(&response.request_id, error_body(&error))
        }
        Err(error) => {
            let error = ServiceError::Internal(format!("could not encode the response: {error}"));
            Response::failure(&response.request_id, error_body(&error))
        }
    };
    // A failure envelope is tiny; if even it cannot be encoded the connection just closes.
    frame::encode_json(&replacement, max_frame_bytes).unwrap_or_default()
}

fn oversized(len: u64, max: usize) -> ErrorBody {
    let error = ServiceError::ContentTooLarge(format!(
        "the request frame of {len} bytes exceeds the {max}-byte frame limit"
    ));
    error_body(&error).with_details(serde_json::json!({"frame_bytes": len, "max_frame_bytes": max}))
}

/// Writes a final encoded reply, half-closes, and drains what the peer still sends for a
/// while.
pub(super) async fn reply_and_close<S>(stream: &mut S, reply: &[u8], ctx: &Ctx)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let written = timeout(ctx.timeouts.write, frame::write_encoded(stream, reply)).await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    linger(stream, ctx).await;
}

/// Half-closes (for TLS: `close_notify`) and drains what the peer still sends for a while,
/// so a final reply or alert is not destroyed by a reset while the peer is still writing.
async fn linger<S>(stream: &mut S, ctx: &Ctx)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = timeout(ctx.timeouts.write, stream.shutdown()).await;
    let mut sink = vec![0u8; 16 * 1024];
    let _ = timeout(ctx.timeouts.linger, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}
