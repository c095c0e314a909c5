//! Results of the commands that answer locally, without a protocol operation: `init`,
//! `daemon status|stop`, `backup restore`, `demo`, `remember`, `checkpoint` and `pending`.
//! They travel in an ordinary response envelope, so they are wire types too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::claim::ClaimType;
use super::{AmbientContext, Label};

/// `memoree init`: the marker written and the context it declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitResult {
    pub marker: String,
    pub context: AmbientContext,
    pub created: bool,
}

/// `memoree daemon status` when nothing answers the endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonStopped {
    pub endpoint: String,
    pub running: bool,
    pub status: Label,
}

/// `memoree daemon stop`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonStopResult {
    pub already_stopped: bool,
    pub endpoint: String,
    pub running: bool,
    pub status: Label,
    /// The pid that was signalled; `None` when nothing was running.
    pub stopped_pid: Option<u32>,
}

/// `memoree backup restore`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestoreResult {
    pub source: String,
    pub data_dir: String,
    pub commit_seq: i64,
    pub artifact_revisions: u64,
    pub claim_revisions: u64,
    pub restored_external_blobs: u64,
}

/// `memoree demo`: every exchange of the session, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DemoResult {
    pub home: String,
    pub home_removed: bool,
    pub steps: Vec<DemoStep>,
}

/// One request of the demo and the envelope it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DemoStep {
    pub request: Value,
    pub response: Value,
}

/// `memoree remember` and `memoree pending preview|apply`: the plan, and once applied the
/// stored artifact and claims as the daemon acknowledged them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RememberResult {
    pub applied: bool,
    pub input_digest: String,
    pub compiler: CompilerInfo,
    pub plan: RememberPlanInfo,
    /// The `artifact.put` result (applied only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Value>,
    /// The `claim.assert` results (applied only; absent when no claim was stored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored_claims: Vec<Value>,
}

/// Which claim compiler produced a remember plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompilerInfo {
    pub mode: Label,
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Label>,
}

/// What a remember plan would store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RememberPlanInfo {
    pub title: String,
    pub kind: String,
    pub media_type: Label,
    pub size_bytes: usize,
    pub claims: Vec<PlannedClaimInfo>,
    pub quality: QualityInfo,
}

/// One claim of a remember plan, with its quotes pinned to byte spans of the note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedClaimInfo {
    pub claim_type: ClaimType,
    pub statement: String,
    pub evidence: Vec<QuotedSpan>,
}

/// A quote and where it sits in the note: `[start_byte, end_byte)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotedSpan {
    pub evidence_quote: String,
    pub start_byte: usize,
    pub end_byte: usize,
}

/// The quality report of a remember plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QualityInfo {
    pub evidence_basis: Label,
    pub source_capture: Label,
    pub requires_review: bool,
    pub findings: Vec<FindingInfo>,
}

/// One quality finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingInfo {
    pub code: Label,
    pub severity: Label,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claim_indexes: Vec<usize>,
}

/// `memoree checkpoint`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointWriteResult {
    pub pending: bool,
    pub recallable: bool,
    pub checkpoint: CheckpointSummary,
}

/// A pending checkpoint without its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    pub checkpoint_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub original_bytes: usize,
    pub stored_bytes: usize,
    pub truncated: bool,
    pub sensitive_flags: Vec<Label>,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: String,
    pub expired: bool,
}

/// `memoree pending list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingListResult {
    pub recallable: bool,
    pub include_expired: bool,
    pub checkpoints: Vec<CheckpointSummary>,
}

/// `memoree pending show`: the stored checkpoint record, text included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingShowResult {
    pub recallable: bool,
    pub checkpoint: Value,
}

/// `memoree pending drop`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDropResult {
    pub dropped: bool,
    pub checkpoint_id: String,
    /// Unknown only when a corrupt file was dropped by id.
    pub session_id: Option<String>,
    pub recoverable: bool,
}

/// `memoree export`: where the archive was written and what it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportResult {
    pub destination: String,
    pub format: String,
    pub format_version: u32,
    pub scope: Value,
    pub source_last_commit_seq: i64,
    /// Records per record type.
    pub records: std::collections::BTreeMap<String, u64>,
    pub blobs: ExportBlobs,
    pub created_at: String,
}

/// The blob files of an export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportBlobs {
    pub count: u64,
    pub bytes: u64,
}

/// `memoree import --data-dir`: the `import` result plus the new data directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalImportResult {
    #[serde(flatten)]
    pub import: super::purge::ImportResult,
    pub data_dir: String,
}

/// `memoree inspect` once it listens: where, as whom, and the context it reads as.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InspectStarted {
    /// The URL with its access token.
    pub url: String,
    pub listen: String,
    pub pid: u32,
    pub context: AmbientContext,
}

/// A malformed or refused source item of `memoree import --from`: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportIssue {
    pub file: String,
    /// The 1-based line the item starts on, when the format has lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub message: String,
}

/// A relation whose target no imported item answers to (reported, never invented).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnresolvedTarget {
    pub file: String,
    pub line: u64,
    pub target: String,
}

/// What an import did to one kind of entity (or, in a dry run, would do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportCounts {
    pub created: u64,
    pub revised: u64,
    pub unchanged: u64,
    pub retracted: u64,
}

/// One of the first items of a dry run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportPreview {
    /// `create`, `revise` or `unchanged`.
    pub action: String,
    pub key: String,
    pub kind: String,
    pub title: String,
    pub bytes: u64,
    pub claims: u64,
}

/// `memoree import --from FORMAT PATH…`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForeignImportResult {
    pub format: String,
    pub dry_run: bool,
    pub sources: Vec<String>,
    pub context: AmbientContext,
    /// Well-formed items read from the sources.
    pub items: u64,
    pub artifacts: ImportCounts,
    pub claims: ImportCounts,
    pub relations: ImportCounts,
    /// Items and relations not imported (malformed, refused, unresolved).
    pub skipped: u64,
    pub issues: Vec<ImportIssue>,
    pub unresolved: Vec<UnresolvedTarget>,
    /// Each source relation type and the kebab-case spelling recorded beside it.
    pub relation_types: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<ImportPreview>,
}

/// `memoree setup HOST`: the host file written (or, with `--print`, only shown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupResult {
    pub host: String,
    pub config_path: String,
    /// `created`, `updated`, `unchanged` or `printed`.
    pub action: String,
    /// The server entry alone, as the file spells it.
    pub snippet: String,
    /// The absolute path of the binary the entry runs.
    pub command: String,
    pub args: Vec<String>,
    /// The project marker `memoree init` wrote, when the project had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitResult>,
    /// The instructions file `--instructions` wrote, and whether it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<SetupInstructions>,
}

/// The instructions block of `memoree setup --instructions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupInstructions {
    pub path: String,
    /// `created`, `updated` or `unchanged`.
    pub action: String,
}
