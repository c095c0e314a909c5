//! The qualification stage of the ranked-hit pipeline: lexical candidates are fetched with
//! the plan's qualifying expression, each one's text is checked against the query units,
//! and only qualified candidates go on to ranking. Candidates that matched some units but
//! did not qualify are kept apart as near misses; they never become hits and are never
//! counted. Near-identical claims collapse onto the best-ranked one here as well.

use std::cmp::Ordering;

use crate::store::Db;

pub(super) use super::request::Table;
use super::request::{SearchRequest, Source};
use crate::protocol::retrieval::{
    QualificationInfo, QueryAnalysis, QueryUnit, ReferenceRanking, RetrievalProfile, SemanticEvidence, UnitMatchInfo,
};
use crate::protocol::status::NOT_IMPLEMENTED;
use crate::retrieval::UnitKind;
use crate::retrieval::diversity::Fingerprint;
use crate::retrieval::plan::{Plan, TextMatch};
use crate::retrieval::qualify::{PolicyVersion, Qualification, qualify};
use crate::retrieval::snippet::Instance;
use crate::retrieval::text::words;
use crate::retrieval::{MatchKind, rank};
use crate::retrieval::{corpus, profile};
use crate::service::Service;
use crate::store::StoreResult;
use crate::store::artifact::is_indexable_media_type;
use crate::store::search::{self as store_search, CandidateQuery};

/// The candidate cap of a search grows by [`GROWTH`] each fetch round while too few
/// candidates qualified and more exist, for at most [`MAX_ROUNDS`] rounds (the last asks
/// sixteen times the first cap) and [`MAX_CANDIDATES`] rows per entity type. Doubling stops a
/// search within twice the rows it needed; the later rounds read their prefix from the first
/// round's ranking (`store::search::Ranking`) instead of ranking again, and examine only the
/// rows no earlier round examined.
const GROWTH: usize = 2;
const MAX_ROUNDS: usize = 5;
const MAX_CANDIDATES: usize = 512;
/// Near misses reported by `search` and `memory.recall`.
pub(super) const MAX_NEAR_MISSES: usize = 5;

/// An artifact body as text, with its word spans and match positions for excerpts.
#[derive(Clone)]
pub(super) struct Body {
    pub text: String,
    pub spans: Vec<(usize, usize)>,
    /// Match instances in the body, sorted by position then unit.
    pub instances: Vec<Instance>,
    /// The stored bytes are valid UTF-8, so offsets into `text` are offsets into them.
    pub exact_bytes: bool,
}

/// One candidate, checked.
#[derive(Clone)]
pub(super) struct Examined {
    pub source: Source,
    pub lexical_score: f64,
    pub body: Option<Body>,
    pub matched: TextMatch,
    pub qualification: Qualification,
    /// Set when a pipeline rule (not the unit count) turned a qualified candidate away.
    pub demoted: Option<&'static str>,
    pub collapsed: Vec<String>,
    /// `(similarity, requirement)` when the semantic stage judged this candidate
    /// (`ops::semantic`); it qualified through meaning when the similarity cleared it.
    pub semantic: Option<(f64, f64)>,
    /// With a semantic model, the fusion of lexical and semantic ranks (`ops::semantic::fuse`).
    pub fused_score: Option<f64>,
}

impl Examined {
    pub fn entity_id(&self) -> &str {
        self.source.entity_id()
    }

    pub fn is_qualified(&self) -> bool {
        (self.qualification.qualified || self.qualified_by_meaning()) && self.demoted.is_none()
    }

    /// Qualified through semantic similarity rather than the lexical units.
    pub fn qualified_by_meaning(&self) -> bool {
        !self.qualification.qualified && self.semantic.is_some_and(|(s, t)| s + 1e-9 >= t)
    }
}

/// `ranking.fusion_policy_version` of a hit whose score fused lexical and semantic ranks
/// (`semantic::fuse`).
pub const FUSION_POLICY: &str = "memoree_lexical_semantic_rrf_v1";

/// Qualified and unqualified candidates of one table.
pub(super) struct Gathered {
    pub qualified: Vec<Examined>,
    pub unqualified: Vec<Examined>,
}

/// Fetches and checks candidates of `table` until `want` qualify or none are left.
pub(super) fn gather(
    service: &Service,
    conn: Db<'_>,
    request: &SearchRequest,
    plan: &Plan,
    table: Table,
    want: usize,
) -> StoreResult<Gathered> {
    let mut gathered = Gathered {
        qualified: Vec::new(),
        unqualified: Vec::new(),
    };
    let Some(expr) = plan.qualifying_expr.as_deref() else {
        return Ok(gathered);
    };
    // A restricted grant selects its newest matches and scores them over its own corpus
    // (`retrieval::corpus`): examine as many as the bound allows at once.
    let mut cap = if plan.corpus.is_some() {
        MAX_CANDIDATES
    } else {
        (2 * want.max(1)).min(MAX_CANDIDATES)
    };
    let mut rounds = Rounds {
        ranking: Some(store_search::Ranking::default()),
        ..Rounds::default()
    };
    for round in 0..MAX_ROUNDS {
        let fetched = fetch(service, conn, request, plan, table, expr, cap, &mut rounds, &no_skip)?;
        let exhausted = fetched.1 < cap;
        for examined in fetched.0 {
            if examined.qualification.qualified {
                gathered.qualified.push(examined);
            } else {
                gathered.unqualified.push(examined);
            }
        }
        if gathered.qualified.len() >= want || exhausted || round + 1 == MAX_ROUNDS || cap >= MAX_CANDIDATES {
            break;
        }
        cap = (cap * GROWTH).min(MAX_CANDIDATES);
    }
    Ok(gathered)
}

/// Up to `cap` candidates of the any-unit expression that are not in `known`, unqualified
/// ones only (the qualifying expression already found the others).
#[allow(clippy::too_many_arguments)]
pub(super) fn more_candidates(
    service: &Service,
    conn: Db<'_>,
    request: &SearchRequest,
    plan: &Plan,
    table: Table,
    known: &[&str],
    cap: usize,
    rows: &AnyUnitRows,
) -> StoreResult<Vec<Examined>> {
    Ok(unqualified_unknown(
        rows.fetch(service, conn, request, plan, table, cap)?,
        known,
    ))
}

/// [`more_candidates`] without the memo, examining only the rows `skip` does not name (by
/// revision `seq`; it sees each fetched batch before any body is read).
#[allow(clippy::too_many_arguments)]
pub(super) fn more_candidates_unless(
    service: &Service,
    conn: Db<'_>,
    request: &SearchRequest,
    plan: &Plan,
    table: Table,
    known: &[&str],
    cap: usize,
    skip: &Skip<'_>,
) -> StoreResult<Vec<Examined>> {
    let Some(expr) = plan.any_expr.as_deref() else {
        return Ok(Vec::new());
    };
    let mut rounds = Rounds::default();
    let (rows, _) = fetch(service, conn, request, plan, table, expr, cap, &mut rounds, skip)?;
    Ok(unqualified_unknown(rows, known))
}

/// The extra candidates worth keeping: unqualified (the qualifying expression already found
/// the others) and not already `known`.
fn unqualified_unknown(rows: Vec<Examined>, known: &[&str]) -> Vec<Examined> {
    rows.into_iter()
        .filter(|e| !e.qualification.qualified && !known.contains(&e.entity_id()))
        .collect()
}

/// Which fetched rows (by revision `seq`) not to examine.
pub(super) type Skip<'a> = dyn Fn(Table, &[i64]) -> StoreResult<std::collections::HashSet<i64>> + 'a;

fn no_skip(_: Table, _: &[i64]) -> StoreResult<std::collections::HashSet<i64>> {
    Ok(std::collections::HashSet::new())
}

/// The any-unit candidates of each table, fetched once at the largest cap asked and served
/// from there: the order is total (score, then row), so the first `n` rows of a fetch of
/// more are exactly a fetch of `n`. `memory.retrieve`'s recall and probe top up from the
/// same rows this way.
///
/// Valid for one request's filters, one plan and one snapshot: make it inside the snapshot
/// and share it only among searches that differ in their limits.
#[derive(Default)]
pub(super) struct AnyUnitRows {
    /// Per table (claims, artifacts): the cap fetched and its rows.
    fetched: std::cell::RefCell<[Option<Fetched>; 2]>,
    /// Rows a first fetch of each table asks for at least (a later, larger ask is known).
    least: [usize; 2],
}

/// One any-unit fetch: the cap asked and the rows it returned, in rank order.
type Fetched = (usize, Vec<Examined>);

impl AnyUnitRows {
    /// A memo whose first fetch of claims and of artifacts asks for at least these rows.
    pub fn with_least(claims: usize, artifacts: usize) -> AnyUnitRows {
        AnyUnitRows {
            fetched: Default::default(),
            least: [claims, artifacts],
        }
    }

    fn fetch(
        &self,
        service: &Service,
        conn: Db<'_>,
        request: &SearchRequest,
        plan: &Plan,
        table: Table,
        cap: usize,
    ) -> StoreResult<Vec<Examined>> {
        let Some(expr) = plan.any_expr.as_deref() else {
            return Ok(Vec::new());
        };
        let slot = match table {
            Table::Claims => 0,
            Table::Artifacts => 1,
        };
        let mut fetched = self.fetched.borrow_mut();
        if let Some((fetched_cap, rows)) = &fetched[slot]
            && *fetched_cap >= cap
        {
            return Ok(rows.iter().take(cap).cloned().collect());
        }
        let wide = cap.max(self.least[slot]);
        let mut rounds = Rounds::default();
        let (rows, _) = fetch(service, conn, request, plan, table, expr, wide, &mut rounds, &no_skip)?;
        let asked = rows.iter().take(cap).cloned().collect();
        fetched[slot] = Some((wide, rows));
        Ok(asked)
    }
}

/// What the rounds of one search share: the rows already examined (by revision `seq`) and,
/// for a search of several rounds ([`gather`]), the bare ranking its first round fetched.
#[derive(Default)]
struct Rounds {
    seen: std::collections::HashSet<i64>,
    ranking: Option<store_search::Ranking>,
}

/// One candidate query of `cap` rows; returns the newly examined rows and the row count.
#[allow(clippy::too_many_arguments)]
fn fetch(
    service: &Service,
    conn: Db<'_>,
    request: &SearchRequest,
    plan: &Plan,
    table: Table,
    expr: &str,
    cap: usize,
    rounds: &mut Rounds,
    skip: &Skip<'_>,
) -> StoreResult<(Vec<Examined>, usize)> {
    let now_db = crate::timefmt::to_db(&request.evaluated_at);
    let query = CandidateQuery {
        match_expr: expr,
        ambient: &request.ambient,
        horizon: request.horizon,
        pins: &request.pins,
        include_historical: request.include_historical,
        now_db: &now_db,
        cap,
        newest_first: plan.corpus.is_some(),
        ranking: rounds.ranking.as_ref(),
    };
    let mut examined = Vec::new();
    let count;
    match table {
        Table::Artifacts => {
            let rows = store_search::artifact_candidates(conn, &query)?;
            count = rows.len();
            examined.reserve(count);
            rounds
                .seen
                .extend(skip(table, &rows.iter().map(|c| c.row.seq).collect::<Vec<_>>())?);
            for candidate in rows {
                if rounds.seen.insert(candidate.row.seq) {
                    examined.push(examine_artifact(service, plan, candidate.row, candidate.bm25)?);
                }
            }
        }
        Table::Claims => {
            let rows = store_search::claim_candidates(conn, &query)?;
            count = rows.len();
            examined.reserve(count);
            rounds
                .seen
                .extend(skip(table, &rows.iter().map(|c| c.row.seq).collect::<Vec<_>>())?);
            for candidate in rows {
                if !rounds.seen.insert(candidate.row.seq) {
                    continue;
                }
                let statement = words(&candidate.row.statement);
                let matched = plan.match_words(&statement);
                let qualification = qualify(&plan.units, &plan.policy, &matched);
                let lexical_score = lexical_score(plan, candidate.bm25, &[(&matched.instances, 1.0)], statement.len());
                examined.push(Examined {
                    source: Source::Claim(candidate.row),
                    lexical_score,
                    body: None,
                    matched,
                    qualification,
                    demoted: None,
                    collapsed: Vec::new(),
                    semantic: None,
                    fused_score: None,
                });
            }
        }
    }
    Ok((examined, count))
}

fn examine_artifact(
    service: &Service,
    plan: &Plan,
    row: crate::store::artifact::ArtifactRow,
    bm25: f64,
) -> StoreResult<Examined> {
    let title_words = words(&row.title);
    let mut matched = plan.match_words(&title_words);
    let title_instances = std::mem::take(&mut matched.instances);
    let mut length = title_words.len();
    let mut body_instances = Vec::new();
    let body = if is_indexable_media_type(&row.media_type) {
        let bytes = row.read_content(service.store().blob_source())?;
        let (text, exact_bytes) = match String::from_utf8(bytes) {
            Ok(text) => (text, true),
            Err(invalid) => (String::from_utf8_lossy(invalid.as_bytes()).into_owned(), false),
        };
        let body_words = words(&text);
        let (body_match, highlights) = plan.match_and_highlight(&body_words);
        length += body_words.len();
        body_instances.clone_from(&body_match.instances);
        let mut instances: Vec<Instance> = body_match
            .instances
            .iter()
            .chain(highlights.iter())
            .map(|&(unit, position, len)| Instance {
                position,
                phrase: unit,
                len,
            })
            .collect();
        instances.sort_by_key(|i| (i.position, i.phrase));
        matched.merge_units(&body_match);
        Some(Body {
            spans: body_words.spans,
            text,
            instances,
            exact_bytes,
        })
    } else {
        None
    };
    let qualification = qualify(&plan.units, &plan.policy, &matched);
    // FTS5's column weights of `artifact_fts(body, title)`: title 5, body 1 (see `store::search`).
    let lexical_score = lexical_score(plan, bm25, &[(&title_instances, 5.0), (&body_instances, 1.0)], length);
    Ok(Examined {
        source: Source::Artifact(row),
        lexical_score,
        body,
        matched,
        qualification,
        demoted: None,
        collapsed: Vec::new(),
        semantic: None,
        fused_score: None,
    })
}

/// One field of a candidate: its match instances `(unit, first word, word count)` and its
/// FTS5 column weight.
type Field<'a> = (&'a [(usize, usize, usize)], f64);

/// A candidate's lexical score: FTS5's `bm25()` as fetched, or, for a plan made for a
/// restricted grant, BM25 over the grant's own corpus (`retrieval::corpus`) from each
/// unit's occurrences per field (`(instances, column weight)`) and the indexed word count.
fn lexical_score(plan: &Plan, bm25: f64, fields: &[Field<'_>], length: usize) -> f64 {
    let Some(stats) = &plan.corpus else {
        return rank::lexical_score_from_bm25(bm25);
    };
    let mut frequency = vec![0.0; plan.units.len()];
    for (instances, weight) in fields {
        for &(unit, _, _) in instances.iter() {
            if let Some(f) = frequency.get_mut(unit) {
                *f += weight;
            }
        }
    }
    // A unit the vocabulary lacks (a correction, an identifier, a phrase) counts as rare.
    let terms: Vec<(f64, u64)> = plan
        .units
        .iter()
        .zip(frequency)
        .map(|(unit, f)| (f, unit.expansion.df.max(1)))
        .collect();
    corpus::bm25(stats, &terms, length)
}

/// Applies the cross-hit rules to the qualified candidates of a request and orders them:
/// a candidate whose matched units were all corrected is demoted when another candidate
/// matched a unit as written or inflected; the rest are ranked by lexical score (ties by
/// entity id, which is creation order: see `protocol::ids`). Demoted candidates move to
/// `unqualified`.
pub(super) fn settle(qualified: &mut Vec<Examined>, unqualified: &mut Vec<Examined>) {
    // Only lexically qualified hits count: a hit qualified through its meaning never demotes
    // a corrected match (`ops::semantic`).
    let any_uncorrected = qualified
        .iter()
        .any(|e| e.qualification.qualified && e.qualification.uncorrected_weight > 0.0);
    if any_uncorrected {
        let (keep, demote): (Vec<Examined>, Vec<Examined>) = std::mem::take(qualified)
            .into_iter()
            .partition(|e| !e.qualification.corrected_only);
        *qualified = keep;
        for mut examined in demote {
            examined.demoted = Some("corrected_only");
            unqualified.push(examined);
        }
    }
    qualified.sort_by(by_score);
}

fn by_score(a: &Examined, b: &Examined) -> Ordering {
    b.lexical_score
        .partial_cmp(&a.lexical_score)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.entity_id().cmp(b.entity_id()))
}

/// Collapses near-identical current claims onto the best-ranked one, never across a
/// contradiction. Runs over at most `limit + 1` kept items.
pub(super) fn collapse_duplicates(conn: Db<'_>, ranked: Vec<Examined>, limit: usize) -> StoreResult<Vec<Examined>> {
    let mut kept: Vec<(Examined, Option<Fingerprint>)> = Vec::with_capacity(ranked.len());
    for examined in ranked {
        if kept.len() > limit {
            kept.push((examined, None));
            continue;
        }
        let Source::Claim(row) = &examined.source else {
            kept.push((examined, None));
            continue;
        };
        let fingerprint = Fingerprint::of(&row.statement);
        let mut target = None;
        for (index, (other, other_print)) in kept.iter().enumerate() {
            let (Source::Claim(other_row), Some(other_print)) = (&other.source, other_print) else {
                continue;
            };
            if other_row.claim_id != row.claim_id
                && fingerprint.is_near_duplicate(other_print)
                && !store_search::contradicts(conn, &row.claim_id, &other_row.claim_id)?
            {
                target = Some(index);
                break;
            }
        }
        match target {
            Some(index) => {
                let citation = super::request::claim_citation(&row.claim_id, &row.revision_id);
                kept[index].0.collapsed.push(citation);
            }
            None => kept.push((examined, Some(fingerprint))),
        }
    }
    Ok(kept.into_iter().map(|(e, _)| e).collect())
}

/// The orders near misses are reported in: most matched weight first, then lexical score.
pub(super) fn order_near_misses(misses: &mut [Examined]) {
    misses.sort_by(|a, b| {
        b.qualification
            .matched_weight
            .partial_cmp(&a.qualification.matched_weight)
            .unwrap_or(Ordering::Equal)
            .then_with(|| by_score(a, b))
    });
}

/// The wire form of the query's units.
pub(super) fn query_units(plan: &Plan) -> Vec<QueryUnit> {
    plan.units
        .iter()
        .map(|u| QueryUnit {
            unit: u.unit.text.clone(),
            kind: u.unit.kind.as_str().into(),
            weight: u.weight.value,
            generic: u.weight.generic,
        })
        .collect()
}

/// The disclosed qualification of one examined candidate.
pub(super) fn qualification_info(plan: &Plan, examined: &Examined) -> QualificationInfo {
    let matched = plan
        .units
        .iter()
        .zip(&examined.matched.units)
        .filter_map(|(unit, found)| {
            found.as_ref().map(|m| UnitMatchInfo {
                unit: unit.unit.text.clone(),
                how: match m.kind {
                    MatchKind::Exact => "exact",
                    other => other.as_str(),
                }
                .into(),
                term: m.term.clone(),
            })
        })
        .collect();
    QualificationInfo {
        policy_version: plan.policy.version.as_str().into(),
        qualified: examined.is_qualified(),
        units: query_units(plan),
        required_weight: plan.policy.required,
        matched_weight: examined.qualification.matched_weight,
        matched,
        shortfall: if examined.is_qualified() {
            None
        } else {
            examined.demoted.or(examined.qualification.shortfall).map(Into::into)
        },
        semantic: examined
            .semantic
            .map(|(similarity, required_similarity)| SemanticEvidence {
                similarity,
                required_similarity,
                qualified_by_meaning: examined.qualified_by_meaning() && examined.demoted.is_none(),
            }),
    }
}

/// The query analysis, with advice when nothing qualified.
pub(super) fn query_analysis(plan: &Plan, found_nothing: bool, near_misses: usize) -> QueryAnalysis {
    let advice = found_nothing.then(|| advice(plan, near_misses));
    let described = profile::profile(&plan.analysis);
    QueryAnalysis {
        normalized_query: described.normalized_query,
        required_matches: profile::required_matches(plan),
        content_units: described.content_units,
        phrase_groups: described.phrase_groups,
        dropped_stopwords: described.dropped_stopwords,
        retrieval_profile: RetrievalProfile {
            policy_version: profile::PROFILE_POLICY.to_owned(),
            intent_hint: described.intent.as_str().into(),
            script_profile: described.script.into(),
            identifier_like_units: described.identifier_like_units,
            semantic_role: profile::SEMANTIC_ROLE.to_owned(),
            authority_hint: described.intent.authority_hint().to_owned(),
        },
        policy_version: plan.policy.version.as_str().into(),
        units: query_units(plan),
        ignored_words: plan.analysis.ignored.clone(),
        question: plan.analysis.question,
        stop_words_only: plan.analysis.stop_words_only,
        required_weight: plan.policy.required,
        advice,
    }
}

fn advice(plan: &Plan, near_misses: usize) -> String {
    let policy = &plan.policy;
    if policy.stop_words_only {
        return "The query has only function words, so every one of them had to match. Name the topic: a \
                distinctive word, an identifier, or a quoted phrase."
            .to_owned();
    }
    if !policy.can_qualify() {
        return "A question qualifies a hit only through two content words, or one identifier, number or quoted \
                phrase; this one has less. Add a specific word, or send the bare keywords without question words."
            .to_owned();
    }
    let mut text = match policy.version {
        PolicyVersion::V1 => format!(
            "Nothing matched enough of the query: a hit needs units of weight {} (identifiers, numbers and quoted \
             phrases weigh 2, generic words 0.5, other words 1).",
            policy.required
        ),
        PolicyVersion::V2 => format!(
            "Nothing matched enough of the query: a hit needs units of weight {} of the query's {}, and most of \
             its units (each unit weighs what it tells apart in this store: rare words, names and identifiers \
             much, common words little, words memory never saw the most).",
            policy.required,
            (policy.total * 100.0).round() / 100.0
        ),
    };
    if near_misses > 0 {
        text.push_str(" near_misses lists what matched some units; reword with the words memory uses, or drop a unit.");
    } else {
        text.push_str(" Reword with other words for the same thing, or drop a unit.");
    }
    text
}

/// The share of the query's information `examined`'s matched units carry, 0..=1, four
/// decimals (`lexical_coverage` of a recall candidate).
pub(super) fn lexical_coverage(plan: &Plan, examined: &Examined) -> f64 {
    if plan.policy.total <= 0.0 {
        return 0.0;
    }
    let share = (examined.qualification.matched_weight / plan.policy.total).clamp(0.0, 1.0);
    (share * 10_000.0).round() / 10_000.0
}

/// The reference's ranking fields of one qualified hit, from its qualification.
/// `required_matches` is the plan's ([`profile::required_matches`], computed once).
pub(super) fn reference_ranking(plan: &Plan, examined: &Examined, required_matches: u64) -> ReferenceRanking {
    let phrase =
        |unit: &crate::retrieval::plan::PlannedUnit| matches!(unit.unit.kind, UnitKind::Phrase | UnitKind::Compound);
    let matched: Vec<(bool, Option<MatchKind>)> = plan
        .units
        .iter()
        .zip(&examined.matched.units)
        .map(|(unit, found)| (phrase(unit), found.as_ref().map(|m| m.kind)))
        .collect();
    let lexical_qualified = examined.qualification.qualified && examined.demoted.is_none();
    ReferenceRanking {
        lexical_policy_version: plan.policy.version.as_str().to_owned(),
        trigram_policy_version: NOT_IMPLEMENTED.to_owned(),
        fusion_policy_version: if examined.fused_score.is_some() {
            FUSION_POLICY
        } else {
            NOT_IMPLEMENTED
        }
        .to_owned(),
        query_unit_count: plan.units.len() as u64,
        matched_unit_count: matched.iter().filter(|(_, kind)| kind.is_some()).count() as u64,
        required_matches,
        lexical_coverage: lexical_coverage(plan, examined),
        phrase_group_count: matched.iter().filter(|(is_phrase, _)| *is_phrase).count() as u64,
        matched_phrase_group_count: matched
            .iter()
            .filter(|(is_phrase, kind)| *is_phrase && kind.is_some())
            .count() as u64,
        lexical_qualified,
        trigram_qualified: false,
        semantic_qualified: examined.qualified_by_meaning(),
        qualified: examined.is_qualified(),
        exact_tier: lexical_qualified
            && matched
                .iter()
                .all(|(_, kind)| matches!(kind, Some(MatchKind::Exact | MatchKind::Inflection))),
        fusion_score: examined.fused_score.unwrap_or(examined.lexical_score),
    }
}
