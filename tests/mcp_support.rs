//! Fixtures for the `memoree mcp` tests: the server as a child process driven by rmcp's own
//! client (`Mcp`), or by raw JSON-RPC lines (`RawServer`) for protocol-level checks.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
#[allow(deprecated)]
use rmcp::model::{ListRootsResult, Root};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::{BIN, SCRUBBED_ENV, TempHome};

/// How long a reply may take (a loaded debug build that may be starting the daemon).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// An rmcp client; it offers `roots` when given any.
#[derive(Clone, Debug, Default)]
pub struct TestClient {
    pub roots: Vec<String>,
}

impl ClientHandler for TestClient {
    #[allow(deprecated)]
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.roots.is_empty() {
            ClientCapabilities::default()
        } else {
            ClientCapabilities::builder().enable_roots().build()
        };
        ClientConfig::new(capabilities, Implementation::new("memoree-tests", "1"))
    }

    #[allow(deprecated)]
    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.roots.iter().map(Root::new).collect()))
    }
}

/// A connected rmcp client session with a `memoree mcp` child.
pub type Mcp = RunningService<RoleClient, TestClient>;

/// `memoree mcp ARGS` for `home`, run in `cwd`, with a clean environment plus `env`.
pub fn command(home: &TempHome, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    for name in SCRUBBED_ENV {
        command.env_remove(name);
    }
    command
        .env("MEMOREE_HOME", &home.home)
        .current_dir(cwd)
        .arg("mcp")
        .args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Starts `memoree mcp` in the test project and connects rmcp's client to it.
pub async fn connect(home: &TempHome) -> Mcp {
    connect_with(home, &home.project, &[], &[], TestClient::default()).await
}

/// Like [`connect`] with a working directory, server arguments, environment and client.
pub async fn connect_with(home: &TempHome, cwd: &Path, args: &[&str], env: &[(&str, &str)], client: TestClient) -> Mcp {
    let command = tokio::process::Command::from(command(home, cwd, args, env));
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("memoree mcp starts");
    client.serve(transport).await.expect("the MCP handshake succeeds")
}

/// Calls `tool` with `arguments` (an object) and returns the tool result.
pub async fn call(mcp: &Mcp, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object: {arguments}");
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    tokio::time::timeout(REPLY_TIMEOUT, mcp.call_tool(request))
        .await
        .unwrap_or_else(|_| panic!("{tool} did not answer"))
        .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
}

/// The structured result of a successful call; panics with the summary otherwise.
pub async fn ok(mcp: &Mcp, tool: &str, arguments: Value) -> Value {
    let result = call(mcp, tool, arguments).await;
    assert_eq!(result.is_error, Some(false), "{tool}: {}", summary(&result));
    result.structured_content.expect("a structured result")
}

/// The v1 failure envelope of a failed call; panics if it succeeded.
pub async fn failed(mcp: &Mcp, tool: &str, arguments: Value) -> Value {
    let result = call(mcp, tool, arguments).await;
    assert_eq!(result.is_error, Some(true), "{tool} succeeded: {}", summary(&result));
    let envelope = result.structured_content.expect("the failure envelope");
    memoree::protocol::schema::validate_response(&envelope).unwrap_or_else(|e| panic!("{e}: {envelope}"));
    assert_eq!(envelope["ok"], false, "{envelope}");
    envelope
}

/// The first text block of a tool result.
pub fn summary(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|text| text.text.clone())
        .unwrap_or_default()
}

/// `artifact_put` arguments for a text artifact.
pub fn put_args(title: &str, text: &str) -> Value {
    json!({"kind": "note", "title": title, "content": {"type": "text", "data": text}})
}

/// A `memoree mcp` child driven by raw JSON-RPC lines.
pub struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every stdout line received so far, in order.
    pub seen: Vec<String>,
    stderr: PathBuf,
    _stderr_dir: tempfile::TempDir,
}

impl RawServer {
    pub fn spawn(mut command: Command) -> RawServer {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let mut child = command.spawn().expect("memoree mcp starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        RawServer {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            stderr,
            _stderr_dir: dir,
        }
    }

    /// Writes `text` and a newline to the server's stdin.
    pub fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// Sends a request and waits for the message answering it.
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply_to(&json!(id), REPLY_TIMEOUT)
    }

    /// Initializes with `version` and sends `notifications/initialized`; returns the result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    /// The next stdout message whose `id` equals `id`, within `limit`.
    pub fn reply_to(&mut self, id: &Value, limit: Duration) -> Value {
        self.try_reply_to(id, limit)
            .unwrap_or_else(|| panic!("no reply to id {id} within {limit:?}; seen: {:?}", self.seen))
    }

    /// Like [`RawServer::reply_to`], `None` when nothing answers in time.
    pub fn try_reply_to(&mut self, id: &Value, limit: Duration) -> Option<Value> {
        let deadline = Instant::now() + limit;
        if let Some(found) = self
            .seen
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| &m["id"] == id)
        {
            return Some(found);
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    if &message["id"] == id {
                        return Some(message);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Closes stdin, waits for the server to exit and returns every stdout line and stderr.
    pub fn finish(mut self) -> (Vec<String>, String, std::process::ExitStatus) {
        drop(self.stdin.take());
        let status = crate::support::daemon::wait_child(&mut self.child, REPLY_TIMEOUT).unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!("memoree mcp did not exit after stdin closed")
        });
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (self.seen.clone(), stderr, status)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
