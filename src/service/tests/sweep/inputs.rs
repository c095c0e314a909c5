//! Invalid operation inputs derived from each operation's published input schema
//! (`schema::bundle()["operation_inputs"][op]`).
//!
//! For every property the walker generates: each JSON type the schema does not allow
//! (`null` included where the property is not nullable), a missing required property, an
//! unknown extra property next to it, values outside an enum, integers and numbers around
//! and far beyond their ranges, strings exactly at and one byte over their byte limits
//! (ASCII and multi-byte), blank strings and control characters, malformed timestamps,
//! oversized free-form objects, and too many array items. Nested objects and array items
//! are walked the same way.

use serde_json::{Value, json};

use super::{Expect, Sweep, sized};
use crate::protocol::{ErrorCode, Operation, limits, schema};

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);

/// What the service enforces on a string property beyond its schema type.
#[derive(Clone, Copy, Debug)]
pub(super) struct StringRule {
    /// Byte limit, if any.
    pub max_bytes: Option<usize>,
    /// Whether a blank value is accepted.
    pub blank_ok: bool,
    /// A prefix that keeps a long value well-formed (a media type needs a `/`).
    pub prefix: &'static str,
    /// The code a blank or oversized value gets.
    pub code: ErrorCode,
}

const fn rule(max_bytes: Option<usize>, blank_ok: bool) -> StringRule {
    StringRule {
        max_bytes,
        blank_ok,
        prefix: "",
        code: ErrorCode::InvalidRequest,
    }
}

/// The byte limits and blank rules of every string property of every input (the
/// reference's internal limits, §4). A property missing here fails the sweep, so a new
/// field cannot escape it.
pub(super) fn string_rule(op: Operation, name: &str) -> StringRule {
    match name {
        "kind" => rule(Some(limits::MAX_KIND_BYTES), false),
        "title" => rule(Some(limits::MAX_TITLE_BYTES), false),
        "media_type" => StringRule {
            prefix: "text/",
            ..rule(Some(limits::MAX_MEDIA_TYPE_BYTES), false)
        },
        "actor" => rule(Some(limits::MAX_ACTOR_BYTES), false),
        // Only a broad horizon needs a reason; under the ambient horizon it is unused.
        "reason" => rule(Some(limits::MAX_REASON_BYTES), op.supports_explicit_horizon()),
        "artifact_id" | "revision_id" | "claim_id" | "if_revision" | "source_id" | "target_id" | "entity_id"
        | "cites_artifact_id" | "cites_revision_id" => rule(Some(limits::MAX_ID_BYTES), false),
        "query" | "original_query" | "reformulation" => rule(Some(limits::MAX_QUERY_BYTES), false),
        "statement" => rule(Some(limits::MAX_CLAIM_STATEMENT_BYTES), false),
        "valid_from" | "valid_until" | "destination" | "source" => rule(None, false),
        // citation.get refuses a bad citation as the reference does: CITATION_ERROR.
        "citation" => StringRule {
            code: ErrorCode::CitationError,
            ..rule(Some(crate::protocol::citation::MAX_CITATION_BYTES), false)
        },
        other => panic!("the sweep has no rule for string property {op}:{other}"),
    }
}

/// Properties whose values the sweep leaves to a dedicated table.
fn dedicated(pointer: &str) -> bool {
    // Content bytes: see `content.rs` (sizes are in decoded bytes, blank is valid).
    pointer == "/content/data"
}

/// Free-form objects bounded by their encoded size.
fn metadata_limited(name: &str) -> bool {
    matches!(name, "provenance" | "metadata")
}

/// One JSON sample of each type, tagged with its JSON Schema type name.
pub(super) fn type_samples() -> [(&'static str, Value); 7] {
    [
        ("null", Value::Null),
        ("boolean", json!(true)),
        ("integer", json!(7)),
        ("number", json!(0.5)),
        ("string", json!("x")),
        ("array", json!([])),
        ("object", json!({})),
    ]
}

/// A property schema with `$ref`s and `anyOf: [T, null]` resolved.
pub(super) struct Prop<'a> {
    pub node: &'a Value,
    pub types: Vec<&'a str>,
    pub nullable: bool,
}

pub(super) fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').expect("local references only");
            resolve(root, root.pointer(pointer).expect("the reference resolves"))
        }
        None => node,
    }
}

pub(super) fn prop<'a>(root: &'a Value, node: &'a Value) -> Prop<'a> {
    let mut node = resolve(root, node);
    let mut nullable = false;
    if let Some(any_of) = node.get("anyOf").and_then(Value::as_array) {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = any_of
            .iter()
            .partition(|branch| branch.get("type") == Some(&json!("null")));
        assert_eq!(others.len(), 1, "anyOf must be T-or-null: {node}");
        nullable = !nulls.is_empty();
        node = resolve(root, others[0]);
    }
    let mut types: Vec<&str> = match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        None if node.get("enum").is_some() => vec!["string"],
        _ => Vec::new(),
    };
    if types.contains(&"null") {
        nullable = true;
        types.retain(|t| *t != "null");
    }
    Prop { node, types, nullable }
}

pub(super) fn type_allowed(prop: &Prop<'_>, sample: &str) -> bool {
    match sample {
        "null" => prop.nullable,
        "integer" => prop.types.contains(&"integer") || prop.types.contains(&"number"),
        other => prop.types.contains(&other),
    }
}

/// A generated input with its label and expectation.
pub(super) struct Variant {
    pub label: String,
    pub input: Value,
    pub expect: Expect,
}

struct Walk<'a> {
    op: Operation,
    root: &'a Value,
    base: &'a Value,
    out: Vec<Variant>,
}

impl Walk<'_> {
    /// Records the base input with `edit` applied to the value at `pointer`.
    fn push(&mut self, label: String, pointer: &str, expect: Expect, edit: impl FnOnce(&mut Value)) {
        let mut input = self.base.clone();
        edit(
            input
                .pointer_mut(pointer)
                .unwrap_or_else(|| panic!("{pointer} in {}", self.base)),
        );
        self.out.push(Variant { label, input, expect });
    }

    /// Walks an object schema whose value in the base input is at `pointer`.
    fn object(&mut self, node: &Value, pointer: &str) {
        let node = resolve(self.root, node);
        let at = if pointer.is_empty() { "(root)" } else { pointer };
        self.push(format!("{at}: unknown extra field"), pointer, INVALID, |v| {
            v.as_object_mut().unwrap().insert("x_sweep_unknown".into(), json!(1));
        });
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, schema) in properties {
            let child = format!("{pointer}/{name}");
            if required.contains(&name.as_str()) {
                self.push(format!("{child}: missing required"), pointer, INVALID, |v| {
                    v.as_object_mut().unwrap().remove(name);
                });
            }
            self.property(name, schema, pointer, &child);
        }
    }

    fn set(&mut self, label: String, parent: &str, name: &str, value: Value, expect: Expect) {
        self.push(label, parent, expect, |v| {
            v.as_object_mut().unwrap().insert(name.to_owned(), value);
        });
    }

    fn property(&mut self, name: &str, schema: &Value, parent: &str, pointer: &str) {
        let prop = prop(self.root, schema);
        for (type_name, sample) in type_samples() {
            if !type_allowed(&prop, type_name) {
                self.set(
                    format!("{pointer}: {type_name} (wrong type)"),
                    parent,
                    name,
                    sample,
                    INVALID,
                );
            }
        }
        if let Some(variants) = prop.node.get("enum").and_then(Value::as_array) {
            let first = variants[0].as_str().unwrap();
            for bad in [
                "x_not_a_variant".to_owned(),
                first.to_uppercase(),
                format!("{first} "),
                String::new(),
            ] {
                self.set(format!("{pointer}: enum {bad:?}"), parent, name, json!(bad), INVALID);
            }
            return;
        }
        if dedicated(pointer) {
            return;
        }
        if prop.types.contains(&"integer") {
            self.integer(&prop, name, parent, pointer);
        } else if prop.types.contains(&"number") {
            self.number(&prop, name, parent, pointer);
        }
        if prop.types.contains(&"string") {
            self.string(&prop, name, parent, pointer);
        }
        if prop.types.contains(&"object") {
            if metadata_limited(name) {
                self.metadata(name, parent, pointer);
            } else if self.base.pointer(pointer).is_some() {
                self.object(prop.node, pointer);
            }
        }
        if prop.types.contains(&"array") {
            self.array(&prop, name, parent, pointer);
        }
    }

    fn integer(&mut self, prop: &Prop<'_>, name: &str, parent: &str, pointer: &str) {
        let min = prop.node.get("minimum").and_then(Value::as_f64);
        let max = prop.node.get("maximum").and_then(Value::as_f64);
        let mut values = vec![
            json!(-1),
            json!(0),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(1u64 << 63),
            json!(u64::MAX),
            json!(1e300),
            json!(-1e300),
            json!(1.5),
            json!(18446744073709551616.0),
        ];
        if let Some(max) = max {
            values.push(json!(max as i64 + 1));
            values.push(json!(max as i64));
        }
        if let Some(min) = min {
            values.push(json!(min as i64 - 1));
            values.push(json!(min as i64));
        }
        let mut seen = Vec::new();
        values.retain(|v| {
            let text = v.to_string();
            let fresh = !seen.contains(&text);
            seen.push(text);
            fresh
        });
        for value in values {
            let x = value.as_f64().unwrap();
            let in_schema =
                x.fract() == 0.0 && min.is_none_or(|min| x >= min) && max.is_none_or(|max| x <= max) && !value.is_f64();
            // In range for the schema: the operation decides (a huge cursor is a valid empty
            // page, a huge `min_commit_seq` is INDEX_NOT_READY); out of range: refused.
            let expect = if in_schema { Expect::NoInternal } else { INVALID };
            self.set(format!("{pointer}: integer {value}"), parent, name, value, expect);
        }
    }

    fn number(&mut self, prop: &Prop<'_>, name: &str, parent: &str, pointer: &str) {
        let min = prop.node.get("minimum").and_then(Value::as_f64);
        let max = prop.node.get("maximum").and_then(Value::as_f64);
        let mut values = vec![
            json!(-1),
            json!(-1e-9),
            json!(1e300),
            json!(-1e300),
            json!(f64::MIN_POSITIVE),
        ];
        if let Some(max) = max {
            values.push(json!(max + 1e-9));
            values.push(json!(max));
        }
        if let Some(min) = min {
            values.push(json!(min));
        }
        for value in values {
            let x = value.as_f64().unwrap();
            let in_schema = min.is_none_or(|min| x >= min) && max.is_none_or(|max| x <= max);
            let expect = if in_schema { Expect::NoInternal } else { INVALID };
            self.set(format!("{pointer}: number {value}"), parent, name, value, expect);
        }
    }

    fn string(&mut self, prop: &Prop<'_>, name: &str, parent: &str, pointer: &str) {
        let rule = string_rule(self.op, name);
        let blank = if rule.blank_ok {
            Expect::NoInternal
        } else {
            Expect::Fail(rule.code)
        };
        for value in ["", " ", " \t\n\r ", "\u{3000}"] {
            self.set(format!("{pointer}: blank {value:?}"), parent, name, json!(value), blank);
        }
        for value in ["a\u{0}b", "\u{1b}[31m\u{7f}\u{200b}\u{202e}", "\u{feff}x"] {
            self.set(
                format!("{pointer}: control characters {value:?}"),
                parent,
                name,
                json!(value),
                Expect::NoInternal,
            );
        }
        if let Some(max) = rule.max_bytes {
            for multibyte in [false, true] {
                let kind = if multibyte { "multi-byte" } else { "ASCII" };
                let at = sized(rule.prefix, max, multibyte);
                self.set(
                    format!("{pointer}: {kind} at {max} bytes"),
                    parent,
                    name,
                    json!(at),
                    Expect::AtLimit,
                );
                let over = sized(rule.prefix, max + 1, multibyte);
                let expect = Expect::Oversize(rule.code);
                self.set(
                    format!("{pointer}: {kind} at {max}+1 bytes"),
                    parent,
                    name,
                    json!(over),
                    expect,
                );
            }
        }
        if prop.node.get("format").and_then(Value::as_str) == Some("date-time") {
            for value in [
                "yesterday",
                "2020-01-01",
                "2020-01-01T00:00:00",
                "2020-13-01T00:00:00Z",
                "2020-02-30T00:00:00Z",
                "2020-01-01T24:00:01Z",
                "2020-01-01T00:00:00+25:00",
                "99999-01-01T00:00:00Z",
                "+275760-09-13T00:00:00Z",
                "-0001-01-01T00:00:00Z",
            ] {
                self.set(
                    format!("{pointer}: timestamp {value:?}"),
                    parent,
                    name,
                    json!(value),
                    INVALID,
                );
            }
            for value in [
                "0000-01-01T00:00:00Z",
                "9999-12-31T23:59:59.999999999+14:00",
                "2016-12-31T23:59:60Z",
                "2020-01-01T00:00:00.1234567890123Z",
            ] {
                let label = format!("{pointer}: extreme timestamp {value:?}");
                self.set(label, parent, name, json!(value), Expect::NoInternal);
            }
        }
    }

    fn metadata(&mut self, name: &str, parent: &str, pointer: &str) {
        // `{"k":"…"}` is 8 bytes plus the string.
        let max = limits::MAX_METADATA_BYTES;
        for multibyte in [false, true] {
            let kind = if multibyte { "multi-byte" } else { "ASCII" };
            let at = json!({"k": sized("", max - 8, multibyte)});
            assert_eq!(at.to_string().len(), max);
            self.set(
                format!("{pointer}: {kind} {max} encoded bytes"),
                parent,
                name,
                at,
                Expect::AtLimit,
            );
            let over = json!({"k": sized("", max - 7, multibyte)});
            let expect = Expect::Oversize(ErrorCode::InvalidRequest);
            self.set(
                format!("{pointer}: {kind} {max}+1 encoded bytes"),
                parent,
                name,
                over,
                expect,
            );
        }
        let mut deep = json!("bottom");
        for _ in 0..100 {
            deep = json!({"d": deep});
        }
        self.set(
            format!("{pointer}: 100 levels deep"),
            parent,
            name,
            deep,
            Expect::NoInternal,
        );
        let odd = json!({"": null, "\u{0}": [1.5e300, -0.0, {}], "é": {"k": [[[]]]}});
        self.set(
            format!("{pointer}: odd keys and values"),
            parent,
            name,
            odd,
            Expect::NoInternal,
        );
    }

    fn array(&mut self, array: &Prop<'_>, name: &str, parent: &str, pointer: &str) {
        let items = array.node.get("items").map(|items| resolve(self.root, items));
        let first = self.base.pointer(&format!("{pointer}/0")).cloned();
        if let (Some(max), Some(first)) = (array.node.get("maxItems").and_then(Value::as_u64), first.clone()) {
            let max = max as usize;
            let at = Value::Array(vec![first.clone(); max]);
            self.set(format!("{pointer}: {max} items"), parent, name, at, Expect::AtLimit);
            let over = Value::Array(vec![first; max + 1]);
            self.set(format!("{pointer}: {max}+1 items"), parent, name, over, INVALID);
        }
        let Some(items) = items else { return };
        let item = prop(self.root, items);
        for (type_name, sample) in type_samples() {
            if !type_allowed(&item, type_name) {
                let label = format!("{pointer}/0: {type_name} (wrong item type)");
                self.set(label, parent, name, json!([sample]), INVALID);
            }
        }
        if first.is_some() && items.get("properties").is_some() {
            self.object(items, &format!("{pointer}/0"));
        }
    }
}

/// Every generated variant of `op`'s base input.
pub(super) fn variants(op: Operation, base: &Value) -> Vec<Variant> {
    let root = &schema::bundle()["operation_inputs"][op.wire_name()];
    let mut walk = Walk {
        op,
        root,
        base,
        out: Vec::new(),
    };
    walk.object(root, "");
    for (type_name, sample) in type_samples() {
        if type_name != "object" {
            walk.out.push(Variant {
                label: format!("input: {type_name}"),
                input: sample,
                expect: INVALID,
            });
        }
    }
    walk.out
}

pub(super) fn sweep(sweep: &mut Sweep) {
    for op in Operation::ALL {
        let base = sweep.base_input(op);
        for variant in variants(op, &base) {
            let envelope = sweep.envelope(op, variant.input);
            sweep.check(
                "input schema",
                &format!("{op} {}", variant.label),
                envelope,
                variant.expect,
            );
        }
        // A missing input is null, and null fails even the empty inputs.
        let mut envelope = sweep.envelope(op, json!({}));
        envelope.as_object_mut().unwrap().remove("input");
        sweep.check("input schema", &format!("{op} input: missing"), envelope, INVALID);
    }
}

#[test]
fn every_string_property_of_every_input_has_a_rule() {
    fn strings(root: &Value, node: &Value, out: &mut Vec<String>) {
        let node = resolve(root, node);
        for key in ["properties", "$defs"] {
            if let Some(map) = node.get(key).and_then(Value::as_object) {
                for (name, child) in map {
                    let p = prop(root, child);
                    if p.types.contains(&"string") && p.node.get("enum").is_none() && key == "properties" {
                        out.push(name.clone());
                    }
                    strings(root, child, out);
                }
            }
        }
        if let Some(items) = node.get("items") {
            strings(root, items, out);
        }
    }
    for op in Operation::ALL {
        let root = &schema::bundle()["operation_inputs"][op.wire_name()];
        let mut names = Vec::new();
        strings(root, root, &mut names);
        for name in names.iter().filter(|n| *n != "data" && *n != "type") {
            let _ = string_rule(op, name);
        }
    }
}
