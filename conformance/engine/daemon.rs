//! The frame transports. `daemon` starts a daemon per trial on a fresh data directory and a
//! private endpoint (`<binary> serve --listen ENDPOINT --data-dir DIR`, or any command given
//! with `--daemon-command`); `endpoint` talks to a daemon someone else started. Both speak
//! length-prefixed frames ([`super::frames`]: one request per connection, as a reference client
//! does, and no retries, so the implementation is seen as it is); `$raw` steps send their text
//! verbatim as the frame body.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::sync::Arc;

use memoree::testkit::postgres::TestCluster;
use serde_json::{Value, json};

use super::frames::{Connection, Endpoint, exchange as frame_exchange, header_only};
use super::transport::{Outgoing, Session, TRANSPORT_REQUEST_ID, Transport, temp_dir};

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
    /// A free loopback TCP port speaking TLS (see [`use_tls_server_config`]).
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

/// The `config.toml` (with its `[remote]` table) every `tls://` daemon of this run is given
/// as `MEMOREE_CONFIG`; the matching client side is [`super::frames::use_tls_client`].
static TLS_SERVER_CONFIG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the server configuration of `--daemon-listen tls` daemons (once per run).
pub fn use_tls_server_config(path: PathBuf) {
    let _ = TLS_SERVER_CONFIG.set(path);
}

/// A daemon started for each trial.
#[derive(Debug)]
pub struct Daemon {
    launch: Launch,
    listen: Listen,
    /// A PostgreSQL cluster in which each trial's daemon gets a fresh database.
    store: Option<Arc<TestCluster>>,
}

impl Daemon {
    pub fn new(launch: Launch, listen: Listen, store: Option<Arc<TestCluster>>) -> Daemon {
        Daemon { launch, listen, store }
    }
}

struct DaemonSession {
    child: Child,
    endpoint: Endpoint,
    kept: Option<Connection>,
    held: Vec<Connection>,
    /// The loopback port reserved for this trial's daemon, released when it stops.
    port: Option<PortReservation>,
    _dir: tempfile::TempDir,
}

/// Loopback ports handed to daemons of this run that have not stopped yet. The kernel hands
/// a probed port out again as soon as the probe closes, so without this two parallel trials
/// could pick the same port: the second daemon fails to bind, and its trial would talk to
/// the first trial's daemon (a replayed idempotency key, then a refused connection).
static RESERVED_PORTS: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// A port in [`RESERVED_PORTS`] until dropped.
struct PortReservation(u16);

impl PortReservation {
    /// A free loopback port no running daemon of this run was given.
    fn take() -> Result<PortReservation, String> {
        let mut reserved = RESERVED_PORTS.lock().unwrap_or_else(|e| e.into_inner());
        // Probes stay open while looking, so the kernel never returns one twice.
        let mut probes = Vec::new();
        for _ in 0..64 {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free TCP port: {e}"))?;
            let port = probe.local_addr().map_err(|e| format!("no free TCP port: {e}"))?.port();
            if !reserved.contains(&port) {
                reserved.push(port);
                return Ok(PortReservation(port));
            }
            probes.push(probe);
        }
        Err("no free TCP port outside those of running daemons".to_owned())
    }
}

impl Drop for PortReservation {
    fn drop(&mut self) {
        let mut reserved = RESERVED_PORTS.lock().unwrap_or_else(|e| e.into_inner());
        reserved.retain(|&port| port != self.0);
    }
}

/// The endpoint a trial's daemon listens on, in `unix://` / `tcp://` form, with the port
/// reserved for it.
fn choose_endpoint(listen: Listen, dir: &Path) -> Result<(String, Endpoint, Option<PortReservation>), String> {
    match listen {
        Listen::Unix => {
            let socket = dir.join("run").join("memoree.sock");
            Ok((format!("unix://{}", socket.display()), Endpoint::Unix(socket), None))
        }
        Listen::Tcp | Listen::Tls => {
            // A free port, handed to the daemon. Another process could take it in between;
            // the daemon then fails to start and `start` tries another port.
            let port = PortReservation::take()?;
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port.0));
            if listen == Listen::Tls {
                Ok((format!("tls://{addr}"), Endpoint::Tls(addr), Some(port)))
            } else {
                Ok((format!("tcp://{addr}"), Endpoint::Tcp(addr), Some(port)))
            }
        }
    }
}

/// Single-quotes `value` for `sh`.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

fn command(launch: &Launch, endpoint: &str, dir: &Path, store_url: Option<&str>) -> Command {
    let data_dir = dir.join("data");
    match launch {
        Launch::Serve(binary) => {
            let mut command = Command::new(binary);
            command
                .args(["serve", "--listen", endpoint, "--data-dir"])
                .arg(data_dir);
            if let Some(url) = store_url {
                command.args(["--store", url]);
            }
            command
        }
        Launch::Command(template) => {
            let line = template
                .replace("{store_url}", &shell_quote(store_url.unwrap_or("")))
                .replace("{endpoint}", &shell_quote(endpoint))
                .replace("{data_dir}", &shell_quote(&data_dir.to_string_lossy()))
                .replace("{home}", &shell_quote(&dir.to_string_lossy()));
            let mut command = Command::new("sh");
            command.arg("-c").arg(line);
            command
        }
    }
}

/// Waits until `endpoint` gives a successful `capabilities` reply.
fn wait_until_ready(endpoint: &Endpoint, child: &mut Child, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let probe = serde_json::to_vec(&json!({"request_id": "req_ready", "op": "capabilities", "input": {}}))
        .map_err(|e| e.to_string())?;
    let mut pause = Duration::from_millis(2);
    loop {
        if frame_exchange(endpoint, &probe).is_ok_and(|r| r.get("ok") == Some(&Value::Bool(true))) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} exited before serving: {status}"));
        }
        if Instant::now() > deadline {
            stop(child);
            return Err(format!("{what} did not accept requests within {READY_TIMEOUT:?}"));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(25));
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
        // A daemon that lost its port to another process exits before serving: try another.
        let attempts = if self.listen == Listen::Unix { 1 } else { 3 };
        let mut last = String::new();
        for _ in 0..attempts {
            match self.start_once() {
                Ok(session) => return Ok(session),
                Err(error) => last = error,
            }
        }
        Err(last)
    }
}

impl Daemon {
    fn start_once(&self) -> Result<Box<dyn Session>, String> {
        let dir = temp_dir()?;
        let (endpoint_text, endpoint, port) = choose_endpoint(self.listen, dir.path())?;
        let store_url = self.store.as_ref().map(|cluster| cluster.create_store_database());
        let mut command = command(&self.launch, &endpoint_text, dir.path(), store_url.as_deref());
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
        if self.listen == Listen::Tls {
            let config = TLS_SERVER_CONFIG
                .get()
                .ok_or("--daemon-listen tls needs a server configuration; the in-tree runner generates one")?;
            command.env("MEMOREE_CONFIG", config);
        }
        let what = match &self.launch {
            Launch::Serve(binary) => format!("{} serve", binary.display()),
            Launch::Command(template) => format!("the daemon command {template:?}"),
        };
        let mut child = command.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
        wait_until_ready(&endpoint, &mut child, &what)?;
        Ok(Box::new(DaemonSession {
            child,
            endpoint,
            kept: None,
            held: Vec::new(),
            port,
            _dir: dir,
        }))
    }
}

impl Session for DaemonSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        send(&self.endpoint, request)
    }

    fn exchange_kept(&mut self, request: &Outgoing) -> Result<Value, String> {
        let connection = match &mut self.kept {
            Some(connection) => connection,
            None => self.kept.insert(Connection::open(&self.endpoint)?),
        };
        connection.exchange(&request.to_bytes())
    }

    fn hold_connections(&mut self, count: u32) -> Result<(), String> {
        for _ in 0..count {
            self.held.push(Connection::open(&self.endpoint)?);
        }
        Ok(())
    }
}

/// One exchange on a frame transport; a `$frame_header` step's reply is `null` when the daemon
/// closed the connection without one.
fn send(endpoint: &Endpoint, request: &Outgoing) -> Result<Value, String> {
    match request {
        Outgoing::FrameHeader(length) => header_only(endpoint, *length),
        other => frame_exchange(endpoint, &other.to_bytes()),
    }
}

impl Drop for DaemonSession {
    fn drop(&mut self) {
        self.kept = None;
        self.held.clear();
        stop(&mut self.child);
        self.port = None;
    }
}

/// A daemon that is already running, shared by every trial: only trials that cannot depend
/// on what the store holds run on it (see `Case::is_store_independent`). Its exchanges are
/// serialized, so parallel trials never exceed the daemon's connection limit.
#[derive(Debug)]
pub struct Running {
    endpoint: Endpoint,
    one_at_a_time: std::sync::Arc<Mutex<()>>,
}

impl Running {
    pub fn new(endpoint: &str) -> Result<Running, String> {
        let endpoint = Endpoint::parse(endpoint).map_err(|e| format!("--endpoint {endpoint}: {e}"))?;
        Ok(Running {
            endpoint,
            one_at_a_time: std::sync::Arc::default(),
        })
    }
}

struct RunningSession {
    endpoint: Endpoint,
    one_at_a_time: std::sync::Arc<Mutex<()>>,
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
            endpoint: self.endpoint.clone(),
            one_at_a_time: self.one_at_a_time.clone(),
        }))
    }
}

impl Session for RunningSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        let _turn = self.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
        send(&self.endpoint, request)
    }
}
