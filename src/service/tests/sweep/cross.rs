//! Rules no schema can express, one small table each: horizon reasons, evidence spans,
//! validity windows, relation shapes, media types, query tokens and page bounds.

use serde_json::{Value, json};

use super::{Expect, MISSING_CLAIM, Sweep, sized};
use crate::protocol::{ErrorCode, Operation, limits};

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);

/// Merges `patch` into `op`'s base input.
fn patched(sweep: &mut Sweep, op: Operation, patch: Value) -> Value {
    let mut input = sweep.base_input(op);
    for (key, value) in patch.as_object().unwrap() {
        if value.is_null() && key.starts_with('-') {
            input.as_object_mut().unwrap().remove(&key[1..]);
        } else {
            input[key] = value.clone();
        }
    }
    input
}

fn run(sweep: &mut Sweep, op: Operation, label: &str, patch: Value, expect: Expect) {
    let input = patched(sweep, op, patch);
    let envelope = sweep.envelope(op, input);
    sweep.check("cross-field", &format!("{op} {label}"), envelope, expect);
}

fn horizons(sweep: &mut Sweep) {
    let max = limits::MAX_REASON_BYTES;
    for op in Operation::ALL.into_iter().filter(|op| op.supports_explicit_horizon()) {
        for horizon in ["workspace", "personal"] {
            for (label, reason) in [("absent", None), ("null", Some(json!(null)))] {
                let mut patch = json!({"horizon": horizon});
                match reason {
                    None => patch["-reason"] = Value::Null,
                    Some(value) => patch["reason"] = value,
                }
                run(sweep, op, &format!("{horizon} horizon, reason {label}"), patch, INVALID);
            }
            for reason in ["", "  ", "\n\t"] {
                let patch = json!({"horizon": horizon, "reason": reason});
                run(
                    sweep,
                    op,
                    &format!("{horizon} horizon, reason {reason:?}"),
                    patch,
                    INVALID,
                );
            }
            for multibyte in [false, true] {
                let patch = json!({"horizon": horizon, "reason": sized("why ", max, multibyte)});
                run(
                    sweep,
                    op,
                    &format!("{horizon} horizon, reason at {max} bytes"),
                    patch,
                    Expect::Success,
                );
                let patch = json!({"horizon": horizon, "reason": sized("why ", max + 1, multibyte)});
                let expect = Expect::Oversize(ErrorCode::InvalidRequest);
                run(
                    sweep,
                    op,
                    &format!("{horizon} horizon, reason at {max}+1 bytes"),
                    patch,
                    expect,
                );
            }
        }
    }
}

fn evidence(sweep: &mut Sweep) {
    let artifact_id = sweep.seeds.artifact_id.clone();
    let revision_id = sweep.seeds.artifact_revision.clone();
    let size = sweep.seeds.artifact_size;
    let locator = |start: Option<u64>, end: Option<u64>| {
        let mut locator = json!({"artifact_id": artifact_id, "revision_id": revision_id});
        if let Some(start) = start {
            locator["start_byte"] = json!(start);
        }
        if let Some(end) = end {
            locator["end_byte"] = json!(end);
        }
        locator
    };
    const NOT_FOUND: Expect = Expect::Fail(ErrorCode::NotFound);
    // (label, locator, claim.assert outcome, outcome of revising a missing claim: span
    // shape errors come first, store-level bounds only after the claim is found).
    let spans = [
        ("start without end", locator(Some(0), None), INVALID, INVALID),
        ("end without start", locator(None, Some(3)), INVALID, INVALID),
        ("start = end", locator(Some(3), Some(3)), INVALID, INVALID),
        ("start > end", locator(Some(4), Some(3)), INVALID, INVALID),
        (
            "end past the revision",
            locator(Some(0), Some(size + 1)),
            INVALID,
            NOT_FOUND,
        ),
        (
            "start past the revision",
            locator(Some(size), Some(size + 1)),
            INVALID,
            NOT_FOUND,
        ),
        ("end u64::MAX", locator(Some(0), Some(u64::MAX)), INVALID, NOT_FOUND),
        (
            "start and end huge",
            locator(Some(u64::MAX - 1), Some(u64::MAX)),
            INVALID,
            NOT_FOUND,
        ),
        (
            "end at the revision end",
            locator(Some(size - 1), Some(size)),
            Expect::Success,
            NOT_FOUND,
        ),
        ("whole revision", locator(None, None), Expect::Success, NOT_FOUND),
        (
            "missing revision",
            json!({"artifact_id": artifact_id, "revision_id": "arev_missing"}),
            NOT_FOUND,
            NOT_FOUND,
        ),
        (
            "revision of another artifact",
            json!({"artifact_id": "art_other", "revision_id": revision_id}),
            NOT_FOUND,
            NOT_FOUND,
        ),
    ];
    for (label, locator, assert, revise) in spans {
        let patch = json!({"evidence": [locator]});
        run(
            sweep,
            Operation::ClaimAssert,
            &format!("evidence {label}"),
            patch.clone(),
            assert,
        );
        run(
            sweep,
            Operation::ClaimRevise,
            &format!("evidence {label}"),
            patch,
            revise,
        );
    }
}

fn validity(sweep: &mut Sweep) {
    let op = Operation::ClaimAssert;
    for (label, from, until, expect) in [
        ("from = until", "2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z", INVALID),
        ("from > until", "2031-01-01T00:00:00Z", "2030-01-01T00:00:00Z", INVALID),
        (
            "equal instants in two offsets",
            "2030-01-01T01:00:00+01:00",
            "2030-01-01T00:00:00Z",
            INVALID,
        ),
        (
            "one nanosecond apart",
            "2030-01-01T00:00:00Z",
            "2030-01-01T00:00:00.000000001Z",
            Expect::Success,
        ),
    ] {
        run(
            sweep,
            op,
            label,
            json!({"valid_from": from, "valid_until": until}),
            expect,
        );
    }
    for (label, confidence) in [("confidence 0", json!(0)), ("confidence 1", json!(1.0))] {
        run(sweep, op, label, json!({"confidence": confidence}), Expect::Success);
    }
}

fn relations(sweep: &mut Sweep) {
    let op = Operation::RelationPut;
    let claim = sweep.seeds.claim_id.clone();
    let artifact = sweep.seeds.artifact_id.clone();
    let cases = [
        (
            "self loop",
            json!({"source_type": "claim", "source_id": claim, "target_type": "claim", "target_id": claim}),
            INVALID,
        ),
        (
            "contradicts an artifact",
            json!({"source_type": "claim", "source_id": claim, "relation": "contradicts",
                   "target_type": "artifact", "target_id": artifact}),
            INVALID,
        ),
        (
            "supersedes from an artifact",
            json!({"source_type": "artifact", "source_id": artifact, "relation": "supersedes",
                   "target_type": "claim", "target_id": claim}),
            INVALID,
        ),
        (
            "contradicts a missing claim",
            json!({"source_type": "claim", "source_id": claim, "relation": "contradicts",
                   "target_type": "claim", "target_id": MISSING_CLAIM}),
            Expect::Fail(ErrorCode::NotFound),
        ),
    ];
    for (label, patch, expect) in cases {
        run(sweep, op, label, patch, expect);
    }
    for (label, id) in [("artifact", &artifact), ("claim", &claim)] {
        let patch = json!({"entity_type": if label == "artifact" { "claim" } else { "artifact" }, "entity_id": id});
        run(
            sweep,
            Operation::RelationList,
            &format!("{label} id under the other type"),
            patch,
            Expect::Fail(ErrorCode::NotFound),
        );
    }
}

fn media_types(sweep: &mut Sweep) {
    for media_type in ["textplain", "text", "   /", "a\u{0}b"] {
        let expect = if media_type.contains('/') {
            Expect::NoInternal
        } else {
            INVALID
        };
        for op in [Operation::ArtifactPut, Operation::ArtifactRevise] {
            run(
                sweep,
                op,
                &format!("media type {media_type:?}"),
                json!({"media_type": media_type}),
                expect,
            );
        }
    }
    for media_type in ["/", "TEXT/PLAIN", "text/plain; charset=latin1", "application/x\u{0}y/z"] {
        let op = Operation::ArtifactPut;
        run(
            sweep,
            op,
            &format!("media type {media_type:?}"),
            json!({"media_type": media_type}),
            Expect::Success,
        );
    }
}

fn queries(sweep: &mut Sweep) {
    let tokens = |n: usize| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    let max = limits::MAX_QUERY_TOKENS;
    for op in [Operation::Search, Operation::MemoryRecall, Operation::ContextBuild] {
        run(
            sweep,
            op,
            &format!("{max} query words"),
            json!({"query": tokens(max)}),
            Expect::Success,
        );
        run(
            sweep,
            op,
            &format!("{max}+1 query words"),
            json!({"query": tokens(max + 1)}),
            INVALID,
        );
        for query in [
            "***",
            "\"\"",
            "- + ( ) ^ :",
            "\u{0}",
            "NEAR(",
            "\"unterminated",
            "a OR",
            "col:a",
            "é東𝔘*",
        ] {
            run(
                sweep,
                op,
                &format!("query {query:?}"),
                json!({"query": query}),
                Expect::NoInternal,
            );
        }
    }
}

fn pages(sweep: &mut Sweep) {
    let claim = sweep.seeds.claim_id.clone();
    for (op, patch) in [
        (
            Operation::ArtifactHistory,
            json!({"limit": limits::MAX_HISTORY_ITEMS, "before_revision_number": 1}),
        ),
        (
            Operation::ClaimHistory,
            json!({"limit": limits::MAX_HISTORY_ITEMS, "before_revision_number": i64::MAX}),
        ),
        (
            Operation::RelationList,
            json!({"limit": limits::MAX_RELATION_LIST_ITEMS, "before_commit_seq": 1}),
        ),
        (
            Operation::ConflictList,
            json!({"limit": limits::MAX_CONFLICT_LIST_ITEMS, "include_stale": true}),
        ),
        (
            Operation::MemoryRecall,
            json!({"max_claims": 10, "max_artifact_refs": 20, "max_excerpt_bytes": 1}),
        ),
        (Operation::ContextBuild, json!({"max_bytes": 0})),
        (Operation::ContextBuild, json!({"max_bytes": u64::MAX})),
        (Operation::Search, json!({"min_commit_seq": i64::MAX})),
        (
            Operation::ClaimGet,
            json!({"claim_id": claim, "revision_id": "crev_missing"}),
        ),
    ] {
        let expect = match patch.get("min_commit_seq") {
            Some(_) => Expect::Fail(ErrorCode::IndexNotReady),
            None if patch.get("revision_id").is_some() => Expect::Fail(ErrorCode::NotFound),
            None => Expect::Success,
        };
        run(sweep, op, &format!("bounds {patch}"), patch, expect);
    }
}

pub(super) fn sweep(sweep: &mut Sweep) {
    horizons(sweep);
    evidence(sweep);
    validity(sweep);
    relations(sweep);
    media_types(sweep);
    queries(sweep);
    pages(sweep);
}
