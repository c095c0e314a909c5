//! `relation.put`, `relation.list` and `conflict.list` inputs and outputs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::artifact::{ArtifactStatus, MutationResult};
use super::claim::{ClaimRecord, ClaimStatus};
use super::ids::{CaseId, ClaimId, RelationId};
use super::{AmbientContext, Horizon, Input, Operation};

crate::wire_enum! {
    /// The kinds of entity a relation may connect.
    pub enum EntityType {
        Artifact = "artifact",
        Claim = "claim",
    }
}

crate::wire_enum! {
    /// The presented status of an entity of either kind, where the wire does not say which
    /// (search hits, manifest items, recall artifact references).
    pub enum EntityStatus {
        Active = "active",
        Forgotten = "forgotten",
        Superseded = "superseded",
        Retracted = "retracted",
        Conflicted = "conflicted",
    }
}

impl From<ArtifactStatus> for EntityStatus {
    fn from(status: ArtifactStatus) -> EntityStatus {
        match status {
            ArtifactStatus::Active => EntityStatus::Active,
            ArtifactStatus::Forgotten => EntityStatus::Forgotten,
        }
    }
}

impl From<ClaimStatus> for EntityStatus {
    fn from(status: ClaimStatus) -> EntityStatus {
        match status {
            ClaimStatus::Active => EntityStatus::Active,
            ClaimStatus::Superseded => EntityStatus::Superseded,
            ClaimStatus::Retracted => EntityStatus::Retracted,
            ClaimStatus::Conflicted => EntityStatus::Conflicted,
        }
    }
}

crate::wire_enum! {
    /// The six typed edges.
    pub enum RelationType {
        DerivedFrom = "derived_from",
        Supports = "supports",
        Contradicts = "contradicts",
        /// Source is the new/current entity, target the older one it replaces.
        Supersedes = "supersedes",
        References = "references",
        Duplicates = "duplicates",
    }
}

impl RelationType {
    /// Relations with lifecycle effects; both endpoints must be non-terminal claims.
    pub fn is_claim_lifecycle(self) -> bool {
        matches!(self, RelationType::Contradicts | RelationType::Supersedes)
    }
}

crate::wire_enum! {
    /// Which edges of an anchor `relation.list` returns.
    #[derive(Default)]
    pub enum RelationDirection {
        /// Edges whose target is the anchor.
        Incoming = "incoming",
        /// Edges whose source is the anchor.
        Outgoing = "outgoing",
        #[default]
        Both = "both",
    }
}

crate::wire_enum! {
    /// The state of a conflict case: `open` (actionable), `stale` (a side was revised) or
    /// `resolved` (a side was retracted or superseded; never listed).
    pub enum ConflictState {
        Open = "open",
        Stale = "stale",
        Resolved = "resolved",
    }
}

fn default_list_limit() -> i64 {
    100
}

/// The shared fields of a horizon operation's input: how far to look, and why.
pub trait HorizonInput {
    fn horizon(&self) -> Horizon;
    fn reason(&self) -> Option<&str>;
}

macro_rules! horizon_input {
    ($($name:ty),+) => {
        $(impl $crate::protocol::relation::HorizonInput for $name {
            fn horizon(&self) -> Horizon {
                self.horizon
            }

            fn reason(&self) -> Option<&str> {
                self.reason.as_deref()
            }
        })+
    };
}
pub(crate) use horizon_input;

horizon_input!(RelationListInput, ConflictListInput);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationPutInput {
    pub source_type: EntityType,
    pub source_id: String,
    pub relation: RelationType,
    pub target_type: EntityType,
    pub target_id: String,
    /// Untrusted reference data, stored and returned verbatim; never instructions.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

impl Input for RelationPutInput {
    const OP: Operation = Operation::RelationPut;
    type Output = MutationResult<RelationRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationListInput {
    pub entity_type: EntityType,
    pub entity_id: String,
    #[serde(default)]
    pub direction: RelationDirection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationType>,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default = "default_list_limit")]
    pub limit: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_commit_seq: Option<i64>,
}

impl Input for RelationListInput {
    const OP: Operation = Operation::RelationList;
    type Output = RelationListResult;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConflictListInput {
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub include_stale: bool,
    #[serde(default = "default_list_limit")]
    pub limit: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_case_sequence: Option<i64>,
}

impl Input for ConflictListInput {
    const OP: Operation = Operation::ConflictList;
    type Output = ConflictListResult;
}

/// One immutable relation row; `context` is its creator's ambient context without pins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationRecord {
    pub relation_id: RelationId,
    pub source_type: EntityType,
    pub source_id: String,
    pub relation: RelationType,
    pub target_type: EntityType,
    pub target_id: String,
    pub metadata: Value,
    pub context: AmbientContext,
    pub created_at: String,
    pub relation_commit_seq: i64,
}

/// `relation.list` result: one page of one-hop edges, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationListResult {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub direction: RelationDirection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationType>,
    pub horizon: Horizon,
    pub relations: Vec<RelationRecord>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One side of a conflict case: the frozen revision and the claim as it is now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConflictClaimSnapshot {
    pub claim_id: ClaimId,
    /// The revision that took part in the contradiction, with the current lifecycle status.
    pub frozen: ClaimRecord,
    pub current: ClaimRecord,
    pub frozen_is_current: bool,
}

/// One conflict case; `metadata` and `context` are the contradiction relation's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConflictListItem {
    pub case_id: CaseId,
    pub relation_id: RelationId,
    pub state: ConflictState,
    pub source: ConflictClaimSnapshot,
    pub target: ConflictClaimSnapshot,
    pub metadata: Value,
    pub context: AmbientContext,
    pub opened_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    pub opened_commit_seq: i64,
    pub case_sequence: i64,
}

/// `conflict.list` result: one page of cases, newest first by case sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConflictListResult {
    pub horizon: Horizon,
    pub include_stale: bool,
    pub conflicts: Vec<ConflictListItem>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_case_sequence: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_types_use_snake_case_on_the_wire() {
        for relation in RelationType::ALL {
            assert_eq!(
                serde_json::to_value(relation).unwrap(),
                Value::String(relation.as_str().to_owned())
            );
        }
    }

    #[test]
    fn list_inputs_default_to_both_directions_ambient_and_one_hundred_items() {
        let input: RelationListInput =
            serde_json::from_value(serde_json::json!({"entity_type": "claim", "entity_id": "clm_x"})).unwrap();
        assert_eq!(input.direction, RelationDirection::Both);
        assert_eq!(input.horizon, Horizon::Ambient);
        assert_eq!(input.limit, 100);
        let conflicts: ConflictListInput = serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(!conflicts.include_stale);
        assert_eq!(conflicts.limit, 100);
    }
}
