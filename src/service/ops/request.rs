//! What a search asks, before it runs: the validated [`SearchRequest`] that `search`,
//! `memory.recall`, `context.build` and `memory.probe` share, the entity types and tables it
//! covers, the rows behind its hits and the citations that name them.
//!
//! This is the bottom of the retrieval operations: `candidates`, `semantic` and `search`
//! build on it, and it imports none of them.

use std::sync::{Arc, OnceLock};

use crate::protocol::claim::EvidenceLocator;
use crate::protocol::retrieval::SearchInput;
use crate::protocol::{AmbientContext, Horizon, limits};
use crate::retrieval::corpus::CorpusStats;
use crate::retrieval::{Analysis, Plan, Vocabulary, analyze};
use crate::service::convert::context_owner;
use crate::service::{Grant, Service, ServiceError, validate};
use crate::store::artifact::ArtifactRow;
use crate::store::claim::ClaimRow;
use crate::store::scope::Owner;
use crate::store::search::Pins;
use crate::store::{Db, StoreResult};
use crate::timefmt::{self, Timestamp};

/// Which table a fetch reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    Artifacts,
    Claims,
}

/// Which entity types a ranked search covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kinds {
    Both,
    Artifacts,
    Claims,
}

impl Kinds {
    pub(super) fn tables(self) -> &'static [Table] {
        match self {
            Kinds::Both => &[Table::Artifacts, Table::Claims],
            Kinds::Artifacts => &[Table::Artifacts],
            Kinds::Claims => &[Table::Claims],
        }
    }
}

/// A validated search, ready to run against a snapshot.
pub(super) struct SearchRequest {
    /// The query as written (what a semantic model reads).
    pub query: String,
    pub analysis: Analysis,
    pub horizon: Horizon,
    pub ambient: Owner,
    pub pins: Pins,
    pub include_historical: bool,
    pub limit: usize,
    pub recency: bool,
    pub min_commit_seq: Option<i64>,
    /// The one evaluation instant of the request.
    pub evaluated_at: Timestamp,
    /// A recall asked for its unqualified candidates: near misses are topped up even when
    /// something qualified.
    pub candidates_asked: bool,
    /// Keep the unqualified candidates examined in [`Ranked::pool`] instead of choosing near
    /// misses from them (`memory.retrieve` hands them to its probe).
    pub keep_pool: bool,
    /// The query's vector, computed once when a model first reads it and shared by the
    /// request's copies (`memory.recall` runs up to three searches of one query).
    pub query_vector: Arc<OnceLock<Vec<f32>>>,
}

impl SearchRequest {
    /// Checks the query, the limit and `min_commit_seq`, in that order (the reason is bounded
    /// for every horizon operation before dispatch).
    pub fn new(input: &SearchInput, context: &AmbientContext) -> Result<SearchRequest, ServiceError> {
        let analysis = analyze(&input.query).map_err(|e| ServiceError::invalid(e.to_string()))?;
        let limit = validate::limit("limit", input.limit, limits::MAX_SEARCH_ITEMS)?;
        Ok(SearchRequest {
            query: input.query.clone(),
            analysis,
            horizon: input.horizon,
            ambient: context_owner(context),
            pins: Pins::parse(&context.pins),
            include_historical: input.include_historical,
            limit,
            recency: input.recency.enabled,
            min_commit_seq: min_commit_seq(input.min_commit_seq)?,
            evaluated_at: timefmt::now(),
            candidates_asked: false,
            keep_pool: false,
            query_vector: Arc::default(),
        })
    }

    /// The same search with another limit (recall runs one per entity type).
    pub fn with_limit(&self, limit: usize) -> SearchRequest {
        SearchRequest {
            query: self.query.clone(),
            analysis: self.analysis.clone(),
            pins: self.pins.clone(),
            ambient: self.ambient.clone(),
            query_vector: Arc::clone(&self.query_vector),
            limit,
            ..*self
        }
    }

    /// Plans the query against the store's vocabulary as of `conn`'s snapshot.
    pub fn plan(&self, service: &Service, conn: Db<'_>) -> StoreResult<Plan> {
        term_statistics(service, conn, service.grant(), |vocabulary, corpus| {
            let mut plan = Plan::with_policy(service.runtime().qualification, self.analysis.clone(), vocabulary);
            plan.corpus = corpus;
            plan
        })
    }
}

/// The row behind a hit.
#[derive(Clone)]
pub(super) enum Source {
    Artifact(ArtifactRow),
    Claim(ClaimRow),
}

impl Source {
    pub fn entity_id(&self) -> &str {
        match self {
            Source::Artifact(row) => &row.artifact_id,
            Source::Claim(row) => &row.claim_id,
        }
    }
}

/// The one source of the term statistics a query is planned with: which terms exist (its
/// expansions) and in how many of how many rows (the generic-by-frequency rule, and the
/// unit weights of `qualified_units_v2`), counted over what `scope` may read as of `conn`'s
/// snapshot. An unrestricted grant counts over the whole store (the shared vocabulary cache)
/// and gets no corpus statistics (FTS5's own bm25 scores it); a restricted grant counts over
/// its own workspaces only (`store::vocab::ScopedVocabularies`) and gets their
/// [`CorpusStats`], which `retrieval::corpus` scores with, so nothing of another workspace
/// moves a weight, an expansion, a correction or a score (issue 28).
pub(super) fn term_statistics<T>(
    service: &Service,
    conn: Db<'_>,
    scope: &Grant,
    f: impl FnOnce(&Vocabulary, Option<CorpusStats>) -> T,
) -> StoreResult<T> {
    if let Some(workspaces) = scope.workspace_list() {
        return service
            .scoped_vocabularies()
            .with_current(service.store(), conn, &workspaces, |vocabulary, stats| {
                f(vocabulary, Some(stats))
            });
    }
    service
        .vocabulary()
        .with_current(service.store(), conn, |vocabulary| f(vocabulary, None))
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
