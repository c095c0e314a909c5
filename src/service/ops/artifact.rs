//! `artifact.put`, `artifact.get`, `artifact.revise`, `artifact.history`, `artifact.forget`.

use super::mutation::{self, Acknowledged};
use super::revisioned::{self, Entity};
use crate::protocol::artifact::{
    ArtifactContent, ArtifactForgetInput, ArtifactGetInput, ArtifactHistoryInput, ArtifactPutInput, ArtifactRecord,
    ArtifactReviseInput,
};
use crate::protocol::limits;
use crate::service::convert::{artifact_record, context_owner};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::StoreError;
use crate::store::artifact::{self as store_artifact, ArtifactRow, Artifacts, BlobRef, NewRevision};
use crate::store::revisioned as store_revisioned;

impl Entity for Artifacts {
    type Record = ArtifactRecord;
    const CLOSED: &'static str = "forgotten";

    fn record(row: &ArtifactRow) -> ArtifactRecord {
        artifact_record(row, None)
    }

    fn acknowledged(row: ArtifactRow) -> Acknowledged {
        Acknowledged::Artifact(row)
    }

    fn is_closed(row: &ArtifactRow) -> bool {
        row.is_forgotten()
    }

    fn not_found(id: &str, revision_id: Option<&str>) -> String {
        match revision_id {
            Some(revision_id) => format!("artifact {id} revision {revision_id}"),
            None => format!("artifact {id}"),
        }
    }
}

/// Writes content to its home: inline in SQLite up to the threshold, the CAS above it
/// (compressed in either place when that pays; this runs before the writer is entered).
fn store_blob(service: &Service, bytes: &[u8]) -> Result<BlobRef, ServiceError> {
    if bytes.len() <= limits::INLINE_BLOB_MAX_BYTES {
        return Ok(BlobRef::inline(bytes));
    }
    // Pinned until the mutation has run on the writer, so a concurrent purge of the same
    // bytes cannot erase the object in between.
    let (digest, pin) = service.store().put_blob_pinned(bytes)?;
    let blob = BlobRef::external(digest, bytes.len() as u64);
    Ok(match pin {
        Some(pin) => blob.pinned(pin),
        None => blob,
    })
}

fn check_actor(actor: Option<&str>) -> Result<(), ServiceError> {
    validate::optional_bounded("actor", actor, limits::MAX_ACTOR_BYTES)
}

/// The content's raw bytes and where they are stored.
fn content(service: &Service, content: ArtifactContent) -> Result<(Vec<u8>, BlobRef), ServiceError> {
    let bytes = validate::content(content)?;
    let blob = store_blob(service, &bytes)?;
    Ok((bytes, blob))
}

pub(super) fn put(service: &Service, call: &Call, input: ArtifactPutInput) -> Result<Output, ServiceError> {
    validate::bounded("kind", &input.kind, limits::MAX_KIND_BYTES)?;
    validate::bounded("title", &input.title, limits::MAX_TITLE_BYTES)?;
    validate::media_type(&input.media_type)?;
    check_actor(input.actor.as_deref())?;
    let provenance_json = validate::metadata("provenance", &input.provenance)?;
    let (content, blob) = content(service, input.content)?;
    let key = call.idempotency_key()?;
    let owner = context_owner(call.context()?);
    let mut new = NewRevision {
        title: input.title,
        media_type: input.media_type,
        blob,
        content,
        provenance_json,
        actor: input.actor,
        vectors: None,
    };
    new.vectors = super::semantic::project_artifact(service, &new);
    let kind = input.kind;
    let written = service.store().write(move |tx| {
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        let (row, commit_seq) = store_artifact::put(tx, &owner, &kind, &new)?;
        mutation::record(tx, &key, Acknowledged::Artifact(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}

pub(super) fn get(service: &Service, input: ArtifactGetInput) -> Result<Output, ServiceError> {
    let row = revisioned::get::<Artifacts>(service, &input.artifact_id, input.revision_id.as_deref())?;
    let content = if input.include_content {
        let bytes = row.read_content(service.store().blob_source())?;
        Some(validate::encode_content(&row.media_type, bytes))
    } else {
        None
    };
    Output::read(artifact_record(&row, content))
}

pub(super) fn revise(service: &Service, call: &Call, input: ArtifactReviseInput) -> Result<Output, ServiceError> {
    validate::id("artifact_id", &input.artifact_id)?;
    validate::id("if_revision", &input.if_revision)?;
    if let Some(title) = &input.title {
        validate::bounded("title", title, limits::MAX_TITLE_BYTES)?;
    }
    if let Some(media_type) = &input.media_type {
        validate::media_type(media_type)?;
    }
    check_actor(input.actor.as_deref())?;
    let provenance_json = validate::metadata("provenance", &input.provenance)?;
    let (content, blob) = content(service, input.content)?;
    let (if_revision, title, media_type, actor) = (input.if_revision, input.title, input.media_type, input.actor);
    let embedder = service.runtime().semantic.embedder().cloned();
    revisioned::write_existing::<Artifacts>(service, call, input.artifact_id.into_string(), move |tx, head| {
        if head.is_forgotten() {
            return Err(StoreError::Invalid(format!(
                "artifact {} has been forgotten",
                head.artifact_id
            )));
        }
        revisioned::check_if_revision::<Artifacts>(&head, &if_revision)?;
        let mut new = NewRevision {
            title: title.unwrap_or_else(|| head.title.clone()),
            media_type: media_type.unwrap_or_else(|| head.media_type.clone()),
            blob,
            content,
            provenance_json,
            actor,
            vectors: None,
        };
        // Embedded here: the title may be the head's.
        new.vectors = embedder
            .as_ref()
            .map(|e| e.project_artifact(&new.title, new.body_text().as_deref()));
        store_revisioned::revise::<Artifacts>(tx, &head, &new)
    })
}

pub(super) fn history(service: &Service, input: ArtifactHistoryInput) -> Result<Output, ServiceError> {
    revisioned::history::<Artifacts>(service, &input.artifact_id, input.limit, input.before_revision_number)
}

pub(super) fn forget(service: &Service, call: &Call, input: ArtifactForgetInput) -> Result<Output, ServiceError> {
    revisioned::close::<Artifacts>(service, call, input.artifact_id.into_string(), input.reason)
}
