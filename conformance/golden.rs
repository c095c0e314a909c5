//! Golden transcripts (`golden/v1/<scenario>/NN.request.json` + `NN.response.json`):
//! replay the requests on a fresh store, normalize each response and compare it with the
//! recorded one exactly. With `UPDATE_GOLDEN=1` the response files are rewritten instead; a
//! request without a recorded response fails otherwise, and so does a response without a
//! request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::matcher::preview;
use crate::normalize::{IdMap, normalize};
use crate::schema::Schemas;
use crate::transport::{Outgoing, Transport};

/// Whether this run rewrites golden responses (`UPDATE_GOLDEN=1`).
pub fn update_requested() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// The numbered request/response files of a scenario.
#[derive(Debug, Default)]
struct Exchange {
    request: Option<PathBuf>,
    response: Option<PathBuf>,
}

fn exchanges(dir: &Path) -> Result<BTreeMap<String, Exchange>, String> {
    let mut found: BTreeMap<String, Exchange> = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: cannot list: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let (number, slot) = if let Some(n) = name.strip_suffix(".request.json") {
            (n, true)
        } else if let Some(n) = name.strip_suffix(".response.json") {
            (n, false)
        } else {
            return Err(format!("{}: unexpected file in a golden scenario", path.display()));
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{}: golden files are named NN.request.json / NN.response.json",
                path.display()
            ));
        }
        let exchange = found.entry(number.to_owned()).or_default();
        if slot {
            exchange.request = Some(path);
        } else {
            exchange.response = Some(path);
        }
    }
    if found.is_empty() {
        return Err(format!("{}: the scenario has no requests", dir.display()));
    }
    Ok(found)
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))
}

/// Replays one scenario; when `update` is set, rewrites its response files.
pub fn run(dir: &Path, transport: &dyn Transport, schemas: Option<&Schemas>, update: bool) -> Result<(), String> {
    let exchanges = exchanges(dir)?;
    let mut session = transport.start()?;
    let mut ids = IdMap::default();
    for (number, exchange) in &exchanges {
        let Some(request_path) = &exchange.request else {
            if update {
                if let Some(stale) = &exchange.response {
                    std::fs::remove_file(stale).map_err(|e| format!("{}: {e}", stale.display()))?;
                }
                continue;
            }
            return Err(format!("{number}: a response is recorded without a request"));
        };
        let request = ids
            .resolve(&read_json(request_path)?)
            .map_err(|e| format!("{number}: {e}"))?;
        let outgoing = Outgoing::Json(request);
        let response = session.exchange(&outgoing).map_err(|e| format!("{number}: {e}"))?;
        if let Some(schemas) = schemas {
            let request_ok = response.get("ok") == Some(&Value::Bool(true));
            schemas
                .check(&outgoing, &response, request_ok)
                .map_err(|e| format!("{number}: {e}"))?;
        }
        crate::schema::validate_against_our_schemas(&outgoing, &response).map_err(|e| format!("{number}: {e}"))?;
        let actual = normalize(&response, &mut ids);
        let response_path = dir.join(format!("{number}.response.json"));
        if update {
            write_if_changed(&response_path, &actual)?;
            continue;
        }
        let Some(recorded_path) = &exchange.response else {
            return Err(format!(
                "{number}: no recorded response; run with UPDATE_GOLDEN=1 and review the new file\n  got: {}",
                preview(&actual)
            ));
        };
        let recorded = read_json(recorded_path)?;
        if recorded != actual {
            return Err(format!(
                "{number}: the normalized response differs from {}\n{}  (UPDATE_GOLDEN=1 rewrites it)",
                recorded_path.display(),
                differences(&recorded, &actual, "$")
            ));
        }
    }
    Ok(())
}

fn write_if_changed(path: &Path, value: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())? + "\n";
    if std::fs::read_to_string(path).ok().as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// One line per differing leaf: `at <path>: recorded <a>, got <b>`.
fn differences(recorded: &Value, actual: &Value, path: &str) -> String {
    match (recorded, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .map(|k| match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(x, y, &format!("{path}.{k}")),
                    (x, y) => line(path, k, x, y),
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .map(|(i, (x, y))| differences(x, y, &format!("{path}[{i}]")))
            .collect(),
        _ if recorded == actual => String::new(),
        _ => format!("  at {path}: recorded {}, got {}\n", preview(recorded), preview(actual)),
    }
}

fn line(path: &str, key: &str, recorded: Option<&Value>, actual: Option<&Value>) -> String {
    let show = |v: Option<&Value>| v.map_or_else(|| "(absent)".to_owned(), preview);
    format!("  at {path}.{key}: recorded {}, got {}\n", show(recorded), show(actual))
}
