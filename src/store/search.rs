//! Lexical candidates for `search`, `memory.recall` and `context.build`: FTS5 `MATCH`
//! over the contentless projections, filtered by horizon, pins and currentness.
//!
//! Each entity type is queried in two phases. Phase 1 ranks the bare FTS matches (rowid and
//! `bm25()` only) and sorts them; phase 2 walks a prefix of that ranking through the
//! filters in rank order and returns the first survivors as full rows (inline blobs
//! included), so large rows never pass through the sorter and each survivor's pages are
//! read once.
//!
//! Phase 1 fixes its plan: `CROSS JOIN` keeps the FTS table as the outer loop, and
//! `INDEXED BY` the primary-key index of `artifacts`/`claims` makes each match one key
//! lookup. With `ANALYZE` statistics present the planner otherwise walks the scope index,
//! touching every owned row per match (or re-running the full-text query per owned row).
//!
//! **Invariant:** the `MATCH` expression comes from `retrieval::plan` (or
//! `retrieval::build_fts_query`); no user text is spliced into SQL. Timestamps are compared as fixed-width database TEXT.

use std::collections::HashMap;

use super::artifact::{self, ArtifactRow};
use super::claim::{self, ClaimRow};
use super::db::{Db, Dialect, Row, Value as SqlValue};
use super::error::{StoreError, StoreResult};
use super::scope::{self, Owner};
use crate::protocol::Horizon;

/// FTS5 column weights of `artifact_fts(body, title)`: title 5, body 1 (the body is the
/// first column since schema 6, which keeps the index small; see its migration).
const ARTIFACT_BM25: &str = "bm25(artifact_fts, 1.0, 5.0)";
/// FTS5 column weight of `claim_fts(statement)`.
const CLAIM_BM25: &str = "bm25(claim_fts, 1.0)";

/// Artifact pins, normalized: bare ids and exact `artifact@revision` pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    pub artifacts: Vec<String>,
    pub revisions: Vec<(String, String)>,
}

impl Pins {
    /// Normalizes context pins: strips `memoree://artifact/` and splits at `@`.
    pub fn parse(pins: &[String]) -> Pins {
        let mut parsed = Pins::default();
        for pin in pins {
            let bare = pin.strip_prefix("memoree://artifact/").unwrap_or(pin);
            match bare.split_once('@') {
                Some((artifact, revision)) if !artifact.is_empty() && !revision.is_empty() => {
                    parsed.revisions.push((artifact.to_owned(), revision.to_owned()));
                }
                Some(_) => {}
                None if !bare.is_empty() => parsed.artifacts.push(bare.to_owned()),
                None => {}
            }
        }
        parsed
    }

    fn is_empty(&self) -> bool {
        self.artifacts.is_empty() && self.revisions.is_empty()
    }

    fn artifacts_json(&self) -> String {
        serde_json::Value::from(self.artifacts.clone()).to_string()
    }

    fn revisions_json(&self) -> String {
        let keys: Vec<String> = self.revisions.iter().map(|(a, r)| format!("{a}@{r}")).collect();
        serde_json::Value::from(keys).to_string()
    }
}

/// What one candidate query selects.
#[derive(Clone, Debug)]
pub struct CandidateQuery<'a> {
    /// An FTS5 expression built by `retrieval::plan`.
    pub match_expr: &'a str,
    pub ambient: &'a Owner,
    pub horizon: Horizon,
    pub pins: &'a Pins,
    /// Admit every revision and lifecycle instead of current knowledge only.
    pub include_historical: bool,
    /// The evaluation instant in database form.
    pub now_db: &'a str,
    /// At most this many candidates come back.
    pub cap: usize,
    /// Select the newest matches instead of the best by `bm25()` (a restricted grant, whose
    /// candidates are scored over its own corpus: `retrieval::corpus`), so that which rows
    /// are selected does not depend on statistics of other workspaces.
    pub newest_first: bool,
    /// The bare ranking an earlier, smaller query of the same search fetched (see
    /// [`Ranking`]); `None` ranks afresh.
    pub ranking: Option<&'a Ranking>,
}

/// Bare FTS matches a search of several rounds ranks in its first, at least this many, so
/// that its later rounds (each asking twice as many: a recall's prefixes are 16, 32, 64, 128
/// and 256 rows) read their prefix from memory instead of ranking every match again.
/// Measured against ranking only what each round asks, and against ranking for every round
/// left once a second round is needed: the common-word recall at 100k artifacts is fastest
/// this way, and a search that ends in its first round is no slower (BENCHMARKS.md).
const RANKING_LEAST: usize = 256;

/// The bare FTS ranking of one search's expression and table: `(seq, bm25)` in rank order.
/// Phase 1 ranks every match whatever its `LIMIT`, and the order is total (bm25, then
/// newest `seq`), so the first `n` rows of a longer ranking are exactly a ranking of `n`.
///
/// Valid for one expression, table, filter and snapshot: make one per search, inside its
/// snapshot.
#[derive(Debug, Default)]
pub struct Ranking {
    fetched: std::cell::RefCell<Option<Fetched>>,
}

/// One phase-1 fetch: the expression, the `LIMIT` asked and the rows it gave.
type Fetched = (String, usize, Vec<(i64, f64)>);

impl Ranking {
    /// The first `len` rows of `expr`'s ranking, from memory when a fetch already covers
    /// them, else from `rank(limit)` asked for at least [`RANKING_LEAST`] rows.
    fn prefix(
        &self,
        expr: &str,
        len: usize,
        rank: impl FnOnce(usize) -> StoreResult<Vec<(i64, f64)>>,
    ) -> StoreResult<Vec<(i64, f64)>> {
        let mut fetched = self.fetched.borrow_mut();
        if let Some((fetched_expr, limit, rows)) = fetched.as_ref()
            && fetched_expr == expr
            && (*limit >= len || rows.len() < *limit)
        {
            return Ok(rows.iter().take(len).copied().collect());
        }
        let limit = len.max(RANKING_LEAST);
        let rows = rank(limit)?;
        let prefix = rows.iter().take(len).copied().collect();
        *fetched = Some((expr.to_owned(), limit, rows));
        Ok(prefix)
    }
}

/// A candidate row and its raw `bm25()` value (lower is better).
#[derive(Clone, Debug)]
pub struct Candidate<R> {
    pub row: R,
    pub bm25: f64,
}

/// Fails with `IndexNotReady` unless the snapshot `conn` reads has reached `min_commit_seq`.
/// The FTS projection is written in the same transaction as its revision, so the commit
/// sequence is the index position too.
pub fn ensure_index_ready(conn: Db<'_>, min_commit_seq: Option<i64>) -> StoreResult<()> {
    let Some(requested) = min_commit_seq else {
        return Ok(());
    };
    let current = super::last_commit_seq(conn)?;
    if requested > current {
        return Err(StoreError::IndexNotReady { requested, current });
    }
    Ok(())
}

/// The best artifact revisions for the query, best first (bm25, then newest revision).
pub fn artifact_candidates(conn: Db<'_>, query: &CandidateQuery<'_>) -> StoreResult<Vec<Candidate<ArtifactRow>>> {
    let mut params = Vec::new();
    let mut visible = vec![scope::visibility_sql("a", query.ambient, query.horizon, &mut params)];
    let texts = text_set(conn);
    let pinned_revision = format!("(a.id || '@' || r.id) IN ({texts})");
    if !query.pins.is_empty() {
        params.push(SqlValue::Text(query.pins.artifacts_json()));
        visible.push(format!("a.id IN ({texts})"));
        params.push(SqlValue::Text(query.pins.revisions_json()));
        visible.push(pinned_revision.clone());
    }
    let mut clauses = vec![format!("({})", visible.join(" OR "))];
    if !query.include_historical {
        if query.pins.revisions.is_empty() {
            clauses.push("a.status = 'active' AND r.id = a.current_revision_id".to_owned());
        } else {
            params.push(SqlValue::Text(query.pins.revisions_json()));
            clauses.push(format!(
                "a.status = 'active' AND (r.id = a.current_revision_id OR {pinned_revision})"
            ));
        }
    }
    let filter = Filter {
        fts: "artifact_fts",
        bm25: ARTIFACT_BM25,
        search: "artifact_search",
        revisions: "artifact_revisions",
        columns: artifact::COLUMNS,
        entity_join: conn.pick(
            "CROSS JOIN artifacts a INDEXED BY sqlite_autoindex_artifacts_1 ON a.id = r.artifact_id",
            "JOIN artifacts a ON a.id = r.artifact_id",
        ),
        clauses: clauses.join(" AND "),
        params,
    };
    filter.candidates(conn, query, artifact::db_row, |row: &ArtifactRow| row.seq)
}

/// The best claim revisions for the query, best first (bm25, then newest revision).
pub fn claim_candidates(conn: Db<'_>, query: &CandidateQuery<'_>) -> StoreResult<Vec<Candidate<ClaimRow>>> {
    let mut params = Vec::new();
    let mut clauses = vec![scope::visibility_sql("c", query.ambient, query.horizon, &mut params)];
    if !query.include_historical {
        params.push(SqlValue::Text(query.now_db.to_owned()));
        params.push(SqlValue::Text(query.now_db.to_owned()));
        clauses.push(
            "c.status = 'active' AND r.id = c.current_revision_id
             AND (c.valid_from IS NULL OR c.valid_from <= ?) AND (c.valid_until IS NULL OR c.valid_until > ?)"
                .to_owned(),
        );
    }
    let filter = Filter {
        fts: "claim_fts",
        bm25: CLAIM_BM25,
        search: "claim_search",
        revisions: "claim_revisions",
        columns: claim::columns(),
        entity_join: conn.pick(
            "CROSS JOIN claims c INDEXED BY sqlite_autoindex_claims_1 ON c.id = r.claim_id",
            "JOIN claims c ON c.id = r.claim_id",
        ),
        clauses: clauses.join(" AND "),
        params,
    };
    filter.candidates(conn, query, claim::db_row, |row: &ClaimRow| row.seq)
}

/// Matches ranked by bare FTS are filtered in prefixes of this many times the cap.
const PREFIX_FACTOR: usize = 2;

/// The shape of one entity type's candidate query: its FTS table, its revision table
/// (aliased `r`), the columns of a full row, the join reaching the entity row, and the
/// filter with its parameters.
struct Filter {
    fts: &'static str,
    bm25: &'static str,
    /// The PostgreSQL projection (`tsvector` per revision `seq`).
    search: &'static str,
    revisions: &'static str,
    /// A full row's columns (`r.seq` first), as the entity's row mapper reads them.
    columns: &'static str,
    entity_join: &'static str,
    clauses: String,
    params: Vec<SqlValue>,
}

/// Maps a row selected with a [`Filter`]'s columns.
type MapRow<R> = fn(&Row<'_>) -> StoreResult<R>;

impl Filter {
    /// The top `cap` candidates that pass the filter, full rows in rank order (bm25, then
    /// newest revision `seq`, which the single writer assigns in `commit_seq` order).
    ///
    /// Fast path: rank the bare FTS matches first, take a prefix of
    /// [`PREFIX_FACTOR`]` × cap`, and filter only those. When at least `cap` survive they
    /// are exactly the top `cap` of the filtered list, because every later match ranks
    /// below the whole prefix. Otherwise (a short prefix means no more matches exist) the
    /// filtered query runs over every match.
    fn candidates<R>(
        &self,
        conn: Db<'_>,
        query: &CandidateQuery<'_>,
        map: MapRow<R>,
        seq_of: fn(&R) -> i64,
    ) -> StoreResult<Vec<Candidate<R>>> {
        // On PostgreSQL the planner's FTS5 expression becomes a tsquery over the same words,
        // and `ts_rank` (title weighted 5:1 over body, as the bm25 weights; normalized by
        // document length) stands in for bm25, negated so that lower is better here too.
        let (matches, source, rowid, bm25, match_expr) = match conn.dialect() {
            Dialect::Sqlite => (
                format!("{fts} MATCH ?", fts = self.fts),
                self.fts.to_owned(),
                format!("{}.rowid", self.fts),
                self.bm25.to_owned(),
                query.match_expr.to_owned(),
            ),
            Dialect::Postgres => (
                "s.document @@ CAST(CAST(? AS text) AS tsquery)".to_owned(),
                format!("{} s", self.search),
                "s.seq".to_owned(),
                "-ts_rank('{0.2, 0.2, 0.2, 1.0}', s.document, CAST(CAST(? AS text) AS tsquery), 1)".to_owned(),
                super::pg::fts::tsquery(query.match_expr)?,
            ),
        };
        // The rank expression takes the query too on PostgreSQL (it comes first in the text).
        let rank_params = |conn: Db<'_>| match conn.dialect() {
            Dialect::Sqlite => vec![SqlValue::Text(match_expr.clone())],
            Dialect::Postgres => vec![SqlValue::Text(match_expr.clone()), SqlValue::Text(match_expr.clone())],
        };
        let order = if query.newest_first {
            format!("{rowid} DESC")
        } else {
            format!("lexical, {rowid} DESC")
        };
        let prefix_len = query.cap.saturating_mul(PREFIX_FACTOR);
        let rank = |limit: usize| {
            let sql = format!(
                "SELECT {rowid}, {bm25} AS lexical FROM {source} WHERE {matches}
                 ORDER BY {order} LIMIT ?"
            );
            let mut params = rank_params(conn);
            params.push(SqlValue::Integer(limit as i64));
            phase_one(conn, &sql, params)
        };
        let prefix = match query.ranking {
            Some(ranking) => ranking.prefix(query.match_expr, prefix_len, rank)?,
            None => rank(prefix_len)?,
        };
        let survivors = self.survivors(conn, &prefix, query.cap, map, seq_of)?;
        if survivors.len() >= query.cap || prefix.len() < prefix_len {
            return Ok(survivors);
        }
        let mut params = rank_params(conn);
        params.extend(self.params.iter().cloned());
        params.push(SqlValue::Integer(query.cap as i64));
        let join = conn.pick("CROSS JOIN", "JOIN");
        let sql = format!(
            "SELECT {rowid}, {bm25} AS lexical
             FROM {source} {join} {revisions} r ON r.seq = {rowid} {entity_join}
             WHERE {matches} AND {clauses}
             ORDER BY {order} LIMIT ?",
            revisions = self.revisions,
            entity_join = self.entity_join,
            clauses = self.clauses,
        );
        let ranked = phase_one(conn, &sql, params)?;
        self.load(conn, ranked, map, seq_of)
    }

    /// The first `cap` rows of `prefix` (in its order) that pass the filter.
    ///
    /// On SQLite the prefix is the outer loop (`CROSS JOIN` fixes the join order), the scan
    /// stops at the `cap`-th survivor, and the survivors come back as full rows: each row's
    /// pages are read once, so a filter that passes most rows looks up `cap` of them, not
    /// the whole prefix, and none twice. PostgreSQL filters the prefix as a set, then loads
    /// the survivors.
    fn survivors<R>(
        &self,
        conn: Db<'_>,
        prefix: &[(i64, f64)],
        cap: usize,
        map: MapRow<R>,
        seq_of: fn(&R) -> i64,
    ) -> StoreResult<Vec<Candidate<R>>> {
        if prefix.is_empty() {
            return Ok(Vec::new());
        }
        let mut params = vec![SqlValue::Text(seq_array(prefix))];
        params.extend(self.params.iter().cloned());
        match conn.dialect() {
            Dialect::Sqlite => {
                params.push(SqlValue::Integer(cap as i64));
                let sql = format!(
                    "SELECT {columns} FROM json_each(?) p CROSS JOIN {revisions} r ON r.seq = p.value {entity_join}
                     WHERE {clauses} LIMIT ?",
                    columns = self.columns,
                    revisions = self.revisions,
                    entity_join = self.entity_join,
                    clauses = self.clauses,
                );
                let rows = conn.query_values(&sql, &params, map)?;
                Ok(attach(prefix.to_vec(), rows, seq_of))
            }
            Dialect::Postgres => {
                let sql = format!(
                    "SELECT r.seq FROM {revisions} r {entity_join}
                     WHERE r.seq IN ({seqs}) AND {clauses}",
                    revisions = self.revisions,
                    entity_join = self.entity_join,
                    seqs = integer_set(conn),
                    clauses = self.clauses,
                );
                let passing: std::collections::HashSet<i64> =
                    conn.query_values(&sql, &params, |r| r.get(0))?.into_iter().collect();
                let ranked = prefix
                    .iter()
                    .copied()
                    .filter(|(seq, _)| passing.contains(seq))
                    .take(cap)
                    .collect();
                self.load(conn, ranked, map, seq_of)
            }
        }
    }

    /// Full rows for the ranked seqs, in rank order.
    fn load<R>(
        &self,
        conn: Db<'_>,
        ranked: Vec<(i64, f64)>,
        map: MapRow<R>,
        seq_of: fn(&R) -> i64,
    ) -> StoreResult<Vec<Candidate<R>>> {
        if ranked.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {columns} FROM {revisions} r {entity_join} WHERE r.seq IN ({seqs})",
            columns = self.columns,
            revisions = self.revisions,
            entity_join = self.entity_join,
            seqs = integer_set(conn),
        );
        let rows = conn.query_all(&sql, &[&seq_array(&ranked)], map)?;
        Ok(attach(ranked, rows, seq_of))
    }
}

/// Runs a phase-1 query: `(seq, bm25)` pairs in rank order.
fn phase_one(conn: Db<'_>, sql: &str, params: Vec<SqlValue>) -> StoreResult<Vec<(i64, f64)>> {
    conn.query_values(sql, &params, |r| Ok((r.get(0)?, r.get(1)?)))
}

/// A subquery over a JSON array of text bound as one parameter.
fn text_set(conn: Db<'_>) -> &'static str {
    conn.pick(
        "SELECT value FROM json_each(?)",
        "SELECT value FROM jsonb_array_elements_text(CAST(CAST(? AS text) AS jsonb))",
    )
}

/// A subquery over a JSON array of integers bound as one parameter.
fn integer_set(conn: Db<'_>) -> &'static str {
    conn.pick(
        "SELECT value FROM json_each(?)",
        "SELECT CAST(value AS bigint) FROM jsonb_array_elements_text(CAST(CAST(? AS text) AS jsonb))",
    )
}

/// The seqs of `ranked` as a JSON array, bound as one parameter ([`integer_set`]).
fn seq_array(ranked: &[(i64, f64)]) -> String {
    serde_json::Value::from(ranked.iter().map(|(seq, _)| *seq).collect::<Vec<_>>()).to_string()
}

/// Pairs the ranked seqs with their rows (by `seq_of`), keeping rank order.
fn attach<R>(ranked: Vec<(i64, f64)>, rows: Vec<R>, seq_of: fn(&R) -> i64) -> Vec<Candidate<R>> {
    let mut rows: HashMap<i64, R> = rows.into_iter().map(|row| (seq_of(&row), row)).collect();
    ranked
        .into_iter()
        .filter_map(|(seq, bm25)| rows.remove(&seq).map(|row| Candidate { row, bm25 }))
        .collect()
}

/// Whether a `contradicts` relation joins the two claims, in either direction.
pub fn contradicts(conn: Db<'_>, a: &str, b: &str) -> StoreResult<bool> {
    conn.query_one(
        "SELECT EXISTS (SELECT 1 FROM relations WHERE relation = 'contradicts' AND source_type = 'claim'
             AND ((source_id = ?1 AND target_id = ?2) OR (source_id = ?2 AND target_id = ?1)))",
        &[&a, &b],
        |r| r.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_normalized_into_bare_artifacts_and_exact_revisions() {
        let pins = Pins::parse(&[
            "art_a".to_owned(),
            "art_b@arev_1".to_owned(),
            "memoree://artifact/art_c@arev_2".to_owned(),
            "memoree://artifact/art_d".to_owned(),
            "@arev_x".to_owned(),
            "art_e@".to_owned(),
        ]);
        assert_eq!(pins.artifacts, ["art_a", "art_d"]);
        assert_eq!(
            pins.revisions,
            [
                ("art_b".to_owned(), "arev_1".to_owned()),
                ("art_c".to_owned(), "arev_2".to_owned())
            ]
        );
        assert_eq!(pins.revisions_json(), r#"["art_b@arev_1","art_c@arev_2"]"#);
    }

    /// A ranking of `matches` rows, `limit` at most, as phase 1 returns it; counts the calls.
    fn ranked(matches: i64, calls: &std::cell::Cell<usize>) -> impl Fn(usize) -> StoreResult<Vec<(i64, f64)>> + '_ {
        move |limit| {
            calls.set(calls.get() + 1);
            Ok((0..matches.min(limit as i64))
                .map(|i| (matches - i, i as f64))
                .collect())
        }
    }

    #[test]
    fn later_rounds_of_a_search_read_the_ranking_its_first_round_fetched() {
        let calls = std::cell::Cell::new(0);
        let ranking = Ranking::default();
        let first = ranking.prefix("\"a\"", 12, ranked(1000, &calls)).unwrap();
        assert_eq!((calls.get(), &first[..]), (1, &ranked(1000, &calls)(12).unwrap()[..]));
        for len in [48, 192, RANKING_LEAST] {
            let prefix = ranking
                .prefix("\"a\"", len, |_| panic!("ranked again for {len} rows"))
                .unwrap();
            assert_eq!(prefix.len(), len);
            assert_eq!(prefix[..12], first[..]);
        }
        calls.set(0);
        let longer = ranking.prefix("\"a\"", 768, ranked(1000, &calls)).unwrap();
        assert_eq!((calls.get(), longer.len()), (1, 768));
        let other = ranking.prefix("\"b\"", 12, ranked(5, &calls)).unwrap();
        assert_eq!((calls.get(), other.len()), (2, 5));
    }

    #[test]
    fn a_ranking_shorter_than_its_limit_holds_every_match() {
        let calls = std::cell::Cell::new(0);
        let ranking = Ranking::default();
        assert_eq!(ranking.prefix("\"a\"", 48, ranked(40, &calls)).unwrap().len(), 40);
        let all = ranking
            .prefix("\"a\"", 2048, |_| panic!("every match was fetched"))
            .unwrap();
        assert_eq!(all, ranked(40, &calls)(2048).unwrap());
    }
}
