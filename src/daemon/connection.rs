//! One connection: read a frame, serve it off the reactor, write the reply; repeat until
//! the peer is done, goes idle or the daemon shuts down.
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

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::timeout;

use super::listener::Conn;
use super::{ServerTimeouts, memory};
use crate::frame::{self, FrameError};
use crate::net::describe as seconds;
use crate::protocol::{ErrorBody, ErrorCode, Response, TRANSPORT_REQUEST_ID};
use crate::service::{Service, ServiceError, error_body};

/// What every connection task shares.
pub(super) struct Ctx {
    pub service: Service,
    /// The encoded busy envelope a connection over the limit receives.
    pub busy_frame: Vec<u8>,
    pub timeouts: ServerTimeouts,
    pub max_frame_bytes: usize,
    pub max_connections: usize,
}

/// Serves one admitted connection.
pub(super) async fn serve(conn: Conn, ctx: &Ctx, stop: watch::Receiver<bool>) {
    match conn {
        Conn::Unix(stream) => serve_stream(stream, ctx, stop).await,
        Conn::Tcp(stream) => serve_stream(stream, ctx, stop).await,
    }
}

/// Answers a connection over the limit with the busy envelope and closes it.
pub(super) async fn refuse_busy(conn: Conn, ctx: &Ctx) {
    match conn {
        Conn::Unix(mut stream) => reply_and_close(&mut stream, &ctx.busy_frame, ctx).await,
        Conn::Tcp(mut stream) => reply_and_close(&mut stream, &ctx.busy_frame, ctx).await,
    }
}

/// Answers a connection over the limit without waiting for anything: one non-blocking
/// write of the busy frame (a few hundred bytes, which an accepted socket's empty send
/// buffer always takes), a half-close, and the connection is closed. Used when even the
/// lingering refusals are at their bound; a peer still writing its request over TCP may see
/// a reset after the reply instead of a clean close.
pub(super) fn refuse_busy_now(conn: Conn, busy_frame: &[u8]) {
    let fd = match &conn {
        Conn::Unix(stream) => stream.as_fd(),
        Conn::Tcp(stream) => stream.as_fd(),
    };
    let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
    match rustix::net::send(fd, busy_frame, flags) {
        Ok(sent) if sent == busy_frame.len() => {
            let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Write);
        }
        Ok(sent) => tracing::debug!(sent, "a refused connection took only part of the busy frame"),
        Err(error) => tracing::debug!(%error, "could not answer a refused connection"),
    }
}

async fn serve_stream<S>(mut stream: S, ctx: &Ctx, mut stop: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut served = 0u64;
    loop {
        let wait = if served == 0 {
            ctx.timeouts.read
        } else {
            ctx.timeouts.idle
        };
        let header = tokio::select! {
            biased;
            _ = stop.wait_for(|stopping| *stopping) => return,
            header = timeout(wait, frame::read_header(&mut stream, ctx.max_frame_bytes)) => header,
        };
        let len = match header {
            Ok(Ok(Some(len))) => len,
            Ok(Ok(None)) => return,
            Ok(Err(FrameError::TooLarge { len, max })) => {
                tracing::warn!(len, max, "refusing an oversized request frame");
                let response = Response::failure(TRANSPORT_REQUEST_ID, oversized(len, max));
                reply_and_close(&mut stream, &encode_response(&response, ctx.max_frame_bytes), ctx).await;
                return;
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "connection ended inside a frame header");
                return;
            }
            Err(_) => {
                tracing::debug!(served, "no request within {:?}; closing", wait);
                return;
            }
        };
        let body = match timeout(ctx.timeouts.read, frame::read_body(&mut stream, len)).await {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => {
                tracing::debug!(%error, "connection ended inside a frame body");
                return;
            }
            Err(_) => {
                let response = Response::failure(
                    TRANSPORT_REQUEST_ID,
                    ErrorBody::prefixed(
                        ErrorCode::TransportError,
                        format_args!("frame read timed out after {}", seconds(ctx.timeouts.read)),
                    ),
                );
                reply_and_close(&mut stream, &encode_response(&response, ctx.max_frame_bytes), ctx).await;
                return;
            }
        };
        let reply = respond(&ctx.service, body, ctx.max_frame_bytes).await;
        let large = len.max(reply.len()) >= memory::LARGE_FRAME_BYTES;
        match timeout(ctx.timeouts.write, frame::write_encoded(&mut stream, &reply)).await {
            Ok(Ok(())) => {
                served += 1;
                if large {
                    drop(reply);
                    tokio::task::spawn_blocking(memory::release);
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "could not write a response frame");
                return;
            }
            Err(_) => {
                tracing::warn!("response frame write timed out after {}", seconds(ctx.timeouts.write));
                return;
            }
        }
    }
}

/// Serves one request body on the blocking pool and encodes the reply frame there too.
async fn respond(service: &Service, body: Vec<u8>, max_frame_bytes: usize) -> Vec<u8> {
    let service = service.clone();
    let served = tokio::task::spawn_blocking(move || {
        let response = service.handle_body(body, TRANSPORT_REQUEST_ID);
        encode_response(&response, max_frame_bytes)
    })
    .await;
    served.unwrap_or_else(|_| {
        let error = ServiceError::Internal("the request handler panicked".to_owned());
        encode_response(
            &Response::failure(TRANSPORT_REQUEST_ID, error_body(&error)),
            max_frame_bytes,
        )
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
async fn reply_and_close<S>(stream: &mut S, reply: &[u8], ctx: &Ctx)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let written = timeout(ctx.timeouts.write, async {
        frame::write_encoded(stream, reply).await?;
        stream.shutdown().await.map_err(FrameError::Io)
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
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
