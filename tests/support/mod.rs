//! Fixtures shared by the integration tests: a throw-away home with a project marker, and
//! helpers that run the `memoree` binary and check that stdout is exactly one envelope.
//!
//! Nothing here assumes which transport the binary uses; the tests only see envelopes.

#![allow(dead_code)]

pub mod daemon;
pub mod pki;
pub mod torture;

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// The workspace of the test project's marker.
pub const WORKSPACE: &str = "wsp_test";
/// The project of the test project's marker.
pub const PROJECT: &str = "prj_test";

/// Variables from the developer's environment that would change what the binary does.
pub const SCRUBBED_ENV: &[&str] = &[
    "MEMOREE_HOME",
    "MEMOREE_DATA_DIR",
    "MEMOREE_RUNTIME_DIR",
    "MEMOREE_CONFIG",
    "MEMOREE_SOCKET",
    "MEMOREE_ENDPOINT",
    "MEMOREE_NO_AUTOSTART",
    "MEMOREE_CONTEXT",
    "MEMOREE_ACTOR",
    "MEMOREE_COMPILER",
    "MEMOREE_TLS_CA",
    "MEMOREE_TLS_CERT",
    "MEMOREE_TLS_KEY",
    "MEMOREE_TLS_SERVER_NAME",
];

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_memoree");
/// The slim daemon executable autostart runs (built beside `memoree`).
pub const DAEMON_BIN: &str = env!("CARGO_BIN_EXE_memoree-daemon");

/// The path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memoree")
}

/// A temp directory holding `home/` (the `MEMOREE_HOME` of every spawned command),
/// `project/` (with a `.memoree.toml` marker, the default working directory) and
/// `outside/` (no marker anywhere above it, unless the machine has one in /tmp).
pub struct TempHome {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
}

impl TempHome {
    pub fn new() -> TempHome {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        let outside = root.join("outside");
        for path in [&home, &project, &outside] {
            std::fs::create_dir(path).unwrap();
        }
        std::fs::write(
            project.join(".memoree.toml"),
            format!(
                "schema = 1\nworkspace_id = \"{WORKSPACE}\"\nproject_id = \"{PROJECT}\"\nname = \"test\"\npins = []\n"
            ),
        )
        .unwrap();
        TempHome {
            _dir: dir,
            root,
            home,
            project,
            outside,
        }
    }

    /// A command for the binary with a clean environment, this home, and the project as
    /// working directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        cmd.env("MEMOREE_HOME", &self.home)
            .current_dir(&self.project)
            .args(args);
        cmd
    }

    /// Runs `memoree ARGS` in the project and returns its exit code and envelope.
    pub fn run_cli(&self, args: &[&str]) -> (i32, Value) {
        run(self.cmd(args))
    }

    /// Like [`TempHome::run_cli`] with `stdin` as standard input.
    pub fn run_cli_stdin(&self, args: &[&str], stdin: impl Into<Vec<u8>>) -> (i32, Value) {
        let mut cmd = self.cmd(args);
        cmd.write_stdin(stdin.into());
        run(cmd)
    }

    /// Like [`TempHome::run_cli`] from another working directory.
    pub fn run_cli_in(&self, dir: &Path, args: &[&str]) -> (i32, Value) {
        let mut cmd = self.cmd(args);
        cmd.current_dir(dir);
        run(cmd)
    }

    /// The default daemon socket of this home.
    pub fn socket(&self) -> PathBuf {
        self.home.join("run").join("memoree.sock")
    }

    /// Writes `config.toml` in the home.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.home.join("config.toml"), text).unwrap();
    }

    /// Writes a file under the root and returns its path.
    pub fn write_file(&self, relative: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

/// Runs a prepared command and returns its exit code and its single envelope.
pub fn run(mut cmd: Command) -> (i32, Value) {
    let output = cmd.output().unwrap();
    let envelope = envelope(&output);
    (output.status.code().unwrap_or(-1), envelope)
}

/// Asserts that stdout is exactly one compact JSON envelope plus a newline, and parses it.
pub fn envelope(output: &Output) -> Value {
    let stdout = String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "stdout is not exactly one line: {stdout:?}\nstderr: {stderr}"
    );
    let value: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"));
    assert_eq!(value["v"], 1, "{value}");
    assert!(value["ok"].is_boolean(), "{value}");
    assert!(value["warnings"].is_array(), "{value}");
    value
}

/// The `error.code` of a failure envelope.
pub fn code(envelope: &Value) -> &str {
    envelope["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not a failure: {envelope}"))
}

/// A string field of a success envelope's result.
pub fn field<'a>(envelope: &'a Value, key: &str) -> &'a str {
    assert_eq!(envelope["ok"], true, "{envelope}");
    envelope["result"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {envelope}"))
}

impl Drop for TempHome {
    /// Stops a daemon that a command autostarted in this home.
    fn drop(&mut self) {
        if self.socket().exists() {
            let _ = self.cmd(&["daemon", "stop"]).output();
        }
    }
}

/// Every file of an archive but its manifest (whose `created_at` differs), by path.
pub fn archive_files(root: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if entry.file_name() != "manifest.json" {
                let name = entry.path().strip_prefix(root).unwrap().display().to_string();
                out.push((name, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}
