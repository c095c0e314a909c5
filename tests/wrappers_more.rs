//! Round trips of the remaining human wrappers: the graph commands (`link`, `relation
//! put|list`, `conflict list`), the retrieval commands (`search`, `recall`, `context build`)
//! and the discovery and maintenance commands (`instructions`, `schema`, `doctor`, `verify`,
//! `reindex`, `backup create`). Each test checks that the flags reach the operation and that
//! the envelope says what the flag asked for, not only that it succeeded.

use serde_json::{Value, json};

use crate::support::{PROJECT, TempHome, WORKSPACE, code, field};

/// The marker context every wrapper attaches, at `horizon`.
fn assert_context(body: &Value, horizon: &str) {
    let context = &body["context"];
    assert_eq!(context["workspace_id"], WORKSPACE, "{body}");
    assert_eq!(context["project_id"], PROJECT, "{body}");
    assert_eq!(context["resolved_from"], "marker", "{body}");
    assert_eq!(context["horizon"], horizon, "{body}");
    assert_eq!(context["broadened"], horizon != "ambient", "{body}");
}

/// Runs a command that must succeed and returns its envelope.
fn ok(home: &TempHome, args: &[&str]) -> Value {
    let (status, body) = home.run_cli(args);
    assert_eq!(status, 0, "memoree {args:?}: {body}");
    assert_eq!(body["ok"], true, "{body}");
    body
}

/// Runs a command that must fail and returns its exit status, code and message.
fn fails(home: &TempHome, args: &[&str]) -> (i32, String, String) {
    let (status, body) = home.run_cli(args);
    assert_eq!(body["ok"], false, "memoree {args:?} should fail: {body}");
    assert!(
        body.get("context").is_none(),
        "error envelopes carry no context: {body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default().to_owned();
    (status, code(&body).to_owned(), message)
}

fn items<'a>(body: &'a Value, key: &str) -> &'a Vec<Value> {
    body["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} array in {body}"))
}

/// A stored artifact from stdin: (artifact_id, revision_id, commit_seq).
fn put_text(home: &TempHome, title: &str, text: &str) -> (String, String, i64) {
    let (status, body) = home.run_cli_stdin(&["artifact", "put", "-", "--title", title], text);
    assert_eq!(status, 0, "{body}");
    (
        field(&body, "artifact_id").to_owned(),
        field(&body, "revision_id").to_owned(),
        body["commit_seq"].as_i64().unwrap(),
    )
}

/// An asserted claim: (claim_id, revision_id).
fn assert_claim(home: &TempHome, args: &[&str]) -> (String, String) {
    let mut full = vec!["claim", "assert"];
    full.extend_from_slice(args);
    let body = ok(home, &full);
    (
        field(&body, "claim_id").to_owned(),
        field(&body, "revision_id").to_owned(),
    )
}

#[test]
fn link_and_relation_put_create_typed_edges_and_relation_list_reads_them() {
    let home = TempHome::new();
    let (art, _, _) = put_text(&home, "Frame notes", "Frames are capped at 24 MiB.");
    let (a, _) = assert_claim(&home, &["constraint", "Frames are capped at 24 MiB"]);
    let (b, _) = assert_claim(&home, &["constraint", "Frames are capped at 16 MiB"]);

    let source = format!("claim:{a}");
    let target = format!("claim:{b}");
    let linked = ok(&home, &["link", &source, "contradicts", &target]);
    assert_context(&linked, "ambient");
    let edge = &linked["result"];
    assert_eq!(edge["relation"], "contradicts");
    assert_eq!((&edge["source_type"], &edge["source_id"]), (&json!("claim"), &json!(a)));
    assert_eq!((&edge["target_type"], &edge["target_id"]), (&json!("claim"), &json!(b)));
    assert_eq!(edge["metadata"], json!({}));
    assert_eq!(edge["created"], true);
    assert_eq!(edge["commit_seq"], linked["commit_seq"]);
    assert_eq!(edge["relation_commit_seq"], 4);
    let contradiction = edge["relation_id"].as_str().unwrap().to_owned();
    assert!(contradiction.starts_with("rel_"), "{edge}");

    // `relation put` is the same command; kebab-case relation names go out in snake_case.
    let artifact = format!("artifact:{art}");
    let args = [
        "relation",
        "put",
        &target,
        "derived-from",
        &artifact,
        "--idempotency-key",
        "derive-b",
    ];
    let put = ok(&home, &args);
    assert_eq!(put["result"]["relation"], "derived_from");
    assert_eq!(put["result"]["target_type"], "artifact");
    assert_eq!(put["result"]["target_id"], art.as_str());
    let derived = field(&put, "relation_id").to_owned();
    // The same key replays the acknowledgement.
    let replay = ok(&home, &args);
    assert_eq!(replay["result"]["created"], false);
    assert_eq!(replay["result"]["relation_id"], derived.as_str());
    assert_eq!(replay["commit_seq"], put["commit_seq"]);

    let listed = ok(&home, &["relation", "list", &artifact]);
    assert_context(&listed, "ambient");
    assert_eq!(listed["result"]["entity_type"], "artifact");
    assert_eq!(listed["result"]["entity_id"], art.as_str());
    assert_eq!(listed["result"]["direction"], "both");
    let rows = items(&listed, "relations");
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["relation_id"], derived.as_str());
    assert_eq!(rows[0]["source_id"], b.as_str());

    // Newest first over both directions; the filters narrow it.
    let both = ok(&home, &["relation", "list", &target]);
    let ids: Vec<&str> = items(&both, "relations")
        .iter()
        .map(|r| r["relation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [derived.as_str(), contradiction.as_str()]);
    let incoming = ok(
        &home,
        &[
            "relation",
            "list",
            &target,
            "--direction",
            "incoming",
            "--relation",
            "contradicts",
        ],
    );
    assert_eq!(incoming["result"]["relation"], "contradicts");
    let rows = items(&incoming, "relations");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["relation_id"], contradiction.as_str());
    let page = ok(&home, &["relation", "list", &target, "--limit", "1"]);
    assert_eq!(page["result"]["truncated"], true);
    let cursor = page["result"]["next_before_commit_seq"].to_string();
    let rest = ok(&home, &["relation", "list", &target, "--before-commit-seq", &cursor]);
    assert_eq!(items(&rest, "relations")[0]["relation_id"], contradiction.as_str());
    let none = ok(&home, &["relation", "list", &source, "--direction", "incoming"]);
    assert!(items(&none, "relations").is_empty());
    assert!(none["result"]["broaden_hint"].is_string(), "{none}");

    // Broader horizons need a reason, and the wrapper passes it through.
    let (status, code, message) = fails(&home, &["relation", "list", &source, "--horizon", "workspace"]);
    assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"));
    assert!(message.contains("non-empty reason"), "{message}");
    let wide = ok(
        &home,
        &[
            "relation",
            "list",
            &source,
            "--horizon",
            "workspace",
            "--reason",
            "check the sibling projects",
        ],
    );
    assert_context(&wide, "workspace");
    assert_eq!(wide["result"]["horizon"], "workspace");
    assert_eq!(items(&wide, "relations").len(), 1);

    // Entity syntax is checked before anything is sent.
    for bad in ["note:x", "claim:", "clm_only"] {
        let (status, code, _) = fails(&home, &["link", bad, "supports", &target]);
        assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"), "{bad}");
    }
    let missing = format!("claim:clm_{}", "0".repeat(26));
    let (status, code, _) = fails(&home, &["link", &missing, "supports", &target]);
    assert_eq!((status, code.as_str()), (3, "NOT_FOUND"));
}

#[test]
fn conflict_list_shows_cases_with_flags_for_staleness_paging_and_horizon() {
    let home = TempHome::new();
    let (a, _) = assert_claim(&home, &["fact", "The cache TTL is 30 seconds"]);
    let (b, b_rev) = assert_claim(&home, &["fact", "The cache TTL is 60 seconds"]);
    let linked = ok(
        &home,
        &["link", &format!("claim:{a}"), "contradicts", &format!("claim:{b}")],
    );
    let relation = field(&linked, "relation_id").to_owned();

    let listed = ok(&home, &["conflict", "list"]);
    assert_context(&listed, "ambient");
    assert_eq!(listed["result"]["horizon"], "ambient");
    assert_eq!(listed["result"]["include_stale"], false);
    let cases = items(&listed, "conflicts");
    assert_eq!(cases.len(), 1, "{listed}");
    let case = &cases[0];
    assert_eq!(case["state"], "open");
    assert_eq!(case["relation_id"], relation.as_str());
    assert_eq!(case["source"]["claim_id"], a.as_str());
    assert_eq!(case["target"]["claim_id"], b.as_str());
    assert_eq!(case["target"]["frozen"]["revision_id"], b_rev.as_str());
    assert_eq!(case["target"]["frozen_is_current"], true);

    // Revising one side stales the case and reopens one over the new revision.
    ok(
        &home,
        &[
            "claim",
            "revise",
            &b,
            "The cache TTL is 45 seconds",
            "--if-revision",
            &b_rev,
        ],
    );
    let open = ok(&home, &["conflict", "list"]);
    let cases = items(&open, "conflicts");
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["state"], "open");
    assert_ne!(cases[0]["target"]["frozen"]["revision_id"], b_rev.as_str());
    let all = ok(&home, &["conflict", "list", "--include-stale"]);
    assert_eq!(all["result"]["include_stale"], true);
    let states: Vec<&str> = items(&all, "conflicts")
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["open", "stale"], "newest first: {all}");

    let page = ok(&home, &["conflict", "list", "--include-stale", "--limit", "1"]);
    assert_eq!(items(&page, "conflicts").len(), 1);
    assert_eq!(page["result"]["truncated"], true);
    let cursor = page["result"]["next_before_case_sequence"].to_string();
    let rest = ok(
        &home,
        &["conflict", "list", "--include-stale", "--before-case-sequence", &cursor],
    );
    assert_eq!(items(&rest, "conflicts")[0]["state"], "stale");
    assert_eq!(rest["result"]["truncated"], false);

    let (status, code, message) = fails(&home, &["conflict", "list", "--horizon", "workspace"]);
    assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"));
    assert!(message.contains("non-empty reason"), "{message}");
    let wide = ok(
        &home,
        &[
            "conflict",
            "list",
            "--horizon",
            "workspace",
            "--reason",
            "release review",
        ],
    );
    assert_context(&wide, "workspace");
    assert_eq!(wide["result"]["horizon"], "workspace");
    assert_eq!(items(&wide, "conflicts").len(), 1);
    let personal = ok(
        &home,
        &[
            "conflict",
            "list",
            "--horizon",
            "personal",
            "--reason",
            "whole-store audit",
        ],
    );
    assert_context(&personal, "personal");
}

#[test]
fn search_finds_what_was_put_and_honours_every_flag() {
    let home = TempHome::new();
    let (art, rev, seq) = put_text(&home, "Fox notes", "The quick brown fox jumps over the lazy dog.");
    let (other, _, _) = put_text(&home, "Second fox", "A fox again.");

    let found = ok(&home, &["search", "quick", "brown"]);
    assert_context(&found, "ambient");
    assert!(found.get("commit_seq").is_none(), "a read has no commit_seq: {found}");
    let result = &found["result"];
    assert_eq!(result["query"], "quick brown", "query words are joined with one space");
    assert_eq!(result["retrieval_mode"], "sqlite_fts5_bm25+bounded_recency_v1");
    let hits = items(&found, "hits");
    assert_eq!(hits.len(), 1, "{found}");
    let hit = &hits[0];
    assert_eq!(hit["entity_type"], "artifact");
    assert_eq!(hit["entity_id"], art.as_str());
    assert_eq!(hit["revision_id"], rev.as_str());
    assert_eq!(hit["citation"], format!("memoree://artifact/{art}@{rev}"));
    assert_eq!(hit["title"], "Fox notes");
    assert_eq!(hit["excerpt"], "The ‹quick› ‹brown› fox jumps over the lazy dog.");
    assert_eq!(hit["provenance"], json!({"source": "stdin"}));
    assert_eq!(hit["matched_by"], json!(["fts5_bm25", "bounded_recency_v1"]));
    assert_eq!(hit["ranking"]["recency_enabled"], true);

    let lexical = ok(&home, &["search", "quick", "--no-recency"]);
    assert_eq!(lexical["result"]["retrieval_mode"], "sqlite_fts5_bm25");
    let hit = &items(&lexical, "hits")[0];
    assert_eq!(hit["matched_by"], json!(["fts5_bm25"]));
    assert_eq!(hit["ranking"]["recency_bonus"], 0.0);
    assert_eq!(hit["score"], hit["ranking"]["lexical_score"]);

    let seq_arg = seq.to_string();
    let fresh = ok(&home, &["search", "quick", "--min-commit-seq", &seq_arg]);
    assert_eq!(items(&fresh, "hits").len(), 1);
    let (status, body) = home.run_cli(&["search", "quick", "--min-commit-seq", "99"]);
    assert_eq!((status, code(&body)), (6, "INDEX_NOT_READY"), "{body}");
    assert_eq!(body["error"]["retryable"], true);
    assert_eq!(body["error"]["details"]["requested_commit_seq"], 99);
    assert_eq!(body["error"]["details"]["current_commit_seq"], 2);

    let page = ok(&home, &["search", "fox", "--limit", "1"]);
    assert_eq!(items(&page, "hits").len(), 1);
    assert_eq!(page["result"]["truncated"], true);
    assert!(page["result"]["refine_hint"].is_string(), "{page}");
    let (status, _, message) = fails(&home, &["search", "fox", "--limit", "101"]);
    assert_eq!(status, 2);
    assert!(message.contains("limit"), "{message}");

    ok(&home, &["artifact", "forget", &other, "--reason", "duplicate"]);
    let current = ok(&home, &["search", "again"]);
    assert!(items(&current, "hits").is_empty());
    assert!(current["result"]["broaden_hint"].is_string(), "{current}");
    let historical = ok(&home, &["search", "again", "--include-historical"]);
    let hits = items(&historical, "hits");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["entity_id"], other.as_str());
    assert_eq!(hits[0]["status"], "forgotten");

    let (status, _, message) = fails(&home, &["search", "fox", "--horizon", "personal"]);
    assert_eq!(status, 2);
    assert!(message.contains("non-empty reason"), "{message}");
    let wide = ok(
        &home,
        &["search", "fox", "--horizon", "personal", "--reason", "all local memory"],
    );
    assert_context(&wide, "personal");
    assert_eq!(wide["result"]["horizon"], "personal");
    assert!(wide["result"].get("broaden_hint").is_none());
}

#[test]
fn recall_returns_grounded_claims_within_the_requested_bounds() {
    let home = TempHome::new();
    let (art, rev, _) = put_text(&home, "Transport limits", "Each frame is capped at 24 MiB.");
    let span = format!("{art}@{rev}#5-30");
    let (claim, claim_rev) = assert_claim(
        &home,
        &[
            "constraint",
            "Frames",
            "are",
            "capped",
            "at",
            "24",
            "MiB",
            "--evidence",
            &span,
        ],
    );
    assert_claim(&home, &["fact", "Capped frames keep memory bounded"]);

    let recalled = ok(&home, &["recall", "frame", "frames"]);
    assert_context(&recalled, "ambient");
    let result = &recalled["result"];
    assert_eq!(result["query"], "frame frames");
    assert_eq!(result["presence"], "claims");
    assert_eq!(result["content_is_untrusted"], true);
    assert_eq!(result["searched_horizons"], json!(["ambient"]));
    let claims = items(&recalled, "claims");
    assert_eq!(claims.len(), 2, "{recalled}");
    let grounded = claims
        .iter()
        .find(|c| c["claim_id"] == claim.as_str())
        .expect("the grounded claim is recalled");
    assert_eq!(grounded["status"], "current");
    assert_eq!(grounded["citation"], format!("memoree://claim/{claim}@{claim_rev}"));
    let evidence = &grounded["evidence"][0];
    assert_eq!(evidence["citation"], format!("memoree://artifact/{art}@{rev}#5-30"));
    assert_eq!(
        (&evidence["start_byte"], &evidence["end_byte"]),
        (&json!(5), &json!(30))
    );
    assert_eq!(evidence["excerpt"], "frame is capped at 24 MiB");
    assert_eq!(evidence["excerpt_truncated"], false);
    let refs = items(&recalled, "artifact_refs");
    assert_eq!(refs[0]["artifact_id"], art.as_str());

    let bounded = ok(
        &home,
        &[
            "recall",
            "frame",
            "frames",
            "--max-claims",
            "1",
            "--max-excerpt-bytes",
            "5",
            "--no-recency",
        ],
    );
    let claims = items(&bounded, "claims");
    assert_eq!(claims.len(), 1);
    assert_eq!(bounded["result"]["claims_truncated"], true);
    assert!(bounded["result"]["claims_refine_hint"].is_string(), "{bounded}");
    assert_eq!(claims[0]["matched_by"], json!(["fts5_bm25"]));
    let refs = items(&bounded, "artifact_refs");
    assert_eq!(refs[0]["excerpt"], "Each ");
    assert_eq!(refs[0]["excerpt_truncated"], true);
    let only_refs = ok(&home, &["recall", "each", "--max-artifact-refs", "1"]);
    assert_eq!(only_refs["result"]["presence"], "artifacts_only");

    let (status, body) = home.run_cli(&["recall", "frame", "--min-commit-seq", "99"]);
    assert_eq!((status, code(&body)), (6, "INDEX_NOT_READY"), "{body}");
    for (flag, value) in [
        ("--max-claims", "11"),
        ("--max-artifact-refs", "21"),
        ("--max-excerpt-bytes", "1025"),
    ] {
        let (status, code, message) = fails(&home, &["recall", "frame", flag, value]);
        assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"), "{flag}");
        assert!(message.contains(&flag[2..].replace('-', "_")), "{message}");
    }
}

#[test]
fn context_build_stays_within_max_bytes_and_reports_its_manifest() {
    let home = TempHome::new();
    let (art, rev, seq) = put_text(
        &home,
        "Storage design",
        "SQLite is authoritative; the filesystem CAS stores the blobs.",
    );
    assert_claim(&home, &["decision", "SQLite is the authoritative store"]);

    let full = ok(&home, &["context", "build", "sqlite", "authoritative"]);
    assert_context(&full, "ambient");
    let result = &full["result"];
    assert_eq!(result["query"], "sqlite authoritative");
    assert_eq!(result["content_is_untrusted"], true);
    assert_eq!(result["max_bytes"], 16384);
    assert_eq!(result["omitted_count"], 0);
    let markdown = result["rendered_markdown"].as_str().unwrap();
    assert_eq!(result["used_bytes"], markdown.len());
    let citation = format!("memoree://artifact/{art}@{rev}");
    assert!(markdown.contains(&citation), "{markdown}");
    let manifest = items(&full, "manifest");
    assert_eq!(manifest.len(), 2);
    let item = manifest
        .iter()
        .find(|m| m["entity_id"] == art.as_str())
        .expect("the artifact is in the manifest");
    assert_eq!(item["citation"], citation);
    assert_eq!(item["reason"], "retrieved by fts5_bm25 + bounded_recency_v1");

    let small = ok(
        &home,
        &["context", "build", "sqlite", "authoritative", "--max-bytes", "200"],
    );
    let result = &small["result"];
    assert_eq!(result["max_bytes"], 200);
    let used = result["used_bytes"].as_u64().unwrap();
    assert!(used <= 200, "{small}");
    assert_eq!(result["rendered_markdown"].as_str().unwrap().len() as u64, used);
    assert_eq!(result["omitted_count"], 2, "{small}");
    assert!(items(&small, "manifest").is_empty());

    let empty = ok(&home, &["context", "build", "sqlite", "--max-bytes", "0"]);
    assert_eq!(empty["result"]["used_bytes"], 0);
    assert_eq!(empty["result"]["rendered_markdown"], "");

    let lexical = ok(
        &home,
        &[
            "context",
            "build",
            "sqlite",
            "--no-recency",
            "--limit",
            "1",
            "--min-commit-seq",
            &seq.to_string(),
        ],
    );
    assert_eq!(lexical["result"]["retrieval_truncated"], true);
    assert!(lexical["result"]["refine_hint"].is_string(), "{lexical}");
    assert_eq!(items(&lexical, "manifest")[0]["reason"], "retrieved by fts5_bm25");
    let (status, body) = home.run_cli(&["context", "build", "sqlite", "--min-commit-seq", "99"]);
    assert_eq!((status, code(&body)), (6, "INDEX_NOT_READY"), "{body}");

    let wide = ok(
        &home,
        &[
            "context",
            "build",
            "sqlite",
            "--horizon",
            "workspace",
            "--reason",
            "shared decisions",
        ],
    );
    assert_context(&wide, "workspace");
}

#[test]
fn instructions_and_schema_describe_the_protocol() {
    let home = TempHome::new();
    let json = ok(&home, &["instructions", "--format", "json"]);
    assert!(json.get("context").is_none(), "instructions is context-free: {json}");
    assert_eq!(json["result"]["format"], "json");
    let document = &json["result"]["content"];
    assert_eq!(document["product"], "memoree");
    assert_eq!(document["protocol_version"], 1);
    assert_eq!(document["invocation"]["command"], "memoree call");
    let rules = document["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["id"] == "explicit-broadening"), "{document}");

    let markdown = ok(&home, &["instructions"]);
    assert_eq!(markdown["result"]["format"], "markdown");
    let text = markdown["result"]["content"].as_str().unwrap();
    assert!(text.contains("`memoree call`"), "{text}");
    let agents = ok(&home, &["instructions", "--format", "agents-md"]);
    assert_eq!(agents["result"]["format"], "agents-md");
    assert_eq!(agents["result"]["content"], text);
    let (status, code, message) = fails(&home, &["instructions", "--format", "html"]);
    assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"));
    assert!(message.contains("format"), "{message}");

    let schema = ok(&home, &["schema"]);
    let bundle = &schema["result"];
    assert_eq!(bundle["schema_bundle_version"], 1);
    assert_eq!(bundle["protocol_version"], 1);
    assert_eq!(bundle["request"]["title"], "Request");
    for op in [
        "search",
        "memory.recall",
        "context.build",
        "backup.create",
        "relation.put",
    ] {
        assert!(bundle["operation_inputs"][op].is_object(), "{op}");
        assert!(bundle["result_types"][op].is_object(), "{op}");
    }
    assert!(bundle["supporting_types"]["evidence_locator"].is_object());
}

#[test]
fn doctor_verify_and_reindex_report_on_the_store() {
    let home = TempHome::new();
    put_text(&home, "Heron", "Herons stand still.");
    let (art, rev, _) = put_text(&home, "Egret", "Egrets follow cattle.");
    ok(
        &home,
        &[
            "claim",
            "assert",
            "fact",
            "Egrets follow cattle",
            "--evidence",
            &format!("{art}@{rev}"),
        ],
    );

    let doctor = ok(&home, &["doctor"]);
    assert!(doctor.get("context").is_none());
    let report = &doctor["result"];
    assert_eq!(report["status"], "ok");
    assert_eq!(report["running"], true);
    assert_eq!(report["authoritative_store"], "sqlite_wal");
    assert_eq!(report["last_commit_seq"], 3);
    assert_eq!(report["data_dir"], home.home.join("data").to_str().unwrap());

    let verify = ok(&home, &["verify"]);
    let report = &verify["result"];
    assert_eq!(report["ok"], true, "{verify}");
    assert_eq!(report["issues"], json!([]));
    assert_eq!(report["last_commit_seq"], 3);
    assert_eq!(report["checked_artifact_revisions"], 2);
    assert_eq!(report["checked_claim_revisions"], 1);

    let reindex = ok(&home, &["reindex"]);
    assert!(
        reindex.get("commit_seq").is_none(),
        "reindex is not a mutation: {reindex}"
    );
    let report = &reindex["result"];
    assert_eq!(report["reindexed_artifact_revisions"], 2);
    assert_eq!(report["reindexed_claim_revisions"], 1);
    assert_eq!(report["removed_orphan_rows"], 0);
    assert_eq!(report["last_commit_seq"], 3);
    // The rebuilt projection serves the same search, and nothing advanced.
    let found = ok(&home, &["search", "egrets"]);
    assert_eq!(items(&found, "hits").len(), 2);
    assert_eq!(ok(&home, &["doctor"])["result"]["last_commit_seq"], 3);
}

#[test]
fn backup_create_writes_a_fresh_absolute_destination_once() {
    let home = TempHome::new();
    put_text(&home, "Kept", "Worth a backup.");
    let (_, _, seq) = put_text(&home, "Also kept", "Also worth a backup.");
    let destination = home.root.join("backups/nightly");
    let dest = destination.to_str().unwrap();

    let backup = ok(&home, &["backup", "create", dest]);
    assert!(backup.get("commit_seq").is_none(), "backup is not a mutation: {backup}");
    let report = &backup["result"];
    assert_eq!(report["destination"], dest);
    assert_eq!(
        report["database"],
        destination.join("memoree.sqlite3").to_str().unwrap()
    );
    assert_eq!(report["blobs"], destination.join("blobs").to_str().unwrap());
    assert_eq!(report["commit_seq"], seq);
    assert_eq!(report["copied_external_blobs"], 0);
    assert!(report["created_at"].is_string());
    assert!(destination.join("memoree.sqlite3").is_file());
    assert!(destination.join("blobs").is_dir());

    let (status, code, message) = fails(&home, &["backup", "create", dest]);
    assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"));
    assert!(message.contains("already exists"), "{message}");
    let (status, code, _) = fails(&home, &["backup", "create", "/"]);
    assert_eq!((status, code.as_str()), (2, "INVALID_REQUEST"));
    // Nothing advanced: the next write is the next sequence.
    let (_, _, next) = put_text(&home, "After", "Written after the backup.");
    assert_eq!(next, seq + 1);
}
