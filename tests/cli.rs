//! The CLI contract: one envelope on stdout, exit codes from the error table, usage errors
//! with an empty stdout, and help with an example.

use crate::support::{TempHome, code, envelope, field};

#[test]
fn stdout_is_one_compact_envelope_or_one_pretty_document() {
    let home = TempHome::new();
    let (status, compact) = home.run_cli(&["capabilities"]);
    assert_eq!(status, 0);
    assert_eq!(compact["result"]["product"], "memoree");
    let id = compact["request_id"].as_str().unwrap();
    assert!(id.starts_with("req_") && id.len() == 30, "{id}");

    let output = home.cmd(&["--pretty", "capabilities"]).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("{\n  \"v\": 1,\n"), "{text}");
    assert!(text.ends_with("}\n"));
    let pretty: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(pretty["result"]["operations"], compact["result"]["operations"]);
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn exit_codes_follow_the_error_table() {
    let home = TempHome::new();
    // 3: NOT_FOUND
    let (status, body) = home.run_cli(&["artifact", "get", "art_missing"]);
    assert_eq!((status, code(&body)), (3, "NOT_FOUND"));
    // 5: NO_AMBIENT_CONTEXT, reported for the request's own id
    let (status, body) = home.run_cli_in(&home.outside, &["artifact", "put", "-"]);
    assert_eq!((status, code(&body)), (5, "NO_AMBIENT_CONTEXT"));
    assert_ne!(body["request_id"], "req_cli");
    assert!(body["error"]["hint"].as_str().unwrap().contains("memoree init"));
    // 2: INVALID_REQUEST raised by the CLI itself
    let (status, body) = home.run_cli(&["claim", "assert", "fact", "x", "--evidence", "no-at-sign"]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
    assert_eq!(body["request_id"], "req_cli");
    // 4: REVISION_CONFLICT and IDEMPOTENCY_CONFLICT
    let file = home.write_file("note.txt", "one");
    let path = file.to_str().unwrap();
    let (_, put) = home.run_cli(&["artifact", "put", path, "--idempotency-key", "k1"]);
    let id = field(&put, "artifact_id");
    let (status, body) = home.run_cli(&["artifact", "revise", id, path, "--if-revision", "arev_stale"]);
    assert_eq!((status, code(&body)), (4, "REVISION_CONFLICT"));
    let (status, body) = home.run_cli(&["artifact", "put", path, "--idempotency-key", "k1", "--kind", "other"]);
    assert_eq!((status, code(&body)), (4, "IDEMPOTENCY_CONFLICT"));
}

#[test]
fn a_file_over_the_artifact_limit_is_refused_before_it_is_read() {
    let home = TempHome::new();
    let path = home.root.join("huge.bin");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(8 * 1024 * 1024 + 1).unwrap();
    let (status, body) = home.run_cli(&["artifact", "put", path.to_str().unwrap()]);
    assert_eq!((status, code(&body)), (2, "CONTENT_TOO_LARGE"));
    let (status, body) = home.run_cli_stdin(&["artifact", "put", "-"], vec![b'x'; 8 * 1024 * 1024 + 1]);
    assert_eq!((status, code(&body)), (2, "CONTENT_TOO_LARGE"));
}

#[test]
fn usage_errors_leave_stdout_empty_and_exit_2() {
    let home = TempHome::new();
    let cases: [&[&str]; 4] = [
        &["artifact", "frobnicate"],
        &["claim", "assert", "opinion", "cats are great"],
        &["link", "claim:a", "derived_from", "claim:b"],
        &["artifact", "get", "art_1", "--force"],
    ];
    for args in cases {
        let output = home.cmd(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            output.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
    let output = home
        .cmd(&["capabilities"])
        .env("MEMOREE_NO_AUTOSTART", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

#[test]
fn help_goes_to_stdout_with_an_example() {
    let home = TempHome::new();
    for args in [
        &["--help"][..],
        &["artifact", "put", "--help"],
        &["claim", "assert", "--help"],
        &["session", "exec", "--help"],
        &["pending", "apply", "--help"],
        &["context", "build", "--help"],
    ] {
        let output = home.cmd(args).output().unwrap();
        assert!(output.status.success(), "{args:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(text.contains("\nExample"), "{args:?}: {text}");
        assert!(output.stderr.is_empty());
    }
}

#[test]
fn memoree_call_attaches_the_marker_context_and_never_invents_a_key() {
    let home = TempHome::new();
    let request = r#"{"request_id":"r1","op":"context.resolve","input":{}}"#;
    let (status, body) = home.run_cli_stdin(&["call"], request);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["request_id"], "r1");
    assert_eq!(body["context"]["resolved_from"], "marker");
    let request = r#"{"request_id":"r2","op":"artifact.forget","input":{"artifact_id":"a","reason":"r"}}"#;
    let output = home.cmd(&["call"]).write_stdin(request).output().unwrap();
    let body = envelope(&output);
    assert_eq!((output.status.code(), code(&body)), (Some(2), "INVALID_REQUEST"));
    assert!(body["error"]["message"].as_str().unwrap().contains("idempotency_key"));
}

#[test]
fn demo_runs_an_end_to_end_session_in_a_throw_away_home() {
    let home = TempHome::new();
    let (status, body) = home.run_cli(&["demo"]);
    assert_eq!(status, 0, "{body}");
    let steps = body["result"]["steps"].as_array().unwrap();
    let ops: Vec<&str> = steps.iter().map(|s| s["request"]["op"].as_str().unwrap()).collect();
    assert_eq!(
        ops,
        [
            "artifact.put",
            "claim.assert",
            "artifact.get",
            "claim.get",
            "memory.recall",
            "context.build"
        ]
    );
    assert!(steps.iter().all(|s| s["response"]["ok"] == true));
    let recall = &steps[4]["response"]["result"];
    assert_eq!(recall["presence"], "claims");
    assert_eq!(recall["claims"][0]["evidence"][0]["excerpt"], "SQLite authoritative");
    let bundle = &steps[5]["response"]["result"];
    assert!(bundle["used_bytes"].as_u64().unwrap() <= 2048);
    let demo_home = body["result"]["home"].as_str().unwrap();
    assert!(
        !std::path::Path::new(demo_home).exists(),
        "the throw-away home is removed"
    );
    assert!(
        !home.home.join("data").exists(),
        "the demo never touches the user's store"
    );
}

#[test]
fn a_store_url_with_a_password_on_the_command_line_is_refused_with_the_ways_to_pass_it() {
    let home = TempHome::new();
    for args in [
        &["serve", "--store", "postgres://memoree:hunter2@db.invalid/memoree"][..],
        &[
            "serve",
            "--store",
            "postgresql://memoree@db.invalid/memoree?password=hunter2",
        ][..],
        &[
            "import",
            "archive",
            "--store",
            "postgres://memoree:hunter2@db.invalid/memoree",
        ][..],
        &[
            "export",
            "--all",
            "out",
            "--store",
            "postgres://memoree:hunter2@db.invalid/memoree",
        ][..],
    ] {
        let (status, body) = home.run_cli(args);
        assert_eq!((status, code(&body)), (2, "CONFIG_ERROR"), "{args:?}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        for hint in ["PGPASSWORD", "PGPASSFILE", "password_file"] {
            assert!(message.contains(hint), "{message}");
        }
        assert!(!body.to_string().contains("hunter2"), "{body}");
    }
    assert!(!home.home.join("data").exists(), "nothing was created");
}

/// The LoCoMo-format fixture the evaluator's unit tests use.
fn locomo_fixture() -> String {
    format!("{}/src/eval/locomo/fixture", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn eval_prints_a_locomo_report_as_json_or_a_table_and_its_gates_decide_the_exit_status() {
    let home = TempHome::new();
    let fixture = locomo_fixture();
    let output = home.cmd(&["eval", "--locomo", &fixture, "--json"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["benchmark"], "locomo");
    assert_eq!(report["answerable_questions"], 3);
    assert_eq!(report["qualification_policy"], "qualified_units_v2");
    assert_eq!(report["unanswerable"]["asked"], 3);

    let output = home
        .cmd(&[
            "eval",
            "--locomo",
            &fixture,
            "--qualification",
            "v1",
            "--gates",
            "lexical",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.starts_with("LoCoMo retrieval (qualified_units_v1, lexical only)"),
        "{table}"
    );
    let gates: Vec<&str> = table.lines().filter(|l| l.starts_with("gate ")).collect();
    assert_eq!(gates.len(), 4, "{table}");
    let all_pass = gates.iter().all(|l| l.ends_with("pass"));
    assert_eq!(output.status.code(), Some(if all_pass { 0 } else { 1 }), "{table}");
}

#[test]
fn eval_runs_a_golden_corpus_and_refuses_a_missing_directory_with_an_envelope() {
    let home = TempHome::new();
    let corpus = format!("{}/golden/v1/retrieval", env!("CARGO_MANIFEST_DIR"));
    let output = home.cmd(&["eval", "--corpus", &corpus]).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.starts_with("corpus v1: ") && text.ends_with("passed\n"), "{text}");

    let (status, envelope) = home.run_cli(&["eval", "--locomo", "/nonexistent/locomo"]);
    assert_eq!(status, 2);
    assert_eq!(code(&envelope), "INVALID_REQUEST");
}

#[test]
fn semantic_install_status_and_remove_manage_the_model_and_the_daemon_reports_it() {
    let test = memoree::testkit::parts::current_test();
    let Some(matrix) = memoree::testkit::parts::shared_file("models/potion-base-8M/model.safetensors", &test) else {
        return;
    };
    let model = matrix.parent().unwrap().to_str().unwrap().to_owned();
    let home = TempHome::new();
    let (status, body) = home.run_cli(&["semantic", "status"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["installed"], false);
    // Memory written before any model: a lexical daemon, no vectors.
    for (name, text) in [
        ("a.txt", "The museum opens at nine."),
        ("b.txt", "Harbor tides and cargo."),
    ] {
        let file = home.write_file(name, text);
        let (status, body) = home.run_cli(&["artifact", "put", file.to_str().unwrap()]);
        assert_eq!(status, 0, "{body}");
    }
    let (_, body) = home.run_cli(&["doctor"]);
    assert!(body["result"]["semantic"].get("vectors").is_none(), "{body}");

    let (status, body) = home.run_cli(&["semantic", "install", "/nonexistent/model"]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"), "{body}");
    assert!(!home.home.join("data/semantic").exists(), "nothing was installed");

    let (status, body) = home.run_cli(&["semantic", "install", &model]);
    assert_eq!(status, 0, "{body}");
    let digest = body["result"]["model_digest"].as_str().unwrap().to_owned();
    assert!(digest.starts_with("blake3:"), "{body}");
    let (_, body) = home.run_cli(&["semantic", "status"]);
    assert_eq!(body["result"]["loads"], true, "{body}");

    // The running daemon keeps the model it loaded (none) until it restarts; the new one
    // loads the model, says so, and projects what was written before in the background.
    let (_, body) = home.run_cli(&["doctor"]);
    assert_eq!(body["result"]["semantic"]["enabled"], false, "{body}");
    let (status, body) = home.run_cli(&["daemon", "restart"]);
    assert_eq!(status, 0, "{body}");
    let (status, body) = home.run_cli(&["capabilities"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["semantic"]["enabled"], true, "{body}");
    assert_eq!(body["result"]["semantic"]["model_digest"], digest.as_str());
    let extensions = body["result"]["extensions"].as_array().unwrap();
    assert!(extensions.iter().any(|e| e == "semantic_evidence"), "{body}");
    let started = std::time::Instant::now();
    let body = loop {
        let (_, body) = home.run_cli(&["doctor"]);
        if body["result"]["semantic"]["vectors"] == serde_json::json!({"covered": 2, "total": 2})
            || started.elapsed() > std::time::Duration::from_secs(30)
        {
            break body;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(body["result"]["semantic"]["dimensions"], 256, "{body}");
    assert_eq!(
        body["result"]["semantic"]["vectors"],
        serde_json::json!({"covered": 2, "total": 2}),
        "{body}"
    );

    let (status, body) = home.run_cli(&["semantic", "remove"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["model_digest"], digest.as_str());
    let (_, body) = home.run_cli(&["semantic", "status"]);
    assert_eq!(body["result"]["installed"], false, "{body}");
}
