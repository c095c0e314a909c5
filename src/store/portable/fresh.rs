//! An import into a new data directory (`memoree import SRC --data-dir DIR`), staged like a
//! restore: the target must be absent or empty, the store is built and verified in a 0700
//! staging directory next to it, synced, and renamed into place without replacing anything.
//!
//! **Invariant:** on any failure the target is left as it was (absent or empty) with no
//! staging directory behind; the archive is only read.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::import::{ImportReport, Mode};
use crate::fsutil;
use crate::store::Store;
use crate::store::error::{StoreError, StoreResult};
use crate::store::staging::{self, check_target, not_empty, sync_tree};

/// Prefix of the staging directory created next to the target.
pub const STAGING_PREFIX: &str = ".memoree-import-stage-";

/// Imports `archive` into `data_dir`, which must not exist or be empty.
pub fn import_into_new_data_dir(archive: &Path, data_dir: &Path, show_progress: bool) -> StoreResult<ImportReport> {
    let manifest = super::import::read_manifest(archive)?;
    let target_exists = check_target(data_dir)?;
    let parent = match data_dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;
    drop(manifest);
    // The import verifies the store inside its transaction before committing.
    let store = Store::open(staging.path())?;
    let imported = store.import(archive, Mode::IntoEmpty, show_progress);
    store.shutdown();
    drop(store);
    let report = imported?;
    sync_tree(staging.path())?;
    if target_exists {
        fs::remove_dir(data_dir).map_err(|e| not_empty(data_dir, e))?;
    }
    match fsutil::rename_noreplace(staging.path(), data_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTEMPTY) => {
            return Err(StoreError::Config(format!(
                "import target {} appeared during the import",
                data_dir.display()
            )));
        }
        Err(e) => return Err(e.into()),
    }
    let _ = staging.keep();
    fsutil::fsync_dir(&parent)?;
    Ok(report)
}
