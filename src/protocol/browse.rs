//! `artifact.list`, `claim.list` and `event.list`: read-only browsing extensions (not v1
//! operations; advertised in `capabilities.extensions`).
//!
//! Each lists what a horizon can see, newest first by commit sequence, in bounded pages with
//! an exclusive `before_commit_seq` cursor, like `relation.list`. `artifact.list` and
//! `claim.list` also report `total`, the number of matches of the filters over all pages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::artifact::ArtifactRecord;
pub use super::artifact::ArtifactStatus;
pub use super::claim::ClaimStatus;
use super::claim::{ClaimRecord, ClaimType};
use super::ids::{ArtifactId, ArtifactRevisionId, EventId, RevisionId};
use super::relation::horizon_input;
use super::{AmbientContext, Horizon, Input, Operation};

fn default_browse_limit() -> i64 {
    50
}

crate::wire_enum! {
    /// A claim's validity window at the evaluation instant.
    pub enum TemporalState {
        Current = "current",
        Future = "future",
        Expired = "expired",
    }
}

crate::wire_enum! {
    /// Which claim revisions `claim.list` returns: one item per claim (its current
    /// revision, the default), or every matching revision, current or not.
    #[derive(Default)]
    pub enum RevisionSelection {
        #[default]
        Current = "current",
        All = "all",
    }
}

crate::wire_enum! {
    /// The kinds of entity an event is about.
    pub enum EventEntityType {
        Artifact = "artifact",
        Claim = "claim",
        Relation = "relation",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    pub cites_artifact_id: Option<ArtifactId>,
    #[serde(default)]
    pub cites_revision_id: Option<ArtifactRevisionId>,
    #[serde(default)]
    pub revisions: RevisionSelection,
    #[serde(default = "default_browse_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_commit_seq: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArtifactListResult {
    pub horizon: Horizon,
    pub artifacts: Vec<ArtifactRecord>,
    pub total: u64,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One listed claim revision with its currentness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimListItem {
    #[serde(flatten)]
    pub record: ClaimRecord,
    pub temporal_state: TemporalState,
    pub is_current_revision: bool,
}

/// `claim.list` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimListResult {
    pub horizon: Horizon,
    pub evaluated_at: String,
    pub claims: Vec<ClaimListItem>,
    pub total: u64,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One immutable event: a logical mutation and its commit sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub commit_seq: i64,
    pub event_id: EventId,
    pub event_type: String,
    pub entity_type: EventEntityType,
    pub entity_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<RevisionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    /// What the entity rows do not already record; untrusted reference data.
    pub payload: Value,
    pub context: AmbientContext,
}

/// `event.list` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventListResult {
    pub horizon: Horizon,
    pub events: Vec<EventRecord>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

horizon_input!(ArtifactListInput, ClaimListInput, EventListInput);

impl Input for ArtifactListInput {
    const OP: Operation = Operation::ArtifactList;
    type Output = ArtifactListResult;
}

impl Input for ClaimListInput {
    const OP: Operation = Operation::ClaimList;
    type Output = ClaimListResult;
}

impl Input for EventListInput {
    const OP: Operation = Operation::EventList;
    type Output = EventListResult;
}
