//! One failure per error class through `memoree mcp`: each is a tool error (`isError`)
//! whose structured content is a schema-valid v1 failure envelope, never a JSON-RPC error.
//!
//! Not reachable through a tool: `UNSUPPORTED_VERSION` (the server always speaks v1) and
//! `REASONER_ERROR` (only `memoree remember` runs a claim compiler).

use serde_json::{Value, json};

use crate::mcp_support::{TestClient, call, connect, connect_with, failed, ok, put_args, summary};
use crate::support::{PROJECT, TempHome, WORKSPACE};

fn code(envelope: &Value) -> &str {
    envelope["error"]["code"].as_str().unwrap()
}

#[tokio::test]
async fn no_ambient_context_is_a_tool_error_that_says_to_run_memoree_init_and_host_roots_fix_it() {
    let home = TempHome::new();
    let lost = connect_with(&home, &home.outside, &[], &[], TestClient::default()).await;
    let envelope = failed(&lost, "recall", json!({"query": "anything"})).await;
    assert_eq!(code(&envelope), "NO_AMBIENT_CONTEXT");
    assert!(
        envelope["error"]["hint"].as_str().unwrap().contains("memoree init"),
        "{envelope}"
    );
    assert_eq!(envelope["error"]["details"]["cwd"], home.outside.display().to_string());
    let result = call(&lost, "artifact_put", put_args("t", "x")).await;
    assert!(summary(&result).contains("NO_AMBIENT_CONTEXT"), "{}", summary(&result));
    // Reads that need no context still work.
    ok(&lost, "capabilities", json!({})).await;
    lost.cancel().await.unwrap();

    // The same working directory, but the host names the project as a root.
    let roots = TestClient {
        roots: vec![format!("file://{}", home.project.display())],
    };
    let rooted = connect_with(&home, &home.outside, &[], &[], roots).await;
    let put = call(&rooted, "artifact_put", put_args("t", "x")).await;
    assert_eq!(put.is_error, Some(false), "{}", summary(&put));
    let context = &put.meta.unwrap().0["memoree/envelope"]["context"];
    assert_eq!(context["project_id"], PROJECT);
    assert_eq!(context["workspace_id"], WORKSPACE);
    assert_eq!(context["resolved_from"], "marker");
    rooted.cancel().await.unwrap();
}

#[tokio::test]
async fn request_and_state_errors_carry_their_v1_codes_hints_and_details() {
    let home = TempHome::new();
    let mcp = connect(&home).await;
    let put = ok(&mcp, "artifact_put", put_args("base", "base text")).await;
    let (art, rev) = (put["artifact_id"].clone(), put["revision_id"].clone());
    let revised = ok(
        &mcp,
        "artifact_revise",
        json!({"artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "v2"}}),
    )
    .await;

    let mut keyed = put_args("k", "one");
    keyed["idempotency_key"] = json!("same-key");
    ok(&mcp, "artifact_put", keyed.clone()).await;
    keyed["content"]["data"] = json!("two");

    let cases = [
        (
            "artifact_put",
            json!({"kind": "note", "title": "t", "content": {"type": "xml", "data": "x"}}),
            "INVALID_REQUEST",
        ),
        ("recall", json!({"query": "x", "surprise": 1}), "INVALID_REQUEST"),
        (
            "recall",
            json!({"query": "x", "horizon": "workspace"}),
            "INVALID_REQUEST",
        ),
        (
            "artifact_put",
            {
                let mut bad_key = put_args("t", "x");
                bad_key["idempotency_key"] = json!(7);
                bad_key
            },
            "INVALID_REQUEST",
        ),
        ("artifact_get", json!({"artifact_id": "art_missing"}), "NOT_FOUND"),
        (
            "artifact_revise",
            json!({"artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "v3"}}),
            "REVISION_CONFLICT",
        ),
        ("artifact_put", keyed, "IDEMPOTENCY_CONFLICT"),
        (
            "recall",
            json!({"query": "base", "min_commit_seq": 1_000_000}),
            "INDEX_NOT_READY",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let envelope = failed(&mcp, tool, arguments.clone()).await;
        assert_eq!(code(&envelope), expected, "{tool} {arguments}: {envelope}");
        assert!(!envelope["error"]["message"].as_str().unwrap().is_empty());
    }
    let conflict = failed(
        &mcp,
        "artifact_revise",
        json!({"artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "v3"}}),
    )
    .await;
    assert_eq!(
        conflict["error"]["details"]["current_revision"], revised["revision_id"],
        "{conflict}"
    );
    let not_ready = failed(&mcp, "recall", json!({"query": "base", "min_commit_seq": 1_000_000})).await;
    assert_eq!(not_ready["error"]["retryable"], true);
    mcp.cancel().await.unwrap();
}

#[tokio::test]
async fn scope_config_size_integrity_transport_and_storage_failures_are_tool_errors() {
    let home = TempHome::new();
    let mcp = connect(&home).await;
    let big = "x".repeat(20 * 1024);
    let stored = ok(&mcp, "artifact_put", put_args("big", &big)).await;
    let art = stored["artifact_id"].clone();

    // SCOPE_VIOLATION: another project's server may read it but not forget it.
    let other = home.root.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(
        other.join(".memoree.toml"),
        format!("schema = 1\nworkspace_id = \"{WORKSPACE}\"\nproject_id = \"prj_other\"\nname = \"o\"\npins = []\n"),
    )
    .unwrap();
    let foreign = connect_with(&home, &other, &[], &[], TestClient::default()).await;
    ok(
        &foreign,
        "artifact_get",
        json!({"artifact_id": art, "include_content": false}),
    )
    .await;
    let refused = failed(
        &foreign,
        "artifact_forget",
        json!({"artifact_id": art, "reason": "not mine"}),
    )
    .await;
    assert_eq!(code(&refused), "SCOPE_VIOLATION");
    foreign.cancel().await.unwrap();

    // CONFIG_ERROR: a broken MEMOREE_CONTEXT.
    let broken = connect_with(
        &home,
        &home.project,
        &[],
        &[("MEMOREE_CONTEXT", "{not json")],
        TestClient::default(),
    )
    .await;
    let envelope = failed(&broken, "search", json!({"query": "x"})).await;
    assert_eq!(code(&envelope), "CONFIG_ERROR");
    broken.cancel().await.unwrap();

    // CONTENT_TOO_LARGE: one byte over the 8 MiB artifact limit.
    let huge = "y".repeat(8 * 1024 * 1024 + 1);
    let envelope = failed(&mcp, "artifact_put", put_args("huge", &huge)).await;
    assert_eq!(code(&envelope), "CONTENT_TOO_LARGE");

    // INTEGRITY_ERROR: the CAS object behind the big artifact is corrupted.
    let hash = stored["blob_hash"].as_str().unwrap();
    let object = home
        .home
        .join("data/blobs")
        .join(&hash[0..2])
        .join(&hash[2..4])
        .join(hash);
    let mut bytes = std::fs::read(&object).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&object, bytes).unwrap();
    let envelope = failed(&mcp, "artifact_get", json!({"artifact_id": art})).await;
    assert_eq!(code(&envelope), "INTEGRITY_ERROR");
    mcp.cancel().await.unwrap();

    // INTERNAL_ERROR (retryable storage_full): a daemon started on a full disk.
    let full = TempHome::new();
    let flag = full.root.join("disk-full");
    std::fs::write(&flag, b"").unwrap();
    let flag_env = flag.display().to_string();
    let mcp = connect_with(
        &full,
        &full.project,
        &[],
        &[("MEMOREE_FAULT_DISK_FULL_FLAG", flag_env.as_str())],
        TestClient::default(),
    )
    .await;
    let envelope = failed(&mcp, "artifact_put", put_args("t", &"z".repeat(20 * 1024))).await;
    assert_eq!(code(&envelope), "INTERNAL_ERROR");
    assert_eq!(envelope["error"]["retryable"], true);
    assert_eq!(envelope["error"]["details"]["reason"], "storage_full");
    mcp.cancel().await.unwrap();

    // TRANSPORT_ERROR (retryable): no daemon and no autostart.
    let idle = TempHome::new();
    let mcp = connect_with(&idle, &idle.project, &["--no-autostart"], &[], TestClient::default()).await;
    let envelope = failed(&mcp, "doctor", json!({})).await;
    assert_eq!(code(&envelope), "TRANSPORT_ERROR");
    assert_eq!(envelope["error"]["retryable"], true);
    mcp.cancel().await.unwrap();
}
