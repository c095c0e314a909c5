//! `artifact.*` inputs and outputs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ids::{ArtifactId, ArtifactRevisionId};
use super::{AmbientContext, Input, Operation};

/// The default media type of `artifact.put`.
pub const DEFAULT_MEDIA_TYPE: &str = "text/plain; charset=utf-8";

fn default_media_type() -> String {
    DEFAULT_MEDIA_TYPE.to_owned()
}

pub(crate) fn default_true() -> bool {
    true
}

pub(crate) fn is_true(value: &bool) -> bool {
    *value
}

pub(crate) fn default_history_limit() -> i64 {
    50
}

crate::wire_enum! {
    /// An artifact's lifecycle.
    pub enum ArtifactStatus {
        Active = "active",
        /// Tombstoned by `artifact.forget`; still readable by exact get.
        Forgotten = "forgotten",
    }
}

/// Tagged artifact content: UTF-8 text or base64 (standard alphabet, padded) bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "lowercase", deny_unknown_fields)]
pub enum ArtifactContent {
    Text(String),
    Base64(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPutInput {
    pub kind: String,
    pub title: String,
    #[serde(default = "default_media_type")]
    pub media_type: String,
    pub content: ArtifactContent,
    #[serde(default)]
    pub provenance: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

impl Input for ArtifactPutInput {
    const OP: Operation = Operation::ArtifactPut;
    type Output = MutationResult<ArtifactRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactGetInput {
    pub artifact_id: ArtifactId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<ArtifactRevisionId>,
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub include_content: bool,
}

impl ArtifactGetInput {
    /// The current revision, with content.
    pub fn current(artifact_id: impl Into<ArtifactId>) -> ArtifactGetInput {
        ArtifactGetInput {
            artifact_id: artifact_id.into(),
            revision_id: None,
            include_content: true,
        }
    }
}

impl Input for ArtifactGetInput {
    const OP: Operation = Operation::ArtifactGet;
    type Output = ArtifactRecord;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactReviseInput {
    pub artifact_id: ArtifactId,
    pub if_revision: ArtifactRevisionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub content: ArtifactContent,
    #[serde(default)]
    pub provenance: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

impl Input for ArtifactReviseInput {
    const OP: Operation = Operation::ArtifactRevise;
    type Output = MutationResult<ArtifactRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactHistoryInput {
    pub artifact_id: ArtifactId,
    #[serde(default = "default_history_limit")]
    pub limit: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_revision_number: Option<i64>,
}

impl Input for ArtifactHistoryInput {
    const OP: Operation = Operation::ArtifactHistory;
    type Output = HistoryPage<ArtifactRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactForgetInput {
    pub artifact_id: ArtifactId,
    pub reason: String,
}

impl Input for ArtifactForgetInput {
    const OP: Operation = Operation::ArtifactForget;
    type Output = MutationResult<ArtifactRecord>;
}

/// One artifact revision with its artifact's current lifecycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    pub revision_number: i64,
    pub kind: String,
    pub title: String,
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ArtifactContent>,
    pub blob_hash: String,
    pub size_bytes: u64,
    pub status: ArtifactStatus,
    pub context: AmbientContext,
    pub provenance: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forgotten_reason: Option<String>,
}

/// A mutation acknowledgement: the record's fields plus the operation's `commit_seq` and
/// whether this call created it (`false` on replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MutationResult<T> {
    #[serde(flatten)]
    pub record: T,
    pub commit_seq: i64,
    pub created: bool,
}

/// A page of revisions, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage<T> {
    pub revisions: Vec<T>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_revision_number: Option<i64>,
}
