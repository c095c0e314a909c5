//! `artifact.list`, `claim.list` and `event.list`: read-only browsing extensions (not v1
//! operations; advertised in `capabilities.extensions`).
//!
//! Each lists what a horizon can see, newest first by commit sequence, in bounded pages with
//! an exclusive `before_commit_seq` cursor, like `relation.list`. `artifact.list` and
//! `claim.list` also report `total`, the number of matches of the filters over all pages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::artifact::ArtifactRecord;
use super::claim::{ClaimRecord, ClaimType};
use super::{AmbientContext, Horizon};

fn default_browse_limit() -> i64 {
    50
}

/// An artifact's lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactStatus {
    Active,
    Forgotten,
}

impl ArtifactStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactStatus::Active => "active",
            ArtifactStatus::Forgotten => "forgotten",
        }
    }
}

/// A claim's presented status (`conflicted` is derived from open conflict cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    Active,
    Conflicted,
    Superseded,
    Retracted,
}

impl ClaimStatus {
    pub const ALL: [ClaimStatus; 4] = [
        ClaimStatus::Active,
        ClaimStatus::Conflicted,
        ClaimStatus::Superseded,
        ClaimStatus::Retracted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Active => "active",
            ClaimStatus::Conflicted => "conflicted",
            ClaimStatus::Superseded => "superseded",
            ClaimStatus::Retracted => "retracted",
        }
    }
}

/// A claim's validity window at the evaluation instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemporalState {
    Current,
    Future,
    Expired,
}

impl TemporalState {
    pub const ALL: [TemporalState; 3] = [TemporalState::Current, TemporalState::Future, TemporalState::Expired];

    pub fn as_str(self) -> &'static str {
        match self {
            TemporalState::Current => "current",
            TemporalState::Future => "future",
            TemporalState::Expired => "expired",
        }
    }
}

/// Which claim revisions `claim.list` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionSelection {
    /// One item per claim: its current revision.
    #[default]
    Current,
    /// Every matching revision, current or not.
    All,
}

/// The kinds of entity an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventEntityType {
    Artifact,
    Claim,
    Relation,
}

impl EventEntityType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventEntityType::Artifact => "artifact",
            EventEntityType::Claim => "claim",
            EventEntityType::Relation => "relation",
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactListInput {
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub status: Option<ArtifactStatus>,
    #[serde(default = "default_browse_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_commit_seq: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimListInput {
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub claim_type: Option<ClaimType>,
    #[serde(default)]
    pub status: Option<ClaimStatus>,
    #[serde(default)]
    pub temporal_state: Option<TemporalState>,
    #[serde(default)]
    pub cites_artifact_id: Option<String>,
    #[serde(default)]
    pub cites_revision_id: Option<String>,
    #[serde(default)]
    pub revisions: RevisionSelection,
    #[serde(default = "default_browse_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_commit_seq: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventListInput {
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub entity_type: Option<EventEntityType>,
    #[serde(default)]
    pub entity_id: Option<String>,
    #[serde(default = "default_browse_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_commit_seq: Option<i64>,
}

/// `artifact.list` result: current revisions without content.
#[derive(Clone, Debug, Serialize)]
pub struct ArtifactListResult {
    pub horizon: Horizon,
    pub artifacts: Vec<ArtifactRecord>,
    pub total: u64,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One listed claim revision with its currentness.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimListItem {
    #[serde(flatten)]
    pub record: ClaimRecord,
    pub temporal_state: TemporalState,
    pub is_current_revision: bool,
}

/// `claim.list` result.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimListResult {
    pub horizon: Horizon,
    pub evaluated_at: String,
    pub claims: Vec<ClaimListItem>,
    pub total: u64,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One immutable event: a logical mutation and its commit sequence.
#[derive(Clone, Debug, Serialize)]
pub struct EventRecord {
    pub commit_seq: i64,
    pub event_id: String,
    pub event_type: String,
    pub entity_type: String,
    pub entity_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    /// What the entity rows do not already record; untrusted reference data.
    pub payload: Value,
    pub context: AmbientContext,
}

/// `event.list` result.
#[derive(Clone, Debug, Serialize)]
pub struct EventListResult {
    pub horizon: Horizon,
    pub events: Vec<EventRecord>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}
