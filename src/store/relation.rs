//! Relations: immutable typed edges between artifacts and claims, and their lifecycle
//! effects (`supersedes` marks its target superseded, `contradicts` opens a conflict case).
//!
//! A relation row records its creator's ambient context; reads filter rows by that
//! context, never by the endpoints' owners. Metadata is untrusted reference data, stored
//! and returned verbatim.
//!
//! **Invariants:** the `(source, relation, target)` 5-tuple is unique, so re-putting an edge
//! never creates a second row; both endpoints are checked against the caller's write scope
//! before any row, event or lifecycle effect is written.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use super::error::{StoreError, StoreResult};
use super::scope::{self, Owner, owner_from_row};
use super::{Event, EventEntity, Tx, claim, conflict};
use crate::protocol::ids::RelationId;
use crate::protocol::relation::{EntityStatus, EntityType, RelationDirection, RelationType};
use crate::protocol::{Horizon, Operation};

/// The reason recorded on the case a new contradiction opens.
pub const CONTRADICTION_CREATED: &str = "contradiction relation created";

/// One relation row.
#[derive(Clone, Debug)]
pub struct RelationRow {
    pub seq: i64,
    pub relation_id: RelationId,
    pub source_type: EntityType,
    pub source_id: String,
    pub relation: RelationType,
    pub target_type: EntityType,
    pub target_id: String,
    pub metadata_json: String,
    /// The creator's ambient context (without pins).
    pub owner: Owner,
    pub created_at: String,
    pub commit_seq: i64,
}

const COLUMNS: &str = "rel.seq, rel.id, rel.source_type, rel.source_id, rel.relation, rel.target_type, rel.target_id, \
     rel.metadata_json, rel.workspace_id, rel.project_id, rel.task_id, rel.component, rel.created_at, rel.commit_seq";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RelationRow> {
    Ok(RelationRow {
        seq: r.get(0)?,
        relation_id: r.get(1)?,
        source_type: r.get(2)?,
        source_id: r.get(3)?,
        relation: r.get(4)?,
        target_type: r.get(5)?,
        target_id: r.get(6)?,
        metadata_json: r.get(7)?,
        owner: owner_from_row(r, 8)?,
        created_at: r.get(12)?,
        commit_seq: r.get(13)?,
    })
}

/// An existing artifact or claim a relation names, with its owner and stored lifecycle.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub entity_type: EntityType,
    pub entity_id: String,
    pub owner: Owner,
    /// `active`/`forgotten` for artifacts; `active`/`superseded`/`retracted` for claims.
    pub lifecycle: EntityStatus,
}

impl Endpoint {
    pub fn is_claim(&self) -> bool {
        self.entity_type == EntityType::Claim
    }

    pub fn is_terminal_claim(&self) -> bool {
        self.is_claim() && matches!(self.lifecycle, EntityStatus::Superseded | EntityStatus::Retracted)
    }
}

/// Loads an endpoint or fails with `NOT_FOUND` (`artifact <id>` / `claim <id>`).
pub fn endpoint(conn: &Connection, entity_type: EntityType, entity_id: &str) -> StoreResult<Endpoint> {
    let table = match entity_type {
        EntityType::Artifact => "artifacts",
        EntityType::Claim => "claims",
    };
    conn.prepare_cached(&format!(
        "SELECT workspace_id, project_id, task_id, component, status FROM {table} WHERE id = ?1"
    ))?
    .query_row([entity_id], |r| {
        let status: String = r.get(4)?;
        Ok((owner_from_row(r, 0)?, status))
    })
    .optional()?
    .map(|(owner, status)| {
        let lifecycle = EntityStatus::parse(&status)
            .ok_or_else(|| StoreError::Integrity(format!("{entity_type} {entity_id} has unknown status {status:?}")))?;
        Ok(Endpoint {
            entity_type,
            entity_id: entity_id.to_owned(),
            owner,
            lifecycle,
        })
    })
    .unwrap_or_else(|| Err(StoreError::NotFound(format!("{entity_type} {entity_id}"))))
}

/// Refuses a write touching `endpoint` from outside its project/task.
pub fn check_endpoint_write(endpoint: &Endpoint, ambient: &Owner) -> StoreResult<()> {
    scope::check_write(
        endpoint.entity_type.as_str(),
        &endpoint.entity_id,
        &endpoint.owner,
        ambient,
    )
}

/// Whether a context pin names `artifact_id` (`art`, `art@rev` or `memoree://artifact/art@rev`).
pub fn pin_names_artifact(pin: &str, artifact_id: &str) -> bool {
    let bare = pin.strip_prefix("memoree://artifact/").unwrap_or(pin);
    bare.split('@').next() == Some(artifact_id)
}

/// The anchor rule of `relation.list`: the anchor's owner is visible at `horizon`, or the
/// anchor is an artifact a pin names. Pins admit the anchor only; rows stay filtered.
pub fn check_anchor_read(anchor: &Endpoint, ambient: &Owner, pins: &[String], horizon: Horizon) -> StoreResult<()> {
    if anchor.owner.visible_from(ambient, horizon) {
        return Ok(());
    }
    if anchor.entity_type == EntityType::Artifact && pins.iter().any(|pin| pin_names_artifact(pin, &anchor.entity_id)) {
        return Ok(());
    }
    Err(StoreError::Scope(format!(
        "{} {} belongs to {}; {horizon:?} relation-read scope starts at {}",
        anchor.entity_type,
        anchor.entity_id,
        anchor.owner.describe(),
        ambient.describe()
    )))
}

/// Loads a relation by id.
pub fn get(conn: &Connection, relation_id: &str) -> StoreResult<Option<RelationRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM relations rel WHERE rel.id = ?1"))?
        .query_row([relation_id], row)
        .optional()?)
}

fn find_edge(
    conn: &Connection,
    source: &Endpoint,
    relation: RelationType,
    target: &Endpoint,
) -> StoreResult<Option<RelationRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM relations rel WHERE rel.source_type = ?1 AND rel.source_id = ?2
             AND rel.relation = ?3 AND rel.target_type = ?4 AND rel.target_id = ?5"
        ))?
        .query_row(
            params![
                source.entity_type,
                source.entity_id,
                relation,
                target.entity_type,
                target.entity_id
            ],
            row,
        )
        .optional()?)
}

/// A new edge between two loaded, in-scope endpoints.
#[derive(Clone, Debug)]
pub struct NewRelation {
    pub source: Endpoint,
    pub relation: RelationType,
    pub target: Endpoint,
    /// Encoded JSON object.
    pub metadata_json: String,
}

/// What [`put`] did.
#[derive(Debug)]
pub enum PutOutcome {
    /// A new row with the commit sequence it took.
    Created(RelationRow, i64),
    /// The identical edge already existed with equal metadata; nothing was written.
    Existing(RelationRow),
}

fn same_metadata(stored: &str, requested: &str) -> StoreResult<bool> {
    let stored: Value = serde_json::from_str(stored)?;
    let requested: Value = serde_json::from_str(requested)?;
    Ok(stored == requested)
}

/// Creates an edge and applies its lifecycle effects, or returns the identical existing
/// edge. Scope and replay checks are the caller's; `event_payload` renders the event body
/// (the full relation record) from the stored row.
pub fn put(
    tx: &Tx<'_>,
    owner: &Owner,
    new: &NewRelation,
    event_payload: &dyn Fn(&RelationRow) -> StoreResult<Value>,
) -> StoreResult<PutOutcome> {
    let (source, target, relation) = (&new.source, &new.target, new.relation);
    if let Some(existing) = find_edge(tx.conn(), source, relation, target)? {
        if same_metadata(&existing.metadata_json, &new.metadata_json)? {
            return Ok(PutOutcome::Existing(existing));
        }
        return Err(StoreError::Invalid(format!(
            "relation {} already exists with different metadata",
            existing.relation_id
        )));
    }
    if relation.is_claim_lifecycle() {
        if !source.is_claim() || !target.is_claim() {
            return Err(StoreError::Invalid(format!(
                "{relation} relations require claim-to-claim endpoints"
            )));
        }
        for end in [source, target] {
            if end.is_terminal_claim() {
                return Err(StoreError::Invalid(format!(
                    "cannot relate terminal {} claim {} as {relation}",
                    end.lifecycle, end.entity_id
                )));
            }
        }
    }
    let commit_seq = tx.next_commit_seq()?;
    let relation_id = RelationId::generate();
    tx.conn()
        .prepare_cached(
            "INSERT INTO relations (id, source_type, source_id, relation, target_type, target_id, metadata_json,
                 workspace_id, project_id, task_id, component, created_at, commit_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?
        .execute(params![
            relation_id,
            source.entity_type,
            source.entity_id,
            relation,
            target.entity_type,
            target.entity_id,
            new.metadata_json,
            owner.workspace_id,
            owner.project_id,
            owner.task_id,
            owner.component,
            tx.now_db(),
            commit_seq
        ])?;
    let stored = get(tx.conn(), &relation_id)?
        .ok_or_else(|| StoreError::Internal(format!("relation {relation_id} vanished after insert")))?;
    tx.append_event(&Event {
        commit_seq,
        operation: Operation::RelationPut,
        entity: EventEntity::Relation,
        entity_id: &relation_id,
        revision_id: None,
        actor: None,
        payload: event_payload(&stored)?,
    })?;
    match relation {
        RelationType::Supersedes => claim::supersede(tx, &target.entity_id, commit_seq)?,
        RelationType::Contradicts => {
            conflict::open_case(tx, &relation_id, CONTRADICTION_CREATED, commit_seq)?;
        }
        _ => {}
    }
    Ok(PutOutcome::Created(stored, commit_seq))
}

/// One `relation.list` page request.
#[derive(Clone, Debug)]
pub struct ListQuery<'a> {
    pub entity_type: EntityType,
    pub entity_id: &'a str,
    pub direction: RelationDirection,
    pub relation: Option<RelationType>,
    pub before_commit_seq: Option<i64>,
    pub limit: usize,
    pub ambient: &'a Owner,
    pub horizon: Horizon,
}

/// One page of one-hop edges of an anchor, newest first by commit sequence, filtered by
/// each row's own creator context. Returns the rows and whether more rows exist.
pub fn list(conn: &Connection, query: &ListQuery<'_>) -> StoreResult<(Vec<RelationRow>, bool)> {
    let mut params: Vec<SqlValue> = Vec::new();
    let anchor = |side: &str, params: &mut Vec<SqlValue>| {
        params.push(SqlValue::Text(query.entity_type.as_str().to_owned()));
        params.push(SqlValue::Text(query.entity_id.to_owned()));
        format!("(rel.{side}_type = ? AND rel.{side}_id = ?)")
    };
    let mut clauses = vec![match query.direction {
        RelationDirection::Outgoing => anchor("source", &mut params),
        RelationDirection::Incoming => anchor("target", &mut params),
        RelationDirection::Both => {
            let outgoing = anchor("source", &mut params);
            let incoming = anchor("target", &mut params);
            format!("({outgoing} OR {incoming})")
        }
    }];
    if let Some(relation) = query.relation {
        params.push(SqlValue::Text(relation.as_str().to_owned()));
        clauses.push("rel.relation = ?".to_owned());
    }
    if let Some(before) = query.before_commit_seq {
        params.push(SqlValue::Integer(before));
        clauses.push("rel.commit_seq < ?".to_owned());
    }
    clauses.push(scope::visibility_sql("rel", query.ambient, query.horizon, &mut params));
    params.push(SqlValue::Integer(query.limit as i64 + 1));
    let sql = format!(
        "SELECT {COLUMNS} FROM relations rel WHERE {} ORDER BY rel.commit_seq DESC LIMIT ?",
        clauses.join(" AND ")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt
        .query_map(params_from_iter(params), row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let more = rows.len() > query.limit;
    rows.truncate(query.limit);
    Ok((rows, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_name_an_artifact_in_all_three_forms_and_nothing_else() {
        assert!(pin_names_artifact("art_1", "art_1"));
        assert!(pin_names_artifact("art_1@arev_2", "art_1"));
        assert!(pin_names_artifact("memoree://artifact/art_1@arev_2", "art_1"));
        assert!(pin_names_artifact("memoree://artifact/art_1", "art_1"));
        assert!(!pin_names_artifact("art_10", "art_1"));
        assert!(!pin_names_artifact("memoree://claim/art_1", "art_1"));
    }
}
