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
//! the same [`write_archive`], its blobs from the database; the records and their order are
//! those of an embedded store holding the same memory.
//!
//! **Invariant:** the store is only read; the destination either does not exist or holds
//! a complete archive.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, params_from_iter};

use crate::store::db::{Db, Dialect, Row};
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
use crate::store::{self as store, DB_FILE, artifact, migrate, scope};
use crate::timefmt;

/// Prefix of the staging directory created next to the destination.
pub const STAGING_PREFIX: &str = ".memoree-export-stage-";

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct ExportReport {
    pub destination: PathBuf,
    pub manifest: Manifest,
}

/// Exports the store in `data_dir` (served by a daemon or not) to `destination`, which must
/// not exist. `progress` draws progress lines on stderr when it is a terminal.
pub fn export(data_dir: &Path, destination: &Path, scope: &Scope, progress: bool) -> StoreResult<ExportReport> {
    let parent = check_destination(Some(data_dir), destination)?;
    let conn = open_snapshot(data_dir)?;
    let staging = staging_dir(&parent, STAGING_PREFIX)?;
    conn.execute_batch("BEGIN DEFERRED")?;
    let cas_root = data_dir.join(store::BLOBS_DIR);
    let written = write_archive(Db::Sqlite(&conn), Some(&cas_root), staging.path(), scope, progress);
    let _ = conn.execute_batch("COMMIT");
    publish(staging, written?, destination, &parent)
}

/// Exports one snapshot of a PostgreSQL store to `destination`, which must not exist: the
/// same format, records and order as an export of the embedded store holding the same memory.
/// Only [`Scope::All`] so far.
pub fn export_postgres(
    store: &PgStore,
    destination: &Path,
    scope: &Scope,
    progress: bool,
) -> StoreResult<ExportReport> {
    if *scope != Scope::All {
        return Err(StoreError::Unsupported(
            "a scoped export is not yet implemented on the PostgreSQL store; export --all".to_owned(),
        ));
    }
    let parent = check_destination(None, destination)?;
    let staging = staging_dir(&parent, STAGING_PREFIX)?;
    let manifest = store.read(|conn| write_archive(Db::Postgres(conn), None, staging.path(), scope, progress))?;
    publish(staging, manifest, destination, &parent)
}

/// A new private staging directory in `parent`.
pub(crate) fn staging_dir(parent: &Path, prefix: &str) -> StoreResult<tempfile::TempDir> {
    let staging = tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(6)
        .tempdir_in(parent)?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(fsutil::PRIVATE_DIR_MODE))?;
    Ok(staging)
}

/// Syncs the written archive and renames it onto `destination` without replacing anything.
fn publish(
    staging: tempfile::TempDir,
    manifest: Manifest,
    destination: &Path,
    parent: &Path,
) -> StoreResult<ExportReport> {
    sync_filesystem(staging.path())?;
    crate::store::backup::publish(staging.path(), destination)?;
    let _ = staging.keep();
    fsutil::fsync_dir(parent)?;
    Ok(ExportReport {
        destination: destination.to_path_buf(),
        manifest,
    })
}

/// The destination must not exist and must lie outside the data directory; returns its
/// (created if needed) parent.
fn check_destination(data_dir: Option<&Path>, destination: &Path) -> StoreResult<PathBuf> {
    match fs::symlink_metadata(destination) {
        Ok(_) => {
            return Err(StoreError::Invalid(format!(
                "export destination already exists: {}",
                destination.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let (Some(parent), Some(_)) = (destination.parent(), destination.file_name()) else {
        return Err(StoreError::Invalid(format!(
            "export destination {} does not name a new directory",
            destination.display()
        )));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    fs::create_dir_all(parent)?;
    let parent = parent.canonicalize()?;
    if let Some(Ok(data_dir)) = data_dir.map(Path::canonicalize)
        && parent.starts_with(&data_dir)
    {
        return Err(StoreError::Invalid(format!(
            "export destination {} must be outside the data directory {}",
            destination.display(),
            data_dir.display()
        )));
    }
    Ok(parent)
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

/// The `WHERE … ORDER BY …` tail of each record file's query: everything, or the
/// selection computed by [`select`].
fn tail(db: Db<'_>, file: &RecordFile, scoped: bool) -> &'static str {
    // PostgreSQL has no rowid: entities are in creation order, that of their first
    // revision (the order the embedded store inserted them in).
    match (db.dialect(), file.record_type, scoped) {
        (Dialect::Postgres, "artifact", false) => {
            return "ORDER BY (SELECT min(r0.commit_seq) FROM artifact_revisions r0 WHERE r0.artifact_id = a.id), a.id";
        }
        (Dialect::Postgres, "claim", false) => {
            return "ORDER BY (SELECT min(r0.commit_seq) FROM claim_revisions r0 WHERE r0.claim_id = c.id), c.id";
        }
        _ => {}
    }
    match (file.record_type, scoped) {
        ("event", false) => "ORDER BY e.commit_seq",
        ("event", true) => "WHERE e.commit_seq IN (SELECT commit_seq FROM x_events) ORDER BY e.commit_seq",
        ("artifact", false) => "ORDER BY a.rowid",
        ("artifact", true) => "WHERE a.id IN (SELECT id FROM x_entities) ORDER BY a.rowid",
        ("artifact_revision", false) => "ORDER BY r.seq",
        ("artifact_revision", true) => "WHERE r.artifact_id IN (SELECT id FROM x_entities) ORDER BY r.seq",
        ("claim", false) => "ORDER BY c.rowid",
        ("claim", true) => "WHERE c.id IN (SELECT id FROM x_entities) ORDER BY c.rowid",
        ("claim_revision", false) => "ORDER BY r.seq",
        ("claim_revision", true) => "WHERE r.claim_id IN (SELECT id FROM x_entities) ORDER BY r.seq",
        ("relation", false) => "ORDER BY rel.seq",
        ("relation", true) => "WHERE rel.id IN (SELECT id FROM x_relations) ORDER BY rel.seq",
        ("conflict_case", false) => "ORDER BY cc.case_sequence",
        ("conflict_case", true) => "WHERE cc.relation_id IN (SELECT id FROM x_relations) ORDER BY cc.case_sequence",
        ("conflict_event", false) => "ORDER BY ce.seq",
        ("conflict_event", true) => {
            "WHERE ce.case_id IN (SELECT case_id FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations))
             ORDER BY ce.seq"
        }
        ("replay", false) => "ORDER BY i.scoped_key",
        ("replay", true) => {
            "WHERE json_extract(i.replay_json, '$.artifact_revision') IN
                   (SELECT id FROM artifact_revisions WHERE artifact_id IN (SELECT id FROM x_entities))
                OR json_extract(i.replay_json, '$.claim_revision') IN
                   (SELECT id FROM claim_revisions WHERE claim_id IN (SELECT id FROM x_entities))
                OR json_extract(i.replay_json, '$.relation') IN (SELECT id FROM x_relations)
                OR json_extract(i.replay_json, '$.purge') IN (SELECT id FROM x_entities)
             ORDER BY i.scoped_key"
        }
        ("tombstone", false) => "ORDER BY p.commit_seq",
        ("tombstone", true) => "WHERE p.entity_id IN (SELECT id FROM x_entities) ORDER BY p.commit_seq",
        _ => "",
    }
}

/// Fills the temporary selection tables of a scoped export (see [`Scope::Visible`]).
fn select(conn: &Connection, ambient: &scope::Owner, horizon: crate::protocol::Horizon) -> StoreResult<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE x_relations (id TEXT PRIMARY KEY) WITHOUT ROWID;
         CREATE TEMP TABLE x_entities (id TEXT PRIMARY KEY) WITHOUT ROWID;
         CREATE TEMP TABLE x_events (commit_seq INTEGER PRIMARY KEY);",
    )?;
    let visible = |alias: &str, sql: &str| -> StoreResult<()> {
        let mut params: Vec<SqlValue> = Vec::new();
        let predicate = scope::visibility_sql(alias, ambient, horizon, &mut params);
        conn.execute(&sql.replace("{visible}", &predicate), params_from_iter(params))?;
        Ok(())
    };
    visible(
        "rel",
        "INSERT OR IGNORE INTO x_relations SELECT rel.id FROM relations rel WHERE {visible}",
    )?;
    visible(
        "a",
        "INSERT OR IGNORE INTO x_entities SELECT a.id FROM artifacts a WHERE {visible}",
    )?;
    visible(
        "c",
        "INSERT OR IGNORE INTO x_entities SELECT c.id FROM claims c WHERE {visible}",
    )?;
    conn.execute_batch(
        "INSERT OR IGNORE INTO x_entities SELECT source_id FROM relations WHERE id IN (SELECT id FROM x_relations);
         INSERT OR IGNORE INTO x_entities SELECT target_id FROM relations WHERE id IN (SELECT id FROM x_relations);
         INSERT OR IGNORE INTO x_entities
             SELECT DISTINCT json_extract(e.value, '$.artifact_id') FROM claim_revisions r, json_each(CASE WHEN json_valid(r.evidence_json) THEN r.evidence_json ELSE '[]' END) e
             WHERE r.claim_id IN (SELECT id FROM x_entities) AND json_extract(e.value, '$.artifact_id') IS NOT NULL;
         INSERT OR IGNORE INTO x_events SELECT commit_seq FROM events
             WHERE entity_id IN (SELECT id FROM x_entities) OR entity_id IN (SELECT id FROM x_relations);
         INSERT OR IGNORE INTO x_events SELECT commit_seq FROM artifact_revisions WHERE artifact_id IN (SELECT id FROM x_entities);
         INSERT OR IGNORE INTO x_events SELECT commit_seq FROM claim_revisions WHERE claim_id IN (SELECT id FROM x_entities);
         INSERT OR IGNORE INTO x_events SELECT commit_seq FROM relations WHERE id IN (SELECT id FROM x_relations);
         INSERT OR IGNORE INTO x_events SELECT opened_commit_seq FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations);
         INSERT OR IGNORE INTO x_events SELECT operation_commit_seq FROM conflict_events
             WHERE case_id IN (SELECT case_id FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations));
         INSERT OR IGNORE INTO x_events SELECT commit_seq FROM purges WHERE entity_id IN (SELECT id FROM x_entities);",
    )?;
    Ok(())
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
            select(db.sqlite()?, ambient, *horizon)?;
            true
        }
    };
    let mut total = 0u64;
    for file in &RECORD_FILES {
        let sql = format!(
            "SELECT count(*) FROM ({} {}) AS counted",
            select_of(file),
            tail(db, file, scoped)
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
        let sql = format!("{} {}", select_of(file), tail(db, file, scoped));
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

/// Makes everything written under `dir` durable: one `syncfs` of its file system instead
/// of one fsync per blob file.
fn sync_filesystem(dir: &Path) -> StoreResult<()> {
    let handle = File::open(dir)?;
    #[cfg(target_os = "linux")]
    rustix::fs::syncfs(&handle).map_err(io::Error::from)?;
    #[cfg(not(target_os = "linux"))]
    crate::store::backup::sync_tree(dir)?;
    drop(handle);
    Ok(())
}
