//! Verification tests: a clean store verifies clean, each kind of damage is reported with
//! its own kind, verification changes nothing, and reindex repairs the FTS projection.

use std::fs;

use super::kind;
use crate::store::test_seed::{TestStore, seeded, snapshot_files};

fn kinds(t: &TestStore) -> Vec<&'static str> {
    t.store
        .verify()
        .unwrap()
        .issues
        .iter()
        .map(|issue| issue.kind)
        .collect()
}

#[test]
fn a_healthy_store_verifies_clean_and_counts_what_it_checked() {
    let (t, artifacts, claims) = seeded();
    let report = t.store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.issues);
    assert_eq!(report.checked_artifact_revisions, artifacts.len() as u64);
    assert_eq!(report.checked_claim_revisions, claims.len() as u64);
    assert_eq!(report.checked_external_blobs, 1);
    assert_eq!(report.last_commit_seq, 5);
    assert_eq!(report.schema_version, crate::store::SCHEMA_VERSION);
    assert!(report.warnings.is_empty());
}

#[test]
fn an_empty_store_verifies_clean() {
    let t = TestStore::new();
    let report = t.store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.issues);
    assert_eq!(report.last_commit_seq, 0);
}

#[test]
fn one_flipped_byte_in_an_external_blob_is_reported_as_corrupt() {
    let (t, artifacts, _) = seeded();
    let path = t.blob_path(&artifacts[1]);
    let mut bytes = fs::read(&path).unwrap();
    bytes[100] ^= 0x01;
    fs::write(&path, bytes).unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(kinds(&t), [kind::BLOB_CORRUPT]);
    let issue = &report.issues[0];
    assert_eq!(issue.entity.as_deref(), Some(artifacts[1].blob_hash.as_str()));
    assert!(issue.detail.contains("digest mismatch"), "{}", issue.detail);
    assert!(
        issue.detail.contains(artifacts[1].revision_id.as_str()),
        "{}",
        issue.detail
    );
}

#[test]
fn a_deleted_blob_is_reported_as_missing() {
    let (t, artifacts, _) = seeded();
    fs::remove_file(t.blob_path(&artifacts[1])).unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(kinds(&t), [kind::BLOB_MISSING]);
    assert_eq!(
        report.issues[0].entity.as_deref(),
        Some(artifacts[1].blob_hash.as_str())
    );
}

#[test]
fn a_deleted_fts_row_is_reported_and_reindex_restores_it() {
    let (t, artifacts, claims) = seeded();
    t.raw()
        .execute("DELETE FROM artifact_fts WHERE rowid = ?1", [artifacts[0].seq])
        .unwrap();
    t.raw()
        .execute("DELETE FROM claim_fts WHERE rowid = ?1", [claims[1].seq])
        .unwrap();
    let report = t.store.verify().unwrap();
    let missing: Vec<_> = report
        .issues
        .iter()
        .map(|i| (i.kind, i.entity.clone().unwrap()))
        .collect();
    assert_eq!(
        missing,
        [
            (kind::FTS_MISSING, artifacts[0].revision_id.to_string()),
            (kind::FTS_MISSING, claims[1].revision_id.to_string())
        ]
    );
    let rebuilt = t.store.reindex().unwrap();
    assert_eq!(rebuilt.artifact_revisions, 3);
    assert_eq!(rebuilt.claim_revisions, 2);
    assert_eq!(rebuilt.removed_orphan_rows, 0);
    assert_eq!(rebuilt.last_commit_seq, 5);
    let after = t.store.verify().unwrap();
    assert!(after.is_ok(), "{:?}", after.issues);
    let found: i64 = t
        .store
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT count(*) FROM artifact_fts WHERE artifact_fts MATCH 'authoritative'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(found, 1, "the rebuilt row is searchable again");
}

#[test]
fn an_orphan_fts_row_is_reported_and_reindex_removes_it() {
    let (t, _, _) = seeded();
    t.raw()
        .execute(
            "INSERT INTO artifact_fts (rowid, title, body) VALUES (999, 'ghost', 'ghost')",
            [],
        )
        .unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(kinds(&t), [kind::FTS_ORPHAN]);
    assert_eq!(report.issues[0].entity.as_deref(), Some("artifact_fts rowid 999"));
    assert_eq!(t.store.reindex().unwrap().removed_orphan_rows, 1);
    let after = t.store.verify().unwrap();
    assert!(after.is_ok(), "{:?}", after.issues);
}

#[test]
fn reindex_fails_closed_on_an_unreadable_blob_and_keeps_the_old_projection() {
    let (t, artifacts, _) = seeded();
    fs::remove_file(t.blob_path(&artifacts[1])).unwrap();
    let error = t.store.reindex().unwrap_err();
    assert!(error.to_string().contains("missing CAS object"), "{error}");
    assert_eq!(kinds(&t), [kind::BLOB_MISSING], "the FTS rows are all still there");
}

#[test]
fn verification_changes_nothing_on_disk() {
    let (t, artifacts, _) = seeded();
    fs::remove_file(t.blob_path(&artifacts[1])).unwrap();
    t.raw()
        .execute("DELETE FROM artifact_fts WHERE rowid = ?1", [artifacts[0].seq])
        .unwrap();
    let before = snapshot_files(&t.data_dir());
    let first = t.store.verify().unwrap();
    let second = t.store.verify().unwrap();
    assert_eq!(snapshot_files(&t.data_dir()), before);
    assert_eq!(first.issues, second.issues);
}

#[test]
fn a_tampered_inline_blob_and_malformed_evidence_are_reported() {
    let (t, artifacts, claims) = seeded();
    let raw = t.raw();
    raw.execute_batch("DROP TRIGGER artifact_revisions_are_immutable; DROP TRIGGER claim_revisions_are_immutable;")
        .unwrap();
    raw.execute(
        "UPDATE artifact_revisions SET inline_blob = X'00' WHERE id = ?1",
        [&artifacts[2].revision_id],
    )
    .unwrap();
    raw.execute(
        "UPDATE claim_revisions SET evidence_json = 'not json' WHERE id = ?1",
        [&claims[0].revision_id],
    )
    .unwrap();
    raw.execute(
        "UPDATE claim_revisions SET evidence_json = json_array(json_object('artifact_id', ?1, 'revision_id', ?2, 'start_byte', 5, 'end_byte', 99999)) WHERE id = ?3",
        rusqlite::params![artifacts[1].artifact_id, artifacts[1].revision_id, claims[1].revision_id],
    )
    .unwrap();
    let report = t.store.verify().unwrap();
    let found: Vec<_> = report
        .issues
        .iter()
        .map(|i| (i.kind, i.entity.clone().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            (kind::CLAIM_EVIDENCE, claims[0].revision_id.to_string()),
            (kind::CLAIM_EVIDENCE, claims[1].revision_id.to_string()),
            (kind::BLOB_CORRUPT, artifacts[2].revision_id.to_string()),
        ]
    );
}

#[test]
fn a_broken_commit_sequence_and_a_foreign_head_are_reported() {
    let (t, artifacts, _) = seeded();
    let raw = t.raw();
    raw.execute("UPDATE commit_state SET commit_seq = commit_seq + 2", [])
        .unwrap();
    raw.execute(
        "UPDATE artifacts SET current_revision_id = ?1 WHERE id = ?2",
        rusqlite::params![artifacts[1].revision_id, artifacts[0].artifact_id],
    )
    .unwrap();
    assert_eq!(kinds(&t), [kind::COMMIT_SEQUENCE, kind::HEAD_REVISION]);
}

#[test]
fn stray_files_in_the_cas_are_reported_and_unreferenced_objects_are_a_warning() {
    let (t, _, _) = seeded();
    let root = t.store.blobs().root().to_path_buf();
    fs::write(root.join("stray.txt"), b"x").unwrap();
    t.store.blobs().put(&vec![7u8; 20_000]).unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(kinds(&t), [kind::CAS_UNEXPECTED]);
    assert_eq!(report.issues[0].entity.as_deref(), Some("blobs/stray.txt"));
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
}

#[test]
fn a_corrupt_unreferenced_object_is_still_an_issue() {
    let (t, _, _) = seeded();
    let digest = t.store.blobs().put(&vec![7u8; 20_000]).unwrap();
    fs::write(t.store.blobs().path_of(&digest), b"garbage").unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(kinds(&t), [kind::BLOB_CORRUPT]);
    assert!(report.issues[0].detail.contains("no revision"));
}

#[test]
fn a_flipped_byte_in_a_compressed_object_is_corrupt_and_a_wrong_inline_encoding_too() {
    let t = TestStore::new();
    let text = "verify decodes compressed objects before hashing them. ".repeat(700);
    let external = t.put_compressed_external("Compressed", text.as_bytes());
    let inline_text = "inline content long enough to be compressed in the row. ".repeat(20);
    let inline = t.put("Inline", inline_text.as_bytes());
    assert_eq!(inline.inline_encoding, crate::blob::Encoding::Deflate.code() as i64);
    assert!(t.store.verify().unwrap().is_ok());

    let path = t.blob_path(&external);
    let mut stored = fs::read(&path).unwrap();
    let middle = stored.len() / 2;
    stored[middle] ^= 0x08;
    fs::write(&path, stored).unwrap();
    let raw = t.raw();
    raw.execute_batch("DROP TRIGGER artifact_revisions_are_immutable;")
        .unwrap();
    raw.execute(
        "UPDATE artifact_revisions SET inline_encoding = 0 WHERE id = ?1",
        [&inline.revision_id],
    )
    .unwrap();
    let report = t.store.verify().unwrap();
    let found: Vec<_> = report
        .issues
        .iter()
        .map(|i| (i.kind, i.entity.clone().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            (kind::BLOB_CORRUPT, inline.revision_id.to_string()),
            (kind::BLOB_CORRUPT, external.blob_hash.clone()),
        ]
    );
    // Reads fail closed too: neither blob is ever returned as data.
    assert!(
        inline.read_content(t.store.blobs()).is_ok(),
        "the row read before tampering still decodes"
    );
    let reread = t
        .store
        .read(|conn| crate::store::artifact::get(conn, &inline.artifact_id, None))
        .unwrap()
        .unwrap();
    assert!(reread.read_content(t.store.blobs()).is_err());
    assert!(external.read_content(t.store.blobs()).is_err());
}
