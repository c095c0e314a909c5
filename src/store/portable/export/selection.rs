//! The selection of a scoped export ([`Scope::Visible`](super::super::Scope)), on both
//! backends: the artifacts, claims and relations visible from the ambient context at the
//! horizon, closed under references (relation endpoints, cited evidence), and the events,
//! conflict cases, replays and tombstones that follow them (`spec/export-v1.md`, *Scope*).
//!
//! [`select`] fills three temporary tables (`x_relations`, `x_entities`, `x_events`) in the
//! export's snapshot; [`tail`] gives each record file's `WHERE … ORDER BY …` over them (or
//! over everything). Only the JSON functions, `INSERT OR IGNORE` and the temporary tables'
//! declarations differ between the backends.
//!
//! **Invariant:** the selection only ever writes its temporary tables (on PostgreSQL they
//! live in the export's transaction, which is rolled back).

use crate::protocol::Horizon;
use crate::store::db::{Db, Dialect, Param, Value};
use crate::store::error::StoreResult;
use crate::store::portable::RecordFile;
use crate::store::scope::{self, Owner};

/// The `WHERE … ORDER BY …` tail of each record file's query: everything, or the
/// selection computed by [`select`].
pub(super) fn tail(db: Db<'_>, file: &RecordFile, scoped: bool) -> &'static str {
    // PostgreSQL has no rowid: entities are in creation order, that of their first
    // revision (the order the embedded store inserted them in).
    if db.dialect() == Dialect::Postgres {
        match (file.record_type, scoped) {
            ("artifact", false) => {
                return "ORDER BY (SELECT min(r0.commit_seq) FROM artifact_revisions r0 WHERE r0.artifact_id = a.id), a.id";
            }
            ("artifact", true) => {
                return "WHERE a.id IN (SELECT id FROM x_entities)
                        ORDER BY (SELECT min(r0.commit_seq) FROM artifact_revisions r0 WHERE r0.artifact_id = a.id), a.id";
            }
            ("claim", false) => {
                return "ORDER BY (SELECT min(r0.commit_seq) FROM claim_revisions r0 WHERE r0.claim_id = c.id), c.id";
            }
            ("claim", true) => {
                return "WHERE c.id IN (SELECT id FROM x_entities)
                        ORDER BY (SELECT min(r0.commit_seq) FROM claim_revisions r0 WHERE r0.claim_id = c.id), c.id";
            }
            ("replay", true) => {
                return "WHERE CAST(i.replay_json AS jsonb) ->> 'artifact_revision' IN
                           (SELECT id FROM artifact_revisions WHERE artifact_id IN (SELECT id FROM x_entities))
                        OR CAST(i.replay_json AS jsonb) ->> 'claim_revision' IN
                           (SELECT id FROM claim_revisions WHERE claim_id IN (SELECT id FROM x_entities))
                        OR CAST(i.replay_json AS jsonb) ->> 'relation' IN (SELECT id FROM x_relations)
                        OR CAST(i.replay_json AS jsonb) ->> 'purge' IN (SELECT id FROM x_entities)
                        ORDER BY i.scoped_key";
            }
            _ => {}
        }
    }
    match (file.record_type, scoped) {
        ("event", false) => "ORDER BY e.commit_seq",
        ("event", true) => "WHERE e.commit_seq IN (SELECT commit_seq FROM x_events) ORDER BY e.commit_seq",
        ("artifact", false) => "ORDER BY a.rowid",
        ("artifact", true) => "WHERE a.id IN (SELECT id FROM x_entities) ORDER BY a.rowid",
        ("artifact_revision", false) => "ORDER BY r.seq",
        ("artifact_revision", true) => "WHERE r.artifact_id IN (SELECT id FROM x_entities) ORDER BY r.seq",
        ("claim", false) => "ORDER BY c.rowid",
        ("claim", true) => "WHERE c.id IN (SELECT id FROM x_entities) ORDER BY c.rowid",
        ("claim_revision", false) => "ORDER BY r.seq",
        ("claim_revision", true) => "WHERE r.claim_id IN (SELECT id FROM x_entities) ORDER BY r.seq",
        ("relation", false) => "ORDER BY rel.seq",
        ("relation", true) => "WHERE rel.id IN (SELECT id FROM x_relations) ORDER BY rel.seq",
        ("conflict_case", false) => "ORDER BY cc.case_sequence",
        ("conflict_case", true) => "WHERE cc.relation_id IN (SELECT id FROM x_relations) ORDER BY cc.case_sequence",
        ("conflict_event", false) => "ORDER BY ce.seq",
        ("conflict_event", true) => {
            "WHERE ce.case_id IN (SELECT case_id FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations))
             ORDER BY ce.seq"
        }
        ("replay", false) => "ORDER BY i.scoped_key",
        ("replay", true) => {
            "WHERE json_extract(i.replay_json, '$.artifact_revision') IN
                   (SELECT id FROM artifact_revisions WHERE artifact_id IN (SELECT id FROM x_entities))
                OR json_extract(i.replay_json, '$.claim_revision') IN
                   (SELECT id FROM claim_revisions WHERE claim_id IN (SELECT id FROM x_entities))
                OR json_extract(i.replay_json, '$.relation') IN (SELECT id FROM x_relations)
                OR json_extract(i.replay_json, '$.purge') IN (SELECT id FROM x_entities)
             ORDER BY i.scoped_key"
        }
        ("tombstone", false) => "ORDER BY p.commit_seq",
        ("tombstone", true) => "WHERE p.entity_id IN (SELECT id FROM x_entities) ORDER BY p.commit_seq",
        _ => "",
    }
}

/// Inserts the rows of `select` into the temporary table `table`, skipping ones already there.
fn insert_new(db: Db<'_>, table: &str, select: &str, params: &[Value]) -> StoreResult<()> {
    let sql = match db.dialect() {
        Dialect::Sqlite => format!("INSERT OR IGNORE INTO {table} {select}"),
        Dialect::Postgres => format!("INSERT INTO {table} {select} ON CONFLICT DO NOTHING"),
    };
    let params: Vec<&dyn Param> = params.iter().map(|p| p as &dyn Param).collect();
    db.execute(&sql, &params)?;
    Ok(())
}

/// Fills the temporary selection tables of a scoped export.
pub(super) fn select(db: Db<'_>, ambient: &Owner, horizon: Horizon) -> StoreResult<()> {
    db.batch(db.pick(
        "CREATE TEMP TABLE x_relations (id TEXT PRIMARY KEY) WITHOUT ROWID;
         CREATE TEMP TABLE x_entities (id TEXT PRIMARY KEY) WITHOUT ROWID;
         CREATE TEMP TABLE x_events (commit_seq INTEGER PRIMARY KEY);",
        "CREATE TEMP TABLE x_relations (id TEXT COLLATE \"C\" PRIMARY KEY) ON COMMIT DROP;
         CREATE TEMP TABLE x_entities (id TEXT COLLATE \"C\" PRIMARY KEY) ON COMMIT DROP;
         CREATE TEMP TABLE x_events (commit_seq BIGINT PRIMARY KEY) ON COMMIT DROP;",
    ))?;
    for (table, alias, from) in [
        ("x_relations", "rel", "relations rel"),
        ("x_entities", "a", "artifacts a"),
        ("x_entities", "c", "claims c"),
    ] {
        let mut params: Vec<Value> = Vec::new();
        let predicate = scope::visibility_sql(alias, ambient, horizon, &mut params);
        insert_new(
            db,
            table,
            &format!("SELECT {alias}.id FROM {from} WHERE {predicate}"),
            &params,
        )?;
    }
    let evidence = db.pick(
        "SELECT DISTINCT json_extract(e.value, '$.artifact_id')
         FROM claim_revisions r, json_each(CASE WHEN json_valid(r.evidence_json) THEN r.evidence_json ELSE '[]' END) e
         WHERE r.claim_id IN (SELECT id FROM x_entities) AND json_extract(e.value, '$.artifact_id') IS NOT NULL",
        "SELECT DISTINCT e.value ->> 'artifact_id'
         FROM claim_revisions r, jsonb_array_elements(CAST(r.evidence_json AS jsonb)) e(value)
         WHERE r.claim_id IN (SELECT id FROM x_entities) AND e.value ->> 'artifact_id' IS NOT NULL",
    );
    for (table, select) in [
        (
            "x_entities",
            "SELECT source_id FROM relations WHERE id IN (SELECT id FROM x_relations)",
        ),
        (
            "x_entities",
            "SELECT target_id FROM relations WHERE id IN (SELECT id FROM x_relations)",
        ),
        ("x_entities", evidence),
        (
            "x_events",
            "SELECT commit_seq FROM events WHERE entity_id IN (SELECT id FROM x_entities) OR entity_id IN (SELECT id FROM x_relations)",
        ),
        (
            "x_events",
            "SELECT commit_seq FROM artifact_revisions WHERE artifact_id IN (SELECT id FROM x_entities)",
        ),
        (
            "x_events",
            "SELECT commit_seq FROM claim_revisions WHERE claim_id IN (SELECT id FROM x_entities)",
        ),
        (
            "x_events",
            "SELECT commit_seq FROM relations WHERE id IN (SELECT id FROM x_relations)",
        ),
        (
            "x_events",
            "SELECT opened_commit_seq FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations)",
        ),
        (
            "x_events",
            "SELECT operation_commit_seq FROM conflict_events
             WHERE case_id IN (SELECT case_id FROM conflict_cases WHERE relation_id IN (SELECT id FROM x_relations))",
        ),
        (
            "x_events",
            "SELECT commit_seq FROM purges WHERE entity_id IN (SELECT id FROM x_entities)",
        ),
    ] {
        insert_new(db, table, select, &[])?;
    }
    Ok(())
}
