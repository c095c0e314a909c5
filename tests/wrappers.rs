//! Round trips of the human wrappers for the operations implemented today (context.resolve,
//! capabilities, artifact.*, claim.*), and client-side materialization of `artifact get`.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::support::{PROJECT, TempHome, WORKSPACE, code, field, run};

fn assert_marker_context(body: &Value) {
    let context = &body["context"];
    assert_eq!(context["workspace_id"], WORKSPACE, "{body}");
    assert_eq!(context["project_id"], PROJECT);
    assert_eq!(context["resolved_from"], "marker");
    assert_eq!(context["horizon"], "ambient");
    assert_eq!(context["broadened"], false);
}

#[test]
fn artifact_wrappers_round_trip_a_file() {
    let home = TempHome::new();
    let note = home.write_file("project/docs/adr.md", "# ADR\nUse SQLite.\n");
    // A relative path is resolved on the client: provenance and title are canonical.
    let (status, put) = home.run_cli(&["artifact", "put", "docs/adr.md", "--kind", "decision"]);
    assert_eq!(status, 0, "{put}");
    assert_marker_context(&put);
    assert_eq!(put["commit_seq"], put["result"]["commit_seq"]);
    let canonical = note.to_str().unwrap();
    assert_eq!(put["result"]["title"], canonical);
    assert_eq!(put["result"]["provenance"], json!({"source": canonical}));
    assert_eq!(put["result"]["media_type"], "text/markdown");
    assert_eq!(put["result"]["kind"], "decision");
    assert!(put["result"].get("actor").is_none());
    let id = field(&put, "artifact_id");
    let first = field(&put, "revision_id");

    let (status, got) = home.run_cli(&["artifact", "get", id]);
    assert_eq!(status, 0);
    assert!(got.get("context").is_none(), "artifact.get is context-free: {got}");
    assert_eq!(
        got["result"]["content"],
        json!({"type": "text", "data": "# ADR\nUse SQLite.\n"})
    );
    let (_, meta) = home.run_cli(&["artifact", "get", id, "--metadata-only"]);
    assert!(meta["result"].get("content").is_none());

    let (status, revised) = home.run_cli_stdin(
        &[
            "artifact",
            "revise",
            id,
            "-",
            "--if-revision",
            first,
            "--title",
            "ADR v2",
        ],
        "# ADR\nUse SQLite WAL.\n",
    );
    assert_eq!(status, 0, "{revised}");
    assert_eq!(revised["result"]["revision_number"], 2);
    assert_eq!(revised["result"]["title"], "ADR v2");
    assert_eq!(revised["result"]["media_type"], "text/markdown", "media type is kept");
    assert_eq!(revised["result"]["provenance"], json!({"source": "stdin"}));

    let (_, old) = home.run_cli(&["artifact", "get", id, "--revision", first]);
    assert_eq!(old["result"]["content"]["data"], "# ADR\nUse SQLite.\n");
    let (_, history) = home.run_cli(&["artifact", "history", id, "--limit", "1"]);
    assert_eq!(history["result"]["revisions"].as_array().unwrap().len(), 1);
    assert_eq!(history["result"]["truncated"], true);
    assert_eq!(history["result"]["next_before_revision_number"], 2);
    let (_, older) = home.run_cli(&["artifact", "history", id, "--before-revision-number", "2"]);
    assert_eq!(older["result"]["revisions"][0]["revision_id"], first);

    let (status, forgot) = home.run_cli(&["artifact", "forget", id, "--reason", "superseded by ADR 9"]);
    assert_eq!(status, 0, "{forgot}");
    assert_eq!(forgot["result"]["status"], "forgotten");
    let (_, after) = home.run_cli(&["artifact", "get", id]);
    assert_eq!(after["result"]["forgotten_reason"], "superseded by ADR 9");
}

#[test]
fn stdin_is_plain_text_and_binary_goes_as_base64() {
    let home = TempHome::new();
    let (_, text) = home.run_cli_stdin(&["artifact", "put", "-"], "from a pipe");
    assert_eq!(text["result"]["title"], "stdin");
    assert_eq!(text["result"]["media_type"], "text/plain; charset=utf-8");
    assert_eq!(text["result"]["provenance"], json!({"source": "stdin"}));

    let bytes: Vec<u8> = (0..=255u8).collect();
    let (status, binary) = home.run_cli_stdin(
        &[
            "artifact",
            "put",
            "-",
            "--media-type",
            "application/octet-stream",
            "--title",
            "bytes",
        ],
        bytes.clone(),
    );
    assert_eq!(status, 0, "{binary}");
    assert_eq!(binary["result"]["size_bytes"], 256);
    let id = field(&binary, "artifact_id");
    let out = home.root.join("out/bytes.bin");
    let (status, got) = home.run_cli(&["artifact", "get", id, "--output", out.to_str().unwrap()]);
    assert_eq!(status, 0, "{got}");
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
}

#[test]
fn mutation_wrappers_use_a_fresh_key_unless_one_is_given() {
    let home = TempHome::new();
    let (_, a) = home.run_cli_stdin(&["artifact", "put", "-"], "same");
    let (_, b) = home.run_cli_stdin(&["artifact", "put", "-"], "same");
    assert_ne!(a["result"]["artifact_id"], b["result"]["artifact_id"]);

    let args = ["artifact", "put", "-", "--idempotency-key", "import:1"];
    let (_, first) = home.run_cli_stdin(&args, "same");
    let (status, replay) = home.run_cli_stdin(&args, "same");
    assert_eq!(status, 0);
    assert_eq!(replay["result"]["created"], false);
    assert_eq!(replay["result"]["artifact_id"], first["result"]["artifact_id"]);
    assert_eq!(replay["commit_seq"], first["commit_seq"]);
}

#[test]
fn memoree_actor_is_sent_and_an_empty_one_is_rejected_by_the_service() {
    let home = TempHome::new();
    let mut cmd = home.cmd(&["artifact", "put", "-"]);
    cmd.env("MEMOREE_ACTOR", "agent-7").write_stdin("x");
    let (status, put) = run(cmd);
    assert_eq!(status, 0);
    assert_eq!(put["result"]["actor"], "agent-7");

    let mut cmd = home.cmd(&["claim", "assert", "fact", "x"]);
    cmd.env("MEMOREE_ACTOR", "");
    let (status, body) = run(cmd);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
    assert!(body["error"]["message"].as_str().unwrap().contains("actor"), "{body}");
}

#[test]
fn claim_wrappers_round_trip_with_exact_evidence() {
    let home = TempHome::new();
    let (_, put) = home.run_cli_stdin(&["artifact", "put", "-"], "The limit is 24 MiB per frame.");
    let (artifact, revision) = (field(&put, "artifact_id"), field(&put, "revision_id"));
    let span = format!("{artifact}@{revision}#13-19");
    let whole = format!("{artifact}@{revision}");
    let (status, asserted) = home.run_cli(&[
        "claim",
        "assert",
        "constraint",
        "Frames",
        "are",
        "capped",
        "at",
        "24",
        "MiB",
        "--evidence",
        &span,
        "--evidence",
        &whole,
        "--confidence",
        "0.8",
        "--valid-from",
        "2020-01-01T00:00:00Z",
    ]);
    assert_eq!(status, 0, "{asserted}");
    assert_marker_context(&asserted);
    let result = &asserted["result"];
    assert_eq!(result["statement"], "Frames are capped at 24 MiB");
    assert_eq!(result["confidence"], 0.8);
    assert_eq!(
        result["evidence"],
        json!([
            {"artifact_id": artifact, "revision_id": revision, "start_byte": 13, "end_byte": 19},
            {"artifact_id": artifact, "revision_id": revision},
        ])
    );
    let claim = field(&asserted, "claim_id");
    let first = field(&asserted, "revision_id");

    let (status, got) = home.run_cli(&["claim", "get", claim]);
    assert_eq!(status, 0);
    assert_eq!(got["result"]["evidence"], result["evidence"]);

    let (status, revised) = home.run_cli(&[
        "claim",
        "revise",
        claim,
        "Frames",
        "are",
        "small",
        "--if-revision",
        first,
    ]);
    assert_eq!(status, 0, "{revised}");
    assert_eq!(revised["result"]["revision_number"], 2);
    assert_eq!(revised["result"]["evidence"], json!([]), "omitted evidence is cleared");
    let (_, history) = home.run_cli(&["claim", "history", claim]);
    assert_eq!(history["result"]["revisions"].as_array().unwrap().len(), 2);
    let (_, old) = home.run_cli(&["claim", "get", claim, "--revision", first]);
    assert_eq!(old["result"]["statement"], "Frames are capped at 24 MiB");

    let (status, retracted) = home.run_cli(&["claim", "retract", claim, "--reason", "measured again"]);
    assert_eq!(status, 0);
    assert_eq!(retracted["result"]["status"], "retracted");

    let (status, body) = home.run_cli(&[
        "claim",
        "assert",
        "fact",
        "x",
        "--evidence",
        &format!("{artifact}@#1-2"),
    ]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
    assert!(
        body["error"]["message"].as_str().unwrap().contains("empty revision id"),
        "{body}"
    );
    let (status, body) = home.run_cli(&["claim", "assert", "fact", "x", "--evidence", &format!("{whole}#0-999")]);
    assert_eq!(
        (status, code(&body)),
        (2, "INVALID_REQUEST"),
        "span beyond the revision: {body}"
    );
}

#[test]
fn get_output_refuses_to_replace_a_file_unless_forced() {
    let home = TempHome::new();
    let (_, put) = home.run_cli_stdin(&["artifact", "put", "-"], "exact bytes\n");
    let id = field(&put, "artifact_id");
    let dest = home.root.join("materialized.txt");
    let dest_arg = dest.to_str().unwrap();

    let (status, got) = home.run_cli(&["artifact", "get", id, "--output", dest_arg]);
    assert_eq!(status, 0, "{got}");
    assert!(got["result"].get("content").is_none(), "content is never echoed: {got}");
    assert_eq!(got["result"]["materialized_path"], dest_arg);
    assert_eq!(got["result"]["artifact_id"], id);
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "exact bytes\n");

    std::fs::write(&dest, "local edits").unwrap();
    let (status, body) = home.run_cli(&["artifact", "get", id, "--output", dest_arg]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
    assert!(body["error"]["message"].as_str().unwrap().contains("--force"));
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "local edits");

    let (status, _) = home.run_cli(&["artifact", "get", id, "--output", dest_arg, "--force"]);
    assert_eq!(status, 0);
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "exact bytes\n");

    // The path is reported as given, relative to the working directory.
    let (status, got) = home.run_cli(&["artifact", "get", id, "--output", "rel/out.txt"]);
    assert_eq!(status, 0);
    assert_eq!(got["result"]["materialized_path"], "rel/out.txt");
    assert!(home.project.join("rel/out.txt").is_file());
}

#[test]
fn get_output_never_follows_a_symlink_planted_at_the_destination() {
    let home = TempHome::new();
    let (_, put) = home.run_cli_stdin(&["artifact", "put", "-"], "payload");
    let id = field(&put, "artifact_id");
    let victim = home.write_file("victim.txt", "precious");
    let dangling = home.root.join("nowhere.txt");
    for target in [&victim, &dangling] {
        let link = home.root.join("planted");
        let _ = std::fs::remove_file(&link);
        symlink(target, &link).unwrap();
        let (status, body) = home.run_cli(&["artifact", "get", id, "--output", link.to_str().unwrap()]);
        assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"), "{body}");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());

        let (status, body) = home.run_cli(&["artifact", "get", id, "--output", link.to_str().unwrap(), "--force"]);
        assert_eq!(status, 0, "{body}");
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(meta.file_type().is_file(), "the link itself is replaced");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "payload");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!dangling.exists());
}

#[test]
fn capabilities_and_context_resolve_round_trip() {
    let home = TempHome::new();
    let (status, caps) = home.run_cli(&["capabilities"]);
    assert_eq!(status, 0);
    assert!(caps.get("context").is_none());
    let ops: Vec<&str> = caps["result"]["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["operation"].as_str().unwrap())
        .collect();
    assert!(
        ops.contains(&"artifact.put") && ops.contains(&"context.resolve"),
        "{ops:?}"
    );

    let (status, body) = home.run_cli(&["context", "resolve"]);
    assert_eq!(status, 0);
    assert_marker_context(&body);
    assert_eq!(body["result"]["resolved"], true);
    assert_eq!(body["result"]["context"]["workspace_id"], WORKSPACE);
}

#[test]
fn backup_create_sends_a_relative_destination_joined_to_the_cwd() {
    let home = TempHome::new();
    let (status, body) = home.run_cli(&["backup", "create", "../backups/today"]);
    assert_eq!(status, 0, "{body}");
    let expected = home.project.join("../backups/today");
    assert_eq!(body["result"]["destination"], expected.to_str().unwrap());
    assert!(home.root.join("backups/today/memoree.sqlite3").is_file());
}

#[test]
fn a_backup_restores_into_an_empty_data_dir_with_every_acknowledged_entity() {
    let home = TempHome::new();
    let note = home.write_file("note.md", "restore me byte for byte\n");
    let (status, put) = home.run_cli(&["artifact", "put", note.to_str().unwrap(), "--kind", "note"]);
    assert_eq!(status, 0, "{put}");
    let artifact_id = put["result"]["artifact_id"].as_str().unwrap().to_owned();
    let (status, claim) = home.run_cli(&["claim", "assert", "fact", "Restores keep claims."]);
    assert_eq!(status, 0, "{claim}");
    let claim_id = claim["result"]["claim_id"].as_str().unwrap().to_owned();
    let backup = home.root.join("bk");
    let (status, body) = home.run_cli(&["backup", "create", backup.to_str().unwrap()]);
    assert_eq!(status, 0, "{body}");

    let restored = home.root.join("restored-data");
    let (status, body) = home.run_cli(&[
        "backup",
        "restore",
        backup.to_str().unwrap(),
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["commit_seq"], 2);
    // A second restore into the now non-empty directory is refused.
    let (status, again) = home.run_cli(&[
        "backup",
        "restore",
        backup.to_str().unwrap(),
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(status, 2, "{again}");

    let mut get = home.cmd(&["artifact", "get", &artifact_id]);
    get.env("MEMOREE_DATA_DIR", &restored)
        .env("MEMOREE_RUNTIME_DIR", home.root.join("restored-run"));
    let (status, body) = run(get);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["content"]["data"], "restore me byte for byte\n");
    let mut get = home.cmd(&["claim", "get", &claim_id]);
    get.env("MEMOREE_DATA_DIR", &restored)
        .env("MEMOREE_RUNTIME_DIR", home.root.join("restored-run"));
    let (status, body) = run(get);
    let mut stop = home.cmd(&["daemon", "stop"]);
    stop.env("MEMOREE_DATA_DIR", &restored)
        .env("MEMOREE_RUNTIME_DIR", home.root.join("restored-run"));
    let (stopped, _) = run(stop);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["statement"], "Restores keep claims.");
    assert_eq!(stopped, 0, "the restored store's daemon stops");
}
