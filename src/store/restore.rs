//! Restore: turns a backup directory into the data directory of a new store.
//!
//! The target must be absent or an empty directory, so a restore can never overwrite
//! memory. The work happens in a 0700 staging directory next to the target:
//! 1. The backup's database is copied (byte for byte; a `-wal` beside it is copied too) and
//!    verified read-only against the backup's CAS, so a damaged backup is refused before
//!    anything else is written.
//! 2. Every external blob it references is re-hashed and copied into a fresh CAS.
//! 3. The staged store is opened normally (which migrates an older schema and switches to
//!    WAL), verified again, and closed.
//! 4. Everything is fsynced and staging is renamed onto the target without replacing
//!    anything (an empty target directory is removed first).
//!
//! **Invariant:** the backup directory is only read, and on any failure the target is left
//! as it was (absent or empty) with no staging directory behind.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::backup::copy_blobs;
use super::error::{StoreError, StoreResult};
use super::sqlite::migrate;
use super::staging::{self, check_target, not_empty, sync_tree};
use super::verify;
use super::verify::summarize;
use super::{BLOBS_DIR, DB_FILE, Store};
use crate::fsutil;
use crate::paths::DB_WAL_FILE;

/// Prefix of the staging directory created next to the target.
pub const STAGING_PREFIX: &str = ".memoree-restore-stage-";

/// What a restore produced.
#[derive(Clone, Debug)]
pub struct RestoreReport {
    pub data_dir: PathBuf,
    pub commit_seq: i64,
    pub artifact_revisions: u64,
    pub claim_revisions: u64,
    pub restored_external_blobs: u64,
}

/// Restores the backup in `backup_dir` into `data_dir`, which must not exist or be empty.
///
/// No daemon may serve `data_dir` meanwhile; an empty directory guarantees none does.
pub fn restore(backup_dir: &Path, data_dir: &Path) -> StoreResult<RestoreReport> {
    let source_db = backup_dir.join(DB_FILE);
    if !fs::symlink_metadata(&source_db).is_ok_and(|m| m.is_file()) {
        return Err(StoreError::Config(format!(
            "{} is not a Memoree backup: {DB_FILE} is missing",
            backup_dir.display()
        )));
    }
    let target_exists = check_target(data_dir)?;
    let parent = match data_dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;

    let staged_db = staging.path().join(DB_FILE);
    fs::copy(&source_db, &staged_db)?;
    let source_wal = backup_dir.join(DB_WAL_FILE);
    if source_wal.is_file() {
        fs::copy(&source_wal, staging.path().join(DB_WAL_FILE))?;
    }
    check_backup(&staged_db, &backup_dir.join(BLOBS_DIR))?;

    let restored_external_blobs = copy_blobs(&staged_db, &backup_dir.join(BLOBS_DIR), &staging.path().join(BLOBS_DIR))?;

    let store = Store::open(staging.path())?;
    let report = store.verify();
    store.shutdown();
    drop(store);
    let report = report?;
    if !report.is_ok() {
        return Err(StoreError::Integrity(format!(
            "the restored store failed verification: {}",
            summarize(&report)
        )));
    }
    sync_tree(staging.path())?;

    if target_exists {
        // Fails (and keeps the target) if anything appeared in it meanwhile.
        fs::remove_dir(data_dir).map_err(|e| not_empty(data_dir, e))?;
    }
    match fsutil::rename_noreplace(staging.path(), data_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTEMPTY) => {
            return Err(StoreError::Config(format!(
                "restore target {} appeared during the restore",
                data_dir.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            return Err(StoreError::Config(format!(
                "cannot publish {} atomically on this platform: {e}",
                data_dir.display()
            )));
        }
        Err(e) => return Err(e.into()),
    }
    let _ = staging.keep();
    fsutil::fsync_dir(&parent)?;
    Ok(RestoreReport {
        data_dir: data_dir.to_path_buf(),
        commit_seq: report.last_commit_seq,
        artifact_revisions: report.checked_artifact_revisions,
        claim_revisions: report.checked_claim_revisions,
        restored_external_blobs,
    })
}

/// Verifies the copied database against the backup's CAS before anything else happens.
/// A database from an older schema is checked after migration instead (step 3).
fn check_backup(staged_db: &Path, backup_blobs: &Path) -> StoreResult<()> {
    let conn = Connection::open_with_flags(
        staged_db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    migrate::preflight(&conn)?;
    if migrate::schema_version(&conn)? != migrate::SCHEMA_VERSION {
        return Ok(());
    }
    conn.execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED")?;
    let report = verify::verify(&conn, backup_blobs);
    let _ = conn.execute_batch("COMMIT");
    let report = report?;
    if !report.is_ok() {
        return Err(StoreError::Integrity(format!(
            "the backup failed verification: {}",
            summarize(&report)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_empty_target_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let backup = dir.path().join("backup");
        fs::create_dir(&backup).unwrap();
        fs::write(backup.join(DB_FILE), b"").unwrap();
        let target = dir.path().join("data");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), b"x").unwrap();
        let error = restore(&backup, &target).unwrap_err();
        assert!(matches!(error, StoreError::Config(_)), "{error}");
        assert!(target.join("keep").exists());
    }

    #[test]
    fn a_directory_without_a_database_is_not_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let error = restore(dir.path(), &dir.path().join("data")).unwrap_err();
        assert!(error.to_string().contains("is not a Memoree backup"), "{error}");
        assert!(!dir.path().join("data").exists());
    }
}
