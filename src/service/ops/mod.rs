//! The dispatch table: one arm per operation, one file per operation family.

mod admin;
mod artifact;
mod browse;
mod candidates;
mod claim;
mod context_build;
mod meta;
mod mutation;
pub(crate) mod portable;
mod purge;
mod recall;
mod relation;
mod search;

use serde_json::Value;

use super::{Call, Output, Service, ServiceError, decode_input};
use crate::protocol::Operation;
use crate::protocol::browse::{ArtifactListInput, ClaimListInput, EventListInput};
use crate::protocol::relation::{ConflictListInput, RelationListInput};
use crate::protocol::retrieval::{ContextBuildInput, RecallInput, SearchInput};

/// Validates the input of a horizon operation before context checks run, so its input
/// errors come before `NO_AMBIENT_CONTEXT`.
pub(crate) fn precheck_input(op: Operation, input: &Value) -> Result<(), ServiceError> {
    match op {
        _ if !input.is_object() => Err(ServiceError::invalid(format!(
            "invalid input for {op}: expected an object, found {}",
            kind_of(input)
        ))),
        Operation::RelationList => decode_input::<RelationListInput>(op, input).map(drop),
        Operation::ConflictList => decode_input::<ConflictListInput>(op, input).map(drop),
        Operation::Search => decode_input::<SearchInput>(op, input).map(drop),
        Operation::MemoryRecall => decode_input::<RecallInput>(op, input).map(drop),
        Operation::ContextBuild => decode_input::<ContextBuildInput>(op, input).map(drop),
        Operation::ArtifactList => decode_input::<ArtifactListInput>(op, input).map(drop),
        Operation::ClaimList => decode_input::<ClaimListInput>(op, input).map(drop),
        Operation::EventList => decode_input::<EventListInput>(op, input).map(drop),
        _ => Ok(()),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null (send {} for an operation without parameters)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Routes a validated request to its operation.
pub(crate) fn dispatch(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    if !call.request.input.is_object() {
        return Err(ServiceError::invalid(format!(
            "invalid input for {}: expected an object, found {}",
            call.op(),
            kind_of(&call.request.input)
        )));
    }
    let output = match call.op() {
        Operation::ContextResolve => meta::context_resolve(call),
        Operation::Capabilities => meta::capabilities(call),
        Operation::ArtifactPut => artifact::put(service, call),
        Operation::ArtifactGet => artifact::get(service, call),
        Operation::ArtifactRevise => artifact::revise(service, call),
        Operation::ArtifactHistory => artifact::history(service, call),
        Operation::ArtifactForget => artifact::forget(service, call),
        Operation::ClaimAssert => claim::assert(service, call),
        Operation::ClaimGet => claim::get(service, call),
        Operation::ClaimHistory => claim::history(service, call),
        Operation::ClaimRevise => claim::revise(service, call),
        Operation::ClaimRetract => claim::retract(service, call),
        Operation::RelationPut => relation::put(service, call),
        Operation::RelationList => relation::list(service, call),
        Operation::ConflictList => relation::conflict_list(service, call),
        Operation::Instructions => admin::instructions(call),
        Operation::Schema => admin::schema(call),
        Operation::Doctor => admin::doctor(service, call),
        Operation::Verify => admin::verify(service, call),
        Operation::BackupCreate => admin::backup_create(service, call),
        Operation::Reindex => admin::reindex(service, call),
        Operation::Search => search::search(service, call),
        Operation::MemoryRecall => recall::recall(service, call),
        Operation::ContextBuild => context_build::build(service, call),
        Operation::ArtifactList => browse::artifact_list(service, call),
        Operation::ClaimList => browse::claim_list(service, call),
        Operation::EventList => browse::event_list(service, call),
        Operation::ArtifactPurge => purge::artifact_purge(service, call),
        Operation::ClaimPurge => purge::claim_purge(service, call),
        Operation::Import => portable::import(service, call),
    }?;
    Ok(purge::annotate(service, call.op(), output))
}
