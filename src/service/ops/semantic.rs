//! Semantic evidence for qualification, when the serving process has a model
//! (`crate::semantic`): a candidate that matched part of the query lexically, but not
//! enough, qualifies when the meaning of its text is close enough to the query's.
//!
//! - Only while fewer candidates qualified on their words than the search returns: a
//!   candidate that matched fewer of the query's units never displaces a full answer by
//!   meaning, and a question its words already answer costs no vector read beyond fusion's.
//! - Only candidates with partial lexical support are judged: at least one unit matched,
//!   the shortfall `too_few_units` (never a lone generic word, never a demotion), and
//!   together the matched units carry at least [`MIN_LEXICAL_SHARE`] of the query's
//!   information.
//! - A query naming something this store never saw (a capitalized unit with no row at all
//!   and no correction: a person, a place, a product) is never answered by similarity:
//!   closeness in meaning cannot stand for a name memory does not hold.
//! - The similarity is the cosine of the query's and the candidate's vectors (an
//!   artifact's title and the part of its body around its first match, a claim's
//!   statement), and the requirement is [`PARTIAL_THRESHOLD`] (calibrated on the LoCoMo dev
//!   conversations: BENCHMARKS.md) unless the runtime overrides it for an evaluation.
//! - Everything is a pure function of the model, the query and the candidate's text, so
//!   the same store answers the same way; each judged candidate discloses its similarity and
//!   the requirement (`ranking.qualification.semantic`).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use super::candidates::{Examined, Table};
use super::request::{Kinds, SearchRequest, Source};
use crate::protocol::relation::EntityType;
use crate::retrieval::plan::Plan;
use crate::semantic::{Embedder, project};
use crate::service::Service;
use crate::store::artifact::NewRevision;
use crate::store::vectors::{self, Projection};
use crate::store::{Db, StoreResult};

/// The similarity a candidate with partial lexical support needs.
pub const PARTIAL_THRESHOLD: f64 = 0.55;
/// The share of the query's information a candidate must match lexically to be judged.
pub const MIN_LEXICAL_SHARE: f64 = 0.2;
/// Candidates fetched by the any-unit expression per entity type to be judged.
const POOL: usize = 30;
/// Reciprocal-rank fusion's constant: a hit at lexical rank `a` and semantic rank `b`
/// (1-based) scores `1/(K + a) + 1/(K + b)`. 1, 5 and 10 measure alike (BENCHMARKS.md).
pub const FUSION_K: f64 = 5.0;

/// The reference's semantic status of a search surface at `commit_seq`.
pub(super) fn status(service: &Service, commit_seq: i64) -> crate::protocol::status::SemanticRetrievalStatus {
    let semantic = &service.runtime().semantic;
    let digest = semantic.embedder().and_then(|_| semantic.describe().model_digest);
    crate::protocol::status::semantic(digest, commit_seq)
}
/// Qualified candidates reordered by fusion, in lexical order.
pub(super) const FUSE_DEPTH: usize = 120;

/// The projection of a new artifact revision, when the service has a model.
pub(super) fn project_artifact(service: &Service, new: &NewRevision) -> Option<Projection> {
    let embedder = service.runtime().semantic.embedder()?;
    Some(embedder.project_artifact(&new.title, new.body_text().as_deref()))
}

/// The projection of a new claim revision, when the service has a model.
pub(super) fn project_claim(service: &Service, statement: &str) -> Option<Projection> {
    Some(service.runtime().semantic.embedder()?.project_claim(statement))
}

/// The query's side of the judgment.
pub(super) struct SemanticQuery<'a> {
    pub embedder: &'a Embedder,
    /// The query's names (see [`names`]).
    pub names: Vec<String>,
    pub vector: &'a [f32],
    pub threshold: f64,
    /// Similarities already computed in this search, by (is an artifact, revision `seq`);
    /// `None` for a revision known to have no stored vectors.
    memo: RefCell<HashMap<(bool, i64), Option<f64>>>,
}

impl<'a> SemanticQuery<'a> {
    /// The query's vector, when the service has a model and the query can be judged at all.
    pub fn new(service: &'a Service, request: &'a SearchRequest, plan: &Plan) -> Option<SemanticQuery<'a>> {
        let embedder = service.runtime().semantic.embedder()?;
        let names = names(&request.query);
        if plan.policy.stop_words_only || plan.any_expr.is_none() || names_unknown(&names, plan) {
            return None;
        }
        Some(SemanticQuery {
            embedder,
            names,
            vector: request.query_vector.get_or_init(|| embedder.embed(&request.query)),
            threshold: service.runtime().semantic_threshold.unwrap_or(PARTIAL_THRESHOLD),
            memo: RefCell::default(),
        })
    }
}

/// A name of the query (see [`names`]) the store has no row of: a name memory never saw.
fn names_unknown(names: &[String], plan: &Plan) -> bool {
    plan.units
        .iter()
        .any(|u| u.expansion.df == 0 && is_name(names, &u.unit))
}

/// The folded words of `query` written capitalized, past its first word: a person, a
/// place, a product. Similarity never stands in for one.
pub(super) fn names(query: &str) -> Vec<String> {
    crate::retrieval::text::words(query)
        .iter()
        .skip(1)
        .filter(|w| query[w.start..w.end].chars().next().is_some_and(char::is_uppercase))
        .map(|w| w.folded.to_owned())
        .collect()
}

fn is_name(names: &[String], unit: &crate::retrieval::analyze::Unit) -> bool {
    unit.words.iter().any(|w| names.contains(w))
}

/// While fewer than the limit qualified lexically, judges the unqualified candidates and up
/// to [`POOL`] more any-unit candidates per entity type (of which only those whose
/// similarity clears the requirement are kept), and moves those that clear the requirement
/// to `qualified`.
#[allow(clippy::too_many_arguments)]
pub(super) fn rescue(
    service: &Service,
    conn: Db<'_>,
    request: &SearchRequest,
    plan: &Plan,
    kinds: Kinds,
    query: &SemanticQuery<'_>,
    qualified: &mut Vec<Examined>,
    unqualified: &mut Vec<Examined>,
) -> StoreResult<()> {
    // The rescue is for questions lexical matching answers poorly: once as many qualified on
    // their words as the search returns, meaning promotes nothing (on LoCoMo dev this
    // measures as well as judging every partial match: BENCHMARKS.md), and the vector
    // reads of every partial match (a hundred rows for a common-word question at 100k
    // artifacts) are not made.
    if qualified.len() >= request.limit {
        return Ok(());
    }
    let mut known: HashSet<String> = qualified
        .iter()
        .chain(unqualified.iter())
        .map(|e| e.entity_id().to_owned())
        .collect();
    // An extra candidate can only be rescued, so only one whose meaning clears the
    // requirement is kept. Rows with stored vectors are judged before their bodies are
    // read; the rest are embedded after, with the same result.
    let below = |table: Table, seqs: &[i64]| -> StoreResult<HashSet<i64>> {
        Ok(stored_similarities(conn, query, table, seqs)?
            .into_iter()
            .filter(|(_, similarity)| similarity + 1e-9 < query.threshold)
            .map(|(seq, _)| seq)
            .collect())
    };
    for &table in kinds.tables() {
        let seen: Vec<&str> = known.iter().map(String::as_str).collect();
        let mut extra =
            super::candidates::more_candidates_unless(service, conn, request, plan, table, &seen, POOL, &below)?;
        let similarities = similarities(conn, query, &extra.iter().collect::<Vec<_>>())?;
        let mut similarities = similarities.into_iter();
        extra.retain(|_| similarities.next().is_some_and(|s| s + 1e-9 >= query.threshold));
        known.extend(extra.iter().map(|e| e.entity_id().to_owned()));
        unqualified.extend(extra);
    }
    let floor = plan.policy.total * MIN_LEXICAL_SHARE;
    let partial: Vec<usize> = unqualified
        .iter()
        .enumerate()
        .filter(|(_, examined)| {
            let names_matched =
                plan.units.iter().zip(&examined.matched.units).all(|(unit, found)| {
                    found.is_some() || !(unit.unit.distinctive || is_name(&query.names, &unit.unit))
                });
            examined.demoted.is_none()
                && examined.qualification.shortfall == Some("too_few_units")
                && examined.qualification.matched_weight + 1e-9 >= floor
                && names_matched
        })
        .map(|(index, _)| index)
        .collect();
    let judged: Vec<&Examined> = partial.iter().map(|&i| &unqualified[i]).collect();
    let similarities = similarities(conn, query, &judged)?;
    for (&index, similarity) in partial.iter().zip(similarities) {
        unqualified[index].semantic = Some((similarity, query.threshold));
    }
    let (rescued, rest): (Vec<Examined>, Vec<Examined>) = std::mem::take(unqualified)
        .into_iter()
        .partition(|e| e.semantic.is_some_and(|(s, t)| s + 1e-9 >= t));
    *unqualified = rest;
    qualified.extend(rescued);
    Ok(())
}

fn entity_of(table: Table) -> EntityType {
    match table {
        Table::Artifacts => EntityType::Artifact,
        Table::Claims => EntityType::Claim,
    }
}

/// What the model reads of a candidate: the windows its stored projection would hold.
fn windows_of(examined: &Examined) -> Vec<(usize, usize, String)> {
    match &examined.source {
        Source::Claim(row) => vec![(0, row.statement.len(), row.statement.clone())],
        Source::Artifact(row) => project::artifact_windows(&row.title, examined.body.as_ref().map(|b| b.text.as_str())),
    }
}

/// The similarity of each candidate to the query ([`project::similarity`]): from the stored
/// projection of its revision when there is one, else from the same windows embedded now,
/// so the answer never depends on whether the projection has caught up.
fn similarities(conn: Db<'_>, query: &SemanticQuery<'_>, examined: &[&Examined]) -> StoreResult<Vec<f64>> {
    let key_of = |e: &Examined| match &e.source {
        Source::Artifact(row) => (Table::Artifacts, row.seq),
        Source::Claim(row) => (Table::Claims, row.seq),
    };
    for table in [Table::Artifacts, Table::Claims] {
        let seqs: Vec<i64> = examined
            .iter()
            .map(|e| key_of(e))
            .filter(|&(t, _)| t == table)
            .map(|(_, seq)| seq)
            .collect();
        stored_similarities(conn, query, table, &seqs)?;
    }
    Ok(examined
        .iter()
        .map(|e| {
            let (table, seq) = key_of(e);
            let memo_key = (table == Table::Artifacts, seq);
            if let Some(Some(similarity)) = query.memo.borrow().get(&memo_key) {
                return *similarity;
            }
            let similarity = project::similarity(query.vector, &query.embedder.window_vectors(&windows_of(e)));
            query.memo.borrow_mut().insert(memo_key, Some(similarity));
            similarity
        })
        .collect())
}

/// The similarities of the revisions `seqs` of `table` that have stored vectors, read once per
/// search (the rest are remembered as having none).
fn stored_similarities(
    conn: Db<'_>,
    query: &SemanticQuery<'_>,
    table: Table,
    seqs: &[i64],
) -> StoreResult<HashMap<i64, f64>> {
    let artifact = table == Table::Artifacts;
    let mut memo = query.memo.borrow_mut();
    let unknown: Vec<i64> = seqs
        .iter()
        .copied()
        .filter(|seq| !memo.contains_key(&(artifact, *seq)))
        .collect();
    if !unknown.is_empty() {
        let stored = vectors::load(conn, entity_of(table), query.embedder.projection_key(), &unknown)?;
        for seq in unknown {
            let similarity = stored.get(&seq).map(|w| project::similarity(query.vector, w));
            memo.insert((artifact, seq), similarity);
        }
    }
    Ok(seqs
        .iter()
        .filter_map(|seq| memo.get(&(artifact, *seq)).copied().flatten().map(|s| (*seq, s)))
        .collect())
}

/// Judges every qualified candidate too, and orders them by reciprocal-rank fusion of their
/// lexical and semantic ranks ([`FUSION_K`]; ties keep lexical order). The fused score is
/// what the recency rerank then works on.
pub(super) fn fuse(conn: Db<'_>, query: &SemanticQuery<'_>, all: &mut Vec<Examined>) -> StoreResult<()> {
    // Beyond the first FUSE_DEPTH, lexical order stands (a restricted grant can qualify
    // hundreds of candidates; no request returns more than 100).
    let mut tail = all.split_off(all.len().min(FUSE_DEPTH));
    let qualified = all;
    let unjudged: Vec<usize> = (0..qualified.len())
        .filter(|&i| qualified[i].semantic.is_none())
        .collect();
    let judged: Vec<&Examined> = unjudged.iter().map(|&i| &qualified[i]).collect();
    let similarities = similarities(conn, query, &judged)?;
    for (&index, similarity) in unjudged.iter().zip(similarities) {
        qualified[index].semantic = Some((similarity, query.threshold));
    }
    let similarity_of = |e: &Examined| e.semantic.map_or(0.0, |(s, _)| s);
    let mut by_meaning: Vec<usize> = (0..qualified.len()).collect();
    by_meaning.sort_by(|&a, &b| {
        similarity_of(&qualified[b])
            .partial_cmp(&similarity_of(&qualified[a]))
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    let mut fused: Vec<f64> = (0..qualified.len())
        .map(|rank| 1.0 / (FUSION_K + rank as f64 + 1.0))
        .collect();
    for (rank, &index) in by_meaning.iter().enumerate() {
        fused[index] += 1.0 / (FUSION_K + rank as f64 + 1.0);
    }
    let mut order: Vec<usize> = (0..qualified.len()).collect();
    order.sort_by(|&a, &b| {
        fused[b]
            .partial_cmp(&fused[a])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    let mut slots: Vec<Option<Examined>> = qualified.drain(..).map(Some).collect();
    *qualified = order
        .iter()
        .filter_map(|&i| {
            let mut examined = slots[i].take()?;
            // Scaled so that the recency bonus stays a share of a readable number.
            examined.fused_score = Some((fused[i] * 100_000.0).round() / 1000.0);
            Some(examined)
        })
        .collect();
    qualified.append(&mut tail);
    Ok(())
}
