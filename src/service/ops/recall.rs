//! `memory.recall`: current claims and artifact references, searched independently over
//! the search pipeline so the two never compete for slots, with exact evidence citations,
//! bounded source previews and open contradictions. No historical mode, no broadening.

use std::collections::HashMap;

use rusqlite::Connection;

use super::search::{Kinds, RankedHit, SearchRequest, Source, artifact_citation, evidence_citation};
use crate::protocol::limits;
use crate::protocol::retrieval::{
    ConflictSummary, RecallArtifactReference, RecallClaim, RecallClaimStatus, RecallEvidenceReference, RecallInput,
    RecallPresence, RecallResult, SearchInput,
};
use crate::retrieval::{lossy_span, risk_signals, truncate_to_char_boundary};
use crate::service::convert::evidence_locator;
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::claim::{self as store_claim, ClaimRow, EvidenceRef};
use crate::store::conflict::{self as store_conflict, OpenConflict};
use crate::store::search as store_search;
use crate::store::{StoreError, StoreResult};

pub(super) fn recall(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: RecallInput = call.input()?;
    let search = SearchInput {
        query: input.query.clone(),
        horizon: input.horizon,
        reason: input.reason.clone(),
        limit: 1,
        include_historical: false,
        min_commit_seq: input.min_commit_seq,
        recency: input.recency,
    };
    let base = SearchRequest::new(&search, call.context()?)?;
    let max_claims = validate::limit("max_claims", input.max_claims, limits::MAX_RECALL_CLAIMS)?;
    let max_refs = validate::limit(
        "max_artifact_refs",
        input.max_artifact_refs,
        limits::MAX_RECALL_ARTIFACT_REFS,
    )?;
    let max_excerpt = validate::limit(
        "max_excerpt_bytes",
        input.max_excerpt_bytes,
        limits::MAX_RECALL_EXCERPT_BYTES,
    )?;
    let claim_search = base.with_limit(max_claims);
    let artifact_search = base.with_limit(max_refs);
    let horizon = base.horizon;
    let ambient = base.ambient.clone();

    let found = service.store().read(|conn| {
        store_search::ensure_index_ready(conn, base.min_commit_seq)?;
        let claim_hits = claim_search.run(service, conn, Kinds::Claims)?;
        let artifact_hits = artifact_search.run(service, conn, Kinds::Artifacts)?;
        let claim_ids: Vec<&str> = claim_hits.hits.iter().map(|h| h.wire.entity_id.as_str()).collect();
        let conflicts = store_conflict::open_conflicts_for_claims(conn, &claim_ids, &ambient, horizon)?;
        let mut previews = Previews::new(service, max_excerpt);
        let claims = claim_hits
            .hits
            .iter()
            .map(|hit| recall_claim(conn, hit, &conflicts, &mut previews))
            .collect::<StoreResult<Vec<_>>>()?;
        let artifact_refs: Vec<_> = artifact_hits
            .hits
            .iter()
            .map(|hit| artifact_ref(hit, max_excerpt))
            .collect();
        let presence = if !claims.is_empty() {
            RecallPresence::Claims
        } else if !artifact_refs.is_empty() {
            RecallPresence::ArtifactsOnly
        } else {
            RecallPresence::None
        };
        Ok(RecallResult {
            content_is_untrusted: true,
            query: input.query.clone(),
            searched_horizons: vec![horizon],
            presence,
            claims,
            conflicts: conflicts.iter().map(conflict_summary).collect(),
            artifact_refs,
            claims_truncated: claim_hits.truncated,
            artifact_refs_truncated: artifact_hits.truncated,
            claims_refine_hint: claim_hits.refine_hint("claims", "max_claims", limits::MAX_RECALL_CLAIMS),
            artifact_refs_refine_hint: artifact_hits.refine_hint(
                "artifact references",
                "max_artifact_refs",
                limits::MAX_RECALL_ARTIFACT_REFS,
            ),
        })
    })?;
    Output::read(found)
}

/// The wire form of one open contradiction.
pub(super) fn conflict_summary(conflict: &OpenConflict) -> ConflictSummary {
    ConflictSummary {
        left_id: conflict.source_claim_id.clone(),
        right_id: conflict.target_claim_id.clone(),
        relation_id: conflict.relation_id.clone(),
    }
}

/// The sorted, deduplicated contradiction relation ids involving `claim_id`.
pub(super) fn conflict_relation_ids(conflicts: &[OpenConflict], claim_id: &str) -> Vec<String> {
    let mut ids: Vec<String> = conflicts
        .iter()
        .filter(|c| c.source_claim_id == claim_id || c.target_claim_id == claim_id)
        .map(|c| c.relation_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn recall_claim(
    conn: &Connection,
    hit: &RankedHit,
    conflicts: &[OpenConflict],
    previews: &mut Previews<'_>,
) -> StoreResult<RecallClaim> {
    let Source::Claim(row) = &hit.source else {
        return Err(StoreError::Internal("a claim search returned an artifact".to_owned()));
    };
    let conflict_relation_ids = conflict_relation_ids(conflicts, &row.claim_id);
    let status = if row.status == "conflicted" || !conflict_relation_ids.is_empty() {
        RecallClaimStatus::Disputed
    } else {
        RecallClaimStatus::Current
    };
    Ok(RecallClaim {
        claim_id: row.claim_id.clone(),
        revision_id: row.revision_id.clone(),
        claim_type: row.claim_type.clone(),
        status,
        statement: row.statement.clone(),
        citation: hit.wire.citation.clone(),
        evidence: evidence(conn, row, previews)?,
        conflict_relation_ids,
        score: hit.wire.score,
        matched_by: hit.wire.matched_by.clone(),
    })
}

/// One reference per locator, in order; the first few carry a preview.
fn evidence(
    conn: &Connection,
    row: &ClaimRow,
    previews: &mut Previews<'_>,
) -> StoreResult<Vec<RecallEvidenceReference>> {
    let locators = store_claim::evidence_from_json(&row.evidence_json)
        .ok_or_else(|| StoreError::Integrity(format!("claim revision {} has malformed evidence", row.revision_id)))?;
    locators
        .iter()
        .enumerate()
        .map(|(index, locator)| {
            let with_excerpt = index < limits::MAX_RECALL_EVIDENCE_EXCERPTS_PER_CLAIM;
            previews.reference(conn, locator, with_excerpt)
        })
        .collect()
}

/// A locator and whether it gets a preview: artifact, revision, span, preview.
type PreviewKey = (String, String, Option<u64>, Option<u64>, bool);

/// Evidence references read once per request and cache key.
struct Previews<'s> {
    service: &'s Service,
    max_excerpt: usize,
    cache: HashMap<PreviewKey, RecallEvidenceReference>,
}

impl<'s> Previews<'s> {
    fn new(service: &'s Service, max_excerpt: usize) -> Previews<'s> {
        Previews {
            service,
            max_excerpt,
            cache: HashMap::new(),
        }
    }

    /// Resolves a locator without any scope check: evidence is an exact, global read.
    fn reference(
        &mut self,
        conn: &Connection,
        locator: &EvidenceRef,
        with_excerpt: bool,
    ) -> StoreResult<RecallEvidenceReference> {
        let key = (
            locator.artifact_id.clone(),
            locator.revision_id.clone(),
            locator.start_byte,
            locator.end_byte,
            with_excerpt,
        );
        if let Some(found) = self.cache.get(&key) {
            return Ok(found.clone());
        }
        let artifact = store_claim::evidence_revision(conn, locator)?.ok_or_else(|| {
            StoreError::Integrity(format!(
                "evidence {} revision {} does not exist",
                locator.artifact_id, locator.revision_id
            ))
        })?;
        let span = match (locator.start_byte, locator.end_byte) {
            (Some(start), Some(end)) if start < end && end <= artifact.size_bytes => Some((start, end)),
            (None, None) => None,
            _ => {
                return Err(StoreError::Integrity(format!(
                    "evidence span of {} revision {} is malformed or out of range",
                    locator.artifact_id, locator.revision_id
                )));
            }
        };
        // Erased evidence has no excerpt (the response warns `EVIDENCE_SOURCE_PURGED`).
        let (excerpt, excerpt_truncated) = if with_excerpt && !artifact.purged && is_text(&artifact.media_type) {
            let bytes = artifact.read_content(self.service.store().blobs())?;
            match std::str::from_utf8(&bytes) {
                Ok(_) => {
                    let (start, end) = span.unwrap_or((0, bytes.len() as u64));
                    let text = lossy_span(&bytes, start as usize, end as usize).unwrap_or_default();
                    let cut = truncate_to_char_boundary(&text, self.max_excerpt);
                    let truncated = cut.len() < text.len();
                    ((!cut.is_empty()).then(|| cut.to_owned()), truncated)
                }
                Err(_) => (None, false),
            }
        } else {
            (None, false)
        };
        let locator_wire = evidence_locator(locator);
        let reference = RecallEvidenceReference {
            citation: evidence_citation(&locator_wire),
            artifact_id: locator.artifact_id.clone(),
            revision_id: locator.revision_id.clone(),
            start_byte: span.map(|s| s.0),
            end_byte: span.map(|s| s.1),
            title: artifact.title,
            media_type: artifact.media_type,
            excerpt,
            excerpt_truncated,
        };
        self.cache.insert(key, reference.clone());
        Ok(reference)
    }
}

/// Content comes back as text from an exact get only for `text/*` media types.
fn is_text(media_type: &str) -> bool {
    media_type
        .get(..5)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("text/"))
}

fn artifact_ref(hit: &RankedHit, max_excerpt: usize) -> RecallArtifactReference {
    let wire = &hit.wire;
    let cut = truncate_to_char_boundary(&wire.excerpt, max_excerpt);
    RecallArtifactReference {
        artifact_id: wire.entity_id.clone(),
        revision_id: wire.revision_id.clone(),
        citation: artifact_citation(&wire.entity_id, &wire.revision_id),
        title: wire.title.clone(),
        status: wire.status.clone(),
        excerpt: cut.to_owned(),
        excerpt_truncated: cut.len() < wire.excerpt.len(),
        score: wire.score,
        matched_by: wire.matched_by.clone(),
        risk_signals: risk_signals(&wire.title, &wire.excerpt),
    }
}
