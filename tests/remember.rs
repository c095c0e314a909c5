//! `remember`, `checkpoint` and `pending` end to end, with fake claim compilers.
//!
//! A compiler is a small shell script run as `/bin/sh SCRIPT` through `MEMOREE_COMPILER`
//! (reading the script instead of executing it avoids "Text file busy" races).

use serde_json::{Value, json};

use crate::support::{TempHome, code, field, run};

const NOTE: &str = "Deploys go out on Tuesdays. The staging box is currently down.";

const PROPOSAL: &str = r#"{"claims":[
  {"claim_type":"procedure","statement":"Deploys go out on Tuesdays.","evidence_quotes":["Deploys go out on Tuesdays"]},
  {"claim_type":"observation","statement":"The staging box is down.","evidence_quotes":["staging box","currently down"]}
]}"#;

/// Writes a compiler script that records that it ran, drains stdin and prints `proposal`.
fn compiler(home: &TempHome, name: &str, proposal: &str) -> String {
    let ran = home.root.join(format!("{name}.ran"));
    let body = format!(
        "touch '{}'\ncat >/dev/null\nprintf '%s' '{}'\n",
        ran.display(),
        proposal.replace('\'', r"'\''")
    );
    let script = home.write_file(&format!("{name}.sh"), body);
    format!("/bin/sh {}", script.display())
}

fn remember(home: &TempHome, compiler: &str, args: &[&str]) -> (i32, Value) {
    let mut cmd = home.cmd(&["remember"]);
    cmd.args(args).env("MEMOREE_COMPILER", compiler);
    run(cmd)
}

/// The commit sequence of a fresh write: 1 proves nothing was written before it.
fn next_commit_seq(home: &TempHome) -> i64 {
    let (status, put) = home.run_cli_stdin(&["artifact", "put", "-"], "probe");
    assert_eq!(status, 0, "{put}");
    put["commit_seq"].as_i64().unwrap()
}

#[test]
fn a_preview_plans_exact_spans_and_writes_nothing() {
    let home = TempHome::new();
    let compiler = compiler(&home, "ok", PROPOSAL);
    let (status, body) = remember(&home, &compiler, &[NOTE]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["context"]["resolved_from"], "marker");
    assert!(body.get("commit_seq").is_none());
    let result = &body["result"];
    assert_eq!(result["applied"], false);
    assert_eq!(result["compiler"], json!({"mode": "command", "schema_version": 2}));
    assert_eq!(result["plan"]["title"], "Deploys go out on Tuesdays.");
    assert_eq!(result["plan"]["kind"], "memory_note");
    let claims = result["plan"]["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 2);
    for claim in claims {
        for span in claim["evidence"].as_array().unwrap() {
            let (start, end) = (span["start_byte"].as_u64().unwrap(), span["end_byte"].as_u64().unwrap());
            assert_eq!(&NOTE[start as usize..end as usize], span["evidence_quote"]);
        }
    }
    let codes: Vec<&str> = body["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["REMEMBER_SELF_ATTESTED_SOURCE", "REMEMBER_MUTABLE_OBSERVATION"]);
    assert_eq!(next_commit_seq(&home), 1);
}

#[test]
fn apply_stores_the_note_and_grounded_claims_and_a_retry_replays() {
    let home = TempHome::new();
    let compiler = compiler(&home, "ok", PROPOSAL);
    let (status, body) = remember(&home, &compiler, &[NOTE, "--apply"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["applied"], true);
    let artifact = &body["result"]["artifact"];
    assert_eq!(artifact["created"], true);
    assert_eq!(artifact["actor"], "memoree.remember");
    assert_eq!(artifact["provenance"]["source"], "inline");
    let stored = body["result"]["stored_claims"].as_array().unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        body["commit_seq"], 3,
        "the envelope carries the last mutation's sequence"
    );

    let (_, got) = home.run_cli(&["artifact", "get", artifact["artifact_id"].as_str().unwrap()]);
    let content = got["result"]["content"]["data"].as_str().unwrap().to_owned();
    assert_eq!(content, NOTE);
    let planned = body["result"]["plan"]["claims"].as_array().unwrap();
    for (claim, plan) in stored.iter().zip(planned) {
        let (status, fetched) = home.run_cli(&["claim", "get", claim["claim_id"].as_str().unwrap()]);
        assert_eq!(status, 0);
        assert_eq!(fetched["result"]["statement"], plan["statement"]);
        let evidence = fetched["result"]["evidence"].as_array().unwrap();
        for (locator, span) in evidence.iter().zip(plan["evidence"].as_array().unwrap()) {
            assert_eq!(locator["revision_id"], artifact["revision_id"]);
            let (start, end) = (
                locator["start_byte"].as_u64().unwrap(),
                locator["end_byte"].as_u64().unwrap(),
            );
            assert_eq!(&content[start as usize..end as usize], span["evidence_quote"]);
        }
    }

    let (status, again) = remember(&home, &compiler, &[NOTE, "--apply"]);
    assert_eq!(status, 0, "{again}");
    assert_eq!(again["result"]["artifact"]["created"], false);
    assert_eq!(again["result"]["artifact"]["artifact_id"], artifact["artifact_id"]);
    for (first, replay) in stored.iter().zip(again["result"]["stored_claims"].as_array().unwrap()) {
        assert_eq!(replay["created"], false);
        assert_eq!(replay["claim_id"], first["claim_id"]);
    }
    assert_eq!(again["commit_seq"], 3);
    assert_eq!(next_commit_seq(&home), 4);
}

#[test]
fn a_failing_or_lying_compiler_writes_nothing() {
    let home = TempHome::new();
    let failing = home.write_file("fail.sh", "cat >/dev/null\necho 'model unavailable' >&2\nexit 3\n");
    let failing = format!("/bin/sh {}", failing.display());
    let (status, body) = remember(&home, &failing, &[NOTE, "--apply"]);
    assert_eq!((status, code(&body)), (1, "REASONER_ERROR"), "{body}");
    assert_eq!(body["error"]["retryable"], true);

    // A proposal that breaks the output contract (here: it tries to decide the write).
    let lying = compiler(&home, "lying", r#"{"claims":[],"write":true}"#);
    let (status, body) = remember(&home, &lying, &[NOTE, "--apply"]);
    assert_eq!((status, code(&body)), (1, "REASONER_ERROR"), "{body}");
    assert_eq!(body["error"]["retryable"], false);
    assert_eq!(next_commit_seq(&home), 1);
}

#[test]
fn a_quote_that_is_not_in_the_note_rejects_only_its_claim() {
    let home = TempHome::new();
    let invented = compiler(
        &home,
        "invented",
        r#"{"claims":[{"claim_type":"fact","statement":"Deploys are daily.","evidence_quotes":["daily"]}]}"#,
    );
    let (status, body) = remember(&home, &invented, &[NOTE]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["plan"]["claims"], json!([]));
    assert_eq!(body["warnings"][0]["code"], "REMEMBER_QUOTE_REJECTED");
}

#[test]
fn the_ambient_context_is_resolved_before_the_compiler_runs() {
    let home = TempHome::new();
    let compiler = compiler(&home, "never", PROPOSAL);
    let mut cmd = home.cmd(&["remember", NOTE]);
    cmd.current_dir(&home.outside).env("MEMOREE_COMPILER", &compiler);
    let (status, body) = run(cmd);
    assert_eq!((status, code(&body)), (5, "NO_AMBIENT_CONTEXT"));
    assert!(
        !home.root.join("never.ran").exists(),
        "the compiler must not see the note"
    );
}

#[test]
fn raw_apply_stores_the_note_alone_and_the_config_can_name_the_compiler() {
    let home = TempHome::new();
    let (status, body) = home.run_cli_stdin(
        &["remember", "-", "--raw", "--apply", "--kind", "log"],
        "just keep this",
    );
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["compiler"]["mode"], "raw");
    assert_eq!(body["result"]["artifact"]["kind"], "log");
    assert_eq!(body["result"]["artifact"]["provenance"]["source"], "stdin");
    assert!(body["result"].get("stored_claims").is_none());

    let script = home.write_file(
        "cfg.sh",
        format!("cat >/dev/null\nprintf '%s' '{}'\n", r#"{"claims":[]}"#),
    );
    home.write_config(&format!(
        "[remember]\ncompiler = [\"/bin/sh\", \"{}\"]\n",
        script.display()
    ));
    let note = home.write_file("meeting.md", "Nothing durable was said.\n");
    let (status, body) = home.run_cli(&["remember", "--file", note.to_str().unwrap()]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["compiler"]["mode"], "command");
    assert_eq!(body["result"]["plan"]["claims"], json!([]));
}

#[test]
fn checkpoints_stay_pending_until_reviewed_and_applied() {
    let home = TempHome::new();
    let (status, body) = home.run_cli(&[
        "checkpoint",
        "--session",
        "s-1",
        "--task",
        "auth",
        "Token",
        "refresh",
        "works.",
    ]);
    assert_eq!(status, 0, "{body}");
    assert!(body.get("context").is_none());
    assert_eq!(body["result"]["pending"], true);
    assert_eq!(body["result"]["recallable"], false);
    let id = body["result"]["checkpoint"]["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("cp_"));

    let secret = "deploy key AKIAABCDEFGHIJKLMNOP in use";
    let (status, flagged) = home.run_cli_stdin(&["checkpoint", "--session", "s-2", "-"], secret);
    assert_eq!(status, 0);
    assert_eq!(flagged["warnings"][0]["code"], "CHECKPOINT_SENSITIVE_CONTENT");

    let (_, list) = home.run_cli(&["pending", "list"]);
    assert_eq!(list["result"]["checkpoints"].as_array().unwrap().len(), 2);
    assert!(list["result"]["checkpoints"][0].get("text").is_none());
    let (_, shown) = home.run_cli(&["pending", "show", "s-1"]);
    assert_eq!(shown["result"]["checkpoint"]["text"], "Token refresh works.");
    assert_eq!(shown["result"]["checkpoint"]["checkpoint_id"], id.as_str());

    // Nothing reached the store yet.
    assert_eq!(next_commit_seq(&home), 1);

    let (status, body) = home.run_cli(&["pending", "apply", "s-2"]);
    assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"));
    assert!(body["error"]["message"].as_str().unwrap().contains("--allow-flagged"));

    let compiler = compiler(
        &home,
        "cp",
        r#"{"claims":[{"claim_type":"fact","statement":"Token refresh works.","evidence_quotes":["Token refresh works."]}]}"#,
    );
    let mut cmd = home.cmd(&["pending", "preview", &id]);
    cmd.env("MEMOREE_COMPILER", &compiler);
    let (status, preview) = run(cmd);
    assert_eq!(status, 0, "{preview}");
    assert_eq!(preview["result"]["applied"], false);
    assert_eq!(preview["result"]["plan"]["kind"], "agent_checkpoint");
    let mut cmd = home.cmd(&["pending", "apply", "s-1"]);
    cmd.env("MEMOREE_COMPILER", &compiler);
    let (status, applied) = run(cmd);
    assert_eq!(status, 0, "{applied}");
    assert_eq!(applied["result"]["artifact"]["title"], format!("Checkpoint {id} (s-1)"));
    assert_eq!(applied["result"]["stored_claims"].as_array().unwrap().len(), 1);

    let (status, dropped) = home.run_cli(&["pending", "drop", "s-1"]);
    assert_eq!(status, 0);
    assert_eq!(field(&dropped, "checkpoint_id"), id);
    let (status, body) = home.run_cli(&["pending", "show", &id]);
    assert_eq!((status, code(&body)), (3, "NOT_FOUND"));
}

#[test]
fn a_query_matching_only_pending_text_finds_nothing() {
    let home = TempHome::new();
    let (status, _) = home.run_cli(&["checkpoint", "--session", "s-1", "zebra", "quokka", "migration"]);
    assert_eq!(status, 0);
    let (status, body) = home.run_cli(&["recall", "quokka"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["presence"], "none");
}
