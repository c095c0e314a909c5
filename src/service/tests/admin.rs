//! Service-level tests of the administrative and discovery operations: every result is
//! checked against our hand-written schemas, and backup/restore is exercised end to end.

use serde_json::{Value, json};

use crate::protocol::{ErrorCode, Operation, Response, schema};
use crate::service::tests::support::{checked, envelope, result_of};
use crate::service::{Runtime, Service};
use crate::store::Store;
use crate::store::restore::restore;

struct Fixture {
    dir: tempfile::TempDir,
    service: Service,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    Fixture { dir, service }
}

fn context() -> Value {
    json!({"workspace_id": "wsp_test", "project_id": "prj_test"})
}

/// Serves `op` in the test context when the operation needs one.
fn call(service: &Service, op: &str, input: Value) -> Response {
    let needs_context = Operation::from_wire_name(op).unwrap().needs_context();
    let context = context();
    checked(service, envelope(op, input, needs_context.then_some(&context), None))
}

fn ok(service: &Service, op: &str, input: Value) -> Value {
    let request = json!({"op": op, "input": input});
    result_of(call(service, op, input), &request)
}

fn put(service: &Service, text: &str) -> Value {
    ok(
        service,
        "artifact.put",
        json!({"kind": "note", "title": "Note", "content": {"type": "text", "data": text}}),
    )
}

backend_test!(fn doctor_reports_typed_health_for_this_process(store) {
    let (service, _keep) = store.into_parts();
    // What differs between the stores: its name, its full-text engine and its schema
    // numbering (each backend migrates its own way); large content in the CAS or the
    // database. Everything else is the same report.
    let (authoritative, retrieval_mode, schema_version) = match service.store().postgres() {
        None => ("sqlite_wal", "fts5", crate::store::SCHEMA_VERSION),
        Some(_) => ("postgresql", "postgresql_fts", crate::store::pg::SCHEMA_VERSION),
    };
    put(&service, "one");
    put(&service, &"x".repeat(20_000));
    let doctor = ok(&service, "doctor", json!({}));
    assert_eq!(doctor["status"], "ok");
    assert_eq!(doctor["running"], true);
    assert_eq!(doctor["daemon_pid"], std::process::id());
    assert_eq!(doctor["authoritative_store"], authoritative);
    assert_eq!(doctor["retrieval_mode"], retrieval_mode);
    assert_eq!(doctor["last_commit_seq"], 2);
    assert_eq!(doctor["schema_version"], schema_version);
    assert!(doctor["database_bytes"].as_u64().unwrap() > 0, "{doctor}");
    assert_eq!(doctor["blob_count"], 1, "{doctor}");
    assert!(doctor["blob_bytes"].as_u64().unwrap() > 0, "{doctor}");
    assert!(doctor["disk_free_bytes"].as_u64().unwrap() > 0);
    assert_eq!(doctor["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doctor["binary_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doctor["lifecycle_owner"], "external");
    assert!(doctor.get("store_outage").is_none_or(Value::is_null), "{doctor}");

    let daemon = Service::new(
        service.store().clone(),
        Runtime {
            daemon_pid: Some(4242),
            ..Runtime::default()
        },
    );
    assert_eq!(ok(&daemon, "doctor", json!({}))["daemon_pid"], 4242);
});

#[test]
fn verify_returns_string_issues_and_structured_details() {
    let f = fixture();
    let large = "x".repeat(20_000);
    let put = put(&f.service, &large);
    let clean = ok(&f.service, "verify", json!({}));
    assert_eq!(clean["ok"], true);
    assert_eq!(clean["checked_external_blobs"], 1);
    assert_eq!(clean["issues"], json!([]));
    assert_eq!(clean["issue_details"], json!([]));

    let hash = put["blob_hash"].as_str().unwrap();
    let path = f
        .service
        .store()
        .blobs()
        .unwrap()
        .path_of(&crate::blob::Digest::parse(hash).unwrap());
    std::fs::remove_file(path).unwrap();
    let broken = ok(&f.service, "verify", json!({}));
    assert_eq!(broken["ok"], false);
    assert_eq!(broken["issue_details"][0]["kind"], "blob_missing");
    assert_eq!(broken["issue_details"][0]["entity"], hash);
    let line = broken["issues"][0].as_str().unwrap();
    assert!(line.starts_with(&format!("blob_missing: {hash}: ")), "{line}");
}

backend_test!(fn reindex_rebuilds_the_projection_without_a_commit(store) {
    let (service, _keep) = store.into_parts();
    put(&service, "alpha");
    put(&service, "beta");
    let response = call(&service, "reindex", json!({}));
    assert!(response.ok);
    assert_eq!(response.commit_seq, None);
    let result = response.result.unwrap();
    assert_eq!(result["reindexed_artifact_revisions"], 2);
    assert_eq!(result["reindexed_claim_revisions"], 0);
    assert_eq!(result["removed_orphan_rows"], 0);
    assert_eq!(result["last_commit_seq"], 2);
    let found = ok(&service, "search", json!({"query": "beta"}));
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
});

backend_test!(fn backup_create_refuses_relative_and_existing_destinations(store) {
    let (service, _keep) = store.into_parts();
    let dir = tempfile::tempdir().unwrap();
    let relative = call(&service, "backup.create", json!({"destination": "bk"}));
    assert_eq!(relative.error.unwrap().code, ErrorCode::InvalidRequest);
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    let existing = call(&service, "backup.create", json!({"destination": taken}));
    let error = existing.error.unwrap();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert_eq!(
        error.message,
        format!(
            "invalid request: backup destination already exists: {}",
            taken.display()
        )
    );
});

#[test]
fn backup_then_restore_finds_every_acknowledged_entity() {
    let f = fixture();
    let s = &f.service;
    let small = put(s, "SQLite is authoritative.");
    let large = put(s, &"Large content lives in the CAS. ".repeat(1000));
    let revised = ok(
        s,
        "artifact.revise",
        json!({"artifact_id": small["artifact_id"], "if_revision": small["revision_id"],
               "content": {"type": "base64", "data": "AAECAw=="}, "media_type": "application/octet-stream"}),
    );
    let forgotten = put(s, "to be forgotten");
    ok(
        s,
        "artifact.forget",
        json!({"artifact_id": forgotten["artifact_id"], "reason": "test"}),
    );
    let claim = ok(
        s,
        "claim.assert",
        json!({"claim_type": "fact", "statement": "SQLite is authoritative",
               "evidence": [{"artifact_id": small["artifact_id"], "revision_id": small["revision_id"], "start_byte": 0, "end_byte": 6}]}),
    );
    let retracted = ok(
        s,
        "claim.assert",
        json!({"claim_type": "decision", "statement": "Use a graph database"}),
    );
    ok(
        s,
        "claim.retract",
        json!({"claim_id": retracted["claim_id"], "reason": "reversed"}),
    );

    let destination = f.dir.path().join("backups/nightly");
    let response = call(s, "backup.create", json!({"destination": destination}));
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.commit_seq, None, "a backup is not a logical mutation");
    let report = response.result.unwrap();
    assert_eq!(report["destination"], destination.display().to_string());
    assert_eq!(
        report["database"],
        destination.join("memoree.sqlite3").display().to_string()
    );
    assert_eq!(report["blobs"], destination.join("blobs").display().to_string());
    assert_eq!(report["commit_seq"], 8);
    assert_eq!(report["copied_external_blobs"], 1);

    let target = f.dir.path().join("restored");
    let restored = restore(&destination, &target).unwrap();
    assert_eq!(restored.commit_seq, 8);
    let back = Service::new(Store::open(&target).unwrap(), Runtime::default());
    assert_eq!(ok(&back, "verify", json!({}))["ok"], true);
    for (record, revision) in [
        (&small, &small["revision_id"]),
        (&small, &revised["revision_id"]),
        (&large, &large["revision_id"]),
        (&forgotten, &forgotten["revision_id"]),
    ] {
        let input = json!({"artifact_id": record["artifact_id"], "revision_id": revision});
        assert_eq!(
            ok(&back, "artifact.get", input.clone()),
            ok(s, "artifact.get", input),
            "artifact {revision} differs after restore"
        );
    }
    for id in [&claim["claim_id"], &retracted["claim_id"]] {
        let input = json!({"claim_id": id});
        assert_eq!(ok(&back, "claim.get", input.clone()), ok(s, "claim.get", input));
    }
    assert_eq!(ok(&back, "doctor", json!({}))["last_commit_seq"], 8);
    // The restored store accepts new writes after the restored sequence.
    assert_eq!(
        call(
            &back,
            "artifact.put",
            json!({"kind": "n", "title": "t", "content": {"type": "text", "data": "x"}})
        )
        .commit_seq,
        Some(9)
    );
}

#[test]
fn instructions_render_every_format_from_one_definition() {
    let f = fixture();
    let markdown = ok(&f.service, "instructions", json!({}));
    assert_eq!(markdown["format"], "markdown");
    let text = markdown["content"].as_str().unwrap();
    assert!(text.contains("`memoree call`"));
    for format in ["agents-md", "claude-md"] {
        let result = ok(&f.service, "instructions", json!({"format": format}));
        assert_eq!(result["format"], format);
        assert_eq!(result["content"], text, "{format} carries the same Markdown");
    }
    let structured = ok(&f.service, "instructions", json!({"format": "json"}));
    assert_eq!(structured["content"]["product"], "memoree");
    assert_eq!(structured["content"]["rules"].as_array().unwrap().len(), 27);
    let unknown = call(&f.service, "instructions", json!({"format": "html"}));
    assert_eq!(unknown.error.unwrap().code, ErrorCode::InvalidRequest);
}

backend_test!(fn capabilities_lists_exactly_the_implemented_operations_and_the_recency_policy(store) {
    let (service, _keep) = store.into_parts();
    let caps = ok(&service, "capabilities", json!({}));
    let listed: Vec<&str> = caps["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["operation"].as_str().unwrap())
        .collect();
    let implemented: Vec<&str> = Operation::ALL
        .into_iter()
        .filter(|op| op.is_protocol_v1())
        .map(Operation::wire_name)
        .collect();
    assert_eq!(listed, implemented);
    for op in ["instructions", "schema", "doctor", "verify", "backup.create"] {
        assert!(listed.contains(&op), "{op} missing");
    }
    // Extensions are advertised separately so reference clients can parse `operations`.
    assert!(!listed.contains(&"reindex"));
    assert!(caps["extensions"].as_array().unwrap().contains(&json!("reindex")));
    for caller_side in ["remember", "checkpoint", "pending"] {
        assert!(
            !caps.to_string().contains(&format!("\"{caller_side}")),
            "{caller_side} listed"
        );
    }
    let backup = &caps["operations"][listed.iter().position(|op| *op == "backup.create").unwrap()];
    assert_eq!(backup["side_effecting"], true);
    assert_eq!(backup["requires_idempotency_key"], false);
    assert_eq!(caps["recency_policy"]["policy_version"], "bounded_recency_v1");
    assert_eq!(caps["recency_policy"]["max_promotion"], 2);
    assert_eq!(caps["recency_policy"]["decay_classes"].as_array().unwrap().len(), 7);
    assert_eq!(caps["max_artifact_bytes"], 8 * 1024 * 1024);
});

/// The reference implementation's published bundle, when the shared spec is checked out
/// beside the repository; otherwise the running test is reported skipped (a failure in CI).
fn reference_bundle() -> Option<Value> {
    let test = crate::testkit::parts::current_test();
    let path = crate::testkit::parts::shared_file("spec/reference-schema-v1.json", &test)?;
    Some(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap()
}

#[test]
fn the_schema_operation_serves_a_superset_of_the_reference_bundle() {
    let f = fixture();
    let served = ok(&f.service, "schema", json!({}));
    assert_eq!(&served, schema::bundle());
    let Some(reference) = reference_bundle() else {
        return;
    };
    for group in ["operation_inputs", "result_types"] {
        let ours: Vec<&String> = served[group].as_object().unwrap().keys().collect();
        let mut theirs: Vec<&String> = reference[group].as_object().unwrap().keys().collect();
        let extensions: Vec<String> = Operation::ALL
            .into_iter()
            .filter(|op| !op.is_protocol_v1())
            .map(|op| op.wire_name().to_owned())
            .collect();
        theirs.extend(extensions.iter());
        theirs.sort();
        let mut ours_sorted = ours.clone();
        ours_sorted.sort();
        assert_eq!(
            ours_sorted, theirs,
            "{group}: the reference's operations plus the extensions"
        );
    }
    let examples: Vec<Value> =
        serde_json::from_str(include_str!("../../protocol/schema/testdata/requests.json")).unwrap();
    let (reference_request, our_request) = (compile(&reference["request"]), compile(&served["request"]));
    let mut checked = 0;
    for request in examples {
        let op = request["op"].as_str().unwrap();
        let Some(theirs) = reference["operation_inputs"].get(op).map(compile) else {
            continue;
        };
        if !reference_request.is_valid(&request) || !theirs.is_valid(&request["input"]) {
            continue;
        }
        assert!(our_request.is_valid(&request), "our request schema rejects {request}");
        let ours = compile(&served["operation_inputs"][op]);
        assert!(
            ours.is_valid(&request["input"]),
            "our {op} input schema rejects {}",
            request["input"]
        );
        checked += 1;
    }
    assert!(checked >= 23, "only {checked} reference-valid examples");
}
