//! The operation shapes artifacts and claims share, on top of `store::revisioned`: exact
//! get, history pages, and writes to an existing entity (head, write scope, replay, then the
//! entity's own rules) including the terminal close (`artifact.forget`, `claim.retract`).

use serde::Serialize;

use super::mutation::{self, Acknowledged};
use crate::protocol::artifact::HistoryPage;
use crate::protocol::limits;
use crate::service::convert::context_owner;
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError, Written};
use crate::store::revisioned::{self, RevisionRow, Revisioned};
use crate::store::{StoreError, StoreResult, Tx, scope};

/// How an entity's rows become wire records and acknowledgements.
pub(super) trait Entity: Revisioned + 'static {
    type Record: Serialize;
    /// The stored status of a closed entity, and how the close is described
    /// (`forgotten`, `retracted`).
    const CLOSED: &'static str;

    fn record(row: &Self::Row) -> Self::Record;
    fn acknowledged(row: Self::Row) -> Acknowledged;
    fn is_closed(row: &Self::Row) -> bool;
    /// The `NOT_FOUND` message of an exact get.
    fn not_found(id: &str, revision_id: Option<&str>) -> String;
}

/// An exact get: the head, or the named revision with the entity's current lifecycle.
pub(super) fn get<E: Entity>(service: &Service, id: &str, revision_id: Option<&str>) -> Result<E::Row, ServiceError> {
    validate::id(&format!("{}_id", E::ENTITY), id)?;
    if let Some(revision_id) = revision_id {
        validate::id("revision_id", revision_id)?;
    }
    // The owner check comes before the purge check: a purged entity outside the grant is
    // `SCOPE_VIOLATION`, never `NOT_FOUND` with its tombstone's details.
    let grant = service.grant();
    let row = service
        .store()
        .read_db(|db| match revisioned::get::<E>(db, id, revision_id)? {
            Some(row) => {
                if let Err(refused) = grant.check_owner(E::ENTITY, id, row.owner()) {
                    return Ok(Err(refused));
                }
                // A purged revision reads as `NOT_FOUND` with `details.state = "purged"`.
                if row.purged() {
                    return Err(crate::store::tombstone::purged_error_from(
                        db,
                        E::ENTITY.as_str(),
                        row.entity_id(),
                        Some(row.revision_id()),
                    ));
                }
                Ok(Ok(Some(row)))
            }
            None => Ok(Ok(None)),
        })??
        .ok_or_else(|| StoreError::NotFound(E::not_found(id, revision_id)))?;
    Ok(row)
}

/// One history page: limit, then cursor, then existence; newest first.
pub(super) fn history<E: Entity>(
    service: &Service,
    id: &str,
    limit: i64,
    before: Option<i64>,
) -> Result<Output, ServiceError> {
    validate::id(&format!("{}_id", E::ENTITY), id)?;
    let limit = validate::limit("limit", limit, limits::MAX_HISTORY_ITEMS)?;
    let before = validate::history_cursor("before_revision_number", before)?;
    service.grant().check_entity(service, E::ENTITY, id)?;
    let (rows, truncated) = service
        .store()
        .read_db(|db| revisioned::history::<E>(db, id, limit, before))?;
    let next_before_revision_number = if truncated {
        rows.last().map(|row| row.revision_number())
    } else {
        None
    };
    Output::read(HistoryPage {
        revisions: rows.iter().map(E::record).collect(),
        truncated,
        next_before_revision_number,
    })
}

/// A mutation of an existing entity, in one writer transaction: its head (`NOT_FOUND`),
/// the caller's write scope (`SCOPE_VIOLATION`), an identical replay (the original
/// acknowledgement), then `apply` with the head.
pub(super) fn write_existing<E: Entity>(
    service: &Service,
    call: &Call,
    id: String,
    apply: impl FnOnce(&Tx<'_>, E::Row) -> StoreResult<(E::Row, i64)> + Send + 'static,
) -> Result<Output, ServiceError> {
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    service.grant().check_entity(service, E::ENTITY, &id)?;
    let written = service.store().write(move |tx| -> StoreResult<Written> {
        let head = revisioned::head::<E>(tx.db(), &id)?;
        scope::check_write(E::ENTITY.as_str(), head.entity_id(), head.owner(), &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        let (row, commit_seq) = apply(tx, head)?;
        mutation::record(tx, &key, E::acknowledged(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}

/// `REVISION_CONFLICT` unless `requested` is the head revision.
pub(super) fn check_if_revision<E: Entity>(head: &E::Row, requested: &str) -> StoreResult<()> {
    if head.revision_id() == requested {
        return Ok(());
    }
    Err(StoreError::RevisionConflict {
        entity_type: E::ENTITY.as_str(),
        entity_id: head.entity_id().to_owned(),
        current: head.revision_id().to_owned(),
        requested: requested.to_owned(),
    })
}

/// Closes an entity (`artifact.forget`, `claim.retract`) with a non-blank reason; closing
/// it twice is `INVALID_REQUEST` (`<entity> <id> is already <closed>`).
pub(super) fn close<E: Entity>(
    service: &Service,
    call: &Call,
    id: String,
    reason: String,
) -> Result<Output, ServiceError> {
    validate::id(&format!("{}_id", E::ENTITY), &id)?;
    validate::bounded("reason", &reason, limits::MAX_REASON_BYTES)?;
    write_existing::<E>(service, call, id, move |tx, head| {
        if E::is_closed(&head) {
            return Err(StoreError::Invalid(format!(
                "{} {} is already {}",
                E::ENTITY,
                head.entity_id(),
                E::CLOSED
            )));
        }
        revisioned::close::<E>(tx, &head, &reason)
    })
}
