//! Checks a value against a request or input schema by reading the schema directly.
//!
//! Those schemas use a handful of JSON Schema 2020-12 keywords: `type`, `enum`, `const`,
//! `minimum`, `maximum`, `maxItems`, `properties`, `required`, `additionalProperties`,
//! `items`, `anyOf`, `oneOf` and local `$ref`s into `$defs`; `format` is an annotation
//! there (the service parses timestamps itself), as are `title`, `description` and
//! `default`. Each is applied as the specification says, and each failure is reported as a
//! [`Failure`] exactly as the `jsonschema` crate's error converts to one, so messages do not
//! depend on which validator ran. The tests hold this reading to the crate on every input
//! schema and a corpus of good and bad values, and refuse any other keyword in those files.
//!
//! A valid value costs one walk and no failure is built for it (a combinator's branches are
//! first tried quietly).

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::{Failure, Problem, SchemaViolation, Segment, best_violation, enum_text, sorted_type_names};

/// The keywords this module applies or knows to be annotations.
pub(crate) const KEYWORDS: &[&str] = &[
    "$schema",
    "$defs",
    "$ref",
    "title",
    "description",
    "default",
    "format",
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
];

/// Checks `value` against `root`, a whole schema document: one quiet walk, and a second
/// that builds the failures only for an invalid value.
pub(super) fn check(root: &Value, value: &Value) -> Result<(), SchemaViolation> {
    let mut walk = Walk::new(root, true);
    walk.schema(root, value);
    if walk.failed {
        Err(best_violation(&failures(root, value)))
    } else {
        Ok(())
    }
}

/// Every failure of `value` against `root` (empty when it is valid).
pub(crate) fn failures(root: &Value, value: &Value) -> Vec<Failure> {
    let mut walk = Walk::new(root, false);
    walk.schema(root, value);
    walk.out
}

/// A borrowed path step; owned only when a failure records it.
#[derive(Clone, Copy)]
enum Step<'v> {
    Property(&'v str),
    Index(usize),
}

struct Walk<'s, 'v> {
    root: &'s Value,
    path: Vec<Step<'v>>,
    out: Vec<Failure>,
    /// Only whether the value is valid matters (a combinator's branch before any fails):
    /// failures set `failed` and are not built.
    quiet: bool,
    failed: bool,
}

impl<'s, 'v> Walk<'s, 'v> {
    fn new(root: &'s Value, quiet: bool) -> Walk<'s, 'v> {
        Walk {
            root,
            path: Vec::new(),
            out: Vec::new(),
            quiet,
            failed: false,
        }
    }

    fn fail(&mut self, instance: &Value, problem: Problem) {
        self.failed = true;
        if self.quiet {
            return;
        }
        let path = self
            .path
            .iter()
            .map(|step| match *step {
                Step::Property(name) => Segment::Property(name.to_owned()),
                Step::Index(index) => Segment::Index(index),
            })
            .collect();
        self.out.push(Failure::new(path, instance, problem));
    }

    fn schema(&mut self, schema: &'s Value, value: &'v Value) {
        match schema {
            Value::Bool(true) => {}
            Value::Bool(false) => self.fail(value, Problem::Other(format!("False schema does not allow {value}"))),
            Value::Object(keywords) => self.keywords(keywords, value),
            _ => debug_assert!(false, "a subschema is an object or a boolean"),
        }
    }

    fn keywords(&mut self, keywords: &'s Map<String, Value>, value: &'v Value) {
        for (keyword, argument) in keywords {
            match keyword.as_str() {
                "$ref" => self.reference(argument, value),
                "type" => self.type_(argument, value),
                "enum" => {
                    let allowed = argument.as_array().map(Vec::as_slice).unwrap_or_default();
                    if !allowed.iter().any(|candidate| equal(candidate, value)) {
                        self.fail(value, Problem::Enum(enum_text(argument)));
                    }
                }
                "const" => {
                    if !equal(argument, value) {
                        self.fail(value, Problem::Const(argument.to_string()));
                    }
                }
                "minimum" => {
                    if let (Value::Number(limit), Value::Number(n)) = (argument, value)
                        && compare(n, limit) == Ordering::Less
                    {
                        self.fail(value, Problem::Minimum(argument.to_string()));
                    }
                }
                "maximum" => {
                    if let (Value::Number(limit), Value::Number(n)) = (argument, value)
                        && compare(n, limit) == Ordering::Greater
                    {
                        self.fail(value, Problem::Maximum(argument.to_string()));
                    }
                }
                "maxItems" => {
                    if let (Some(limit), Value::Array(items)) = (argument.as_u64(), value)
                        && items.len() as u64 > limit
                    {
                        self.fail(value, Problem::MaxItems(limit.to_string()));
                    }
                }
                "properties" => self.properties(argument, value),
                "required" => self.required(argument, value),
                "additionalProperties" => self.additional(keywords.get("properties"), argument, value),
                "items" => {
                    if let Value::Array(items) = value {
                        for (index, item) in items.iter().enumerate() {
                            self.path.push(Step::Index(index));
                            self.schema(argument, item);
                            self.path.pop();
                        }
                    }
                }
                "anyOf" => {
                    if self.valid_branches(argument, value) == 0 {
                        let branches = self.branches(argument, value);
                        self.fail(value, Problem::NoBranch(branches));
                    }
                }
                "oneOf" => match self.valid_branches(argument, value) {
                    0 => {
                        let branches = self.branches(argument, value);
                        self.fail(value, Problem::NoBranch(branches));
                    }
                    1 => {}
                    _ => self.fail(
                        value,
                        Problem::Other(format!(
                            "{value} is valid under more than one of the schemas listed in the 'oneOf' keyword"
                        )),
                    ),
                },
                annotation => debug_assert!(KEYWORDS.contains(&annotation), "unsupported keyword {annotation}"),
            }
        }
    }

    fn reference(&mut self, reference: &Value, value: &'v Value) {
        let target = reference
            .as_str()
            .and_then(|pointer| pointer.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer));
        match target {
            Some(schema) => self.schema(schema, value),
            None => self.fail(value, Problem::Other(format!("unresolvable reference {reference}"))),
        }
    }

    fn type_(&mut self, expected: &Value, value: &Value) {
        let names: Vec<&str> = match expected {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        if !names.iter().any(|name| has_type(value, name)) {
            let names = sorted_type_names(names.into_iter().map(str::to_owned).collect());
            self.fail(value, Problem::Type(names));
        }
    }

    fn properties(&mut self, properties: &'s Value, value: &'v Value) {
        let (Value::Object(schemas), Value::Object(fields)) = (properties, value) else {
            return;
        };
        for (name, field) in fields {
            if let Some(schema) = schemas.get(name) {
                self.path.push(Step::Property(name));
                self.schema(schema, field);
                self.path.pop();
            }
        }
    }

    fn required(&mut self, required: &Value, value: &Value) {
        let (Value::Array(names), Value::Object(fields)) = (required, value) else {
            return;
        };
        for name in names {
            if let Some(name) = name.as_str()
                && !fields.contains_key(name)
            {
                self.fail(value, Problem::Missing(Value::from(name).to_string()));
            }
        }
    }

    fn additional(&mut self, properties: Option<&Value>, additional: &'s Value, value: &'v Value) {
        let Value::Object(fields) = value else {
            return;
        };
        let declared = |name: &str| {
            properties
                .and_then(Value::as_object)
                .is_some_and(|declared| declared.contains_key(name))
        };
        match additional {
            Value::Bool(true) => {}
            Value::Bool(false) => {
                let unexpected: Vec<String> = fields.keys().filter(|name| !declared(name)).cloned().collect();
                if !unexpected.is_empty() {
                    self.fail(value, Problem::Unknown(unexpected));
                }
            }
            schema => {
                for (name, field) in fields {
                    if !declared(name) {
                        self.path.push(Step::Property(name));
                        self.schema(schema, field);
                        self.path.pop();
                    }
                }
            }
        }
    }

    /// How many branches `value` satisfies, building no failure.
    fn valid_branches(&mut self, branches: &'s Value, value: &'v Value) -> usize {
        let (quiet, failed) = (self.quiet, self.failed);
        self.quiet = true;
        let mut valid = 0;
        for branch in branches.as_array().map(Vec::as_slice).unwrap_or_default() {
            self.failed = false;
            self.schema(branch, value);
            valid += usize::from(!self.failed);
        }
        (self.quiet, self.failed) = (quiet, failed);
        valid
    }

    /// Each branch's failures, the paths continuing from here (none when quiet).
    fn branches(&mut self, branches: &'s Value, value: &'v Value) -> Vec<Vec<Failure>> {
        if self.quiet {
            return Vec::new();
        }
        let Some(branches) = branches.as_array() else {
            return Vec::new();
        };
        branches
            .iter()
            .map(|branch| {
                let outer = std::mem::take(&mut self.out);
                self.schema(branch, value);
                std::mem::replace(&mut self.out, outer)
            })
            .collect()
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match (name, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => is_integer(n),
        _ => false,
    }
}

/// 2020-12: a number with a zero fractional part is an integer (`1.0` is).
fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, v)| y.get(key).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// Numbers by value, exactly for integers.
fn compare(a: &Number, b: &Number) -> Ordering {
    let exact = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (exact(a), exact(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}
