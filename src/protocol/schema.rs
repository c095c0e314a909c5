//! The hand-written JSON Schemas of protocol v1 (`spec/v1/schema/`), embedded at compile time,
//! the bundle the `schema` operation returns, and validation against them.
//!
//! The schema files are the contract; nothing here derives them from Rust types. Validation
//! checks shape only: types, enums, integer ranges, required and unknown fields. Blank
//! strings, byte lengths, content size, base64 decoding, timestamps and cross-field rules
//! stay with the service.
//!
//! Two validators, one set of messages. Requests and operation inputs, on every request
//! path, are checked by `schema/shape.rs`, a direct reading of the few keywords those schemas use.
//! Results and responses, which only the tests and the conformance runner check, go
//! through the `jsonschema` crate; the tests also hold `shape` to it on every input schema
//! (`shape_agrees_with_jsonschema_*`). Why two: building a `jsonschema` validator first
//! compiles the 2020-12 meta-schema (its vocabularies, regular expressions and all), which
//! the crate offers no way to skip; in the daemon that was 1.1 MiB of the idle RSS (0.6 MiB
//! heap, the rest mapped code) spent checking constant, embedded schemas.

use std::fmt;
use std::sync::{LazyLock, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value, json};

use super::Operation;

mod shape;

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
        Operation::CitationGet => op_sources!("citation.get"),
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
        Operation::MemoryProbe => op_sources!("memory.probe"),
        Operation::MemoryRetrieve => op_sources!("memory.retrieve"),
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

/// Result and response validators (the `jsonschema` crate), each compiled on its first use.
/// They serve the tests and the conformance runner: no request path compiles one.
struct Compiled {
    response: OnceLock<Validator>,
    /// Indexed like `Operation::ALL`.
    results: Vec<OnceLock<Validator>>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    response: OnceLock::new(),
    results: Operation::ALL.iter().map(|_| OnceLock::new()).collect(),
});

/// The request and input schemas, parsed on first use, that [`shape`] checks values against.
struct Shapes {
    request: OnceLock<Value>,
    /// Indexed like `Operation::ALL`.
    inputs: Vec<OnceLock<Value>>,
}

static SHAPES: LazyLock<Shapes> = LazyLock::new(|| Shapes {
    request: OnceLock::new(),
    inputs: Operation::ALL.iter().map(|_| OnceLock::new()).collect(),
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
    shape::check(SHAPES.request.get_or_init(|| parse(REQUEST_SOURCE)), envelope)
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
    let schema = SHAPES.inputs[op_index(op)].get_or_init(|| parse(sources(op).input));
    shape::check(schema, input)
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
    let failures: Vec<Failure> = validator.iter_errors(value).map(|e| Failure::from_error(&e)).collect();
    Err(best_violation(&failures))
}

/// One way a value fails its schema, in the form both validators produce (the `jsonschema`
/// crate's errors are converted; [`shape`] builds them directly), so one ranking and one set
/// of messages serve both.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    /// Where in the validated value, outermost first.
    path: Vec<Segment>,
    /// [`json_type`] of the offending value.
    found: &'static str,
    /// [`preview`] of the offending value.
    preview: String,
    problem: Problem,
}

/// One step of a [`Failure`]'s path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    Property(String),
    Index(usize),
}

/// What is wrong, with the schema's side already rendered as the messages show it.
#[derive(Clone, Debug)]
pub(crate) enum Problem {
    /// `additionalProperties: false`: the unexpected names.
    Unknown(Vec<String>),
    /// `required`: the missing name as JSON (quoted).
    Missing(String),
    /// `type`: the allowed type names, the "real" one before `null`.
    Type(Vec<String>),
    /// `enum`: the allowed values, comma-separated JSON.
    Enum(String),
    /// `const`: the expected value as JSON.
    Const(String),
    Minimum(String),
    Maximum(String),
    MaxItems(String),
    MinItems(String),
    /// `format`: the format's name.
    Format(String),
    /// `anyOf` or `oneOf` with no matching branch: each branch's failures.
    NoBranch(Vec<Vec<Failure>>),
    /// Anything else, with its full message.
    Other(String),
}

impl Failure {
    /// A failure of `instance` at `path`.
    pub(crate) fn new(path: Vec<Segment>, instance: &Value, problem: Problem) -> Failure {
        Failure {
            path,
            found: json_type(instance),
            preview: preview(instance),
            problem,
        }
    }

    fn from_error(error: &ValidationError<'_>) -> Failure {
        let problem = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => Problem::Unknown(unexpected.clone()),
            ValidationErrorKind::Required { property } => Problem::Missing(property.to_string()),
            ValidationErrorKind::Type { kind } => Problem::Type(type_names(kind)),
            ValidationErrorKind::Enum { options } => Problem::Enum(enum_text(options.as_ref())),
            ValidationErrorKind::Constant { expected_value } => Problem::Const(expected_value.to_string()),
            ValidationErrorKind::Minimum { limit } => Problem::Minimum(limit.to_string()),
            ValidationErrorKind::Maximum { limit } => Problem::Maximum(limit.to_string()),
            ValidationErrorKind::MaxItems { limit } => Problem::MaxItems(limit.to_string()),
            ValidationErrorKind::MinItems { limit } => Problem::MinItems(limit.to_string()),
            ValidationErrorKind::Format { format } => Problem::Format(format.to_string()),
            ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
                Problem::NoBranch(
                    context
                        .iter()
                        .map(|branch| branch.iter().map(Failure::from_error).collect())
                        .collect(),
                )
            }
            _ => Problem::Other(error.to_string()),
        };
        let path = error
            .instance_path()
            .iter()
            .map(|segment| match segment {
                LocationSegment::Property(name) => Segment::Property(name.into_owned()),
                LocationSegment::Index(index) => Segment::Index(index),
            })
            .collect();
        Failure::new(path, error.instance(), problem)
    }
}

/// The allowed values of an `enum`, as its message lists them.
pub(crate) fn enum_text(options: &Value) -> String {
    match options {
        Value::Array(values) => values.iter().map(Value::to_string).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The most useful of a value's failures (there is at least one).
fn best_violation(failures: &[Failure]) -> SchemaViolation {
    let mut candidates = Vec::new();
    for failure in failures {
        collect(failure, &mut candidates);
    }
    let best = candidates.into_iter().min_by(|a, b| a.key().cmp(&b.key()));
    best.map_or_else(
        || SchemaViolation {
            path: ROOT_PATH.to_owned(),
            message: "invalid value".to_owned(),
        },
        |candidate| candidate.violation,
    )
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

/// Turns one failure into candidates, looking inside `anyOf`/`oneOf` failures for the
/// branch the value was evidently meant to match.
fn collect(failure: &Failure, out: &mut Vec<Candidate>) {
    let Problem::NoBranch(branches) = &failure.problem else {
        out.push(candidate(failure));
        return;
    };
    let here = &failure.path;
    let meant: Vec<_> = branches
        .iter()
        .filter(|failures| !failures.iter().any(|f| rules_out_branch(f, here)))
        .collect();
    if meant.is_empty() {
        out.push(Candidate {
            rank: 6,
            depth: here.len(),
            violation: SchemaViolation {
                path: field_path(here),
                message: no_branch_message(failure, branches),
            },
        });
    } else {
        for failure in meant.into_iter().flatten() {
            collect(failure, out);
        }
    }
}

/// A branch whose type (or `const` tag one level down) does not match was not the one the
/// caller meant; its other complaints would only confuse.
fn rules_out_branch(failure: &Failure, combinator: &[Segment]) -> bool {
    match failure.problem {
        Problem::Type(_) => failure.path == combinator,
        Problem::Const(_) => failure.path.len() == combinator.len() + 1 && failure.path.starts_with(combinator),
        _ => false,
    }
}

fn no_branch_message(failure: &Failure, branches: &[Vec<Failure>]) -> String {
    let mut expected: Vec<&str> = Vec::new();
    for branch_failure in branches.iter().flatten() {
        let names: &[String] = match &branch_failure.problem {
            Problem::Type(names) => names,
            Problem::Const(value) => std::slice::from_ref(value),
            _ => &[],
        };
        for name in names {
            if !expected.contains(&name.as_str()) {
                expected.push(name);
            }
        }
    }
    if expected.is_empty() {
        format!("{} does not match any allowed form", failure.preview)
    } else {
        format!("expected {}, found {}", expected.join(" or "), failure.found)
    }
}

fn candidate(failure: &Failure) -> Candidate {
    let preview = &failure.preview;
    let (rank, message) = match &failure.problem {
        Problem::Unknown(unexpected) => {
            let mut names = unexpected.clone();
            names.sort();
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            let noun = if names.len() == 1 { "field" } else { "fields" };
            (0, format!("unknown {noun} {}", quoted.join(", ")))
        }
        Problem::Missing(property) => (1, format!("missing field {property}")),
        Problem::Type(names) => (2, format!("expected {}, found {}", names.join(" or "), failure.found)),
        Problem::Enum(allowed) => (3, format!("{preview} is not one of {allowed}")),
        Problem::Const(expected) => (3, format!("expected {expected}, found {preview}")),
        Problem::Minimum(limit) => (4, format!("{preview} is less than the minimum of {limit}")),
        Problem::Maximum(limit) => (4, format!("{preview} is greater than the maximum of {limit}")),
        Problem::MaxItems(limit) => (4, format!("has more than {limit} items")),
        Problem::MinItems(limit) => (4, format!("has fewer than {limit} items")),
        Problem::Format(format) => (5, format!("{preview} is not a valid {format}")),
        Problem::Other(message) => (5, message.clone()),
        // `collect` looks inside the branches; this is only the fallback.
        Problem::NoBranch(_) => (6, format!("{preview} does not match any allowed form")),
    };
    Candidate {
        rank,
        depth: failure.path.len(),
        violation: SchemaViolation {
            path: field_path(&failure.path),
            message,
        },
    }
}

/// `a.b[2].c` for the path `/a/b/2/c`; `(root)` for the empty path.
fn field_path(segments: &[Segment]) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            Segment::Property(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
            }
            Segment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if path.is_empty() { ROOT_PATH.to_owned() } else { path }
}

fn type_names(kind: &TypeKind) -> Vec<String> {
    match kind {
        TypeKind::Single(single) => vec![single.to_string()],
        TypeKind::Multiple(set) => sorted_type_names(set.iter().map(|t| t.to_string()).collect()),
    }
}

/// Names the "real" type first: "number or null" rather than "null or number".
pub(crate) fn sorted_type_names(mut names: Vec<String>) -> Vec<String> {
    names.sort_by_key(|name| name == "null");
    names
}

pub(crate) fn json_type(value: &Value) -> &'static str {
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
    let text = match value {
        Value::Array(_) | Value::Object(_) => return json_type(value).to_owned(),
        // Only the start of a long string is serialized: its JSON starts like the whole's.
        Value::String(text) => Value::String(text.chars().take(MAX_CHARS + 1).collect()).to_string(),
        _ => value.to_string(),
    };
    if text.chars().count() <= MAX_CHARS {
        text
    } else {
        let mut short: String = text.chars().take(MAX_CHARS).collect();
        short.push('…');
        short
    }
}

#[cfg(test)]
mod tests;
