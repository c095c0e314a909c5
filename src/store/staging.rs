//! Publishing a new directory (a backup, an export archive, a restored or freshly imported
//! store): the one destination check (and the empty-target check of a new data directory), a
//! private staging directory beside it, making what was written durable, and the atomic
//! no-replace rename into place.
//!
//! **Invariant:** the destination either does not exist or holds everything; staging is
//! removed on any failure before the rename (its `TempDir` drops), and nothing follows a
//! symbolic link planted at the destination.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use super::error::{StoreError, StoreResult};
use crate::blob;
use crate::fsutil;

/// Checks a new directory's `destination` before anything is written; returns its parent
/// (created if needed, canonical). `what` names it in messages ("backup destination").
///
/// Everything that makes the destination unusable is the caller's `INVALID_REQUEST`: a
/// relative path, an existing entry (symbolic links included, never followed), a path into
/// `data_dir`, a `..` after a directory that does not exist yet, a parent that cannot be a
/// directory, a name the filesystem refuses. Only a full disk stays an I/O failure
/// (reported as storage full).
pub(crate) fn check_destination(what: &str, data_dir: Option<&Path>, destination: &Path) -> StoreResult<PathBuf> {
    if !destination.is_absolute() {
        return Err(StoreError::Invalid(format!(
            "{what} must be an absolute path, got {}",
            destination.display()
        )));
    }
    // Existence first, so `/` and `/tmp/..` are reported as existing like any other directory.
    match fs::symlink_metadata(destination) {
        Ok(_) => {
            return Err(StoreError::Invalid(format!(
                "{what} already exists: {}",
                destination.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(unusable(what, destination, e)),
    }
    let (Some(parent), Some(_)) = (destination.parent(), destination.file_name()) else {
        return Err(StoreError::Invalid(format!(
            "{what} {} does not name a new directory",
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
            "{what} {} has `..` after a component that is not an existing directory",
            destination.display()
        )));
    }
    if let Some(data_dir) = data_dir {
        let data_dir = data_dir.canonicalize()?;
        let existing = existing.canonicalize().map_err(|e| unusable(what, destination, e))?;
        if existing.starts_with(&data_dir) {
            return Err(StoreError::Invalid(format!(
                "{what} {} must be outside the data directory {}",
                destination.display(),
                data_dir.display()
            )));
        }
    }
    fs::create_dir_all(parent).map_err(|e| unusable(what, destination, e))?;
    parent.canonicalize().map_err(|e| unusable(what, destination, e))
}

/// Whether the target data directory of a restore (or of an import into a new data
/// directory) exists, as an empty directory; anything else is refused.
pub(crate) fn check_target(data_dir: &Path) -> StoreResult<bool> {
    match fs::symlink_metadata(data_dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
        Ok(meta) if !meta.is_dir() => Err(StoreError::Config(format!(
            "restore target {} exists and is not a directory",
            data_dir.display()
        ))),
        Ok(_) => {
            if fs::read_dir(data_dir)?.next().is_some() {
                return Err(StoreError::Config(format!(
                    "restore target {} is not empty; restore only into a new or empty data directory",
                    data_dir.display()
                )));
            }
            Ok(true)
        }
    }
}

/// The error of the final rename when the target directory filled up meanwhile.
pub(crate) fn not_empty(data_dir: &Path, error: io::Error) -> StoreError {
    if error.raw_os_error() == Some(libc::ENOTEMPTY) || error.kind() == io::ErrorKind::DirectoryNotEmpty {
        StoreError::Config(format!("restore target {} is no longer empty", data_dir.display()))
    } else {
        error.into()
    }
}

/// A destination the filesystem refuses: the caller's error, unless the disk is full.
fn unusable(what: &str, destination: &Path, error: io::Error) -> StoreError {
    if blob::is_storage_full(&error) {
        return StoreError::Io(error);
    }
    StoreError::Invalid(format!("{what} {} is not usable: {error}", destination.display()))
}

/// A new private (0700) staging directory in `parent`, removed when dropped.
pub(crate) fn staging_dir(parent: &Path, prefix: &str) -> StoreResult<tempfile::TempDir> {
    let staging = tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(6)
        .tempdir_in(parent)?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(fsutil::PRIVATE_DIR_MODE))?;
    Ok(staging)
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

/// Makes everything written under `dir` durable: one `syncfs` of its file system instead
/// of one fsync per file, where the platform has it.
pub(crate) fn sync_filesystem(dir: &Path) -> StoreResult<()> {
    let handle = File::open(dir)?;
    #[cfg(target_os = "linux")]
    rustix::fs::syncfs(&handle).map_err(io::Error::from)?;
    #[cfg(not(target_os = "linux"))]
    sync_tree(dir)?;
    drop(handle);
    Ok(())
}

/// Renames the complete staging directory onto `destination` without replacing anything.
pub(crate) fn publish(what: &str, staging: &Path, destination: &Path) -> StoreResult<()> {
    match fsutil::rename_noreplace(staging, destination) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTEMPTY) => Err(
            StoreError::Config(format!("{what} already exists: {}", destination.display())),
        ),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Err(StoreError::Config(format!(
            "cannot publish {} atomically on this platform: {e}",
            destination.display()
        ))),
        Err(e) => Err(e.into()),
    }
}
