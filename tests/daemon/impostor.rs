//! A foreign daemon on the default socket (an `Impostor`: a newer or another implementation,
//! or a process that merely claims to be ours): `call` and the agent commands pass what it
//! says through unchanged, and `daemon stop|restart` never signal a process they do not own.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memoree::protocol::Response;
use serde_json::{Value, json};

use super::{TempHome, code_of};

/// Listens on `home`'s default socket and answers every request with `result`, or
/// (`start_with`) with the envelope `answer` makes of it; keeps the requests it read.
struct Impostor {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    socket: std::path::PathBuf,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Impostor {
    fn start(home: &TempHome, result: Value) -> Impostor {
        Impostor::start_with(home, move |request| {
            let id = request["request_id"].as_str().unwrap_or("req_x");
            serde_json::to_value(Response::success(id, result.clone())).unwrap()
        })
    }

    fn start_with(home: &TempHome, answer: impl Fn(&Value) -> Value + Send + 'static) -> Impostor {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::fs::create_dir_all(home.runtime_dir()).unwrap();
        std::fs::set_permissions(home.runtime_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let listener = UnixListener::bind(home.socket()).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let Some(body) = memoree::frame::blocking::read(&mut stream, 1 << 20).ok().flatten() else {
                    continue;
                };
                let request: Value = serde_json::from_slice(&body).unwrap();
                let reply = serde_json::to_vec(&answer(&request)).unwrap();
                seen.lock().unwrap().push(request);
                let _ = memoree::frame::blocking::write(&mut stream, &reply, 1 << 20);
            }
        });
        Impostor {
            stop,
            thread: Some(thread),
            socket: home.socket(),
            requests,
        }
    }
}

#[test]
fn call_passes_a_newer_daemons_operation_and_error_code_through_unchanged() {
    let home = TempHome::new();
    let impostor = Impostor::start_with(&home, |request| {
        json!({"v": 1, "request_id": request["request_id"], "ok": false, "error": {
            "code": "CITATION_ERROR", "message": "citation error: range_required", "retryable": false,
            "details": {"reason": "range_required"}}})
    });
    // An operation this binary does not know gets the ambient context when one resolves.
    let mut command = home.command(&["call"]);
    command.env(
        "MEMOREE_CONTEXT",
        r#"{"workspace_id":"wsp_newer","project_id":"prj_newer"}"#,
    );
    let body = json!({"v": 1, "request_id": "req_newer", "op": "citation.future", "input": {"uri": "x"}});
    let output = home.output(&mut command, Some(&serde_json::to_vec(&body).unwrap()));
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({"code": "CITATION_ERROR", "message": "citation error: range_required", "retryable": false,
               "details": {"reason": "range_required"}})
    );
    assert_eq!(envelope["request_id"], "req_newer");
    let sent = impostor.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(sent["op"], "citation.future");
    assert_eq!(sent["context"]["workspace_id"], "wsp_newer");
    assert_eq!(sent["context"]["project_id"], "prj_newer");
    // With no ambient context it goes as it is, and the daemon decides.
    let (status, envelope) = home.call(&body);
    assert_eq!(status.code(), Some(1), "{envelope}");
    assert_eq!(envelope["error"]["code"], "CITATION_ERROR");
    let sent = impostor.requests.lock().unwrap().last().cloned().unwrap();
    assert!(sent.get("context").is_none_or(Value::is_null), "{sent}");
}

#[test]
fn the_agent_commands_print_a_reference_daemons_results_and_errors_unchanged() {
    // What a daemon written to the reference's v0.7.1 facts answers: its own query analysis
    // shape, no field of ours, and CITATION_ERROR for a revision citation.
    let retrieved = json!({
        "content_is_untrusted": true, "presence": "none", "searched_horizon": "ambient",
        "query_analysis": {"policy_version": "lexical_qualification_v2", "normalized_query": "osprey",
                           "content_units": ["osprey"], "phrase_groups": [], "dropped_stopwords": [],
                           "required_matches": 1},
        "authority": {"memory_snapshot_commit_seq": 4, "retrieved_at": "2026-12-06T20:00:00Z",
                      "qualification_policy": "deterministic_authority_only_v1",
                      "recovery_policy": "unqualified_exact_evidence_v1", "current_source_rule": "Check the source."},
        "claims": [], "conflicts": [], "artifact_refs": [],
        "next_action": {"policy_version": "retrieval_next_action_v1", "reason": "no_qualified_match",
                        "action": "requery_with_stored_vocabulary", "detail": "Re-ask.",
                        "unmatched_units": ["osprey"], "stored_vocabulary": []}
    });
    let probed = json!({
        "content_is_untrusted": true, "retrieval_tier": "unqualified_candidate", "original_query": "osprey",
        "probe_query": "osprey", "reformulation_applied": false, "leads": [], "available_count": 0, "truncated": false
    });
    let answers = json!({"memory.retrieve": retrieved, "memory.probe": probed});
    let home = TempHome::new();
    let impostor = Impostor::start_with(&home, move |request| {
        let id = request["request_id"].clone();
        match answers.get(request["op"].as_str().unwrap_or_default()) {
            Some(result) => json!({"v": 1, "request_id": id, "ok": true, "result": result, "warnings": []}),
            None => json!({"v": 1, "request_id": id, "ok": false, "error": {
                "code": "CITATION_ERROR", "message": "citation error (range_required): give a range",
                "retryable": false, "details": {"citation_error": "range_required", "next_action": "Add #START-END."}}}),
        }
    });
    let context = r#"{"workspace_id":"wsp_ref","project_id":"prj_ref"}"#;
    let run = |args: &[&str]| {
        let mut command = home.command(args);
        command.env("MEMOREE_CONTEXT", context);
        let output = home.output(&mut command, None);
        let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
        (output.status.code(), envelope)
    };
    let (status, envelope) = run(&["retrieve", "osprey"]);
    assert_eq!(status, Some(0), "{envelope}");
    assert_eq!(envelope["result"], retrieved);
    let (status, envelope) = run(&["probe", "osprey"]);
    assert_eq!(status, Some(0), "{envelope}");
    assert_eq!(envelope["result"], probed);
    let (status, envelope) = run(&["citation", "get", "memoree://artifact/art_1@arev_1"]);
    assert_eq!(status, Some(1), "{envelope}");
    assert_eq!(envelope["error"]["code"], "CITATION_ERROR");
    assert_eq!(envelope["error"]["details"]["citation_error"], "range_required");
    let sent = impostor.requests.lock().unwrap().clone();
    let ops: Vec<&str> = sent.iter().filter_map(|r| r["op"].as_str()).collect();
    assert_eq!(ops, ["memory.retrieve", "memory.probe", "citation.get"]);
    assert_eq!(sent[0]["context"]["workspace_id"], "wsp_ref");
    assert!(
        sent[2].get("context").is_none_or(Value::is_null),
        "citation.get needs no context"
    );
}

impl Drop for Impostor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.take().unwrap().join();
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[test]
fn daemon_stop_never_signals_a_process_it_does_not_own() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    for pid in [json!(victim.id()), json!(1), json!(0)] {
        let home = TempHome::new();
        let impostor = Impostor::start(
            &home,
            json!({"status": "ok", "running": true, "daemon_pid": pid, "authoritative_store": "sqlite_wal",
                   "retrieval_mode": "fts5", "last_commit_seq": 0}),
        );
        for verb in ["stop", "restart"] {
            let (status, envelope) = home.run_cli(&["daemon", verb]);
            assert_eq!(status.code(), Some(1), "{verb} {pid}: {envelope}");
            assert_eq!(code_of(&envelope), "TRANSPORT_ERROR");
            let message = envelope["error"]["message"].as_str().unwrap();
            assert!(message.contains("unsafe process id"), "{message}");
        }
        drop(impostor);
    }
    assert!(victim.try_wait().unwrap().is_none(), "the victim process was signalled");
    victim.kill().unwrap();
    victim.wait().unwrap();
}
