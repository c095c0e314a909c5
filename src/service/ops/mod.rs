//! The dispatch table: one arm per operation, one file per operation family.

mod artifact;
mod claim;
mod doctor;
mod meta;
mod mutation;

use serde_json::Value;

use super::{Call, Output, Service, ServiceError};
use crate::protocol::Operation;

/// Validates the input of a horizon operation before context checks run.
pub(crate) fn precheck_input(op: Operation, input: &Value) -> Result<(), ServiceError> {
    match op {
        _ if !input.is_object() => Err(ServiceError::invalid(format!(
            "invalid input for {op}: expected an object, found {}",
            kind_of(input)
        ))),
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
    match call.op() {
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
        Operation::Doctor => doctor::doctor(service, call),
        op => Err(ServiceError::invalid(format!(
            "operation {op} is not implemented by this binary; see capabilities"
        ))),
    }
}

/// Whether an operation is implemented (reported by `capabilities`).
pub(crate) fn is_implemented(op: Operation) -> bool {
    matches!(
        op,
        Operation::ContextResolve
            | Operation::Capabilities
            | Operation::ArtifactPut
            | Operation::ArtifactGet
            | Operation::ArtifactRevise
            | Operation::ArtifactHistory
            | Operation::ArtifactForget
            | Operation::ClaimAssert
            | Operation::ClaimGet
            | Operation::ClaimHistory
            | Operation::ClaimRevise
            | Operation::ClaimRetract
            | Operation::Doctor
    )
}
