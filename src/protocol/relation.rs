//! `relation.put`, `relation.list` and `conflict.list` inputs and outputs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::claim::ClaimRecord;
use super::{AmbientContext, Horizon};

/// The kinds of entity a relation may connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    Artifact,
    Claim,
}

impl EntityType {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Artifact => "artifact",
            EntityType::Claim => "claim",
        }
    }
}

/// The six typed edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationType {
    DerivedFrom,
    Supports,
    Contradicts,
    /// Source is the new/current entity, target the older one it replaces.
    Supersedes,
    References,
    Duplicates,
}

impl RelationType {
    pub const ALL: [RelationType; 6] = [
        RelationType::DerivedFrom,
        RelationType::Supports,
        RelationType::Contradicts,
        RelationType::Supersedes,
        RelationType::References,
        RelationType::Duplicates,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RelationType::DerivedFrom => "derived_from",
            RelationType::Supports => "supports",
            RelationType::Contradicts => "contradicts",
            RelationType::Supersedes => "supersedes",
            RelationType::References => "references",
            RelationType::Duplicates => "duplicates",
        }
    }

    /// Relations with lifecycle effects; both endpoints must be non-terminal claims.
    pub fn is_claim_lifecycle(self) -> bool {
        matches!(self, RelationType::Contradicts | RelationType::Supersedes)
    }
}

/// Which edges of an anchor `relation.list` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationDirection {
    /// Edges whose target is the anchor.
    Incoming,
    /// Edges whose source is the anchor.
    Outgoing,
    #[default]
    Both,
}

fn default_list_limit() -> i64 {
    100
}

#[derive(Clone, Debug, Deserialize)]
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

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationListInput {
    pub entity_type: EntityType,
    pub entity_id: String,
    #[serde(default)]
    pub direction: RelationDirection,
    #[serde(default)]
    pub relation: Option<RelationType>,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default = "default_list_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_commit_seq: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConflictListInput {
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub include_stale: bool,
    #[serde(default = "default_list_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_case_sequence: Option<i64>,
}

/// One immutable relation row; `context` is its creator's ambient context without pins.
#[derive(Clone, Debug, Serialize)]
pub struct RelationRecord {
    pub relation_id: String,
    pub source_type: String,
    pub source_id: String,
    pub relation: String,
    pub target_type: String,
    pub target_id: String,
    pub metadata: Value,
    pub context: AmbientContext,
    pub created_at: String,
    pub relation_commit_seq: i64,
}

/// `relation.list` result: one page of one-hop edges, newest first.
#[derive(Clone, Debug, Serialize)]
pub struct RelationListResult {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub direction: RelationDirection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationType>,
    pub horizon: Horizon,
    pub relations: Vec<RelationRecord>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_commit_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
}

/// One side of a conflict case: the frozen revision and the claim as it is now.
#[derive(Clone, Debug, Serialize)]
pub struct ConflictClaimSnapshot {
    pub claim_id: String,
    /// The revision that took part in the contradiction, with the current lifecycle status.
    pub frozen: ClaimRecord,
    pub current: ClaimRecord,
    pub frozen_is_current: bool,
}

/// One conflict case; `metadata` and `context` are the contradiction relation's.
#[derive(Clone, Debug, Serialize)]
pub struct ConflictListItem {
    pub case_id: String,
    pub relation_id: String,
    pub state: String,
    pub source: ConflictClaimSnapshot,
    pub target: ConflictClaimSnapshot,
    pub metadata: Value,
    pub context: AmbientContext,
    pub opened_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    pub opened_commit_seq: i64,
    pub case_sequence: i64,
}

/// `conflict.list` result: one page of cases, newest first by case sequence.
#[derive(Clone, Debug, Serialize)]
pub struct ConflictListResult {
    pub horizon: Horizon,
    pub include_stale: bool,
    pub conflicts: Vec<ConflictListItem>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_case_sequence: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
