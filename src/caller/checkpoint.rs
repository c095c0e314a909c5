//! Pending checkpoints: one private, last-write-wins note per session, kept in
//! `<data>/pending-checkpoints/` and reviewed with `memoree pending`.
//!
//! **Invariant:** checkpoints live outside SQLite, the blob store, the search index and every
//! read operation. Nothing but the `checkpoint` and `pending` commands reads them, and
//! `pending drop` is the only deletion; the 14-day window only hides old notes from `list`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::CallerError;
use super::remember::{RememberOptions, RememberSource, SourceCapture};
pub use super::secrets::SensitiveFlag;
use crate::protocol::Warning;
use crate::protocol::limits::MAX_CONTEXT_ID_BYTES;
use crate::protocol::local::{
    CheckpointSummary, CheckpointWriteResult, PendingDropResult, PendingListResult, PendingShowResult,
};

pub use crate::paths::PENDING_DIR;
/// The largest accepted checkpoint input.
pub const MAX_CHECKPOINT_INPUT_BYTES: usize = 64 * 1024;
/// The largest stored checkpoint text, marker included.
pub const MAX_CHECKPOINT_STORED_BYTES: usize = 4096;
/// Appended to truncated text: newline, U+2026, space, bracketed phrase (27 bytes).
pub const TRUNCATION_MARKER: &str = "\n\u{2026} [checkpoint truncated]";
/// How long a checkpoint shows in `pending list` without `--all`.
pub const REVIEW_WINDOW_DAYS: i64 = 14;
/// The warning code for a checkpoint whose text looks like it holds a credential.
pub const SENSITIVE_WARNING_CODE: &str = "CHECKPOINT_SENSITIVE_CONTENT";
/// The artifact kind `pending apply` stores a checkpoint as.
pub const CHECKPOINT_KIND: &str = "agent_checkpoint";

const SCHEMA_VERSION: u32 = 1;
const LOCK_FILE: &str = ".lock";

/// One checkpoint file, exactly as stored (field order is the file's key order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointRecord {
    pub schema_version: u32,
    pub checkpoint_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub text: String,
    pub original_bytes: usize,
    pub stored_bytes: usize,
    pub truncated: bool,
    pub sensitive_flags: Vec<SensitiveFlag>,
    /// RFC 3339 UTC with `Z`.
    pub created_at: String,
    pub updated_at: String,
}

/// `"cp_"` plus the first 26 hex digits of BLAKE3(session id): one slot per session.
pub fn checkpoint_id(session_id: &str) -> String {
    format!("cp_{}", &blake3::hash(session_id.as_bytes()).to_hex()[..26])
}

/// Reads checkpoint text the way `memoree checkpoint` takes it: `-` reads stdin (at most one
/// byte past the limit), anything else is the arguments joined with spaces.
pub fn read_checkpoint_text(args: &[String], stdin: impl Read) -> Result<String, CallerError> {
    let bytes = match args {
        [] => {
            return Err(CallerError::InvalidRequest(
                "provide checkpoint text, or `-` for stdin".to_owned(),
            ));
        }
        [dash] if dash == "-" => {
            let mut bytes = Vec::new();
            stdin
                .take(MAX_CHECKPOINT_INPUT_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| CallerError::io("reading stdin", e))?;
            bytes
        }
        words => words.join(" ").into_bytes(),
    };
    String::from_utf8(bytes).map_err(|_| CallerError::InvalidRequest("checkpoint text must be UTF-8".to_owned()))
}

/// Keeps the stored text within [`MAX_CHECKPOINT_STORED_BYTES`], marking any cut.
fn cap_text(text: &str) -> (String, bool) {
    if text.len() <= MAX_CHECKPOINT_STORED_BYTES {
        return (text.to_owned(), false);
    }
    let cut = text.floor_char_boundary(MAX_CHECKPOINT_STORED_BYTES - TRUNCATION_MARKER.len());
    (format!("{}{TRUNCATION_MARKER}", &text[..cut]), true)
}

fn check_id(name: &str, value: &str) -> Result<(), CallerError> {
    if value.trim().is_empty() {
        return Err(CallerError::InvalidRequest(format!("{name} must not be empty")));
    }
    if value.len() > MAX_CONTEXT_ID_BYTES {
        return Err(CallerError::InvalidRequest(format!(
            "{name} must not exceed {MAX_CONTEXT_ID_BYTES} bytes"
        )));
    }
    Ok(())
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

impl CheckpointRecord {
    fn parsed(&self, field: &str, value: &str) -> Result<DateTime<Utc>, String> {
        DateTime::parse_from_rfc3339(value)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| format!("{field} is not an RFC 3339 timestamp: {e}"))
    }

    fn updated(&self) -> DateTime<Utc> {
        self.parsed("updated_at", &self.updated_at)
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// When the review window closes.
    pub fn expires_at(&self) -> DateTime<Utc> {
        self.updated() + TimeDelta::days(REVIEW_WINDOW_DAYS)
    }

    /// The list/write summary at `now`: everything but `text` and `schema_version`, plus
    /// `expires_at` and `expired`.
    pub fn summary(&self, now: DateTime<Utc>) -> CheckpointSummary {
        CheckpointSummary {
            checkpoint_id: self.checkpoint_id.clone(),
            session_id: self.session_id.clone(),
            task: self.task.clone(),
            original_bytes: self.original_bytes,
            stored_bytes: self.stored_bytes,
            truncated: self.truncated,
            sensitive_flags: self.sensitive_flags.iter().map(|f| f.as_str().into()).collect(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            expires_at: timestamp(self.expires_at()),
            expired: now >= self.expires_at(),
        }
    }

    /// The full record, for `pending show`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a checkpoint record always serializes")
    }

    /// The envelope warning for a flagged checkpoint.
    pub fn sensitive_warning(&self) -> Option<Warning> {
        if self.sensitive_flags.is_empty() {
            return None;
        }
        let flags: Vec<&str> = self.sensitive_flags.iter().map(|f| f.as_str()).collect();
        Some(Warning {
            code: SENSITIVE_WARNING_CODE.to_owned(),
            message: format!(
                "checkpoint text matches credential patterns ({}); `pending preview` and `pending apply` \
                 refuse it unless --allow-flagged is given; consider `pending drop` and a checkpoint \
                 without the secret",
                flags.join(", ")
            ),
        })
    }

    /// The remember input for `pending preview`/`apply`: the stored text as one inline
    /// note, titled after the checkpoint. Flagged checkpoints need `allow_flagged`.
    pub fn remember_input(
        &self,
        allow_flagged: bool,
        idempotency_key: Option<String>,
    ) -> Result<(RememberSource, RememberOptions), CallerError> {
        if !allow_flagged && !self.sensitive_flags.is_empty() {
            let flags: Vec<&str> = self.sensitive_flags.iter().map(|f| f.as_str()).collect();
            return Err(CallerError::InvalidRequest(format!(
                "pending checkpoint {} is flagged as possibly holding credentials ({}); review it \
                 with `pending show` and pass --allow-flagged only if it is safe to store",
                self.checkpoint_id,
                flags.join(", ")
            )));
        }
        let source = RememberSource::from_bytes(self.text.clone().into_bytes(), SourceCapture::Inline, "inline")?;
        let options = RememberOptions {
            title: Some(format!("Checkpoint {} ({})", self.checkpoint_id, self.session_id)),
            kind: Some(CHECKPOINT_KIND.to_owned()),
            idempotency_key,
        };
        Ok((source, options))
    }
}

/// The result of `pending drop`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedCheckpoint {
    pub checkpoint_id: String,
    /// Unknown only when a corrupt file was dropped by id.
    pub session_id: Option<String>,
}

impl DroppedCheckpoint {
    /// `result` of `memoree pending drop`.
    pub fn result(&self) -> PendingDropResult {
        PendingDropResult {
            dropped: true,
            checkpoint_id: self.checkpoint_id.clone(),
            session_id: self.session_id.clone(),
            recoverable: false,
        }
    }
}

/// The pending-checkpoint directory of one data dir.
#[derive(Clone, Debug)]
pub struct CheckpointStore {
    dir: PathBuf,
}

/// An exclusive `flock` on the store's lock file, released when dropped.
struct StoreLock {
    _file: File,
}

impl CheckpointStore {
    /// Opens (creating if needed) `<data_dir>/pending-checkpoints`, making both it and the
    /// data dir private (0700).
    pub fn open(data_dir: &Path) -> Result<CheckpointStore, CallerError> {
        let dir = data_dir.join(PENDING_DIR);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| CallerError::io(format!("creating {}", dir.display()), e))?;
        for path in [data_dir, dir.as_path()] {
            fs::set_permissions(path, fs::Permissions::from_mode(0o700))
                .map_err(|e| CallerError::io(format!("making {} private", path.display()), e))?;
        }
        Ok(CheckpointStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> Result<StoreLock, CallerError> {
        let path = self.dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| CallerError::io(format!("opening {}", path.display()), e))?;
        file.lock()
            .map_err(|e| CallerError::io(format!("locking {}", path.display()), e))?;
        Ok(StoreLock { _file: file })
    }

    fn path_of(&self, checkpoint_id: &str) -> PathBuf {
        self.dir.join(format!("{checkpoint_id}.json"))
    }

    /// Stores `text` as the session's checkpoint, replacing any earlier one but keeping its
    /// `created_at`.
    pub fn write(&self, session_id: &str, task: Option<&str>, text: &str) -> Result<CheckpointRecord, CallerError> {
        self.write_at(session_id, task, text, Utc::now())
    }

    /// [`CheckpointStore::write`] with an explicit clock.
    pub fn write_at(
        &self,
        session_id: &str,
        task: Option<&str>,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<CheckpointRecord, CallerError> {
        check_id("session id", session_id)?;
        if let Some(task) = task {
            check_id("task", task)?;
        }
        if text.len() > MAX_CHECKPOINT_INPUT_BYTES {
            return Err(CallerError::ContentTooLarge(format!(
                "checkpoint text is limited to {MAX_CHECKPOINT_INPUT_BYTES} bytes"
            )));
        }
        if text.trim().is_empty() {
            return Err(CallerError::InvalidRequest(
                "checkpoint text must not be empty".to_owned(),
            ));
        }
        let id = checkpoint_id(session_id);
        let (stored, truncated) = cap_text(text);
        let _lock = self.lock()?;
        let path = self.path_of(&id);
        let created_at = match fs::metadata(&path) {
            Ok(_) => self.read_record(&path)?.created_at,
            Err(_) => timestamp(now),
        };
        let record = CheckpointRecord {
            schema_version: SCHEMA_VERSION,
            checkpoint_id: id,
            session_id: session_id.to_owned(),
            task: task.map(str::to_owned),
            original_bytes: text.len(),
            stored_bytes: stored.len(),
            text: stored,
            truncated,
            sensitive_flags: super::secrets::scan(text),
            created_at,
            updated_at: timestamp(now),
        };
        let bytes = serde_json::to_vec(&record).expect("a checkpoint record always serializes");
        self.write_atomic(&path, &bytes)?;
        Ok(record)
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), CallerError> {
        let temp = self.dir.join(format!(".tmp-{}", ulid::Ulid::new()));
        let io = |what: &str, e| CallerError::io(format!("{what} {}", temp.display()), e);
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(&temp)
            .map_err(|e| io("creating", e))?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(e) = written.and_then(|()| fs::rename(&temp, path)) {
            let _ = fs::remove_file(&temp);
            return Err(io("writing", e));
        }
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| CallerError::io(format!("syncing {}", self.dir.display()), e))
    }

    fn read_record(&self, path: &Path) -> Result<CheckpointRecord, CallerError> {
        let bytes = fs::read(path).map_err(|e| CallerError::io(format!("reading {}", path.display()), e))?;
        let corrupt = |reason: String| CallerError::CorruptCheckpoint {
            path: path.to_owned(),
            reason,
        };
        let record: CheckpointRecord = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if record.schema_version != SCHEMA_VERSION {
            return Err(corrupt(format!("unsupported schema_version {}", record.schema_version)));
        }
        if path.file_stem().and_then(|s| s.to_str()) != Some(record.checkpoint_id.as_str())
            || checkpoint_id(&record.session_id) != record.checkpoint_id
        {
            return Err(corrupt(
                "its checkpoint_id does not match its file name and session".to_owned(),
            ));
        }
        record.parsed("created_at", &record.created_at).map_err(corrupt)?;
        record.parsed("updated_at", &record.updated_at).map_err(corrupt)?;
        Ok(record)
    }

    /// Every checkpoint, newest update first (ties by id), hiding ones past the review
    /// window unless `include_expired`. One unreadable file fails the whole list.
    pub fn list(&self, include_expired: bool) -> Result<Vec<CheckpointRecord>, CallerError> {
        self.list_at(include_expired, Utc::now())
    }

    /// [`CheckpointStore::list`] with an explicit clock.
    pub fn list_at(&self, include_expired: bool, now: DateTime<Utc>) -> Result<Vec<CheckpointRecord>, CallerError> {
        let entries =
            fs::read_dir(&self.dir).map_err(|e| CallerError::io(format!("listing {}", self.dir.display()), e))?;
        let mut records = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| CallerError::io(format!("listing {}", self.dir.display()), e))?
                .path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.starts_with('.') || path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let record = self.read_record(&path)?;
            if include_expired || now < record.expires_at() {
                records.push(record);
            }
        }
        records.sort_by(|a, b| {
            b.updated()
                .cmp(&a.updated())
                .then_with(|| a.checkpoint_id.cmp(&b.checkpoint_id))
        });
        Ok(records)
    }

    /// The checkpoint named by a `cp_…` id or by a session id.
    pub fn show(&self, id_or_session: &str) -> Result<CheckpointRecord, CallerError> {
        let id = resolve_id(id_or_session)?;
        let path = self.path_of(&id);
        if !path.exists() {
            return Err(CallerError::NotFound(format!("pending checkpoint {id_or_session}")));
        }
        self.read_record(&path)
    }

    /// Deletes a checkpoint for good. A corrupt file named by its id is deleted too.
    pub fn drop(&self, id_or_session: &str) -> Result<DroppedCheckpoint, CallerError> {
        let id = resolve_id(id_or_session)?;
        let _lock = self.lock()?;
        let path = self.path_of(&id);
        if !path.exists() {
            return Err(CallerError::NotFound(format!("pending checkpoint {id_or_session}")));
        }
        let session_id = match self.read_record(&path) {
            Ok(record) => Some(record.session_id),
            Err(CallerError::CorruptCheckpoint { .. }) if id_or_session.starts_with("cp_") => None,
            Err(CallerError::CorruptCheckpoint { .. }) => Some(id_or_session.to_owned()),
            Err(other) => return Err(other),
        };
        fs::remove_file(&path).map_err(|e| CallerError::io(format!("removing {}", path.display()), e))?;
        Ok(DroppedCheckpoint {
            checkpoint_id: id,
            session_id,
        })
    }
}

fn resolve_id(id_or_session: &str) -> Result<String, CallerError> {
    if let Some(hex) = id_or_session.strip_prefix("cp_") {
        if hex.len() == 26 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Ok(id_or_session.to_owned());
        }
        return Err(CallerError::NotFound(format!("pending checkpoint {id_or_session}")));
    }
    check_id("session id", id_or_session)?;
    Ok(checkpoint_id(id_or_session))
}

/// `result` of `memoree checkpoint`.
pub fn write_result(record: &CheckpointRecord, now: DateTime<Utc>) -> CheckpointWriteResult {
    CheckpointWriteResult {
        pending: true,
        recallable: false,
        checkpoint: record.summary(now),
    }
}

/// `result` of `memoree pending list`.
pub fn list_result(records: &[CheckpointRecord], include_expired: bool, now: DateTime<Utc>) -> PendingListResult {
    PendingListResult {
        recallable: false,
        include_expired,
        checkpoints: records.iter().map(|r| r.summary(now)).collect(),
    }
}

/// `result` of `memoree pending show`.
pub fn show_result(record: &CheckpointRecord) -> PendingShowResult {
    PendingShowResult {
        recallable: false,
        checkpoint: record.to_json(),
    }
}

#[cfg(test)]
mod tests;
