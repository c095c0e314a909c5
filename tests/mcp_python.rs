//! A second, independent MCP client: the official Python SDK (`mcp` from PyPI) runs
//! `tests/mcp_python/session.py` against `memoree mcp`, once over `server/discover` (the
//! SDK's default) and once over `initialize`.
//!
//! The interpreter is `MEMOREE_MCP_PYTHON`, else `target/mcp-venv/bin/python` (which
//! `.ci/run` creates from `tests/mcp_python/requirements.txt`). Under CI (`CI` set) a missing
//! interpreter fails the test; elsewhere the test says loudly that it did not run. A passing
//! run leaves `target/mcp-python.ok`, which `.ci/run` checks.

use std::path::PathBuf;
use std::process::Command;

use crate::support::{BIN, SCRUBBED_ENV, TempHome};

fn interpreter() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MEMOREE_MCP_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python");
    venv.exists().then_some(venv)
}

#[test]
#[allow(clippy::print_stderr)]
fn the_official_python_sdk_runs_the_same_session_against_memoree_mcp() {
    let Some(python) = interpreter() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the Python MCP SDK session: create target/mcp-venv (see .ci/run) or set MEMOREE_MCP_PYTHON"
        );
        eprintln!(
            "NOT RUN: the Python MCP SDK session needs target/mcp-venv (python3 -m venv target/mcp-venv && \
             target/mcp-venv/bin/pip install -r tests/mcp_python/requirements.txt) or MEMOREE_MCP_PYTHON"
        );
        return;
    };
    let home = TempHome::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python/session.py");
    let mut command = Command::new(&python);
    for name in SCRUBBED_ENV {
        command.env_remove(name);
    }
    let output = command
        .arg(&script)
        .arg(BIN)
        .arg(&home.home)
        .arg(&home.project)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python session failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.contains("checks passed"), "{stdout}\n{stderr}");
    let marker = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-python.ok");
    std::fs::write(marker, format!("{summary}\n")).unwrap();
}
