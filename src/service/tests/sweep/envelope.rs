//! Invalid envelopes derived from the request schema (`schema::bundle()["request"]`), sent
//! for every operation: each field with every JSON type it does not allow, missing
//! required fields, unknown fields, bad enum values, versions, and the byte and count
//! bounds of `request_id`, `idempotency_key` and the ambient context (§3.4).

use serde_json::{Value, json};

use super::inputs::{prop, resolve, type_allowed, type_samples};
use super::{Expect, Sweep, sized};
use crate::protocol::{ErrorCode, Operation, limits, schema};

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);

/// One change to a well-formed envelope.
enum Edit {
    /// Sets `name` in the object at the pointer.
    Set(&'static str, String, Value),
    /// Removes `name` from the object at the pointer.
    Remove(&'static str, String),
    /// Replaces the whole envelope.
    Whole(Value),
}

impl Edit {
    fn apply(self, envelope: &mut Value) {
        match self {
            Edit::Set(at, name, value) => {
                envelope
                    .pointer_mut(at)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .insert(name, value);
            }
            Edit::Remove(at, name) => {
                envelope.pointer_mut(at).unwrap().as_object_mut().unwrap().remove(&name);
            }
            Edit::Whole(value) => *envelope = value,
        }
    }
}

struct Case {
    label: String,
    edit: Edit,
    expect: Expect,
}

/// The documented outcome of a `v` value: only a non-negative integer is a version
/// number, and any version but 1 is `UNSUPPORTED_VERSION` (checked before anything else).
fn version_expect(v: &Value) -> Expect {
    match v.as_u64() {
        Some(1) => Expect::LikeBase,
        Some(_) => Expect::Fail(ErrorCode::UnsupportedVersion),
        None => INVALID,
    }
}

/// What an absent (or null) context means for `op`.
fn without_context(op: Operation) -> Expect {
    if op.needs_context() {
        Expect::Fail(ErrorCode::NoAmbientContext)
    } else {
        Expect::LikeBase
    }
}

struct Gen {
    op: Operation,
    cases: Vec<Case>,
}

impl Gen {
    fn set(&mut self, label: String, at: &'static str, name: &str, value: Value, expect: Expect) {
        self.cases.push(Case {
            label,
            edit: Edit::Set(at, name.to_owned(), value),
            expect,
        });
    }

    /// Type, requiredness and unknown-field cases of one object schema of the envelope.
    fn shape(&mut self, root: &Value, node: &Value, at: &'static str) {
        let node = resolve(root, node);
        self.set(format!("{at}: unknown field"), at, "x_sweep_unknown", json!(1), INVALID);
        let required: Vec<&str> = node["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for (name, schema) in node["properties"].as_object().unwrap() {
            let field = format!("{at}/{name}");
            let absent = match (at, name.as_str()) {
                _ if required.contains(&name.as_str()) => INVALID,
                ("", "v") => Expect::LikeBase,
                ("", "idempotency_key") if self.op.is_mutating() => INVALID,
                ("", "context") => without_context(self.op),
                ("", "input") => INVALID,
                _ => Expect::LikeBase,
            };
            self.cases.push(Case {
                label: format!("{field}: absent"),
                edit: Edit::Remove(at, name.clone()),
                expect: absent,
            });
            let p = prop(root, schema);
            if p.types.is_empty() {
                continue; // `input` takes any JSON at the envelope level.
            }
            for (type_name, sample) in type_samples() {
                if type_allowed(&p, type_name) {
                    continue;
                }
                let expect = if name == "v" { version_expect(&sample) } else { INVALID };
                self.set(format!("{field}: {type_name} (wrong type)"), at, name, sample, expect);
            }
            if p.nullable {
                // Null is the same as absent for the nullable envelope fields.
                self.set(format!("{field}: null"), at, name, Value::Null, absent);
            }
            if let Some(variants) = p.node.get("enum").and_then(Value::as_array) {
                let first = variants[0].as_str().unwrap();
                for bad in [
                    "x_not_a_variant".to_owned(),
                    first.to_uppercase(),
                    format!(" {first}"),
                    String::new(),
                ] {
                    self.set(format!("{field}: enum {bad:?}"), at, name, json!(bad), INVALID);
                }
            }
        }
    }

    fn version(&mut self) {
        for v in [
            json!(0),
            json!(2),
            json!(-1),
            json!(u32::MAX),
            json!(u64::from(u32::MAX) + 1),
            json!(1u64 << 40),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.0),
            json!(1.5),
            json!(1e300),
            json!("1"),
        ] {
            let expect = version_expect(&v);
            self.set(format!("/v: {v}"), "", "v", v, expect);
        }
    }

    /// A bounded string field: blank values, values at and over the limit, control bytes.
    ///
    /// Values carry the operation's name, so no two operations share an idempotency key.
    #[allow(clippy::too_many_arguments)]
    fn bounded(
        &mut self,
        at: &'static str,
        name: &str,
        max: usize,
        blank: Expect,
        within: Expect,
        over: Expect,
        nul: Expect,
    ) {
        let field = format!("{at}/{name}");
        let prefix = format!("{}-", self.op);
        self.set(format!("{field}: empty"), at, name, json!(""), INVALID);
        for value in [" ", "\t\n", "\u{3000}"] {
            self.set(format!("{field}: blank {value:?}"), at, name, json!(value), blank);
        }
        self.set(format!("{field}: NUL"), at, name, json!(format!("{prefix}\u{0}")), nul);
        let escapes = format!("{prefix}\u{1b}[2J\u{7f}\u{202e}");
        self.set(format!("{field}: control characters"), at, name, json!(escapes), within);
        for multibyte in [false, true] {
            let kind = if multibyte { "multi-byte" } else { "ASCII" };
            let value = sized(&prefix, max, multibyte);
            self.set(
                format!("{field}: {kind} at {max} bytes"),
                at,
                name,
                json!(value),
                within,
            );
            let value = sized(&prefix, max + 1, multibyte);
            self.set(
                format!("{field}: {kind} at {max}+1 bytes"),
                at,
                name,
                json!(value),
                over,
            );
        }
    }

    fn request_id(&mut self) {
        // Byte-length checks only: a whitespace-only request id is still an id (§3.4).
        let over = INVALID;
        let max = limits::MAX_REQUEST_ID_BYTES;
        self.bounded(
            "",
            "request_id",
            max,
            Expect::LikeBase,
            Expect::LikeBase,
            over,
            Expect::LikeBase,
        );
    }

    fn idempotency_key(&mut self) {
        let max = limits::MAX_IDEMPOTENCY_KEY_BYTES;
        if self.op.is_mutating() {
            let over = Expect::Oversize(ErrorCode::InvalidRequest);
            self.bounded(
                "",
                "idempotency_key",
                max,
                INVALID,
                Expect::LikeBase,
                over,
                Expect::LikeBase,
            );
        } else {
            // Operations that are not mutations ignore the key.
            let like = Expect::LikeBase;
            self.bounded("", "idempotency_key", max, like, like, like, like);
            self.cases.retain(|c| c.label != "/idempotency_key: empty");
            self.set("/idempotency_key: empty".into(), "", "idempotency_key", json!(""), like);
        }
    }

    fn context(&mut self, root: &Value) {
        let node = resolve(root, &root["$defs"]["AmbientContext"]);
        self.shape(root, node, "/context");
        let max = limits::MAX_CONTEXT_ID_BYTES;
        let over = Expect::Oversize(ErrorCode::InvalidRequest);
        for name in ["workspace_id", "project_id", "task_id", "component"] {
            // A longer id is another scope: whatever the operation decides there.
            self.bounded("/context", name, max, INVALID, Expect::AtLimit, over, INVALID);
        }
        let pin = format!(
            "{}@{}",
            "art_00000000000000000000000000", "arev_00000000000000000000000000"
        );
        let max_pins = limits::MAX_PINS;
        let at = json!(vec![pin.clone(); max_pins]);
        self.set(
            format!("/context/pins: {max_pins} pins"),
            "/context",
            "pins",
            at,
            Expect::AtLimit,
        );
        let over_pins = json!(vec![pin; max_pins + 1]);
        let label = format!("/context/pins: {max_pins}+1 pins");
        self.set(label, "/context", "pins", over_pins, INVALID);
        for (type_name, sample) in type_samples() {
            if type_name != "string" {
                let label = format!("/context/pins/0: {type_name} (wrong item type)");
                self.set(label, "/context", "pins", json!([sample]), INVALID);
            }
        }
        let max_pin = limits::MAX_PIN_BYTES;
        for multibyte in [false, true] {
            let kind = if multibyte { "multi-byte" } else { "ASCII" };
            let at = json!([sized("art_", max_pin, multibyte)]);
            self.set(
                format!("/context/pins/0: {kind} at {max_pin} bytes"),
                "/context",
                "pins",
                at,
                Expect::AtLimit,
            );
            let over_pin = json!([sized("art_", max_pin + 1, multibyte)]);
            let label = format!("/context/pins/0: {kind} at {max_pin}+1 bytes");
            self.set(label, "/context", "pins", over_pin, over);
        }
        for blank in ["", " ", "\n"] {
            let label = format!("/context/pins/0: blank {blank:?}");
            self.set(label, "/context", "pins", json!([blank]), INVALID);
        }
        for odd in [
            "not-a-pin",
            "art_x@",
            "@arev_y",
            "art_@arev_",
            "art_x@arev_y@arev_z",
            "a\u{0}b",
        ] {
            let label = format!("/context/pins/0: odd pin {odd:?}");
            self.set(label, "/context", "pins", json!([odd]), Expect::NoInternal);
        }
    }

    fn whole(&mut self) {
        let op_free = [
            ("only a request id", json!({"request_id": "r"})),
            ("empty object", json!({})),
        ];
        // Envelopes that name no operation are the same for every operation: sent once.
        if self.op == Operation::ALL[0] {
            for (label, envelope) in op_free {
                self.cases.push(Case {
                    label: format!("(envelope): {label}"),
                    edit: Edit::Whole(envelope),
                    expect: INVALID,
                });
            }
        }
        for (type_name, sample) in type_samples() {
            if type_name != "object" && self.op == Operation::ALL[0] {
                self.cases.push(Case {
                    label: format!("(envelope): {type_name}"),
                    edit: Edit::Whole(sample),
                    expect: INVALID,
                });
            }
        }
        let op = self.op.wire_name();
        for (label, envelope, expect) in [
            (
                "version before an empty request id",
                json!({"v": 2, "request_id": "", "op": op, "input": {}}),
                Expect::Fail(ErrorCode::UnsupportedVersion),
            ),
            (
                "version before an unknown field",
                json!({"v": 3, "request_id": "r", "op": op, "input": {}, "x": 1}),
                Expect::Fail(ErrorCode::UnsupportedVersion),
            ),
            (
                "version before a bad op",
                json!({"v": 0, "request_id": "r", "op": 7, "input": {}}),
                Expect::Fail(ErrorCode::UnsupportedVersion),
            ),
            (
                "negative version with an empty request id",
                json!({"v": -1, "request_id": "", "op": op, "input": {}}),
                INVALID,
            ),
        ] {
            self.cases.push(Case {
                label: format!("(envelope): {label}"),
                edit: Edit::Whole(envelope),
                expect,
            });
        }
    }
}

fn cases(op: Operation) -> Vec<Case> {
    let root = &schema::bundle()["request"];
    let mut generator = Gen { op, cases: Vec::new() };
    generator.shape(root, root, "");
    generator.version();
    generator.request_id();
    generator.idempotency_key();
    generator.context(root);
    generator.whole();
    generator.cases
}

pub(super) fn sweep(sweep: &mut Sweep) {
    for op in Operation::ALL {
        for case in cases(op) {
            let input = sweep.base_input(op);
            let mut envelope = sweep.envelope(op, input);
            case.edit.apply(&mut envelope);
            sweep.check("envelope", &format!("{op} {}", case.label), envelope, case.expect);
        }
    }
}
