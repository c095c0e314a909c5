//! `relation.put`, `relation.list` and `conflict.list`.

use serde::Serialize;

use super::mutation::{self, Acknowledged};
use crate::protocol::relation::{
    ConflictClaimSnapshot, ConflictListInput, ConflictListItem, ConflictListResult, EntityType, RelationListInput,
    RelationListResult, RelationPutInput, RelationRecord,
};
use crate::protocol::{Horizon, limits};
use crate::service::convert::{claim_record, context_owner, owner_context, relation_record, stored_object};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::relation::{self as store_relation, ListQuery, NewRelation, PutOutcome};
use crate::store::{StoreError, claim as store_claim, conflict as store_conflict};
use crate::timefmt::db_to_wire;

/// Encoded item bytes one `relation.list` page may carry.
const MAX_RELATION_PAGE_BYTES: usize = 8 * 1024 * 1024;
/// Encoded item bytes one `conflict.list` page may carry.
const MAX_CONFLICT_PAGE_BYTES: usize = 12 * 1024 * 1024;

pub(super) fn put(service: &Service, call: &Call, input: RelationPutInput) -> Result<Output, ServiceError> {
    validate::id("source_id", &input.source_id)?;
    validate::id("target_id", &input.target_id)?;
    let metadata_json = validate::metadata("metadata", &input.metadata)?;
    if input.source_type == input.target_type && input.source_id == input.target_id {
        return Err(ServiceError::invalid(format!(
            "a relation cannot connect {} {} to itself",
            input.source_type, input.source_id
        )));
    }
    let relation = input.relation;
    let claims = input.source_type == EntityType::Claim && input.target_type == EntityType::Claim;
    if relation.is_claim_lifecycle() && !claims {
        return Err(ServiceError::invalid(format!(
            "{relation} relations require claim-to-claim endpoints"
        )));
    }
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    service
        .grant()
        .check_entity(service, input.source_type, &input.source_id)?;
    service
        .grant()
        .check_entity(service, input.target_type, &input.target_id)?;
    let written = service.store().write(move |tx| {
        let source = store_relation::endpoint(tx.db(), input.source_type, &input.source_id)?;
        let target = store_relation::endpoint(tx.db(), input.target_type, &input.target_id)?;
        store_relation::check_endpoint_write(&source, &ambient)?;
        store_relation::check_endpoint_write(&target, &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        let new = NewRelation {
            source,
            relation,
            target,
            metadata_json,
        };
        let payload = |row: &store_relation::RelationRow| Ok(serde_json::to_value(relation_record(row))?);
        match store_relation::put(tx, &ambient, &new, &payload)? {
            PutOutcome::Created(row, commit_seq) => mutation::record(tx, &key, Acknowledged::Relation(row), commit_seq),
            PutOutcome::Existing(row) => {
                let commit_seq = row.commit_seq;
                mutation::record_unchanged(tx, &key, Acknowledged::Relation(row), commit_seq)
            }
        }
    })?;
    Ok(Output::mutation(written))
}

pub(super) fn list(service: &Service, call: &Call, input: RelationListInput) -> Result<Output, ServiceError> {
    let limit = validate::limit("limit", input.limit, limits::MAX_RELATION_LIST_ITEMS)?;
    let before = validate::cursor("before_commit_seq", input.before_commit_seq)?;
    validate::id("entity_id", &input.entity_id)?;
    let context = call.context()?;
    let ambient = context_owner(context);
    let horizon = input.horizon;
    service
        .grant()
        .check_entity(service, input.entity_type, &input.entity_id)?;
    let (rows, more) = service.store().read_db(|db| {
        let anchor = store_relation::endpoint(db, input.entity_type, &input.entity_id)?;
        store_relation::check_anchor_read(&anchor, &ambient, &context.pins, horizon)?;
        store_relation::list(
            db,
            &ListQuery {
                entity_type: anchor.entity_type,
                entity_id: &anchor.entity_id,
                direction: input.direction,
                relation: input.relation,
                before_commit_seq: before,
                limit,
                ambient: &ambient,
                horizon,
            },
        )
    })?;
    let records: Vec<RelationRecord> = rows.iter().map(relation_record).collect();
    let (relations, truncated) = cap_page(records, more, MAX_RELATION_PAGE_BYTES)?;
    let next_before_commit_seq = if truncated {
        relations.last().map(|r| r.relation_commit_seq)
    } else {
        None
    };
    let broaden_hint = if relations.is_empty() {
        broaden_hint("relations", horizon)
    } else {
        None
    };
    Output::read(RelationListResult {
        entity_type: input.entity_type,
        entity_id: input.entity_id,
        direction: input.direction,
        relation: input.relation,
        horizon,
        relations,
        truncated,
        next_before_commit_seq,
        broaden_hint,
    })
}

pub(super) fn conflict_list(service: &Service, call: &Call, input: ConflictListInput) -> Result<Output, ServiceError> {
    let limit = validate::limit("limit", input.limit, limits::MAX_CONFLICT_LIST_ITEMS)?;
    let before = validate::cursor("before_case_sequence", input.before_case_sequence)?;
    let ambient = context_owner(call.context()?);
    let horizon = input.horizon;
    let (items, more) = service.store().read_db(|db| {
        let (cases, more) = store_conflict::list(
            db,
            &store_conflict::ListQuery {
                ambient: &ambient,
                horizon,
                include_stale: input.include_stale,
                before_case_sequence: before,
                limit,
            },
        )?;
        let items = cases
            .into_iter()
            .map(|case| {
                Ok(ConflictListItem {
                    source: snapshot(db, &case.source_claim_id, &case.source_revision_id)?,
                    target: snapshot(db, &case.target_claim_id, &case.target_revision_id)?,
                    case_id: case.case_id,
                    relation_id: case.relation_id,
                    state: case.state,
                    metadata: stored_object(&case.relation_metadata_json),
                    context: owner_context(&case.relation_owner),
                    opened_at: db_to_wire(&case.opened_at),
                    updated_at: db_to_wire(&case.updated_at),
                    state_reason: case.state_reason,
                    opened_commit_seq: case.opened_commit_seq,
                    case_sequence: case.case_sequence,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok((items, more))
    })?;
    let (conflicts, truncated) = cap_page(items, more, MAX_CONFLICT_PAGE_BYTES)?;
    let next_before_case_sequence = if truncated {
        conflicts.last().map(|c| c.case_sequence)
    } else {
        None
    };
    let broaden_hint = if conflicts.is_empty() {
        broaden_hint("conflict cases", horizon)
    } else {
        None
    };
    Output::read(ConflictListResult {
        horizon,
        include_stale: input.include_stale,
        conflicts,
        truncated,
        next_before_case_sequence,
        broaden_hint,
    })
}

/// The frozen revision of one side of a case next to the claim's current revision. The
/// frozen record shows the claim's current lifecycle status, like any exact revision get.
fn snapshot(
    conn: crate::store::Db<'_>,
    claim_id: &str,
    frozen_revision_id: &str,
) -> Result<ConflictClaimSnapshot, StoreError> {
    let frozen = store_claim::get(conn, claim_id, Some(frozen_revision_id))?.ok_or_else(|| {
        StoreError::Integrity(format!(
            "conflict case references missing revision {frozen_revision_id} of claim {claim_id}"
        ))
    })?;
    let current = store_claim::head(conn, claim_id)?;
    Ok(ConflictClaimSnapshot {
        claim_id: claim_id.into(),
        frozen_is_current: frozen.is_current_revision(),
        frozen: claim_record(&frozen),
        current: claim_record(&current),
    })
}

/// Cuts a page so its items' encoded JSON stays within `max_bytes`; the page is then
/// truncated too. `more` says whether rows beyond the page already exist.
pub(super) fn cap_page<T: Serialize>(
    items: Vec<T>,
    more: bool,
    max_bytes: usize,
) -> Result<(Vec<T>, bool), ServiceError> {
    let mut used = 0usize;
    let mut kept = Vec::with_capacity(items.len());
    let total = items.len();
    for item in items {
        let size = serde_json::to_vec(&item)
            .map_err(|e| ServiceError::Internal(format!("could not encode result: {e}")))?
            .len();
        if used + size > max_bytes {
            break;
        }
        used += size;
        kept.push(item);
    }
    let cut = kept.len() < total;
    Ok((kept, more || cut))
}

/// The empty-page hint: one explicit step broader, never applied automatically.
pub(super) fn broaden_hint(what: &str, horizon: Horizon) -> Option<String> {
    let next = match horizon {
        Horizon::Ambient => Horizon::Workspace,
        Horizon::Workspace => Horizon::Personal,
        Horizon::Personal => return None,
    };
    Some(format!(
        "No {what} are visible at the {horizon} horizon. To look further, repeat this request with \
         horizon \"{next}\" and a non-empty reason; Memoree never broadens on its own."
    ))
}
