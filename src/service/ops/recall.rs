//! `memory.recall`: current claims and artifact references, searched independently over
//! the search pipeline so the two never compete for slots, with exact evidence citations,
//! bounded source previews and open contradictions. No historical mode, no broadening.

use std::collections::HashMap;

use crate::store::Db;

use super::candidates;
use super::candidates::AnyUnitRows;
use super::recall_candidates::{self, Candidates, fit_excerpt};
use super::search::{
    Kinds, Pool, Ranked, RankedHit, SearchRequest, Source, artifact_citation, evidence_citation, labels,
};
use crate::protocol::Warning;
use crate::protocol::claim::ClaimStatus;
use crate::protocol::ids::{ArtifactId, ArtifactRevisionId, RelationId};
use crate::protocol::retrieval::{
    ConflictSummary, RecallArtifactReference, RecallClaim, RecallClaimStatus, RecallEvidenceReference, RecallInput,
    RecallPresence, RecallResult, SearchInput,
};
use crate::protocol::{limits, status};
use crate::retrieval::diversity;
use crate::retrieval::text::words;
use crate::retrieval::{Plan, lossy_span, risk_signals};
use crate::service::convert::evidence_locator;
use crate::service::grant::{Grant, Reach};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::claim::{self as store_claim, ClaimRow, EvidenceRef};
use crate::store::conflict::{self as store_conflict, OpenConflict};
use crate::store::search as store_search;
use crate::store::{StoreError, StoreResult};

pub(super) fn recall(service: &Service, call: &Call, input: RecallInput) -> Result<Output, ServiceError> {
    let run = recall_run(service, call, &input)?;
    let mut output = Output::read(run.result)?;
    output.warnings.extend(run.warnings);
    Ok(output)
}

/// One recall, before its wire envelope: what `memory.retrieve` builds on.
pub(super) struct RecallRun {
    pub result: RecallResult,
    pub warnings: Vec<Warning>,
    /// The commit the recall's snapshot saw.
    pub commit_seq: i64,
}

/// Runs a recall in one snapshot.
pub(super) fn recall_run(service: &Service, call: &Call, input: &RecallInput) -> Result<RecallRun, ServiceError> {
    recall_run_then(service, call, input, None, |_, _, _| Ok(())).map(|(run, ())| run)
}

/// What a recall keeps for the step that follows it in its snapshot (`memory.retrieve`'s
/// probe): the unqualified candidates its searches examined, and the any-unit claim rows
/// fetched at least `claim_rows` deep (the artifact side asks no more than the recall's own
/// near misses need).
#[derive(Clone, Copy)]
pub(super) struct Keep {
    pub claim_rows: usize,
}

/// What a recall examined, handed to the step that follows it in the same snapshot.
pub(super) struct Examination<'a> {
    pub plan: &'a Plan,
    /// The claim search (its first run, before any widening for source diversity).
    pub claim_search: &'a SearchRequest,
    pub artifact_search: &'a SearchRequest,
    /// With [`Keep`], the unqualified candidates each search examined.
    pub claims: Option<Pool>,
    pub artifacts: Option<Pool>,
    /// The any-unit rows the recall fetched (for its near misses), to top up from.
    pub any_unit: &'a AnyUnitRows,
}

/// Runs a recall, then `after` in the same snapshot with what the recall examined and its
/// result (what `memory.retrieve`'s probe reuses). With `keep` the searches keep their
/// unqualified candidates for `after` (and the recall shows no candidates).
pub(super) fn recall_run_then<T>(
    service: &Service,
    call: &Call,
    input: &RecallInput,
    keep: Option<Keep>,
    after: impl FnOnce(Db<'_>, Examination<'_>, &RecallResult) -> StoreResult<T>,
) -> Result<(RecallRun, T), ServiceError> {
    let search = SearchInput {
        query: input.query.clone(),
        horizon: input.horizon,
        reason: input.reason.clone(),
        limit: 1,
        include_historical: false,
        min_commit_seq: input.min_commit_seq,
        recency: input.recency,
    };
    let mut base = SearchRequest::new(&search, call.context()?)?;
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
    let max_candidate_claims = validate::count(
        "max_candidate_claims",
        input.max_candidate_claims,
        limits::MAX_RECALL_CANDIDATES,
    )?;
    let max_candidate_refs = validate::count(
        "max_candidate_artifact_refs",
        input.max_candidate_artifact_refs,
        limits::MAX_RECALL_CANDIDATES,
    )?;
    base.candidates_asked = max_candidate_claims + max_candidate_refs > 0;
    base.keep_pool = keep.is_some();
    let claim_search = base.with_limit(max_claims);
    let artifact_search = base.with_limit(max_refs);
    let horizon = base.horizon;
    let ambient = base.ambient.clone();

    let found = service.store().read_db(|conn| {
        store_search::ensure_index_ready(conn, base.min_commit_seq)?;
        let plan = base.plan(service, conn)?;
        let any_unit = keep.map_or_else(AnyUnitRows::default, |keep| {
            AnyUnitRows::with_least(keep.claim_rows, 0)
        });
        let mut slots = claim_slots(service, conn, &plan, &claim_search, max_claims, max_candidate_claims)?;
        let claim_pool = slots.first.pool.take();
        let (claim_hits, claims_truncated) = (slots.hits, slots.truncated);
        let mut artifact_hits = artifact_search.run(
            service,
            conn,
            &plan,
            Kinds::Artifacts,
            recall_candidates::wanted(max_candidate_refs),
        )?;
        let claim_candidates = Candidates::of(&slots.first, max_candidate_claims, |e| {
            recall_candidates::claim(&plan, e, max_excerpt)
        });
        let artifact_candidates = Candidates::of(&artifact_hits, max_candidate_refs, |e| {
            recall_candidates::artifact(&plan, e, max_excerpt)
        });
        let claim_ids: Vec<&str> = claim_hits.iter().map(|h| h.wire.entity_id.as_str()).collect();
        let conflicts = store_conflict::open_conflicts_for_claims(conn, &claim_ids, &ambient, horizon)?;
        let mut previews = Previews::new(service, &plan, max_excerpt);
        let claims = claim_hits
            .iter()
            .map(|hit| recall_claim(conn, hit, &conflicts, &mut previews))
            .collect::<StoreResult<Vec<_>>>()?;
        let scores = plan.unit_scores();
        let artifact_refs: Vec<_> = artifact_hits
            .hits
            .iter()
            .map(|hit| artifact_ref(hit, &scores, max_excerpt))
            .collect();
        let presence = if !claims.is_empty() {
            RecallPresence::Claims
        } else if !artifact_refs.is_empty() {
            RecallPresence::ArtifactsOnly
        } else {
            RecallPresence::None
        };
        let near_misses = if presence == RecallPresence::None {
            base.near_misses(
                service,
                conn,
                &plan,
                Kinds::Both,
                Vec::new(),
                &[],
                RECALL_NEAR_MISSES,
                &any_unit,
            )?
        } else {
            Vec::new()
        };
        let query_analysis = candidates::query_analysis(&plan, claims.is_empty() && artifact_refs.is_empty(), near_misses.len());
        let warnings = std::mem::take(&mut previews.warnings);
        let commit_seq = crate::store::last_commit_seq(conn)?;
        let semantic = super::semantic::status(service, commit_seq);
        let result = RecallResult {
            semantic_claims: semantic.clone(),
            semantic_artifacts: semantic,
            reranker_claims: status::no_reranker("claim", claims.len()),
            reranker_artifacts: status::no_reranker("artifact", artifact_refs.len()),
            content_is_untrusted: true,
            query: input.query.clone(),
            searched_horizons: vec![horizon],
            presence,
            claims,
            conflicts: conflicts.iter().map(conflict_summary).collect(),
            artifact_refs,
            claims_truncated,
            artifact_refs_truncated: artifact_hits.truncated,
            claims_refine_hint: claims_truncated.then(|| {
                format!(
                    "More claims exist than the limit of {max_claims}. Refine the query, or raise max_claims (at most {}); \
                     there is no pagination cursor.",
                    limits::MAX_RECALL_CLAIMS
                )
            }),
            artifact_refs_refine_hint: artifact_hits.refine_hint(
                "artifact references",
                "max_artifact_refs",
                limits::MAX_RECALL_ARTIFACT_REFS,
            ),
            query_analysis,
            near_misses,
            candidates_hint: recall_candidates::hint(
                claim_candidates.unqualified,
                artifact_candidates.unqualified,
                base.candidates_asked,
            ),
            candidate_claims: claim_candidates.shown,
            candidate_artifact_refs: artifact_candidates.shown,
            candidate_claims_truncated: claim_candidates.truncated,
            candidate_artifact_refs_truncated: artifact_candidates.truncated,
            unqualified_claim_candidates: claim_candidates.unqualified,
            unqualified_artifact_candidates: artifact_candidates.unqualified,
            best_unqualified_claim_coverage: claim_candidates.best_coverage,
            best_unqualified_artifact_coverage: artifact_candidates.best_coverage,
        };
        let examination = Examination {
            plan: &plan,
            claim_search: &claim_search,
            artifact_search: &artifact_search,
            claims: claim_pool,
            artifacts: artifact_hits.pool.take(),
            any_unit: &any_unit,
        };
        let then = after(conn, examination, &result)?;
        Ok((
            RecallRun {
                result,
                warnings,
                commit_seq,
            },
            then,
        ))
    })?;
    Ok(found)
}

/// Near misses recall reports when nothing qualified (`presence: "none"`).
const RECALL_NEAR_MISSES: usize = 3;

/// The claim slots of a recall.
struct ClaimSlots {
    hits: Vec<RankedHit>,
    /// More qualified claims exist than `max_claims`.
    truncated: bool,
    /// The first claim search (its near misses are the claim candidates).
    first: Ranked,
}

/// The claim slots: qualified claims in rank order, except that one source artifact (a
/// claim's first evidence artifact) fills at most two slots while other claims qualify.
/// The first search also keeps up to `candidates` (+1) near misses.
fn claim_slots(
    service: &Service,
    conn: Db<'_>,
    plan: &crate::retrieval::Plan,
    search: &SearchRequest,
    max_claims: usize,
    candidates: usize,
) -> StoreResult<ClaimSlots> {
    let mut first = search.run(
        service,
        conn,
        plan,
        Kinds::Claims,
        recall_candidates::wanted(candidates),
    )?;
    let crowded = |hits: &[RankedHit]| {
        let mut counts: HashMap<String, usize> = HashMap::new();
        sources(hits).into_iter().flatten().any(|source| {
            let count = counts.entry(source).or_default();
            *count += 1;
            *count > diversity::MAX_SLOTS_PER_SOURCE
        })
    };
    if !first.truncated || !crowded(&first.hits) {
        return Ok(ClaimSlots {
            hits: std::mem::take(&mut first.hits),
            truncated: first.truncated,
            first,
        });
    }
    let wider = search
        .with_limit((max_claims * 3).min(limits::MAX_RECALL_CLAIMS * 3))
        .run(service, conn, plan, Kinds::Claims, 0)?;
    let sources = sources(&wider.hits);
    let order = diversity::slot_order(&sources);
    let truncated = wider.hits.len() > max_claims || wider.truncated;
    let mut slots: Vec<Option<RankedHit>> = wider.hits.into_iter().map(Some).collect();
    let hits = order
        .into_iter()
        .take(max_claims)
        .filter_map(|index| slots[index].take())
        .collect();
    Ok(ClaimSlots { hits, truncated, first })
}

/// The first evidence artifact of each claim hit.
fn sources(hits: &[RankedHit]) -> Vec<Option<String>> {
    hits.iter()
        .map(|hit| match &hit.source {
            Source::Claim(row) => row.evidence().first().map(|e| e.artifact_id.to_string()),
            Source::Artifact(_) => None,
        })
        .collect()
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
pub(super) fn conflict_relation_ids(conflicts: &[OpenConflict], claim_id: &str) -> Vec<RelationId> {
    let mut ids: Vec<RelationId> = conflicts
        .iter()
        .filter(|c| c.source_claim_id == claim_id || c.target_claim_id == claim_id)
        .map(|c| c.relation_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn recall_claim(
    conn: Db<'_>,
    hit: &RankedHit,
    conflicts: &[OpenConflict],
    previews: &mut Previews<'_>,
) -> StoreResult<RecallClaim> {
    let Source::Claim(row) = &hit.source else {
        return Err(StoreError::Internal("a claim search returned an artifact".to_owned()));
    };
    let conflict_relation_ids = conflict_relation_ids(conflicts, &row.claim_id);
    let status = if row.status == ClaimStatus::Conflicted || !conflict_relation_ids.is_empty() {
        RecallClaimStatus::Disputed
    } else {
        RecallClaimStatus::Current
    };
    Ok(RecallClaim {
        claim_id: row.claim_id.clone(),
        revision_id: row.revision_id.clone(),
        claim_type: row.claim_type,
        status,
        statement: row.statement.clone(),
        citation: hit.wire.citation.clone(),
        evidence: evidence(conn, row, previews)?,
        conflict_relation_ids,
        score: hit.wire.score,
        matched_by: hit.wire.matched_by.clone(),
        qualification: hit.wire.ranking.qualification.clone(),
        collapsed_duplicates: hit.wire.ranking.collapsed_duplicates.clone(),
    })
}

/// One reference per locator, in order; the first few carry a preview.
fn evidence(conn: Db<'_>, row: &ClaimRow, previews: &mut Previews<'_>) -> StoreResult<Vec<RecallEvidenceReference>> {
    let locators = store_claim::evidence_from_json(&row.evidence_json)
        .ok_or_else(|| StoreError::Integrity(format!("claim revision {} has malformed evidence", row.revision_id)))?;
    locators
        .iter()
        .enumerate()
        .map(|(index, locator)| {
            let with_excerpt = index < limits::MAX_RECALL_EVIDENCE_EXCERPTS_PER_CLAIM;
            previews.reference(conn, &row.claim_id, locator, with_excerpt)
        })
        .collect()
}

/// A locator and whether it gets a preview: artifact, revision, span, preview.
type PreviewKey = (ArtifactId, ArtifactRevisionId, Option<u64>, Option<u64>, bool);

/// Evidence references read once per request and cache key.
struct Previews<'s> {
    service: &'s Service,
    plan: &'s Plan,
    max_excerpt: usize,
    cache: HashMap<PreviewKey, RecallEvidenceReference>,
    /// One [`EVIDENCE_OUTSIDE_GRANT`](crate::service::grant::EVIDENCE_OUTSIDE_GRANT) warning
    /// per claim and foreign locator.
    warnings: Vec<Warning>,
}

impl<'s> Previews<'s> {
    fn new(service: &'s Service, plan: &'s Plan, max_excerpt: usize) -> Previews<'s> {
        Previews {
            service,
            plan,
            max_excerpt,
            cache: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Resolves a locator through the request's grant ([`Grant::evidence`]).
    fn reference(
        &mut self,
        conn: Db<'_>,
        claim_id: &str,
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
        // The one grant-checked read of cited evidence: a revision outside the grant
        // contributes its locator and a warning, nothing read from it.
        let artifact = match self.service.grant().evidence(conn, locator)? {
            Some(Reach::Visible(artifact)) => artifact,
            Some(Reach::Outside) => {
                let warning = Grant::evidence_outside_warning(claim_id, locator);
                if !self.warnings.contains(&warning) {
                    self.warnings.push(warning);
                }
                let locator_wire = evidence_locator(locator);
                return Ok(RecallEvidenceReference {
                    citation: evidence_citation(&locator_wire),
                    artifact_id: locator.artifact_id.clone(),
                    revision_id: locator.revision_id.clone(),
                    start_byte: locator.start_byte,
                    end_byte: locator.end_byte,
                    title: String::new(),
                    media_type: String::new(),
                    excerpt: None,
                    excerpt_truncated: false,
                    excerpt_citation: None,
                });
            }
            None => {
                return Err(StoreError::Integrity(format!(
                    "evidence {} revision {} does not exist",
                    locator.artifact_id, locator.revision_id
                )));
            }
        };
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
        let (excerpt, excerpt_truncated, excerpt_range) =
            if with_excerpt && !artifact.purged && is_text(&artifact.media_type) {
                let bytes = artifact.read_content(self.service.store().blob_source())?;
                match std::str::from_utf8(&bytes) {
                    Ok(_) => {
                        let (start, end) = span.unwrap_or((0, bytes.len() as u64));
                        let (start, end) = (start as usize, end as usize);
                        let text = lossy_span(&bytes, start, end).unwrap_or_default();
                        let exact = std::str::from_utf8(&bytes[start..end]).is_ok();
                        let (from, to) = evidence_window(self.plan, &text, self.max_excerpt);
                        let cut = &text[from..to];
                        let truncated = cut.len() < text.len();
                        let range = (exact && !cut.is_empty()).then_some((start + from, start + to));
                        ((!cut.is_empty()).then(|| cut.to_owned()), truncated, range)
                    }
                    Err(_) => (None, false, None),
                }
            } else {
                (None, false, None)
            };
        let locator_wire = evidence_locator(locator);
        let excerpt_citation = excerpt_range.map(|(from, to)| {
            format!(
                "{}#{from}-{to}",
                artifact_citation(&locator.artifact_id, &locator.revision_id)
            )
        });
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
            excerpt_citation,
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

/// An artifact reference: the hit's match window refitted to `max_excerpt` bytes. Risk
/// signals cover the title and the full-size window, so a cut never hides one.
fn artifact_ref(hit: &RankedHit, scores: &[usize], max_excerpt: usize) -> RecallArtifactReference {
    let wire = &hit.wire;
    let (excerpt, excerpt_truncated, excerpt_citation) = match &hit.source {
        Source::Artifact(row) => fit_excerpt(
            row,
            hit.body.as_ref(),
            hit.passage,
            (&wire.excerpt, wire.excerpt_citation.as_ref()),
            scores,
            max_excerpt,
        ),
        Source::Claim(_) => (wire.excerpt.clone(), false, wire.excerpt_citation.clone()),
    };
    RecallArtifactReference {
        artifact_id: wire.entity_id.as_str().into(),
        revision_id: wire.revision_id.as_str().into(),
        citation: wire.citation.clone(),
        title: wire.title.clone(),
        status: wire.status,
        excerpt,
        excerpt_truncated,
        excerpt_citation,
        score: wire.score,
        matched_by: wire.matched_by.clone(),
        risk_signals: labels(risk_signals(&wire.title, &wire.excerpt)),
        qualification: wire.ranking.qualification.clone(),
    }
}

/// The byte window `[from, to)` of an evidence preview: the whole text when it fits in
/// `max_bytes`; otherwise `max_bytes` around the best-weighted query match, on character
/// (and where possible word) boundaries, or the start of the text when no match fits.
fn evidence_window(plan: &Plan, text: &str, max_bytes: usize) -> (usize, usize) {
    if text.len() <= max_bytes {
        return (0, text.len());
    }
    let head = (0, text.floor_char_boundary(max_bytes));
    let text_words = words(text);
    let matched = plan.match_words(&text_words);
    let scores = plan.unit_scores();
    let best = matched
        .instances
        .iter()
        .max_by(|a, b| scores[a.0].cmp(&scores[b.0]).then(b.1.cmp(&a.1)));
    let Some(&(_, position, len)) = best else {
        return head;
    };
    let (match_start, match_end) = (text_words.spans[position].0, text_words.spans[position + len - 1].1);
    if match_end - match_start > max_bytes {
        return head;
    }
    let slack = max_bytes - (match_end - match_start);
    let mut start = match_start.saturating_sub(slack / 2);
    let mut end = (start + max_bytes).min(text.len());
    start = end.saturating_sub(max_bytes).min(start);
    start = text.ceil_char_boundary(start);
    end = text.floor_char_boundary(end);
    // Prefer whole words at both edges when that keeps the match.
    if let Some(word) = text_words.iter().find(|w| w.start < start && start < w.end)
        && word.end <= match_start
    {
        start = word.end;
    }
    if let Some(word) = text_words.iter().find(|w| w.start < end && end < w.end)
        && word.start >= match_end
    {
        end = word.start;
    }
    (start, end.max(start))
}
