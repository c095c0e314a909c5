//! `artifact.purge`, `claim.purge` (extensions) and `import` (extension) inputs and outputs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{ArtifactId, ClaimId, ClaimRevisionId, RevisionId};
use super::relation::EntityType;
use super::{AmbientContext, Input, Label, Operation};

/// What every purge acknowledgement says about copies made before it.
pub const EARLIER_COPIES_NOTICE: &str = "Only this store was erased. Backups, exports and other copies made before \
     this purge still contain the erased bytes; delete or re-create them.";

/// [`EARLIER_COPIES_NOTICE`] on a PostgreSQL store, which the purge reaches only through SQL:
/// the tables are rewritten, but not what the server keeps outside them.
pub const EARLIER_COPIES_NOTICE_POSTGRES: &str = "Only this store was erased. Backups, exports and other copies made \
     before this purge still contain the erased bytes; delete or re-create them. On PostgreSQL the purge rewrote \
     the database's tables, but its write-ahead log (segments not yet recycled, and any WAL archive), streaming \
     and logical replicas, base backups and point-in-time-recovery archives, server logs that recorded statement \
     parameters, and the file system's free blocks may still hold them.";

/// `artifact.purge` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPurgeInput {
    pub artifact_id: ArtifactId,
    pub reason: String,
    #[serde(default)]
    pub actor: Option<String>,
}

/// `claim.purge` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimPurgeInput {
    pub claim_id: ClaimId,
    pub reason: String,
    #[serde(default)]
    pub actor: Option<String>,
}

/// One erased revision of a purge acknowledgement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurgedRevisionRecord {
    pub revision_id: RevisionId,
    pub revision_number: i64,
    /// Size of the erased content in bytes.
    pub size_bytes: u64,
    /// BLAKE3 of the erased content, lowercase hex.
    pub blake3: String,
    pub erased_fields: Vec<String>,
}

/// A claim revision that cited the purged artifact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CitingClaim {
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
}

/// `artifact.purge` / `claim.purge` result: the tombstone, what the physical erasure
/// removed, the operation's `commit_seq` and whether this call did the purge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurgeResult {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub state: Label,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub purged_by: AmbientContext,
    pub purged_at: String,
    pub purge_commit_seq: i64,
    pub revisions: Vec<PurgedRevisionRecord>,
    pub citing_claims: Vec<CitingClaim>,
    pub erasure: Value,
    pub erasure_complete: bool,
    pub earlier_copies: Label,
    pub commit_seq: i64,
    pub created: bool,
}

/// `import` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportInput {
    pub source: String,
    pub mode: ImportMode,
}

crate::wire_enum! {
    /// How an archive meets the store.
    pub enum ImportMode {
        /// The target must hold no memory.
        IntoEmpty = "into_empty",
        /// Add what is new to a store that holds memory.
        Merge = "merge",
    }
}

/// `import` result: per record type, how many records were added and how many were
/// already present unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportResult {
    pub source: String,
    pub mode: ImportMode,
    pub format_version: u32,
    pub source_last_commit_seq: i64,
    pub imported: Value,
    pub unchanged: Value,
    pub skipped_replay_records: u64,
    pub blob_bytes_read: u64,
    pub last_commit_seq: i64,
}

impl Input for ArtifactPurgeInput {
    const OP: Operation = Operation::ArtifactPurge;
    type Output = PurgeResult;
}

impl Input for ClaimPurgeInput {
    const OP: Operation = Operation::ClaimPurge;
    type Output = PurgeResult;
}

impl Input for ImportInput {
    const OP: Operation = Operation::Import;
    type Output = ImportResult;
}
