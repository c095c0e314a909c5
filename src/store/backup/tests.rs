//! Backup tests: a published backup is complete and verified; every refusal and every
//! injected failure leaves neither a destination nor a staging directory behind.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{STAGING_PREFIX, Stage, create};
use crate::store::StoreError;
use crate::store::restore::restore;
use crate::store::test_seed::{TestStore, seeded};
use crate::store::{BLOBS_DIR, DB_FILE, Store};

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn no_staging_left(parent: &Path) {
    let left: Vec<String> = names(parent)
        .into_iter()
        .filter(|name| name.starts_with(STAGING_PREFIX))
        .collect();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}

#[test]
fn a_backup_is_a_verified_private_copy_at_the_snapshot_sequence() {
    let (t, artifacts, _) = seeded();
    let parent = t.dir.path().join("backups");
    let destination = parent.join("first");
    let report = t.store.backup(&destination).unwrap();
    assert_eq!(report.destination, destination);
    assert_eq!(report.database, destination.join(DB_FILE));
    assert_eq!(report.blobs, destination.join(BLOBS_DIR));
    assert_eq!(report.commit_seq, t.store.last_commit_seq().unwrap());
    assert_eq!(report.copied_external_blobs, 1);
    assert_eq!(
        names(&destination),
        [BLOBS_DIR, DB_FILE],
        "one self-contained database file"
    );
    let mode = fs::metadata(&destination).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(t.blob_path(&artifacts[1]).exists());
    let copied = destination.join(BLOBS_DIR).join(
        t.blob_path(&artifacts[1])
            .strip_prefix(t.store.blobs().unwrap().root())
            .unwrap(),
    );
    assert_eq!(fs::read(copied).unwrap(), fs::read(t.blob_path(&artifacts[1])).unwrap());
    let staged = super::verify_staged(&report.database, &report.blobs).unwrap();
    assert!(staged.is_ok(), "{:?}", staged.issues);
    let conn = Connection::open_with_flags(&report.database, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "delete");
    no_staging_left(&parent);
}

#[test]
fn writes_continue_after_a_backup_and_do_not_leak_into_it() {
    let (t, _, _) = seeded();
    let destination = t.dir.path().join("bk");
    let report = t.store.backup(&destination).unwrap();
    t.put("Later", b"written after the snapshot");
    assert_eq!(t.store.last_commit_seq().unwrap(), report.commit_seq + 1);
    let staged = super::verify_staged(&report.database, &report.blobs).unwrap();
    assert_eq!(staged.last_commit_seq, report.commit_seq);
}

#[test]
fn an_existing_destination_is_refused_before_anything_is_written() {
    let (t, _, _) = seeded();
    let destination = t.dir.path().join("taken");
    fs::create_dir(&destination).unwrap();
    let before = names(t.dir.path());
    let error = t.store.backup(&destination).unwrap_err();
    assert!(matches!(error, StoreError::Invalid(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "invalid request: backup destination already exists: {}",
            destination.display()
        )
    );
    assert_eq!(names(t.dir.path()), before);
    assert!(names(&destination).is_empty());
    // A dangling symbolic link counts as existing too.
    let link = t.dir.path().join("link");
    std::os::unix::fs::symlink(t.dir.path().join("nowhere"), &link).unwrap();
    assert!(matches!(t.store.backup(&link), Err(StoreError::Invalid(_))));
}

#[test]
fn relative_and_in_store_destinations_are_refused() {
    let (t, _, _) = seeded();
    assert!(matches!(
        t.store.backup(Path::new("relative/bk")),
        Err(StoreError::Invalid(_))
    ));
    let inside = t.data_dir().join("sub/bk");
    let error = t.store.backup(&inside).unwrap_err();
    assert!(error.to_string().contains("outside the data directory"), "{error}");
    assert!(
        !t.data_dir().join("sub").exists(),
        "nothing is created inside the store"
    );
}

#[test]
fn a_failure_at_any_stage_removes_staging_and_publishes_nothing() {
    let (t, _, _) = seeded();
    let parent = t.dir.path().join("backups");
    for stage in [Stage::Snapshot, Stage::Blobs, Stage::Publish] {
        let destination = parent.join("bk");
        let error = create(&t.store, &destination, &mut |at| {
            if at == stage {
                Err(StoreError::Internal(format!("injected at {at:?}")))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(error.to_string().contains("injected"), "{error}");
        assert!(!destination.exists(), "{stage:?}");
        no_staging_left(&parent);
    }
    assert!(names(&parent).is_empty());
}

#[test]
fn a_destination_created_during_the_backup_is_a_config_error_and_is_left_alone() {
    let (t, _, _) = seeded();
    let destination = t.dir.path().join("raced");
    let error = create(&t.store, &destination, &mut |at| {
        if at == Stage::Publish {
            fs::create_dir(&destination)?;
            fs::write(destination.join("theirs"), b"keep me")?;
        }
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(error, StoreError::Config(_)), "{error:?}");
    assert!(error.to_string().contains("already exists"));
    assert_eq!(names(&destination), ["theirs"]);
    no_staging_left(t.dir.path());
}

#[test]
fn a_corrupt_source_blob_fails_the_backup_without_a_trace() {
    let (t, artifacts, _) = seeded();
    fs::write(t.blob_path(&artifacts[1]), b"corrupted").unwrap();
    let destination = t.dir.path().join("bk");
    let error = t.store.backup(&destination).unwrap_err();
    assert!(matches!(error, StoreError::Blob(_)), "{error:?}");
    assert!(!destination.exists());
    no_staging_left(t.dir.path());
}

#[test]
fn a_restored_backup_holds_every_acknowledged_entity_and_verifies_clean() {
    let (t, artifacts, claims) = seeded();
    let destination = t.dir.path().join("bk");
    let report = t.store.backup(&destination).unwrap();
    let target = t.dir.path().join("restored");
    let restored = restore(&destination, &target).unwrap();
    assert_eq!(restored.commit_seq, report.commit_seq);
    assert_eq!(restored.restored_external_blobs, 1);
    assert_eq!(restored.artifact_revisions, 3);
    assert_eq!(restored.claim_revisions, 2);
    no_staging_left(t.dir.path());
    let store = Store::open(&target).unwrap();
    assert!(store.verify().unwrap().is_ok());
    for original in &artifacts {
        let row = store
            .read(|conn| crate::store::artifact::get(conn, &original.artifact_id, Some(&original.revision_id)))
            .unwrap()
            .unwrap();
        assert_eq!(
            row.read_content(store.blobs().unwrap()).unwrap(),
            original.read_content(t.store.blobs().unwrap()).unwrap()
        );
    }
    for original in &claims {
        let row = store
            .read(|conn| crate::store::claim::get(conn, &original.claim_id, None))
            .unwrap()
            .unwrap();
        assert_eq!(row.statement, original.statement);
        assert_eq!(row.evidence_json, original.evidence_json);
    }
    // The backup itself was only read.
    assert_eq!(names(&destination), [BLOBS_DIR, DB_FILE]);
}

#[test]
fn restore_refuses_a_damaged_backup_and_leaves_the_target_untouched() {
    let (t, artifacts, _) = seeded();
    let destination = t.dir.path().join("bk");
    t.store.backup(&destination).unwrap();
    let relative = t
        .blob_path(&artifacts[1])
        .strip_prefix(t.store.blobs().unwrap().root())
        .unwrap()
        .to_path_buf();
    fs::remove_file(destination.join(BLOBS_DIR).join(relative)).unwrap();
    let target = t.dir.path().join("restored");
    fs::create_dir(&target).unwrap();
    let error = restore(&destination, &target).unwrap_err();
    assert!(error.to_string().contains("blob_missing"), "{error}");
    assert!(names(&target).is_empty());
    let left: Vec<String> = names(t.dir.path())
        .into_iter()
        .filter(|name| name.starts_with(".memoree-restore-stage-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_empty_store_backs_up_and_restores() {
    let t = TestStore::new();
    let destination = t.dir.path().join("bk");
    let report = t.store.backup(&destination).unwrap();
    assert_eq!(report.commit_seq, 0);
    assert_eq!(report.copied_external_blobs, 0);
    let target = t.dir.path().join("restored");
    assert_eq!(restore(&destination, &target).unwrap().commit_seq, 0);
}

#[test]
fn a_backup_left_in_wal_mode_restores_too() {
    // Backups made by other tools (or the reference) may keep the WAL journal mode.
    let (t, artifacts, _) = seeded();
    let destination = t.dir.path().join("bk");
    t.store.backup(&destination).unwrap();
    let conn = Connection::open(destination.join(DB_FILE)).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    let target = t.dir.path().join("restored");
    let restored = restore(&destination, &target).unwrap();
    assert_eq!(restored.artifact_revisions, artifacts.len() as u64);
    assert!(Store::open(&target).unwrap().verify().unwrap().is_ok());
}

#[test]
fn compressed_objects_are_copied_as_stored_and_restore_to_the_same_content() {
    let t = TestStore::new();
    let text = "a compressed external blob: the same words again and again. ".repeat(600);
    let row = t.put_compressed_external("Compressed", text.as_bytes());
    let stored = fs::read(t.blob_path(&row)).unwrap();
    let header = crate::blob::ObjectHeader::parse(&stored).unwrap();
    assert_eq!(header.encoding, crate::blob::Encoding::Deflate);
    assert!(stored.len() < text.len() / 4);
    let destination = t.dir.path().join("bk");
    t.store.backup(&destination).unwrap();
    let copied = destination
        .join(BLOBS_DIR)
        .join(t.blob_path(&row).strip_prefix(t.store.blobs().unwrap().root()).unwrap());
    assert_eq!(fs::read(copied).unwrap(), stored, "copied as stored, still compressed");
    let target = t.dir.path().join("restored");
    restore(&destination, &target).unwrap();
    let store = Store::open(&target).unwrap();
    assert!(store.verify().unwrap().is_ok());
    let back = store
        .read(|conn| crate::store::artifact::get(conn, &row.artifact_id, None))
        .unwrap()
        .unwrap();
    assert_eq!(back.read_content(store.blobs().unwrap()).unwrap(), text.as_bytes());
    store.shutdown();
}

#[test]
fn a_corrupt_compressed_object_fails_the_backup_without_a_trace() {
    let t = TestStore::new();
    let text = "compressed and then damaged on disk, which a backup must notice. ".repeat(600);
    let row = t.put_compressed_external("Damaged", text.as_bytes());
    let path = t.blob_path(&row);
    let mut stored = fs::read(&path).unwrap();
    let middle = stored.len() / 2;
    stored[middle] ^= 0x20;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(&path, stored).unwrap();
    let destination = t.dir.path().join("bk");
    let error = t.store.backup(&destination).unwrap_err();
    assert!(matches!(error, StoreError::Blob(_)), "{error:?}");
    assert!(!destination.exists());
    no_staging_left(t.dir.path());
}
