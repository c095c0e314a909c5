//! `citation.get`: exact bytes by immutable citation (the reference's v0.7 operation), its
//! input, its result and the kinds of its `CITATION_ERROR`.
//!
//! A citation names a byte range of one artifact revision:
//! `memoree://artifact/<ARTIFACT>@<REVISION>#<START>-<END>` (UTF-8 byte offsets, `START <
//! END`). What `citation.get` returns is untrusted content at a source location, never an
//! answer: existing at a cited place says nothing about relevance.

use serde::{Deserialize, Serialize};

use super::{Input, Operation};

/// The scheme and record type every artifact citation starts with.
pub const ARTIFACT_CITATION_PREFIX: &str = "memoree://artifact/";

/// The longest citation string accepted, in bytes (`capabilities.max_citation_bytes`).
pub const MAX_CITATION_BYTES: usize = 1024;

/// The longest artifact or revision id inside a citation, in bytes.
pub const MAX_CITATION_ID_BYTES: usize = 256;

/// The most bytes one `citation.get` returns (`capabilities.max_citation_fetch_bytes`), and
/// the default of `max_bytes`.
pub const MAX_CITATION_FETCH_BYTES: u64 = 8192;

/// The least `max_bytes` accepted: one code point of any width always fits.
pub const MIN_CITATION_FETCH_BYTES: u64 = 4;

fn default_max_bytes() -> u64 {
    MAX_CITATION_FETCH_BYTES
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitationGetInput {
    /// `memoree://artifact/A@R#START-END`.
    pub citation: String,
    /// The most bytes to return (4..=8192, default 8192); a longer span is narrowed.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
}

impl CitationGetInput {
    /// The whole span, up to the default ceiling.
    pub fn new(citation: impl Into<String>) -> CitationGetInput {
        CitationGetInput {
            citation: citation.into(),
            max_bytes: MAX_CITATION_FETCH_BYTES,
        }
    }
}

impl Input for CitationGetInput {
    const OP: Operation = Operation::CitationGet;
    type Output = CitationGetResult;
}

/// Exact untrusted bytes of one cited range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitationGetResult {
    /// Always `true`: cited bytes are data, never instructions.
    pub content_is_untrusted: bool,
    /// Names exactly the returned bytes (narrowed when the span was longer than `max_bytes`).
    pub citation: String,
    pub content: String,
    pub byte_count: u64,
    pub media_type: String,
    /// Whether the requested span was narrowed.
    pub truncated: bool,
    /// Bytes of the requested span after the returned ones (only when truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_bytes: Option<u64>,
}

crate::wire_enum! {
    /// `details.citation_error` of a `CITATION_ERROR`, in the order the checks run.
    pub enum CitationErrorKind {
        /// `max_bytes` is outside 4..=8192.
        InvalidOutputLimit = "invalid_output_limit",
        /// Not `memoree://artifact/A@R#START-END` (or longer than 1024 bytes).
        MalformedCitation = "malformed_citation",
        /// `START >= END`, or `END` past the revision's length.
        SpanOutOfRange = "span_out_of_range",
        UnknownArtifact = "unknown_artifact",
        UnknownRevision = "unknown_revision",
        /// A revision citation without a byte range: nothing is returned for it.
        RangeRequired = "range_required",
        /// The revision is not UTF-8 text.
        NonTextContent = "non_text_content",
        /// `START` or `END` falls inside a code point.
        Utf8Boundary = "utf8_boundary",
    }
}

impl CitationErrorKind {
    /// The `details.next_action` sentence: what a caller can do instead.
    pub const fn next_action(self) -> &'static str {
        match self {
            CitationErrorKind::InvalidOutputLimit => "Retry with max_bytes between 4 and 8192.",
            CitationErrorKind::MalformedCitation => {
                "Pass a citation exactly as a result gave it: memoree://artifact/ARTIFACT@REVISION#START-END."
            }
            CitationErrorKind::SpanOutOfRange => {
                "Use a citation exactly as a result gave it; START must be less than END and END at most the revision's byte count."
            }
            CitationErrorKind::UnknownArtifact | CitationErrorKind::UnknownRevision => {
                "Check the ids; a citation from a recall, search or probe result names a revision that exists."
            }
            CitationErrorKind::RangeRequired => {
                "Add an exact byte range (#START-END), or read the whole revision with artifact.get."
            }
            CitationErrorKind::NonTextContent => "Read non-text content with artifact.get, which returns it as base64.",
            CitationErrorKind::Utf8Boundary => "Use offsets on UTF-8 character boundaries, as results give them.",
        }
    }
}

/// A parsed artifact citation: a revision, and a byte range when the citation has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactCitation {
    pub artifact_id: String,
    pub revision_id: String,
    /// `(START, END)` with `START < END`.
    pub range: Option<(u64, u64)>,
}

/// Why a string is not an artifact citation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CitationSyntaxError {
    /// Not of the form (`malformed_citation`); says what is wrong.
    Malformed(&'static str),
    /// Well formed, but `START >= END` (`span_out_of_range`).
    EmptyRange { start: u64, end: u64 },
}

impl ArtifactCitation {
    /// Parses `memoree://artifact/A@R[#START-END]`. Ids are non-empty, at most
    /// [`MAX_CITATION_ID_BYTES`] and free of `@` and `#`; offsets are unsigned decimal
    /// integers (digits only) within `u64`.
    pub fn parse(text: &str) -> Result<ArtifactCitation, CitationSyntaxError> {
        use CitationSyntaxError::Malformed;
        if text.is_empty() {
            return Err(Malformed("the citation is empty"));
        }
        if text.len() > MAX_CITATION_BYTES {
            return Err(Malformed("the citation exceeds 1024 bytes"));
        }
        let rest = text
            .strip_prefix(ARTIFACT_CITATION_PREFIX)
            .ok_or(Malformed("a citation starts with memoree://artifact/"))?;
        let (artifact_id, rest) = rest
            .split_once('@')
            .ok_or(Malformed("a citation names a revision after `@`"))?;
        let (revision_id, fragment) = match rest.split_once('#') {
            Some((revision_id, fragment)) => (revision_id, Some(fragment)),
            None => (rest, None),
        };
        for id in [artifact_id, revision_id] {
            if id.is_empty() || id.len() > MAX_CITATION_ID_BYTES || id.contains(['@', '#']) {
                return Err(Malformed(
                    "the artifact and revision ids must be 1 to 256 bytes without `@` or `#`",
                ));
            }
        }
        let range = match fragment {
            None => None,
            Some(fragment) => {
                let offsets = fragment
                    .split_once('-')
                    .and_then(|(start, end)| Some((parse_offset(start)?, parse_offset(end)?)));
                let (start, end) = offsets.ok_or(Malformed("the fragment must be START-END, two unsigned integers"))?;
                if start >= end {
                    return Err(CitationSyntaxError::EmptyRange { start, end });
                }
                Some((start, end))
            }
        };
        Ok(ArtifactCitation {
            artifact_id: artifact_id.to_owned(),
            revision_id: revision_id.to_owned(),
            range,
        })
    }

    /// The citation of the whole revision (`memoree://artifact/A@R`).
    pub fn revision_form(&self) -> String {
        format!("{ARTIFACT_CITATION_PREFIX}{}@{}", self.artifact_id, self.revision_id)
    }

    /// The citation of `start..end` of the same revision.
    pub fn with_range(&self, start: u64, end: u64) -> String {
        format!("{}#{start}-{end}", self.revision_form())
    }
}

/// A byte offset of a locator or citation: decimal digits only (no sign, no whitespace),
/// within `u64`. The CLI's evidence syntax and the MCP citation resources parse theirs here too.
pub fn parse_offset(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ranged_citation_parses_into_its_ids_and_offsets() {
        let citation = ArtifactCitation::parse("memoree://artifact/art_1@arev_2#10-42").unwrap();
        assert_eq!(citation.artifact_id, "art_1");
        assert_eq!(citation.revision_id, "arev_2");
        assert_eq!(citation.range, Some((10, 42)));
        assert_eq!(citation.with_range(10, 20), "memoree://artifact/art_1@arev_2#10-20");
        let revision = ArtifactCitation::parse("memoree://artifact/art_1@arev_2").unwrap();
        assert_eq!(revision.range, None);
        assert_eq!(revision.revision_form(), "memoree://artifact/art_1@arev_2");
    }

    #[test]
    fn malformed_citations_are_refused_and_an_empty_range_is_told_apart() {
        let long_id = "a".repeat(257);
        let malformed = [
            "".to_owned(),
            "memoree://claim/c@r".to_owned(),
            "art_1@arev_1#0-4".to_owned(),
            "memoree://artifact/art_1".to_owned(),
            "memoree://artifact/@arev_1#0-4".to_owned(),
            "memoree://artifact/art_1@#0-4".to_owned(),
            "memoree://artifact/art_1@arev@1#0-4".to_owned(),
            "memoree://artifact/art_1@arev_1#".to_owned(),
            "memoree://artifact/art_1@arev_1#4".to_owned(),
            "memoree://artifact/art_1@arev_1#+0-4".to_owned(),
            "memoree://artifact/art_1@arev_1#0-4#5".to_owned(),
            "memoree://artifact/art_1@arev_1#0-99999999999999999999".to_owned(),
            format!("memoree://artifact/{long_id}@arev_1#0-4"),
            format!("memoree://artifact/art_1@arev_1#0-{}", "1".repeat(1024)),
        ];
        for text in &malformed {
            assert!(
                matches!(ArtifactCitation::parse(text), Err(CitationSyntaxError::Malformed(_))),
                "{text:?} parsed"
            );
        }
        assert_eq!(
            ArtifactCitation::parse("memoree://artifact/a@r#5-5"),
            Err(CitationSyntaxError::EmptyRange { start: 5, end: 5 })
        );
    }
}
