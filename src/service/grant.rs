//! What a caller may reach: the whole store (the Unix socket, loopback TCP, in process) or
//! only the workspaces a remote credential lists (`[[remote.clients]]`, see
//! `daemon::remote`).
//!
//! A [`Grant`] travels with a scoped view of the service ([`Service::with_grant`]), so every
//! operation sees it; the checks here run before anything of a foreign entity is read into a
//! response or anything is written:
//! - [`Grant::check_request`]: the operation (store-wide administration, purges included, is
//!   refused), the context's workspace and every pinned artifact;
//! - [`Grant::check_horizon`]: the `personal` horizon spans every workspace, so it is refused;
//! - [`Grant::check_owner`] / [`Grant::check_entity`]: an exact get, a history page, a write
//!   or purge of an existing entity or a piece of evidence naming an entity of another
//!   workspace.
//!
//! Browse listings (`artifact.list`, `claim.list`, `event.list`) need nothing more: their
//! context's workspace is checked and their horizon cannot be `personal`.
//!
//! Responses are assembled through the grant too (issue 28, "one rule at the service
//! boundary": every byte of a response is computed only from what the grant may read):
//! - [`Grant::evidence`] is the one door through which an operation reads the artifact
//!   revision a piece of evidence cites (evidence is the only link that may cross
//!   workspaces: relation endpoints must be writable from the relation's context). A
//!   revision outside the grant comes back as [`Reach::Outside`]: the response carries the
//!   locator the visible claim already holds and an [`EVIDENCE_OUTSIDE_GRANT`] warning,
//!   nothing read from the foreign row (no title, media type, excerpt, size or purge state);
//! - [`Grant::sees_entity`] filters what `purge::annotate` names in warnings.
//!
//! Every refusal is `SCOPE_VIOLATION` (see `error_body`) whose message names the credential,
//! its workspaces and the entity id asked for, never anything stored about a foreign entity
//! (not even its workspace).
//!
//! **Invariant:** an unrestricted grant performs no check and no extra read, so local callers
//! behave exactly as before.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use super::{Service, ServiceError};
use crate::protocol::relation::EntityType;
use crate::protocol::{Horizon, Operation, Request};
use crate::store::artifact::ArtifactRow;
use crate::store::claim::{self as store_claim, EvidenceRef};
use crate::store::relation as store_relation;
use crate::store::scope::Owner;
use crate::store::search::Pins;
use crate::store::{Db, StoreError, StoreResult};

/// The reach of one caller. The default is unrestricted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grant(Option<Arc<Restriction>>);

#[derive(Debug, PartialEq, Eq)]
struct Restriction {
    /// The credential's name, for messages and logs.
    client: String,
    workspaces: BTreeSet<String>,
}

/// The warning a response carries for each piece of evidence it cites from outside the
/// request's grant (instead of anything read from it).
pub const EVIDENCE_OUTSIDE_GRANT: &str = "EVIDENCE_OUTSIDE_GRANT";

/// A row read through the grant: visible, or owned outside it (and then not returned).
#[derive(Debug)]
pub(crate) enum Reach<T> {
    Visible(T),
    Outside,
}

/// Whether an operation reads or changes the store as a whole rather than the entities of
/// one workspace. Exhaustive on purpose: a new operation must be classified here.
///
/// The purges are store-wide although they name one entity: their physical erasure rewrites
/// the whole database (`VACUUM`, `VACUUM (FULL)` on PostgreSQL) and holds every workspace's
/// writes meanwhile, so a workspace-limited credential could otherwise stall everyone's
/// writes once per purge (issue 28).
fn is_store_wide(op: Operation) -> bool {
    match op {
        Operation::Doctor
        | Operation::Verify
        | Operation::BackupCreate
        | Operation::Reindex
        | Operation::Import
        | Operation::ArtifactPurge
        | Operation::ClaimPurge => true,
        Operation::ContextResolve
        | Operation::Capabilities
        | Operation::Instructions
        | Operation::Schema
        | Operation::ArtifactPut
        | Operation::ArtifactGet
        | Operation::CitationGet
        | Operation::ArtifactRevise
        | Operation::ArtifactHistory
        | Operation::ArtifactForget
        | Operation::ClaimAssert
        | Operation::ClaimGet
        | Operation::ClaimHistory
        | Operation::ClaimRevise
        | Operation::ClaimRetract
        | Operation::RelationPut
        | Operation::RelationList
        | Operation::ConflictList
        | Operation::Search
        | Operation::MemoryRecall
        | Operation::MemoryProbe
        | Operation::MemoryRetrieve
        | Operation::ContextBuild
        | Operation::ArtifactList
        | Operation::ClaimList
        | Operation::EventList => false,
    }
}

impl Grant {
    /// Everything: the local transports.
    pub fn unrestricted() -> Grant {
        Grant(None)
    }

    /// Only the entities of `workspaces`, for the credential named `client`.
    pub fn workspaces<S: Into<String>>(client: impl Into<String>, workspaces: impl IntoIterator<Item = S>) -> Grant {
        Grant(Some(Arc::new(Restriction {
            client: client.into(),
            workspaces: workspaces.into_iter().map(Into::into).collect(),
        })))
    }

    pub fn is_restricted(&self) -> bool {
        self.0.is_some()
    }

    /// The credential's name, when restricted.
    pub fn client(&self) -> Option<&str> {
        self.0.as_deref().map(|r| r.client.as_str())
    }

    /// Whether entities of `workspace_id` are within reach.
    pub fn allows(&self, workspace_id: &str) -> bool {
        self.0.as_deref().is_none_or(|r| r.workspaces.contains(workspace_id))
    }

    /// The operation, the context's workspace and every pinned artifact.
    pub(crate) fn check_request(&self, service: &Service, request: &Request) -> Result<(), ServiceError> {
        let Some(restriction) = self.0.as_deref() else {
            return Ok(());
        };
        if is_store_wide(request.op) {
            return Err(ServiceError::OutsideGrant(format!(
                "{} is an operation on the whole store, which only a credential for every workspace (\"*\") may run; {restriction}",
                request.op
            )));
        }
        let Some(context) = &request.context else {
            return Ok(());
        };
        if !self.allows(&context.workspace_id) {
            return Err(ServiceError::OutsideGrant(format!(
                "the request's context is workspace {}; {restriction}",
                context.workspace_id
            )));
        }
        if context.pins.is_empty() {
            return Ok(());
        }
        let pins = Pins::parse(&context.pins);
        let artifacts = pins
            .artifacts
            .iter()
            .chain(pins.revisions.iter().map(|(artifact, _)| artifact));
        for artifact in artifacts {
            self.check_entity(service, EntityType::Artifact, artifact)?;
        }
        Ok(())
    }

    /// The `personal` horizon reaches every workspace of the store.
    pub(crate) fn check_horizon(&self, horizon: Horizon) -> Result<(), ServiceError> {
        match self.0.as_deref() {
            Some(restriction) if horizon == Horizon::Personal => Err(ServiceError::OutsideGrant(format!(
                "the personal horizon spans every workspace of the store; {restriction}: use the workspace horizon"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a row owned outside the grant. The message names the id the caller sent,
    /// nothing stored about the entity.
    pub(crate) fn check_owner(
        &self,
        entity_type: impl fmt::Display,
        id: &str,
        owner: &Owner,
    ) -> Result<(), ServiceError> {
        match self.0.as_deref() {
            Some(restriction) if !restriction.workspaces.contains(&owner.workspace_id) => {
                Err(ServiceError::OutsideGrant(format!(
                    "{entity_type} {id} is outside the workspaces this credential may use; {restriction}"
                )))
            }
            _ => Ok(()),
        }
    }

    /// [`Grant::check_owner`] for an entity named by id, read from the store when the grant
    /// is restricted (an entity's owner never changes, so the answer holds for a later
    /// write). An id that does not exist passes: the operation reports `NOT_FOUND` itself.
    pub(crate) fn check_entity(
        &self,
        service: &Service,
        entity_type: EntityType,
        id: &str,
    ) -> Result<(), ServiceError> {
        if !self.is_restricted() {
            return Ok(());
        }
        let owner = service
            .store()
            .read_db(|db| match store_relation::endpoint(db, entity_type, id) {
                Ok(endpoint) => Ok(Some(endpoint.owner)),
                Err(StoreError::NotFound(_)) => Ok(None),
                Err(error) => Err(error),
            })?;
        match owner {
            Some(owner) => self.check_owner(entity_type, id, &owner),
            None => Ok(()),
        }
    }
}

impl Grant {
    /// The workspaces of a restricted grant, sorted (`None` when unrestricted).
    pub(crate) fn workspace_list(&self) -> Option<Vec<String>> {
        self.0.as_deref().map(|r| r.workspaces.iter().cloned().collect())
    }

    /// Whether a row owned by `owner` may contribute to a response.
    pub(crate) fn sees(&self, owner: &Owner) -> bool {
        self.allows(&owner.workspace_id)
    }

    /// [`Grant::sees`] for an entity named by id (one read when restricted). An id that does
    /// not exist is not seen.
    pub(crate) fn sees_entity(&self, db: Db<'_>, entity_type: EntityType, id: &str) -> StoreResult<bool> {
        if !self.is_restricted() {
            return Ok(true);
        }
        match store_relation::endpoint(db, entity_type, id) {
            Ok(endpoint) => Ok(self.sees(&endpoint.owner)),
            Err(StoreError::NotFound(_)) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// The artifact revision `locator` cites, read through the grant: the only way an
    /// operation reads evidence into a response. `Ok(None)` when it does not exist;
    /// [`Reach::Outside`] when its artifact belongs to a workspace outside the grant.
    pub(crate) fn evidence(&self, db: Db<'_>, locator: &EvidenceRef) -> StoreResult<Option<Reach<ArtifactRow>>> {
        Ok(store_claim::evidence_revision(db, locator)?.map(|row| {
            if self.sees(&row.owner) {
                Reach::Visible(row)
            } else {
                Reach::Outside
            }
        }))
    }

    /// The warning for a piece of evidence outside the grant: the locator only.
    pub(crate) fn evidence_outside_warning(claim_id: &str, locator: &EvidenceRef) -> crate::protocol::Warning {
        crate::protocol::Warning {
            code: EVIDENCE_OUTSIDE_GRANT.to_owned(),
            message: format!(
                "claim {claim_id} cites artifact {} revision {}, which is outside the workspaces this credential may use; only its locator is shown",
                locator.artifact_id, locator.revision_id
            ),
        }
    }
}

impl fmt::Display for Restriction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let workspaces: Vec<&str> = self.workspaces.iter().map(String::as_str).collect();
        write!(
            f,
            "credential {:?} may use only workspaces [{}]",
            self.client,
            workspaces.join(", ")
        )
    }
}
