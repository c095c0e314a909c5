//! The reference's v0.7 agent path: `memory.probe` (one bounded candidate-routing step after
//! a weak recall) and `memory.retrieve` (recall, then, only when no claim qualified, one
//! bounded packet of exact unqualified evidence). Their inputs, results and labels.
//!
//! Nothing here qualifies an answer: every probe lead is an `unqualified_candidate` and
//! every recovery item `unqualified_evidence`, labelled per item so the warning survives
//! extraction. Presence, claims and `context.build` come from qualified retrieval only.

use serde::{Deserialize, Serialize};

use super::retrieval::{
    ConflictSummary, QueryAnalysis, RecallClaimStatus, RecallEvidenceReference, RecallPresence, RecencyInput,
    default_max_artifact_refs, default_max_claims, default_max_excerpt_bytes,
};
use super::{Horizon, Input, Label, Operation};
use crate::protocol::claim::ClaimType;
use crate::protocol::ids::{ArtifactId, ArtifactRevisionId, ClaimId, ClaimRevisionId, RelationId};

/// The most leads one probe returns (`capabilities.max_probe_items`) and its default.
pub const MAX_PROBE_LEADS: i64 = 8;
/// A lead's title is cut to this many bytes (45 and an ellipsis).
pub const MAX_PROBE_TITLE_BYTES: usize = 48;
/// A claim lead lists at most this many evidence sources.
pub const MAX_LEAD_SOURCES: usize = 3;
/// ... covering at most this many ranged bytes together.
pub const MAX_LEAD_SOURCE_BYTES: u64 = 4096;
/// The most recovery leads one retrieve follows (`capabilities.max_retrieve_leads`).
pub const MAX_RETRIEVE_LEADS: i64 = 8;
/// The most recovery references one retrieve returns (`max_retrieve_references`).
pub const MAX_RETRIEVE_REFERENCES: usize = 9;
/// The most recovery content bytes (`max_retrieve_evidence_bytes`) and the default budget.
pub const MAX_RETRIEVE_EVIDENCE_BYTES: i64 = 12288;
/// The most bytes one recovery fetch takes.
pub const MAX_RECOVERY_FETCH_BYTES: u64 = 1536;

/// Every recovery item's `retrieval_tier`.
pub const UNQUALIFIED_EVIDENCE: &str = "unqualified_evidence";

fn default_max_leads() -> i64 {
    MAX_PROBE_LEADS
}

fn default_max_recovery_leads() -> i64 {
    MAX_RETRIEVE_LEADS
}

fn default_max_recovery_bytes() -> i64 {
    MAX_RETRIEVE_EVIDENCE_BYTES
}

/// `memory.probe`: the unqualified candidates of one query, grouped into leads of exact
/// source locators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeInput {
    /// The one query the candidates are routed by.
    pub query: String,
    /// The question relevance is finally judged against, when `query` reformulates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_query: Option<String>,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// 1..=8, default 8.
    #[serde(default = "default_max_leads")]
    pub max_leads: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_commit_seq: Option<i64>,
    #[serde(default)]
    pub recency: RecencyInput,
}

impl ProbeInput {
    /// A probe of the ambient horizon with the defaults.
    pub fn new(query: impl Into<String>) -> ProbeInput {
        ProbeInput {
            query: query.into(),
            original_query: None,
            horizon: Horizon::Ambient,
            reason: None,
            max_leads: MAX_PROBE_LEADS,
            min_commit_seq: None,
            recency: RecencyInput::default(),
        }
    }
}

impl Input for ProbeInput {
    const OP: Operation = Operation::MemoryProbe;
    type Output = ProbeResult;
}

crate::wire_enum! {
    /// How a lead's source pointer got its byte precision.
    pub enum LocatorOrigin {
        /// The claim carried exact evidence bytes.
        ClaimExact = "claim_exact",
        /// The artifact candidate's matched passage.
        ArtifactExact = "artifact_exact",
        /// A semantic projection resolved bytes in a claim's cited revision (not produced
        /// by this implementation; see `spec/v1/DIVERGENCES.md`).
        SemanticResolved = "semantic_resolved",
        /// A semantic projection chose a sub-range of an exact artifact span (not produced).
        SemanticWindowed = "semantic_windowed",
        /// Only the revision is known; `citation.get` refuses it with `range_required`.
        RevisionOnly = "revision_only",
    }
}

/// One exact source pointer of a lead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSource {
    pub citation: String,
    pub locator_origin: LocatorOrigin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator_policy_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_revision_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_citation: Option<String>,
}

/// One lead: a source revision that held unqualified candidates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeLead {
    /// The source's untrusted title; a trailing `…` means it was cut.
    pub title: String,
    pub sources: Vec<ProbeSource>,
    /// False when the source caps (3 locators, 4 KiB) left some of a claim's evidence out.
    pub evidence_locator_set_complete: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub content_is_untrusted: bool,
    /// Always `unqualified_candidate`: no lead answers anything.
    pub retrieval_tier: String,
    /// `original_query`, or the query when none was given.
    pub original_query: String,
    pub probe_query: String,
    pub reformulation_applied: bool,
    pub leads: Vec<ProbeLead>,
    /// Leads found before the `max_leads` cut.
    pub available_count: u64,
    pub truncated: bool,
}

/// `memory.retrieve`: qualified recall, plus one bounded packet of exact unqualified
/// evidence when no claim qualified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveInput {
    /// The user's question; qualification always reads this text.
    pub query: String,
    /// One caller-audited rewording, used only to route recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reformulation: Option<String>,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default = "default_max_claims")]
    pub max_claims: i64,
    #[serde(default = "default_max_artifact_refs")]
    pub max_artifact_refs: i64,
    #[serde(default = "default_max_excerpt_bytes")]
    pub max_excerpt_bytes: i64,
    /// 1..=8, default 8.
    #[serde(default = "default_max_recovery_leads")]
    pub max_recovery_leads: i64,
    /// 1..=12288, default 12288.
    #[serde(default = "default_max_recovery_bytes")]
    pub max_recovery_bytes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_commit_seq: Option<i64>,
    #[serde(default)]
    pub recency: RecencyInput,
    /// Stage durations and counts; never content.
    #[serde(default)]
    pub profile: bool,
}

impl RetrieveInput {
    /// A retrieve of the ambient horizon with the defaults.
    pub fn new(query: impl Into<String>) -> RetrieveInput {
        RetrieveInput {
            query: query.into(),
            reformulation: None,
            horizon: Horizon::Ambient,
            reason: None,
            max_claims: default_max_claims(),
            max_artifact_refs: default_max_artifact_refs(),
            max_excerpt_bytes: default_max_excerpt_bytes(),
            max_recovery_leads: MAX_RETRIEVE_LEADS,
            max_recovery_bytes: MAX_RETRIEVE_EVIDENCE_BYTES,
            min_commit_seq: None,
            recency: RecencyInput::default(),
            profile: false,
        }
    }
}

impl Input for RetrieveInput {
    const OP: Operation = Operation::MemoryRetrieve;
    type Output = RetrieveResult;
}

/// Where retrieve's authority ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrieveAuthority {
    pub memory_snapshot_commit_seq: i64,
    pub retrieved_at: String,
    pub qualification_policy: String,
    pub recovery_policy: String,
    pub current_source_rule: String,
}

/// A qualified claim, as recall returns it without score and match labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrieveClaim {
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
    pub claim_type: ClaimType,
    pub status: RecallClaimStatus,
    pub statement: String,
    pub citation: String,
    pub evidence: Vec<RecallEvidenceReference>,
    pub conflict_relation_ids: Vec<RelationId>,
}

/// A qualified artifact reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrieveArtifactReference {
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    pub title: String,
    pub citation: String,
    pub excerpt: String,
    pub excerpt_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    pub risk_signals: Vec<Label>,
}

/// The deterministic next step when no claim qualified: never an answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrieveNextAction {
    pub policy_version: String,
    /// `no_qualified_match` or `artifacts_without_claims`.
    pub reason: String,
    pub action: String,
    pub detail: String,
    /// The question's content units.
    pub unmatched_units: Vec<String>,
    /// Terms memory uses that the question did not (empty: see DIVERGENCES).
    pub stored_vocabulary: Vec<String>,
}

/// One exact span of unqualified evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryEvidence {
    pub retrieval_tier: String,
    pub title: String,
    /// Exactly the bytes of `content`.
    pub citation: String,
    pub content: String,
    pub media_type: String,
    /// The cited span was longer than what the budget let through.
    pub truncated: bool,
}

/// The bounded recovery packet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrieveRecovery {
    pub retrieval_tier: String,
    pub original_query_preserved: bool,
    pub reformulation_applied: bool,
    pub available_leads: u64,
    pub returned_references: u64,
    pub returned_content_bytes: u64,
    pub references_truncated: bool,
    pub relevance_policy: String,
    /// Spans fetched but withheld by the relevance policy.
    pub suppressed_references: u64,
    /// Always 0: no write-time routing anchors exist here.
    pub anchor_routed_references: u64,
    pub evidence: Vec<RecoveryEvidence>,
    pub warning: String,
}

/// Stage durations and counts (`profile: true`); never content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrieveProfile {
    pub policy_version: String,
    pub total_ms: f64,
    pub recall_ms: f64,
    pub probe_ms: f64,
    pub citation_fetch_ms: f64,
    pub qualified_claim_count: u64,
    pub qualified_artifact_count: u64,
    pub recovery_reference_count: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrieveResult {
    pub content_is_untrusted: bool,
    pub presence: RecallPresence,
    pub searched_horizon: Horizon,
    pub query_analysis: QueryAnalysis,
    pub authority: RetrieveAuthority,
    pub claims: Vec<RetrieveClaim>,
    pub conflicts: Vec<ConflictSummary>,
    pub artifact_refs: Vec<RetrieveArtifactReference>,
    pub claims_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<RetrieveNextAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RetrieveRecovery>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<RetrieveProfile>,
}

crate::protocol::relation::horizon_input!(ProbeInput, RetrieveInput);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_and_retrieve_defaults_are_the_references() {
        let probe: ProbeInput = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(probe, ProbeInput::new("x"));
        let retrieve: RetrieveInput = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(retrieve, RetrieveInput::new("x"));
        assert_eq!(
            (
                retrieve.max_claims,
                retrieve.max_recovery_leads,
                retrieve.max_recovery_bytes
            ),
            (5, 8, 12288)
        );
        assert!(serde_json::from_value::<RetrieveInput>(json!({"query": "x", "limit": 3})).is_err());
    }
}
