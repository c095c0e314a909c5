//! Artifact content: malformed base64, invalid UTF-8 declared as text (accepted, and read
//! back as the same base64), and the 8 MiB raw / 12 MiB encoded limits, each size case
//! once.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Expect, MISSING_ARTIFACT, Sweep};
use crate::protocol::{ErrorCode, Operation, limits};

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);
const TOO_LARGE: Expect = Expect::Oversize(ErrorCode::ContentTooLarge);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn put_input(media_type: &str, content: Value) -> Value {
    json!({"kind": "note", "title": "Content sweep", "media_type": media_type, "content": content})
}

fn revise_input(content: Value) -> Value {
    json!({"artifact_id": MISSING_ARTIFACT, "if_revision": "arev_sweep", "content": content})
}

/// Both content-bearing operations: `artifact.put`, and `artifact.revise` of a missing
/// artifact (content is validated before the artifact is looked up).
fn both(sweep: &mut Sweep, label: &str, content: Value, put: Expect, revise: Expect) {
    let envelope = sweep.envelope(Operation::ArtifactPut, put_input("text/plain", content.clone()));
    sweep.check("content", &format!("artifact.put {label}"), envelope, put);
    let envelope = sweep.envelope(Operation::ArtifactRevise, revise_input(content));
    sweep.check("content", &format!("artifact.revise {label}"), envelope, revise);
}

fn malformed_base64(sweep: &mut Sweep) {
    for data in [
        "%%%%",
        "aGk",
        "aGk==",
        "aGk===",
        "a",
        "=",
        "====",
        "aGk=aGk=",
        "aGVsbG8=\n",
        " aGk=",
        "aG k=",
        "-_-_",
        "aGk\u{0}",
        "aGVsbG8gd29ybGQ=\r\n",
        "éé==",
        "aGl=",
        "data:text/plain;base64,aGk=",
    ] {
        let content = json!({"type": "base64", "data": data});
        both(sweep, &format!("base64 {data:?}"), content, INVALID, INVALID);
    }
    let content = json!({"type": "base64", "data": ""});
    both(
        sweep,
        "base64 \"\" (empty content)",
        content,
        Expect::Success,
        Expect::Fail(ErrorCode::NotFound),
    );
}

fn invalid_utf8_as_text(sweep: &mut Sweep) {
    let samples: [&[u8]; 8] = [
        b"\xff",
        b"caf\xc3",
        b"\xc0\xaf overlong",
        b"\xed\xa0\x80 surrogate",
        b"\xf4\x90\x80\x80 past U+10FFFF",
        b"nul\x00 and \xfe",
        b"\xef\xbb\xbf\xff bom then junk",
        b"sweep hostile \xe9t\xe9 latin-1",
    ];
    for (i, bytes) in samples.into_iter().enumerate() {
        for media_type in ["text/plain", "text/markdown; charset=utf-8", "TEXT/HTML"] {
            let data = b64(bytes);
            let label = format!("invalid UTF-8 #{i} as {media_type}");
            let envelope = sweep.envelope(
                Operation::ArtifactPut,
                put_input(media_type, json!({"type": "base64", "data": data})),
            );
            let put = sweep.check("content", &format!("artifact.put {label}"), envelope, Expect::Success);
            let Some(result) = put.result else { continue };
            let id = result["artifact_id"].clone();
            let envelope = sweep.envelope(Operation::ArtifactGet, json!({"artifact_id": id}));
            let got = sweep.check("content", &format!("artifact.get {label}"), envelope, Expect::Success);
            let content = got.result.map(|r| r["content"].clone());
            assert_eq!(
                content,
                Some(json!({"type": "base64", "data": data})),
                "{label} must read back as the same base64"
            );
            // Spans into such bytes are byte offsets; reads that excerpt them must cope.
            let revision = result["revision_id"].clone();
            let end = bytes.len().min(3);
            let evidence =
                json!([{"artifact_id": id, "revision_id": revision, "start_byte": 1, "end_byte": end.max(2)}]);
            let statement = format!("sweep hostile evidence {i}");
            let envelope = sweep.envelope(
                Operation::ClaimAssert,
                json!({"claim_type": "fact", "statement": statement, "evidence": evidence}),
            );
            let expect = if bytes.len() >= 2 { Expect::Success } else { INVALID };
            sweep.check("content", &format!("claim.assert span into {label}"), envelope, expect);
        }
    }
    for op in [Operation::Search, Operation::MemoryRecall, Operation::ContextBuild] {
        let input = json!({"query": "sweep hostile latin evidence"});
        let envelope = sweep.envelope(op, input);
        sweep.check(
            "content",
            &format!("{op} over invalid UTF-8 text"),
            envelope,
            Expect::Success,
        );
    }
}

fn sizes(sweep: &mut Sweep) {
    let max = limits::MAX_ARTIFACT_BYTES;
    let text = "a".repeat(max);
    let envelope = sweep.envelope(
        Operation::ArtifactPut,
        put_input("text/plain", json!({"type": "text", "data": text})),
    );
    sweep.check(
        "content",
        "artifact.put text of exactly 8 MiB",
        envelope,
        Expect::Success,
    );
    drop(text);

    let over = "a".repeat(max + 1);
    both(
        sweep,
        "text of 8 MiB + 1",
        json!({"type": "text", "data": over}),
        TOO_LARGE,
        TOO_LARGE,
    );
    // Fewer than 8 Mi characters, but 8 MiB + 1 bytes: the limit counts bytes.
    let mut multibyte = "東".repeat(max / 3);
    while multibyte.len() < max + 1 {
        multibyte.push('a');
    }
    assert_eq!(multibyte.len(), max + 1);
    both(
        sweep,
        "multi-byte text of 8 MiB + 1 bytes",
        json!({"type": "text", "data": multibyte}),
        TOO_LARGE,
        TOO_LARGE,
    );

    let exact = b64(&vec![0u8; max]);
    let envelope = sweep.envelope(
        Operation::ArtifactPut,
        put_input("application/octet-stream", json!({"type": "base64", "data": exact})),
    );
    sweep.check(
        "content",
        "artifact.put base64 of exactly 8 MiB",
        envelope,
        Expect::Success,
    );
    drop(exact);

    let over = b64(&vec![0u8; max + 1]);
    both(
        sweep,
        "base64 of 8 MiB + 1",
        json!({"type": "base64", "data": over}),
        TOO_LARGE,
        TOO_LARGE,
    );
    let encoded_over = "A".repeat(limits::MAX_ENCODED_CONTENT_BYTES + 4);
    both(
        sweep,
        "base64 over 12 MiB encoded",
        json!({"type": "base64", "data": encoded_over}),
        TOO_LARGE,
        TOO_LARGE,
    );
}

pub(super) fn sweep(sweep: &mut Sweep) {
    malformed_base64(sweep);
    invalid_utf8_as_text(sweep);
    sizes(sweep);
}
