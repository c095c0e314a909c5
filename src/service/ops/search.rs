//! `search`, and the ranked-hit pipeline `memory.recall` and `context.build` share:
//! candidates → merge → cut to the limit → `bounded_recency_v1` → hits with excerpts,
//! citations, provenance and currentness, all judged at one evaluation instant.

use std::cmp::Ordering;

use rusqlite::Connection;

use crate::protocol::claim::EvidenceLocator;
use crate::protocol::relation::EntityType;
use crate::protocol::retrieval::{ClaimHitProvenance, SearchHit, SearchInput, SearchRanking, SearchResult};
use crate::protocol::{AmbientContext, Horizon, limits};
use crate::retrieval::rank::{self, EffectiveBasis, RankInput};
use crate::retrieval::snippet::{SNIPPET_TOKENS, snippet};
use crate::retrieval::{FtsQuery, build_fts_query};
use crate::service::convert::{context_owner, evidence_locator, owner_context, stored_object};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError, to_value};
use crate::store::artifact::{ArtifactRow, is_indexable_media_type};
use crate::store::claim::ClaimRow;
use crate::store::scope::Owner;
use crate::store::search::{self as store_search, CandidateQuery, Pins};
use crate::store::{StoreError, StoreResult};
use crate::timefmt::{self, Timestamp};

pub(super) fn search(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: SearchInput = call.input()?;
    let request = SearchRequest::new(&input, call.context()?)?;
    let ranked = service.store().read(|conn| {
        store_search::ensure_index_ready(conn, request.min_commit_seq)?;
        request.run(service, conn, Kinds::Both)
    })?;
    let broaden_hint = ranked.broaden_hint(request.horizon);
    let refine_hint = ranked.refine_hint("matches", "limit", limits::MAX_SEARCH_ITEMS);
    Output::read(SearchResult {
        query: input.query,
        horizon: request.horizon,
        retrieval_mode: rank::retrieval_mode(request.recency),
        hits: ranked.hits.into_iter().map(|hit| hit.wire).collect(),
        truncated: ranked.truncated,
        refine_hint,
        broaden_hint,
    })
}

/// Which entity types a ranked search covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kinds {
    Both,
    Artifacts,
    Claims,
}

impl Kinds {
    fn artifacts(self) -> bool {
        matches!(self, Kinds::Both | Kinds::Artifacts)
    }

    fn claims(self) -> bool {
        matches!(self, Kinds::Both | Kinds::Claims)
    }
}

/// A validated search, ready to run against a snapshot.
pub(super) struct SearchRequest {
    pub fts: FtsQuery,
    pub horizon: Horizon,
    pub ambient: Owner,
    pub pins: Pins,
    pub include_historical: bool,
    pub limit: usize,
    pub recency: bool,
    pub min_commit_seq: Option<i64>,
    /// The one evaluation instant of the request.
    pub evaluated_at: Timestamp,
}

impl SearchRequest {
    /// Checks the query, the limit and `min_commit_seq`, in that order (the reason is bounded
    /// for every horizon operation before dispatch).
    pub fn new(input: &SearchInput, context: &AmbientContext) -> Result<SearchRequest, ServiceError> {
        let fts = query(&input.query)?;
        let limit = validate::limit("limit", input.limit, limits::MAX_SEARCH_ITEMS)?;
        Ok(SearchRequest {
            fts,
            horizon: input.horizon,
            ambient: context_owner(context),
            pins: Pins::parse(&context.pins),
            include_historical: input.include_historical,
            limit,
            recency: input.recency.enabled,
            min_commit_seq: min_commit_seq(input.min_commit_seq)?,
            evaluated_at: timefmt::now(),
        })
    }

    /// The same search with another limit (recall runs one per entity type).
    pub fn with_limit(&self, limit: usize) -> SearchRequest {
        SearchRequest {
            fts: self.fts.clone(),
            pins: self.pins.clone(),
            ambient: self.ambient.clone(),
            limit,
            ..*self
        }
    }

    /// Runs the search in the caller's snapshot.
    pub fn run(&self, service: &Service, conn: &Connection, kinds: Kinds) -> StoreResult<Ranked> {
        let now_db = timefmt::to_db(&self.evaluated_at);
        let query = CandidateQuery {
            match_expr: &self.fts.match_expr,
            ambient: &self.ambient,
            horizon: self.horizon,
            pins: &self.pins,
            include_historical: self.include_historical,
            now_db: &now_db,
            cap: 2 * (self.limit + 1),
        };
        let mut merged: Vec<(Source, f64)> = Vec::new();
        if kinds.artifacts() {
            for candidate in store_search::artifact_candidates(conn, &query)? {
                merged.push((
                    Source::Artifact(candidate.row),
                    rank::lexical_score_from_bm25(candidate.bm25),
                ));
            }
        }
        if kinds.claims() {
            for candidate in store_search::claim_candidates(conn, &query)? {
                merged.push((
                    Source::Claim(candidate.row),
                    rank::lexical_score_from_bm25(candidate.bm25),
                ));
            }
        }
        merged.sort_by(|(a, sa), (b, sb)| {
            sb.partial_cmp(sa)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.entity_id().cmp(b.entity_id()))
        });
        let truncated = merged.len() > self.limit;
        merged.truncate(self.limit);

        let judged: Vec<Judged> = merged
            .into_iter()
            .map(|(source, lexical_score)| self.judge(source, lexical_score, &now_db))
            .collect();
        let inputs: Vec<RankInput> = judged.iter().map(|j| j.rank_input).collect();
        let positions = rank::rerank(&inputs, self.recency);
        let mut hits: Vec<(usize, RankedHit)> = Vec::with_capacity(judged.len());
        for (index, (judged, position)) in judged.into_iter().zip(positions).enumerate() {
            let ranking = SearchRanking {
                policy_version: rank::POLICY_VERSION,
                recency_enabled: self.recency,
                recency_eligible: judged.rank_input.eligible,
                lexical_score: judged.rank_input.lexical_score,
                recency_bonus: position.bonus,
                lexical_position: index + 1,
                final_position: position.final_position + 1,
                max_promotion: rank::MAX_PROMOTION,
                effective_at: timefmt::to_wire(&judged.effective_at),
                effective_at_basis: judged.basis.as_str(),
                evaluated_at: timefmt::to_wire(&self.evaluated_at),
                decay_class: judged.rank_input.class.as_str(),
            };
            let hit = self.build_hit(service, judged, ranking, position.score)?;
            hits.push((position.final_position, hit));
        }
        hits.sort_by_key(|(position, _)| *position);
        Ok(Ranked {
            hits: hits.into_iter().map(|(_, hit)| hit).collect(),
            truncated,
            limit: self.limit,
        })
    }

    /// Currentness, effective time and recency eligibility of one candidate.
    fn judge(&self, source: Source, lexical_score: f64, now_db: &str) -> Judged {
        let (effective_db, basis, class, temporal, eligible_lifecycle) = match &source {
            Source::Artifact(row) => (
                row.revision_created_at.clone(),
                EffectiveBasis::RevisionCreatedAt,
                rank::decay_class_for_artifact(&row.kind),
                None,
                row.status == "active" && row.is_current_revision(),
            ),
            Source::Claim(row) => {
                let (effective, basis) = match &row.valid_from {
                    Some(from) => (from.clone(), EffectiveBasis::ValidFrom),
                    None => (row.revision_created_at.clone(), EffectiveBasis::RevisionCreatedAt),
                };
                let state = temporal_state(row, now_db);
                let is_current = row.is_current_revision() && !row.is_terminal() && state == "current";
                (
                    effective,
                    basis,
                    rank::decay_class_for_claim(&row.claim_type),
                    Some(state),
                    is_current,
                )
            }
        };
        let effective_at = timefmt::parse_db(&effective_db).unwrap_or(self.evaluated_at);
        let age_seconds = (self.evaluated_at - effective_at).num_seconds();
        Judged {
            source,
            temporal,
            effective_at,
            basis,
            rank_input: RankInput {
                lexical_score,
                eligible: eligible_lifecycle && effective_at <= self.evaluated_at,
                effective_age_seconds: age_seconds,
                class,
            },
        }
    }

    fn build_hit(
        &self,
        service: &Service,
        judged: Judged,
        ranking: SearchRanking,
        score: f64,
    ) -> StoreResult<RankedHit> {
        let evaluated_at = timefmt::to_wire(&self.evaluated_at);
        let wire = match &judged.source {
            Source::Artifact(row) => SearchHit {
                entity_type: EntityType::Artifact,
                entity_id: row.artifact_id.clone(),
                revision_id: row.revision_id.clone(),
                status: row.status.clone(),
                title: row.title.clone(),
                excerpt: artifact_excerpt(service, row, &self.fts.tokens)?,
                citation: artifact_citation(&row.artifact_id, &row.revision_id),
                context: owner_context(&row.owner),
                score,
                ranking,
                matched_by: rank::matched_by(self.recency),
                provenance: stored_object(&row.provenance_json),
            },
            Source::Claim(row) => {
                let temporal_state = judged.temporal.unwrap_or("current");
                let provenance = ClaimHitProvenance {
                    claim_type: row.claim_type.clone(),
                    evidence: row.evidence().iter().map(evidence_locator).collect(),
                    confidence: row.confidence,
                    valid_from: row.valid_from.as_deref().map(timefmt::db_to_wire),
                    valid_until: row.valid_until.as_deref().map(timefmt::db_to_wire),
                    evaluated_at,
                    temporal_state,
                    is_current_revision: row.is_current_revision(),
                    is_current: row.is_current_revision() && !row.is_terminal() && temporal_state == "current",
                };
                SearchHit {
                    entity_type: EntityType::Claim,
                    entity_id: row.claim_id.clone(),
                    revision_id: row.revision_id.clone(),
                    status: row.status.clone(),
                    title: format!("{} claim", row.claim_type),
                    excerpt: row.statement.clone(),
                    citation: claim_citation(&row.claim_id, &row.revision_id),
                    context: owner_context(&row.owner),
                    score,
                    ranking,
                    matched_by: rank::matched_by(self.recency),
                    provenance: to_value(provenance).map_err(|e| StoreError::Internal(e.to_string()))?,
                }
            }
        };
        Ok(RankedHit {
            wire,
            source: judged.source,
            temporal_state: judged.temporal,
        })
    }
}

/// The row behind a hit.
pub(super) enum Source {
    Artifact(ArtifactRow),
    Claim(ClaimRow),
}

impl Source {
    fn entity_id(&self) -> &str {
        match self {
            Source::Artifact(row) => &row.artifact_id,
            Source::Claim(row) => &row.claim_id,
        }
    }
}

struct Judged {
    source: Source,
    temporal: Option<&'static str>,
    effective_at: Timestamp,
    basis: EffectiveBasis,
    rank_input: RankInput,
}

/// A hit in final order, with the row it came from.
pub(super) struct RankedHit {
    pub wire: SearchHit,
    pub source: Source,
    /// Claims only.
    pub temporal_state: Option<&'static str>,
}

/// The final hits of one ranked search.
pub(super) struct Ranked {
    pub hits: Vec<RankedHit>,
    /// More merged candidates existed than the limit.
    pub truncated: bool,
    pub limit: usize,
}

impl Ranked {
    /// Present only when truncated: there is no cursor, so refine or raise the limit.
    pub fn refine_hint(&self, what: &str, field: &str, max: usize) -> Option<String> {
        self.truncated.then(|| {
            format!(
                "More {what} exist than the limit of {}. Refine the query, or raise {field} (at most {max}); \
                 there is no pagination cursor.",
                self.limit
            )
        })
    }

    /// Present only for an empty ambient result: one explicit step broader, never automatic.
    pub fn broaden_hint(&self, horizon: Horizon) -> Option<String> {
        (self.hits.is_empty() && horizon == Horizon::Ambient).then(|| {
            "Nothing matched at the ambient horizon. If the task justifies wider recall, repeat the request \
             with horizon \"workspace\" and a non-empty reason; Memoree never broadens on its own."
                .to_owned()
        })
    }
}

/// Builds the FTS expression, mapping query errors to `INVALID_REQUEST`.
pub(super) fn query(text: &str) -> Result<FtsQuery, ServiceError> {
    build_fts_query(text).map_err(|e| ServiceError::invalid(e.to_string()))
}

/// `min_commit_seq`, which must not be negative.
pub(super) fn min_commit_seq(value: Option<i64>) -> Result<Option<i64>, ServiceError> {
    match value {
        Some(v) if v < 0 => Err(ServiceError::invalid(format!(
            "min_commit_seq must be at least 0, got {v}"
        ))),
        other => Ok(other),
    }
}

/// `future` when `valid_from > now`, else `expired` when `valid_until <= now`, else `current`.
fn temporal_state(row: &ClaimRow, now_db: &str) -> &'static str {
    if row.valid_from.as_deref().is_some_and(|from| from > now_db) {
        "future"
    } else if row.valid_until.as_deref().is_some_and(|until| until <= now_db) {
        "expired"
    } else {
        "current"
    }
}

/// The body snippet of an artifact whose body is indexed as text; `""` otherwise.
fn artifact_excerpt(service: &Service, row: &ArtifactRow, tokens: &[String]) -> StoreResult<String> {
    if !is_indexable_media_type(&row.media_type) || row.purged {
        return Ok(String::new());
    }
    let bytes = row.read_content(service.store().blobs())?;
    Ok(snippet(&String::from_utf8_lossy(&bytes), tokens, SNIPPET_TOKENS))
}

/// `memoree://artifact/<artifact>@<revision>`.
pub(super) fn artifact_citation(artifact_id: &str, revision_id: &str) -> String {
    format!("memoree://artifact/{artifact_id}@{revision_id}")
}

/// `memoree://claim/<claim>@<revision>`.
pub(super) fn claim_citation(claim_id: &str, revision_id: &str) -> String {
    format!("memoree://claim/{claim_id}@{revision_id}")
}

/// An evidence citation: the artifact citation plus `#<start>-<end>` when a span exists.
pub(super) fn evidence_citation(locator: &EvidenceLocator) -> String {
    let base = artifact_citation(&locator.artifact_id, &locator.revision_id);
    match (locator.start_byte, locator.end_byte) {
        (Some(start), Some(end)) => format!("{base}#{start}-{end}"),
        _ => base,
    }
}
