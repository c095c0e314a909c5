//! `memoree import`: replays an archive into a store, verified before anything is visible.
//!
//! Order of work, all on the writer connection while no other write can run
//! ([`Store::exclusive`]):
//! 1. The manifest is read (an unknown format or a newer `format_version` is refused), every
//!    record file it lists must exist with the listed size, and the blob directory must
//!    hold exactly the listed number of files and bytes.
//! 2. In one transaction, each record file is streamed line by line (bounded memory) in
//!    [`RECORD_FILES`] order, its BLAKE3 digest and record count checked against the
//!    manifest. Events come first: each gets a `commit_seq` — the one of the identical event
//!    already in the store (merge), or the next free one, in archive order — and every
//!    `commit_seq` a later record names is mapped through that table. Into an empty store
//!    the mapping is the identity, so every id, revision, relation, conflict case and
//!    `commit_seq` is reproduced exactly.
//! 3. A record whose id already exists is skipped when it is identical (so re-running a
//!    merge changes nothing) and collects a collision when it differs; any collision refuses
//!    the whole import. A replay record whose key is already bound differently is skipped
//!    and counted (the store's binding wins).
//! 4. Blob bytes are re-hashed as they are read and stored like the write path does
//!    (inline up to the threshold, the CAS above it); the full-text projection is rebuilt
//!    from the authoritative rows; the store is verified; only then is the transaction
//!    committed. On any failure it is rolled back and CAS objects the import created are
//!    erased, so the target is left as it was.
//!
//! **Invariant:** the archive is only read, and a failed import leaves the target unchanged.

mod apply;
mod pg;

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    ArchiveError, BLOBS_DIR, FORMAT, FORMAT_VERSION, FileEntry, MANIFEST_FILE, MAX_LINE_BYTES, Manifest, RECORD_FILES,
    RecordFile,
};
use crate::blob::{BlobStore, Digest};
use crate::progress::Progress;
use crate::store::db::Db;
use crate::store::error::{StoreError, StoreResult};
use crate::store::{Backend, Store, last_commit_seq, purge, reindex, verify};

/// How an archive meets the target store (the wire enum of `import`): into an empty store,
/// where everything is reproduced exactly, or merged, where records new to the target are
/// added (ids kept, `commit_seq` appended), identical records are skipped and different
/// records under an existing id refuse the import.
pub use crate::protocol::purge::ImportMode as Mode;

/// What an import did, per record type (indexed like [`RECORD_FILES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub format_version: u32,
    pub source_last_commit_seq: i64,
    pub imported: [u64; RECORD_FILES.len()],
    pub unchanged: [u64; RECORD_FILES.len()],
    /// Replay records whose key the target had already bound to another request.
    pub skipped_replays: u64,
    /// Blob bytes read from the archive (new revisions only).
    pub blob_bytes_read: u64,
    pub last_commit_seq: i64,
}

/// The most collisions an error lists.
const LISTED_COLLISIONS: usize = 20;

impl Store {
    /// Imports the archive at `archive` (see the module documentation).
    pub fn import(&self, archive: &Path, mode: Mode, show_progress: bool) -> StoreResult<ImportReport> {
        let manifest = read_manifest(archive)?;
        check_files(archive, &manifest)?;
        let archive = archive.to_path_buf();
        let report = match &self.inner.backend {
            Backend::Sqlite(sqlite) => {
                let blobs = sqlite.blobs.clone();
                self.exclusive(move |conn| apply(conn, &blobs, &archive, &manifest, mode, show_progress))?
            }
            // One job of the writer: its group transaction holds the `commit_state` row lock
            // (no front end writes meanwhile) and its savepoint is rolled back on failure,
            // blobs included.
            Backend::Postgres(store) => store.write(move |tx| {
                let mut importer = Importer::new(tx.db(), None, &archive, &manifest, mode, show_progress)?;
                importer.run(&manifest)
            })?,
        };
        if report.imported[RECORD_FILES.len() - 1] > 0 {
            self.note_purges();
        }
        Ok(report)
    }
}

/// Reads and checks the manifest: the format, then the version, then the shape.
pub fn read_manifest(archive: &Path) -> StoreResult<Manifest> {
    let path = archive.join(MANIFEST_FILE);
    let mut text = Vec::new();
    match File::open(&path) {
        Ok(file) => {
            file.take(4 * 1024 * 1024).read_to_end(&mut text)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ArchiveError::NotAnArchive(format!("{} has no {MANIFEST_FILE}", archive.display())).into());
        }
        Err(e) => return Err(e.into()),
    }
    let value: Value = serde_json::from_slice(&text)
        .map_err(|e| ArchiveError::Damaged(format!("{MANIFEST_FILE} is not valid JSON: {e}")))?;
    if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(ArchiveError::NotAnArchive(format!("{MANIFEST_FILE} does not describe a {FORMAT} archive")).into());
    }
    match value.get("format_version").and_then(Value::as_u64) {
        Some(version) if version > u64::from(FORMAT_VERSION) => {
            return Err(ArchiveError::FutureVersion {
                found: version,
                supported: FORMAT_VERSION,
            }
            .into());
        }
        Some(version) if version >= 1 => {}
        _ => return Err(ArchiveError::Malformed(format!("{MANIFEST_FILE} has no valid format_version")).into()),
    }
    let manifest: Manifest =
        serde_json::from_value(value).map_err(|e| ArchiveError::Malformed(format!("{MANIFEST_FILE}: {e}")))?;
    for file in &RECORD_FILES {
        match manifest.file(file) {
            Some(entry) if entry.record_type == file.record_type => {}
            _ => {
                return Err(ArchiveError::Malformed(format!("{MANIFEST_FILE} does not list {}", file.name)).into());
            }
        }
    }
    if manifest.files.len() != RECORD_FILES.len() || manifest.blobs.directory != BLOBS_DIR {
        return Err(ArchiveError::Malformed(format!("{MANIFEST_FILE} lists files this format does not have")).into());
    }
    Ok(manifest)
}

/// Every record file exists with its listed size; the blob directory holds exactly the
/// listed number of well-named files and bytes.
pub(crate) fn check_files(archive: &Path, manifest: &Manifest) -> StoreResult<()> {
    for entry in &manifest.files {
        let path = archive.join(&entry.name);
        let len = match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => meta.len(),
            Ok(_) => return Err(ArchiveError::Malformed(format!("{} is not a file", entry.name)).into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ArchiveError::Damaged(format!("{} is missing", entry.name)).into());
            }
            Err(e) => return Err(e.into()),
        };
        if len != entry.bytes {
            return Err(ArchiveError::Damaged(format!(
                "{} is {len} bytes, the manifest says {} (truncated or modified)",
                entry.name, entry.bytes
            ))
            .into());
        }
    }
    let (mut count, mut bytes) = (0u64, 0u64);
    let root = archive.join(BLOBS_DIR);
    let dirs = match fs::read_dir(&root) {
        Ok(dirs) => dirs,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ArchiveError::Damaged(format!("the {BLOBS_DIR} directory is missing")).into());
        }
        Err(e) => return Err(e.into()),
    };
    for dir in dirs {
        let dir = dir?;
        let prefix = dir.file_name().to_string_lossy().into_owned();
        if !dir.file_type()?.is_dir() || prefix.len() != 2 {
            return Err(ArchiveError::Malformed(format!("{BLOBS_DIR}/{prefix} is not a blob directory")).into());
        }
        for file in fs::read_dir(dir.path())? {
            let file = file?;
            let name = file.file_name().to_string_lossy().into_owned();
            if !file.file_type()?.is_file() || Digest::parse(&name).is_none() || !name.starts_with(&prefix) {
                return Err(ArchiveError::Malformed(format!("{BLOBS_DIR}/{prefix}/{name} is not a blob file")).into());
            }
            count += 1;
            bytes += file.metadata()?.len();
        }
    }
    if count != manifest.blobs.count || bytes != manifest.blobs.bytes {
        return Err(ArchiveError::Damaged(format!(
            "{BLOBS_DIR} holds {count} files ({bytes} bytes), the manifest says {} ({} bytes)",
            manifest.blobs.count, manifest.blobs.bytes
        ))
        .into());
    }
    Ok(())
}

fn apply(
    conn: &Connection,
    blobs: &BlobStore,
    archive: &Path,
    manifest: &Manifest,
    mode: Mode,
    show_progress: bool,
) -> StoreResult<ImportReport> {
    let mut importer = Importer::new(Db::Sqlite(conn), Some(blobs), archive, manifest, mode, show_progress)?;
    let outcome = purge::in_transaction(conn, |_| importer.run(manifest));
    if outcome.is_err() {
        for digest in &importer.created {
            let _ = blobs.erase_unpinned(digest);
        }
    }
    outcome
}

struct Importer<'a> {
    db: Db<'a>,
    /// The CAS of the embedded store; `None` on PostgreSQL, where blobs are rows written in
    /// the import's transaction.
    blobs: Option<&'a BlobStore>,
    archive: PathBuf,
    next_seq: i64,
    last_event_seq: i64,
    collisions: Vec<String>,
    collision_count: usize,
    /// CAS objects this import created, erased again if it fails.
    created: Vec<Digest>,
    report: ImportReport,
    progress: Progress,
}

/// What to do with a record whose id may already exist.
enum Presence {
    New,
    Same,
    Different,
}

fn presence<T: PartialEq>(existing: Option<T>, record: &T) -> Presence {
    match existing {
        None => Presence::New,
        Some(existing) if existing == *record => Presence::Same,
        Some(_) => Presence::Different,
    }
}

impl<'a> Importer<'a> {
    /// An importer into the store behind `db`, after checking that `mode` accepts it.
    fn new(
        db: Db<'a>,
        blobs: Option<&'a BlobStore>,
        archive: &Path,
        manifest: &Manifest,
        mode: Mode,
        show_progress: bool,
    ) -> StoreResult<Importer<'a>> {
        let target_last = last_commit_seq(db)?;
        if mode == Mode::IntoEmpty {
            let held: i64 = db.query_one(
                "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM artifacts) + (SELECT count(*) FROM claims)
                      + (SELECT count(*) FROM relations) + (SELECT count(*) FROM idempotency) + (SELECT count(*) FROM purges)",
                &[],
                |r| r.get(0),
            )?;
            if held > 0 || target_last > 0 {
                return Err(ArchiveError::TargetNotEmpty(format!(
                    "it holds {held} records at commit_seq {target_last}"
                ))
                .into());
            }
        }
        let total: u64 = manifest.files.iter().map(|entry| entry.records).sum();
        Ok(Importer {
            db,
            blobs,
            archive: archive.to_path_buf(),
            next_seq: target_last,
            last_event_seq: 0,
            collisions: Vec::new(),
            collision_count: 0,
            created: Vec::new(),
            report: ImportReport {
                format_version: manifest.format_version,
                source_last_commit_seq: manifest.source_last_commit_seq,
                ..ImportReport::default()
            },
            progress: if show_progress {
                Progress::new("import: records", total)
            } else {
                Progress::hidden("import: records", total)
            },
        })
    }

    fn run(&mut self, manifest: &Manifest) -> StoreResult<ImportReport> {
        // Archive `commit_seq` → store `commit_seq`, one row per event, in a temporary
        // table so memory stays bounded whatever the archive's size. `events.event_id` has no
        // index (the write path never looks it up), so the store's event ids are copied into
        // an indexed temporary table once instead of scanning `events` per archive event.
        self.db.batch(self.db.pick(
            "CREATE TEMP TABLE IF NOT EXISTS import_seq (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
             DELETE FROM temp.import_seq;
             CREATE TEMP TABLE IF NOT EXISTS import_events (event_id TEXT PRIMARY KEY, commit_seq INTEGER NOT NULL) WITHOUT ROWID;
             DELETE FROM temp.import_events;
             INSERT INTO temp.import_events SELECT event_id, commit_seq FROM main.events;",
            pg::TEMP_TABLES,
        ))?;
        for (index, file) in RECORD_FILES.iter().enumerate() {
            let entry = manifest
                .file(file)
                .ok_or_else(|| ArchiveError::Malformed(format!("{} is not listed", file.name)))?;
            self.file(index, file, entry)?;
        }
        if self.collision_count > 0 {
            return Err(ArchiveError::Collision {
                count: self.collision_count,
                first: std::mem::take(&mut self.collisions),
            }
            .into());
        }
        self.db.execute(
            "UPDATE commit_state SET commit_seq = ?1 WHERE id = 1",
            &[&self.next_seq],
        )?;
        let report = match (self.db, self.blobs) {
            (Db::Sqlite(conn), Some(blobs)) => {
                reindex::rebuild_in_transaction(conn, blobs)?;
                verify::verify(conn, blobs.root())?
            }
            (Db::Postgres(conn), None) => {
                pg::index_new_revisions(conn)?;
                verify::pg::verify(conn)?
            }
            _ => {
                return Err(StoreError::Internal(
                    "an import's blob store does not match its database".to_owned(),
                ));
            }
        };
        if !report.is_ok() {
            return Err(ArchiveError::Malformed(format!(
                "the imported store would not verify: {}",
                crate::store::verify::summarize(&report)
            ))
            .into());
        }
        self.report.last_commit_seq = self.next_seq;
        self.db.batch(self.db.pick(
            "DROP TABLE temp.import_seq; DROP TABLE temp.import_events;",
            "DROP TABLE pg_temp.import_seq; DROP TABLE pg_temp.import_events;",
        ))?;
        Ok(self.report.clone())
    }

    /// Streams one record file, applying each record; checks its digest, size and count.
    fn file(&mut self, index: usize, file: &RecordFile, entry: &FileEntry) -> StoreResult<()> {
        let path = self.archive.join(file.name);
        let mut reader = BufReader::with_capacity(256 * 1024, File::open(&path)?);
        let mut hasher = blake3::Hasher::new();
        let (mut records, mut bytes) = (0u64, 0u64);
        let mut line = Vec::new();
        let mut failure: Option<StoreError> = None;
        loop {
            line.clear();
            let n = (&mut reader).take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            hasher.update(&line);
            bytes += n as u64;
            records += 1;
            if line.last() != Some(&b'\n') {
                let error = if n as u64 > MAX_LINE_BYTES {
                    ArchiveError::Malformed(format!(
                        "{} line {records} is longer than {MAX_LINE_BYTES} bytes",
                        file.name
                    ))
                } else {
                    ArchiveError::Damaged(format!("{} ends inside a record (truncated)", file.name))
                };
                failure.get_or_insert(error.into());
                // Hash the rest so a tampered file reports as damaged, not malformed.
                let mut rest = Vec::new();
                reader.read_to_end(&mut rest)?;
                hasher.update(&rest);
                bytes += rest.len() as u64;
                break;
            }
            if failure.is_none()
                && let Err(error) = self.record(index, file, &line[..n - 1], records)
            {
                failure = Some(error);
            }
            self.progress.inc(1);
        }
        let digest = hasher.finalize().to_hex().to_string();
        if records != entry.records || bytes != entry.bytes || digest != entry.blake3 {
            return Err(ArchiveError::Damaged(format!(
                "{} does not match the manifest: {records} records, {bytes} bytes, BLAKE3 {digest}; expected {} records, {} bytes, BLAKE3 {}",
                file.name, entry.records, entry.bytes, entry.blake3
            ))
            .into());
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn record(&mut self, index: usize, file: &RecordFile, line: &[u8], number: u64) -> StoreResult<()> {
        let outcome = match file.record_type {
            "event" => self.event(parse(file, line, number)?),
            "artifact" => self.artifact(parse(file, line, number)?),
            "artifact_revision" => self.artifact_revision(parse(file, line, number)?),
            "claim" => self.claim(parse(file, line, number)?),
            "claim_revision" => self.claim_revision(parse(file, line, number)?),
            "relation" => self.relation(parse(file, line, number)?),
            "conflict_case" => self.conflict_case(parse(file, line, number)?),
            "conflict_event" => self.conflict_event(parse(file, line, number)?),
            "replay" => self.replay(parse(file, line, number)?),
            _ => self.tombstone(parse(file, line, number)?),
        }
        .map_err(|error| match error {
            StoreError::Sqlite(e) => ArchiveError::Malformed(format!("{} line {number}: {e}", file.name)).into(),
            StoreError::Postgres(e) if pg::is_record_error(&e) => {
                ArchiveError::Malformed(format!("{} line {number}: {e}", file.name)).into()
            }
            other => other,
        })?;
        match outcome {
            Presence::New => self.report.imported[index] += 1,
            Presence::Same => self.report.unchanged[index] += 1,
            Presence::Different => {
                self.collision_count += 1;
                if self.collisions.len() < LISTED_COLLISIONS {
                    self.collisions
                        .push(format!("{} line {number} ({})", file.name, record_id(line)));
                }
            }
        }
        Ok(())
    }

    /// The store's `commit_seq` for an archive `commit_seq`.
    fn seq(&self, old: i64, what: &str) -> StoreResult<i64> {
        self.db
            .query_opt("SELECT new FROM import_seq WHERE old = ?1", &[&old], |r| r.get(0))?
            .ok_or_else(|| {
                ArchiveError::Malformed(format!(
                    "{what} names commit_seq {old}, which no event in the archive has"
                ))
                .into()
            })
    }

    fn map_seq(&self, old: i64, new: i64) -> StoreResult<()> {
        self.db
            .execute("INSERT INTO import_seq (old, new) VALUES (?1, ?2)", &[&old, &new])?;
        Ok(())
    }
}

fn parse<T: DeserializeOwned>(file: &RecordFile, line: &[u8], number: u64) -> StoreResult<T> {
    serde_json::from_slice(line)
        .map_err(|e| ArchiveError::Malformed(format!("{} line {number}: {e}", file.name)).into())
}

/// The identifying field of a record line, to name it in a collision.
fn record_id(line: &[u8]) -> String {
    const KEYS: [&str; 8] = [
        "revision_id",
        "event_id",
        "case_id",
        "relation_id",
        "claim_id",
        "artifact_id",
        "entity_id",
        "scoped_key",
    ];
    let value = serde_json::from_slice::<Value>(line).unwrap_or(Value::Null);
    KEYS.iter()
        .find_map(|key| value.get(key).and_then(Value::as_str).map(|id| format!("{key} {id}")))
        .unwrap_or_else(|| "?".to_owned())
}
