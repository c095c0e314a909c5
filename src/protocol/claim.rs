//! `claim.*` inputs and outputs.

use serde::{Deserialize, Serialize};

use super::AmbientContext;
use super::artifact::default_history_limit;

/// The six claim types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimType {
    Fact,
    Decision,
    Constraint,
    Preference,
    Procedure,
    Observation,
}

impl ClaimType {
    pub const ALL: [ClaimType; 6] = [
        ClaimType::Fact,
        ClaimType::Decision,
        ClaimType::Constraint,
        ClaimType::Preference,
        ClaimType::Procedure,
        ClaimType::Observation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimType::Fact => "fact",
            ClaimType::Decision => "decision",
            ClaimType::Constraint => "constraint",
            ClaimType::Preference => "preference",
            ClaimType::Procedure => "procedure",
            ClaimType::Observation => "observation",
        }
    }

    pub fn parse(text: &str) -> Option<ClaimType> {
        ClaimType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// Evidence: an exact artifact revision, optionally narrowed to `[start_byte, end_byte)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceLocator {
    pub artifact_id: String,
    pub revision_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_byte: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_byte: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimAssertInput {
    pub claim_type: ClaimType,
    pub statement: String,
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default)]
    pub valid_from: Option<String>,
    #[serde(default)]
    pub valid_until: Option<String>,
    #[serde(default)]
    pub actor: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimGetInput {
    pub claim_id: String,
    #[serde(default)]
    pub revision_id: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimHistoryInput {
    pub claim_id: String,
    #[serde(default = "default_history_limit")]
    pub limit: i64,
    #[serde(default)]
    pub before_revision_number: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimReviseInput {
    pub claim_id: String,
    pub if_revision: String,
    pub statement: String,
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default)]
    pub actor: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRetractInput {
    pub claim_id: String,
    pub reason: String,
}

/// One claim revision with its claim's current lifecycle.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimRecord {
    pub claim_id: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub claim_type: String,
    pub status: String,
    pub statement: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    pub evidence: Vec<EvidenceLocator>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    pub context: AmbientContext,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub created_at: String,
    pub revision_created_at: String,
    pub revision_commit_seq: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retraction_reason: Option<String>,
}
