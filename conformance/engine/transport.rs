//! How the runner reaches an implementation. A [`Transport`] starts a [`Session`] on a
//! fresh, empty store; a session sends one request document at a time and returns the
//! response envelope as JSON.
//!
//! * `inprocess` (in-tree only, `conformance/inprocess.rs`) calls the service directly.
//! * [`Binary`] runs `<binary> call` once per request with a fresh `MEMOREE_HOME`, writes the
//!   request to stdin and parses exactly one envelope line from stdout. It also checks that
//!   the exit status agrees with the envelope (protocol exit-code table).
//!
//! * `daemon::Daemon` (in `daemon.rs`) spawns `<binary> serve` on a private socket per case
//!   and sends one length-prefixed frame per request; `daemon::Running` uses a running one.
//!
//! A binary session stops the daemon that `call` autostarted in its home when it ends.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Every transport name a case file may list in `transports`, including the planned daemon.
pub const KNOWN_TRANSPORTS: [&str; 3] = ["inprocess", "binary", "daemon"];

/// The fallback `request_id` of the service and the daemon.
pub const TRANSPORT_REQUEST_ID: &str = "req_transport";
/// The fallback `request_id` of `memoree call` when stdin is not a request.
pub const CLI_REQUEST_ID: &str = "req_cli";

/// The error of a `$frame_header` step on a transport without frames.
pub const NO_FRAMES: &str = "a $frame_header step needs a frame transport; limit the case to \"daemon\"";

/// How long one `call` subprocess may take before it is killed.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One request document as sent.
#[derive(Clone, Debug)]
pub enum Outgoing {
    /// A JSON request, serialized by the transport.
    Json(Value),
    /// Text sent verbatim (malformed JSON cases).
    Raw(String),
    /// Only a frame header declaring this many body bytes, and no body (frame transports only).
    FrameHeader(u32),
}

impl Outgoing {
    /// The request's `op`, when it is a JSON object naming one.
    pub fn op(&self) -> Option<&str> {
        match self {
            Outgoing::Json(value) => value.get("op").and_then(Value::as_str),
            Outgoing::Raw(_) | Outgoing::FrameHeader(_) => None,
        }
    }

    /// The request as a JSON value, for reports (raw text becomes a string).
    pub fn to_value(&self) -> Value {
        match self {
            Outgoing::Json(value) => value.clone(),
            Outgoing::Raw(text) => Value::String(text.clone()),
            Outgoing::FrameHeader(length) => serde_json::json!({ "$frame_header": length }),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Outgoing::Json(value) => serde_json::to_vec(value).unwrap_or_default(),
            Outgoing::Raw(text) => text.as_bytes().to_vec(),
            Outgoing::FrameHeader(_) => Vec::new(),
        }
    }
}

/// A way to reach an implementation under test.
pub trait Transport: Send + Sync {
    /// The trial-name suffix, e.g. `inprocess`.
    fn name(&self) -> &'static str;
    /// The `request_id` this transport reports for an unreadable request.
    fn fallback_request_id(&self) -> &'static str;
    /// A session on a fresh, empty store, cleaned up on drop.
    fn start(&self) -> Result<Box<dyn Session>, String>;
}

/// A conversation with one store.
pub trait Session: Send {
    /// Sends one request and returns its response envelope.
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String>;

    /// Sends one request on the connection kept open by the previous such exchange (a
    /// `$same_connection` step); only frame transports have connections.
    fn exchange_kept(&mut self, _request: &Outgoing) -> Result<Value, String> {
        Err("a $same_connection step needs a frame transport; limit the case to \"daemon\"".to_owned())
    }

    /// Opens `count` more connections that send nothing and stay open until the session ends
    /// (a `$hold_connections` step); only frame transports have connections.
    fn hold_connections(&mut self, _count: u32) -> Result<(), String> {
        Err("a $hold_connections step needs a frame transport; limit the case to \"daemon\"".to_owned())
    }
}

pub fn temp_dir() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("memoree-conformance-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))
}

/// A `memoree`-compatible executable driven through `call`.
#[derive(Debug)]
pub struct Binary {
    path: PathBuf,
}

impl Binary {
    pub fn new(path: impl Into<PathBuf>) -> Binary {
        Binary { path: path.into() }
    }
}

struct BinarySession {
    path: PathBuf,
    home: tempfile::TempDir,
}

/// Environment variables that would point the child at another store, endpoint or context.
const SCRUBBED_ENV: [&str; 9] = [
    "MEMOREE_DATA_DIR",
    "MEMOREE_RUNTIME_DIR",
    "MEMOREE_CONFIG",
    "MEMOREE_SOCKET",
    "MEMOREE_ENDPOINT",
    "MEMOREE_NO_AUTOSTART",
    "MEMOREE_CONTEXT",
    "MEMOREE_ACTOR",
    "XDG_RUNTIME_DIR",
];

impl Transport for Binary {
    fn name(&self) -> &'static str {
        "binary"
    }

    fn fallback_request_id(&self) -> &'static str {
        CLI_REQUEST_ID
    }

    fn start(&self) -> Result<Box<dyn Session>, String> {
        Ok(Box::new(BinarySession {
            path: self.path.clone(),
            home: temp_dir()?,
        }))
    }
}

impl Drop for BinarySession {
    /// `call` may have autostarted a daemon in this session's home; stop it.
    fn drop(&mut self) {
        if !self.home.path().join("run").exists() {
            return;
        }
        let mut command = Command::new(&self.path);
        command
            .args(["daemon", "stop"])
            .current_dir(self.home.path())
            .env("MEMOREE_HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        let _ = command.status();
    }
}

impl Session for BinarySession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        if let Outgoing::FrameHeader(_) = request {
            return Err(NO_FRAMES.to_owned());
        }
        let CallOutput { status, stdout, stderr } = run_call(&self.path, self.home.path(), request.to_bytes())?;
        let stderr = String::from_utf8_lossy(&stderr);
        let line = std::str::from_utf8(&stdout).map_err(|_| format!("stdout is not UTF-8; stderr: {stderr}"))?;
        let Some(body) = line.strip_suffix('\n').filter(|body| !body.contains('\n')) else {
            return Err(format!(
                "stdout must be exactly one envelope line; got {line:?}; stderr: {stderr}"
            ));
        };
        let envelope: Value =
            serde_json::from_str(body).map_err(|e| format!("stdout is not JSON ({e}); stderr: {stderr}"))?;
        let code = envelope.pointer("/error/code").and_then(Value::as_str);
        let expected = match envelope.get("ok") {
            Some(Value::Bool(true)) => Some(0),
            _ => code.and_then(exit_status),
        };
        if status != expected {
            return Err(format!(
                "exit status {status:?} does not match the envelope (code {code:?} exits with {expected:?}); \
                 stdout: {}",
                super::matcher::preview(&envelope)
            ));
        }
        Ok(envelope)
    }
}

/// What one `call` process left behind.
struct CallOutput {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `<binary> call` in `home` with `input` on stdin.
fn run_call(binary: &Path, home: &Path, input: Vec<u8>) -> Result<CallOutput, String> {
    let mut command = Command::new(binary);
    command
        .arg("call")
        .current_dir(home)
        .env("MEMOREE_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in SCRUBBED_ENV {
        command.env_remove(name);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin pipe")?;
    // A child that exits early closes its stdin; the resulting write error is not ours to report.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&input)));
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = reader(Box::new(child.stdout.take().ok_or("no stdout pipe")?));
    let stderr = reader(Box::new(child.stderr.take().ok_or("no stderr pipe")?));
    let deadline = Instant::now() + CALL_TIMEOUT;
    let status = loop {
        match child
            .try_wait()
            .map_err(|e| format!("waiting for the child failed: {e}"))?
        {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`call` did not finish within {CALL_TIMEOUT:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let _ = writer.join();
    let stdout = stdout.join().map_err(|_| "stdout reader panicked")?;
    let stderr = stderr.join().map_err(|_| "stderr reader panicked")?;
    Ok(CallOutput {
        status: status.code(),
        stdout,
        stderr,
    })
}

/// The protocol's process exit status for a failure code.
fn exit_status(code: &str) -> Option<i32> {
    Some(match code {
        "INVALID_REQUEST" | "CONFIG_ERROR" | "CONTENT_TOO_LARGE" | "UNSUPPORTED_VERSION" => 2,
        "NOT_FOUND" => 3,
        "REVISION_CONFLICT" | "IDEMPOTENCY_CONFLICT" => 4,
        "NO_AMBIENT_CONTEXT" => 5,
        "INDEX_NOT_READY" => 6,
        "SCOPE_VIOLATION" => 7,
        // The reference's v0.7.1 CLI exits 1 on its later code (reference-facts-v0.7.md §1.2).
        "INTEGRITY_ERROR" | "TRANSPORT_ERROR" | "REASONER_ERROR" | "INTERNAL_ERROR" | "CITATION_ERROR" => 1,
        _ => return None,
    })
}
