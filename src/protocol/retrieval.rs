//! `search`, `memory.recall` and `context.build` inputs and outputs.
//!
//! The three inputs share the search fields. `ContextBuildInput` repeats them instead of
//! flattening `SearchInput`, because serde's `flatten` disables `deny_unknown_fields`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::candidates::{RecallCandidateArtifactReference, RecallCandidateClaim};
use super::claim::{ClaimType, EvidenceLocator};
use super::ids::{ArtifactId, ArtifactRevisionId, ClaimId, ClaimRevisionId, RelationId, RevisionId};
use super::relation::{EntityStatus, EntityType, horizon_input};
use super::status::{ProjectionRetrievalStatus, RerankerRetrievalStatus, SemanticRetrievalStatus};
use super::{AmbientContext, Horizon, Input, Label, Operation, limits};

fn yes() -> bool {
    true
}

fn default_search_limit() -> i64 {
    10
}

pub(super) fn default_max_claims() -> i64 {
    5
}

pub(super) fn default_max_artifact_refs() -> i64 {
    3
}

pub(super) fn default_max_excerpt_bytes() -> i64 {
    320
}

fn default_max_bytes() -> u64 {
    limits::DEFAULT_CONTEXT_MAX_BYTES as u64
}

/// The `recency` object: whether `bounded_recency_v1` reorders the lexical top-K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecencyInput {
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for RecencyInput {
    fn default() -> Self {
        RecencyInput { enabled: true }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    pub query: String,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default = "default_search_limit")]
    pub limit: i64,
    #[serde(default)]
    pub include_historical: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_commit_seq: Option<i64>,
    #[serde(default)]
    pub recency: RecencyInput,
}

impl SearchInput {
    /// A search of the ambient horizon with the defaults.
    pub fn new(query: impl Into<String>) -> SearchInput {
        SearchInput {
            query: query.into(),
            horizon: Horizon::Ambient,
            reason: None,
            limit: default_search_limit(),
            include_historical: false,
            min_commit_seq: None,
            recency: RecencyInput::default(),
        }
    }
}

impl Input for SearchInput {
    const OP: Operation = Operation::Search;
    type Output = SearchResult;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallInput {
    pub query: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_commit_seq: Option<i64>,
    #[serde(default)]
    pub recency: RecencyInput,
    /// Unqualified claim candidates to show apart from the claims (0..=16; 0 shows none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_candidate_claims: i64,
    /// Unqualified artifact candidates to show apart from the references (0..=16).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_candidate_artifact_refs: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

impl RecallInput {
    /// A recall of the ambient horizon with the defaults.
    pub fn new(query: impl Into<String>) -> RecallInput {
        RecallInput {
            query: query.into(),
            horizon: Horizon::Ambient,
            reason: None,
            max_claims: default_max_claims(),
            max_artifact_refs: default_max_artifact_refs(),
            max_excerpt_bytes: default_max_excerpt_bytes(),
            min_commit_seq: None,
            recency: RecencyInput::default(),
            max_candidate_claims: 0,
            max_candidate_artifact_refs: 0,
        }
    }
}

impl Input for RecallInput {
    const OP: Operation = Operation::MemoryRecall;
    type Output = RecallResult;
}

/// The search fields, declared one by one, plus the byte budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextBuildInput {
    pub query: String,
    #[serde(default)]
    pub horizon: Horizon,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default = "default_search_limit")]
    pub limit: i64,
    #[serde(default)]
    pub include_historical: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_commit_seq: Option<i64>,
    #[serde(default)]
    pub recency: RecencyInput,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
}

impl Input for ContextBuildInput {
    const OP: Operation = Operation::ContextBuild;
    type Output = ContextBundle;
}

horizon_input!(SearchInput, RecallInput, ContextBuildInput);

impl ContextBuildInput {
    /// A bundle for `query` at the ambient horizon with the defaults.
    pub fn new(query: impl Into<String>) -> ContextBuildInput {
        ContextBuildInput {
            query: query.into(),
            horizon: Horizon::Ambient,
            reason: None,
            limit: default_search_limit(),
            include_historical: false,
            min_commit_seq: None,
            recency: RecencyInput::default(),
            max_bytes: default_max_bytes(),
        }
    }
}

impl ContextBuildInput {
    /// The search this bundle is built from.
    pub fn search(&self) -> SearchInput {
        SearchInput {
            query: self.query.clone(),
            horizon: self.horizon,
            reason: self.reason.clone(),
            limit: self.limit,
            include_historical: self.include_historical,
            min_commit_seq: self.min_commit_seq,
            recency: self.recency,
        }
    }
}

/// How a hit's final position was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchRanking {
    pub policy_version: Label,
    pub recency_enabled: bool,
    pub recency_eligible: bool,
    pub lexical_score: f64,
    pub recency_bonus: f64,
    /// 1-based.
    pub lexical_position: usize,
    /// 1-based.
    pub final_position: usize,
    pub max_promotion: usize,
    pub effective_at: String,
    pub effective_at_basis: Label,
    pub evaluated_at: String,
    pub decay_class: Label,
    /// With a semantic model: the fusion of the hit's lexical and semantic ranks, which the
    /// recency rerank works on instead of `lexical_score` (an extension of v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_score: Option<f64>,
    /// Why this hit qualified (an extension of v1).
    pub qualification: QualificationInfo,
    /// Citations of near-identical claims collapsed onto this one (an extension of v1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collapsed_duplicates: Vec<String>,
    /// The reference's v0.7 ranking fields, filled from the same qualification
    /// (`spec/v1/DIVERGENCES.md`, "Retrieval status fields").
    #[serde(flatten)]
    pub reference: ReferenceRanking,
}

/// The ranking fields the reference's v0.7.1 schema requires, beside ours.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRanking {
    /// The policies that ranked the hit: `qualified_units_v2`; no trigram stage; the
    /// semantic fusion when a model is on.
    #[serde(default)]
    pub lexical_policy_version: String,
    #[serde(default)]
    pub trigram_policy_version: String,
    #[serde(default)]
    pub fusion_policy_version: String,
    #[serde(default)]
    pub query_unit_count: u64,
    #[serde(default)]
    pub matched_unit_count: u64,
    /// The fewest matched units that can qualify a hit (`query_analysis.required_matches`).
    #[serde(default)]
    pub required_matches: u64,
    /// The share of the query's information the matched units carry, 0..=1.
    #[serde(default)]
    pub lexical_coverage: f64,
    /// Quoted phrases and hyphenated compounds of the query, and how many matched.
    #[serde(default)]
    pub phrase_group_count: u64,
    #[serde(default)]
    pub matched_phrase_group_count: u64,
    #[serde(default)]
    pub lexical_qualified: bool,
    #[serde(default)]
    pub trigram_qualified: bool,
    /// Qualified through the semantic model's similarity rather than enough units.
    #[serde(default)]
    pub semantic_qualified: bool,
    #[serde(default)]
    pub qualified: bool,
    /// Lexically qualified with every unit matched as written or inflected.
    #[serde(default)]
    pub exact_tier: bool,
    /// `fused_score` with a semantic model, else `lexical_score`.
    #[serde(default)]
    pub fusion_score: f64,
}

/// One content unit of the analysed query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryUnit {
    /// As written (quotes removed).
    pub unit: String,
    /// `word`, `compound`, `identifier`, `number` or `phrase`.
    pub kind: Label,
    /// 2 distinctive, 1 ordinary, 0.5 generic.
    pub weight: f64,
    pub generic: bool,
}

/// How one unit matched a hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnitMatchInfo {
    pub unit: String,
    /// `exact`, `inflection`, `fuzzy`, `prefix` or `abbreviation`.
    pub how: Label,
    /// The word of the hit that matched (the first word of a phrase).
    pub term: String,
}

/// The disclosed qualification of a hit or near miss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QualificationInfo {
    pub policy_version: Label,
    pub qualified: bool,
    pub units: Vec<QueryUnit>,
    pub required_weight: f64,
    pub matched_weight: f64,
    pub matched: Vec<UnitMatchInfo>,
    /// Why a near miss did not qualify: `no_unit_matched`, `too_few_units`,
    /// `generic_unit_alone` or `corrected_only` (every matched unit was a correction while
    /// other hits matched units as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<Label>,
    /// Present when a semantic model judged the candidate (a partial lexical match): how
    /// close its meaning is to the query's, and what it needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticEvidence>,
}

/// The semantic side of one candidate's qualification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SemanticEvidence {
    /// Cosine similarity of the query's and the candidate's vectors, three decimals.
    pub similarity: f64,
    /// What a candidate with partial lexical support needs.
    pub required_similarity: f64,
    /// The candidate qualified through its meaning, not enough of its units matching.
    pub qualified_by_meaning: bool,
}

/// The query as the qualification policy read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryAnalysis {
    pub policy_version: Label,
    pub units: Vec<QueryUnit>,
    /// Function and question words that count for nothing on their own.
    pub ignored_words: Vec<String>,
    pub question: bool,
    /// Every word was a function word; those words were searched instead, all required.
    pub stop_words_only: bool,
    pub required_weight: f64,
    /// How to reword when nothing qualified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// The reference's v0.7 description of the same query (`retrieval::profile`): the
    /// content units space-joined, phrases and compounds quoted.
    #[serde(default)]
    pub normalized_query: String,
    /// The fewest matched units that can qualify a hit under the policy.
    #[serde(default)]
    pub required_matches: u64,
    #[serde(default)]
    pub content_units: Vec<String>,
    #[serde(default)]
    pub phrase_groups: Vec<String>,
    /// The function words left out, sorted and unique.
    #[serde(default)]
    pub dropped_stopwords: Vec<String>,
    #[serde(default)]
    pub retrieval_profile: RetrievalProfile,
}

/// The reference's routing profile of a query: non-authoritative, never changes scope,
/// qualification or presence.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalProfile {
    pub policy_version: String,
    /// `historical_memory`, `current_source`, `identifier_lookup` or `ambiguous`.
    pub intent_hint: Label,
    /// `latin`, `cyrillic`, `arabic`, `cjk`, `mixed`, `other` or `unknown`.
    pub script_profile: Label,
    pub identifier_like_units: u64,
    pub semantic_role: String,
    pub authority_hint: String,
}

/// A lexical candidate that did not qualify: never a hit and never counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NearMiss {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub revision_id: RevisionId,
    pub citation: String,
    pub title: String,
    pub excerpt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    pub qualification: QualificationInfo,
}

/// The currentness details the server builds as a claim hit's `provenance`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimHitProvenance {
    pub claim_type: ClaimType,
    pub evidence: Vec<EvidenceLocator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub evaluated_at: String,
    /// `current`, `future` or `expired`.
    pub temporal_state: Label,
    pub is_current_revision: bool,
    /// Current revision, non-terminal status, and a `current` temporal state.
    pub is_current: bool,
}

/// One ranked reference; its title and excerpt are untrusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub revision_id: RevisionId,
    pub status: EntityStatus,
    pub title: String,
    pub excerpt: String,
    /// The exact source bytes the excerpt shows (artifacts with text only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    pub citation: String,
    pub context: AmbientContext,
    pub score: f64,
    pub ranking: SearchRanking,
    pub matched_by: Vec<Label>,
    /// Stored artifact provenance, or a serialized [`ClaimHitProvenance`].
    pub provenance: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub query: String,
    pub horizon: Horizon,
    pub retrieval_mode: Label,
    pub hits: Vec<SearchHit>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refine_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
    pub query_analysis: QueryAnalysis,
    /// Candidates that matched some units but did not qualify.
    pub near_misses: Vec<NearMiss>,
    /// The reference's v0.7 status fields (`protocol::status`).
    #[serde(default)]
    pub projection: ProjectionRetrievalStatus,
    #[serde(default)]
    pub semantic: SemanticRetrievalStatus,
    #[serde(default)]
    pub reranker: RerankerRetrievalStatus,
    /// Always true: hits are qualified ones only (near misses are kept apart).
    #[serde(default)]
    pub qualification_applied: bool,
    /// Unqualified candidates the search examined.
    #[serde(default)]
    pub unqualified_candidate_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_unqualified_coverage: Option<f64>,
}

/// One open contradiction: `left_id` is the relation's source claim, `right_id` its target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictSummary {
    pub left_id: ClaimId,
    pub right_id: ClaimId,
    pub relation_id: RelationId,
}

crate::wire_enum! {
    /// `current`, or `disputed` when an open contradiction involves the claim.
    pub enum RecallClaimStatus {
        Current = "current",
        Disputed = "disputed",
    }
}

crate::wire_enum! {
    /// What recall found in the searched horizons.
    pub enum RecallPresence {
        Claims = "claims",
        ArtifactsOnly = "artifacts_only",
        None = "none",
    }
}

/// One exact evidence citation of a recalled claim, with an optional source preview.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallEvidenceReference {
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    pub citation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_byte: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_byte: Option<u64>,
    pub title: String,
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    pub excerpt_truncated: bool,
    /// The exact bytes of the excerpt, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
}

/// A current claim that matched; not a truth score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallClaim {
    pub claim_id: ClaimId,
    pub revision_id: ClaimRevisionId,
    pub claim_type: ClaimType,
    pub status: RecallClaimStatus,
    pub statement: String,
    pub citation: String,
    pub evidence: Vec<RecallEvidenceReference>,
    pub conflict_relation_ids: Vec<RelationId>,
    pub score: f64,
    pub matched_by: Vec<Label>,
    pub qualification: QualificationInfo,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collapsed_duplicates: Vec<String>,
}

/// A bounded reference to matching source material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallArtifactReference {
    pub artifact_id: ArtifactId,
    pub revision_id: ArtifactRevisionId,
    pub citation: String,
    pub title: String,
    pub status: EntityStatus,
    pub excerpt: String,
    pub excerpt_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    pub score: f64,
    pub matched_by: Vec<Label>,
    pub risk_signals: Vec<Label>,
    pub qualification: QualificationInfo,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallResult {
    pub content_is_untrusted: bool,
    pub query: String,
    pub searched_horizons: Vec<Horizon>,
    pub presence: RecallPresence,
    pub claims: Vec<RecallClaim>,
    pub conflicts: Vec<ConflictSummary>,
    pub artifact_refs: Vec<RecallArtifactReference>,
    pub claims_truncated: bool,
    pub artifact_refs_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims_refine_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_refs_refine_hint: Option<String>,
    pub query_analysis: QueryAnalysis,
    /// Candidates that matched some units but did not qualify (never counted in presence).
    pub near_misses: Vec<NearMiss>,
    /// Up to `max_candidate_claims` unqualified claim candidates of the claim search
    /// (`protocol::candidates`).
    #[serde(default)]
    pub candidate_claims: Vec<RecallCandidateClaim>,
    /// Up to `max_candidate_artifact_refs` unqualified candidates of the artifact search.
    #[serde(default)]
    pub candidate_artifact_refs: Vec<RecallCandidateArtifactReference>,
    /// Candidates were asked for and more existed than were shown.
    #[serde(default)]
    pub candidate_claims_truncated: bool,
    #[serde(default)]
    pub candidate_artifact_refs_truncated: bool,
    /// Unqualified candidates the claim search examined (shown or not).
    #[serde(default)]
    pub unqualified_claim_candidates: u64,
    /// Unqualified candidates the artifact search examined (shown or not).
    #[serde(default)]
    pub unqualified_artifact_candidates: u64,
    /// The highest `lexical_coverage` among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_unqualified_claim_coverage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_unqualified_artifact_coverage: Option<f64>,
    /// Present when either search examined unqualified candidates: how to see them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates_hint: Option<String>,
    /// The reference's v0.7 status of each search surface (`protocol::status`).
    #[serde(default)]
    pub semantic_claims: SemanticRetrievalStatus,
    #[serde(default)]
    pub semantic_artifacts: SemanticRetrievalStatus,
    #[serde(default)]
    pub reranker_claims: RerankerRetrievalStatus,
    #[serde(default)]
    pub reranker_artifacts: RerankerRetrievalStatus,
}

/// What the bundle included for one retrieved hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BundleManifestItem {
    pub citation: String,
    pub entity_type: EntityType,
    pub entity_id: String,
    pub revision_id: RevisionId,
    pub status: EntityStatus,
    pub context: AmbientContext,
    pub provenance: Value,
    pub risk_signals: Vec<Label>,
    /// Bytes of the hit's own excerpt.
    pub source_excerpt_bytes: usize,
    /// Bytes of that excerpt actually rendered; 0 when the placeholder stood in.
    pub included_bytes: usize,
    pub excerpt_available: bool,
    pub excerpt_truncated: bool,
    /// The exact source bytes of the hit's excerpt (artifacts with text only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_citation: Option<String>,
    /// Why the item is in the bundle, e.g. `retrieved by fts5_bm25 + bounded_recency_v1`.
    pub reason: String,
}

/// `context.build` result: byte-bounded Markdown and the manifest of what it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextBundle {
    pub content_is_untrusted: bool,
    pub query: String,
    pub max_bytes: u64,
    pub used_bytes: usize,
    pub rendered_markdown: String,
    /// Included hits only, in rendered order.
    pub manifest: Vec<BundleManifestItem>,
    pub retrieval_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refine_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broaden_hint: Option<String>,
    /// Hits left out by the byte budget, and nothing else.
    pub omitted_count: usize,
    pub conflicts: Vec<ConflictSummary>,
    pub query_analysis: QueryAnalysis,
    /// The reference's v0.7 status fields (`protocol::status`).
    #[serde(default)]
    pub semantic: SemanticRetrievalStatus,
    #[serde(default)]
    pub reranker: RerankerRetrievalStatus,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_defaults_are_ambient_ten_hits_current_only_with_recency() {
        let input: SearchInput = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(input.horizon, Horizon::Ambient);
        assert_eq!(input.limit, 10);
        assert!(!input.include_historical);
        assert!(input.recency.enabled);
        let input: SearchInput = serde_json::from_value(json!({"query": "x", "recency": {}})).unwrap();
        assert!(input.recency.enabled);
    }

    #[test]
    fn recall_has_no_historical_mode() {
        let error = serde_json::from_value::<RecallInput>(json!({"query": "x", "include_historical": true}));
        assert!(error.is_err());
        let input: RecallInput = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(
            (input.max_claims, input.max_artifact_refs, input.max_excerpt_bytes),
            (5, 3, 320)
        );
    }

    #[test]
    fn context_build_takes_the_search_fields_and_a_budget_and_nothing_else() {
        let input: ContextBuildInput =
            serde_json::from_value(json!({"query": "x", "limit": 3, "include_historical": true})).unwrap();
        assert_eq!(input.max_bytes, 16384);
        let search = input.search();
        assert_eq!((search.limit, search.include_historical), (3, true));
        assert!(serde_json::from_value::<ContextBuildInput>(json!({"query": "x", "bogus": 1})).is_err());
    }
}
