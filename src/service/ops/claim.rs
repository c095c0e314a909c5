//! `claim.assert`, `claim.get`, `claim.history`, `claim.revise`, `claim.retract`.

use super::mutation::{self, Acknowledged};
use super::revisioned::{self, Entity};
use crate::protocol::claim::{
    ClaimAssertInput, ClaimGetInput, ClaimHistoryInput, ClaimRecord, ClaimRetractInput, ClaimReviseInput, ClaimStatus,
    EvidenceLocator,
};
use crate::protocol::limits;
use crate::protocol::relation::EntityType;
use crate::service::convert::{claim_record, context_owner};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::StoreError;
use crate::store::claim::{self as store_claim, ClaimRow, Claims, NewClaimRevision};
use crate::store::revisioned as store_revisioned;
use crate::timefmt;

impl Entity for Claims {
    type Record = ClaimRecord;
    const CLOSED: &'static str = "retracted";

    fn record(row: &ClaimRow) -> ClaimRecord {
        claim_record(row)
    }

    fn acknowledged(row: ClaimRow) -> Acknowledged {
        Acknowledged::Claim(row)
    }

    fn is_closed(row: &ClaimRow) -> bool {
        row.lifecycle == ClaimStatus::Retracted
    }

    /// Always `claim <id>`, even when the revision is the missing part (as the reference).
    fn not_found(id: &str, _revision_id: Option<&str>) -> String {
        format!("claim {id}")
    }
}

fn check_confidence(confidence: Option<f64>) -> Result<(), ServiceError> {
    match confidence {
        Some(c) if !c.is_finite() || !(0.0..=1.0).contains(&c) => Err(ServiceError::invalid(format!(
            "confidence must be a finite number between 0 and 1, got {c}"
        ))),
        _ => Ok(()),
    }
}

/// Shape checks on locators; existence and bounds are checked against the store.
/// A restricted credential cites only artifacts of its own workspaces (a span of a foreign
/// artifact would copy its bytes into this workspace).
fn check_evidence_grant(service: &Service, evidence: &[EvidenceLocator]) -> Result<(), ServiceError> {
    for locator in evidence {
        service
            .grant()
            .check_entity(service, EntityType::Artifact, &locator.artifact_id)?;
    }
    Ok(())
}

fn check_evidence(evidence: &[EvidenceLocator]) -> Result<(), ServiceError> {
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
    Ok(())
}

fn check_revision_fields(statement: &str, confidence: Option<f64>, actor: Option<&str>) -> Result<(), ServiceError> {
    validate::bounded("statement", statement, limits::MAX_CLAIM_STATEMENT_BYTES)?;
    check_confidence(confidence)?;
    validate::optional_bounded("actor", actor, limits::MAX_ACTOR_BYTES)
}

pub(super) fn assert(service: &Service, call: &Call, input: ClaimAssertInput) -> Result<Output, ServiceError> {
    check_revision_fields(&input.statement, input.confidence, input.actor.as_deref())?;
    check_evidence(&input.evidence)?;
    check_evidence_grant(service, &input.evidence)?;
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
    let claim_type = input.claim_type;
    let new = NewClaimRevision {
        vectors: super::semantic::project_claim(service, &input.statement),
        statement: input.statement,
        confidence: input.confidence,
        evidence: input.evidence,
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

pub(super) fn get(service: &Service, input: ClaimGetInput) -> Result<Output, ServiceError> {
    let row = revisioned::get::<Claims>(service, &input.claim_id, input.revision_id.as_deref())?;
    Output::read(claim_record(&row))
}

pub(super) fn history(service: &Service, input: ClaimHistoryInput) -> Result<Output, ServiceError> {
    revisioned::history::<Claims>(service, &input.claim_id, input.limit, input.before_revision_number)
}

pub(super) fn revise(service: &Service, call: &Call, input: ClaimReviseInput) -> Result<Output, ServiceError> {
    validate::id("claim_id", &input.claim_id)?;
    validate::id("if_revision", &input.if_revision)?;
    check_revision_fields(&input.statement, input.confidence, input.actor.as_deref())?;
    check_evidence(&input.evidence)?;
    check_evidence_grant(service, &input.evidence)?;
    let new = NewClaimRevision {
        vectors: super::semantic::project_claim(service, &input.statement),
        statement: input.statement,
        confidence: input.confidence,
        evidence: input.evidence,
        actor: input.actor,
    };
    let if_revision = input.if_revision;
    revisioned::write_existing::<Claims>(service, call, input.claim_id.into_string(), move |tx, head| {
        store_claim::validate_evidence(tx.db(), &new.evidence)?;
        revisioned::check_if_revision::<Claims>(&head, &if_revision)?;
        if head.is_terminal() {
            return Err(StoreError::Invalid(format!(
                "cannot revise {} claim {}",
                head.lifecycle, head.claim_id
            )));
        }
        store_revisioned::revise::<Claims>(tx, &head, &new)
    })
}

pub(super) fn retract(service: &Service, call: &Call, input: ClaimRetractInput) -> Result<Output, ServiceError> {
    revisioned::close::<Claims>(service, call, input.claim_id.into_string(), input.reason)
}
