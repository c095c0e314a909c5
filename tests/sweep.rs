//! Hostile input on the CLI side: `artifact get --output` destinations, relative `backup
//! create` destinations with `..`, and malformed `--evidence` locators. Each is refused
//! with its documented code, touches nothing it was not asked to write, and a locator
//! that does not parse never reaches the service.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{TempHome, code, field};

/// Every entry under `root` except `skip` (links not followed): kind and content.
fn tree(root: &Path, skip: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path == skip {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                format!("file {}", String::from_utf8_lossy(&std::fs::read(&path).unwrap()))
            };
            out.insert(path, what);
        }
    }
    out
}

fn last_commit_seq(home: &TempHome) -> i64 {
    let (status, doctor) = home.run_cli(&["doctor"]);
    assert_eq!(status, 0, "{doctor}");
    doctor["result"]["last_commit_seq"].as_i64().unwrap()
}

/// A home with one artifact and a planted sandbox next to the project: a precious file,
/// a directory, and links to each of them plus a dangling one.
fn planted() -> (TempHome, String) {
    let home = TempHome::new();
    let (status, put) = home.run_cli_stdin(&["artifact", "put", "-"], "payload");
    assert_eq!(status, 0, "{put}");
    let id = field(&put, "artifact_id").to_owned();
    let root = &home.root;
    home.write_file("victim.txt", "precious");
    home.write_file("dir/keep", "kept");
    symlink(root.join("nowhere.txt"), root.join("dangling")).unwrap();
    symlink(root.join("victim.txt"), root.join("to-file")).unwrap();
    symlink(root.join("dir"), root.join("to-dir")).unwrap();
    (home, id)
}

#[test]
fn get_output_refuses_existing_paths_links_and_directories_and_touches_nothing() {
    let (home, id) = planted();
    let root = home.root.clone();
    let r = |name: &str| root.join(name).to_str().unwrap().to_owned();
    let long = format!("{}/{}", r("dir"), "n".repeat(300));
    // (destination, also refused with --force)
    let cases: Vec<(String, bool)> = vec![
        (r("victim.txt"), false),
        ("../victim.txt".to_owned(), false),
        ("../project/../victim.txt".to_owned(), false),
        (r("dangling"), false),
        (r("to-file"), false),
        (r("to-dir"), false),
        (r("dir"), true),
        (format!("{}/", r("dir")), true),
        ("../dir".to_owned(), true),
        ("..".to_owned(), true),
        (".".to_owned(), true),
        (format!("{}/out.txt", r("victim.txt")), true),
        (format!("{}/out.txt", r("to-file")), true),
        (format!("{}/../out.txt", r("victim.txt")), true),
        (long, true),
    ];
    let skip = home.home.clone();
    for (dest, refused_with_force) in &cases {
        let before = tree(&root, &skip);
        let (status, body) = home.run_cli(&["artifact", "get", &id, "--output", dest]);
        assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"), "--output {dest}: {body}");
        assert!(body["result"].is_null(), "{body}");
        assert_eq!(tree(&root, &skip), before, "--output {dest} changed the filesystem");
        if *refused_with_force {
            let (status, body) = home.run_cli(&["artifact", "get", &id, "--output", dest, "--force"]);
            assert_eq!(
                (status, code(&body)),
                (2, "INVALID_REQUEST"),
                "--output {dest} --force: {body}"
            );
            assert_eq!(
                tree(&root, &skip),
                before,
                "--output {dest} --force changed the filesystem"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(root.join("victim.txt")).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string(root.join("dir/keep")).unwrap(), "kept");
    assert!(!root.join("nowhere.txt").exists());

    // `--force` replaces a planted link itself, never what it points at.
    for link in ["to-dir", "to-file", "dangling"] {
        let (status, body) = home.run_cli(&["artifact", "get", &id, "--output", &r(link), "--force"]);
        assert_eq!(status, 0, "{body}");
        assert!(std::fs::symlink_metadata(root.join(link)).unwrap().is_file());
    }
    assert_eq!(std::fs::read_to_string(root.join("victim.txt")).unwrap(), "precious");
    assert_eq!(
        std::fs::read_dir(root.join("dir")).unwrap().count(),
        1,
        "the linked directory is untouched"
    );
    assert!(!root.join("nowhere.txt").exists());

    // A relative path with `..` is the caller's choice: it is written where it resolves
    // and reported as given.
    let (status, body) = home.run_cli(&["artifact", "get", &id, "--output", "../fresh/out.txt"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["materialized_path"], "../fresh/out.txt");
    assert_eq!(std::fs::read_to_string(root.join("fresh/out.txt")).unwrap(), "payload");
}

#[test]
fn backup_create_sends_relative_paths_unnormalized_and_refuses_what_resolves_to_an_existing_path() {
    let home = TempHome::new();
    let (status, _) = home.run_cli_stdin(&["artifact", "put", "-"], "backed up");
    assert_eq!(status, 0);
    let project = home.project.to_str().unwrap().to_owned();

    let (status, body) = home.run_cli(&["backup", "create", "../bk1"]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(body["result"]["destination"], format!("{project}/../bk1"));
    assert!(home.root.join("bk1/memoree.sqlite3").is_file());

    let skip = home.home.clone();
    for dest in [
        "../bk1",
        "../project",
        "..",
        ".",
        "../outside",
        "../project/.memoree.toml",
        "../home/data",
        "../home/data/bk",
        "../home/./data/blobs/bk",
        "../missing/../bk2",
        "../missing/../../home/data/bk",
        "../project/.memoree.toml/bk",
    ] {
        let before = tree(&home.root, &skip);
        let (status, body) = home.run_cli(&["backup", "create", dest]);
        assert_eq!(
            (status, code(&body)),
            (2, "INVALID_REQUEST"),
            "backup create {dest}: {body}"
        );
        assert_eq!(
            tree(&home.root, &skip),
            before,
            "backup create {dest} changed the filesystem"
        );
    }
    assert!(!home.root.join("missing").exists());
    assert!(!home.root.join("bk2").exists());
    assert!(!home.home.join("data/bk").exists());
    assert!(!home.home.join("data/blobs/bk").exists());
}

#[test]
fn malformed_evidence_locators_never_reach_the_service() {
    let home = TempHome::new();
    let (_, put) = home.run_cli_stdin(&["artifact", "put", "-"], "evidence source");
    let artifact = field(&put, "artifact_id").to_owned();
    let revision = field(&put, "revision_id").to_owned();
    let seq = last_commit_seq(&home);
    let good = format!("{artifact}@{revision}");
    let mut locators: Vec<String> = [
        "", "@", "#", "#5", "#5-", "#-5", "#5-3", "#a-b", "art", "@rev", "art@", "art@#1-2", "@#", "art@rev#",
    ]
    .map(str::to_owned)
    .to_vec();
    for span in [
        "#",
        "#5",
        "#5-",
        "#-5",
        "#5-3",
        "#5-5",
        "#a-b",
        "#-",
        "#--",
        "#1--2",
        "#1-2-3",
        "#1-2#3",
        "# 1-2",
        "#1 -2",
        "#+1-2",
        "#1-+2",
        "#0x1-0x2",
        "#1e2-1e3",
        "#1.0-2.0",
        "#１-２",
        "#١-٢",
        "#𝟙-𝟚",
        "#99999999999999999999-1",
        "#1-99999999999999999999",
        "#18446744073709551616-18446744073709551617",
        "#18446744073709551615-0",
    ] {
        locators.push(format!("{good}{span}"));
    }
    locators.push(format!("{artifact}東@"));
    locators.push(format!("@{revision}#0-1"));
    for locator in &locators {
        let (status, body) = home.run_cli(&["claim", "assert", "fact", "Hostile locators", "--evidence", locator]);
        assert_eq!(
            (status, code(&body)),
            (2, "INVALID_REQUEST"),
            "--evidence {locator:?}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("ARTIFACT_ID@REVISION_ID"),
            "--evidence {locator:?}: {message}"
        );
        // One bad locator spoils the whole command, whatever its position.
        let (status, body) = home.run_cli(&[
            "claim",
            "assert",
            "fact",
            "Hostile locators",
            "--evidence",
            &good,
            "--evidence",
            locator,
        ]);
        assert_eq!((status, code(&body)), (2, "INVALID_REQUEST"), "{body}");
    }
    assert_eq!(last_commit_seq(&home), seq, "no refused locator reached the service");

    // Locators that parse reach the service, which checks them against the revision.
    let cases: [(String, i32, &str); 3] = [
        (format!("{good}#0-{}", u64::MAX), 2, "INVALID_REQUEST"),
        (format!("{artifact}@arev_missing"), 3, "NOT_FOUND"),
        (format!("{artifact}é@{revision}#0-1"), 3, "NOT_FOUND"),
    ];
    for (locator, status_code, error) in &cases {
        let (status, body) = home.run_cli(&["claim", "assert", "fact", "Parsed", "--evidence", locator]);
        assert_eq!(
            (status, code(&body)),
            (*status_code, *error),
            "--evidence {locator}: {body}"
        );
    }
    assert_eq!(last_commit_seq(&home), seq);
    let (status, body): (i32, Value) =
        home.run_cli(&["claim", "assert", "fact", "Whole", "--evidence", &format!("{good}#0-8")]);
    assert_eq!(status, 0, "{body}");
    assert_eq!(last_commit_seq(&home), seq + 1);
}
