//! `artifact.list`, `claim.list` and `event.list`: the read-only browsing extensions.
//!
//! Each reads one snapshot, filters by the request's horizon like `relation.list`, and pages
//! newest first with an exclusive `before_commit_seq` cursor. Listed artifacts never carry
//! content; fetch it with `artifact.get`.

use super::relation::{broaden_hint, cap_page};
use crate::protocol::browse::{
    ArtifactListInput, ArtifactListResult, ClaimListInput, ClaimListItem, ClaimListResult, EventListInput,
    EventListResult, EventRecord, RevisionSelection, TemporalState,
};
use crate::protocol::limits;
use crate::service::convert::{artifact_record, claim_record, context_owner, owner_context, stored_object};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::browse::{self, ArtifactFilter, ClaimFilter, EventFilter, Page};
use crate::store::claim::ClaimRow;
use crate::timefmt::{self, db_to_wire};

/// Encoded item bytes one page may carry.
const MAX_PAGE_BYTES: usize = 12 * 1024 * 1024;

pub(super) fn artifact_list(service: &Service, call: &Call, input: ArtifactListInput) -> Result<Output, ServiceError> {
    let limit = validate::limit("limit", input.limit, limits::MAX_BROWSE_ITEMS)?;
    let before = validate::cursor("before_commit_seq", input.before_commit_seq)?;
    if let Some(kind) = &input.kind {
        validate::bounded("kind", kind, limits::MAX_KIND_BYTES)?;
    }
    let ambient = context_owner(call.context()?);
    let page = Page {
        ambient: &ambient,
        horizon: input.horizon,
        before_commit_seq: before,
        limit,
    };
    let filter = ArtifactFilter {
        kind: input.kind.as_deref(),
        status: input.status,
    };
    let listed = service.store().read_db(|db| browse::artifacts(db, &filter, &page))?;
    let records = listed.rows.iter().map(|row| artifact_record(row, None)).collect();
    let (artifacts, truncated) = cap_page(records, listed.more, MAX_PAGE_BYTES)?;
    let next_before_commit_seq = truncated
        .then(|| artifacts.last().map(|a| a.revision_commit_seq))
        .flatten();
    let broaden_hint = (listed.total == 0)
        .then(|| broaden_hint("artifacts", input.horizon))
        .flatten();
    Output::read(ArtifactListResult {
        horizon: input.horizon,
        artifacts,
        total: listed.total,
        truncated,
        next_before_commit_seq,
        broaden_hint,
    })
}

pub(super) fn claim_list(service: &Service, call: &Call, input: ClaimListInput) -> Result<Output, ServiceError> {
    let limit = validate::limit("limit", input.limit, limits::MAX_BROWSE_ITEMS)?;
    let before = validate::cursor("before_commit_seq", input.before_commit_seq)?;
    if let Some(id) = &input.cites_artifact_id {
        validate::id("cites_artifact_id", id)?;
    }
    if let Some(id) = &input.cites_revision_id {
        validate::id("cites_revision_id", id)?;
    }
    let ambient = context_owner(call.context()?);
    let evaluated_at = timefmt::now();
    let now_db = timefmt::to_db(&evaluated_at);
    let page = Page {
        ambient: &ambient,
        horizon: input.horizon,
        before_commit_seq: before,
        limit,
    };
    let filter = ClaimFilter {
        claim_type: input.claim_type,
        status: input.status,
        temporal_state: input.temporal_state,
        now_db: &now_db,
        cites_artifact_id: input.cites_artifact_id.as_deref(),
        cites_revision_id: input.cites_revision_id.as_deref(),
        all_revisions: input.revisions == RevisionSelection::All,
    };
    let listed = service.store().read_db(|db| browse::claims(db, &filter, &page))?;
    let items = listed
        .rows
        .iter()
        .map(|row| ClaimListItem {
            record: claim_record(row),
            temporal_state: temporal_state(row, &now_db),
            is_current_revision: row.is_current_revision(),
        })
        .collect();
    let (claims, truncated) = cap_page(items, listed.more, MAX_PAGE_BYTES)?;
    let next_before_commit_seq = truncated
        .then(|| claims.last().map(|c| c.record.revision_commit_seq))
        .flatten();
    let broaden_hint = (listed.total == 0)
        .then(|| broaden_hint("claims", input.horizon))
        .flatten();
    Output::read(ClaimListResult {
        horizon: input.horizon,
        evaluated_at: timefmt::to_wire(&evaluated_at),
        claims,
        total: listed.total,
        truncated,
        next_before_commit_seq,
        broaden_hint,
    })
}

pub(super) fn event_list(service: &Service, call: &Call, input: EventListInput) -> Result<Output, ServiceError> {
    let limit = validate::limit("limit", input.limit, limits::MAX_BROWSE_ITEMS)?;
    let before = validate::cursor("before_commit_seq", input.before_commit_seq)?;
    if let Some(id) = &input.entity_id {
        validate::id("entity_id", id)?;
    }
    let ambient = context_owner(call.context()?);
    let page = Page {
        ambient: &ambient,
        horizon: input.horizon,
        before_commit_seq: before,
        limit,
    };
    let filter = EventFilter {
        entity_type: input.entity_type,
        entity_id: input.entity_id.as_deref(),
    };
    let listed = service.store().read_db(|db| browse::events(db, &filter, &page))?;
    let records = listed
        .rows
        .iter()
        .map(|row| EventRecord {
            commit_seq: row.commit_seq,
            event_id: row.event_id.clone(),
            event_type: row.event_type.clone(),
            entity_type: row.entity_type,
            entity_id: row.entity_id.clone(),
            revision_id: row.revision_id.clone(),
            actor: row.actor.clone(),
            created_at: db_to_wire(&row.created_at),
            payload: stored_object(&row.payload_json),
            context: owner_context(&row.owner),
        })
        .collect();
    let (events, truncated) = cap_page(records, listed.more, MAX_PAGE_BYTES)?;
    let next_before_commit_seq = truncated.then(|| events.last().map(|e| e.commit_seq)).flatten();
    let broaden_hint = events
        .is_empty()
        .then(|| broaden_hint("events", input.horizon))
        .flatten();
    Output::read(EventListResult {
        horizon: input.horizon,
        events,
        truncated,
        next_before_commit_seq,
        broaden_hint,
    })
}

/// `future` when `valid_from > now`, else `expired` when `valid_until <= now`, else
/// `current` (the rule `search` applies).
fn temporal_state(row: &ClaimRow, now_db: &str) -> TemporalState {
    if row.valid_from.as_deref().is_some_and(|from| from > now_db) {
        TemporalState::Future
    } else if row.valid_until.as_deref().is_some_and(|until| until <= now_db) {
        TemporalState::Expired
    } else {
        TemporalState::Current
    }
}
