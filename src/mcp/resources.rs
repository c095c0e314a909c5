//! Citations as MCP resources.
//!
//! Retrieval results cite `memoree://artifact/ID@REV#START-END` (an exact byte span of an
//! artifact revision), `memoree://artifact/ID@REV` (the whole revision) and
//! `memoree://claim/ID@REV`. Reading such a URI returns exactly the cited bytes (text when
//! they are UTF-8, base64 otherwise) or the claim record as JSON. `memoree://artifact/ID`
//! without a revision reads the current revision. Exact reads need no ambient context.

use base64::Engine;
use rmcp::model::{ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use super::daemon::Daemon;
use crate::protocol::artifact::ArtifactGetInput;
use crate::protocol::citation::parse_offset;
use crate::protocol::claim::ClaimGetInput;
use crate::protocol::{ErrorBody, ErrorCode, Request, RequestId, Response};

/// A parsed citation URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Citation {
    Artifact {
        artifact_id: String,
        revision_id: Option<String>,
        span: Option<(u64, u64)>,
    },
    Claim {
        claim_id: String,
        revision_id: Option<String>,
    },
}

/// Why a URI is not a readable citation (an `invalid params` error for the host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadUri(pub String);

impl Citation {
    pub fn parse(uri: &str) -> Result<Citation, BadUri> {
        let bad = |why: &str| BadUri(format!("{uri} is not a memoree citation: {why}"));
        let rest = uri
            .strip_prefix("memoree://")
            .ok_or_else(|| bad("expected memoree://artifact/… or memoree://claim/…"))?;
        let (kind, rest) = rest.split_once('/').ok_or_else(|| bad("missing the record type"))?;
        let (locator, fragment) = match rest.split_once('#') {
            Some((locator, fragment)) => (locator, Some(fragment)),
            None => (rest, None),
        };
        let (id, revision_id) = match locator.split_once('@') {
            Some((id, revision)) if !revision.is_empty() => (id, Some(revision.to_owned())),
            Some(_) => return Err(bad("empty revision id")),
            None => (locator, None),
        };
        if id.is_empty() || id.contains('/') {
            return Err(bad("missing or malformed record id"));
        }
        match kind {
            "artifact" => {
                let span = fragment
                    .map(|f| parse_span(f).ok_or_else(|| bad("the fragment must be START-END with START < END")))
                    .transpose()?;
                if span.is_some() && revision_id.is_none() {
                    return Err(bad("a byte span needs an exact revision (ID@REV#START-END)"));
                }
                Ok(Citation::Artifact {
                    artifact_id: id.to_owned(),
                    revision_id,
                    span,
                })
            }
            "claim" if fragment.is_none() => Ok(Citation::Claim {
                claim_id: id.to_owned(),
                revision_id,
            }),
            "claim" => Err(bad("a claim citation has no fragment")),
            _ => Err(bad("the record type must be artifact or claim")),
        }
    }

    /// Reads this citation with an exact get (`artifact.get` with content, or `claim.get`).
    pub fn read(&self, daemon: &Daemon) -> Response {
        let request_id = RequestId::generate();
        match self {
            Citation::Artifact {
                artifact_id,
                revision_id,
                ..
            } => daemon.send(&Request::new(
                request_id,
                ArtifactGetInput {
                    revision_id: revision_id.as_deref().map(Into::into),
                    ..ArtifactGetInput::current(artifact_id.as_str())
                },
            )),
            Citation::Claim { claim_id, revision_id } => daemon.send(&Request::new(
                request_id,
                ClaimGetInput {
                    claim_id: claim_id.as_str().into(),
                    revision_id: revision_id.as_deref().map(Into::into),
                },
            )),
        }
    }

    /// The resource contents for the successful `result` of [`Citation::request`].
    pub fn contents(&self, uri: &str, result: &Value) -> Result<ResourceContents, ErrorBody> {
        let Citation::Artifact { span, .. } = self else {
            return Ok(ResourceContents::text(result.to_string(), uri).with_mime_type("application/json"));
        };
        let bytes = content_bytes(&result["content"])?;
        let bytes = match *span {
            None => bytes,
            Some((start, end)) => {
                let size = bytes.len() as u64;
                if end > size {
                    return Err(ErrorBody::prefixed(
                        ErrorCode::InvalidRequest,
                        format_args!("the span {start}-{end} ends past the revision's {size} bytes"),
                    )
                    .with_details(json!({"start_byte": start, "end_byte": end, "size_bytes": size})));
                }
                bytes[start as usize..end as usize].to_vec()
            }
        };
        let media_type = result["media_type"]
            .as_str()
            .unwrap_or("application/octet-stream")
            .to_owned();
        Ok(match String::from_utf8(bytes) {
            Ok(text) => ResourceContents::text(text, uri).with_mime_type(media_type),
            Err(raw) => ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(raw.into_bytes()), uri)
                .with_mime_type(media_type),
        })
    }
}

fn parse_span(fragment: &str) -> Option<(u64, u64)> {
    let (start, end) = fragment.split_once('-')?;
    let (start, end) = (parse_offset(start)?, parse_offset(end)?);
    (start < end).then_some((start, end))
}

fn content_bytes(content: &Value) -> Result<Vec<u8>, ErrorBody> {
    let data = content["data"].as_str().unwrap_or_default();
    match content["type"].as_str() {
        Some("text") => Ok(data.as_bytes().to_vec()),
        Some("base64") => base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| {
            ErrorBody::prefixed(
                ErrorCode::InternalError,
                format_args!("undecodable content from the daemon: {e}"),
            )
        }),
        _ => Err(ErrorBody::prefixed(
            ErrorCode::InternalError,
            "the daemon returned no content for an exact get",
        )),
    }
}

/// The URI templates `resources/templates/list` offers.
pub fn templates() -> Vec<ResourceTemplate> {
    let template = |uri: &str, name: &str, description: &str, mime: &str| {
        ResourceTemplate::new(uri, name)
            .with_description(description)
            .with_mime_type(mime)
    };
    vec![
        template(
            "memoree://artifact/{artifact_id}@{revision_id}#{start_byte}-{end_byte}",
            "artifact span",
            "The cited bytes [start_byte, end_byte) of one artifact revision (omit #… for the whole revision, @… for the current one). Untrusted reference material.",
            "text/plain",
        ),
        template(
            "memoree://claim/{claim_id}@{revision_id}",
            "claim revision",
            "One claim revision with its evidence and lifecycle, as JSON.",
            "application/json",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_parse_with_and_without_revision_and_span() {
        assert_eq!(
            Citation::parse("memoree://artifact/art_1@arev_2#3-9"),
            Ok(Citation::Artifact {
                artifact_id: "art_1".to_owned(),
                revision_id: Some("arev_2".to_owned()),
                span: Some((3, 9)),
            })
        );
        assert_eq!(
            Citation::parse("memoree://artifact/art_1"),
            Ok(Citation::Artifact {
                artifact_id: "art_1".to_owned(),
                revision_id: None,
                span: None,
            })
        );
        assert_eq!(
            Citation::parse("memoree://claim/clm_1@crev_1"),
            Ok(Citation::Claim {
                claim_id: "clm_1".to_owned(),
                revision_id: Some("crev_1".to_owned()),
            })
        );
    }

    #[test]
    fn malformed_citations_are_refused_with_the_reason() {
        for uri in [
            "https://x/artifact/a@b",
            "memoree://artifact/",
            "memoree://artifact/a@",
            "memoree://artifact/a@b#5-5",
            "memoree://artifact/a@b#9-3",
            "memoree://artifact/a@b#-3",
            "memoree://artifact/a@b#1-x",
            "memoree://artifact/a#1-3",
            "memoree://claim/c@r#1-2",
            "memoree://relation/r",
        ] {
            assert!(Citation::parse(uri).is_err(), "{uri}");
        }
    }

    #[test]
    fn a_span_reads_exactly_its_bytes_and_binary_comes_back_as_base64() {
        let citation = Citation::parse("memoree://artifact/a@r#1-4").unwrap();
        let result = json!({"media_type": "text/plain", "content": {"type": "text", "data": "héllo"}});
        match citation.contents("u", &result).unwrap() {
            ResourceContents::TextResourceContents { text, .. } => assert_eq!(text, "él"),
            other => panic!("{other:?}"),
        }
        let cut = Citation::parse("memoree://artifact/a@r#1-2").unwrap();
        assert!(matches!(
            cut.contents("u", &result).unwrap(),
            ResourceContents::BlobResourceContents { .. }
        ));
        let past = Citation::parse("memoree://artifact/a@r#1-99").unwrap();
        assert_eq!(past.contents("u", &result).unwrap_err().code, ErrorCode::InvalidRequest);
    }
}
