//! The dispatch table: one arm per operation, one file per operation family. Each arm
//! names the typed input its operation decodes, once: horizon operations through
//! [`with_horizon`] (input first, then the context), the others through [`plain`].

mod admin;
mod artifact;
mod browse;
mod candidates;
mod citation;
mod claim;
mod context_build;
mod meta;
mod mutation;
pub(crate) mod portable;
mod probe;
mod purge;
mod recall;
mod recall_candidates;
mod relation;
mod request;
mod retrieve;
mod revisioned;
mod search;
pub(super) mod semantic;

use serde_json::Value;

use super::{Call, Output, Service, ServiceError, plain, with_horizon};
use crate::protocol::Operation;

/// Routes a request whose envelope passed its checks to its operation.
pub(crate) fn dispatch(service: &Service, call: &Call, input: Value) -> Result<Output, ServiceError> {
    let s = service;
    let output = match call.op() {
        Operation::ContextResolve => plain(call, input, |i| meta::context_resolve(call, i)),
        Operation::Capabilities => plain(call, input, |i| meta::capabilities(s, i)),
        Operation::ArtifactPut => plain(call, input, |i| artifact::put(s, call, i)),
        Operation::ArtifactGet => plain(call, input, |i| artifact::get(s, i)),
        Operation::CitationGet => plain(call, input, |i| citation::get(s, i)),
        Operation::ArtifactRevise => plain(call, input, |i| artifact::revise(s, call, i)),
        Operation::ArtifactHistory => plain(call, input, |i| artifact::history(s, i)),
        Operation::ArtifactForget => plain(call, input, |i| artifact::forget(s, call, i)),
        Operation::ClaimAssert => plain(call, input, |i| claim::assert(s, call, i)),
        Operation::ClaimGet => plain(call, input, |i| claim::get(s, i)),
        Operation::ClaimHistory => plain(call, input, |i| claim::history(s, i)),
        Operation::ClaimRevise => plain(call, input, |i| claim::revise(s, call, i)),
        Operation::ClaimRetract => plain(call, input, |i| claim::retract(s, call, i)),
        Operation::RelationPut => plain(call, input, |i| relation::put(s, call, i)),
        Operation::RelationList => with_horizon(s, call, input, |i| relation::list(s, call, i)),
        Operation::ConflictList => with_horizon(s, call, input, |i| relation::conflict_list(s, call, i)),
        Operation::Instructions => plain(call, input, admin::instructions),
        Operation::Schema => plain(call, input, admin::schema),
        Operation::Doctor => plain(call, input, |i| admin::doctor(s, i)),
        Operation::Verify => plain(call, input, |i| admin::verify(s, i)),
        Operation::BackupCreate => plain(call, input, |i| admin::backup_create(s, i)),
        Operation::Reindex => plain(call, input, |i| admin::reindex(s, i)),
        Operation::Search => with_horizon(s, call, input, |i| search::search(s, call, i)),
        Operation::MemoryRecall => with_horizon(s, call, input, |i| recall::recall(s, call, i)),
        Operation::MemoryProbe => with_horizon(s, call, input, |i| probe::probe(s, call, i)),
        Operation::MemoryRetrieve => with_horizon(s, call, input, |i| retrieve::retrieve(s, call, i)),
        Operation::ContextBuild => with_horizon(s, call, input, |i| context_build::build(s, call, i)),
        Operation::ArtifactList => with_horizon(s, call, input, |i| browse::artifact_list(s, call, i)),
        Operation::ClaimList => with_horizon(s, call, input, |i| browse::claim_list(s, call, i)),
        Operation::EventList => with_horizon(s, call, input, |i| browse::event_list(s, call, i)),
        Operation::ArtifactPurge => plain(call, input, |i| purge::artifact_purge(s, call, i)),
        Operation::ClaimPurge => plain(call, input, |i| purge::claim_purge(s, call, i)),
        Operation::Import => plain(call, input, |i| portable::import(s, i)),
    }?;
    Ok(purge::annotate(service, call.op(), output))
}
