//! `context.resolve` and `capabilities`.

use crate::instructions::INSTRUCTION_SET_VERSION;
use crate::protocol::meta::{
    CapabilitiesDocument, CapabilitiesInput, CitedProjectionCapabilities, ContextResolveInput, ContextResolveResult,
    DecayClassPolicy, OperationCapability, RecencyPolicy, RetrievalFeedbackCapabilities, SourceSyncCapabilities,
};
use crate::protocol::{ContextSource, Horizon, Operation, PROTOCOL_VERSION, ResolvedContext};
use crate::protocol::{agent, citation, limits};
use crate::retrieval::rank::{self, DecayClass};
use crate::service::{Call, Output, ServiceError};

pub(super) fn context_resolve(call: &Call, _: ContextResolveInput) -> Result<Output, ServiceError> {
    let context = call.context()?;
    Output::read(ContextResolveResult {
        resolved: true,
        context: ResolvedContext::new(context, call.context_source(), Horizon::Ambient),
    })
}

pub(super) fn capabilities(service: &crate::service::Service, _: CapabilitiesInput) -> Result<Output, ServiceError> {
    let mut document = document_for(service.store().kind());
    let semantic = &service.runtime().semantic;
    if semantic.embedder().is_some() {
        document.extensions.push("semantic_evidence".into());
    }
    document.semantic = Some(semantic.describe());
    Output::read(document)
}

/// The capabilities of this binary. Every protocol v1 operation is implemented (the
/// dispatch table is exhaustive); extensions are listed in `extensions`.
/// The capabilities document of a store of `kind`.
pub(crate) fn document_for(kind: crate::store::StoreKind) -> CapabilitiesDocument {
    CapabilitiesDocument {
        product: "memoree".into(),
        protocol_version: PROTOCOL_VERSION,
        instruction_set_version: INSTRUCTION_SET_VERSION,
        local_personal_mode: true,
        authorization: false,
        default_horizon: Horizon::Ambient,
        supported_horizons: Horizon::ALL.to_vec(),
        ambient_context_sources: vec![
            ContextSource::Explicit,
            ContextSource::Session,
            ContextSource::Marker,
            ContextSource::Personal,
        ],
        broader_horizons_require_reason: true,
        prompt_injection_signals: true,
        max_frame_bytes: limits::MAX_FRAME_BYTES,
        max_concurrent_connections: limits::MAX_CONCURRENT_CONNECTIONS,
        max_artifact_bytes: limits::MAX_ARTIFACT_BYTES,
        max_encoded_content_bytes: limits::MAX_ENCODED_CONTENT_BYTES,
        max_query_bytes: limits::MAX_QUERY_BYTES,
        max_title_bytes: limits::MAX_TITLE_BYTES,
        max_claim_statement_bytes: limits::MAX_CLAIM_STATEMENT_BYTES,
        max_metadata_bytes: limits::MAX_METADATA_BYTES,
        max_evidence_items: limits::MAX_EVIDENCE_ITEMS,
        max_search_items: limits::MAX_SEARCH_ITEMS,
        max_recall_claims: limits::MAX_RECALL_CLAIMS,
        max_recall_artifact_refs: limits::MAX_RECALL_ARTIFACT_REFS,
        max_recall_excerpt_bytes: limits::MAX_RECALL_EXCERPT_BYTES,
        max_recall_candidate_claims: limits::MAX_RECALL_CANDIDATES,
        max_recall_candidate_artifact_refs: limits::MAX_RECALL_CANDIDATES,
        max_citation_bytes: citation::MAX_CITATION_BYTES,
        max_citation_fetch_bytes: citation::MAX_CITATION_FETCH_BYTES,
        max_probe_items: agent::MAX_PROBE_LEADS as usize,
        max_probe_title_bytes: agent::MAX_PROBE_TITLE_BYTES,
        max_retrieve_leads: agent::MAX_RETRIEVE_LEADS as usize,
        max_retrieve_references: agent::MAX_RETRIEVE_REFERENCES,
        max_retrieve_evidence_bytes: agent::MAX_RETRIEVE_EVIDENCE_BYTES as usize,
        max_source_items: 0,
        max_projection_items: 0,
        max_feedback_items: 0,
        source_sync: SourceSyncCapabilities::none(),
        cited_projections: CitedProjectionCapabilities::none(),
        retrieval_feedback: RetrievalFeedbackCapabilities::none(),
        max_recall_evidence_excerpts_per_claim: limits::MAX_RECALL_EVIDENCE_EXCERPTS_PER_CLAIM,
        max_history_items: limits::MAX_HISTORY_ITEMS,
        max_relation_list_items: limits::MAX_RELATION_LIST_ITEMS,
        max_conflict_list_items: limits::MAX_CONFLICT_LIST_ITEMS,
        authoritative_store: kind.authoritative.into(),
        blob_store: kind.blobs.into(),
        retrieval: vec!["exact".into(), kind.retrieval.into()],
        guarantees: [
            "immutable_revisions",
            "idempotent_mutations",
            "optimistic_concurrency",
            "read_your_writes_commit_sequence",
            "revision_stable_citations",
            "explicit_search_broadening",
            "ambient_write_scope",
            "temporal_validity_filtering",
            "revision_bound_conflict_lifecycle",
            "automatic_live_conflict_reassessment",
            "append_only_conflict_events",
        ]
        .map(Into::into)
        .to_vec(),
        operations: Operation::ALL
            .iter()
            .copied()
            // Extensions are advertised in `extensions` only: a client written against the
            // reference parses `operation` as one of the 23 protocol v1 names.
            .filter(|op| op.is_protocol_v1())
            .map(|op| OperationCapability {
                operation: op,
                available: true,
                mutating: op.is_mutating(),
                side_effecting: op.is_side_effecting(),
                needs_context: op.needs_context(),
                requires_idempotency_key: op.is_mutating(),
                supports_explicit_horizon: op.supports_explicit_horizon(),
            })
            .collect(),
        extensions: [
            "structured_verify_issues",
            "reindex",
            "connection_busy_envelope",
            "multi_request_connections",
            "pipelined_requests",
            "recency_policy",
            "artifact.list",
            "claim.list",
            "event.list",
            "artifact.purge",
            "claim.purge",
            "import",
            "portable_export_v1",
            "recall_candidates",
            "citation.get",
            "memory.probe",
            "memory.retrieve",
        ]
        .map(Into::into)
        .to_vec(),
        recency_policy: recency_policy(),
        semantic: None,
    }
}

fn recency_policy() -> RecencyPolicy {
    const CLASSES: [DecayClass; 7] = [
        DecayClass::Ephemeral,
        DecayClass::Decision,
        DecayClass::Constraint,
        DecayClass::Procedure,
        DecayClass::Observation,
        DecayClass::Preference,
        DecayClass::General,
    ];
    RecencyPolicy {
        policy_version: rank::POLICY_VERSION.into(),
        enabled_by_default: true,
        max_promotion: rank::MAX_PROMOTION,
        decay_classes: CLASSES
            .into_iter()
            .map(|class| DecayClassPolicy {
                decay_class: class.as_str().into(),
                half_life_days: class.half_life_days(),
                max_bonus_ratio: class.max_bonus_ratio(),
            })
            .collect(),
    }
}
