use std::os::unix::fs::PermissionsExt;

use chrono::TimeZone;

use super::*;
use crate::protocol::ErrorCode;
use serde_json::{Value, json};

fn value<T: serde::Serialize>(result: T) -> Value {
    serde_json::to_value(result).unwrap()
}

fn at(day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, day, 12, 0, 0).unwrap()
}

fn store() -> (tempfile::TempDir, CheckpointStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::open(&dir.path().join("data")).unwrap();
    (dir, store)
}

#[test]
fn the_checkpoint_id_hashes_the_session() {
    let id = checkpoint_id("session-1");
    assert_eq!(id.len(), 3 + 26);
    assert_eq!(&id[3..], &blake3::hash(b"session-1").to_hex()[..26]);
}

#[test]
fn the_store_and_its_files_are_private() {
    let (dir, store) = store();
    let record = store.write_at("s", None, "note", at(1)).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("data")), 0o700);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.path_of(&record.checkpoint_id)), 0o600);
}

#[test]
fn the_file_is_compact_json_in_field_order() {
    let (_dir, store) = store();
    let record = store.write_at("s", Some("t"), "note", at(1)).unwrap();
    let text = fs::read_to_string(store.path_of(&record.checkpoint_id)).unwrap();
    let expected = format!(
        "{{\"schema_version\":1,\"checkpoint_id\":\"{}\",\"session_id\":\"s\",\"task\":\"t\",\"text\":\"note\",\
         \"original_bytes\":4,\"stored_bytes\":4,\"truncated\":false,\"sensitive_flags\":[],\
         \"created_at\":\"2030-01-01T12:00:00Z\",\"updated_at\":\"2030-01-01T12:00:00Z\"}}",
        record.checkpoint_id
    );
    assert_eq!(text, expected);
    let without_task = store.write_at("s", None, "note", at(1)).unwrap();
    assert!(!without_task.to_json().as_object().unwrap().contains_key("task"));
}

#[test]
fn long_text_is_truncated_with_a_27_byte_marker_within_4096_bytes() {
    assert_eq!(TRUNCATION_MARKER.len(), 27);
    let (_dir, store) = store();
    // Multi-byte characters force the cut onto a character boundary below 4069.
    let text = "é".repeat(3000);
    let record = store.write_at("s", None, &text, at(1)).unwrap();
    assert!(record.truncated);
    assert_eq!(record.original_bytes, 6000);
    assert!(record.text.ends_with(TRUNCATION_MARKER));
    assert!(record.text.len() <= MAX_CHECKPOINT_STORED_BYTES);
    assert_eq!(record.text.len(), 4068 + 27);
    assert_eq!(record.stored_bytes, record.text.len());
    let exact = "a".repeat(MAX_CHECKPOINT_STORED_BYTES);
    assert!(!store.write_at("s", None, &exact, at(1)).unwrap().truncated);
    let over = "a".repeat(MAX_CHECKPOINT_STORED_BYTES + 1);
    assert_eq!(
        store.write_at("s", None, &over, at(1)).unwrap().text.len(),
        MAX_CHECKPOINT_STORED_BYTES
    );
}

#[test]
fn input_over_64_kib_is_refused_and_blank_input_is_invalid() {
    let (_dir, store) = store();
    let at_limit = "a".repeat(MAX_CHECKPOINT_INPUT_BYTES);
    assert!(store.write_at("s", None, &at_limit, at(1)).is_ok());
    let over = "a".repeat(MAX_CHECKPOINT_INPUT_BYTES + 1);
    let error = store.write_at("s", None, &over, at(1)).unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContentTooLarge);
    let error = store.write_at("s", None, " \n", at(1)).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidRequest);
    for (session, task) in [(" ", None), ("s", Some("")), (&*"x".repeat(257), None)] {
        assert_eq!(
            store.write_at(session, task, "note", at(1)).unwrap_err().code(),
            ErrorCode::InvalidRequest
        );
    }
}

#[test]
fn reading_stdin_stops_one_byte_past_the_limit() {
    let big = vec![b'a'; MAX_CHECKPOINT_INPUT_BYTES + 10];
    let text = read_checkpoint_text(&["-".to_owned()], &big[..]).unwrap();
    assert_eq!(text.len(), MAX_CHECKPOINT_INPUT_BYTES + 1);
    let joined = read_checkpoint_text(&["a".to_owned(), "b".to_owned()], &b""[..]).unwrap();
    assert_eq!(joined, "a b");
    assert!(read_checkpoint_text(&["-".to_owned()], &[0xff][..]).is_err());
    assert!(read_checkpoint_text(&[], &b""[..]).is_err());
}

#[test]
fn credential_shapes_are_flagged_and_warned_about() {
    let (_dir, store) = store();
    let text = "deploy with AWS key AKIAABCDEFGHIJKLMNOP and github_token=abc";
    let record = store.write_at("s", None, text, at(1)).unwrap();
    assert_eq!(
        record.sensitive_flags,
        vec![SensitiveFlag::AwsAccessKey, SensitiveFlag::CredentialAssignment]
    );
    let warning = record.sensitive_warning().unwrap();
    assert_eq!(warning.code, SENSITIVE_WARNING_CODE);
    assert!(warning.message.contains("--allow-flagged"));
    assert!(warning.message.contains("aws_access_key, credential_assignment"));
    assert_eq!(
        value(record.summary(at(1)))["sensitive_flags"],
        json!(["aws_access_key", "credential_assignment"])
    );
    assert!(
        store
            .write_at("t", None, "clean", at(1))
            .unwrap()
            .sensitive_warning()
            .is_none()
    );
}

#[test]
fn the_scan_covers_text_that_truncation_removed() {
    let (_dir, store) = store();
    let text = format!("{}\n-----BEGIN PRIVATE KEY-----", "a".repeat(5000));
    let record = store.write_at("s", None, &text, at(1)).unwrap();
    assert!(record.truncated);
    assert_eq!(record.sensitive_flags, vec![SensitiveFlag::PrivateKeyBlock]);
}

#[test]
fn the_last_write_wins_and_keeps_created_at() {
    let (_dir, store) = store();
    let first = store.write_at("s", Some("old"), "first", at(1)).unwrap();
    let second = store.write_at("s", None, "second", at(3)).unwrap();
    assert_eq!(second.checkpoint_id, first.checkpoint_id);
    assert_eq!(second.created_at, first.created_at);
    assert_eq!(second.updated_at, "2030-01-03T12:00:00Z");
    let shown = store.show("s").unwrap();
    assert_eq!(shown.text, "second");
    assert_eq!(shown.task, None);
    assert_eq!(store.list_at(true, at(3)).unwrap().len(), 1);
}

#[test]
fn list_hides_expired_checkpoints_unless_asked_and_sorts_newest_first() {
    let (_dir, store) = store();
    store.write_at("old", None, "a", at(1)).unwrap();
    store.write_at("mid", None, "b", at(10)).unwrap();
    store.write_at("new", None, "c", at(20)).unwrap();
    let now = at(16);
    let sessions = |records: Vec<CheckpointRecord>| records.into_iter().map(|r| r.session_id).collect::<Vec<_>>();
    assert_eq!(sessions(store.list_at(false, now).unwrap()), vec!["new", "mid"]);
    assert_eq!(sessions(store.list_at(true, now).unwrap()), vec!["new", "mid", "old"]);
    let old = store.show("old").unwrap();
    let summary = value(old.summary(now));
    assert_eq!(summary["expired"], true);
    assert_eq!(summary["expires_at"], "2030-01-15T12:00:00Z");
    assert!(summary.get("text").is_none() && summary.get("schema_version").is_none());
    let listed = value(list_result(&store.list_at(false, now).unwrap(), false, now));
    assert_eq!(listed["recallable"], false);
    assert_eq!(listed["checkpoints"].as_array().unwrap().len(), 2);
}

#[test]
fn equal_update_times_sort_by_id() {
    let (_dir, store) = store();
    for session in ["a", "b", "c"] {
        store.write_at(session, None, "x", at(1)).unwrap();
    }
    let ids: Vec<String> = store
        .list_at(true, at(1))
        .unwrap()
        .into_iter()
        .map(|r| r.checkpoint_id)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
}

#[test]
fn one_corrupt_file_fails_the_list_with_its_path() {
    let (_dir, store) = store();
    store.write_at("s", None, "fine", at(1)).unwrap();
    let bad = store.dir().join(format!("{}.json", checkpoint_id("broken")));
    fs::write(&bad, "{not json").unwrap();
    let error = store.list_at(true, at(1)).unwrap_err();
    assert!(matches!(error, CallerError::CorruptCheckpoint { ref path, .. } if *path == bad));
    assert!(error.hint().unwrap().contains("delete"));
    let dropped = store.drop(&checkpoint_id("broken")).unwrap();
    assert_eq!(dropped.session_id, None);
    assert_eq!(store.list_at(true, at(1)).unwrap().len(), 1);
}

#[test]
fn show_and_drop_accept_an_id_or_a_session_and_report_missing_ones() {
    let (_dir, store) = store();
    let record = store.write_at("s", None, "note", at(1)).unwrap();
    assert_eq!(store.show(&record.checkpoint_id).unwrap(), record);
    assert_eq!(value(show_result(&record))["checkpoint"]["text"], "note");
    let error = store.show("nobody").unwrap_err();
    assert_eq!(error.code(), ErrorCode::NotFound);
    assert_eq!(error.to_string(), "not found: pending checkpoint nobody");
    assert_eq!(store.show("cp_../../etc").unwrap_err().code(), ErrorCode::NotFound);
    let dropped = store.drop("s").unwrap();
    assert_eq!(
        value(dropped.result()),
        json!({"dropped": true, "checkpoint_id": record.checkpoint_id, "session_id": "s", "recoverable": false})
    );
    assert_eq!(store.drop("s").unwrap_err().code(), ErrorCode::NotFound);
}

#[test]
fn flagged_checkpoints_are_refused_for_remember_unless_allowed() {
    let (_dir, store) = store();
    let record = store.write_at("s1", None, "Authorization: Bearer x", at(1)).unwrap();
    let error = record.remember_input(false, None).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidRequest);
    assert!(error.to_string().contains("--allow-flagged"));
    let (source, options) = record.remember_input(true, Some("k".into())).unwrap();
    assert_eq!(source.capture, SourceCapture::Inline);
    assert_eq!(source.text, "Authorization: Bearer x");
    assert_eq!(
        options.title.unwrap(),
        format!("Checkpoint {} (s1)", record.checkpoint_id)
    );
    assert_eq!(options.kind.as_deref(), Some(CHECKPOINT_KIND));
    assert_eq!(options.idempotency_key.as_deref(), Some("k"));
}

#[test]
fn the_write_result_is_pending_and_not_recallable() {
    let (_dir, store) = store();
    let record = store.write_at("s", Some("t"), "note", at(1)).unwrap();
    let result = value(write_result(&record, at(2)));
    assert_eq!(result["pending"], true);
    assert_eq!(result["recallable"], false);
    assert_eq!(result["checkpoint"]["task"], "t");
    assert_eq!(result["checkpoint"]["expired"], false);
}
