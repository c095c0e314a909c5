//! `backup.create` on a PostgreSQL store: the portable export format (`spec/export-v1.md`)
//! of one snapshot, which `memoree import --data-dir` restores into a local embedded store
//! (or `memoree import` into another PostgreSQL store).
//!
//! The same publication rules as an embedded backup: the destination is checked the same
//! way, the archive is written into a 0700 staging directory next to it, read back and
//! checked (every record file and blob file re-hashed against the manifest and its name),
//! synced, and renamed onto the destination without replacing anything.
//!
//! **Invariant:** the destination either does not exist or holds a complete, checked archive.

use std::path::Path;

use super::{BackupReport, STAGING_PREFIX, WHAT};
use crate::fsutil;
use crate::store::Store;
use crate::store::db::Db;
use crate::store::error::StoreResult;
use crate::store::pg::PgStore;
use crate::store::portable::{BLOBS_DIR, MANIFEST_FILE, Scope, check, export};
use crate::store::staging;
use crate::timefmt;

/// Writes a checked export archive of one snapshot of `pg` to `destination`.
pub(super) fn create(store: &Store, pg: &PgStore, destination: &Path) -> StoreResult<BackupReport> {
    let parent = staging::check_destination(WHAT, Some(store.data_dir()), destination)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;
    let manifest =
        pg.read(|conn| export::write_archive(Db::Postgres(conn), None, staging.path(), &Scope::All, false))?;
    let checked = check::check_archive(staging.path())?;
    debug_assert_eq!(checked, manifest);
    staging::sync_tree(staging.path())?;
    staging::publish(WHAT, staging.path(), destination)?;
    let _ = staging.keep();
    fsutil::fsync_dir(&parent)?;
    Ok(BackupReport {
        destination: destination.to_path_buf(),
        database: destination.join(MANIFEST_FILE),
        blobs: destination.join(BLOBS_DIR),
        commit_seq: manifest.source_last_commit_seq,
        copied_external_blobs: manifest.blobs.count,
        created_at: timefmt::now(),
    })
}
