//! `compose.yaml`, checked without a container engine: the file is read as Compose reads it
//! (YAML, anchors resolved), its shape is checked (PostgreSQL with a health check, two front
//! ends that wait for it and run the same command), and then its front-end command runs twice
//! as processes against a real throw-away PostgreSQL: the database, role and password the
//! `postgres` service is given, the `--store` URL with the service's host name replaced by the
//! cluster's socket, and each front end on a loopback port of its own instead of its own
//! container's `0.0.0.0:7411`. Every other argument is the file's own.

use std::path::{Path, PathBuf};
use std::process::Command;

use memoree::paths::Endpoint;
use memoree::testkit::postgres::TestCluster;
use serde_json::{Value, json};
use yaml_rust2::{Yaml, YamlLoader};

use crate::support::BIN;
use crate::support::daemon::TestDaemon;

const FRONT_ENDS: [&str; 2] = ["memoree-a", "memoree-b"];

fn compose() -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("compose.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

fn text(node: &Yaml) -> &str {
    node.as_str()
        .unwrap_or_else(|| panic!("expected a string, found {node:?}"))
}

fn strings(node: &Yaml) -> Vec<String> {
    let list = node
        .as_vec()
        .unwrap_or_else(|| panic!("expected a list, found {node:?}"));
    list.iter().map(|item| text(item).to_owned()).collect()
}

/// The value following `flag` in a front end's command.
fn flag_value<'a>(command: &'a [String], flag: &str) -> &'a str {
    let at = command
        .iter()
        .position(|arg| arg == flag)
        .unwrap_or_else(|| panic!("{flag} missing"));
    &command[at + 1]
}

/// The `postgres` service's database settings: (user, password, database).
fn database_settings(compose: &Yaml) -> (String, String, String) {
    let env = &compose["services"]["postgres"]["environment"];
    (
        text(&env["POSTGRES_USER"]).to_owned(),
        text(&env["POSTGRES_PASSWORD"]).to_owned(),
        text(&env["POSTGRES_DB"]).to_owned(),
    )
}

#[test]
fn compose_runs_postgres_and_two_front_ends_that_wait_for_it_and_serve_its_database() {
    let compose = compose();
    let postgres = &compose["services"]["postgres"];
    assert!(text(&postgres["image"]).starts_with("postgres:"));
    assert_eq!(strings(&postgres["healthcheck"]["test"])[..2], ["CMD", "pg_isready"]);
    let (user, password, database) = database_settings(&compose);
    let first = strings(&compose["services"][FRONT_ENDS[0]]["command"]);
    for name in FRONT_ENDS {
        let service = &compose["services"][name];
        assert_eq!(
            text(&service["depends_on"]["postgres"]["condition"]),
            "service_healthy",
            "{name} must start once PostgreSQL answers"
        );
        assert!(
            strings(&service["volumes"])
                .iter()
                .any(|v| v.starts_with("./target/release/memoree:")),
            "{name} runs the binary `cargo build --release` writes"
        );
        assert_eq!(
            text(&service["restart"]),
            "unless-stopped",
            "{name} comes back after a reboot or after giving up on the database"
        );
        let command = strings(&service["command"]);
        assert_eq!(command, first, "both front ends run the same command");
        assert_eq!(command[..2], ["memoree", "serve"]);
        assert_eq!(
            flag_value(&command, "--store"),
            format!("postgres://{user}@postgres/{database}"),
            "{name} serves the postgres service's database, with no password on its command line"
        );
        assert_eq!(
            text(&service["environment"]["PGPASSWORD"]),
            password,
            "{name} takes the postgres service's password from its environment"
        );
        assert!(flag_value(&command, "--listen").starts_with("tcp://0.0.0.0:"));
        assert!(
            flag_value(&command, "--store-wait").parse::<u64>().is_ok_and(|s| s > 0),
            "{name} waits a bounded time for the database"
        );
    }
    assert_eq!(text(&postgres["restart"]), "unless-stopped");
}

/// The compose front-end command as a process here: `--store` reaches `cluster` over its
/// socket, `--listen` is `endpoint`, `--data-dir` is `data_dir`.
fn front_end_command(
    compose_command: &[String],
    cluster: &TestCluster,
    endpoint: &Endpoint,
    data_dir: &Path,
) -> Command {
    let compose = compose();
    let (_, _, database) = database_settings(&compose);
    let mut command = Command::new(BIN);
    // The front end's environment, as Compose passes it (the cluster trusts its role, so the
    // password is carried but not needed).
    let environment = compose["services"][FRONT_ENDS[0]]["environment"].as_hash().unwrap();
    for (name, value) in environment {
        command.env(text(name), text(value));
    }
    let mut args = compose_command[1..].iter();
    while let Some(arg) = args.next() {
        command.arg(arg);
        let replaced = match arg.as_str() {
            "--store" => {
                let url = args.next().unwrap();
                assert!(url.contains("@postgres/"), "{url}");
                format!(
                    "postgres://{}@/{database}?host={}",
                    memoree::testkit::postgres::ROLE,
                    cluster.dir().display()
                )
            }
            "--listen" => {
                args.next().unwrap();
                endpoint.to_string()
            }
            "--data-dir" => {
                args.next().unwrap();
                data_dir.display().to_string()
            }
            _ => continue,
        };
        command.arg(replaced);
    }
    command
}

fn loopback_endpoint() -> Endpoint {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    Endpoint::Tcp(format!("127.0.0.1:{port}").parse().unwrap())
}

fn put(key: &str) -> Value {
    json!({"v": 1, "request_id": "req_compose", "op": "artifact.put", "idempotency_key": key,
           "context": {"workspace_id": "wsp_team", "project_id": "prj_team"},
           "input": {"kind": "note", "title": "compose", "content": {"type": "text", "data": "written through memoree-a"}}})
}

#[test]
fn the_compose_front_end_command_serves_one_database_from_two_processes() {
    let compose = compose();
    let (user, _, database) = database_settings(&compose);
    assert_eq!(
        user,
        memoree::testkit::postgres::ROLE,
        "the test cluster's role is the compose user"
    );
    let Some(cluster) = TestCluster::start() else { return };
    cluster.psql(&format!("CREATE DATABASE {database}"));
    let dirs: Vec<tempfile::TempDir> = FRONT_ENDS.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let front_ends: Vec<TestDaemon> = FRONT_ENDS
        .iter()
        .zip(&dirs)
        .map(|(name, dir)| {
            let command = strings(&compose["services"][*name]["command"]);
            let endpoint = loopback_endpoint();
            let data_dir: PathBuf = dir.path().join("data");
            let process = front_end_command(&command, &cluster, &endpoint, &data_dir);
            TestDaemon::start_command(process, dir.path(), endpoint, &data_dir)
        })
        .collect();
    let (a, b) = (front_ends[0].client(), front_ends[1].client());

    let written = a.exchange_json(&put("key_compose")).unwrap();
    assert!(written.ok, "{:?}", written.error);
    let written = serde_json::to_value(written.result).unwrap();
    let artifact_id = written["artifact_id"].as_str().unwrap();
    let commit_seq = written["commit_seq"].as_i64().unwrap();

    // memoree-b reads what memoree-a wrote, and finds it in a search at least as new.
    let context = json!({"workspace_id": "wsp_team", "project_id": "prj_team"});
    let read = b
        .exchange_json(
            &json!({"v": 1, "request_id": "req_get", "op": "artifact.get", "context": context,
                               "input": {"artifact_id": artifact_id}}),
        )
        .unwrap();
    assert!(read.ok, "{:?}", read.error);
    let read = serde_json::to_value(read.result).unwrap();
    assert_eq!(read["content"]["data"], "written through memoree-a");
    let found = b
        .exchange_json(
            &json!({"v": 1, "request_id": "req_search", "op": "search", "context": context,
                               "input": {"query": "written through memoree", "min_commit_seq": commit_seq}}),
        )
        .unwrap();
    assert!(found.ok, "{:?}", found.error);
    let found = serde_json::to_value(found.result).unwrap();
    assert!(found.to_string().contains(artifact_id), "{found}");

    // The same key through memoree-b is the same mutation, not a second one.
    let replayed = b.exchange_json(&put("key_compose")).unwrap();
    assert!(replayed.ok, "{:?}", replayed.error);
    let replayed = serde_json::to_value(replayed.result).unwrap();
    assert_eq!(replayed["artifact_id"], artifact_id);
    assert_eq!(replayed["commit_seq"], commit_seq);
    let stored = cluster.psql_in(&database, "SELECT count(*) FROM artifacts");
    assert_eq!(stored.trim(), "1");
}
