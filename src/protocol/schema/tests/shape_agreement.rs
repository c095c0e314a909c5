//! `shape` (the request and input checker) against `jsonschema` on every example and
//! conformance-case request, and on mutations of each: both must accept and refuse the same
//! values with the same message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use super::*;

/// Every `request` found in the conformance cases (`spec/v1/cases/**`), valid or not.
fn case_requests() -> Vec<Value> {
    fn walk(dir: &Path, out: &mut Vec<Value>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                // Cases that test malformed JSON carry raw text instead of a request value.
                if let Ok(case) = serde_json::from_str::<Value>(&text) {
                    for step in case["steps"].as_array().into_iter().flatten() {
                        if step["request"].is_object() {
                            out.push(step["request"].clone());
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/v1/cases"), &mut out);
    out
}

/// `value` with the node at every position replaced by each probe, each object member
/// removed in turn and an unknown member added to each object.
fn mutations(value: &Value) -> Vec<Value> {
    let probes = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1.0),
        json!(1.5),
        json!(101),
        json!(u64::MAX),
        json!("x".repeat(100)),
        json!("fact"),
        json!([1]),
        json!({"type": "text"}),
    ];
    let mut out = Vec::new();
    for probe in &probes {
        out.push(probe.clone());
    }
    match value {
        Value::Object(map) => {
            let mut extra = map.clone();
            extra.insert("zz_unknown".to_owned(), json!(1));
            out.push(Value::Object(extra));
            for key in map.keys() {
                let mut fewer = map.clone();
                fewer.remove(key);
                out.push(Value::Object(fewer));
                for inner in mutations(&map[key]) {
                    let mut changed = map.clone();
                    changed.insert(key.clone(), inner);
                    out.push(Value::Object(changed));
                }
            }
        }
        Value::Array(items) => {
            // The items share one schema: the first stands for all.
            if let Some(first) = items.first() {
                for inner in mutations(first) {
                    let mut changed = items.clone();
                    changed[0] = inner;
                    out.push(Value::Array(changed));
                }
            }
            let mut longer = items.clone();
            longer.extend(items.iter().cloned().cycle().take(120));
            out.push(Value::Array(longer));
        }
        _ => {}
    }
    out
}

/// The keys, types and array lengths of a value, without its scalars.
fn structure(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", structure(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(structure).collect::<Vec<_>>().join(",")),
        other => json_type(other).to_owned(),
    }
}

fn assert_shape_agrees(schema: &Value, validator: &Validator, value: &Value, what: &str) {
    assert_eq!(
        shape::check(schema, value),
        check(validator, value),
        "{what}: shape and jsonschema disagree on {value}"
    );
}

#[test]
fn request_and_input_schemas_use_only_keywords_the_shape_checker_reads() {
    let read = |keyword: &str| shape::KEYWORDS.contains(&keyword);
    check_keywords("request.json", &parse(REQUEST_SOURCE), &read);
    for op in Operation::ALL {
        check_keywords(&format!("inputs/{op}.json"), &parse(sources(op).input), &read);
    }
}

#[test]
fn shape_agrees_with_jsonschema_on_every_request_envelope_and_its_mutations() {
    let schema = parse(REQUEST_SOURCE);
    let validator = compile(&schema, false);
    let mut seen = BTreeSet::new();
    for request in example_requests().iter().chain(&case_requests()) {
        let mut envelope = request.clone();
        // The input is checked separately; keep it small so mutations stay on the envelope.
        if let Some(map) = envelope.as_object_mut() {
            map.insert("input".to_owned(), json!({}));
            map.insert("request_id".to_owned(), json!("r"));
        }
        for value in std::iter::once(envelope.clone()).chain(mutations(&envelope)) {
            if seen.insert(value.to_string()) {
                assert_shape_agrees(&schema, &validator, &value, "request.json");
            }
        }
    }
    assert!(seen.len() > 1000, "only {} envelopes checked", seen.len());
}

#[test]
fn shape_agrees_with_jsonschema_on_every_operation_input_and_its_mutations() {
    let mut inputs: BTreeMap<&'static str, Vec<Value>> = BTreeMap::new();
    for request in example_requests().iter().chain(&case_requests()) {
        let Some(op) = request["op"].as_str().and_then(Operation::from_wire_name) else {
            continue;
        };
        inputs.entry(op.wire_name()).or_default().push(request["input"].clone());
    }
    let mut checked = 0;
    for op in Operation::ALL {
        let schema = parse(sources(op).input);
        let validator = compile(&schema, false);
        let examples = inputs.get(op.wire_name()).cloned().unwrap_or_default();
        assert!(!examples.is_empty(), "no example input for {op}");
        // One example per structure: the mutations of two examples that differ only in
        // their strings and numbers would repeat each other.
        let mut structures = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for example in examples.iter().filter(|e| structures.insert(structure(e))) {
            for value in std::iter::once(example.clone()).chain(mutations(example)) {
                if seen.insert(value.to_string()) {
                    assert_shape_agrees(&schema, &validator, &value, op.wire_name());
                }
            }
        }
        checked += seen.len();
    }
    assert!(checked > 10_000, "only {checked} inputs checked");
}
