//! `citation.get`: the exact bytes of a cited range, narrowed to `max_bytes`.
//!
//! Context-free and indifferent to scope and lifecycle, like the exact gets: a forgotten or
//! superseded revision is served, because a citation names an immutable revision. The grant
//! still applies: a restricted credential is refused a revision of a foreign workspace
//! before anything of it is read (`Grant::check_owner`), and a purged revision has no bytes
//! left to give (`NOT_FOUND`, state `purged`, as for `artifact.get`).
//!
//! The checks run in the order of the `CitationErrorKind` table, so the same bad citation
//! gets the same kind here and from the reference.

use serde_json::{Map, Value, json};

use crate::protocol::citation::{
    ArtifactCitation, CitationErrorKind, CitationGetInput, CitationGetResult, CitationSyntaxError,
    MAX_CITATION_FETCH_BYTES, MIN_CITATION_FETCH_BYTES,
};
use crate::protocol::limits;
use crate::protocol::relation::EntityType;
use crate::service::{Output, Service, ServiceError};
use crate::store::artifact::{self as store_artifact, ArtifactRow};

fn refuse(kind: CitationErrorKind, text: impl Into<String>, details: Value) -> ServiceError {
    let details = match details {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    ServiceError::Citation {
        kind,
        text: text.into(),
        details,
    }
}

pub(super) fn get(service: &Service, input: CitationGetInput) -> Result<Output, ServiceError> {
    Output::read(fetch(service, input)?)
}

/// The checks and the read behind [`get`], for `memory.retrieve`'s recovery too.
pub(super) fn fetch(service: &Service, input: CitationGetInput) -> Result<CitationGetResult, ServiceError> {
    if !(MIN_CITATION_FETCH_BYTES..=MAX_CITATION_FETCH_BYTES).contains(&input.max_bytes) {
        return Err(refuse(
            CitationErrorKind::InvalidOutputLimit,
            format!("max_bytes is {}, not within 4..=8192", input.max_bytes),
            json!({"max_bytes": input.max_bytes}),
        ));
    }
    let citation = ArtifactCitation::parse(&input.citation).map_err(|error| match error {
        CitationSyntaxError::Malformed(why) => refuse(CitationErrorKind::MalformedCitation, why, Value::Null),
        CitationSyntaxError::EmptyRange { start, end } => refuse(
            CitationErrorKind::SpanOutOfRange,
            format!("START {start} is not less than END {end}"),
            json!({"start_byte": start, "end_byte": end}),
        ),
    })?;
    let row = revision(service, &citation)?;
    let Some((start, end)) = citation.range else {
        return Err(refuse(
            CitationErrorKind::RangeRequired,
            "the citation names a whole revision; citation.get returns only an exact byte range",
            json!({
                "citation": citation.revision_form(),
                "media_type": row.media_type,
                "total_byte_count": row.size_bytes,
            }),
        ));
    };
    let bytes = row.read_content(service.store().blob_source())?;
    let text = text_of(&citation, &row, &bytes)?;
    let total = text.len() as u64;
    if end > total {
        return Err(refuse(
            CitationErrorKind::SpanOutOfRange,
            format!("END {end} is past the revision's {total} bytes"),
            json!({"start_byte": start, "end_byte": end, "total_byte_count": total}),
        ));
    }
    // Both offsets are within the text now, so they fit in usize.
    let (start_at, end_at) = (start as usize, end as usize);
    if !text.is_char_boundary(start_at) || !text.is_char_boundary(end_at) {
        return Err(refuse(
            CitationErrorKind::Utf8Boundary,
            format!("the range {start}-{end} splits a UTF-8 character"),
            json!({"start_byte": start, "end_byte": end}),
        ));
    }
    let mut cut = end_at.min(start_at + input.max_bytes as usize);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if cut == start_at {
        // Unreachable with max_bytes >= 4 from a boundary; kept so an empty answer is never given.
        return Err(refuse(
            CitationErrorKind::RangeRequired,
            "no whole character of the range fits in max_bytes",
            json!({"citation": citation.revision_form(), "media_type": row.media_type, "total_byte_count": total}),
        ));
    }
    let truncated = cut < end_at;
    Ok(CitationGetResult {
        content_is_untrusted: true,
        citation: if truncated {
            citation.with_range(start, cut as u64)
        } else {
            input.citation
        },
        content: text[start_at..cut].to_owned(),
        byte_count: (cut - start_at) as u64,
        media_type: row.media_type,
        truncated,
        remaining_bytes: truncated.then(|| (end_at - cut) as u64),
    })
}

/// The cited revision, read through the grant. Unknown artifact and unknown revision are
/// told apart (one more read, only on the miss).
fn revision(service: &Service, citation: &ArtifactCitation) -> Result<ArtifactRow, ServiceError> {
    let (artifact_id, revision_id) = (&citation.artifact_id, &citation.revision_id);
    let found = service.store().read_db(|db| {
        let row = store_artifact::get(db, artifact_id, Some(revision_id))?;
        let artifact_exists = row.is_some() || store_artifact::get(db, artifact_id, None)?.is_some();
        Ok((row, artifact_exists))
    })?;
    let ids = json!({"artifact_id": artifact_id, "revision_id": revision_id});
    match found {
        (Some(row), _) => {
            service
                .grant()
                .check_owner(EntityType::Artifact, artifact_id, &row.owner)?;
            Ok(row)
        }
        (None, true) => {
            // The artifact exists: a foreign one is refused as such, not described.
            service
                .grant()
                .check_entity(service, EntityType::Artifact, artifact_id)?;
            Err(refuse(
                CitationErrorKind::UnknownRevision,
                format!("artifact {artifact_id} has no revision {revision_id}"),
                ids,
            ))
        }
        (None, false) => Err(refuse(
            CitationErrorKind::UnknownArtifact,
            format!("no artifact {artifact_id}"),
            ids,
        )),
    }
}

/// The revision's content as text: `text/*`, valid UTF-8 and within the encoded-content
/// limit, or `non_text_content`.
fn text_of<'a>(citation: &ArtifactCitation, row: &ArtifactRow, bytes: &'a [u8]) -> Result<&'a str, ServiceError> {
    let refused = |why: &str| {
        refuse(
            CitationErrorKind::NonTextContent,
            format!("the revision is {why}; citation.get returns text only"),
            json!({
                "citation": citation.revision_form(),
                "media_type": row.media_type,
                "total_byte_count": bytes.len(),
            }),
        )
    };
    let is_text = row
        .media_type
        .get(..5)
        .is_some_and(|head| head.eq_ignore_ascii_case("text/"));
    if !is_text {
        return Err(refused(&format!("of media type {}", row.media_type)));
    }
    if bytes.len() > limits::MAX_ENCODED_CONTENT_BYTES {
        return Err(refused("larger than the 12 MiB encoded-content limit"));
    }
    std::str::from_utf8(bytes).map_err(|_| refused("not valid UTF-8"))
}
