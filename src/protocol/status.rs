//! The retrieval status objects the reference's v0.7.1 schema requires on `search`,
//! `memory.recall` and `context.build`: which semantic stage, reranker and cited
//! projections took part. Each is filled truthfully from what this implementation does:
//! semantics is the optional local model judging candidates (from vectors stored with each
//! revision, or embedded when a query meets a revision without them, with the same result),
//! and there is no reranker and no projection (see `spec/v1/DIVERGENCES.md`, "Retrieval
//! status fields").

use serde::{Deserialize, Serialize};

/// The semantic stage of one search surface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SemanticRetrievalStatus {
    /// `ready` with a model installed, else `disabled`.
    pub state: String,
    pub policy_version: String,
    /// The commit the stage is current as of: every commit, since a candidate without
    /// stored vectors is embedded when judged; 0 when disabled.
    pub indexed_commit_seq: i64,
    pub current_commit_seq: i64,
    /// Always 0 here: the stored vectors' counts are store-wide, and a search surface
    /// answers restricted grants too (`doctor`'s `semantic.vectors` reports them).
    pub eligible_revision_count: u64,
    pub indexed_revision_count: u64,
    /// 1.0 when ready (every candidate can be judged), 0.0 when disabled.
    pub coverage: f64,
    /// The installed model's digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The reranker's circuit breaker; there is no reranker, so it never opens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RerankerBreakerStatus {
    pub state: String,
    pub budget_ms: f64,
    pub trip_threshold: u64,
    pub consecutive_over_budget: u64,
    pub probe_after_skips: u64,
    pub skipped_since_open: u64,
}

/// The reranker of one surface: absent here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RerankerRetrievalStatus {
    /// `disabled` on the claim surface, `surface_disabled` on the artifact and mixed ones.
    pub state: String,
    pub policy_version: String,
    pub role: String,
    /// `claim`, `artifact` or `mixed`.
    pub surface: String,
    /// Qualified candidates that ordering would have considered.
    pub candidate_count: u64,
    pub scored_candidate_count: u64,
    pub ordering_applied: bool,
    pub candidate_limit: u64,
    pub candidate_limit_reached: bool,
    pub breaker: RerankerBreakerStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Cited derived projections as search candidates: not implemented here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectionRetrievalStatus {
    /// `not_applicable`.
    pub state: String,
    pub policy_version: String,
    pub candidate_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `policy_version` of every status of a stage this implementation does not have.
pub const NOT_IMPLEMENTED: &str = "none";
/// `policy_version` of the semantic stage: the local model's similarity as evidence for
/// qualification and as a fused rank (issue 27), the best of a revision's stored windows.
pub const SEMANTIC_POLICY: &str = "memoree_query_time_semantic_evidence_v1";

/// The reranker status of `surface` with `candidates` qualified candidates.
pub fn no_reranker(surface: &str, candidates: usize) -> RerankerRetrievalStatus {
    RerankerRetrievalStatus {
        state: if surface == "claim" {
            "disabled"
        } else {
            "surface_disabled"
        }
        .to_owned(),
        policy_version: NOT_IMPLEMENTED.to_owned(),
        role: "ordering_only".to_owned(),
        surface: surface.to_owned(),
        candidate_count: candidates as u64,
        scored_candidate_count: 0,
        ordering_applied: false,
        candidate_limit: 0,
        candidate_limit_reached: false,
        breaker: RerankerBreakerStatus {
            state: "closed".to_owned(),
            budget_ms: 0.0,
            trip_threshold: 0,
            consecutive_over_budget: 0,
            probe_after_skips: 0,
            skipped_since_open: 0,
        },
        reason: Some("this implementation has no reranker; order is the lexical (and semantic) ranking".to_owned()),
    }
}

/// The projection status of a search: there are no cited projections here.
pub fn no_projection() -> ProjectionRetrievalStatus {
    ProjectionRetrievalStatus {
        state: "not_applicable".to_owned(),
        policy_version: NOT_IMPLEMENTED.to_owned(),
        candidate_count: 0,
        reason: Some("this implementation has no cited projections".to_owned()),
    }
}

/// The semantic status at `current_commit_seq`, with the installed model's digest or none.
pub fn semantic(model_digest: Option<String>, current_commit_seq: i64) -> SemanticRetrievalStatus {
    let ready = model_digest.is_some();
    SemanticRetrievalStatus {
        state: if ready { "ready" } else { "disabled" }.to_owned(),
        policy_version: SEMANTIC_POLICY.to_owned(),
        indexed_commit_seq: if ready { current_commit_seq } else { 0 },
        current_commit_seq,
        eligible_revision_count: 0,
        indexed_revision_count: 0,
        coverage: if ready { 1.0 } else { 0.0 },
        model_id: model_digest,
        reason: Some(
            if ready {
                "candidates are embedded when judged; no vectors are stored"
            } else {
                "no local semantic model is installed (memoree semantic install DIR)"
            }
            .to_owned(),
        ),
    }
}
