//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! It is rmcp's stdio framing plus what JSON-RPC 2.0 asks of a server that rmcp leaves out:
//! a line that is not JSON gets a `-32700 Parse error` reply (`id: null`), a JSON value that
//! is not a JSON-RPC message gets `-32600 Invalid Request` (echoing its `id` when it has a
//! usable one), and a line over [`MAX_LINE_BYTES`] is discarded with a `-32600` reply
//! instead of being buffered. Unknown notifications are ignored, as MCP peers expect.
//!
//! **Invariant:** this is the only writer of stdout, and it writes only whole JSON-RPC
//! messages, one per line, never interleaved (one lock around each write).

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest accepted message: an 8 MiB artifact is 12 MiB of base64, plus its JSON.
pub const MAX_LINE_BYTES: usize = crate::protocol::limits::MAX_FRAME_BYTES + 1024 * 1024;

/// JSON-RPC's "Parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
pub const INVALID_REQUEST: i64 = -32600;

/// Newline-delimited JSON-RPC over a reader and a writer (stdin and stdout in production).
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of an oversized line is skipped (kept here because `receive` can
    /// be cancelled between reads).
    discarding: bool,
    writer: Arc<Mutex<W>>,
}

enum Line {
    Complete,
    Oversized,
    Eof,
    Failed(io::Error),
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            discarding: false,
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    /// Reads up to the next newline into `self.line`; cancellation-safe (`fill_buf` consumes
    /// nothing when dropped, and copy and consume happen without an await between them).
    async fn read_line(&mut self) -> Line {
        loop {
            let (consumed, complete) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Line::Failed(error),
                };
                if available.is_empty() {
                    return Line::Eof;
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let chunk = &available[..newline.unwrap_or(available.len())];
                if !self.discarding {
                    if self.line.len() + chunk.len() > MAX_LINE_BYTES {
                        self.discarding = true;
                        self.line = Vec::new();
                    } else {
                        self.line.extend_from_slice(chunk);
                    }
                }
                (newline.map_or(available.len(), |at| at + 1), newline.is_some())
            };
            self.reader.consume(consumed);
            if complete {
                if std::mem::take(&mut self.discarding) {
                    return Line::Oversized;
                }
                return Line::Complete;
            }
        }
    }

    /// Sends a JSON-RPC error reply from a task of its own, so a cancelled `receive` never
    /// leaves half a line on stdout.
    fn reply_error(&self, id: Value, code: i64, message: String) {
        let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let writer = self.writer.clone();
        tokio::spawn(async move {
            if let Err(error) = write_line(&writer, line.to_string().into_bytes()).await {
                tracing::debug!(%error, "cannot write a JSON-RPC error reply");
            }
        });
    }

    fn refuse(&self, line: &[u8], error: &serde_json::Error) {
        use serde_json::error::Category;
        match error.classify() {
            Category::Syntax | Category::Eof => {
                self.reply_error(Value::Null, PARSE_ERROR, format!("Parse error: {error}"));
            }
            Category::Data | Category::Io => {
                let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
                let is_notification = value.get("method").is_some_and(Value::is_string) && value.get("id").is_none();
                if is_notification {
                    tracing::debug!(%error, "ignoring a notification this server does not know");
                    return;
                }
                let id = match value.get("id") {
                    Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                    _ => Value::Null,
                };
                self.reply_error(id, INVALID_REQUEST, format!("Invalid Request: {error}"));
            }
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, mut bytes: Vec<u8>) -> io::Result<()> {
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let bytes = serde_json::to_vec(&item).map_err(io::Error::other);
        async move { write_line(&writer, bytes?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Line::Complete => {}
                Line::Oversized => {
                    self.reply_error(
                        Value::Null,
                        INVALID_REQUEST,
                        format!("Invalid Request: the message exceeds {MAX_LINE_BYTES} bytes"),
                    );
                    continue;
                }
                Line::Eof => return None,
                Line::Failed(error) => {
                    tracing::warn!(%error, "cannot read stdin; stopping");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(text) {
                Ok(message) => return Some(message),
                Err(error) => self.refuse(text, &error),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        let mut writer = self.writer.lock().await;
        writer.flush().await?;
        writer.shutdown().await
    }
}
