//! Schema checks on every exchange ([`Checks`]). The reference bundle
//! (`../shared/spec/reference-schema-v1.json` beside the repository, or the kit's
//! `--reference-schema`) validates response envelopes and successful results of every trial,
//! and the requests and inputs of v1 trials (a memoree-level trial may send an extension). The project's own schemas (`spec/v1/schema/`) describe Memoree, extensions
//! included, so they validate every trial in tree but only `memoree`-level trials when the kit
//! checks another implementation: a v1 trial must fail only on what breaks v1.

use std::collections::HashMap;
use std::path::Path;

use jsonschema::Validator;
use serde_json::Value;

use super::level::Level;
use super::transport::Outgoing;

/// Which trials the project's own schemas check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OurSchemas {
    /// Every trial (the in-tree runner, which tests Memoree itself).
    Always,
    /// Only `memoree`-level trials (the kit, which may test another implementation).
    MemoreeLevelOnly,
}

/// The schema checks applied to every exchange of a trial.
pub struct Checks {
    pub reference: Option<Schemas>,
    /// The reference's later bundle (`reference-schema-v1-at-0.7.1.json`): it checks the
    /// exchanges of operations the v0.2.0 bundle does not know (`citation.get`), whose
    /// responses may carry a later error code (`CITATION_ERROR`).
    pub later: Option<Schemas>,
    pub ours: OurSchemas,
    /// Whether a v1 case's expectations of `error.message` and `error.hint` are checked.
    /// Protocol v1 makes the code the contract and the message "for explanation", so the
    /// kit at `--level v1` checks only that a message is a string; our own suite and the
    /// kit at `--level all` check the words too (see DIVERGENCES "Error message and hint
    /// wording").
    pub wording: bool,
}

impl Checks {
    /// Checks one exchange of a trial at `level`.
    pub fn check(
        &self,
        level: Level,
        request: &Outgoing,
        response: &Value,
        request_meant_valid: bool,
    ) -> Result<(), String> {
        // A memoree-level trial may send what only Memoree (or the reference's later
        // versions) accepts; its response must still satisfy the reference.
        let check_input = request_meant_valid && level != Level::Memoree;
        let op = request.op();
        // The later bundle checks what the v0.2.0 one does not know, and every exchange of a
        // v1.7 trial (a v0.7.1 client parses those responses).
        let later = self.later.as_ref().filter(|later| {
            op.is_some_and(|op| {
                later.knows(op) && (level == Level::V17 || !self.reference.as_ref().is_some_and(|r| r.knows(op)))
            })
        });
        match (later, &self.reference) {
            (Some(later), _) => later.check(request, response, request_meant_valid)?,
            (None, Some(reference)) => reference.check(request, response, check_input)?,
            (None, None) => {}
        }
        if self.ours == OurSchemas::Always || level == Level::Memoree {
            validate_against_our_schemas(request, response)?;
        }
        Ok(())
    }
}

/// The compiled reference schema bundle.
pub struct Schemas {
    request: Validator,
    response: Validator,
    inputs: HashMap<String, Validator>,
    results: HashMap<String, Validator>,
}

fn compile(schema: &Value, what: &str) -> Result<Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("reference schema {what} does not compile: {e}"))
}

fn compile_map(bundle: &Value, key: &str, strict: bool) -> Result<HashMap<String, Validator>, String> {
    let map = bundle
        .get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("reference schema bundle has no `{key}` object"))?;
    let mut out = HashMap::new();
    for (op, schema) in map {
        match compile(schema, &format!("{key}.{op}")) {
            Ok(validator) => {
                out.insert(op.clone(), validator);
            }
            Err(message) if strict => return Err(message),
            Err(_) => {}
        }
    }
    Ok(out)
}

/// Loads the bundle at `path`; `Ok(None)` when it is absent.
pub fn load(path: &Path) -> Result<Option<Schemas>, String> {
    load_with(path, true)
}

/// [`load`] for the reference's later bundle, some of whose schemas do not compile (v0.7.1's
/// `feedback.record` result lists `commit_seq` twice under `required`): an operation whose
/// input or result schema does not compile is left out, so it is not checked by that bundle.
pub fn load_later(path: &Path) -> Result<Option<Schemas>, String> {
    load_with(path, false)
}

fn load_with(path: &Path, strict: bool) -> Result<Option<Schemas>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bundle: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let part = |key: &str| {
        bundle
            .get(key)
            .ok_or_else(|| format!("reference schema bundle has no `{key}`"))
    };
    Ok(Some(Schemas {
        request: compile(part("request")?, "request")?,
        response: compile(part("response")?, "response")?,
        inputs: compile_map(&bundle, "operation_inputs", strict)?,
        results: compile_map(&bundle, "result_types", strict)?,
    }))
}

fn validate(validator: &Validator, instance: &Value, what: &str) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(instance)
        .take(5)
        .map(|e| {
            let text = e.to_string();
            let text = match text.char_indices().nth(300) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            };
            format!("at `{}`: {text}", e.instance_path())
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what} violates the reference schema:\n    {}",
            problems.join("\n    ")
        ))
    }
}

impl Schemas {
    /// Whether the bundle describes the operation `op` (its input and result schemas).
    pub fn knows(&self, op: &str) -> bool {
        self.inputs.contains_key(op) && self.results.contains_key(op)
    }

    /// Checks one exchange. Requests (and their inputs) are checked only when `check_input`
    /// (a v1 trial's request meant to be valid) and they name an operation the reference
    /// knows; every response envelope is checked, and a successful result against its
    /// operation's result type.
    pub fn check(&self, request: &Outgoing, response: &Value, check_input: bool) -> Result<(), String> {
        validate(&self.response, response, "the response envelope")?;
        let Outgoing::Json(request) = request else {
            return Ok(());
        };
        let Some(op) = request.get("op").and_then(Value::as_str) else {
            return Ok(());
        };
        if check_input && let Some(input_schema) = self.inputs.get(op) {
            validate(&self.request, request, "the request")?;
            let input = request.get("input").unwrap_or(&Value::Null);
            validate(input_schema, input, &format!("the {op} input"))?;
        }
        if response.get("ok") == Some(&Value::Bool(true))
            && let (Some(result_schema), Some(result)) = (self.results.get(op), response.get("result"))
        {
            validate(result_schema, result, &format!("the {op} result"))?;
        }
        Ok(())
    }
}

/// Checks every response against the project's own schemas (`spec/v1/schema/`): the
/// envelope always, and the result of a successful response against its operation's result
/// schema.
pub fn validate_against_our_schemas(request: &Outgoing, response: &Value) -> Result<(), String> {
    use memoree::protocol::{Operation, schema};
    schema::validate_response(response).map_err(|v| format!("response violates spec/v1/schema/response.json: {v}"))?;
    let op = request.op().and_then(Operation::from_wire_name);
    if let (Some(op), Some(true), Some(result)) =
        (op, response.get("ok").and_then(Value::as_bool), response.get("result"))
    {
        schema::validate_result(op, result)
            .map_err(|v| format!("{op} result violates spec/v1/schema/results/{op}.json: {v}"))?;
    }
    Ok(())
}
