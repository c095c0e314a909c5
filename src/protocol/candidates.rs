//! `memory.recall`'s unqualified candidates (the reference's v0.7 fields): leads that
//! matched part of the query but did not qualify, shown only when asked for
//! (`max_candidate_claims` / `max_candidate_artifact_refs`). They are the same candidates
//! as the `near_misses` channel, under the reference's names and shapes; they never change
//! `presence`, never fill claim or reference slots and never enter `context.build`.

use serde::{Deserialize, Serialize};

use super::claim::ClaimType;
use super::ids::{ArtifactId, ArtifactRevisionId, ClaimId, ClaimRevisionId};
use super::{Label, limits};

/// Every candidate's `retrieval_tier`: a suggestion, not remembered fact or qualified
/// evidence (serialized per item so the warning survives extraction).
pub const UNQUALIFIED_CANDIDATE: &str = "unqualified_candidate";

/// The most candidates of each kind one recall shows.
pub const MAX_CANDIDATES: usize = limits::MAX_RECALL_CANDIDATES;

/// What placed a candidate near the query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateRankingSignals {
    /// The share of the query's information its matched units carry (`matched_weight` /
    /// the query's total weight under the qualification policy), 0..=1.
    pub lexical_coverage: f64,
    /// Not computed (typos are corrected against the vocabulary, not by trigrams).
    #[serde(default)]
    pub trigram_similarity: Option<f64>,
    /// The cosine similarity a semantic model measured, when it judged the candidate.
    #[serde(default)]
    pub semantic_similarity: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallCandidateClaim {
    pub retrieval_tier: Label,
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
    pub claim_type: ClaimType,
    /// The statement, cut to the recall's `max_excerpt_bytes`.
    pub statement: String,
    pub statement_truncated: bool,
    pub citation: String,
    pub matched_by: Vec<Label>,
    pub ranking_signals: CandidateRankingSignals,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallCandidateArtifactReference {
    pub retrieval_tier: Label,
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    pub title: String,
    pub citation: String,
    /// A window around the candidate's matches, cut to the recall's `max_excerpt_bytes`.
    pub excerpt: String,
    pub excerpt_truncated: bool,
    /// The exact source bytes of `excerpt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    pub matched_by: Vec<Label>,
    #[serde(default)]
    pub risk_signals: Vec<Label>,
    pub ranking_signals: CandidateRankingSignals,
}
