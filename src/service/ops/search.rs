//! `search`, and the ranked-hit pipeline `memory.recall` and `context.build` share:
//! candidates → merge → cut to the limit → `bounded_recency_v1` → hits with excerpts,
//! citations, provenance and currentness, all judged at one evaluation instant.

use super::candidates::{self, AnyUnitRows, Body, Examined, MAX_NEAR_MISSES};
pub(super) use super::request::{Kinds, SearchRequest, Source, artifact_citation, claim_citation, evidence_citation};
use crate::protocol::artifact::ArtifactStatus;
use crate::protocol::relation::EntityType;
use crate::protocol::retrieval::{
    ClaimHitProvenance, NearMiss, QueryAnalysis, SearchHit, SearchInput, SearchRanking, SearchResult,
};
use crate::protocol::status;
use crate::protocol::{Horizon, Label, limits};
use crate::retrieval::Plan;
use crate::retrieval::rank::{self, EffectiveBasis, RankInput};
use crate::retrieval::snippet::{SNIPPET_TOKENS, window_excerpt};
use crate::retrieval::{passage, profile};
use crate::service::convert::{evidence_locator, owner_context, stored_object};
use crate::service::{Call, Output, Service, ServiceError, to_value};
use crate::store::Db;
use crate::store::artifact::ArtifactRow;
use crate::store::claim::ClaimRow;
use crate::store::search::{self as store_search};
use crate::store::{StoreError, StoreResult};
use crate::timefmt::{self, Timestamp};

pub(super) fn search(service: &Service, call: &Call, input: SearchInput) -> Result<Output, ServiceError> {
    let request = SearchRequest::new(&input, call.context()?)?;
    let (ranked, commit_seq) = service.store().read_db(|conn| {
        store_search::ensure_index_ready(conn, request.min_commit_seq)?;
        let plan = request.plan(service, conn)?;
        let ranked = request.run(service, conn, &plan, Kinds::Both, MAX_NEAR_MISSES)?;
        Ok((ranked, crate::store::last_commit_seq(conn)?))
    })?;
    let broaden_hint = ranked.broaden_hint(request.horizon);
    let refine_hint = ranked.refine_hint("matches", "limit", limits::MAX_SEARCH_ITEMS);
    Output::read(SearchResult {
        query: input.query,
        horizon: request.horizon,
        retrieval_mode: rank::retrieval_mode(request.recency).into(),
        query_analysis: ranked.query_analysis.clone(),
        near_misses: ranked.near_misses.clone(),
        projection: status::no_projection(),
        semantic: super::semantic::status(service, commit_seq),
        reranker: status::no_reranker("mixed", ranked.hits.len()),
        qualification_applied: true,
        unqualified_candidate_count: ranked.unqualified.examined as u64,
        best_unqualified_coverage: ranked.unqualified.best_coverage,
        hits: ranked.hits.into_iter().map(|hit| hit.wire).collect(),
        truncated: ranked.truncated,
        refine_hint,
        broaden_hint,
    })
}

/// Static labels as wire labels.
pub(super) fn labels(labels: Vec<&'static str>) -> Vec<Label> {
    labels.into_iter().map(Label::from).collect()
}

impl SearchRequest {
    /// Runs the search in the caller's snapshot: qualified candidates only, cut to the
    /// limit, then `bounded_recency_v1`. Up to `near_misses` unqualified candidates are
    /// kept apart.
    pub fn run(
        &self,
        service: &Service,
        conn: Db<'_>,
        plan: &Plan,
        kinds: Kinds,
        near_misses: usize,
    ) -> StoreResult<Ranked> {
        let now_db = timefmt::to_db(&self.evaluated_at);
        let mut qualified = Vec::new();
        let mut unqualified = Vec::new();
        for &table in kinds.tables() {
            let gathered = candidates::gather(service, conn, self, plan, table, self.limit + 1)?;
            qualified.extend(gathered.qualified);
            unqualified.extend(gathered.unqualified);
        }
        let semantic = super::semantic::SemanticQuery::new(service, self, plan);
        if let Some(query) = &semantic {
            super::semantic::rescue(
                service,
                conn,
                self,
                plan,
                kinds,
                query,
                &mut qualified,
                &mut unqualified,
            )?;
        }
        candidates::settle(&mut qualified, &mut unqualified);
        // Near duplicates collapse once, in lexical order, before fusion reorders anything:
        // which one stands for the group must not depend on the pool fusion ranks (a search
        // and a recall of the same question cite the same revision). Fusion reorders only
        // the first FUSE_DEPTH, so collapsing that deep leaves no pair in the first `limit`.
        if !self.include_historical {
            let depth = match semantic {
                Some(_) => self.limit.max(super::semantic::FUSE_DEPTH),
                None => self.limit,
            };
            qualified = candidates::collapse_duplicates(conn, qualified, depth)?;
        }
        if let Some(query) = &semantic {
            super::semantic::fuse(conn, query, &mut qualified)?;
        }
        let truncated = qualified.len() > self.limit;
        qualified.truncate(self.limit);

        let known: Vec<String> = qualified.iter().map(|e| e.entity_id().to_owned()).collect();
        let (candidates, pool) = if self.keep_pool {
            (Unqualified::default(), Some(Pool { unqualified, known }))
        } else {
            let rows = AnyUnitRows::default();
            let candidates =
                self.near_miss_candidates(service, conn, plan, kinds, unqualified, &known, near_misses, &rows)?;
            (candidates, None)
        };
        let misses: Vec<NearMiss> = candidates.shown.iter().map(|e| self.near_miss(plan, e)).collect();

        let judged: Vec<Judged> = qualified
            .into_iter()
            .map(|examined| self.judge(examined, &now_db))
            .collect();
        let inputs: Vec<RankInput> = judged.iter().map(|j| j.rank_input).collect();
        let positions = rank::rerank(&inputs, self.recency);
        let mut hits: Vec<(usize, RankedHit)> = Vec::with_capacity(judged.len());
        let required_matches = profile::required_matches(plan);
        for (index, (judged, position)) in judged.into_iter().zip(positions).enumerate() {
            let ranking = SearchRanking {
                policy_version: rank::POLICY_VERSION.into(),
                recency_enabled: self.recency,
                recency_eligible: judged.rank_input.eligible,
                lexical_score: judged.examined.lexical_score,
                fused_score: judged.examined.fused_score,
                recency_bonus: position.bonus,
                lexical_position: index + 1,
                final_position: position.final_position + 1,
                max_promotion: rank::MAX_PROMOTION,
                effective_at: timefmt::to_wire(&judged.effective_at),
                effective_at_basis: judged.basis.as_str().into(),
                evaluated_at: timefmt::to_wire(&self.evaluated_at),
                decay_class: judged.rank_input.class.as_str().into(),
                qualification: candidates::qualification_info(plan, &judged.examined),
                collapsed_duplicates: judged.examined.collapsed.clone(),
                reference: candidates::reference_ranking(plan, &judged.examined, required_matches),
            };
            let hit = self.build_hit(plan, judged, ranking, position.score)?;
            hits.push((position.final_position, hit));
        }
        hits.sort_by_key(|(position, _)| *position);
        let hits: Vec<RankedHit> = hits.into_iter().map(|(_, hit)| hit).collect();
        let query_analysis = candidates::query_analysis(plan, hits.is_empty(), misses.len());
        Ok(Ranked {
            hits,
            truncated,
            limit: self.limit,
            near_misses: misses,
            unqualified: candidates,
            pool,
            query_analysis,
        })
    }

    /// Up to `count` near misses: the unqualified candidates already examined, topped up by
    /// one any-unit fetch per table when nothing qualified. `known` are entity ids already
    /// returned as hits.
    #[allow(clippy::too_many_arguments)]
    pub fn near_misses(
        &self,
        service: &Service,
        conn: Db<'_>,
        plan: &Plan,
        kinds: Kinds,
        unqualified: Vec<Examined>,
        known: &[String],
        count: usize,
        rows: &AnyUnitRows,
    ) -> StoreResult<Vec<NearMiss>> {
        let candidates = self.near_miss_candidates(service, conn, plan, kinds, unqualified, known, count, rows)?;
        Ok(candidates.shown.iter().map(|e| self.near_miss(plan, e)).collect())
    }

    /// The candidates behind [`SearchRequest::near_misses`], before their wire form, with
    /// how many unqualified candidates were examined and their best coverage.
    #[allow(clippy::too_many_arguments)]
    pub fn near_miss_candidates(
        &self,
        service: &Service,
        conn: Db<'_>,
        plan: &Plan,
        kinds: Kinds,
        mut unqualified: Vec<Examined>,
        known: &[String],
        count: usize,
        rows: &AnyUnitRows,
    ) -> StoreResult<Unqualified> {
        unqualified.retain(|e| !known.iter().any(|k| k == e.entity_id()));
        // One more fetch only when nothing qualified (then the near misses are the answer's
        // only lead; otherwise the examined candidates suffice) or when a recall asked for
        // its candidates.
        if count > 0 && unqualified.len() < count && (known.is_empty() || self.candidates_asked) {
            let mut seen: Vec<&str> = known.iter().map(String::as_str).collect();
            let ids: Vec<String> = unqualified.iter().map(|e| e.entity_id().to_owned()).collect();
            seen.extend(ids.iter().map(String::as_str));
            let cap = (2 * MAX_NEAR_MISSES).max(count);
            let mut extra = Vec::new();
            for &table in kinds.tables() {
                extra.extend(candidates::more_candidates(
                    service, conn, self, plan, table, &seen, cap, rows,
                )?);
            }
            unqualified.extend(extra);
        }
        let examined = unqualified.len();
        let best_coverage = unqualified
            .iter()
            .map(|e| candidates::lexical_coverage(plan, e))
            .max_by(f64::total_cmp);
        candidates::order_near_misses(&mut unqualified);
        unqualified.truncate(count);
        Ok(Unqualified {
            shown: unqualified,
            examined,
            best_coverage,
        })
    }

    /// Currentness, effective time and recency eligibility of one candidate.
    fn judge(&self, examined: Examined, now_db: &str) -> Judged {
        let lexical_score = examined.fused_score.unwrap_or(examined.lexical_score);
        let (effective_db, basis, class, temporal, eligible_lifecycle) = match &examined.source {
            Source::Artifact(row) => (
                row.revision_created_at.clone(),
                EffectiveBasis::RevisionCreatedAt,
                rank::decay_class_for_artifact(&row.kind),
                None,
                row.status == ArtifactStatus::Active && row.is_current_revision(),
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
                    rank::decay_class_for_claim(row.claim_type.as_str()),
                    Some(state),
                    is_current,
                )
            }
        };
        let effective_at = timefmt::parse_db(&effective_db).unwrap_or(self.evaluated_at);
        let age_seconds = (self.evaluated_at - effective_at).num_seconds();
        Judged {
            examined,
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

    pub(super) fn near_miss(&self, plan: &Plan, examined: &Examined) -> NearMiss {
        let (entity_type, entity_id, revision_id, citation, title, excerpt, excerpt_citation) = match &examined.source {
            Source::Artifact(row) => {
                let shown = artifact_excerpt(plan, row, examined.body.as_ref());
                (
                    EntityType::Artifact,
                    row.artifact_id.to_string(),
                    row.revision_id.clone().into(),
                    shown.citation,
                    row.title.clone(),
                    shown.excerpt,
                    shown.excerpt_citation,
                )
            }
            Source::Claim(row) => (
                EntityType::Claim,
                row.claim_id.to_string(),
                row.revision_id.clone().into(),
                claim_citation(&row.claim_id, &row.revision_id),
                format!("{} claim", row.claim_type),
                row.statement.clone(),
                None,
            ),
        };
        NearMiss {
            entity_type,
            entity_id,
            revision_id,
            citation,
            title,
            excerpt,
            excerpt_citation,
            qualification: candidates::qualification_info(plan, examined),
        }
    }

    fn build_hit(&self, plan: &Plan, judged: Judged, ranking: SearchRanking, score: f64) -> StoreResult<RankedHit> {
        let evaluated_at = timefmt::to_wire(&self.evaluated_at);
        let examined = judged.examined;
        let mut passage = None;
        let wire = match &examined.source {
            Source::Artifact(row) => {
                let shown = artifact_excerpt(plan, row, examined.body.as_ref());
                passage = shown.passage;
                SearchHit {
                    entity_type: EntityType::Artifact,
                    entity_id: row.artifact_id.to_string(),
                    revision_id: row.revision_id.clone().into(),
                    status: row.status.into(),
                    title: row.title.clone(),
                    excerpt: shown.excerpt,
                    excerpt_citation: shown.excerpt_citation,
                    citation: shown.citation,
                    context: owner_context(&row.owner),
                    score,
                    ranking,
                    matched_by: labels(rank::matched_by(self.recency)),
                    provenance: stored_object(&row.provenance_json),
                }
            }
            Source::Claim(row) => {
                let temporal_state = judged.temporal.unwrap_or("current");
                let provenance = ClaimHitProvenance {
                    claim_type: row.claim_type,
                    evidence: row.evidence().iter().map(evidence_locator).collect(),
                    confidence: row.confidence,
                    valid_from: row.valid_from.as_deref().map(timefmt::db_to_wire),
                    valid_until: row.valid_until.as_deref().map(timefmt::db_to_wire),
                    evaluated_at,
                    temporal_state: temporal_state.into(),
                    is_current_revision: row.is_current_revision(),
                    is_current: row.is_current_revision() && !row.is_terminal() && temporal_state == "current",
                };
                SearchHit {
                    entity_type: EntityType::Claim,
                    entity_id: row.claim_id.to_string(),
                    revision_id: row.revision_id.clone().into(),
                    status: row.status.into(),
                    title: format!("{} claim", row.claim_type),
                    excerpt: row.statement.clone(),
                    excerpt_citation: None,
                    citation: claim_citation(&row.claim_id, &row.revision_id),
                    context: owner_context(&row.owner),
                    score,
                    ranking,
                    matched_by: labels(rank::matched_by(self.recency)),
                    provenance: to_value(provenance).map_err(|e| StoreError::Internal(e.to_string()))?,
                }
            }
        };
        Ok(RankedHit {
            wire,
            source: examined.source,
            temporal_state: judged.temporal,
            body: examined.body,
            passage,
        })
    }
}

struct Judged {
    examined: Examined,
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
    /// Artifacts with a text body: the body and its match positions.
    pub body: Option<Body>,
    /// A long artifact's cited passage (`retrieval::passage`); `None` when cited whole.
    pub passage: Option<Passage>,
}

/// A search's unqualified candidates.
#[derive(Default)]
pub(super) struct Unqualified {
    /// The near misses, best first.
    pub shown: Vec<Examined>,
    /// Unqualified candidates examined (shown or not).
    pub examined: usize,
    /// Their highest [`candidates::lexical_coverage`].
    pub best_coverage: Option<f64>,
}

/// What a search examined and did not return, kept for a later choice of near misses
/// ([`SearchRequest::keep_pool`]).
pub(super) struct Pool {
    /// The unqualified candidates, in the order examined.
    pub unqualified: Vec<Examined>,
    /// The entity ids returned as hits.
    pub known: Vec<String>,
}

/// The final hits of one ranked search.
pub(super) struct Ranked {
    pub hits: Vec<RankedHit>,
    /// More qualified candidates existed than the limit.
    pub truncated: bool,
    pub limit: usize,
    pub near_misses: Vec<NearMiss>,
    /// The candidates behind `near_misses`, and what was examined.
    pub unqualified: Unqualified,
    /// With [`SearchRequest::keep_pool`], what was examined (and no near misses).
    pub pool: Option<Pool>,
    pub query_analysis: QueryAnalysis,
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
            "Nothing relevant matched at the ambient horizon. If the task justifies wider recall, repeat the \
             request with horizon \"workspace\" and a non-empty reason; Memoree never broadens on its own."
                .to_owned()
        })
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

/// What an artifact hit shows and cites.
pub(super) struct ArtifactExcerpt {
    pub excerpt: String,
    /// Exactly the bytes shown.
    pub excerpt_citation: Option<String>,
    /// The whole revision, or for a long text the passage the window lies in.
    pub citation: String,
    /// The passage cited and the window shown in it (long texts only).
    pub passage: Option<Passage>,
}

/// A long artifact's cited passage and the search window inside it, as byte ranges.
#[derive(Clone, Copy, Debug)]
pub(super) struct Passage {
    pub cited: (usize, usize),
    pub window: (usize, usize),
}

/// The match window of an artifact body, the exact bytes it shows and the citation of the
/// hit (`""`, no excerpt citation and the whole revision when the body is not indexed as
/// text or empty). A text longer than `passage::WHOLE_CITATION_MAX_BYTES` whose bytes are
/// valid UTF-8 is cited by the passage holding the window (`retrieval::passage`).
pub(super) fn artifact_excerpt(plan: &Plan, row: &ArtifactRow, body: Option<&Body>) -> ArtifactExcerpt {
    let whole = artifact_citation(&row.artifact_id, &row.revision_id);
    let Some(body) = body else {
        return ArtifactExcerpt {
            excerpt: String::new(),
            excerpt_citation: None,
            citation: whole,
            passage: None,
        };
    };
    let excerpt = window_excerpt(
        &body.text,
        &body.spans,
        &body.instances,
        &plan.unit_scores(),
        SNIPPET_TOKENS,
    );
    let window = (excerpt.start, excerpt.end);
    let passage = (body.exact_bytes && excerpt.start < excerpt.end)
        .then(|| passage::passage(&body.text, window, matched_bytes(body, window)))
        .flatten()
        .map(|cited| Passage {
            cited,
            window: (excerpt.start, excerpt.end),
        });
    ArtifactExcerpt {
        excerpt_citation: excerpt_citation(row, body, excerpt.start, excerpt.end),
        citation: match passage {
            Some(Passage {
                cited: (start, end), ..
            }) => format!("{whole}#{start}-{end}"),
            None => whole,
        },
        excerpt: excerpt.text,
        passage,
    }
}

/// The bytes from the first to the last match instance inside `window`, or the window when
/// it shows none.
fn matched_bytes(body: &Body, (from, to): (usize, usize)) -> (usize, usize) {
    let inside = body.instances.iter().filter_map(|instance| {
        let first = body.spans.get(instance.position)?;
        let last = body.spans.get(instance.position + instance.len.max(1) - 1)?;
        (first.0 >= from && last.1 <= to).then_some((first.0, last.1))
    });
    inside.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))).unwrap_or((from, to))
}

/// `memoree://artifact/<artifact>@<revision>#<start>-<end>` for a non-empty range of a body
/// whose text offsets are byte offsets.
pub(super) fn excerpt_citation(row: &ArtifactRow, body: &Body, start: usize, end: usize) -> Option<String> {
    (body.exact_bytes && start < end).then(|| {
        format!(
            "{}#{start}-{end}",
            artifact_citation(&row.artifact_id, &row.revision_id)
        )
    })
}
