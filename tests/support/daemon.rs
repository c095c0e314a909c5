//! `TestDaemon`: the real binary serving a temp socket, killed on drop; plus raw-frame
//! helpers for talking to it below the client.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use memoree::client::socket::{ClientTimeouts, SocketClient};
use memoree::client::tls::Connector;
use memoree::paths::Endpoint;
use memoree::protocol::Response;
use serde_json::{Value, json};

use super::{BIN, envelope};

/// How long a daemon may take to become ready (generous for a loaded debug build).
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// A `memoree serve` child process.
pub struct TestDaemon {
    _dir: Option<tempfile::TempDir>,
    child: Child,
    endpoint: Endpoint,
    data_dir: PathBuf,
    log_dir: PathBuf,
    /// The client TLS configuration of a `tls://` daemon.
    tls: Option<Connector>,
}

impl TestDaemon {
    /// Serves `unix://<tmp>/s.sock` with data in `<tmp>/data`, and waits until it answers.
    pub fn start() -> TestDaemon {
        let dir = tempfile::tempdir().unwrap();
        let mut daemon = TestDaemon::start_in(dir.path());
        daemon._dir = Some(dir);
        daemon
    }

    /// Serves `unix://<dir>/s.sock` with data in `<dir>/data`, and waits until it answers.
    pub fn start_in(dir: &Path) -> TestDaemon {
        let mut daemon = TestDaemon::spawn_at(dir, &Endpoint::Unix(dir.join("s.sock")), &dir.join("data"));
        daemon.wait_ready();
        daemon
    }

    /// Serves `unix://<dir>/local.sock` with data in `data_dir`, and waits until it answers.
    pub fn start_in_with_data(dir: &Path, data_dir: &Path) -> TestDaemon {
        let mut daemon = TestDaemon::spawn_at(dir, &Endpoint::Unix(dir.join("local.sock")), data_dir);
        daemon.wait_ready();
        daemon
    }

    /// Spawns `serve --listen <endpoint> --data-dir <data_dir>` with logs in `dir`, without
    /// waiting for it.
    pub fn spawn_at(dir: &Path, endpoint: &Endpoint, data_dir: &Path) -> TestDaemon {
        TestDaemon::spawn(
            TestDaemon::serve_command(endpoint, data_dir),
            dir,
            endpoint.clone(),
            data_dir,
        )
    }

    /// Like [`TestDaemon::spawn_at`] with extra environment variables, waiting until ready.
    pub fn start_at_with_env(dir: &Path, endpoint: &Endpoint, data_dir: &Path, env: &[(&str, &Path)]) -> TestDaemon {
        let mut command = TestDaemon::serve_command(endpoint, data_dir);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut daemon = TestDaemon::spawn(command, dir, endpoint.clone(), data_dir);
        daemon.wait_ready();
        daemon
    }

    /// A front end serving the PostgreSQL database at `url` on `unix://<dir>/s.sock` (its own
    /// lock and log in `<dir>/data`), waiting until it answers.
    pub fn start_postgres(dir: &Path, url: &str) -> TestDaemon {
        let endpoint = Endpoint::Unix(dir.join("s.sock"));
        let data_dir = dir.join("data");
        let mut command = TestDaemon::serve_command(&endpoint, &data_dir);
        command.arg("--store").arg(url);
        let mut daemon = TestDaemon::spawn(command, dir, endpoint, &data_dir);
        daemon.wait_ready();
        daemon
    }

    /// Runs `command` (a `memoree serve` the caller assembled) serving `endpoint` with data in
    /// `data_dir` and logs in `dir`, and waits until it answers.
    pub fn start_command(command: Command, dir: &Path, endpoint: Endpoint, data_dir: &Path) -> TestDaemon {
        let mut daemon = TestDaemon::spawn(command, dir, endpoint, data_dir);
        daemon.wait_ready();
        daemon
    }

    /// `memoree serve --listen <endpoint> --data-dir <data_dir>`.
    fn serve_command(endpoint: &Endpoint, data_dir: &Path) -> Command {
        let listen = match endpoint {
            Endpoint::Unix(path) => {
                let mut listen = OsString::from("unix://");
                listen.push(path);
                listen
            }
            Endpoint::Tcp(_) | Endpoint::Tls(_) => OsString::from(endpoint.to_string()),
        };
        let mut command = Command::new(BIN);
        command
            .arg("serve")
            .arg("--listen")
            .arg(listen)
            .arg("--data-dir")
            .arg(data_dir);
        command
    }

    /// Serves `endpoint` (`tls://…`) with the `[remote]` table of `config` (as
    /// `MEMOREE_CONFIG`), and waits until a client configured by `connector` gets an answer.
    pub fn start_tls(
        dir: &Path,
        endpoint: &Endpoint,
        data_dir: &Path,
        config: &Path,
        connector: Connector,
    ) -> TestDaemon {
        let mut command = TestDaemon::serve_command(endpoint, data_dir);
        command.env("MEMOREE_CONFIG", config);
        let mut daemon = TestDaemon::spawn(command, dir, endpoint.clone(), data_dir);
        daemon.tls = Some(connector);
        daemon.wait_ready();
        daemon
    }

    /// Serves the default endpoint of `home` (no `--listen`), and waits until it answers.
    pub fn in_home(home: &DaemonHome) -> TestDaemon {
        let command = home.command(&["serve"]);
        let endpoint = Endpoint::Unix(home.socket());
        let mut daemon = TestDaemon::spawn(command, home.path(), endpoint, &home.data_dir());
        daemon.wait_ready();
        daemon
    }

    fn spawn(mut command: Command, log_dir: &Path, endpoint: Endpoint, data_dir: &Path) -> TestDaemon {
        let stdout = std::fs::File::create(log_dir.join("daemon.stdout")).unwrap();
        let stderr = std::fs::File::create(log_dir.join("daemon.stderr")).unwrap();
        let child = command
            .env_remove("MEMOREE_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap();
        TestDaemon {
            _dir: None,
            child,
            endpoint,
            data_dir: data_dir.to_path_buf(),
            log_dir: log_dir.to_path_buf(),
            tls: None,
        }
    }

    /// Polls until a capabilities request succeeds; panics with the logs if the process
    /// exits or the deadline passes.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        let client = self.client_with(ClientTimeouts {
            connect: Duration::from_secs(1),
            ..ClientTimeouts::default()
        });
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the daemon exited with {status} before it was ready\n{}", self.logs());
            }
            let bound = match &self.endpoint {
                Endpoint::Unix(path) => path.exists(),
                Endpoint::Tcp(_) | Endpoint::Tls(_) => true,
            };
            if bound
                && let Ok(response) = client.exchange_json(&request("capabilities", json!({})))
                && response.ok
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon was not ready in time\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.log_dir.join(name)).unwrap_or_default();
        format!("stdout:\n{}\nstderr:\n{}", read("daemon.stdout"), read("daemon.stderr"))
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The Unix socket path (panics for a TCP daemon).
    pub fn socket(&self) -> &Path {
        match &self.endpoint {
            Endpoint::Unix(path) => path,
            other => panic!("{other} has no socket path"),
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn endpoint(&self) -> Endpoint {
        self.endpoint.clone()
    }

    pub fn endpoint_arg(&self) -> String {
        self.endpoint.to_string()
    }

    pub fn client(&self) -> SocketClient {
        self.client_with(ClientTimeouts::default())
    }

    pub fn client_with(&self, timeouts: ClientTimeouts) -> SocketClient {
        let client = SocketClient::new(self.endpoint()).with_timeouts(timeouts);
        match &self.tls {
            Some(connector) => client.with_tls(connector.clone()),
            None => client,
        }
    }

    /// A raw connection with a 10 s read timeout.
    pub fn raw(&self) -> UnixStream {
        let stream = UnixStream::connect(self.socket()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream
    }

    /// Sends `signal` to the daemon.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }

    /// Waits up to `limit` for the daemon to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        wait_child(&mut self.child, limit).unwrap_or_else(|| panic!("the daemon did not exit in time\n{}", self.logs()))
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Waits for `child` to exit, up to `limit`.
pub fn wait_child(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A request document without context.
pub fn request(op: &str, input: Value) -> Value {
    json!({"v": 1, "request_id": format!("req_{op}"), "op": op, "input": input})
}

/// The explicit context the tests write in.
pub fn context() -> Value {
    json!({"workspace_id": "wsp_daemon_tests", "project_id": "prj_daemon_tests"})
}

/// An `artifact.put` of a small text under `key`.
pub fn put(key: &str) -> Value {
    json!({
        "v": 1,
        "request_id": format!("req_{key}"),
        "op": "artifact.put",
        "idempotency_key": key,
        "context": context(),
        "input": {
            "kind": "note",
            "title": format!("note {key}"),
            "media_type": "text/plain",
            "content": {"type": "text", "data": format!("the body of {key}")},
        },
    })
}

/// Writes `body` as one frame.
pub fn send_frame(stream: &mut UnixStream, body: &[u8]) {
    stream.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    stream.write_all(body).unwrap();
}

/// Reads one response frame; `None` on a clean end of stream.
pub fn read_frame(stream: &mut UnixStream) -> Option<Response> {
    let mut header = [0u8; 4];
    match stream.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
        Err(e) => panic!("reading a frame header failed: {e}"),
    }
    let mut body = vec![0; u32::from_be_bytes(header) as usize];
    stream.read_exact(&mut body).unwrap();
    Some(serde_json::from_slice(&body).unwrap())
}

/// A private, empty `MEMOREE_HOME`. Dropping it stops a daemon that was autostarted in it.
pub struct DaemonHome {
    dir: tempfile::TempDir,
}

impl DaemonHome {
    pub fn new() -> DaemonHome {
        DaemonHome {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The `MEMOREE_HOME` value.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.path().join("data")
    }

    pub fn runtime_dir(&self) -> PathBuf {
        self.path().join("run")
    }

    /// The default socket of this home.
    pub fn socket(&self) -> PathBuf {
        self.runtime_dir().join("memoree.sock")
    }

    /// `unix://<default socket>`.
    pub fn default_endpoint(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// The binary with `args`, run in this home: every inherited `MEMOREE_*` variable is
    /// removed, `MEMOREE_HOME` is set, and the working directory is the home itself.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(BIN.as_ref(), args)
    }

    /// [`Self::command`] with another executable.
    pub fn command_of(&self, program: &std::path::Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MEMOREE_") {
                command.env_remove(&name);
            }
        }
        command
            .args(args)
            .env("MEMOREE_HOME", self.path())
            .current_dir(self.path())
            .stdin(Stdio::null());
        command
    }

    /// Runs the binary and returns its raw output.
    pub fn output(&self, command: &mut Command, stdin: Option<&[u8]>) -> Output {
        let mut child = command
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(bytes) = stdin {
            child.stdin.take().unwrap().write_all(bytes).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// Runs `memoree ARGS` and parses the one envelope on stdout.
    pub fn run_cli(&self, args: &[&str]) -> (ExitStatus, Value) {
        let output = self.output(&mut self.command(args), None);
        (output.status, envelope(&output))
    }

    /// Runs `memoree call` with `request` on stdin.
    pub fn call(&self, request: &Value) -> (ExitStatus, Value) {
        let body = serde_json::to_vec(request).unwrap();
        let output = self.output(&mut self.command(&["call"]), Some(&body));
        (output.status, envelope(&output))
    }
}

impl Default for DaemonHome {
    fn default() -> DaemonHome {
        DaemonHome::new()
    }
}

impl Drop for DaemonHome {
    fn drop(&mut self) {
        if self.socket().exists() {
            let _ = self.output(&mut self.command(&["daemon", "stop"]), None);
        }
    }
}
