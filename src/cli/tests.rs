//! Checks over the whole command tree and the parsing of its flags.

use clap::{CommandFactory, Parser};
use serde_json::{Value, json};

use super::*;
use crate::protocol::schema;

fn walk<'a>(command: &'a clap::Command, path: String, out: &mut Vec<(String, &'a clap::Command)>) {
    for sub in command.get_subcommands() {
        let sub_path = format!("{path} {}", sub.get_name());
        out.push((sub_path.clone(), sub));
        walk(sub, sub_path, out);
    }
}

fn all_commands() -> Vec<(String, clap::Command)> {
    let root = Cli::command();
    let mut found = Vec::new();
    walk(&root, "memoree".to_owned(), &mut found);
    let mut owned: Vec<(String, clap::Command)> = found.into_iter().map(|(p, c)| (p, c.clone())).collect();
    owned.push(("memoree".to_owned(), root.clone()));
    owned
}

#[test]
fn the_command_tree_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_command_has_a_summary_and_an_example() {
    for (path, command) in all_commands() {
        if path.ends_with(" help") {
            continue;
        }
        assert!(command.get_about().is_some(), "{path} has no about text");
        let after = command.get_after_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(after.starts_with("Example"), "{path} has no example: {after:?}");
        assert!(
            after.contains("memoree "),
            "{path}'s example does not run memoree: {after:?}"
        );
    }
}

#[test]
fn the_command_tree_offers_every_wrapper() {
    let paths: Vec<String> = all_commands().into_iter().map(|(p, _)| p).collect();
    for expected in [
        "memoree init",
        "memoree context show",
        "memoree context explain",
        "memoree context resolve",
        "memoree context build",
        "memoree session exec",
        "memoree call",
        "memoree artifact put",
        "memoree artifact get",
        "memoree artifact revise",
        "memoree artifact history",
        "memoree artifact forget",
        "memoree claim assert",
        "memoree claim get",
        "memoree claim revise",
        "memoree claim retract",
        "memoree claim history",
        "memoree link",
        "memoree relation put",
        "memoree relation list",
        "memoree conflict list",
        "memoree search",
        "memoree recall",
        "memoree retrieve",
        "memoree probe",
        "memoree citation get",
        "memoree remember",
        "memoree checkpoint",
        "memoree pending list",
        "memoree pending show",
        "memoree pending preview",
        "memoree pending apply",
        "memoree pending drop",
        "memoree capabilities",
        "memoree instructions",
        "memoree schema",
        "memoree doctor",
        "memoree verify",
        "memoree reindex",
        "memoree backup create",
        "memoree inspect",
    ] {
        assert!(paths.iter().any(|p| p == expected), "missing {expected}");
    }
}

#[test]
fn defaults_follow_the_command_table() {
    let cli = Cli::try_parse_from(["memoree", "search", "a", "b"]).unwrap();
    assert!(matches!(cli.command, Command::Search(_)));
    let cli = Cli::try_parse_from(["memoree", "--pretty", "artifact", "put", "-"]).unwrap();
    assert!(cli.global.pretty);
    assert!(Cli::try_parse_from(["memoree", "artifact", "get", "x", "--force"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "claim", "assert", "opinion", "x"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "link", "claim:a", "derived_from", "claim:b"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "link", "claim:a", "derived-from", "claim:b"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "remember", "x", "--file", "f"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "remember", "--raw", "--allow-api-key", "x"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t", "--", "true"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "init", "--workspace-id", "w"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "conflict", "list", "--horizon", "galaxy"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "inspect"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "inspect", "--listen", "127.0.0.1:8765", "--open"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "inspect", "--write"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "retrieve"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "probe", "q", "--reformulation", "r"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "retrieve", "q", "--original-query", "r"]).is_err());
}

/// The request a wrapper builds for `args`, captured instead of sent.
fn built_request(args: &[&str]) -> Value {
    let cli = Cli::try_parse_from(std::iter::once("memoree").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let mut requests = request::capture::requests(|| {
        let _ = dispatch(cli);
    });
    assert_eq!(requests.len(), 1, "{args:?} sent {requests:?}");
    requests.pop().unwrap()
}

#[test]
fn every_wrapper_builds_a_request_its_schemas_accept() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let cases: &[&[&str]] = &[
        &["context", "resolve"],
        &[
            "context",
            "build",
            "storage",
            "design",
            "--max-bytes",
            "0",
            "--include-historical",
            "--no-recency",
        ],
        &[
            "artifact",
            "put",
            file,
            "--kind",
            "manifest",
            "--title",
            "t",
            "--idempotency-key",
            "k",
        ],
        &["artifact", "get", "art_1", "--revision", "arev_1", "--metadata-only"],
        &[
            "citation",
            "get",
            "memoree://artifact/art_1@arev_1#0-8",
            "--max-bytes",
            "512",
        ],
        &[
            "artifact",
            "revise",
            "art_1",
            file,
            "--if-revision",
            "arev_1",
            "--media-type",
            "text/x-toml",
        ],
        &[
            "artifact",
            "history",
            "art_1",
            "--limit",
            "3",
            "--before-revision-number",
            "9",
        ],
        &["artifact", "forget", "art_1", "--reason", "r"],
        &[
            "claim",
            "assert",
            "fact",
            "a",
            "b",
            "--evidence",
            "art_1@arev_1#0-1",
            "--evidence",
            "art_1@arev_1",
        ],
        &[
            "claim",
            "assert",
            "decision",
            "x",
            "--confidence",
            "0.5",
            "--valid-from",
            "2020-01-01T00:00:00Z",
        ],
        &["claim", "get", "clm_1", "--revision", "crev_1"],
        &[
            "claim",
            "revise",
            "clm_1",
            "y",
            "--if-revision",
            "crev_1",
            "--confidence",
            "1",
        ],
        &["claim", "retract", "clm_1", "--reason", "r"],
        &[
            "claim",
            "history",
            "clm_1",
            "--limit",
            "1",
            "--before-revision-number",
            "2",
        ],
        &["link", "claim:clm_1", "derived-from", "artifact:art_1"],
        &[
            "relation",
            "put",
            "claim:a",
            "contradicts",
            "claim:b",
            "--idempotency-key",
            "k",
        ],
        &[
            "relation",
            "list",
            "claim:a",
            "--direction",
            "incoming",
            "--relation",
            "supersedes",
        ],
        &[
            "relation",
            "list",
            "artifact:a",
            "--horizon",
            "workspace",
            "--reason",
            "r",
            "--before-commit-seq",
            "4",
        ],
        &[
            "conflict",
            "list",
            "--include-stale",
            "--limit",
            "5",
            "--before-case-sequence",
            "2",
        ],
        &["conflict", "list", "--horizon", "personal", "--reason", "audit"],
        &[
            "search",
            "a",
            "b",
            "--limit",
            "3",
            "--include-historical",
            "--min-commit-seq",
            "0",
            "--no-recency",
        ],
        &[
            "recall",
            "q",
            "--max-claims",
            "2",
            "--max-artifact-refs",
            "4",
            "--max-excerpt-bytes",
            "64",
        ],
        &["retrieve", "why", "did", "it", "fail"],
        &[
            "retrieve",
            "why did it fail",
            "--reformulation",
            "failure cause",
            "--horizon",
            "workspace",
            "--reason",
            "r",
            "--max-claims",
            "2",
            "--max-artifact-refs",
            "4",
            "--max-excerpt-bytes",
            "64",
            "--max-recovery-leads",
            "3",
            "--max-recovery-bytes",
            "2048",
            "--min-commit-seq",
            "0",
            "--no-recency",
            "--profile",
        ],
        &["probe", "failure", "cause"],
        &[
            "probe",
            "failure cause",
            "--original-query",
            "why did it fail",
            "--horizon",
            "personal",
            "--reason",
            "r",
            "--max-leads",
            "4",
            "--min-commit-seq",
            "0",
            "--no-recency",
        ],
        &["capabilities"],
        &["instructions", "--format", "claude-md"],
        &["schema"],
        &["doctor"],
        &["verify"],
        &["reindex"],
        &["backup", "create", "/tmp/memoree-backup"],
    ];
    for args in cases {
        let mut request = built_request(args);
        let op = serde_json::from_value::<crate::protocol::Request>(request.clone())
            .unwrap()
            .op;
        assert_eq!(request["idempotency_key"].is_string(), op.is_mutating(), "{args:?}");
        request["context"] = json!({"workspace_id": "w", "project_id": "p"});
        if let Err(violation) = schema::validate_request(&request) {
            panic!("{args:?}: envelope {violation:?}: {request}");
        }
        if let Err(violation) = schema::validate_input(op, &request["input"]) {
            panic!("{args:?}: input {violation:?}: {request}");
        }
    }
}

#[test]
fn wrappers_map_flags_onto_the_wire_spellings() {
    let request = built_request(&["link", "claim:c1", "derived-from", "artifact:a1"]);
    assert_eq!(
        request["input"],
        json!({"source_type": "claim", "source_id": "c1", "relation": "derived_from",
               "target_type": "artifact", "target_id": "a1", "metadata": {}})
    );
    let request = built_request(&["search", "two", "words", "--no-recency"]);
    assert_eq!(request["input"]["query"], "two words");
    assert_eq!(request["input"]["horizon"], "ambient");
    assert_eq!(request["input"]["recency"], json!({"enabled": false}));
    let request = built_request(&["recall", "q"]);
    assert_eq!(request["input"]["recency"], json!({"enabled": true}));
    assert_eq!(
        (
            request["input"]["max_claims"].as_i64(),
            request["input"]["max_artifact_refs"].as_i64()
        ),
        (Some(5), Some(3))
    );
    let request = built_request(&["retrieve", "two", "words"]);
    assert_eq!(request["op"], "memory.retrieve");
    assert_eq!(
        request["input"],
        json!({"query": "two words", "horizon": "ambient", "max_claims": 5, "max_artifact_refs": 3,
               "max_excerpt_bytes": 320, "max_recovery_leads": 8, "max_recovery_bytes": 12288,
               "recency": {"enabled": true}, "profile": false})
    );
    let request = built_request(&["retrieve", "q", "--reformulation", "r q", "--no-recency", "--profile"]);
    assert_eq!(request["input"]["reformulation"], "r q");
    assert_eq!(request["input"]["recency"], json!({"enabled": false}));
    assert_eq!(request["input"]["profile"], true);
    let request = built_request(&["probe", "two", "words"]);
    assert_eq!(request["op"], "memory.probe");
    assert_eq!(
        request["input"],
        json!({"query": "two words", "horizon": "ambient", "max_leads": 8, "recency": {"enabled": true}})
    );
    let request = built_request(&["probe", "q", "--original-query", "the question", "--max-leads", "2"]);
    assert_eq!(
        (&request["input"]["original_query"], &request["input"]["max_leads"]),
        (&json!("the question"), &json!(2))
    );
    let request = built_request(&["context", "build", "q"]);
    assert_eq!(request["input"]["max_bytes"], 16384);
    assert_eq!(request["input"]["limit"], 10);
    let request = built_request(&["backup", "create", "../bk1"]);
    let expected = std::env::current_dir().unwrap().join("../bk1");
    assert_eq!(request["input"]["destination"], expected.to_str().unwrap());
    let request = built_request(&["artifact", "get", "a", "--metadata-only"]);
    assert_eq!(request["input"]["include_content"], false);
    let request = built_request(&["claim", "assert", "fact", "x"]);
    let id = request["request_id"].as_str().unwrap();
    assert_eq!(request["idempotency_key"], format!("auto_{id}"));
}
