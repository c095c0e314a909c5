//! `context.build`: one search, its open contradictions, and the byte-bounded Markdown
//! bundle with a manifest of exactly what was included.
//!
//! The manifest lists included hits only, in rendered order; hits the byte budget left out
//! are counted in `omitted_count` and nothing else. A claim section shows one evidence
//! citation per locator of the claim revision, the same locators the manifest item's
//! `provenance.evidence` carries.

use super::recall::conflict_summary;
use super::search::{Kinds, RankedHit, SearchRequest, Source, evidence_citation, labels};
use crate::protocol::limits;
use crate::protocol::relation::EntityType;
use crate::protocol::retrieval::{BundleManifestItem, ContextBuildInput, ContextBundle};
use crate::retrieval::{EntityKind, RenderConflict, RenderHit, render_context, risk_signals};
use crate::service::convert::evidence_locator;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::claim as store_claim;
use crate::store::conflict as store_conflict;
use crate::store::search as store_search;

pub(super) fn build(service: &Service, call: &Call, input: ContextBuildInput) -> Result<Output, ServiceError> {
    let request = SearchRequest::new(&input.search(), call.context()?)?;
    let max_bytes = usize::try_from(input.max_bytes).unwrap_or(usize::MAX);
    let (ranked, conflicts, commit_seq) = service.store().read_db(|conn| {
        store_search::ensure_index_ready(conn, request.min_commit_seq)?;
        let plan = request.plan(service, conn)?;
        let ranked = request.run(service, conn, &plan, Kinds::Both, 0)?;
        let claim_ids: Vec<&str> = ranked
            .hits
            .iter()
            .filter(|hit| hit.wire.entity_type == EntityType::Claim)
            .map(|hit| hit.wire.entity_id.as_str())
            .collect();
        let conflicts = store_conflict::open_conflicts_for_claims(conn, &claim_ids, &request.ambient, request.horizon)?;
        Ok((ranked, conflicts, crate::store::last_commit_seq(conn)?))
    })?;

    let conflicts: Vec<_> = conflicts.iter().map(conflict_summary).collect();
    let render_conflicts: Vec<RenderConflict> = conflicts
        .iter()
        .map(|c| RenderConflict {
            left_id: c.left_id.to_string(),
            right_id: c.right_id.to_string(),
            relation_id: c.relation_id.to_string(),
        })
        .collect();
    let render_hits: Vec<RenderHit> = ranked.hits.iter().map(render_hit).collect();
    let rendered = render_context(&render_hits, &render_conflicts, max_bytes);

    let manifest = ranked
        .hits
        .iter()
        .zip(&render_hits)
        .zip(&rendered.items)
        .filter(|(_, item)| item.included)
        .map(|((hit, render), item)| BundleManifestItem {
            citation: hit.wire.citation.clone(),
            entity_type: hit.wire.entity_type,
            entity_id: hit.wire.entity_id.clone(),
            revision_id: hit.wire.revision_id.clone(),
            status: hit.wire.status,
            context: hit.wire.context.clone(),
            provenance: hit.wire.provenance.clone(),
            risk_signals: labels(render.risk_signals.clone()),
            source_excerpt_bytes: hit.wire.excerpt.len(),
            included_bytes: item.included_bytes,
            excerpt_available: item.excerpt_available,
            excerpt_truncated: item.excerpt_truncated,
            excerpt_citation: hit.wire.excerpt_citation.clone(),
            reason: format!("retrieved by {}", hit.wire.matched_by.join(" + ")),
        })
        .collect();
    let broaden_hint = ranked.broaden_hint(request.horizon);
    let refine_hint = ranked.refine_hint("matches", "limit", limits::MAX_SEARCH_ITEMS);
    Output::read(ContextBundle {
        content_is_untrusted: true,
        query: input.query,
        max_bytes: input.max_bytes,
        used_bytes: rendered.markdown.len(),
        rendered_markdown: rendered.markdown,
        manifest,
        retrieval_truncated: ranked.truncated,
        refine_hint,
        broaden_hint,
        omitted_count: rendered.omitted_count,
        conflicts,
        query_analysis: ranked.query_analysis.clone(),
        semantic: super::semantic::status(service, commit_seq),
        reranker: crate::protocol::status::no_reranker("mixed", ranked.hits.len()),
    })
}

/// The renderer's view of a hit. Risk signals cover the title and the full excerpt.
fn render_hit(hit: &RankedHit) -> RenderHit {
    let wire = &hit.wire;
    let (entity_kind, is_current, evidence_citations) = match &hit.source {
        Source::Artifact(_) => (EntityKind::Artifact, None, None),
        Source::Claim(row) => {
            let citations = store_claim::evidence_from_json(&row.evidence_json).map(|locators| {
                locators
                    .iter()
                    .map(|l| evidence_citation(&evidence_locator(l)))
                    .collect()
            });
            let is_current = wire.provenance.get("is_current").and_then(serde_json::Value::as_bool);
            (EntityKind::Claim, is_current, citations)
        }
    };
    RenderHit {
        entity_kind,
        title: wire.title.clone(),
        citation: wire.citation.clone(),
        status: wire.status.to_string(),
        temporal_state: hit.temporal_state.map(str::to_owned),
        is_current,
        evidence_citations,
        matched_by: wire.matched_by.iter().map(|m| m.to_string()).collect(),
        risk_signals: risk_signals(&wire.title, &wire.excerpt),
        excerpt: wire.excerpt.clone(),
    }
}
