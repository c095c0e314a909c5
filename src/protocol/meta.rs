//! Inputs and outputs of the context-free discovery and context operations.

use serde::{Deserialize, Serialize};

use super::{ContextSource, Horizon, Input, Label, Operation, ResolvedContext};

/// Declares the input of an operation that takes no parameters: `{}`, nothing else.
macro_rules! empty_input {
    ($($(#[$meta:meta])* $name:ident => $op:ident, $output:ty;)+) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            pub struct $name {}

            impl Input for $name {
                const OP: Operation = Operation::$op;
                type Output = $output;
            }
        )+
    };
}
pub(crate) use empty_input;

empty_input! {
    /// `context.resolve` input.
    ContextResolveInput => ContextResolve, ContextResolveResult;
    /// `capabilities` input.
    CapabilitiesInput => Capabilities, CapabilitiesDocument;
    /// `schema` input; the result is the bundle of JSON Schemas.
    SchemaInput => Schema, serde_json::Value;
}

/// `context.resolve` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextResolveResult {
    pub resolved: bool,
    pub context: ResolvedContext,
}

/// One entry of the capabilities operation list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationCapability {
    pub operation: Operation,
    pub available: bool,
    pub mutating: bool,
    pub side_effecting: bool,
    pub needs_context: bool,
    pub requires_idempotency_key: bool,
    pub supports_explicit_horizon: bool,
}

/// `capabilities` result: what this running binary implements and its limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapabilitiesDocument {
    pub product: Label,
    pub protocol_version: u32,
    pub instruction_set_version: u32,
    pub local_personal_mode: bool,
    pub authorization: bool,
    pub default_horizon: Horizon,
    pub supported_horizons: Vec<Horizon>,
    pub ambient_context_sources: Vec<ContextSource>,
    pub broader_horizons_require_reason: bool,
    pub prompt_injection_signals: bool,
    pub max_frame_bytes: usize,
    pub max_concurrent_connections: usize,
    pub max_artifact_bytes: usize,
    pub max_encoded_content_bytes: usize,
    pub max_query_bytes: usize,
    pub max_title_bytes: usize,
    pub max_claim_statement_bytes: usize,
    pub max_metadata_bytes: usize,
    pub max_evidence_items: usize,
    pub max_search_items: usize,
    pub max_recall_claims: usize,
    pub max_recall_artifact_refs: usize,
    pub max_recall_excerpt_bytes: usize,
    pub max_recall_evidence_excerpts_per_claim: usize,
    /// Extension (the reference's v0.7 field): `memory.recall`'s `max_candidate_claims` bound.
    #[serde(default)]
    pub max_recall_candidate_claims: usize,
    /// Extension (v0.7): `memory.recall`'s `max_candidate_artifact_refs` bound.
    #[serde(default)]
    pub max_recall_candidate_artifact_refs: usize,
    /// Extension (v0.7): the longest citation `citation.get` accepts, in bytes.
    #[serde(default)]
    pub max_citation_bytes: usize,
    /// Extension (v0.7): the most bytes one `citation.get` returns.
    #[serde(default)]
    pub max_citation_fetch_bytes: u64,
    /// Extension (v0.7): the most leads one `memory.probe` returns.
    #[serde(default)]
    pub max_probe_items: usize,
    /// Extension (v0.7): a probe lead's title is cut to this many bytes.
    #[serde(default)]
    pub max_probe_title_bytes: usize,
    /// Extension (v0.7): the most recovery leads one `memory.retrieve` follows.
    #[serde(default)]
    pub max_retrieve_leads: usize,
    /// Extension (v0.7): the most recovery spans one `memory.retrieve` returns.
    #[serde(default)]
    pub max_retrieve_references: usize,
    /// Extension (v0.7): the most recovery content bytes one `memory.retrieve` returns.
    #[serde(default)]
    pub max_retrieve_evidence_bytes: usize,
    /// The reference's v0.7 source, projection and feedback bounds: 0, those operations do
    /// not exist here.
    #[serde(default)]
    pub max_source_items: usize,
    #[serde(default)]
    pub max_projection_items: usize,
    #[serde(default)]
    pub max_feedback_items: usize,
    pub max_history_items: usize,
    pub max_relation_list_items: usize,
    pub max_conflict_list_items: usize,
    pub authoritative_store: Label,
    pub blob_store: Label,
    pub retrieval: Vec<Label>,
    pub guarantees: Vec<Label>,
    pub operations: Vec<OperationCapability>,
    pub extensions: Vec<Label>,
    /// Extension: the default recency rerank of the retrieval operations.
    pub recency_policy: RecencyPolicy,
    /// The reference's v0.7 capability objects, filled truthfully: no source sync, no cited
    /// projections, no retrieval feedback here.
    #[serde(default)]
    pub source_sync: SourceSyncCapabilities,
    #[serde(default)]
    pub cited_projections: CitedProjectionCapabilities,
    #[serde(default)]
    pub retrieval_feedback: RetrievalFeedbackCapabilities,
    /// Extension: the local semantic model, or why retrieval is lexical only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticStatus>,
}

/// Out-of-process source connectors (the reference's v0.7 `source.*` operations).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSyncCapabilities {
    pub connector_runtime: String,
    pub stable_external_identity: bool,
    pub cursor_checkpointing: bool,
    pub withdrawal: String,
    pub erasure: String,
}

impl SourceSyncCapabilities {
    /// This implementation's: none.
    pub fn none() -> SourceSyncCapabilities {
        SourceSyncCapabilities {
            connector_runtime: "none".to_owned(),
            stable_external_identity: false,
            cursor_checkpointing: false,
            withdrawal: "none".to_owned(),
            erasure: "none".to_owned(),
        }
    }
}

/// Cited derived projections as retrieval candidates (the reference's v0.7 `projection.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitedProjectionCapabilities {
    pub role: String,
    pub exact_raw_evidence_required: bool,
    pub can_qualify_presence: bool,
    pub included_in_context_build: bool,
}

impl CitedProjectionCapabilities {
    /// This implementation's: none.
    pub fn none() -> CitedProjectionCapabilities {
        CitedProjectionCapabilities {
            role: "none".to_owned(),
            exact_raw_evidence_required: true,
            can_qualify_presence: false,
            included_in_context_build: false,
        }
    }
}

/// Explicit retrieval feedback (the reference's v0.7 `feedback.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalFeedbackCapabilities {
    pub capture: String,
    pub query_storage_default: String,
    pub automatic_online_learning: bool,
}

impl RetrievalFeedbackCapabilities {
    /// This implementation's: none.
    pub fn none() -> RetrievalFeedbackCapabilities {
        RetrievalFeedbackCapabilities {
            capture: "none".to_owned(),
            query_storage_default: "none".to_owned(),
            automatic_online_learning: false,
        }
    }
}

/// The bounded recency rerank as reported by `capabilities`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecencyPolicy {
    pub policy_version: Label,
    pub enabled_by_default: bool,
    pub max_promotion: usize,
    pub decay_classes: Vec<DecayClassPolicy>,
}

/// One decay class of the recency rerank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayClassPolicy {
    pub decay_class: Label,
    pub half_life_days: f64,
    pub max_bonus_ratio: f64,
}

/// Whether retrieval has a local semantic model (`capabilities` and `doctor`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SemanticStatus {
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u64>,
    /// Why semantics is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `doctor` only (store-wide): how many current revisions hold stored vectors of the
    /// loaded model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorCoverage>,
}

/// The stored semantic projection's reach over the current revisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorCoverage {
    /// Current, unpurged artifact and claim revisions with vectors of the loaded model.
    pub covered: u64,
    /// Current, unpurged artifact and claim revisions.
    pub total: u64,
}
