//! Conflict cases: the revision-bound assessment of a `contradicts` relation.
//!
//! A contradiction freezes the two current revisions in an `open` case. Revising either
//! claim makes its open cases `stale` and atomically opens a new case over both current
//! non-terminal revisions; retraction or supersession `resolve`s open cases. Every
//! transition appends a `conflict_events` row.
//!
//! **Invariant:** at most one open case per relation (a partial unique index enforces it),
//! and every open case references the current revisions of two non-terminal claims.

use rusqlite::{OptionalExtension, params};

use super::error::StoreResult;
use super::{Tx, new_id};

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
            new_id("cevt"),
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
pub fn open_case(tx: &Tx<'_>, relation_id: &str, reason: &str, commit_seq: i64) -> StoreResult<Option<String>> {
    let endpoints: Option<(String, String, String, String, String, String)> = tx
        .conn()
        .query_row(
            "SELECT s.id, s.current_revision_id, s.status, t.id, t.current_revision_id, t.status
             FROM relations rel JOIN claims s ON s.id = rel.source_id JOIN claims t ON t.id = rel.target_id
             WHERE rel.id = ?1 AND rel.relation = 'contradicts' AND rel.source_type = 'claim' AND rel.target_type = 'claim'",
            [relation_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .optional()?;
    let Some((source, source_rev, source_status, target, target_rev, target_status)) = endpoints else {
        return Ok(None);
    };
    if source_status != "active" || target_status != "active" {
        return Ok(None);
    }
    let case_id = new_id("ccase");
    let now = tx.now_db();
    tx.conn().execute(
        "INSERT INTO conflict_cases (case_id, relation_id, source_claim_id, source_revision_id, target_claim_id,
             target_revision_id, state, state_reason, opened_at, updated_at, opened_commit_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7, ?8, ?8, ?9)",
        params![
            case_id,
            relation_id,
            source,
            source_rev,
            target,
            target_rev,
            reason,
            now,
            commit_seq
        ],
    )?;
    append_case_event(tx, &case_id, "opened", &source_rev, &target_rev, reason, commit_seq)?;
    Ok(Some(case_id))
}

/// Moves every open case involving `claim_id` to `state`, with an event each.
fn transition_open_cases(tx: &Tx<'_>, claim_id: &str, state: &str, reason: &str, commit_seq: i64) -> StoreResult<()> {
    let cases: Vec<(String, String, String)> = {
        let mut stmt = tx.conn().prepare_cached(
            "SELECT case_id, source_revision_id, target_revision_id FROM conflict_cases
             WHERE state = 'open' AND (source_claim_id = ?1 OR target_claim_id = ?1) ORDER BY case_sequence",
        )?;
        stmt.query_map([claim_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let event_type = if state == "stale" { "stale" } else { "resolved" };
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
    transition_open_cases(tx, claim_id, "stale", "claim revision changed", commit_seq)?;
    let relations: Vec<String> = {
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
    transition_open_cases(tx, claim_id, "resolved", reason, commit_seq)
}
