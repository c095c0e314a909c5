//! Request identity for idempotent mutations (see `spec/v1/IDEMPOTENCY.md`).
//!
//! The namespace is the first 32 hex digits of BLAKE3(`<workspace>\0<project>\0<task>`);
//! the fingerprint is BLAKE3 of the compact, key-sorted JSON object
//! `{"context", "input", "op", "v"}`. `request_id`, `idempotency_key` and `context_source`
//! are not part of a request's identity.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::{AmbientContext, Request};
use crate::store::idempotency::IdempotencyKey;

/// The namespace prefix for keys written from `context`.
pub fn namespace(context: &AmbientContext) -> String {
    let material = format!(
        "{}\0{}\0{}",
        context.workspace_id,
        context.project_id,
        context.task_id.as_deref().unwrap_or("")
    );
    blake3::hash(material.as_bytes()).to_hex()[..32].to_owned()
}

/// The canonical identity document, its keys in sorted order.
#[derive(Serialize)]
struct Canonical<'a> {
    context: Option<Value>,
    input: &'a Value,
    op: &'static str,
    v: u64,
}

/// The fingerprint of a request's identity-bearing fields: BLAKE3 of the compact JSON
/// `{"context","input","op","v"}` with keys sorted at every depth (serde_json's map keeps
/// them sorted), streamed into the hash without building the text.
pub fn fingerprint(request: &Request) -> String {
    let canonical = Canonical {
        context: request
            .context
            .as_ref()
            .map(|c| serde_json::to_value(c).unwrap_or(Value::Null)),
        input: &request.input,
        op: request.op.wire_name(),
        v: request.v,
    };
    let mut hasher = blake3::Hasher::new();
    serde_json::to_writer(&mut hasher, &canonical).expect("hashing never fails and a Value always serializes");
    hasher.finalize().to_hex().to_string()
}

/// The scoped key and fingerprint of a mutation request with a context and a key.
pub fn key_for(request: &Request, context: &AmbientContext, caller_key: &str) -> IdempotencyKey {
    IdempotencyKey {
        scoped_key: format!("{}:{caller_key}", namespace(context)),
        fingerprint: fingerprint(request),
        operation: request.op.wire_name(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::protocol::Operation;

    fn context(task: Option<&str>) -> AmbientContext {
        AmbientContext {
            workspace_id: "wsp_01M8V4VSM2VTSV11KQC852ZW20".into(),
            project_id: "prj_01M8V4VSM2RHZADMJRBV8QTVSJ".into(),
            task_id: task.map(str::to_owned),
            component: None,
            pins: vec![],
        }
    }

    #[test]
    fn the_namespace_matches_the_reference_vector() {
        assert_eq!(namespace(&context(None)), "46a36b6de6df9762d2e7c5d631c6c90e");
        assert_ne!(namespace(&context(Some("tsk_a"))), namespace(&context(None)));
    }

    #[test]
    fn request_id_and_key_do_not_change_the_fingerprint_but_input_does() {
        let mut a = Request::raw("req_1", Operation::ArtifactPut, json!({"kind": "k", "title": "t"}));
        a.context = Some(context(None));
        let mut b = a.clone();
        b.request_id = "req_2".into();
        b.idempotency_key = Some("other".into());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b.input = json!({"kind": "k", "title": "u"});
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn the_streamed_fingerprint_hashes_exactly_the_canonical_json_text() {
        let mut request = Request::raw(
            "r",
            Operation::ArtifactPut,
            json!({"title": "é \"q\"", "kind": "k", "content": {"type": "text", "data": "x\u{0}"}, "n": [1, -2, 3.5]}),
        );
        for context in [None, Some(context(Some("tsk_a")))] {
            request.context = context;
            let text = json!({
                "context": request.context.as_ref().map(|c| serde_json::to_value(c).unwrap()),
                "input": request.input,
                "op": request.op.wire_name(),
                "v": request.v,
            })
            .to_string();
            assert_eq!(
                fingerprint(&request),
                blake3::hash(text.as_bytes()).to_hex().to_string()
            );
        }
    }

    #[test]
    fn key_order_in_the_input_does_not_change_the_fingerprint() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"y":2,"x":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"x":3,"y":2},"a":1}"#).unwrap();
        let ra = Request::raw("r", Operation::ClaimAssert, a);
        let rb = Request::raw("r", Operation::ClaimAssert, b);
        assert_eq!(fingerprint(&ra), fingerprint(&rb));
    }

    /// A JSON document kept as source tokens, so two renderings can differ only in key
    /// order and whitespace while every literal stays byte-identical.
    #[derive(Clone, Debug)]
    enum Doc {
        Literal(String),
        Array(Vec<Doc>),
        Object(Vec<(String, Doc)>),
    }

    fn literal() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            (-1000i32..1000, 1u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
            Just("1e3".to_owned()),
            Just("-0.0".to_owned()),
            "\\PC{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just(r#""\u00e9\n\"""#.to_owned()),
        ]
    }

    fn doc() -> impl Strategy<Value = Doc> {
        literal().prop_map(Doc::Literal).prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Doc::Array),
                prop::collection::btree_map("[a-z_é]{0,6}", inner, 0..4)
                    .prop_map(|map| Doc::Object(map.into_iter().collect())),
            ]
        })
    }

    /// Renders `doc`; `shuffle` reverses and rotates keys, `gap` goes between tokens.
    fn render(doc: &Doc, shuffle: bool, gap: &str, out: &mut String) {
        match doc {
            Doc::Literal(text) => out.push_str(text),
            Doc::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(gap);
                        out.push(',');
                    }
                    out.push_str(gap);
                    render(item, shuffle, gap, out);
                }
                out.push_str(gap);
                out.push(']');
            }
            Doc::Object(entries) => {
                let mut entries: Vec<&(String, Doc)> = entries.iter().collect();
                if shuffle && !entries.is_empty() {
                    entries.reverse();
                    let mid = entries.len() / 2;
                    entries.rotate_left(mid);
                }
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(gap);
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push_str(gap);
                    out.push(':');
                    out.push_str(gap);
                    render(value, shuffle, gap, out);
                }
                out.push_str(gap);
                out.push('}');
            }
        }
    }

    fn parse(input: &str, request_id: &str, key: &str, source: &str) -> Request {
        serde_json::from_str(&format!(
            r#"{{"request_id":"{request_id}","op":"artifact.put","idempotency_key":"{key}",
                "context_source":"{source}","input":{input},
                "context":{{"workspace_id":"w","project_id":"p","pins":["art_1"]}}}}"#
        ))
        .unwrap()
    }

    /// Pointers to every leaf (scalar, empty array or empty object) of a value.
    fn leaves(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Array(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    leaves(item, format!("{at}/{i}"), out);
                }
            }
            Value::Object(map) if !map.is_empty() => {
                for (key, item) in map {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    leaves(item, format!("{at}/{key}"), out);
                }
            }
            _ => out.push(at),
        }
    }

    fn id() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_\\-:./é東]{1,10}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn key_order_and_whitespace_never_change_the_fingerprint(
            input in doc(),
            gap in "[ \t\n\r]{0,3}",
        ) {
            let mut compact = String::new();
            render(&input, false, "", &mut compact);
            let mut spaced = String::new();
            render(&input, true, &gap, &mut spaced);
            let wrapped = Doc::Object(vec![("x".to_owned(), input)]);
            let mut nested = String::new();
            render(&wrapped, true, &gap, &mut nested);
            let a = parse(&compact, "r1", "k1", "explicit");
            let b = parse(&spaced, "r1", "k1", "explicit");
            prop_assert_eq!(fingerprint(&a), fingerprint(&b), "{} vs {}", compact, spaced);
            let c = parse(&format!("{gap}{{{gap}\"x\"{gap}:{compact}}}"), "r", "k", "none");
            prop_assert_eq!(fingerprint(&c), fingerprint(&parse(&nested, "r", "k", "none")));
        }

        #[test]
        fn request_id_key_and_context_source_are_not_identity(
            input in doc(),
            request_id in "[a-z0-9]{1,8}",
            key in "[a-z0-9]{1,8}",
            source in prop::sample::select(vec!["explicit", "session", "marker", "personal", "none"]),
        ) {
            let mut text = String::new();
            render(&input, false, "", &mut text);
            let base = parse(&text, "r0", "k0", "none");
            let other = parse(&text, &request_id, &key, source);
            prop_assert_eq!(fingerprint(&base), fingerprint(&other));
        }

        #[test]
        fn changing_any_leaf_of_the_input_changes_the_fingerprint(
            input in doc(),
            pick in any::<prop::sample::Index>(),
            replacement in literal(),
        ) {
            let mut text = String::new();
            render(&input, false, "", &mut text);
            let request = parse(&text, "r", "k", "none");
            let mut pointers = Vec::new();
            leaves(&request.input, String::new(), &mut pointers);
            let pointer = &pointers[pick.index(pointers.len())];
            let replacement: Value = serde_json::from_str(&replacement).unwrap();
            let mut changed = request.clone();
            let slot = changed.input.pointer_mut(pointer).unwrap();
            // Values that encode identically are the same request; any other change is not.
            let same = serde_json::to_string(slot).unwrap() == serde_json::to_string(&replacement).unwrap();
            prop_assume!(!same);
            *slot = replacement;
            prop_assert_ne!(fingerprint(&request), fingerprint(&changed));
        }

        #[test]
        fn op_version_and_every_context_field_are_identity(
            ws in id(), prj in id(), task in proptest::option::of(id()), component in proptest::option::of(id()),
            pins in prop::collection::vec(id(), 0..3),
            which in 0usize..7,
            other in id(),
        ) {
            let context = AmbientContext { workspace_id: ws, project_id: prj, task_id: task, component, pins };
            let mut a = Request::raw("r", Operation::ClaimAssert, json!({"statement": "s"}));
            a.context = Some(context.clone());
            let mut b = a.clone();
            let c = b.context.as_mut().unwrap();
            match which {
                0 => { prop_assume!(c.workspace_id != other); c.workspace_id = other }
                1 => { prop_assume!(c.project_id != other); c.project_id = other }
                2 => { prop_assume!(c.task_id.as_ref() != Some(&other)); c.task_id = Some(other) }
                3 => { prop_assume!(c.component.as_ref() != Some(&other)); c.component = Some(other) }
                4 => c.pins.push(other),
                5 => b.op = Operation::ClaimRevise,
                _ => b.v = 2,
            }
            prop_assert_ne!(fingerprint(&a), fingerprint(&b));
            let mut c = a.clone();
            c.context = None;
            prop_assert_ne!(fingerprint(&a), fingerprint(&c));
        }

        #[test]
        fn the_namespace_is_the_scope_and_ignores_component_and_pins(
            a in (id(), id(), proptest::option::of(id())),
            b in (id(), id(), proptest::option::of(id())),
            component in proptest::option::of(id()),
            pins in prop::collection::vec(id(), 0..3),
        ) {
            let scope = |(ws, prj, task): &(String, String, Option<String>)| AmbientContext {
                workspace_id: ws.clone(), project_id: prj.clone(), task_id: task.clone(), component: None, pins: vec![],
            };
            let (x, y) = (scope(&a), scope(&b));
            prop_assert_eq!(namespace(&x) == namespace(&y), a == b);
            let decorated = AmbientContext { component, pins, ..x.clone() };
            prop_assert_eq!(namespace(&decorated), namespace(&x));
            prop_assert_eq!(namespace(&x).len(), 32);
        }
    }
}
