//! Reading a store back after a restart: idempotency records, row counts, conflict cases,
//! `verify`, and each acknowledged entity, compared with the ledger.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use memoree::client::socket::SocketSession;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Value, json};

use super::*;

/// One idempotency record, by caller key.
#[derive(Clone, Debug)]
pub struct Record {
    pub operation: String,
    pub commit_seq: i64,
    /// The revision or relation id the compact replay recipe names.
    pub produced: Option<String>,
}

/// Row counts of the tables a mutation writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub artifacts: i64,
    pub artifact_revisions: i64,
    pub claims: i64,
    pub claim_revisions: i64,
    pub relations: i64,
    pub events: i64,
    pub commit_seq: i64,
    pub idempotency: i64,
}

impl Counts {
    /// What the store must hold for these idempotency records (or acknowledgements),
    /// given how many of each operation there are: every workload mutation writes exactly
    /// one event and one record, and these entity rows.
    pub fn expected(ops: &HashMap<Op, i64>) -> Counts {
        let n = |op| ops.get(&op).copied().unwrap_or(0);
        let total: i64 = ops.values().sum();
        Counts {
            artifacts: n(Op::ArtifactPut),
            artifact_revisions: n(Op::ArtifactPut) + n(Op::ArtifactRevise),
            claims: n(Op::ClaimAssert),
            claim_revisions: n(Op::ClaimAssert) + n(Op::ClaimRevise),
            relations: n(Op::RelationPut),
            events: total,
            commit_seq: total,
            idempotency: total,
        }
    }

    /// Rows beyond `expected`, summed over the entity tables.
    pub fn excess_over(&self, expected: &Counts) -> i64 {
        [
            self.artifacts - expected.artifacts,
            self.artifact_revisions - expected.artifact_revisions,
            self.claims - expected.claims,
            self.claim_revisions - expected.claim_revisions,
            self.relations - expected.relations,
        ]
        .iter()
        .map(|d| (*d).max(0))
        .sum()
    }
}

/// A query-only connection to a store's database, safe while the daemon runs (WAL).
pub struct Db(Connection);

impl Db {
    pub fn open(data_dir: &Path) -> Db {
        let conn = Connection::open_with_flags(
            data_dir.join("memoree.sqlite3"),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        conn.execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED;").unwrap();
        Db(conn)
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.0.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    pub fn counts(&self) -> Counts {
        let c = |table: &str| self.count(&format!("SELECT count(*) FROM {table}"));
        Counts {
            artifacts: c("artifacts"),
            artifact_revisions: c("artifact_revisions"),
            claims: c("claims"),
            claim_revisions: c("claim_revisions"),
            relations: c("relations"),
            events: c("events"),
            commit_seq: self.count("SELECT commit_seq FROM commit_state WHERE id = 1"),
            idempotency: c("idempotency"),
        }
    }

    /// Every idempotency record, by the caller's key (the part after the namespace).
    pub fn records(&self) -> HashMap<String, Record> {
        let mut stmt = self
            .0
            .prepare("SELECT scoped_key, operation, commit_seq, replay_json FROM idempotency")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        let mut records = HashMap::new();
        for (scoped, operation, commit_seq, replay) in rows {
            let key = scoped
                .split_once(':')
                .map_or(scoped.as_str(), |(_, key)| key)
                .to_owned();
            let recipe: Value = serde_json::from_str(&replay).unwrap_or(Value::Null);
            let produced = ["artifact_revision", "claim_revision", "relation"]
                .iter()
                .find_map(|field| recipe.get(*field).and_then(Value::as_str))
                .map(str::to_owned);
            let previous = records.insert(
                key.clone(),
                Record {
                    operation,
                    commit_seq,
                    produced,
                },
            );
            assert!(previous.is_none(), "two idempotency records for caller key {key}");
        }
        records
    }

    /// The event row at `commit_seq`: (entity_id, revision_id).
    pub fn event(&self, commit_seq: i64) -> Option<(String, Option<String>)> {
        self.0
            .query_row(
                "SELECT entity_id, revision_id FROM events WHERE commit_seq = ?1",
                [commit_seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .unwrap()
    }

    /// Whether the revision or relation `produced` exists and belongs to `entity`.
    pub fn holds(&self, op: Op, entity: &str, produced: &str) -> bool {
        let sql = match op {
            Op::ArtifactPut | Op::ArtifactRevise => {
                "SELECT count(*) FROM artifact_revisions WHERE artifact_id = ?1 AND id = ?2"
            }
            Op::ClaimAssert | Op::ClaimRevise | Op::ClaimRetract => {
                "SELECT count(*) FROM claim_revisions WHERE claim_id = ?1 AND id = ?2"
            }
            Op::RelationPut => "SELECT count(*) FROM relations WHERE id = ?1 AND id = ?2",
        };
        self.0
            .query_row(sql, [entity, produced], |r| r.get::<_, i64>(0))
            .unwrap()
            == 1
    }

    /// Violations of the conflict-case invariants, checked independently of `verify`.
    pub fn conflict_violations(&self) -> Vec<String> {
        let rules: &[(&str, &str)] = &[
            (
                "more than one open case for relation",
                "SELECT relation_id FROM conflict_cases WHERE state = 'open' GROUP BY relation_id HAVING count(*) > 1",
            ),
            (
                "open case not on the current revisions of two active claims",
                "SELECT cc.case_id FROM conflict_cases cc
                 JOIN claims s ON s.id = cc.source_claim_id JOIN claims t ON t.id = cc.target_claim_id
                 WHERE cc.state = 'open' AND (s.status != 'active' OR t.status != 'active'
                    OR s.current_revision_id != cc.source_revision_id OR t.current_revision_id != cc.target_revision_id)",
            ),
            (
                "live contradiction without an open case",
                "SELECT rel.id FROM relations rel JOIN claims s ON s.id = rel.source_id JOIN claims t ON t.id = rel.target_id
                 WHERE rel.relation = 'contradicts' AND s.status = 'active' AND t.status = 'active'
                   AND NOT EXISTS (SELECT 1 FROM conflict_cases cc WHERE cc.relation_id = rel.id AND cc.state = 'open')",
            ),
            (
                "case of a relation that is not a contradiction",
                "SELECT cc.case_id FROM conflict_cases cc JOIN relations rel ON rel.id = cc.relation_id
                 WHERE rel.relation != 'contradicts'",
            ),
        ];
        let mut found = Vec::new();
        for (what, sql) in rules {
            let mut stmt = self.0.prepare(sql).unwrap();
            let ids = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            found.extend(ids.into_iter().map(|id| format!("{what}: {id}")));
        }
        found
    }

    /// `(case_id, state)` of every open or stale case.
    pub fn listed_cases(&self) -> HashSet<(String, String)> {
        let mut stmt = self
            .0
            .prepare("SELECT case_id, state FROM conflict_cases WHERE state IN ('open', 'stale')")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<HashSet<_>>>()
            .unwrap()
    }
}

/// Every `(case_id, state)` that `conflict.list` with `include_stale` returns, all pages.
pub fn conflict_list(session: &mut SocketSession) -> HashSet<(String, String)> {
    let mut cases = HashSet::new();
    let mut before: Option<i64> = None;
    loop {
        let response = call(
            session,
            &read_request(
                "conflict.list",
                json!({"include_stale": true, "limit": 100, "before_case_sequence": before}),
            ),
        );
        assert!(response.ok, "conflict.list failed: {response:?}");
        let result = response.result.unwrap();
        for case in result["conflicts"].as_array().unwrap() {
            cases.insert((
                case["case_id"].as_str().unwrap().to_owned(),
                case["state"].as_str().unwrap().to_owned(),
            ));
        }
        match result["next_before_case_sequence"].as_i64() {
            Some(next) if result["truncated"] == true => before = Some(next),
            _ => return cases,
        }
    }
}

/// Runs `verify` and returns its issue lines (empty when clean).
pub fn verify_issues(session: &mut SocketSession) -> Vec<String> {
    let response = call(session, &read_request("verify", json!({})));
    assert!(response.ok, "verify failed: {response:?}");
    let result = response.result.unwrap();
    let issues: Vec<String> = result["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|issue| issue.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(result["ok"], issues.is_empty(), "{result}");
    issues
}

/// Reads back what `ack` wrote: the exact revision (with its content for artifacts) or the
/// relation from its source's side.
pub fn read_back(session: &mut SocketSession, ack: &Ack) -> Result<(), String> {
    let key = &ack.mutation.key;
    let result = ack.result();
    match ack.mutation.op {
        Op::ArtifactPut | Op::ArtifactRevise => {
            let response = call(
                session,
                &read_request(
                    "artifact.get",
                    json!({"artifact_id": ack.entity_id(), "revision_id": ack.produced_id(), "include_content": true}),
                ),
            );
            let got = response.result.as_ref().filter(|_| response.ok);
            let data = got.and_then(|r| r["content"]["data"].as_str());
            if data != ack.mutation.content.as_deref() {
                return Err(format!(
                    "{key}: artifact.get does not return the acknowledged content: {response:?}"
                ));
            }
        }
        Op::ClaimAssert | Op::ClaimRevise | Op::ClaimRetract => {
            let response = call(
                session,
                &read_request(
                    "claim.get",
                    json!({"claim_id": ack.entity_id(), "revision_id": ack.produced_id()}),
                ),
            );
            let got = response.result.as_ref().filter(|_| response.ok);
            if got.map(|r| &r["statement"]) != Some(&result["statement"]) {
                return Err(format!(
                    "{key}: claim.get does not return the acknowledged revision: {response:?}"
                ));
            }
        }
        Op::RelationPut => {
            let relation = result["relation"].as_str().unwrap();
            let mut before: Option<i64> = None;
            loop {
                let response = call(
                    session,
                    &read_request(
                        "relation.list",
                        json!({
                            "entity_type": result["source_type"], "entity_id": result["source_id"],
                            "direction": "outgoing", "relation": relation, "limit": 100,
                            "before_commit_seq": before,
                        }),
                    ),
                );
                let page = response
                    .result
                    .as_ref()
                    .filter(|_| response.ok)
                    .ok_or_else(|| format!("{key}: relation.list failed: {response:?}"))?;
                let listed = page["relations"].as_array().unwrap();
                let matching = listed
                    .iter()
                    .filter(|r| r["relation_id"] == result["relation_id"])
                    .count();
                if matching == 1 {
                    break;
                }
                match page["next_before_commit_seq"].as_i64() {
                    Some(next) if page["truncated"] == true => before = Some(next),
                    _ => return Err(format!("{key}: relation.list does not list {}", ack.produced_id())),
                }
            }
        }
    }
    Ok(())
}
