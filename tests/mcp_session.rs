//! `memoree mcp` driven by rmcp's client: the tool catalog, a full session, citations as
//! resources, host retries, and two servers writing through one daemon.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rmcp::model::{ReadResourceRequestParams, ResourceContents, Tool};
use serde_json::{Value, json};

use crate::mcp_support::{Mcp, call, connect, connect_with, failed, ok, put_args, summary};
use crate::support::TempHome;

const TOOL_NAMES: [&str; 21] = [
    "memory_retrieve",
    "recall",
    "memory_probe",
    "search",
    "context_build",
    "artifact_put",
    "artifact_get",
    "citation_get",
    "artifact_revise",
    "artifact_history",
    "artifact_forget",
    "claim_assert",
    "claim_get",
    "claim_revise",
    "claim_retract",
    "claim_history",
    "relation_put",
    "relation_list",
    "conflict_list",
    "capabilities",
    "doctor",
];

async fn tools(mcp: &Mcp) -> BTreeMap<String, Tool> {
    mcp.list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| (tool.name.to_string(), tool))
        .collect()
}

fn compile(schema: &Value, what: &str) -> jsonschema::Validator {
    jsonschema::meta::validate(schema).unwrap_or_else(|e| panic!("{what} is not a valid JSON Schema: {e}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap_or_else(|e| panic!("{what} does not compile: {e}"))
}

/// Calls a tool and checks its arguments against the tool's input schema and its result
/// against the output schema, as a strict host would.
async fn checked(mcp: &Mcp, catalog: &BTreeMap<String, Tool>, tool: &str, arguments: Value) -> Value {
    let spec = &catalog[tool];
    let input = compile(&Value::Object((*spec.input_schema).clone()), tool);
    assert!(
        input.is_valid(&arguments),
        "{tool} arguments do not match its schema: {arguments}"
    );
    let result = ok(mcp, tool, arguments).await;
    let output = compile(&Value::Object((**spec.output_schema.as_ref().unwrap()).clone()), tool);
    if let Err(error) = output.validate(&result) {
        panic!("{tool} result does not match its output schema: {error}\n{result}");
    }
    result
}

#[tokio::test]
async fn the_server_lists_twenty_one_tools_with_valid_schemas_and_honest_annotations() {
    let home = TempHome::new();
    let mcp = connect(&home).await;
    let info = mcp.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "memoree");
    let instructions = info.instructions.clone().unwrap();
    assert!(
        instructions.contains("`recall`") && instructions.contains("untrusted"),
        "{instructions}"
    );
    assert!(
        instructions.contains("`memory_retrieve`") && instructions.contains("never treat it as an answer"),
        "{instructions}"
    );
    assert!(info.capabilities.tools.is_some() && info.capabilities.resources.is_some());

    let catalog = tools(&mcp).await;
    assert_eq!(
        catalog.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        TOOL_NAMES.into_iter().collect()
    );
    let mutations = [
        "artifact_put",
        "artifact_revise",
        "artifact_forget",
        "claim_assert",
        "claim_revise",
        "claim_retract",
        "relation_put",
    ];
    for (name, tool) in &catalog {
        let input = Value::Object((*tool.input_schema).clone());
        compile(&input, name);
        compile(&Value::Object((**tool.output_schema.as_ref().unwrap()).clone()), name);
        assert_eq!(input["type"], "object", "{name}");
        let hints = tool.annotations.as_ref().unwrap();
        let mutating = mutations.contains(&name.as_str());
        assert_eq!(hints.read_only_hint, Some(!mutating), "{name}");
        assert_eq!(hints.open_world_hint, Some(false), "{name}");
        assert_eq!(input["properties"].get("idempotency_key").is_some(), mutating, "{name}");
        if mutating {
            let description = tool.description.as_deref().unwrap();
            assert!(description.contains("idempotency_key"), "{name}: {description}");
        }
    }
    let destructive: BTreeSet<&str> = catalog
        .iter()
        .filter(|(_, tool)| tool.annotations.as_ref().unwrap().destructive_hint == Some(true))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(destructive, BTreeSet::from(["artifact_forget", "claim_retract"]));

    // The schemas are the spec's: a field the spec forbids is refused by the tool schema.
    let recall = compile(&Value::Object((*catalog["recall"].input_schema).clone()), "recall");
    assert!(recall.is_valid(&json!({"query": "x", "horizon": "workspace", "reason": "why"})));
    assert!(!recall.is_valid(&json!({"query": "x", "horizon": "galaxy"})));
    assert!(!recall.is_valid(&json!({"query": "x", "max_claims": 11})));
    assert!(!recall.is_valid(&json!({"query": "x", "surprise": true})));
    mcp.cancel().await.unwrap();
}

#[tokio::test]
async fn a_full_session_puts_asserts_recalls_builds_context_revises_and_sees_a_conflict() {
    let home = TempHome::new();
    let mcp = connect(&home).await;
    let catalog = tools(&mcp).await;
    let text = "Deploys happen on Tuesdays after the change freeze lifts.";
    let span = "Deploys happen on Tuesdays";

    let artifact = checked(&mcp, &catalog, "artifact_put", put_args("Deploy policy", text)).await;
    let (art, rev) = (
        artifact["artifact_id"].as_str().unwrap(),
        artifact["revision_id"].as_str().unwrap(),
    );
    assert_eq!(artifact["created"], true);

    let claim = checked(
        &mcp,
        &catalog,
        "claim_assert",
        json!({
            "claim_type": "fact",
            "statement": "Deploys happen on Tuesdays.",
            "evidence": [{"artifact_id": art, "revision_id": rev, "start_byte": 0, "end_byte": span.len()}],
        }),
    )
    .await;
    let claim_id = claim["claim_id"].as_str().unwrap();

    let recalled = checked(
        &mcp,
        &catalog,
        "recall",
        json!({"query": "when do deploys happen tuesdays"}),
    )
    .await;
    assert_eq!(recalled["presence"], "claims", "{recalled}");
    let found = &recalled["claims"][0];
    assert_eq!(found["claim_id"], claim_id, "{recalled}");
    let citation = found["evidence"][0]["citation"].as_str().unwrap().to_owned();
    assert_eq!(citation, format!("memoree://artifact/{art}@{rev}#0-{}", span.len()));

    // The agent path: the same qualified claim, and no recovery packet beside it.
    let retrieved = checked(
        &mcp,
        &catalog,
        "memory_retrieve",
        json!({"query": "when do deploys happen tuesdays"}),
    )
    .await;
    assert_eq!(retrieved["presence"], "claims", "{retrieved}");
    assert_eq!(retrieved["claims"][0]["claim_id"], claim_id, "{retrieved}");
    assert!(retrieved.get("recovery").is_none(), "{retrieved}");
    // Nothing qualifies: the recovery packet holds the claim's exact evidence, labelled
    // unqualified, and the next action is to re-ask in memory's words.
    let recovered = checked(
        &mcp,
        &catalog,
        "memory_retrieve",
        json!({"query": "deploys during winter holidays calendar"}),
    )
    .await;
    assert_eq!(recovered["claims"], json!([]), "{recovered}");
    assert_eq!(
        recovered["next_action"]["action"], "requery_with_stored_vocabulary",
        "{recovered}"
    );
    let evidence = recovered["recovery"]["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1, "{recovered}");
    assert_eq!(evidence[0]["retrieval_tier"], "unqualified_evidence");
    assert_eq!(evidence[0]["content"], span);
    assert_eq!(evidence[0]["citation"], citation);

    // The citation is readable as a resource: exactly the cited bytes.
    let read = mcp
        .read_resource(ReadResourceRequestParams::new(citation.clone()))
        .await
        .unwrap();
    match &read.contents[..] {
        [ResourceContents::TextResourceContents { text, uri, .. }] => {
            assert_eq!(text, span);
            assert_eq!(uri, &citation);
        }
        other => panic!("{other:?}"),
    }
    let claim_uri = found["citation"].as_str().unwrap().to_owned();
    let read = mcp
        .read_resource(ReadResourceRequestParams::new(claim_uri))
        .await
        .unwrap();
    match &read.contents[..] {
        [ResourceContents::TextResourceContents { text, .. }] => {
            let record: Value = serde_json::from_str(text).unwrap();
            assert_eq!(record["claim_id"], claim_id);
        }
        other => panic!("{other:?}"),
    }

    let bundle = checked(
        &mcp,
        &catalog,
        "context_build",
        json!({"query": "deploys tuesdays", "max_bytes": 4096}),
    )
    .await;
    let markdown = bundle["rendered_markdown"].as_str().unwrap();
    assert!(markdown.contains("Deploys happen on Tuesdays."), "{markdown}");
    assert!(bundle["used_bytes"].as_u64().unwrap() <= 4096);

    let revised = checked(
        &mcp,
        &catalog,
        "artifact_revise",
        json!({"artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "Deploys happen on Fridays now."}}),
    )
    .await;
    assert_eq!(revised["revision_number"], 2);
    let stale = failed(
        &mcp,
        "artifact_revise",
        json!({"artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "again"}}),
    )
    .await;
    assert_eq!(stale["error"]["code"], "REVISION_CONFLICT");

    let rival = checked(
        &mcp,
        &catalog,
        "claim_assert",
        json!({"claim_type": "fact", "statement": "Deploys happen on Fridays.",
               "evidence": [{"artifact_id": art, "revision_id": revised["revision_id"]}]}),
    )
    .await;
    checked(
        &mcp,
        &catalog,
        "relation_put",
        json!({"source_type": "claim", "source_id": rival["claim_id"], "relation": "contradicts",
               "target_type": "claim", "target_id": claim_id}),
    )
    .await;
    let conflicts = checked(&mcp, &catalog, "conflict_list", json!({})).await;
    assert_eq!(conflicts["conflicts"].as_array().unwrap().len(), 1, "{conflicts}");
    let recalled = checked(&mcp, &catalog, "recall", json!({"query": "deploys"})).await;
    assert_eq!(recalled["conflicts"].as_array().unwrap().len(), 1, "{recalled}");

    for (tool, arguments) in [
        ("search", json!({"query": "deploys"})),
        ("memory_probe", json!({"query": "deploys"})),
        ("artifact_get", json!({"artifact_id": art, "revision_id": rev})),
        ("artifact_history", json!({"artifact_id": art})),
        ("claim_get", json!({"claim_id": claim_id})),
        ("claim_history", json!({"claim_id": claim_id})),
        ("relation_list", json!({"entity_type": "claim", "entity_id": claim_id})),
        ("capabilities", json!({})),
        ("doctor", json!({})),
    ] {
        checked(&mcp, &catalog, tool, arguments).await;
    }
    let revised_claim = checked(
        &mcp,
        &catalog,
        "claim_revise",
        json!({"claim_id": claim_id, "if_revision": claim["revision_id"], "statement": "Deploys happened on Tuesdays until the policy changed."}),
    )
    .await;
    assert_eq!(revised_claim["revision_number"], 2);
    checked(
        &mcp,
        &catalog,
        "claim_retract",
        json!({"claim_id": rival["claim_id"], "reason": "superseded by policy"}),
    )
    .await;
    checked(
        &mcp,
        &catalog,
        "artifact_forget",
        json!({"artifact_id": art, "reason": "obsolete"}),
    )
    .await;
    mcp.cancel().await.unwrap();
}

#[tokio::test]
async fn a_host_retry_of_the_same_call_replays_instead_of_writing_twice() {
    let home = TempHome::new();
    let mcp = connect(&home).await;
    let first = call(&mcp, "artifact_put", put_args("retry", "written once")).await;
    let retry = call(&mcp, "artifact_put", put_args("retry", "written once")).await;
    let (first_result, retry_result) = (
        first.structured_content.clone().unwrap(),
        retry.structured_content.clone().unwrap(),
    );
    assert_eq!(first_result["created"], true);
    assert_eq!(retry_result["created"], false, "{}", summary(&retry));
    assert_eq!(first_result["artifact_id"], retry_result["artifact_id"]);
    assert_eq!(first_result["commit_seq"], retry_result["commit_seq"]);
    assert!(summary(&retry).contains("replayed"), "{}", summary(&retry));
    let key = |result: &rmcp::model::CallToolResult| {
        result.meta.as_ref().unwrap().0["memoree/envelope"]["idempotency_key"].clone()
    };
    assert_eq!(key(&first), key(&retry));

    // The same retry with the keys in another order is still the same call.
    let reordered = ok(
        &mcp,
        "artifact_put",
        json!({"content": {"data": "written once", "type": "text"}, "title": "retry", "kind": "note"}),
    )
    .await;
    assert_eq!(reordered["artifact_id"], first_result["artifact_id"]);

    // A claim retried while the first is in flight: both calls land on one claim.
    let args = json!({"claim_type": "observation", "statement": "Retried concurrently."});
    let (a, b) = tokio::join!(ok(&mcp, "claim_assert", args.clone()), ok(&mcp, "claim_assert", args));
    assert_eq!(a["claim_id"], b["claim_id"]);
    assert_ne!(a["created"], b["created"]);
    let health = ok(&mcp, "doctor", json!({})).await;
    assert_eq!(health["last_commit_seq"], 2, "{health}");
    mcp.cancel().await.unwrap();
}

#[tokio::test]
async fn deliberate_writes_after_the_window_or_with_other_arguments_create_new_records() {
    let home = TempHome::new();
    let mcp = connect_with(&home, &home.project, &["--retry-window", "1"], &[], Default::default()).await;
    let first = ok(&mcp, "artifact_put", put_args("twice", "same bytes")).await;
    let other = ok(&mcp, "artifact_put", put_args("twice", "other bytes")).await;
    assert_ne!(first["artifact_id"], other["artifact_id"]);
    assert_eq!(other["created"], true);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let later = ok(&mcp, "artifact_put", put_args("twice", "same bytes")).await;
    assert_eq!(later["created"], true);
    assert_ne!(first["artifact_id"], later["artifact_id"]);

    // A caller's own key is used as given: it replays whenever it is reused, and two keys
    // are two writes even with identical arguments.
    let mut keyed = put_args("keyed", "k");
    keyed["idempotency_key"] = json!("note-k-1");
    let a = ok(&mcp, "artifact_put", keyed.clone()).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let b = ok(&mcp, "artifact_put", keyed.clone()).await;
    assert_eq!(
        (a["artifact_id"].clone(), b["created"].clone()),
        (b["artifact_id"].clone(), json!(false))
    );
    keyed["idempotency_key"] = json!("note-k-2");
    let c = ok(&mcp, "artifact_put", keyed).await;
    assert_ne!(a["artifact_id"], c["artifact_id"]);
    mcp.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_mcp_servers_write_through_one_daemon_and_nothing_is_lost() {
    const PER_SERVER: usize = 20;
    let home = TempHome::new();
    // Both servers start the daemon on demand; the data-directory lock lets one run.
    let (a, b) = tokio::join!(connect(&home), connect(&home));
    let mut tasks = Vec::new();
    for (server, mcp) in [(0, &a), (1, &b)] {
        for n in 0..PER_SERVER {
            let peer = mcp.peer().clone();
            tasks.push(tokio::spawn(async move {
                let arguments = put_args(&format!("server {server} note {n}"), &format!("payload {server}-{n}"));
                let Value::Object(arguments) = arguments else {
                    unreachable!()
                };
                let request = rmcp::model::CallToolRequestParams::new("artifact_put").with_arguments(arguments);
                let result = peer.call_tool(request).await.unwrap();
                assert_eq!(result.is_error, Some(false), "{}", summary(&result));
                result.structured_content.unwrap()["artifact_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }));
        }
    }
    let mut ids = BTreeSet::new();
    for task in tasks {
        ids.insert(task.await.unwrap());
    }
    assert_eq!(ids.len(), 2 * PER_SERVER);
    for (index, id) in ids.iter().enumerate() {
        let reader = if index % 2 == 0 { &a } else { &b };
        let record = ok(
            reader,
            "artifact_get",
            json!({"artifact_id": id, "include_content": false}),
        )
        .await;
        assert_eq!(record["artifact_id"], id.as_str());
    }
    let health = ok(&a, "doctor", json!({})).await;
    assert_eq!(health["last_commit_seq"], 2 * PER_SERVER, "{health}");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
