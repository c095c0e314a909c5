//! `citation.get` (issue 29, item 3): exact bytes of a cited range, narrowed at a character
//! boundary, and one `CITATION_ERROR` kind per failed check, in the reference's order.

use serde_json::{Value, json};

use super::support::*;
use crate::protocol::ErrorCode;

/// A `citation.get` request; like the exact gets it carries no context.
fn get(input: Value) -> Value {
    json!({"request_id": "req_c", "op": "citation.get", "input": input})
}

fn cite(artifact: &Value, range: &str) -> String {
    format!(
        "memoree://artifact/{}@{}{range}",
        artifact["artifact_id"].as_str().unwrap(),
        artifact["revision_id"].as_str().unwrap()
    )
}

/// `(citation_error, details)` of a failed `citation.get`, after the envelope checks every
/// citation error must pass.
fn refused(f: &Fixture, input: Value) -> (String, Value) {
    let error = f.err(get(input));
    assert_eq!(error.code, ErrorCode::CitationError, "{error:?}");
    assert!(!error.retryable && error.hint.is_none(), "{error:?}");
    let kind = error.details["citation_error"].as_str().unwrap().to_owned();
    assert!(
        error.message.starts_with(&format!("citation error ({kind}): ")),
        "{}",
        error.message
    );
    assert!(
        error.details["next_action"].as_str().is_some_and(|s| !s.is_empty()),
        "{error:?}"
    );
    (kind, error.details)
}

const TEXT: &str = "Backups run nightly at 02:00 — façade naïve 日本語 ok.";

backend_test!(fn a_ranged_citation_returns_exactly_its_bytes_without_a_context(store) {
    let f = Fixture::on(store);
    let art = f.put(&main_ctx(), "note", "Backups", TEXT);
    let result = f.ok(get(json!({"citation": cite(&art, "#0-19")})));
    assert_eq!(
        result,
        json!({
            "content_is_untrusted": true,
            "citation": cite(&art, "#0-19"),
            "content": "Backups run nightly",
            "byte_count": 19,
            "media_type": "text/plain; charset=utf-8",
            "truncated": false,
        })
    );
    // The ranged citation a search hit gives for its excerpt is fetched as it is.
    let search = f.search(&main_ctx(), json!({"query": "backups nightly"}));
    let citation = search["hits"][0]["excerpt_citation"].as_str().unwrap().to_owned();
    let fetched = f.ok(get(json!({"citation": citation})));
    assert_eq!(fetched["citation"], citation.as_str());
    assert!(TEXT.contains(fetched["content"].as_str().unwrap()), "{fetched:#}");
});

backend_test!(fn a_span_longer_than_max_bytes_is_narrowed_to_a_character_boundary_and_named(store) {
    let f = Fixture::on(store);
    let art = f.put(&main_ctx(), "note", "Backups", TEXT);
    let total = TEXT.len();
    // Four bytes from the start of "日本語" end inside its second character: back off to 3.
    let start = TEXT.find('日').unwrap();
    let result = f.ok(get(
        json!({"citation": cite(&art, &format!("#{start}-{total}")), "max_bytes": 4}),
    ));
    assert_eq!(result["content"], "日");
    assert_eq!(result["byte_count"], 3);
    assert_eq!(result["truncated"], true);
    assert_eq!(result["citation"], cite(&art, &format!("#{start}-{}", start + 3)));
    assert_eq!(result["remaining_bytes"], total - start - 3);
    // The narrowed citation is itself fetchable and gives the same bytes.
    let again = f.ok(get(json!({"citation": result["citation"]})));
    assert_eq!(
        (again["content"].clone(), again["truncated"].clone()),
        (json!("日"), json!(false))
    );
    assert!(again.get("remaining_bytes").is_none(), "{again:#}");
    // At the default ceiling a long span is cut at 8192 bytes.
    let long = "x".repeat(10_000);
    let big = f.put(&main_ctx(), "note", "Long", &long);
    let result = f.ok(get(json!({"citation": cite(&big, "#0-10000")})));
    assert_eq!(
        (result["byte_count"].clone(), result["remaining_bytes"].clone()),
        (json!(8192), json!(1808))
    );
});

backend_test!(fn every_failed_check_has_its_own_kind_in_the_reference_order(store) {
    let f = Fixture::on(store);
    let art = f.put(&main_ctx(), "note", "Backups", TEXT);
    let png = f.put_binary(&main_ctx(), "Logo", &[0x89, b'P', b'N', b'G', 0, 1, 2, 3]);
    let ranged = cite(&art, "#0-4");
    for max_bytes in [0, 3, 8193] {
        // The output limit is checked first, even before the citation's form.
        let (kind, details) = refused(&f, json!({"citation": "nonsense", "max_bytes": max_bytes}));
        assert_eq!(
            (kind.as_str(), &details["max_bytes"]),
            ("invalid_output_limit", &json!(max_bytes))
        );
    }
    let artifact_id = art["artifact_id"].as_str().unwrap();
    let revision_id = art["revision_id"].as_str().unwrap();
    for malformed in [
        String::new(),
        format!("memoree://claim/{artifact_id}@{revision_id}"),
        format!("{artifact_id}@{revision_id}#0-4"),
        format!("memoree://artifact/{artifact_id}#0-4"),
        format!("memoree://artifact/{artifact_id}@{revision_id}#0-"),
        format!("memoree://artifact/{artifact_id}@{revision_id}#a-4"),
        format!("memoree://artifact/{}@{revision_id}#0-4", "a".repeat(257)),
        format!("{ranged}{}", " ".repeat(1024)),
    ] {
        let (kind, _) = refused(&f, json!({"citation": malformed}));
        assert_eq!(kind, "malformed_citation", "{malformed:?}");
    }
    let (kind, details) = refused(&f, json!({"citation": cite(&art, "#9-9")}));
    assert_eq!(
        (kind.as_str(), &details["start_byte"], &details["end_byte"]),
        ("span_out_of_range", &json!(9), &json!(9))
    );
    let (kind, details) = refused(
        &f,
        json!({"citation": format!("memoree://artifact/art_missing@{revision_id}#0-4")}),
    );
    assert_eq!(
        (kind.as_str(), &details["artifact_id"]),
        ("unknown_artifact", &json!("art_missing"))
    );
    let (kind, details) = refused(
        &f,
        json!({"citation": format!("memoree://artifact/{artifact_id}@arev_missing#0-4")}),
    );
    assert_eq!(
        (kind.as_str(), &details["revision_id"]),
        ("unknown_revision", &json!("arev_missing"))
    );
    let (kind, details) = refused(&f, json!({"citation": cite(&art, "")}));
    assert_eq!(kind, "range_required");
    assert_eq!(details["citation"], cite(&art, ""));
    assert_eq!(details["media_type"], "text/plain; charset=utf-8");
    assert_eq!(details["total_byte_count"], TEXT.len());
    // A revision citation of binary content needs a range first, then is refused as binary.
    assert_eq!(refused(&f, json!({"citation": cite(&png, "")})).0, "range_required");
    let (kind, details) = refused(&f, json!({"citation": cite(&png, "#0-4")}));
    assert_eq!(
        (kind.as_str(), &details["media_type"], &details["total_byte_count"]),
        ("non_text_content", &json!("image/png"), &json!(8))
    );
    let past = TEXT.len() + 1;
    let (kind, details) = refused(&f, json!({"citation": cite(&art, &format!("#0-{past}"))}));
    assert_eq!(
        (kind.as_str(), &details["end_byte"], &details["total_byte_count"]),
        ("span_out_of_range", &json!(past), &json!(TEXT.len()))
    );
    let inside = TEXT.find('日').unwrap() + 1;
    let (kind, details) = refused(
        &f,
        json!({"citation": cite(&art, &format!("#{inside}-{}", inside + 4))}),
    );
    assert_eq!(
        (kind.as_str(), &details["start_byte"]),
        ("utf8_boundary", &json!(inside))
    );
});

backend_test!(fn forgotten_and_superseded_revisions_are_served_but_purged_bytes_are_gone(store) {
    let f = Fixture::on(store);
    let art = f.put(&main_ctx(), "note", "Backups", TEXT);
    let old = cite(&art, "#0-7");
    f.revise(&main_ctx(), &art, "Backups moved to hourly.");
    assert_eq!(f.ok(get(json!({"citation": old})))["content"], "Backups");
    f.mutate(
        &main_ctx(),
        "artifact.forget",
        json!({"artifact_id": art["artifact_id"], "reason": "outdated"}),
    );
    assert_eq!(f.ok(get(json!({"citation": old})))["content"], "Backups");
    f.mutate(
        &main_ctx(),
        "artifact.purge",
        json!({"artifact_id": art["artifact_id"], "reason": "leaked"}),
    );
    let error = f.err(get(json!({"citation": old})));
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    assert_eq!(error.details["state"], "purged", "{error:?}");
});
