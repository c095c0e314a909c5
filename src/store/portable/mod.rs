//! The portable export format (`spec/export-v1.md`): a directory of JSON Lines record files,
//! content-addressed blob files and a manifest with counts and BLAKE3 digests.
//!
//! - [`export`] streams one read snapshot of a store into a new archive directory.
//! - [`import`] replays an archive into an empty store (every id, revision and `commit_seq`
//!   reproduced) or merges it into an existing one (ids preserved, identical records
//!   skipped, colliding ids refused), verifying everything before it commits.
//! - [`records`] holds the record types (a local file format, hence its serde derives) and
//!   the one mapping between them and store rows, used by both directions.
//!
//! **Invariants:** an archive never contains purged content (purged revisions travel as
//! tombstones); the record files are written in one deterministic order, so exporting the
//! same store twice gives byte-identical files and only the manifest's `created_at`
//! differs; an import makes nothing visible before the whole archive has been checked.

pub mod check;
pub mod export;
pub mod fresh;
pub mod import;
pub mod records;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The `format` of every manifest.
pub const FORMAT: &str = "memoree-export";
/// The archive format version this binary writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's file name inside an archive.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The blob directory inside an archive: `blobs/<h0h1>/<hex>` holds the raw bytes whose
/// BLAKE3 digest is `<hex>`.
pub const BLOBS_DIR: &str = "blobs";
/// The longest record line an importer accepts.
pub const MAX_LINE_BYTES: u64 = 32 * 1024 * 1024;

/// One record file of the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordFile {
    pub name: &'static str,
    pub record_type: &'static str,
}

/// Every record file, in the order they are written and imported (referenced records first).
pub const RECORD_FILES: [RecordFile; 10] = [
    RecordFile {
        name: "events.jsonl",
        record_type: "event",
    },
    RecordFile {
        name: "artifacts.jsonl",
        record_type: "artifact",
    },
    RecordFile {
        name: "artifact_revisions.jsonl",
        record_type: "artifact_revision",
    },
    RecordFile {
        name: "claims.jsonl",
        record_type: "claim",
    },
    RecordFile {
        name: "claim_revisions.jsonl",
        record_type: "claim_revision",
    },
    RecordFile {
        name: "relations.jsonl",
        record_type: "relation",
    },
    RecordFile {
        name: "conflict_cases.jsonl",
        record_type: "conflict_case",
    },
    RecordFile {
        name: "conflict_events.jsonl",
        record_type: "conflict_event",
    },
    RecordFile {
        name: "replays.jsonl",
        record_type: "replay",
    },
    RecordFile {
        name: "tombstones.jsonl",
        record_type: "tombstone",
    },
];

/// The manifest: what the archive holds and how to check it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub format_version: u32,
    /// When the archive was written (RFC 3339, UTC): the only field that differs between
    /// two exports of the same store.
    pub created_at: String,
    pub producer: Producer,
    pub scope: Value,
    /// The source store's `commit_seq` at the snapshot.
    pub source_last_commit_seq: i64,
    pub files: Vec<FileEntry>,
    pub blobs: BlobsEntry,
}

/// The program that wrote the archive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Producer {
    pub name: String,
    pub version: String,
    pub store_schema_version: i64,
}

/// One record file: its record count, byte length and BLAKE3 digest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub name: String,
    pub record_type: String,
    pub records: u64,
    pub bytes: u64,
    pub blake3: String,
}

/// The blob files: how many and their total size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobsEntry {
    pub directory: String,
    pub count: u64,
    pub bytes: u64,
}

impl Manifest {
    /// The entry for `file`.
    pub fn file(&self, file: &RecordFile) -> Option<&FileEntry> {
        self.files.iter().find(|entry| entry.name == file.name)
    }
}

pub use crate::store::error::ArchiveError;

/// Which part of a store an export holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything: every entity, relation, conflict case, event, replay record and tombstone.
    All,
    /// The artifacts, claims and relations visible from `ambient` at `horizon` (the same
    /// rule as search), closed under references: relation endpoints and cited artifacts
    /// come along, with the events, conflict cases and replay records of everything exported.
    Visible {
        ambient: super::scope::Owner,
        horizon: crate::protocol::Horizon,
        reason: Option<String>,
    },
}

impl Scope {
    /// The manifest's `scope` value.
    pub fn to_json(&self) -> Value {
        match self {
            Scope::All => json!({"kind": "all"}),
            Scope::Visible {
                ambient,
                horizon,
                reason,
            } => json!({
                "kind": "visible",
                "horizon": horizon,
                "context": records::OwnerRecord::from_owner(ambient),
                "reason": reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
