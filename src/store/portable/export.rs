//! `memoree export`: one read snapshot of a store streamed into a new archive directory.
//!
//! The export opens its own connection to the database (it works while a daemon serves
//! the store: WAL readers never block the writer) and reads everything inside one
//! `BEGIN DEFERRED` transaction, so the archive is one consistent snapshot. Records are
//! written one at a time and blobs one at a time (at most one artifact's bytes are held),
//! so memory stays bounded whatever the store's size. Work happens in a staging directory
//! next to the destination; once every file is written the file system is synced and the
//! staging directory is renamed onto the destination without replacing anything.
//!
//! A PostgreSQL store ([`export_postgres`]) is read in one `REPEATABLE READ` snapshot through
//! the same `write_archive`, its blobs from the database; the records and their order are
//! those of an embedded store holding the same memory. A scoped export computes its
//! selection (`selection.rs`) into temporary tables on both backends; on PostgreSQL they live
//! in the snapshot transaction, which is always rolled back.
//!
//! **Invariant:** the store is only read; the destination either does not exist or holds
//! a complete archive.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::store::db::{Db, Row};
use crate::store::pg::{self, PgStore};
use serde::Serialize;

use super::records::{self, ArtifactRevisionRecord, TombstoneRecord};
use super::{
    BLOBS_DIR, BlobsEntry, FORMAT, FORMAT_VERSION, FileEntry, MANIFEST_FILE, Manifest, Producer, RECORD_FILES,
    RecordFile, Scope,
};
use crate::blob::{self, Digest};
use crate::fsutil;
use crate::progress::Progress;
use crate::store::error::{StoreError, StoreResult};
use crate::store::sqlite::migrate;
use crate::store::staging;
use crate::store::{self as store, DB_FILE, artifact};
use crate::timefmt;

mod selection;

/// Prefix of the staging directory created next to the destination.
pub const STAGING_PREFIX: &str = ".memoree-export-stage-";
/// What the destination is called in messages.
const WHAT: &str = "export destination";

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct ExportReport {
    pub destination: PathBuf,
    pub manifest: Manifest,
}

/// Exports the store in `data_dir` (served by a daemon or not) to `destination`, which must
/// not exist. `progress` draws progress lines on stderr when it is a terminal.
pub fn export(data_dir: &Path, destination: &Path, scope: &Scope, progress: bool) -> StoreResult<ExportReport> {
    let parent = staging::check_destination(WHAT, Some(data_dir), destination)?;
    let conn = open_snapshot(data_dir)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;
    conn.execute_batch("BEGIN DEFERRED")?;
    let cas_root = data_dir.join(store::BLOBS_DIR);
    let written = write_archive(Db::Sqlite(&conn), Some(&cas_root), staging.path(), scope, progress);
    let _ = conn.execute_batch("COMMIT");
    publish(staging, written?, destination, &parent)
}

/// Exports one snapshot of a PostgreSQL store to `destination`, which must not exist: the
/// same format, records and order as an export of the embedded store holding the same memory.
pub fn export_postgres(
    store: &PgStore,
    destination: &Path,
    scope: &Scope,
    progress: bool,
) -> StoreResult<ExportReport> {
    let parent = staging::check_destination(WHAT, None, destination)?;
    let staging = staging::staging_dir(&parent, STAGING_PREFIX)?;
    let manifest = store.snapshot(|conn| write_archive(Db::Postgres(conn), None, staging.path(), scope, progress))?;
    publish(staging, manifest, destination, &parent)
}

/// Syncs the written archive and renames it onto `destination` without replacing anything.
fn publish(
    staging: tempfile::TempDir,
    manifest: Manifest,
    destination: &Path,
    parent: &Path,
) -> StoreResult<ExportReport> {
    staging::sync_filesystem(staging.path())?;
    staging::publish(WHAT, staging.path(), destination)?;
    let _ = staging.keep();
    fsutil::fsync_dir(parent)?;
    Ok(ExportReport {
        destination: destination.to_path_buf(),
        manifest,
    })
}

/// A connection of its own on the store's database, for one read snapshot (and the
/// export's temporary selection tables, which never touch the database file).
fn open_snapshot(data_dir: &Path) -> StoreResult<Connection> {
    let db = data_dir.join(DB_FILE);
    if !db.is_file() {
        return Err(StoreError::Config(format!(
            "no Memoree store at {}",
            data_dir.display()
        )));
    }
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    let version = migrate::schema_version(&conn)?;
    if version != migrate::SCHEMA_VERSION {
        return Err(StoreError::Config(format!(
            "the store at {} has schema version {version}; this binary exports version {} (start the daemon once to upgrade it)",
            data_dir.display(),
            migrate::SCHEMA_VERSION
        )));
    }
    for suffix in ["-wal", "-shm"] {
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        if path.exists() {
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(fsutil::PRIVATE_FILE_MODE));
        }
    }
    Ok(conn)
}

/// One JSON Lines file being written: records, bytes and the BLAKE3 of its bytes.
struct Jsonl {
    name: &'static str,
    record_type: &'static str,
    out: BufWriter<File>,
    hasher: blake3::Hasher,
    records: u64,
    bytes: u64,
    line: Vec<u8>,
}

impl Jsonl {
    fn create(dir: &Path, file: &RecordFile) -> StoreResult<Jsonl> {
        let out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(fsutil::PRIVATE_FILE_MODE)
            .open(dir.join(file.name))?;
        Ok(Jsonl {
            name: file.name,
            record_type: file.record_type,
            out: BufWriter::with_capacity(256 * 1024, out),
            hasher: blake3::Hasher::new(),
            records: 0,
            bytes: 0,
            line: Vec::new(),
        })
    }

    fn push(&mut self, record: &impl Serialize) -> StoreResult<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record)?;
        self.line.push(b'\n');
        self.hasher.update(&self.line);
        self.out.write_all(&self.line)?;
        self.records += 1;
        self.bytes += self.line.len() as u64;
        Ok(())
    }

    fn finish(mut self) -> StoreResult<FileEntry> {
        self.out.flush()?;
        Ok(FileEntry {
            name: self.name.to_owned(),
            record_type: self.record_type.to_owned(),
            records: self.records,
            bytes: self.bytes,
            blake3: self.hasher.finalize().to_hex().to_string(),
        })
    }
}

/// The blob files written so far.
struct Blobs {
    root: PathBuf,
    count: u64,
    bytes: u64,
}

impl Blobs {
    /// Writes `bytes` as `blobs/<h0h1>/<hex>` unless an equal blob is already there.
    fn write(&mut self, hex: &str, bytes: &[u8]) -> StoreResult<()> {
        let dir = self.root.join(&hex[..2]);
        let path = dir.join(hex);
        if path.exists() {
            return Ok(());
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(fsutil::PRIVATE_DIR_MODE)
            .create(&dir)?;
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(fsutil::PRIVATE_FILE_MODE)
            .open(&path)?;
        file.write_all(bytes)?;
        self.count += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// Writes the archive of the snapshot `db` is in (external blobs from the CAS at `cas_root`
/// on the embedded store, from the database on PostgreSQL) into `staging`; returns its
/// manifest, already written.
pub(crate) fn write_archive(
    db: Db<'_>,
    cas_root: Option<&Path>,
    staging: &Path,
    scope: &Scope,
    show_progress: bool,
) -> StoreResult<Manifest> {
    let source_last_commit_seq = store::last_commit_seq(db)?;
    let scoped = match scope {
        Scope::All => false,
        Scope::Visible { ambient, horizon, .. } => {
            selection::select(db, ambient, *horizon)?;
            true
        }
    };
    let mut total = 0u64;
    for file in &RECORD_FILES {
        let sql = format!(
            "SELECT count(*) FROM ({} {}) AS counted",
            select_of(file),
            selection::tail(db, file, scoped)
        );
        total += db.query_one(&sql, &[], |r| r.get::<i64>(0))?.max(0) as u64;
    }
    let mut progress = if show_progress {
        Progress::new("export: records", total)
    } else {
        Progress::hidden("export: records", total)
    };
    let mut blobs = Blobs {
        root: staging.join(BLOBS_DIR),
        count: 0,
        bytes: 0,
    };
    fs::DirBuilder::new()
        .mode(fsutil::PRIVATE_DIR_MODE)
        .create(&blobs.root)?;
    let mut files = Vec::new();
    for file in &RECORD_FILES {
        let mut out = Jsonl::create(staging, file)?;
        let sql = format!("{} {}", select_of(file), selection::tail(db, file, scoped));
        db.for_each(&sql, &[], |row| {
            match file.record_type {
                "event" => out.push(&records::event(row)?)?,
                "artifact" => out.push(&records::artifact(row)?)?,
                "artifact_revision" => {
                    let record = records::artifact_revision(row)?;
                    if !record.purged {
                        let bytes = content(db, row, &record, cas_root)?;
                        blobs.write(&record.blob_hash, &bytes)?;
                    }
                    out.push(&record)?;
                }
                "claim" => out.push(&records::claim(row)?)?,
                "claim_revision" => out.push(&records::claim_revision(row)?)?,
                "relation" => out.push(&records::relation(row)?)?,
                "conflict_case" => out.push(&records::conflict_case(row)?)?,
                "conflict_event" => out.push(&records::conflict_event(row)?)?,
                "replay" => out.push(&records::replay(row)?)?,
                "tombstone" => {
                    let mut record: TombstoneRecord = records::tombstone(row)?;
                    record.revisions = records::tombstone_revisions(db, &record.entity_id)?;
                    out.push(&record)?;
                }
                other => return Err(StoreError::Internal(format!("unknown record type {other}"))),
            }
            progress.inc(1);
            Ok(())
        })?;
        files.push(out.finish()?);
    }
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        format_version: FORMAT_VERSION,
        created_at: timefmt::to_wire(&timefmt::now()),
        producer: Producer {
            name: "memoree".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            store_schema_version: migrate::SCHEMA_VERSION,
        },
        scope: scope.to_json(),
        source_last_commit_seq,
        files,
        blobs: BlobsEntry {
            directory: BLOBS_DIR.to_owned(),
            count: blobs.count,
            bytes: blobs.bytes,
        },
    };
    let mut text = serde_json::to_vec_pretty(&manifest)?;
    text.push(b'\n');
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(fsutil::PRIVATE_FILE_MODE)
        .open(staging.join(MANIFEST_FILE))?;
    file.write_all(&text)?;
    Ok(manifest)
}

fn select_of(file: &RecordFile) -> &'static str {
    match file.record_type {
        "event" => records::EVENT_SELECT,
        "artifact" => records::ARTIFACT_SELECT,
        "artifact_revision" => records::ARTIFACT_REVISION_SELECT,
        "claim" => records::CLAIM_SELECT,
        "claim_revision" => records::CLAIM_REVISION_SELECT,
        "relation" => records::RELATION_SELECT,
        "conflict_case" => records::CONFLICT_CASE_SELECT,
        "conflict_event" => records::CONFLICT_EVENT_SELECT,
        "replay" => records::REPLAY_SELECT,
        _ => records::TOMBSTONE_SELECT,
    }
}

/// A revision's raw bytes, read from its row (inline) or the CAS and verified.
fn content(
    db: Db<'_>,
    row: &Row<'_>,
    record: &ArtifactRevisionRecord,
    cas_root: Option<&Path>,
) -> StoreResult<Vec<u8>> {
    let digest = Digest::parse(&record.blob_hash)
        .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash on {}", record.revision_id)))?;
    match (row.get::<Option<Vec<u8>>>(13)?, db, cas_root) {
        (Some(stored), _, _) => artifact::read_inline(&digest, record.size_bytes, &stored, row.get(14)?),
        (None, Db::Postgres(conn), _) => pg::blob::get(conn, &digest, record.size_bytes),
        (None, Db::Sqlite(_), None) => Err(StoreError::Internal("no CAS to export blobs from".to_owned())),
        (None, Db::Sqlite(_), Some(cas_root)) => {
            let path = cas_root.join(digest.relative_path());
            let stored = blob::read_object(&path, &digest, record.size_bytes).map_err(|e| match e {
                blob::BlobError::Missing { .. } => StoreError::Integrity(format!(
                    "the CAS object of revision {} is missing (if a purge ran during the export, export again): {e}",
                    record.revision_id
                )),
                other => other.into(),
            })?;
            Ok(blob::decode_object(stored, &digest, record.size_bytes)?)
        }
    }
}
