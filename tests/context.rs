//! Ambient context on the client: precedence, markers, `init`, and task sessions.

use serde_json::{Value, json};

use crate::support::{PROJECT, TempHome, WORKSPACE, bin, code, envelope, field, run};

const SESSION: &str = r#"{"workspace_id":"wsp_session","project_id":"prj_session","pins":["art_pin"]}"#;
const PERSONAL: &str = "[personal]\nworkspace_id = \"wsp_me\"\nproject_id = \"prj_me\"\n";

fn resolved(body: &Value) -> (&str, &str, &str) {
    assert_eq!(body["ok"], true, "{body}");
    let context = &body["context"];
    assert_eq!(context["horizon"], "ambient", "{body}");
    assert_eq!(context["broadened"], false, "{body}");
    (
        context["resolved_from"].as_str().unwrap(),
        context["workspace_id"].as_str().unwrap(),
        context["project_id"].as_str().unwrap(),
    )
}

#[test]
fn each_level_of_precedence_beats_the_next() {
    let home = TempHome::new();
    home.write_config(PERSONAL);

    // explicit > session: an explicit request context is used even inside a session.
    let request = json!({"request_id": "r1", "op": "context.resolve", "input": {},
                         "context": {"workspace_id": "wsp_x", "project_id": "prj_x"}});
    let mut cmd = home.cmd(&["call"]);
    cmd.env("MEMOREE_CONTEXT", SESSION).write_stdin(request.to_string());
    let (_, body) = run(cmd);
    assert_eq!(resolved(&body), ("explicit", "wsp_x", "prj_x"));

    // session > marker: through the daemon-backed wrapper and through local `context show`.
    for args in [&["context", "resolve"][..], &["context", "show"]] {
        let mut cmd = home.cmd(args);
        cmd.env("MEMOREE_CONTEXT", SESSION);
        let (_, body) = run(cmd);
        assert_eq!(resolved(&body), ("session", "wsp_session", "prj_session"), "{args:?}");
        assert_eq!(body["context"]["pins"], json!(["art_pin"]));
    }

    // marker > personal
    let (_, body) = home.run_cli(&["context", "resolve"]);
    assert_eq!(resolved(&body), ("marker", WORKSPACE, PROJECT));
    assert_eq!(body["result"]["resolved"], true);

    // personal > nothing
    let (_, body) = home.run_cli_in(&home.outside, &["context", "show"]);
    assert_eq!(resolved(&body), ("personal", "wsp_me", "prj_me"));
    assert_eq!(
        body["result"],
        json!({"workspace_id": "wsp_me", "project_id": "prj_me", "pins": []})
    );

    // nothing > NO_AMBIENT_CONTEXT
    home.write_config("schema = 1\n");
    for args in [&["context", "show"][..], &["context", "resolve"]] {
        let (status, body) = home.run_cli_in(&home.outside, args);
        assert_eq!((status, code(&body)), (5, "NO_AMBIENT_CONTEXT"), "{args:?}");
        assert!(body.get("context").is_none());
    }
}

#[test]
fn context_explain_names_the_source_and_the_precedence() {
    let home = TempHome::new();
    let (status, body) = home.run_cli(&["context", "explain"]);
    assert_eq!(status, 0);
    assert_eq!(body["result"]["selected"], "marker");
    assert_eq!(body["result"]["precedence"], json!(["session", "marker", "personal"]));
    assert_eq!(
        body["result"]["source_path"],
        home.project.join(".memoree.toml").to_str().unwrap()
    );
    let (status, body) = home.run_cli_in(&home.outside, &["context", "explain"]);
    assert_eq!(status, 0, "finding nothing is not an error for explain: {body}");
    assert_eq!(body["result"]["selected"], "none");
}

#[test]
fn a_broken_nearest_marker_is_an_error_not_skipped() {
    let home = TempHome::new();
    home.write_config(PERSONAL);
    let nested = home.project.join("sub");
    std::fs::create_dir(&nested).unwrap();
    std::fs::write(nested.join(".memoree.toml"), "workspace_id = = broken").unwrap();
    for args in [
        &["context", "show"][..],
        &["context", "resolve"],
        &["artifact", "put", "-"],
    ] {
        let (status, body) = home.run_cli_in(&nested, args);
        assert_eq!((status, code(&body)), (2, "CONFIG_ERROR"), "{args:?}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("invalid marker"),
            "{body}"
        );
    }
    let mut cmd = home.cmd(&["context", "show"]);
    cmd.env("MEMOREE_CONTEXT", "{not json");
    let (status, body) = run(cmd);
    assert_eq!((status, code(&body)), (2, "CONFIG_ERROR"));
}

#[test]
fn init_writes_a_marker_once_and_refuses_to_replace_it() {
    let home = TempHome::new();
    let dir = home.root.join("fresh-project");
    std::fs::create_dir(&dir).unwrap();
    let (status, body) = home.run_cli_in(&dir, &["init", "--workspace-id", "wsp_team"]);
    assert_eq!(status, 0, "{body}");
    let marker = dir.join(".memoree.toml");
    assert_eq!(field(&body, "marker"), marker.to_str().unwrap());
    assert_eq!(body["result"]["created"], true);
    assert_eq!(body["result"]["context"]["workspace_id"], "wsp_team");
    let project_id = body["result"]["context"]["project_id"].as_str().unwrap().to_owned();
    assert!(project_id.starts_with("prj_"));
    let text = std::fs::read_to_string(&marker).unwrap();
    assert!(text.contains("name = \"fresh-project\""), "{text}");

    let (status, body) = home.run_cli_in(&dir, &["init", "--name", "other"]);
    assert_eq!((status, code(&body)), (2, "CONFIG_ERROR"));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refusing to overwrite")
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), text);

    let (_, body) = home.run_cli_in(&dir, &["context", "show"]);
    assert_eq!(resolved(&body), ("marker", "wsp_team", project_id.as_str()));

    let (status, body) = home.run_cli(&["init", "--directory", "does/not/exist"]);
    assert_eq!((status, code(&body)), (1, "INTERNAL_ERROR"));
}

#[test]
fn session_exec_hands_the_child_a_derived_task_context() {
    let home = TempHome::new();
    let output = home
        .cmd(&["session", "exec", "--task", "fix-auth", "--", bin(), "context", "show"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let body = envelope(&output);
    assert_eq!(resolved(&body), ("session", WORKSPACE, PROJECT));
    let task = memoree::ambient::derive_task_id(WORKSPACE, PROJECT, "fix-auth");
    assert_eq!(body["context"]["task_id"], task);

    // `--` is optional, as for the reference: scripts written either way work.
    let output = home
        .cmd(&["session", "exec", "--task", "fix-auth", bin(), "context", "show"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(envelope(&output)["context"]["task_id"], task);

    // A nested session replaces the inherited task rather than stacking it.
    let output = home
        .cmd(&[
            "session",
            "exec",
            "--task",
            "a",
            "--",
            bin(),
            "session",
            "exec",
            "--task",
            "b",
            "--",
        ])
        .args([bin(), "context", "show"])
        .output()
        .unwrap();
    let body = envelope(&output);
    assert_eq!(
        body["context"]["task_id"],
        memoree::ambient::derive_task_id(WORKSPACE, PROJECT, "b")
    );
}

#[test]
fn session_exec_passes_endpoint_autostart_policy_and_exit_status_through() {
    let home = TempHome::new();
    let script = r#"printf '%s|%s|%s' "$MEMOREE_ENDPOINT" "$MEMOREE_NO_AUTOSTART" "$MEMOREE_CONTEXT"; exit 7"#;
    let output = home
        .cmd(&[
            "--endpoint",
            "tcp://127.0.0.1:9",
            "--no-autostart",
            "session",
            "exec",
            "--task",
            "t",
        ])
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(7));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let parts: Vec<&str> = stdout.splitn(3, '|').collect();
    assert_eq!(parts[..2], ["tcp://127.0.0.1:9", "true"]);
    let context: Value = serde_json::from_str(parts[2]).unwrap();
    assert_eq!(
        context["task_id"],
        memoree::ambient::derive_task_id(WORKSPACE, PROJECT, "t")
    );

    let (status, body) = home.run_cli(&["session", "exec", "--task", "t", "--", "/nonexistent/program"]);
    assert_eq!((status, code(&body)), (1, "INTERNAL_ERROR"));
    let (status, body) = home.run_cli_in(&home.outside, &["session", "exec", "--task", "t", "--", "true"]);
    assert_eq!((status, code(&body)), (5, "NO_AMBIENT_CONTEXT"));
    let (status, body) = home.run_cli(&["session", "exec", "--task", " ", "--", "true"]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
}

#[test]
fn a_task_session_cannot_write_into_a_sibling_tasks_scope() {
    let home = TempHome::new();
    let note = home.write_file("note.md", "task A owns this");
    let note = note.to_str().unwrap();
    let in_task = |task: &str, args: &[&str]| {
        let mut cmd = home.cmd(&["session", "exec", "--task", task, "--", bin()]);
        cmd.args(args);
        run(cmd)
    };
    let (status, put) = in_task("a", &["artifact", "put", note]);
    assert_eq!(status, 0, "{put}");
    let artifact = field(&put, "artifact_id");
    let revision = field(&put, "revision_id");
    let evidence = format!("{artifact}@{revision}#0-6");
    let (_, claim) = in_task(
        "a",
        &["claim", "assert", "fact", "A", "owns", "it", "--evidence", &evidence],
    );
    let claim_id = field(&claim, "claim_id");

    let (status, body) = in_task("b", &["artifact", "revise", artifact, note, "--if-revision", revision]);
    assert_eq!((status, code(&body)), (7, "SCOPE_VIOLATION"), "{body}");
    let (status, body) = in_task("b", &["claim", "retract", claim_id, "--reason", "not mine"]);
    assert_eq!((status, code(&body)), (7, "SCOPE_VIOLATION"), "{body}");
    let (status, body) = in_task("b", &["artifact", "forget", artifact, "--reason", "not mine"]);
    assert_eq!((status, code(&body)), (7, "SCOPE_VIOLATION"), "{body}");

    // The owning task, and the project level above it, may still write.
    let (status, body) = in_task("a", &["claim", "retract", claim_id, "--reason", "done"]);
    assert_eq!(status, 0, "{body}");
    let (status, body) = home.run_cli(&["artifact", "forget", artifact, "--reason", "project cleanup"]);
    assert_eq!(status, 0, "{body}");
}
