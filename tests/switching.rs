//! Issue 30, switching to Memoree: `memoree import --from FORMAT` on realistic fixtures of
//! each format (written here), imported twice and revised, every claim's cited span read back
//! and compared with the source bytes; `memoree setup HOST` for every host in a throw-away
//! `HOME`, each written config started as it says through rmcp's client and the official Python
//! SDK; `completions` and `man`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use memoree::testkit::parts::{self, Part};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::mcp_support::TestClient;
use crate::support::{SCRUBBED_ENV, TempHome};

/// `memoree call` with one request; returns the result (panics on a failure envelope).
fn call(home: &TempHome, op: &str, input: Value) -> Value {
    let request = json!({"v": 1, "request_id": "req_t", "op": op, "input": input});
    let (code, envelope) = home.run_cli_stdin(&["call"], request.to_string());
    assert_eq!(code, 0, "{op}: {envelope}");
    envelope["result"].clone()
}

fn import(home: &TempHome, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    let (code, envelope) = home.run_cli(&all);
    assert_eq!(envelope["ok"], true, "{envelope}");
    (code, envelope["result"].clone())
}

fn counts(result: &Value, kind: &str) -> (u64, u64, u64, u64) {
    let c = &result[kind];
    let n = |k: &str| c[k].as_u64().unwrap();
    (n("created"), n("revised"), n("unchanged"), n("retracted"))
}

/// Every current claim in the project.
fn claims(home: &TempHome) -> Vec<Value> {
    let listed = call(home, "claim.list", json!({"limit": 100}));
    assert_eq!(listed["truncated"], false);
    listed["claims"].as_array().unwrap().clone()
}

/// The exact bytes of an artifact revision.
fn revision_bytes(home: &TempHome, artifact_id: &str, revision_id: &str) -> Vec<u8> {
    let record = call(
        home,
        "artifact.get",
        json!({"artifact_id": artifact_id, "revision_id": revision_id}),
    );
    match record["content"]["type"].as_str() {
        Some("text") => record["content"]["data"].as_str().unwrap().as_bytes().to_vec(),
        other => panic!("unexpected content {other:?}"),
    }
}

/// Checks every active claim: its cited span of the artifact equals the same span of the
/// source file (`source_bytes`: path → bytes, for formats whose artifact is the file), and the
/// statement is quoted from it. Returns how many claims were checked.
fn check_spans(home: &TempHome, source_of: impl Fn(&Value) -> Option<Vec<u8>>) -> usize {
    let mut checked = 0;
    for claim in claims(home).iter().filter(|c| c["status"] == "active") {
        let evidence = &claim["evidence"][0];
        let artifact = call(
            home,
            "artifact.get",
            json!({"artifact_id": evidence["artifact_id"], "include_content": false}),
        );
        let content = revision_bytes(
            home,
            evidence["artifact_id"].as_str().unwrap(),
            evidence["revision_id"].as_str().unwrap(),
        );
        let (start, end) = match (evidence["start_byte"].as_u64(), evidence["end_byte"].as_u64()) {
            (Some(s), Some(e)) => (s as usize, e as usize),
            _ => (0, content.len()),
        };
        let cited = &content[start..end];
        let statement = claim["statement"].as_str().unwrap();
        assert!(
            String::from_utf8_lossy(cited).contains(statement),
            "{statement:?} is not quoted from {:?}",
            String::from_utf8_lossy(cited)
        );
        if let Some(source) = source_of(&artifact["provenance"]) {
            assert_eq!(
                &source[start..end],
                cited,
                "the span of {statement:?} differs from the source"
            );
        }
        checked += 1;
    }
    checked
}

fn file_bytes(provenance: &Value) -> Option<Vec<u8>> {
    std::fs::read(provenance["source_path"].as_str()?).ok()
}

const MCP_MEMORY: &str = r#"{"type":"entity","name":"Ada_Lovelace","entityType":"person","observations":["Prefers Rust for systems work","Reviews every migration before merge","Based in London (GMT)"]}
{"type":"entity","name":"billing-service","entityType":"project","observations":["Owns invoices and refunds","Deploys on Fridays are frozen"]}
{"type":"entity","name":"PostgreSQL","entityType":"tool","observations":["Version 16 in production","Pinned with \"max_connections = 200\""]}
{"type":"relation","from":"Ada_Lovelace","to":"billing-service","relationType":"works_on"}
{"type":"relation","from":"billing-service","to":"PostgreSQL","relationType":"dependsOn"}
{"type":"relation","from":"Ada_Lovelace","to":"Grace_Hopper","relationType":"knows"}
"#;

#[test]
fn an_mcp_memory_file_imports_once_and_a_changed_entity_becomes_a_new_revision() {
    let home = TempHome::new();
    let file = home.project.join("memory.jsonl");
    std::fs::write(&file, MCP_MEMORY).unwrap();
    let (code, first) = import(&home, &["--from", "mcp-memory", "memory.jsonl"]);
    assert_eq!(code, 8, "an unresolved relation target is a skip: {first}");
    assert_eq!(counts(&first, "artifacts"), (3, 0, 0, 0));
    assert_eq!(counts(&first, "claims"), (7, 0, 0, 0));
    assert_eq!(counts(&first, "relations"), (2, 0, 0, 0));
    assert_eq!(
        first["unresolved"],
        json!([{"file": file.display().to_string(), "line": 6, "target": "Grace_Hopper"}])
    );
    assert_eq!(first["relation_types"]["dependsOn"], "depends-on");
    assert_eq!(first["relation_types"]["works_on"], "works-on");
    let (_, again) = import(&home, &["--from", "mcp-memory", "memory.jsonl"]);
    assert_eq!(counts(&again, "artifacts"), (0, 0, 3, 0));
    assert_eq!(counts(&again, "claims"), (0, 0, 7, 0));
    assert_eq!(counts(&again, "relations"), (0, 0, 2, 0));
    assert_eq!(check_spans(&home, |_| None), 7);

    let edited = MCP_MEMORY.replace("\"Based in London (GMT)\"", "\"Based in Lisbon (WET)\"");
    std::fs::write(&file, edited).unwrap();
    let (_, revised) = import(&home, &["--from", "mcp-memory", "memory.jsonl"]);
    assert_eq!(counts(&revised, "artifacts"), (0, 1, 2, 0));
    // Two claims are unchanged in text and re-cite the new revision; one is new, one retracted.
    assert_eq!(counts(&revised, "claims"), (1, 2, 4, 1));
    let active: Vec<String> = claims(&home)
        .iter()
        .filter(|c| c["status"] == "active")
        .map(|c| c["statement"].as_str().unwrap().to_owned())
        .collect();
    assert!(active.contains(&"Based in Lisbon (WET)".to_owned()));
    assert!(!active.contains(&"Based in London (GMT)".to_owned()));
    assert_eq!(check_spans(&home, |_| None), 7);
    let ada = call(&home, "artifact.list", json!({"kind": "entity"}))["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Ada_Lovelace")
        .cloned()
        .unwrap();
    assert_eq!(ada["revision_number"], 2);
    assert_eq!(ada["provenance"]["source_format"], "mcp-memory");
    assert_eq!(ada["provenance"]["entity_type"], "person");
    let edges = call(
        &home,
        "relation.list",
        json!({"entity_type": "artifact", "entity_id": ada["artifact_id"]}),
    );
    assert_eq!(edges["relations"][0]["metadata"]["relation_type"], "works_on");
    assert_eq!(edges["relations"][0]["metadata"]["relation_type_kebab"], "works-on");
}

#[test]
fn markdown_instruction_and_rule_files_keep_front_matter_and_quote_each_bullet() {
    let home = TempHome::new();
    let p = &home.project;
    std::fs::write(
        p.join("CLAUDE.md"),
        "# Project notes\n\n## Conventions\n- Run `cargo fmt` before committing.\n- Tests are named as sentences.\n\n```sh\n- not a bullet\n```\n",
    )
    .unwrap();
    std::fs::write(
        p.join("AGENTS.md"),
        "# Agents\n\n1. Never push to main.\n2. Keep modules small.\n",
    )
    .unwrap();
    std::fs::create_dir_all(p.join(".cursor/rules")).unwrap();
    std::fs::write(
        p.join(".cursor/rules/testing.mdc"),
        "---\ndescription: Testing conventions\nglobs: \"tests/**/*.rs\"\nalwaysApply: false\n---\n\n- Fixtures are written by hand, never downloaded.\n",
    )
    .unwrap();
    let (code, first) = import(&home, &["--from", "markdown", "--claims", "bullets", "."]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(counts(&first, "artifacts"), (3, 0, 0, 0));
    assert_eq!(counts(&first, "claims"), (5, 0, 0, 0));
    let (_, again) = import(&home, &["--from", "markdown", "--claims", "bullets", "."]);
    assert_eq!(counts(&again, "artifacts"), (0, 0, 3, 0));
    assert_eq!(counts(&again, "claims"), (0, 0, 5, 0));
    assert_eq!(check_spans(&home, file_bytes), 5);
    let rule = call(&home, "artifact.list", json!({"kind": "rule"}))["artifacts"][0].clone();
    assert_eq!(rule["title"], "Testing conventions");
    assert_eq!(rule["provenance"]["front_matter"]["globs"], "tests/**/*.rs");
    assert_eq!(rule["provenance"]["front_matter"]["alwaysApply"], false);

    std::fs::write(
        p.join("AGENTS.md"),
        "# Agents\n\n1. Never push to main.\n2. Keep modules under 500 lines.\n",
    )
    .unwrap();
    let (_, revised) = import(&home, &["--from", "markdown", "--claims", "bullets", "."]);
    assert_eq!(counts(&revised, "artifacts"), (0, 1, 2, 0));
    assert_eq!(revised["claims"]["created"], 1);
    assert_eq!(revised["claims"]["retracted"], 1);
    assert_eq!(check_spans(&home, file_bytes), 5);
}

#[test]
fn markdown_headings_become_one_quoted_claim_per_section() {
    let home = TempHome::new();
    std::fs::write(
        home.project.join("MEMORY.md"),
        "# Memory\n\n## Build\nUse `cargo build --locked`.\n\n## Style\nNo unwrap in library code.\n",
    )
    .unwrap();
    let (code, result) = import(
        &home,
        &["--from", "markdown", "--claims", "headings", "MEMORY.md", "--dry-run"],
    );
    assert_eq!(code, 0);
    assert_eq!(result["dry_run"], true);
    assert_eq!(result["preview"][0]["kind"], "memory");
    assert_eq!(result["preview"][0]["claims"], 3);
    assert!(claims(&home).is_empty(), "a dry run writes nothing");
    import(&home, &["--from", "markdown", "--claims", "headings", "MEMORY.md"]);
    let statements: Vec<String> = claims(&home)
        .iter()
        .map(|c| c["statement"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        statements.contains(&"## Style\nNo unwrap in library code.".to_owned()),
        "{statements:?}"
    );
    assert_eq!(check_spans(&home, file_bytes), 3);
}

const MEM0: &str = r#"{
  "results": [
    {
      "id": "0b1c5b5e-7a4d-4a53-9d1b-1f6f3c9a2e01",
      "memory": "Prefers TypeScript over JavaScript for new services",
      "hash": "5c1a0e0b3f",
      "metadata": {"source": "chat"},
      "created_at": "2025-03-14T09:26:53.589793-07:00",
      "updated_at": null,
      "user_id": "alice",
      "agent_id": null,
      "run_id": null
    },
    {
      "id": "7f3e2d1c-0000-4c2b-8a9e-2b7c6d5e4f32",
      "memory": "Is allergic to peanuts",
      "hash": "9e8d7c6b5a",
      "metadata": null,
      "created_at": "2025-03-15T10:00:00-07:00",
      "updated_at": "2025-04-01T08:00:00-07:00",
      "user_id": "bob",
      "agent_id": "travel-agent",
      "run_id": "run-42"
    },
    {
      "id": "broken-1",
      "hash": "0000"
    }
  ]
}
"#;

#[test]
fn a_mem0_export_imports_each_memory_with_its_ids_in_provenance_and_can_map_users_to_projects() {
    let home = TempHome::new();
    std::fs::write(home.project.join("mem0.json"), MEM0).unwrap();
    let (code, first) = import(&home, &["--from", "mem0", "mem0.json"]);
    assert_eq!(code, 8);
    assert_eq!(first["issues"][0]["line"], 25, "{first}");
    assert!(first["issues"][0]["message"].as_str().unwrap().contains("memory"));
    assert_eq!(counts(&first, "artifacts"), (2, 0, 0, 0));
    assert_eq!(counts(&first, "claims"), (2, 0, 0, 0));
    let (_, again) = import(&home, &["--from", "mem0", "mem0.json"]);
    assert_eq!(counts(&again, "artifacts"), (0, 0, 2, 0));
    assert_eq!(counts(&again, "claims"), (0, 0, 2, 0));
    assert_eq!(check_spans(&home, |_| None), 2);
    let listed = call(&home, "artifact.list", json!({"kind": "memory"}));
    let bob = listed["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provenance"]["user_id"] == "bob")
        .unwrap();
    assert_eq!(bob["provenance"]["agent_id"], "travel-agent");
    assert_eq!(bob["provenance"]["run_id"], "run-42");
    assert_eq!(bob["provenance"]["source_id"], "7f3e2d1c-0000-4c2b-8a9e-2b7c6d5e4f32");
    assert_eq!(bob["provenance"]["source_updated_at"], "2025-04-01T08:00:00-07:00");

    let (_, mapped) = import(
        &home,
        &[
            "--from",
            "mem0",
            "mem0.json",
            "--map-user-to-project",
            "--workspace",
            "wsp_team",
            "--project",
            "prj_other",
        ],
    );
    assert_eq!(counts(&mapped, "artifacts"), (2, 0, 0, 0));
    let request = json!({"v": 1, "request_id": "r", "op": "artifact.list", "input": {},
                         "context": {"workspace_id": "wsp_team", "project_id": "alice", "pins": []}});
    let (_, alice) = home.run_cli_stdin(&["call"], request.to_string());
    assert_eq!(alice["result"]["total"], 1, "{alice}");
}

#[test]
fn basic_memory_notes_become_claims_and_relations_and_unresolved_targets_are_reported() {
    let home = TempHome::new();
    let notes = home.project.join("notes");
    std::fs::create_dir_all(notes.join("design")).unwrap();
    std::fs::write(
        notes.join("design/search.md"),
        "---\ntitle: Search Design\ntype: note\npermalink: design/search-design\ntags:\n- search\n- ranking\n---\n\n# Search Design\n\n## Observations\n- [decision] Rank with BM25 plus bounded recency #ranking\n- [constraint] Queries stay under 8 KiB\n- [idea] Try typo correction (issue 13)\n\n## Relations\n- implements [[Retrieval Spec]]\n- relates_to [[Coding Standards]]\n",
    )
    .unwrap();
    std::fs::write(
        notes.join("spec.md"),
        "---\ntitle: Retrieval Spec\ntype: spec\npermalink: retrieval-spec\n---\n\n- [requirement] Recall returns at most ten claims\n- part_of [[Search Design]]\n",
    )
    .unwrap();
    std::fs::write(notes.join("broken.md"), "---\ntitle: [unclosed\n---\nbody\n").unwrap();
    let (code, first) = import(&home, &["--from", "basic-memory", "notes"]);
    assert_eq!(code, 8);
    assert_eq!(counts(&first, "artifacts"), (2, 0, 0, 0));
    assert_eq!(counts(&first, "claims"), (4, 0, 0, 0));
    assert_eq!(counts(&first, "relations"), (2, 0, 0, 0));
    assert_eq!(first["unresolved"][0]["target"], "Coding Standards");
    assert_eq!(first["unresolved"][0]["line"], 19);
    assert!(first["issues"][0]["file"].as_str().unwrap().ends_with("broken.md"));
    assert!(first["issues"][0]["line"].is_u64());
    let (_, again) = import(&home, &["--from", "basic-memory", "notes"]);
    assert_eq!(counts(&again, "artifacts"), (0, 0, 2, 0));
    assert_eq!(counts(&again, "claims"), (0, 0, 4, 0));
    assert_eq!(counts(&again, "relations"), (0, 0, 2, 0));
    assert_eq!(check_spans(&home, file_bytes), 4);
    let types: Vec<String> = claims(&home)
        .iter()
        .map(|c| c["claim_type"].as_str().unwrap().to_owned())
        .collect();
    for expected in ["decision", "constraint", "observation"] {
        assert!(types.contains(&expected.to_owned()), "{types:?}");
    }
}

#[test]
fn malformed_lines_are_reported_with_file_and_line_and_the_rest_imports() {
    let home = TempHome::new();
    let mut bytes =
        b"{\"type\":\"entity\",\"name\":\"ok\",\"entityType\":\"x\",\"observations\":[\"fine\"]}\n".to_vec();
    bytes.extend_from_slice(b"{\"type\":\"entity\",\"name\":\"bad\xff\",\"entityType\":\"x\",\"observations\":[]}\n");
    bytes.extend_from_slice(b"{\"type\":\"entity\",\"name\":\"no type\"}\n");
    bytes.extend_from_slice(b"not json at all\n");
    std::fs::write(home.project.join("m.jsonl"), bytes).unwrap();
    let (code, result) = import(&home, &["--from", "mcp-memory", "m.jsonl"]);
    assert_eq!(code, 8);
    assert_eq!(result["skipped"], 3);
    let lines: Vec<u64> = result["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 3, 4]);
    assert!(result["issues"][0]["message"].as_str().unwrap().contains("UTF-8"));
    assert_eq!(counts(&result, "artifacts"), (1, 0, 0, 0));
}

// ---- setup ----

/// A `memoree` command whose `HOME` is a fresh directory under the test home.
fn setup_cmd(home: &TempHome, user_home: &Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = home.cmd(args);
    cmd.env("HOME", user_home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME");
    crate::support::run(cmd)
}

/// The command and args a written config names for memoree.
fn configured(host: &str, path: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let entry = if host == "codex" {
        let table: toml::Table = toml::from_str(&text).unwrap();
        serde_json::to_value(&table["mcp_servers"]["memoree"]).unwrap()
    } else {
        let value: Value = serde_json::from_str(&text).unwrap();
        let section = if host == "vscode" { "servers" } else { "mcpServers" };
        if host == "vscode" {
            assert_eq!(value[section]["memoree"]["type"], "stdio");
        }
        value[section]["memoree"].clone()
    };
    let args = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    (entry["command"].as_str().unwrap().to_owned(), args)
}

const HOSTS: [&str; 5] = ["claude-code", "cursor", "codex", "vscode", "claude-desktop"];

fn set_up_every_host(home: &TempHome) -> Vec<(String, PathBuf)> {
    let user_home = home.root.join("user");
    std::fs::create_dir_all(user_home.join(".codex")).unwrap();
    std::fs::write(
        user_home.join(".codex/config.toml"),
        "# Codex settings\nmodel = \"o4-mini\" # fast\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\nargs = []\n",
    )
    .unwrap();
    std::fs::write(
        home.project.join(".mcp.json"),
        "{\n    \"mcpServers\": {\n        \"github\": {\"command\": \"gh-mcp\"}\n    },\n    \"z\": true\n}\n",
    )
    .unwrap();
    let mut written = Vec::new();
    for host in HOSTS {
        let (code, first) = setup_cmd(home, &user_home, &["setup", host]);
        assert_eq!(code, 0, "{host}: {first}");
        let path = PathBuf::from(first["result"]["config_path"].as_str().unwrap());
        assert!(
            path.starts_with(&home.root),
            "{host} wrote outside the test home: {}",
            path.display()
        );
        let (_, again) = setup_cmd(home, &user_home, &["setup", host]);
        assert_eq!(again["result"]["action"], "unchanged", "{host}: {again}");
        let (command, args) = configured(host, &path);
        assert!(
            Path::new(&command).is_absolute() && Path::new(&command).exists(),
            "{command}"
        );
        assert_eq!(args, ["mcp"]);
        written.push((host.to_owned(), path));
    }
    written
}

#[test]
fn setup_merges_every_hosts_file_idempotently_and_keeps_what_was_there() {
    let home = TempHome::new();
    let written = set_up_every_host(&home);
    let codex = std::fs::read_to_string(home.root.join("user/.codex/config.toml")).unwrap();
    assert!(
        codex.starts_with("# Codex settings\nmodel = \"o4-mini\" # fast\n\n[mcp_servers.github]\n"),
        "{codex}"
    );
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(home.project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(claude["mcpServers"]["github"]["command"], "gh-mcp");
    assert_eq!(claude["z"], true);
    let paths: Vec<String> = written.iter().map(|(_, p)| p.display().to_string()).collect();
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("user/.config/Claude/claude_desktop_config.json")),
        "{paths:?}"
    );
    assert!(paths.iter().any(|p| p.ends_with("project/.vscode/mcp.json")));

    let outside = home.outside.join("fresh");
    std::fs::create_dir_all(&outside).unwrap();
    let (code, printed) = setup_cmd(
        &home,
        &home.root.join("user"),
        &["setup", "cursor", "--print", "--directory", outside.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert!(
        printed["result"]["snippet"]
            .as_str()
            .unwrap()
            .contains("\"mcpServers\"")
    );
    assert!(
        !outside.join(".cursor").exists() && !outside.join(".memoree.toml").exists(),
        "--print writes nothing"
    );
    let (_, fresh) = setup_cmd(
        &home,
        &home.root.join("user"),
        &["setup", "cursor", "--directory", outside.to_str().unwrap()],
    );
    assert_eq!(fresh["result"]["action"], "created");
    assert!(
        fresh["result"]["init"]["marker"]
            .as_str()
            .unwrap()
            .ends_with(".memoree.toml")
    );
    assert!(outside.join(".memoree.toml").exists());
}

#[test]
fn setup_instructions_are_written_between_markers_and_replaced_on_rerun() {
    let home = TempHome::new();
    let user = home.root.join("user");
    std::fs::write(home.project.join("AGENTS.md"), "# Team rules\n\nBe kind.\n").unwrap();
    let (code, first) = setup_cmd(&home, &user, &["setup", "codex", "--instructions"]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["result"]["instructions"]["action"], "updated");
    let text = std::fs::read_to_string(home.project.join("AGENTS.md")).unwrap();
    assert!(text.starts_with("# Team rules\n\nBe kind.\n\n<!-- memoree:instructions:begin"));
    assert_eq!(text.matches("memoree:instructions:begin").count(), 1);
    let (_, again) = setup_cmd(&home, &user, &["setup", "codex", "--instructions"]);
    assert_eq!(again["result"]["instructions"]["action"], "unchanged");
    let stale = text.replacen("-->\n", "-->\nA STALE LINE\n", 1) + "\n## After\n";
    std::fs::write(home.project.join("AGENTS.md"), stale).unwrap();
    let (_, replaced) = setup_cmd(&home, &user, &["setup", "codex", "--instructions"]);
    assert_eq!(replaced["result"]["instructions"]["action"], "updated");
    let restored = std::fs::read_to_string(home.project.join("AGENTS.md")).unwrap();
    assert!(
        !restored.contains("A STALE LINE") && restored.ends_with("\n## After\n"),
        "{restored}"
    );
    assert_eq!(restored.matches("memoree:instructions:begin").count(), 1);
    let (_, claude) = setup_cmd(&home, &user, &["setup", "claude-code", "--instructions"]);
    assert_eq!(claude["result"]["instructions"]["action"], "created");
    assert!(home.project.join("CLAUDE.md").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_config_setup_writes_starts_memoree_mcp_through_the_rmcp_client() {
    let home = TempHome::new();
    for (host, path) in set_up_every_host(&home) {
        let (command, args) = configured(&host, &path);
        let mut child = tokio::process::Command::new(&command);
        for name in SCRUBBED_ENV {
            child.env_remove(name);
        }
        child
            .args(&args)
            .env("MEMOREE_HOME", &home.home)
            .current_dir(&home.project);
        let (transport, _stderr) = TokioChildProcess::builder(child).stderr(Stdio::null()).spawn().unwrap();
        let client = TestClient::default()
            .serve(transport)
            .await
            .unwrap_or_else(|e| panic!("{host}: {e}"));
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "recall"), "{host}: {tools:?}");
        client.cancel().await.unwrap();
    }
}

#[test]
fn every_config_setup_writes_starts_memoree_mcp_through_the_python_sdk() {
    let python = match crate::mcp_python::interpreter() {
        Ok(python) => python,
        Err(why) => return parts::skip(Part::PythonMcp, &parts::current_test(), &why),
    };
    let home = TempHome::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python/configured.py");
    for (host, path) in set_up_every_host(&home) {
        let (command, args) = configured(&host, &path);
        let mut cmd = std::process::Command::new(&python);
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        let output = cmd
            .arg(&script)
            .arg(&command)
            .arg(args.join(" "))
            .arg(&home.home)
            .arg(&home.project)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("tools listed"),
            "{host}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn completions_and_the_man_page_print_for_every_shell() {
    let home = TempHome::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let output = home.cmd(&["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("setup"), "{shell}");
    }
    let man = home.cmd(&["man"]).output().unwrap();
    assert!(man.status.success());
    assert!(String::from_utf8_lossy(&man.stdout).starts_with(".ie"));
}
