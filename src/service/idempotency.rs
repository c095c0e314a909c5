//! Request identity for idempotent mutations (see `spec/v1/IDEMPOTENCY.md`).
//!
//! The namespace is the first 32 hex digits of BLAKE3(`<workspace>\0<project>\0<task>`);
//! the fingerprint is BLAKE3 of the compact, key-sorted JSON object
//! `{"context", "input", "op", "v"}`. `request_id`, `idempotency_key` and `context_source`
//! are not part of a request's identity.

use serde_json::{Value, json};

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

/// The fingerprint of a request's identity-bearing fields.
pub fn fingerprint(request: &Request) -> String {
    // serde_json's map keeps keys sorted, so this is canonical at every depth.
    let canonical = json!({
        "context": request.context.as_ref().map(|c| serde_json::to_value(c).unwrap_or(Value::Null)),
        "input": request.input,
        "op": request.op.wire_name(),
        "v": request.v,
    });
    blake3::hash(canonical.to_string().as_bytes()).to_hex().to_string()
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
        let mut a = Request::new("req_1", Operation::ArtifactPut, json!({"kind": "k", "title": "t"}));
        a.context = Some(context(None));
        let mut b = a.clone();
        b.request_id = "req_2".into();
        b.idempotency_key = Some("other".into());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b.input = json!({"kind": "k", "title": "u"});
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn key_order_in_the_input_does_not_change_the_fingerprint() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"y":2,"x":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"x":3,"y":2},"a":1}"#).unwrap();
        let ra = Request::new("r", Operation::ClaimAssert, a);
        let rb = Request::new("r", Operation::ClaimAssert, b);
        assert_eq!(fingerprint(&ra), fingerprint(&rb));
    }
}
