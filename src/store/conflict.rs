//! Conflict cases: the revision-bound assessment of a `contradicts` relation.
//!
//! A contradiction freezes the two current revisions in an `open` case. Revising either
//! claim makes its open cases `stale` and atomically opens a new case over both current
//! non-terminal revisions; retraction or supersession `resolve`s open cases. Every
//! transition appends a `conflict_events` row. Reads ([`list`], [`open_conflicts_for_claims`])
//! filter cases by their contradiction relation's creator context, like relation rows.
//!
//! **Invariant:** at most one open case per relation (a partial unique index enforces it),
//! and every open case references the current revisions of two non-terminal claims.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::Tx;
use super::error::StoreResult;
use super::scope::{self, Owner, owner_from_row};
use crate::protocol::Horizon;
use crate::protocol::claim::ClaimStatus;
use crate::protocol::ids::{CaseEventId, CaseId, ClaimId, ClaimRevisionId, RelationId};
use crate::protocol::relation::ConflictState;

fn append_case_event(
    tx: &Tx<'_>,
    case_id: &str,
    event_type: &str,
    source_revision_id: &str,
    target_revision_id: &str,
    reason: &str,
    commit_seq: i64,
) -> StoreResult<()> {
    tx.conn().execute(
        "INSERT INTO conflict_events (event_id, case_id, event_type, source_revision_id, target_revision_id, reason,
             operation_commit_seq, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            CaseEventId::generate(),
            case_id,
            event_type,
            source_revision_id,
            target_revision_id,
            reason,
            commit_seq,
            tx.now_db()
        ],
    )?;
    Ok(())
}

/// Opens a case freezing the current revisions of both claims of `relation_id`.
pub fn open_case(tx: &Tx<'_>, relation_id: &str, reason: &str, commit_seq: i64) -> StoreResult<Option<CaseId>> {
    type Side = (ClaimId, ClaimRevisionId, ClaimStatus);
    let endpoints: Option<(Side, Side)> = tx
        .conn()
        .query_row(
            "SELECT s.id, s.current_revision_id, s.status, t.id, t.current_revision_id, t.status
             FROM relations rel JOIN claims s ON s.id = rel.source_id JOIN claims t ON t.id = rel.target_id
             WHERE rel.id = ?1 AND rel.relation = 'contradicts' AND rel.source_type = 'claim' AND rel.target_type = 'claim'",
            [relation_id],
            |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), (r.get(3)?, r.get(4)?, r.get(5)?))),
        )
        .optional()?;
    let Some(((source, source_rev, source_status), (target, target_rev, target_status))) = endpoints else {
        return Ok(None);
    };
    if source_status != ClaimStatus::Active || target_status != ClaimStatus::Active {
        return Ok(None);
    }
    let case_id = CaseId::generate();
    let now = tx.now_db();
    tx.conn().execute(
        "INSERT INTO conflict_cases (case_id, relation_id, source_claim_id, source_revision_id, target_claim_id,
             target_revision_id, state, state_reason, opened_at, updated_at, opened_commit_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)",
        params![
            case_id,
            relation_id,
            source,
            source_rev,
            target,
            target_rev,
            ConflictState::Open,
            reason,
            now,
            commit_seq
        ],
    )?;
    append_case_event(tx, &case_id, "opened", &source_rev, &target_rev, reason, commit_seq)?;
    Ok(Some(case_id))
}

/// Moves every open case involving `claim_id` to `state`, with an event each.
fn transition_open_cases(
    tx: &Tx<'_>,
    claim_id: &str,
    state: ConflictState,
    reason: &str,
    commit_seq: i64,
) -> StoreResult<()> {
    let cases: Vec<(CaseId, ClaimRevisionId, ClaimRevisionId)> = {
        let mut stmt = tx.conn().prepare_cached(
            "SELECT case_id, source_revision_id, target_revision_id FROM conflict_cases
             WHERE state = 'open' AND (source_claim_id = ?1 OR target_claim_id = ?1) ORDER BY case_sequence",
        )?;
        stmt.query_map([claim_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let event_type = if state == ConflictState::Stale {
        "stale"
    } else {
        "resolved"
    };
    for (case_id, source_rev, target_rev) in cases {
        tx.conn().execute(
            "UPDATE conflict_cases SET state = ?1, state_reason = ?2, updated_at = ?3 WHERE case_id = ?4",
            params![state, reason, tx.now_db(), case_id],
        )?;
        append_case_event(tx, &case_id, event_type, &source_rev, &target_rev, reason, commit_seq)?;
    }
    Ok(())
}

/// After a claim revision: stale its open cases, then reopen every contradiction involving
/// it whose endpoints are both still non-terminal.
pub fn reassess_after_revision(tx: &Tx<'_>, claim_id: &str, commit_seq: i64) -> StoreResult<()> {
    transition_open_cases(tx, claim_id, ConflictState::Stale, "claim revision changed", commit_seq)?;
    let relations: Vec<RelationId> = {
        let mut stmt = tx.conn().prepare_cached(
            "SELECT id FROM relations WHERE relation = 'contradicts' AND source_type = 'claim' AND target_type = 'claim'
             AND (source_id = ?1 OR target_id = ?1) ORDER BY commit_seq",
        )?;
        stmt.query_map([claim_id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    for relation_id in relations {
        open_case(
            tx,
            &relation_id,
            "automatically reassessed after claim revision",
            commit_seq,
        )?;
    }
    Ok(())
}

/// Resolves every open case involving a claim that became terminal.
pub fn resolve_for_claim(tx: &Tx<'_>, claim_id: &str, reason: &str, commit_seq: i64) -> StoreResult<()> {
    transition_open_cases(tx, claim_id, ConflictState::Resolved, reason, commit_seq)
}

/// One conflict case joined with its contradiction relation's metadata and context.
#[derive(Clone, Debug)]
pub struct CaseRow {
    pub case_sequence: i64,
    pub case_id: CaseId,
    pub relation_id: RelationId,
    pub source_claim_id: ClaimId,
    pub source_revision_id: ClaimRevisionId,
    pub target_claim_id: ClaimId,
    pub target_revision_id: ClaimRevisionId,
    pub state: ConflictState,
    pub state_reason: Option<String>,
    pub opened_at: String,
    pub updated_at: String,
    pub opened_commit_seq: i64,
    pub relation_metadata_json: String,
    /// The relation's creator context, which decides the case's visibility.
    pub relation_owner: Owner,
}

fn case_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CaseRow> {
    Ok(CaseRow {
        case_sequence: r.get(0)?,
        case_id: r.get(1)?,
        relation_id: r.get(2)?,
        source_claim_id: r.get(3)?,
        source_revision_id: r.get(4)?,
        target_claim_id: r.get(5)?,
        target_revision_id: r.get(6)?,
        state: r.get(7)?,
        state_reason: r.get(8)?,
        opened_at: r.get(9)?,
        updated_at: r.get(10)?,
        opened_commit_seq: r.get(11)?,
        relation_metadata_json: r.get(12)?,
        relation_owner: owner_from_row(r, 13)?,
    })
}

/// One `conflict.list` page request.
#[derive(Clone, Debug)]
pub struct ListQuery<'a> {
    pub ambient: &'a Owner,
    pub horizon: Horizon,
    pub include_stale: bool,
    pub before_case_sequence: Option<i64>,
    pub limit: usize,
}

/// One page of open (and, on request, stale) cases, newest first by case sequence, whose
/// relation is visible at the horizon. Resolved cases are audit history and never listed.
/// Returns the cases and whether more exist.
pub fn list(conn: &Connection, query: &ListQuery<'_>) -> StoreResult<(Vec<CaseRow>, bool)> {
    let mut params: Vec<SqlValue> = Vec::new();
    let states = if query.include_stale {
        "cc.state IN ('open', 'stale')"
    } else {
        "cc.state = 'open'"
    };
    let mut clauses = vec![states.to_owned()];
    if let Some(before) = query.before_case_sequence {
        params.push(SqlValue::Integer(before));
        clauses.push("cc.case_sequence < ?".to_owned());
    }
    clauses.push(scope::visibility_sql("rel", query.ambient, query.horizon, &mut params));
    params.push(SqlValue::Integer(query.limit as i64 + 1));
    let sql = format!(
        "SELECT cc.case_sequence, cc.case_id, cc.relation_id, cc.source_claim_id, cc.source_revision_id,
             cc.target_claim_id, cc.target_revision_id, cc.state, cc.state_reason, cc.opened_at, cc.updated_at,
             cc.opened_commit_seq, rel.metadata_json, rel.workspace_id, rel.project_id, rel.task_id, rel.component
         FROM conflict_cases cc JOIN relations rel ON rel.id = cc.relation_id
         WHERE {} ORDER BY cc.case_sequence DESC LIMIT ?",
        clauses.join(" AND ")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt
        .query_map(params_from_iter(params), case_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let more = rows.len() > query.limit;
    rows.truncate(query.limit);
    Ok((rows, more))
}

/// One live contradiction touching a claim of interest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenConflict {
    pub case_id: CaseId,
    pub relation_id: RelationId,
    pub source_claim_id: ClaimId,
    pub target_claim_id: ClaimId,
}

/// The live contradictions of `claim_ids` for recall and context building: open cases
/// involving any of the claims (either side) whose frozen revisions are both claims'
/// current revisions, and whose relation is visible at `horizon` from `ambient`. Ordered by
/// relation commit sequence (then case sequence); each case appears once.
pub fn open_conflicts_for_claims<S: AsRef<str>>(
    conn: &Connection,
    claim_ids: &[S],
    ambient: &Owner,
    horizon: Horizon,
) -> StoreResult<Vec<OpenConflict>> {
    if claim_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::Array(
        claim_ids
            .iter()
            .map(|id| serde_json::Value::String(id.as_ref().to_owned()))
            .collect(),
    )
    .to_string();
    let mut params = vec![SqlValue::Text(ids)];
    let visible = scope::visibility_sql("rel", ambient, horizon, &mut params);
    let sql = format!(
        "WITH wanted(id) AS (SELECT DISTINCT value FROM json_each(?))
         SELECT cc.case_id, cc.relation_id, cc.source_claim_id, cc.target_claim_id
         FROM conflict_cases cc
         JOIN relations rel ON rel.id = cc.relation_id
         JOIN claims s ON s.id = cc.source_claim_id
         JOIN claims t ON t.id = cc.target_claim_id
         WHERE cc.state = 'open'
           AND s.current_revision_id = cc.source_revision_id
           AND t.current_revision_id = cc.target_revision_id
           AND (cc.source_claim_id IN (SELECT id FROM wanted) OR cc.target_claim_id IN (SELECT id FROM wanted))
           AND {visible}
         ORDER BY rel.commit_seq, cc.case_sequence"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(params), |r| {
            Ok(OpenConflict {
                case_id: r.get(0)?,
                relation_id: r.get(1)?,
                source_claim_id: r.get(2)?,
                target_claim_id: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
