//! The one code path for entities with immutable numbered revisions and a mutable head:
//! artifacts and claims ([`Revisioned`]).
//!
//! Reads: [`get`] (the head, or an exact revision of the entity), [`get_revision`] (by
//! revision id alone), [`head`] (or `NOT_FOUND`), [`exists`], [`history`] (newest first,
//! exclusive cursor). Writes, each with its one `events` row in the mutation's transaction:
//! [`create`] (entity and revision 1), [`revise`] (the next revision becomes the head) and
//! [`close`] (the terminal lifecycle: forgotten, retracted). An entity type supplies only
//! its own columns and inserts, and what follows a revision or a close (a claim's conflict
//! cases).
//!
//! The SQL here is built from the type's constants and prepared through the connection's
//! statement cache, so each statement is formatted and compiled once per connection.
//!
//! **Invariants:** a revision row is never updated (triggers enforce it); the head moves
//! only forward, to a revision inserted in the same transaction; `commit_seq` is taken once
//! per mutation, before its rows, and the event carries it.

use serde_json::json;

use super::db::{Db, Row};
use super::error::{StoreError, StoreResult};
use super::scope::Owner;
use super::{Event, EventEntity, Tx};
use crate::protocol::Operation;
use crate::protocol::relation::EntityType;

/// One revision row joined with its entity's current lifecycle.
pub trait RevisionRow {
    fn entity_id(&self) -> &str;
    fn revision_id(&self) -> &str;
    fn revision_number(&self) -> i64;
    fn owner(&self) -> &Owner;
    /// The revision rowid (the FTS rowid).
    fn seq(&self) -> i64;
    /// The entity's current revision id.
    fn current_revision_id(&self) -> &str;
    /// Whether a purge erased this revision's content (see [`super::purge`]).
    fn purged(&self) -> bool;

    fn is_current_revision(&self) -> bool {
        self.revision_id() == self.current_revision_id()
    }
}

/// An entity kind with revisions. [`Revisioned::ALIAS`] aliases the entity table and `r` the
/// revision table in [`Revisioned::columns`].
pub trait Revisioned {
    /// The entity's row type, one per revision.
    type Row: RevisionRow + Send + 'static;
    /// What a new revision carries.
    type NewRevision: Send + 'static;

    const ENTITY: EntityType;
    /// The entity table, e.g. `artifacts`.
    const TABLE: &'static str;
    /// The entity table's alias in [`Revisioned::columns`], e.g. `a`.
    const ALIAS: &'static str;
    /// The revision table, e.g. `artifact_revisions`.
    const REVISIONS: &'static str;
    /// The revision table's column naming the entity, e.g. `artifact_id`.
    const PARENT: &'static str;
    /// The operations recorded for creating, revising and closing.
    const CREATE: Operation;
    const REVISE: Operation;
    const CLOSE: Operation;
    /// The stored status a close sets and the column holding its reason.
    const CLOSED_STATUS: &'static str;
    const CLOSED_REASON: &'static str;

    /// The selected columns, with [`Revisioned::ALIAS`] the entity and `r` the revision.
    fn columns() -> &'static str;
    fn row(r: &Row<'_>) -> StoreResult<Self::Row>;

    /// The actor recorded on the revision's event.
    fn actor(new: &Self::NewRevision) -> Option<&str>;
    /// Inserts revision `number` of `entity_id` (and its FTS row); returns its id.
    fn insert_revision(
        tx: &Tx<'_>,
        entity_id: &str,
        number: i64,
        new: &Self::NewRevision,
        commit_seq: i64,
    ) -> StoreResult<String>;

    /// Runs after a revision became the head (claims reassess their conflict cases).
    fn after_revise(_tx: &Tx<'_>, _entity_id: &str, _commit_seq: i64) -> StoreResult<()> {
        Ok(())
    }

    /// Runs after the entity was closed (claims resolve their conflict cases).
    fn after_close(_tx: &Tx<'_>, _entity_id: &str, _commit_seq: i64) -> StoreResult<()> {
        Ok(())
    }
}

fn event_entity(entity: EntityType) -> EventEntity {
    match entity {
        EntityType::Artifact => EventEntity::Artifact,
        EntityType::Claim => EventEntity::Claim,
    }
}

/// Loads one revision: the head when `revision_id` is `None`.
pub fn get<'c, E: Revisioned>(
    db: impl Into<Db<'c>>,
    id: &str,
    revision_id: Option<&str>,
) -> StoreResult<Option<E::Row>> {
    let db = db.into();
    let (columns, table, e, revisions, parent) = (E::columns(), E::TABLE, E::ALIAS, E::REVISIONS, E::PARENT);
    match revision_id {
        None => db.query_opt(
            &format!(
                "SELECT {columns} FROM {table} {e} JOIN {revisions} r ON r.id = {e}.current_revision_id WHERE {e}.id = ?1"
            ),
            &[&id],
            E::row,
        ),
        Some(revision_id) => db.query_opt(
            &format!(
                "SELECT {columns} FROM {revisions} r JOIN {table} {e} ON {e}.id = r.{parent} WHERE {e}.id = ?1 AND r.id = ?2"
            ),
            &[&id, &revision_id],
            E::row,
        ),
    }
}

/// Loads the head or fails with `NOT_FOUND` (`artifact <id>` / `claim <id>`).
pub fn head<'c, E: Revisioned>(db: impl Into<Db<'c>>, id: &str) -> StoreResult<E::Row> {
    get::<E>(db, id, None)?.ok_or_else(|| StoreError::NotFound(format!("{} {id}", E::ENTITY)))
}

/// Loads a revision by its revision id alone.
pub fn get_revision<'c, E: Revisioned>(db: impl Into<Db<'c>>, revision_id: &str) -> StoreResult<Option<E::Row>> {
    let (columns, table, e, revisions, parent) = (E::columns(), E::TABLE, E::ALIAS, E::REVISIONS, E::PARENT);
    db.into().query_opt(
        &format!("SELECT {columns} FROM {revisions} r JOIN {table} {e} ON {e}.id = r.{parent} WHERE r.id = ?1"),
        &[&revision_id],
        E::row,
    )
}

/// Whether the entity exists.
pub fn exists<'c, E: Revisioned>(db: impl Into<Db<'c>>, id: &str) -> StoreResult<bool> {
    Ok(db
        .into()
        .query_opt(&format!("SELECT 1 FROM {} WHERE id = ?1", E::TABLE), &[&id], |_| Ok(()))?
        .is_some())
}

/// One page of revisions, newest first, numbered strictly below `before` when given;
/// `NOT_FOUND` when the entity does not exist. Returns the rows and whether older ones
/// exist.
pub fn history<'c, E: Revisioned>(
    db: impl Into<Db<'c>>,
    id: &str,
    limit: usize,
    before: Option<i64>,
) -> StoreResult<(Vec<E::Row>, bool)> {
    let db = db.into();
    if !exists::<E>(db, id)? {
        return Err(StoreError::NotFound(format!("{} {id}", E::ENTITY)));
    }
    let (columns, table, e, revisions, parent) = (E::columns(), E::TABLE, E::ALIAS, E::REVISIONS, E::PARENT);
    let mut rows = db.query_all(
        &format!(
            "SELECT {columns} FROM {revisions} r JOIN {table} {e} ON {e}.id = r.{parent}
             WHERE {e}.id = ?1 AND r.revision_number < ?2 ORDER BY r.revision_number DESC LIMIT ?3"
        ),
        &[&id, &before.unwrap_or(i64::MAX), &(limit as i64 + 1)],
        E::row,
    )?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    Ok((rows, truncated))
}

/// Creates an entity with its first revision: `insert_entity` writes the entity row (its
/// `current_revision_id` is the id it is given). Returns the stored head and `commit_seq`.
pub fn create<E: Revisioned>(
    tx: &Tx<'_>,
    id: &str,
    new: &E::NewRevision,
    insert_entity: impl FnOnce(&Tx<'_>) -> StoreResult<()>,
) -> StoreResult<(E::Row, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    insert_entity(tx)?;
    let revision_id = E::insert_revision(tx, id, 1, new, commit_seq)?;
    set_head::<E>(tx, id, &revision_id)?;
    tx.append_event(&Event {
        commit_seq,
        operation: E::CREATE,
        entity: event_entity(E::ENTITY),
        entity_id: id,
        revision_id: Some(&revision_id),
        actor: E::actor(new),
        // The entity and revision rows hold everything: nothing to add.
        payload: json!({}),
    })?;
    Ok((head::<E>(tx.db(), id)?, commit_seq))
}

/// Appends the next revision to `current` (scope, lifecycle and `if_revision` already
/// checked) and makes it the head.
pub fn revise<E: Revisioned>(tx: &Tx<'_>, current: &E::Row, new: &E::NewRevision) -> StoreResult<(E::Row, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    let id = current.entity_id();
    let revision_id = E::insert_revision(tx, id, current.revision_number() + 1, new, commit_seq)?;
    set_head::<E>(tx, id, &revision_id)?;
    // The semantic projection holds current revisions only.
    super::vectors::drop_revision(tx.db(), E::ENTITY, current.seq())?;
    tx.append_event(&Event {
        commit_seq,
        operation: E::REVISE,
        entity: event_entity(E::ENTITY),
        entity_id: id,
        revision_id: Some(&revision_id),
        actor: E::actor(new),
        payload: json!({"previous_revision_id": current.revision_id()}),
    })?;
    E::after_revise(tx, id, commit_seq)?;
    Ok((head::<E>(tx.db(), id)?, commit_seq))
}

/// Moves the entity to its terminal status with `reason`; its revisions stay readable.
pub fn close<E: Revisioned>(tx: &Tx<'_>, current: &E::Row, reason: &str) -> StoreResult<(E::Row, i64)> {
    let commit_seq = tx.next_commit_seq()?;
    let id = current.entity_id();
    tx.db().execute(
        &format!(
            "UPDATE {} SET status = ?1, {} = ?2, updated_at = ?3 WHERE id = ?4",
            E::TABLE,
            E::CLOSED_REASON
        ),
        &[&E::CLOSED_STATUS, &reason, &tx.now_db(), &id],
    )?;
    tx.append_event(&Event {
        commit_seq,
        operation: E::CLOSE,
        entity: event_entity(E::ENTITY),
        entity_id: id,
        revision_id: Some(current.revision_id()),
        actor: None,
        payload: json!({"reason": reason}),
    })?;
    E::after_close(tx, id, commit_seq)?;
    Ok((head::<E>(tx.db(), id)?, commit_seq))
}

fn set_head<E: Revisioned>(tx: &Tx<'_>, id: &str, revision_id: &str) -> StoreResult<()> {
    tx.db().execute(
        &format!(
            "UPDATE {} SET current_revision_id = ?1, updated_at = ?2 WHERE id = ?3",
            E::TABLE
        ),
        &[&revision_id, &tx.now_db(), &id],
    )?;
    Ok(())
}
