//! Inputs and outputs of the administrative and discovery operations: `doctor`, `verify`,
//! `backup.create`, `reindex` and `instructions`.

use serde::{Deserialize, Serialize};

use super::meta::empty_input;
use super::{Input, Label, Operation};

empty_input! {
    /// `doctor` input.
    DoctorInput => Doctor, DoctorResult;
    /// `verify` input.
    VerifyInput => Verify, VerifyResult;
    /// `reindex` input.
    ReindexInput => Reindex, ReindexResult;
}

/// `doctor` result: health of the serving process and its store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoctorResult {
    pub status: Label,
    pub running: bool,
    pub daemon_pid: u32,
    pub authoritative_store: Label,
    pub retrieval_mode: Label,
    pub last_commit_seq: i64,
    pub data_dir: String,
    pub schema_version: i64,
    pub database_bytes: u64,
    pub blob_bytes: u64,
    pub blob_count: u64,
    pub disk_free_bytes: Option<u64>,
    pub version: Label,
    /// This build's version, or what the daemon was told to report
    /// (`serve --report-binary-version`); reference v0.7.1's clients compare it.
    #[serde(default)]
    pub binary_version: String,
    /// `memoree` when a client autostarted the daemon, `external` otherwise.
    #[serde(default)]
    pub lifecycle_owner: Label,
    /// Extension: present only while the store cannot be reached (`status` is then
    /// `store_unavailable`, and the sizes and `last_commit_seq` are the last ones read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_outage: Option<StoreOutage>,
    /// Extension: the local semantic model, or why retrieval is lexical only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<crate::protocol::meta::SemanticStatus>,
}

/// `doctor`'s report of a store it cannot reach (a PostgreSQL server that is down, restarting
/// or silent; see DIVERGENCES, *Store outages*).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreOutage {
    /// Always `store_unavailable`, the `details.reason` of failed requests meanwhile.
    pub reason: Label,
    /// What the last attempt to reach the store said.
    pub message: String,
    /// When this front end first found the store unreachable (RFC 3339).
    pub since: String,
    /// How long it has been unreachable, in milliseconds.
    pub duration_ms: u64,
}

/// One structured verification issue (extension of the reference's free-text issues).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifyIssueDetail {
    pub kind: Label,
    pub entity: Option<String>,
    pub detail: String,
}

/// `verify` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifyResult {
    pub ok: bool,
    pub schema_version: i64,
    pub last_commit_seq: i64,
    pub checked_artifact_revisions: u64,
    pub checked_claim_revisions: u64,
    pub checked_external_blobs: u64,
    /// One line per issue: `<kind>: <entity>: <detail>`.
    pub issues: Vec<String>,
    pub warnings: Vec<String>,
    pub issue_details: Vec<VerifyIssueDetail>,
    /// With a semantic model: the stored vectors' coverage of the current revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_vectors: Option<super::meta::VectorCoverage>,
}

/// `backup.create` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupCreateInput {
    pub destination: String,
}

impl Input for BackupCreateInput {
    const OP: Operation = Operation::BackupCreate;
    type Output = BackupResult;
}

/// `backup.create` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackupResult {
    pub destination: String,
    pub database: String,
    pub blobs: String,
    pub commit_seq: i64,
    pub copied_external_blobs: u64,
    pub created_at: String,
}

/// `reindex` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReindexResult {
    pub reindexed_artifact_revisions: u64,
    pub reindexed_claim_revisions: u64,
    pub removed_orphan_rows: u64,
    pub last_commit_seq: i64,
    /// With a semantic model: the current revisions whose vectors were written again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projected_revisions: Option<u64>,
}

crate::wire_enum! {
    /// The renderings of the agent instructions.
    #[derive(Default)]
    pub enum InstructionsFormat {
        #[default]
        Markdown = "markdown",
        Json = "json",
        AgentsMd = "agents-md",
        ClaudeMd = "claude-md",
    }
}

/// `instructions` input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstructionsInput {
    #[serde(default)]
    pub format: InstructionsFormat,
}

impl Input for InstructionsInput {
    const OP: Operation = Operation::Instructions;
    type Output = InstructionsResult;
}

/// `instructions` result: Markdown text, or the structured document for `json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstructionsResult {
    pub format: InstructionsFormat,
    pub content: InstructionsContent,
}

/// The payload of [`InstructionsResult`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InstructionsContent {
    Markdown(String),
    Document(Box<InstructionDocument>),
}

/// The structured instructions (`format: "json"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstructionDocument {
    pub product: Label,
    pub instruction_set_version: u32,
    pub protocol_version: u32,
    pub purpose: Label,
    pub invocation: Invocation,
    pub workflow: Vec<Label>,
    pub rules: Vec<InstructionRule>,
    pub concepts: Vec<InstructionConcept>,
    /// Extension: the request classes and limits, derived from the operation table.
    pub request_essentials: Vec<String>,
}

/// How an agent talks to Memoree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    pub command: Label,
    pub request_stream: Label,
    pub response_stream: Label,
    pub diagnostics_stream: Label,
}

crate::wire_enum! {
    /// The level of a normative rule.
    pub enum RuleLevel {
        Must = "must",
        Should = "should",
    }
}

/// One normative rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstructionRule {
    pub id: Label,
    pub level: RuleLevel,
    pub text: Label,
}

/// One concept an agent needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstructionConcept {
    pub name: Label,
    pub meaning: Label,
}
