//! Shared fixtures: a throw-away `MEMOREE_HOME` and a helper that runs the real binary in
//! it. Daemon-specific fixtures live in [`daemon`].

#![allow(dead_code)]

pub mod daemon;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};

use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_memoree");

/// A private, empty `MEMOREE_HOME`. Dropping it stops a daemon that was autostarted in it.
pub struct TempHome {
    dir: tempfile::TempDir,
}

impl TempHome {
    pub fn new() -> TempHome {
        TempHome {
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
        let mut command = Command::new(BIN);
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

impl Default for TempHome {
    fn default() -> TempHome {
        TempHome::new()
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        if self.socket().exists() {
            let _ = self.output(&mut self.command(&["daemon", "stop"]), None);
        }
    }
}

/// The single JSON envelope a command printed.
pub fn envelope(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON envelope ({e}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}
