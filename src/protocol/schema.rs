//! The hand-written JSON Schemas of protocol v1 (`spec/v1/schema/`), embedded at compile time,
//! the bundle the `schema` operation returns, and validation against them.
//!
//! The schema files are the contract; nothing here derives them from Rust types. Validators
//! are compiled once on first use. Validation checks shape only: types, enums, integer
//! ranges, required and unknown fields. Blank strings, byte lengths, content size, base64
//! decoding, timestamps and cross-field rules stay with the service.

use std::fmt;
use std::sync::{LazyLock, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value, json};

use super::Operation;

/// Version of the bundle layout returned by the `schema` operation.
pub const SCHEMA_BUNDLE_VERSION: u32 = 1;

/// Why a value does not match its schema: the offending field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Field path relative to the validated value, e.g. `limit`, `evidence[0].start_byte`
    /// or `context.workspace_id`; `(root)` is the value itself.
    pub path: String,
    /// What is wrong, e.g. `500 is greater than the maximum of 100`.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for SchemaViolation {}

/// The path used for a violation of the validated value itself.
pub const ROOT_PATH: &str = "(root)";

/// The embedded text of one operation's input and result schemas.
struct OperationSources {
    name: &'static str,
    input: &'static str,
    result: &'static str,
}

macro_rules! schema_text {
    ($file:expr) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/v1/schema/", $file))
    };
}

macro_rules! op_sources {
    ($name:literal) => {
        OperationSources {
            name: $name,
            input: schema_text!(concat!("inputs/", $name, ".json")),
            result: schema_text!(concat!("results/", $name, ".json")),
        }
    };
}

const REQUEST_SOURCE: &str = schema_text!("request.json");
const RESPONSE_SOURCE: &str = schema_text!("response.json");
const EVIDENCE_LOCATOR_SOURCE: &str = schema_text!("supporting/evidence_locator.json");

fn sources(op: Operation) -> OperationSources {
    match op {
        Operation::ContextResolve => op_sources!("context.resolve"),
        Operation::Capabilities => op_sources!("capabilities"),
        Operation::Instructions => op_sources!("instructions"),
        Operation::Schema => op_sources!("schema"),
        Operation::ArtifactPut => op_sources!("artifact.put"),
        Operation::ArtifactGet => op_sources!("artifact.get"),
        Operation::ArtifactRevise => op_sources!("artifact.revise"),
        Operation::ArtifactHistory => op_sources!("artifact.history"),
        Operation::ArtifactForget => op_sources!("artifact.forget"),
        Operation::ClaimAssert => op_sources!("claim.assert"),
        Operation::ClaimGet => op_sources!("claim.get"),
        Operation::ClaimHistory => op_sources!("claim.history"),
        Operation::ClaimRevise => op_sources!("claim.revise"),
        Operation::ClaimRetract => op_sources!("claim.retract"),
        Operation::RelationPut => op_sources!("relation.put"),
        Operation::RelationList => op_sources!("relation.list"),
        Operation::ConflictList => op_sources!("conflict.list"),
        Operation::Search => op_sources!("search"),
        Operation::MemoryRecall => op_sources!("memory.recall"),
        Operation::ContextBuild => op_sources!("context.build"),
        Operation::Doctor => op_sources!("doctor"),
        Operation::Verify => op_sources!("verify"),
        Operation::BackupCreate => op_sources!("backup.create"),
        Operation::Reindex => op_sources!("reindex"),
        Operation::ArtifactList => op_sources!("artifact.list"),
        Operation::ClaimList => op_sources!("claim.list"),
        Operation::EventList => op_sources!("event.list"),
        Operation::ArtifactPurge => op_sources!("artifact.purge"),
        Operation::ClaimPurge => op_sources!("claim.purge"),
        Operation::Import => op_sources!("import"),
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("embedded schema files are valid JSON (see tests)")
}

/// Compiles a schema. Formats (`date-time`) are asserted only when `formats` is set: the
/// service parses input timestamps itself, while our own results must be well formed.
fn compile(schema: &Value, formats: bool) -> Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(formats)
        .build(schema)
        .expect("embedded schemas compile (see tests)")
}

/// Each validator is compiled on its first use, so a daemon holds only those its requests
/// need (result and response validators serve the tests).
struct Compiled {
    request: OnceLock<Validator>,
    response: OnceLock<Validator>,
    /// Indexed like `Operation::ALL`.
    inputs: Vec<OnceLock<Validator>>,
    results: Vec<OnceLock<Validator>>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    request: OnceLock::new(),
    response: OnceLock::new(),
    inputs: Operation::ALL.iter().map(|_| OnceLock::new()).collect(),
    results: Operation::ALL.iter().map(|_| OnceLock::new()).collect(),
});

static BUNDLE: LazyLock<Value> = LazyLock::new(|| {
    let per_op = |pick: fn(&OperationSources) -> &'static str| {
        let entries = Operation::ALL.iter().map(|&op| {
            let files = sources(op);
            (files.name.to_owned(), parse(pick(&files)))
        });
        Value::Object(entries.collect::<Map<_, _>>())
    };
    json!({
        "schema_bundle_version": SCHEMA_BUNDLE_VERSION,
        "protocol_version": super::PROTOCOL_VERSION,
        "request": parse(REQUEST_SOURCE),
        "response": parse(RESPONSE_SOURCE),
        "operation_inputs": per_op(|files| files.input),
        "result_types": per_op(|files| files.result),
        "supporting_types": { "evidence_locator": parse(EVIDENCE_LOCATOR_SOURCE) },
    })
});

fn op_index(op: Operation) -> usize {
    Operation::ALL
        .iter()
        .position(|&candidate| candidate == op)
        .expect("ALL lists every op")
}

/// The `schema` operation result: every schema of protocol v1 as independent roots.
pub fn bundle() -> &'static Value {
    &BUNDLE
}

/// The text of `op`'s input schema file (`inputs/<op>.json`), for derived schemas such as
/// the MCP tools', without building the whole [`bundle`].
pub fn input_schema_text(op: Operation) -> &'static str {
    sources(op).input
}

/// The text of `op`'s result schema file (`results/<op>.json`).
pub fn result_schema_text(op: Operation) -> &'static str {
    sources(op).result
}

/// The text of the request envelope schema (`request.json`).
pub fn request_schema_text() -> &'static str {
    REQUEST_SOURCE
}

/// Checks a request envelope's shape. `input` is not inspected; see [`validate_input`].
pub fn validate_request(envelope: &Value) -> Result<(), SchemaViolation> {
    check(
        COMPILED.request.get_or_init(|| compile(&parse(REQUEST_SOURCE), false)),
        envelope,
    )
}

/// Checks a response envelope's shape. `result` is not inspected; see [`validate_result`].
pub fn validate_response(envelope: &Value) -> Result<(), SchemaViolation> {
    check(
        COMPILED.response.get_or_init(|| compile(&parse(RESPONSE_SOURCE), true)),
        envelope,
    )
}

/// Checks an operation input. Paths in the violation are relative to the input.
pub fn validate_input(op: Operation, input: &Value) -> Result<(), SchemaViolation> {
    let validator = COMPILED.inputs[op_index(op)].get_or_init(|| compile(&parse(sources(op).input), false));
    check(validator, input)
}

/// Checks an operation result against what this implementation promises to return.
pub fn validate_result(op: Operation, result: &Value) -> Result<(), SchemaViolation> {
    let validator = COMPILED.results[op_index(op)].get_or_init(|| compile(&parse(sources(op).result), true));
    check(validator, result)
}

fn check(validator: &Validator, value: &Value) -> Result<(), SchemaViolation> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut candidates = Vec::new();
    for error in validator.iter_errors(value) {
        collect(&error, &mut candidates);
    }
    let best = candidates.into_iter().min_by(|a, b| a.key().cmp(&b.key()));
    Err(best.map_or_else(
        || SchemaViolation {
            path: ROOT_PATH.to_owned(),
            message: "invalid value".to_owned(),
        },
        |candidate| candidate.violation,
    ))
}

/// One reportable error with the facts used to rank it.
struct Candidate {
    /// Lower is more useful: unknown fields, then missing fields, then wrong types, ...
    rank: u8,
    depth: usize,
    violation: SchemaViolation,
}

impl Candidate {
    /// Most useful first, deepest first, then by path and message so the choice is stable.
    fn key(&self) -> (u8, std::cmp::Reverse<usize>, &str, &str) {
        let v = &self.violation;
        (
            self.rank,
            std::cmp::Reverse(self.depth),
            v.path.as_str(),
            v.message.as_str(),
        )
    }
}

/// Turns one validator error into candidates, looking inside `anyOf`/`oneOf` failures for
/// the branch the value was evidently meant to match.
fn collect(error: &ValidationError<'_>, out: &mut Vec<Candidate>) {
    let branches = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => context,
        _ => {
            out.push(candidate(error));
            return;
        }
    };
    let here = error.instance_path();
    let meant: Vec<_> = branches
        .iter()
        .filter(|errors| !errors.iter().any(|e| rules_out_branch(e, here)))
        .collect();
    if meant.is_empty() {
        out.push(Candidate {
            rank: 6,
            depth: here.iter().count(),
            violation: SchemaViolation {
                path: field_path(here),
                message: no_branch_message(error.instance(), branches),
            },
        });
    } else {
        for error in meant.into_iter().flatten() {
            collect(error, out);
        }
    }
}

/// A branch whose type (or `const` tag one level down) does not match was not the one the
/// caller meant; its other complaints would only confuse.
fn rules_out_branch(error: &ValidationError<'_>, combinator: &jsonschema::paths::Location) -> bool {
    let depth = |location: &jsonschema::paths::Location| location.iter().count();
    match error.kind() {
        ValidationErrorKind::Type { .. } => error.instance_path() == combinator,
        ValidationErrorKind::Constant { .. } => {
            let path = error.instance_path();
            depth(path) == depth(combinator) + 1 && path.as_str().starts_with(&format!("{}/", combinator.as_str()))
        }
        _ => false,
    }
}

fn no_branch_message(instance: &Value, branches: &[Vec<ValidationError<'static>>]) -> String {
    let mut expected: Vec<String> = Vec::new();
    for error in branches.iter().flatten() {
        let names = match error.kind() {
            ValidationErrorKind::Type { kind } => type_names(kind),
            ValidationErrorKind::Constant { expected_value } => vec![expected_value.to_string()],
            _ => Vec::new(),
        };
        for name in names {
            if !expected.contains(&name) {
                expected.push(name);
            }
        }
    }
    if expected.is_empty() {
        format!("{} does not match any allowed form", preview(instance))
    } else {
        format!("expected {}, found {}", expected.join(" or "), json_type(instance))
    }
}

fn candidate(error: &ValidationError<'_>) -> Candidate {
    let instance = error.instance();
    let (rank, message) = match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let mut names = unexpected.clone();
            names.sort();
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            let noun = if names.len() == 1 { "field" } else { "fields" };
            (0, format!("unknown {noun} {}", quoted.join(", ")))
        }
        ValidationErrorKind::Required { property } => (1, format!("missing field {property}")),
        ValidationErrorKind::Type { kind } => (
            2,
            format!(
                "expected {}, found {}",
                type_names(kind).join(" or "),
                json_type(instance)
            ),
        ),
        ValidationErrorKind::Enum { options } => {
            let allowed = match options.as_ref() {
                Value::Array(values) => values.iter().map(Value::to_string).collect::<Vec<_>>().join(", "),
                other => other.to_string(),
            };
            (3, format!("{} is not one of {allowed}", preview(instance)))
        }
        ValidationErrorKind::Constant { expected_value } => {
            (3, format!("expected {expected_value}, found {}", preview(instance)))
        }
        ValidationErrorKind::Minimum { limit } => {
            (4, format!("{} is less than the minimum of {limit}", preview(instance)))
        }
        ValidationErrorKind::Maximum { limit } => (
            4,
            format!("{} is greater than the maximum of {limit}", preview(instance)),
        ),
        ValidationErrorKind::MaxItems { limit } => (4, format!("has more than {limit} items")),
        ValidationErrorKind::MinItems { limit } => (4, format!("has fewer than {limit} items")),
        ValidationErrorKind::Format { format } => (5, format!("{} is not a valid {format}", preview(instance))),
        _ => (5, error.to_string()),
    };
    let location = error.instance_path();
    Candidate {
        rank,
        depth: location.iter().count(),
        violation: SchemaViolation {
            path: field_path(location),
            message,
        },
    }
}

/// `a.b[2].c` for the JSON pointer `/a/b/2/c`; `(root)` for the empty pointer.
fn field_path(location: &jsonschema::paths::Location) -> String {
    let mut path = String::new();
    for segment in location.iter() {
        match segment {
            LocationSegment::Property(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&name);
            }
            LocationSegment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if path.is_empty() { ROOT_PATH.to_owned() } else { path }
}

fn type_names(kind: &TypeKind) -> Vec<String> {
    match kind {
        TypeKind::Single(single) => vec![single.to_string()],
        TypeKind::Multiple(set) => {
            // Name the "real" type first: "number or null" rather than "null or number".
            let mut names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.sort_by_key(|name| name == "null");
            names
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The value as compact JSON, shortened so a huge string cannot flood the message.
fn preview(value: &Value) -> String {
    const MAX_CHARS: usize = 64;
    match value {
        Value::Array(_) | Value::Object(_) => json_type(value).to_owned(),
        _ => {
            let text = value.to_string();
            if text.chars().count() <= MAX_CHARS {
                text
            } else {
                let mut short: String = text.chars().take(MAX_CHARS).collect();
                short.push('…');
                short
            }
        }
    }
}

#[cfg(test)]
mod tests;
