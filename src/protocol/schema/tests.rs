//! Tests of the embedded schemas: well-formedness, completeness, compatibility with the
//! reference bundle, and the messages bad input produces.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

const REQUEST_EXAMPLES: &str = include_str!("testdata/requests.json");
const RESULT_EXAMPLES: &str = include_str!("testdata/results.json");

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/v1/schema")
}

/// Every schema file on disk, keyed by its path relative to `spec/v1/schema`.
fn files_on_disk() -> BTreeMap<String, Value> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Value>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let name = path.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/");
                let text = std::fs::read_to_string(&path).unwrap();
                let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not valid JSON: {e}"));
                out.insert(name, value);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&schema_dir(), &schema_dir(), &mut out);
    out
}

/// The reference implementation's published bundle, when the shared spec is checked out
/// beside the repository; otherwise the running test is reported skipped (a failure in CI).
fn reference_bundle() -> Option<Value> {
    shared_bundle("spec/reference-schema-v1.json")
}

/// The reference's bundle at v0.7.1 (its later, additive growth of the same protocol).
fn reference_bundle_071() -> Option<Value> {
    shared_bundle("spec/reference-schema-v1-at-0.7.1.json")
}

/// A schema bundle under `../shared`, or `None` after a visible skip.
fn shared_bundle(relative: &str) -> Option<Value> {
    let test = crate::testkit::parts::current_test();
    let path = crate::testkit::parts::shared_file(relative, &test)?;
    Some(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn example_requests() -> Vec<Value> {
    serde_json::from_str(REQUEST_EXAMPLES).unwrap()
}

/// `(op, example)` pairs; `reference_compatible` says whether the reference must accept it.
fn example_results() -> Vec<(Operation, Value, bool)> {
    let all: Value = serde_json::from_str(RESULT_EXAMPLES).unwrap();
    let mut out = Vec::new();
    for (group, compatible) in [("reference_compatible", true), ("extensions", false)] {
        for (name, examples) in all[group].as_object().unwrap() {
            let op = Operation::from_wire_name(name).unwrap();
            for example in examples.as_array().unwrap() {
                out.push((op, example.clone(), compatible));
            }
        }
    }
    out.push((Operation::Schema, bundle().clone(), true));
    out
}

fn input_violation(op: Operation, input: Value) -> String {
    validate_input(op, &input).unwrap_err().to_string()
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                out.push(target.clone());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_schema_file_is_a_titled_2020_12_root_that_compiles_with_only_local_refs() {
    for (name, schema) in files_on_disk() {
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert!(schema["title"].is_string(), "{name} has no title");
        assert!(schema.get("$id").is_none(), "{name} must not declare an $id");
        if let Err(error) = jsonschema::meta::validate(&schema) {
            panic!("{name} is not a valid 2020-12 schema: {error}");
        }
        compile(&schema, true);
        let mut refs = Vec::new();
        collect_refs(&schema, &mut refs);
        for target in refs {
            let def = target.strip_prefix("#/$defs/");
            let def = def.unwrap_or_else(|| panic!("{name} has a non-local $ref {target}"));
            assert!(schema["$defs"].get(def).is_some(), "{name}: dangling $ref {target}");
        }
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            let text = schema.to_string();
            for def in defs.keys() {
                let used = text.contains(&format!("\"#/$defs/{def}\""));
                assert!(used, "{name}: $defs/{def} is never referenced");
            }
        }
    }
}

/// Keywords only result schemas use: the shape checker, which reads requests and inputs, does
/// not apply them (results are checked by `jsonschema`).
const RESULT_ONLY_KEYWORDS: &[&str] = &["pattern", "if", "then", "else"];

/// Visits every subschema of `schema` and fails on a keyword outside `allowed` (a misspelt
/// keyword, which JSON Schema silently ignores, or one a checker does not read).
fn check_keywords(file: &str, schema: &Value, allowed: &dyn Fn(&str) -> bool) {
    let Some(map) = schema.as_object() else {
        assert!(
            schema.is_boolean(),
            "{file}: a subschema must be an object or a boolean"
        );
        return;
    };
    for (keyword, value) in map {
        assert!(allowed(keyword), "{file}: unexpected keyword {keyword:?}");
        match keyword.as_str() {
            "properties" | "$defs" => value
                .as_object()
                .unwrap()
                .values()
                .for_each(|s| check_keywords(file, s, allowed)),
            "anyOf" | "oneOf" => value
                .as_array()
                .unwrap()
                .iter()
                .for_each(|s| check_keywords(file, s, allowed)),
            "items" | "additionalProperties" | "if" | "then" | "else" => check_keywords(file, value, allowed),
            _ => {}
        }
    }
}

#[test]
fn schema_files_use_only_known_keywords() {
    let known = |keyword: &str| shape::KEYWORDS.contains(&keyword) || RESULT_ONLY_KEYWORDS.contains(&keyword);
    for (name, schema) in files_on_disk() {
        check_keywords(&name, &schema, &known);
    }
}

#[test]
fn every_operation_has_an_input_and_a_result_schema_and_no_file_is_extra() {
    let mut expected: BTreeSet<String> = ["request.json", "response.json", "supporting/evidence_locator.json"]
        .map(String::from)
        .into();
    for op in Operation::ALL {
        assert_eq!(sources(op).name, op.wire_name());
        expected.insert(format!("inputs/{}.json", op.wire_name()));
        expected.insert(format!("results/{}.json", op.wire_name()));
    }
    let on_disk: BTreeSet<String> = files_on_disk().into_keys().collect();
    assert_eq!(on_disk, expected);
}

#[test]
fn embedded_schemas_equal_the_files_on_disk() {
    let disk = files_on_disk();
    for op in Operation::ALL {
        let name = op.wire_name();
        assert_eq!(bundle()["operation_inputs"][name], disk[&format!("inputs/{name}.json")]);
        assert_eq!(bundle()["result_types"][name], disk[&format!("results/{name}.json")]);
    }
    assert_eq!(bundle()["request"], disk["request.json"]);
    assert_eq!(bundle()["response"], disk["response.json"]);
    let locator = &bundle()["supporting_types"]["evidence_locator"];
    assert_eq!(locator, &disk["supporting/evidence_locator.json"]);
}

#[test]
fn a_shared_definition_is_identical_in_every_file_that_carries_it() {
    let mut seen: BTreeMap<String, (String, Value)> = BTreeMap::new();
    for (name, schema) in files_on_disk() {
        let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
            continue;
        };
        for (def, body) in defs {
            match seen.get(def) {
                Some((first, original)) => {
                    assert_eq!(body, original, "$defs/{def} differs between {first} and {name}")
                }
                None => {
                    seen.insert(def.clone(), (name.clone(), body.clone()));
                }
            }
        }
    }
}

/// The reference's later (v0.7.1) schemas of an extension it also has (`citation.get`):
/// `(request, input, result)`, or `None` when it has no such operation.
fn later_reference(later: &Value, op: Operation) -> Option<(Validator, Validator, Validator)> {
    let input = later["operation_inputs"].get(op.wire_name())?;
    let result = &later["result_types"][op.wire_name()];
    Some((
        compile(&later["request"], false),
        compile(input, false),
        compile(result, false),
    ))
}

#[test]
fn example_requests_cover_every_operation_and_validate_against_ours_and_the_reference() {
    let reference = reference_bundle();
    let later = reference_bundle_071();
    let reference_request = reference.as_ref().map(|r| compile(&r["request"], false));
    let mut covered = BTreeSet::new();
    for request in example_requests() {
        let op = Operation::from_wire_name(request["op"].as_str().unwrap()).unwrap();
        covered.insert(op.wire_name());
        let input = &request["input"];
        validate_request(&request).unwrap_or_else(|v| panic!("{op:?} request: {v}"));
        validate_input(op, input).unwrap_or_else(|v| panic!("{op:?} input: {v}"));
        let (Some(reference), Some(reference_request)) = (&reference, &reference_request) else {
            continue;
        };
        if !op.is_protocol_v1() {
            if let Some((request_schema, input_schema, _)) = later.as_ref().and_then(|l| later_reference(l, op)) {
                assert!(
                    request_schema.is_valid(&request),
                    "reference v0.7.1 rejects {op:?} request"
                );
                assert!(
                    input_schema.is_valid(input),
                    "reference v0.7.1 rejects {op:?} input {input}"
                );
            }
            continue;
        }
        assert!(reference_request.is_valid(&request), "reference rejects {op:?} request");
        let reference_input = compile(&reference["operation_inputs"][op.wire_name()], false);
        assert!(
            reference_input.is_valid(input),
            "reference rejects {op:?} input {input}"
        );
    }
    assert_eq!(covered.len(), Operation::ALL.len());
}

#[test]
fn example_results_cover_every_operation_and_validate_against_ours_and_the_reference() {
    let reference = reference_bundle();
    let later = reference_bundle_071();
    let mut covered = BTreeSet::new();
    for (op, result, reference_compatible) in example_results() {
        covered.insert(op.wire_name());
        validate_result(op, &result).unwrap_or_else(|v| panic!("{op:?} result: {v}"));
        let Some(reference) = &reference else {
            continue;
        };
        if !op.is_protocol_v1() {
            if let Some((_, _, result_schema)) = later.as_ref().and_then(|l| later_reference(l, op)) {
                assert!(
                    result_schema.is_valid(&result),
                    "reference v0.7.1 rejects {op:?} result {result}"
                );
            }
            continue;
        }
        let reference_result = compile(&reference["result_types"][op.wire_name()], false);
        let accepted = reference_result.is_valid(&result);
        assert!(accepted || !reference_compatible, "reference rejects {op:?} result");
        // What we emit for a v0.2.0 operation also carries every field the reference's
        // v0.7.1 schema requires (issue 29: a v0.7.1 client parses our responses).
        if let Some((_, _, later_result)) = later.as_ref().and_then(|l| later_reference(l, op)) {
            let accepted = later_result.is_valid(&result);
            assert!(
                accepted || !reference_compatible,
                "reference v0.7.1 rejects {op:?} result {result}"
            );
        }
    }
    assert_eq!(covered.len(), Operation::ALL.len());
}

#[test]
fn inputs_declare_the_reference_fields_required_fields_defaults_and_titles() {
    let (Some(reference), Some(later)) = (reference_bundle(), reference_bundle_071()) else {
        return;
    };
    for op in Operation::ALL.into_iter().filter(|&op| op.is_protocol_v1()) {
        let ours = &bundle()["operation_inputs"][op.wire_name()];
        let theirs = &reference["operation_inputs"][op.wire_name()];
        assert_eq!(ours["title"], theirs["title"], "{op:?}");
        assert_eq!(ours["additionalProperties"], json!(false), "{op:?}");
        assert_eq!(ours.get("required"), theirs.get("required"), "{op:?} required");
        let names = |schema: &Value| -> BTreeSet<String> {
            schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        };
        // Every v0.2.0 input field, plus those v0.7.1 added that we serve (issue 29), and
        // nothing else.
        let newer = &later["operation_inputs"][op.wire_name()];
        assert!(names(ours).is_superset(&names(theirs)), "{op:?} fields");
        for field in names(ours) {
            let default = |schema: &Value| schema["properties"][&field].get("default").cloned();
            if names(theirs).contains(&field) {
                assert_eq!(default(ours), default(theirs), "{op:?}.{field} default");
            } else {
                assert!(names(newer).contains(&field), "{op:?}.{field} is in neither bundle");
                assert_eq!(default(ours), default(newer), "{op:?}.{field} default (v0.7.1)");
            }
        }
    }
}

#[test]
fn results_carry_every_reference_field_with_the_same_required_fields_and_titles() {
    let Some(reference) = reference_bundle() else {
        return;
    };
    for op in Operation::ALL.into_iter().filter(|&op| op.is_protocol_v1()) {
        let ours = &bundle()["result_types"][op.wire_name()];
        let theirs = &reference["result_types"][op.wire_name()];
        assert_eq!(ours["title"], theirs["title"], "{op:?}");
        // The reference spells `instructions` as a `oneOf` of tagged variants; ours is one
        // object with the same fields.
        let Some(their_fields) = theirs["properties"].as_object() else {
            continue;
        };
        assert_eq!(ours.get("required"), theirs.get("required"), "{op:?} required");
        for field in their_fields.keys() {
            // Mutation acknowledgements never echo artifact content, so ours omits it.
            let dropped = field == "content" && ours["title"] == "MutationResult";
            let present = ours["properties"].get(field).is_some();
            assert!(present || dropped, "{op:?} result lacks {field}");
        }
    }
}

#[test]
fn shared_enumerations_match_the_reference_and_operation_adds_only_the_extensions() {
    // The one later code we emit (for citation.get), where the reference's v0.7.1 places it.
    const LATER_CODES: [(&str, &str); 1] = [("CITATION_ERROR", "NOT_FOUND")];
    let Some(reference) = reference_bundle() else {
        return;
    };
    let mut schemas: Vec<&Value> = vec![&reference["request"], &reference["response"]];
    for group in ["operation_inputs", "result_types"] {
        schemas.extend(reference[group].as_object().unwrap().values());
    }
    let ours: Vec<&Value> = files_on_disk_values();
    for their_schema in schemas {
        let Some(defs) = their_schema.get("$defs").and_then(Value::as_object) else {
            continue;
        };
        for (name, def) in defs.iter().filter(|(_, def)| def.get("enum").is_some()) {
            let mut expected = def["enum"].as_array().unwrap().clone();
            if name == "Operation" {
                expected.extend(extension_names().map(Value::from));
            }
            if name == "ErrorCode" {
                for (code, after) in LATER_CODES {
                    let at = expected.iter().position(|c| c == after).unwrap() + 1;
                    expected.insert(at, Value::from(code));
                }
            }
            for schema in ours.iter().filter_map(|s| s["$defs"].get(name)) {
                assert_eq!(schema["enum"].as_array().unwrap(), &expected, "$defs/{name}");
            }
        }
    }
}

/// The wire names of the extension operations (not in the reference's v1 set), in order.
fn extension_names() -> impl Iterator<Item = &'static str> {
    Operation::ALL
        .into_iter()
        .filter(|op| !op.is_protocol_v1())
        .map(Operation::wire_name)
}

fn files_on_disk_values() -> Vec<&'static Value> {
    let mut all = vec![&bundle()["request"], &bundle()["response"]];
    for group in ["operation_inputs", "result_types"] {
        all.extend(bundle()[group].as_object().unwrap().values());
    }
    all
}

#[test]
fn the_bundle_has_the_reference_layout_plus_the_extensions_and_validates_as_a_schema_result() {
    let ours = bundle();
    assert_eq!(ours["schema_bundle_version"], 1);
    assert_eq!(ours["protocol_version"], 1);
    validate_result(Operation::Schema, ours).unwrap();
    let Some(reference) = reference_bundle() else {
        return;
    };
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(keys(ours), keys(&reference));
    assert_eq!(keys(&ours["supporting_types"]), keys(&reference["supporting_types"]));
    for group in ["operation_inputs", "result_types"] {
        let mut expected = keys(&reference[group]);
        expected.extend(extension_names().map(str::to_owned));
        assert_eq!(keys(&ours[group]), expected, "{group}");
    }
}

#[test]
fn an_unknown_input_field_is_named() {
    let message = input_violation(Operation::Search, json!({"query": "q", "foo": 1}));
    assert_eq!(message, r#"(root): unknown field "foo""#);
    let message = input_violation(
        Operation::MemoryRecall,
        json!({"query": "q", "include_historical": true}),
    );
    assert_eq!(message, r#"(root): unknown field "include_historical""#);
    let message = input_violation(Operation::Doctor, json!({"verbose": true}));
    assert_eq!(message, r#"(root): unknown field "verbose""#);
    let message = input_violation(Operation::Search, json!({"query": "q", "recency": {"on": true}}));
    assert_eq!(message, r#"recency: unknown field "on""#);
}

#[test]
fn a_missing_required_input_field_is_named() {
    let message = input_violation(Operation::ArtifactPut, json!({"kind": "k", "title": "t"}));
    assert_eq!(message, r#"(root): missing field "content""#);
    let message = input_violation(Operation::Search, json!({}));
    assert_eq!(message, r#"(root): missing field "query""#);
}

#[test]
fn a_wrongly_typed_input_field_is_named_with_the_expected_type() {
    let message = input_violation(Operation::Search, json!({"query": "q", "limit": "ten"}));
    assert_eq!(message, "limit: expected integer, found string");
    let message = input_violation(
        Operation::ClaimAssert,
        json!({"claim_type": "fact", "statement": "s", "confidence": "high"}),
    );
    assert_eq!(message, "confidence: expected number or null, found string");
    let message = input_violation(Operation::Doctor, Value::Null);
    assert_eq!(message, "(root): expected object, found null");
}

#[test]
fn an_out_of_range_input_field_is_named_with_its_bound() {
    let cases = [
        (
            Operation::Search,
            json!({"query": "q", "limit": 500}),
            "limit: 500 is greater than the maximum of 100",
        ),
        (
            Operation::Search,
            json!({"query": "q", "limit": 0}),
            "limit: 0 is less than the minimum of 1",
        ),
        (
            Operation::ContextBuild,
            json!({"query": "q", "limit": 101}),
            "limit: 101 is greater than the maximum of 100",
        ),
        (
            Operation::ArtifactHistory,
            json!({"artifact_id": "a", "limit": 101}),
            "limit: 101 is greater than the maximum of 100",
        ),
        (
            Operation::ClaimHistory,
            json!({"claim_id": "c", "before_revision_number": -1}),
            "before_revision_number: -1 is less than the minimum of 0",
        ),
        (
            Operation::RelationList,
            json!({"entity_type": "claim", "entity_id": "c", "before_commit_seq": 0}),
            "before_commit_seq: 0 is less than the minimum of 1",
        ),
        (
            Operation::ConflictList,
            json!({"limit": 1000}),
            "limit: 1000 is greater than the maximum of 100",
        ),
        (
            Operation::MemoryRecall,
            json!({"query": "q", "max_claims": 11}),
            "max_claims: 11 is greater than the maximum of 10",
        ),
        (
            Operation::MemoryRecall,
            json!({"query": "q", "max_artifact_refs": 21}),
            "max_artifact_refs: 21 is greater than the maximum of 20",
        ),
        (
            Operation::MemoryRecall,
            json!({"query": "q", "max_excerpt_bytes": 0}),
            "max_excerpt_bytes: 0 is less than the minimum of 1",
        ),
        (
            Operation::ClaimAssert,
            json!({"claim_type": "fact", "statement": "s", "confidence": 1.5}),
            "confidence: 1.5 is greater than the maximum of 1",
        ),
        (
            Operation::ClaimAssert,
            json!({"claim_type": "fact", "statement": "s", "evidence": [{"artifact_id": "a", "revision_id": "r", "start_byte": -1, "end_byte": 3}]}),
            "evidence[0].start_byte: -1 is less than the minimum of 0",
        ),
    ];
    for (op, input, expected) in cases {
        assert_eq!(input_violation(op, input), expected, "{op:?}");
    }
    let too_many: Vec<Value> = (0..129)
        .map(|_| json!({"artifact_id": "a", "revision_id": "r"}))
        .collect();
    let message = input_violation(
        Operation::ClaimAssert,
        json!({"claim_type": "fact", "statement": "s", "evidence": too_many}),
    );
    assert_eq!(message, "evidence: has more than 128 items");
}

#[test]
fn an_unknown_enum_value_lists_the_allowed_values() {
    let message = input_violation(Operation::Search, json!({"query": "q", "horizon": "global"}));
    assert_eq!(
        message,
        r#"horizon: "global" is not one of "ambient", "workspace", "personal""#
    );
    let message = input_violation(Operation::Instructions, json!({"format": "html"}));
    assert!(
        message.starts_with(r#"format: "html" is not one of "markdown""#),
        "{message}"
    );
    let message = input_violation(
        Operation::RelationList,
        json!({"entity_type": "claim", "entity_id": "c", "relation": "likes"}),
    );
    assert!(
        message.starts_with(r#"relation: "likes" is not one of "derived_from""#),
        "{message}"
    );
    let message = input_violation(
        Operation::RelationList,
        json!({"entity_type": "claim", "entity_id": "c", "relation": 5}),
    );
    assert_eq!(message, "relation: expected string or null, found integer");
}

#[test]
fn bad_artifact_content_is_reported_under_content_with_the_allowed_types() {
    let put = |content: Value| {
        input_violation(
            Operation::ArtifactPut,
            json!({"kind": "k", "title": "t", "content": content}),
        )
    };
    assert_eq!(put(json!("hello")), "content: expected object, found string");
    assert_eq!(
        put(json!({"type": "html", "data": "x"})),
        r#"content.type: "html" is not one of "text", "base64""#
    );
    assert_eq!(put(json!({"type": "text"})), r#"content: missing field "data""#);
    assert_eq!(
        put(json!({"type": "text", "data": 5})),
        "content.data: expected string, found integer"
    );
    assert_eq!(
        put(json!({"type": "text", "data": "x", "encoding": "utf8"})),
        r#"content: unknown field "encoding""#
    );
    let empty = json!({"kind": "k", "title": "t", "content": {"type": "text", "data": ""}});
    assert!(validate_input(Operation::ArtifactPut, &empty).is_ok());
}

#[test]
fn the_most_useful_error_is_chosen_deterministically() {
    let input = json!({"limit": 500, "foo": 1, "horizon": 3});
    let first = input_violation(Operation::Search, input.clone());
    assert_eq!(first, r#"(root): unknown field "foo""#);
    for _ in 0..10 {
        assert_eq!(input_violation(Operation::Search, input.clone()), first);
    }
    let two_unknown = input_violation(Operation::Doctor, json!({"b": 1, "a": 2}));
    assert_eq!(two_unknown, r#"(root): unknown fields "a", "b""#);
}

#[test]
fn request_envelope_shape_errors_are_named() {
    let request = |extra: Value| {
        let mut base = json!({"v": 1, "request_id": "r", "op": "doctor", "input": {}});
        base.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        validate_request(&base).map_err(|v| v.to_string())
    };
    assert_eq!(
        request(json!({"trace": true})),
        Err(r#"(root): unknown field "trace""#.into())
    );
    assert_eq!(
        request(json!({"v": "1"})),
        Err("v: expected integer, found string".into())
    );
    assert_eq!(
        request(json!({"context_source": "env"}))
            .unwrap_err()
            .split(" is not")
            .next(),
        Some(r#"context_source: "env""#)
    );
    assert!(
        request(json!({"op": "remember"}))
            .unwrap_err()
            .starts_with(r#"op: "remember" is not one of "context.resolve""#)
    );
    let context = json!({"context": {"workspace_id": "w", "project_id": "p", "owner": "x"}});
    assert_eq!(request(context), Err(r#"context: unknown field "owner""#.into()));
    let context = json!({"context": {"workspace_id": 1, "project_id": "p"}});
    assert_eq!(
        request(context),
        Err("context.workspace_id: expected string, found integer".into())
    );
    assert_eq!(
        request(json!({"context": 5})),
        Err("context: expected object or null, found integer".into())
    );
    // Version mismatches and missing inputs are the service's to report.
    assert_eq!(request(json!({"v": 2, "input": null})), Ok(()));
    let missing_id = validate_request(&json!({"op": "doctor"})).unwrap_err();
    assert_eq!(missing_id.to_string(), r#"(root): missing field "request_id""#);
}

#[test]
fn response_envelopes_tie_ok_to_error() {
    let success = json!({"v": 1, "request_id": "r", "ok": true, "result": {}, "warnings": []});
    assert!(validate_response(&success).is_ok());
    let error = json!({"code": "NOT_FOUND", "message": "not found: artifact a", "retryable": false, "details": null});
    let failure = json!({"v": 1, "request_id": "r", "ok": false, "error": error, "warnings": []});
    assert!(validate_response(&failure).is_ok());

    let mut bad = success.clone();
    bad["error"] = error.clone();
    assert!(validate_response(&bad).is_err());
    let mut bad = failure.clone();
    bad.as_object_mut().unwrap().remove("error");
    assert_eq!(
        validate_response(&bad).unwrap_err().to_string(),
        r#"(root): missing field "error""#
    );
    let mut bad = failure.clone();
    bad["error"].as_object_mut().unwrap().remove("details");
    assert_eq!(
        validate_response(&bad).unwrap_err().to_string(),
        r#"error: missing field "details""#
    );
    let mut bad = failure;
    bad["error"]["code"] = json!("TEAPOT");
    assert!(
        validate_response(&bad)
            .unwrap_err()
            .to_string()
            .starts_with(r#"error.code: "TEAPOT" is not one of"#)
    );
}

#[test]
fn result_drift_is_caught() {
    let result = json!({"status": "ok", "running": true, "daemon_pid": 1, "authoritative_store": "sqlite_wal",
        "retrieval_mode": "fts5", "last_commit_seq": 0, "uptime": 5});
    let violation = validate_result(Operation::Doctor, &result).unwrap_err();
    assert_eq!(violation.to_string(), r#"(root): unknown field "uptime""#);
    let timestamp = json!({"destination": "/b", "database": "/b/memoree.sqlite3", "blobs": "/b/blobs",
        "commit_seq": 1, "copied_external_blobs": 0, "created_at": "yesterday"});
    let violation = validate_result(Operation::BackupCreate, &timestamp).unwrap_err();
    assert_eq!(violation.path, "created_at");
}

#[test]
fn a_violation_displays_as_path_colon_message() {
    let violation = SchemaViolation {
        path: "input.limit".into(),
        message: "too big".into(),
    };
    assert_eq!(violation.to_string(), "input.limit: too big");
}

mod shape_agreement;
