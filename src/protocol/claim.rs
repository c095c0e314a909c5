//! `claim.*` inputs and outputs.

use serde::{Deserialize, Serialize};

use super::artifact::{HistoryPage, MutationResult, default_history_limit};
use super::ids::{ArtifactId, ArtifactRevisionId, ClaimId, ClaimRevisionId};
use super::{AmbientContext, Input, Operation};

crate::wire_enum! {
    /// The six claim types.
    pub enum ClaimType {
        Fact = "fact",
        Decision = "decision",
        Constraint = "constraint",
        Preference = "preference",
        Procedure = "procedure",
        Observation = "observation",
    }
}

crate::wire_enum! {
    /// A claim's status. `active`, `superseded` and `retracted` are stored; `conflicted` is
    /// presented instead of `active` while an open conflict case involves the claim's
    /// current revision, and is never stored.
    pub enum ClaimStatus {
        Active = "active",
        Conflicted = "conflicted",
        Superseded = "superseded",
        Retracted = "retracted",
    }
}

impl ClaimStatus {
    /// Superseded and retracted claims accept no revision and no lifecycle relation.
    pub fn is_terminal(self) -> bool {
        matches!(self, ClaimStatus::Superseded | ClaimStatus::Retracted)
    }
}

/// Evidence: an exact artifact revision, optionally narrowed to `[start_byte, end_byte)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceLocator {
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_byte: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_byte: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimAssertInput {
    pub claim_type: ClaimType,
    pub statement: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

impl Input for ClaimAssertInput {
    const OP: Operation = Operation::ClaimAssert;
    type Output = MutationResult<ClaimRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimGetInput {
    pub claim_id: ClaimId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<ClaimRevisionId>,
}

impl Input for ClaimGetInput {
    const OP: Operation = Operation::ClaimGet;
    type Output = ClaimRecord;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimHistoryInput {
    pub claim_id: ClaimId,
    #[serde(default = "default_history_limit")]
    pub limit: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_revision_number: Option<i64>,
}

impl Input for ClaimHistoryInput {
    const OP: Operation = Operation::ClaimHistory;
    type Output = HistoryPage<ClaimRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimReviseInput {
    pub claim_id: ClaimId,
    pub if_revision: ClaimRevisionId,
    pub statement: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

impl Input for ClaimReviseInput {
    const OP: Operation = Operation::ClaimRevise;
    type Output = MutationResult<ClaimRecord>;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRetractInput {
    pub claim_id: ClaimId,
    pub reason: String,
}

impl Input for ClaimRetractInput {
    const OP: Operation = Operation::ClaimRetract;
    type Output = MutationResult<ClaimRecord>;
}

/// One claim revision with its claim's current lifecycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
    pub revision_number: i64,
    pub claim_type: ClaimType,
    pub status: ClaimStatus,
    pub statement: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    pub context: AmbientContext,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retraction_reason: Option<String>,
}
