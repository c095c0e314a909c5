//! The frame transports. `daemon` starts a daemon per trial on a fresh data directory and a
//! private endpoint (`<binary> serve --listen ENDPOINT --data-dir DIR`, or any command given
//! with `--daemon-command`); `endpoint` talks to a daemon someone else started. Both speak
//! length-prefixed frames through the crate's socket client (one request per connection, as a
//! reference client does); `$raw` steps send their text verbatim as the frame body.
//!
//! `--daemon-listen tls` serves each trial on `tls://127.0.0.1:PORT` with a throw-away PKI
//! (generated once per run, `tests/support/pki.rs`) and one client certificate granted every
//! workspace (`["*"]`), so every case runs unchanged inside TLS.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use memoree::client::Transport as _;
use memoree::client::socket::SocketClient;
use memoree::client::tls::Connector;
use memoree::paths::Endpoint;
use serde_json::{Value, json};

use crate::transport::{Outgoing, Session, TRANSPORT_REQUEST_ID, Transport, temp_dir};

/// How long a spawned daemon may take to accept its first request.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How a trial's daemon is started.
#[derive(Debug, Clone)]
pub enum Launch {
    /// `<binary> serve --listen ENDPOINT --data-dir DIR`.
    Serve(PathBuf),
    /// A shell command in which `{endpoint}`, `{data_dir}` and `{home}` are replaced.
    Command(String),
}

/// Which kind of endpoint a started daemon listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    Unix,
    /// A free loopback TCP port.
    Tcp,
    /// A free loopback TCP port speaking TLS with a client certificate.
    Tls,
}

impl Listen {
    pub fn parse(value: &str) -> Result<Listen, String> {
        match value {
            "unix" => Ok(Listen::Unix),
            "tcp" => Ok(Listen::Tcp),
            "tls" => Ok(Listen::Tls),
            other => Err(format!("--daemon-listen must be unix, tcp or tls, not {other:?}")),
        }
    }
}

/// A daemon started for each trial.
#[derive(Debug)]
pub struct Daemon {
    launch: Launch,
    listen: Listen,
}

impl Daemon {
    pub fn new(launch: Launch, listen: Listen) -> Daemon {
        Daemon { launch, listen }
    }
}

struct DaemonSession {
    child: Child,
    client: SocketClient,
    _dir: tempfile::TempDir,
}

/// The endpoint a trial's daemon listens on, in `unix://` / `tcp://` form.
fn choose_endpoint(listen: Listen, dir: &Path) -> Result<(String, Endpoint), String> {
    match listen {
        Listen::Unix => {
            let socket = dir.join("run").join("memoree.sock");
            Ok((format!("unix://{}", socket.display()), Endpoint::Unix(socket)))
        }
        Listen::Tcp | Listen::Tls => {
            // Ask the kernel for a free port, then hand it to the daemon. Another process
            // could take it in between; the daemon then fails to start and the trial says so.
            let probe = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free TCP port: {e}"))?;
            let addr = probe.local_addr().map_err(|e| format!("no free TCP port: {e}"))?;
            let scheme = if listen == Listen::Tls { "tls" } else { "tcp" };
            let text = format!("{scheme}://{addr}");
            let endpoint = Endpoint::parse(&text).map_err(|e| e.to_string())?;
            Ok((text, endpoint))
        }
    }
}

/// The run's throw-away PKI for `--daemon-listen tls`: a `config.toml` whose `[remote]`
/// table admits one client for every workspace, and that client's connector.
struct TlsSetup {
    _dir: tempfile::TempDir,
    config: PathBuf,
    connector: Connector,
}

fn tls_setup() -> Result<&'static TlsSetup, String> {
    static SETUP: OnceLock<Result<TlsSetup, String>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let dir = temp_dir()?;
            let pki = crate::pki::Pki::generate(&dir.path().join("pki"));
            let client = pki.client("conformance", crate::pki::Signer::ClientCa, false);
            let config = dir.path().join("config.toml");
            std::fs::write(
                &config,
                format!("schema = 1\n{}", pki.remote_table(&[(&client, &["*"])])),
            )
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
            let connector = pki
                .credentials(&pki.server_ca, Some(&client))
                .connector()
                .map_err(|e| e.to_string())?;
            Ok(TlsSetup {
                _dir: dir,
                config,
                connector,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Single-quotes `value` for `sh`.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

fn command(launch: &Launch, endpoint: &str, dir: &Path) -> Command {
    let data_dir = dir.join("data");
    match launch {
        Launch::Serve(binary) => {
            let mut command = Command::new(binary);
            command
                .args(["serve", "--listen", endpoint, "--data-dir"])
                .arg(data_dir);
            command
        }
        Launch::Command(template) => {
            let line = template
                .replace("{endpoint}", &shell_quote(endpoint))
                .replace("{data_dir}", &shell_quote(&data_dir.to_string_lossy()))
                .replace("{home}", &shell_quote(&dir.to_string_lossy()));
            let mut command = Command::new("sh");
            command.arg("-c").arg(line);
            command
        }
    }
}

/// Waits until `client` gets a successful `capabilities` reply.
fn wait_until_ready(client: &SocketClient, child: &mut Child, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let probe = json!({"request_id": "req_ready", "op": "capabilities", "input": {}});
    loop {
        if client.exchange_json(&probe).is_ok_and(|r| r.ok) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} exited before serving: {status}"));
        }
        if Instant::now() > deadline {
            stop(child);
            return Err(format!("{what} did not accept requests within {READY_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM to the daemon's process group (so a `sh -c` wrapper and its child both get it,
/// and the daemon can remove its socket), then SIGKILL after a grace period.
fn stop(child: &mut Child) {
    use rustix::process::{Pid, Signal, kill_process_group};
    let group = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::TERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::KILL);
    }
    let _ = child.wait();
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
        let (endpoint_text, endpoint) = choose_endpoint(self.listen, dir.path())?;
        let mut command = command(&self.launch, &endpoint_text, dir.path());
        command
            .env("MEMOREE_HOME", dir.path())
            .current_dir(dir.path())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MEMOREE_") && name != "MEMOREE_HOME" {
                command.env_remove(&name);
            }
        }
        let tls = match self.listen {
            Listen::Tls => {
                let setup = tls_setup()?;
                command.env("MEMOREE_CONFIG", &setup.config);
                Some(setup.connector.clone())
            }
            Listen::Unix | Listen::Tcp => None,
        };
        let what = match &self.launch {
            Launch::Serve(binary) => format!("{} serve", binary.display()),
            Launch::Command(template) => format!("the daemon command {template:?}"),
        };
        let mut child = command.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
        let client = match tls {
            Some(connector) => SocketClient::new(endpoint).with_tls(connector),
            None => SocketClient::new(endpoint),
        };
        wait_until_ready(&client, &mut child, &what)?;
        Ok(Box::new(DaemonSession {
            child,
            client,
            _dir: dir,
        }))
    }
}

impl Session for DaemonSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        exchange(&self.client, request)
    }
}

impl Drop for DaemonSession {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// A daemon that is already running, shared by every trial: only trials that cannot depend
/// on what the store holds run on it (see `Case::is_store_independent`).
#[derive(Debug)]
pub struct Running {
    endpoint: Endpoint,
}

impl Running {
    pub fn new(endpoint: &str) -> Result<Running, String> {
        let endpoint = Endpoint::parse(endpoint).map_err(|e| format!("--endpoint {endpoint}: {e}"))?;
        Ok(Running { endpoint })
    }
}

struct RunningSession {
    client: SocketClient,
}

impl Transport for Running {
    fn name(&self) -> &'static str {
        "endpoint"
    }

    fn fallback_request_id(&self) -> &'static str {
        TRANSPORT_REQUEST_ID
    }

    fn start(&self) -> Result<Box<dyn Session>, String> {
        Ok(Box::new(RunningSession {
            client: SocketClient::new(self.endpoint.clone()),
        }))
    }
}

impl Session for RunningSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        exchange(&self.client, request)
    }
}

fn exchange(client: &SocketClient, request: &Outgoing) -> Result<Value, String> {
    let response = match request {
        Outgoing::Json(value) => client.exchange_json(value),
        Outgoing::Raw(text) => client.exchange_raw(text.as_bytes()),
    }
    .map_err(|e| format!("daemon exchange failed: {e}"))?;
    serde_json::to_value(&response).map_err(|e| format!("cannot encode the envelope: {e}"))
}
