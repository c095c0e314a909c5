//! `backup.create`: a verified snapshot published atomically at a new directory.
//!
//! Order of work:
//! 1. The destination must be absolute, outside the data directory, and absent (lstat).
//! 2. A 0700 staging directory `.memoree-backup-stage-XXXXXX` is made next to it.
//! 3. While no write can run ([`Store::exclusive`]), the SQLite online backup API copies
//!    the database into staging and the snapshot's `commit_seq` is read. The staged file is
//!    switched to rollback-journal mode so it is one self-contained file.
//! 4. Every external blob the snapshot references is read from the CAS, decoded and
//!    re-hashed, and written as stored (still compressed) into the staged CAS. Blobs are immutable and published before the commit
//!    that cites them, so this runs after writes resume.
//! 5. The staged store is opened read-only and verified; it must be clean and at the
//!    snapshot's `commit_seq`.
//! 6. Every file and directory is fsynced, then staging is renamed onto the destination
//!    with an atomic no-replace rename, and the parent directory is fsynced.
//!
//! **Invariant:** any failure before the rename removes staging, so the destination either
//! does not exist or holds a complete, verified backup. There is no idempotency record:
//! after a lost response, inspect the destination instead of retrying blindly.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::error::{StoreError, StoreResult};
use super::staging;
use super::verify::{self, VerifyReport};
use super::{BLOBS_DIR, DB_FILE, Store, last_commit_seq};
use crate::blob::{self, Digest};
use crate::fsutil;
use crate::paths::BLOBS_TMP_DIR;
use crate::progress::Progress;
use crate::timefmt::{self, Timestamp};

/// Prefix of the staging directory created next to the destination.
pub const STAGING_PREFIX: &str = ".memoree-backup-stage-";
/// What the destination is called in messages.
const WHAT: &str = "backup destination";
/// Database pages copied per online-backup step.
const PAGES_PER_STEP: i32 = 1024;

/// Where a backup was published and what it captured.
#[derive(Clone, Debug)]
pub struct BackupReport {
    pub destination: PathBuf,
    pub database: PathBuf,
    pub blobs: PathBuf,
    pub commit_seq: i64,
    pub copied_external_blobs: u64,
    pub created_at: Timestamp,
}

/// The points at which tests may inject a failure or a concurrent change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The database snapshot is in staging.
    Snapshot,
    /// The CAS copy is in staging.
    Blobs,
    /// Staging is verified and synced; publication is next.
    Publish,
}

impl Store {
    /// Writes a verified backup to `destination`, which must be absolute and not exist.
    pub fn backup(&self, destination: &Path) -> StoreResult<BackupReport> {
        create(self, destination, &mut |_| Ok(()))
    }
}

/// [`Store::backup`] with a hook called at each [`Stage`].
pub(crate) fn create(
    store: &Store,
    destination: &Path,
    hook: &mut dyn FnMut(Stage) -> StoreResult<()>,
) -> StoreResult<BackupReport> {
    if let super::Backend::Postgres(pg) = &store.inner.backend {
        return archive::create(store, pg, destination);
    }
    let parent = staging::check_destination(WHAT, Some(store.data_dir()), destination)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;

    let staged_db = staging.path().join(DB_FILE);
    let commit_seq = {
        let staged_db = staged_db.clone();
        store.exclusive(move |conn| snapshot(conn, &staged_db))?
    };
    hook(Stage::Snapshot)?;

    let staged_blobs = staging.path().join(BLOBS_DIR);
    let copied_external_blobs = copy_blobs(&staged_db, store.blobs()?.root(), &staged_blobs)?;
    hook(Stage::Blobs)?;

    let report = verify_staged(&staged_db, &staged_blobs)?;
    if !report.is_ok() {
        return Err(StoreError::Integrity(format!(
            "the staged backup failed verification: {}",
            verify::summarize(&report)
        )));
    }
    if report.last_commit_seq != commit_seq {
        return Err(StoreError::Integrity(format!(
            "the staged backup is at commit_seq {}, but the snapshot was taken at {commit_seq}",
            report.last_commit_seq
        )));
    }
    staging::sync_tree(staging.path())?;
    hook(Stage::Publish)?;

    staging::publish(WHAT, staging.path(), destination)?;
    // The directory now lives at the destination; nothing is left to clean up.
    let _ = staging.keep();
    fsutil::fsync_dir(&parent)?;
    Ok(BackupReport {
        destination: destination.to_path_buf(),
        database: destination.join(DB_FILE),
        blobs: destination.join(BLOBS_DIR),
        commit_seq,
        copied_external_blobs,
        created_at: timefmt::now(),
    })
}

/// Copies the database with the online backup API; returns the snapshot's `commit_seq`.
fn snapshot(source: &Connection, staged_db: &Path) -> StoreResult<i64> {
    let commit_seq = last_commit_seq(source)?;
    let mut target = Connection::open_with_flags(
        staged_db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    {
        let backup = Backup::new(source, &mut target)?;
        let mut progress: Option<Progress> = None;
        loop {
            let step = backup.step(PAGES_PER_STEP)?;
            let state = backup.progress();
            let pages = progress.get_or_insert_with(|| Progress::new("backup: database pages", state.pagecount as u64));
            pages.inc(((state.pagecount - state.remaining).max(0) as u64).saturating_sub(pages.done()));
            match step {
                StepResult::Done => break,
                StepResult::More => {}
                // Nothing else writes while the writer is held, so busy means a reader's
                // lock on the target, which cannot happen for a fresh private file.
                StepResult::Busy | StepResult::Locked => std::thread::sleep(std::time::Duration::from_millis(5)),
                _ => {}
            }
        }
    }
    target.pragma_update(None, "journal_mode", "DELETE")?;
    drop(target);
    fs::set_permissions(staged_db, fs::Permissions::from_mode(fsutil::PRIVATE_FILE_MODE))?;
    Ok(commit_seq)
}

/// The distinct external blobs a database references, with their sizes.
pub(crate) fn external_blobs(conn: &Connection) -> StoreResult<Vec<(Digest, u64)>> {
    // Purged revisions (schema 2) have no content: a backup carries their tombstones, never
    // bytes. A schema-1 database being restored has no purges.
    let live = if super::schema_version(conn)? >= 2 {
        " AND purged = 0"
    } else {
        ""
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT DISTINCT blob_hash, blob_size FROM artifact_revisions WHERE inline_blob IS NULL{live} ORDER BY blob_hash"
    ))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter()
        .map(|(hash, size)| {
            Digest::parse(&hash)
                .map(|digest| (digest, size.max(0) as u64))
                .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash {hash:?} in the snapshot")))
        })
        .collect()
}

/// Copies, re-hashing each one, every external blob `db` references from the CAS at
/// `from` into a new CAS at `to`. Returns the number of blobs copied.
pub(crate) fn copy_blobs(db: &Path, from: &Path, to: &Path) -> StoreResult<u64> {
    let wanted = {
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        external_blobs(&conn)?
    };
    private_dir(to)?;
    private_dir(&to.join(BLOBS_TMP_DIR))?;
    let mut progress = Progress::new("copy: external blobs", wanted.len() as u64);
    for (digest, size) in &wanted {
        // Copied as stored (compressed or not), after decoding and re-hashing it.
        let bytes = blob::read_object(&from.join(digest.relative_path()), digest, *size)?;
        blob::check_object_bytes(&bytes, digest, *size)?;
        let target = to.join(digest.relative_path());
        if let Some(dir) = target.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(fsutil::PRIVATE_DIR_MODE)
                .create(dir)?;
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(fsutil::PRIVATE_FILE_MODE)
            .open(&target)?;
        file.write_all(&bytes)?;
        progress.inc(1);
    }
    Ok(wanted.len() as u64)
}

fn private_dir(path: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(fsutil::PRIVATE_DIR_MODE).create(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        other => other,
    }
}

/// Opens a staged database read-only and verifies it with its CAS.
pub(crate) fn verify_staged(db: &Path, blobs: &Path) -> StoreResult<VerifyReport> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.execute_batch("BEGIN DEFERRED")?;
    let report = verify::verify(&conn, blobs);
    let _ = conn.execute_batch("COMMIT");
    report
}

mod archive;
#[cfg(test)]
mod tests;
