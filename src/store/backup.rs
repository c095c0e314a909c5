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

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::error::{StoreError, StoreResult};
use super::verify::{self, VerifyReport};
use super::{BLOBS_DIR, DB_FILE, Store, last_commit_seq};
use crate::blob::{self, Digest};
use crate::fsutil;
use crate::progress::Progress;
use crate::timefmt::{self, Timestamp};

/// Prefix of the staging directory created next to the destination.
pub const STAGING_PREFIX: &str = ".memoree-backup-stage-";
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
    let parent = check_destination(store, destination)?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .rand_bytes(6)
        .tempdir_in(&parent)
        .map_err(|e| unusable(destination, e))?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(fsutil::PRIVATE_DIR_MODE))?;

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
            summarize(&report)
        )));
    }
    if report.last_commit_seq != commit_seq {
        return Err(StoreError::Integrity(format!(
            "the staged backup is at commit_seq {}, but the snapshot was taken at {commit_seq}",
            report.last_commit_seq
        )));
    }
    sync_tree(staging.path())?;
    hook(Stage::Publish)?;

    publish(staging.path(), destination)?;
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

/// Validates the destination and returns its (created if needed) parent directory.
///
/// Everything that makes the destination unusable is the caller's `INVALID_REQUEST`: an
/// existing entry (symbolic links included, never followed), a path into the data
/// directory, a parent that cannot be a directory, a name the filesystem refuses. Only a
/// full disk stays an I/O failure (reported as storage full).
fn check_destination(store: &Store, destination: &Path) -> StoreResult<PathBuf> {
    if !destination.is_absolute() {
        return Err(StoreError::Invalid(format!(
            "backup destination must be an absolute path, got {}",
            destination.display()
        )));
    }
    // Existence first, so `/` and `/tmp/..` are reported as existing like any other directory.
    match fs::symlink_metadata(destination) {
        Ok(_) => {
            return Err(StoreError::Invalid(format!(
                "backup destination already exists: {}",
                destination.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(unusable(destination, e)),
    }
    let (Some(parent), Some(_)) = (destination.parent(), destination.file_name()) else {
        return Err(StoreError::Invalid(format!(
            "backup destination {} does not name a new directory",
            destination.display()
        )));
    };
    // Checked on the nearest existing ancestor, before any directory is created. The
    // directories still to be created must be plain names: a `..` after a missing
    // directory could climb back into a directory that was never checked.
    let existing = parent.ancestors().find(|dir| dir.exists()).unwrap_or(Path::new("/"));
    let missing = parent.strip_prefix(existing).unwrap_or(parent);
    if missing.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(StoreError::Invalid(format!(
            "backup destination {} has `..` after a component that is not an existing directory",
            destination.display()
        )));
    }
    let data_dir = store.data_dir().canonicalize()?;
    let existing = existing.canonicalize().map_err(|e| unusable(destination, e))?;
    if existing.starts_with(&data_dir) {
        return Err(StoreError::Invalid(format!(
            "backup destination {} must be outside the data directory {}",
            destination.display(),
            data_dir.display()
        )));
    }
    fs::create_dir_all(parent).map_err(|e| unusable(destination, e))?;
    parent.canonicalize().map_err(|e| unusable(destination, e))
}

/// A destination the filesystem refuses: the caller's error, unless the disk is full.
fn unusable(destination: &Path, error: io::Error) -> StoreError {
    if blob::is_storage_full(&error) {
        return StoreError::Io(error);
    }
    StoreError::Invalid(format!(
        "backup destination {} is not usable: {error}",
        destination.display()
    ))
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
    private_dir(&to.join(".tmp"))?;
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

/// The first few issues of a failed verification, for an error message.
pub(crate) fn summarize(report: &VerifyReport) -> String {
    const SHOWN: usize = 3;
    let mut lines: Vec<String> = report.issues.iter().take(SHOWN).map(|issue| issue.line()).collect();
    if report.issues.len() > SHOWN {
        lines.push(format!("and {} more", report.issues.len() - SHOWN));
    }
    lines.join("; ")
}

/// fsyncs every regular file and directory under `root` (directories after their
/// entries). Anything else (a symlink, a socket) is refused.
pub(crate) fn sync_tree(root: &Path) -> StoreResult<()> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            sync_tree(&entry.path())?;
        } else if kind.is_file() {
            entries.push(entry.path());
        } else {
            return Err(StoreError::Integrity(format!(
                "{} is neither a regular file nor a directory",
                entry.path().display()
            )));
        }
    }
    for path in entries {
        File::open(&path)?.sync_all()?;
    }
    fsutil::fsync_dir(root)?;
    Ok(())
}

/// Renames the complete staging directory onto the destination without replacing anything.
pub(crate) fn publish(staging: &Path, destination: &Path) -> StoreResult<()> {
    match fsutil::rename_noreplace(staging, destination) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTEMPTY) => Err(
            StoreError::Config(format!("backup destination already exists: {}", destination.display())),
        ),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Err(StoreError::Config(format!(
            "cannot publish {} atomically on this platform: {e}",
            destination.display()
        ))),
        Err(e) => Err(e.into()),
    }
}

mod archive;
#[cfg(test)]
mod tests;
