//! The `--evidence` locator syntax: `ARTIFACT_ID@REVISION_ID[#START-END]`.
//!
//! Parsing is pure and total: every input either yields a locator or an error naming what
//! is wrong. The id is everything before the first `@`, the revision everything up to the
//! first `#` after it, and the span two decimal numbers split at the first `-` with
//! `START < END`. Without a span the whole revision is the evidence. Ids are not otherwise
//! checked here; the service validates them.

use crate::protocol::citation::parse_offset;
use crate::protocol::claim::EvidenceLocator;

/// Why a locator did not parse. The `Display` text is the complete explanation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("evidence {input:?} {problem}; expected ARTIFACT_ID@REVISION_ID[#START-END]")]
pub struct EvidenceSyntaxError {
    pub input: String,
    pub problem: &'static str,
}

/// Parses one locator.
pub fn parse_locator(input: &str) -> Result<EvidenceLocator, EvidenceSyntaxError> {
    let fail = |problem| EvidenceSyntaxError {
        input: input.to_owned(),
        problem,
    };
    let (artifact_id, rest) = input.split_once('@').ok_or_else(|| fail("has no `@`"))?;
    if artifact_id.is_empty() {
        return Err(fail("has an empty artifact id"));
    }
    let (revision_id, span) = match rest.split_once('#') {
        Some((revision, span)) => (revision, Some(span)),
        None => (rest, None),
    };
    if revision_id.is_empty() {
        return Err(fail("has an empty revision id"));
    }
    let (start_byte, end_byte) = match span {
        None => (None, None),
        Some("") => return Err(fail("has an empty span after `#`")),
        Some(span) => {
            let (start, end) = span
                .split_once('-')
                .ok_or_else(|| fail("has a span that is not START-END"))?;
            let start = parse_offset(start).ok_or_else(|| fail("has a START that is not an unsigned integer"))?;
            let end = parse_offset(end).ok_or_else(|| fail("has an END that is not an unsigned integer"))?;
            if start >= end {
                return Err(fail("has a span whose START is not less than its END"));
            }
            (Some(start), Some(end))
        }
    };
    Ok(EvidenceLocator {
        artifact_id: artifact_id.into(),
        revision_id: revision_id.into(),
        start_byte,
        end_byte,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(input: &str) -> &'static str {
        parse_locator(input).unwrap_err().problem
    }

    #[test]
    fn a_locator_without_a_span_cites_the_whole_revision() {
        let locator = parse_locator("art_1@arev_2").unwrap();
        assert_eq!(locator.artifact_id, "art_1");
        assert_eq!(locator.revision_id, "arev_2");
        assert_eq!((locator.start_byte, locator.end_byte), (None, None));
    }

    #[test]
    fn a_span_gives_start_and_end_bytes() {
        let locator = parse_locator("art_1@arev_2#0-17").unwrap();
        assert_eq!((locator.start_byte, locator.end_byte), (Some(0), Some(17)));
        let big = parse_locator(&format!("a@r#0-{}", u64::MAX)).unwrap();
        assert_eq!(big.end_byte, Some(u64::MAX));
    }

    #[test]
    fn splits_happen_at_the_first_separator() {
        let locator = parse_locator("a@r@x#1-2").unwrap();
        assert_eq!(locator.revision_id, "r@x");
        assert_eq!(problem("a@r#1-2#3"), "has an END that is not an unsigned integer");
        assert_eq!(problem("a@r#1-2-3"), "has an END that is not an unsigned integer");
    }

    #[test]
    fn every_malformed_part_is_named() {
        assert_eq!(problem("art_1"), "has no `@`");
        assert_eq!(problem(""), "has no `@`");
        assert_eq!(problem("@arev"), "has an empty artifact id");
        assert_eq!(problem("art@"), "has an empty revision id");
        assert_eq!(problem("art@#1-2"), "has an empty revision id");
        assert_eq!(problem("art@rev#"), "has an empty span after `#`");
        assert_eq!(problem("art@rev#12"), "has a span that is not START-END");
        assert_eq!(problem("art@rev#-3"), "has a START that is not an unsigned integer");
        assert_eq!(problem("art@rev#x-3"), "has a START that is not an unsigned integer");
        assert_eq!(problem("art@rev#+1-3"), "has a START that is not an unsigned integer");
        assert_eq!(problem("art@rev#1-"), "has an END that is not an unsigned integer");
        assert_eq!(problem("art@rev#1- 3"), "has an END that is not an unsigned integer");
        assert_eq!(
            problem("art@rev#1-99999999999999999999"),
            "has an END that is not an unsigned integer"
        );
        assert_eq!(
            problem("art@rev#3-3"),
            "has a span whose START is not less than its END"
        );
        assert_eq!(
            problem("art@rev#4-3"),
            "has a span whose START is not less than its END"
        );
    }

    #[test]
    fn the_message_quotes_the_input_and_the_expected_syntax() {
        let error = parse_locator("art@rev#9-1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "evidence \"art@rev#9-1\" has a span whose START is not less than its END; \
             expected ARTIFACT_ID@REVISION_ID[#START-END]"
        );
    }
}
