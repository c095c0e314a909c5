//! A second, independent MCP client: the official Python SDK (`mcp` from PyPI) runs
//! `tests/mcp_python/session.py` against `memoree mcp`, once over `server/discover` (the
//! SDK's default) and once over `initialize`.
//!
//! The interpreter is `MEMOREE_MCP_PYTHON`, else `target/mcp-venv/bin/python`. When that venv
//! is missing or lacks the SDK, the test provisions it itself (`python3 -m venv` and `pip
//! install -r tests/mcp_python/requirements.txt`, no root needed); `.ci/run` does the same
//! beforehand. When it cannot (no `python3`, no venv module, no package index), the test reports
//! itself skipped (`memoree::testkit::parts`), and fails under CI. A passing run leaves
//! `target/mcp-python.ok`, which `.ci/run` checks.

use std::path::{Path, PathBuf};
use std::process::Command;

use memoree::testkit::parts::{self, Part};

use crate::support::{BIN, SCRUBBED_ENV, TempHome};

/// The SDK's interpreter, provisioned into `target/mcp-venv` when needed, or why there is none.
pub(crate) fn interpreter() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("MEMOREE_MCP_PYTHON") {
        return Ok(PathBuf::from(path));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("target/mcp-venv");
    let python = venv.join("bin/python");
    let has_sdk = |python: &Path| {
        Command::new(python)
            .args(["-c", "import mcp, jsonschema"])
            .output()
            .is_ok_and(|output| output.status.success())
    };
    if has_sdk(&python) {
        return Ok(python);
    }
    let run = |program: &Path, args: &[&std::ffi::OsStr]| -> Result<(), String> {
        let output = Command::new(program)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().last().unwrap_or_default();
            Err(format!(
                "{} {args:?} failed ({}): {last}",
                program.display(),
                output.status
            ))
        }
    };
    run(
        Path::new("python3"),
        &["-m".as_ref(), "venv".as_ref(), venv.as_os_str()],
    )?;
    let requirements = root.join("tests/mcp_python/requirements.txt");
    run(
        &venv.join("bin/pip"),
        &[
            "install".as_ref(),
            "--quiet".as_ref(),
            "--disable-pip-version-check".as_ref(),
            "-r".as_ref(),
            requirements.as_os_str(),
        ],
    )?;
    if has_sdk(&python) {
        Ok(python)
    } else {
        Err(format!("{} cannot import mcp after pip install", python.display()))
    }
}

#[test]
fn the_official_python_sdk_runs_the_same_session_against_memoree_mcp() {
    let python = match interpreter() {
        Ok(python) => python,
        Err(why) => return parts::skip(Part::PythonMcp, &parts::current_test(), &why),
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
