//! `memoree export` and `memoree import` through the binary: an export taken while the
//! daemon serves the store, imported into a new data directory and through the daemon
//! (`--merge`), re-exported identically; refusals keep their documented exit statuses.

use std::path::Path;

use serde_json::Value;

use crate::support::daemon::TestDaemon;
use crate::support::{TempHome, archive_files, code, field};

fn ok(home: &TempHome, args: &[&str]) -> Value {
    let (status, envelope) = home.run_cli(args);
    assert_eq!(
        (status, &envelope["ok"]),
        (0, &Value::Bool(true)),
        "{args:?}: {envelope}"
    );
    envelope
}

/// Some memory of every kind, through the CLI.
fn seed(home: &TempHome) -> (String, String) {
    let file = home.write_file(
        "design.md",
        "# Design\nSQLite stays authoritative; blobs live in the CAS.\n",
    );
    let put = ok(home, &["artifact", "put", file.to_str().unwrap(), "--kind", "design"]);
    let (artifact, revision) = (
        field(&put, "artifact_id").to_owned(),
        field(&put, "revision_id").to_owned(),
    );
    let big = home.write_file(
        "log.txt",
        "a long log line that fills the content-addressed store\n".repeat(600),
    );
    ok(home, &["artifact", "put", big.to_str().unwrap()]);
    let locator = format!("{artifact}@{revision}#9-15");
    let claim = ok(
        home,
        &[
            "claim",
            "assert",
            "decision",
            "SQLite is authoritative",
            "--evidence",
            &locator,
        ],
    );
    let claim_id = field(&claim, "claim_id").to_owned();
    let other = ok(home, &["claim", "assert", "fact", "Postgres is authoritative"]);
    ok(
        home,
        &[
            "link",
            &format!("claim:{claim_id}"),
            "contradicts",
            &format!("claim:{}", field(&other, "claim_id")),
        ],
    );
    (artifact, claim_id)
}

#[test]
fn an_export_taken_while_the_daemon_runs_imports_into_a_new_data_dir_and_re_exports_identically() {
    let home = TempHome::new();
    let (artifact, claim) = seed(&home);
    let archive = home.root.join("archive");
    let exported = ok(&home, &["export", "--all", archive.to_str().unwrap()]);
    assert_eq!(exported["result"]["records"]["artifact"], 2, "{exported}");
    assert_eq!(exported["result"]["records"]["conflict_case"], 1, "{exported}");
    assert!(archive.join("manifest.json").is_file());

    let data = home.root.join("imported-data");
    let imported = ok(
        &home,
        &[
            "import",
            archive.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(imported["result"]["mode"], "into_empty");
    assert_eq!(
        imported["result"]["last_commit_seq"],
        exported["result"]["source_last_commit_seq"]
    );

    let again = home.root.join("again");
    ok(
        &home,
        &[
            "export",
            "--all",
            again.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
    );
    assert!(
        archive_files(&archive) == archive_files(&again),
        "the re-export differs"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut daemon = TestDaemon::spawn_at(
        dir.path(),
        &memoree::paths::Endpoint::Unix(dir.path().join("s.sock")),
        &data,
    );
    daemon.wait_ready();
    let endpoint = daemon.endpoint_arg();
    for (args, there) in [
        (
            vec!["artifact", "get", artifact.as_str()],
            vec!["--endpoint", endpoint.as_str(), "artifact", "get", artifact.as_str()],
        ),
        (
            vec!["claim", "get", claim.as_str()],
            vec!["--endpoint", endpoint.as_str(), "claim", "get", claim.as_str()],
        ),
        (
            vec!["conflict", "list"],
            vec!["--endpoint", endpoint.as_str(), "conflict", "list"],
        ),
    ] {
        let (mut here, mut there) = (ok(&home, &args), ok(&home, &there));
        here["request_id"] = Value::Null;
        there["request_id"] = Value::Null;
        assert_eq!(here, there, "{args:?}");
    }
}

#[test]
fn merges_go_through_the_daemon_are_idempotent_and_refusals_keep_their_exit_statuses() {
    let source = TempHome::new();
    seed(&source);
    let archive = source.root.join("archive");
    ok(&source, &["export", "--all", archive.to_str().unwrap()]);

    let target = TempHome::new();
    seed(&target);
    let before = ok(&target, &["doctor"])["result"]["last_commit_seq"].as_i64().unwrap();
    let merged = ok(&target, &["import", archive.to_str().unwrap(), "--merge"]);
    let added = merged["result"]["imported"]["event"].as_i64().unwrap();
    assert!(added > 0);
    assert_eq!(merged["result"]["last_commit_seq"].as_i64().unwrap(), before + added);
    let rerun = ok(&target, &["import", archive.to_str().unwrap(), "--merge"]);
    assert!(
        rerun["result"]["imported"]
            .as_object()
            .unwrap()
            .values()
            .all(|n| n == 0),
        "{rerun}"
    );
    assert_eq!(rerun["result"]["last_commit_seq"], merged["result"]["last_commit_seq"]);
    assert_eq!(ok(&target, &["verify"])["result"]["ok"], true);

    let (status, refused) = target.run_cli(&["import", archive.to_str().unwrap()]);
    assert_eq!((status, code(&refused)), (2, "INVALID_REQUEST"), "{refused}");
    assert_eq!(refused["error"]["details"]["reason"], "target_not_empty");

    let future = source.root.join("future");
    copy(&archive, &future);
    let manifest = std::fs::read_to_string(future.join("manifest.json")).unwrap();
    std::fs::write(
        future.join("manifest.json"),
        manifest.replace("\"format_version\": 1", "\"format_version\": 9"),
    )
    .unwrap();
    let (status, refused) = target.run_cli(&["import", future.to_str().unwrap(), "--merge"]);
    assert_eq!((status, code(&refused)), (2, "UNSUPPORTED_VERSION"), "{refused}");

    let damaged = source.root.join("damaged");
    copy(&archive, &damaged);
    let path = damaged.join("claim_revisions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("SQLite", "SQLITE", 1)).unwrap();
    let (status, refused) = target.run_cli(&["import", damaged.to_str().unwrap(), "--merge"]);
    assert_eq!((status, code(&refused)), (1, "INTEGRITY_ERROR"), "{refused}");
    let after = ok(&target, &["doctor"])["result"]["last_commit_seq"].clone();
    assert_eq!(
        after, merged["result"]["last_commit_seq"],
        "refused imports wrote nothing"
    );

    let (status, refused) = target.run_cli(&["import", target.root.to_str().unwrap(), "--merge"]);
    assert_eq!((status, code(&refused)), (2, "INVALID_REQUEST"), "{refused}");
}

#[test]
fn a_scoped_export_needs_an_ambient_context_and_a_reason_to_broaden() {
    let home = TempHome::new();
    seed(&home);
    let dest = home.root.join("scoped");
    let (status, refused) = home.run_cli_in(&home.outside, &["export", dest.to_str().unwrap()]);
    assert_eq!((status, code(&refused)), (5, "NO_AMBIENT_CONTEXT"), "{refused}");
    let (status, refused) = home.run_cli(&["export", dest.to_str().unwrap(), "--horizon", "personal"]);
    assert_eq!((status, code(&refused)), (2, "INVALID_REQUEST"), "{refused}");
    let exported = ok(
        &home,
        &[
            "export",
            dest.to_str().unwrap(),
            "--horizon",
            "workspace",
            "--reason",
            "hand over",
        ],
    );
    assert_eq!(exported["result"]["scope"]["kind"], "visible");
    assert_eq!(exported["result"]["scope"]["horizon"], "workspace");
    let (status, refused) = home.run_cli(&["export", dest.to_str().unwrap(), "--all"]);
    assert_eq!(
        (status, code(&refused)),
        (2, "INVALID_REQUEST"),
        "an existing destination is refused: {refused}"
    );
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
