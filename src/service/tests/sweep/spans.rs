//! Evidence spans are byte offsets into an exact revision: whatever span `claim.assert`
//! accepts comes back unchanged from `claim.get`, and cuts the very same bytes out of the
//! content `artifact.get` returns, on or off character boundaries, text or base64.

use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::service::tests::retrieval::support::{Fixture, fixture, main_ctx};

/// Content bytes: UTF-8 text mixing 1- to 4-byte characters, or arbitrary bytes.
fn content() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(prop_oneof!["[a-z ]", "[é–東😀]"], 1..40).prop_map(|parts| parts.concat().into_bytes()),
        prop::collection::vec(any::<u8>(), 1..80),
    ]
}

fn decode(content: &Value) -> Vec<u8> {
    match content["type"].as_str().unwrap() {
        "text" => content["data"].as_str().unwrap().as_bytes().to_vec(),
        _ => base64::engine::general_purpose::STANDARD
            .decode(content["data"].as_str().unwrap())
            .unwrap(),
    }
}

thread_local! {
    static FIXTURE: Fixture = fixture();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn stored_evidence_spans_cut_the_same_bytes_from_the_revision(
        bytes in content(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        media_type in prop::sample::select(vec!["text/plain", "text/markdown", "application/octet-stream"]),
    ) {
        let (x, y) = (a.index(bytes.len() + 1), b.index(bytes.len() + 1));
        prop_assume!(x != y);
        let (start, end) = (x.min(y), x.max(y));
        FIXTURE.with(|f| {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let put = f.mutate(&main_ctx(), "artifact.put", json!({
                "kind": "note", "title": "Span source", "media_type": media_type,
                "content": {"type": "base64", "data": data},
            }));
            let locator = json!({
                "artifact_id": put["artifact_id"], "revision_id": put["revision_id"],
                "start_byte": start, "end_byte": end,
            });
            let claim = f.claim(&main_ctx(), "A span cites exact bytes", json!({"evidence": [locator]}));
            prop_assert_eq!(&claim["evidence"], &json!([locator]));
            let got = f.ok(Fixture::read_request(&main_ctx(), "claim.get", json!({"claim_id": claim["claim_id"]})));
            prop_assert_eq!(&got["evidence"], &json!([locator]));
            let artifact = f.ok(Fixture::read_request(&main_ctx(), "artifact.get", json!({
                "artifact_id": put["artifact_id"], "revision_id": put["revision_id"],
            })));
            let stored = decode(&artifact["content"]);
            prop_assert_eq!(&stored, &bytes);
            prop_assert_eq!(&stored[start..end], &bytes[start..end]);
            // One past the end is refused and writes nothing.
            let before = f.last_commit_seq();
            let past = json!({
                "artifact_id": put["artifact_id"], "revision_id": put["revision_id"],
                "start_byte": start, "end_byte": bytes.len() + 1,
            });
            let request = json!({"request_id": "r", "op": "claim.assert", "idempotency_key": f.key(),
                "context": main_ctx(), "input": {"claim_type": "fact", "statement": "s", "evidence": [past]}});
            prop_assert_eq!(f.err(request).code.as_str(), "INVALID_REQUEST");
            prop_assert_eq!(f.last_commit_seq(), before);
            Ok(())
        })?;
    }
}
