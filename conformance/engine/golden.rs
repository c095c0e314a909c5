//! Golden transcripts (`golden/v1/<scenario>/NN.request.json` + `NN.response.json`):
//! replay the requests on a fresh store, normalize each response and compare it with the
//! recorded one exactly. With `UPDATE_GOLDEN=1` the response files are rewritten instead; a
//! request without a recorded response fails otherwise, and so does a response without a
//! request.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::catalog::{Catalog, SCENARIO_META};
use super::level::{self, Basis, Level};
use super::matcher::preview;
use super::normalize::{IdMap, normalize};
use super::schema::Checks;
use super::transport::{Outgoing, Transport};

/// Whether this run rewrites golden responses (`UPDATE_GOLDEN=1`).
pub fn update_requested() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// A scenario's `scenario.json`: what it shows and at which level.
#[derive(Debug, Clone)]
pub struct ScenarioMeta {
    pub description: String,
    pub level: Level,
    pub basis: Vec<String>,
    pub citations: Vec<Basis>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaFile {
    description: String,
    level: Level,
    basis: Vec<String>,
}

/// Reads and checks `<dir>/scenario.json`.
pub fn load_meta(catalog: &Catalog, dir: &str) -> Result<ScenarioMeta, String> {
    let path = format!("{dir}/{SCENARIO_META}");
    let bytes = catalog
        .get(&path)
        .ok_or_else(|| format!("{path}: missing; every scenario declares its level and basis there"))?;
    let file: MetaFile = serde_json::from_slice(bytes).map_err(|e| format!("{path}: {e}"))?;
    if file.description.trim().is_empty() {
        return Err(format!("{path}: description must not be empty"));
    }
    let citations = level::check(file.level, &file.basis).map_err(|e| format!("{path}: basis: {e}"))?;
    Ok(ScenarioMeta {
        description: file.description,
        level: file.level,
        basis: file.basis,
        citations,
    })
}

/// The numbered request/response files of a scenario.
#[derive(Debug, Default)]
struct Exchange<'a> {
    request: Option<&'a [u8]>,
    response: Option<&'a [u8]>,
}

fn exchanges<'a>(catalog: &'a Catalog, dir: &str) -> Result<BTreeMap<String, Exchange<'a>>, String> {
    let mut found: BTreeMap<String, Exchange<'a>> = BTreeMap::new();
    for (name, bytes) in catalog.files_in(dir) {
        if name == SCENARIO_META {
            continue;
        }
        let (number, slot) = if let Some(n) = name.strip_suffix(".request.json") {
            (n, true)
        } else if let Some(n) = name.strip_suffix(".response.json") {
            (n, false)
        } else {
            return Err(format!("{dir}/{name}: unexpected file in a golden scenario"));
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{dir}/{name}: golden files are named NN.request.json / NN.response.json"
            ));
        }
        let exchange = found.entry(number.to_owned()).or_default();
        if slot {
            exchange.request = Some(bytes);
        } else {
            exchange.response = Some(bytes);
        }
    }
    if found.is_empty() {
        return Err(format!("{dir}: the scenario has no requests"));
    }
    Ok(found)
}

fn parse_json(bytes: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("{what}: invalid JSON: {e}"))
}

/// Replays one scenario. A `memoree`-level transcript must match exactly after
/// normalization; a `v1`-level one may carry extra object keys (an implementation may add
/// fields, as Memoree adds extensions). With `update` (the checkout root), the response files
/// are rewritten instead.
pub fn run(
    catalog: &Catalog,
    dir: &str,
    level: Level,
    transport: &dyn Transport,
    checks: &Checks,
    update: Option<&Path>,
) -> Result<(), String> {
    let exchanges = exchanges(catalog, dir)?;
    let mut session = transport.start()?;
    let mut ids = IdMap::default();
    for (number, exchange) in &exchanges {
        let response_file = format!("{dir}/{number}.response.json");
        let Some(request_bytes) = exchange.request else {
            if let Some(root) = update {
                let stale = root.join(&response_file);
                std::fs::remove_file(&stale).map_err(|e| format!("{}: {e}", stale.display()))?;
                continue;
            }
            return Err(format!("{number}: a response is recorded without a request"));
        };
        let request = parse_json(request_bytes, &format!("{dir}/{number}.request.json"))?;
        let request = ids.resolve(&request).map_err(|e| format!("{number}: {e}"))?;
        let outgoing = Outgoing::Json(request);
        let response = session.exchange(&outgoing).map_err(|e| format!("{number}: {e}"))?;
        let request_ok = response.get("ok") == Some(&Value::Bool(true));
        checks
            .check(level, &outgoing, &response, request_ok)
            .map_err(|e| format!("{number}: {e}"))?;
        let actual = normalize(&response, &mut ids);
        if let Some(root) = update {
            write_if_changed(&root.join(&response_file), &actual)?;
            continue;
        }
        let Some(recorded_bytes) = exchange.response else {
            return Err(format!(
                "{number}: no recorded response; run with UPDATE_GOLDEN=1 and review the new file\n  got: {}",
                preview(&actual)
            ));
        };
        let recorded = parse_json(recorded_bytes, &response_file)?;
        let extra_keys_allowed = level == Level::V1;
        let report = differences(&recorded, &actual, "$", extra_keys_allowed);
        if !report.is_empty() {
            return Err(format!(
                "{number}: the normalized response differs from {response_file}\n{report}  (UPDATE_GOLDEN=1 rewrites it)"
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

/// One line per differing leaf: `at <path>: recorded <a>, got <b>`. With
/// `extra_keys_allowed`, keys only the actual object has are not differences.
fn differences(recorded: &Value, actual: &Value, path: &str, extra_keys_allowed: bool) -> String {
    match (recorded, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .map(|k| match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(x, y, &format!("{path}.{k}"), extra_keys_allowed),
                    (None, Some(_)) if extra_keys_allowed => String::new(),
                    (x, y) => line(path, k, x, y),
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .map(|(i, (x, y))| differences(x, y, &format!("{path}[{i}]"), extra_keys_allowed))
            .collect(),
        _ if recorded == actual => String::new(),
        _ => format!("  at {path}: recorded {}, got {}\n", preview(recorded), preview(actual)),
    }
}

fn line(path: &str, key: &str, recorded: Option<&Value>, actual: Option<&Value>) -> String {
    let show = |v: Option<&Value>| v.map_or_else(|| "(absent)".to_owned(), preview);
    format!("  at {path}.{key}: recorded {}, got {}\n", show(recorded), show(actual))
}
