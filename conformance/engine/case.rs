//! The case file model (`spec/v1/cases/**.json`, format in `spec/README.md`), its loader
//! with path-aware errors, request rendering (`{{name}}` substitution and `$gen`
//! generators) and the step loop that runs one case on one fresh store.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use super::level::{self, Basis, Level};
use super::matcher;
use super::schema::Checks;
use super::transport::{KNOWN_TRANSPORTS, Outgoing, Transport};

/// Values captured by earlier steps (plus the runner's predefined ones), by name.
pub type Vars = BTreeMap<String, Value>;

/// The variable every case sees before its first step: the `request_id` a transport
/// reports when a request is too broken to carry one.
pub const FALLBACK_REQUEST_ID_VAR: &str = "fallback_request_id";

/// The variable naming a fresh, empty directory (an absolute path) that the runner creates
/// for each trial and removes, with everything in it, when the trial ends. Cases use it to
/// name paths that must not exist yet, e.g. a `backup.create` destination.
pub const TMPDIR_VAR: &str = "tmpdir";

/// One parsed case file.
#[derive(Debug)]
pub struct Case {
    pub description: String,
    pub level: Level,
    /// The `basis` entries as written.
    pub basis: Vec<String>,
    /// The same, parsed.
    pub citations: Vec<Basis>,
    /// The transports the case applies to; `None` means all of them.
    pub transports: Option<Vec<String>>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    description: String,
    level: Level,
    basis: Vec<String>,
    #[serde(default)]
    transports: Option<Vec<String>>,
    steps: Vec<Value>,
}

/// One exchange of a case: a request (or raw text), its expectation and captures.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub request: Option<Value>,
    #[serde(rename = "$raw", default)]
    pub raw: Option<String>,
    /// Sends only a frame header declaring this many body bytes (frame transports only).
    #[serde(rename = "$frame_header", default)]
    pub frame_header: Option<u32>,
    /// Sends the request on the connection kept open by the previous such step (frame
    /// transports only).
    #[serde(rename = "$same_connection", default)]
    pub same_connection: bool,
    /// Opens this many idle connections, held until the case ends (frame transports only).
    #[serde(rename = "$hold_connections", default)]
    pub hold_connections: Option<u32>,
    pub expect: Value,
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
}

/// Parses and checks a case file; every error names the file and the step.
pub fn load(path: &str, bytes: &[u8]) -> Result<Case, String> {
    let at = |what: String| format!("{path}: {what}");
    let file: CaseFile = serde_json::from_slice(bytes).map_err(|e| at(format!("invalid case file: {e}")))?;
    if file.description.trim().is_empty() {
        return Err(at("description must not be empty".to_owned()));
    }
    let citations = level::check(file.level, &file.basis).map_err(|e| at(format!("basis: {e}")))?;
    if file.steps.is_empty() {
        return Err(at("steps must not be empty".to_owned()));
    }
    for name in file.transports.iter().flatten() {
        if !KNOWN_TRANSPORTS.contains(&name.as_str()) {
            return Err(at(format!(
                "transports: unknown transport {name:?} (known: {KNOWN_TRANSPORTS:?})"
            )));
        }
    }
    let mut steps = Vec::with_capacity(file.steps.len());
    for (index, value) in file.steps.into_iter().enumerate() {
        let step: Step = serde_json::from_value(value).map_err(|e| at(format!("steps[{index}]: {e}")))?;
        let kinds = [
            step.request.is_some(),
            step.raw.is_some(),
            step.frame_header.is_some(),
            step.hold_connections.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(at(format!(
                "steps[{index}]: needs exactly one of `request`, `$raw`, `$frame_header` and `$hold_connections`"
            )));
        }
        if step.same_connection && (step.frame_header.is_some() || step.hold_connections.is_some()) {
            return Err(at(format!(
                "steps[{index}]: $same_connection goes with `request` or `$raw` only"
            )));
        }
        if !step.expect.is_object() {
            return Err(at(format!("steps[{index}].expect: must be an object")));
        }
        steps.push(step);
    }
    Ok(Case {
        description: file.description,
        level: file.level,
        basis: file.basis,
        citations,
        transports: file.transports,
        steps,
    })
}

impl Case {
    /// Whether the case runs on the transport `name`. A running daemon (`endpoint`) speaks
    /// the same frames as a started one, so it takes the cases listed for `daemon`.
    pub fn applies_to(&self, name: &str) -> bool {
        let name = if name == "endpoint" { "daemon" } else { name };
        self.transports
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }

    /// Whether no step's outcome can depend on what the store already holds: every step is a
    /// discovery operation (`capabilities`, `schema`, `instructions`) or expects a failure
    /// that the case provokes without writing anything first. Only such cases run against a
    /// shared, running daemon (`--endpoint`).
    pub fn is_store_independent(&self) -> bool {
        self.steps.iter().all(|step| {
            let op = step.request.as_ref().and_then(|r| r.get("op")).and_then(Value::as_str);
            step.expect.get("ok") == Some(&Value::Bool(false))
                || matches!(op, Some("capabilities" | "schema" | "instructions"))
        })
    }

    /// Runs every step in order on a fresh store of `transport`.
    pub fn run(&self, transport: &dyn Transport, checks: &Checks) -> Result<(), String> {
        // Declared before the session, so the session (and its store) goes first on drop.
        let tmpdir = tempfile::Builder::new()
            .prefix("memoree-conformance-tmpdir-")
            .tempdir()
            .map_err(|e| format!("cannot create the case's {{{{{TMPDIR_VAR}}}}}: {e}"))?;
        let tmpdir_path = std::path::absolute(tmpdir.path()).map_err(|e| format!("{{{{{TMPDIR_VAR}}}}}: {e}"))?;
        let mut session = transport.start()?;
        let mut vars = Vars::new();
        vars.insert(
            FALLBACK_REQUEST_ID_VAR.to_owned(),
            Value::String(transport.fallback_request_id().to_owned()),
        );
        let tmpdir_text = tmpdir_path
            .to_str()
            .ok_or_else(|| format!("{{{{{TMPDIR_VAR}}}}} is not UTF-8: {}", tmpdir_path.display()))?;
        vars.insert(TMPDIR_VAR.to_owned(), Value::String(tmpdir_text.to_owned()));
        for (index, step) in self.steps.iter().enumerate() {
            if let Some(count) = step.hold_connections {
                session
                    .hold_connections(count)
                    .map_err(|e| format!("step {index} ($hold_connections): {e}"))?;
                let held = serde_json::json!({ "held": count });
                let mismatches = matcher::check(&step.expect, &held, &vars);
                if !mismatches.is_empty() {
                    return Err(format!("step {index} ($hold_connections): {}", mismatches.join("; ")));
                }
                continue;
            }
            let outgoing = match (&step.request, &step.raw, step.frame_header) {
                (Some(template), _, _) => {
                    Outgoing::Json(render(template, &vars).map_err(|e| format!("step {index}: {e}"))?)
                }
                (None, Some(raw), _) => Outgoing::Raw(raw.clone()),
                (None, None, Some(length)) => Outgoing::FrameHeader(length),
                (None, None, None) => unreachable!("checked by load"),
            };
            let kind = match outgoing {
                Outgoing::FrameHeader(_) => "$frame_header",
                _ => "$raw",
            };
            let label = format!("step {index} ({})", outgoing.op().unwrap_or(kind));
            let response = if step.same_connection {
                session.exchange_kept(&outgoing)
            } else {
                session.exchange(&outgoing)
            }
            .map_err(|e| format!("{label}: {e}"))?;
            let report = |problem: &str| {
                let shown = if response.is_null() {
                    "null (the daemon closed the connection without a reply)".to_owned()
                } else {
                    matcher::preview(&response)
                };
                format!(
                    "{label}: {problem}\n  request:  {}\n  response: {shown}",
                    matcher::preview(&outgoing.to_value())
                )
            };
            let expect = match self.level == Level::V1 && !checks.wording {
                true => without_wording(&step.expect),
                false => std::borrow::Cow::Borrowed(&step.expect),
            };
            let mismatches = matcher::check(&expect, &response, &vars);
            if !mismatches.is_empty() {
                return Err(report(&format!(
                    "response does not match\n    {}",
                    mismatches.join("\n    ")
                )));
            }
            let expects_failure = step.expect.get("ok") == Some(&Value::Bool(false));
            // A `$frame_header` step may legitimately get no envelope at all (`null`).
            if !response.is_null() {
                checks
                    .check(self.level, &outgoing, &response, !expects_failure)
                    .map_err(|e| report(&e))?;
            }
            for (name, path) in &step.capture {
                let value =
                    lookup(&response, path).ok_or_else(|| report(&format!("capture {name}: no value at {path}")))?;
                vars.insert(name.clone(), value.clone());
            }
        }
        Ok(())
    }
}

/// `expect` with its `error.message` expectation reduced to "a string" and its `error.hint`
/// expectation dropped: what a v1 trial checks when wording is not checked.
fn without_wording(expect: &Value) -> std::borrow::Cow<'_, Value> {
    let Some(error) = expect.get("error").and_then(Value::as_object) else {
        return std::borrow::Cow::Borrowed(expect);
    };
    if !error.contains_key("message") && !error.contains_key("hint") {
        return std::borrow::Cow::Borrowed(expect);
    }
    let mut relaxed = expect.clone();
    if let Some(error) = relaxed.get_mut("error").and_then(Value::as_object_mut) {
        if error.contains_key("message") {
            error.insert("message".to_owned(), Value::from("$string"));
        }
        error.remove("hint");
    }
    std::borrow::Cow::Owned(relaxed)
}

/// Follows a dotted path (`result.revisions.0.revision_id`) into a JSON value.
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |current, segment| match current {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => items.get(segment.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Builds a request from its template: `{{name}}` substitution and `$gen` generators.
pub fn render(template: &Value, vars: &Vars) -> Result<Value, String> {
    Ok(match template {
        Value::String(text) => match whole_variable(text) {
            Some(name) => variable(vars, name)?.clone(),
            None => Value::String(interpolate(text, vars)?),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, vars)).collect::<Result<_, _>>()?),
        Value::Object(map) if map.contains_key("$gen") => generate(map)?,
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), render(v, vars)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// The name in a string that is exactly `{{name}}`.
pub fn whole_variable(text: &str) -> Option<&str> {
    let name = text.strip_prefix("{{")?.strip_suffix("}}")?;
    (!name.is_empty() && !name.contains('{') && !name.contains('}')).then_some(name)
}

fn variable<'a>(vars: &'a Vars, name: &str) -> Result<&'a Value, String> {
    vars.get(name)
        .ok_or_else(|| format!("{{{{{name}}}}} is not a captured variable"))
}

/// Replaces every `{{name}}` inside `text` with the captured value's text.
pub fn interpolate(text: &str, vars: &Vars) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else { break };
        out.push_str(&rest[..start]);
        match variable(vars, &rest[start + 2..start + end])? {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Expands `{"$gen": "repeat", "text", "count"}` and `{"$gen": "base64_repeat", "byte", "count"}`.
fn generate(spec: &serde_json::Map<String, Value>) -> Result<Value, String> {
    let field = |name: &str| spec.get(name).ok_or_else(|| format!("$gen needs `{name}`: {spec:?}"));
    let count = field("count")?
        .as_u64()
        .ok_or("$gen count must be a non-negative integer")? as usize;
    let expect_keys = |keys: &[&str]| match spec.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(extra) => Err(format!("$gen does not take `{extra}`")),
        None => Ok(()),
    };
    match spec["$gen"].as_str() {
        Some("repeat") => {
            expect_keys(&["$gen", "text", "count"])?;
            let text = field("text")?.as_str().ok_or("$gen repeat text must be a string")?;
            Ok(Value::String(text.repeat(count)))
        }
        Some("base64_repeat") => {
            expect_keys(&["$gen", "byte", "count"])?;
            let byte = field("byte")?
                .as_u64()
                .and_then(|b| u8::try_from(b).ok())
                .ok_or("$gen base64_repeat byte must be 0..=255")?;
            Ok(Value::String(
                base64::engine::general_purpose::STANDARD.encode(vec![byte; count]),
            ))
        }
        other => Err(format!("unknown $gen generator {other:?}")),
    }
}
