//! The erasure proof for `artifact.purge` / `claim.purge`: a unique 32-byte secret is stored
//! in an artifact (as text, hex and base64), in a revised, CAS-sized binary revision (raw
//! bytes), in a claim statement that quotes it and in a retraction reason; after both
//! purges, no file under the home (database, WAL, SHM, CAS, lock and log files) holds the
//! secret in any form: raw, hex, base64 (standard and URL-safe), or the lowercased
//! fragments and suffixes a full-text index could keep. Checked with the daemon stopped,
//! still running, and killed with SIGKILL right after the acknowledgement.

use std::path::Path;

use base64::Engine as _;
use serde_json::Value;

use crate::support::daemon::TestDaemon;
use crate::support::{TempHome, code, field};

/// A fresh 32-byte secret and every byte pattern that would betray it.
struct Secret {
    hex: String,
    base64: String,
    needles: Vec<Vec<u8>>,
    raw: Vec<u8>,
}

impl Secret {
    fn new() -> Secret {
        let seed = format!(
            "{}-{:?}-{}",
            ulid::Ulid::new(),
            std::time::SystemTime::now(),
            std::process::id()
        );
        let raw = blake3::hash(seed.as_bytes()).as_bytes().to_vec();
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let base64 = base64::engine::general_purpose::STANDARD.encode(&raw);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
        let mut needles: Vec<Vec<u8>> = vec![
            raw.clone(),
            hex.clone().into_bytes(),
            hex.to_uppercase().into_bytes(),
            hex.as_bytes()[32..].to_vec(),
            base64.clone().into_bytes(),
            url.into_bytes(),
        ];
        // What a tokenizer keeps of the base64 form: lowercased alphanumeric runs.
        for fragment in base64.split(|c: char| !c.is_ascii_alphanumeric()) {
            if fragment.len() >= 12 {
                let lower = fragment.to_lowercase();
                needles.push(lower.as_bytes()[lower.len() - 10..].to_vec());
                needles.push(lower.into_bytes());
            }
        }
        Secret {
            hex,
            base64,
            needles,
            raw,
        }
    }

    /// Files under `dir` holding any form of the secret, and the number of bytes scanned.
    fn hits(&self, dir: &Path) -> (Vec<String>, u64) {
        let mut hits = Vec::new();
        let mut scanned = 0;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    let bytes = std::fs::read(entry.path()).unwrap();
                    scanned += bytes.len() as u64;
                    for (n, needle) in self.needles.iter().enumerate() {
                        if bytes.windows(needle.len()).any(|w| w == needle.as_slice()) {
                            hits.push(format!("{} (form {n})", entry.path().display()));
                        }
                    }
                }
            }
        }
        (hits, scanned)
    }
}

/// What [`plant`] stored.
struct Planted {
    artifact_id: String,
    claim_id: String,
}

/// Runs `memoree ARGS` (through `endpoint` when given) and returns exit code and envelope.
fn cli(home: &TempHome, endpoint: Option<&str>, args: &[&str]) -> (i32, Value) {
    let mut all: Vec<&str> = Vec::new();
    if let Some(endpoint) = endpoint {
        all.extend(["--endpoint", endpoint]);
    }
    all.extend(args);
    home.run_cli(&all)
}

fn ok(home: &TempHome, endpoint: Option<&str>, args: &[&str]) -> Value {
    let (status, envelope) = cli(home, endpoint, args);
    assert_eq!(
        (status, &envelope["ok"]),
        (0, &Value::Bool(true)),
        "{args:?}: {envelope}"
    );
    envelope
}

fn plant(home: &TempHome, endpoint: Option<&str>, secret: &Secret) -> Planted {
    let text = format!("deploy key: {}\nencoded: {}\n", secret.hex, secret.base64);
    let file = home.write_file("secret.txt", &text);
    let put = ok(
        home,
        endpoint,
        &["artifact", "put", file.to_str().unwrap(), "--title", "deploy notes"],
    );
    let (artifact_id, revision_id) = (
        field(&put, "artifact_id").to_owned(),
        field(&put, "revision_id").to_owned(),
    );
    let start = text.find(&secret.hex).unwrap();
    let locator = format!("{artifact_id}@{revision_id}#{start}-{}", start + secret.hex.len());
    let statement = format!("The deploy key is {}", secret.hex);
    let claim = ok(
        home,
        endpoint,
        &["claim", "assert", "fact", &statement, "--evidence", &locator],
    );
    let claim_id = field(&claim, "claim_id").to_owned();
    let mut binary = vec![0x5a; 24 * 1024];
    binary.extend_from_slice(&secret.raw);
    binary.extend_from_slice(text.as_bytes());
    let file = home.write_file("secret.bin", &binary);
    ok(
        home,
        endpoint,
        &[
            "artifact",
            "revise",
            &artifact_id,
            file.to_str().unwrap(),
            "--if-revision",
            &revision_id,
        ],
    );
    let reason = format!("leaked {}", secret.hex);
    ok(home, endpoint, &["claim", "retract", &claim_id, "--reason", &reason]);
    Planted { artifact_id, claim_id }
}

fn purge(home: &TempHome, endpoint: Option<&str>, planted: &Planted) -> (Value, Value) {
    let artifact = ok(
        home,
        endpoint,
        &[
            "artifact",
            "purge",
            &planted.artifact_id,
            "--reason",
            "leaked credential",
        ],
    );
    let claim = ok(
        home,
        endpoint,
        &["claim", "purge", &planted.claim_id, "--reason", "quotes a credential"],
    );
    for envelope in [&artifact, &claim] {
        assert_eq!(envelope["result"]["erasure_complete"], true, "{envelope}");
        assert!(
            envelope["warnings"]
                .to_string()
                .contains("EARLIER_COPIES_RETAIN_CONTENT"),
            "{envelope}"
        );
    }
    (artifact, claim)
}

fn assert_clean(secret: &Secret, dir: &Path, when: &str) {
    let (hits, scanned) = secret.hits(dir);
    assert!(
        scanned > 100_000,
        "{when}: only {scanned} bytes scanned under {}",
        dir.display()
    );
    assert!(hits.is_empty(), "{when}: the secret survives in {hits:?}");
}

#[test]
fn the_secret_leaves_every_file_of_the_data_directory_with_the_daemon_running_and_stopped() {
    let home = TempHome::new();
    let secret = Secret::new();
    let planted = plant(&home, None, &secret);
    let (before, _) = secret.hits(&home.home);
    assert!(
        !before.is_empty(),
        "the scan must find the planted secret before the purge"
    );
    let (artifact, _) = purge(&home, None, &planted);
    assert_eq!(artifact["result"]["revisions"].as_array().unwrap().len(), 2);
    assert_eq!(artifact["result"]["erasure"]["removed_blobs"], 1);
    assert_eq!(
        artifact["result"]["citing_claims"][0]["claim_id"],
        planted.claim_id.as_str()
    );
    assert_clean(&secret, &home.home, "daemon running");

    let (status, got) = cli(&home, None, &["artifact", "get", &planted.artifact_id]);
    assert_eq!((status, code(&got)), (3, "NOT_FOUND"), "{got}");
    assert_eq!(got["error"]["details"]["state"], "purged");
    let history = ok(&home, None, &["artifact", "history", &planted.artifact_id]);
    assert_eq!(history["result"]["revisions"].as_array().unwrap().len(), 2);
    assert!(history["warnings"].to_string().contains("PURGED"), "{history}");
    let verify = ok(&home, None, &["verify"]);
    assert_eq!(verify["result"]["ok"], true, "{verify}");

    ok(&home, None, &["daemon", "stop"]);
    assert_clean(&secret, &home.home, "daemon stopped");
}

#[test]
fn the_secret_is_gone_after_a_sigkill_right_after_the_purge_acknowledgement() {
    let home = TempHome::new();
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = TestDaemon::start_in(dir.path());
    let endpoint = daemon.endpoint_arg();
    let secret = Secret::new();
    let planted = plant(&home, Some(&endpoint), &secret);
    ok(
        &home,
        Some(&endpoint),
        &["artifact", "purge", &planted.artifact_id, "--reason", "leak"],
    );
    ok(
        &home,
        Some(&endpoint),
        &["claim", "purge", &planted.claim_id, "--reason", "leak"],
    );
    daemon.kill9();
    assert_clean(&secret, daemon.data_dir(), "after SIGKILL");

    let mut restarted = TestDaemon::start_in(dir.path());
    let endpoint = restarted.endpoint_arg();
    let verify = ok(&home, Some(&endpoint), &["verify"]);
    assert_eq!(verify["result"]["ok"], true, "{verify}");
    let (_, got) = cli(&home, Some(&endpoint), &["claim", "get", &planted.claim_id]);
    assert_eq!(got["error"]["details"]["state"], "purged", "{got}");
    restarted.kill9();
    assert_clean(&secret, restarted.data_dir(), "after a restart");
}

#[test]
fn a_backup_made_before_a_purge_keeps_the_bytes_and_backups_and_exports_made_after_do_not() {
    let home = TempHome::new();
    let secret = Secret::new();
    let planted = plant(&home, None, &secret);
    let early = home.root.join("backup-before");
    ok(&home, None, &["backup", "create", early.to_str().unwrap()]);
    let (artifact, _) = purge(&home, None, &planted);
    assert!(
        artifact["result"]["earlier_copies"]
            .as_str()
            .unwrap()
            .contains("still contain the erased bytes"),
        "{artifact}"
    );
    let (kept, _) = secret.hits(&early);
    assert!(!kept.is_empty(), "an earlier backup is a copy the purge cannot reach");

    let late = home.root.join("backup-after");
    ok(&home, None, &["backup", "create", late.to_str().unwrap()]);
    assert_clean(&secret, &late, "backup after the purge");
    let export = home.root.join("export-after");
    let exported = ok(&home, None, &["export", "--all", export.to_str().unwrap()]);
    assert_eq!(exported["result"]["records"]["tombstone"], 2, "{exported}");
    let (hits, _) = secret.hits(&export);
    assert!(hits.is_empty(), "export after the purge: {hits:?}");
}

#[test]
fn purging_a_foreign_entity_is_a_scope_violation_and_purging_twice_replays_the_first_acknowledgement() {
    let home = TempHome::new();
    let file = home.write_file("note.txt", "an ordinary note");
    let put = ok(&home, None, &["artifact", "put", file.to_str().unwrap()]);
    let artifact_id = field(&put, "artifact_id").to_owned();

    let foreign = home.root.join("other");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(
        foreign.join(".memoree.toml"),
        "schema = 1\nworkspace_id = \"wsp_test\"\nproject_id = \"prj_other\"\nname = \"other\"\npins = []\n",
    )
    .unwrap();
    let (status, refused) = home.run_cli_in(&foreign, &["artifact", "purge", &artifact_id, "--reason", "not mine"]);
    assert_eq!((status, code(&refused)), (7, "SCOPE_VIOLATION"), "{refused}");
    let missing = home.cmd(&["artifact", "purge", &artifact_id]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2), "--reason is required");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--reason"));

    let args = [
        "artifact",
        "purge",
        &artifact_id,
        "--reason",
        "obsolete",
        "--idempotency-key",
        "purge-once",
    ];
    let first = ok(&home, None, &args);
    assert_eq!(first["result"]["created"], true);
    let replay = ok(&home, None, &args);
    let other_key = ok(&home, None, &["artifact", "purge", &artifact_id, "--reason", "again"]);
    for later in [&replay, &other_key] {
        assert_eq!(later["commit_seq"], first["commit_seq"], "{later}");
        let mut expected = first["result"].clone();
        expected["created"] = Value::Bool(false);
        assert_eq!(later["result"], expected);
    }
    let doctor = ok(&home, None, &["doctor"]);
    assert_eq!(
        doctor["result"]["last_commit_seq"], first["commit_seq"],
        "purging again wrote nothing"
    );
}
