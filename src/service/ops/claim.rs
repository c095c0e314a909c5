//! `claim.assert`, `claim.get`, `claim.history`, `claim.revise`, `claim.retract`.

use super::mutation::{self, Acknowledged};
use crate::protocol::artifact::HistoryPage;
use crate::protocol::claim::{
    ClaimAssertInput, ClaimGetInput, ClaimHistoryInput, ClaimRetractInput, ClaimReviseInput, EvidenceLocator,
};
use crate::protocol::limits;
use crate::service::convert::{claim_record, context_owner, evidence_ref};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::claim::{self as store_claim, EvidenceRef, NewClaimRevision};
use crate::store::{StoreError, scope};
use crate::timefmt;

fn check_confidence(confidence: Option<f64>) -> Result<(), ServiceError> {
    match confidence {
        Some(c) if !c.is_finite() || !(0.0..=1.0).contains(&c) => Err(ServiceError::invalid(format!(
            "confidence must be a finite number between 0 and 1, got {c}"
        ))),
        _ => Ok(()),
    }
}

/// Shape checks on locators; existence and bounds are checked against the store.
fn check_evidence(evidence: &[EvidenceLocator]) -> Result<Vec<EvidenceRef>, ServiceError> {
    if evidence.len() > limits::MAX_EVIDENCE_ITEMS {
        return Err(ServiceError::invalid(format!(
            "evidence must not contain more than {} items",
            limits::MAX_EVIDENCE_ITEMS
        )));
    }
    for (index, locator) in evidence.iter().enumerate() {
        validate::id(&format!("evidence[{index}].artifact_id"), &locator.artifact_id)?;
        validate::id(&format!("evidence[{index}].revision_id"), &locator.revision_id)?;
        match (locator.start_byte, locator.end_byte) {
            (Some(start), Some(end)) if start >= end => {
                return Err(ServiceError::invalid(format!(
                    "evidence[{index}] requires start_byte < end_byte, got {start}-{end}"
                )));
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(ServiceError::invalid(format!(
                    "evidence[{index}] needs both start_byte and end_byte, or neither for whole-revision evidence"
                )));
            }
            _ => {}
        }
    }
    Ok(evidence.iter().map(evidence_ref).collect())
}

fn check_revision_fields(statement: &str, confidence: Option<f64>, actor: Option<&str>) -> Result<(), ServiceError> {
    validate::bounded("statement", statement, limits::MAX_CLAIM_STATEMENT_BYTES)?;
    check_confidence(confidence)?;
    validate::optional_bounded("actor", actor, limits::MAX_ACTOR_BYTES)
}

pub(super) fn assert(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ClaimAssertInput = call.input()?;
    check_revision_fields(&input.statement, input.confidence, input.actor.as_deref())?;
    let evidence = check_evidence(&input.evidence)?;
    let valid_from = input
        .valid_from
        .as_deref()
        .map(|v| validate::timestamp("valid_from", v))
        .transpose()?;
    let valid_until = input
        .valid_until
        .as_deref()
        .map(|v| validate::timestamp("valid_until", v))
        .transpose()?;
    if let (Some(from), Some(until)) = (valid_from, valid_until)
        && from >= until
    {
        return Err(ServiceError::invalid("valid_from must be earlier than valid_until"));
    }
    let key = call.idempotency_key()?;
    let owner = context_owner(call.context()?);
    let claim_type = input.claim_type.as_str();
    let new = NewClaimRevision {
        statement: input.statement,
        confidence: input.confidence,
        evidence,
        actor: input.actor,
    };
    let valid_from = valid_from.map(|t| timefmt::to_db(&t));
    let valid_until = valid_until.map(|t| timefmt::to_db(&t));
    let written = service.store().write(move |tx| {
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        let (row, commit_seq) = store_claim::assert(
            tx,
            &owner,
            claim_type,
            &new,
            valid_from.as_deref(),
            valid_until.as_deref(),
        )?;
        mutation::record(tx, &key, Acknowledged::Claim(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}

pub(super) fn get(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ClaimGetInput = call.input()?;
    validate::id("claim_id", &input.claim_id)?;
    if let Some(rev) = &input.revision_id {
        validate::id("revision_id", rev)?;
    }
    let row = service
        .store()
        .read(|conn| {
            let row = store_claim::get(conn, &input.claim_id, input.revision_id.as_deref())?;
            match row {
                // A purged revision reads as `NOT_FOUND` with `details.state = "purged"`.
                Some(row) if row.purged => Err(crate::store::tombstone::purged_error_from(
                    conn,
                    "claim",
                    &row.claim_id,
                    Some(&row.revision_id),
                )),
                other => Ok(other),
            }
        })?
        .ok_or_else(|| StoreError::NotFound(format!("claim {}", input.claim_id)))?;
    Output::read(claim_record(&row))
}

pub(super) fn history(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ClaimHistoryInput = call.input()?;
    validate::id("claim_id", &input.claim_id)?;
    let limit = validate::limit("limit", input.limit, limits::MAX_HISTORY_ITEMS)?;
    let before = validate::cursor("before_revision_number", input.before_revision_number)?;
    let (rows, truncated) = service.store().read(|conn| {
        if !store_claim::exists(conn, &input.claim_id)? {
            return Err(StoreError::NotFound(format!("claim {}", input.claim_id)));
        }
        store_claim::history(conn, &input.claim_id, limit, before)
    })?;
    let next = if truncated {
        rows.last().map(|r| r.revision_number)
    } else {
        None
    };
    Output::read(HistoryPage {
        revisions: rows.iter().map(claim_record).collect(),
        truncated,
        next_before_revision_number: next,
    })
}

pub(super) fn revise(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ClaimReviseInput = call.input()?;
    validate::id("claim_id", &input.claim_id)?;
    validate::id("if_revision", &input.if_revision)?;
    check_revision_fields(&input.statement, input.confidence, input.actor.as_deref())?;
    let evidence = check_evidence(&input.evidence)?;
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    let new = NewClaimRevision {
        statement: input.statement,
        confidence: input.confidence,
        evidence,
        actor: input.actor,
    };
    let written = service.store().write(move |tx| {
        let head = store_claim::head(tx.conn(), &input.claim_id)?;
        scope::check_write("claim", &head.claim_id, &head.owner, &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        store_claim::validate_evidence(tx.conn(), &new.evidence)?;
        if head.revision_id != input.if_revision {
            return Err(StoreError::RevisionConflict {
                entity_type: "claim",
                entity_id: head.claim_id.clone(),
                current: head.revision_id.clone(),
                requested: input.if_revision.clone(),
            });
        }
        if head.is_terminal() {
            return Err(StoreError::Invalid(format!(
                "cannot revise {} claim {}",
                head.lifecycle, head.claim_id
            )));
        }
        let (row, commit_seq) = store_claim::revise(tx, &head, &new)?;
        mutation::record(tx, &key, Acknowledged::Claim(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}

pub(super) fn retract(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ClaimRetractInput = call.input()?;
    validate::id("claim_id", &input.claim_id)?;
    validate::bounded("reason", &input.reason, limits::MAX_REASON_BYTES)?;
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    let written = service.store().write(move |tx| {
        let head = store_claim::head(tx.conn(), &input.claim_id)?;
        scope::check_write("claim", &head.claim_id, &head.owner, &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        if head.lifecycle == "retracted" {
            return Err(StoreError::Invalid(format!(
                "claim {} is already retracted",
                head.claim_id
            )));
        }
        let (row, commit_seq) = store_claim::retract(tx, &head, &input.reason)?;
        mutation::record(tx, &key, Acknowledged::Claim(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}
