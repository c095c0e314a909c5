//! `artifact.put`, `artifact.get`, `artifact.revise`, `artifact.history`, `artifact.forget`.

use super::mutation::{self, Acknowledged};
use crate::protocol::artifact::{
    ArtifactForgetInput, ArtifactGetInput, ArtifactHistoryInput, ArtifactPutInput, ArtifactReviseInput, HistoryPage,
};
use crate::protocol::limits;
use crate::service::convert::{artifact_record, context_owner};
use crate::service::validate;
use crate::service::{Call, Output, Service, ServiceError};
use crate::store::artifact::{self as store_artifact, BlobRef, NewRevision};
use crate::store::{StoreError, scope};

/// Writes content to its home: inline in SQLite up to the threshold, the CAS above it
/// (compressed in either place when that pays; this runs before the writer is entered).
fn store_blob(service: &Service, bytes: &[u8]) -> Result<BlobRef, ServiceError> {
    if bytes.len() <= limits::INLINE_BLOB_MAX_BYTES {
        return Ok(BlobRef::inline(bytes));
    }
    // Pinned until the mutation has run on the writer, so a concurrent purge of the same
    // bytes cannot erase the object in between.
    let (digest, pin) = service.store().blobs().put_pinned(bytes).map_err(StoreError::from)?;
    Ok(BlobRef::external(digest, bytes.len() as u64).pinned(pin))
}

fn check_actor(actor: Option<&str>) -> Result<(), ServiceError> {
    validate::optional_bounded("actor", actor, limits::MAX_ACTOR_BYTES)
}

pub(super) fn put(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ArtifactPutInput = call.input()?;
    validate::bounded("kind", &input.kind, limits::MAX_KIND_BYTES)?;
    validate::bounded("title", &input.title, limits::MAX_TITLE_BYTES)?;
    validate::media_type(&input.media_type)?;
    check_actor(input.actor.as_deref())?;
    let provenance_json = validate::metadata("provenance", &input.provenance)?;
    let bytes = validate::content(&input.content)?;
    let key = call.idempotency_key()?;
    let owner = context_owner(call.context()?);
    let blob = store_blob(service, &bytes)?;
    let new = NewRevision {
        body_text: store_artifact::body_text(&input.media_type, &bytes),
        title: input.title,
        media_type: input.media_type,
        blob,
        provenance_json,
        actor: input.actor,
    };
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

pub(super) fn get(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ArtifactGetInput = call.input()?;
    validate::id("artifact_id", &input.artifact_id)?;
    if let Some(rev) = &input.revision_id {
        validate::id("revision_id", rev)?;
    }
    let row = service
        .store()
        .read(|conn| {
            let row = store_artifact::get(conn, &input.artifact_id, input.revision_id.as_deref())?;
            match row {
                // A purged revision reads as `NOT_FOUND` with `details.state = "purged"`.
                Some(row) if row.purged => Err(crate::store::tombstone::purged_error_from(
                    conn,
                    "artifact",
                    &row.artifact_id,
                    Some(&row.revision_id),
                )),
                other => Ok(other),
            }
        })?
        .ok_or_else(|| {
            StoreError::NotFound(match &input.revision_id {
                Some(rev) => format!("artifact {} revision {rev}", input.artifact_id),
                None => format!("artifact {}", input.artifact_id),
            })
        })?;
    let content = if input.include_content {
        let bytes = row.read_content(service.store().blobs())?;
        Some(validate::encode_content(&row.media_type, bytes))
    } else {
        None
    };
    Output::read(artifact_record(&row, content))
}

pub(super) fn revise(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ArtifactReviseInput = call.input()?;
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
    let bytes = validate::content(&input.content)?;
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    let blob = store_blob(service, &bytes)?;
    let written = service.store().write(move |tx| {
        let head = store_artifact::head(tx.conn(), &input.artifact_id)?;
        scope::check_write("artifact", &head.artifact_id, &head.owner, &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        if head.status == "forgotten" {
            return Err(StoreError::Invalid(format!(
                "artifact {} has been forgotten",
                head.artifact_id
            )));
        }
        if head.revision_id != input.if_revision {
            return Err(StoreError::RevisionConflict {
                entity_type: "artifact",
                entity_id: head.artifact_id.clone(),
                current: head.revision_id.clone(),
                requested: input.if_revision.clone(),
            });
        }
        let media_type = input.media_type.unwrap_or_else(|| head.media_type.clone());
        let new = NewRevision {
            title: input.title.unwrap_or_else(|| head.title.clone()),
            body_text: store_artifact::body_text(&media_type, &bytes),
            media_type,
            blob,
            provenance_json,
            actor: input.actor,
        };
        let (row, commit_seq) = store_artifact::revise(tx, &head, &new)?;
        mutation::record(tx, &key, Acknowledged::Artifact(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}

pub(super) fn history(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ArtifactHistoryInput = call.input()?;
    validate::id("artifact_id", &input.artifact_id)?;
    let limit = validate::limit("limit", input.limit, limits::MAX_HISTORY_ITEMS)?;
    let before = validate::cursor("before_revision_number", input.before_revision_number)?;
    let (rows, truncated) = service.store().read(|conn| {
        if !store_artifact::exists(conn, &input.artifact_id)? {
            return Err(StoreError::NotFound(format!("artifact {}", input.artifact_id)));
        }
        store_artifact::history(conn, &input.artifact_id, limit, before)
    })?;
    let next = if truncated {
        rows.last().map(|r| r.revision_number)
    } else {
        None
    };
    Output::read(HistoryPage {
        revisions: rows.iter().map(|row| artifact_record(row, None)).collect(),
        truncated,
        next_before_revision_number: next,
    })
}

pub(super) fn forget(service: &Service, call: &Call<'_>) -> Result<Output, ServiceError> {
    let input: ArtifactForgetInput = call.input()?;
    validate::id("artifact_id", &input.artifact_id)?;
    validate::bounded("reason", &input.reason, limits::MAX_REASON_BYTES)?;
    let key = call.idempotency_key()?;
    let ambient = context_owner(call.context()?);
    let written = service.store().write(move |tx| {
        let head = store_artifact::head(tx.conn(), &input.artifact_id)?;
        scope::check_write("artifact", &head.artifact_id, &head.owner, &ambient)?;
        if let Some(replay) = mutation::check(tx, &key)? {
            return Ok(replay);
        }
        if head.status == "forgotten" {
            return Err(StoreError::Invalid(format!(
                "artifact {} is already forgotten",
                head.artifact_id
            )));
        }
        let (row, commit_seq) = store_artifact::forget(tx, &head, &input.reason)?;
        mutation::record(tx, &key, Acknowledged::Artifact(row), commit_seq)
    })?;
    Ok(Output::mutation(written))
}
