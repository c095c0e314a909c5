//! The daemon transport: `<binary> serve` on a private Unix socket per case, spoken to with
//! length-prefixed frames through the crate's socket client (one request per connection,
//! as a reference client does). `$raw` steps send their text verbatim as the frame body.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memoree::client::socket::SocketClient;
use memoree::paths::Endpoint;
use serde_json::{Value, json};

use crate::transport::{Outgoing, Session, TRANSPORT_REQUEST_ID, Transport, temp_dir};

/// How long a spawned daemon may take to accept its first request.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A `memoree`-compatible executable driven through `serve`.
#[derive(Debug)]
pub struct Daemon {
    binary: PathBuf,
}

impl Daemon {
    pub fn new(binary: impl Into<PathBuf>) -> Daemon {
        Daemon { binary: binary.into() }
    }
}

struct DaemonSession {
    child: Child,
    client: SocketClient,
    _dir: tempfile::TempDir,
}

impl Transport for Daemon {
    fn name(&self) -> &'static str {
        "daemon"
    }

    fn fallback_request_id(&self) -> &'static str {
        TRANSPORT_REQUEST_ID
    }

    fn start(&self) -> Result<Box<dyn Session>, String> {
        let dir = temp_dir()?;
        let socket = dir.path().join("run").join("memoree.sock");
        let endpoint = format!("unix://{}", socket.display());
        let mut command = Command::new(&self.binary);
        command
            .args(["serve", "--listen", &endpoint, "--data-dir"])
            .arg(dir.path().join("data"))
            .env("MEMOREE_HOME", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MEMOREE_") && name != "MEMOREE_HOME" {
                command.env_remove(&name);
            }
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {} serve: {e}", self.binary.display()))?;
        let client = SocketClient::new(Endpoint::Unix(socket));
        let deadline = Instant::now() + READY_TIMEOUT;
        let probe = json!({"request_id": "req_ready", "op": "capabilities", "input": {}});
        loop {
            if client.exchange_json(&probe).is_ok_and(|r| r.ok) {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the daemon exited before serving: {status}"));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the daemon did not accept requests within {READY_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Box::new(DaemonSession {
            child,
            client,
            _dir: dir,
        }))
    }
}

impl Session for DaemonSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        let response = match request {
            Outgoing::Json(value) => self.client.exchange_json(value),
            Outgoing::Raw(text) => self.client.exchange_raw(text.as_bytes()),
        }
        .map_err(|e| format!("daemon exchange failed: {e}"))?;
        serde_json::to_value(&response).map_err(|e| format!("cannot encode the envelope: {e}"))
    }
}

impl Drop for DaemonSession {
    fn drop(&mut self) {
        // SIGTERM lets the daemon remove its socket; kill is the fallback.
        // SAFETY: `kill` with a valid pid of our own child and a valid signal number.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
