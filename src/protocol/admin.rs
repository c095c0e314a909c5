//! Inputs and outputs of the administrative and discovery operations: `doctor`, `verify`,
//! `backup.create`, `reindex` and `instructions`.

use serde::{Deserialize, Serialize};

/// `doctor` result: health of the serving process and its store.
#[derive(Clone, Debug, Serialize)]
pub struct DoctorResult {
    pub status: &'static str,
    pub running: bool,
    pub daemon_pid: u32,
    pub authoritative_store: &'static str,
    pub retrieval_mode: &'static str,
    pub last_commit_seq: i64,
    pub data_dir: String,
    pub schema_version: i64,
    pub database_bytes: u64,
    pub blob_bytes: u64,
    pub blob_count: u64,
    pub disk_free_bytes: Option<u64>,
    pub version: &'static str,
}

/// One structured verification issue (extension of the reference's free-text issues).
#[derive(Clone, Debug, Serialize)]
pub struct VerifyIssueDetail {
    pub kind: &'static str,
    pub entity: Option<String>,
    pub detail: String,
}

/// `verify` result.
#[derive(Clone, Debug, Serialize)]
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
}

/// `backup.create` input.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupCreateInput {
    pub destination: String,
}

/// `backup.create` result.
#[derive(Clone, Debug, Serialize)]
pub struct BackupResult {
    pub destination: String,
    pub database: String,
    pub blobs: String,
    pub commit_seq: i64,
    pub copied_external_blobs: u64,
    pub created_at: String,
}

/// `reindex` result.
#[derive(Clone, Debug, Serialize)]
pub struct ReindexResult {
    pub reindexed_artifact_revisions: u64,
    pub reindexed_claim_revisions: u64,
    pub removed_orphan_rows: u64,
    pub last_commit_seq: i64,
}

/// The renderings of the agent instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstructionsFormat {
    #[default]
    Markdown,
    Json,
    AgentsMd,
    ClaudeMd,
}

/// `instructions` input.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstructionsInput {
    #[serde(default)]
    pub format: InstructionsFormat,
}

/// `instructions` result: Markdown text, or the structured document for `json`.
#[derive(Clone, Debug, Serialize)]
pub struct InstructionsResult {
    pub format: InstructionsFormat,
    pub content: InstructionsContent,
}

/// The payload of [`InstructionsResult`].
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum InstructionsContent {
    Markdown(String),
    Document(Box<InstructionDocument>),
}

/// The structured instructions (`format: "json"`).
#[derive(Clone, Debug, Serialize)]
pub struct InstructionDocument {
    pub product: &'static str,
    pub instruction_set_version: u32,
    pub protocol_version: u32,
    pub purpose: &'static str,
    pub invocation: Invocation,
    pub workflow: Vec<&'static str>,
    pub rules: Vec<InstructionRule>,
    pub concepts: Vec<InstructionConcept>,
    /// Extension: the request classes and limits, derived from the operation table.
    pub request_essentials: Vec<String>,
}

/// How an agent talks to Memoree.
#[derive(Clone, Debug, Serialize)]
pub struct Invocation {
    pub command: &'static str,
    pub request_stream: &'static str,
    pub response_stream: &'static str,
    pub diagnostics_stream: &'static str,
}

/// The level of a normative rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleLevel {
    Must,
    Should,
}

/// One normative rule.
#[derive(Clone, Debug, Serialize)]
pub struct InstructionRule {
    pub id: &'static str,
    pub level: RuleLevel,
    pub text: &'static str,
}

/// One concept an agent needs.
#[derive(Clone, Debug, Serialize)]
pub struct InstructionConcept {
    pub name: &'static str,
    pub meaning: &'static str,
}
