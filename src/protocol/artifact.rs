//! `artifact.*` inputs and outputs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AmbientContext;

/// The default media type of `artifact.put`.
pub const DEFAULT_MEDIA_TYPE: &str = "text/plain; charset=utf-8";

fn default_media_type() -> String {
    DEFAULT_MEDIA_TYPE.to_owned()
}

pub(crate) fn default_true() -> bool {
    true
}

pub(crate) fn default_history_limit() -> i64 {
    50
}

/// Tagged artifact content: UTF-8 text or base64 (standard alphabet, padded) bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "lowercase", deny_unknown_fields)]
pub enum ArtifactContent {
    Text(String),
    Base64(String),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPutInput {
    pub kind: String,
    pub title: String,
    #[serde(default = "default_media_type")]
    pub media_type: String,
    pub content: ArtifactContent,
    #[serde(default)]
    pub provenance: Map<String, Value>,
    #[serde(default)]
    pub actor: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactGetInput {
    pub artifact_id: String,
    #[serde(default)]
    pub revision_id: Option<String>,
    #[serde(default = "default_true")]
    pub include_content: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactReviseInput {
    pub artifact_id: String,
    pub if_revision: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub media_type: Option<String>,
    pub content: ArtifactContent,
    #[serde(default)]
    pub provenance: Map<String, Value>,
    #[serde(default)]
    pub actor: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactHistoryInput {
    pub artifact_id: String,
    #[serde(default = "default_history_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_revision_number: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactForgetInput {
    pub artifact_id: String,
    pub reason: String,
}

/// One artifact revision with its artifact's current lifecycle.
#[derive(Clone, Debug, Serialize)]
pub struct ArtifactRecord {
    pub artifact_id: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub kind: String,
    pub title: String,
    pub media_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ArtifactContent>,
    pub blob_hash: String,
    pub size_bytes: u64,
    pub status: String,
    pub context: AmbientContext,
    pub provenance: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgotten_reason: Option<String>,
}

/// A mutation acknowledgement: the record's fields plus the operation's `commit_seq` and
/// whether this call created it (`false` on replay).
#[derive(Clone, Debug, Serialize)]
pub struct MutationResult<T> {
    #[serde(flatten)]
    pub record: T,
    pub commit_seq: i64,
    pub created: bool,
}

/// A page of revisions, newest first.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPage<T> {
    pub revisions: Vec<T>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_revision_number: Option<i64>,
}
